"""Hostile round 13, ONNX Runtime reader: real ORT 1.32 profiles' behaviour not seen before, rebuilt by hand.

Every profile here is hand-built (file names holding "synthetic"); times are in µs in the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tracekit
from tracekit.readers.ort import read

OUT = [{"float": [16, 128]}]


def _ev(cat: str, name: str, ts: int, dur: int, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": 1, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _run(start: int, outputs: list[list[dict[str, Any]]], dur: int = 100) -> list[dict[str, Any]]:
    """One run at ``start`` µs of the nodes mm1, relu, reshape (one per item of ``outputs``: its
    ``output_type_shape``), back to back from ``start`` + 10, each ``dur`` µs; ``model_run`` ends 10 µs after
    the last node."""
    names = ["mm1", "relu", "reshape"]
    events = [
        _ev("Node", f"{names[k]}_kernel_time", start + 10 + k * dur, dur, op_name=names[k],
            provider="CPUExecutionProvider", output_type_shape=out)
        for k, out in enumerate(outputs)
    ]  # fmt: skip
    events.append(_ev("Session", "model_run", start, 20 + len(outputs) * dur))
    return events


def _write(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


def test_a_run_that_failed_at_its_last_node_is_a_partial_run(tmp_path: Path) -> None:
    """ORT 1.32, real here: a Reshape given a shape its input cannot take fails in the graph's last node; ORT
    still writes that node's event (141 µs, the error raised inside it), with ``output_type_shape`` [] and
    ``output_size`` "0" where the same node of the whole runs wrote [{"float": [16, 128]}], and the run's
    ``model_run``. Every node ran, so the prefix rule did not see it: the failed run had been analyzed as an
    inference. Four runs of 0.32 ms at 1000, 2000, 3000, 4000 µs, the third failed: it is left out."""
    events = []
    for k in range(4):
        events += _run(1000 + k * 1000, [OUT, OUT, [] if k == 2 else OUT])
    path = _write(tmp_path, "ort_failed_last_node.synthetic.json", events)
    trace = read(path)
    assert trace.meta["partial_runs"] == {"runs": [[1, 1, 3_000_000]], "of": 4, "failed_at_last_node": 1}
    assert (
        "1 of 4 'model_run' events failed at their last node: its event has no output shape (output_type_shape "
        "[]) where the same node wrote one in other runs (ORT records a failed run with the nodes it ran, the "
        "failing one last); they are not whole inferences (the analysis leaves them out of the iterations)"
    ) in trace.warnings
    assert not any("ran only a prefix" in w for w in trace.warnings)
    analyzed = tracekit.analyze(path, skip=0)
    assert analyzed.iterations.height == 3


def test_a_node_that_never_writes_an_output_shape_makes_no_partial_run(tmp_path: Path) -> None:
    """A node whose outputs are no tensors (a sequence, an optional) writes ``output_type_shape`` [] in
    every run: no run failed."""
    events = []
    for k in range(4):
        events += _run(1000 + k * 1000, [OUT, OUT, []])
    trace = read(_write(tmp_path, "ort_sequence_output.synthetic.json", events))
    assert "partial_runs" not in trace.meta
    assert tracekit.analyze(trace.meta["path"], skip=0).iterations.height == 4


def test_a_middle_node_without_an_output_shape_makes_no_partial_run(tmp_path: Path) -> None:
    """Only the last node of a run can be the one that failed (ORT stops at it): an empty shape earlier
    in a run is no failure."""
    events = []
    for k in range(4):
        events += _run(1000 + k * 1000, [OUT, [] if k == 2 else OUT, OUT])
    trace = read(_write(tmp_path, "ort_middle_empty.synthetic.json", events))
    assert "partial_runs" not in trace.meta


@pytest.mark.parametrize("k", [0, 3])
def test_the_first_or_last_run_failing_at_its_last_node_is_found(tmp_path: Path, k: int) -> None:
    events = []
    for i in range(4):
        events += _run(1000 + i * 1000, [OUT, OUT, [] if i == k else OUT])
    trace = read(_write(tmp_path, "ort_failed_edge.synthetic.json", events))
    assert trace.meta["partial_runs"] == {
        "runs": [[1, 1, (1000 + k * 1000) * 1000]],
        "of": 4,
        "failed_at_last_node": 1,
    }


def test_a_run_failing_at_its_first_node_is_counted_once_as_a_prefix(tmp_path: Path) -> None:
    """A run that failed at its first node is a prefix of the others (the prefix rule's), and its one node
    wrote no output: it is one partial run, counted by the prefix rule, not twice."""
    events = []
    for i in range(4):
        events += _run(1000 + i * 1000, [[]] if i == 1 else [OUT, OUT, OUT])
    trace = read(_write(tmp_path, "ort_failed_first.synthetic.json", events))
    assert trace.meta["partial_runs"] == {"runs": [[1, 1, 2_000_000]], "of": 4}
    assert sum("ran only a prefix" in w for w in trace.warnings) == 1
    assert not any("failed at their last node" in w for w in trace.warnings)


def test_the_analysis_does_not_say_a_run_that_failed_at_its_last_node_ran_a_prefix(tmp_path: Path) -> None:
    events = []
    for k in range(4):
        events += _run(1000 + k * 1000, [OUT, OUT, [] if k == 2 else OUT])
    path = _write(tmp_path, "ort_failed_last_node_words.synthetic.json", events)
    warnings = tracekit.analyze(path, skip=0).warnings
    assert any(w.startswith("left out 1 of 4 'model_run' iterations") for w in warnings)
    assert not any("ran only a prefix" in w for w in warnings)
