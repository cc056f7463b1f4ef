"""What ``tracekit report`` prints on stdout (the files it writes are rendered by
:mod:`tracekit.renderers.report_markdown`): the sweeps table and the recommendations, or the document as
JSON / the configurations as CSV."""

from __future__ import annotations

from typing import Any

from tracekit.fields import common_device, device_name
from tracekit.renderers.report_markdown import SYNTHETIC_NOTE, sweep_rows
from tracekit.renderers.tabular import render_csv, render_json, render_markdown, render_rich

SUMMARY_COLUMNS: list[tuple[str, str]] = [
    ("runtime", "runtime"),
    ("device", "device"),
    ("seq_len", "seq"),
    ("latency_source", "latency"),
    ("smallest_latency_shown", "smallest batch: median ms [95%]"),
    ("plateau_range", "plateau"),
    ("transition_batch_size", "transition"),
    ("headroom_batch_size", "headroom batch"),
    ("headroom_ratio_shown", "its latency / smallest"),
    ("headroom_throughput_gain", "throughput gain"),
]


def configs_csv(doc: dict[str, Any]) -> str:
    """The configurations as CSV (report.csv); ``gpu_*`` columns named for the rows' device."""
    from tracekit.analyzers.report import CONFIG_COLUMNS

    device = common_device(c["device"] for c in doc["configs"])
    header = {k: device_name(k, device) for k in CONFIG_COLUMNS}
    rows = [{header[k]: c.get(k) for k in CONFIG_COLUMNS} for c in doc["configs"]]
    return render_csv(rows, list(header.values()))


def render(doc: dict[str, Any], fmt: str) -> str:
    """The report document in ``fmt`` (table | markdown | csv | json)."""
    if fmt == "json":
        return render_json(doc)
    if fmt == "csv":
        return configs_csv(doc)
    rows = sweep_rows(doc)
    recs = [f"- {r['text']}" for r in doc["recommendations"]]
    head = [f"SYNTHETIC data: {SYNTHETIC_NOTE}"] if doc.get("synthetic") else []
    if fmt == "markdown":
        head = [f"> {line}\n" for line in head]
        return "\n".join(head) + render_markdown(rows, SUMMARY_COLUMNS) + "\n" + "\n".join(recs) + "\n"
    return (
        "".join(f"{line}\n" for line in head)
        + render_rich(rows, SUMMARY_COLUMNS, title="Sweeps")
        + "\n".join(recs)
        + "\n"
    )
