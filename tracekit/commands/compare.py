"""``tracekit compare A B``: two traces or runs side by side (latency, busy, overhead, launches) with
per-kernel-name time and count deltas, top changes first."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tracekit.commands.options import add_iteration_options, check_iteration_options
from tracekit.commands.output import add_output_options, emit, resolve_output
from tracekit.errors import TracekitError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="Two traces or runs side by side, with per-kernel deltas.",
        description=(
            "Compare two traces, or two run directories config by config (matching batch size and sequence "
            "length): latency, GPU busy, framework overhead, launches, and per-kernel-name time and count per "
            "iteration, largest time changes first. Deltas are B − A."
        ),
    )
    parser.add_argument("a", metavar="A", help="trace file or run directory")
    parser.add_argument("b", metavar="B", help="trace file or run directory")
    add_iteration_options(parser)
    parser.add_argument(
        "--top", type=int, default=15, metavar="N", help="kernel names shown (default 15; 0 = all)"
    )
    add_output_options(parser)
    parser.set_defaults(func=run)


def _label(item: Any) -> str:
    parts = []
    if item.batch_size is not None:
        parts.append(f"batch {item.batch_size}")
    if item.seq_len is not None:
        parts.append(f"seq {item.seq_len}")
    return ", ".join(parts) or item.path.name


def pair_inputs(a: list[Any], b: list[Any]) -> list[tuple[str, Any, Any]]:
    """(label, input A, input B) pairs: the two traces, or configs matched on (batch size, seq len)."""
    if len(a) == 1 and len(b) == 1:
        return [
            (
                f"{_label(a[0])} vs {_label(b[0])}" if _label(a[0]) != _label(b[0]) else _label(a[0]),
                a[0],
                b[0],
            )
        ]
    index_b = {(x.batch_size, x.seq_len): x for x in b}
    pairs = [
        (_label(x), x, index_b[(x.batch_size, x.seq_len)]) for x in a if (x.batch_size, x.seq_len) in index_b
    ]
    if not pairs:
        have_a = sorted({(x.batch_size, x.seq_len) for x in a}, key=str)
        have_b = sorted({(x.batch_size, x.seq_len) for x in b}, key=str)
        raise TracekitError(f"no configuration (batch size, seq len) in both A {have_a} and B {have_b}")
    return pairs


def run(args: argparse.Namespace) -> int:
    from tracekit.analyzers.compare import compare
    from tracekit.renderers import render
    from tracekit.runs import expand_inputs
    from tracekit.session import AnalysisOptions, analyze_input, for_each_input

    check_iteration_options(args)
    resolve_output(args, [args.a, args.b])
    if args.top < 0:
        raise TracekitError("--top must be >= 0")
    inputs_a, inputs_b = expand_inputs([args.a]), expand_inputs([args.b])
    if not inputs_a or not inputs_b:
        raise TracekitError("no traces in " + (args.a if not inputs_a else args.b))
    options = AnalysisOptions.from_args(args)

    def step(pair: tuple[str, Any, Any]) -> dict[str, Any]:
        label, xa, xb = pair
        return compare(analyze_input(xa, options), analyze_input(xb, options), label)

    results, left_out = for_each_input(pair_inputs(inputs_a, inputs_b), step)
    doc = {"a": args.a, "b": args.b, "top": args.top, "comparisons": results, "warnings": left_out}
    emit(args, render("compare", doc, args.format))
    for warning in left_out + [f"{c['config']}: {w}" for c in results for w in c["warnings"]]:
        print(f"warning: {warning}", file=sys.stderr)
    return 0
