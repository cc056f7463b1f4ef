"""The one rule for every p90/p99 tracekit shows or records: a quantile q is given over n values only when
``n * (1 - q) >= 1``, so that at least one value lies above it (p90 needs 10 values, p99 100; the median any
number). Below that count a linearly interpolated p99 lies between the two largest values, above every
observation but one: no p99 a user can trust.

Pure Python (no polars, no numpy): the collection side (``collect``'s latency statistics) and the input
resolution (:mod:`tracekit.inputs`) use it before any analysis module is loaded; :mod:`tracekit.analyzers.stats`
re-exports it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

#: The quantiles among them, by name.
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}


def _checked(q: float) -> float:
    """``q`` itself when it is a number in [0, 1]; ValueError otherwise (NaN, below 0, above 1, a bool)."""
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 <= q <= 1:
        raise ValueError(f"quantile {q!r} is not a number from 0 to 1")
    return float(q)


def min_values(q: float) -> int:
    """Fewest values over which quantile ``q`` is given: those where ``n * (1 - q) >= 1``, so that at least
    one value lies above it (p90: 10, p99: 100), computed exactly (``10 * (1 - 0.9)`` is 0.999... in
    floats); the median (and any q <= 0.5) over any number. Below that count the linear interpolation
    lies between the two largest values, above every observation but one: no p99 a user can trust.
    ``q`` 1 is the maximum, an observed value (no interpolation), over any number too. ValueError for a ``q``
    outside [0, 1] or NaN."""
    q = _checked(q)
    if q <= 0.5 or q == 1:
        return 1
    return math.ceil(1 / (1 - Fraction(str(q))))


def quantile_given(q: float, n: int) -> bool:
    """Whether quantile ``q`` is given over ``n`` values (:func:`min_values`)."""
    return n >= 1 and n >= min_values(q)


def quantile(values: Sequence[float | None], q: float) -> float | None:
    """Quantile ``q`` of the ``values`` that are neither None nor NaN (linear interpolation, as ``numpy.percentile``), or None where
    there are too few of them (:func:`quantile_given`; none at all: None for every ``q``): the one rule for every
    p90/p99 tracekit shows. ``q`` 0 is the minimum, 1 the maximum; ValueError for a ``q`` outside [0, 1] or
    NaN."""
    q = _checked(q)
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
