"""Per-iteration metrics on hand-built traces (exact answers) and generated ones (invariants)."""

from __future__ import annotations

import functools

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import make_trace
from tests.reference_metrics import reference_iterations
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.errors import NoActivityError
from tracekit.model import Trace


@functools.cache
def synced() -> Trace:
    """Two synchronized iterations. Built on first use, not at import: a frame built while the file is
    imported starts polars' thread pool in mutmut's fork server, and every mutant forked from it hangs."""
    return make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        api=[
            (100, 150, 1, "cudaLaunchKernel"),
            (200, 260, 2, "cudaLaunchKernel"),
            (300, 990, 3, "cudaDeviceSynchronize"),
            (1100, 1150, 4, "cudaLaunchKernel"),
            (1200, 1990, 5, "cudaDeviceSynchronize"),
        ],
        # stream 7 and 8 overlap: union [160, 500] then [600, 700]; iteration 2: [1180, 1900]
        ops=[(160, 400, 1, 7), (300, 500, 2, 8), (600, 700, 2, 8), (1180, 1900, 4, 7)],
    )


def test_synchronized_iterations_exact():
    a = analyze_iterations(synced())
    it = a.iterations
    assert a.range_name == "iteration"
    assert it["latency_ms"].to_list() == pytest.approx([1000 / 1e6, 1000 / 1e6])
    assert it["gpu_busy_ms"].to_list() == pytest.approx([440 / 1e6, 720 / 1e6])
    assert it["framework_overhead_ms"].to_list() == pytest.approx([560 / 1e6, 280 / 1e6])
    assert it["gpu_utilization"].to_list() == pytest.approx([0.44, 0.72])
    assert it["idle_gaps"].to_list() == [3, 2]  # 0-160, 500-600, 700-1000 ; 1000-1180, 1900-2000
    assert it["kernels"].to_list() == [3, 1]
    assert it["launches"].to_list() == [2, 1]
    assert it["launch_api_us"].to_list() == pytest.approx([0.11, 0.05])
    # per launch: first op start - call start: corr1 160-100=60, corr2 300-200=100 -> median 80 ns
    assert it["launch_latency_us"].to_list() == pytest.approx([0.08, 0.08])
    assert it["queue_us"].to_list() == pytest.approx([(10 + 40) / 2 / 1e3, 0.03])
    assert it["synchronized"].to_list() == [True, True]
    gaps = a.gaps.filter(pl.col("iteration") == 0)
    assert gaps["duration_ns"].to_list() == [160, 100, 300]
    assert gaps["position"].to_list() == ["leading", "inner", "trailing"]
    assert a.summary.bound == "compute"  # median utilization 0.58


def test_gap_context_names_the_sync_call():
    a = analyze_iterations(synced())
    trailing = a.gaps.filter((pl.col("iteration") == 0) & (pl.col("position") == "trailing"))
    assert trailing["cpu_context"].to_list() == ["cudaDeviceSynchronize (96%)"]  # 290 of the gap's 300 ns


def test_unsynchronized_graph_launch_uses_steady_state_period():
    # Like the study's CUDA-graph trace: the range closes right after cudaGraphLaunch; GPU work outlives it.
    t = make_trace(
        ranges=[(0, 100, "forward"), (1000, 1100, "forward"), (2000, 2100, "forward")],
        api=[
            (10, 60, 1, "cudaGraphLaunch"),
            (1010, 1060, 2, "cudaGraphLaunch"),
            (2010, 2060, 3, "cudaGraphLaunch"),
        ],
        ops=[
            (70, 500, 1, 7),
            (500, 1500, 1, 7),  # graph 1 runs until 1500, past range 2's start
            (1500, 1800, 2, 7),
            (2070, 2600, 3, 7),
        ],
    )
    a = analyze_iterations(t)
    it = a.iterations
    assert a.range_name == "forward" and "most frequent" in a.range_choice
    assert it["synchronized"].to_list() == [False, False, False]
    # windows: [0,1500], [max(1000,1500)=1500, max(1100,1800)=1800], [max(2000,1800)=2000, 2600]
    assert it["window_start_ns"].to_list() == [0, 1500, 2000]
    assert it["window_end_ns"].to_list() == [1500, 1800, 2600]
    assert it["latency_ms"].to_list() == pytest.approx([1500e-6, 300e-6, 600e-6])
    assert it["gpu_busy_ms"].to_list() == pytest.approx([1430e-6, 300e-6, 530e-6])
    assert it["kernels"].to_list() == [2, 1, 1]
    assert it["launches"].to_list() == [1, 1, 1]
    # graph launch latency: first kernel of the graph only: 70-10 = 60 ns
    assert it["launch_latency_us"][0] == pytest.approx(0.06)
    assert any("unsynchronized" in w for w in a.warnings)


def test_ops_without_correlation_fall_back_to_time_and_skip():
    t = make_trace(
        ranges=[(0, 100, "model_run"), (100, 200, "model_run"), (200, 300, "model_run")],
        ops=[
            (10, 30, None, 1, "operator"),
            (40, 90, None, 1, "operator"),
            (120, 150, None, 1, "operator"),
            (210, 290, None, 1, "operator"),
        ],
    )
    a = analyze_iterations(t, skip=1)
    assert a.device == "cpu"
    assert a.iterations["index"].to_list() == [1, 2]
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([30e-6, 80e-6])
    assert a.iterations["launches"].to_list() == [None, None]  # no API calls in a CPU trace
    assert a.summary.iterations == 2


def test_profiler_steps_are_collapsed_and_range_errors_list_names():
    t = make_trace(
        ranges=[(0, 100, "ProfilerStep#7"), (100, 200, "ProfilerStep#8"), (10, 20, "aten::mm", 1)],
        ops=[(10, 30, None, 1, "operator")],
    )
    a = analyze_iterations(t)
    assert a.range_name == "ProfilerStep#*" and a.iterations.height == 2
    with pytest.raises(NoActivityError) as err:
        analyze_iterations(t, range_name="iteration")
    assert "'ProfilerStep#*'" in str(err.value) and "hand-built" in str(err.value)
    with pytest.raises(NoActivityError):
        analyze_iterations(t, skip=2)


def test_no_ranges_is_one_window_nothing_is_an_error_and_no_ops_reports_latency_only():
    whole = analyze_iterations(make_trace(ranges=[], ops=[(0, 1, None, 1), (5, 9, None, 1)]))
    assert whole.iterations["latency_ms"].to_list() == pytest.approx([9e-6])
    assert whole.iterations["gpu_busy_ms"].to_list() == pytest.approx([5e-6])
    assert whole.range_choice.startswith("no ranges in the trace")
    with pytest.raises(NoActivityError):
        analyze_iterations(make_trace(ranges=[], ops=[]))
    a = analyze_iterations(make_trace(ranges=[(0, 100, "iteration")]))
    assert a.iterations["latency_ms"].to_list() == pytest.approx([100e-6])
    assert a.iterations["gpu_busy_ms"].to_list() == [None]
    assert a.summary.bound is None
    assert any("no GPU or operator activity" in w for w in a.warnings)


# ---------------------------------------------------------------- generated traces: invariants + reference


@st.composite
def random_traces(draw):
    n_iter = draw(st.integers(1, 6))
    ranges, api, ops = [], [], []
    t = 0
    corr = 0
    for _ in range(n_iter):
        length = draw(st.integers(50, 2000))
        start = t + draw(st.integers(0, 300))
        ranges.append((start, start + length, "iteration"))
        for _ in range(draw(st.integers(0, 6))):
            corr += 1
            cs = start + draw(st.integers(0, length - 1))
            api.append((cs, cs + draw(st.integers(1, 50)), corr, "cudaLaunchKernel"))
            ks = cs + draw(st.integers(0, 400))
            ops.append((ks, ks + draw(st.integers(1, 600)), corr, draw(st.integers(0, 2))))
        # uncorrelated ops (memcpy-like) by time
        for _ in range(draw(st.integers(0, 2))):
            ks = start + draw(st.integers(0, length - 1))
            ops.append((ks, ks + draw(st.integers(1, 300)), None, 9, "memcpy"))
        t = start + length
    return make_trace(ranges, api, ops)


@settings(max_examples=150, deadline=None)
@given(random_traces(), st.randoms())
def test_invariants_and_agreement_with_reference(trace, rnd):
    a = analyze_iterations(trace)
    it = a.iterations
    ref = reference_iterations(trace, "iteration")
    assert it.height == len(ref)
    if trace.ops.is_empty():  # latency only
        assert it["gpu_busy_ms"].is_null().all() and a.gaps.is_empty()
        assert it["latency_ms"].to_list() == pytest.approx([r.latency_ns / 1e6 for r in ref])
        return
    for row, r in zip(it.iter_rows(named=True), ref, strict=True):
        assert row["latency_ms"] == pytest.approx(r.latency_ns / 1e6)
        assert row["gpu_busy_ms"] == pytest.approx(r.busy_ns / 1e6)
        assert row["idle_gaps"] == len(r.gaps)
        assert row["kernels"] == r.kernels
        assert row["launches"] == (r.launches if not trace.api.is_empty() else None)
        assert row["synchronized"] == r.synchronized
        # invariants
        assert 0 <= row["gpu_busy_ms"] <= row["latency_ms"] + 1e-12
        assert row["gpu_busy_ms"] + row["idle_ms"] == pytest.approx(row["latency_ms"])
    assert (a.gaps["duration_ns"] > 0).all()
    per_iter_gap_ms = a.gaps.group_by("iteration").agg((pl.col("duration_ns").sum() / 1e6).alias("g"))
    joined = it.join(per_iter_gap_ms, left_on="index", right_on="iteration", how="left")
    for row in joined.iter_rows(named=True):
        assert (row["g"] or 0.0) == pytest.approx(row["idle_ms"], abs=1e-12)
    # Row order of the input does not matter.
    shuffled = Trace(
        ops=trace.ops.sample(fraction=1.0, shuffle=True, seed=rnd.randint(0, 10**6)),
        api=trace.api.sample(fraction=1.0, shuffle=True, seed=rnd.randint(0, 10**6)),
        ranges=trace.ranges.sample(fraction=1.0, shuffle=True, seed=rnd.randint(0, 10**6)),
        meta=dict(trace.meta),
    )
    b = analyze_iterations(shuffled)
    assert b.iterations.drop("launch_latency_us", "queue_us").equals(it.drop("launch_latency_us", "queue_us"))


def test_trace_mends_or_drops_rows_that_end_before_they_start_and_says_so() -> None:
    """A range ending before it starts is left out; a device op keeps its place with no end, a call lasts 0
    from its start (621e5e5: dropped, they had left an iteration a kernel short, its busy read as known)."""
    trace = make_trace(
        ranges=[(0, 100, "iteration"), (50, 40, "backwards"), (10, None, "never closed")],
        api=[(1, 2, 1, "cudaLaunchKernel"), (3, 2, 2, "cudaLaunchKernel")],
        ops=[(5, 9, 1, 7), (20, -5, 2, 7), (30, 30, 3, 7)],  # a zero-length op is an interval
    )
    assert sorted(trace.ranges.get_column("name").to_list()) == ["iteration", "never closed"]
    assert trace.api.select("start", "end", "correlation").rows() == [(1, 2, 1), (3, 3, 2)]
    assert trace.ops.select("start", "end", "correlation").rows() == [(5, 9, 1), (20, None, 2), (30, 30, 3)]
    assert [w.split(" with")[0] for w in trace.warnings] == ["1 device ops", "1 API calls", "1 ranges"]
    clean = make_trace(ranges=[(0, 100, "iteration")], ops=[(5, 9, 1, 7)])
    assert clean.warnings == [] and Trace(ops=clean.ops, ranges=clean.ranges).warnings == []


def _work_outside_the_ranges() -> Trace:
    """Two 'setup' ranges with host code only, then a launch and its kernel after them (hand-built)."""
    return make_trace(
        ranges=[(0, 1000, "setup"), (1000, 2000, "setup"), (3000, 5000, "forward")],
        api=[(3100, 3150, 1, "cudaLaunchKernel")],
        ops=[(3200, 4800, 1, 7)],
    )


def test_ranges_that_hold_none_of_the_work_get_no_verdict():
    # their 0% utilization says nothing about the device work, which ran outside them
    a = analyze_iterations(_work_outside_the_ranges(), range_name="setup")
    assert a.summary.bound is None
    assert a.no_verdict == (
        "no framework-/compute-bound verdict: none of the 2 analyzed 'setup' iterations holds a device or "
        "operator op (all 1 of the trace's ran outside them), so their 0% utilization describes those ranges, "
        "not the work; choose ranges that hold the work with --range, or cut the device timeline at idle gaps "
        "with --split-idle MS"
    )
    assert a.warnings[0] == a.no_verdict
    # said once: the shorter "no GPU or operator activity falls inside" line is not repeated
    assert not [w for w in a.warnings if "falls inside" in w]
    assert a.iterations["gpu_utilization"].to_list() == [0.0, 0.0]  # the measurement itself is kept


def test_ranges_that_hold_the_work_keep_their_verdict():
    a = analyze_iterations(_work_outside_the_ranges(), range_name="forward")
    assert a.no_verdict is None
    assert a.summary.bound == "compute"
    # one skipped iteration of two, the other empty: work in a skipped iteration is not in the analyzed ones
    skipped = analyze_iterations(
        make_trace(
            ranges=[(0, 1000, "it"), (1000, 2000, "it")],
            api=[(100, 150, 1, "cudaLaunchKernel")],
            ops=[(200, 900, 1, 7)],
        ),
        range_name="it",
        skip=1,
    )
    assert skipped.summary.bound is None and skipped.no_verdict is not None
    assert "none of the 1 analyzed 'it' iterations" in skipped.no_verdict
