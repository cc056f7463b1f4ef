"""hostile13 (analysis13): the analysis attacked with hand-built, labelled-synthetic traces whose answers are
worked out by hand (serving steps, several processes, CUDA-graph projection). Every trace here is synthetic."""

from __future__ import annotations

import polars as pl
import pytest

from tests.builders import EPOCH, make_trace
from tracekit.session import analyze_trace

US = 1000
NS = 1
META = {"path": "hostile13_analysis.synthetic.json", "synthetic": True}


def _queued_kernels_trace():
    # One 62 us range on one thread; the host launches 5 kernels at [1, 2), [2, 3), ..., [5, 6) us (corr 1-5),
    # then waits in cudaDeviceSynchronize [6, 61.5) us. The kernels run queued, 300 ns apart: k1 [10, 20),
    # k2 [20.3, 30.3), k3 [30.6, 40.6), k4 [40.9, 50.9), k5 [51.2, 61.2) us. Latency 62 us, busy 50 us; idle
    # 12 us: leading [0, 10) (1 us dispatch, 1 us launch, 8 us in flight), 4 inner gaps of 300 ns (in flight:
    # launch latency, the device idle between queued kernels), trailing [61.2, 62) (0.3 us sync, 0.5 us
    # dispatch after the sync returned).
    t0 = EPOCH
    api = [(t0 + (1 + i) * US, t0 + (2 + i) * US, 1 + i, "cudaLaunchKernel") for i in range(5)]
    api.append((t0 + 6 * US, t0 + 61_500, 6, "cudaDeviceSynchronize"))
    ops = [(t0 + 10 * US + i * 10_300, t0 + 20 * US + i * 10_300, 1 + i, 7) for i in range(5)]
    return make_trace([(t0, t0 + 62 * US, "iteration")], api, ops, dict(META))


def test_the_queued_kernels_trace_is_measured_as_worked_out() -> None:
    a = analyze_trace(_queued_kernels_trace())
    it = a.iterations.row(0, named=True)
    assert it["latency_ms"] == pytest.approx(0.062, abs=1e-12)
    assert it["gpu_busy_ms"] == pytest.approx(0.050, abs=1e-12)
    assert it["idle_gaps"] == 6
    causes = {c: it[f"{c}_ms"] for c in ("dispatch", "launch", "sync", "other_api", "in_flight")}
    assert causes == pytest.approx(
        {"dispatch": 0.0015, "launch": 0.001, "sync": 0.0003, "other_api": 0.0, "in_flight": 0.0092},
        abs=1e-12,
    )


def test_a_cuda_graph_never_lengthens_a_gap_that_is_shorter_than_a_replays_kernel_gap() -> None:
    # The projection replaces each inner gap by max(kept device-side wait, kernel_gap_ns = 777 ns). These
    # inner gaps are 300 ns: the device already ran the queued kernels closer than a replay's median kernel
    # gap, and a graph of the same kernels removes host work and launch latency; it adds none. Projected:
    # min(10 us leading, 26.792 us head) + 50 us busy + 4 x 300 ns + min(0.8 us trailing, 12.458 us tail) =
    # 62 us: saved 0, speedup 1.0. It had been 10 + 50 + 4 x 0.777 + 0.8 = 63.908 us: "saved -0.0019 ms,
    # speedup 0.97", a graph projected to slow down a run whose every inner gap it would keep or shorten.
    p = analyze_trace(_queued_kernels_trace()).projection
    assert p is not None and p.applies
    assert p.projected_ms == pytest.approx(0.062, abs=1e-12)
    assert p.saved_ms == pytest.approx(0.0, abs=1e-12)
    assert p.speedup == pytest.approx(1.0, abs=1e-12)


RANGE_PT = ("start", "end", "name", "depth", "domain", "pid", "thread")
API_PT = ("start", "end", "correlation", "name", "pid", "thread")
OP_PT = ("start", "end", "correlation", "stream", "kind", "device", "pid")


def _two_engines_trace():
    # Two processes in one trace (two data-parallel vLLM/SGLang engines, one GPU each), each with a
    # ProfilerStep#1 around its own engine step: process 1 [0, 100) us holds step[EXTEND bs=4] [5, 90) us
    # (prefill), process 2 [1, 101) us holds step[DECODE bs=32] [6, 91) us (decode). Each launches one
    # 50 us kernel ([10, 11) us call -> [20, 70) us kernel on its own device).
    t0 = EPOCH
    ranges = [
        (t0, t0 + 100 * US, "ProfilerStep#1", 0, "user", 1, 1),
        (t0 + 5 * US, t0 + 90 * US, "step[EXTEND bs=4]", 1, "user", 1, 1),
        (t0 + 1 * US, t0 + 101 * US, "ProfilerStep#1", 0, "user", 2, 2),
        (t0 + 6 * US, t0 + 91 * US, "step[DECODE bs=32]", 1, "user", 2, 2),
    ]
    api = [
        (t0 + 10 * US, t0 + 11 * US, 1, "cudaLaunchKernel", 1, 1),
        (t0 + 10 * US, t0 + 11 * US, 2, "cudaLaunchKernel", 2, 2),
    ]
    ops = [
        (t0 + 20 * US, t0 + 70 * US, 1, 7, "kernel", 0, 1),
        (t0 + 20 * US, t0 + 70 * US, 2, 7, "kernel", 1, 2),
    ]
    return make_trace(ranges, api, ops, dict(META), range_fields=RANGE_PT, api_fields=API_PT, op_fields=OP_PT)


def test_an_iteration_takes_the_class_of_its_own_processs_engine_steps() -> None:
    # Each ProfilerStep takes the class of the engine step of its own process: process 1's is prefill (4
    # context requests), process 2's decode (32 generation requests). The join had ignored the process: both
    # engine steps went to the later-starting ProfilerStep (process 2's, 'mixed', 4 + 32 requests) and
    # process 1's stayed unclassified; step_classes then read one 'mixed' and one 'unclassified' step where
    # the trace holds one prefill and one decode step.
    a = analyze_trace(_two_engines_trace())
    frame = a.iterations.sort("start_ns")
    assert frame["step_class"].cast(str).to_list() == ["prefill", "decode"]
    assert frame["context_requests"].to_list() == [4, 0]
    assert frame["generation_requests"].to_list() == [0, 32]
    assert sorted(row["step_class"] for row in a.to_json()["step_classes"]) == ["decode", "prefill"]


def _two_ranks_with_warm_up():
    # Two processes (two ranks of one job, one GPU each) in one trace, rank 2 starting 5 us after rank 1. Each
    # runs ProfilerStep#0-2: a warm-up step [0, 1000) us whose kernel runs 100 us, then two steady steps
    # [1000, 1100) and [1100, 1200) us whose kernels run 80 us; every step launches its kernel at [1, 2) us,
    # the kernel runs from 5 us, and the host waits in cudaDeviceSynchronize [3 us, kernel end + 1 us).
    # Correlation ids in call order per process. Steady steps: latency 0.1 ms, busy 0.08 ms.
    ranges, api, ops = [], [], []
    for pid, device, offset in ((1, 0, 0), (2, 1, 5 * US)):
        steps = [(0, 1000 * US, 100 * US), (1000 * US, 1100 * US, 80 * US), (1100 * US, 1200 * US, 80 * US)]
        for k, (start, end, busy) in enumerate(steps):
            s, e, c = EPOCH + offset + start, EPOCH + offset + end, pid * 100 + 2 * k
            api.append((s + 1 * US, s + 2 * US, c, "cudaLaunchKernel", pid, pid))
            api.append((s + 3 * US, s + 6 * US + busy, c + 1, "cudaDeviceSynchronize", pid, pid))
            ops.append((s + 5 * US, s + 5 * US + busy, c, 7, "kernel", device, pid))
            ranges.append((s, e, f"ProfilerStep#{k}", 0, "user", pid, pid))
    return make_trace(ranges, api, ops, dict(META), range_fields=RANGE_PT, api_fields=API_PT, op_fields=OP_PT)


def test_per_device_rows_drop_each_ranks_warm_up() -> None:
    # The per-device rows drop each rank's first step: 2 steady steps each, 0.1 ms, 80%.
    from tracekit.session import AnalysisOptions

    a = analyze_trace(_two_ranks_with_warm_up(), options=AnalysisOptions(skip=1))
    assert [(r["device"], r["iterations"], r["latency_ms"], r["gpu_utilization"]) for r in a.per_device] == [
        (0, 2, pytest.approx(0.1, abs=1e-12), pytest.approx(0.8, abs=1e-12)),
        (1, 2, pytest.approx(0.1, abs=1e-12), pytest.approx(0.8, abs=1e-12)),
    ]


def test_skip_drops_the_warm_up_of_every_rank_in_one_trace() -> None:
    # --skip 1 on two ranks: each rank's first step is warm-up. Expected: 4 steady steps (2 a rank), every
    # one 0.1 ms latency and 0.08 ms busy, mean latency 0.1 ms, as the per-device rows have it. Had been: 5
    # iterations, rank 2's 1.0 ms warm-up step (10% busy) among them: mean latency 0.28 ms, and a headline
    # count (5) that is not the per-device rows' sum (2 + 2).
    from tracekit.session import AnalysisOptions

    a = analyze_trace(_two_ranks_with_warm_up(), options=AnalysisOptions(skip=1))
    assert a.iterations["latency_ms"].to_list() == pytest.approx([0.1] * 4, abs=1e-12)
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.08] * 4, abs=1e-12)
    assert a.summary.iterations == 4
    assert a.summary.fields["latency_ms"].mean == pytest.approx(0.1, abs=1e-12)
    assert (
        "--skip 1: the iterations come from 2 processes, so the first 1 of each process were dropped (2 in all)"
        in a.warnings
    )


def test_setup_calls_on_two_threads_at_once_count_their_wall_time_once() -> None:
    # One 10 ms iteration of pid 1: its main thread (1) allocates in cudaMalloc [1, 7) ms, a second thread
    # (2, a pinned-memory worker) in cudaHostAlloc [2, 8) ms at the same time; the main thread launches a
    # kernel ([8.5, 8.6) ms call, [8.7, 9.7) ms kernel). The host time covered by setup calls is [1, 8) ms:
    # 7 ms, 70% of the latency. Summed call by call it had been 12 ms, capped at the window: "spends 10.000
    # ms (100% of its latency) in setup calls", more wall time than the calls covered.
    ms = 1_000_000
    t0 = EPOCH
    api = [
        (t0 + 1 * ms, t0 + 7 * ms, 1, "cudaMalloc", 1, 1),
        (t0 + 2 * ms, t0 + 8 * ms, 2, "cudaHostAlloc", 1, 2),
        (t0 + 8_500_000, t0 + 8_600_000, 3, "cudaLaunchKernel", 1, 1),
    ]
    ops = [(t0 + 8_700_000, t0 + 9_700_000, 3, 7, "kernel", 0, 1)]
    trace = make_trace(
        [(t0, t0 + 10 * ms, "iteration", 0, "user", 1, 1)],
        api,
        ops,
        dict(META),
        range_fields=RANGE_PT,
        api_fields=API_PT,
        op_fields=OP_PT,
    )
    said = [w for w in analyze_trace(trace).warnings if "in setup calls" in w]
    assert len(said) == 1
    assert (
        "spends 7.000 ms (70% of its latency) in setup calls (cudaHostAlloc 6.000 ms, cudaMalloc 6.000 ms)"
        in said[0]
    )


def _two_pipeline_stages_without_ranges():
    # Two processes, one GPU each, no ranges (an nsys capture of a 2-stage pipeline without NVTX): GPU 0
    # (pid 1) and GPU 1 (pid 2) take turns, each running a 100 us kernel every 300 us, GPU 1 150 us after GPU
    # 0, 6 times; each kernel's cudaLaunchKernel runs [-5, -4) us before it. One window over the trace:
    # [-5 us, 1755 - 5 us) = 1.755 ms; the devices together are busy 1.2 ms (68.4%), each alone 0.6 ms of
    # its own 1.605 ms window (37.4%).
    api, ops, corr = [], [], 0
    for k in range(6):
        for device, pid, offset in ((0, 1, 0), (1, 2, 150 * US)):
            corr += 1
            s = EPOCH + k * 300 * US + offset
            api.append((s - 5 * US, s - 4 * US, corr, "cudaLaunchKernel", pid, pid))
            ops.append((s, s + 100 * US, corr, 7, "kernel", device, pid))
    return make_trace(api=api, ops=ops, meta=dict(META), api_fields=API_PT, op_fields=OP_PT)


def test_each_stage_of_the_pipeline_is_framework_bound_on_its_own() -> None:
    a = analyze_trace(_two_pipeline_stages_without_ranges())
    assert a.iterations["gpu_utilization"].to_list() == pytest.approx([1.2 / 1.755], abs=1e-12)
    assert [(r["device"], r["gpu_utilization"], r["bound"]) for r in a.per_device] == [
        (0, pytest.approx(0.6 / 1.605, abs=1e-12), "framework"),
        (1, pytest.approx(0.6 / 1.605, abs=1e-12), "framework"),
    ]


def test_a_headline_over_independent_gpus_is_uncertain_when_every_gpu_says_otherwise() -> None:
    # Proposed: where the per-device rows all disagree with the headline and no process drives two of the
    # devices (devices.devices_sharing_iterations is empty), the headline's verdict is uncertain, naming each
    # device's median utilization (the mirror of per_device_rows' 'together' doubt).
    a = analyze_trace(_two_pipeline_stages_without_ranges())
    assert a.summary.bound == "compute"
    assert a.summary.verdict_uncertain is not None and "37%" in a.summary.verdict_uncertain


def test_a_step_class_whose_overhead_is_unknown_has_no_overhead_share() -> None:
    # Two SGLang decode steps of 100 us open at once on threads 1 and 2 of pid 1 ([0, 100) and [10, 110) us);
    # a third thread launches both kernels ([20, 21) and [30, 31) us calls) while both are open: which step
    # each belongs to is not in the trace, so busy time and overhead are withheld (null) and there is no
    # verdict. The step class's overhead share is unknown too (null); it had read 0.0 (Σ of no known overhead
    # / 0.2 ms of latency): "0% framework overhead" for steps whose overhead nobody knows.
    t0 = EPOCH
    ranges = [
        (t0, t0 + 100 * US, "step[DECODE bs=8]", 0, "user", 1, 1),
        (t0 + 10 * US, t0 + 110 * US, "step[DECODE bs=8]", 0, "user", 1, 2),
    ]
    api = [
        (t0 + 20 * US, t0 + 21 * US, 1, "cudaLaunchKernel", 1, 3),
        (t0 + 30 * US, t0 + 31 * US, 2, "cudaLaunchKernel", 1, 3),
    ]
    ops = [
        (t0 + 25 * US, t0 + 60 * US, 1, 7, "kernel", 0, 1),
        (t0 + 61 * US, t0 + 90 * US, 2, 7, "kernel", 0, 1),
    ]
    trace = make_trace(
        ranges, api, ops, dict(META), range_fields=RANGE_PT, api_fields=API_PT, op_fields=OP_PT
    )
    doc = analyze_trace(trace).to_json()
    assert doc["summary"]["bound"] is None
    [row] = doc["step_classes"]
    assert (row["step_class"], row["steps"], row["framework_overhead_ms"]) == ("decode", 2, None)
    assert row["total_ms"] == pytest.approx(0.2, abs=1e-12)
    assert row["overhead_share"] is None


def test_engine_steps_without_a_process_go_by_time_alone() -> None:
    # The ProfilerStep of pid 1 [0, 100) us holds an engine step whose range carries no process (null pid):
    # it is matched by time, as before the per-process rule: the step is prefill.
    from tracekit.analyzers.steps import step_classes

    t0 = EPOCH
    trace = make_trace(
        [
            (t0, t0 + 100 * US, "ProfilerStep#1", 0, "user", 1, 1),
            (t0 + 5 * US, t0 + 90 * US, "step[EXTEND bs=4]", 1, "user", None, None),
        ],
        meta=dict(META),
        range_fields=RANGE_PT,
    )
    ranges = trace.ranges.filter(trace.ranges["name"] == "ProfilerStep#1").select(
        iteration=0, range_start="start", range_end="end", name="name", pid="pid"
    )
    classes = step_classes(ranges, trace)
    assert classes["step_class"].cast(str).to_list() == ["prefill"]
    assert classes["context_requests"].to_list() == [4]


def test_work_clipped_out_of_every_window_is_said() -> None:
    # Iteration 0 [0, 30) us launches A1 [5, 15) us (stream 7) and, after a stream wait, A2 [50, 60) us;
    # iteration 1 [30, 40) us launches B1 [35, 45) us (stream 8, running during iteration 0's wait) and B2
    # [62, 70) us. Both unsynchronized: windows [0, 60) and [60, 70) us, busy 20 and 8 us. B1's 10 us ran
    # before iteration 1's window began: the device was busy 38 of the 70 us, the iterations count 28, and
    # iteration 0's 40 us of idle time holds B1's 10 us (as in_flight). Expected: a warning giving the 0.010
    # ms of device work counted in no iteration's busy time (proposed: count, per iteration, its ops' time
    # before its window start; warn from a share of the busy time, as _foreign_work_findings does).
    t0 = EPOCH
    ranges = [(t0, t0 + 30 * US, "iteration"), (t0 + 30 * US, t0 + 40 * US, "iteration")]
    api = [
        (t0 + 1 * US, t0 + 2 * US, 1, "cudaLaunchKernel"),
        (t0 + 2_500, t0 + 3 * US, 2, "cudaStreamWaitEvent"),
        (t0 + 3 * US, t0 + 4 * US, 3, "cudaLaunchKernel"),
        (t0 + 31 * US, t0 + 32 * US, 4, "cudaLaunchKernel"),
        (t0 + 33 * US, t0 + 34 * US, 5, "cudaLaunchKernel"),
    ]
    ops = [
        (t0 + 5 * US, t0 + 15 * US, 1, 7),
        (t0 + 50 * US, t0 + 60 * US, 3, 7),
        (t0 + 35 * US, t0 + 45 * US, 4, 8),
        (t0 + 62 * US, t0 + 70 * US, 5, 8),
    ]
    a = analyze_trace(make_trace(ranges, api, ops, dict(META)))
    assert a.iterations["latency_ms"].to_list() == pytest.approx([0.06, 0.01], abs=1e-12)
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.02, 0.008], abs=1e-12)
    assert any("0.010 ms" in w and "no iteration" in w for w in a.warnings)


def test_another_processes_op_starting_at_the_same_instant_does_not_end_this_gap() -> None:
    # Two processes, one GPU each, one 100 us 'iteration' each. pid 1 (thread 1): cudaLaunchKernel [2, 3) us ->
    # P [50, 60) us on GPU 0, then cudaDeviceSynchronize [3, 61). pid 2 (thread 2): host code until
    # cudaLaunchKernel [40, 45) us -> Q [50, 70) us on GPU 1, then cudaDeviceSynchronize [45, 71). P and Q start
    # at the same instant. pid 2's leading gap [0, 50) ends at its own Q: [0, 40) dispatch, [40, 45) launch,
    # [45, 50) in flight; trailing [70, 100): 1 us sync, 29 us dispatch. Had been: P (launched first, by
    # another process on another GPU) taken as the gap's next op, its thread's state deciding pid 2's time:
    # 2 us dispatch, 1 us launch, 47 us in flight (dispatch 31 us where it is 69 us).
    t0 = EPOCH
    ranges = [
        (t0, t0 + 100 * US, "iteration", 0, "user", 1, 1),
        (t0, t0 + 100 * US, "iteration", 0, "user", 2, 2),
    ]
    api = [
        (t0 + 2 * US, t0 + 3 * US, 1, "cudaLaunchKernel", 1, 1),
        (t0 + 3 * US, t0 + 61 * US, 2, "cudaDeviceSynchronize", 1, 1),
        (t0 + 40 * US, t0 + 45 * US, 1, "cudaLaunchKernel", 2, 2),
        (t0 + 45 * US, t0 + 71 * US, 2, "cudaDeviceSynchronize", 2, 2),
    ]
    ops = [
        (t0 + 50 * US, t0 + 60 * US, 1, 7, "kernel", 0, 1),
        (t0 + 50 * US, t0 + 70 * US, 1, 7, "kernel", 1, 2),
    ]
    trace = make_trace(
        ranges, api, ops, dict(META), range_fields=RANGE_PT, api_fields=API_PT, op_fields=OP_PT
    )
    a = analyze_trace(trace)
    frame = a.iterations.join(a.ranges.select(pl.col("iteration").alias("index"), "pid"), on="index")
    row = frame.filter(pl.col("pid") == 2).row(0, named=True)
    assert (row["latency_ms"], row["gpu_busy_ms"]) == pytest.approx((0.1, 0.02), abs=1e-12)
    causes = {c: row[f"{c}_ms"] for c in ("dispatch", "launch", "sync", "other_api", "in_flight")}
    assert causes == pytest.approx(
        {"dispatch": 0.069, "launch": 0.005, "sync": 0.001, "other_api": 0.0, "in_flight": 0.005}, abs=1e-12
    )


def _rank_op_launched_before_the_capture():
    # As above, but pid 1's op P [50, 60) us (GPU 0) was launched before the capture: correlation 99, no call
    # in the trace; pid 1 also launches P1 [10, 20) us by a [2, 3) us call, so its ranges stay. pid 2's Q
    # [50, 70) us starts at the same instant as P. pid 2's leading gap [0, 50) ends at its own Q: 40 us
    # dispatch, 5 us launch, 5 us in flight. Taking P (launched before the capture, so 'launched first') as
    # its next op makes the whole 50 us in flight.
    t0 = EPOCH
    ranges = [
        (t0, t0 + 100 * US, "iteration", 0, "user", 1, 1),
        (t0, t0 + 100 * US, "iteration", 0, "user", 2, 2),
    ]
    api = [
        (t0 + 2 * US, t0 + 3 * US, 1, "cudaLaunchKernel", 1, 1),
        (t0 + 3 * US, t0 + 61 * US, 2, "cudaDeviceSynchronize", 1, 1),
        (t0 + 40 * US, t0 + 45 * US, 1, "cudaLaunchKernel", 2, 2),
        (t0 + 45 * US, t0 + 71 * US, 2, "cudaDeviceSynchronize", 2, 2),
    ]
    ops = [
        (t0 + 10 * US, t0 + 20 * US, 1, 7, "kernel", 0, 1),
        (t0 + 50 * US, t0 + 60 * US, 99, 7, "kernel", 0, 1),
        (t0 + 50 * US, t0 + 70 * US, 1, 7, "kernel", 1, 2),
    ]
    return make_trace(ranges, api, ops, dict(META), range_fields=RANGE_PT, api_fields=API_PT, op_fields=OP_PT)


PID2_CAUSES_NS = {"dispatch": 69 * US, "launch": 5 * US, "sync": 1 * US, "other_api": 0, "in_flight": 5 * US}


def test_an_op_another_process_launched_before_the_capture_does_not_end_this_gap_given_the_ops_processes():
    # attribution.attribute_trace passes the ops' processes: P is no candidate for pid 2's gap.
    from tracekit.analyzers.attribution import attribute_trace
    from tracekit.analyzers.iterations import analyze_iterations

    trace = _rank_op_launched_before_the_capture()
    analysis = analyze_iterations(trace, attribute=False)
    att = attribute_trace(trace, analysis).iterations
    pid2 = analysis.ranges.filter(pl.col("pid") == 2).get_column("iteration").item()
    row = att.filter(pl.col("index") == pid2).row(0, named=True)
    assert {c: row[f"{c}_ns"] for c in PID2_CAUSES_NS} == PID2_CAUSES_NS


def test_an_op_another_process_launched_before_the_capture_does_not_end_this_gap() -> None:
    a = analyze_trace(_rank_op_launched_before_the_capture())
    frame = a.iterations.join(a.ranges.select(pl.col("iteration").alias("index"), "pid"), on="index")
    row = frame.filter(pl.col("pid") == 2).row(0, named=True)
    assert {c: round(row[f"{c}_ms"] * 1e6) for c in PID2_CAUSES_NS} == PID2_CAUSES_NS


def _cpu_nvtx_trace(tmp_path, per_iteration: int):  # noqa: ANN001, ANN202
    """A CPU-only Nsight Systems capture: four 'iteration' ranges of 100 µs, each holding ``per_iteration``
    back-to-back leaf ranges covering 90 µs ('forward' and 'postprocess' for two; 'aten::op_k' for more)."""
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder()
    names = (
        ["forward", "postprocess"] if per_iteration == 2 else [f"aten::op_{k}" for k in range(per_iteration)]
    )
    for i in range(4):
        t0 = 10 * US + i * 200 * US
        b.nvtx_range(t0, t0 + 100 * US, "iteration")
        width = 90 * US // per_iteration
        for k, name in enumerate(names):
            b.nvtx_range(t0 + 5 * US + k * width, t0 + 5 * US + (k + 1) * width, name)
    return b.write(tmp_path / f"cpu_nvtx_{per_iteration}.synthetic.sqlite")


def test_two_nvtx_phases_per_iteration_read_as_operators_make_the_verdict_uncertain(tmp_path) -> None:  # noqa: ANN001
    # 'forward' and 'postprocess' cover 90 of each 100 µs: "compute-bound, 90%" had been said with no doubt
    # (the real local_nvtx_only_cpu_2022.4 export: 99.9%); those ranges hold the framework's own code
    a = _analyze_path(_cpu_nvtx_trace(tmp_path, 2), skip=0)
    assert a.summary.bound == "compute"
    assert a.iterations["gpu_utilization"].to_list() == pytest.approx([0.9] * 4)
    assert a.summary.verdict_uncertain == (
        "verdict uncertain: the operators of this CPU-only Nsight Systems trace are its leaf NVTX ranges, 2 per "
        "iteration (median; 'forward', 'postprocess'): phases of the iteration rather than framework operators, "
        "so the host's framework code inside them counts as operator busy time; annotate operators "
        "(torch.autograd.profiler.emit_nvtx) or profile with torch.profiler or ONNX Runtime's profiler"
    )


def test_many_nvtx_operators_per_iteration_keep_the_verdict(tmp_path) -> None:  # noqa: ANN001
    # five ranges an iteration (more than FEW_NVTX_OPERATORS, as emit_nvtx's hundreds): read as operators
    from tracekit.analyzers.plausibility import FEW_NVTX_OPERATORS

    assert FEW_NVTX_OPERATORS == 4
    a = _analyze_path(_cpu_nvtx_trace(tmp_path, 5), skip=0)
    assert a.summary.bound == "compute" and a.summary.verdict_uncertain is None


def _analyze_path(path, skip: int = 0):  # noqa: ANN001, ANN202
    import tracekit

    return tracekit.analyze(path, skip=skip)
