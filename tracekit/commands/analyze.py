"""``tracekit analyze TRACE``: per-iteration framework-tax metrics of one trace."""

from __future__ import annotations

import argparse
import sys

from tracekit.commands.options import add_iteration_options, check_iteration_options
from tracekit.commands.output import add_output_options, resolve_output
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
    add_iteration_options(parser)
    add_output_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tracekit.analyzers.iterations import FRAMES_NEEDED, analyze_iterations
    from tracekit.readers import read_trace
    from tracekit.renderers.analysis import render

    check_iteration_options(args)
    resolve_output(args, [args.trace])
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
