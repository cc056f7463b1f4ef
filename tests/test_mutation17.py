"""Round 17's mutation tests (mutation17): each case kills a mutant that survived the existing tests of
analyzers/profiler_cost.py, analyzers/recommendations.py or analyzers/stability.py (notes/mutation17.md).
Every input is hand-built; the expected numbers are worked out beside each case."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tracekit.analyzers.profiler_cost import findings, latency_csv_values, untraced_measurement, untraced_of
from tracekit.analyzers.recommendations import (
    Recommendation,
    SweepView,
    framework_overhead,
    headroom,
    launch_calls,
    profiler_perturbation,
    transition,
)
from tracekit.analyzers.stability import (
    Difference,
    Measurement,
    _cause,
    _preemption,
    _trend,
    describe_interval,
    difference,
    index_span,
    is_tight,
    measure,
    median_ci_ranks,
    outlier_indices,
    ratio_state,
    slow_start,
)
from tracekit.analyzers.sweep import config_key


def test_a_run_faster_than_1_ms_is_still_checked_against_its_untraced_latency() -> None:
    # 0.5 ms traced against 0.2 ms untraced: 0.5 / 0.2 = 2.50x, 0.300 ms per iteration (kills `latency_ms > 1`)
    warnings, notes, doubt = findings(0.5, None, "framework", 0.5, {"median": 0.2}, "nsys")
    assert warnings == [
        "nsys slowed this run 2.50x: median latency 0.500 ms traced against 0.200 ms untraced (the same "
        "configuration timed without a profiler, run.json): the framework overhead shown includes nsys's own "
        "cost, about 0.300 ms per iteration"
    ]
    assert notes == [] and doubt is None


def test_busy_exactly_at_the_threshold_of_the_untraced_latency_makes_the_verdict_uncertain() -> None:
    # 4 ms traced, 2 ms untraced (2.00x); busy 1 ms / 2 ms = 0.5 exactly, the 50% threshold: "at or above"
    # (kills `>`, which gave the note "framework-bound without ... too")
    warnings, notes, doubt = findings(4.0, 1.0, "framework", 0.5, {"p50": 2.0})
    assert notes == []
    assert doubt == (
        "verdict uncertain: without the profiler, the GPU busy time traced here (1.000 ms, median) is 50.0% of the "
        "untraced median latency (2.000 ms), at or above the 50% threshold: the run may be compute-bound, and "
        "framework-bound only under the profiler"
    )
    assert warnings == [warnings[0], doubt]
    # 1 ns of busy less (0.999999 ms): 49.99995%, below: the note
    _, notes, doubt = findings(4.0, 0.999999, "framework", 0.5, {"p50": 2.0})
    assert doubt is None and notes[0].endswith(
        "is 50.0% of the untraced median latency (2.000 ms), below the 50% threshold"
    )


# ------------------------------------------------------------------------------------------------ stability


def test_span_joins_runs_and_keeps_single_indices_single() -> None:
    # [0, 2, 3]: 0 alone, then 2-3; [0, 1, 3]: 0-1, then 3 alone (kills the in-loop `start != prev`, which
    # read "0-0, 2-3" and "0, 3")
    assert index_span([0, 2, 3]) == "0, 2-3"
    assert index_span([0, 1, 3]) == "0-1, 3"
    assert index_span([4]) == "4"


def test_a_typical_iteration_of_0_ms_gives_no_cpu_ratio_and_no_error() -> None:
    # typical walls 0, 1, 1, 1 ms with CPU 0, 1, 1, 1: the 0-ms one has no ratio, the others 1.0, so the typical
    # ratio is 1.0 and the typical wall median(0, 1, 1, 1) = 1 ms. Slow: 5 ms wall with 2 ms CPU: extra wall
    # 4 ms, missing 5 - 2 / 1.0 = 3 ms >= 2 ms, slow ratio 0.4 < 0.8: cpu_stolen (kills `wall >= 0`: 0 / 0)
    assert _cause([0.0, 1.0, 1.0, 1.0, 5.0], [0.0, 1.0, 1.0, 1.0, 2.0], [4], [0, 1, 2, 3]) == (
        "cpu_stolen",
        1.0,
    )


def test_a_slow_iteration_at_exactly_the_stolen_ratio_kept_running() -> None:
    # typical: 1 ms wall, 1 ms CPU (ratio 1.0). Slow: 1.25 ms wall, 1.0 ms CPU: ratio 1 / 1.25 = 0.8, exactly
    # STOLEN_RATIO x 1.0; extra wall 0.25 ms, missing 1.25 - 1.0 = 0.25 >= 0.125. "below 0.8" is false, so it
    # is more CPU work (kills `<=`, which said cpu_stolen). At 1.26 ms (ratio 0.794, below) it is cpu_stolen.
    assert _cause([1.0, 1.0, 1.0, 1.25], [1.0, 1.0, 1.0, 1.0], [3], [0, 1, 2]) == ("more_cpu_work", 1.0)
    assert _cause([1.0, 1.0, 1.0, 1.26], [1.0, 1.0, 1.0, 1.0], [3], [0, 1, 2]) == ("cpu_stolen", 1.0)


def test_the_span_counts_the_runs_it_lists_before_saying_how_many_more() -> None:
    # 12 indices in 9 runs: 0-2, 4, 6, ..., 16, 18-19; 8 runs shown hold 3 + 7 = 10 indices, so 2 more
    # (kills `int(None)` in the count of a shown range)
    assert index_span([0, 1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 19]) == "0-2, 4, 6, 8, 10, 12, 14, 16 and 2 more"


def test_a_trend_from_a_first_third_of_0_ms_is_not_computed() -> None:
    # thirds of 6: the first all 0 ms (median 0, no relative change to speak of), the last all 1 ms; the
    # intervals [0, 0] and [1, 1] do not overlap, so `and not a` reached abs(1 - 0) / 0
    assert _trend([0.0] * 6 + [1.0] * 12) is None


def test_thirds_whose_intervals_touch_show_no_trend() -> None:
    # median_ci_ranks(6) is (0, 5): the first third [10] * 6 has interval [10, 10], the last third
    # [9, 9, 9, 9, 9, 10] has [9, 10] and median 9: 10% apart, but the intervals share 10 ms, so no trend
    # (kills `b_hi <= a_lo`, which said 'fell from 10 to 9 ms'); with the last third's 10 made 9.9, it fell
    assert median_ci_ranks(6) == (0, 5)
    assert _trend([10.0] * 12 + [9.0, 9.0, 9.0, 9.0, 9.0, 10.0]) is None
    assert _trend([10.0] * 12 + [9.0, 9.0, 9.0, 9.0, 9.0, 9.9]) == (
        "fell from 10 to 9 ms (medians of the first and last third of the kept iterations)"
    )


def test_a_difference_with_one_side_unknown_keeps_the_other_median() -> None:
    # A has no median, B's is 5 ms: b stays 5.0 and nothing else is known (kills `Difference(va, None, None)`)
    assert difference(None, measure([5.0])).to_json() == {
        "a": None,
        "b": 5.0,
        "delta": None,
        "ratio": None,
        "ratio_low": None,
        "ratio_high": None,
        "significant": None,
        "a_interval": None,
        "b_interval": None,
    }


def test_a_difference_keeps_each_sides_interval_on_its_side() -> None:
    # A: 1, 2, 1, 2, 1, 2 (no warm-up: z of the first 1 against 2, 1, 2 is -2.39; median 1.5, interval ranks 0 and 5: [1, 2]); B: six of 4 ms ([4, 4]); ratio 4 / 1.5,
    # its interval [4 / 2, 4 / 1] = [2, 4], significant (2 < 4) (kills A's interval dropped, B's put in its place)
    d = difference(measure([1.0, 2.0, 1.0, 2.0, 1.0, 2.0]), measure([4.0] * 6))
    assert (d.a, d.b, d.delta, d.ratio) == (1.5, 4.0, 2.5, 4.0 / 1.5)
    assert (d.ratio_low, d.ratio_high, d.significant) == (2.0, 4.0, True)
    assert (d.a_interval, d.b_interval) == ((1.0, 2.0), (4.0, 4.0))
    assert d.to_json() == {
        "a": 1.5,
        "b": 4.0,
        "delta": 2.5,
        "ratio": 4.0 / 1.5,
        "ratio_low": 2.0,
        "ratio_high": 4.0,
        "significant": True,
        "a_interval": [1.0, 2.0],
        "b_interval": [4.0, 4.0],
    }


def test_an_unstable_sets_dropped_outlier_stays_among_its_slow_iterations() -> None:
    # 1, 1, 1, 1, 1, 1.5, 100 ms with CPU 1, 1, 1, 1, 1, 1.5, 10 ms. 100 is an outlier: MAD 0, mean absolute
    # deviation (0.5 + 99) / 7 = 14.21, z = 99 / (1.253314 x 14.21) = 5.56 > 3.5. The 6 kept have mean 1.0833 and
    # stdev 0.2041: CV 18.8%, unstable. Slow: the outlier and the top quarter of the kept (max(1, 6 // 4) = 1:
    # the 1.5). Typical CPU/wall 1.0; extra wall 99 + 0.5, missing 90 + 0 >= 49.75, slow ratios 0.1 and 1.0,
    # median 0.55 < 0.8: cpu_stolen (kills `slow =` for `slow +=`: the 1.5 alone, ratio 1.0, more_cpu_work)
    m = measure([1, 1, 1, 1, 1, 1.5, 100], cpu=[1, 1, 1, 1, 1, 1.5, 10])
    assert (m.outliers, m.kept, m.median, m.unstable, round(m.cv, 4)) == ((6,), 6, 1.0, True, 0.1884)
    assert (m.cause, m.cpu_per_wall) == ("cpu_stolen", 1.0)
    assert m.warnings == (
        "unstable: coefficient of variation 18.8% (> 10%); cause: the process was not running for part of them: "
        "less CPU time per wall second than in the other iterations (it waited, for a CPU that another process "
        "held or for I/O, or for the device)",
    )


def test_the_median_interval_of_more_than_1000_values_by_the_normal_approximation() -> None:
    # n = 1028: sd sqrt(1028) / 2 = 16.0312 around 514. Rank 482: (482.5 - 514) / 16.0312 = -1.9649, P = 0.0247
    # <= 0.025; rank 483: -1.9025, P = 0.0286 > 0.025. So (482, 1027 - 482 = 545) (kills `high = mid - 2`, which
    # passed over 482 and gave (481, 546))
    assert median_ci_ranks(1028) == (482, 545)


def test_a_modified_z_score_of_exactly_3_5_is_no_outlier() -> None:
    # -m, -m, 0, 0, 0, m, m, 3.5 with m = 0.6745: median 0, MAD median(m, m, 0, 0, 0, m, m, 3.5) = m, so the last
    # value's z is 0.6745 x 3.5 / 0.6745 = 3.5 exactly: not above 3.5 (kills `>=`); 3.6 is an outlier
    m = 0.6745
    assert outlier_indices([-m, -m, 0.0, 0.0, 0.0, m, m, 3.5]) == []
    assert outlier_indices([-m, -m, 0.0, 0.0, 0.0, m, m, 3.6]) == [7]


def test_a_slow_start_that_moves_the_mean_by_exactly_5_percent_is_not_said() -> None:
    # 2 then nineteen 1s: the 2 is warm-up (the second half has no spread: z = +inf); the mean of all, 21 / 20 =
    # 1.05, is exactly 1.05 x the rest's mean 1: not more than 5% (kills `>=`); a first value of 2.01 is said
    assert slow_start([2.0] + [1.0] * 19) == 0
    assert slow_start([2.01] + [1.0] * 19) == 1


def test_a_ratio_whose_interval_starts_at_the_threshold_is_within_noise() -> None:
    # ratio 2.0 with interval [1.25, 3.0] against 1.25: not entirely above it (kills `ratio_low >= threshold`)
    assert ratio_state(Difference(1.0, 2.0, 1.0, 2.0, 1.25, 3.0, False), 1.25) == "within noise"
    assert ratio_state(Difference(1.0, 2.0, 1.0, 2.0, 1.26, 3.0, False), 1.25) == "above"


def test_a_measurement_goes_to_json_and_back_whole() -> None:
    # the unstable set above: median 1.0, interval ranks (0, 5) of the 6 kept: [1.0, 1.5]; mean 6.5 / 6
    # (kills "CONFIDENCE" as a key, and from_json dropping cpu_per_wall or notes or reading ci_high as None)
    m = measure([1, 1, 1, 1, 1, 1.5, 100], cpu=[1, 1, 1, 1, 1, 1.5, 10])
    doc = m.to_json()
    assert {k: doc[k] for k in ("median", "ci_low", "ci_high", "confidence", "count", "kept")} == {
        "median": 1.0,
        "ci_low": 1.0,
        "ci_high": 1.5,
        "confidence": 0.95,
        "count": 7,
        "kept": 6,
    }
    assert (doc["mean_kept"], doc["dropped_warmup"], doc["dropped_outliers"]) == (6.5 / 6, [], [6])
    assert (doc["cause"], doc["cpu_per_wall"], doc["unstable"], doc["trend"]) == (
        "cpu_stolen",
        1.0,
        True,
        None,
    )
    assert doc["notes"] == [
        "dropped 1 outlier (rule 'outlier': modified z-score > 3.5; iteration 6); 6 of 7 iterations kept"
    ]
    back = Measurement.from_json(doc)
    assert back == m
    assert (back.ci_high, back.cpu_per_wall, back.notes) == (1.5, 1.0, m.notes)


# ------------------------------------------------------------------------------------------ recommendations


def _gpu_row(batch: int, latency: float, busy: float, **extra: Any) -> dict[str, Any]:
    """A traced GPU configuration row of sweep (pytorch, 128), with the fields the rules read."""
    row = {
        "runtime": "pytorch",
        "seq_len": 128,
        "batch_size": batch,
        "device": "gpu",
        "latency_ms": latency,
        "latency_source": "traced",
        "traced_latency_ms": latency,
        "gpu_busy_ms": busy,
        "launches": 100,
        "kernels": 100,
        "launch_api_ms": 0.0,
    }
    return row | extra


def _view(sweep: dict[str, Any], rows: list[dict[str, Any]]) -> SweepView:
    index = {config_key(r): r for r in rows}
    return SweepView({"runtime": "pytorch", "seq_len": 128, "device": "gpu"} | sweep, rows, index, 0.1, 0.5)


def test_headroom_carries_the_interval_of_its_latency_ratio() -> None:
    # batch 8 costs 1.05x batch 1's latency (interval 1.01-1.10) for 7.6x the throughput (7.3-7.9): every
    # number of the sweep goes to the recommendation as it is (kills the low end read from another key)
    b1, b8 = _gpu_row(1, 2.0, 0.2), _gpu_row(8, 2.1, 1.0)
    sweep = {
        "batch_sizes": [1, 8],
        "headroom_batch_size": 8,
        "headroom_latency_ratio": 1.05,
        "headroom_latency_ratio_low": 1.01,
        "headroom_latency_ratio_high": 1.10,
        "headroom_difference": "higher",
        "headroom_throughput_gain": 7.6,
        "headroom_throughput_gain_low": 7.3,
        "headroom_throughput_gain_high": 7.9,
    }
    rec = headroom(_view(sweep, [b1, b8]))
    assert rec is not None and (rec.kind, rec.batch_size) == ("headroom", 8)
    assert rec.numbers == {
        "latency_ratio": 1.05,
        "latency_ratio_low": 1.01,
        "latency_ratio_high": 1.10,
        "difference": "higher",
        "throughput_gain": 7.6,
        "throughput_gain_low": 7.3,
        "throughput_gain_high": 7.9,
        "smallest_batch_size": 1,
    }
    assert rec.facts == {"latency_ms": 2.1, "smallest_latency_ms": 2.0}


def test_no_cuda_graph_recommendation_below_a_tenth_of_the_latency_in_launch_calls() -> None:
    # 100 launches for 100 kernels, but 0.05 ms of launch calls in a 1 ms iteration: 5% < 10%, nothing, even
    # with an attribution projection of 0.5 ms that would save half (kills `kernels or launch_ms is not None`,
    # which let the share test go). At 0.1 ms (10%) the projection is said.
    assert (
        launch_calls(
            _view({"batch_sizes": [1]}, [_gpu_row(1, 1.0, 0.1, launch_api_ms=0.05, graph_projected_ms=0.5)])
        )
        is None
    )
    rec = launch_calls(
        _view({"batch_sizes": [1]}, [_gpu_row(1, 1.0, 0.1, launch_api_ms=0.1, graph_projected_ms=0.5)])
    )
    assert rec is not None and rec.numbers == {
        "launch_api_ms": 0.1,
        "launches": 100,
        "traced_latency_ms": 1.0,
        "projected_latency_ms": 0.5,
        "projection": "attribution",
    }


def test_transition_names_where_latency_leaves_the_plateau_with_its_edge() -> None:
    # batches 1, 2, 4, 8: plateau 1-2, batch 4 within noise of the line (its ratio to batch 1: 1.05-1.15),
    # transition at 8 (ratio 1.6, interval 1.5-1.7; utilization 0.8): every number of the sweep goes through
    # (kills the facts' edge_ratios key renamed and the ratio's low end read from another key)
    rows = [
        _gpu_row(1, 2.0, 0.2),
        _gpu_row(2, 2.1, 0.4),
        _gpu_row(4, 2.2, 0.8, latency_vs_smallest_low=1.05, latency_vs_smallest_high=1.15),
        _gpu_row(8, 3.2, 2.56, gpu_utilization=0.8),
    ]
    sweep = {
        "batch_sizes": [1, 2, 4, 8],
        "plateau": [1, 2],
        "plateau_edge": [4],
        "transition_batch_size": 8,
        "transition_latency_ratio": 1.6,
        "transition_latency_ratio_low": 1.5,
        "transition_latency_ratio_high": 1.7,
    }
    rec = transition(_view(sweep, rows))
    assert rec is not None and (rec.kind, rec.batch_size) == ("transition", 8)
    assert rec.numbers == {
        "latency_ratio": 1.6,
        "latency_ratio_low": 1.5,
        "latency_ratio_high": 1.7,
        "gpu_utilization": 0.8,
        "within_noise_batch_sizes": [4],
        "after_batch_size": 4,
    }
    assert rec.facts == {
        "tolerance": 0.1,
        "smallest_batch_size": 1,
        "last_plateau": 2,
        "edge": [4],
        "not_compared": [],
        "edge_ratios": [(1.05, 1.15)],
    }


def test_a_sweep_that_never_leaves_an_empty_plateau_names_its_smallest_batch_and_withholds_nothing() -> None:
    # batches 1 and 2, no plateau stated (all undecided) and no transition: the last plateau batch is the
    # smallest, 1 (kills `s["plateau"][-1] if ... or True`: IndexError); latencies 2.0 and 2.1 ms over busy
    # 0.2 and 0.4 ms raise no doubt, so no "withheld" fact (kills `{"withheld": None}` always added)
    rows = [_gpu_row(1, 2.0, 0.2), _gpu_row(2, 2.1, 0.4)]
    sweep = {"batch_sizes": [1, 2], "plateau": [], "transition_batch_size": None}
    rec = transition(_view(sweep, rows))
    assert rec is not None and rec.batch_size is None
    assert rec.numbers == {"largest_batch_size": 2, "within_noise_batch_sizes": []}
    assert rec.facts == {
        "tolerance": 0.1,
        "smallest_batch_size": 1,
        "last_plateau": 1,
        "edge": [],
        "not_compared": [],
        "edge_ratios": [],
    }


def test_profiler_perturbation_names_the_worst_ratio_with_its_interval() -> None:
    # batch 1 traced 1.5x its untraced latency (interval 1.3-1.7), batch 2 2.0x (1.8-2.2): both entirely above
    # 1.25, the worst is batch 2 (kills max() without the ratio key: dicts do not compare) with its own interval
    # (kills the difference read from key None, and the high end's key renamed)
    b1 = _gpu_row(
        1,
        3.0,
        0.3,
        profiler_ratio=1.5,
        untraced_latency_ms=2.0,
        _perturbation=Difference(2.0, 3.0, 1.0, 1.5, 1.3, 1.7, True),
    )
    b2 = _gpu_row(
        2,
        4.0,
        0.6,
        profiler_ratio=2.0,
        untraced_latency_ms=2.0,
        traced_median_ms=4.1,
        _perturbation=Difference(2.0, 4.0, 2.0, 2.0, 1.8, 2.2, True),
    )
    rec = profiler_perturbation(_view({"batch_sizes": [1, 2]}, [b1, b2]))
    assert rec is not None and (rec.kind, rec.batch_size) == ("profiler_perturbation", 2)
    assert rec.numbers == {
        "profiler_ratio": 2.0,
        "profiler_ratio_low": 1.8,
        "profiler_ratio_high": 2.2,
        "batch_sizes": [1, 2],
    }
    assert rec.facts == {"traced_latency_ms": 4.1, "untraced_latency_ms": 2.0}


def test_a_recommendation_names_its_sweep_only_when_the_runtime_does_not() -> None:
    # label None or equal to the runtime: no "sweep" key (kills `label or label != runtime`, which wrote
    # "sweep": None); another label: "sweep" (kills the key upper-cased)
    def doc(label: str | None) -> dict[str, Any]:
        return Recommendation("headroom", "pytorch", 128, 8, {"x": 1}, label=label).to_json("text")

    assert doc(None) == {
        "kind": "headroom",
        "runtime": "pytorch",
        "seq_len": 128,
        "batch_size": 8,
        "text": "text",
        "numbers": {"x": 1},
    }
    assert "sweep" not in doc("pytorch")
    assert doc("pytorch (cpu, fp32)")["sweep"] == "pytorch (cpu, fp32)"
    assert list(doc("pytorch (cpu, fp32)")) == [
        "kind",
        "runtime",
        "sweep",
        "seq_len",
        "batch_size",
        "text",
        "numbers",
    ]


#: 1, 1.5 alternating (8 iterations): median 1.25, MAD 0.25, every z 0.67 (no outlier, no warm-up); mean 1.25,
#: stdev 0.2673: CV 21.4%, unstable. The slow ones are the top quarter by latency, 8 // 4 = 2: iterations 5 and 7
#: (the sort is stable: 1, 3, 5, 7 hold the 1.5s). Iteration 5 got 0.15 ms of CPU (ratio 0.1), every other one
#: its wall time (ratio 1).
ALTERNATING = [1.0, 1.5, 1.0, 1.5, 1.0, 1.5, 1.0, 1.5]
ALTERNATING_CPU = [1.0, 1.5, 1.0, 1.5, 1.0, 0.15, 1.0, 1.5]
STOLEN = (
    "unstable: coefficient of variation 21.4% (> 10%); cause: the process was not running for part of them: less "
    "CPU time per wall second than in the other iterations (it waited, for a CPU that another process held or for "
    "I/O, or for the device)"
)


def test_an_unstable_sets_slow_quarter_is_its_slowest_iterations_by_latency() -> None:
    # typical 0, 1, 2, 3, 4, 6: ratio 1.0, wall median 1.0. Slow 5 and 7: extra wall 0.5 + 0.5 = 1.0, missing
    # (1.5 - 0.15) + 0 = 1.35 >= 0.5, ratios 0.1 and 1.0, median 0.55 < 0.8: cpu_stolen. Kills the sort without
    # its key (by index: slow 6 and 7, ratios 1 and 1, more_cpu_work) and a fifth for the quarter (8 // 5 = 1:
    # 7 alone, ratio 1, more_cpu_work)
    m = measure(ALTERNATING, cpu=ALTERNATING_CPU)
    assert (m.warmup, m.outliers, m.median, m.ci_low, m.ci_high) == ((), (), 1.25, 1.0, 1.5)
    assert (m.unstable, m.cause, m.cpu_per_wall) == (True, "cpu_stolen", 1.0)
    assert m.warnings == (STOLEN,)


def test_a_stolen_cause_with_preemptions_says_both() -> None:
    # 4 involuntary switches in each slow iteration (5 and 7: 8 in 3 ms, 2.67 per ms), 1 in each typical one
    # (6 in 7 ms, 0.857 per ms): 2.67 >= 2 x 0.857 and 8 >= 2 slow iterations: preempted 4 against 1 per
    # iteration, said after the stolen cause (kills the sentence upper-cased)
    m = measure(ALTERNATING, cpu=ALTERNATING_CPU, preempted=[1, 1, 1, 1, 1, 4, 1, 4])
    assert m.cause == "cpu_stolen"
    assert m.warnings == (
        STOLEN + "; preempted 4 times per slow iteration against 1: another runnable thread took the CPU",
    )


def test_preemptions_are_counted_per_slow_and_per_typical_iteration() -> None:
    # slow 3: 4 switches in 1 ms; typical 0, 1, 2: 3 in 3 ms; 4 >= 2 x 1: (4 per slow, 3 / 3 = 1 per typical)
    # (kills `typical_n * len(typical)`: 9)
    assert _preemption([1.0, 1.0, 1.0, 1.0], [1, 1, 1, 4], [3], [0, 1, 2]) == (4.0, 1.0)


def test_an_interval_is_described_or_a_dash_is_shown() -> None:
    # no set: an em dash (kills "XX—XX"); 1 value: no interval; 1, 2 alternating (6): median 1.5, [1, 2]
    assert describe_interval(None) == "—"
    assert describe_interval(Measurement(0, 0, None)) == "—"
    assert describe_interval(measure([5.0])) == "5 ms (n=1, no interval)"
    assert describe_interval(measure([1.0, 2.0, 1.0, 2.0, 1.0, 2.0])) == "1.5 ms [1–2]"


def test_a_difference_from_a_median_of_0_has_no_ratio() -> None:
    # A's median 0 ms, B's 5 ms: delta 5, no ratio (kills `vb / va if va or True`: ZeroDivisionError)
    d = difference(measure([0.0]), measure([5.0]))
    assert (d.a, d.b, d.delta, d.ratio) == (0.0, 5.0, 5.0, None)


def test_an_interval_of_exactly_the_target_width_is_tight() -> None:
    # median 50 ms, interval [49, 51]: half-width 1 / 50 = 0.02, exactly the 2% target: tight (kills `<`)
    assert Measurement(6, 6, 50.0, 49.0, 51.0).relative_ci == 0.02
    assert is_tight(Measurement(6, 6, 50.0, 49.0, 51.0))
    assert not is_tight(Measurement(6, 6, 50.0, 48.9, 51.0))


def test_from_json_keeps_the_trend() -> None:
    text = "rose from 1 to 2 ms (medians of the first and last third of the kept iterations)"
    m = Measurement.from_json({"median": 1.5, "kept": 18, "count": 18, "trend": text, "unstable": True})
    assert m is not None and (m.trend, m.unstable, m.count, m.kept) == (text, True, 18, 18)


def test_a_framework_overhead_of_exactly_half_the_latency_is_a_finding() -> None:
    # 2 ms traced, 1 ms busy: overhead 1 ms, fraction 0.5 = 1 - the 0.5 threshold: "at least", a finding
    # (kills `<=`); no other runtime measured, so no alternative is named
    b1 = _gpu_row(1, 2.0, 1.0, framework_overhead_ms=1.0, framework_overhead_fraction=0.5)
    rec = framework_overhead(_view({"batch_sizes": [1]}, [b1]))
    assert rec is not None and (rec.kind, rec.batch_size) == ("framework_overhead", 1)
    assert rec.numbers == {
        "framework_overhead_fraction": 0.5,
        "framework_overhead_ms": 1.0,
        "gpu_busy_ms": 1.0,
        "traced_latency_ms": 2.0,
    }
    assert rec.facts == {"latency_source": "traced", "verdict_uncertain": False}
    b1 = _gpu_row(1, 2.0, 1.0001, framework_overhead_ms=0.9999, framework_overhead_fraction=0.49995)
    assert framework_overhead(_view({"batch_sizes": [1]}, [b1])) is None


def test_a_sweep_that_never_leaves_the_plateau_withholds_its_claim_on_an_unstable_set() -> None:
    # batch 2's latency set is unstable: the claim that latency never leaves the plateau is withheld, with the
    # reason (kills the "withheld" fact dropped)
    rows = [_gpu_row(1, 2.0, 0.2), _gpu_row(2, 2.1, 0.4, latency_unstable=True)]
    rec = transition(_view({"batch_sizes": [1, 2], "plateau": [1, 2], "transition_batch_size": None}, rows))
    assert rec is not None and rec.batch_size is None
    assert rec.facts["withheld"] == "the latency set of batch 2 is unstable (see its warning)"
    assert rec.facts["last_plateau"] == 2


# ---------------------------------------------- profiler_cost's untraced latency (ac6e031: new, followups17's)

CPU_STOLEN_ON_CPU = STOLEN.replace("for I/O, or for the device)", "for I/O)")


def test_the_recorded_fallbacks_carry_their_count_and_refuse_what_is_not_a_latency() -> None:
    # p50 2.0 of 20 iterations: median 2.0, count = kept = 20 (kills count read from another key, dropped or
    # forced to 0, and count/kept given as None); a count that is a bool or negative reads 0 (kills `or True`
    # and the fallback 1)
    assert untraced_measurement({"p50": 2.0, "count": 20}) == Measurement(count=20, kept=20, median=2.0)
    assert untraced_measurement({"p50": 2.0, "count": True}) == Measurement(count=0, kept=0, median=2.0)
    assert untraced_measurement({"p50": 2.0, "count": -1}) == Measurement(count=0, kept=0, median=2.0)
    # recorded statistics with a median of 0 (kills `or True` on the positive test); a bare number where a
    # mapping belongs (kills `not recorded and not isinstance(...)`: dict(2.1) raised)
    assert untraced_measurement({"median": 0.0, "kept": 6, "count": 6}) is None
    assert untraced_measurement(2.1) is None  # type: ignore[arg-type]
    # latency.csv's values whose median is 0 (kills `or True` on the measured path)
    assert untraced_measurement({"p50": 1.0}, ([0.0], None)) is None


def test_latency_csv_values_are_measured_with_their_cpu_times_and_the_devices_words() -> None:
    # the alternating set above, measured from latency.csv's values: median 1.25, cause cpu_stolen (kills the
    # CPU times dropped); on a CPU the cause's words leave out "or for the device" (kills every change of the
    # device test; "XXgpuXX"/"GPU" for "gpu" are equivalent: measure only asks whether it is "cpu")
    gpu = untraced_measurement({"p50": 9.0}, (ALTERNATING, ALTERNATING_CPU))
    cpu = untraced_measurement({"p50": 9.0}, (ALTERNATING, ALTERNATING_CPU), device="cpu")
    assert gpu is not None and cpu is not None
    assert (gpu.median, gpu.cause, gpu.warnings) == (1.25, "cpu_stolen", (STOLEN,))
    assert (cpu.median, cpu.cause, cpu.warnings) == (1.25, "cpu_stolen", (CPU_STOLEN_ON_CPU,))


def test_untraced_of_reads_its_configurations_latency_csv_rows(tmp_path: Path) -> None:
    # latency.csv beside the trace holds batch 1 at sequence length 128 (the alternating set, with CPU times)
    # and at 64 (eight of 5 ms). The configuration (128, cpu) records a median without `kept` (an old run):
    # its own 8 rows are measured: median 1.25, CPU-worded cause (kills seq_len not passed or read as None:
    # 16 rows, median 3.25; the device not passed or `device and ...`: the GPU words)
    lines = ["set,runtime,batch_size,seq_len,latency_ms,cpu_ms"]
    lines += [f"untraced,pytorch,1,128,{v},{c}" for v, c in zip(ALTERNATING, ALTERNATING_CPU, strict=True)]
    lines += ["untraced,pytorch,1,64,5.0,5.0"] * 8
    (tmp_path / "latency.csv").write_text("\n".join(lines) + "\n")
    config = SimpleNamespace(
        untraced_latency={"median": 1.3},
        path=tmp_path / "pytorch_b1_s128.synthetic.json",
        runtime="pytorch",
        batch_size=1,
        seq_len=128,
        device="cpu",
    )
    m = untraced_of(config)
    assert m is not None and (m.count, m.median, m.cause, m.warnings) == (
        8,
        1.25,
        "cpu_stolen",
        (CPU_STOLEN_ON_CPU,),
    )
    # a median with `kept` is the stability rules' own: latency.csv is not read (median 1.3 as recorded)
    config.untraced_latency = {"median": 1.3, "kept": 20, "count": 20}
    assert untraced_of(config) == Measurement(count=20, kept=20, median=1.3)
    # nothing recorded, or a bare number: None (kills getattr without its default, and `and` for `or`)
    assert untraced_of(SimpleNamespace()) is None
    assert untraced_of(SimpleNamespace(untraced_latency=2.1)) is None


def test_latency_csv_values_take_untraced_rows_only_and_reread_a_changed_file(tmp_path: Path) -> None:
    # untraced rows 1.0 and 2.0 ms (the second with an empty set, as untraced), a traced one of 9.0 left out
    # (kills the set read from another key, and "" no longer untraced); one CPU time missing: no CPU times
    # (kills `or True` on the length test)
    csv = tmp_path / "latency.csv"
    trace = tmp_path / "pytorch_b1_s128.synthetic.json"
    head = "set,runtime,batch_size,seq_len,latency_ms,cpu_ms\n"
    csv.write_text(
        head + "untraced,pytorch,1,128,1.0,1.0\n,pytorch,1,128,2.0,\ntraced,pytorch,1,128,9.0,9.0\n"
    )
    assert latency_csv_values(trace, "pytorch", 1, 128) == ([1.0, 2.0], None)
    # rewritten at the same mtime with another size (kills the size left out of the cache key) ...
    stat = csv.stat()
    csv.write_text(head + "untraced,pytorch,1,128,3.0,3.0\n")
    os.utime(csv, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert latency_csv_values(trace, "pytorch", 1, 128) == ([3.0], [3.0])
    # ... and with the same size at another mtime (kills the mtime left out)
    csv.write_text(head + "untraced,pytorch,1,128,4.0,4.0\n")
    os.utime(csv, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert latency_csv_values(trace, "pytorch", 1, 128) == ([4.0], [4.0])
