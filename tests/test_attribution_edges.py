"""Idle-time attribution (analyzers/attribution.py), the edges its other tests leave open (issue 33's mutation
testing: each test here kills mutants that passed every other test). Hand-built synthetic traces and frames
with answers worked out by hand: what a user sees -- the cause totals, the per-gap causes, the host states,
the CUDA-graph projection and its parameters, the reported summary and its JSON."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import make_trace
from tracekit.analyzers.attribution import (
    CAUSE,
    CAUSE_DEFINITIONS,
    CAUSE_MS,
    CAUSE_NS,
    CAUSES,
    DEVICE_CAUSE_DEFINITIONS,
    DEVICE_CAUSES,
    DEVICE_NS,
    GAP_CAUSE,
    GRAPH_ASSUMPTIONS,
    GRAPH_DEFAULTS_SOURCE,
    GRAPH_HEAD_NS,
    GRAPH_KERNEL_GAP_NS,
    GRAPH_TAIL_NS,
    HOST_STATE,
    OUTSIDE_OPERATORS,
    THREAD_RULE,
    Attribution,
    CauseShare,
    DeviceTimeline,
    IdleSummary,
    Projection,
    _api_time,
    _Prepared,
    _search,
    attribute_gaps,
    attribute_idle,
    attribute_trace,
    cpu_operator_intervals,
    host_states,
    idle_pieces,
    idle_summary,
    iteration_ranges,
    main_threads,
    project_cuda_graphs,
    projection,
    replay_parameters,
    search_sorted,
    stream_waited,
    summarize_attribution,
    thread_intervals,
    top_dispatch_operators,
)
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.model import API_SCHEMA, conform

#: the module's stand-in for a null time (int64 minimum)
NULL = np.iinfo(np.int64).min

# ----------------------------------------------------------------------------------- host states


def test_host_states_per_thread_with_pid_thread_and_integer_codes() -> None:
    # Thread 1 (pid 1): a launch [0, 10) and a sync [20, 40); thread 2 (pid 5): a malloc [5, 15).
    trace = make_trace(
        api=[
            (0, 10, 1, "cudaLaunchKernel", 1, 1),
            (20, 40, None, "cudaStreamSynchronize", 1, 1),
            (5, 15, None, "cudaMalloc", 5, 2),
        ],
        api_fields=("start", "end", "correlation", "name", "pid", "thread"),
    )
    states = host_states(trace.api)
    assert states.columns == ["pid", "thread", "start", "end", "cause"]
    assert states.rows() == [(1, 1, 0, 10, 1), (1, 1, 20, 40, 2), (5, 2, 5, 15, 3)]
    assert all(dtype == pl.Int64 for dtype in states.dtypes)


def test_host_states_of_no_calls_is_an_empty_frame_with_the_columns() -> None:
    states = host_states(conform(None, API_SCHEMA))
    assert states.height == 0
    assert states.schema == pl.Schema(
        {"pid": pl.Int64, "thread": pl.Int64, "start": pl.Int64, "end": pl.Int64, "cause": pl.Int64}
    )


# ----------------------------------------------------------------------------------- ranges and entry points


def _two_range_names():  # noqa: ANN202
    """Three ``fwd`` ranges on thread 2 (the format's declared default: the default choice) between two
    ``step`` ranges on thread 1; one kernel per step: step [0, 1000) launches [100, 150) -> kernel [300,
    400), then thread 1 synchronizes [500, 900); step [2000, 3000) launches [2100, 2150) -> kernel [2500,
    2600)."""
    return make_trace(
        ranges=[
            (0, 1000, "step", 1),
            (2000, 3000, "step", 1),
            (1100, 1200, "fwd", 2),
            (1300, 1400, "fwd", 2),
            (1500, 1600, "fwd", 2),
        ],
        api=[
            (100, 150, 1, "cudaLaunchKernel"),
            (500, 900, None, "cudaDeviceSynchronize"),
            (2100, 2150, 2, "cudaLaunchKernel"),
        ],
        ops=[(300, 400, 1, 7), (2500, 2600, 2, 7)],
        range_fields=("start", "end", "name", "thread"),
        meta={"path": "hand-built", "default_range": "fwd"},
    )


def test_iteration_ranges_uses_the_range_name_given() -> None:
    ranges = iteration_ranges(_two_range_names(), "step")
    assert ranges.select("iteration", "range_start", "range_end").rows() == [(0, 0, 1000), (1, 2000, 3000)]
    assert iteration_ranges(_two_range_names())["range_start"].to_list() == [1100, 1300, 1500]


def test_attribute_trace_without_the_analysis_ranges_chooses_them_by_its_range_name() -> None:
    trace = _two_range_names()
    analysis = analyze_iterations(trace, "step")
    # an analysis that does not carry its ranges (they are optional): attribute_trace chooses them again
    bare = dataclasses.replace(analysis, ranges=None)
    result = attribute_trace(trace, bare)
    # step 0: [0, 100) dispatch, [100, 150) launch, [150, 300) in flight; its trailing gap [400, 1000) is
    # the main thread's (thread 1, the step's): [500, 900) sync, the rest dispatch
    assert result.iterations.select(
        "index", "dispatch_ns", "launch_ns", "sync_ns", "in_flight_ns"
    ).rows() == [
        (0, 100 + 200, 50, 400, 150),
        (1, 100 + 400, 50, 0, 350),
    ]
    assert result.iterations.equals(analysis.attribution.iterations)


def test_attribute_trace_reports_only_the_analyzed_iterations() -> None:
    # the first step skipped (warm-up): the attribution reports step 1 only, not a row of zeros for step 0
    trace = _two_range_names()
    analysis = analyze_iterations(trace, "step", skip=1)
    result = attribute_trace(trace, analysis)
    assert result.iterations.select("index", "idle_ns", "dispatch_ns").rows() == [
        (1, 900, 500)
    ]  # [2000, 2100) and [2600, 3000)
    assert result.summary["dispatch_ms"].mean == pytest.approx(500e-6)


def test_attribute_trace_of_split_idle_windows_uses_the_analysis_windows() -> None:
    # --split-idle windows are not ranges of the trace: choosing ranges again would attribute other windows
    trace = _two_range_names()
    analysis = analyze_iterations(trace, split_idle_ms=0.0005)
    result = attribute_trace(trace, analysis)
    assert result.iterations.equals(analysis.attribution.iterations)


# ----------------------------------------------------------------------------------- projection parameters


def _parts(rows: list[tuple[int, int, int, int, int, int]]) -> Attribution:
    """An Attribution holding only projection parts: (index, leading, trailing, inner_gaps, inner_ns,
    inner_floor_ns) per iteration."""
    parts = pl.DataFrame(
        rows,
        schema=["index", "leading_ns", "trailing_ns", "inner_gaps", "inner_ns", "inner_floor_ns"],
        orient="row",
    )
    iterations = pl.DataFrame(
        {"index": parts["index"], "idle_ns": parts["leading_ns"] + parts["trailing_ns"] + parts["inner_ns"]}
    )
    return Attribution(None, iterations, {}, projection_parts=parts)


def test_replay_parameters_skip_iterations_without_inner_gaps() -> None:
    # iteration 0 has no inner gap (one kernel): it says nothing about the kernel-to-kernel gap; iteration 1
    # has one gap of 300 ns, iteration 2 two gaps of 1000 ns together (mean 500): median of [300, 500] = 400
    params = replay_parameters(
        _parts([(0, 10, 20, 0, 0, 0), (1, 30, 40, 1, 300, 777), (2, 50, 60, 2, 1000, 1554)])
    )
    assert params == {"kernel_gap_ns": 400, "graph_head_ns": 30, "graph_tail_ns": 40}


# ----------------------------------------------------------------------------------- the CUDA-graph projection


def _projection_inputs(kernel_gap_ns: int = GRAPH_KERNEL_GAP_NS) -> tuple[pl.DataFrame, Attribution]:
    """Five iterations (ns), the projection's inputs worked out by hand:

    - 0: latency 10,000, idle 6,000 (leading 2,000, trailing 300, two inner gaps of 3,700 whose kept floor
      is 1,554): busy 4,000;
    - 1: latency 5,000, all idle (no ops): kept as it is;
    - 2: latency 3,000, not in the attribution (no gaps): all busy;
    - 3: latency 8,000, idle 3,300 (leading 400, trailing 900, one inner gap of 2,000, floor 777): busy
      4,700;
    - 4: latency 0 (an empty window)."""
    iterations = pl.DataFrame(
        {
            "index": [0, 1, 2, 3, 4],
            "window_start_ns": [0, 20_000, 30_000, 40_000, 50_000],
            "window_end_ns": [10_000, 25_000, 33_000, 48_000, 50_000],
        }
    )
    parts = pl.DataFrame(
        [(0, 2000, 300, 2, 3700, 1554), (1, 0, 0, 0, 0, 0), (3, 400, 900, 1, 2000, 777), (4, 0, 0, 0, 0, 0)],
        schema=["index", "leading_ns", "trailing_ns", "inner_gaps", "inner_ns", "inner_floor_ns"],
        orient="row",
    )
    idle = pl.DataFrame({"index": [0, 1, 3, 4], "idle_ns": [6000, 5000, 3300, 0]})
    return iterations, Attribution(None, idle, {}, projection_parts=parts, kernel_gap_ns=kernel_gap_ns)


def test_project_cuda_graphs_by_hand() -> None:
    iterations, attribution = _projection_inputs()
    frame, info = project_cuda_graphs(iterations, attribution, graph_head_ns=1000, graph_tail_ns=500)
    # 0: min(2000, 1000) + 4000 + 1554 + min(300, 500) = 6854; 1: no busy time: 5000 kept; 2: 3000 (all
    # busy, no gaps); 3: min(400, 1000) + 4700 + 777 + min(900, 500) = 6377; 4: 0, no speedup
    projected = [6854, 5000, 3000, 6377, 0]
    latency = [10_000, 5000, 3000, 8000, 0]
    assert frame.columns == ["index", "latency_ms", "projected_ms", "saved_ms", "speedup"]
    assert frame["index"].to_list() == [0, 1, 2, 3, 4]
    assert frame["latency_ms"].to_list() == pytest.approx([v / 1e6 for v in latency])
    assert frame["projected_ms"].to_list() == pytest.approx([v / 1e6 for v in projected])
    assert frame["saved_ms"].to_list() == pytest.approx(
        [(a - b) / 1e6 for a, b in zip(latency, projected, strict=True)]
    )
    assert frame["speedup"].to_list()[:4] == pytest.approx([10_000 / 6854, 1.0, 1.0, 8000 / 6377])
    assert frame["speedup"][4] is None
    assert info["assumptions"] == list(GRAPH_ASSUMPTIONS)
    assert info["parameters"] == {
        "kernel_gap_ns": {"value": GRAPH_KERNEL_GAP_NS, "source": GRAPH_DEFAULTS_SOURCE},
        "graph_head_ns": {"value": 1000, "source": "given"},
        "graph_tail_ns": {"value": 500, "source": "given"},
    }
    assert set(info["summary"]) == {"latency_ms", "projected_ms", "saved_ms", "speedup"}
    assert info["summary"]["projected_ms"].mean == pytest.approx(sum(projected) / 5 / 1e6)
    assert info["summary"]["speedup"].max == pytest.approx(10_000 / 6854)
    assert info["summary"]["speedup"].min == pytest.approx(1.0)


def test_project_cuda_graphs_defaults_and_their_sources() -> None:
    iterations, attribution = _projection_inputs(kernel_gap_ns=500)
    frame, info = project_cuda_graphs(iterations, attribution)
    # defaults: head 26,792 and tail 12,458 ns, longer than every leading and trailing gap here: they stay
    assert frame["projected_ms"].to_list() == pytest.approx(
        [v / 1e6 for v in (2000 + 4000 + 1554 + 300, 5000, 3000, 400 + 4700 + 777 + 900, 0)]
    )
    assert info["parameters"] == {
        "kernel_gap_ns": {"value": 500, "source": "given"},
        "graph_head_ns": {"value": GRAPH_HEAD_NS, "source": GRAPH_DEFAULTS_SOURCE},
        "graph_tail_ns": {"value": GRAPH_TAIL_NS, "source": GRAPH_DEFAULTS_SOURCE},
    }
    # a value given is reported as given, even the default's
    _, same = project_cuda_graphs(iterations, attribution, GRAPH_HEAD_NS, GRAPH_TAIL_NS)
    assert same["parameters"]["graph_head_ns"] == {"value": GRAPH_HEAD_NS, "source": "given"}
    assert same["parameters"]["graph_tail_ns"] == {"value": GRAPH_TAIL_NS, "source": "given"}


def _with_busy(iterations: pl.DataFrame, busy_ms: list[float | None]) -> pl.DataFrame:
    return iterations.with_columns(pl.Series("gpu_busy_ms", busy_ms, dtype=pl.Float64))


def test_projection_means_speedup_and_json_round_trip() -> None:
    iterations, attribution = _projection_inputs()
    iterations = _with_busy(iterations, [0.004, None, 0.003, 0.0047, 0.0])
    result = projection(iterations, attribution, "gpu")
    latency, projected = (
        [10_000, 5000, 3000, 8000, 0],
        [
            min(2000, GRAPH_HEAD_NS) + 4000 + 1554 + 300,
            5000,
            3000,
            400 + 4700 + 777 + 900,
            0,
        ],
    )
    assert result.applies and result.reason is None
    assert result.latency_ms == pytest.approx(sum(latency) / 5 / 1e6)
    assert result.projected_ms == pytest.approx(sum(projected) / 5 / 1e6)
    assert result.saved_ms == pytest.approx((sum(latency) - sum(projected)) / 5 / 1e6)
    # the speedup of the means (not the mean of the speedups): 26,000 / 22,035
    assert result.speedup == pytest.approx(sum(latency) / sum(projected))
    assert result.speedup > 1
    assert result.assumptions == GRAPH_ASSUMPTIONS
    assert result.parameters["graph_head_ns"] == {"value": GRAPH_HEAD_NS, "source": GRAPH_DEFAULTS_SOURCE}
    assert result.summary["latency_ms"].max == pytest.approx(0.01)
    doc = result.to_json()
    assert list(doc) == [
        "applies",
        "latency_ms",
        "projected_ms",
        "saved_ms",
        "speedup",
        "summary",
        "assumptions",
        "parameters",
    ]
    assert doc["applies"] is True
    assert doc["speedup"] == result.speedup
    assert doc["summary"]["saved_ms"] == result.summary["saved_ms"].to_dict()
    assert doc["assumptions"] == list(GRAPH_ASSUMPTIONS)
    assert doc["parameters"]["kernel_gap_ns"] == {
        "value": GRAPH_KERNEL_GAP_NS,
        "source": GRAPH_DEFAULTS_SOURCE,
    }
    assert Projection.from_json(json.loads(json.dumps(doc))) == result


@pytest.mark.parametrize(
    ("device", "graphs", "busy", "reason"),
    [
        ("cpu", 0, [0.004] * 5, "CPU-only trace: nothing to capture into a CUDA graph"),
        ("gpu", 3, [0.004] * 5, "the trace already replays CUDA graphs (3 graph launch calls)"),
        ("gpu", 0, [None, 0.0, None, 0.0, 0.0], "no device work in the analyzed iterations"),
    ],
)
def test_projection_says_why_it_does_not_apply(
    device: str, graphs: int, busy: list[float | None], reason: str
) -> None:
    iterations, attribution = _projection_inputs()
    attribution.graph_launches = graphs
    result = projection(_with_busy(iterations, busy), attribution, device)
    assert result == Projection(False, reason)
    assert result.to_json() == {"applies": False, "reason": reason}
    assert Projection.from_json(result.to_json()) == result


def test_projection_of_no_iterations_does_not_apply() -> None:
    iterations, attribution = _projection_inputs()
    empty = _with_busy(iterations, [0.004] * 5).head(0)
    assert projection(empty, attribution, "gpu").reason == "no device work in the analyzed iterations"


# ----------------------------------------------------------------------------------- the reported summary


def _attributed(rows: list[dict[str, int]]) -> Attribution:
    """An Attribution of per-iteration cause totals (ns) given by hand, with its summary computed."""
    frame = pl.DataFrame(rows).with_columns(
        pl.sum_horizontal(CAUSE_NS).alias("idle_ns"), pl.int_range(pl.len()).alias("index")
    )
    frame = frame.with_columns(
        (pl.col("idle_ns") / 1e6).alias("idle_ms"),
        *((pl.col(ns) / 1e6).alias(ms) for ns, ms in zip(CAUSE_NS, CAUSE_MS, strict=True)),
    )
    return Attribution(None, frame, summarize_attribution(frame))


#: Two iterations: idle 1,000 and 2,000 ns; in flight 550 (launch latency 200, queued 100, stream wait 50,
#: launch lag 200) and 400 (all launch latency).
TWO = [
    {
        "dispatch_ns": 300,
        "launch_ns": 100,
        "sync_ns": 0,
        "other_api_ns": 50,
        "in_flight_ns": 550,
        "launch_latency_ns": 200,
        "queued_ns": 100,
        "stream_wait_ns": 50,
        "launch_lag_ns": 200,
    },
    {
        "dispatch_ns": 1000,
        "launch_ns": 200,
        "sync_ns": 400,
        "other_api_ns": 0,
        "in_flight_ns": 400,
        "launch_latency_ns": 400,
        "queued_ns": 0,
        "stream_wait_ns": 0,
        "launch_lag_ns": 0,
    },
]


def test_summarize_attribution_shares_and_device_side_totals() -> None:
    summary = _attributed(TWO).summary
    assert summary["share_of_idle"] == pytest.approx(
        {
            "dispatch": 1300 / 3000,
            "launch": 300 / 3000,
            "sync": 400 / 3000,
            "other_api": 50 / 3000,
            "in_flight": 950 / 3000,
        }
    )
    assert summary["device_side_ms"] == pytest.approx(
        {"launch_latency": 600e-6, "queued": 100e-6, "stream_wait": 50e-6, "launch_lag": 200e-6}
    )
    assert summary["idle_ms"].mean == pytest.approx(1500e-6)
    # over 2 iterations no p90 is given (it needs 10: stats.min_values); the median is 300 + 0.5 * 700 ns
    assert summary["dispatch_ms"].p90 is None and summary["dispatch_ms"].p50 == pytest.approx(650e-6)
    # no idle time at all: no shares (None, not 0 and not a division by zero)
    none = _attributed([dict.fromkeys(TWO[0], 0)]).summary
    assert none["share_of_idle"] == dict.fromkeys(CAUSES)
    assert none["device_side_ms"] == dict.fromkeys(DEVICE_CAUSES, 0.0)


def test_summarize_attribution_without_device_side_columns_reports_zero() -> None:
    # a per-iteration frame without the device-side columns (a caller's own): 0.0 ms each, not a KeyError
    frame = _attributed(TWO).iterations.drop(*DEVICE_NS)
    assert summarize_attribution(frame)["device_side_ms"] == dict.fromkeys(DEVICE_CAUSES, 0.0)


def test_idle_summary_by_hand_and_its_json_round_trip() -> None:
    attribution = _attributed(TWO)
    attribution.top_operators = pl.DataFrame(
        {"cpu_op": ["aten::linear"], "dispatch_ms": [0.0013], "share": [1.0], "pieces": [2]}
    )
    iterations = pl.DataFrame({"index": [0, 1], "idle_ms": [0.001, 0.002]})
    summary = idle_summary(iterations, attribution)
    assert summary.available and summary.reason is None
    by_cause = {c.cause: c for c in summary.causes}
    assert [c.cause for c in summary.causes] == list(CAUSES)
    # total_ms: the sum over iterations in ms (1,300 ns = 0.0013 ms), not ns and not the mean
    assert {c: by_cause[c].total_ms for c in CAUSES} == pytest.approx(
        {"dispatch": 1300e-6, "launch": 300e-6, "sync": 400e-6, "other_api": 50e-6, "in_flight": 950e-6}
    )
    assert (by_cause["dispatch"].mean_ms, by_cause["dispatch"].p50_ms, by_cause["dispatch"].p90_ms) == (
        pytest.approx(650e-6),
        pytest.approx(650e-6),
        None,  # over 2 iterations (p90 needs 10)
    )
    assert by_cause["sync"].share_of_idle == pytest.approx(400 / 3000)
    assert summary.idle_ms == {"mean": pytest.approx(1500e-6), "p50": pytest.approx(1500e-6), "p90": None}
    assert [d.cause for d in summary.device_side] == list(DEVICE_CAUSES)
    side = {d.cause: d for d in summary.device_side}
    assert side["launch_latency"].total_ms == pytest.approx(600e-6)
    assert side["launch_latency"].share_of_in_flight == pytest.approx(600 / 950)
    assert side["stream_wait"].share_of_in_flight == pytest.approx(50 / 950)
    assert side["launch_lag"].definition == DEVICE_CAUSE_DEFINITIONS["launch_lag"]
    assert summary.definitions == CAUSE_DEFINITIONS and summary.rule == THREAD_RULE
    assert summary.top_dispatch_operators == (
        {"cpu_op": "aten::linear", "dispatch_ms": 0.0013, "share": 1.0, "pieces": 2},
    )
    doc = summary.to_json()
    assert list(doc) == [
        "available",
        "causes",
        "idle_ms",
        "device_side",
        "definitions",
        "rule",
        "cuda_graph_projection",
        "top_dispatch_operators",
    ]
    assert doc["available"] is True
    assert doc["causes"][0] == {
        "cause": "dispatch",
        "mean_ms": by_cause["dispatch"].mean_ms,
        "p50_ms": by_cause["dispatch"].p50_ms,
        "p90_ms": by_cause["dispatch"].p90_ms,
        "total_ms": by_cause["dispatch"].total_ms,
        "share_of_idle": by_cause["dispatch"].share_of_idle,
    }
    assert doc["device_side"][1] == {
        "cause": "queued",
        "total_ms": side["queued"].total_ms,
        "share_of_in_flight": side["queued"].share_of_in_flight,
        "definition": DEVICE_CAUSE_DEFINITIONS["queued"],
    }
    assert doc["idle_ms"] == summary.idle_ms and doc["definitions"] == CAUSE_DEFINITIONS
    assert doc["rule"] == THREAD_RULE and doc["cuda_graph_projection"] is None
    assert doc["top_dispatch_operators"] == [dict(summary.top_dispatch_operators[0])]
    assert IdleSummary.from_json(json.loads(json.dumps(doc))) == summary
    with_projection = summary.to_json(Projection(False, "why"))
    assert with_projection["cuda_graph_projection"] == {"applies": False, "reason": "why"}


def test_idle_summary_without_in_flight_time_has_no_in_flight_shares() -> None:
    rows = [dict(TWO[0], in_flight_ns=0, launch_latency_ns=0, queued_ns=0, stream_wait_ns=0, launch_lag_ns=0)]
    summary = idle_summary(pl.DataFrame({"idle_ms": [0.00045]}), _attributed(rows))
    assert [d.share_of_in_flight for d in summary.device_side] == [None] * 4
    assert [d.total_ms for d in summary.device_side] == [0.0] * 4
    assert summary.top_dispatch_operators is None
    assert summary.to_json()["top_dispatch_operators"] is None
    assert IdleSummary.from_json(summary.to_json()) == summary


def test_idle_summary_of_a_latency_only_trace_is_unavailable() -> None:
    summary = idle_summary(
        pl.DataFrame({"idle_ms": [None, None]}, schema={"idle_ms": pl.Float64}), _attributed(TWO)
    )
    assert not summary.available
    assert summary.reason == "the trace holds no device or operator activity: idle time is unknown"
    assert summary.causes == tuple(CauseShare(c, None, None, None, None, None) for c in CAUSES)
    assert summary.idle_ms == {"mean": None, "p50": None, "p90": None}
    assert summary.device_side == () and summary.top_dispatch_operators is None
    assert summary.definitions == CAUSE_DEFINITIONS and summary.rule == THREAD_RULE
    doc = summary.to_json()
    assert (doc["available"], doc["reason"]) == (False, summary.reason)
    assert list(doc)[:2] == ["available", "reason"]
    assert IdleSummary.from_json(json.loads(json.dumps(doc))) == summary


def test_idle_summary_of_an_empty_attribution_reports_zero_totals() -> None:
    attribution = _attributed(TWO)
    attribution.iterations = attribution.iterations.head(0)
    summary = idle_summary(pl.DataFrame({"idle_ms": [0.001]}), attribution)
    assert [c.total_ms for c in summary.causes] == [0.0] * 5
    assert summary.device_side == ()


def test_from_json_of_a_sparse_document() -> None:
    # older or hand-written documents without the optional keys load with their defaults
    assert IdleSummary.from_json({}) == IdleSummary(False, (), {}, (), {}, "", None, None)
    assert Projection.from_json({"applies": True}) == Projection(True)


# ----------------------------------------------------------------------------------- the device timeline


def _timeline(quiet: bool = False) -> DeviceTimeline:
    """Ops [0, 10), [5, 30) (overlapping), [50, 60), [100, 200), given out of order, and one without an end
    (dropped): busy [0, 30), [50, 60), [100, 200)."""
    starts = np.array([100, 5, 0, 50, 70], dtype=np.int64)
    ends = np.array([200, 30, 10, 60, NULL], dtype=np.int64)
    return DeviceTimeline(starts, ends, quiet)


def test_device_timeline_busy_between() -> None:
    a = np.array([0, 20, -10, 150, 25, 60, 199, 0], dtype=np.int64)
    b = np.array([100, 55, 0, 120, 250, 100, 200, 5], dtype=np.int64)
    busy = _timeline().busy_between(a, b)
    assert busy.tolist() == [40, 15, 0, 0, 115, 0, 1, 5] and busy.dtype == np.int64
    # quiet: the caller knows no gap overlaps another op
    quiet = _timeline(quiet=True).busy_between(a, b)
    assert quiet.tolist() == [0] * 8 and quiet.dtype == np.int64
    empty = DeviceTimeline(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).busy_between(a, b)
    assert empty.tolist() == [0] * 8 and empty.dtype == np.int64
    # two ops out of order
    two = DeviceTimeline(np.array([50, 0], dtype=np.int64), np.array([60, 10], dtype=np.int64))
    assert two.busy_between(np.array([0, 5]), np.array([100, 55])).tolist() == [20, 10]
    # two ops, one inside the other: one segment
    nested = DeviceTimeline(np.array([0, 10], dtype=np.int64), np.array([30, 20], dtype=np.int64))
    assert nested.busy_between(np.array([0]), np.array([100])).tolist() == [30]
    # the first op earliest, the others out of order
    three = DeviceTimeline(np.array([0, 50, 20], dtype=np.int64), np.array([10, 60, 30], dtype=np.int64))
    assert three.busy_between(np.array([0]), np.array([100])).tolist() == [30]
    # one op, one segment
    one = DeviceTimeline(np.array([0], dtype=np.int64), np.array([10], dtype=np.int64))
    assert one.busy_between(np.array([0, 5, -3]), np.array([5, 20, 0])).tolist() == [5, 5, 0]


def test_device_timeline_reach_before() -> None:
    t = np.array([0, 1, 5, 6, 50, 51, 300], dtype=np.int64)
    # the latest end of the ops that started before t: none before 0; [0, 10) before 1 and 5; [5, 30) too
    # from 6; [50, 60) from 51; every op before 300
    assert _timeline().reach_before(t).tolist() == [NULL, 10, 10, 30, 30, 60, 200]
    empty = DeviceTimeline(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert empty.reach_before(t).tolist() == [NULL] * 7


def test_device_timeline_of_a_frame() -> None:
    ops = pl.DataFrame({"start": [0, 5, 50, None], "end": [10, 30, 60, 80]})
    timeline = DeviceTimeline.of(ops)
    assert timeline.busy_between(np.array([0]), np.array([100])).tolist() == [40]
    assert DeviceTimeline.of(ops, quiet=True).busy_between(np.array([0]), np.array([100])).tolist() == [0]


# ----------------------------------------------------------------------------------- CPU operators


def test_top_dispatch_operators_by_hand() -> None:
    pieces = pl.DataFrame(
        [
            (0, 100, "dispatch", "aten::a"),
            (100, 150, "launch", None),
            (150, 250, "dispatch", None),
            (250, 300, "dispatch", "aten::a"),
            (300, 400, "dispatch", "aten::b"),
            (400, 450, "in_flight", None),
            (500, 600, "dispatch", "aten::c"),
        ],
        schema={"start_ns": pl.Int64, "end_ns": pl.Int64, "cause": CAUSE, "cpu_op": pl.String},
        orient="row",
    )
    # dispatch: 450 ns; aten::a 150 (2 pieces), then three of 100 ns by name ("(" sorts before "a")
    top = top_dispatch_operators(pieces)
    assert top.columns == ["cpu_op", "dispatch_ms", "share", "pieces"]
    assert top.dtypes[3] == pl.Int64
    assert top.rows() == [
        ("aten::a", pytest.approx(150e-6), pytest.approx(150 / 450), 2),
        (OUTSIDE_OPERATORS, pytest.approx(100e-6), pytest.approx(100 / 450), 1),
        ("aten::b", pytest.approx(100e-6), pytest.approx(100 / 450), 1),
        ("aten::c", pytest.approx(100e-6), pytest.approx(100 / 450), 1),
    ]
    assert top_dispatch_operators(pieces, count=2)["cpu_op"].to_list() == ["aten::a", OUTSIDE_OPERATORS]
    # no dispatch piece: an empty table with the same columns, not a division by zero
    empty = top_dispatch_operators(pieces.filter(pl.col("cause") != "dispatch"))
    assert empty.height == 0 and empty.schema == top.schema
    # dispatch pieces of no length (a caller's own): no share of no time
    zero = pieces.head(1).with_columns(pl.col("start_ns").alias("end_ns"))
    assert top_dispatch_operators(zero).rows() == [("aten::a", 0.0, None, 1)]


def test_cpu_operator_intervals_outermost_per_thread() -> None:
    # thread 1: "b" and "a" over the same [10, 50) (the first by name decides), "inner" inside them,
    # "late" [40, 80) overlapping (decides from 50), an unnamed operator and "aten::y" over the same [90, 95)
    # (the named one decides); thread 2: "x" [0, 5)
    cpu_ops = pl.DataFrame(
        {
            "start": [40, 90, 10, 20, 0, 90, 10],
            "end": [80, 95, 50, 30, 5, 95, 50],
            "pid": [1, 1, 1, 1, 1, 1, 1],
            "thread": [1, 1, 1, 1, 2, 1, 1],
            "name": ["late", None, "b", "inner", "x", "aten::y", "a"],
        }
    )
    intervals, names = cpu_operator_intervals(cpu_ops)
    assert names.to_list() == ["a", "b", "inner", "late", "aten::y", None, "x"]
    assert sorted(intervals) == [(1, 1), (1, 2)]
    s, e, lab = intervals[(1, 1)]
    assert (s.tolist(), e.tolist(), [names[int(i)] for i in lab]) == (
        [10, 50, 90],
        [50, 80, 95],
        ["a", "late", "aten::y"],
    )
    s, e, lab = intervals[(1, 2)]
    assert (s.tolist(), e.tolist(), [names[int(i)] for i in lab]) == ([0], [5], ["x"])


# ----------------------------------------------------------------------------------- every per-gap cause


def _every_gap_cause():  # noqa: ANN202
    """One range [0, 3,000,000) on thread 1 whose five gaps each end in another cause:

    - leading [0, 300): thread 1 launches A [150, 200) -> A [300, 1000): dispatch 150, launch 50, launch
      latency 100;
    - [1000, 1500): thread 2 waits on an event [900, 1150) (so at the gap's start it is in an API call), then
      launches B [1200, 1300) -> B [1500, 2000): other_api 150, dispatch 50, launch 100, stream wait 200;
    - [2000, 1,300,000): thread 1 launches C [2100, 2200) -> C [1,300,000, 1,400,000): dispatch 100, launch
      100, then 1,297,800 ns on an idle device with C launched: a launch lag;
    - [1,400,000, 1,600,000): thread 1 launches E [1,410,000, 1,420,000) -> E [1,600,000, 1,700,000); D, an op
      launched before the capture (no call in the trace, in no iteration), runs [1,400,000, 1,550,000):
      dispatch 10,000, launch 10,000, queued 130,000 behind D, launch latency 50,000;
    - trailing [1,700,000, 3,000,000): thread 1 synchronizes [1,800,000, 2,900,000): dispatch 200,000, sync
      1,100,000."""
    fields = ("start", "end", "correlation", "name", "thread")
    return make_trace(
        ranges=[(0, 3_000_000, "iteration")],
        api=[
            (150, 200, 1, "cudaLaunchKernel", 1),
            (900, 1150, None, "cudaStreamWaitEvent", 2),
            (1200, 1300, 2, "cudaLaunchKernel", 2),
            (2100, 2200, 3, "cudaLaunchKernel", 1),
            (1_410_000, 1_420_000, 5, "cudaLaunchKernel", 1),
            (1_800_000, 2_900_000, None, "cudaDeviceSynchronize", 1),
        ],
        ops=[
            (300, 1000, 1, 7),
            (1500, 2000, 2, 8),
            (1_300_000, 1_400_000, 3, 7),
            (1_400_000, 1_550_000, 99, 9),
            (1_600_000, 1_700_000, 5, 7),
        ],
        api_fields=fields,
    )


#: per gap: cause, host_state, thread, next_call_end_ns, dispatch, launch, sync, other_api, in_flight,
#: launch_latency, queued, stream_wait, launch_lag (ns)
EVERY_GAP = [
    ("dispatch", "dispatch", 1, 200, 150, 50, 0, 0, 100, 100, 0, 0, 0),
    ("stream_wait", "other_api", 2, 1300, 50, 100, 0, 150, 200, 0, 0, 200, 0),
    ("launch_lag", "dispatch", 1, 2200, 100, 100, 0, 0, 1_297_800, 0, 0, 0, 1_297_800),
    ("queued", "dispatch", 1, 1_420_000, 10_000, 10_000, 0, 0, 180_000, 50_000, 130_000, 0, 0),
    ("sync", "dispatch", 1, None, 200_000, 0, 1_100_000, 0, 0, 0, 0, 0, 0),
]
GAP_FIELDS = ["cause", "host_state", "thread", "next_call_end_ns", *CAUSE_NS, *DEVICE_NS]


def test_every_per_gap_cause_by_hand() -> None:
    trace = _every_gap_cause()
    analysis = analyze_iterations(trace)
    assert analysis.gaps.select("start_ns", "end_ns").rows() == [
        (0, 300),
        (1000, 1500),
        (2000, 1_300_000),
        (1_400_000, 1_600_000),
        (1_700_000, 3_000_000),
    ]
    result = attribute_trace(trace, analysis, per_gap=True)
    gaps = result.gaps
    assert gaps.select(GAP_FIELDS).rows() == EVERY_GAP
    assert gaps["pid"].to_list() == [1] * 5
    assert gaps["no_launch"].to_list() == [False] * 5
    assert gaps.schema["cause"] == GAP_CAUSE and gaps.schema["host_state"] == HOST_STATE
    # the same per-gap answer from attribute_gaps (the analysis' gap_causes) and the longest gaps' causes
    direct = attribute_gaps(analysis.gaps, trace.ops, trace.api, analysis.ranges)
    assert direct.select(GAP_FIELDS).rows() == EVERY_GAP
    assert analysis.gap_causes(trace).select(GAP_FIELDS).rows() == EVERY_GAP
    longest = analysis.longest_gaps()
    assert longest.select("start_ns", "cause", "host_state").rows() == [
        (1_700_000, "sync", "dispatch"),
        (2000, "launch_lag", "dispatch"),
        (1_400_000, "queued", "dispatch"),
        (1000, "stream_wait", "other_api"),
        (0, "dispatch", "dispatch"),
    ]


def test_every_cause_summed_per_iteration_with_projection_parts_and_lags() -> None:
    trace = _every_gap_cause()
    result = analyze_iterations(trace).attribution
    row = result.iterations.row(0, named=True)
    assert {c: row[c] for c in ("idle_ns", *CAUSE_NS, *DEVICE_NS)} == {
        "idle_ns": 300 + 500 + 1_298_000 + 200_000 + 1_300_000,
        "dispatch_ns": 150 + 50 + 100 + 10_000 + 200_000,
        "launch_ns": 50 + 100 + 100 + 10_000,
        "sync_ns": 1_100_000,
        "other_api_ns": 150,
        "in_flight_ns": 100 + 200 + 1_297_800 + 180_000,
        "launch_latency_ns": 100 + 50_000,
        "queued_ns": 130_000,
        "stream_wait_ns": 200,
        "launch_lag_ns": 1_297_800,
    }
    assert row["sync_ms"] == pytest.approx(1.1) and row["idle_ms"] == pytest.approx(2.7988)
    # inner floor: the 500 ns gap holding the stream wait (200) is shorter than the kernel gap (777), so it
    # stays 500 (a graph does not lengthen it); the launch lag and the queueing stay as they are
    assert result.projection_parts.row(0, named=True) == {
        "index": 0,
        "leading_ns": 300,
        "trailing_ns": 1_300_000,
        "inner_gaps": 3,
        "inner_ns": 500 + 1_298_000 + 200_000,
        "inner_floor_ns": 500 + 1_297_800 + 130_000,
    }
    # the launch lag: C started 1,297,800 ns after its call returned, the device idle throughout; E waited
    # behind D (not idle) and B after a stream wait: neither is a lag
    assert result.lags.rows() == [(0, 1_300_000, 1_297_800)]
    assert result.graph_launches == 0
    assert result.summary["device_side_ms"]["queued"] == pytest.approx(0.13)


def test_project_cuda_graphs_with_one_busy_nanosecond() -> None:
    # iteration 0: latency 1,000 ns of which 999 idle (leading 500, trailing 499): one busy ns is device
    # work, projected as min(500, 100) + 1 + min(499, 100) = 201 ns; iteration 1: a 1 ns window, all busy:
    # projected 1 ns, speedup 1
    iterations = pl.DataFrame({"index": [0, 1], "window_start_ns": [0, 2000], "window_end_ns": [1000, 2001]})
    parts = pl.DataFrame(
        [(0, 500, 499, 0, 0, 0), (1, 0, 0, 0, 0, 0)],
        schema=["index", "leading_ns", "trailing_ns", "inner_gaps", "inner_ns", "inner_floor_ns"],
        orient="row",
    )
    idle = pl.DataFrame({"index": [0, 1], "idle_ns": [999, 0]})
    attribution = Attribution(None, idle, {}, projection_parts=parts)
    frame, _ = project_cuda_graphs(iterations, attribution, graph_head_ns=100, graph_tail_ns=100)
    assert frame["projected_ms"].to_list() == pytest.approx([201e-6, 1e-6])
    assert frame["speedup"].to_list() == pytest.approx([1000 / 201, 1.0])


# ----------------------------------------------------------------------------------- stream waits


def test_stream_waited_counts_waits_since_the_previous_launching_call_on_the_thread() -> None:
    # thread 2: waits at 0, 20, 40 and 55; calls at 15 (launched no op), 20, 40, 70 (each launched one);
    # thread 1: a call at 5 and a wait at 100 (after it); the wait of a call is one strictly between the
    # thread's previous launching call's start and its own start
    calls = pl.DataFrame(
        {
            "call_start": [15, 20, 40, 70, 5],
            "call_end": [18, 30, 50, 80, 8],
            "call_pid": [1] * 5,
            "call_thread": [2, 2, 2, 2, 1],
        }
    )
    launching = np.array([False, True, True, True, True])
    api = pl.DataFrame(
        {
            "start": [0, 20, 40, 55, 100, 61],
            "end": [10, 21, 41, 60, 110, 62],
            "pid": [1] * 6,
            "thread": [2, 2, 2, 2, 1, 2],
            "name": [
                "cudaStreamWaitEvent_ptsz",
                "cuStreamWaitEvent",
                "cudaStreamWaitEvent",
                "hipStreamWaitEvent",
                "cudaStreamWaitEvent_v2",
                "cudaMalloc",
            ],
        }
    )
    # 15: launched nothing (not a "previous" call, not reported); 20: the wait at 0; 40: the wait at 20
    # started with the previous call (not after it); 70: the wait at 55; thread 1's call at 5: its wait
    # comes later
    assert stream_waited(calls, launching, api).tolist() == [False, True, False, True, False]
    # no wait call at all, or no calls: nothing waited
    assert stream_waited(calls, launching, api.filter(pl.col("name") == "cudaMalloc")).tolist() == [False] * 5
    assert stream_waited(calls.head(0), launching[:0], api).tolist() == []


def test_every_gap_cause_pieces_named_by_cpu_operator() -> None:
    trace = _every_gap_cause()
    # CPU operators: thread 1 "aten::mm" [0, 100) and "aten::add" [1,750,000, 1,850,000) (into the sync: only
    # dispatch pieces are named); thread 2 "aten::wait" [1150, 1180)
    cpu_ops = pl.DataFrame(
        {
            "start": [0, 1_750_000, 1150],
            "end": [100, 1_850_000, 1180],
            "pid": [1, 1, 1],
            "thread": [1, 1, 2],
            "name": ["aten::mm", "aten::add", "aten::wait"],
        }
    )
    result = attribute_trace(trace, analyze_iterations(trace), cpu_ops=cpu_ops)
    pieces = result.pieces
    assert pieces.columns == ["iteration", "start_ns", "end_ns", "cause", "pid", "thread", "cpu_op"]
    assert pieces.select("start_ns", "end_ns", "cause", "thread", "cpu_op").rows() == [
        (0, 100, "dispatch", 1, "aten::mm"),
        (100, 150, "dispatch", 1, None),
        (150, 200, "launch", 1, None),
        (200, 300, "in_flight", 1, None),
        (1000, 1150, "other_api", 2, None),
        (1150, 1180, "dispatch", 2, "aten::wait"),
        (1180, 1200, "dispatch", 2, None),
        (1200, 1300, "launch", 2, None),
        (1300, 1500, "in_flight", 2, None),
        (2000, 2100, "dispatch", 1, None),
        (2100, 2200, "launch", 1, None),
        (2200, 1_300_000, "in_flight", 1, None),
        (1_400_000, 1_410_000, "dispatch", 1, None),
        (1_410_000, 1_420_000, "launch", 1, None),
        (1_420_000, 1_600_000, "in_flight", 1, None),
        (1_700_000, 1_750_000, "dispatch", 1, None),
        (1_750_000, 1_800_000, "dispatch", 1, "aten::add"),
        (1_800_000, 2_900_000, "sync", 1, None),
        (2_900_000, 3_000_000, "dispatch", 1, None),
    ]
    assert pieces["iteration"].to_list() == [0] * 19 and pieces["pid"].to_list() == [1] * 19
    assert result.top_operators.select("cpu_op", "pieces").rows() == [
        (OUTSIDE_OPERATORS, 6),
        ("aten::add", 1),
        ("aten::mm", 1),
        ("aten::wait", 1),
    ]
    assert result.top_operators["dispatch_ms"].to_list() == pytest.approx([0.16017, 0.05, 0.0001, 0.00003])
    assert result.top_operators["share"][0] == pytest.approx(160_170 / 210_300)
    # without CPU operators: the same pieces unnamed, no operator table
    plain = attribute_trace(trace, analyze_iterations(trace), pieces=True)
    assert plain.pieces["cpu_op"].null_count() == plain.pieces.height == 16
    assert plain.top_operators is None
    # idle_pieces on its own (the API intervals computed from the calls): the same pieces
    assert idle_pieces(plain.gaps, trace.api).equals(plain.pieces)
    named = idle_pieces(plain.gaps, trace.api, cpu_ops)
    assert named.select("start_ns", "cpu_op").rows()[:2] == [(0, "aten::mm"), (100, None)]


# ----------------------------------------------------------------------------------- iterations asked for


def _three_steps():  # noqa: ANN202
    """Three ranges [k000, k000 + 1000) (k = 0, 1, 2), each launching [k100, k150) a kernel [k300, k400): per
    iteration dispatch 100 + 600 (trailing), launch 50, in flight 150; idle 900."""
    return make_trace(
        ranges=[(k * 1000, k * 1000 + 1000, "iteration") for k in range(3)],
        api=[(k * 1000 + 100, k * 1000 + 150, k + 1, "cudaLaunchKernel") for k in range(3)],
        ops=[(k * 1000 + 300, k * 1000 + 400, k + 1, 7) for k in range(3)],
    )


@pytest.mark.parametrize("index", [[0, 2], [2, 0], [0, 2, 5]])
def test_attribute_idle_reports_the_iterations_asked_for(index: list[int]) -> None:
    trace = _three_steps()
    analysis = analyze_iterations(trace)
    ops = trace.ops.select("start", "end", "pid", "correlation")
    result = attribute_idle(analysis.gaps, ops, trace.api, analysis.ranges, pl.Series(index), per_gap=True)
    columns = ["index", "idle_ns", "dispatch_ns", "launch_ns", "in_flight_ns", "launch_latency_ns"]
    want = [(0, 900, 700, 50, 150, 150), (2, 900, 700, 50, 150, 150)]
    if 5 in index:  # asked for, but no such iteration: no gap, zeros
        want.append((5, 0, 0, 0, 0, 0))
    assert result.iterations.select(columns).rows() == want
    parts = result.projection_parts.select("index", "leading_ns", "trailing_ns", "inner_gaps").rows()
    assert parts == [(i, 300, 600, 0) if i != 5 else (5, 0, 0, 0) for i in sorted(index)]
    # the per-gap frame holds every gap given (all three iterations): per_gap is not filtered by index
    assert result.gaps["iteration"].to_list() == [0, 0, 1, 1, 2, 2]
    # the default index: the ranges' iterations
    default = attribute_idle(analysis.gaps, ops, trace.api, analysis.ranges)
    assert default.iterations["index"].to_list() == [0, 1, 2]


def _three_threads():  # noqa: ANN202
    """Range k [k000, k000 + 1000) on thread k + 1 (k = 0, 1, 2), which launches [k100, k150) a kernel [k300,
    k400) and synchronizes [k500, k900): per iteration dispatch 100 + 200, launch 50, in flight 150, sync
    400 -- the trailing gap's thread is the range's."""
    fields = ("start", "end", "correlation", "name", "thread")
    return make_trace(
        ranges=[(k * 1000, k * 1000 + 1000, "iteration", k + 1) for k in range(3)],
        api=[(k * 1000 + 100, k * 1000 + 150, k + 1, "cudaLaunchKernel", k + 1) for k in range(3)]
        + [(k * 1000 + 500, k * 1000 + 900, None, "cudaStreamSynchronize", k + 1) for k in range(3)],
        ops=[(k * 1000 + 300, k * 1000 + 400, k + 1, 7) for k in range(3)],
        range_fields=("start", "end", "name", "thread"),
        api_fields=fields,
    )


@pytest.mark.parametrize("numbers", [[0, 1, 2], [10, 11, 12], [10, 20, 30], [5, 1, 3]])
def test_the_main_thread_of_each_iteration_whatever_its_number(numbers: list[int]) -> None:
    trace = _three_threads()
    analysis = analyze_iterations(trace)
    renumber = dict(enumerate(numbers))
    gaps = analysis.gaps.with_columns(pl.col("iteration").replace_strict(renumber))
    ranges = analysis.ranges.with_columns(pl.col("iteration").replace_strict(renumber))
    ops = trace.ops.select("start", "end", "pid", "correlation")
    result = attribute_idle(gaps, ops, trace.api, ranges, pl.Series(numbers), per_gap=True)
    columns = ["index", "dispatch_ns", "launch_ns", "sync_ns", "in_flight_ns"]
    assert result.iterations.select(columns).rows() == [(n, 300, 50, 400, 150) for n in sorted(numbers)]
    trailing = result.gaps.filter(pl.col("position") == "trailing")
    assert trailing.select("iteration", "thread", "cause").rows() == [
        (numbers[k], k + 1, "sync") for k in range(3)
    ]


# ----------------------------------------------------------------------------------- launch lags


def _lags():  # noqa: ANN202
    """Iteration 0 [0, 5 ms): op 1 starts 1,999,800 ns after its call [100, 200) returned (a lag); op 5 exactly
    1 ms after its call [3,000,000, 3,000,100) (not more: launch latency). Iteration 1 [5 ms, 10 ms): a stream
    wait [5,000,050, 5,000,080), then op 2 1,999,800 ns after its call [5,000,100, 5,000,200) (a stream wait,
    not a lag); op 3 [8 ms, 8.1 ms) launched [5,000,300, 5,000,400) (the device ran op 2 meanwhile: not
    idle); op 4 1,100,000 ns after its call [8,200,000, 8,300,000) on an idle device (a lag)."""
    return make_trace(
        ranges=[(0, 5_000_000, "iteration"), (5_000_000, 10_000_000, "iteration")],
        api=[
            (100, 200, 1, "cudaLaunchKernel"),
            (3_000_000, 3_000_100, 5, "cudaLaunchKernel"),
            (5_000_050, 5_000_080, None, "cudaStreamWaitEvent"),
            (5_000_100, 5_000_200, 2, "cudaLaunchKernel"),
            (5_000_300, 5_000_400, 3, "cudaLaunchKernel"),
            (8_200_000, 8_300_000, 4, "cudaLaunchKernel"),
        ],
        ops=[
            (2_000_000, 2_100_000, 1, 7),
            (4_000_100, 4_000_200, 5, 7),
            (7_000_000, 7_100_000, 2, 7),
            (8_000_000, 8_100_000, 3, 7),
            (9_400_000, 9_500_000, 4, 7),
        ],
    )


def test_launch_lags_and_the_device_side_causes_around_them() -> None:
    trace = _lags()
    analysis = analyze_iterations(trace)
    result = analysis.attribution
    assert result.lags.rows() == [(0, 2_000_000, 1_999_800), (1, 9_400_000, 1_100_000)]
    columns = ["index", "launch_latency_ns", "queued_ns", "stream_wait_ns", "launch_lag_ns"]
    assert result.iterations.select(columns).rows() == [
        (0, 1_000_000, 0, 0, 1_999_800),  # op 5: exactly 1 ms is launch latency
        (1, 900_000, 0, 1_999_800, 1_100_000),
    ]
    # the lags of the iterations asked for only
    ops = trace.ops.select("start", "end", "pid", "correlation")
    one = attribute_idle(analysis.gaps, ops, trace.api, analysis.ranges, pl.Series([1]))
    assert one.lags.rows() == [(1, 9_400_000, 1_100_000)]


# ----------------------------------------------------------------------------------- searches


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.integers(0, 30), max_size=40).map(sorted),
    keys=st.lists(st.integers(-2, 32), max_size=40),
    sort_keys=st.booleans(),
    side=st.sampled_from(["left", "right"]),
)
def test_search_sorted_is_numpys_searchsorted(
    values: list[int], keys: list[int], sort_keys: bool, side: str
) -> None:
    # the merge path (sorted keys, not far fewer than the values) and the binary searches give numpy's answer,
    # ties included: "left" counts the values below each key, "right" those at or below it
    v = np.array(values, dtype=np.int64)
    k = np.array(sorted(keys) if sort_keys else keys, dtype=np.int64)
    want = np.searchsorted(v, k, side=side).tolist()
    assert search_sorted(v, k, side).tolist() == want
    assert _search(v, k, side).tolist() == want


def test_search_sorted_ties_by_hand() -> None:
    values = np.array([10, 20, 20, 30], dtype=np.int64)
    keys = np.array([5, 10, 20, 20, 25, 30, 35], dtype=np.int64)
    assert search_sorted(values, keys, "left").tolist() == [0, 0, 1, 1, 3, 3, 4]
    assert search_sorted(values, keys, "right").tolist() == [0, 1, 3, 3, 3, 4, 4]
    assert _search(values, keys[2:4], "right").tolist() == [3, 3]  # a slice of the values, offset back


# ----------------------------------------------------------------------------------- outermost intervals


def _intervals(
    rows: list[tuple[int, int, int, int, int]],
) -> dict[tuple[int, int], list[tuple[int, int, int]]]:
    arrays = [np.array(column, dtype=np.int64) for column in zip(*rows, strict=True)]
    out = thread_intervals(*arrays)
    return {key: list(zip(*(a.tolist() for a in value), strict=True)) for key, value in out.items()}


def test_thread_intervals_outermost_per_thread() -> None:
    rows = [
        (35, 50, 1, 1, 2),  # overlaps (20, 40): decides from 40
        (100, 110, 1, 2, 3),  # another thread
        (0, 10, 1, 1, 3),  # identical to the next: the lower label decides
        (20, 30, 1, 1, 2),  # same start as (20, 40), shorter: inside it
        (NULL, 80, 1, 1, 1),  # no start: dropped
        (0, 10, 1, 1, 1),
        (60, 60, 1, 1, 1),  # empty: dropped
        (70, 80, NULL, 1, 1),  # no pid: dropped
        (5, 15, 2, 1, 1),  # another process
        (20, 40, 1, 1, 3),
        (70, 80, 1, NULL, 1),  # no thread: dropped
        (45, 48, 1, 1, 1),  # inside the rest of (35, 50)
    ]
    assert _intervals(rows) == {
        (1, 1): [(0, 10, 1), (20, 40, 3), (40, 50, 2)],
        (1, 2): [(100, 110, 3)],
        (2, 1): [(5, 15, 1)],
    }
    # one thread only (its own fast path), rows out of order
    one = [r for r in rows if r[2:4] == (1, 1)]
    assert _intervals(one) == {(1, 1): [(0, 10, 1), (20, 40, 3), (40, 50, 2)]}
    # already disjoint and in order: as given
    assert _intervals([(0, 5, 1, 1, 2), (5, 9, 1, 1, 1)]) == {(1, 1): [(0, 5, 2), (5, 9, 1)]}
    assert _intervals([(NULL, 5, 1, 1, 2)]) == {}


def test_api_time_per_code_frequent_sparse_and_single() -> None:
    # one thread: eight launches [0, 10), [20, 30), ... [140, 150) (frequent: sharing the thread's arrays), a
    # sync [160, 200) and a malloc [210, 220) (sparse: arrays of their own)
    starts = np.array([*range(0, 160, 20), 160, 210], dtype=np.int64)
    ends = np.array([*range(10, 160, 20), 200, 220], dtype=np.int64)
    codes = np.array([1] * 8 + [2, 3], dtype=np.int8)
    prepared = _Prepared.of((starts, ends, codes))
    s = np.array([5, 0, 150, 165, 300, -5, 10], dtype=np.int64)
    c = np.array([25, 300, 215, 170, 400, 0, 10], dtype=np.int64)
    assert _api_time(prepared, s, c).tolist() == [
        [10, 80, 0, 0, 0, 0, 0],  # launch
        [0, 40, 40, 5, 0, 0, 0],  # sync
        [0, 10, 5, 0, 0, 0, 0],  # other_api
    ]
    # a thread of one code only
    only = _Prepared.of(
        (
            np.array([0, 20], dtype=np.int64),
            np.array([10, 30], dtype=np.int64),
            np.array([2, 2], dtype=np.int8),
        )
    )
    assert _api_time(only, np.array([5]), np.array([25])).tolist() == [[0], [10], [0]]


# ----------------------------------------------------------------------------------- mutation run of 2026-11-26


def _host_only(pid: int = 1):  # noqa: ANN202
    """Synthetic, no device op at all: range 0 [0, 1000) on thread 1, which synchronizes [200, 500); range 1
    [2000, 3000) on thread 2, which allocates [2100, 2900). The API calls are on process ``pid`` (the ranges
    on process 1, the builder's default)."""
    return make_trace(
        ranges=[(0, 1000, "iteration", 1), (2000, 3000, "iteration", 2)],
        api=[(200, 500, None, "cudaStreamSynchronize", pid, 1), (2100, 2900, None, "cudaMalloc", pid, 2)],
        range_fields=("start", "end", "name", "thread"),
        api_fields=("start", "end", "correlation", "name", "pid", "thread"),
    )


def _empty_windows() -> pl.DataFrame:
    """The two windows of :func:`_host_only` as gaps without ops ("empty": no op ends them)."""
    from tracekit.analyzers.iterations import GAP_POSITION

    return pl.DataFrame(
        {
            "iteration": [0, 1],
            "start_ns": [0, 2000],
            "end_ns": [1000, 3000],
            "position": pl.Series(["empty", "empty"], dtype=GAP_POSITION),
        }
    )


def test_gaps_of_a_trace_without_device_ops_are_the_main_threads_host_states() -> None:
    # No op in the whole trace (a caller's own windows over a host-only trace): no op ends any gap, so each
    # window is split by its range thread's calls alone -- not an error (kills _candidates' empty-ops return
    # given a bad shape)
    trace = _host_only()
    ranges = iteration_ranges(trace)
    gaps = attribute_gaps(_empty_windows(), trace.ops, trace.api, ranges)
    assert gaps.select(
        "cause", "host_state", "pid", "thread", "next_call_end_ns", "no_launch", *CAUSE_NS
    ).rows() == [
        ("dispatch", "dispatch", 1, 1, None, False, 700, 0, 300, 0, 0),
        ("other_api", "dispatch", 1, 2, None, False, 200, 0, 0, 800, 0),
    ]
    result = attribute_idle(_empty_windows(), trace.ops, trace.api, ranges)
    assert result.iterations.select("index", "idle_ns", *CAUSE_NS).rows() == [
        (0, 1000, 700, 0, 300, 0, 0),
        (1, 1000, 200, 0, 0, 800, 0),
    ]
    assert result.lags.height == 0


#: the columns of :func:`launch_lags`' frame
LAG_SCHEMA = pl.Schema({"iteration": pl.Int64, "start": pl.Int64, "lag_ns": pl.Int64})


def test_launch_lags_without_ops_or_calls_is_an_empty_frame_with_its_columns() -> None:
    # Nothing can lag without ops (a host-only trace) or without launch calls (ops whose calls are not in the
    # trace): the lags are an empty frame with the columns a frame of lags has, never None
    trace = _host_only()
    ranges = iteration_ranges(trace)
    no_ops = attribute_idle(_empty_windows(), trace.ops, trace.api, ranges)
    assert no_ops.lags.schema == LAG_SCHEMA and no_ops.lags.height == 0
    no_calls = dataclasses.replace(_three_steps(), api=conform(None, API_SCHEMA))
    result = attribute_trace(no_calls, analyze_iterations(no_calls))
    assert result.lags.schema == LAG_SCHEMA and result.lags.height == 0
    # the same columns as a frame with lags in it
    assert analyze_iterations(_lags()).attribution.lags.schema == LAG_SCHEMA


def test_main_threads_takes_the_pid_of_the_range_threads_calls() -> None:
    # ranges without a pid column: each range's pid is the (smallest) pid of the API calls on its thread,
    # null when its thread made no call; calls without a thread are no evidence; a pid column is kept as is
    ranges = pl.DataFrame({"iteration": [0, 1, 2], "thread": [1, 2, 3]})
    api = pl.DataFrame(
        {"pid": [9, 7, 4, 5, 6], "thread": [1, 1, None, 2, None], "name": ["cudaMalloc"] * 5},
        schema={"pid": pl.Int64, "thread": pl.Int64, "name": pl.String},
    )
    assert main_threads(ranges, api).rows() == [(0, 1, 7), (1, 2, 5), (2, 3, None)]
    with_pid = ranges.with_columns(pl.lit(3, pl.Int64).alias("pid"))
    assert main_threads(with_pid, api).equals(with_pid)
    # a null pid in a pid column is looked up the same way; the other rows keep theirs
    some_null = ranges.with_columns(pl.Series("pid", [None, 3, None], dtype=pl.Int64))
    assert main_threads(some_null, api).rows() == [(0, 1, 7), (1, 2, 3), (2, 3, None)]


def test_ranges_without_pid_take_it_from_the_api_calls() -> None:
    # The calls are on process 7, the ranges (builder default) on process 1: given the ranges' pid, the
    # range threads (1, 1) and (1, 2) made no call and every window is dispatch; without it, the pid comes
    # from the calls on the range's thread (7) and their sync/other_api time is found
    trace = _host_only(pid=7)
    ranges = iteration_ranges(trace)
    with_pid = attribute_gaps(_empty_windows(), trace.ops, trace.api, ranges)
    assert with_pid.select("pid", *CAUSE_NS).rows() == [(1, 1000, 0, 0, 0, 0), (1, 1000, 0, 0, 0, 0)]
    found = [(7, 1, 700, 0, 300, 0, 0), (7, 2, 200, 0, 0, 800, 0)]
    without = attribute_gaps(_empty_windows(), trace.ops, trace.api, ranges.drop("pid"))
    assert without.select("pid", "thread", *CAUSE_NS).rows() == found
    # a pid column holding nulls (frames built by hand) is looked up the same way
    nulls = ranges.with_columns(pl.lit(None, ranges.schema["pid"]).alias("pid"))
    with_nulls = attribute_gaps(_empty_windows(), trace.ops, trace.api, nulls)
    assert with_nulls.select("pid", "thread", *CAUSE_NS).rows() == found


@pytest.mark.parametrize("chunk", [1, 2, 3, 4])
def test_gaps_attributed_in_chunks_give_the_same_answer(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Large traces are attributed 65,536 gaps at a time; with chunks of 1-4 gaps the chunk boundaries fall
    # inside and between iterations of these small traces: every gap is attributed once, the per-gap rows
    # and the per-iteration sums are the exact answers of the unchunked tests
    from tracekit.analyzers import attribution

    monkeypatch.setattr(attribution, "_CHUNK", chunk)
    trace = _every_gap_cause()
    result = attribute_trace(trace, analyze_iterations(trace), per_gap=True)
    assert result.gaps.select(GAP_FIELDS).rows() == EVERY_GAP
    assert result.iterations.select("idle_ns", "dispatch_ns", "in_flight_ns").rows() == [
        (2_798_800, 210_300, 1_478_100)
    ]
    three = _three_threads()
    analysis = analyze_iterations(three)
    assert analysis.attribution.iterations.select(
        "index", "dispatch_ns", "launch_ns", "sync_ns", "in_flight_ns"
    ).rows() == [(k, 300, 50, 400, 150) for k in range(3)]
    # leading gaps: dispatch 100, launch 50, launch latency 150; trailing: sync 400, dispatch 200
    assert analysis.gap_causes(three)["cause"].to_list() == ["launch_latency", "sync"] * 3


def test_per_iteration_nanoseconds_are_integers() -> None:
    # "*_ns integer nanoseconds": the per-iteration sums and the projection parts are Int64 columns (a
    # float accumulator would write 900.0 and lose exactness above 2**53 ns); the *_ms columns are floats
    result = attribute_trace(_three_steps(), analyze_iterations(_three_steps()))
    schema = result.iterations.schema
    assert all(schema[c] == pl.Int64 for c in ("index", "idle_ns", *CAUSE_NS, *DEVICE_NS))
    assert all(schema[c] == pl.Float64 for c in ("idle_ms", *CAUSE_MS))
    assert all(dtype == pl.Int64 for dtype in result.projection_parts.dtypes)
    assert result.iterations.select("idle_ns", "dispatch_ns").row(0) == (900, 700)


def test_attribute_idle_with_calls_and_no_timeline_finds_queued_time() -> None:
    # Given the ops' launching calls (as the iteration analysis matches them) and no timeline, the timeline is
    # that of ``ops`` (the documented default), as without calls: E's wait behind D is queued (130,000 ns),
    # not launch latency. (Bug found by the mutation run: with calls given the timeline was left out, every
    # queued ns was reported as launch latency, and a queued wait over 1 ms would have been a false lag.)
    from tracekit.analyzers.iterations import assign

    trace = _every_gap_cause()
    assignment = assign(trace)
    ops = assignment.ops.select("start", "end", "iteration", "call", "no_launch")
    gaps = analyze_iterations(trace).gaps
    result = attribute_idle(gaps, ops, trace.api, assignment.ranges, calls=assignment.calls, per_gap=True)
    assert result.gaps.select(GAP_FIELDS).rows() == EVERY_GAP
    assert result.iterations.select("queued_ns", "launch_latency_ns").row(0) == (130_000, 100 + 50_000)
    assert result.lags.rows() == [(0, 1_300_000, 1_297_800)]


def test_thread_intervals_a_shorter_call_listed_first_at_the_same_start_is_put_in_order() -> None:
    """Two calls on one thread start together, the shorter listed first with the lower label: the input is not
    in (start, end descending, label) order, so it is sorted and the longer one decides the whole time (second
    mutation sample, _in_outermost_order_26: taking it as ordered gave [0, 10) to the shorter call)."""
    assert _intervals([(0, 10, 1, 1, 0), (0, 20, 1, 1, 1)]) == {(1, 1): [(0, 20, 1)]}
    assert _intervals([(0, 20, 1, 1, 1), (0, 10, 1, 1, 0)]) == {(1, 1): [(0, 20, 1)]}  # already in order
