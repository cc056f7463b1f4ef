"""Hostile round 11, ONNX Runtime reader: legitimate profiles that round 11's partial-run rule
(:func:`tracekit.readers.ort.partial_runs`: a run whose nodes are a proper prefix of another run's is a run
that stopped part-way) could take for failed runs, leaving whole inferences out of the iterations. The
hand-built profiles are labelled synthetic (file names); real ones are made by the installed onnxruntime
(CPU) when it is there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tracekit
from tracekit.readers.ort import read


def _ev(cat: str, name: str, ts: Any, dur: Any, pid: int = 1, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": pid, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _run(start: int, names: list[str], dur: int = 100, tid: int = 1) -> list[dict[str, Any]]:
    """One run at ``start`` µs: its nodes of ``dur`` µs back to back from ``start`` + 10, then ``model_run``
    ending 10 µs after the last node."""
    events = [
        _ev("Node", f"{n}_kernel_time", start + 10 + k * dur, dur, tid=tid, op_name="MatMul",
            provider="CPUExecutionProvider")
        for k, n in enumerate(names)
    ]  # fmt: skip
    events.append(_ev("Session", "model_run", start, 20 + len(names) * dur, tid=tid))
    return events


def _write(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


A = ["/encoder/mm", "/encoder/relu", "/head/mm"]
B = ["/encoder/mm", "/encoder/relu"]


def test_runs_of_a_second_session_whose_model_is_a_prefix_of_the_first_are_not_partial(
    tmp_path: Path,
) -> None:
    """Two sessions' profiles merged into one file (each writes its ``session_initialization``; reader warns of
    the merge): model A (encoder + head, 3 nodes, 0.32 ms a run) runs 3 times, then model B (the same encoder
    alone, 2 nodes, 0.22 ms) runs 3 times, each run whole. B's runs had been taken for A's runs that failed at
    their second node: meta ``partial_runs`` named all three, and the analysis left them out ('left out 3 of 6
    ... not whole inferences'), analyzing A's 0.32 ms runs only. A run is compared with the runs of its own
    session only: nothing is partial, all 6 runs are analyzed (the merge warning says they are two models)."""
    events = [_ev("Session", "session_initialization", 0, 500)]
    for k in range(3):
        events += _run(1000 + k * 1000, A)
    events.append(_ev("Session", "session_initialization", 5000, 500))
    for k in range(3):
        events += _run(6000 + k * 1000, B)
    path = _write(tmp_path, "synthetic_ort_two_sessions.json", events)
    trace = read(path)
    assert "partial_runs" not in trace.meta
    assert any("2 'session_initialization' events in one process" in w for w in trace.meta["warnings"])
    analyzed = tracekit.analyze(path, skip=0)
    assert analyzed.iterations["latency_ms"].to_list() == pytest.approx([0.32] * 3 + [0.22] * 3)


def test_a_failed_run_within_the_second_session_is_still_found(tmp_path: Path) -> None:
    """The same merged file, where B's second run failed at its first node: it is partial within B's session."""
    events = [_ev("Session", "session_initialization", 0, 500)]
    for k in range(3):
        events += _run(1000 + k * 1000, A)
    events.append(_ev("Session", "session_initialization", 5000, 500))
    for k in range(3):
        events += _run(6000 + k * 1000, B if k != 1 else B[:1])
    trace = read(_write(tmp_path, "synthetic_ort_two_sessions_failed.json", events))
    assert trace.meta["partial_runs"] == {"runs": [[1, 1, 7_000_000]], "of": 6}


def _real_profile(tmp_path: Path, model: Any, feeds: list[dict[str, Any]], name: str) -> Path:
    """A real onnxruntime CPU profile of ``model`` run once per item of ``feeds`` (optimizations off, one
    thread)."""
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / name)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    for feed in feeds:
        session.run(None, feed)
    return Path(session.end_profiling())


def test_real_if_whose_else_branch_is_a_prefix_of_its_then_branch_is_not_partial(tmp_path: Path) -> None:
    """Real onnxruntime: an If whose else branch (Relu ``n1``) is a prefix of its then branch (``n1``, Neg
    ``n2``), the branch alternating over 6 runs: every run is whole (the If's own event follows its branch's
    nodes), none is partial and all 6 are analyzed."""
    onnx = pytest.importorskip("onnx")
    np = pytest.importorskip("numpy")
    h, t = onnx.helper, onnx.TensorProto
    x = h.make_tensor_value_info("X", t.FLOAT, [4])
    then_g = h.make_graph(
        [h.make_node("Relu", ["X"], ["t1"], name="n1"), h.make_node("Neg", ["t1"], ["t2"], name="n2")],
        "then", [], [h.make_tensor_value_info("t2", t.FLOAT, [4])],
    )  # fmt: skip
    else_g = h.make_graph(
        [h.make_node("Relu", ["X"], ["e1"], name="n1")],
        "else",
        [],
        [h.make_tensor_value_info("e1", t.FLOAT, [4])],
    )
    graph = h.make_graph(
        [
            h.make_node("Abs", ["X"], ["a"], name="pre"),
            h.make_node("If", ["C"], ["Y"], name="if", then_branch=then_g, else_branch=else_g),
        ],
        "m", [x, h.make_tensor_value_info("C", t.BOOL, [])], [h.make_tensor_value_info("Y", t.FLOAT, [4])],
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    ones = np.ones(4, np.float32)
    path = _real_profile(tmp_path, model, [{"X": ones, "C": np.array(k % 2 == 0)} for k in range(6)], "if")
    assert "partial_runs" not in read(path).meta
    assert tracekit.analyze(path, skip=0).iterations.height == 6


def test_real_loop_of_varying_trip_count_is_not_partial(tmp_path: Path) -> None:
    """Real onnxruntime: a Loop run 0 and 3 times alternately: no run is partial, all 6 are analyzed."""
    onnx = pytest.importorskip("onnx")
    np = pytest.importorskip("numpy")
    h, t = onnx.helper, onnx.TensorProto
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"], name="bc"),
         h.make_node("Relu", ["v_in"], ["v_out"], name="br")],
        "body",
        [h.make_tensor_value_info("i", t.INT64, []), h.make_tensor_value_info("cond_in", t.BOOL, []),
         h.make_tensor_value_info("v_in", t.FLOAT, [4])],
        [h.make_tensor_value_info("cond_out", t.BOOL, []), h.make_tensor_value_info("v_out", t.FLOAT, [4])],
    )  # fmt: skip
    graph = h.make_graph(
        [h.make_node("Constant", [], ["c"], name="c", value=h.make_tensor("cv", t.BOOL, [], [True])),
         h.make_node("Loop", ["M", "c", "X"], ["Y"], name="loop", body=body)],
        "m3",
        [h.make_tensor_value_info("M", t.INT64, []), h.make_tensor_value_info("X", t.FLOAT, [4])],
        [h.make_tensor_value_info("Y", t.FLOAT, [4])],
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    ones = np.ones(4, np.float32)
    feeds = [{"M": np.array(3 if k % 2 else 0, np.int64), "X": ones} for k in range(6)]
    path = _real_profile(tmp_path, model, feeds, "loop")
    assert "partial_runs" not in read(path).meta
    assert tracekit.analyze(path, skip=0).iterations.height == 6
