"""``tracekit compare A B``: two traces or runs side by side (latency, busy, overhead, launches) with
per-op-name (kernel or CPU operator) time and count deltas, top changes first (:func:`tracekit.api.compare`)."""

from __future__ import annotations

import argparse
import sys

from tracekit.commands.options import add_iteration_options, iteration_options
from tracekit.commands.output import add_output_options, emit, exit_code, resolve_output
from tracekit.errors import one_line


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="Two traces or runs side by side: medians with their intervals, and per-op-name (kernel or CPU "
        "operator) deltas.",
        description=(
            "Compare two traces, or two run directories config by config (matching batch size and sequence "
            "length): traced latency, GPU (or CPU operator) busy, framework overhead and launches as medians "
            "with 95% intervals ('within noise' where they overlap), and per op name (kernels; CPU operators "
            "on CPU-only traces) time and count per iteration, largest time changes first. Deltas are B − A."
        ),
    )
    parser.add_argument("a", metavar="A", help="trace file or run directory")
    parser.add_argument("b", metavar="B", help="trace file or run directory")
    add_iteration_options(parser)
    parser.add_argument(
        "--top", type=int, default=15, metavar="N", help="op names shown (default 15; 0 = all)"
    )
    add_output_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tracekit import api
    from tracekit.renderers import render
    from tracekit.renderers.compare import all_warnings

    options = iteration_options(args)
    resolve_output(args, [args.a, args.b])
    doc = api.compare(args.a, args.b, options, args.top)
    left_out = list(doc["warnings"])
    # in the document too (JSON, Markdown, -o), as every other warning is
    doc["warnings"] = _same_input(args.a, args.b) + doc["warnings"]
    emit(args, render("compare", doc, args.format))
    for warning in all_warnings(doc):
        print(f"warning: {one_line(warning)}", file=sys.stderr)
    return exit_code(args, left_out)


def _same_input(a: str, b: str) -> list[str]:
    """The warning when A and B are one file or folder (same path, a link to it, or a hard link): every delta
    is then 0 by construction, which the table alone does not say."""
    import os

    try:
        same = os.path.samefile(a, b)
    except OSError:  # standard input, or a path the comparison itself has refused
        return []
    if not same:
        return []
    what = "folder" if os.path.isdir(a) else "file"
    return [f"A and B are the same {what} ({a}): every difference below is 0 by construction"]
