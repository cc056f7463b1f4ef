"""``tracekit table INPUT...``: the study's utilization table (its Table 3) across runtimes.

One row per input configuration (runtime, batch size, sequence length; inferred from the trace when no run.json
or sidecar says them, see :mod:`tracekit.analyzers.identify`): parse the arguments, analyze the
inputs (:mod:`tracekit.session`), build the rows (:mod:`tracekit.analyzers.table`; what each value means is
documented there and in :mod:`tracekit.analyzers.utilization`), render (:mod:`tracekit.renderers.table`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from tracekit.commands.options import add_iteration_options, check_iteration_options
from tracekit.commands.output import add_output_options, emit, resolve_output, warn
from tracekit.errors import TracekitError

if TYPE_CHECKING:
    from tracekit.analyzers.table import RowInput


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "table",
        help="The study's utilization table (latency, SMs active, warp occupancy) across runtimes.",
        description=(
            "One row per runtime (and batch size / sequence length): graph compilation, kernel serialization, "
            "latency, GPU busy and framework overhead (means over iterations), SMs active and warp occupancy "
            "(wall-time, from Nsight Systems GPU metrics, else Nsight Compute joined to the timeline, else the "
            "Kineto estimate) with their source, and the kernel-time-only averages beside them."
        ),
    )
    parser.add_argument(
        "inputs",
        nargs="+",
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
        help="Nsight Compute CSV/.ncu-rep for the inputs (matched by sidecar metadata, else in order; default: "
        "the run directory's own ncu traces, else none)",
    )
    parser.set_defaults(func=run)


# ------------------------------------------------------------------------------------------- inputs


def collect_inputs(paths: list[str], ncu_files: list[str]) -> list[RowInput]:
    """Expand run directories and trace files; attach ncu traces (run config "ncu" entries, then --ncu)."""
    from tracekit.analyzers.table import RowInput
    from tracekit.runs import expand_inputs, load_run

    rows: list[RowInput] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            run = load_run(path)
            by_config = {
                (c.get("batch_size"), c.get("seq_len")): (c.get("traces") or {}).get("ncu")
                for c in run["configs"]
            }
            for item in expand_inputs([path]):
                rel = by_config.get((item.batch_size, item.seq_len))
                ncu = path / rel if rel and item.profiler != "ncu" else None
                rows.append(RowInput(item, ncu))
        else:
            rows.extend(RowInput(item) for item in expand_inputs([path]))
    if ncu_files:
        _attach_ncu(rows, [Path(p) for p in ncu_files])
    return rows


def _attach_ncu(rows: list[RowInput], files: list[Path]) -> None:
    """Give each row its --ncu file: matched by sidecar (runtime, batch, seq), else in order."""
    from tracekit.model import load_sidecar_meta

    for f in files:
        if not f.is_file():
            raise TracekitError("no such file", f)
    left: list[Path] = []
    for f in files:
        meta = load_sidecar_meta(f)
        key = (meta.get("runtime"), meta.get("batch_size"), meta.get("seq_len"))
        match = [
            r
            for r in rows
            if None not in key
            and (r.trace.runtime, r.trace.batch_size, r.trace.seq_len) == key
            and r.ncu is None
        ]
        if len(match) == 1:
            match[0].ncu = f
        else:
            left.append(f)
    free = [r for r in rows if r.ncu is None]
    if left and len(left) != len(free):
        raise TracekitError(
            f"cannot tell which input each --ncu file belongs to ({len(left)} unmatched files for {len(free)} "
            "inputs without one; give one --ncu file per input, in the same order, or sidecar .meta.json files)"
        )
    for row, f in zip(free, left, strict=False):
        row.ncu = f


def run(args: argparse.Namespace) -> int:
    from tracekit.analyzers.table import build_table, table_row
    from tracekit.renderers.table import render
    from tracekit.session import AnalysisOptions, for_each_input

    check_iteration_options(args)
    resolve_output(args, [*args.inputs, *args.ncu])
    items = collect_inputs(args.inputs, args.ncu)
    if not items:
        raise TracekitError("no successful configurations with a trace in the inputs")
    options = AnalysisOptions.from_args(args)
    rows, left_out = for_each_input(items, lambda item: table_row(item, options))
    doc = build_table(rows, left_out, args.paper)
    emit(args, render(doc, args.format, wide=args.wide))
    if args.output or args.format != "table":  # the table's own footer lists them otherwise
        warn(doc["warnings"])
    return 0
