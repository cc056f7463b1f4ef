"""``tracekit report INPUT... [-o DIR]``: sweep report with plateau, transition batch size, free headroom,
figures and recommendations computed from the data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tracekit.commands.options import add_iteration_options, check_iteration_options
from tracekit.commands.output import add_output_options, check_output_folder, info, warn
from tracekit.errors import TracekitError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="Sweep report: boundedness, transition batch size, figures and recommendations.",
        description=(
            "Report over one or more sweeps (collect/simulate run directories, or traces with a .meta.json "
            "beside them): per runtime, batch size and sequence length the latency, GPU busy, framework "
            "overhead, utilization and launches; the framework-bound plateau, the transition batch size and "
            "the free headroom; figures (PNG and SVG); recommendations; report.md, report.json, report.csv."
        ),
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="run directory or trace file")
    parser.add_argument(
        "-o",
        "--output",
        default="report",
        metavar="DIR",
        help="report folder, created at its last level, receiving report.md, report.json, report.csv and "
        "the figures; a file-like name (rep.json) is refused (default ./report)",
    )
    add_iteration_options(parser)
    parser.add_argument(
        "--plateau-tolerance",
        type=float,
        default=0.10,
        metavar="F",
        help="plateau: latency within F (fraction) of the smallest batch size's (default 0.10)",
    )
    parser.add_argument(
        "--timeline-config",
        metavar="RUNTIME:BATCH[:SEQ]",
        help="configuration drawn in the timeline (default: smallest batch of the first runtime)",
    )
    parser.add_argument(
        "--timeline-iterations",
        type=int,
        default=3,
        metavar="N",
        help="iterations shown in the timeline (default 3)",
    )
    parser.add_argument(
        "--no-figures", action="store_true", help="skip the figures (faster; default: figures are drawn)"
    )
    add_output_options(
        parser,
        output=False,
        format_help="what is printed on stdout: the sweeps and recommendations as a table or Markdown, the "
        "report.json document, or the report.csv rows (default table; the files in -o DIR are always all "
        "written)",
    )
    parser.set_defaults(func=run)


def _parse_timeline_config(text: str | None) -> tuple[str, int, int | None] | None:
    if text is None:
        return None
    parts = text.rsplit(":", 2) if text.count(":") >= 2 else text.rsplit(":", 1)
    try:
        if len(parts) == 3:
            return parts[0], int(parts[1]), int(parts[2])
        if len(parts) == 2:
            return parts[0], int(parts[1]), None
    except ValueError:
        pass
    raise TracekitError(f"--timeline-config {text!r}: expected RUNTIME:BATCH or RUNTIME:BATCH:SEQ")


def _pick_timeline(inputs: list[Any], wanted: tuple[str, int, int | None] | None) -> int | None:
    """Index of the input drawn in the timeline."""
    known = [(i, x) for i, x in enumerate(inputs) if x.runtime is not None and x.batch_size is not None]
    if wanted is None:
        if not known:
            return 0 if inputs else None
        first = known[0][1].runtime
        same = [(x.batch_size, x.seq_len or 0, i) for i, x in known if x.runtime == first]
        return min(same)[2]
    runtime, batch, seq = wanted
    for i, x in known:
        if x.runtime == runtime and x.batch_size == batch and (seq is None or x.seq_len == seq):
            return i
    choices = ", ".join(sorted({f"{x.runtime}:{x.batch_size}:{x.seq_len}" for _, x in known}))
    raise TracekitError(f"--timeline-config {runtime}:{batch}: no such configuration (have {choices})")


def build(args: argparse.Namespace) -> tuple[Any, Any, list[str]]:
    """Read and analyze every input: (SweepReport, Timeline or None, inputs-left-out warnings)."""
    from tracekit.analyzers.report import build_report, build_timeline, config_row
    from tracekit.runs import expand_inputs
    from tracekit.session import AnalysisOptions, analyze_input, for_each_input

    check_iteration_options(args)
    if not 0 <= args.plateau_tolerance:
        raise TracekitError("--plateau-tolerance must be >= 0")
    inputs = expand_inputs(args.inputs)
    if not inputs:
        raise TracekitError("no traces in the inputs (run directories with no successful configuration?)")
    timeline_index = _pick_timeline(inputs, _parse_timeline_config(args.timeline_config))
    options = AnalysisOptions.from_args(args)
    timelines: list[Any] = []

    def step(numbered: tuple[int, Any]) -> dict[str, Any]:
        i, item = numbered
        analyzed = analyze_input(item, options)
        row = config_row(analyzed)
        if i == timeline_index and not args.no_figures and analyzed.iterations.height:
            where = f"{row['runtime']}, batch {row['batch_size']}" + (
                f", seq {row['seq_len']}" if row["seq_len"] is not None else ""
            )
            synthetic = " (synthetic)" if row["synthetic"] else ""
            count = max(1, args.timeline_iterations)
            timelines.append(build_timeline(analyzed, count, title=f"Timeline of {where}{synthetic}"))
        return row

    rows, left_out = for_each_input(list(enumerate(inputs)), step)
    skip_setting = args.skip if args.skip is not None else "auto (the run's warm-up iterations)"
    settings = {"range": args.range_name, "skip": skip_setting, "inputs": [str(p) for p in args.inputs]}
    report = build_report(rows, args.plateau_tolerance, args.bound_threshold, settings)
    report.warnings[:0] = left_out
    return report, (timelines[0] if timelines else None), left_out


def _causes(members: list[dict[str, Any]]) -> dict[str, list[Any]] | None:
    """The overhead of each configuration by idle cause ({cause: ms per batch size}), or None when no
    configuration has the attribution (the figure then stacks the overhead whole)."""
    from tracekit.analyzers.report import CAUSE_COLUMNS

    if all(m.get(name) is None for m in members for name in CAUSE_COLUMNS):
        return None
    return {name[: -len("_ms")]: [m.get(name) for m in members] for name in CAUSE_COLUMNS}


def write_figures(report: Any, timeline: Any, out_dir: Path) -> dict[str, str]:
    """Render the three figures into ``out_dir``; returns figure key -> PNG file name."""
    from tracekit.renderers import plots

    figures: dict[str, str] = {}
    by_key = {(r["runtime"], r["seq_len"], r["batch_size"]): r for r in report.configs}
    multi_seq = len({s["seq_len"] for s in report.sweeps}) > 1
    tag = " (synthetic)" if report.synthetic else ""
    devices = {s["device"] for s in report.sweeps}
    busy_label = (
        "GPU busy" if devices == {"gpu"} else ("operator busy" if devices == {"cpu"} else "device busy")
    )

    def label(s: dict[str, Any]) -> str:
        return s["runtime"] + (f" (seq {s['seq_len']})" if multi_seq and s["seq_len"] is not None else "")

    if report.sweeps:
        panels = []
        for s in report.sweeps:
            members = [by_key[(s["runtime"], s["seq_len"], b)] for b in s["batch_sizes"]]
            panels.append(
                {
                    "title": label(s)
                    if s["seq_len"] is None or multi_seq
                    else f"{s['runtime']} (seq {s['seq_len']})",
                    "batch_sizes": s["batch_sizes"],
                    "busy_ms": [m["gpu_busy_ms"] for m in members],
                    "overhead_ms": [m["framework_overhead_ms"] for m in members],
                    "transition": s["transition_batch_size"],
                    "plateau": s["plateau"],
                    "causes": _causes(members),
                }
            )
        fig = plots.breakdown_figure(
            panels, title=f"Latency breakdown vs batch size{tag}", busy_label=busy_label
        )
        plots.save_figure(fig, out_dir / "fig_breakdown")
        figures["breakdown"] = "fig_breakdown.png"

        series = [
            {
                "label": label(s),
                "batch_sizes": s["batch_sizes"],
                "latency_ms": s["latency_ms"],
                "transition": s["transition_batch_size"],
                "ci_low": s.get("latency_ci_low"),
                "ci_high": s.get("latency_ci_high"),
            }
            for s in report.sweeps
        ]
        sources = {s["latency_source"] for s in report.sweeps}
        ylabel = f"{'/'.join(sorted(sources))} median latency (ms), 95% interval"
        fig = plots.latency_figure(series, title=f"Latency vs batch size{tag}", ylabel=ylabel)
        plots.save_figure(fig, out_dir / "fig_latency")
        figures["latency"] = "fig_latency.png"

    if timeline is not None:
        work = "GPU" if timeline.device == "gpu" else "CPU operators"
        title = timeline.title + (
            " (iterations capped to keep the figure small)" if timeline.truncated else ""
        )
        fig = plots.timeline_figure(
            timeline.lanes, timeline.bars, timeline.gaps, timeline.iterations, title=title, device_label=work
        )
        plots.save_figure(fig, out_dir / "fig_timeline")
        figures["timeline"] = "fig_timeline.png"
    return figures


def run(args: argparse.Namespace) -> int:
    from tracekit.io import output_dir, write_text_atomic
    from tracekit.renderers import render
    from tracekit.renderers.recommendations import describe
    from tracekit.renderers.report_markdown import render_report_markdown
    from tracekit.renderers.report_text import configs_csv
    from tracekit.renderers.tabular import render_json

    args.format = args.format or "table"
    out_dir = Path(args.output)
    check_output_folder(out_dir, "report.md, report.json, report.csv and the figures")
    if not out_dir.parent.is_dir():
        raise TracekitError(f"cannot create the report folder: {out_dir.parent} does not exist", out_dir)
    report, timeline, _ = build(args)
    out_dir = output_dir(out_dir)
    figures = {} if args.no_figures else write_figures(report, timeline, out_dir)

    doc = report.to_json(describe)
    doc["figures"] = {k: {"png": v, "svg": v[:-4] + ".svg"} for k, v in figures.items()}
    if timeline is not None:
        doc["timeline"] = {
            "title": timeline.title,
            "iterations": timeline.iterations["index"].to_list(),
            "truncated": timeline.truncated,
        }
    write_text_atomic(out_dir / "report.json", render_json(doc))
    write_text_atomic(out_dir / "report.csv", configs_csv(doc))
    write_text_atomic(out_dir / "report.md", render_report_markdown(doc, figures))
    sys.stdout.write(render("report", doc, args.format))
    warn(report.warnings)  # always on stderr (also in report.md and report.json)
    info(args, f"wrote {out_dir}/report.md, report.json, report.csv" + (" and figures" if figures else ""))
    return 0
