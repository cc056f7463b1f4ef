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

import polars as pl
import pytest

import tracekit
from tracekit.readers.ort import read


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
    assert len(said) == 1 and "1 op ran on a thread that runs no 'model_run' range" in said[0]
    assert analyzed.verdict_uncertain is None


def test_when_every_run_shares_pool_thread_nodes_busy_and_verdict_are_withheld(tmp_path: Path) -> None:
    """Nothing left to analyze apart: the runs stay with their latency (known); their busy figures and the
    verdict are withheld, with the reason."""
    events = [
        _ev("Session", "model_run", 0, 500, tid=1),
        _node("/a", 10, 400, 11),
        _ev("Session", "model_run", 100, 500, tid=2),
        _node("/a", 450, 100, 11),
    ]
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_parallel_all_shared.json", events))
    frame = analyzed.iterations
    assert frame["latency_ms"].to_list() == pytest.approx([0.5, 0.5], abs=1e-9)
    assert frame["gpu_busy_ms"].null_count() == 2 and frame["gpu_utilization"].null_count() == 2
    assert analyzed.verdict is None
    assert (
        analyzed.no_verdict is not None
        and "every analyzed iteration holds some of them" in analyzed.no_verdict
    )


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
    if analyzed.no_verdict is not None:  # every run shared pool-thread nodes with another: all withheld
        assert "every analyzed iteration holds some of them" in analyzed.no_verdict
        assert analyzed.iterations["gpu_busy_ms"].null_count() == analyzed.iterations.height
        return
    for row in analyzed.iterations.iter_rows(named=True):
        run = runs_[row["index"]]
        start, end = run["ts"], run["ts"] + run["dur"]
        for e in events:
            if e["cat"] != "Node" or e["tid"] in callers or not start <= e["ts"] < end:
                continue
            others = [r for r in runs_ if r is not run and r["ts"] <= e["ts"] < r["ts"] + r["dur"]]
            assert not others, (row, e)
    assert analyzed.iterations.height >= 1


# --- ORT GenAI: one model_run per generated token ----------------------------------------------------------


def _shape(*dims: int, kind: str = "float") -> dict[str, list[int]]:
    return {kind: list(dims)}


def _genai_run(start: int, tokens: int, past: int, tid: int = 1) -> list[dict[str, Any]]:
    """One run of a tiny decoder on ``tokens`` new tokens after ``past`` cached ones: a prompt run (tokens > 1)
    lasts 1000 µs with 900 µs of nodes, a token run 400 µs with 80 µs of nodes."""
    hidden = _shape(1, tokens, 64)
    if tokens > 1:
        lengths, run = (50, 800, 50), 1000
    else:
        lengths, run = (10, 60, 10), 400
    t = start + 10
    events = [_ev("Session", "model_run", start, run, tid=tid)]
    shapes = [
        ("/embed/Gather", "Gather", [_shape(100, 64), _shape(1, tokens, kind="int64")]),
        ("/q/MatMul", "MatMul", [hidden, _shape(64, 64)]),
        ("/attn/Softmax", "Softmax", [_shape(1, tokens, past + tokens)]),
    ]
    for (name, op, inputs), length in zip(shapes, lengths, strict=True):
        events.append(_node(name, t, length, tid, op, input_type_shape=inputs))
        t += length + 5
    events.append(_node("/Add", t, 0, tid, "Add", input_type_shape=[hidden, hidden]))
    return events


def _genai(prompts: list[int], decodes: int) -> list[dict[str, Any]]:
    events, t = [], 0
    for prompt in prompts:
        events += _genai_run(t, prompt, 0)
        t += 2000
        for k in range(decodes):
            events += _genai_run(t, 1, prompt + k)
            t += 2000
    return events


def test_genai_prompt_and_token_runs_are_told_apart(tmp_path: Path) -> None:
    """A 7-token prompt run (1.0 ms, 90% busy), then 6 token runs (0.4 ms, 20%) whose attention input grows by
    one each. Before: seven iterations of one kind, and the prompt run called a slow start ("warm-up in the
    trace", --skip 1 offered to drop the prompt's work). After: step_class prefill / decode per run, the
    step-class table gives each class its own means, and the verdict (the median run's, a token run's) is
    said to be the median step's."""
    path = _write(tmp_path, "synthetic_ort_genai.json", _genai([7], 6))
    trace = read(path)
    assert trace.meta["run_shapes"]["shapes"] == ["[1,7,64]", "[1,1,64]"]
    analyzed = tracekit.analyze(path)
    frame = analyzed.iterations
    assert frame["step_class"].cast(pl.String).to_list() == ["prefill"] + ["decode"] * 6
    assert frame["gpu_busy_ms"].to_list() == pytest.approx([0.9] + [0.08] * 6, abs=1e-9)
    classes = {c["step_class"]: c for c in analyzed.step_classes}
    assert classes["prefill"]["steps"] == 1 and classes["decode"]["steps"] == 6
    assert classes["prefill"]["latency_ms"] == pytest.approx(1.0) and classes["decode"][
        "latency_ms"
    ] == pytest.approx(0.4)
    assert classes["prefill"]["gpu_utilization"] == pytest.approx(0.9)
    assert classes["decode"]["gpu_utilization"] == pytest.approx(0.2)
    assert not [w for w in analyzed.warnings if "slow start" in w]
    assert [
        w for w in analyzed.warnings if "opposite verdicts" in w and "the verdict is the median step's" in w
    ]
    assert analyzed.verdict == "framework" and analyzed.verdict_uncertain is None
    assert [n for n in analyzed.notes if "a generation loop" in n]


def test_genai_several_prompts_of_different_lengths(tmp_path: Path) -> None:
    """Two generate() calls, prompts of 7 and 12 tokens, 4 tokens each: two prefill shapes, one decode."""
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_genai_two.json", _genai([7, 12], 4)))
    assert analyzed.iterations["step_class"].cast(pl.String).to_list() == (["prefill"] + ["decode"] * 4) * 2


def test_runs_of_two_batch_sizes_are_reported_apart_and_the_mixed_median_is_doubted(tmp_path: Path) -> None:
    """A batch sweep in one session: 4 runs of batch 1 (0.4 ms, 25% busy), then 4 of batch 8 (1.0 ms, 90%).
    Before: one series, median utilization 57.5% ("compute-bound", a utilization no run has), no word. After:
    a doubt naming each shape's median; no prefill / decode labels (a batch-8 run follows a batch-8 run)."""
    events, t = [], 0
    for batch, (run, lengths) in ((1, (400, (100,))), (8, (1000, (900,)))):
        for _ in range(4):
            events.append(_ev("Session", "model_run", t, run))
            events.append(
                _node("/q/MatMul", t + 10, lengths[0], 1, input_type_shape=[_shape(batch, 128, 64)])
            )
            t += 2000
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_batches.json", events))
    assert analyzed.iterations["gpu_utilization"].median() == pytest.approx(0.575)
    assert "step_class" not in analyzed.iterations.columns
    assert analyzed.verdict_uncertain is not None
    assert (
        "[1,128,64] x4: median latency 0.400 ms, 25.0% utilization, framework-bound; [8,128,64] x4: median "
        "latency 1.000 ms, 90.0% utilization, compute-bound" in analyzed.verdict_uncertain
    )


def test_runs_of_one_shape_get_no_shape_line(tmp_path: Path) -> None:
    events, t = [], 0
    for _ in range(4):
        events.append(_ev("Session", "model_run", t, 400))
        events.append(_node("/q/MatMul", t + 10, 100, 1, input_type_shape=[_shape(1, 128, 64)]))
        t += 1000
    path = _write(tmp_path, "synthetic_ort_one_shape.json", events)
    assert "run_shapes" not in read(path).meta
    analyzed = tracekit.analyze(path)
    assert "step_class" not in analyzed.iterations.columns and analyzed.verdict_uncertain is None


def test_real_decoder_prompt_then_tokens(tmp_path: Path) -> None:
    """Real (onnxruntime installed): a tiny decoder with a growing past, run on a 7-token prompt then 5 tokens."""
    ort = pytest.importorskip("onnxruntime")
    np = pytest.importorskip("numpy")
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    width = 32
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.random((100, width), dtype=np.float32), "emb"),
        numpy_helper.from_array(rng.random((width, width), dtype=np.float32), "wq"),
        numpy_helper.from_array(rng.random((width, width), dtype=np.float32), "wk"),
        numpy_helper.from_array(rng.random((width, width), dtype=np.float32), "wo"),
    ]
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["x"]),
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("Concat", ["past", "k"], ["present"], axis=1),
        helper.make_node("Transpose", ["present"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "present"], ["a"]),
        helper.make_node("MatMul", ["a", "wo"], ["o"]),
        helper.make_node("Relu", ["o"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "decoder",
        [
            helper.make_tensor_value_info("ids", TensorProto.INT64, [1, "S"]),
            helper.make_tensor_value_info("past", TensorProto.FLOAT, [1, "P", width]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "S", width]),
            helper.make_tensor_value_info("present", TensorProto.FLOAT, [1, "T", width]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "decoder")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    past = np.zeros((1, 0, width), dtype=np.float32)
    ids = np.arange(1, 8, dtype=np.int64).reshape(1, 7)
    for _ in range(6):
        _, past = session.run(None, {"ids": ids, "past": past})
        ids = np.array([[8]], dtype=np.int64)
    path = Path(session.end_profiling())
    assert read(path).meta["run_shapes"]["shapes"] == [f"[1,7,{width}]", f"[1,1,{width}]"]
    analyzed = tracekit.analyze(path)
    assert analyzed.iterations["step_class"].cast(pl.String).to_list() == ["prefill"] + ["decode"] * 5


# --- CUDA graphs (enable_cuda_graph): replayed runs record no node and no kernel ------------------------------


def _graph_profile(replays: int) -> list[dict[str, Any]]:
    """ORT's CUDA EP with enable_cuda_graph, a build with CUDA profiling: a first run (memory allocation) and
    the capture run execute the nodes (Node and Kernel events); every later run replays the graph and ORT
    records only its model_run (InferenceSession::Run's replay path skips the executor)."""
    events: list[dict[str, Any]] = []
    for k in range(2):
        t = 1000 * k
        events += [
            _ev("Session", "model_run", t, 500),
            _ev("Session", "SequentialExecutor::Execute", t + 5, 480),
            _ev("Node", "/a_kernel_time", t + 10, 20, op_name="MatMul", provider="CUDAExecutionProvider"),
            _ev("Kernel", "gemm", t + 40, 100, parent_name="/a_kernel_time", stream="7"),
        ]
    for k in range(replays):
        events.append(_ev("Session", "model_run", 3000 + 1000 * k, 200))
    return events


def test_cuda_graph_replays_get_no_busy_time_and_no_verdict(tmp_path: Path) -> None:
    """Before: the 6 replayed runs held no op, so 'framework-bound, median utilization 0%' (the graph's GPU
    work, which the 0.2 ms runs waited for, is not in the profile). After: their latency stays, busy figures
    and the verdict are withheld with the reason."""
    path = _write(tmp_path, "synthetic_ort_cuda_graph.json", _graph_profile(6))
    trace = read(path)
    assert trace.meta["graph_replays"]["of"] == 8 and len(trace.meta["graph_replays"]["runs"]) == 6
    assert [w for w in trace.meta["warnings"] if "6 of 8 'model_run' events hold no Node event" in w]
    analyzed = tracekit.analyze(path)
    frame = analyzed.iterations
    assert frame["latency_ms"].to_list() == pytest.approx([0.5, 0.5] + [0.2] * 6, abs=1e-9)
    assert frame["gpu_busy_ms"].null_count() == 8
    assert analyzed.verdict is None and "replay" in analyzed.no_verdict


def test_runs_that_all_hold_nodes_are_no_replays(tmp_path: Path) -> None:
    path = _write(tmp_path, "synthetic_ort_cuda_no_graph.json", _graph_profile(0))
    assert "graph_replays" not in read(path).meta
    assert tracekit.analyze(path).verdict is not None


# --- profiles without a run: set-up only; run-level profiles ------------------------------------------------


def test_a_profile_of_session_set_up_only_is_one_line(tmp_path: Path, capsys) -> None:
    """end_profiling() before any run() (or a GenAI session that never ran): before, the model loading was
    taken as one iteration (latency 0.100 ms); after, one line, exit 2."""
    from tracekit.cli import main

    events = [_ev("Session", "model_loading_uri", 0, 100), _ev("Session", "session_initialization", 100, 500)]
    path = _write(tmp_path, "synthetic_ort_setup_only.json", events)
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert "session set-up only (model_loading_uri 0.100 ms, session_initialization 0.500 ms)" in err


def test_a_run_level_profile_executor_span_is_no_set_up(tmp_path: Path) -> None:
    """A run-level profile (one file per run, no model_run): the executor's span is the run, not set-up."""
    events = [
        _ev("Session", "session_initialization", 0, 50),
        _ev("Session", "SequentialExecutor::Execute", 100, 100),
        _node("/a", 110, 50, 1),
    ]
    path = _write(tmp_path, "synthetic_ort_run_level.json", events)
    assert read(path).meta["session_setup"] == [{"name": "session_initialization", "ms": 0.05}]
    analyzed = tracekit.analyze(path)
    assert analyzed.range_name == "SequentialExecutor::Execute"
    assert analyzed.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.05], abs=1e-9)


# --- a CUDA session whose shape nodes run on the CPU provider --------------------------------------------------


def test_cuda_profile_with_more_cpu_shape_nodes_than_gpu_nodes_gets_no_verdict(tmp_path: Path) -> None:
    """ORT puts a dynamic-shape model's shape computations (Shape, Gather, Unsqueeze, Concat on int64) on the
    CPU provider: here 10 of them (5 µs each) beside 6 CUDA nodes (15 µs of host launch time each) in a 1 ms
    run. Before: the CUDA nodes were under half of the nodes, so 'framework-bound, 14%' from host times while
    the GPU's work is nowhere in the profile. After: no verdict, as when every node is on CUDA."""
    events, t = [], 0
    for _ in range(3):
        events.append(_ev("Session", "model_run", t, 1000))
        s = t + 10
        for k in range(10):
            events.append(
                _ev(
                    "Node", f"/s{k}/Shape_kernel_time", s, 5, op_name="Shape", provider="CPUExecutionProvider"
                )
            )
            s += 10
        for k in range(6):
            events.append(
                _ev(
                    "Node",
                    f"/n{k}/MatMul_kernel_time",
                    s,
                    15,
                    op_name="MatMul",
                    provider="CUDAExecutionProvider",
                )
            )
            s += 20
        t += 2000
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_cuda_cpu_shapes.json", events))
    assert analyzed.verdict is None
    assert analyzed.no_verdict.startswith(
        "no framework-/compute-bound verdict: 18 of 48 operator events ran on a GPU execution provider"
    )


def test_runs_of_many_shapes_name_the_five_most_frequent(tmp_path: Path) -> None:
    """A benchmark feeding requests of 12 sequence lengths: the line names 5 shapes, not 12."""
    events, t = [], 0
    for k in range(12):
        for _ in range(2 if k == 11 else 1):
            events.append(_ev("Session", "model_run", t, 400))
            events.append(_node("/q/MatMul", t + 10, 100, 1, input_type_shape=[_shape(1, 16 + k, 64)]))
            t += 1000
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_many_shapes.json", events))
    said = [w for w in analyzed.warnings if "input shapes" in w]
    assert len(said) == 1
    assert "13 analyzed runs are of 12 input shapes" in said[0] and "and 7 more shapes" in said[0]
    assert said[0].count(" x1: ") + said[0].count(" x2: ") == 5 and "[1,27,64] x2" in said[0]


def test_a_cpu_session_run_without_nodes_is_no_graph_replay(tmp_path: Path) -> None:
    """The CPU provider captures no graph: a run without nodes there (one that failed early) is not a replay."""
    events = [dict(e, args={**e["args"], "provider": "CPUExecutionProvider"}) for e in _graph_profile(1)]
    events = [e for e in events if e["cat"] != "Kernel"]
    assert "graph_replays" not in read(_write(tmp_path, "synthetic_ort_cpu_empty_run.json", events)).meta


def test_kernels_of_concurrent_runs_are_not_called_late(tmp_path: Path) -> None:
    """Two callers on a CUDA session (nodes on their callers' threads): run B began after run A and ended
    first. A's kernel ends after B ended but inside A. Before: the node was given B (the run of its process
    that began last), so the kernel read 'after its run ended' (GPU times on another clock). After: A's."""
    events = [
        _ev("Session", "model_run", 0, 1000, tid=1),
        _ev("Node", "/a_kernel_time", 300, 20, tid=1, op_name="MatMul", provider="CUDAExecutionProvider"),
        _ev("Kernel", "gemm", 330, 400, tid=1, parent_name="/a_kernel_time", stream="7"),
        _ev("Session", "model_run", 200, 300, tid=2),
        _ev("Node", "/b_kernel_time", 210, 20, tid=2, op_name="MatMul", provider="CUDAExecutionProvider"),
        _ev("Kernel", "gemm", 240, 50, tid=2, parent_name="/b_kernel_time", stream="8"),
    ]
    assert "ops_after_run" not in read(_write(tmp_path, "synthetic_ort_cuda_two_callers.json", events)).meta
