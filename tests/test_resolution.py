"""Whole-microsecond clocks (older Kineto, ONNX Runtime): the gaps between ops within the rounding are named,
and a verdict they could flip is uncertain (tracekit.analyzers.resolution).

Hand-built traces (synthetic, exact answers), then the real traces that have such clocks (skipped when
../shared/real_traces is absent).
"""

from __future__ import annotations

import polars as pl
import pytest

from tests.builders import make_trace
from tracekit.analyzers import resolution as R
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.model import Trace

from .conftest import real_trace

US = 1000


def _ops(starts_ends: list[tuple[int, int]]) -> pl.DataFrame:
    return pl.DataFrame({"start": [s for s, _ in starts_ends], "end": [e for _, e in starts_ends]})


# ------------------------------------------------------------------------------------------ the clock


def test_twenty_ops_on_whole_microseconds_are_a_microsecond_clock() -> None:
    whole = [(k * 10 * US, k * 10 * US + 3 * US) for k in range(20)]
    assert R.time_unit_ns(_ops(whole)) == 1000
    assert R.time_unit_ns(_ops(whole[:19])) is None  # too few to tell
    assert R.time_unit_ns(_ops([*whole[:19], (500 * US + 1, 600 * US)])) is None  # one start off
    assert R.time_unit_ns(_ops([*whole[:19], (500 * US, 600 * US + 999)])) is None  # one end off
    # an op without an end neither counts nor spoils it
    ops = pl.concat(
        [
            _ops(whole),
            pl.DataFrame({"start": [7], "end": [None]}, schema={"start": pl.Int64, "end": pl.Int64}),
        ]
    )
    assert R.time_unit_ns(ops) == 1000


def test_small_gaps_are_the_inner_ones_of_at_most_two_units() -> None:
    gaps = pl.DataFrame(
        {
            "iteration": [0, 0, 0, 0, 1, 1],
            "position": ["leading", "inner", "inner", "trailing", "inner", "inner"],
            "duration_ns": [500, 2000, 2001, 100, 1000, 5000],
        }
    )
    per = R.small_gaps_per_iteration(gaps, 1000)
    assert per.rows() == [(0, 2, 1, 2000), (1, 2, 1, 1000)]


# ----------------------------------------------------------------------------------------- findings


def _frame(busy_ms: list[float], latency_ms: float = 1.0) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "index": list(range(len(busy_ms))),
            "latency_ms": [latency_ms] * len(busy_ms),
            "gpu_busy_ms": busy_ms,
            "gpu_utilization": [b / latency_ms if latency_ms else None for b in busy_ms],
            "idle_ms": [latency_ms - b for b in busy_ms],
        }
    )


def _small(rows: list[tuple[int, int, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["iteration", "inner", "small", "small_ns"], orient="row")


def test_the_note_counts_the_gaps_and_their_share_of_the_idle_time() -> None:
    notes, doubts = R.rounding_findings(
        _frame([0.8, 0.8]), _small([(0, 10, 5, 10_000), (1, 10, 5, 10_000)]), 1000, 0.5
    )
    assert notes == [
        "the ops' timestamps are whole microseconds: 10 of the 20 gaps between ops are at most 2 µs (0.020 ms in "
        "all, 5% of the idle time), within the rounding of their ends; each may really have been anything from 0 "
        "to 3 µs"
    ]
    assert doubts == []


def test_under_five_percent_of_the_idle_time_there_is_no_note() -> None:
    notes, doubts = R.rounding_findings(
        _frame([0.8, 0.8]), _small([(0, 10, 5, 9_999), (1, 10, 5, 10_000)]), 1000, 0.5
    )
    assert notes == [] and doubts == []


@pytest.mark.parametrize(
    ("busy_ms", "small_ns", "uncertain"),
    [
        (0.45, 50_000, True),  # 45% as recorded, 50% with the gaps busy: across the threshold
        (0.45, 49_999, False),  # 49.9999%: still under it
        (0.50, 100_000, False),  # already compute-bound
        (0.30, 100_000, False),  # 40%: framework-bound either way
    ],
)
def test_a_verdict_the_rounding_could_flip_is_uncertain(
    busy_ms: float, small_ns: int, uncertain: bool
) -> None:
    frame = _frame([busy_ms] * 3)
    small = _small([(i, 100, 50, small_ns) for i in range(3)])
    notes, doubts = R.rounding_findings(frame, small, 1000, 0.5)
    assert len(notes) == 1
    if not uncertain:
        assert doubts == []
        return
    assert doubts == [
        "verdict uncertain: the median utilization is 45.0% as recorded but 50.0% with the gaps of at most 2 µs "
        "between ops counted busy, across the 50% threshold; the trace's whole-microsecond clock cannot tell "
        "those gaps from rounding"
    ]


def test_iterations_without_small_gaps_and_skipped_ones() -> None:
    # iteration 0 was skipped (not in the frame): its gaps do not count; iteration 2 has none
    frame = _frame([0.8, 0.8]).with_columns(pl.Series("index", [1, 2]))
    notes, _ = R.rounding_findings(frame, _small([(0, 50, 50, 900_000), (1, 10, 5, 20_000)]), 1000, 0.5)
    assert notes and notes[0].startswith(
        "the ops' timestamps are whole microseconds: 5 of the 10 gaps between ops are at most 2 µs (0.020 ms in all, 5%"
    )
    assert R.rounding_findings(frame, _small([(0, 50, 50, 900_000)]), 1000, 0.5) == ([], [])


def test_exactly_five_percent_of_the_idle_time_gets_the_note() -> None:
    notes, _ = R.rounding_findings(
        _frame([0.5, 0.5]), _small([(0, 10, 5, 25_000), (1, 10, 5, 25_000)]), 1000, 0.5
    )
    assert len(notes) == 1 and "(0.050 ms in all, 5% of the idle time)" in notes[0]


def test_iterations_without_small_gaps_count_as_recorded() -> None:
    # iteration 0's gaps lift it over the threshold, the other two stay 1 ns under it: the median stays under
    frame = _frame([0.45, 0.499999, 0.499999])
    notes, doubts = R.rounding_findings(frame, _small([(0, 100, 50, 400_000)]), 1000, 0.5)
    assert len(notes) == 1 and doubts == []


def test_an_iteration_of_no_length_has_no_utilization() -> None:
    frame = pl.concat(
        [_frame([0.45]), _frame([0.0], latency_ms=0.0).with_columns(pl.lit(1, pl.Int64).alias("index"))]
    )
    _, doubts = R.rounding_findings(frame, _small([(0, 100, 50, 50_000)]), 1000, 0.5)
    assert doubts and doubts[0].startswith(
        "verdict uncertain: the median utilization is 45.0% as recorded but 50.0%"
    )


# -------------------------------------------------------------------------------------- end to end


def _back_to_back(offset: int) -> Trace:
    """Two 100 µs iterations of 20 kernels of 2 µs, 1 µs apart, launched at the iteration's start: busy
    40 µs (40%), the 19 inner gaps 19 µs. ``offset`` ns added to every op time (1: a nanosecond clock)."""
    ranges, api, ops = [], [], []
    for it in range(2):
        t = it * 100 * US
        ranges.append((t, t + 100 * US, "iteration"))
        for k in range(20):
            corr = it * 100 + k + 1
            api.append((t + k * 100, t + k * 100 + 50, corr, "cudaLaunchKernel"))
            start = t + 10 * US + k * 3 * US + offset
            ops.append((start, start + 2 * US, corr, 7))
        api.append((t + 90 * US, t + 99 * US, None, "cudaDeviceSynchronize"))
    return make_trace(ranges=ranges, api=api, ops=ops)


def test_a_microsecond_trace_near_the_threshold_is_uncertain() -> None:
    a = analyze_iterations(_back_to_back(0))
    assert a.summary.fields["gpu_utilization"].p50 == pytest.approx(0.40)
    assert a.summary.bound == "framework"
    assert a.summary.verdict_uncertain == (
        "verdict uncertain: the median utilization is 40.0% as recorded but 59.0% with the gaps of at most 2 µs "
        "between ops counted busy, across the 50% threshold; the trace's whole-microsecond clock cannot tell "
        "those gaps from rounding"
    )
    assert any(n.startswith("the ops' timestamps are whole microseconds: 38 of the 38 gaps") for n in a.notes)
    assert a.summary.verdict_uncertain in a.warnings


def test_the_same_trace_on_a_nanosecond_clock_says_nothing() -> None:
    a = analyze_iterations(_back_to_back(1))
    assert a.summary.verdict_uncertain is None
    assert not any("whole microseconds" in n for n in a.notes)


# --------------------------------------------------------------------------------------------- real


def test_the_tensorboard_plugin_trace_has_a_microsecond_clock() -> None:
    from tracekit.api import analyze

    a = analyze(real_trace("kineto/kineto_tbplugin_v100_resnet50_worker0.pt.trace.json.gz"))
    # 7,340 of 8,280 gaps within the rounding, but 2% of the idle time: no note, and the verdict stands
    assert R.time_unit_ns(a.trace_data.ops) == 1000
    assert not any("whole microseconds" in n for n in a.notes)
    assert a.summary.verdict_uncertain is None


def test_the_study_s_pytorch_trace_gets_the_note() -> None:
    from tracekit.api import analyze

    path = (
        "paper/kineto/gpu_util_log_pytorch-batch16-torch.float16_HERRON_3494129.1666196964215.pt.trace.json"
    )
    a = analyze(real_trace(path))
    assert [n for n in a.notes if "whole microseconds" in n] == [
        "the ops' timestamps are whole microseconds: 283 of the 384 gaps between ops are at most 2 µs (0.380 ms in "
        "all, 9% of the idle time), within the rounding of their ends; each may really have been anything from 0 "
        "to 3 µs"
    ]


def test_a_trace_without_a_timeline_gets_no_rounding_note() -> None:
    # an Nsight Compute report alone lays its kernels out end to end: no measured gaps to speak of
    trace = _back_to_back(0)
    trace.meta["timeline"] = False
    a = analyze_iterations(trace)
    assert not any("whole microseconds" in n for n in a.notes)
    assert a.summary.verdict_uncertain is None
