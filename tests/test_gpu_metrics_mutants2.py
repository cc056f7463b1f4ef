"""Mutants of ``analyzers/gpu_metrics.py`` changed by 52945d2 (iterations the samples do not resolve, no
summary from a metric not in %) and 3ae85b7 (a % sample outside 0-100 is no value) that the module's tests let
live: SYNTHETIC samples and windows (ns), exact values and warnings."""

from __future__ import annotations

import polars as pl
import pytest

from tracekit.analyzers.gpu_metrics import _stated_period, analyze_gpu_metrics, choose_metric
from tracekit.model import Trace

SM = "SMs Active [Throughput %]"
NO_WARPS = (
    "no GPU-metrics samples for warp occupancy (names tried: ^\\s*compute\\s+warps\\s+in\\s+flight\\b, "
    "^\\s*warp\\s+occupancy\\b)"
)
ONE = pl.DataFrame({"index": [0], "window_start_ns": [1000], "window_end_ns": [1500]})


def _trace(samples: list[tuple], period: object = None, devices: tuple[int, ...] = (0,)) -> Trace:
    n = len(devices)
    ops = pl.DataFrame(
        {
            "start": [1100] * n,
            "end": [1200] * n,
            "device": list(devices),
            "kind": ["kernel"] * n,
            "name": ["k"] * n,
        }
    )
    gm = pl.DataFrame(
        samples,
        schema={
            "timestamp": pl.Int64,
            "device": pl.Int64,
            "metric": pl.String,
            "unit": pl.String,
            "value": pl.Float64,
        },
        orient="row",
    )
    meta: dict[str, object] = {"synthetic": True}
    if period is not None:
        meta["gpu_metrics_period_ns"] = period
    return Trace(ops=ops, gpu_metrics=gm, meta=meta)


#: seven windows against a 100 ns period: 0 resolved (11 samples of 10%); 1 exactly 2 periods long with one
#: sample (exactly half of it sampled: kept); 2 and 3 shorter than 2 periods (150, 190 ns); 4 sampled for 400
#: of its 1000 ns; 5 with samples of 0, 100, 100.5 and -0.5%; 6 without a sample
WINDOWS = pl.DataFrame(
    {
        "index": list(range(7)),
        "window_start_ns": [0, 2000, 3000, 4000, 5000, 7000, 8000],
        "window_end_ns": [1000, 2200, 3150, 4190, 6000, 7400, 9000],
    }
)
SAMPLES = (
    [(t, 0, SM, "%", 10.0) for t in range(0, 1001, 100)]
    + [(2100, 0, SM, "%", 20.0), (3100, 0, SM, "%", 30.0)]
    + [(t, 0, SM, "%", 60.0) for t in (5000, 5100, 5200, 5300)]
    + [
        (7000, 0, SM, "%", 0.0),
        (7100, 0, SM, "%", 100.0),
        (7200, 0, SM, "%", 100.5),
        (7300, 0, SM, "%", -0.5),
    ]
)
OUTSIDE = f"2 of 21 {SM!r} samples lie outside 0-100%: read as samples without a value"


def test_iterations_the_samples_do_not_resolve_get_no_value() -> None:
    r = analyze_gpu_metrics(_trace(SAMPLES, period=100), WINDOWS)
    assert r.iterations.rows() == [
        (0, 10.0, None, 11),
        (1, 20.0, None, 1),
        (2, None, None, 1),
        (3, None, None, 0),
        (4, None, None, 4),
        (5, 50.0, None, 4),
        (6, None, None, 0),
    ]
    assert r.warnings == [
        OUTSIDE,
        f"2 of 7 iterations are shorter than 2 sampling periods of {SM!r} (0.0001 ms, 10000000 Hz; these "
        "iterations: median 0.00017 ms): each holds one or two samples, whose values may be mostly time outside "
        "it: no value for them (sampling at 13333333 Hz or more resolves them: nsys --gpu-metrics-frequency)",
        f"2 of 7 iterations hold {SM!r} samples for less than half of their window (one every 0.0001 ms; 1 of "
        "them none at all): the sampling started, stopped or dropped samples inside them: no value for them",
        NO_WARPS,
    ]
    summary = r.summary["sms_active"]
    assert summary is not None
    assert (summary["metric"], summary["unit"], summary["device"], summary["iterations"]) == (SM, "%", 0, 3)
    assert summary["mean"] == pytest.approx(80 / 3) and (summary["min"], summary["max"]) == (10.0, 50.0)


def test_without_a_stated_period_only_empty_windows_lose_their_value() -> None:
    r = analyze_gpu_metrics(_trace(SAMPLES), WINDOWS)
    assert r.iterations["sms_active"].to_list() == [10.0, 20.0, 30.0, None, 60.0, 50.0, None]
    assert r.warnings == [
        OUTSIDE,
        f"2 of 7 iterations have no {SM!r} sample inside their window (sampling period longer than the "
        "iteration?): no value for them",
        NO_WARPS,
    ]
    assert r.summary["sms_active"]["iterations"] == 5  # type: ignore[index]


@pytest.mark.parametrize(
    ("meta", "period"),
    [(100, 100), (250.0, 250), (0, None), (-5, None), ("100", None), (None, None)],
)
def test_the_stated_period_is_a_positive_number(meta: object, period: int | None) -> None:
    stated = _stated_period(_trace([], period=meta))
    assert stated == period and (stated is None or type(stated) is int)


def test_a_metric_not_in_percent_keeps_its_values_but_gives_no_summary() -> None:
    # 151 warps is no % sample outside 0-100: kept in its own unit
    warps = "Compute Warps in Flight [Avg]"
    r = analyze_gpu_metrics(_trace([(1100, 0, warps, "Avg", 7.0), (1200, 0, warps, "Avg", 151.0)]), ONE)
    assert r.iterations.rows() == [(0, None, 79.0, 2)]
    assert r.summary == {
        "sms_active": None,
        "warp_occupancy": {
            "metric": warps,
            "unit": "Avg",
            "device": 0,
            "iterations": 1,
            **dict.fromkeys(("mean", "p50", "p90", "p99", "min", "max")),
        },
    }
    assert r.warnings == [
        "no GPU-metrics samples for SMs active (names tried: ^\\s*sms?\\s+active\\b)",
        f"warp occupancy: the matching metric {warps!r} is in 'Avg', not %: not reported as a percentage",
    ]


def test_samples_of_another_gpu_or_of_none_are_not_reported() -> None:
    r = analyze_gpu_metrics(_trace([(1100, 1, SM, "%", 40.0)]), ONE)
    assert r.iterations.rows() == [(0, None, None, 0)] and r.summary["sms_active"] is None
    assert r.warnings[0] == (
        f"GPU-metrics samples ({SM!r}) come from GPU 1 but the kernels ran on GPU 0: SMs active is not reported "
        "(the sampled GPU was not the one used)"
    )
    r = analyze_gpu_metrics(_trace([(1100, None, SM, "%", 40.0)]), ONE)
    assert r.choices["sms_active"].devices == []
    assert r.warnings[0] == (
        f"GPU-metrics samples ({SM!r}) come from a GPU the export ties to no traced process's CUDA device but the kernels "
        "ran on GPU 0: SMs active is not reported (the sampled GPU is not known to be the one used)"
    )


def test_samples_of_two_used_gpus_are_averaged_and_said_so() -> None:
    r = analyze_gpu_metrics(_trace([(1100, 0, SM, "%", 40.0), (1200, 1, SM, "%", 20.0)], devices=(0, 1)), ONE)
    assert r.iterations.rows() == [(0, 30.0, None, 2)]
    assert r.summary["sms_active"]["device"] == [0, 1]  # type: ignore[index]
    assert r.warnings == ["SMs active: samples of GPUs 0, 1 averaged together", NO_WARPS]


def test_no_samples_at_all() -> None:
    r = analyze_gpu_metrics(_trace([]), WINDOWS.head(2))
    assert r.iterations.rows() == [(0, None, None, 0), (1, None, None, 0)]
    assert r.summary == {"sms_active": None, "warp_occupancy": None} and r.warnings == []


def test_the_chosen_metric_is_a_percent_of_the_first_pattern_then_by_name() -> None:
    def frame(rows: list[tuple[str, str, int | None]]) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "timestamp": [1] * len(rows),
                "device": [d for _, _, d in rows],
                "metric": [m for m, _, _ in rows],
                "unit": [u for _, u, _ in rows],
                "value": [1.0] * len(rows),
            },
            schema_overrides={"device": pl.Int64},
        )

    both = frame(
        [
            ("Warp Occupancy", "%", 0),
            ("Compute Warps in Flight [Throughput %]", "%", 1),
            ("Compute Warps in Flight [Avg]", "%", 0),
            ("Compute Warps in Flight [Avg]", "%", None),
            ("Compute Warps in Flight [Avg]", "%", 2),
        ]
    )
    choice = choose_metric(both, "warp_occupancy")
    assert choice is not None
    assert (choice.metric, choice.unit, choice.devices) == ("Compute Warps in Flight [Avg]", "%", [0, 2])
    # no % anywhere: the first pattern's match, the one first by name
    other = frame(
        [
            ("Warp Occupancy", "Avg", 0),
            ("Compute Warps in Flight [b]", "Cycle", 0),
            ("Compute Warps in Flight [a]", "Avg", 0),
        ]
    )
    choice = choose_metric(other, "warp_occupancy")
    assert choice is not None and (choice.metric, choice.unit) == ("Compute Warps in Flight [a]", "Avg")
    assert choose_metric(frame([("Warp Occupancy", "%", 0)]), "sms_active") is None


def test_the_short_iterations_median_and_shortest_are_said() -> None:
    # three windows shorter than 2 periods of 100 ns: 120, 130 and 190 ns (median 130, mean 147, shortest 120)
    windows = pl.DataFrame(
        {"index": [0, 1, 2], "window_start_ns": [0, 1000, 2000], "window_end_ns": [120, 1130, 2190]}
    )
    samples = [(t, 0, SM, "%", 50.0) for t in (0, 100, 1000, 1100, 2000, 2100)]
    r = analyze_gpu_metrics(_trace(samples, period=100), windows)
    assert r.iterations["sms_active"].to_list() == [None, None, None]
    assert r.warnings[0] == (
        f"3 of 3 iterations are shorter than 2 sampling periods of {SM!r} (0.0001 ms, 10000000 Hz; these "
        "iterations: median 0.00013 ms): each holds one or two samples, whose values may be mostly time outside "
        "it: no value for them (sampling at 16666667 Hz or more resolves them: nsys --gpu-metrics-frequency)"
    )
