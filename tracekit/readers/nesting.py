"""Nesting of time ranges (NVTX push/pop, annotations, ORT sessions), shared by the readers. Vectorized."""

from __future__ import annotations

import polars as pl


def nesting_depth(frame: pl.DataFrame, keys: list[str]) -> pl.Series:
    """Nesting depth (Int32) of each row of ``frame`` (columns ``start``, ``end`` and ``keys``), in row order.

    depth = number of rows with the same ``keys`` still open when this one starts. A range ending exactly when
    another starts does not enclose it; of two starting together the longer encloses the shorter; a range
    ending before it starts encloses nothing (as one of length 0). Vectorized:
    +1 at each start, -1 at each end, sorted by time, cumulative sum per key.
    """
    if frame.height == 0:
        return pl.Series("depth", [], dtype=pl.Int32)
    base = frame.select(*keys, "start", "end").with_row_index("_row")
    starts = base.select(
        "_row",
        *keys,
        t=pl.col("start"),
        order=pl.lit(1, pl.Int8),
        tie=-pl.col("end"),
        delta=pl.lit(1, pl.Int64),
    )
    ends = base.select(
        "_row",
        *keys,
        # a range ending before it starts (a damaged row, an exporter's default 0 for a missing end) closes at
        # its own start: its end, taken as is, closed a range before every later start of its thread (each
        # depth there one too small); a null end (never closed) stays open to the end of the sweep
        t=pl.when(pl.col("end") < pl.col("start")).then(pl.col("start")).otherwise(pl.col("end")),
        # ends sort before starts at the same instant, except a zero-length range's own end
        order=pl.when(pl.col("end") > pl.col("start")).then(pl.lit(0, pl.Int8)).otherwise(pl.lit(2, pl.Int8)),
        tie=pl.lit(0, pl.Int64),
        delta=pl.lit(-1, pl.Int64),
    )
    sweep = pl.concat([starts, ends]).sort([*keys, "t", "order", "tie", "_row"], nulls_last=True)
    sweep = sweep.with_columns(open=pl.col("delta").cum_sum().over(keys))
    depth = sweep.filter(pl.col("delta") == 1).select(
        "_row", depth=(pl.col("open") - 1).clip(0).cast(pl.Int32)
    )
    return _in_row_order(depth, "depth", frame.height)


def leaf_mask(frame: pl.DataFrame, keys: list[str]) -> pl.Series:
    """True for rows of ``frame`` (``start``, ``end``, ``keys``) that contain no other row with the same keys.

    In (start, longer first) order a row has a child exactly when the next row lies inside it: it starts
    before this one ends (or at its start) and ends no later. Returned in row order.
    """
    if frame.height == 0:
        return pl.Series("leaf", [], dtype=pl.Boolean)
    base = frame.select(*keys, "start", "end").with_row_index("_row")
    ordered = base.sort(
        [*keys, "start", "end", "_row"], descending=[False] * len(keys) + [False, True, False]
    )
    nxt = pl.col("start").shift(-1).over(keys)
    nxt_end = pl.col("end").shift(-1).over(keys)
    has_child = (
        nxt.is_not_null() & (nxt_end <= pl.col("end")) & ((nxt < pl.col("end")) | (nxt == pl.col("start")))
    )
    marked = ordered.select("_row", leaf=~has_child.fill_null(False))
    return _in_row_order(marked, "leaf", frame.height)


def _in_row_order(values: pl.DataFrame, column: str, height: int) -> pl.Series:
    """``values[column]`` put back in row order by its ``_row`` column (a permutation of 0..height-1): one
    scatter, not a sort or a join."""
    column_values = values.get_column(column)
    out = pl.repeat(None, height, dtype=column_values.dtype, eager=True).alias(column)
    return out.scatter(values.get_column("_row"), column_values)
