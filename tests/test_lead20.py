"""The lead's round-20 fixes that no helper's file pins (hand-built SYNTHETIC traces, exact answers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import analyze_json, small_trace_events

PAIRED = "are written as begin/end pairs ('ph' 'B'/'E' or 'b'/'e') beside complete events ('ph' 'X')"


def _kineto(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    doc = {"schemaVersion": 1, "traceEvents": events, "metadata": {"synthetic": True}}
    path = tmp_path / f"{name}.synthetic.json"
    path.write_text(json.dumps(doc))
    return path


def _analyze(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert doc is not None
    return doc


def _rows(doc: dict[str, Any]) -> list[tuple[float, float | None, int, int | None]]:
    return [(it["latency_ms"], it["gpu_busy_ms"], it["kernels"], it["launches"]) for it in doc["iterations"]]


def _paired(events: list[dict[str, Any]], category: str, which: set[int], phases: str = "BE") -> list[Any]:
    """``events`` with the events of ``category`` whose position among that category's is in ``which``
    written as a begin/end pair of ``phases`` (the end event: pid, tid and end time only, as the Trace Event
    Format allows)."""
    out, n = [], 0
    for e in events:
        if e["cat"] == category:
            n += 1
            if n - 1 in which:
                begin = {k: v for k, v in e.items() if k != "dur"} | {"ph": phases[0]}
                out += [begin, {"ph": phases[1], "pid": e["pid"], "tid": e["tid"], "ts": e["ts"] + e["dur"]}]
                continue
        out.append(e)
    return out


def test_a_middle_iterations_kernel_as_a_begin_end_pair_is_said_and_doubts_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Iteration 1's second kernel (of 12, position 4) as a B/E pair: that iteration holds 2 kernels of its 3
    launches, 0.02 ms busy; the others (0.9, 0.03, 3, 3). Before: nothing said, the verdict sure. Now the
    reader says the pairs were not read and the analysis doubts the verdict (GPU busy is a lower bound)."""
    doc = _analyze(capsys, _kineto(tmp_path, "be_middle", _paired(small_trace_events(), "kernel", {4})))
    assert _rows(doc) == [(0.9, 0.03, 3, 3), (0.9, 0.02, 2, 3), (0.9, 0.03, 3, 3), (0.9, 0.03, 3, 3)]
    said = [w for w in doc["warnings"] if PAIRED in w]
    assert len(said) == 1 and said[0].startswith("events of category 'kernel' "), doc["warnings"]
    assert "GPU busy time is short by it" in said[0]
    assert "events tracekit does not read ('kernel' events written as begin/end pairs)" in str(
        doc["summary"]["verdict_uncertain"]
    )


def test_async_begin_end_pairs_in_a_chunk_the_lenient_decoder_reads_are_said_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same kernel as an async 'b'/'e' pair, in a file the fast decoder hands to the lenient one (an
    event's name is a number): the begin/end pairs are found from the lenient chunk's phase column."""
    events = _paired(small_trace_events(), "kernel", {4}, phases="be")
    events.append({"ph": "i", "cat": "marker", "name": 7, "pid": 1, "tid": 1, "ts": 1_000_001, "s": "t"})
    doc = _analyze(capsys, _kineto(tmp_path, "be_lenient", events))
    assert _rows(doc)[1] == (0.9, 0.02, 2, 3)
    assert [w for w in doc["warnings"] if PAIRED in w and "'kernel'" in w], doc["warnings"]
    assert doc["summary"]["verdict_uncertain"]


def test_launch_calls_as_begin_end_pairs_are_said_as_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Iteration 2's first launch call (cuda_runtime position 6) as a B/E pair: its kernel has no call and
    counts in no iteration (said so), iteration 2 reads (0.9, 0.02, 2, 2); the reader says the launch calls
    the pairs record are left out."""
    doc = _analyze(capsys, _kineto(tmp_path, "be_calls", _paired(small_trace_events(), "cuda_runtime", {6})))
    assert _rows(doc)[2] == (0.9, 0.02, 2, 2)
    said = [w for w in doc["warnings"] if PAIRED in w]
    assert len(said) == 1 and "'cuda_runtime'" in said[0] and "launch counts" in said[0], doc["warnings"]


def test_annotations_all_begin_end_are_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every annotation a B/E pair: the trace's one warning for it stays the 'none is a complete event' one
    (no second line for the same pairs), and the trace reads whole as one iteration, as before."""
    doc = _analyze(
        capsys, _kineto(tmp_path, "be_all", _paired(small_trace_events(), "user_annotation", {0, 1, 2, 3}))
    )
    assert _rows(doc) == [(3.23, 0.12, 12, 12)]
    said = [w for w in doc["warnings"] if "begin/end" in w]
    assert len(said) == 1 and "begin/end pairs are not read" in said[0], said
