"""``tracekit analyze TRACE``: per-iteration framework-tax metrics of one trace; several traces (files, folders,
globs) go to :mod:`tracekit.commands.analyze_many` (one analysis each, in parallel, then the cross-trace table).

Argument parsing and output only: the analysis is :func:`tracekit.api.analyze_input`, the function behind
``tracekit.analyze()``, with the same options object, so the command line and the API give one answer."""

from __future__ import annotations

import argparse
import sys

from tracekit.commands.analyze_many import add_many_options, run_many
from tracekit.commands.options import add_iteration_options, iteration_options
from tracekit.commands.output import add_output_options, emit, info, resolve_output, warn


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help="Per-iteration latency, GPU (or CPU operator) busy, idle gaps by cause, launches and framework "
        "overhead of a trace.",
        description=(
            "Analyze an Nsight Systems SQLite export (or .nsys-rep report, exported with nsys), a torch.profiler "
            "(Kineto) JSON(.gz), an ONNX Runtime profile or an Nsight Compute CSV/.ncu-rep (kernel durations "
            "and counters only: no verdict): per iteration (one range), how much of the latency was device work "
            "and how much framework tax."
        ),
    )
    parser.add_argument(
        "traces",
        nargs="+",
        metavar="TRACE",
        help="trace file (format detected from content); several files, folders or globs: one analysis each "
        "and the cross-trace table (ranks, GPUs, files: spread, straggler, skew, communication)",
    )
    add_iteration_options(parser, workers=True)
    add_many_options(parser)
    add_output_options(parser)
    parser.add_argument(
        "--gaps",
        metavar="FILE",
        help="also write every idle gap with its cause to FILE: CSV (FILE.csv), or JSON when FILE ends in "
        ".json (a row per gap: iteration, start/end ns, position, offset, cause, the launching thread and its "
        "state, the ns of every cause; default: off, the main output lists the longest gaps)",
    )
    parser.add_argument(
        "--timeline",
        metavar="FILE",
        help="also write the trace, its iterations, every idle gap by cause and a utilization counter as "
        "Chrome trace-event JSON (FILE.json, or FILE.json.gz gzipped): open it in ui.perfetto.dev "
        "(default: off)",
    )
    parser.set_defaults(func=run)


def _check_gaps_file(path: str, trace: str, output: str | None = None, timeline: str | None = None) -> None:
    """One-line refusal (exit 2), before any work, of a ``--gaps`` file that is an input, the file of ``-o``
    (``output``) or of ``--timeline`` (``timeline``; one output would replace the other), named for another
    format (``gaps.xlsx``, ``gaps.csv.gz``: it is written as CSV or JSON, uncompressed), a folder, or in a
    folder that does not exist."""
    from pathlib import Path

    from tracekit.errors import TracekitError
    from tracekit.io import check_file_target, check_named_for, check_outputs, same_file

    target = Path(path)
    check_outputs([target], [trace], option="--gaps")
    for other, option in ((output, "-o"), (timeline, "--timeline")):
        if other and same_file(other, target):
            raise TracekitError(f"--gaps and {option} name the same file", target)
    check_named_for(
        target, "--gaps", "CSV (JSON when the name ends in .json)", [".csv", ".json"], "name it .csv or .json"
    )
    check_file_target(target, "--gaps")


def _single(traces: list[str]) -> bool:
    """One trace file (not a folder, a pattern or a URL): the per-iteration analysis."""
    from pathlib import Path

    if len(traces) != 1:
        return False
    path = traces[0]
    return (
        not Path(path).is_dir()
        and "://" not in path
        and not (any(c in path for c in "*?[") and not Path(path).exists())
    )


def run(args: argparse.Namespace) -> int:
    options = iteration_options(args)
    if not _single(args.traces):
        from tracekit.errors import TracekitError

        for flag in ("gaps", "timeline"):
            if getattr(args, flag):
                raise TracekitError(f"--{flag} writes one trace's {flag}; give one trace file with it")
        resolve_output(args, [t for t in args.traces if "://" not in t])
        return run_many(args, args.traces, options)
    args.trace = args.traces[0]
    resolve_output(args, [args.trace])
    if args.gaps:
        _check_gaps_file(args.gaps, args.trace, args.output, args.timeline)
    if args.timeline:
        from tracekit.renderers.timeline import check_timeline_output

        check_timeline_output(args.timeline, args.trace, args.output)
    from tracekit import api

    if args.cache:  # made only once every other option is known good
        api.cache_folder(args.cache)
    # the input resolved now lets its reader begin while the analysis modules load (not when the cache
    # holds the trace already: the reader's decoding workers would take the cores from the cached analysis)
    item = api.resolve_input(args.trace, begin=not (args.cache and api.in_cache(args.trace, args.cache)))
    from tracekit.renderers import render

    analyzed = api.analyze_input(
        item, options, api.EVERYTHING if args.timeline else "needed", cache_dir=args.cache
    )
    doc = analyzed.to_json()
    from tracekit.io import outputs_together

    # -o, --gaps and --timeline are put in place together, once all are written: a full disk under -o had
    # left --gaps and --timeline already replaced
    with outputs_together():
        if args.gaps:
            from tracekit.renderers.analysis import write_gaps

            write_gaps(args.gaps, analyzed.idle_gaps)
        if args.timeline:
            from tracekit.renderers.timeline import write_timeline

            write_timeline(analyzed, args.timeline)
        if args.output:
            emit(args, render("analyze", doc, args.format), said=False)
    if args.gaps:
        info(args, f"wrote {args.gaps}")
    if args.timeline:
        info(args, f"wrote {args.timeline}: open it in ui.perfetto.dev")
    if args.output:
        info(args, f"wrote {args.output}")
        warn(doc["warnings"])
    elif args.format == "table" and sys.stdout.isatty():
        from rich.console import Console

        from tracekit.commands.output import as_text_doc
        from tracekit.renderers.analysis import print_rich

        print_rich(as_text_doc(doc), Console())  # (names from the trace as text: an escape sequence prints)
    else:
        emit(args, render("analyze", doc, args.format))
        if args.format != "table":  # a table on stdout (terminal, file or pipe) ends with them
            warn(doc["warnings"])
    return 0
