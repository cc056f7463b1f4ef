"""ONNX Runtime profiles of shapes tracekit had not seen (round 8): control-flow nodes (If, Loop) whose
subgraph's nodes nest inside them, profiles of several sessions merged into one file, execution providers
whose node times are host times (WebGPU, JS), ORT's "Api" events, the old ParallelExecutor's overlapping
nodes on several threads, concurrent runs on one session, and damaged files.

Real profiles: ``tests/data/ort8/`` holds two written here by onnxruntime 1.32 (CPU) from tiny models built
with onnx.helper (see its README.md); the concurrent-runs test makes its own when onnxruntime is installed.
Expected numbers are computed here from the events themselves (plain Python), not by tracekit."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracekit
from tracekit.cli import main
from tracekit.errors import TraceFormatError
from tracekit.readers.ort import read

DATA = Path(__file__).resolve().parent / "data" / "ort8"
IF_PROFILE = DATA / "generated_ort1.32_cpu_if.json"
LOOP_PROFILE = DATA / "generated_ort1.32_cpu_loop.json"


def _ev(cat: str, name: str, ts: Any, dur: Any, pid: int = 1, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": pid, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _write(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


def _union_us(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start >= reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def _leaf_nodes(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``_kernel_time`` Node events that hold no other such event on their thread (O(n^2), plain)."""
    nodes = [e for e in events if e["cat"] == "Node" and e["name"].endswith("_kernel_time")]

    def holds(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return (
            a is not b
            and (a["pid"], a["tid"]) == (b["pid"], b["tid"])
            and a["dur"] > 0
            and a["ts"] <= b["ts"] < a["ts"] + a["dur"]
            and b["ts"] + b["dur"] <= a["ts"] + a["dur"]
            and (a["ts"], -a["dur"]) != (b["ts"], -b["dur"])
        )

    return [a for a in nodes if not any(holds(a, b) for b in nodes)]


def _expected_busy_ms(events: list[dict[str, Any]]) -> list[float]:
    """Per model_run (start order): the union of the leaf nodes inside it, in ms."""
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "model_run")
    leaves = _leaf_nodes(events)
    return [
        _union_us(
            [(e["ts"], e["ts"] + e["dur"]) for e in leaves if e["ts"] >= start and e["ts"] + e["dur"] <= end]
        )
        / 1000
        for start, end in runs
    ]


# --- control flow: If / Loop nodes hold their subgraph's nodes ------------------------------------------


@pytest.mark.parametrize(("path", "outer"), [(IF_PROFILE, "If"), (LOOP_PROFILE, "Loop")])
def test_control_flow_nodes_are_ranges_and_busy_is_their_subgraphs_nodes(path: Path, outer: str) -> None:
    """Before: the If/Loop node was an operator too, so busy was the outer node's whole time (the first If
    run's 3.4 ms, of which its subgraph's MatMuls were 0.39 ms: compute-bound 98%) and op counts and
    per-type totals counted the subgraph twice."""
    events = json.loads(path.read_text())
    trace = read(path)
    assert not trace.ops.filter(pl.col("name").str.starts_with(f"{outer}:")).height
    outer_nodes = [e for e in events if e["cat"] == "Node" and e.get("args", {}).get("op_name") == outer]
    node_ranges = trace.ranges.filter(pl.col("domain") == "node")
    assert node_ranges.get_column("name").to_list() == [f"{outer}:/{outer}"] * len(outer_nodes)
    assert trace.ops.height == len(_leaf_nodes(events))
    assert [w for w in trace.meta["warnings"] if "hold other operator events" in w] == [
        f"{len(outer_nodes)} of {len(outer_nodes) + trace.ops.height} operator events hold other operator events "
        f"on their thread ({outer} x{len(outer_nodes)}: control-flow nodes running a subgraph): they become "
        "ranges of domain \"node\", not operators, so the subgraph's nodes count once and the outer node's own "
        "time (choosing the branch or iterating, passing the subgraph's inputs and outputs) is framework "
        "overhead, not operator busy time"
    ]
    assert outer not in [t["op"] for t in trace.meta["operator_types"]]
    analyzed = tracekit.analyze(path)
    assert analyzed.iterations["gpu_busy_ms"].to_list() == pytest.approx(_expected_busy_ms(events), abs=1e-9)


def test_the_first_if_run_is_no_longer_compute_bound_by_its_subgraph_set_up() -> None:
    events = json.loads(IF_PROFILE.read_text())
    first_run = min((e for e in events if e["name"] == "model_run"), key=lambda e: e["ts"])
    analyzed = tracekit.analyze(IF_PROFILE)
    busy = analyzed.iterations["gpu_busy_ms"][0]
    assert busy == pytest.approx(_expected_busy_ms(events)[0], abs=1e-9)
    assert busy / (first_run["dur"] / 1000) < 0.5  # was 0.984: the If node's 3.4 ms counted as compute


def test_sequential_nodes_touching_and_zero_length_nodes_are_not_containers(tmp_path: Path) -> None:
    """ORT's truncation to µs never makes consecutive nodes overlap, but a 0 µs node may sit exactly at the
    end of the one before it, or two 0 µs nodes at one instant: none of these holds another."""
    events = [
        _ev("Session", "model_run", 0, 100),
        _ev("Node", "a_kernel_time", 10, 20, op_name="MatMul"),
        _ev("Node", "b_kernel_time", 30, 0, op_name="Shape"),
        _ev("Node", "c_kernel_time", 30, 10, op_name="Add"),
        _ev("Node", "d_kernel_time", 50, 0, op_name="Shape"),
        _ev("Node", "e_kernel_time", 50, 0, op_name="Shape"),
    ]
    trace = read(_write(tmp_path, "synthetic_ort_touching.json", events))
    assert trace.ops.height == 5 and trace.ranges.filter(pl.col("domain") == "node").is_empty()
    assert trace.meta["warnings"] == []


def test_nested_control_flow_is_ranges_at_two_depths(tmp_path: Path) -> None:
    """A Loop whose body holds an If: both are ranges (depth 0 and 1), the If's MatMul is the one op."""
    events = [
        _ev("Session", "model_run", 0, 200),
        _ev("Node", "/Loop_kernel_time", 10, 150, op_name="Loop"),
        _ev("Node", "/body/If_kernel_time", 20, 100, op_name="If"),
        _ev("Node", "/then/MatMul_kernel_time", 30, 60, op_name="MatMul"),
    ]
    trace = read(_write(tmp_path, "synthetic_ort_nested_cf.json", events))
    assert trace.ops.get_column("name").to_list() == ["MatMul:/then/MatMul"]
    nodes = trace.ranges.filter(pl.col("domain") == "node").sort("start")
    assert nodes.select("name", "depth").rows() == [("Loop:/Loop", 0), ("If:/body/If", 1)]
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_nested_cf.json", events))
    assert analyzed.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.06], abs=1e-9)


# --- several sessions merged into one file ------------------------------------------------------------------


def _session(pid: int, tid: int, origin: int, runs: int) -> list[dict[str, Any]]:
    """One session's profile: times are µs since that session's profiling began (``origin`` shifts none)."""
    out = [
        _ev("Session", "model_loading_array", origin + 3, 400, pid, tid),
        _ev("Session", "session_initialization", origin + 500, 9000, pid, tid),
    ]
    t = origin + 10_000
    for _ in range(runs):
        out += [
            _ev("Node", "/MatMul_kernel_time", t + 10, 300, pid, tid, op_name="MatMul"),
            _ev("Session", "model_run", t, 400, pid, tid),
        ]
        t += 1000
    return out


def test_profiles_of_two_sessions_of_one_process_merged_are_refused(tmp_path: Path, capsys) -> None:
    """Each ORT session times its events from its own start and writes its own file: two such files merged
    into one array (a tool joining the profiles of ORT GenAI's sessions, say) put runs of both sessions on
    one thread at once, which one session cannot do. Before: read as one timeline (runs of the other session
    counted inside each other, with a warning that blamed 'different threads'); now one line."""
    path = _write(tmp_path, "merged.json", _session(7, 7, 0, 3) + _session(7, 7, 300, 3))
    with pytest.raises(TraceFormatError, match="merged"):
        read(path)
    assert main(["analyze", str(path)]) != 0
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert "3 'model_run' events overlap an earlier one on the same thread" in err


def test_sessions_of_two_processes_merged_are_still_read_per_process(tmp_path: Path) -> None:
    """Two processes' profiles in one array: each run's nodes are on its own clock and thread, so per-run
    numbers hold (the analysis keeps processes apart and says so)."""
    path = _write(tmp_path, "two_processes.json", _session(7, 7, 0, 2) + _session(8, 8, 0, 2))
    analyzed = tracekit.analyze(path)
    assert analyzed.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.3] * 4, abs=1e-9)
    assert analyzed.iterations["latency_ms"].to_list() == pytest.approx([0.4] * 4, abs=1e-9)


def test_runs_of_one_session_one_after_another_on_one_thread_are_not_refused(tmp_path: Path) -> None:
    events = _session(7, 7, 0, 3)
    events.append(_ev("Session", "model_run", 13_000, 400, 7, 7))  # starts when the last one ended
    assert read(_write(tmp_path, "ok.json", events)).ranges.filter(pl.col("name") == "model_run").height == 4


# --- providers whose node times are host times, and "Api" events ---------------------------------------------


@pytest.mark.parametrize(
    "provider", ["WebGpuExecutionProvider", "JsExecutionProvider", "CANNExecutionProvider"]
)
def test_asynchronous_device_providers_are_warned_like_cuda(tmp_path: Path, provider: str) -> None:
    """Before: only CUDA/ROCm/TensorRT/MIGraphX/DML nodes were said to be host times; a WebGPU profile's
    nodes (command encoding, not the GPU's work) read as operator busy time without a word."""
    events = [
        _ev("Session", "model_run", 0, 1000),
        *[
            _ev("Node", f"/n{i}_kernel_time", 10 + 20 * i, 15, op_name="MatMul", provider=provider)
            for i in range(4)
        ],
    ]
    trace = read(_write(tmp_path, "synthetic_ort_webgpu.json", events))
    assert trace.meta["warnings"] == [
        f"4 of 4 operator events ran on a GPU execution provider ({provider}): ORT times them on the host "
        "(argument setup and kernel launch), not on the GPU; profile with nsys or torch.profiler for GPU "
        "kernel times"
    ]


def test_api_events_are_counted_not_read(tmp_path: Path) -> None:
    """ORT 1.2x adds the category "Api" (EP profilers' own events: the WebGPU EP writes its GPU timestamp
    queries there, pid/tid -1, on a clock that only later versions shift onto the CPU's)."""
    events = [
        _ev("Session", "model_run", 0, 1000),
        _ev("Node", "/n_kernel_time", 10, 15, op_name="MatMul", provider="WebGpuExecutionProvider"),
        _ev("Api", "MatMul", 12, 400, -1, -1, shapes="[1,128]", cache_key="x"),
        _ev("Api", "Add", 420, 30, -1, -1, shapes="[1,128]", cache_key="y"),
    ]
    trace = read(_write(tmp_path, "synthetic_ort_api.json", events))
    assert trace.ops.height == 1
    assert trace.meta["warnings"][-1] == (
        "2 'Api' events (an execution provider's own timings, such as the WebGPU EP's GPU kernels) are not "
        "read: their clock is not the CPU events' in every ORT version, so the ops are the Node events"
    )


def test_a_profile_of_api_events_only_is_still_ort(tmp_path: Path) -> None:
    path = _write(tmp_path, "api_only.json", [_ev("Api", "MatMul", 12, 400, -1, -1)])
    with pytest.raises(TraceFormatError, match="no Session, Node or Kernel events"):
        read(path)


# --- ParallelExecutor (ORT <= 1.12): overlapping nodes on several threads -----------------------------------


def test_parallel_executor_nodes_on_several_threads_are_a_union_not_a_sum(tmp_path: Path) -> None:
    """ORT_PARALLEL before 1.13 ran independent nodes on inter-op threads at once: busy is their union
    (120 µs of a 150 µs run), not their sum (200 µs, 133%); a node on another thread is no container."""
    events = [
        _ev("Session", "ParallelExecutor::Execute", 5, 140),
        _ev("Session", "model_run", 0, 150),
        _ev("Node", "/a/MatMul_kernel_time", 10, 100, tid=2, op_name="MatMul"),
        _ev("Node", "/b/MatMul_kernel_time", 20, 80, tid=3, op_name="MatMul"),
        _ev("Node", "/Add_kernel_time", 115, 20, tid=2, op_name="Add"),
    ]
    path = _write(tmp_path, "synthetic_ort_parallel.json", events)
    trace = read(path)
    assert trace.ops.height == 3 and trace.meta["warnings"] == []
    analyzed = tracekit.analyze(path)
    assert analyzed.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.12], abs=1e-9)
    assert analyzed.iterations["latency_ms"].to_list() == pytest.approx([0.15], abs=1e-9)


# --- concurrent runs on one session (real, made here when onnxruntime is installed) -------------------------


def test_concurrent_runs_on_one_session_are_read_not_refused(tmp_path: Path) -> None:
    """Two Python threads calling run() on one session at once: their model_runs overlap, each on its own
    thread with its nodes; that is not a merged profile (the refusal above is for one thread only)."""
    ort = pytest.importorskip("onnxruntime")
    np = pytest.importorskip("numpy")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    size = 64
    weights = [
        numpy_helper.from_array(np.full((size, size), 0.01 * (k + 1), dtype=np.float32), f"W{k}")
        for k in range(3)
    ]
    nodes = [
        helper.make_node("MatMul", ["X" if k == 0 else f"t{k - 1}", f"W{k}"], [f"t{k}" if k < 2 else "Y"])
        for k in range(3)
    ]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [size, size])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [size, size])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "concurrent")
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.ones((size, size), dtype=np.float32)

    def runs() -> None:
        for _ in range(4):
            session.run(None, {"X": x})

    threads = [threading.Thread(target=runs) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    path = Path(session.end_profiling())
    events = json.loads(path.read_text())
    trace = read(path)
    runs_read = trace.ranges.filter(pl.col("name") == "model_run")
    assert runs_read.height == 8 and runs_read.get_column("thread").n_unique() == 2
    # every node is an op of its own thread, inside a model_run of that thread
    for e in (e for e in events if e["cat"] == "Node" and e["name"].endswith("_kernel_time")):
        assert any(
            r["tid"] == e["tid"] and r["ts"] <= e["ts"] and e["ts"] + e["dur"] <= r["ts"] + r["dur"]
            for r in events
            if r["name"] == "model_run"
        )
    assert trace.ops.height == 24 and trace.meta["warnings"] == []


#: Two threads running one session at once, as a real profile made here had them (concurrent ``run()`` calls
#: on an overloaded machine, tests/data/ort8/generate_ort8_profiles.py threads): each of thread 2's short runs
#: lies wholly inside one of thread 1's long runs.
CONCURRENT = [
    _ev("Session", "model_run", 0, 500, tid=1),
    _ev("Node", "/a/MatMul_kernel_time", 10, 100, tid=1, op_name="MatMul"),
    _ev("Node", "/b/MatMul_kernel_time", 400, 50, tid=1, op_name="MatMul"),
    _ev("Session", "model_run", 100, 120, tid=2),
    _ev("Node", "/a/MatMul_kernel_time", 110, 40, tid=2, op_name="MatMul"),
    _ev("Node", "/b/MatMul_kernel_time", 160, 40, tid=2, op_name="MatMul"),
    _ev("Session", "model_run", 550, 250, tid=1),
    _ev("Node", "/c/MatMul_kernel_time", 560, 80, tid=1, op_name="MatMul"),
    _ev("Session", "model_run", 650, 100, tid=2),
    _ev("Node", "/c/MatMul_kernel_time", 660, 80, tid=2, op_name="MatMul"),
]
# (the one-node runs run another node than the two-node runs' first: runs whose nodes are the first of
# another run's are runs that stopped part-way, which the analysis leaves out: tests/test_fuzz11_ort.py)


def test_runs_inside_another_threads_runs_keep_their_own_nodes(tmp_path: Path) -> None:
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_concurrent.json", CONCURRENT))
    assert analyzed.iterations.height == 4
    assert analyzed.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.15, 0.08, 0.08, 0.08], abs=1e-9)


# --- damaged and re-typed files ---------------------------------------------------------------------------


def test_killed_process_leaves_an_empty_or_cut_profile_one_line_each(tmp_path: Path, capsys) -> None:
    """ORT opens the file when profiling starts and writes it all at EndProfiling: a killed process leaves
    it empty, and one killed while writing leaves the array unclosed. Neither is read (a cut profile lacks
    the latest-starting events: the last run's nodes), each is one line."""
    text = IF_PROFILE.read_text()
    for name, content in [("empty.json", ""), ("cut.json", text[: len(text) // 2]), ("open.json", text[:-3])]:
        path = tmp_path / name
        path.write_text(content)
        assert main(["analyze", str(path)]) != 0
        err = capsys.readouterr().err.strip()
        assert "Traceback" not in err and len(err.splitlines()) == 1, err


def test_timestamps_as_strings_read_the_same(tmp_path: Path) -> None:
    events = json.loads(IF_PROFILE.read_text())
    texts = [dict(e, ts=str(e["ts"]), dur=str(e["dur"])) for e in events]
    a = read(IF_PROFILE)
    b = read(_write(tmp_path, "strings.json", texts))
    assert a.ops.equals(b.ops) and a.ranges.equals(b.ranges)


# --- GPU Kernel events (CUDA / ROCm builds with profiling) ---------------------------------------------------


def test_rocm_copies_and_memsets_are_not_counted_as_kernels(tmp_path: Path) -> None:
    """ORT's ROCm profiler (roctracer_manager.cc) names copies and memsets by their HIP call
    ("hipMemcpyAsync", "hipMemsetAsync", stream a hex pointer, args src/dst/kind); CUDA's by kind
    ("MemcpyHostToDevice"). Before: the HIP ones were kind "kernel", so the kernel count held the copies."""
    node = "/n/MatMul_kernel_time"
    events = [
        _ev("Session", "model_run", 0, 1000),
        _ev("Node", node, 10, 20, op_name="MatMul", provider="ROCMExecutionProvider"),
        _ev(
            "Kernel",
            "hipMemcpyAsync",
            12,
            5,
            -1,
            -1,
            stream="0x5612",
            kind="hipMemcpyHostToDevice",
            parent_name=node,
        ),
        _ev("Kernel", "hipMemsetAsync", 18, 2, -1, -1, stream="0x5612", size="64", parent_name=node),
        _ev(
            "Kernel",
            "Cijk_Ailk_Bljk_SB_MT64x64",
            21,
            100,
            -1,
            -1,
            stream="0x5612",
            grid_x="4",
            parent_name=node,
        ),
        _ev(
            "Kernel", "hipMemcpy", 130, 5, -1, -1, stream="0", kind="hipMemcpyDeviceToHost", parent_name=node
        ),
        _ev("Kernel", "MemcpyDeviceToHost", 140, 5, -1, -1, stream="7", parent_name=node),
    ]
    trace = read(_write(tmp_path, "synthetic_ort_rocm.json", events))
    assert trace.ops.select("name", "kind").rows() == [
        ("hipMemcpyAsync", "memcpy"),
        ("hipMemsetAsync", "memset"),
        ("Cijk_Ailk_Bljk_SB_MT64x64", "kernel"),
        ("hipMemcpy", "memcpy"),
        ("MemcpyDeviceToHost", "memcpy"),
    ]


def _gpu_runs(shift_us: int, runs: int = 3) -> list[dict[str, Any]]:
    """A CUDA profile as ORT >= 1.13 writes it (kernels at CUPTI's start on the CPU clock): each run's four
    nodes launch a 150 µs kernel each, and the run waits for them (it ends 20 µs after the last one); the
    kernels are written ``shift_us`` later than they ran (a GPU clock ORT did not shift onto the CPU's)."""
    events: list[dict[str, Any]] = []
    t = 1000
    for _ in range(runs):
        events.append(_ev("Session", "model_run", t, 650))
        for k in range(4):
            node = f"/n{k}/MatMul_kernel_time"
            events.append(
                _ev("Node", node, t + 10 + 5 * k, 4, op_name="MatMul", provider="CUDAExecutionProvider")
            )
            events.append(
                _ev(
                    "Kernel",
                    f"gemm_{k}",
                    t + 15 + 150 * k + shift_us,
                    150,
                    -1,
                    -1,
                    stream="7",
                    parent_name=node,
                )
            )
        t += 2000
    return events


def test_kernels_that_end_after_their_run_ended_are_warned(tmp_path: Path) -> None:
    """A run returns after its GPU work is done (ORT synchronizes the EP's streams at the end of Run unless
    told not to), so a kernel cannot end after the model_run of the node that launched it. Before: kernels
    written 300 µs late (another clock) gave a confident verdict on times of two clocks, without a word."""
    trace = read(_write(tmp_path, "synthetic_ort_cuda_late.json", _gpu_runs(300)))
    late = [w for w in trace.meta["warnings"] if "'model_run' ended" in w]
    assert late == [
        "6 of 12 GPU ops (Kernel events) linked to the node that launched them end after that node's "
        "'model_run' ended (by up to 0.265 ms): a run returns only when its GPU work is done (ORT synchronizes "
        "the execution provider's streams at the end of each run unless the run option "
        "disable_synchronize_execution_providers is set), so the GPU times are likely on another clock than the "
        "CPU times, and the GPU busy time, idle gaps and framework overhead of each iteration compare two clocks"
    ]
    assert trace.meta["ops_after_run"] == [6, 12, 265_000]


def test_kernels_inside_their_run_are_not_warned(tmp_path: Path) -> None:
    trace = read(_write(tmp_path, "synthetic_ort_cuda_ok.json", _gpu_runs(0)))
    assert not [w for w in trace.meta["warnings"] if "'model_run' ended" in w]
    assert "ops_after_run" not in trace.meta


def test_gpu_profile_with_an_if_node_counts_its_subgraph_once_in_operator_types(tmp_path: Path) -> None:
    """With Kernel events every Node event is a range already; the If node (CUDA EP control flow) still
    leaves operator_types, which counted its MatMul's time twice (as If and as MatMul)."""
    events = [
        _ev("Session", "model_run", 0, 500),
        _ev("Node", "/If_kernel_time", 10, 300, op_name="If", provider="CUDAExecutionProvider"),
        _ev("Node", "/then/MatMul_kernel_time", 20, 50, op_name="MatMul", provider="CUDAExecutionProvider"),
        _ev("Kernel", "gemm", 25, 200, -1, -1, stream="7", parent_name="/then/MatMul_kernel_time"),
    ]
    trace = read(_write(tmp_path, "synthetic_ort_cuda_if.json", events))
    assert trace.meta["device"] == "gpu" and trace.ops.get_column("name").to_list() == ["gemm"]
    assert trace.ranges.filter(pl.col("domain") == "node").get_column("name").sort().to_list() == [
        "If:/If",
        "MatMul:/then/MatMul",
    ]
    assert [(t["op"], t["ns"], t["count"]) for t in trace.meta["operator_types"]] == [("MatMul", 50_000, 1)]


@pytest.mark.parametrize(
    "provider", ["QNNExecutionProvider", "OpenVINOExecutionProvider", "CoreMLExecutionProvider"]
)
def test_nodes_on_npu_providers_are_said_to_include_the_devices_work(tmp_path: Path, provider: str) -> None:
    """QNN (Hexagon NPU), OpenVINO (GPU/NPU), CoreML (ANE/GPU) ... compile their part of the model into one
    node whose call waits for the device: its time is the device's work plus the copies to and from it, as
    the host saw it. Before: read as CPU operator time without a word ('device measured: cpu')."""
    events = [
        _ev("Session", "model_run", 0, 1000),
        _ev("Node", "/Shape_kernel_time", 5, 3, op_name="Shape", provider="CPUExecutionProvider"),
        _ev("Node", f"{provider}_0_0_kernel_time", 10, 900, op_name=f"{provider}_0", provider=provider),
    ]
    trace = read(_write(tmp_path, "synthetic_ort_npu.json", events))
    assert trace.meta["device"] == "cpu" and trace.ops.height == 2
    assert trace.meta["warnings"] == [
        "1 of 2 operator events ran on an execution provider that computes on the device it was configured "
        f"for (CPU, GPU or NPU) inside a node that waits for it ({provider}): their times, taken on the host, "
        "include that device's work and any copies to and from it, so operator busy time is the host's view of "
        "that work, whatever 'device measured' says"
    ]


# --- the analysis' answer to the reader's findings (2026-11-27) ------------------------------------------------


def test_kernels_written_late_make_the_verdict_uncertain(tmp_path: Path) -> None:
    """The late kernels above (0.265 ms of a ~0.9 ms run) weigh in the verdict as early ones do
    (``ops_before_parent``): beyond 1% of the median iteration the verdict is uncertain; on time, no doubt."""
    late = tracekit.analyze(_write(tmp_path, "synthetic_ort_cuda_late.json", _gpu_runs(300)))
    assert late.verdict_uncertain is not None
    assert "6 of 12 kernels ended after the run that launched them had ended (by up to 0.265 ms)" in (
        late.verdict_uncertain
    )
    on_time = tracekit.analyze(_write(tmp_path, "synthetic_ort_cuda_ok.json", _gpu_runs(0)))
    assert on_time.verdict_uncertain is None or "ended after the run" not in on_time.verdict_uncertain


def test_a_cuda_provider_profile_without_kernel_events_gets_no_verdict(tmp_path: Path) -> None:
    """Node events of the CUDA provider time argument setup and launches on the host; without Kernel events
    the GPU's work is nowhere in the profile. A hand-built run of 1 ms whose four CUDA nodes take 150 µs of
    host time had read "framework-bound, 15%" whatever the GPU did."""
    events = []
    t = 0
    for _ in range(3):
        events.append(_ev("Session", "model_run", t, 1000))
        for k in range(4):
            events.append(
                _ev("Node", f"/n{k}/MatMul_kernel_time", t + 10 + 200 * k, 37.5, op_name="MatMul",
                    provider="CUDAExecutionProvider")
            )  # fmt: skip
        t += 2000
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_cuda_no_kernels.json", events))
    assert analyzed.verdict is None
    assert analyzed.no_verdict.startswith(
        "no framework-/compute-bound verdict: 12 of 12 operator events ran on a GPU execution provider"
    )
    # a CPU-provider profile keeps its verdict
    cpu = [dict(e, args={**e["args"], "provider": "CPUExecutionProvider"}) for e in events]
    assert tracekit.analyze(_write(tmp_path, "synthetic_ort_cpu.json", cpu)).verdict == "framework"


def test_nodes_without_an_end_time_are_said_once(tmp_path: Path) -> None:
    events = [_ev("Session", "model_run", 0, 1000)]
    events += [_ev("Node", "/a/MatMul_kernel_time", 10, 100, op_name="MatMul")]
    events += [_ev("Node", "/b/MatMul_kernel_time", 200, "NaN", op_name="MatMul")]
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_no_end.json", events))
    said = [w for w in analyzed.warnings if "no end time" in w or "no readable dur" in w]
    assert len(said) == 1, said
