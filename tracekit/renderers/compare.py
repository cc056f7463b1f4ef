"""Presentation of the ``tracekit compare`` document: terminal tables, Markdown, CSV, JSON."""

from __future__ import annotations

from typing import Any

from tracekit.fields import COUNT_FIELDS, device_word
from tracekit.renderers.tabular import as_count, render_csv, render_json, render_markdown, render_rich

SUMMARY_COLUMNS: list[tuple[str, str]] = [
    ("name", "metric"),
    ("a", "A (median)"),
    ("b", "B (median)"),
    ("delta", "B − A"),
    ("ratio", "B / A"),
]
KERNEL_COLUMNS: list[tuple[str, str]] = [
    ("name", "name"),
    ("count_a", "count A"),
    ("count_b", "count B"),
    ("count_delta", "Δ count"),
    ("time_a_us", "time A µs"),
    ("time_b_us", "time B µs"),
    ("time_delta_us", "Δ time µs"),
]
CSV_COLUMNS = ["config", "section", "name", "a", "b", "delta", "ratio", "count_a", "count_b", "count_delta"]
NAME_WIDTH = 70


def _short(name: str | None) -> str | None:
    if name is None or len(name) <= NAME_WIDTH:
        return name
    return name[: NAME_WIDTH - 1] + "…"


def _verdict(side: dict[str, Any]) -> str:
    """'framework-bound, median GPU utilization 12.3%', or 'boundedness unknown' without device activity."""
    if not side.get("bound"):
        return "boundedness unknown"
    util = side.get("gpu_utilization")
    where = f", median {device_word(side['device'])} utilization {util:.1%}" if util is not None else ""
    return f"{side['bound']}-bound{where}"


def _heading(doc: dict[str, Any]) -> str:
    a, b = doc["a"], doc["b"]
    heading = (
        f"{doc['config']}: A = {a.get('runtime_label') or a['runtime'] or '?'} ({a['path']}, {_verdict(a)}), "
        f"B = {b.get('runtime_label') or b['runtime'] or '?'} ({b['path']}, {_verdict(b)})"
    )
    return heading + (" [SYNTHETIC data]" if a["synthetic"] or b["synthetic"] else "")


def _summary_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {**r, **{k: as_count(r[k]) for k in ("a", "b", "delta")}} if r["metric"] in COUNT_FIELDS else r
        for r in doc["summary"]
    ]


def _kernel_rows(doc: dict[str, Any], top: int | None) -> list[dict[str, Any]]:
    counts = ("count_a", "count_b", "count_delta")
    return [
        {**k, "name": _short(k["name"]), **{c: as_count(k[c]) for c in counts}} for k in doc["kernels"][:top]
    ]


def _csv(comparisons: list[dict[str, Any]], top: int | None) -> str:
    rows = []
    for doc in comparisons:
        rows += [{"config": doc["config"], "section": "summary", **r} for r in doc["summary"]]
        rows += [
            {
                "config": doc["config"],
                "section": "kernel",
                "name": k["name"],
                "a": k["time_a_us"],
                "b": k["time_b_us"],
                "delta": k["time_delta_us"],
                "ratio": k["time_ratio"],
                "count_a": k["count_a"],
                "count_b": k["count_b"],
                "count_delta": k["count_delta"],
            }
            for k in doc["kernels"][:top]
        ]
    return render_csv(rows, CSV_COLUMNS)


def render(doc: dict[str, Any], fmt: str) -> str:
    """The comparisons in ``fmt`` (table | markdown | csv | json)."""
    top = doc.get("top") or None
    if fmt == "json":
        return render_json(doc)
    if fmt == "csv":
        return _csv(doc["comparisons"], top)
    out: list[str] = []
    for comparison in doc["comparisons"]:
        kernels = _kernel_rows(comparison, top)
        n = len(comparison["kernels"])
        kernel_title = f"per-iteration time and count by op name (top {len(kernels)} of {n} by |Δ time|)"
        summary = _summary_rows(comparison)
        if fmt == "markdown":
            out += [
                f"## {_heading(comparison)}",
                "",
                render_markdown(summary, SUMMARY_COLUMNS),
                f"### {kernel_title}",
                "",
                render_markdown(kernels, KERNEL_COLUMNS),
            ]
        else:
            out += [
                _heading(comparison),
                render_rich(summary, SUMMARY_COLUMNS),
                render_rich(kernels, KERNEL_COLUMNS, title=kernel_title),
            ]
    return "\n".join(out)
