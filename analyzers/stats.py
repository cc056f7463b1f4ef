"""Summary statistics over iterations."""

from __future__ import annotations

import polars as pl

#: Quantiles reported for every per-iteration metric.
STAT_NAMES = ("mean", "p50", "p90", "p99", "min", "max")


def summarize_columns(frame: pl.DataFrame, columns: list[str]) -> dict[str, dict[str, float | None]]:
    """For each numeric column: mean, p50, p90, p99, min, max over rows (nulls skipped; None when empty).

    Quantiles use linear interpolation (numpy's default), so they agree with ``numpy.percentile``.
    """
    if not columns:
        return {}
    exprs = []
    for col in columns:
        c = pl.col(col).cast(pl.Float64)
        exprs += [
            c.mean().alias(f"{col}|mean"),
            c.quantile(0.5, "linear").alias(f"{col}|p50"),
            c.quantile(0.9, "linear").alias(f"{col}|p90"),
            c.quantile(0.99, "linear").alias(f"{col}|p99"),
            c.min().alias(f"{col}|min"),
            c.max().alias(f"{col}|max"),
        ]
    row = frame.select(exprs).row(0, named=True)
    out: dict[str, dict[str, float | None]] = {}
    for key, value in row.items():
        col, stat = key.split("|")
        out.setdefault(col, {})[stat] = None if value is None else float(value)
    return out
