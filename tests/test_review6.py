"""Review 6 (2026-11-27): the previous review's unfixed suspicions, each reproduced on a hand-built
(synthetic) trace; each test failed on the code before its fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tracekit
from tests.builders import kineto_event, kineto_file


def _launch_bound_run(tmp_path: Path, cold_kernel_us: int, iterations: int = 10) -> Path:
    """``iterations`` 'iteration' ranges (pid 1, tid 1), each launching 20 kernels 50 µs apart (40 µs
    cudaLaunchKernel calls: launch-bound), then a cudaDeviceSynchronize; the kernels take 10 µs, the first
    iteration's ``cold_kernel_us`` (a slow start in device time: cold caches, lazy module loading). Named
    ``pytorch_b1_s128.synthetic.json`` (synthetic)."""
    events: list[dict[str, Any]] = []
    correlation, t = 1, 1000
    for i in range(iterations):
        kernel = cold_kernel_us if i == 0 else 10
        start, ts, device_free = t, t + 5, 0
        for k in range(20):
            events.append(
                kineto_event("cuda_runtime", "cudaLaunchKernel", ts, 40, 1, 1, correlation=correlation)
            )
            begin = max(ts + 45, device_free)
            events.append(
                kineto_event("kernel", f"k{k}", begin, kernel, 0, 7, device=0, correlation=correlation)
            )
            device_free = begin + kernel
            correlation += 1
            ts += 50
        end = max(ts, device_free) + 20
        events.append(
            kineto_event(
                "cuda_runtime", "cudaDeviceSynchronize", ts + 1, end - ts - 10, 1, 1, correlation=correlation
            )
        )
        correlation += 1
        events.append(kineto_event("user_annotation", "iteration", start, end - start, 1, 1))
        t = end + 30
    return kineto_file(tmp_path, events, "pytorch_b1_s128.synthetic.json")


@pytest.mark.parametrize("cold_kernel_us", [300, 450])
def test_the_launch_call_projection_is_over_the_iterations_of_the_traced_latency(
    tmp_path: Path, cold_kernel_us: int
) -> None:
    """The report's traced latency leaves out the slow first iteration (the stability rules' warm-up drop:
    1.03 ms over 9 iterations); its CUDA-graph projection was the analysis' mean over all 10, the slow one's
    3-4.5 ms of kernels included: 0.833 ms (a saving of 0.20 ms, where the 9 iterations save 0.78), and
    with 450 µs first kernels 1.133 ms, above the traced latency, so the launch-call recommendation was not
    made at all. Both numbers are now over the same 9 iterations: projected 0.254 ms."""
    from tracekit.analyzers.report import config_row

    path = _launch_bound_run(tmp_path, cold_kernel_us)
    analyzed = tracekit.analyze(path)
    assert analyzed.projection is not None and analyzed.projection.projected_ms > 0.8  # over all 10
    row = config_row(analyzed)
    assert row["traced_kept_iterations"] == 9 and row["traced_latency_ms"] == pytest.approx(1.03)
    assert row["graph_projected_ms"] == pytest.approx(0.254, abs=0.001)
    assert row["_graph_caveat"] is None  # the 9 kept iterations' mean is not skewed
    recs = {r["kind"]: r for r in tracekit.report([path]).recommendations}
    assert recs["launch_calls"]["numbers"]["projected_latency_ms"] == pytest.approx(0.254, abs=0.001)


def _lost_launch_run(backlog: bool = False):
    """Five 0.9 ms iterations, each launching a 0.19 ms kernel on stream 7; two more kernels in each run in
    its idle time with correlation ids no call of the trace has (their calls lost during the capture); with
    ``backlog`` one more such kernel runs before any launched one, as work launched before the capture does."""
    from tests.builders import make_trace

    ranges, api, ops = [], [], []
    if backlog:
        ops.append((9_000_000, 9_500_000, 800, 7))
    for i in range(5):
        t = 10_000_000 + i * 1_000_000
        ranges.append((t, t + 900_000, "iteration"))
        api.append((t + 1_000, t + 6_000, i + 1, "cudaLaunchKernel"))
        ops.append((t + 10_000, t + 200_000, i + 1, 7))
        ops.append((t + 300_000, t + 500_000, 900 + 2 * i, 7))
        ops.append((t + 600_000, t + 800_000, 901 + 2 * i, 7))
    return make_trace(ranges, api, ops)


def test_ops_whose_launch_calls_were_lost_are_not_also_said_to_be_launched_before_the_capture() -> None:
    """The lost-launch doubt says the calls of 10 ops were lost during the capture ('not made before the
    capture'); the warning on the same 10 ops said '(launched before the capture began)': one fact, two
    causes. It now gives the doubt's cause, and 'before the capture' only for ops that ran before any
    launched op of their stream (the backlog a busy device still runs)."""
    from tracekit.analyzers.iterations import analyze_iterations

    result = analyze_iterations(_lost_launch_run())
    assert "their launch calls were lost" in (result.summary.verdict_uncertain or "")
    [warning] = [w for w in result.warnings if "no launching call in the trace" in w]
    assert "before the capture" not in warning, warning
    assert (
        "(launched during the capture, their call records lost: they ran after work of their stream"
        in warning
    )
    mixed = analyze_iterations(_lost_launch_run(backlog=True))
    assert "their launch calls were lost" in (mixed.summary.verdict_uncertain or "")
    [warning] = [w for w in mixed.warnings if "no launching call in the trace" in w]
    assert warning.startswith("11 device ops"), warning
    assert (
        "10 of them launched during the capture" in warning
        and "the others before the capture began" in warning
    )


def test_windows_cut_from_the_device_timeline_hold_the_ops_of_lost_launches() -> None:
    """Cut at idle gaps (--split-idle), the windows hold every op, those whose calls were lost too: the
    lost-launch doubt's 'they count in no iteration, and the busy time and utilization are short by their work'
    was false there (each window 100% busy, by their work included), beside a warning that counted them in the
    windows as 'launched before the capture began'."""
    from tracekit.analyzers.iterations import analyze_iterations

    result = analyze_iterations(_lost_launch_run(), split_idle_ms=0.05)
    assert not any("count in no iteration" in w for w in result.warnings), result.warnings
    assert result.summary.verdict_uncertain is None
    [warning] = [w for w in result.warnings if "no launching call in the trace" in w]
    assert warning.startswith("10 device ops in the windows"), warning
    assert "launched during the capture, their call records lost: 10 of them ran after work" in warning


def test_untimed_whole_graph_rows_are_the_stated_cause_of_their_lost_replays(tmp_path: Path) -> None:
    """An nsys export (--cuda-graph-trace=graph) whose GRAPH_TRACE rows for 2 of 10 launches have start = end
    = 0: the reader leaves them out ('2 graph rows have no timestamps ... left out'), and the lost-replay
    doubt gave another cause, 'the profiler recorded none of their work (graph nodes not traced, or their
    records dropped)'. It then named the untimed rows. Now the reader keeps them, untimed, in the iterations
    their launches lie in (3 and 6): those iterations' busy is withheld and named, the other 8 read theirs, and
    no replay is lost (each launch has its execution)."""
    from tests.nsys_builder import NsysBuilder

    us = 1000
    b, correlation = NsysBuilder(), 1
    for i in range(10):
        s = 1_000_000 + i * 100 * us
        b.nvtx_range(s, s + 80 * us, "iteration")
        b.runtime(s + 2 * us, s + 4 * us, "cudaGraphLaunch_v10000", correlation=correlation)
        if i in (3, 6):
            b.graph_execution(0, 0, graph=5, correlation=correlation)  # CUPTI could not time it
        else:
            b.graph_execution(s + 6 * us, s + 40 * us, graph=5, correlation=correlation)
        b.runtime(s + 42 * us, s + 78 * us, "cudaStreamSynchronize_v3020", correlation=correlation + 1)
        correlation += 2
    b.gpu(0, "NVIDIA H100")
    a = tracekit.analyze(b.write(tmp_path / "graph_untimed.synthetic.sqlite"))
    assert any(w.startswith("2 graph rows have no timestamps") for w in a.warnings), a.warnings
    busy = [None if b is None else round(b, 9) for b in a.iterations["gpu_busy_ms"].to_list()]
    assert busy == [0.034] * 3 + [None] + [0.034] * 2 + [None] + [0.034] * 3
    assert any(
        w.startswith("2 of 10 iterations (index 3, 6) hold device ops none of which") for w in a.warnings
    )
    assert not any("hold no device op" in w or "have no start time" in w for w in a.warnings), a.warnings
    assert a.verdict_uncertain is None and a.summary.bound == "framework"


def test_the_report_row_leaves_out_the_setup_caveat_of_an_iteration_its_means_leave_out(
    tmp_path: Path,
) -> None:
    """The first of 10 launch-bound iterations spends 3 ms in a cudaMalloc: the analysis' projection says
    'iteration 0 holds 3.000 ms of setup calls ... against [a warmed-up run] the saving is smaller'. The
    report row's means leave iteration 0 out (the stability rules' warm-up drop), and so does its projection
    now: the caveat, about a saving the row does not show, is left out with it."""
    from tracekit.analyzers.report import config_row

    events: list[dict[str, Any]] = []
    correlation, t = 1, 1000
    for i in range(10):
        start, ts = t, t + 5
        if i == 0:
            events.append(kineto_event("cuda_runtime", "cudaMalloc", ts, 3000, 1, 1, correlation=correlation))
            correlation += 1
            ts += 3005
        for k in range(20):
            events.append(
                kineto_event("cuda_runtime", "cudaLaunchKernel", ts, 40, 1, 1, correlation=correlation)
            )
            events.append(
                kineto_event("kernel", f"k{k}", ts + 45, 10, 0, 7, device=0, correlation=correlation)
            )
            correlation += 1
            ts += 50
        end = ts + 20
        events.append(
            kineto_event("cuda_runtime", "cudaDeviceSynchronize", ts + 1, 9, 1, 1, correlation=correlation)
        )
        correlation += 1
        events.append(kineto_event("user_annotation", "iteration", start, end - start, 1, 1))
        t = end + 30
    analyzed = tracekit.analyze(kineto_file(tmp_path, events, "pytorch_b1_s128.synthetic.json"))
    assert analyzed.projection is not None
    assert (analyzed.projection.caveat or "").startswith("iteration 0 holds 3.000 ms of setup calls")
    row = config_row(analyzed)
    assert row["traced_kept_iterations"] == 9 and row["graph_projected_ms"] == pytest.approx(0.254, abs=0.001)
    assert row["_graph_caveat"] is None
