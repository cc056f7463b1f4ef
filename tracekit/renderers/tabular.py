"""Render a list of row dicts as a rich table, Markdown, CSV or JSON. Knows nothing of metrics."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:  # rich is imported where it is used: JSON/CSV/Markdown output does not load it
    from rich.table import Table


def format_value(value: Any, digits: int = 3) -> str:
    """Human formatting for a cell: None -> '—', floats to ``digits`` decimals, bools as yes/no."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def as_count(value: Any) -> Any:
    """A count for display: an integral float as an int ("401", not "401.0"); other values unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def rich_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]], title: str | None = None
) -> Table:
    """A rich Table; ``columns`` are (key, header) pairs."""
    from rich.table import Table

    table = Table(title=title, header_style="bold")
    for key, header in columns:
        table.add_column(header, justify="left" if key in _TEXT_KEYS else "right")
    for row in rows:
        table.add_row(*(format_value(row.get(key)) for key, _ in columns))
    return table


_TEXT_KEYS = {
    "runtime",
    "name",
    "source",
    "range",
    "bound",
    "kernel",
    "what",
    "position",
    "cpu_context",
    "sms_active_source",
    "warp_occupancy_source",
    "graph_compilation",
    "kernel_serialization",
    "model",
    "kernel_time_source",
    "device",
    "latency_source",
}


def render_rich(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[tuple[str, str]],
    title: str | None = None,
    width: int = 160,
) -> str:
    """The rich table as plain text (no colour codes), for files and tests."""
    from rich.console import Console

    console = Console(record=True, width=width, file=io.StringIO())
    console.print(rich_table(rows, columns, title))
    return console.export_text()


def render_markdown(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(h for _, h in columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(format_value(row.get(k)) for k, _ in columns) + " |")
    return "\n".join(lines) + "\n"


def render_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """CSV with a header row; None becomes an empty cell, floats keep full precision."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row.get(c) is None else row.get(c) for c in columns])
    return buf.getvalue()


def render_json(data: Any) -> str:
    """Pretty JSON (2-space indent, UTF-8 text); NaN/inf become null so the output is strict JSON.

    orjson does both at once and is ~10x faster than the standard library on the per-iteration lists of
    large traces; values it cannot take (integers beyond 64 bits) go through ``json`` instead."""
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"
    except orjson.JSONEncodeError:
        return json.dumps(_clean(data), indent=2, ensure_ascii=False) + "\n"


def _clean(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value
