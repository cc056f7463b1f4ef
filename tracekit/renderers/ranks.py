"""The cross-trace document (:mod:`tracekit.analyzers.ranks`) as text, Markdown, CSV or JSON."""

from __future__ import annotations

from typing import Any

from tracekit.errors import one_line
from tracekit.fields import common_device, device_word
from tracekit.renderers.tabular import format_value, render_csv, render_json, render_markdown

#: (key, header) of the per-trace table.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("trace", "trace"),
    ("iterations", "iterations"),
    ("median_latency_ms", "median latency ms"),
    # the row's means add up: mean latency = mean busy + mean framework overhead (a median does not)
    ("mean_latency_ms", "mean latency ms"),
    ("mean_gpu_busy_ms", "mean GPU busy ms"),
    ("mean_framework_overhead_ms", "mean framework overhead ms"),
    ("mean_dispatch_ms", "mean dispatch ms"),
    ("mean_launch_ms", "mean launch ms"),
    ("mean_sync_ms", "mean sync ms"),
    ("mean_other_api_ms", "mean other API ms"),
    ("mean_in_flight_ms", "mean in flight ms"),
    ("mean_comm_ms", "mean comm ms"),
    ("mean_exposed_comm_ms", "mean exposed comm ms"),
    ("verdict", "verdict"),
)
#: ``scope``: "trace" (a trace's row) or "gpu" (one GPU of a multi-GPU trace: ``of_trace`` names its trace's
#: row, ``device_id`` the GPU).
CSV_COLUMNS = (
    ("trace", "scope", "of_trace", "file", "rank", "gpu", "device", "device_id", "range", "synthetic")
    + tuple(k for k, _ in COLUMNS[1:])
    + ("verdict_uncertain",)
)


def table_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every row in table order, each with its ``scope``: a trace's row, then the rows of its GPUs when it
    ran on several (``gpu_rows``, :func:`tracekit.analyzers.ranks.gpu_rows`)."""
    gpus: dict[str, list[dict[str, Any]]] = {}
    for row in doc.get("gpu_rows") or ():
        gpus.setdefault(row["of_trace"], []).append({**row, "scope": "gpu"})
    out = []
    for row in doc.get("rows", []):
        out.append({**row, "scope": "trace"})
        out += gpus.get(row["trace"], [])
    return out


def _shown(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as the table and Markdown show them: an uncertain verdict marked so (its why is among the
    warnings under the table), a GPU without figures its error in the verdict's place."""
    return [
        {**row, "verdict": f"{row['verdict']} (uncertain)"}
        if row.get("verdict_uncertain") and row.get("verdict")
        else {**row, "verdict": f"no figures: {row['error']}"}
        if row.get("error")
        else row
        for row in rows
    ]


def _ms(value: Any) -> str:
    return format_value(value)


def summary_lines(doc: dict[str, Any], warnings: bool = True) -> list[str]:
    """The lines under the table: which traces are synthetic, spread, clocks, straggler, skew (what was
    withheld, and why); the warnings too unless ``warnings`` is False (the command prints them on stderr)."""
    lines: list[str] = []
    synthetic = [row["trace"] for row in doc.get("rows", []) if row.get("synthetic")]
    if synthetic:
        lines.append(f"SYNTHETIC traces (simulated, not measurements): {', '.join(synthetic)}")
    spread = doc.get("spread")
    if spread and spread.get("why"):
        lines.append(f"spread: not computed ({spread['why']})")
    elif spread:
        ratio = spread.get("ratio")
        # (traces that hold other steps are compared on the steps numbered alike in every trace)
        on = (
            f" on the {spread['steps']} steps numbered alike in every trace ({spread['on_steps']})"
            if spread.get("on_steps")
            else ""
        )
        lines.append(
            f"spread{on}: slowest {spread['slowest']} ({_ms(spread['slowest_median_latency_ms'])} ms median), "
            f"fastest {spread['fastest']} ({_ms(spread['fastest_median_latency_ms'])} ms)"
            + (f", {ratio:.3f}x" if ratio else "")
            + (f" ({spread['note']})" if spread.get("note") else "")
        )
    clocks = doc.get("clocks") or {}
    if clocks.get("aligned"):
        offsets = ", ".join(
            f"{row['trace']} {off / 1e6:+.3f} ms"
            for row, off in zip(doc["rows"], clocks["offsets_ns"], strict=True)
        )
        said = f" ({clocks['why']})" if clocks.get("why") else ""
        # (an offset is known to the residual only: collectives of two process groups on one stream, which
        # nothing tells apart, leave offsets wrong by up to it)
        within = " (each known to within the residual)" if clocks["residual_us"] > 0 else ""
        if clocks["matched"] == 1:  # (no residual to speak of: one end gives each offset, unchecked)
            lines.append(
                f"clocks: aligned on 1 collective end{said}; offsets vs {clocks['reference']}: {offsets}"
            )
        else:
            lines.append(
                f"clocks: aligned on {clocks['matched']} collective ends{said} (largest residual "
                f"{clocks['residual_us']:.3f} µs); offsets vs {clocks['reference']}: {offsets}{within}"
            )
    elif doc["traces"] > 1:
        lines.append(f"clocks: not aligned ({clocks.get('why')}); no timestamp is compared across traces")
    straggler = doc.get("straggler") or {}
    if straggler.get("straggler"):
        lines.append(
            f"straggler: {straggler['straggler']} arrives last at {straggler['arrives_last']} of "
            f"{straggler['collectives']} collectives; the others wait {_ms(straggler['median_wait_ms'])} ms "
            f"(median) for it, {_ms(straggler['total_wait_ms'])} ms in all"
        )
    elif straggler.get("tied"):
        lines.append(
            f"straggler: none ({' and '.join(straggler['tied'])} each arrive last at {straggler['arrives_last']} "
            f"of {straggler['collectives']} collectives)"
        )
    elif straggler.get("collectives"):
        lines.append(
            f"straggler: none (at each of {straggler['collectives']} collectives two or more traces arrive "
            f"last within the clocks' alignment, {clocks.get('residual_us', 0):.3f} µs)"
        )
    skew = doc.get("skew") or {}
    if skew.get("why"):
        lines.append(f"step start skew: not computed ({skew['why']})")
    elif skew.get("steps"):
        lines.append(_skew_text(skew))
    slowest = doc.get("slowest_by_step") or {}
    if slowest.get("why"):
        lines.append(f"slowest by step: not computed ({slowest['why']})")
    elif slowest.get("slowest"):
        lines.append(
            f"slowest by step (durations only): {slowest['slowest']} in {slowest['slowest_steps']} of "
            f"{slowest['steps']} steps"
            + _note_text(slowest.get("note"), (doc.get("spread") or {}).get("note"))
        )
    if doc.get("gpu_note"):
        lines.append(f"GPU rows: {doc['gpu_note']}")
    if doc.get("comm_note"):
        lines.append(f"communication: {doc['comm_note']}")
    for spread in doc.get("gpu_busy_spread") or ():
        if spread.get("why"):
            lines.append(f"GPU busy within {spread['trace']}: not compared ({spread['why']})")
            continue
        ratio = spread.get("ratio")
        lines.append(
            f"GPU busy within {spread['trace']} (mean per iteration): most {spread['busiest']} "
            f"({_ms(spread['busiest_mean_gpu_busy_ms'])} ms), least {spread['least_busy']} "
            f"({_ms(spread['least_busy_mean_gpu_busy_ms'])} ms)" + (f", {ratio:.3f}x" if ratio else "")
        )
    lines += [_within_line(w) for w in doc.get("gpu_within") or ()]
    if warnings:
        lines += [f"warning: {w}" for w in doc.get("warnings", [])]
    return lines


def _skew_text(skew: dict[str, Any]) -> str:
    """The step-start skew (:func:`tracekit.analyzers.ranks.skew`) in words, with who ends its steps last."""
    text = (
        f"step start skew: {_ms(skew['median_start_skew_ms'])} ms median, {_ms(skew['max_start_skew_ms'])} ms "
        f"largest over {skew['steps']} steps"
    )
    if skew.get("ends_last"):
        text += f"; {skew['ends_last']} ends its step last in {skew['ends_last_steps']} of {skew['steps']}"
    return text


def _within_line(within: dict[str, Any]) -> str:
    """One line comparing the GPUs of one capture on its one clock (:func:`tracekit.analyzers.ranks.within_capture`)."""
    head = f"within {within['trace']} (one clock): "
    if within.get("why"):
        return head + f"its GPUs not compared ({within['why']})"
    parts = []
    if within.get("straggler"):
        parts.append(
            f"straggler {within['straggler']} arrives last at {within['arrives_last']} of "
            f"{within['collectives']} collectives, the others wait {_ms(within['median_wait_ms'])} ms (median)"
        )
    elif within.get("tied"):
        parts.append(f"straggler: none ({' and '.join(within['tied'])} each arrive last as often)")
    elif within.get("straggler_why"):
        parts.append(f"straggler: not computed ({within['straggler_why']})")
    elif within.get("collectives"):
        parts.append(
            f"straggler: none (two or more GPUs arrive last together at each of {within['collectives']})"
        )
    skew = within.get("skew") or {}
    if skew.get("why"):
        parts.append(f"step start skew: not computed ({skew['why']})")
    elif skew.get("steps"):
        parts.append(_skew_text(skew))
    slowest = within.get("slowest_by_step") or {}
    if slowest.get("slowest"):
        parts.append(
            f"slowest {slowest['slowest']} in {slowest['slowest_steps']} of {slowest['steps']} steps"
        )
    return head + "; ".join(parts)


def render_ranks(doc: dict[str, Any], fmt: str) -> str:
    """``doc`` in ``fmt`` (table, markdown, csv, json)."""
    if fmt == "json":
        return render_json(doc)
    if fmt == "csv":
        return render_csv(table_rows(doc), CSV_COLUMNS)
    if fmt == "markdown":
        body = render_markdown(_shown(table_rows(doc)), list(columns(doc)))
        return body + "\n" + "".join(f"- {one_line(line)}\n" for line in summary_lines(doc))
    return _text_table(doc) + "\n".join(summary_lines(doc, warnings=False)) + "\n"


def columns(doc: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """:data:`COLUMNS` with the busy time named by the rows' device, as analyze names it for one trace: "GPU"
    busy, "operator" busy on CPU-only traces, "device" busy when they differ (the key stays
    ``mean_gpu_busy_ms``, as in the CSV and JSON)."""
    word = device_word(common_device(row.get("device") for row in doc.get("rows", [])))
    return tuple(
        (key, f"mean {word} busy ms" if key == "mean_gpu_busy_ms" else header) for key, header in COLUMNS
    )


def _text_table(doc: dict[str, Any]) -> str:
    """A fixed-width plain table (also what a pipe gets)."""
    shown = columns(doc)
    cells = [[header for _, header in shown]]
    cells += [
        [
            ("  " if row["scope"] == "gpu" and key == "trace" else "") + format_value(row.get(key))
            for key, _ in shown
        ]
        for row in _shown(table_rows(doc))
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(shown))]
    lines = []
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def _note_text(note: str | None, said_before: str | None) -> str:
    """`` (note)``, or a pointer to the spread's line when it said the same note; nothing without one."""
    if not note:
        return ""
    return " (see the spread's note)" if note == said_before else f" ({note})"
