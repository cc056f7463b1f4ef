"""Round 15, ONNX Runtime profile and Nsight Compute CSV forms the readers had not met, checked against ORT's
source and NVIDIA's ncu documentation (tests/notes of ortncu15).

Every input is hand-built in the test (file names holding "synthetic"); ORT times are µs in the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tracekit
from tracekit.model import GPU_PROVIDER_NODES
from tracekit.readers.ort import read as read_ort

# ---------------------------------------------------------------------------------------------- ORT


def _ev(cat: str, name: str, ts: int, dur: int, pid: int = 1, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": pid, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _runs(provider: str, runs: int = 3) -> list[dict[str, Any]]:
    """``runs`` runs of 1000 µs from 200 µs, 1100 µs apart, each of 4 MatMul nodes of 200 µs on ``provider``
    (at +50, +270, +490, +710 µs): 800 µs of node time per run."""
    events = [_ev("Session", "session_initialization", 0, 100)]
    for r in range(runs):
        start = 200 + r * 1100
        events.append(_ev("Session", "model_run", start, 1000))
        events += [
            _ev("Node", f"n{i}_kernel_time", start + 50 + i * 220, 200, op_name="MatMul", provider=provider)
            for i in range(4)
        ]
    return events


def _write(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


@pytest.mark.parametrize("provider", ["CudaPluginExecutionProvider", "AMDGPUExecutionProvider"])
def test_gpu_plugin_execution_providers_time_launches_not_gpu_work(tmp_path: Path, provider: str) -> None:
    """ORT 1.25+ ships the CUDA execution provider as a plugin library too, registered under the name
    "CudaPluginExecutionProvider" (cuda_ep_factory.h: ``ep_name_{"CudaPluginExecutionProvider"}``), and ORT
    GenAI registers AMD's MIGraphX-based GPU provider as "AMDGPUExecutionProvider" (HIP streams,
    amdgpu_execution_provider.cc). Like the CUDA EP, their nodes queue kernels on a device stream and return:
    ORT times the launch. Before, the names were unknown: 3 runs of 4 MatMul nodes (800 µs of 1000 µs each)
    read "compute-bound, 80% utilization" from launch times, with only an "unknown provider" warning. Now the
    verdict is withheld as for CUDAExecutionProvider's nodes."""
    path = _write(tmp_path, f"ort_{provider}.synthetic.json", _runs(provider))
    trace = read_ort(path)
    assert trace.meta[GPU_PROVIDER_NODES] == [12, 12]
    assert not any("does not know" in w for w in trace.warnings)
    analysis = tracekit.analyze(path, skip=0)
    assert analysis.verdict is None
    assert analysis.summary.bound is None
    assert analysis.no_verdict is not None and "12 of 12 operator events ran on a GPU" in analysis.no_verdict


def _trt_run_with_kernels(provider: str) -> list[dict[str, Any]]:
    """One 500 µs run from 100 µs: one fused node of ``provider`` (110-310 µs) and two kernels it launched, as
    GPUProfilerBase (ORT 1.14+) writes them after their node: op_name and parent_name, stream "7", pid/tid -1."""
    node = "TRTKernel_graph_main_0_kernel_time"
    return [
        _ev("Session", "model_run", 100, 500),
        _ev("Node", node, 110, 200, op_name="TRTKernel_graph_main_0", provider=provider),
        _ev("Kernel", "sm90_xmma_gemm", 130, 150, pid=-1, tid=-1, stream="7", op_name="TRTKernel_graph_main_0",
            parent_name=node),
        _ev("Kernel", "fused_softmax", 290, 100, pid=-1, tid=-1, stream="7", op_name="TRTKernel_graph_main_0",
            parent_name=node),
    ]  # fmt: skip


@pytest.mark.parametrize("provider", ["TensorrtExecutionProvider", "CudaPluginExecutionProvider"])
def test_kernel_events_of_a_tensorrt_session_are_cupti_times(tmp_path: Path, provider: str) -> None:
    """The TensorRT EP has no profiler of its own (only the CUDA, ROCm, WebGPU and VitisAI providers return one
    from GetProfiler): a session's Kernel events come from the CUDA EP's CUPTI profiler, registered beside it,
    which records every kernel of the process under the ORT event open at its launch (cupti_manager.cc,
    gpu_profiler_common.h), here the fused TensorRT node. Before, a profile whose nodes all ran on TensorRT
    (or on the CUDA plugin EP) was said to hold "the TensorrtExecutionProvider's own profiler, not CUPTI" times
    "on a clock tracekit cannot check": false, the clock is checked as for CUDA. Busy time 0.250 ms either way."""
    path = _write(tmp_path, f"ort_trt_kernels_{provider}.synthetic.json", _trt_run_with_kernels(provider))
    trace = read_ort(path)
    assert trace.meta["device"] == "gpu"
    assert not any("own profiler" in w for w in trace.warnings)
    assert any(w.startswith("GPU times come from ORT's own CUDA profiling") for w in trace.warnings)
    assert sorted(trace.ops["end"] - trace.ops["start"]) == [100_000, 150_000]


def test_kernel_events_of_vitisai_still_come_from_its_own_profiler(tmp_path: Path) -> None:
    """The other side of the rule above: VitisAI's profiler (vitisai_profiler.cc) writes its NPU's kernels as
    Kernel events itself; that warning stays."""
    path = _write(
        tmp_path, "ort_vitis_kernels.synthetic.json", _trt_run_with_kernels("VitisAIExecutionProvider")
    )
    trace = read_ort(path)
    assert any("VitisAIExecutionProvider's own profiler, not CUPTI" in w for w in trace.warnings)


#: the profiling start on the epoch clock, µs: PluginEpProfiler adds it to each ORT event's ts to make the
#: correlation id a plugin EP's profiler sees (``profiling_start_time_epoch_us_ + relative_ort_event_id``)
EPOCH_US = 1_767_000_000_000_000


def _plugin_profile(late_us: int) -> list[dict[str, Any]]:
    """3 runs of 1000 µs (from 200 µs, 1100 µs apart) of 2 CudaPluginExecutionProvider nodes (100 µs at +50
    and +300), each launching one 150 µs kernel 20 µs after its start; the kernels written ``late_us`` after
    that. As the CUDA plugin EP's profiler (cuda_profiler_plugin.cc) and ORT's PluginEpProfiler::EndProfiling
    (appends the EP's events after ORT's) write them: at the end of the array, pid/tid -1, the CUPTI args and
    ort_correlation_id (the node's ts + the epoch start), ort_event_name, ort_op_name; no parent_name."""
    events = [_ev("Session", "session_initialization", 0, 100)]
    kernels = []
    for r in range(3):
        start = 200 + r * 1100
        events.append(_ev("Session", "model_run", start, 1000))
        for i, offset in enumerate((50, 300)):
            ts = start + offset
            name = f"n{i}_kernel_time"
            events.append(
                _ev("Node", name, ts, 100, op_name="MatMul", provider="CudaPluginExecutionProvider")
            )
            kernels.append(
                _ev("Kernel", f"gemm{i}", ts + 20 + late_us, 150, pid=-1, tid=-1, stream="13", grid_x="8",
                    ort_correlation_id=str(EPOCH_US + ts), ort_event_name=name, ort_op_name="MatMul")
            )  # fmt: skip
    return events + kernels


def test_plugin_ep_kernels_appended_at_the_end_are_linked_to_their_nodes(tmp_path: Path) -> None:
    """The plugin EP's Kernel events come after all of ORT's events, with no parent_name: the reader linked
    none of them to the node that launched them, so the clock checks (a kernel cannot start before its node
    nor end after its run) were silently off. Written 900 µs late (each kernel ends after its run), the 6
    kernels said nothing before; now they are linked through ort_event_name and ort_correlation_id (their node
    is the one of that name whose ts is the id minus the one epoch offset all of them share) and the warning
    counts them: 6 of 6, up to 0.370 ms late (node at +300, kernel 20 + 900 µs later, 150 µs long: ends at
    +1370 of a 1000 µs run)."""
    path = _write(tmp_path, "ort_plugin_late.synthetic.json", _plugin_profile(900))
    trace = read_ort(path)
    assert trace.meta["ops_after_run"] == [6, 6, 370_000]
    assert any(w.startswith("6 of 6 GPU ops (Kernel events) linked to the node") for w in trace.warnings)


def test_plugin_ep_kernels_in_time_raise_no_clock_warning(tmp_path: Path) -> None:
    """The same profile with each kernel 20 µs after its node: linked, none before its node nor after its run;
    GPU busy 0.300 ms per run (2 kernels of 150 µs)."""
    path = _write(tmp_path, "ort_plugin_in_time.synthetic.json", _plugin_profile(0))
    trace = read_ort(path)
    assert "ops_after_run" not in trace.meta and "ops_before_parent" not in trace.meta
    analysis = tracekit.analyze(path, skip=0)
    assert analysis.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.3, 0.3, 0.3])


def test_plugin_ep_kernels_before_their_node_are_said(tmp_path: Path) -> None:
    """Kernels written 500 µs early (CUPTI's GPU clock not moved onto the CPU's): each starts 480 µs before
    its node: 6 of 6 linked kernels, largest lead 0.480 ms."""
    path = _write(tmp_path, "ort_plugin_early.synthetic.json", _plugin_profile(-500))
    trace = read_ort(path)
    assert trace.meta["ops_before_parent"] == [6, 6, 480_000]


def _graph_profile(replay_kernels: bool) -> list[dict[str, Any]]:
    """2 runs of 2 CUDA nodes each launching one 150 µs kernel, then 3 runs that replay the captured graph (no
    Node event), 500 µs each, 1000 µs apart from 1000 µs. With ``replay_kernels`` the replays hold the graph's
    two kernels (at +100 and +260, 150 µs each), written as GPUProfilerBase::MergeEvents writes kernels
    correlated with the run: after the model_run event, parent_name "model_run", op_name "" (the run's args
    have none)."""
    events: list[dict[str, Any]] = [_ev("Session", "session_initialization", 0, 100)]
    for r in range(5):
        start = 1000 + r * 1000
        events.append(_ev("Session", "model_run", start, 500))
        if r < 2:
            for i in range(2):
                node = f"n{i}_kernel_time"
                events.append(
                    _ev(
                        "Node",
                        node,
                        start + 10 + 60 * i,
                        50,
                        op_name="MatMul",
                        provider="CUDAExecutionProvider",
                    )
                )
                events.append(
                    _ev(
                        "Kernel",
                        f"gemm{i}",
                        start + 100 + 160 * i,
                        150,
                        pid=-1,
                        tid=-1,
                        stream="7",
                        op_name="MatMul",
                        parent_name=node,
                    )
                )
        elif replay_kernels:
            events += [
                _ev(
                    "Kernel",
                    f"gemm{i}",
                    start + 100 + 160 * i,
                    150,
                    pid=-1,
                    tid=-1,
                    stream="7",
                    op_name="",
                    parent_name="model_run",
                )
                for i in range(2)
            ]
    return events  # fmt: skip


def test_graph_replays_with_their_kernels_are_whole_runs(tmp_path: Path) -> None:
    """ORT starts its profiler event (and the EP profiler's CUPTI correlation) before a run replays its
    captured graph and ends it after (InferenceSession::Run: ``session_profiler_.Start()``, ReplayGraph,
    ``EndTimeAndRecordEvent(... "model_run" ...)``), and CUPTI gives a graph's kernels the correlation id of
    the cudaGraphLaunch: in a build with CUDA profiling the replays' kernels are in the profile, under the
    run. Before, every run without a Node event was "a replay whose busy time is not in the profile" and the
    verdict was withheld; 3 such runs here hold their 2 kernels of 150 µs each: busy 0.300 ms of 0.500 ms in
    every run, compute-bound at the 50% threshold."""
    path = _write(tmp_path, "ort_graph_replay_kernels.synthetic.json", _graph_profile(replay_kernels=True))
    trace = read_ort(path)
    assert "graph_replays" not in trace.meta
    assert not any("replay a captured graph" in w for w in trace.warnings)
    analysis = tracekit.analyze(path, skip=0)
    assert analysis.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.3] * 5)
    assert analysis.verdict == "compute"


def test_graph_replays_without_kernels_are_still_said(tmp_path: Path) -> None:
    """The same runs in a build without CUDA profiling would hold no Kernel event at all; here the two first
    runs hold theirs and the replays none: the replays' work is missing, the verdict withheld as before."""
    path = _write(
        tmp_path, "ort_graph_replay_no_kernels.synthetic.json", _graph_profile(replay_kernels=False)
    )
    trace = read_ort(path)
    assert trace.meta["graph_replays"]["of"] == 5
    assert len(trace.meta["graph_replays"]["runs"]) == 3
    assert tracekit.analyze(path, skip=0).verdict is None


def _short_kernels(kernel_us: int, n: int = 100) -> list[dict[str, Any]]:
    """One 1000 µs run from 100 µs: one CUDA node at 110 µs launching ``n`` kernels of ``kernel_us`` µs each,
    back to back on stream 7 from 200 µs (GPUProfilerBase's args)."""
    node = "fused_kernel_time"
    events = [
        _ev("Session", "model_run", 100, 1000),
        _ev("Node", node, 110, 50, op_name="Fused", provider="CUDAExecutionProvider"),
    ]
    events += [
        _ev("Kernel", f"k{i}", 200 + i * kernel_us, kernel_us, pid=-1, tid=-1, stream="7", op_name="Fused",
            parent_name=node)
        for i in range(n)
    ]  # fmt: skip
    return events


def test_short_ops_written_in_whole_microseconds_are_said_to_be_short(tmp_path: Path) -> None:
    """ORT writes every ts and dur cut to whole µs, toward zero: ``duration_cast<microseconds>`` for its own
    events (TimeDiffMicroSeconds, common.h), ``(end - start) / 1000`` in integers for CUPTI's kernels
    (cupti_manager.cc). Each op's duration is short by 0 to 1 µs, 0.5 on average: negligible for a 1 ms node,
    a quarter of a 2 µs kernel. 100 kernels written "2" µs (the real ones 2.0 to 2.99 µs) gave GPU busy 0.200
    ms with no word; the truth is about 0.250 ms. Now a warning says how short (about 0.050 ms per 100 ops,
    25% of their written time; up to 0.100 ms)."""
    path = _write(tmp_path, "ort_short_kernels.synthetic.json", _short_kernels(2))
    trace = read_ort(path)
    said = [w for w in trace.warnings if "whole µs" in w]
    assert said == [
        "ONNX Runtime writes each event's ts and dur cut to whole µs (toward zero): each of the 100 GPU ops "
        "(Kernel events), 2.00 µs long on average as written, is short by 0 to 1 µs, 0.5 µs on average, so "
        "GPU busy time is short by about 25% of their written time (0.050 ms over the profile; at most 0.100 ms) "
        "and idle time and framework overhead are long by as much"
    ]


def test_long_ops_in_whole_microseconds_raise_no_warning(tmp_path: Path) -> None:
    """Kernels of 60 µs: the cut is under 1% of their time (0.5 / 60), nothing said; the committed CPU sample's
    nodes (~930 µs on average) likewise. Nor for fewer than 50 ops (49 kernels of 2 µs: 0.025 ms at most),
    or when a ts or dur is fractional (a profile rewritten by a tool: ORT writes integers)."""
    path = _write(tmp_path, "ort_long_kernels.synthetic.json", _short_kernels(60, n=60))
    assert not any("whole µs" in w for w in read_ort(path).warnings)
    path = _write(tmp_path, "ort_few_kernels.synthetic.json", _short_kernels(2, n=49))
    assert not any("whole µs" in w for w in read_ort(path).warnings)
    events = _short_kernels(2)
    events[-1]["dur"] = 2.5
    path = _write(tmp_path, "ort_fractional_kernels.synthetic.json", events)
    assert not any("whole µs" in w for w in read_ort(path).warnings)


# ---------------------------------------------------------------------------------------------- ncu


def test_ncu_report_of_range_results_only_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .ncu-rep from range replay (``--replay-mode range|app-range``) or whole-graph profiling
    (``--graph-profiling graph``) holds results whose workload is a range or a graph, not a kernel
    (``IAction.workload_type()``). The reader skips them; a report of such results only was refused with
    "holds no profiled kernels", as if nothing had been profiled. Now the line counts them and says why none
    is read (the CSV export reads them as range results)."""
    import sys

    from tests.test_hostile13_ncu import _Action, _Metric, fake_ncu_report

    class _RangeResult(_Action):
        def workload_type(self) -> int:
            return 1  # not IAction.WorkloadType_KERNEL (0 in the stand-in)

    metrics = {"gpu__time_duration.sum": _Metric(50_000, "ns")}
    actions = [_RangeResult(f"range {i}", [[]], metrics) for i in range(3)]
    monkeypatch.setitem(sys.modules, "ncu_report", fake_ncu_report(actions))
    path = tmp_path / "ranges.synthetic.ncu-rep"
    path.write_bytes(b"synthetic")
    from tracekit.errors import TraceFormatError
    from tracekit.readers import read_trace

    with pytest.raises(TraceFormatError) as err:
        read_trace(path)
    message = str(err.value)
    assert "holds no profiled kernels" not in message
    assert "3 results" in message and "range replay" in message and "--page raw" in message
