"""How far a timed set of iterations can be trusted: median, confidence interval, coefficient of variation,
warm-up drift, outliers and, when it can be told, what disturbed the run (the statistics pyperf and hyperfine
report, done the same way for every timed set: untraced and traced).

Every rule below is applied in this order to the per-iteration values of one timed set (latency in ms, in
iteration order); the iterations a rule drops are listed by index with the rule's name, never dropped silently.

1. **Warm-up drift** (rule ``warmup``): the leading iterations that are all outliers *above* the *second half*
   of the set (modified z-score, rule 2's test, against the second half's median and MAD) are dropped: a run
   whose first iterations are still warming caches, allocators or clocks, or whose start another process
   disturbed. At most half the set is dropped this way. Faster leading iterations are no warm-up and are
   kept (latency that rose during the run is a trend, rule 4, not a start to leave out).
2. **Outliers** (rule ``outlier``): of the rest, iterations whose modified z-score
   ``0.6745 * |x - median| / MAD`` exceeds :data:`OUTLIER_Z` (3.5, Iglewicz and Hoaglin's rule; MAD = median
   absolute deviation; when MAD is 0 the mean absolute deviation times 1.2533 stands in) are dropped, unless
   that would drop more than :data:`MAX_OUTLIER_SHARE` of them (then none are, and the set is called unstable:
   it has no single mode, when more than that share also lie more than :data:`DRIFT_MIN` (5%) from the
   median: values a fraction of a percent apart score above 3.5 when their MAD is smaller still, and are one
   mode).
3. On the kept iterations: ``median``; ``ci_low``/``ci_high``, the distribution-free :data:`CONFIDENCE`
   (95%) interval of the median from order statistics (the ranks where a Binomial(n, 1/2) leaves 2.5% on each
   side; needs at least :data:`MIN_CI_SAMPLES` = 6 iterations, else None); ``mean``, ``stdev`` (n - 1) and
   ``cv`` = stdev / mean, the coefficient of variation.
4. **Trend** (``drift``): the median of the first third of the kept iterations against the last third's; when
   their 95% intervals do not overlap and they differ by more than :data:`DRIFT_MIN` (5%), latency drifted
   during the run (thermal throttling, a background job starting or ending).
5. **Unstable** when ``cv`` > :data:`UNSTABLE_CV` (10%, pyperf's threshold), when a trend was found or when
   the outliers could not be dropped: one ``warnings`` sentence gives every reason, with the cause (rule 6)
   when one is known. What rules 1 and 2 dropped is one ``notes`` sentence (a warning when the cause of the
   dropped iterations was CPU time stolen: worth knowing even when the rest is stable).
6. **Cause** (with per-iteration process CPU time, as ``tracekit collect`` records it): the slow iterations
   (those dropped, and on an unstable set the slowest quarter of the kept ones) against the typical ones:
   when the slow iterations' extra wall time came with proportionally less process CPU time (CPU time per
   wall time below :data:`STOLEN_RATIO` of the typical iterations', and the missing CPU time explains at least
   half of their extra wall time), the process was not running for part of them: ``cpu_stolen`` (it waited
   for a CPU another process held, or for I/O; the context switches below tell which when they rose). When their CPU time grew with their wall time the process kept running
   (``more_cpu_work``: more work, or threads spinning while waiting for one another, which a descheduled
   sibling thread also causes), and CPU time alone names no cause. With per-iteration involuntary context
   switches, slow iterations preempted at least twice as often per ms as the typical ones (and at least once
   each) are ``preempted``: the scheduler gave their CPU to another runnable thread. Otherwise no cause is
   named.

Two sets **differ** only when their intervals do not overlap (:func:`difference`); otherwise the difference is
*within noise* and said so with the numbers. A set without an interval (fewer than 6 iterations) is compared
by its median alone and marked so (``noise_known`` False).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Confidence level of the interval of the median.
CONFIDENCE = 0.95
#: Modified z-score above which an iteration is an outlier (Iglewicz and Hoaglin).
OUTLIER_Z = 3.5
#: Consistency constant of the MAD for a normal distribution (0.6745 = the normal's 75th percentile).
MAD_SCALE = 0.6745
#: Mean absolute deviation to MAD-equivalent scale, used when the MAD is 0 (sqrt(pi / 2)).
MEANAD_SCALE = 1.253314
#: At most this share of the iterations is dropped as outliers; more and none are (no single mode).
MAX_OUTLIER_SHARE = 0.25
#: Fewest kept iterations for which an interval of the median is given (0.5^6 * 2 < 5%).
MIN_CI_SAMPLES = 6
#: Coefficient of variation above which a set is unstable (pyperf warns at 10% of the mean).
UNSTABLE_CV = 0.10
#: Least relative change between the first and last third that counts as a trend.
DRIFT_MIN = 0.05
#: ``tracekit collect`` times until the interval's half-width is within this fraction of the median.
TARGET_RELATIVE_CI = 0.02
#: Slow iterations whose CPU time per wall time is below this share of the typical iterations' lost CPU.
STOLEN_RATIO = 0.8

#: Slow iterations preempted this many times as often (per ms) as the typical ones: cause "preempted".
PREEMPTED_RATIO = 2.0

#: What each cause means, in one sentence (for warnings).
CAUSES: dict[str, str] = {
    "cpu_stolen": "the process was not running for part of them: less CPU time per wall second than in the "
    "other iterations (it waited, for a CPU that another process held or for I/O{where}){preempted}",
    "preempted": "the process was preempted {slow} times per slow iteration against {typical} per typical one "
    "(involuntary context switches: another runnable thread, usually of another process, took a CPU)",
    "more_cpu_work": "their process CPU time grew with their wall time: the process kept running (more work, "
    "or threads spinning while they waited for one another), so CPU time alone cannot tell whether another "
    "process interfered",
}


@dataclass(frozen=True)
class Measurement:
    """The statistics of one timed set (see the module docstring; values in the unit of the input, ms).

    ``count``: iterations given; ``kept``: iterations the statistics use; ``dropped``: {iteration index:
    rule}; ``notes``: what was dropped (one sentence); ``warnings``: why the set is unstable, or that its
    dropped iterations lost CPU time to another process; ``cause``: "cpu_stolen", "preempted",
    "more_cpu_work" or None."""

    count: int
    kept: int
    median: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    mean: float | None = None
    stdev: float | None = None
    cv: float | None = None
    warmup: tuple[int, ...] = ()
    outliers: tuple[int, ...] = ()
    trend: str | None = None
    unstable: bool = False
    cause: str | None = None
    warnings: tuple[str, ...] = ()
    cpu_per_wall: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def noise_known(self) -> bool:
        """Whether an interval exists (at least :data:`MIN_CI_SAMPLES` kept iterations)."""
        return self.ci_low is not None and self.ci_high is not None

    @property
    def relative_ci(self) -> float | None:
        """Half the interval's width over the median (None without an interval or with a zero median)."""
        if not self.noise_known or not self.median:
            return None
        assert self.ci_low is not None and self.ci_high is not None
        return (self.ci_high - self.ci_low) / 2.0 / abs(self.median)

    @property
    def dropped(self) -> dict[int, str]:
        """{iteration index: rule} of every dropped iteration."""
        out = {i: "warmup" for i in self.warmup}
        out.update({i: "outlier" for i in self.outliers})
        return dict(sorted(out.items()))

    def interval(self) -> tuple[float, float] | None:
        """(low, high), or None without an interval."""
        if not self.noise_known:
            return None
        assert self.ci_low is not None and self.ci_high is not None
        return self.ci_low, self.ci_high

    def to_json(self) -> dict[str, Any]:
        """The JSON form (run.json's ``untraced_latency_ms`` keys, report.json's ``latency_stats``)."""
        return {
            "median": self.median,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": CONFIDENCE,
            "cv": self.cv,
            "mean_kept": self.mean,
            "stdev": self.stdev,
            "count": self.count,
            "kept": self.kept,
            "dropped_warmup": list(self.warmup),
            "dropped_outliers": list(self.outliers),
            "trend": self.trend,
            "unstable": self.unstable,
            "cause": self.cause,
            "cpu_per_wall": self.cpu_per_wall,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Measurement | None:
        """Back from :meth:`to_json` (None when ``doc`` lacks the median: an older run.json)."""
        if not isinstance(doc, dict) or doc.get("median") is None or "kept" not in doc:
            return None
        return cls(
            count=int(doc.get("count") or 0),
            kept=int(doc["kept"]),
            median=doc["median"],
            ci_low=doc.get("ci_low"),
            ci_high=doc.get("ci_high"),
            mean=doc.get("mean_kept"),
            stdev=doc.get("stdev"),
            cv=doc.get("cv"),
            warmup=tuple(doc.get("dropped_warmup") or ()),
            outliers=tuple(doc.get("dropped_outliers") or ()),
            trend=doc.get("trend"),
            unstable=bool(doc.get("unstable")),
            cause=doc.get("cause"),
            warnings=tuple(doc.get("warnings") or ()),
            notes=tuple(doc.get("notes") or ()),
            cpu_per_wall=doc.get("cpu_per_wall"),
        )


# ----------------------------------------------------------------------------------------- the pieces


def _binom_cdf_half(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), exact (n <= 1000) or by the normal approximation."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= 1000:
        return sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return 0.5 * (1.0 + math.erf((k + 0.5 - n / 2.0) / (math.sqrt(n) / 2.0) / math.sqrt(2.0)))


def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """0-based ranks (lo, hi) into the sorted values whose interval [x_lo, x_hi] holds the median with at
    least ``confidence``: lo is the largest rank with P(Binomial(n, 1/2) < lo + 1) <= (1 - confidence) / 2,
    hi = n - 1 - lo. None when n < :data:`MIN_CI_SAMPLES` (no such interval exists)."""
    if n < MIN_CI_SAMPLES:
        return None
    tail = (1.0 - confidence) / 2.0
    # lo: the largest j with P(X <= j) <= tail (x_(j+1), 0-based rank j, is a valid lower bound); -1: none.
    # The CDF grows with j. Exact (n <= 1000): the terms summed as they come, C(n, j+1) from C(n, j), one
    # pass (a CDF summed anew for each j had taken 0.3 s an interval at n = 833: the trend rule's thirds of
    # a 2,500-iteration trace). Beyond: the normal approximation, searched by halves.
    lo = -1
    if n <= 1000:
        scale = 2.0**n
        term, cumulative = 1, 0
        for j in range(n):
            cumulative += term
            if cumulative / scale > tail:
                break
            lo = j
            term = term * (n - j) // (j + 1)
    else:
        low, high = 0, n - 1  # (P(X <= n - 1) < 1: the search stays inside)
        if _binom_cdf_half(0, n) <= tail:
            while low < high:  # invariant: P(X <= low) <= tail
                mid = (low + high + 1) // 2
                if _binom_cdf_half(mid, n) <= tail:
                    low = mid
                else:
                    high = mid - 1
            lo = low
    if lo < 0:
        return None
    return lo, n - 1 - lo


def _mad(values: Sequence[float], center: float) -> float:
    return statistics.median(abs(v - center) for v in values)


def _robust_z(values: Sequence[float], reference: Sequence[float]) -> list[float]:
    """Signed modified z-scores of ``values`` against the median and MAD of ``reference`` (0 when the
    reference has no spread at all)."""
    center = statistics.median(reference)
    mad = _mad(reference, center)
    if mad > 0:
        return [MAD_SCALE * (v - center) / mad for v in values]
    mean_ad = statistics.fmean(abs(v - center) for v in reference)
    if mean_ad > 0:
        return [(v - center) / (MEANAD_SCALE * mean_ad) for v in values]
    return [0.0 if v == center else math.copysign(math.inf, v - center) for v in values]


def warmup_prefix(values: Sequence[float]) -> int:
    """How many leading iterations are warm-up drift (rule 1 of the module docstring): slower than the second
    half. A faster start is no warm-up: latency that rose during the run (a clock that throttled, another job
    that started) had its fast first half dropped as 'warm-up' and the rest read as stable, 2.201 ms [2.2-2.202]
    for 10 iterations at 2.0 and 10 at 2.2; kept, the trend rule says the latency rose."""
    n = len(values)
    if n < 4:
        return 0
    k = 0
    for score in _robust_z(values[: n // 2], values[n // 2 :]):
        if score > OUTLIER_Z:
            k += 1
        else:
            break
    return 0 if level_shift(values, k) else k


def level_shift(values: Sequence[float], k: int | None = None) -> int:
    """How many leading ``values`` ran at a slower level that lasted past half the set (0: none): the
    warm-up rule's whole first half is slower than the second half, and so is the value after it. That is no
    warm-up but a fall in latency (a level shift): 12 iterations at 2.0 ms then 8 at 1.0 had had 10 dropped as
    warm-up (the rule's cap, half) and the other two 2.0s as outliers of the rest, 12 of 20, and the rest read
    'stable, 1.0 [1.0-1.0]'. ``k``: the warm-up rule's prefix, when already counted."""
    n = len(values)
    if n < 4:
        return 0
    half = n // 2
    if k is None:
        k = 0
        for score in _robust_z(values[:half], values[half:]):
            if score > OUTLIER_Z:
                k += 1
            else:
                break
    if k < half or k >= n:
        return 0
    slow = _robust_z(values[k:], values[half:])
    run = next((i for i, score in enumerate(slow) if not score > OUTLIER_Z), len(slow))
    if not run or k + run >= n:
        return 0
    # a change that counts (DRIFT_MIN), not z alone: the committed b4 sweep's 0.924 against 0.902 ms is none
    before, after = statistics.median(values[: k + run]), statistics.median(values[k + run :])
    return k + run if after > 0 and before - after > DRIFT_MIN * after else 0


#: A slow start (:func:`slow_start`) is worth a word when leaving it in moves the mean by more than this.
SLOW_START_MEAN_SHIFT = 0.05


def slow_start(values: Sequence[float]) -> int:
    """How many leading ``values`` (per-iteration latencies, in order) are a slow start: warm-up drift upward
    (rule 1 of the module docstring) that moves the mean of all of them by more than
    :data:`SLOW_START_MEAN_SHIFT` against the mean of the rest; 0 otherwise (a faster start, or one too small to
    change a mean)."""
    k = warmup_prefix(values)
    if not k or values[0] <= statistics.median(values[len(values) // 2 :]):
        return 0
    rest = statistics.fmean(values[k:])
    return k if rest > 0 and statistics.fmean(values) > (1 + SLOW_START_MEAN_SHIFT) * rest else 0


def outlier_indices(values: Sequence[float]) -> list[int]:
    """Positions of the outliers of ``values`` (rule 2), or [] when there are too many to drop."""
    if len(values) < 3:
        return []
    z = _robust_z(values, values)
    out = [i for i, s in enumerate(z) if abs(s) > OUTLIER_Z]
    return out if len(out) <= MAX_OUTLIER_SHARE * len(values) else []


def _median_interval(values: Sequence[float]) -> tuple[float | None, float | None]:
    ranks = median_ci_ranks(len(values))
    if ranks is None:
        return None, None
    ordered = sorted(values)
    return ordered[ranks[0]], ordered[ranks[1]]


def median_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The distribution-free 95% interval of the median of ``values`` as given (no iteration dropped), or
    None with fewer than :data:`MIN_CI_SAMPLES` values."""
    lo, hi = _median_interval(values)
    return None if lo is None or hi is None else (lo, hi)


def _trend(kept: Sequence[float], unit: str = "ms") -> str | None:
    """'rose from A to B ms' / 'fell ...' when the first and last thirds differ beyond noise (rule 4)."""
    third = len(kept) // 3
    if third < MIN_CI_SAMPLES:
        return None
    first, last = kept[:third], kept[-third:]
    (a_lo, a_hi), (b_lo, b_hi) = _median_interval(first), _median_interval(last)
    a, b = statistics.median(first), statistics.median(last)
    if None in (a_lo, a_hi, b_lo, b_hi) or not a:
        return None
    assert a_lo is not None and a_hi is not None and b_lo is not None and b_hi is not None
    if (a_hi < b_lo or b_hi < a_lo) and abs(b - a) / abs(a) > DRIFT_MIN:
        return (
            f"{'rose' if b > a else 'fell'} from {a:.4g} to {b:.4g} {unit} (medians of the first and last "
            "third of the kept iterations)"
        )
    return None


def _cause(
    wall: Sequence[float], cpu: Sequence[float], slow: list[int], typical: list[int]
) -> tuple[str | None, float | None]:
    """(cause, typical CPU time per wall time) from per-iteration process CPU times (rule 6)."""
    if not slow or len(typical) < 3:
        return None, None
    ratios = [cpu[i] / wall[i] for i in typical if wall[i] > 0]
    if not ratios:
        return None, None
    typical_ratio = statistics.median(ratios)
    typical_wall = statistics.median(wall[i] for i in typical)
    if typical_ratio <= 0:
        return None, typical_ratio
    extra_wall = sum(max(0.0, wall[i] - typical_wall) for i in slow)
    if extra_wall <= 0:
        return None, typical_ratio
    # wall time the slow iterations would have taken for the CPU time they got, at the typical rate
    missing = sum(max(0.0, wall[i] - cpu[i] / typical_ratio) for i in slow)
    slow_ratio = statistics.median(cpu[i] / wall[i] for i in slow if wall[i] > 0)
    if slow_ratio < STOLEN_RATIO * typical_ratio and missing >= 0.5 * extra_wall:
        return "cpu_stolen", typical_ratio
    if slow_ratio >= STOLEN_RATIO * typical_ratio:
        return "more_cpu_work", typical_ratio
    return None, typical_ratio


def _preemption(
    wall: Sequence[float], preempted: Sequence[float], slow: list[int], typical: list[int]
) -> tuple[float, float] | None:
    """(involuntary context switches per slow iteration, per typical one) when the slow iterations were
    preempted at least :data:`PREEMPTED_RATIO` times as often per ms of wall time and at least once each on
    average (rule 6); None otherwise."""
    if not slow or len(typical) < 3:
        return None
    slow_n = sum(preempted[i] for i in slow)
    typical_n = sum(preempted[i] for i in typical)
    slow_ms = sum(wall[i] for i in slow)
    typical_ms = sum(wall[i] for i in typical)
    if slow_ms <= 0 or typical_ms <= 0 or slow_n < len(slow):
        return None
    if slow_n / slow_ms < PREEMPTED_RATIO * typical_n / typical_ms:
        return None
    return slow_n / len(slow), typical_n / len(typical)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def measure(
    values: Sequence[float],
    cpu: Sequence[float] | None = None,
    unit: str = "ms",
    device: str | None = None,
    preempted: Sequence[float] | None = None,
    indices: Sequence[int] | None = None,
) -> Measurement:
    """The :class:`Measurement` of one timed set: ``values`` per iteration in iteration order (None and NaN
    entries are ignored, their positions still count as iteration indices); ``cpu``: the process CPU time of
    each iteration, same unit, and ``preempted``: its involuntary context switches, for the cause (rule 6);
    ``device`` "cpu" names the cause's "another process"; ``indices``: the iterations' names in the texts
    (the trace's index of each value, as analyze numbers them; None: its position). The Measurement's own
    fields (``warmup``, ``outliers``, ``dropped``) are positions either way.
    """
    name = (lambda i: indices[i]) if indices is not None else (lambda i: i)
    indexed = [(i, float(v)) for i, v in enumerate(values) if v is not None and not math.isnan(float(v))]
    infinite = [i for i, v in indexed if not math.isfinite(v)]
    if infinite:  # (no duration: statistics.stdev of a set holding inf had raised AttributeError)
        indexed = [(i, v) for i, v in indexed if math.isfinite(v)]
    count = len(indexed)
    if count == 0:
        return Measurement(
            count=0,
            kept=0,
            median=None,
            warnings=(_infinite_said(list(map(name, infinite)), len(infinite), unit),) if infinite else (),
        )
    series = [v for _, v in indexed]
    shift = level_shift(series)
    k = warmup_prefix(series)
    warm = [indexed[i][0] for i in range(k)]
    rest = indexed[k:]
    out_pos = outlier_indices([v for _, v in rest])
    too_many = False
    if not out_pos and len(rest) >= 3:
        rest_values = [v for _, v in rest]
        z = _robust_z(rest_values, rest_values)
        center = statistics.median(rest_values)
        # a second mode is one apart from the first by a change that counts (DRIFT_MIN), not by z alone: the
        # z-scores of values 0.16% apart exceed 3.5 when their MAD is smaller still
        far = [
            abs(s) > OUTLIER_Z and abs(v - center) > DRIFT_MIN * abs(center)
            for s, v in zip(z, rest_values, strict=True)
        ]
        too_many = sum(far) > MAX_OUTLIER_SHARE * len(rest)
    drop = set(out_pos)
    outliers = [rest[p][0] for p in out_pos]
    kept_pairs = [pair for p, pair in enumerate(rest) if p not in drop]
    kept = [v for _, v in kept_pairs]
    median = statistics.median(kept)
    lo, hi = _median_interval(kept)
    mean = statistics.fmean(kept)
    stdev = statistics.stdev(kept) if len(kept) > 1 else None
    cv = stdev / mean if stdev is not None and mean else None
    trend = _trend(kept, unit)
    notes: list[str] = []
    warnings: list[str] = []
    if warm or outliers:
        parts = []
        if warm:
            parts.append(
                f"{len(warm)} warm-up (rule 'warmup': iterations {index_span([name(i) for i in warm])}, median "
                f"{_fmt(statistics.median(series[:k]))} {unit} against {_fmt(statistics.median(series[k:]))} "
                f"{unit} after them)"
            )
        if outliers:
            parts.append(
                f"{len(outliers)} outlier{'s' if len(outliers) > 1 else ''} (rule 'outlier': modified z-score "
                f"> {OUTLIER_Z}; iteration{'s' if len(outliers) > 1 else ''} {index_span([name(i) for i in outliers])})"
            )
        notes.append(f"dropped {' and '.join(parts)}; {len(kept)} of {count} iterations kept")
    if infinite:
        warnings.append(_infinite_said(list(map(name, infinite)), count + len(infinite), unit))
    reasons: list[str] = []
    if shift:
        reasons.append(
            f"latency fell from {_fmt(statistics.median(series[:shift]))} to "
            f"{_fmt(statistics.median(series[shift:]))} {unit} at iteration {name(indexed[shift][0])} (the first "
            f"{shift} of {count} ran slower: a level shift that lasted past half the run, not warm-up)"
        )
    if cv is not None and cv > UNSTABLE_CV:
        reasons.append(f"coefficient of variation {100 * cv:.1f}% (> {100 * UNSTABLE_CV:.0f}%)")
    if trend and not shift:  # (a level shift says the fall itself)
        reasons.append(f"latency {trend}")
    if too_many:
        reasons.append(
            f"more than {100 * MAX_OUTLIER_SHARE:.0f}% of the iterations are outliers (no single mode)"
        )
    unstable = bool(reasons)
    cause = cpu_per_wall = None
    fields = {"where": "" if device == "cpu" else ", or for the device", "preempted": ""}
    wall_all = [float(v) if v is not None else math.nan for v in values]
    slow = [i for i in warm + outliers if wall_all[i] > median]
    if unstable:
        ranked = sorted(kept_pairs, key=lambda pair: pair[1])
        slow += [i for i, _ in ranked[len(ranked) - max(1, len(ranked) // 4) :]]
        typical = [i for i, _ in ranked[: len(ranked) - max(1, len(ranked) // 4)]]
    else:
        typical = [i for i, _ in kept_pairs]
    slow = list(dict.fromkeys(slow))
    if cpu is not None and len(cpu) == len(values):
        cpu_all = [float(c) if c is not None and math.isfinite(float(c)) else math.nan for c in cpu]
        cause, cpu_per_wall = _cause(
            wall_all,
            cpu_all,
            [i for i in slow if not math.isnan(cpu_all[i])],
            [i for i in typical if not math.isnan(cpu_all[i])],
        )
    if preempted is not None and len(preempted) == len(values):
        rates = _preemption(wall_all, preempted, slow, typical)
        if rates is not None and cause == "cpu_stolen":  # both: the wait was for a CPU
            fields["preempted"] = (
                f"; preempted {rates[0]:.3g} times per slow iteration against {rates[1]:.3g}: another "
                "runnable thread took the CPU"
            )
        elif rates is not None:
            cause = "preempted"
            fields.update(slow=f"{rates[0]:.3g}", typical=f"{rates[1]:.3g}")
    if not (unstable or warm or outliers):
        cause = None
    if cause is not None:
        said = CAUSES[cause].format(**fields)
        if unstable:
            reasons.append("cause: " + said)
        elif cause in ("cpu_stolen", "preempted"):
            warnings.append(f"the dropped iterations' cause: {said}")
    if unstable:
        warnings.append("unstable: " + "; ".join(reasons))
    return Measurement(
        count=count,
        kept=len(kept),
        median=median,
        ci_low=lo,
        ci_high=hi,
        mean=mean,
        stdev=stdev,
        cv=cv,
        warmup=tuple(warm),
        outliers=tuple(outliers),
        trend=trend,
        unstable=unstable,
        cause=cause,
        warnings=tuple(warnings),
        cpu_per_wall=cpu_per_wall,
        notes=tuple(notes),
    )


def _infinite_said(infinite: Sequence[int], count: int, unit: str) -> str:
    """The warning for iterations whose latency is infinite (``infinite``: their names, :func:`measure`'s
    ``indices`` or positions, of ``count``)."""
    n = len(infinite)
    return (
        f"{n} of {count} iterations (iteration{'s' if n > 1 else ''} {index_span(list(infinite))}) "
        f"{'have' if n > 1 else 'has'} an infinite latency ({unit}), no duration: left out of the statistics"
    )


#: Iterations dropped by rule 1 or 2 are worth a word beside a mean when leaving them in moves it by more than
#: this (the slow start's threshold, :data:`SLOW_START_MEAN_SHIFT`).
SPREAD_MEAN_SHIFT = SLOW_START_MEAN_SHIFT


#: How :func:`spread_warning`'s sentence begins (for callers that replace another's with their own).
SPREAD_MARK = "iteration latencies vary "


def spread_warning(
    values: Sequence[float],
    *,
    mean_kept: bool = False,
    said: int = 0,
    indices: Sequence[int] | None = None,
    unit: str = "ms",
    instability: bool = True,
) -> str | None:
    """One sentence when a mean over ``values`` (per-iteration latencies, in order) is shown on iterations that
    contradict it, else None: by the rules of :func:`measure` (the one set of rules, as the report applies
    them), when the iterations rules 1 and 2 drop move the mean of all of them by more than
    :data:`SPREAD_MEAN_SHIFT` against the mean of the rest, or when the set is unstable (rule 5: coefficient
    of variation of the kept iterations above :data:`UNSTABLE_CV`, pyperf's 10%; a trend; no single mode).

    ``mean_kept``: the mean shown is the kept iterations' (the report's traced mean), so the sentence says it
    leaves them out; else it is every iteration's (analyze, table), which includes them. ``said``: the first
    ``said`` iterations are a slow start another warning already names (:func:`slow_start`): a set whose only
    dropped iterations are those, and that is not unstable, gets no second sentence. ``indices``: each value's
    iteration index, as shown to the reader (default: its position). ``instability`` False: the set's
    instability is said elsewhere (the report's warning on the latency it uses), so only a mean moved by the
    dropped iterations is."""
    m = measure(values)
    finite = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if m.count < 2 or m.mean is None:
        return None
    names = list(indices) if indices is not None else list(range(len(values)))
    mean_all = statistics.fmean(finite)
    dropped = m.dropped
    moved = bool(dropped) and m.mean > 0 and abs(mean_all - m.mean) > SPREAD_MEAN_SHIFT * m.mean
    if set(dropped) <= set(range(said)):
        moved = False  # the slow start's own warning gives the mean with and without them
    if not moved and not (m.unstable and instability):
        return None
    low, high = min(finite), max(finite)
    cv_all = statistics.stdev(finite) / mean_all if mean_all else math.nan
    # A ratio to a 0 ms iteration is no number: such a set reads "from 0 to 5.2 ms".
    span = (
        f"{high / low:.1f}x ({_fmt(low)} to {_fmt(high)} {unit}; "
        if low > 0
        else f"from {_fmt(low)} to {_fmt(high)} {unit} ("
    )
    head = f"{SPREAD_MARK}{span}coefficient of variation {100 * cv_all:.1f}% over all {len(finite)})"
    groups = []
    for rule, what in (("warmup", "warm-up (rule 'warmup')"), ("outlier", "outlier")):
        which = [names[i] for i, r in dropped.items() if r == rule]
        if not which:
            continue
        plural = len(which) > 1
        if rule == "outlier":
            what = f"outlier{'s' if plural else ''} (rule 'outlier': modified z-score > {OUTLIER_Z})"
        groups.append(
            f"iteration{'s' if plural else ''} {index_span(which)} {'are' if plural else 'is an'} {what}"
        )
    listed = ", ".join(groups).replace(" is an warm-up", " is warm-up")
    it = "them" if len(dropped) > 1 else "it"
    reasons = next((w[len("unstable: ") :] for w in m.warnings if w.startswith("unstable: ")), None)
    if not instability:
        reasons = None
    if moved:
        if mean_kept:
            mean = (
                f"the mean leaves {it} out ({_fmt(m.mean)} {unit}, {_fmt(mean_all)} with {it}, the mean of "
                "every iteration)"
            )
        else:
            mean = f"the mean includes {it} ({_fmt(mean_all)} {unit}, {_fmt(m.mean)} without {it})"
        return f"{head}: {listed}, and {mean}" + (
            f"; without {it} still unstable: {reasons}" if reasons else ""
        )
    if reasons is None:
        return None
    shift = abs(mean_all - m.mean) / m.mean if m.mean else 0.0
    if listed:
        return f"{head}: unstable: {reasons} ({listed}, moving the mean by {100 * shift:.1f}%)"
    if "no single mode" in reasons:
        return f"{head}: unstable: {reasons}"
    return f"{head}: unstable: {reasons} (no outlier by rule 'outlier')"


#: Most runs of consecutive indices :func:`index_span` lists before it says how many more there are.
SPAN_RUNS = 8


def index_span(indices: list[int]) -> str:
    """'0-4', '3, 7, 9' (consecutive runs joined; after :data:`SPAN_RUNS` runs, '... and N more')."""
    parts: list[str] = []
    start = prev = None
    for i in indices:
        if start is None:
            start = prev = i
        elif i == prev + 1:  # type: ignore[operator]
            prev = i
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    if len(parts) > SPAN_RUNS:
        shown = parts[:SPAN_RUNS]
        listed = sum(1 if "-" not in p else int(p.split("-")[1]) - int(p.split("-")[0]) + 1 for p in shown)
        return ", ".join(shown) + f" and {len(indices) - listed} more"
    return ", ".join(parts)


def is_tight(m: Measurement, target: float = TARGET_RELATIVE_CI) -> bool:
    """Whether the interval's half-width is within ``target`` of the median (collect's stop rule)."""
    rel = m.relative_ci
    return rel is not None and rel <= target


# ------------------------------------------------------------------------------------ comparing two sets


@dataclass(frozen=True)
class Difference:
    """B against A. ``ratio`` = B / A of the medians with a conservative interval
    [B_low / A_high, B_high / A_low]; ``significant``: True when the two intervals do not overlap, False when
    they do ("within noise"), None when either set has no interval (the medians alone are compared)."""

    a: float | None
    b: float | None
    delta: float | None
    ratio: float | None
    ratio_low: float | None = None
    ratio_high: float | None = None
    significant: bool | None = None
    a_interval: tuple[float, float] | None = None
    b_interval: tuple[float, float] | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "delta": self.delta,
            "ratio": self.ratio,
            "ratio_low": self.ratio_low,
            "ratio_high": self.ratio_high,
            "significant": self.significant,
            "a_interval": list(self.a_interval) if self.a_interval else None,
            "b_interval": list(self.b_interval) if self.b_interval else None,
        }


def difference(a: Measurement | None, b: Measurement | None) -> Difference:
    """B against A (see :class:`Difference`)."""
    va = a.median if a is not None else None
    vb = b.median if b is not None else None
    if va is None or vb is None:
        return Difference(va, vb, None, None)
    ia = a.interval() if a is not None else None
    ib = b.interval() if b is not None else None
    ratio = vb / va if va else None
    if ia is None or ib is None:
        return Difference(va, vb, vb - va, ratio, None, None, None, ia, ib)
    significant = ia[1] < ib[0] or ib[1] < ia[0]
    r_lo = ib[0] / ia[1] if ia[1] > 0 else None
    r_hi = ib[1] / ia[0] if ia[0] > 0 else None
    return Difference(va, vb, vb - va, ratio, r_lo, r_hi, significant, ia, ib)


def ratio_state(diff: Difference, threshold: float) -> str | None:
    """Where the ratio B / A stands against ``threshold``: "below" (its interval is at or below it), "above"
    (the interval is entirely above), "within noise" (the interval straddles it), or by the point ratio when
    no interval is known ("below"/"above"); None without a ratio."""
    if diff.ratio is None:
        return None
    if diff.ratio_low is None or diff.ratio_high is None:
        return "above" if diff.ratio > threshold else "below"
    if diff.ratio_high <= threshold:
        return "below"
    if diff.ratio_low > threshold:
        return "above"
    return "within noise"


def describe_interval(m: Measurement | None, unit: str = "ms") -> str:
    """'12.3 ms [12.1-12.6]' (median and interval), '12.3 ms (n=4, no interval)' or '—'."""
    if m is None or m.median is None:
        return "—"
    if not m.noise_known:
        return f"{_fmt(m.median)} {unit} (n={m.kept}, no interval)"
    return f"{_fmt(m.median)} {unit} [{_fmt(m.ci_low)}–{_fmt(m.ci_high)}]"  # type: ignore[arg-type]
