"""``tracekit analyze TRACE``: per-iteration framework-tax metrics of one trace."""

from __future__ import annotations

import argparse
import sys

from tracekit.commands.options import add_iteration_options, check_iteration_options
from tracekit.commands.output import add_output_options, emit, resolve_output


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
    check_iteration_options(args)
    resolve_output(args, [args.trace])
    from tracekit.readers import kineto_worker

    if kineto_worker.prefetch(args.trace):  # a large Kineto file decodes while the analysis modules load
        from tracekit.cli import use_huge_pages

        use_huge_pages()

    from tracekit.analyzers.iterations import FRAMES_NEEDED
    from tracekit.renderers import render
    from tracekit.session import AnalysisOptions, analyze_input

    doc = analyze_input(args.trace, AnalysisOptions.from_args(args), frames=FRAMES_NEEDED).to_json()
    if not args.output and args.format == "table" and sys.stdout.isatty():
        from rich.console import Console

        from tracekit.renderers.analysis import print_rich

        print_rich(doc, Console())
    else:
        emit(args, render("analyze", doc, args.format))
    return 0
