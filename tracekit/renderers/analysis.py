"""Presentation of one trace's per-iteration analysis: rich text, Markdown, CSV, JSON."""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

from tracekit.analyzers import stats
from tracekit.errors import one_line
from tracekit.fields import FIELDS, ITERATION_FIELDS, device_word
from tracekit.renderers.tabular import (
    as_count,
    format_value,
    render_csv,
    render_json,
    render_markdown,
    round_frame,
)

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


#: Summary labels that say what a row's per-iteration value is, where the field table's label (shared with
#: ``compare``) does not: each iteration's launch latency and queue time is the median over its launches, so
#: the mean/p50 columns are over those medians, not over the launches (docs/metrics.md).
SUMMARY_LABELS = {
    "launch_latency_us": "launch latency (median per iteration)",
    "queue_us": "queue time (median per iteration)",
}
#: Said under the summary where it has launch figures: what the two are, and what their statistics are over
#: (the labels stay short: a label wider than about 42 characters wraps the table at 120 columns).
LAUNCH_LEGEND = (
    "launch latency: op start - call start; queue time: max(0, op start - call end); each iteration's value "
    "is the median over its launches, and mean/p50/... are over those medians"
)
#: The ``kernels`` and ``idle_gaps`` rows by the trace's device: the kernel count leaves copies and memsets
#: out (``KERNEL_KINDS``), while the idle gaps are between every device op (a GPU iteration of 3 kernels and
#: 1 memset has 5 gaps); on a CPU-only trace the device work is operators.
DEVICE_LABELS = {
    "gpu": {
        "kernels": "kernels (copies, memsets not counted)",
        "idle_gaps": "idle gaps between kernels/copies/memsets",
    },
    "cpu": {"kernels": "operators", "idle_gaps": "idle gaps (between operators)"},
}


#: Trace formats of Nsight Compute, and its busy row's label: the kernels' durations were measured each alone
#: in ncu's replay (by default with clocks locked to base and caches flushed; readers/ncu.py), so their sum
#: is not the run's busy time (the committed H200 report: 0.876 ms an iteration against torch.profiler's 0.606
#: ms), and ``table`` withholds it.
NCU_FORMATS = ("ncu-csv", "ncu-rep")
NCU_BUSY_LABEL = "GPU busy (Σ kernel durations, ncu replay)"


def summary_label(name: str, device: str | None, fmt: str | None = None) -> str:
    """The summary table's label of field ``name`` on a trace of ``device`` in format ``fmt``."""
    if name == "gpu_busy_ms" and fmt in NCU_FORMATS:
        return NCU_BUSY_LABEL
    label = DEVICE_LABELS.get(device or "", {}).get(name) or SUMMARY_LABELS.get(name)
    return label or FIELDS[name].label_for(device)


def _launch_legend(doc: dict[str, Any]) -> str | None:
    """:data:`LAUNCH_LEGEND` where the summary has a launch latency (None: its rows are empty)."""
    has = (doc["summary"].get("launch_latency_us") or {}).get("p50") is not None
    return LAUNCH_LEGEND if has else None


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
        f"iterations: {s['iterations']} range{'' if s['iterations'] == 1 else 's'} {_range_words(doc)}"
        # the skipped ones head the trace and keep their numbers (the gaps table's iteration 22 under "20")
        + _skipped_headline(doc)
        + f" ({doc['range_choice']})",
    ]
    util = s["gpu_utilization"]["p50"]
    if s.get("bound") and util is not None:
        what = "framework-bound" if s["bound"] == "framework" else "compute-bound"
        if s.get("verdict_uncertain"):
            what += " (UNCERTAIN: see the warning 'verdict uncertain')"
        lines.append(
            f"verdict: {what} — median {_device_word(doc)} utilization {util:.1%} "
            f"(threshold {s['bound_threshold']:.0%}); median framework overhead "
            f"{_duration(s['framework_overhead_ms']['p50'])} of {_duration(s['latency_ms']['p50'])}"
        )
    apart = _unassigned_line(doc)
    if apart:
        lines.append(apart)
    if not s.get("synchronized", True):
        lines.append("latency: steady-state period (GPU work outlives its range; no sync inside the range)")
    return lines


#: How the range choice says that ``--range`` was read as a pattern (analyzers/ranges.py: "(regex: ...",
#: "(glob: ..."), not as a range's exact name.
PATTERN_CHOICES = ("(regex:", "(glob:")


def _range_words(doc: dict[str, Any]) -> str:
    r"""How the headline names the ranges: named 'iteration', or matching 're:^step\[' for a ``--range``
    pattern; quoted as typed (a repr doubles each backslash) and not called a name."""
    name = doc["range"]
    quoted = f'"{name}"' if "'" in name else f"'{name}'"
    # a pattern is one the user typed (the choice says so) or a default one, such as the serving-engine
    # steps' 're:^execute_...' (ranges.ENGINE_STEPS): written with the 're:' prefix either way
    pattern = name.startswith("re:") or any(
        kind in (doc.get("range_choice") or "") for kind in PATTERN_CHOICES
    )
    return f"{'matching' if pattern else 'named'} {quoted}"


def _unassigned_line(doc: dict[str, Any]) -> str | None:
    """One line for the device ops that count in no iteration (None when every op is in one)."""
    apart = doc.get("unassigned_ops") or {}
    parts = []
    missing, outside = apart.get("launch_not_in_trace") or {}, apart.get("outside_iterations") or {}

    def busy(entry: dict[str, Any]) -> str:  # (None: none of them has a start and end time)
        return "busy unknown" if entry.get("busy_ms") is None else f"{_duration(entry['busy_ms'])} busy"

    if missing.get("ops"):
        parts.append(f"{missing['ops']} launched before the capture ({busy(missing)})")
    if outside.get("ops"):
        parts.append(f"{outside['ops']} launched outside every iteration ({busy(outside)})")
    return "device ops in no iteration (not counted): " + "; ".join(parts) if parts else None


def _notes(doc: dict[str, Any]) -> list[str]:
    """Notes on values that need a word of explanation (the analysis' own notes, then why a p90/p99 is
    not given)."""
    note = quantile_note(doc)
    return list(doc.get("notes") or []) + ([note] if note else [])


def quantile_note(doc: dict[str, Any]) -> str | None:
    """Why the summary shows "—" for a p90 or p99 where it has a median (:func:`stats.quantile_given`: too
    few iterations with a value), once for the whole document; None when every quantile is given."""
    summary = doc.get("summary") or {}
    withheld: set[str] = set()
    for value in summary.values():
        if isinstance(value, dict) and value.get("p50") is not None:
            withheld.update(name for name in ("p90", "p99") if name in value and value[name] is None)
    n = summary.get("iterations")
    if not isinstance(n, int):
        return None
    note = stats.withheld_note(n, sorted(withheld))
    short = any(n >= stats.min_values(stats.QUANTILES[name]) for name in withheld)
    return f"{note}; fewer in rows where some iterations have no value" if note and short else note


#: Per-cause idle columns: shown in the "idle time by cause" section rather than the summary table.
CAUSE_FIELDS = ("dispatch_ms", "launch_ms", "sync_ms", "other_api_ms", "in_flight_ms")


def _summary_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per field of the summary: label (worded for the trace's device), unit, statistics; counts as
    integers where they are whole. The per-cause idle fields are left to :func:`cause_rows`."""
    order = SUMMARY_ORDER + [f.name for f in ITERATION_FIELDS if f.name not in SUMMARY_ORDER]
    rows = []
    for name in order:
        if name not in doc["summary"] or name not in FIELDS or name in CAUSE_FIELDS:
            continue
        field = FIELDS[name]
        stats = doc["summary"][name] or {}
        if field.kind == "count":
            stats = {k: as_count(v) for k, v in stats.items()}
        label = summary_label(name, doc["trace"]["device"], doc["trace"].get("format"))
        rows.append({"metric": label, "unit": field.unit, **stats})
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
    ("cause", "cause"),
    ("host_state", "launcher was"),
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


#: What the longest gaps' "µs", "cause" and "launcher was" columns are (analyzers/attribution.py): a gap that
#: began in a sync call and is mostly dispatch reads "dispatch" beside "sync". Said under the table rather than in
#: the headers, which would narrow the other columns.
GAP_LEGEND = (
    "µs: the gap's length; cause: the one holding most of the gap (its time by cause: --gaps FILE); launcher was: the launching "
    "thread's state when the gap began"
)


def _gap_legend(doc: dict[str, Any]) -> str:
    """:data:`GAP_LEGEND`, and where leading iterations were skipped, how the "iteration" column numbers them:
    in the trace, so that "iterations: 20" can sit above an iteration 22 (3 skipped)."""
    skipped, in_all = _skipped(doc)
    if not skipped:
        return GAP_LEGEND
    which = (
        f"the {skipped} skipped at its start"
        if in_all is None
        else f"the {in_all} skipped (the first {skipped} of each process)"
    )
    return f"{GAP_LEGEND}; iteration: numbered from 0 in the trace, {which} included"


def _skipped_headline(doc: dict[str, Any]) -> str:
    """ " after the first 10 skipped" (" after the first 1 of each process skipped (2 in all)"), or ""."""
    skipped, in_all = _skipped(doc)
    if not skipped:
        return ""
    if in_all is None:
        return f" after the first {skipped} skipped"
    return f" after the first {skipped} of each process skipped ({in_all} in all)"


#: analyze's warning where ``--skip N`` dropped the first N of each of several processes' series of ranges
#: (analyzers/iterations.py): the JSON's ``skipped`` is then the count per process, not in all
EACH_PROCESS_SKIPPED = re.compile(r"the first (\d+) of each process were dropped \((\d+) in all\)")


def _skipped(doc: dict[str, Any]) -> tuple[int, int | None]:
    """(the iterations skipped, per process where ``--skip`` cut several processes' series, and then their number
    in all; else None): (0, None) where nothing was skipped."""
    skipped = doc.get("skipped") or 0
    for warning in (doc.get("warnings") or ()) if skipped else ():
        found = EACH_PROCESS_SKIPPED.search(warning)
        if found and int(found.group(1)) == skipped:
            return skipped, int(found.group(2))
    return skipped, None


CAUSE_COLUMNS = [
    ("cause", "cause"),
    ("mean_ms", "mean ms"),
    ("p50_ms", "p50 ms"),
    ("p90_ms", "p90 ms"),
    ("total_ms", "total ms"),
    ("share", "share of idle"),
    ("meaning", "the launching host thread is"),
]
#: What each cause means, short (the JSON document carries the full definitions).
CAUSE_MEANINGS = {
    "dispatch": "outside API calls (framework code, dispatch)",
    "launch": "in a launch call",
    "sync": "in a sync call",
    "other_api": "in another API call",
    "in_flight": "done: next op launched, not started (device-side)",
}
#: What each device-side cause means, short (the parts of in_flight).
DEVICE_MEANINGS = {
    "launch_latency": "launch latency, device scheduling",
    "queued": "device busy with other work",
    "stream_wait": "waiting on another stream's event",
    "launch_lag": "implausibly long on an idle device",
}
OPERATOR_COLUMNS = [
    ("cpu_op", "top-level CPU operator"),
    ("dispatch_ms", "dispatch ms (all iterations)"),
    ("share", "share of dispatch"),
    ("pieces", "pieces"),
]


def _percent(value: float | None) -> str | None:
    return None if value is None else f"{100 * value:.1f}%"


def cause_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The "idle time by cause" table: per cause its mean/p50/p90 ms per iteration and share of the idle
    time, then the idle total (empty when the document has no attribution)."""
    section = doc.get("idle_attribution")
    if not section or section.get("available") is False:
        return []
    rows = []
    for row in section["causes"]:
        rows.append(
            {**row, "share": _percent(row["share_of_idle"]), "meaning": CAUSE_MEANINGS.get(row["cause"], "")}
        )
        if row["cause"] == "in_flight":
            rows += [
                {
                    "cause": f"  {part['cause']}",
                    "total_ms": part["total_ms"],
                    "share": None
                    if part["share_of_in_flight"] is None
                    else f"{100 * part['share_of_in_flight']:.1f}% of in_flight",
                    "meaning": DEVICE_MEANINGS.get(part["cause"], ""),
                }
                for part in section.get("device_side") or []
                if part["total_ms"]
            ]
    idle = section["idle_ms"]
    total = "100%" if any(r["share_of_idle"] for r in section["causes"]) else None
    rows.append(
        {
            "cause": "idle (sum)",
            "mean_ms": idle["mean"],
            "p50_ms": idle["p50"],
            "p90_ms": idle["p90"],
            "share": total,
        }
    )
    return rows


#: Said under the idle-cause table of a CPU-only trace whose other causes are all 0: there is no launch or sync
#: call and no device, so the rows beside dispatch are 0 by construction (the tour's ORT CPU trace showed them
#: at 0.000 beside "the launching host thread is ... in a launch call", unexplained).
CPU_CAUSE_NOTE = (
    "a CPU-only trace has no device and no launch or sync call: the time between operators is all dispatch "
    "(framework code between operators), and the other causes are 0"
)


def cause_note(doc: dict[str, Any]) -> str | None:
    """:data:`CPU_CAUSE_NOTE` for a CPU-only trace whose idle time is all dispatch; None otherwise."""
    section = doc.get("idle_attribution") or {}
    if doc["trace"].get("device") != "cpu" or section.get("available") is False or not section.get("causes"):
        return None
    others = [row.get("total_ms") or 0.0 for row in section["causes"] if row["cause"] != "dispatch"]
    return CPU_CAUSE_NOTE if not any(others) else None


def _times(ratio: float | None) -> str:
    """A speed-up factor as ``1.23x`` (``n/a`` when there is none)."""
    return "n/a" if ratio is None else f"{ratio:.2f}x"


def projection_lines(doc: dict[str, Any]) -> list[str]:
    """The CUDA-graph projection: one line with the numbers and one per assumption, or why there is none."""
    section = doc.get("idle_attribution")
    if not section:
        return []
    p = section["cuda_graph_projection"]
    if not p["applies"]:
        return [f"CUDA-graph projection: not applicable ({p['reason']})"]
    params = p["parameters"]
    values = ", ".join(
        f"{k.removesuffix('_ns').replace('_', ' ')} {v['value']:,} ns" for k, v in params.items()
    )
    sources = sorted({v["source"] for v in params.values()})
    lines = [
        f"CUDA-graph projection: mean latency {_duration(p['latency_ms'])} -> {_duration(p['projected_ms'])} "
        f"(saves {_duration(p['saved_ms'])}, {_times(p['speedup'])}) if the iteration were replayed as one "
        f"graph; {values} ({'; '.join(sources)}). Assumptions:"
    ]
    if p.get("caveat"):
        lines.insert(0, f"CUDA-graph projection, caution: {p['caveat']}")
    return lines + [f"  - {a}" for a in p["assumptions"]]


def _operator_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    top = (doc.get("idle_attribution") or {}).get("top_dispatch_operators")
    return [{**row, "share": _percent(row["share"])} for row in top or []]


def _sections(doc: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]], list[tuple[str, str]]]]:
    """The optional tables: framework tax per serving-step class, and one row per GPU."""
    out = []
    if doc.get("step_classes"):
        out.append(("framework tax by serving-step class (means)", doc["step_classes"], STEP_CLASS_COLUMNS))
    if doc.get("per_device"):
        rows = [
            {
                **r,
                "bound": f"{r['bound']} (uncertain)"
                if r.get("bound") and r.get("verdict_uncertain")
                else r.get("bound") or r.get("error"),
            }
            for r in doc["per_device"]
        ]
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
    table = Table(title="per-iteration summary", caption=_launch_legend(doc), header_style="bold")
    for key, header in SUMMARY_COLUMNS:
        table.add_column(header, justify="left" if key in ("metric", "unit") else "right")
    for row in _summary_rows(doc):
        digits = 1 if row["unit"] == "count" else 3  # whole counts are ints already
        table.add_row(*(format_value(row.get(k), digits) for k, _ in SUMMARY_COLUMNS))
    console.print(table)
    _print_causes(doc, console)
    if doc["longest_gaps"]:
        gaps = Table(title="longest idle gaps", caption=_gap_legend(doc), header_style="bold")
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


def _print_causes(doc: dict[str, Any], console: Console) -> None:
    """The idle time by cause, the CUDA-graph projection and the top operators by dispatch time."""
    from rich.table import Table

    rows = cause_rows(doc)
    section = doc.get("idle_attribution") or {}
    if section.get("available") is False:
        console.print(
            f"idle time by cause: not available ({section['reason']})", highlight=False, markup=False
        )
        return
    if not rows:
        return
    table = Table(title="idle time by cause (per iteration)", header_style="bold")
    for key, header in CAUSE_COLUMNS:
        table.add_column(header, justify="left" if key in ("cause", "meaning", "share") else "right")
    for row in rows:
        table.add_row(*(format_value(row.get(k), 3) for k, _ in CAUSE_COLUMNS))
    console.print(table)
    note = cause_note(doc)
    if note:
        console.print(f"note: {note}", highlight=False, markup=False)
    for line in projection_lines(doc):
        console.print(line, highlight=False, markup=False)
    operators = _operator_rows(doc)
    if operators:
        top = Table(title="top CPU operators by dispatch time", header_style="bold")
        for key, header in OPERATOR_COLUMNS:
            top.add_column(header, justify="left" if key in ("cpu_op", "share") else "right")
        for row in operators:
            top.add_row(*(format_value(row.get(k), 3) for k, _ in OPERATOR_COLUMNS))
        console.print(top)


def _markdown_causes(doc: dict[str, Any]) -> list[str]:
    section = doc.get("idle_attribution") or {}
    if section.get("available") is False:
        return ["", f"Idle time by cause: not available ({section['reason']})."]
    rows = cause_rows(doc)
    if not rows:
        return []
    parts = ["", "## Idle time by cause (per iteration)", "", render_markdown(rows, CAUSE_COLUMNS)]
    note = cause_note(doc)
    if note:
        parts += [f"{note[0].upper()}{note[1:]}.", ""]
    lines = projection_lines(doc)
    if lines:
        parts += [lines[0], ""] + [line.strip() for line in lines[1:]]
    operators = _operator_rows(doc)
    if operators:
        parts += [
            "",
            "### Top CPU operators by dispatch time",
            "",
            render_markdown(operators, OPERATOR_COLUMNS),
        ]
    return parts


def render_markdown_doc(doc: dict[str, Any]) -> str:
    """The same content as Markdown."""
    # (each line of free text one line, as errors.one_line writes a file or range name's newline: "\\n")
    parts = ["# tracekit analyze", ""] + [f"- {one_line(line)}" for line in _headline(doc)] + [""]
    parts.append(render_markdown(_summary_rows(doc), SUMMARY_COLUMNS))
    if _launch_legend(doc):
        parts.append(f"{_launch_legend(doc)}.")
    parts += [f"Note: {one_line(note)}" for note in _notes(doc)]
    parts += _markdown_causes(doc)
    if doc["longest_gaps"]:
        parts += [
            "",
            "## Longest idle gaps",
            "",
            render_markdown(doc["longest_gaps"], GAP_COLUMNS),
            _gap_legend(doc),
        ]
    for title, rows, columns in _sections(doc):
        parts += ["", f"## {title[0].upper()}{title[1:]}", "", render_markdown(rows, columns)]
    if doc["warnings"]:
        parts += ["", "## Warnings", ""] + [f"- {one_line(w)}" for w in doc["warnings"]]
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


def write_gaps(path: str, gaps: Any) -> None:
    """Write every idle gap (``analyze --gaps FILE``: a polars frame, one row per gap) to ``path`` atomically:
    JSON records for ``.json`` (strict JSON: a NaN or infinite value is written null, by
    :func:`~tracekit.renderers.tabular.render_json`), else CSV (where they read NaN, inf)."""
    import polars as pl

    from tracekit.io import write_text_atomic
    from tracekit.renderers.tabular import render_json

    assert isinstance(gaps, pl.DataFrame)
    frame = gaps.with_columns(pl.col(pl.Enum, pl.Categorical).cast(pl.String))
    frame = round_frame(frame)
    if path.lower().endswith(".json"):
        write_text_atomic(path, render_json(frame.to_dicts()))
    else:
        write_text_atomic(path, frame.write_csv())
