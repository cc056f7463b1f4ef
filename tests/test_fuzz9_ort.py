"""ONNX Runtime profiles of shapes tracekit had not handled (round 9): concurrent ``run()`` calls on an
``ORT_PARALLEL`` session (nodes on inter-op pool threads while several runs are open), ORT GenAI's one
``model_run`` per generated token (a prompt run, then decode runs of another shape), and other profiles a real
ORT writes.

Hand-built profiles are labelled synthetic (file names); the real ones are made here by the installed
onnxruntime (1.32, CPU) when it is there. Expected numbers are computed by hand from the events."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import tracekit


def _ev(cat: str, name: str, ts: Any, dur: Any, pid: int = 1, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": pid, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _node(name: str, ts: int, dur: int, tid: int, op: str = "MatMul", **args: Any) -> dict[str, Any]:
    return _ev(
        "Node", f"{name}_kernel_time", ts, dur, tid=tid, op_name=op, provider="CPUExecutionProvider", **args
    )


def _write(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


# --- ORT_PARALLEL with concurrent run() callers: nodes on pool threads ---------------------------------------

#: Callers on threads 1 and 2, nodes on inter-op pool threads 11 and 12 (ORT_PARALLEL, 1.32: a run's nodes go
#: to a pool thread). Run 1 [1000, 1500) and run 2 [1200, 1800) are open at once; the node at 1300 on pool
#: thread 12 may be either's. Runs 0 and 3 are alone.
PARALLEL_CONCURRENT = [
    _ev("Session", "model_run", 0, 300, tid=1),
    _node("/a", 10, 100, 11),
    _node("/b", 120, 100, 11),
    _ev("Session", "model_run", 1000, 500, tid=1),
    _node("/a", 1010, 100, 11),
    _ev("Session", "model_run", 1200, 600, tid=2),
    _node("/a", 1300, 100, 12),
    _node("/b", 1600, 100, 11),
    _ev("Session", "model_run", 2000, 400, tid=2),
    _node("/a", 2100, 100, 12),
    _node("/b", 2200, 100, 12),
]


def test_runs_open_at_once_whose_pool_thread_nodes_cannot_be_told_apart_are_left_out(tmp_path: Path) -> None:
    """Before: the node at 1300 went to run 2 (the later-starting run) by a guess, so run 1 read busy 0.1 ms
    and run 2 0.2 ms, with confidence (one of them is wrong whichever run it was). After: runs 1 and 2 are
    left out with a warning; runs 0 and 3 are exact."""
    path = _write(tmp_path, "synthetic_ort_parallel_concurrent.json", PARALLEL_CONCURRENT)
    analyzed = tracekit.analyze(path)
    frame = analyzed.iterations
    assert frame["index"].to_list() == [0, 3]
    assert frame["latency_ms"].to_list() == pytest.approx([0.3, 0.4], abs=1e-9)
    assert frame["gpu_busy_ms"].to_list() == pytest.approx([0.2, 0.2], abs=1e-9)
    said = [w for w in analyzed.warnings if w.startswith("left out 2 of 4 'model_run' iterations")]
    assert len(said) == 1 and "1 ops ran on a thread that runs no 'model_run' range" in said[0]
    assert analyzed.verdict_uncertain is None


def test_when_every_run_shares_pool_thread_nodes_the_verdict_is_uncertain(tmp_path: Path) -> None:
    """Nothing left to analyze apart: the runs stay (their latency is known) and the verdict is uncertain."""
    events = [
        _ev("Session", "model_run", 0, 500, tid=1),
        _node("/a", 10, 400, 11),
        _ev("Session", "model_run", 100, 500, tid=2),
        _node("/a", 450, 100, 11),
    ]
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_parallel_all_shared.json", events))
    assert analyzed.iterations.height == 2
    assert analyzed.verdict_uncertain is not None
    assert "every analyzed iteration holds some of them" in analyzed.verdict_uncertain


def test_concurrent_callers_with_nodes_on_their_own_threads_lose_no_run(tmp_path: Path) -> None:
    """The sequential executor runs a caller's nodes on the caller's thread: nothing is ambiguous."""
    events = [
        _ev("Session", "model_run", 0, 500, tid=1),
        _node("/a", 10, 100, 1),
        _ev("Session", "model_run", 100, 300, tid=2),
        _node("/a", 110, 100, 2),
    ]
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_sequential_concurrent.json", events))
    assert analyzed.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.1, 0.1], abs=1e-9)
    assert analyzed.verdict_uncertain is None
    assert not [w for w in analyzed.warnings if "cannot be known" in w]


def test_one_caller_on_a_parallel_session_loses_no_run(tmp_path: Path) -> None:
    """ORT_PARALLEL with one caller: runs never overlap, so pool-thread nodes are each run's own."""
    events = [
        _ev("Session", "model_run", 0, 300, tid=1),
        _node("/a", 10, 100, 11),
        _node("/b", 20, 100, 12),
        _ev("Session", "model_run", 400, 300, tid=1),
        _node("/a", 410, 100, 12),
    ]
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_parallel_one_caller.json", events))
    assert analyzed.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.11, 0.1], abs=1e-9)
    assert not [w for w in analyzed.warnings if "cannot be known" in w]


def test_cuda_kernels_of_concurrent_runs_are_left_out_too(tmp_path: Path) -> None:
    """ORT's Kernel events carry no thread and no correlation: under two runs open at once they are as
    unknown as pool-thread nodes."""
    events = [
        _ev("Session", "model_run", 0, 300, tid=1),
        _node("/a", 10, 20, 1),
        _ev("Kernel", "gemm", 40, 100, tid=1, parent_name="/a_kernel_time", stream="7"),
        _ev("Session", "model_run", 1000, 500, tid=1),
        _node("/a", 1010, 20, 1),
        _ev("Session", "model_run", 1100, 500, tid=2),
        _node("/a", 1110, 20, 2),
        _ev("Kernel", "gemm", 1150, 100, tid=1, parent_name="/a_kernel_time", stream="7"),
        _ev("Kernel", "gemm", 1250, 100, tid=1, parent_name="/a_kernel_time", stream="7"),
        _ev("Session", "model_run", 2000, 300, tid=1),
        _node("/a", 2010, 20, 1),
        _ev("Kernel", "gemm", 2040, 50, tid=1, parent_name="/a_kernel_time", stream="7"),
    ]
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_cuda_concurrent.json", events))
    assert analyzed.iterations["index"].to_list() == [0, 3]
    assert analyzed.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.1, 0.05], abs=1e-9)


def test_real_parallel_session_with_two_callers_keeps_only_runs_whose_nodes_are_known(tmp_path: Path) -> None:
    """Real (onnxruntime installed): two threads call run() on an ORT_PARALLEL session. Whatever the
    scheduling, every analyzed run holds no pool-thread node that another open run also held."""
    ort = pytest.importorskip("onnxruntime")
    np = pytest.importorskip("numpy")
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    size = 128
    weights = [
        numpy_helper.from_array(np.full((size, size), 0.01, dtype=np.float32), f"W{k}") for k in range(4)
    ]
    nodes = [
        helper.make_node("MatMul", ["X", "W0"], ["a0"]),
        helper.make_node("MatMul", ["X", "W1"], ["b0"]),
        helper.make_node("MatMul", ["a0", "W2"], ["a1"]),
        helper.make_node("MatMul", ["b0", "W3"], ["b1"]),
        helper.make_node("Add", ["a1", "b1"], ["Y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "branches",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [size, size])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [size, size])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "parallel")
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    options.inter_op_num_threads = 3
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.ones((size, size), dtype=np.float32)

    def runs() -> None:
        for _ in range(5):
            session.run(None, {"X": x})

    threads = [threading.Thread(target=runs) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    path = Path(session.end_profiling())
    events = json.loads(path.read_text())
    runs_ = sorted((e for e in events if e["name"] == "model_run"), key=lambda e: e["ts"])
    callers = {e["tid"] for e in runs_}
    analyzed = tracekit.analyze(path)
    for row in analyzed.iterations.iter_rows(named=True):
        run = runs_[row["index"]]
        start, end = run["ts"], run["ts"] + run["dur"]
        for e in events:
            if e["cat"] != "Node" or e["tid"] in callers or not start <= e["ts"] < end:
                continue
            others = [r for r in runs_ if r is not run and r["ts"] <= e["ts"] < r["ts"] + r["dur"]]
            assert not others, (row, e)
    assert analyzed.iterations.height >= 1
