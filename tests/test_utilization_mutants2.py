"""Mutants of the Kineto occupancy estimate's use (``analyzers/utilization.py``: :func:`unestimated_kernels`
and ``_fill_from_estimate``; until 2026-11-27 ``analyzers/table.py``'s ``_unestimated_kernels``, 2b6a6d9) that
tests/test_fuzz6_metrics.py let live: SYNTHETIC traces holding only Kineto occupancy estimates (kernel duration
ns, estimate %), exact warnings and which figures are taken."""

from __future__ import annotations

import polars as pl

from tracekit.analyzers.kernel_metrics import KernelMetricsResult
from tracekit.analyzers.utilization import Figure, Utilization, _fill_from_estimate, unestimated_kernels
from tracekit.model import Trace

WHAT = (
    "torch.profiler's occupancy estimate is 0 for {zero} of {n} kernels, {share} of the kernel time (it writes "
    "whole percents: 0 below 0.5%, and 0 where it made no estimate)"
)
KEPT = ": the warp occupancy from it may be low by up to that share"
DROPPED = (
    ": no warp occupancy from it (more than 50% of the kernel time unestimated; the real H200 BERT-base traces "
    "read 0.26% where nsys and ncu measured 0.98%): use nsys GPU metrics or --ncu"
)


def _estimates(
    rows: list[tuple[int | None, float | None]], metric: str = "est. achieved occupancy %"
) -> Trace:
    km = pl.DataFrame(
        {
            "kernel": list(range(len(rows))),
            "name": ["k"] * len(rows),
            "range": [None] * len(rows),
            "duration_ns": [d for d, _ in rows],
            "metric": [metric] * len(rows),
            "unit": ["%"] * len(rows),
            "value": [v for _, v in rows],
        },
        schema_overrides={"range": pl.String, "duration_ns": pl.Int64, "value": pl.Float64},
    )
    return Trace(kernel_metrics=km, meta={"synthetic": True})


def _estimate(wall: float | None = 2.0, kernel: float | None = 6.0) -> KernelMetricsResult:
    """What the Kineto estimate gives: warp occupancy over the wall time and over the kernel time (%)."""
    entry = {"metric": "est. achieved occupancy %", "wall_time": wall, "kernel_time": kernel}
    return KernelMetricsResult(
        source="kineto estimate", kernels=pl.DataFrame(), iterations=None, summary={"warp_occupancy": entry}
    )


def test_exactly_half_the_kernel_time_unestimated_is_kept_with_a_warning() -> None:
    usable, said = unestimated_kernels(_estimates([(500, 0.0), (200, 20.0), (300, 10.0)]))
    assert usable and said == [WHAT.format(zero=1, n=3, share="50%") + KEPT]
    result = Utilization()
    _fill_from_estimate(result, _estimate(), _estimates([(500, 0.0), (200, 20.0), (300, 10.0)]))
    assert result.wall["warp_occupancy"] == Figure(2.0, "kineto estimate", "est. achieved occupancy %")
    assert result.kernel_time["warp_occupancy"] == 6.0 and result.kernel_time_source == "kineto estimate"
    assert result.warnings == said


def test_exactly_a_tenth_unestimated_is_warned_of() -> None:
    assert unestimated_kernels(_estimates([(100, 0.0), (900, 20.0)])) == (
        True,
        [WHAT.format(zero=1, n=2, share="10%") + KEPT],
    )
    assert unestimated_kernels(_estimates([(99, 0.0), (901, 20.0)])) == (True, [])


def test_over_half_takes_neither_figure_and_says_so() -> None:
    trace = _estimates([(501, 0.0), (499, 20.0)])
    assert unestimated_kernels(trace) == (False, [WHAT.format(zero=1, n=2, share="50%") + DROPPED])
    result = Utilization()
    _fill_from_estimate(result, _estimate(), trace)
    assert result.wall["warp_occupancy"] == Figure()
    assert result.kernel_time["warp_occupancy"] is None and result.kernel_time_source is None
    assert result.warnings == [WHAT.format(zero=1, n=2, share="50%") + DROPPED]


def test_kernels_without_a_duration_or_value_and_other_metrics_count_nowhere() -> None:
    # the rows without duration or value would make the zero share 30 / 100 (or 30 / 40); other metrics too
    trace = _estimates([(30, 0.0), (None, 0.0), (60, None), (70, 20.0)])
    other = _estimates([(1000, 0.0)], metric="achieved_occupancy")
    km = pl.concat([trace.kernel_metrics, other.kernel_metrics])
    usable, said = unestimated_kernels(Trace(kernel_metrics=km, meta={"synthetic": True}))
    assert usable and said == [WHAT.format(zero=1, n=2, share="30%") + KEPT]


def test_no_kernel_time_says_nothing() -> None:
    assert unestimated_kernels(_estimates([(0, 0.0), (0, 20.0)])) == (True, [])
    assert unestimated_kernels(_estimates([])) == (True, [])


def test_an_ncu_wall_figure_stays_and_the_estimates_kernel_time_is_not_taken() -> None:
    result = Utilization()
    result.wall["warp_occupancy"] = Figure(1.0, "ncu", "sm__warps_active.avg.pct_of_peak_sustained_active")
    _fill_from_estimate(result, _estimate(), _estimates([(700, 0.0), (300, 20.0)]))
    assert result.warnings == [WHAT.format(zero=1, n=2, share="70%") + DROPPED]
    assert result.wall["warp_occupancy"].value == 1.0 and result.kernel_time["warp_occupancy"] is None
    assert result.kernel_time_source is None


def test_an_ncu_kernel_time_figure_stays_and_the_estimates_wall_figure_is_not_taken() -> None:
    result = Utilization()
    result.kernel_time_source = "ncu"
    result.kernel_time["warp_occupancy"] = 4.0
    _fill_from_estimate(result, _estimate(), _estimates([(700, 0.0), (300, 20.0)]))
    assert result.warnings == [WHAT.format(zero=1, n=2, share="70%") + DROPPED]
    assert result.wall["warp_occupancy"] == Figure()
    assert result.kernel_time["warp_occupancy"] == 4.0 and result.kernel_time_source == "ncu"


def test_an_estimate_that_nothing_would_take_says_nothing() -> None:
    """Better sources gave both figures (or the estimate has none): no warning about an unused estimate."""
    result = Utilization()
    result.wall["warp_occupancy"] = Figure(1.0, "nsys metrics", "Warp Occupancy")
    result.kernel_time_source = "ncu"
    _fill_from_estimate(result, _estimate(), _estimates([(700, 0.0), (300, 20.0)]))
    assert result.warnings == [] and result.wall["warp_occupancy"].value == 1.0
    empty = Utilization()
    _fill_from_estimate(empty, _estimate(wall=None, kernel=None), _estimates([(700, 0.0), (300, 20.0)]))
    assert empty.warnings == [] and empty == Utilization()
