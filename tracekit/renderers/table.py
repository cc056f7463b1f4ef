"""Presentation of the ``tracekit table`` document: terminal table, Markdown, CSV, JSON.

Busy/utilization are worded from the rows' device ("GPU" / "operator"), in headers and CSV columns alike."""

from __future__ import annotations

from typing import Any

from tracekit.fields import common_device, device_name, device_word
from tracekit.renderers.tabular import render_csv, render_json, render_markdown, render_rich

PAPER_COLUMNS = [
    ("runtime", "runtime"),
    ("device", "device"),
    ("graph_compilation", "graph compilation"),
    ("kernel_serialization", "kernel serialization"),
    ("latency_ms", "latency ms (published)"),
    ("sms_active", "SMs active %"),
    ("warp_occupancy", "warp occupancy %"),
]


def _columns(doc: dict[str, Any], device: str | None) -> list[tuple[str, str]]:
    rows = doc["rows"]
    word = device_word(device)
    cols: list[tuple[str, str]] = [("runtime", "runtime"), ("device", "device")]
    if len({r["batch_size"] for r in rows}) > 1:
        cols.append(("batch_size", "batch"))
    if len({r["seq_len"] for r in rows}) > 1:
        cols.append(("seq_len", "seq len"))
    cols += [
        ("graph_compilation", "graph compilation"),
        ("kernel_serialization", "kernel serialization"),
        ("latency_ms", "latency ms (traced)"),
        ("gpu_busy_ms", f"{word} busy ms"),
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


def _display_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for row in doc["rows"]:
        shown = dict(row)
        for key in ("sms_active_source", "warp_occupancy_source", "kernel_time_source"):
            shown[key] = shown[key] or "none"
        out.append(shown)
    return out


def _paper_display(doc: dict[str, Any]) -> list[dict[str, Any]]:
    gpu = doc["paper"]["setup"]["gpu"]
    return [{**r, "runtime": r["label"], "device": f"gpu ({gpu})"} for r in doc["paper"]["rows"]]


def _csv(doc: dict[str, Any], device: str | None) -> str:
    from tracekit.analyzers.table import ROW_KEYS

    rows = [{**r, "table": "measured"} for r in doc["rows"]]
    keys = list(ROW_KEYS)
    if "paper" in doc:
        keys = ["table", *keys]
        rows += [{**r, "table": "paper"} for r in doc["paper"]["rows"]]
    header = {k: device_name(k, device) for k in keys}
    return render_csv([{header[k]: r.get(k) for k in keys} for r in rows], list(header.values()))


def render(doc: dict[str, Any], fmt: str) -> str:
    """The document as a terminal table, Markdown, CSV or JSON."""
    device = common_device(r["device"] for r in doc["rows"])
    if fmt == "json":
        return render_json(doc)
    if fmt == "csv":
        return _csv(doc, device)
    columns = _columns(doc, device)
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
