"""Kineto events of one decoded chunk (:mod:`tracekit.readers.kineto_json`) -> polars text columns.

Each chunk becomes one polars frame of *text* columns with a single C-level ``join`` per column and one
vectorized split, so there is no per-event Python code. Column text follows
``json.loads(..., parse_float=str)`` followed by a polars ``String`` cast: JSON strings unescaped, numbers
as their exact text (``-0`` as ``0``, as Python prints the int), ``true``/``false`` as such, ``null`` or a
missing key as null; nested arrays/objects keep their JSON text.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from typing import Any

import msgspec
import polars as pl

from tracekit.readers.kineto_json import (
    _NULL,
    _RAW_FIELDS,
    _SEP,
    _STR_FIELDS,
    ARG_FIELDS,
    INPUT_FIELDS,
    LAUNCH_FIELDS,
    join_raw_texts,
)

# ------------------------------------------------------------------------------------------ frames


def _raw_texts(values: list[msgspec.Raw]) -> pl.Series:
    """JSON texts -> one String series of those texts, in one join and one vectorized split (bytes that are
    not UTF-8, which msgspec leaves as they are in a raw value, as U+FFFD)."""
    texts = pl.Series([join_raw_texts(values)]).str.split(_SEP).explode()
    if texts.len() != len(values):  # a separator inside a value: impossible in valid JSON, but be sure
        texts = pl.Series([bytes(v).decode("utf-8", "replace") for v in values], dtype=pl.String)
    return texts


def _scalar_text(t: pl.Expr) -> pl.Expr:
    """A JSON value text -> the value as text: string quotes dropped, ``null`` -> null, ``-0`` -> ``0``.
    Strings with escapes are finished by :func:`_unescape`."""
    return (
        pl.when(t == "null")
        .then(None)
        .when(t == "-0")
        .then(pl.lit("0"))
        .otherwise(t.str.strip_prefix('"').str.strip_suffix('"'))
    )


def _unescape(frame: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """Replace the values whose JSON text is a string with escapes (``\\n``, ``\\u00e9``, ...) by the
    decoded string (only those rows go through the JSON decoder)."""
    escaped = texts.select(
        pl.col(c).str.starts_with('"') & pl.col(c).str.contains("\\", literal=True) for c in texts.columns
    )
    columns = []
    for column in texts.columns:
        mask = escaped.get_column(column)
        if mask.any():
            idx = mask.arg_true()
            decoded = texts.get_column(column).gather(idx).str.json_decode(pl.String)
            columns.append(frame.get_column(column).scatter(idx, decoded))
    return frame.with_columns(columns) if columns else frame


def _values_text(values: list[Any]) -> pl.Series:
    """Python values decoded by :class:`_FastEvent` (int, str or None) -> text, as a String cast of the
    values gives (the reader's text of an int is its decimal digits)."""
    try:
        return pl.Series(values, dtype=pl.Int64).cast(pl.String)
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        return pl.Series(values, dtype=pl.String, strict=False)


def columns(
    events: list[Any], fields: Iterable[str], fast: bool, args: list[Any] | None = None
) -> pl.DataFrame:
    """Text columns (String) of ``fields`` (names from :data:`EVENT_FIELDS`, :data:`ARG_FIELDS`,
    :data:`INPUT_FIELDS` and :data:`LAUNCH_FIELDS`, the last of lenient chunks only) of
    events of one chunk (``fast``: :func:`is_fast` of the chunk), in one C-level pass per field.
    ``args``: the events' ``args`` values when the caller has them already (:func:`args_of`)."""
    fields = list(fields)
    typed: dict[str, pl.Series] = {}
    raw: dict[str, pl.Series] = {}
    for name in fields:
        if name in ARG_FIELDS or name in INPUT_FIELDS or name in LAUNCH_FIELDS:
            if args is None:
                args = list(map(getattr, events, repeat("args")))
            objs = args
        else:
            objs = events
        is_raw = not fast or name in _RAW_FIELDS
        values = list(map(getattr, objs, repeat(name), repeat(_NULL if is_raw else None)))
        if is_raw:
            raw[name] = _raw_texts(values).alias(name)
        elif name in _STR_FIELDS:
            typed[name] = pl.Series(name, values, dtype=pl.String)
        else:
            typed[name] = _values_text(values).alias(name)
    parts = [pl.DataFrame(typed)] if typed else []
    if raw:
        texts = pl.DataFrame(raw)
        parts.append(_unescape(texts.select(_scalar_text(pl.col(c)).alias(c) for c in raw), texts))
    if not parts:
        return pl.DataFrame()
    frame = parts[0] if len(parts) == 1 else pl.concat(parts, how="horizontal")
    return frame.select(fields)


def raw_column(texts: pl.Series) -> pl.Series:
    """JSON value texts (:mod:`tracekit.readers.kineto_wire`'s ``"raw"`` kind, split) -> the text column
    :func:`columns` gives for those values."""
    frame = texts.to_frame()
    return _unescape(frame.select(_scalar_text(pl.col(texts.name)).alias(texts.name)), frame).to_series()
