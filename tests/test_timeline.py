"""tracekit analyze --timeline: Chrome trace-event / Perfetto JSON, checked against the Trace Event Format
(required keys, µs times, integer pid/tid, nesting per track) and against the analysis (iteration slices
are the latency windows; idle slices, named by cause, sum to the idle time to the nanosecond)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SAMPLE_TRACES
from tracekit.analyzers.attribution import CAUSES
from tracekit.cli import main
from tracekit.model import Trace
from tracekit.renderers.timeline import nesting_lanes
from tracekit.session import AnalysisOptions, analyze_input, analyze_trace

SAMPLES = {
    "synthetic nsys (GPU)": SAMPLE_TRACES / "synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite",
    "synthetic Kineto (CUDA graphs)": SAMPLE_TRACES
    / "synthetic/table3_cuda-graphs/cuda-graphs_b1_s128.synthetic.json.gz",
    "real ORT CPU (warm-up skipped)": SAMPLE_TRACES / "cpu_onnx_bert_ort/onnx_b1_s128.ort.json.gz",
    "real H200 CUDA graphs (Kineto)": SAMPLE_TRACES
    / "h200_bert_fp16/cuda-graphs/cuda-graphs_b1_s128.torch.json.gz",
}

#: The phases the timeline may use, and the keys each requires (Trace Event Format).
REQUIRED = {
    "X": {"name", "ph", "ts", "dur", "pid", "tid"},
    "C": {"name", "ph", "ts", "pid", "args"},
    "M": {"name", "ph", "pid", "args"},
}
METADATA_NAMES = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def _ns(us: float) -> int:
    return round(us * 1000)


def check_trace_event_format(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Assert the document is valid trace-event JSON as Perfetto reads it; returns the events."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit") in (None, "ms", "ns")
    events = doc["traceEvents"]
    for e in events:
        assert e["ph"] in REQUIRED, e
        missing = REQUIRED[e["ph"]] - set(e)
        assert not missing, (missing, e)
        assert isinstance(e["pid"], int) and isinstance(e.get("tid", 0), int)
        assert isinstance(e["name"], str)
        if e["ph"] == "M":
            assert e["name"] in METADATA_NAMES and isinstance(e["args"], dict)
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        # microseconds with at most nanosecond digits
        assert abs(e["ts"] * 1000 - _ns(e["ts"])) < 1e-3
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
            assert abs(e["dur"] * 1000 - _ns(e["dur"])) < 1e-3
        if e["ph"] == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values())
    # Every track and process with events is named.
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    used = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"}
    assert used <= named
    # On every track, complete events nest or are disjoint.
    tracks: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for e in events:
        if e["ph"] == "X":
            s = _ns(e["ts"])
            tracks.setdefault((e["pid"], e["tid"]), []).append((s, s + _ns(e["dur"])))
    for key, spans in tracks.items():
        spans.sort(key=lambda x: (x[0], -x[1]))
        stack: list[int] = []
        for s, end in spans:
            while stack and stack[-1] <= s:
                stack.pop()
            assert not stack or end <= stack[-1], (key, s, end, stack[-1])
            stack.append(end)
    return events


def _timeline(path: Path, tmp_path: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "timeline.json"
    assert main(["analyze", str(path), "--timeline", str(out), "-o", str(tmp_path / "a.json"), *extra]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", list(SAMPLES))
def test_timeline_is_valid_and_matches_the_analysis(name: str, tmp_path: Path) -> None:
    path = SAMPLES[name]
    doc = _timeline(path, tmp_path)
    events = check_trace_event_format(doc)
    analyzed = analyze_input(path, AnalysisOptions())
    iters = analyzed.iterations.sort("index")
    origin = doc["otherData"]["time_origin_ns"]

    # One iteration slice per analyzed iteration, exactly over its latency window.
    slices = sorted((e for e in events if e.get("cat") == "iteration"), key=lambda e: e["ts"])
    assert [e["args"]["iteration"] for e in slices] == iters["index"].to_list()
    for e, row in zip(slices, iters.iter_rows(named=True), strict=True):
        assert _ns(e["ts"]) + origin == row["window_start_ns"]
        assert _ns(e["dur"]) == row["window_end_ns"] - row["window_start_ns"]
        assert e["dur"] == pytest.approx(row["latency_ms"] * 1000, abs=1e-3)

    # Idle slices: named by cause, inside their iteration's window, summing to its idle time to the ns.
    idle = [e for e in events if e.get("cat") == "idle"]
    assert idle and {e["name"] for e in idle} <= set(CAUSES)
    windows = {r["index"]: (r["window_start_ns"], r["window_end_ns"]) for r in iters.iter_rows(named=True)}
    per_iteration: dict[int, int] = {}
    for e in idle:
        it = e["args"]["iteration"]
        s = _ns(e["ts"]) + origin
        lo, hi = windows[it]
        assert lo <= s and s + _ns(e["dur"]) <= hi
        per_iteration[it] = per_iteration.get(it, 0) + _ns(e["dur"])
    total_ns = sum(per_iteration.values())
    expected = iters["idle_ms"].sum() * 1e6
    assert total_ns == pytest.approx(expected, abs=len(idle))  # idle_ms is float ns / 1e6
    assert total_ns == doc["otherData"]["idle_ns_total"]
    for it, ns in per_iteration.items():
        assert ns == pytest.approx(iters.filter(pl.col("index") == it)["idle_ms"][0] * 1e6, abs=1.0)
    # and per cause, the analysis' own split
    for cause in CAUSES:
        got = sum(_ns(e["dur"]) for e in idle if e["name"] == cause)
        assert got == pytest.approx(iters[f"{cause}_ms"].sum() * 1e6, abs=len(idle))

    # The utilization counter: each iteration's busy / latency over its window, 0 after.
    counter = [e for e in events if e["ph"] == "C"]
    values = [next(iter(e["args"].values())) for e in counter]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert max(values) == pytest.approx(iters["gpu_utilization"].max())

    # The trace's own events are there: every op, on the device/operator process.
    ops = [e for e in events if e["pid"] == 3 and e["ph"] == "X"]
    assert len(ops) == analyzed.trace_data.ops.height


def test_gzipped_timeline_and_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = SAMPLES["synthetic nsys (GPU)"]
    out = tmp_path / "t.json.gz"
    assert main(["analyze", str(path), "--timeline", str(out), "--format", "json", "-q"]) == 0
    check_trace_event_format(json.loads(gzip.decompress(out.read_bytes())))
    capsys.readouterr()
    # never over the input, never into a missing folder, never a folder
    assert main(["analyze", str(path), "--timeline", str(path)]) == 2
    assert main(["analyze", str(path), "--timeline", str(tmp_path / "no" / "t.json")]) == 2
    assert main(["analyze", str(path), "--timeline", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("tracekit: ") for line in err)


def test_overlapping_ranges_get_lanes(tmp_path: Path) -> None:
    """NVTX start/end ranges may overlap without nesting: they are split into lanes (hand-built, synthetic)."""
    ranges = pl.DataFrame(
        {
            "start": [0, 100, 150, 1000],
            "end": [200, 300, 250, 1100],
            "pid": 1,
            "thread": 1,
            "depth": 0,
            "domain": None,
            "name": ["a", "b", "c", "iteration"],
        }
    )
    ops = pl.DataFrame(
        {
            "start": [1010, 1050],
            "end": [1040, 1080],
            "device": 0,
            "stream": 7,
            "pid": 1,
            "correlation": None,
            "kind": "kernel",
            "name": ["k1", "k2"],
        }
    )
    trace = Trace(ops=ops, ranges=ranges, meta={"device": "gpu", "synthetic": True, "path": "hand"})
    analyzed = analyze_trace(trace, options=AnalysisOptions(range_name="iteration"))
    from tracekit.analyzers.report import idle_pieces_of
    from tracekit.renderers.timeline import render_timeline, timeline_events

    doc = json.loads(render_timeline(timeline_events(analyzed, idle_pieces_of(analyzed))))
    events = check_trace_event_format(doc)
    names = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert "pid 1 thread 1: ranges (lane 2)" in names
    idle = [e for e in events if e.get("cat") == "idle"]
    # window 1000-1100: idle 1000-1010, 1040-1050, 1080-1100 (40 ns)
    assert sum(_ns(e["dur"]) for e in idle) == 40
    # the trace records no host API call: the gaps are drawn whole, their cause not known
    assert {e["name"] for e in idle} == {"unattributed"}


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 30)), min_size=0, max_size=40))
def test_nesting_lanes(spans: list[tuple[int, int]]) -> None:
    spans = sorted(((s, s + d) for s, d in spans), key=lambda x: (x[0], -x[1]))
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    ends = np.array([e for _, e in spans], dtype=np.int64)
    lanes = nesting_lanes(starts, ends)
    for lane in set(lanes.tolist()):
        stack: list[int] = []
        for s, e, ln in zip(starts, ends, lanes, strict=True):
            if ln != lane:
                continue
            while stack and stack[-1] <= s:
                stack.pop()
            assert not stack or e <= stack[-1]
            stack.append(int(e))


def test_ops_without_a_start_or_an_end_have_no_slice(tmp_path: Path) -> None:
    """Ops whose start or end was not recorded (counted by the analysis, warned) are left off the timeline;
    drawing them used to end the command with an internal error (hand-built, synthetic)."""
    ops = pl.DataFrame(
        {
            "start": [1010, 1050, None],
            "end": [1040, None, 1090],
            "device": 0,
            "stream": 7,
            "pid": 1,
            "correlation": None,
            "kind": "kernel",
            "name": ["k1", "k2", "k3"],
        }
    )
    ranges = pl.DataFrame(
        {
            "start": [1000],
            "end": [1100],
            "pid": 1,
            "thread": 1,
            "depth": 0,
            "domain": None,
            "name": ["iteration"],
        }
    )
    trace = Trace(ops=ops, ranges=ranges, meta={"device": "gpu", "synthetic": True, "path": "hand"})
    analyzed = analyze_trace(trace, options=AnalysisOptions(range_name="iteration"))
    from tracekit.analyzers.report import idle_pieces_of
    from tracekit.renderers.timeline import render_timeline, timeline_events

    events = check_trace_event_format(
        json.loads(render_timeline(timeline_events(analyzed, idle_pieces_of(analyzed))))
    )
    assert [e["name"] for e in events if e.get("cat") == "kernel"] == ["k1"]
    assert analyzed.iterations["kernels"].to_list() == [2]  # (k3, no start and no launch: in no iteration)
