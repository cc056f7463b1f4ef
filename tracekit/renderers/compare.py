"""Presentation of the ``tracekit compare`` document: terminal tables, Markdown, CSV, JSON."""

from __future__ import annotations

from typing import Any

from tracekit.errors import one_line
from tracekit.fields import COUNT_FIELDS, device_word
from tracekit.renderers.tabular import (
    as_count,
    format_value,
    render_csv,
    render_json,
    render_markdown,
    render_rich,
)

SUMMARY_COLUMNS: list[tuple[str, str]] = [
    ("name", "metric"),
    ("a_shown", "A median [95%]"),
    ("b_shown", "B median [95%]"),
    ("delta_shown", "B − A"),
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
CSV_COLUMNS = [
    "config",
    "section",
    "name",
    "a",
    "b",
    "delta",
    "ratio",
    "a_low",
    "a_high",
    "b_low",
    "b_high",
    "significant",
    "count_a",
    "count_b",
    "count_delta",
]
#: Said after a delta whose two 95% intervals overlap.
WITHIN_NOISE = "within noise"
NAME_WIDTH = 70
#: Which latency the summary compares (``report``'s sweeps use the untraced one: the two differ).
LATENCY_NOTE = (
    "Latency: the traced iterations' (the profiler on), not the untraced latency.csv of a run, which tracekit "
    "report uses."
)


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
        f"{doc['config']}: A = {a.get('runtime_label') or a['runtime'] or 'runtime unknown'} ({a['path']}, "
        f"{_verdict(a)}), B = {b.get('runtime_label') or b['runtime'] or 'runtime unknown'} ({b['path']}, "
        f"{_verdict(b)})"
    )
    return heading + (" [SYNTHETIC data]" if a["synthetic"] or b["synthetic"] else "")


def _number(value: Any, count: bool) -> str:
    if value is None:
        return "—"
    if count:
        return format_value(as_count(value))
    return f"{value:.4g}" if isinstance(value, float) else format_value(value)


def _summary_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Medians with their intervals, and the delta stated only outside the noise ("+1.2" / "+0.01 (within
    noise)"), as text."""
    rows = []
    for r in doc["summary"]:
        count = r["metric"] in COUNT_FIELDS
        row = dict(r)
        for side in ("a", "b"):
            low, high = r.get(f"{side}_low"), r.get(f"{side}_high")
            shown = _number(r[side], count)
            if low is not None and high is not None and r[side] is not None and low != high:
                shown += f" [{_number(low, count)}–{_number(high, count)}]"
            row[f"{side}_shown"] = shown
        delta = r["delta"]
        if delta is None:
            row["delta_shown"] = "—"
        elif delta == 0:  # the same value on both sides: no difference, not one hidden by the noise
            row["delta_shown"] = "0"
        else:
            text = ("+" if delta > 0 else "") + _number(delta, count)
            row["delta_shown"] = f"{text} ({WITHIN_NOISE})" if r.get("significant") is False else text
        rows.append(row)
    return rows


def _kernel_rows(doc: dict[str, Any], top: int | None) -> list[dict[str, Any]]:
    """Per-name rows; a side where the name did not run (or with no op data) stays None, shown "—"."""
    counts = ("count_a", "count_b", "count_delta")
    return [
        {**k, "name": _short(k["name"]), **{c: None if k[c] is None else as_count(k[c]) for c in counts}}
        for k in doc["kernels"][:top]
    ]


def _order(shown: list[dict[str, Any]]) -> str:
    """How the per-name rows are ordered (analyzers/compare.py: by |Δ time|, an absent side counted as 0): a
    name that ran on one side only has no Δ ("—"), and is placed by its own time there, which the title says."""
    one_sided = any(
        k["time_delta_us"] is None and (k["time_a_us"] is not None or k["time_b_us"] is not None)
        for k in shown
    )
    return "|Δ time|; a name run on one side only: by its time there" if one_sided else "|Δ time|"


def _no_ops_note(doc: dict[str, Any]) -> str | None:
    """'B has no op data (a latency-only trace): its per-name columns are "—"', or None."""
    missing = [side.upper() for side in ("a", "b") if doc.get(f"{side}_has_ops") is False]
    if not missing:
        return None
    who = " and ".join(missing)
    return (
        f"{who} {'has' if len(missing) == 1 else 'have'} no op data (a latency-only trace): its columns are —"
    )


def _no_common_name_note(doc: dict[str, Any]) -> str | None:
    """'A and B have no op name in common (N names, each on one side only): no Δ per name' where both sides
    have ops and none of their names ran on both (different runtimes name their operators differently:
    aten::linear and MatMul), so every Δ of the per-name table is "—"; None otherwise."""
    kernels = doc["kernels"]
    if not kernels or doc.get("a_has_ops") is False or doc.get("b_has_ops") is False:
        return None
    if any(k["count_a"] is not None and k["count_b"] is not None for k in kernels):
        return None
    if any(all(k[f"count_{side}"] is None for k in kernels) for side in ("a", "b")):
        return None  # a side's figures withheld (its warning says why), not names on one side only
    return f"A and B have no op name in common ({len(kernels)} names, each on one side only): no Δ per name"


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


def all_warnings(doc: dict[str, Any]) -> list[str]:
    """The document's warnings, then each comparison's after its configuration: what ``tracekit compare`` says
    on stderr and its Markdown document under "Warnings"."""
    return doc["warnings"] + [f"{c['config']}: {w}" for c in doc["comparisons"] for w in c["warnings"]]


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
        kernel_title = (
            f"per-iteration time and count by op name (top {len(kernels)} of {n} by {_order(kernels)})"
        )
        summary = _summary_rows(comparison)
        note = _no_ops_note(comparison) or _no_common_name_note(comparison)
        legend = (
            "Medians over iterations with their 95% intervals; a difference whose intervals overlap is "
            f"'{WITHIN_NOISE}'. {LATENCY_NOTE} Per name: mean per iteration; '—' where the name did not run."
        )
        if fmt == "markdown":
            out += [
                f"## {one_line(_heading(comparison))}",
                "",
                render_markdown(summary, SUMMARY_COLUMNS),
                legend,
                "",
                f"### {kernel_title}",
                "",
                *([note, ""] if note else []),
                render_markdown(kernels, KERNEL_COLUMNS),
            ]
        else:
            out += [
                _heading(comparison),
                render_rich(summary, SUMMARY_COLUMNS),
                legend,
                *([note] if note else []),
                render_rich(kernels, KERNEL_COLUMNS, title=kernel_title),
            ]
    if fmt == "markdown":
        warnings = all_warnings(doc)
        if warnings:  # the terminal table leaves them to stderr; a Markdown document keeps them
            out += ["", "## Warnings", "", *(f"- {one_line(w)}" for w in warnings)]
    text = "\n".join(out)
    # a Markdown document ends with its last line's newline (a warning bullet had ended it bare: `cat` joined
    # the next text to it), as analyze's and table's do
    return text + "\n" if fmt == "markdown" and not text.endswith("\n") else text
