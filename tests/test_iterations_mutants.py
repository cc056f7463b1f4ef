"""Per-iteration metrics (tracekit.analyzers.iterations): the cases the sampled mutation run of issue 33
(2026-11-26, ``python benchmarks/mutation.py iterations --sample 100``) found unchecked, one test per behaviour.

Every trace here is hand-built (synthetic, not a measurement); each test asserts the exact number, column, line
or warning a user sees.
"""

from __future__ import annotations

import warnings

import polars as pl
import pytest

from tests.builders import make_trace, two_gpu_launches
from tracekit.analyzers import iterations
from tracekit.analyzers.devices import per_device_rows
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.model import Trace

#: the columns of IterationAnalysis.gaps (docs/design.md section 4, "Gaps")
GAP_COLUMNS = ["iteration", "start_ns", "end_ns", "position", "duration_ns", "cpu_context"]


def _one_launch_then_a_sync() -> Trace:
    """Two ranges [0, 1000) and [1000, 2000): the first launches one kernel (call [100, 150), kernel
    [200, 300)); the second only synchronizes (a call without a correlation id, no launch)."""
    return make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        api=[(100, 150, 1, "cudaLaunchKernel"), (1100, 1150, None, "cudaDeviceSynchronize")],
        ops=[(200, 300, 1, 7)],
    )


# ------------------------------------------------------------------------------------------- launches


def test_an_iteration_without_launches_has_zero_launch_time_not_null() -> None:
    # A trace with API calls: an iteration that launched nothing spent 0 us in launch calls (a measured 0),
    # while its launch latency and queue time, medians over no launches, are null.
    it = analyze_iterations(_one_launch_then_a_sync()).iterations
    assert it["launches"].to_list() == [1, 0]
    assert it["launch_api_us"].to_list() == [pytest.approx(0.05), 0.0]
    assert it["launch_latency_us"].to_list() == [pytest.approx(0.1), None]
    assert it["queue_us"].to_list() == [pytest.approx(0.05), None]


# ----------------------------------------------------------------------------------------------- gaps


def test_an_op_without_an_end_time_is_not_busy_to_the_window_end() -> None:
    # Op 1's end was not recorded (null: a hand-built Trace may hold one; no reader leaves one). It has no
    # interval: it counts as a kernel, not as busy time, and a warning says so. It used to be clipped to the
    # window's end, i.e. counted busy from 100 to 1000 ns (utilization 0.9 instead of 0.1).
    trace = make_trace(
        ranges=[(0, 1000, "iteration")],
        api=[(10, 20, 1, "cudaLaunchKernel"), (30, 40, 2, "cudaLaunchKernel")],
        ops=[(100, None, 1, 7), (300, 400, 2, 7)],
    )
    a = analyze_iterations(trace)
    it = a.iterations
    assert it["kernels"].to_list() == [2]
    assert it["gpu_busy_ms"].to_list() == pytest.approx([100e-6])
    assert it["gpu_utilization"].to_list() == pytest.approx([0.1])
    assert a.gaps.select("start_ns", "end_ns", "position").rows() == [
        (0, 300, "leading"),
        (400, 1000, "trailing"),
    ]
    assert a.warnings == [
        "1 device ops in the iterations have no end time (not recorded): they count as kernels but not in GPU "
        "busy time, which is short by however long they ran",
        "verdict uncertain: 1 of 2 device ops in the iterations (50%) have no start or end time: the GPU busy "
        "time and the utilization are short by however long they ran",
    ]


def test_untimed_ops_make_the_verdict_uncertain_from_a_tenth_of_the_ops() -> None:
    # 2 ops of 10 without an end: uncertain; 2 of 20: uncertain; 2 of 21: a warning only. Iteration 1 holds a
    # timed op beside its untimed one (an iteration none of whose ops was timed is withheld, not doubted:
    # test_lead18), and it is not counted among the iterations that hold none.
    def trace(ops: int) -> Trace:
        return make_trace(
            ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
            api=[(10 + i, 11 + i, i, "cudaLaunchKernel") for i in range(ops)]
            + [(1010, 1011, 99, "cudaLaunchKernel"), (1020, 1021, 98, "cudaLaunchKernel")],
            ops=[(100, None, 0, 7)]
            + [(200 + 10 * i, 205 + 10 * i, i, 7) for i in range(1, ops)]
            + [(1100, None, 99, 7), (1200, 1205, 98, 7)],
        )

    assert [w for w in analyze_iterations(trace(8)).warnings if w.startswith("verdict")] == [
        "verdict uncertain: 2 of 10 device ops in the iterations (20%) have no start or end time: the GPU busy "
        "time and the utilization are short by however long they ran"
    ]
    assert [w for w in analyze_iterations(trace(18)).warnings if w.startswith("verdict")] == [
        "verdict uncertain: 2 of 20 device ops in the iterations (10%) have no start or end time: the GPU busy "
        "time and the utilization are short by however long they ran"
    ]
    quiet = analyze_iterations(trace(19))
    assert [w for w in quiet.warnings if w.startswith("verdict")] == []
    assert not any("hold no device op" in w for w in quiet.warnings)
    assert quiet.iterations["kernels"].to_list() == [19, 2]


def test_an_analysis_without_idle_gaps_still_has_the_gap_columns() -> None:
    # One iteration whose kernel fills its whole range: no gap, but the gaps frame (the API's gaps, the
    # --gaps file) keeps its documented columns, cpu_context included.
    a = analyze_iterations(
        make_trace(ranges=[(0, 100, "iteration")], api=[(0, 0, 1, "cudaLaunchKernel")], ops=[(0, 100, 1, 7)])
    )
    assert a.iterations["gpu_utilization"].to_list() == [1.0]
    assert a.gaps.is_empty() and a.gaps.columns == GAP_COLUMNS


def test_the_analysis_emits_no_python_warnings() -> None:
    # A user sees a Python warning on stderr: an ordinary trace (three gaps of each position but empty, an
    # op without correlation id) is analyzed without any (e.g. numpy's "invalid value encountered in cast"
    # from a null gap position).
    trace = make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        api=[(10, 20, 1, "cudaLaunchKernel")],
        ops=[(100, 200, 1, 7), (300, 400, None, 9, "memcpy")],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = analyze_iterations(trace)
    assert a.gaps.select("iteration", "start_ns", "end_ns", "position").rows() == [
        (0, 0, 100, "leading"),
        (0, 200, 300, "inner"),
        (0, 400, 1000, "trailing"),
        (1, 1000, 2000, "empty"),
    ]


def test_longest_gaps_without_attribution_have_null_causes() -> None:
    # attribute=False: the longest gaps carry the same columns as with the attribution, cause and host_state
    # null (nothing attributed), longest first.
    a = analyze_iterations(_one_launch_then_a_sync(), attribute=False)
    longest = a.longest_gaps()
    assert longest.columns == [*GAP_COLUMNS, "cause", "host_state", "offset_ms", "duration_us"]
    assert longest["duration_us"].to_list() == pytest.approx([1.0, 0.7, 0.2])
    assert longest["cause"].null_count() == longest["host_state"].null_count() == 3


def test_traces_above_the_overlap_limit_get_the_same_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    # Above OVERLAP_MAX_OPS ops (4 Mi: the largest traces) the gaps and the attribution's setup are built one
    # after the other instead of on two threads: the same numbers either way (the limit lowered to 0 here,
    # rather than building a trace of 4 million ops).
    trace = _one_launch_then_a_sync()
    overlapped = analyze_iterations(trace)
    monkeypatch.setattr(iterations, "OVERLAP_MAX_OPS", 0)
    one_by_one = analyze_iterations(trace)
    assert one_by_one.iterations.equals(overlapped.iterations)
    assert one_by_one.gaps.equals(overlapped.gaps)
    assert one_by_one.iterations["gpu_busy_ms"].to_list() == pytest.approx([100e-6, 0.0])
    assert one_by_one.iterations["dispatch_ms"].to_list() == pytest.approx([800e-6, 950e-6])


# ------------------------------------------------------------------------------------------- warnings


def test_the_warning_for_ops_without_correlation_id_is_said_in_full() -> None:
    trace = make_trace(
        ranges=[(0, 1000, "iteration")],
        api=[(10, 20, 1, "cudaLaunchKernel")],
        ops=[(100, 200, 1, 7), (300, 400, None, 9, "memcpy")],
    )
    assert analyze_iterations(trace).warnings == [
        "1 device ops in the iterations carry no correlation id (nothing links them to a launching call): they "
        "are assigned by their start, and the gaps they end are split by the iteration's main thread's state, "
        "with no device-side part"
    ]


def test_the_gpu_annotation_warning_is_said_in_full() -> None:
    # Kineto's GPU-side copy of the step spans [150, 400): op 2 (launched in the step) ran outside it, op 3
    # (launched before the capture) inside it.
    trace = make_trace(
        ranges=[(0, 1000, "ProfilerStep#3"), (150, 400, "ProfilerStep#3", 0, "gpu")],
        api=[(10, 20, 1, "cudaLaunchKernel"), (30, 40, 2, "cudaLaunchKernel")],
        ops=[(150, 300, 1, 7), (500, 600, 2, 7), (310, 390, 3, 8)],
    )
    assert analyze_iterations(trace).warnings[-1] == (
        "Kineto's GPU-side annotations ('ProfilerStep#*', 1 of them) disagree with the assignment by launch: "
        "1 ops launched in an iteration ran outside its GPU-side annotation; 1 ops (0.000 ms busy) inside an "
        "iteration's GPU-side annotation were launched outside that iteration (counted where their launch is)"
    )


# ----------------------------------------------------------------------------------------- per device


def test_per_device_rows_cut_each_device_by_split_idle() -> None:
    # Two GPUs (one process each), no ranges: each runs two kernels of 100 us, 3 ms apart, each launched
    # 5 us before it starts. With --split-idle 1 ms each device has two windows of 105 us (first launch to
    # last end); without, one window of 3.105 ms.
    trace = two_gpu_launches([10_000, 3_010_000])
    rows = per_device_rows(trace, split_idle_ms=1.0)
    assert [(r["device"], r["iterations"]) for r in rows] == [(0, 2), (1, 2)]
    assert [r["latency_ms"] for r in rows] == pytest.approx([0.105, 0.105])
    assert [r["gpu_busy_ms"] for r in rows] == pytest.approx([0.100, 0.100])
    whole = per_device_rows(trace)
    assert [(r["iterations"], r["latency_ms"]) for r in whole] == [(1, pytest.approx(3.105))] * 2


# -------------------------------------------- second sample (seed 34, 2026-11-26): the survivors it found


def test_assign_ops_returns_the_documented_columns() -> None:
    # assign_ops (Analysis.ops, the kernel table's per-iteration ops) returns the op's row number, the ops
    # columns, the launching call's start and end, and the iteration last: not the internal row number of
    # the call in the matched calls frame.
    trace = make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        api=[(10, 20, 1, "cudaLaunchKernel"), (1010, 1020, 2, "cudaLaunchKernel")],
        ops=[(100, 200, 1, 7), (1100, 1300, 2, 7)],
    )
    frame, _, _ = iterations.choose_ranges(trace, None)
    ops = iterations.assign_ops(trace, frame)
    assert ops.columns == ["op", *trace.ops.columns, "call_start", "call_end", "iteration"]
    assert ops.select("op", "start", "call_start", "call_end", "iteration").rows() == [
        (0, 100, 10, 20, 0),
        (1, 1100, 1010, 1020, 1),
    ]


def test_an_op_whose_correlation_id_does_not_fit_the_pair_key_matches_no_other_call() -> None:
    # Op 2 (pid 0, correlation 2**32 + 5: beyond the (pid, correlation) key's range) was launched by no call
    # of the trace. Packed into one Int64 it would read as (pid 1, correlation 5), the launch of op 1: the
    # matching then pairs ops and calls by the two columns instead, and op 2 counts as launched before the
    # capture, not as a second kernel of the iteration.
    trace = make_trace(
        ranges=[(0, 1000, "iteration")],
        api=[(10, 20, 5, "cudaLaunchKernel", 1, 1)],
        ops=[(100, 200, 5, 7, "kernel", 0, 1), (300, 400, 2**32 + 5, 7, "kernel", 0, 0)],
        api_fields=("start", "end", "correlation", "name", "pid", "thread"),
        op_fields=("start", "end", "correlation", "stream", "kind", "device", "pid"),
    )
    a = analyze_iterations(trace)
    assert a.iterations["kernels"].to_list() == [1]
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([100e-6])
    assert a.unassigned is not None and a.unassigned["launch_not_in_trace"]["ops"] == 1


def test_a_trace_without_device_activity_keeps_the_idle_gaps_column_type() -> None:
    # Ranges only (no ops): the per-iteration frame keeps its documented types, idle_gaps an Int64 column of
    # nulls (not polars' Null type, which a concat or a cast-free comparison with another run's frame trips on).
    a = analyze_iterations(make_trace(ranges=[(0, 1000, "iteration"), (1000, 3000, "iteration")]))
    it = a.iterations
    assert it["latency_ms"].to_list() == pytest.approx([1e-3, 2e-3])
    assert it.schema["idle_gaps"] == pl.Int64 and it["idle_gaps"].null_count() == 2
    assert it.schema["gpu_busy_ms"] == pl.Float64 and it["gpu_busy_ms"].null_count() == 2


# ------------------------------------------------------------- ops that start before their launching event


@pytest.mark.parametrize(
    ("lead_ns", "kind"),
    [(20_000, "note"), (20_001, "doubt")],  # 1% of the 2 ms median iteration is 20,000 ns
)
def test_ops_before_their_parent_event_are_a_note_then_a_doubt(lead_ns: int, kind: str) -> None:
    from tracekit.analyzers.iterations import parent_clock_findings

    frame = pl.DataFrame({"latency_ms": [0.5, 2.0, 3.0]})
    notes, doubts = parent_clock_findings([2, 40, lead_ns], frame)
    what = (
        f"2 of 40 kernels started before the node that launched them began, by up to {lead_ns / 1e6:.3f} ms"
    )
    if kind == "note":
        assert notes == [f"{what}: the GPU and CPU times disagree (by at most 1% of the median iteration)"]
        assert doubts == []
        return
    assert notes == []
    assert doubts == [
        f"verdict uncertain: {what} (1% of the median iteration): the profile's GPU and CPU times are on "
        "different clocks, so the GPU busy time inside the iterations, the idle gaps and the framework overhead "
        "compare times of two clocks"
    ]


def test_no_counts_or_no_latency_says_nothing() -> None:
    from tracekit.analyzers.iterations import parent_clock_findings

    assert parent_clock_findings(None, pl.DataFrame({"latency_ms": [1.0]})) == ([], [])
    assert parent_clock_findings([], pl.DataFrame({"latency_ms": [1.0]})) == ([], [])
    assert parent_clock_findings([1, 2, 5_000_000], pl.DataFrame({"index": [0]})) == ([], [])
    # no iteration with a latency: nothing to weigh the lead against, so a note
    notes, doubts = parent_clock_findings(
        [1, 2, 5_000_000], pl.DataFrame({"latency_ms": [None]}, schema={"latency_ms": pl.Float64})
    )
    assert doubts == [] and len(notes) == 1 and "by up to 5.000 ms" in notes[0]


def test_an_iteration_of_copies_alone_is_not_one_without_device_ops() -> None:
    # The second iteration holds a copy and no kernel: busy, not "no device op"; the third holds nothing.
    trace = make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration"), (2000, 3000, "iteration")],
        api=[(10, 20, 1, "cudaLaunchKernel"), (1010, 1020, 2, "cudaMemcpyAsync")],
        ops=[(100, 200, 1, 7), (1100, 1300, 2, 7, "memcpy")],
    )
    a = analyze_iterations(trace)
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([100e-6, 200e-6, 0.0])
    assert [w for w in a.warnings if "hold no device op" in w] == [
        "1 of 3 iterations hold no device op: each is one idle gap of position 'empty' (its whole window), "
        "utilization 0"
    ]


@pytest.mark.parametrize(
    ("meta", "skipped", "said"),
    [
        ({"warmup_in_trace": True, "warmup_iterations": 1, "iterations": 2}, 1, None),
        ({"warmup_in_trace": False, "warmup_iterations": 1, "iterations": 2}, 0, None),
        (
            {"warmup_in_trace": "false", "warmup_iterations": 1, "iterations": 2},
            0,
            "the sidecar's warmup_in_trace is 'false', not true or false",
        ),
        (
            {"warmup_in_trace": True, "warmup_iterations": "ten", "iterations": 2},
            0,
            "the sidecar's warmup_iterations is 'ten', not a count",
        ),
        (
            {"warmup_in_trace": True, "warmup_iterations": 1, "iterations": -1},
            0,
            "the sidecar's iterations is -1, not a count",
        ),
        (
            {"warmup_in_trace": True, "warmup_iterations": 2, "iterations": 2},
            0,
            "the sidecar says the trace holds 2 warm-up and 2 timed runs, but it holds 3 iterations",
        ),
    ],
)
def test_a_sidecars_warm_up_is_dropped_only_when_it_adds_up(
    meta: dict, skipped: int, said: str | None
) -> None:
    # Bad values used to be passed over in silence: the warm-up kept, no word.
    trace = make_trace(
        ranges=[(i * 1000, i * 1000 + 900, "iteration") for i in range(3)],
        api=[(i * 1000 + 10, i * 1000 + 20, i, "cudaLaunchKernel") for i in range(3)],
        ops=[(i * 1000 + 100, i * 1000 + 200, i, 7) for i in range(3)],
        meta={"path": "hand-built", **meta},
    )
    a = analyze_iterations(trace, skip=None)
    assert a.skipped == skipped and a.iterations.height == 3 - skipped
    problems = [w for w in a.warnings if "no warm-up dropped" in w]
    assert problems == (
        [] if said is None else [f"{said}: no warm-up dropped (--skip N drops the first N iterations)"]
    )
