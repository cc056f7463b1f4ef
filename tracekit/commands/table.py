"""``tracekit table INPUT...``: the study's utilization table (its Table 3) across runtimes.

One row per input configuration (runtime, batch size, sequence length; inferred from the trace when no run.json
or sidecar says them, see :mod:`tracekit.analyzers.identify`): parse the arguments, build the table
(:func:`tracekit.api.table_document`; what each value means is documented in :mod:`tracekit.analyzers.table`
and :mod:`tracekit.analyzers.utilization`), render (:mod:`tracekit.renderers.table`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tracekit.commands.options import add_iteration_options, iteration_options
from tracekit.commands.output import add_output_options, emit, exit_code, resolve_output, warn


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "table",
        help="The study's utilization table (latency, SMs active, warp occupancy) across runtimes.",
        description=(
            "One row per runtime (and batch size / sequence length): graph compilation, kernel serialization, "
            "traced latency, GPU busy and framework overhead (means over iterations), the untraced latency (the "
            "median timed without a profiler, where the run records it), SMs active and warp occupancy "
            "(wall-time, from Nsight Systems GPU metrics, else Nsight Compute joined to the timeline, else the "
            "Kineto estimate) with their source, and the kernel-time-only averages beside them."
        ),
    )
    parser.add_argument(  # nargs "*": run() says what went wrong when --ncu took the inputs
        "inputs",
        nargs="*",
        metavar="INPUT",
        help="collect run directory or trace file (one or more; required)",
    )
    add_output_options(parser)
    parser.add_argument(
        "--paper",
        action="store_true",
        help="put the study's published Table 3 (BERT-Base bs1 seq128 fp16, Quadro RTX 8000) beside the measured "
        "rows, aligned by runtime, with measured / published latency where batch size and precision match "
        "(default: off)",
    )
    parser.add_argument(
        "--wide",
        action="store_true",
        help="terminal table with every column (trace, model, each source, kernel-time averages, utilization) "
        "at its natural width instead of fitting the terminal (at least 120 columns) (default: off)",
    )
    add_iteration_options(parser, bound_threshold=False)
    parser.add_argument(
        "--ncu",
        nargs="+",
        default=[],
        metavar="FILE",
        help="Nsight Compute CSV/.ncu-rep for the inputs (matched by sidecar metadata, else in order; every "
        "file after --ncu is one: give the inputs before it; default: the run directory's own ncu traces, else "
        "none)",
    )
    # the usage line as with nargs "+": INPUT is required
    usage = parser.format_usage().removeprefix("usage: ").rstrip()
    parser.usage = usage.replace("[INPUT ...]", "INPUT [INPUT ...]").replace("%", "%%")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tracekit import api
    from tracekit.renderers.table import render

    if not args.inputs:
        from tracekit.errors import TracekitError

        if args.ncu:
            raise TracekitError(
                f"no INPUT: --ncu took every file after it ({', '.join(args.ncu)}); give the inputs first: "
                "tracekit table INPUT... --ncu FILE..."
            )
        raise TracekitError("table needs at least one INPUT (a run directory or trace file)")
    options = iteration_options(args)
    # (a run folder's own files are inputs too: run.json, its traces, sidecars and latency.csv, refused as -o
    # before the work, not after it)
    held = [str(f) for d in args.inputs if Path(d).is_dir() for f in Path(d).iterdir() if f.is_file()]
    resolve_output(args, [*args.inputs, *args.ncu, *held])
    doc = api.table_document(args.inputs, options, ncu=args.ncu, paper=args.paper)
    emit(args, render(doc, args.format, wide=args.wide))
    if args.output or args.format != "table":  # the table's own footer lists them otherwise
        warn(doc["warnings"])
    return exit_code(args, doc["warnings"])
