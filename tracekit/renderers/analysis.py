"""Presentation of one trace's per-iteration analysis: rich text, Markdown, CSV, JSON."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from tracekit.renderers.tabular import format_value, render_csv, render_json, render_markdown

if TYPE_CHECKING:  # rich is imported where it is used: JSON/CSV/Markdown output does not load it
    from rich.console import Console

#: (summary key, label, unit) rows of the summary table.
SUMMARY_ROWS = [
    ("latency_ms", "latency", "ms"),
    ("cpu_ms", "CPU time in range", "ms"),
    ("gpu_busy_ms", "busy", "ms"),
    ("framework_overhead_ms", "framework overhead", "ms"),
    ("gpu_utilization", "utilization (busy / latency)", ""),
    ("idle_gaps", "idle gaps", "count"),
    ("idle_ms", "idle", "ms"),
    ("kernels", "kernels / ops", "count"),
    ("launches", "launch calls", "count"),
    ("launch_api_us", "launch-call CPU time", "µs"),
    ("launch_latency_us", "launch latency (op start - call start)", "µs"),
    ("queue_us", "queue time (op start - call end)", "µs"),
]


def _duration(ms: float) -> str:
    """A duration given in ms, shown in µs below 0.1 ms so small values keep their digits."""
    return f"{ms * 1e3:.1f} µs" if abs(ms) < 0.1 else f"{ms:.3f} ms"


def _device_word(doc: dict[str, Any]) -> str:
    return "GPU" if doc["trace"]["device"] == "gpu" else "operator"


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


def _summary_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    word = _device_word(doc)
    for key, label, unit in SUMMARY_ROWS:
        stats = doc["summary"].get(key) or {}
        label = label.replace("busy", f"{word} busy") if key == "gpu_busy_ms" else label
        label = label.replace("utilization", f"{word} utilization") if key == "gpu_utilization" else label
        rows.append({"metric": label, "unit": unit, **stats})
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
    ("start_ns", "start (ns)"),
    ("cpu_context", "host was in"),
]


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
        digits = 1 if row["unit"] == "count" else 3
        table.add_row(*(format_value(row.get(k), digits) for k, _ in SUMMARY_COLUMNS))
    console.print(table)
    if doc["longest_gaps"]:
        gaps = Table(title="longest idle gaps", header_style="bold")
        for key, header in GAP_COLUMNS:
            gaps.add_column(header, justify="left" if key in ("position", "cpu_context") else "right")
        for row in doc["longest_gaps"]:
            gaps.add_row(*(format_value(row.get(k), 1) for k, _ in GAP_COLUMNS))
        console.print(gaps)
    for warning in doc["warnings"]:
        console.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)


def render_markdown_doc(doc: dict[str, Any]) -> str:
    """The same content as Markdown."""
    parts = ["# tracekit analyze", ""] + [f"- {line}" for line in _headline(doc)] + [""]
    parts.append(render_markdown(_summary_rows(doc), SUMMARY_COLUMNS))
    if doc["longest_gaps"]:
        parts += ["", "## Longest idle gaps", "", render_markdown(doc["longest_gaps"], GAP_COLUMNS)]
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
