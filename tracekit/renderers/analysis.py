"""Presentation of one trace's per-iteration analysis: rich text, Markdown, CSV, JSON."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from tracekit.fields import FIELDS, ITERATION_FIELDS, device_word
from tracekit.renderers.tabular import as_count, format_value, render_csv, render_json, render_markdown

if TYPE_CHECKING:  # rich is imported where it is used: JSON/CSV/Markdown output does not load it
    from rich.console import Console

#: Order of the summary table's rows (fields not listed follow, in the field table's order).
SUMMARY_ORDER = [
    "latency_ms",
    "cpu_ms",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "gpu_utilization",
    "idle_gaps",
    "idle_ms",
    "kernels",
    "launches",
    "launch_api_us",
    "launch_latency_us",
    "queue_us",
]


def _duration(ms: float) -> str:
    """A duration given in ms, shown in µs below 0.1 ms so small values keep their digits."""
    return f"{ms * 1e3:.1f} µs" if abs(ms) < 0.1 else f"{ms:.3f} ms"


def _device_word(doc: dict[str, Any]) -> str:
    return device_word(doc["trace"]["device"])


def _headline(doc: dict[str, Any]) -> list[str]:
    t = doc["trace"]
    s = doc["summary"]
    lines = [
        f"trace: {t['path']}  ({t['format']}{' ' + str(t['format_version']) if t.get('format_version') else ''})",
        f"device measured: {t['device']}{' (' + t['gpu'] + ')' if t.get('gpu') else ''}"
        + ("  [SYNTHETIC trace]" if t.get("synthetic") else ""),
        f"iterations: {s['iterations']} ranges named {doc['range']!r} ({doc['range_choice']})",
    ]
    util = s["gpu_utilization"]["p50"]
    if s.get("bound") and util is not None:
        what = "framework-bound" if s["bound"] == "framework" else "compute-bound"
        lines.append(
            f"verdict: {what} — median {_device_word(doc)} utilization {util:.1%} "
            f"(threshold {s['bound_threshold']:.0%}); median framework overhead "
            f"{_duration(s['framework_overhead_ms']['p50'])} of {_duration(s['latency_ms']['p50'])}"
        )
    if not s.get("synchronized", True):
        lines.append("latency: steady-state period (GPU work outlives its range; no sync inside the range)")
    return lines


#: Shown under the summary when a queue time is negative (see the README's definitions).
NEGATIVE_QUEUE_NOTE = (
    "queue time < 0: the op started before its launch call returned (the call still had host work after "
    "submitting, or the host and device clocks are skewed); shown as measured, not clamped"
)


def _notes(doc: dict[str, Any]) -> list[str]:
    """Notes on values that need a word of explanation."""
    low = (doc["summary"].get("queue_us") or {}).get("min")
    return [NEGATIVE_QUEUE_NOTE] if low is not None and low < 0 else []


def _summary_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per field of the summary: label (worded for the trace's device), unit, statistics; counts as
    integers where they are whole."""
    order = SUMMARY_ORDER + [f.name for f in ITERATION_FIELDS if f.name not in SUMMARY_ORDER]
    rows = []
    for name in order:
        if name not in doc["summary"] or name not in FIELDS:
            continue
        field = FIELDS[name]
        stats = doc["summary"][name] or {}
        if field.kind == "count":
            stats = {k: as_count(v) for k, v in stats.items()}
        rows.append({"metric": field.label_for(doc["trace"]["device"]), "unit": field.unit, **stats})
    return rows


SUMMARY_COLUMNS = [
    ("metric", "metric"),
    ("unit", "unit"),
    ("mean", "mean"),
    ("p50", "p50"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("min", "min"),
    ("max", "max"),
]
GAP_COLUMNS = [
    ("iteration", "iteration"),
    ("position", "position"),
    ("duration_us", "µs"),
    ("offset_ms", "starts at (ms into iteration)"),
    ("cpu_context", "host was in"),
]


STEP_CLASS_COLUMNS = [
    ("step_class", "step class"),
    ("steps", "steps"),
    ("latency_ms", "latency ms"),
    ("gpu_busy_ms", "busy ms"),
    ("framework_overhead_ms", "overhead ms"),
    ("gpu_utilization", "utilization"),
    ("overhead_share", "overhead share"),
]
DEVICE_COLUMNS = [
    ("device", "device"),
    ("iterations", "iterations"),
    ("latency_ms", "latency ms (p50)"),
    ("gpu_busy_ms", "busy ms (p50)"),
    ("framework_overhead_ms", "overhead ms (p50)"),
    ("gpu_utilization", "utilization (p50)"),
    ("bound", "bound"),
]


def _sections(doc: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]], list[tuple[str, str]]]]:
    """The optional tables: framework tax per serving-step class, and one row per GPU."""
    out = []
    if doc.get("step_classes"):
        out.append(("framework tax by serving-step class (means)", doc["step_classes"], STEP_CLASS_COLUMNS))
    if doc.get("per_device"):
        rows = [{**r, "bound": r.get("bound") or r.get("error")} for r in doc["per_device"]]
        out.append(("per device (each GPU's own work and iterations)", rows, DEVICE_COLUMNS))
    return out


def render_rich_text(doc: dict[str, Any], width: int = 120) -> str:
    """Headline, summary statistics and the longest idle gaps, as plain text."""
    from rich.console import Console

    console = Console(record=True, width=width, file=io.StringIO())
    print_rich(doc, console)
    return console.export_text()


def print_rich(doc: dict[str, Any], console: Console) -> None:
    """Print headline, summary statistics and the longest idle gaps to a rich console."""
    from rich.table import Table

    for line in _headline(doc):
        console.print(line, highlight=False, markup=False)
    table = Table(title="per-iteration summary", header_style="bold")
    for key, header in SUMMARY_COLUMNS:
        table.add_column(header, justify="left" if key in ("metric", "unit") else "right")
    for row in _summary_rows(doc):
        digits = 1 if row["unit"] == "count" else 3  # whole counts are ints already
        table.add_row(*(format_value(row.get(k), digits) for k, _ in SUMMARY_COLUMNS))
    console.print(table)
    if doc["longest_gaps"]:
        gaps = Table(title="longest idle gaps", header_style="bold")
        for key, header in GAP_COLUMNS:
            gaps.add_column(header, justify="left" if key in ("position", "cpu_context") else "right")
        for row in doc["longest_gaps"]:
            gaps.add_row(*(format_value(row.get(k), 3 if k == "offset_ms" else 1) for k, _ in GAP_COLUMNS))
        console.print(gaps)
    for title, rows, columns in _sections(doc):
        extra = Table(title=title, header_style="bold")
        for key, header in columns:
            extra.add_column(header, justify="left" if key in ("step_class", "bound") else "right")
        for row in rows:
            extra.add_row(*(format_value(row.get(k), 3) for k, _ in columns))
        console.print(extra)
    for note in _notes(doc):
        console.print(f"note: {note}", highlight=False, markup=False)
    for warning in doc["warnings"]:
        console.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)


def render_markdown_doc(doc: dict[str, Any]) -> str:
    """The same content as Markdown."""
    parts = ["# tracekit analyze", ""] + [f"- {line}" for line in _headline(doc)] + [""]
    parts.append(render_markdown(_summary_rows(doc), SUMMARY_COLUMNS))
    parts += [f"Note: {note}" for note in _notes(doc)]
    if doc["longest_gaps"]:
        parts += ["", "## Longest idle gaps", "", render_markdown(doc["longest_gaps"], GAP_COLUMNS)]
    for title, rows, columns in _sections(doc):
        parts += ["", f"## {title[0].upper()}{title[1:]}", "", render_markdown(rows, columns)]
    if doc["warnings"]:
        parts += ["", "## Warnings", ""] + [f"- {w}" for w in doc["warnings"]]
    return "\n".join(parts) + "\n"


def render(doc: dict[str, Any], fmt: str) -> str:
    """Render the analyze document in ``fmt`` (table | markdown | csv | json)."""
    if fmt == "json":
        return render_json(doc)
    if fmt == "csv":
        # One row per iteration, the columns in the JSON document's own order.
        return render_csv(doc["iterations"], list(doc["iterations"][0]) if doc["iterations"] else [])
    if fmt == "markdown":
        return render_markdown_doc(doc)
    return render_rich_text(doc)
