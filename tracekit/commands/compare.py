"""``tracekit compare A B``: two traces or runs side by side (latency, busy, overhead, launches) with
per-kernel-name time and count deltas, top changes first."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tracekit.commands.options import add_iteration_options, check_iteration_options
from tracekit.commands.output import add_output_options, resolve_output
from tracekit.errors import TracekitError

SUMMARY_COLUMNS: list[tuple[str, str]] = [
    ("name", "metric"),
    ("a", "A"),
    ("b", "B"),
    ("delta", "B − A"),
    ("ratio", "B / A"),
]
KERNEL_COLUMNS: list[tuple[str, str]] = [
    ("name", "name"),
    ("count_a", "count A"),
    ("count_b", "count B"),
    ("count_delta", "Δ count"),
    ("time_a_us", "time A µs"),
    ("time_b_us", "time B µs"),
    ("time_delta_us", "Δ time µs"),
]
CSV_COLUMNS = ["config", "section", "name", "a", "b", "delta", "ratio", "count_a", "count_b", "count_delta"]
NAME_WIDTH = 70


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
    from tracekit.analyzers.iterations import analyze_iterations
    from tracekit.readers import read_trace
    from tracekit.runs import expand_inputs

    check_iteration_options(args)
    resolve_output(args, [args.a, args.b])
    if args.top < 0:
        raise TracekitError("--top must be >= 0")
    inputs_a, inputs_b = expand_inputs([args.a]), expand_inputs([args.b])
    if not inputs_a or not inputs_b:
        raise TracekitError("no traces in " + (args.a if not inputs_a else args.b))
    results = []
    for label, xa, xb in pair_inputs(inputs_a, inputs_b):
        ta, tb = read_trace(xa.path), read_trace(xb.path)
        aa = analyze_iterations(ta, args.range_name, args.skip, args.bound_threshold)
        ab = analyze_iterations(tb, args.range_name, args.skip, args.bound_threshold)
        doc = compare(ta, aa, tb, ab)
        doc["config"] = label
        doc["a"]["runtime"] = xa.runtime or ta.meta.get("runtime")
        doc["b"]["runtime"] = xb.runtime or tb.meta.get("runtime")
        results.append(doc)

    text = _render(args, results)
    if args.output:
        from tracekit.io import write_text_atomic

        write_text_atomic(args.output, text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _render(args: argparse.Namespace, results: list[dict[str, Any]]) -> str:
    """The comparisons in ``args.format``."""
    from tracekit.renderers.tabular import render_csv, render_json, render_markdown, render_rich

    top = args.top or None
    fmt = args.format
    if fmt == "json":
        return render_json({"a": args.a, "b": args.b, "comparisons": results})
    if fmt == "csv":
        rows = []
        for doc in results:
            rows += [{"config": doc["config"], "section": "summary", **r} for r in doc["summary"]]
            rows += [
                {
                    "config": doc["config"],
                    "section": "kernel",
                    "name": k["name"],
                    "a": k["time_a_us"],
                    "b": k["time_b_us"],
                    "delta": k["time_delta_us"],
                    "ratio": k["time_b_us"] / k["time_a_us"] if k["time_a_us"] else None,
                    "count_a": k["count_a"],
                    "count_b": k["count_b"],
                    "count_delta": k["count_delta"],
                }
                for k in doc["kernels"][:top]
            ]
        return render_csv(rows, CSV_COLUMNS)
    out: list[str] = []
    for doc in results:
        heading = (
            f"{doc['config']}: A = {doc['a']['runtime'] or '?'} ({doc['a']['path']}, {_bound(doc['a'])}), "
            f"B = {doc['b']['runtime'] or '?'} ({doc['b']['path']}, {_bound(doc['b'])})"
        )
        if doc["a"]["synthetic"] or doc["b"]["synthetic"]:
            heading += " [synthetic data]"
        kernels = [{**k, "name": _short(k["name"])} for k in doc["kernels"][:top]]
        n = len(doc["kernels"])
        kernel_title = f"per-iteration time and count by op name (top {len(kernels)} of {n} by |Δ time|)"
        if fmt in ("markdown", "md"):
            out += [
                f"## {heading}",
                "",
                render_markdown(doc["summary"], SUMMARY_COLUMNS),
                f"### {kernel_title}",
                "",
                render_markdown(kernels, KERNEL_COLUMNS),
            ]
        else:
            out += [
                heading,
                render_rich(doc["summary"], SUMMARY_COLUMNS),
                render_rich(kernels, KERNEL_COLUMNS, title=kernel_title),
            ]
        for warning in doc["warnings"]:
            print(f"warning: {doc['config']}: {warning}", file=sys.stderr)
    return "\n".join(out)


def _short(name: str | None) -> str | None:
    if name is None or len(name) <= NAME_WIDTH:
        return name
    return name[: NAME_WIDTH - 1] + "…"


def _bound(side: dict) -> str:
    """'framework-bound' / 'compute-bound', or 'boundedness unknown' when the trace had no device activity."""
    return f"{side['bound']}-bound" if side.get("bound") else "boundedness unknown"
