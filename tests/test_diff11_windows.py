"""Exact cases the cross-format differential testing (tests/test_diff11_formats.py) turned up: hand-built,
labelled-synthetic workloads (tests/test_diff11_workload.py) written both as an nsys SQLite export and as a
Kineto JSON trace, each analyzed, each figure checked against the number worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_diff11_workload import Call, Op, Range, Workload, write_kineto, write_nsys
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.readers import read_trace

US = 1000
FORMATS = ("nsys", "kineto")


def _analyze(w: Workload, tmp_path: Path, fmt: str):
    if fmt == "nsys":
        path = write_nsys(w, tmp_path / "w.synthetic.sqlite")
    else:
        path = write_kineto(w, tmp_path / "w.synthetic.json")
    return analyze_iterations(read_trace(path))


def _graph_step(start: int, corr: int, graph: int, kernels: int) -> tuple[Range, Call, list[Op]]:
    """One 100 us iteration replaying ``graph`` (``kernels`` kernels named "layer" of 10 us, back to back from
    +10 us) with one 5 us ``cudaGraphLaunch`` at +2 us, then a 1 us sync once the replay is done."""
    ops = [
        Op(start + 10 * US + k * 10 * US, start + 20 * US + k * 10 * US, "kernel", 7, corr, 0, graph, "layer")
        for k in range(kernels)
    ]
    return Range(start, start + 100 * US), Call(start + 2 * US, start + 7 * US, "cudaGraphLaunch", corr), ops


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_replay_of_another_graph_is_not_a_cut_off_replay(tmp_path: Path, fmt: str) -> None:
    # Iteration 0 replays graph 1 (4 kernels), iteration 1 graph 2 (3 kernels of the same names, e.g. the same
    # layer captured for another shape): graph 2's replay is whole, and its last kernel is the last op of the
    # device. Before, the cut-off-replay rule compared op names only, called iteration 1 "the capture ended
    # during the replay" and left it out (1 iteration analyzed); it is 2 iterations, 40 and 30 us busy.
    w = Workload()
    for i, (graph, kernels) in enumerate(((1, 4), (2, 3))):
        r, c, ops = _graph_step(i * 200 * US, i + 1, graph, kernels)
        w.ranges.append(r)
        w.calls.append(c)
        w.ops.extend(ops)
    a = _analyze(w, tmp_path, fmt)
    assert a.iterations.height == 2
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.04, 0.03], abs=1e-12)
    assert not any("capture ended during the replay" in x for x in a.warnings)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_replay_of_the_same_graph_cut_short_is_still_left_out(tmp_path: Path, fmt: str) -> None:
    # The same shape with one graph (id 1) replayed in both iterations: the second replay holds the first 3
    # of its 4 kernels and ends the capture: cut off, left out (the rule kept).
    w = Workload()
    for i, kernels in enumerate((4, 3)):
        r, c, ops = _graph_step(i * 200 * US, i + 1, 1, kernels)
        w.ranges.append(r)
        w.calls.append(c)
        w.ops.extend(ops)
    a = _analyze(w, tmp_path, fmt)
    assert a.iterations.height == 1
    assert any("capture ended during the replay" in x for x in a.warnings)


def _two_ranks(tmp_path: Path, fmt_nsys: bool = True) -> Path:
    """One nsys report of two processes (``nsys profile torchrun``), synthetic: rank 0 (pid 100, device 0) and
    rank 1 (pid 200, device 1), three 3 ms iterations each, side by side. Rank 0 launches a kernel at +100 us
    (10 us call) that starts 1.5 ms after the call returned and runs 1 ms, then syncs until +2.62 ms; rank 1
    keeps device 1 busy from +10 us to +2.9 ms. Correlation ids grow per process, as CUDA gives them."""
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.gpu(1, "NVIDIA H100")
    for i in range(3):
        s = i * 5000 * US
        b.nvtx_range(s, s + 3000 * US, "iteration", pid=100, tid=100)
        b.runtime(
            s + 100 * US, s + 110 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1, pid=100, tid=100
        )
        b.kernel(s + 1610 * US, s + 2610 * US, "gemm", correlation=2 * i + 1, pid=100, device=0)
        b.runtime(
            s + 120 * US,
            s + 2620 * US,
            "cudaDeviceSynchronize_v3020",
            correlation=2 * i + 2,
            pid=100,
            tid=100,
        )
        b.nvtx_range(s, s + 3000 * US, "iteration", pid=200, tid=200)
        b.runtime(s + 1 * US, s + 5 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1, pid=200, tid=200)
        b.kernel(s + 10 * US, s + 2900 * US, "gemm", correlation=2 * i + 1, pid=200, device=1)
        b.runtime(
            s + 6 * US, s + 2950 * US, "cudaDeviceSynchronize_v3020", correlation=2 * i + 2, pid=200, tid=200
        )
    return b.write(tmp_path / "two_ranks.synthetic.sqlite")


def test_another_devices_work_is_not_queueing_on_this_one(tmp_path: Path) -> None:
    # Rank 0's kernel waited 1.5 ms on an idle device 0 after its call returned: in_flight 1.5 ms, all
    # launch_lag, and the launch-lag doubt. Before, device 1's kernel (another rank's, another GPU) running
    # meanwhile made it 1.5 ms "queued" (behind other work) and the doubt vanished.
    a = analyze_iterations(read_trace(_two_ranks(tmp_path)))
    att = a.attribution.iterations
    # iterations in start order: rank 0's range comes first at each step (same start, pid 100)
    rank0 = [0, 2, 4]
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([1.0, 2.89] * 3, abs=1e-12)
    assert att["in_flight_ns"].gather(rank0).to_list() == [1_500_000] * 3
    assert att["launch_lag_ns"].gather(rank0).to_list() == [1_500_000] * 3
    assert att["queued_ns"].to_list() == [0] * 6
    assert any("started more than 1 ms after their launch call returned" in w for w in a.warnings)


def test_a_blocking_copy_waits_for_its_own_device_not_another(tmp_path: Path) -> None:
    # Process 100 (device 0), one 1 ms iteration: a synchronous cudaMemcpy call [100, 600) us whose DtoH copy
    # runs [400, 500) us on device 0, idle before it. Process 200 (no ranges) keeps device 1 busy [10, 300)
    # us. The copy call's wait (sync) is from its copy's start, 400 us: other_api 300 us (its staging), sync
    # 100 us (after the copy, until the call returned), dispatch 100 + 400 us. Before, device 1's kernel,
    # ending inside the call at 300 us, was taken for work the copy waited on: sync 200 us, other_api 200 us.
    from tests.nsys_builder import NsysBuilder

    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.gpu(1, "NVIDIA H100")
    b.mem_kinds()
    b.nvtx_range(0, 1000 * US, "iteration", pid=100, tid=100)
    b.runtime(100 * US, 600 * US, "cudaMemcpy_v3020", correlation=1, pid=100, tid=100)
    b.memcpy(400 * US, 500 * US, copy_kind=2, correlation=1, pid=100, device=0, src_kind=2, dst_kind=0)
    b.runtime(1 * US, 5 * US, "cudaLaunchKernel_v7000", correlation=1, pid=200, tid=200)
    b.kernel(10 * US, 300 * US, "gemm", correlation=1, pid=200, device=1)
    a = analyze_iterations(read_trace(b.write(tmp_path / "copy.synthetic.sqlite")))
    att = a.attribution.iterations
    assert a.iterations["latency_ms"].to_list() == pytest.approx([1.0], abs=1e-12)
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.1], abs=1e-12)
    got = {c: att[f"{c}_ns"][0] for c in ("dispatch", "launch", "sync", "other_api", "in_flight")}
    assert got == {"dispatch": 500 * US, "launch": 0, "sync": 100 * US, "other_api": 300 * US, "in_flight": 0}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_trailing_gap_ending_at_the_iterations_own_zero_length_op_is_device_side(
    tmp_path: Path, fmt: str
) -> None:
    # Whole-µs times (older Kineto): one 50 us iteration launches kernel A ([5, 10) us call, runs [12, 40) us)
    # and kernel B ([20, 25) us call), a sub-µs kernel written as 0 us at 60 us: the iteration is
    # unsynchronized, its window [0, 60) us, busy 28 us. Its trailing gap [40, 60) us ends at B, launched at
    # 25 us: device-side whole (in_flight 20 us). Before, a trailing gap had no next op and the range
    # thread's state decided: 20 us "dispatch" (framework overhead) after the range had ended.
    w = Workload(
        ranges=[Range(0, 50 * US)],
        calls=[Call(5 * US, 10 * US, "cudaLaunchKernel", 1), Call(20 * US, 25 * US, "cudaLaunchKernel", 2)],
        ops=[Op(12 * US, 40 * US, "kernel", 7, 1), Op(60 * US, 60 * US, "kernel", 13, 2)],
    )
    if fmt == "nsys":
        path = write_nsys(w, tmp_path / "w.synthetic.sqlite")
    else:
        path = write_kineto(w, tmp_path / "w.synthetic.json", integer=True)
    a = analyze_iterations(read_trace(path))
    it = a.iterations
    assert it["latency_ms"].to_list() == pytest.approx([0.06], abs=1e-12)
    assert it["gpu_busy_ms"].to_list() == pytest.approx([0.028], abs=1e-12)
    got = {
        c: a.attribution.iterations[f"{c}_ns"][0]
        for c in ("dispatch", "launch", "sync", "other_api", "in_flight")
    }
    assert got == {"dispatch": 5 * US, "launch": 5 * US, "sync": 0, "other_api": 0, "in_flight": 22 * US}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_devices_own_analysis_keeps_the_sync_calls_of_its_process(tmp_path: Path, fmt: str) -> None:
    # One process, one thread, two GPUs, two 1 ms iterations: a kernel on GPU 0 [100, 600) us and on GPU 1
    # [150, 700) us, launched by 5 us calls at +10 and +20 us, then cudaDeviceSynchronize [30, 710) us. GPU 0's
    # own analysis (per-GPU rows of a many-trace run, attribute=True): leading gap 10 us dispatch, 5 us launch,
    # 85 us in_flight; trailing gap [600, 1000) us: 110 us sync (in the synchronize), 290 us dispatch. Before,
    # a device's part kept only calls without a correlation id, and nsys and Kineto give every runtime call
    # one: the synchronize was dropped and its 110 us read "dispatch" (sync 0).
    from tracekit.analyzers.devices import analyze_devices

    w = Workload(devices=2)
    corr = 0
    for i in range(2):
        s = i * 1000 * US
        w.ranges.append(Range(s, s + 1000 * US))
        for d, (cs, ks, ke) in enumerate(((10, 100, 600), (20, 150, 700))):
            corr += 1
            w.calls.append(Call(s + cs * US, s + (cs + 5) * US, "cudaLaunchKernel", corr))
            w.ops.append(Op(s + ks * US, s + ke * US, "kernel", 7, corr, d))
        corr += 1
        w.calls.append(Call(s + 30 * US, s + 710 * US, "cudaDeviceSynchronize", corr))
    if fmt == "nsys":
        path = write_nsys(w, tmp_path / "w.synthetic.sqlite")
    else:
        path = write_kineto(w, tmp_path / "w.synthetic.json")
    parts = {d.device: d.result for d in analyze_devices(read_trace(path), attribute=True)}
    gpu0 = parts[0].attribution.iterations
    causes = ("dispatch", "launch", "sync", "other_api", "in_flight")
    assert [{c: gpu0[f"{c}_ns"][i] for c in causes} for i in range(2)] == [
        {"dispatch": 300 * US, "launch": 5 * US, "sync": 110 * US, "other_api": 0, "in_flight": 85 * US}
    ] * 2
    assert parts[0].iterations["gpu_busy_ms"].to_list() == pytest.approx([0.5, 0.5], abs=1e-12)
    assert parts[1].attribution.iterations["sync_ns"].to_list() == [10 * US] * 2


def test_the_half_time_rule_of_the_input_shape_doubt_is_exact() -> None:
    # Rounding (ns vs ms): ONNX Runtime runs of 3 shapes, synthetic figures: [1,7] 1 run of 0.3 ms at 20%
    # (framework), [2,7] 2 of 0.05 ms and [4,7] 2 of 0.1 ms at 90% (compute, the headline). [1,7] is exactly
    # half the runs' time (300,000 of 600,000 ns): a doubt, in whatever order the shapes appear. Before, the
    # shapes' times were summed as float ms: in the order [1,7], [2,7], [4,7] 0.3 + 0.1 + 0.2 =
    # 0.6000000000000001, [1,7] fell under half and the doubt became a warning.
    from tests.test_mutants11_iterations import _shapes_of  # (the same runs: mutation11 found this too)

    for order in (["[1,7]", "[2,7]", "[4,7]"], ["[1,7]", "[4,7]", "[2,7]"], ["[4,7]", "[2,7]", "[1,7]"]):
        warnings, doubts = _shapes_of(order)
        assert warnings == [] and len(doubts) == 1, order
        assert doubts[0].startswith("verdict uncertain: the 5 analyzed runs are of 3 input shapes"), order


def test_the_half_time_rule_of_the_step_class_doubt_is_exact() -> None:
    # Rounding (ns vs ms), serving steps, synthetic figures: five decode steps of 0.1, 0.05, 0.03, 0.01 and
    # 0.11 ms at 90% (compute, the headline), then one prefill step of 0.3 ms at 20% (framework): 1 of 6 steps
    # (under a quarter) but exactly half the time (300,000 of 600,000 ns): the verdict is uncertain. Before,
    # the steps' times were summed as float ms, 0.6000000000000001 in this order, and the prefill step fell
    # under half: a warning only.
    import polars as pl

    from tracekit.analyzers.iterations import _step_class_findings

    latency = [0.1, 0.05, 0.03, 0.01, 0.11, 0.3]
    frame = pl.DataFrame(
        {
            "latency_ms": latency,
            "gpu_utilization": [0.9] * 5 + [0.2],
            "step_class": ["decode"] * 5 + ["prefill"],
        }
    )
    _, doubts, _ = _step_class_findings(frame, 0.5)
    assert len(doubts) == 1 and doubts[0].startswith("verdict uncertain: the serving steps' classes")
