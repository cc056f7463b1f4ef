"""``tracekit report INPUT... [-o DIR]``: sweep report with plateau, transition batch size, free headroom,
figures and recommendations computed from the data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tracekit.commands.options import add_iteration_options, iteration_options, positive_int
from tracekit.commands.output import add_output_options, check_output_folder, exit_code, info, warn
from tracekit.errors import TracekitError


def _fraction(text: str) -> float:
    """--plateau-tolerance: a fraction in [0, 1] (0.10 = 10%); a value over 1 is read as the percent it was
    meant as, and refused (5 had run as a 500% tolerance: every batch size within 6x of the smallest on the
    plateau)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a fraction (0.10 = 10%), not {text!r}") from None
    if 0 <= value <= 1:
        return value
    if 1 < value < 100 and value == int(value):
        hint = f"a fraction (0.{int(value):02d} = {int(value)}%), not a percent"
    elif 1 < value <= 100:
        hint = "a fraction (0.10 = 10%), not a percent"
    else:
        hint = "a fraction (0.10 = 10%)"
    raise argparse.ArgumentTypeError(f"{hint}: must be between 0 and 1, not {text}")


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
        type=_fraction,
        default=0.10,
        metavar="F",
        help="plateau: latency within F (a fraction from 0 to 1: 0.10 = 10%%) of the smallest batch size's "
        "(default 0.10)",
    )
    parser.add_argument(
        "--timeline-config",
        metavar="RUNTIME:BATCH[:SEQ]",
        help="configuration drawn in the timeline (default: smallest batch of the first runtime)",
    )
    parser.add_argument(
        "--timeline-iterations",
        type=positive_int,
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
    parts = text.split(":")  # (no runtime name holds a colon: one part too many is no runtime 'pytorch:1')
    try:
        if len(parts) == 3 and parts[0]:
            return parts[0], int(parts[1]), int(parts[2])
        if len(parts) == 2 and parts[0]:
            return parts[0], int(parts[1]), None
    except ValueError:
        pass
    raise TracekitError(f"--timeline-config {text!r}: expected RUNTIME:BATCH or RUNTIME:BATCH:SEQ")


def build(args: argparse.Namespace) -> tuple[Any, Any, list[str]]:
    """Read and analyze every input (:func:`tracekit.api.report_data`): (SweepReport, Timeline or None,
    inputs-left-out warnings)."""
    from tracekit import api

    options = iteration_options(args)
    return api.report_data(
        args.inputs,
        options,
        args.plateau_tolerance,
        timeline=_parse_timeline_config(args.timeline_config),
        timeline_iterations=args.timeline_iterations,
        figures=not args.no_figures,
    )


#: The files ``report -o DIR`` writes (or, figures of an earlier report, removes) in DIR.
REPORT_FILES = ("report.json", "report.csv", "report.md")


def _report_outputs(out_dir: Path) -> list[Path]:
    """Every file ``report`` may write or remove in ``out_dir``: its three files and every figure file."""
    from tracekit.renderers.report_figures import FIGURE_FORMATS, FIGURE_STEMS

    figures = [out_dir / f"{stem}.{fmt}" for stem in FIGURE_STEMS.values() for fmt in FIGURE_FORMATS]
    return [*(out_dir / name for name in REPORT_FILES), *figures]


def run(args: argparse.Namespace) -> int:
    from tracekit.io import check_output_dir, check_outputs, output_dir, outputs_together, write_text_atomic
    from tracekit.renderers import render
    from tracekit.renderers.recommendations import describe
    from tracekit.renderers.report_figures import stale_figures, write_figures
    from tracekit.renderers.report_markdown import render_report_markdown
    from tracekit.renderers.report_text import configs_csv
    from tracekit.renderers.tabular import render_json

    args.format = args.format or "table"
    if (
        not args.output.strip()
    ):  # (-o "$UNSET": Path("") is the current folder, which had received the report)
        raise TracekitError(
            f"-o {args.output!r} names no folder: give the report folder's name (default ./report)"
        )
    out_dir = Path(args.output)
    check_output_folder(out_dir, "report.md, report.json, report.csv and the figures")
    if not out_dir.parent.is_dir():
        raise TracekitError(f"cannot create the report folder: {out_dir.parent} does not exist", out_dir)
    check_output_dir(out_dir)  # before the analyses, which may take long
    # an input given as a file and named as one of the report's files in -o DIR (report x/report.csv -o x): refused
    # before the work; one found in a run folder, once the analyses have read it, before anything is written
    # (report.json and the figures had been written before the refusal on report.csv)
    check_outputs(_report_outputs(out_dir), [i for i in args.inputs if Path(i).is_file()])
    report, timeline, left_out = build(args)
    check_outputs(_report_outputs(out_dir), [])
    out_dir = output_dir(out_dir)
    # the figures and the three files are put in place together, once all are written (a failure had left a
    # new report.json beside an earlier report.md); an earlier report's figures that this one did not draw
    # (--no-figures, no timeline) would sit beside a report.md that does not show them, read as this
    # report's: removed once the new report is in place, and said
    with outputs_together():
        figures = (
            {} if args.no_figures else write_figures(report, timeline, out_dir)
        )  # renderers.report_figures
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
    stale = stale_figures(out_dir, figures)
    for path in stale:
        path.unlink()
    sys.stdout.write(render("report", doc, args.format))
    warn(report.warnings)  # always on stderr (also in report.md and report.json)
    if stale:
        info(
            args,
            f"removed {len(stale)} figure files of an earlier report that this one did not draw: "
            + ", ".join(p.name for p in stale),
        )
    info(args, f"wrote {out_dir}/report.md, report.json, report.csv" + (" and figures" if figures else ""))
    return exit_code(args, left_out)
