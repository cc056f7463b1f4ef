"""``tracekit table INPUT...``: the study's utilization table (its Table 3) across runtimes.

One row per input configuration (runtime, batch size, sequence length). Latency, GPU busy and framework
overhead are the **mean over iterations** of ``tracekit.analyzers.iterations`` (after ``--skip``). SMs active and warp
occupancy are wall-time figures (idle time counts), from the first source available:

1. ``nsys metrics``: Nsight Systems GPU-metrics samples inside each iteration's window, mean over iterations
   (the study's definition; ``tracekit.analyzers.gpu_metrics``);
2. ``ncu``: Nsight Compute per-kernel values joined to the timeline's kernels, Σ(kernel time × value) /
   latency per iteration, mean over iterations (``tracekit.analyzers.kernel_metrics``);
3. ``kineto estimate``: torch.profiler's per-kernel ``est. achieved occupancy %`` (warp occupancy only),
   weighted the same way.

The kernel-time-only averages (Σ(kernel time × value) / Σ kernel time: the SMs while kernels run) sit
beside them, from ncu or the Kineto estimate. Unknown values are null / "—", never 0.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracekit.commands.options import add_iteration_options, check_iteration_options
from tracekit.commands.output import add_output_options, resolve_output
from tracekit.errors import TracekitError

NCU_FORMATS = ("ncu-csv", "ncu-rep")

#: JSON/CSV row keys, in order.
ROW_KEYS = [
    "runtime",
    "batch_size",
    "seq_len",
    "graph_compilation",
    "kernel_serialization",
    "iterations",
    "latency_ms",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "gpu_utilization",
    "sms_active",
    "sms_active_source",
    "sms_active_metric",
    "warp_occupancy",
    "warp_occupancy_source",
    "warp_occupancy_metric",
    "sms_active_kernel_time",
    "warp_occupancy_kernel_time",
    "kernel_time_source",
    "synthetic",
    "trace",
    "ncu_trace",
]


@dataclass
class RowInput:
    """One configuration: its main trace (timeline or ncu) and, optionally, an Nsight Compute trace."""

    trace: Any  # tracekit.runs.TraceInput
    ncu: Path | None = None


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
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="collect run directory or trace file")
    add_output_options(parser)
    parser.add_argument(
        "--paper",
        action="store_true",
        help="also print the study's published Table 3 (BERT-Base bs1 seq128 fp16, RTX 8000)",
    )
    add_iteration_options(parser, bound_threshold=False)
    parser.add_argument(
        "--ncu",
        nargs="+",
        default=[],
        metavar="FILE",
        help="Nsight Compute CSV/.ncu-rep for the inputs (matched by sidecar metadata, else in order)",
    )
    parser.set_defaults(func=run)


# ------------------------------------------------------------------------------------------- inputs


def collect_inputs(paths: list[str], ncu_files: list[str]) -> list[RowInput]:
    """Expand run directories and trace files; attach ncu traces (run config "ncu" entries, then --ncu)."""
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


# --------------------------------------------------------------------------------------------- rows


def build_row(item: RowInput, range_name: str | None, skip: int | None) -> tuple[dict[str, Any], list[str]]:
    """One table row and its warnings (see the module docstring for what each value means)."""
    from tracekit.analyzers.gpu_metrics import analyze_gpu_metrics
    from tracekit.analyzers.iterations import analyze_iterations
    from tracekit.analyzers.kernel_metrics import KINETO_OCCUPANCY, analyze_kernel_metrics
    from tracekit.analyzers.paper import runtime_traits
    from tracekit.readers import read_trace

    warnings: list[str] = []
    trace = read_trace(item.trace.path)
    meta = trace.meta
    runtime = item.trace.runtime or meta.get("runtime")
    compilation, serialization = runtime_traits(runtime)
    row: dict[str, Any] = {k: None for k in ROW_KEYS}
    row.update(
        runtime=runtime,
        batch_size=item.trace.batch_size if item.trace.batch_size is not None else meta.get("batch_size"),
        seq_len=item.trace.seq_len if item.trace.seq_len is not None else meta.get("seq_len"),
        graph_compilation=compilation,
        kernel_serialization=serialization,
        synthetic=bool(item.trace.synthetic or meta.get("synthetic", False)),
        trace=str(item.trace.path),
        ncu_trace=str(item.ncu) if item.ncu else None,
    )
    if runtime is not None and compilation is None:
        warnings.append(f"unknown runtime {runtime!r}: graph compilation / kernel serialization not known")

    if meta.get("format") in NCU_FORMATS:
        # Nsight Compute alone: no timeline, so no latency and no wall-time figure.
        result = analyze_kernel_metrics(trace)
        warnings += result.warnings
        _kernel_time(row, result)
        warnings.append(
            "Nsight Compute report without a timeline trace: latency and wall-time SMs active / "
            "warp occupancy unknown; kernel-time averages only"
        )
        return row, warnings

    analysis = analyze_iterations(trace, range_name, skip)
    warnings += analysis.warnings
    summary = analysis.summary
    row["iterations"] = summary["iterations"]
    for key in ("latency_ms", "gpu_busy_ms", "framework_overhead_ms", "gpu_utilization"):
        row[key] = (summary.get(key) or {}).get("mean")
    if row["runtime"] is None:
        warnings.append("runtime unknown (no run.json or sidecar metadata)")

    if not trace.gpu_metrics.is_empty():
        gm = analyze_gpu_metrics(trace, analysis.iterations)
        warnings += gm.warnings
        for column in ("sms_active", "warp_occupancy"):
            entry = gm.summary.get(column)
            if entry is not None and entry.get("mean") is not None:
                row[column] = entry["mean"]
                row[f"{column}_source"] = "nsys metrics"
                row[f"{column}_metric"] = entry["metric"] + (
                    f" [{entry['unit']}]" if entry.get("unit") else ""
                )

    if item.ncu is not None:
        ncu_trace = read_trace(item.ncu)
        result = analyze_kernel_metrics(ncu_trace, trace, analysis, range_name)
        warnings += [f"ncu: {w}" for w in result.warnings]
        _fill_wall(row, result, "ncu")
        _kernel_time(row, result)
    if trace.kernel_metrics["metric"].eq(KINETO_OCCUPANCY).any():
        result = analyze_kernel_metrics(trace, trace, analysis, range_name)
        warnings += result.warnings
        _fill_wall(row, result, "kineto estimate")
        if row["kernel_time_source"] is None:
            _kernel_time(row, result)
    return row, warnings


def _fill_wall(row: dict[str, Any], result: Any, source: str) -> None:
    for column in ("sms_active", "warp_occupancy"):
        entry = result.summary.get(column)
        if row[column] is None and entry is not None and entry.get("wall_time") is not None:
            row[column] = entry["wall_time"]
            row[f"{column}_source"] = entry.get("source", source)
            row[f"{column}_metric"] = entry["metric"]


def _kernel_time(row: dict[str, Any], result: Any) -> None:
    sources = []
    for column in ("sms_active", "warp_occupancy"):
        entry = result.summary.get(column)
        if entry is not None and entry.get("kernel_time") is not None:
            row[f"{column}_kernel_time"] = entry["kernel_time"]
            sources.append(entry.get("source", result.source))
    if sources:
        row["kernel_time_source"] = " / ".join(dict.fromkeys(sources))


def build_table(
    items: list[RowInput], range_name: str | None = None, skip: int | None = None, paper: bool = False
) -> dict[str, Any]:
    """The ``tracekit table --format json`` document: {"rows", "warnings", "notes", ["paper"]}."""
    from tracekit.analyzers.paper import PAPER_CITATION, PAPER_SETUP, RUNTIME_ORDER, paper_rows

    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    for item in items:
        try:
            row, row_warnings = build_row(item, range_name, skip)
        except TracekitError as exc:
            if len(items) == 1:
                raise
            warnings.append(f"left out: {exc}")  # one bad input does not cost the others their rows
            continue
        label = _label(row)
        rows.append(row)
        warnings += [f"{label}: {w}" for w in dict.fromkeys(row_warnings)]
    order = {name: i for i, name in enumerate(RUNTIME_ORDER)}
    rows.sort(
        key=lambda r: (
            order.get(r["runtime"] or "", len(order)),
            r["runtime"] or "",
            r["batch_size"] if r["batch_size"] is not None else -1,
            r["seq_len"] if r["seq_len"] is not None else -1,
        )
    )
    doc: dict[str, Any] = {
        "rows": rows,
        "warnings": warnings,
        "notes": [
            "latency_ms, gpu_busy_ms, framework_overhead_ms, gpu_utilization: mean over iterations",
            "sms_active, warp_occupancy: wall-time % (idle time counts), mean over iterations; "
            "*_kernel_time: Σ(kernel time × value) / Σ kernel time",
        ],
    }
    if any(r["synthetic"] for r in rows):
        doc["notes"].append("rows marked synthetic come from simulated traces, not measurements")
    if paper:
        doc["paper"] = {"citation": PAPER_CITATION, "setup": PAPER_SETUP, "rows": paper_rows()}
    return doc


def _label(row: dict[str, Any]) -> str:
    parts = [row["runtime"] or Path(row["trace"]).name]
    if row["batch_size"] is not None:
        parts.append(f"b{row['batch_size']}")
    if row["seq_len"] is not None:
        parts.append(f"s{row['seq_len']}")
    return " ".join(parts)


# ------------------------------------------------------------------------------------------ render


def _columns(doc: dict[str, Any]) -> list[tuple[str, str]]:
    rows = doc["rows"]
    cols: list[tuple[str, str]] = [("runtime", "runtime")]
    if len({r["batch_size"] for r in rows}) > 1:
        cols.append(("batch_size", "batch"))
    if len({r["seq_len"] for r in rows}) > 1:
        cols.append(("seq_len", "seq len"))
    cols += [
        ("graph_compilation", "graph compilation"),
        ("kernel_serialization", "kernel serialization"),
        ("latency_ms", "latency ms"),
        ("gpu_busy_ms", "GPU busy ms"),
        ("framework_overhead_ms", "framework overhead ms"),
        ("sms_active", "SMs active %"),
        ("sms_active_source", "source"),
        ("warp_occupancy", "warp occupancy %"),
        ("warp_occupancy_source", "source"),
    ]
    if any(
        r["sms_active_kernel_time"] is not None or r["warp_occupancy_kernel_time"] is not None for r in rows
    ):
        cols += [
            ("sms_active_kernel_time", "SMs active % (kernel time)"),
            ("warp_occupancy_kernel_time", "warp occ. % (kernel time)"),
            ("kernel_time_source", "source"),
        ]
    if any(r["synthetic"] for r in rows):
        cols.append(("synthetic", "synthetic"))
    return cols


PAPER_COLUMNS = [
    ("runtime", "runtime"),
    ("graph_compilation", "graph compilation"),
    ("kernel_serialization", "kernel serialization"),
    ("latency_ms", "latency ms"),
    ("sms_active", "SMs active %"),
    ("warp_occupancy", "warp occupancy %"),
]


def _display_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for row in doc["rows"]:
        shown = dict(row)
        for key in ("sms_active_source", "warp_occupancy_source", "kernel_time_source"):
            shown[key] = shown[key] or "none"
        out.append(shown)
    return out


def _paper_display(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**r, "runtime": r["label"]} for r in doc["paper"]["rows"]]


def render(doc: dict[str, Any], fmt: str) -> str:
    """The document as rich text, Markdown, CSV or JSON."""
    from tracekit.renderers.tabular import render_csv, render_json, render_markdown, render_rich

    if fmt == "json":
        return render_json(doc)
    if fmt == "csv":
        rows = [{**r, "table": "measured"} for r in doc["rows"]]
        keys = list(ROW_KEYS)
        if "paper" in doc:
            keys = ["table", *keys]
            rows += [{**r, "table": "paper"} for r in doc["paper"]["rows"]]
        return render_csv(rows, keys)
    columns = _columns(doc)
    rows = _display_rows(doc)
    footer = [f"note: {n}" for n in doc["notes"]] + [f"warning: {w}" for w in doc["warnings"]]
    if fmt == "markdown":
        parts = ["## Measured", "", render_markdown(rows, columns)]
        parts += [f"- {line}" for line in footer]
        if "paper" in doc:
            parts += [
                "",
                f"## Published ({doc['paper']['citation']})",
                "",
                render_markdown(_paper_display(doc), PAPER_COLUMNS),
            ]
        return "\n".join(parts) + "\n"
    text = render_rich(rows, columns, title="Measured")
    if "paper" in doc:
        setup = doc["paper"]["setup"]
        title = (
            f"Published: {doc['paper']['citation']} — {setup['model']} bs{setup['batch_size']} "
            f"seq{setup['seq_len']} {setup['precision']}, {setup['gpu']}"
        )
        text += render_rich(_paper_display(doc), PAPER_COLUMNS, title=title)
    return text + "".join(line + "\n" for line in footer)


def run(args: argparse.Namespace) -> int:
    from tracekit.io import write_text_atomic

    check_iteration_options(args)
    resolve_output(args, [*args.inputs, *args.ncu])
    items = collect_inputs(args.inputs, args.ncu)
    if not items:
        raise TracekitError("no successful configurations with a trace in the inputs")
    doc = build_table(items, args.range_name, args.skip, args.paper)
    text = render(doc, args.format)
    if args.output:
        write_text_atomic(args.output, text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
