"""Summary statistics over iterations, and the typed summary of one analyzed trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

# the quantile rule (polars-free, for the collection side too), re-exported
from tracekit.quantiles import (  # noqa: F401
    QUANTILES,
    min_values,
    quantile,
    quantile_given,
    withheld_note,
    withheld_quantiles,
)

#: Statistics reported for every per-iteration metric, in order.
STAT_NAMES = ("mean", "p50", "p90", "p99", "min", "max")


@dataclass(frozen=True)
class Stats:
    """One field's statistics over iterations (nulls skipped; None when no iteration has a value).

    Quantiles use linear interpolation (numpy's default), so they agree with ``numpy.percentile``; p90 and
    p99 are None over fewer values than :func:`min_values` (10 and 100), p50 is given over any number."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    min: float | None = None
    max: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        """``{"mean": ..., "p50": ..., ...}`` in :data:`STAT_NAMES` order."""
        return {name: getattr(self, name) for name in STAT_NAMES}


@dataclass(frozen=True)
class Summary:
    """Summary of one trace's analyzed iterations.

    ``fields``: per-field :class:`Stats` (keys: :data:`tracekit.fields.NUMERIC_FIELDS`); ``bound``:
    "framework" / "compute" from the median utilization (:func:`tracekit.analyzers.sweep.bound_of`), None
    without device activity; ``synchronized``: every iteration's device work ended inside its range;
    ``verdict_uncertain``: why ``bound`` may be wrong (None: nothing known against it), e.g. ops that started
    milliseconds after launch on an idle device, whose wait counts as idle time."""

    iterations: int
    fields: dict[str, Stats] = field(default_factory=dict)
    bound: str | None = None
    bound_threshold: float = 0.5
    synchronized: bool = True
    verdict_uncertain: str | None = None

    def __getitem__(self, name: str) -> Stats:
        return self.fields.get(name, Stats())

    def mean(self, name: str) -> float | None:
        """The mean over iterations of field ``name`` (None when unknown)."""
        return self[name].mean

    def to_json(self) -> dict[str, Any]:
        """The ``summary`` object of ``tracekit analyze --format json``."""
        out: dict[str, Any] = {"iterations": self.iterations}
        out.update({name: stats.to_dict() for name, stats in self.fields.items()})
        out.update(bound=self.bound, bound_threshold=self.bound_threshold, synchronized=self.synchronized)
        out["verdict_uncertain"] = self.verdict_uncertain
        return out

    def frame(self) -> pl.DataFrame:
        """One row per field: ``field``, then the statistics (the notebook view of the summary)."""
        return pl.DataFrame(
            [{"field": name, **stats.to_dict()} for name, stats in self.fields.items()],
            schema={"field": pl.String, **{s: pl.Float64 for s in STAT_NAMES}},
        )


def summarize_columns(frame: pl.DataFrame, columns: list[str]) -> dict[str, Stats]:
    """For each numeric column of ``frame``: its :class:`Stats` over rows (the non-null ones), each quantile only over as many values as :func:`quantile_given` asks."""
    if not columns:
        return {}
    exprs = []
    for col in columns:
        c = pl.col(col).cast(pl.Float64)
        exprs += [c.mean().alias(f"{col}|mean")]
        exprs += [c.quantile(q, "linear").alias(f"{col}|{name}") for name, q in QUANTILES.items()]
        exprs += [c.min().alias(f"{col}|min"), c.max().alias(f"{col}|max"), c.count().alias(f"{col}|n")]
    row = frame.select(exprs).row(0, named=True)
    values: dict[str, dict[str, float | None]] = {}
    counts: dict[str, int] = {}
    for key, value in row.items():
        col, stat = key.split("|")
        if stat == "n":
            counts[col] = int(value)
        else:
            values.setdefault(col, {})[stat] = None if value is None else float(value)
    for col, stats in values.items():
        for name, q in QUANTILES.items():
            if not quantile_given(q, counts[col]):
                stats[name] = None
    return {col: Stats(**stats) for col, stats in values.items()}


def whole_ns(ms: pl.Expr) -> pl.Expr:
    """A millisecond column of the iteration frame back as the whole nanoseconds it was computed from
    (Int64): ratios of those compare exactly where ratios of the ms floats can miss a threshold by a rounding
    error."""
    return (ms * 1e6).round(0).cast(pl.Int64)
