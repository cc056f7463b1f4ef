"""Round 18's mutation tests (mutation18): each case kills a mutant that survived the existing tests of
analyzers/utilization.py, analyzers/sweep.py, fleet/compact.py's stated rank and world size, or
analyzers/gap_context.py's candidate search (notes/mutation18.md). Every input is hand-built and synthetic;
the expected numbers are worked out beside each case."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl
import pytest

from tracekit.analyzers.utilization import Figure, Utilization, _withhold_summed, concurrent_kernels

# ---------------------------------------------------------------------------------------------------------
# utilization: kernels running at once (concurrent_kernels) and the wall-time figures withheld for it


def _ops(rows: list[tuple[int | None, int | None, str, int | None, int | None]]) -> pl.DataFrame:
    """(iteration, device, kind, start, end) rows, in the order given."""
    return pl.DataFrame(
        rows,
        schema={
            "iteration": pl.Int64,
            "device": pl.Int64,
            "kind": pl.String,
            "start": pl.Int64,
            "end": pl.Int64,
        },
        orient="row",
    )


def test_concurrent_kernels_share_beyond_the_union_per_iteration_and_device() -> None:
    # Iteration 0, device 0: kernels [50, 150) and [0, 100) (given out of start order): total 200 ns, union
    # [0, 150) = 150 ns, so 200 / 150 - 1 = 1/3 again. Iteration 1, device 0: [0, 100) alone (total 100, union
    # 100). A memcpy [0, 1000) and a kernel without an end count nowhere. Total 300, union 250: 0.2.
    ops = _ops(
        [
            (0, 0, "kernel", 50, 150),
            (0, 0, "kernel", 0, 100),
            (1, 0, "kernel", 0, 100),
            (0, 0, "memcpy", 0, 1000),
            (0, 0, "kernel", 10, None),
            (0, 0, "kernel", None, 20),
        ]
    )
    devices, extra = concurrent_kernels(ops)
    assert devices == 1
    assert extra == pytest.approx(300 / 250 - 1, abs=1e-12)


def test_kernels_of_different_iterations_or_devices_do_not_overlap_each_other() -> None:
    # The same times in two iterations: no overlap within an iteration (0.0); on two devices: 2 devices, 0.0.
    assert concurrent_kernels(_ops([(0, 0, "kernel", 0, 100), (1, 0, "kernel", 0, 100)])) == (1, 0.0)
    assert concurrent_kernels(_ops([(0, 0, "kernel", 0, 100), (0, 1, "kernel", 0, 100)])) == (2, 0.0)
    # a kernel whose device is not recorded is no second device
    assert concurrent_kernels(_ops([(0, 0, "kernel", 0, 100), (0, None, "kernel", 200, 300)])) == (1, 0.0)


def test_no_kernels_and_kernels_of_no_length() -> None:
    assert concurrent_kernels(_ops([(0, 0, "memcpy", 0, 100)])) == (0, 0.0)
    # two 0-ns kernels: total 0, union 0: no share (not 0/0)
    assert concurrent_kernels(_ops([(0, 0, "kernel", 5, 5), (0, 0, "kernel", 5, 5)])) == (1, 0.0)


def _withheld(
    sms: tuple[float | None, str | None],
    warp: tuple[float | None, str | None],
    ops: pl.DataFrame,
) -> Utilization:
    result = Utilization()
    result.wall["sms_active"] = Figure(sms[0], sms[1], "m1")
    result.wall["warp_occupancy"] = Figure(warp[0], warp[1], "m2")
    _withhold_summed(result, SimpleNamespace(ops=ops))
    return result


ONE_KERNEL = _ops([(0, 0, "kernel", 0, 100)])


def _said(label: str, why: str, value: float, source: str) -> str:
    return (
        f"wall-time {label} not given: {why}, and Σ(kernel time × value) / latency adds the values of kernels "
        f"running together ({value:.1f}% here, from {source}); the kernel-time average stays"
    )


def test_a_figure_of_exactly_100_percent_stays_one_above_is_withheld_whatever_comes_first() -> None:
    # One device, no overlap: SMs active exactly 100% stays (the rule is "> 100"); warp occupancy 100.5%
    # after it is withheld (the loop goes on past a figure that stays).
    result = _withheld((100.0, "ncu"), (100.5, "ncu"), ONE_KERNEL)
    assert result.wall["sms_active"] == Figure(100.0, "ncu", "m1")
    assert result.wall["warp_occupancy"] == Figure()
    assert result.warnings == [_said("warp occupancy", "kernels of an iteration ran at once", 100.5, "ncu")]


def test_two_devices_withhold_both_figures_with_the_device_count() -> None:
    ops = _ops([(0, 0, "kernel", 0, 100), (0, 1, "kernel", 0, 100)])
    result = _withheld((40.0, "ncu"), (30.0, "kineto estimate"), ops)
    assert result.wall == {"sms_active": Figure(), "warp_occupancy": Figure()}
    why = "the analyzed iterations' kernels ran on 2 devices"
    assert result.warnings == [
        _said("SMs active", why, 40.0, "ncu"),
        _said("warp occupancy", why, 30.0, "kineto estimate"),
    ]


def test_overlap_beyond_five_percent_withholds_and_says_the_share() -> None:
    # [0, 100) and [80, 200) on one device: total 220, union 200, 10% again: withheld, "10% of their union's
    # time again" (exactly 5% is the next test).
    ops = _ops([(0, 0, "kernel", 0, 100), (0, 0, "kernel", 80, 200)])
    result = _withheld((50.0, "ncu"), (None, None), ops)
    assert result.wall["sms_active"] == Figure()
    assert result.warnings == [
        _said(
            "SMs active", "kernels of an iteration ran at once (10% of their union's time again)", 50.0, "ncu"
        )
    ]
    # [0, 100) and [96, 200): total 204, union 200: 2% again, under 5%: the figure stays
    ops = _ops([(0, 0, "kernel", 0, 100), (0, 0, "kernel", 96, 200)])
    result = _withheld((50.0, "ncu"), (None, None), ops)
    assert (result.wall["sms_active"], result.warnings) == (Figure(50.0, "ncu", "m1"), [])


def test_nsys_metrics_figures_are_never_withheld() -> None:
    ops = _ops([(0, 0, "kernel", 0, 100), (0, 1, "kernel", 0, 100)])
    result = _withheld((140.0, "nsys metrics"), (None, None), ops)
    assert (result.wall["sms_active"], result.warnings) == (Figure(140.0, "nsys metrics", "m1"), [])


def test_exactly_five_percent_overlap_is_not_beyond_five_percent() -> None:
    # (a strict xfail until 6fdf023: total / union - 1 gave 0.050000000000000044 > 0.05 and withheld it)
    ops = _ops([(0, 0, "kernel", 0, 100), (0, 0, "kernel", 90, 200)])
    result = _withheld((50.0, "ncu"), (None, None), ops)
    assert (result.wall["sms_active"], result.warnings) == (Figure(50.0, "ncu", "m1"), [])


# ---------------------------------------------------------------------------------------------------------
# fleet/compact: a rank or world size stated in the trace's metadata (_stated_count and its three callers)


def _unknown(what: str, shown: str, lowest: int, highest: int) -> str:
    return (
        f"the trace's metadata says {what} {shown}, not a whole number from {lowest} to {highest}: the {what} is "
        "treated as unknown"
    )


def test_stated_counts_at_their_bounds() -> None:
    from tracekit.fleet.compact import _stated_count

    # a world size of 1 to 2**20 = 1048576 ranks; a rank of 0 to 1048575
    assert _stated_count({"world_size": 1}, "world_size", 1) == (1, None)
    assert _stated_count({"world_size": 1_048_576}, "world_size", 1) == (1_048_576, None)
    assert _stated_count({"world_size": 1_048_577}, "world_size", 1) == (
        None,
        _unknown("world size", "1048577", 1, 1_048_576),
    )
    assert _stated_count({"rank": 0}, "rank", 0) == (0, None)
    assert _stated_count({"rank": 1_048_575}, "rank", 0) == (1_048_575, None)
    assert _stated_count({"rank": 1_048_576}, "rank", 0) == (None, _unknown("rank", "1048576", 0, 1_048_575))
    assert _stated_count({"rank": 7.0}, "rank", 0) == (7, None)
    assert _stated_count({}, "rank", 0) == (None, None)
    assert _stated_count({"rank": None}, "rank", 0) == (None, None)


def test_stated_counts_as_text() -> None:
    from tracekit.fleet.compact import _stated_count

    # digits with blanks around them are the number; a sign, a decimal point or a word is not
    assert _stated_count({"world_size": " 8 "}, "world_size", 1) == (8, None)
    assert _stated_count({"world_size": "8"}, "world_size", 1) == (8, None)
    assert _stated_count({"rank": "-3"}, "rank", 0) == (None, _unknown("rank", "'-3'", 0, 1_048_575))
    assert _stated_count({"rank": "3.0"}, "rank", 0) == (None, _unknown("rank", "'3.0'", 0, 1_048_575))
    assert _stated_count({"rank": float("nan")}, "rank", 0) == (None, _unknown("rank", "nan", 0, 1_048_575))
    assert _stated_count({"rank": [1]}, "rank", 0) == (None, _unknown("rank", "[1]", 0, 1_048_575))


def test_a_long_stated_value_is_cut_to_forty_characters() -> None:
    from tracekit.fleet.compact import _stated_count

    # repr of 38 x's is 40 characters: shown whole; of 39, 41: its first 37 characters and "..."
    forty = "x" * 38
    assert _stated_count({"rank": forty}, "rank", 0)[1] == _unknown("rank", repr(forty), 0, 1_048_575)
    shown = "'" + "x" * 36 + "..."
    assert _stated_count({"rank": "x" * 39}, "rank", 0)[1] == _unknown("rank", shown, 0, 1_048_575)


def test_rank_world_size_and_their_warnings_in_order() -> None:
    from tracekit.fleet.compact import _metadata_warnings, _world_size, rank_of

    meta = {"rank": 2.5, "world_size": 0}
    analyzed = SimpleNamespace(trace_data=SimpleNamespace(meta=meta))
    assert (rank_of(analyzed), _world_size(meta)) == (None, None)
    # the rank's warning first, then the world size's
    assert _metadata_warnings(meta) == [
        _unknown("rank", "2.5", 0, 1_048_575),
        _unknown("world size", "0", 1, 1_048_576),
    ]
    meta = {"rank": 3, "world_size": 4}
    analyzed = SimpleNamespace(trace_data=SimpleNamespace(meta=meta))
    assert (rank_of(analyzed), _world_size(meta), _metadata_warnings(meta)) == (3, 4, [])
    # a rank of 0 is a rank (not "none"); a world size of 1 is one rank
    meta = {"rank": 0, "world_size": 1}
    analyzed = SimpleNamespace(trace_data=SimpleNamespace(meta=meta))
    assert (rank_of(analyzed), _world_size(meta), _metadata_warnings(meta)) == (0, 1, [])


def test_a_rank_of_digit_like_text_is_unknown_with_a_warning() -> None:
    # (a strict xfail until 6fdf023: '²'.isdigit() is True and int('²') raised ValueError)
    from tracekit.fleet.compact import _stated_count

    assert _stated_count({"rank": "²"}, "rank", 0) == (None, _unknown("rank", "'²'", 0, 1_048_575))


# ---------------------------------------------------------------------------------------------------------
# sweep: the plateau and transition, the framework-bound rule, its doubt, and the sweep keys


def test_plateau_and_transition_from_the_smallest_batch_size() -> None:
    from tracekit.analyzers.sweep import plateau_and_transition

    # base 10 ms (batch 1, given last): 11 ms is within 10% (10 x 1.1 = 11.000000000000002), 11.0001 is not
    assert plateau_and_transition({8: 20.0, 4: 11.0001, 2: 11.0, 1: 10.0}) == ([1, 2], 4)
    # every batch within: no transition
    assert plateau_and_transition({1: 10.0, 2: 10.5}) == ([1, 2], None)
    # a wider tolerance (50%): 14.9 is in, 15.1 out; a later batch back under the line stays out (the run ends)
    assert plateau_and_transition({1: 10.0, 2: 14.9, 4: 15.1, 8: 10.0}, tolerance=0.5) == ([1, 2], 4)
    assert plateau_and_transition({}) == ([], None)


def test_framework_bound_below_the_threshold_only() -> None:
    from tracekit.analyzers.sweep import bound_of, is_framework_bound

    assert [is_framework_bound(u) for u in (None, 0.5, 0.4999)] == [None, False, True]
    assert is_framework_bound(0.6, threshold=0.7) is True
    assert [bound_of(u) for u in (None, 0.5, 0.2)] == [None, "compute", "framework"]
    assert bound_of(0.6, threshold=0.7) == "framework"
    assert bound_of(0.0) == "framework"


def test_bound_doubt_without_an_interval() -> None:
    from tracekit.analyzers.sweep import bound_doubt

    # None and NaN left out: 0.4 and 0.6, median 0.5 (compute-bound: not below 0.5), too few for an interval
    assert bound_doubt([0.4, None, 0.6, float("nan")]) == (
        "verdict uncertain: the median utilization 50.0% (compute-bound) rests on 2 iterations on both sides of "
        "the 50% threshold: 1 framework-bound, 1 compute-bound (too few for an interval of the median)"
    )
    # one value, or all on one side: no doubt
    assert bound_doubt([0.4, None]) is None
    assert bound_doubt([0.4, 0.45, 0.49]) is None
    assert bound_doubt([0.5, 0.6, 0.9]) is None
    # the threshold given: 0.25 and 0.35 lie on both sides of 30%, 0.35 and 0.45 do not
    assert bound_doubt([0.25, 0.35], threshold=0.3) == (
        "verdict uncertain: the median utilization 30.0% (compute-bound) rests on 2 iterations on both sides of "
        "the 30% threshold: 1 framework-bound, 1 compute-bound (too few for an interval of the median)"
    )
    assert bound_doubt([0.35, 0.45], threshold=0.3) is None
    # a 60% threshold (printed 60, not 101 x 0.6 = 60.6 -> 61): 0.55 framework-bound, 0.65 compute-bound
    assert bound_doubt([0.55, 0.65], threshold=0.6) == (
        "verdict uncertain: the median utilization 60.0% (compute-bound) rests on 2 iterations on both sides of "
        "the 60% threshold: 1 framework-bound, 1 compute-bound (too few for an interval of the median)"
    )
    # with an interval: 6 values, (min, max) = (10%, 90%) across 60%; the median 50% is framework-bound
    assert bound_doubt([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], threshold=0.6) == (
        "verdict uncertain: the median utilization 50.0% (framework-bound) has a 95% interval of 10.0% to 90.0%, "
        "across the 60% threshold: 3 of 6 iterations are framework-bound, 3 compute-bound"
    )


def test_bound_doubt_with_an_interval_across_or_touching_the_threshold() -> None:
    from tracekit.analyzers.sweep import bound_doubt

    # 6 values: the interval is (min, max) = (10%, 80%), across 50%
    assert bound_doubt([0.1, 0.2, 0.3, 0.6, 0.7, 0.8]) == (
        "verdict uncertain: the median utilization 45.0% (framework-bound) has a 95% interval of 10.0% to 80.0%, "
        "across the 50% threshold: 3 of 6 iterations are framework-bound, 3 compute-bound"
    )
    # 10 values: the interval runs from the 2nd to the 9th. Its high end exactly at 50%: across (low < 50% <=
    # high); its low end exactly at 50%: on the compute side (50% is compute-bound), no doubt
    assert bound_doubt([0.1, 0.2, 0.3, 0.3, 0.4, 0.4, 0.4, 0.45, 0.5, 0.9]) == (
        "verdict uncertain: the median utilization 40.0% (framework-bound) has a 95% interval of 20.0% to 50.0%, "
        "across the 50% threshold: 8 of 10 iterations are framework-bound, 2 compute-bound"
    )
    assert bound_doubt([0.1, 0.5, 0.55, 0.6, 0.6, 0.6, 0.6, 0.6, 0.7, 0.8]) is None


def test_sweep_keys_labels_and_latency_basis() -> None:
    from tracekit.analyzers.sweep import config_key, latency_basis, sweep_key, sweep_label

    row = {
        "runtime": "onnxruntime",
        "seq_len": 128,
        "model": "bert",
        "device": "cuda",
        "precision": "fp16",
        "unidentified": "b.json",
        "batch_size": 8,
    }
    assert sweep_key(row) == ("onnxruntime", 128, "bert", "cuda", "fp16", "b.json")
    assert sweep_key({"runtime": "pytorch", "seq_len": 64}) == ("pytorch", 64, None, None, None, None)
    assert config_key(row) == ("onnxruntime", 128, "bert", "cuda", "fp16", "b.json", 8)
    assert sweep_label({"label": "pytorch (cpu, fp32)", "runtime": "pytorch"}) == "pytorch (cpu, fp32)"
    assert sweep_label({"label": "", "runtime": "pytorch"}) == "pytorch"
    assert sweep_label({"runtime": "pytorch"}) == "pytorch"
    assert latency_basis({"latency_source": "traced", "profiler": "nsys"}) == ("traced", "nsys")
    assert latency_basis({"latency_source": "traced"}) == ("traced", None)
    assert latency_basis({"latency_source": "untraced", "profiler": "nsys"}) == ("untraced", None)


def _m(median: float, low: float | None = None, high: float | None = None):
    from tracekit.analyzers.stability import Measurement

    return Measurement(10, 10, median, low, high)


def test_plateau_with_noise_states_each_batch_size() -> None:
    from tracekit.analyzers.sweep import plateau_with_noise

    # Against batch 1's 10 ms [9.9, 10.1], under the 1.1 line: batch 2 [10.4, 10.6] is 1.030-1.071 (on),
    # batch 4 [10.8, 11.2] is 1.069-1.131 (within noise: an edge), batch 8 [11.9, 12.1] is 1.178-1.222 (off:
    # the transition), batch 16 back at 10 ms is on, after the transition.
    ms = {
        16: _m(10.0, 9.9, 10.1),
        1: _m(10.0, 9.9, 10.1),
        2: _m(10.5, 10.4, 10.6),
        4: _m(11.0, 10.8, 11.2),
        8: _m(12.0, 11.9, 12.1),
    }
    assert plateau_with_noise(ms) == (
        [1, 2],
        [4],
        8,
        {16: "on", 1: "on", 2: "on", 4: "within noise", 8: "off"},
    )
    # batch 2 undecided: within noise, and batch 4 after it is edge too
    assert plateau_with_noise(ms, undecided={2}) == (
        [1],
        [2, 4],
        8,
        {16: "on", 1: "on", 2: "within noise", 4: "within noise", 8: "off"},
    )
    # a 25% line holds them all: no edge, no transition
    assert plateau_with_noise(ms, tolerance=0.25) == ([1, 2, 4, 8, 16], [], None, dict.fromkeys(ms, "on"))
    assert plateau_with_noise({}) == ([], [], None, {})


def test_plateau_with_noise_an_on_batch_after_the_edge_and_no_interval() -> None:
    from tracekit.analyzers.sweep import plateau_with_noise

    # batch 2 within noise, batch 4 on the line again: it stays in the edge (the plateau is the leading run)
    ms = {1: _m(10.0, 9.9, 10.1), 2: _m(11.0, 10.8, 11.2), 4: _m(10.0, 9.9, 10.1)}
    assert plateau_with_noise(ms) == ([1], [2, 4], None, {1: "on", 2: "within noise", 4: "on"})
    # no intervals: the point ratio (1.1 is on the line, 1.15 off)
    assert plateau_with_noise({1: _m(10.0), 2: _m(11.0), 4: _m(11.5)}) == (
        [1, 2],
        [],
        4,
        {1: "on", 2: "on", 4: "off"},
    )
    # a base of 0 ms gives no ratio: within noise
    assert plateau_with_noise({1: _m(0.0), 2: _m(11.0)}) == ([1], [2], None, {1: "on", 2: "within noise"})
