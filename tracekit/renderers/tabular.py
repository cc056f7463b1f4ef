"""Render a list of row dicts as a rich table, Markdown, CSV or JSON. Knows nothing of metrics."""

from __future__ import annotations

import csv
import io
import json
import math
import operator
from collections import deque
from collections.abc import Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:  # rich is imported where it is used: JSON/CSV/Markdown output does not load it
    import numpy as np
    from rich.table import Table

# ------------------------------------------------------------------------------------ floats as written
#
# JSON and CSV write every float as the shortest text of its value rounded to FLOAT_DIGITS significant
# digits, so a sum of ms values reads 11.013246, not 11.013245999999999 (binary noise in the 16th-17th digit).
# No meaningful digit moves: below 10^6 (ms: 16 minutes), 12 significant digits keep at least 6 decimals, the
# nanosecond of a ms value; from 10^6 up a float keeps 6 decimals instead (more than 12 digits), and from 10^9
# up it is written as it is (a double holds about 16 digits: there is no noise to take off). Whole floats,
# NaN and infinities are unchanged (NaN/inf become null in JSON as before, "nan"/"inf" in CSV).

#: Significant digits a float keeps in JSON and CSV output.
FLOAT_DIGITS = 12
#: From this magnitude up a float keeps :data:`FLOAT_DECIMALS` decimals rather than :data:`FLOAT_DIGITS` digits.
FLOAT_DECIMALS_FROM = 1e6
FLOAT_DECIMALS = 6
#: From this magnitude up a float is written unrounded.
FLOAT_KEPT_FROM = 1e9
#: Lists at least this long are rounded column by column with numpy rather than value by value.
VECTOR_MIN = 256


def round_float(x: float) -> float:
    """``x`` as JSON/CSV write it: rounded to 12 significant digits (6 decimals from 10^6, unchanged from 10^9
    up or when whole, NaN or infinite), the double nearest that decimal."""
    x = float(x)
    if not math.isfinite(x) or x.is_integer() or abs(x) >= FLOAT_KEPT_FROM:
        return x
    if abs(x) < FLOAT_DECIMALS_FROM:
        return float(f"{x:.{FLOAT_DIGITS}g}")
    return float(f"{x:.{FLOAT_DECIMALS}f}")


def round_floats(values: np.ndarray) -> np.ndarray:
    """:func:`round_float` of every element of a float array, vectorized, value for value the same.

    The decimal kept is the integer ``N = round(x * 10^k)`` over ``10^k`` (``k`` = the decimals kept, at most
    22, so ``10^k`` is exact): ``N`` is computed exactly as ``trunc(x) * 10^k + rint(frac(x) * 10^k)`` (both
    parts exact integers below 2^53), and ``N / 10^k``, one correctly rounded division, is the double nearest
    the decimal, as ``float(f"{x:.12g}")`` is. Where the product ``frac(x) * 10^k`` (error below 2e-4) lies within
    1e-3 of a half, where the digit count of ``N`` shows a misjudged exponent, or where ``k`` would pass 22
    (values below 1e-11), the scalar :func:`round_float` decides."""
    import numpy as np

    x = np.asarray(values, dtype=np.float64)
    out = x.copy()
    with np.errstate(all="ignore"):
        a = np.abs(x)
        idx = np.flatnonzero(np.isfinite(x) & (a < FLOAT_KEPT_FROM) & (x != np.trunc(x)))
        if not idx.size:
            return out
        v, av = x[idx], a[idx]
        exp = np.floor(np.log10(av)).astype(np.int64)
        digits = av < FLOAT_DECIMALS_FROM
        k = np.where(digits, FLOAT_DIGITS - 1 - exp, FLOAT_DECIMALS)
        scale = np.power(10.0, np.arange(23))[np.clip(k, 0, 22)]  # exact powers of ten
        whole = np.trunc(v)
        part = (v - whole) * scale
        n = whole * scale + np.rint(part)
        an = np.abs(n)
        lo, hi = 10.0 ** (FLOAT_DIGITS - 1), 10.0**FLOAT_DIGITS
        doubt = (k > 22) | (np.abs(part - np.floor(part) - 0.5) < 1e-3) | (digits & ((an < lo) | (an > hi)))
        out[idx] = n / scale
    for i in idx[doubt].tolist():
        out[i] = round_float(float(x[i]))
    return out


def round_frame(frame: Any) -> Any:
    """A polars frame with every Float64 column's values as :func:`round_float` has them (vectorized; nulls
    and NaN stay as they are), for frames written whole (``write_csv``, ``to_dicts``)."""
    import polars as pl

    assert isinstance(frame, pl.DataFrame)
    return frame.with_columns(
        pl.Series(name, round_floats(frame[name].to_numpy()), dtype=pl.Float64).zip_with(
            frame[name].is_not_null(), frame[name]
        )
        for name, dtype in frame.schema.items()
        if dtype == pl.Float64
    )


#: Where a float that is NaN or infinite was met, and the value: (path, value), path as :func:`rounded` spells it.
NonFinite = list[tuple[str, float]]


def _non_finite(found: NonFinite | None, values: np.ndarray, bad: np.ndarray, path: str, key: Any) -> None:
    """List in ``found`` the elements of ``values`` (a column, element ``i`` at ``path[i]``, or ``path[i].key``
    when ``key`` is not :data:`_NO_KEY`) where ``bad`` is true."""
    if found is None or not bad.any():
        return
    import numpy as np

    for i in np.flatnonzero(bad).tolist():
        found.append((f"{path}[{i}]" if key is _NO_KEY else f"{path}[{i}].{key}", float(values[i])))


_NO_KEY = object()


def _rounded_column(
    column: Sequence[Any], found: NonFinite | None = None, path: str = "", key: Any = _NO_KEY
) -> list[Any] | None:
    """One column of records (values of any type) with its floats rounded: numpy where they are all floats
    (or None), else value by value; None when it holds nothing to round (ints, text, booleans, None). With
    ``found``, each NaN or infinite float is listed there (:func:`rounded`; element ``i`` is at ``path[i]``,
    or ``path[i].key`` for a column of records).

    The floats are read with ``np.fromiter`` (a third of ``np.array``'s time on a list) and None's places
    found with a C-level ``map(operator.is_)``, then put back after the rounding (numpy's object arrays,
    elementwise ``!= None``, took twice as long)."""
    types = set(map(type, column))
    from_numpy = any(t.__module__ == "numpy" for t in types)  # numpy scalars: value by value (rounded)
    if not from_numpy and not any(issubclass(t, (float, dict, list, tuple)) for t in types):
        return None
    if not from_numpy and types <= {float, type(None)}:
        import numpy as np

        if type(None) not in types:
            floats = np.fromiter(column, np.float64, len(column))
            if found is not None:
                _non_finite(found, floats, ~np.isfinite(floats), path, key)
            return round_floats(floats).tolist()
        gone = np.fromiter(map(operator.is_, column, repeat(None)), bool, len(column))
        floats = np.array(column, dtype=np.float64)  # None -> NaN, put back below
        if found is not None:
            _non_finite(found, floats, ~np.isfinite(floats) & ~gone, path, key)
        out = round_floats(floats).tolist()
        deque(map(out.__setitem__, np.flatnonzero(gone).tolist(), repeat(None)), maxlen=0)
        return out
    if found is None:
        return [rounded(value) for value in column]
    if key is _NO_KEY:
        return [rounded(value, found, f"{path}[{i}]") for i, value in enumerate(column)]
    return [rounded(value, found, f"{path}[{i}].{key}") for i, value in enumerate(column)]


def _rounded_records(
    rows: Sequence[Any], found: NonFinite | None = None, path: str = ""
) -> list[dict[Any, Any]] | None:
    """A long list of dicts with the same keys (a frame's rows), rounded a column at a time; each row a copy
    with its own key order (None when the rows are not such a list).

    Same keys: every row as long as the first and holding each of its keys (``itemgetter`` raises
    KeyError otherwise), which is the first row's key set, checked in C-level maps."""
    if set(map(type, rows)) != {dict}:
        return None
    keys = list(rows[0])
    if set(map(len, rows)) != {len(keys)}:
        return None
    out = list(map(dict.copy, rows))
    listed = len(found) if found is not None else 0
    for key in keys:
        try:
            column = list(map(operator.itemgetter(key), rows))
        except KeyError:  # a row without this key (and, being as long, with another)
            if found is not None:
                del found[listed:]  # the caller goes row by row and lists them again
            return None
        values = _rounded_column(column, found, path, key)
        if values is not None:
            deque(map(operator.setitem, out, repeat(key), values), maxlen=0)  # C loop: row[key] = value
    return out


def rounded(data: Any, found: NonFinite | None = None, path: str = "") -> Any:
    """``data`` (dicts, lists, tuples, scalars) with every float as :func:`round_float` has it; the input
    is not changed. Long lists of records or of floats are rounded a column at a time (:func:`round_floats`).

    With ``found`` (a list), each NaN or infinite float is listed there as (where, value): ``where`` is the
    path from ``data`` (``path`` its own), keys joined by ``.`` and list items as ``[i]``, such as
    ``iterations[3].gpu_utilization``; in the order met, a long list of records column by column."""
    if isinstance(data, float):
        if found is not None and not math.isfinite(data):
            found.append((path, data))
        return round_float(data)
    if isinstance(data, dict):
        if found is None:
            return {key: rounded(value) for key, value in data.items()}
        return {
            key: rounded(value, found, f"{path}.{key}" if path else str(key)) for key, value in data.items()
        }
    if isinstance(data, (list, tuple)):
        if len(data) >= VECTOR_MIN:
            records = _rounded_records(data, found, path)
            if records is not None:
                return records
            column = _rounded_column(data, found, path)
            return list(data) if column is None else column
        if found is None:
            return [rounded(value) for value in data]
        return [rounded(value, found, f"{path}[{i}]") for i, value in enumerate(data)]
    if type(data).__module__ == "numpy":
        return rounded(_from_numpy(data), found, path)
    return data


def _from_numpy(value: Any) -> Any:
    """A numpy bool, integer or float scalar as the Python value it holds (a float32 or float16 as the
    shortest decimal of its value, as numpy prints it: ``np.float32(1.1)`` is 1.1, not 1.10000002384); any
    other value unchanged."""
    import numpy as np

    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(str(value)) if value.dtype.itemsize < 8 else float(value)
    return value


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


def _markdown_cell(text: str) -> str:
    """``text`` as one Markdown table cell: a ``|`` escaped (GitHub renders ``\\|`` as ``|`` in a cell), a line
    break as a space (a cell holds one line), so a name holding either does not split its row."""
    if "|" in text:
        text = text.replace("|", "\\|")
    if "\n" in text or "\r" in text:
        text = " ".join(text.splitlines())
    return text


def render_markdown(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A GitHub-flavoured Markdown table (each value one cell: :func:`_markdown_cell`)."""
    head = "| " + " | ".join(_markdown_cell(h) for _, h in columns) + " |"
    lines = [head, "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_markdown_cell(format_value(row.get(k))) for k, _ in columns) + " |")
    return "\n".join(lines) + "\n"


def render_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """CSV with a header row; None becomes an empty cell, floats as :func:`round_float` writes them."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    if not columns:
        writer.writerows([] for _ in rows)
        return buf.getvalue()
    cells = [[row.get(c) for row in rows] for c in columns]
    if len(rows) >= VECTOR_MIN:
        cells = [column if (done := _rounded_column(column)) is None else done for column in cells]
    else:
        cells = [[rounded(value) for value in column] for column in cells]
    writer.writerows(zip(*cells, strict=True))  # csv writes None as an empty cell
    return buf.getvalue()


#: The key under which a JSON object document says which values were NaN or infinite (written null).
NON_FINITE_KEY = "non_finite"
#: At most this many of them are listed by path; ``count`` counts them all.
NON_FINITE_LISTED = 100


def _spelling(value: float) -> str:
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


def render_json(data: Any) -> str:
    """Pretty JSON (2-space indent, UTF-8 text); floats as :func:`round_float` writes them.

    NaN and infinities are written null, so the output is strict JSON (no bare ``NaN``), and an object
    document says what they were: under :data:`NON_FINITE_KEY`, ``count`` and ``values``, the first
    :data:`NON_FINITE_LISTED` by path (``{"iterations[3].gpu_utilization": "Infinity"}``; ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"`` as JavaScript spells them). The key is there only when such a value is;
    a document that is not an object (a bare list) has no place for it and says nothing.

    orjson does both at once and is ~10x faster than the standard library on the per-iteration lists of
    large traces; values it cannot take (integers beyond 64 bits) go through ``json`` instead."""
    found: NonFinite = []
    data = rounded(data, found)
    if found and isinstance(data, dict):
        listed = {where: _spelling(value) for where, value in found[:NON_FINITE_LISTED]}
        data[NON_FINITE_KEY] = {"count": len(found), "values": listed}
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
