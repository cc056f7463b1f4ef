"""Summary statistics over iterations, and the typed summary of one analyzed trace."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import polars as pl

#: Statistics reported for every per-iteration metric, in order.
STAT_NAMES = ("mean", "p50", "p90", "p99", "min", "max")
#: The quantiles among them, by name.
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}


def min_values(q: float) -> int:
    """Fewest values over which quantile ``q`` is given: those where ``n * (1 - q) >= 1``, so that at least
    one value lies above it (p90: 10, p99: 100), computed exactly (``10 * (1 - 0.9)`` is 0.999... in
    floats); the median (and any q <= 0.5) over any number. Below that count the linear interpolation
    lies between the two largest values, above every observation but one: no p99 a user can trust."""
    if q <= 0.5:
        return 1
    return math.ceil(1 / (1 - Fraction(str(q))))


def quantile_given(q: float, n: int) -> bool:
    """Whether quantile ``q`` is given over ``n`` values (:func:`min_values`)."""
    return n >= 1 and n >= min_values(q)


def quantile(values: Sequence[float | None], q: float) -> float | None:
    """Quantile ``q`` of the ``values`` that are neither None nor NaN (linear interpolation, as ``numpy.percentile``), or None where
    there are too few of them (:func:`quantile_given`): the one rule for every p90/p99 tracekit shows."""
    present = sorted(float(v) for v in values if v is not None and not math.isnan(v))
    if not quantile_given(q, len(present)):
        return None
    pos = q * (len(present) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(present) - 1)
    return present[lo] + (present[hi] - present[lo]) * (pos - lo)


def withheld_quantiles(stats: dict[str, Any], count_key: str = "count") -> dict[str, Any]:
    """A copy of a recorded statistics object (``{"p90": ..., "p99": ..., "count": n}``, e.g. run.json's
    ``untraced_latency_ms``) with each quantile that :func:`quantile_given` withholds over ``count`` set to
    None (unchanged without a count)."""
    n = stats.get(count_key)
    if not isinstance(n, int) or isinstance(n, bool):
        return dict(stats)
    return {
        k: None if k in QUANTILES and not quantile_given(QUANTILES[k], n) else v for k, v in stats.items()
    }


def withheld_note(n: int, withheld: Sequence[str], unit: str = "iterations") -> str | None:
    """The one sentence saying why quantiles are not given ("—"): ``withheld`` their names (e.g. ``["p99"]``),
    ``n`` the count they are over; None when nothing is withheld."""
    names = [name for name in QUANTILES if name in withheld]
    if not names:
        return None
    needs = [f"{name} at least {min_values(QUANTILES[name])}" for name in names]
    head = f"{needs[0].replace(' at least ', ' needs at least ', 1)} {unit} with a value"
    rest = "".join(f" and {need}" for need in needs[1:])
    each = "each" if len(names) > 1 else "it"
    return f"{head}{rest}, so that one lies above {each}; {n} here (shown as —)"


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
