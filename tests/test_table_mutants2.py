"""Mutants of ``analyzers/table.py``'s ``_unestimated_kernels`` (2b6a6d9) that tests/test_fuzz6_metrics.py
let live: SYNTHETIC traces holding only Kineto occupancy estimates (kernel duration ns, estimate %), exact
warnings and which figures are dropped."""

from __future__ import annotations

import polars as pl

from tracekit.analyzers.table import _unestimated_kernels
from tracekit.analyzers.utilization import Figure, Utilization
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


def _result(wall: bool = True, kernel: bool = True, sms_active: float | None = None) -> Utilization:
    result = Utilization()
    if wall:
        result.wall["warp_occupancy"] = Figure(2.0, "kineto estimate", "est. achieved occupancy %")
    if kernel:
        result.kernel_time["warp_occupancy"] = 6.0
        result.kernel_time["sms_active"] = sms_active
        result.kernel_time_source = "kineto estimate"
    return result


def test_exactly_half_the_kernel_time_unestimated_is_kept_with_a_warning() -> None:
    result = _result()
    said = _unestimated_kernels(result, _estimates([(500, 0.0), (200, 20.0), (300, 10.0)]))
    assert said == [WHAT.format(zero=1, n=3, share="50%") + KEPT]
    assert result.wall["warp_occupancy"].value == 2.0 and result.kernel_time["warp_occupancy"] == 6.0


def test_exactly_a_tenth_unestimated_is_warned_of() -> None:
    said = _unestimated_kernels(_result(), _estimates([(100, 0.0), (900, 20.0)]))
    assert said == [WHAT.format(zero=1, n=2, share="10%") + KEPT]
    assert _unestimated_kernels(_result(), _estimates([(99, 0.0), (901, 20.0)])) == []


def test_over_half_drops_both_figures_and_says_so() -> None:
    result = _result()
    said = _unestimated_kernels(result, _estimates([(501, 0.0), (499, 20.0)]))
    assert said == [WHAT.format(zero=1, n=2, share="50%") + DROPPED]
    assert result.wall["warp_occupancy"] == Figure()
    assert result.kernel_time["warp_occupancy"] is None and result.kernel_time_source is None


def test_kernels_without_a_duration_or_value_and_other_metrics_count_nowhere() -> None:
    # the rows without duration or value would make the zero share 30 / 100 (or 30 / 40); other metrics too
    trace = _estimates([(30, 0.0), (None, 0.0), (60, None), (70, 20.0)])
    other = _estimates([(1000, 0.0)], metric="achieved_occupancy")
    km = pl.concat([trace.kernel_metrics, other.kernel_metrics])
    said = _unestimated_kernels(_result(), Trace(kernel_metrics=km, meta={"synthetic": True}))
    assert said == [WHAT.format(zero=1, n=2, share="30%") + KEPT]


def test_no_kernel_time_says_nothing() -> None:
    result = _result()
    assert _unestimated_kernels(result, _estimates([(0, 0.0), (0, 20.0)])) == []
    assert _unestimated_kernels(result, _estimates([])) == []
    assert result.wall["warp_occupancy"].value == 2.0


def test_the_kernel_time_source_stays_while_sms_active_has_a_figure() -> None:
    result = _result(sms_active=30.0)
    _unestimated_kernels(result, _estimates([(700, 0.0), (300, 20.0)]))
    assert result.kernel_time["warp_occupancy"] is None
    assert result.kernel_time_source == "kineto estimate" and result.kernel_time["sms_active"] == 30.0


def test_a_kernel_time_figure_alone_is_dropped_and_the_wall_figure_untouched() -> None:
    result = _result(wall=False)
    result.wall["warp_occupancy"] = Figure(1.0, "ncu", "sm__warps_active.avg.pct_of_peak_sustained_active")
    said = _unestimated_kernels(result, _estimates([(700, 0.0), (300, 20.0)]))
    assert said == [WHAT.format(zero=1, n=2, share="70%") + DROPPED]
    assert result.wall["warp_occupancy"].value == 1.0 and result.kernel_time["warp_occupancy"] is None


def test_a_wall_figure_alone_is_dropped_and_the_kernel_time_untouched() -> None:
    result = _result(kernel=False)
    result.kernel_time_source = "ncu"
    result.kernel_time["warp_occupancy"] = 4.0
    said = _unestimated_kernels(result, _estimates([(700, 0.0), (300, 20.0)]))
    assert said == [WHAT.format(zero=1, n=2, share="70%") + DROPPED]
    assert result.wall["warp_occupancy"] == Figure()
    assert result.kernel_time["warp_occupancy"] == 4.0 and result.kernel_time_source == "ncu"


def test_a_kineto_kernel_time_source_without_a_warp_figure_is_not_read() -> None:
    result = _result(wall=False)
    result.kernel_time["warp_occupancy"] = None
    assert _unestimated_kernels(result, _estimates([(700, 0.0), (300, 20.0)])) == []
    assert result.kernel_time_source == "kineto estimate"
