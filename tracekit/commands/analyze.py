"""``tracekit analyze TRACE``: per-iteration framework-tax metrics of one trace."""

from __future__ import annotations

import argparse
import sys

from tracekit.io import write_text_atomic


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help="Per-iteration latency, GPU busy, idle gaps, launch and framework overhead of a trace.",
        description=(
            "Analyze an Nsight Systems SQLite export, a torch.profiler (Kineto) JSON(.gz) or an ONNX Runtime "
            "profile: per iteration (one range), how much of the latency was device work and how much framework tax."
        ),
    )
    parser.add_argument("trace", help="trace file (format detected from content)")
    parser.add_argument(
        "--range",
        dest="range_name",
        metavar="NAME",
        help="range that delimits one iteration (default: 'iteration', else the most frequent "
        "top-level range; ProfilerStep#N are collapsed to 'ProfilerStep#*')",
    )
    parser.add_argument(
        "--skip",
        type=int,
        default=None,
        metavar="N",
        help="drop the first N iterations (warm-up); default 0, or the run's warm-up count when "
        "the trace records warm-up runs as iterations (ONNX Runtime profiles)",
    )
    parser.add_argument(
        "--bound-threshold",
        type=float,
        default=0.5,
        metavar="U",
        help="framework-bound when median utilization is below U (default 0.5)",
    )
    parser.add_argument("--format", choices=["table", "json", "csv", "md"], default="table")
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analyzers.iterations import FRAMES_NEEDED, analyze_iterations
    from tracekit.errors import TracekitError
    from tracekit.readers import read_trace
    from tracekit.renderers.analysis import render

    if args.skip is not None and args.skip < 0:
        raise TracekitError("--skip must be >= 0")
    trace = read_trace(args.trace, frames=FRAMES_NEEDED)
    analysis = analyze_iterations(trace, args.range_name, args.skip, args.bound_threshold)
    doc = analysis.to_json(trace)
    if args.output:
        write_text_atomic(args.output, render(doc, args.format))
        print(f"wrote {args.output}", file=sys.stderr)
    elif args.format == "table" and sys.stdout.isatty():
        from rich.console import Console

        from tracekit.renderers.analysis import print_rich

        print_rich(doc, Console())
    else:
        sys.stdout.write(render(doc, args.format))
    return 0
