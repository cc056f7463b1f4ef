"""The Markdown document of ``tracekit report``: findings, recommendations, sweep and configuration tables,
figures. Takes the ``report.json`` document; knows nothing of trace formats."""

from __future__ import annotations

from typing import Any

from tracekit.analyzers.attribution import GRAPH_HEAD_NS, GRAPH_KERNEL_GAP_NS, GRAPH_TAIL_NS
from tracekit.analyzers.sweep import sweep_label
from tracekit.errors import one_line
from tracekit.fields import common_device, device_word
from tracekit.renderers.tabular import render_markdown

#: Said by every output of a report that reads a synthetic trace (report.md, and stdout).
SYNTHETIC_NOTE = (
    "at least one input is marked synthetic (e.g. written by `tracekit simulate`); "
    "its numbers come from a model of the mechanism, not a measurement."
)

SWEEP_COLUMNS: list[tuple[str, str]] = [
    ("runtime", "runtime"),
    ("device", "device"),
    ("seq_len", "seq len"),
    ("latency_source", "latency"),
    ("batch_range", "batch sizes"),
    ("plateau_range", "plateau"),
    ("smallest_latency_shown", "smallest batch: median ms [95% interval]"),
    ("transition_batch_size", "transition batch"),
    ("transition_ratio_shown", "latency there / smallest"),
    ("headroom_batch_size", "free headroom batch"),
    ("headroom_ratio_shown", "its latency / smallest"),
    ("headroom_throughput_gain", "throughput gain"),
]

CONFIG_TABLE_COLUMNS: list[tuple[str, str]] = [
    ("runtime", "runtime"),
    ("seq_len", "seq"),
    ("batch_size", "batch"),
    ("device", "device"),
    ("latency_source", "latency used"),
    ("latency_shown", "median ms [95% interval]"),
    ("latency_cv_shown", "CV"),
    ("latency_dropped", "dropped"),
    ("traced_latency_ms", "traced mean ms"),
    ("gpu_busy_ms", "{device} busy ms"),
    ("framework_overhead_ms", "overhead ms"),
    ("gpu_utilization", "{device} utilization"),
    ("verdict_shown", "verdict"),
    ("launches", "launches"),
    ("vs_smallest_shown", "vs smallest"),
    ("throughput_per_s", "samples/s"),
    ("plateau_state", "plateau"),
]


#: The framework overhead of each configuration by idle cause (means per iteration, ms).
CAUSE_TABLE_COLUMNS: list[tuple[str, str]] = [
    ("runtime", "runtime"),
    ("seq_len", "seq"),
    ("batch_size", "batch"),
    ("traced_latency_ms", "traced ms"),
    ("gpu_busy_ms", "{device} busy ms"),
    ("dispatch_ms", "dispatch ms"),
    ("launch_ms", "launch ms"),
    ("sync_ms", "sync ms"),
    ("other_api_ms", "other API ms"),
    ("in_flight_ms", "in flight ms"),
    ("dispatch_share", "dispatch share of overhead"),
    ("graph_projected_ms", "CUDA-graph projection ms"),
]
CAUSE_TEXT = (
    "Traced latency = {word} busy + the framework overhead split by what the host thread that launches the "
    "next op was doing: **dispatch** (outside every CUDA/HIP API call: Python and framework code, operator "
    "dispatch), **launch** (inside a launch call), **sync** (inside a synchronization call), **other API** "
    "(inside any other API call), **in flight** (the next op was launched and had not started: device-side "
    "latency). Means over the traced iterations, in ms; the causes sum to the overhead. The CUDA-graph "
    "projection is the latency if the iteration were replayed as one CUDA graph (kernels keep their "
    "durations; the host work between them goes, each inner gap becoming a replay's kernel gap, "
    f"{GRAPH_KERNEL_GAP_NS} ns, unless it is shorter or holds a device-side wait; the host work before and "
    f"after them becomes a replay's head and tail, {GRAPH_HEAD_NS:,} and {GRAPH_TAIL_NS:,} ns, when those "
    "are shorter; measured on one H200, so an estimate elsewhere; `tracekit analyze` prints every "
    "assumption); blank on CPU-only traces and on traces that already replay CUDA graphs."
)


#: What the busy time is a union of, by the sweep's device word (``fields.device_word``): a CPU-only trace's
#: "device work" is its top-level CPU operators (the tour's CPU runs had read "operator busy (union of device
#: work)").
BUSY_UNION = {
    "GPU": "union of device work",
    "operator": "union of the top-level CPU operators' time",
    "device": "union of device work; on CPU-only traces, of the top-level CPU operators' time",
}
#: What the timeline figure shows (plots.timeline_figure), by device word: a CPU-only trace has no API call,
#: device or stream, only ranges and each thread's operators.
TIMELINE_ROWS = {
    "GPU": "CPU ranges, API calls (launches in orange) and device ops per stream; idle gaps of the device shaded "
    "red.",
    "operator": "CPU ranges by depth and the CPU operators of each thread; the gaps between operators shaded red.",
    "device": "CPU ranges, API calls (launches in orange) and device ops per stream (on a CPU-only trace, the "
    "CPU operators of each thread); idle gaps shaded red.",
}


def cause_text(word: str) -> str:
    """The paragraph over the cause table (:data:`CAUSE_TEXT`), with a sentence for CPU-only traces, where
    every cause but dispatch is 0 by construction."""
    text = CAUSE_TEXT.format(word=word)
    if word == "operator":
        text += (
            " On CPU-only traces there is no device and no launch or synchronization call: the time between "
            "operators is all dispatch."
        )
    return text


def cause_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The configurations that have the idle-time attribution, with the dispatch share of their overhead."""
    rows = []
    for c in doc["configs"]:
        if c.get("dispatch_ms") is None:
            continue
        over = c.get("framework_overhead_ms")
        share = c["dispatch_ms"] / over if over else None
        rows.append({**c, "dispatch_share": None if share is None else f"{100 * share:.0f}%"})
    return rows


def headroom_lines(doc: dict[str, Any]) -> list[str]:
    """Per sweep with the attribution: the free headroom tied to the idle time it fills (from the sweep's
    busy and per-cause lists: the smallest batch size against the headroom batch size)."""
    lines = []
    for sweep in doc["sweeps"]:
        causes = sweep.get("idle_by_cause_ms") or {}
        batches, busy = sweep["batch_sizes"], sweep.get("gpu_busy_ms") or []
        head = sweep["headroom_batch_size"]
        if not causes or head not in batches or any(v is None for v in busy):
            continue
        i, j = 0, batches.index(head)
        idle = [sum(causes[c][k] or 0.0 for c in causes) for k in (i, j)]
        if idle[0] <= 0:
            continue
        host = sum((causes[c][i] or 0.0) for c in ("dispatch", "launch", "sync", "other_api") if c in causes)
        # a CPU-only sweep has no device: its idle time is the gaps between operators
        cpu = sweep.get("device") == "cpu"
        idles = "no operator runs for" if cpu else "the device idles"
        work, grows = ("operator work", "operator busy grows") if cpu else ("device work", "busy grows")
        line = (
            f"{sweep_label(sweep)}: at batch {batches[i]} {idles} {idle[0]:.3f} ms an iteration, "
            f"{100 * host / idle[0]:.0f}% of it host-side (dispatch, launch, sync, other API)"
        )
        if j > i:  # (a headroom at the smallest batch size compares nothing)
            line += (
                f"; up to batch {head} (the free headroom) {grows} {busy[i]:.3f} -> {busy[j]:.3f} ms while "
                f"the idle time goes {idle[0]:.3f} -> {idle[1]:.3f} ms: "
                + (
                    f"the added {work} fills host-bound idle time"
                    if idle[1] < idle[0]
                    else f"the idle time does not shrink, so the added {work} does not fill it"
                )
            )
        lines.append(line + ".")
    return lines


def _plural(n: int, noun: str) -> str:
    """ "1 sweep", "2 sweeps"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _span(values: list[Any]) -> str:
    if not values:
        return "—"
    return str(values[0]) if len(values) == 1 else f"{values[0]}–{values[-1]}"


def latency_text(median: float | None, low: float | None, high: float | None) -> str:
    """'12.35 [12.21–12.50]' (median and 95% interval), '12.35 (no interval)' or '—'."""
    if median is None:
        return "—"
    if low is None or high is None:
        return f"{median:.4g} (no interval)"
    return f"{median:.4g} [{low:.4g}–{high:.4g}]"


def ratio_text(ratio: float | None, low: float | None, high: float | None, state: str | None) -> str:
    """'1.45x [1.40–1.51]', '0.98x (within noise)', '1.02x' (no interval) or '—'."""
    if ratio is None:
        return "—"
    if state == "within noise":
        return f"{ratio:.2f}x (within noise)"
    if low is None or high is None:
        return f"{ratio:.2f}x"
    return f"{ratio:.2f}x [{low:.2f}–{high:.2f}]"


#: The "vs smallest" cell of the smallest batch size itself: the base of the ratios (not "1.00x [0.99–1.01]",
#: an interval of a row against itself).
BASE_TEXT = "1.00x (base)"


def _verdict_text(bound: str | None, uncertain: str | None) -> str:
    """'framework-bound', 'compute-bound (uncertain)' (its reason among the row's warnings) or '—'."""
    if bound is None:
        return "—"
    return f"{bound}-bound" + (" (uncertain)" if uncertain else "")


def config_display_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The configurations with their latency, CV and ratio to the smallest batch size as text."""
    rows = []
    for c in doc["configs"]:
        cv = c.get("latency_cv")
        rows.append(
            {
                **c,
                "latency_shown": latency_text(
                    c.get("latency_ms"), c.get("latency_ci_low"), c.get("latency_ci_high")
                )
                + (" unstable" if c.get("latency_unstable") else ""),
                "latency_cv_shown": "—" if cv is None else f"{100 * cv:.1f}%",
                "verdict_shown": _verdict_text(c.get("bound"), c.get("verdict_uncertain")),
                # the smallest batch size is the base of the ratios, not compared with itself
                "vs_smallest_shown": BASE_TEXT
                if c.get("sweep_base") and c.get("latency_vs_smallest") is not None
                else ratio_text(
                    c.get("latency_vs_smallest"),
                    c.get("latency_vs_smallest_low"),
                    c.get("latency_vs_smallest_high"),
                    c.get("vs_smallest"),
                ),
            }
        )
    return rows


#: The keys of a sweep that its configurations in report.json carry too (precision and the unidentified
#: trace are in the sweep's label, not in each configuration).
_SWEEP_KEYS = ("runtime", "seq_len", "model", "device", "precision", "unidentified")


def _smallest_unstable(doc: dict[str, Any], sweep: dict[str, Any]) -> bool:
    """Whether the sweep's smallest batch size's latency set is unstable: its configuration's
    ``latency_unstable``, matched on the keys both carry (where two sweeps differ only in a key the
    configurations lack, only when every candidate is unstable: never a mark on a stable set)."""
    candidates = [
        c
        for c in doc.get("configs") or []
        if c.get("batch_size") == sweep["smallest_batch_size"]
        and all(c[k] == sweep.get(k) for k in _SWEEP_KEYS if k in c)
    ]
    return bool(candidates) and all(c.get("latency_unstable") for c in candidates)


def sweep_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The sweeps of a report document as table rows (batch and plateau ranges as text; the batch sizes
    within noise of the plateau line after the plateau; the smallest batch size's median and interval)."""
    rows = []
    for sweep in doc["sweeps"]:
        row = dict(sweep)
        row["runtime"] = sweep_label(sweep)
        row["batch_range"] = ", ".join(str(b) for b in sweep["batch_sizes"])
        edge = sweep.get("plateau_edge") or []
        row["plateau_range"] = _span(sweep["plateau"]) + (
            f" ({', '.join(map(str, edge))}: within noise)" if edge else ""
        )
        lows, highs = sweep.get("latency_ci_low") or [None], sweep.get("latency_ci_high") or [None]
        # marked as the Configurations table marks it: the set its stability rules call unstable
        row["smallest_latency_shown"] = latency_text(sweep["smallest_latency_ms"], lows[0], highs[0]) + (
            " unstable" if _smallest_unstable(doc, sweep) else ""
        )
        row["headroom_ratio_shown"] = (
            ratio_text(
                sweep["headroom_latency_ratio"],
                sweep.get("headroom_latency_ratio_low"),
                sweep.get("headroom_latency_ratio_high"),
                sweep.get("headroom_difference"),
            )
            if sweep["headroom_batch_size"] != sweep["smallest_batch_size"]
            else "—"
        )
        row["transition_ratio_shown"] = (
            ratio_text(
                sweep["transition_latency_ratio"],
                sweep.get("transition_latency_ratio_low"),
                sweep.get("transition_latency_ratio_high"),
                None,
            )
            if sweep["transition_batch_size"] is not None
            else "—"
        )
        rows.append(row)
    return rows


def latency_figure_text(doc: dict[str, Any]) -> str:
    """What the latency-vs-batch figure shows: its circles only where some sweep has a transition batch size
    (the figure draws them, and its legend names them, only then)."""
    marks = (
        "circles mark the transition batch size"
        if any(s.get("transition_batch_size") is not None for s in doc["sweeps"])
        else "no sweep has a transition batch size"
    )
    return f"Log-log, medians with their 95% intervals as error bars; {marks} (first batch size past the plateau)."


def render_report_markdown(doc: dict[str, Any], figures: dict[str, str]) -> str:
    """The report as Markdown. ``figures`` maps figure key ("breakdown", "latency", "timeline") to the PNG
    file name (relative to the report); the SVG sits beside it."""
    settings = doc["settings"]
    out: list[str] = ["# tracekit report", ""]
    if doc.get("synthetic"):
        out += [f"> **Synthetic data**: {SYNTHETIC_NOTE}", ""]
    devices = sorted({str(c["device"]) for c in doc["configs"]})
    word = device_word(common_device(c["device"] for c in doc["configs"]))
    sources = sorted({c["latency_source"] for c in doc["configs"]})
    # (text from the inputs -- a sidecar's runtime, a file name in a warning -- is one line in each bullet, a
    # newline written "\\n" as errors.one_line writes it, so that an input cannot add a heading; hostile20)
    runtimes = one_line(", ".join(dict.fromkeys(str(c["runtime"]) for c in doc["configs"])))
    out += [
        f"- Inputs: {_plural(len(doc['configs']), 'configuration')}, {_plural(len(doc['sweeps']), 'sweep')} "
        f"(runtimes: {runtimes}); devices: {one_line(', '.join(devices))}.",
        f"- Latency used for the sweep: {' and '.join(sources)} median latency with its 95% interval "
        "(untraced = measured with the profiler off; traced = the trace's iterations), after dropping warm-up "
        "drift and outliers by rule (the `dropped` column; report.json lists which). A difference is stated "
        "only when the two intervals do not overlap; otherwise it is *within noise*. The busy/overhead "
        "breakdown is from the traced iterations (means).",
        f"- Framework-bound plateau: latency within {100 * settings['plateau_tolerance']:.0f}% of the smallest "
        f"batch size; framework-bound: {word} utilization below {settings['bound_threshold']:.2f}. "
        f"Iteration range: {settings.get('range') or 'default'}; warm-up iterations skipped: "
        f"{settings.get('skip', 0)}.",
        "",
        "## Findings and recommendations",
        "",
    ]
    if doc["recommendations"]:
        out += [f"- {one_line(r['text'])}" for r in doc["recommendations"]]
    else:
        out.append("- None: the data supports no recommendation.")
    out += ["", "## Sweeps", "", render_markdown(sweep_rows(doc), SWEEP_COLUMNS)]
    if figures.get("breakdown"):
        out += [
            "## Latency breakdown",
            "",
            f"Traced latency per batch size, split into {word} busy ({BUSY_UNION[word]}) and framework overhead "
            "(latency − busy), the overhead stacked by idle cause (next section); the percentage is the "
            "overhead share.",
            "",
            f"![latency breakdown]({figures['breakdown']})",
            "",
        ]
    causes = cause_rows(doc)
    if causes:
        columns = [(k, h.replace("{device}", word)) for k, h in CAUSE_TABLE_COLUMNS]
        out += ["## Framework overhead by cause", "", cause_text(word), ""]
        out += [render_markdown(causes, columns)]
        out += [f"- {one_line(line)}" for line in headroom_lines(doc)] + [""]
    if figures.get("latency"):
        out += [
            "## Latency vs batch size",
            "",
            latency_figure_text(doc),
            "",
            f"![latency vs batch size]({figures['latency']})",
            "",
        ]
    if figures.get("timeline"):
        out += [
            "## Timeline",
            "",
            f"{one_line(str(doc.get('timeline', {}).get('title', '')))}: {TIMELINE_ROWS[word]}",
            "",
            f"![timeline]({figures['timeline']})",
            "",
        ]
    columns = [(k, h.replace("{device}", word)) for k, h in CONFIG_TABLE_COLUMNS]
    out += ["## Configurations", "", render_markdown(config_display_rows(doc), columns)]
    if doc.get("warnings"):
        out += ["## Warnings", ""] + [f"- {one_line(w)}" for w in doc["warnings"]] + [""]
    out += ["Data: `report.json`, `report.csv`.", ""]
    return "\n".join(out)
