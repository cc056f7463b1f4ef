"""ONNX Runtime profiles of shapes tracekit had not handled (round 11): runs that stopped early.

ORT records ``model_run`` for a run that failed at a node (``Run`` returns the node's error after the profiler
event is written), with the nodes it ran, the failing node included: the run ran a prefix of the nodes the
other runs ran. Seen on a real 1.32 CPU profile (a Reshape fed an impossible shape on one run of five: that
run's ``model_run`` is 0.554 ms with 2 of 3 nodes, the slowest run of the profile, while the others took
0.147-0.496 ms). A run stopped by ``RunOptions.terminate`` looks the same.

Hand-built profiles are labelled synthetic (file names); the real one is made here by the installed
onnxruntime (CPU) when it is there. Expected numbers are computed by hand from the events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tracekit
from tracekit.readers.ort import read


def _ev(cat: str, name: str, ts: Any, dur: Any, pid: int = 1, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": pid, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _node(name: str, ts: int, dur: int, tid: int = 1, op: str = "MatMul") -> dict[str, Any]:
    return _ev("Node", f"{name}_kernel_time", ts, dur, tid=tid, op_name=op, provider="CPUExecutionProvider")


def _write(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


def _run(start: int, names: list[str], dur: int = 100, tid: int = 1) -> list[dict[str, Any]]:
    """One run on thread ``tid`` at ``start`` µs: its nodes of ``dur`` µs back to back from ``start`` + 10,
    then ``model_run`` ending 10 µs after the last node (ORT writes each event when it ends)."""
    events = [_node(n, start + 10 + k * dur, dur, tid) for k, n in enumerate(names)]
    events.append(_ev("Session", "model_run", start, 20 + len(names) * dur, tid=tid))
    return events


FULL = ["/mm", "/reshape", "/relu"]


def test_a_run_that_failed_at_a_node_is_named(tmp_path: Path) -> None:
    """Four full runs (3 nodes, 0.32 ms) and one that failed at its second node (2 nodes, 0.22 ms). Before:
    nothing said so; its 0.22 ms latency and 2 ops were an inference's like the others'. After: meta
    ``partial_runs`` names it and a warning says what it is."""
    events = _run(0, FULL) + _run(1000, FULL) + _run(2000, FULL[:2]) + _run(3000, FULL) + _run(4000, FULL)
    trace = read(_write(tmp_path, "synthetic_ort_failed_run.json", events))
    assert trace.meta["partial_runs"] == {"runs": [[1, 1, 2_000_000]], "of": 5}
    said = [w for w in trace.meta["warnings"] if "ran only a prefix" in w]
    assert len(said) == 1 and said[0].startswith("1 of 5 'model_run' events ran only a prefix")
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_failed_run2.json", events))
    assert analyzed.iterations["latency_ms"].to_list() == pytest.approx(
        [0.32] * 4
    )  # the analysis leaves it out
    assert [w for w in analyzed.warnings if w.startswith("left out 1 of 5 'model_run' iterations")] == [
        "left out 1 of 5 'model_run' iterations that did not complete (failed at a node, the last one included, "
        "were stopped by RunOptions.terminate, or fetched fewer outputs; the reader's warning says which): not "
        "whole inferences; the other 4 are analyzed"
    ]


def test_when_every_analyzed_run_stopped_part_way_they_stay_and_are_said(tmp_path: Path) -> None:
    """Synthetic: four whole runs, then one that failed at its second node; ``skip=4`` analyzes that one
    alone. Nothing else is left to analyze, so it stays, and the warning says it is no whole inference."""
    events = _run(0, FULL) + _run(1000, FULL) + _run(2000, FULL) + _run(3000, FULL) + _run(4000, FULL[:2])
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_failed_last.json", events), skip=4)
    assert analyzed.iterations["latency_ms"].to_list() == pytest.approx([0.22])
    assert (
        "every analyzed 'model_run' iteration did not complete (failed at a node, the last one included, were "
        "stopped by RunOptions.terminate, or fetched fewer outputs; the reader's warning says which): none is a "
        "whole inference"
    ) in analyzed.warnings


def test_runs_of_the_same_nodes_are_not_partial(tmp_path: Path) -> None:
    events = _run(0, FULL) + _run(1000, FULL) + _run(2000, FULL)
    trace = read(_write(tmp_path, "synthetic_ort_full_runs.json", events))
    assert "partial_runs" not in trace.meta
    assert not [w for w in trace.meta["warnings"] if "prefix" in w]


def test_branches_and_loop_trip_counts_are_not_partial(tmp_path: Path) -> None:
    """An If whose branches differ, a Loop whose trip count differs: the control-flow node is written after its
    subgraph's nodes, and the nodes after it follow, so no run's nodes are a prefix of another's."""
    then_run = _run(0, ["/a", "/then1", "/then2", "/if", "/b"])
    else_run = _run(1000, ["/a", "/else1", "/if", "/b"])
    long_loop = _run(2000, ["/a", "/body", "/body", "/loop", "/b"])
    short_loop = _run(3000, ["/a", "/body", "/loop", "/b"])
    trace = read(
        _write(tmp_path, "synthetic_ort_branches.json", then_run + else_run + long_loop + short_loop)
    )
    assert "partial_runs" not in trace.meta


def test_a_node_name_that_extends_another_is_no_prefix(tmp_path: Path) -> None:
    """A run whose last node is ``/mm`` and another whose last node is ``/mm2``: different nodes, no prefix."""
    events = _run(0, ["/a", "/mm"]) + _run(1000, ["/a", "/mm2", "/b"]) + _run(2000, ["/a", "/mm2", "/b"])
    trace = read(_write(tmp_path, "synthetic_ort_name_prefix.json", events))
    assert "partial_runs" not in trace.meta


def test_concurrent_callers_failed_run_is_found_on_its_own_thread(tmp_path: Path) -> None:
    """Two callers on threads 1 and 2, runs overlapping in time: each run's nodes are its own thread's, so a
    full run of thread 2 open at once does not make thread 1's failed run look full (nor the reverse)."""
    events = (
        _run(0, FULL, tid=1) + _run(50, FULL, tid=2) + _run(1000, FULL[:1], tid=1) + _run(1020, FULL, tid=2)
    )
    trace = read(_write(tmp_path, "synthetic_ort_concurrent_failed.json", events))
    assert trace.meta["partial_runs"] == {"runs": [[1, 1, 1_000_000]], "of": 4}


def test_a_run_without_nodes_on_a_cpu_session_is_partial(tmp_path: Path) -> None:
    """A CPU run that holds no node at all (failed at its first node before the node's event was written, or
    terminated at once) ran the empty prefix: partial, not a graph replay (a CPU session captures no graph)."""
    events = _run(0, FULL) + [_ev("Session", "model_run", 1000, 30)] + _run(2000, FULL)
    trace = read(_write(tmp_path, "synthetic_ort_empty_run.json", events))
    assert trace.meta["partial_runs"] == {"runs": [[1, 1, 1_000_000]], "of": 3}
    assert "graph_replays" not in trace.meta


def test_real_run_failing_at_a_reshape(tmp_path: Path) -> None:
    """Real: onnxruntime (CPU) runs MatMul -> Reshape -> Relu five times; the third run feeds the Reshape a
    shape its input cannot take, so Reshape fails and Run raises. ORT records that run (model_run with MatMul and
    the failing Reshape). The reader names exactly that run."""
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    np = pytest.importorskip("numpy")
    helper, tp = onnx.helper, onnx.TensorProto
    weights = np.ones((8, 8), dtype=np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
            helper.make_node("Reshape", ["m", "s"], ["r"], name="reshape"),
            helper.make_node("Relu", ["r"], ["y"], name="relu"),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", tp.FLOAT, [None, 8]),
            helper.make_tensor_value_info("s", tp.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", tp.FLOAT, None)],
        [helper.make_tensor("w", tp.FLOAT, [8, 8], weights.flatten())],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.log_severity_level = 4
    options.profile_file_prefix = str(tmp_path / "real_ort_failed_run")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.ones((16, 8), dtype=np.float32)
    for k in range(5):
        shape = np.array([7, 7] if k == 2 else [8, 16], dtype=np.int64)
        try:
            session.run(None, {"x": x, "s": shape})
        except Exception:  # noqa: BLE001 -- the run meant to fail
            assert k == 2
    path = Path(session.end_profiling())
    starts = [e["ts"] for e in json.loads(path.read_text()) if e.get("name") == "model_run"]
    assert len(starts) == 5
    trace = read(path)
    assert trace.meta["partial_runs"]["of"] == 5
    assert [r[2] for r in trace.meta["partial_runs"]["runs"]] == [starts[2] * 1000]


def test_a_failed_run_is_left_out_of_the_iterations(tmp_path: Path) -> None:
    """Proposed: the analysis leaves the runs of ``meta["partial_runs"]`` out, as it leaves out runs whose busy
    time cannot be known, with a warning; four whole runs of 0.32 ms remain."""
    events = _run(0, FULL) + _run(1000, FULL) + _run(2000, FULL[:2]) + _run(3000, FULL) + _run(4000, FULL)
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_failed_run.json", events))
    assert analyzed.iterations["latency_ms"].to_list() == pytest.approx([0.32] * 4)


def test_two_sessions_writing_one_file_name_is_one_line_that_says_so(tmp_path: Path, capsys) -> None:
    """Synthetic, made as ORT makes it: two sessions opened one file name (one ``profile_file_prefix`` within one
    second, in versions that name files by the second), and each wrote its array from the first byte at its
    end: the later, shorter array, then the rest of the earlier, longer one. Before: 'truncated or invalid JSON:
    Extra data: line 1 column ...', which does not say why. After: the same line says what wrote it."""
    from tracekit.cli import main

    first = json.dumps(_run(0, FULL) + _run(1000, FULL) + _run(2000, FULL), indent=0)
    second = json.dumps(_run(0, FULL[:1]), indent=0)
    path = tmp_path / "synthetic_ort_same_file_name.json"
    path.write_text(second + first[len(second) :])
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"Extra data: line 25 column 2 (char {len(second)})" in err
    assert f"a whole JSON array ends at char {len(second)} and more text follows it" in err
    assert "several sessions wrote this file name" in err


def test_processes_forked_from_a_profiled_session_are_one_line_that_says_so(tmp_path: Path, capsys) -> None:
    """Synthetic, shaped as a real 1.32 profile made here: a session run once in a parent, then two fork()ed
    children that ran it and called end_profiling, then the parent: the open file is shared, so the file holds
    three whole arrays one after another (each with the parent's run, pid 1, then the child's). Before: 'Extra
    data' only. After: the line counts the arrays and names fork()."""
    from tracekit.cli import main

    parent = _run(0, FULL)
    child = [dict(e, pid=2) for e in _run(1000, FULL)]
    other = [dict(e, pid=3) for e in _run(1000, FULL)]
    path = tmp_path / "synthetic_ort_forked.json"
    path.write_text("\n".join(json.dumps(a) for a in (parent + child, parent + other, parent)) + "\n")
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "the file holds 3 whole JSON arrays one after another" in err and "forked" in err


def _provider_run(start: int, provider: str) -> list[dict[str, Any]]:
    """A run of a tokenizer node on the CPU (50 µs) and a node on ``provider`` (900 µs), in a 1 ms run."""
    cpu = _node("/tokenize", start + 10, 50)
    other = _node("/invoke", start + 70, 900, op="AzureTritonInvoker")
    other["args"]["provider"] = provider
    return [cpu, other, _ev("Session", "model_run", start, 1000)]


def test_nodes_on_the_azure_provider_are_said_to_be_a_network_wait(tmp_path: Path) -> None:
    """The Azure EP (onnxruntime-extensions' AzureTritonInvoker, OpenAIAudioToText) sends its inputs to an
    endpoint and waits: before, its 0.9 ms read as operator busy time without a word ('compute-bound, 95%').
    After: a warning and meta ``remote_provider_nodes``."""
    events = _provider_run(0, "AzureExecutionProvider") + _provider_run(2000, "AzureExecutionProvider")
    trace = read(_write(tmp_path, "synthetic_ort_azure.json", events))
    assert trace.meta["remote_provider_nodes"] == [2, 4]
    said = [w for w in trace.meta["warnings"] if "remote execution provider" in w]
    assert len(said) == 1 and said[0].startswith("2 of 4 operator events ran on a remote execution provider")


def test_nodes_on_an_unknown_provider_are_said_to_be_of_unknown_meaning(tmp_path: Path) -> None:
    """A plugin EP (ORT 1.23's EP ABI lets a library name its own provider): its node times may be computation,
    a device's work or launches; before nothing was said."""
    events = _provider_run(0, "ExampleNpuExecutionProvider") + _provider_run(
        2000, "ExampleNpuExecutionProvider"
    )
    trace = read(_write(tmp_path, "synthetic_ort_plugin_ep.json", events))
    said = [w for w in trace.meta["warnings"] if "does not know" in w]
    assert len(said) == 1 and "(ExampleNpuExecutionProvider)" in said[0] and said[0].startswith("2 of 4")
    assert "remote_provider_nodes" not in trace.meta


def test_cpu_library_providers_are_known(tmp_path: Path) -> None:
    events = _provider_run(0, "XnnpackExecutionProvider") + _provider_run(2000, "DnnlExecutionProvider")
    trace = read(_write(tmp_path, "synthetic_ort_cpu_libraries.json", events))
    assert not [w for w in trace.meta["warnings"] if "does not know" in w or "remote" in w]


def test_a_run_waiting_on_a_remote_provider_gets_no_verdict(tmp_path: Path) -> None:
    events = _provider_run(0, "AzureExecutionProvider") + _provider_run(2000, "AzureExecutionProvider")
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_azure.json", events))
    assert analyzed.verdict is None


def test_real_run_stopped_by_terminate(tmp_path: Path) -> None:
    """Real: a run whose RunOptions.terminate is set before it starts fails with 'Exiting due to terminate flag'
    before its first node; ORT 1.32 records its model_run (0.2 ms here) and executor span with no node. The
    reader names that run as partial (a CPU session: no graph replay)."""
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    np = pytest.importorskip("numpy")
    helper, tp = onnx.helper, onnx.TensorProto
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Neg", ["r"], ["y"], name="neg"),
        ],
        "g",
        [helper.make_tensor_value_info("x", tp.FLOAT, [None, 8])],
        [helper.make_tensor_value_info("y", tp.FLOAT, [None, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.log_severity_level = 4
    options.profile_file_prefix = str(tmp_path / "real_ort_terminated_run")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.ones((4, 8), dtype=np.float32)
    for k in range(4):
        run_options = ort.RunOptions()
        run_options.terminate = k == 2
        try:
            session.run(None, {"x": x}, run_options)
        except Exception:  # noqa: BLE001 -- the run meant to stop
            assert k == 2
    path = Path(session.end_profiling())
    starts = [e["ts"] for e in json.loads(path.read_text()) if e.get("name") == "model_run"]
    if len(starts) != 4:
        pytest.skip(f"this onnxruntime records {len(starts)} runs of 4 (a stopped run not recorded)")
    trace = read(path)
    assert trace.meta["partial_runs"]["of"] == 4
    assert [r[2] for r in trace.meta["partial_runs"]["runs"]] == [starts[2] * 1000]


def test_two_sessions_merged_on_one_clock_are_warned(tmp_path: Path) -> None:
    """Synthetic: the profiles of an encoder session and a decoder session of one process, put on one clock by a
    tool (ORT gives ``get_profiling_start_time_ns`` for that) and merged: their runs alternate on one thread and
    never overlap, so the merged-sessions error does not fire. Before: six iterations of two models as one series
    (median latency 1.17 ms, a run of neither model), no word. After: a warning names the two sessions."""
    encoder = [_ev("Session", "session_initialization", 0, 500)]
    decoder = [_ev("Session", "session_initialization", 600, 500)]
    for k in range(3):
        encoder += _run(2000 + k * 4000, ["/enc/a", "/enc/b", "/enc/c"])
        decoder += _run(3000 + k * 4000, ["/dec/a"] * 2, dur=1000)
    trace = read(_write(tmp_path, "synthetic_ort_two_sessions_one_clock.json", encoder + decoder))
    said = [w for w in trace.meta["warnings"] if "'session_initialization' events in one process" in w]
    assert len(said) == 1 and said[0].startswith("2 'session_initialization' events in one process")
    assert "partial_runs" not in trace.meta


def test_sessions_of_two_processes_each_with_one_initialization_are_not_warned(tmp_path: Path) -> None:
    one = [_ev("Session", "session_initialization", 0, 500, pid=1)] + _run(1000, FULL)
    two = [dict(e, pid=2) for e in one]
    trace = read(_write(tmp_path, "synthetic_ort_two_processes.json", one + two))
    assert not [w for w in trace.meta["warnings"] if "'session_initialization' events" in w]


def test_a_run_with_more_nodes_than_the_usual_ones_does_not_make_them_partial(tmp_path: Path) -> None:
    """Synthetic: a first run with an extra node at its end (a one-time output copy, say), then four runs of
    the usual nodes. The usual runs are no prefix of a run at least as frequent: none is partial, all five
    are analyzed (a rule that compared with any longer run had left the four usual runs out)."""
    events = (
        _run(0, [*FULL, "/extra"]) + _run(1000, FULL) + _run(2000, FULL) + _run(3000, FULL) + _run(4000, FULL)
    )
    trace = read(_write(tmp_path, "synthetic_ort_longer_first_run.json", events))
    assert "partial_runs" not in trace.meta
    analyzed = tracekit.analyze(_write(tmp_path, "synthetic_ort_longer_first_run2.json", events))
    assert analyzed.iterations.height == 5
