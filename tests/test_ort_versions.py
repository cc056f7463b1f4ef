"""ONNX Runtime profiles as other ORT versions, builds and tools write them (hand-built, synthetic): Kernel
events stamped at their node's start (GPUProfilerBase::MergeEvents), categories in another case, events
reordered by a tool, and a profile that hit ORT's event cap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracekit.readers.ort as ort_reader
from tracekit.readers.ort import read


def _write(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


def _ev(cat: str, name: str, ts: int, dur: int, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": 1, "tid": 1, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _gpu_bound(
    runs: int = 3, nodes: int = 4, kernel_us: int = 200, host_us: int = 10
) -> list[dict[str, Any]]:
    """A CUDA profile as ORT writes it: each node (``host_us`` on the host) launches one ``kernel_us`` kernel,
    which ORT stamps at the node's start + 1 µs; the last node copies the output to the host and waits for
    the GPU, so each run lasts the GPU's work (``nodes * kernel_us`` + 3 µs copy) plus a few µs."""
    events: list[dict[str, Any]] = []
    t = 100
    for _ in range(runs):
        run: list[dict[str, Any]] = []
        node_ts = t + 5
        for k in range(nodes):
            node = f"/n{k}/MatMul_kernel_time"
            run.append(
                _ev("Node", node, node_ts, host_us, op_name="MatMul", provider="CUDAExecutionProvider")
            )
            kernel = _ev("Kernel", f"ampere_sgemm_{k}", node_ts + 1, kernel_us, stream="7", parent_name=node)
            run.append(kernel)
            node_ts += host_us + 2
        gpu_end = t + 6 + nodes * kernel_us
        node = "/out/MemcpyToHost_kernel_time"
        run.append(_ev("Node", node, node_ts, gpu_end + 5 - node_ts, op_name="MemcpyToHost"))
        run.append(_ev("Kernel", "Memcpy DtoH", node_ts + 1, 3, stream="7", parent_name=node))
        end = gpu_end + 10
        events.append(_ev("Session", "model_run", t, end - t))
        events += run
        t = end + 50
    return events


def test_kernels_stamped_at_their_node_start_are_queued_on_their_stream(tmp_path: Path) -> None:
    """ORT writes each kernel at its node's start + 1 µs: a GPU-bound run's kernels overlap as written (a
    union of them is 236 µs of an 816 µs run); queued on their stream they are busy 803 µs, the GPU's work."""
    from tracekit.session import analyze_trace

    trace = read(_write(tmp_path, "synthetic_ort_gpu_bound.json", _gpu_bound()))
    first = trace.ops.sort("start").head(5)
    # each kernel starts when the one before it on stream 7 ends
    assert first.select("start", "end").rows() == [
        (106_000, 306_000),
        (306_000, 506_000),
        (506_000, 706_000),
        (706_000, 906_000),
        (906_000, 909_000),
    ]
    assert any("12 of 15 GPU ops (Kernel events) overlapped" in w for w in trace.meta["warnings"])
    summary = analyze_trace(trace).summary
    assert summary.mean("gpu_busy_ms") == pytest.approx(0.803)
    assert summary.bound == "compute"


def test_kernels_that_do_not_overlap_keep_their_times(tmp_path: Path) -> None:
    events = _gpu_bound(kernel_us=5)  # each kernel ends before the next node starts
    trace = read(_write(tmp_path, "synthetic_ort_gpu_short.json", events))
    written = sorted(e["ts"] * 1000 for e in events if e["cat"] == "Kernel")
    assert sorted(trace.ops["start"].to_list()) == written
    assert not any("overlapped" in w for w in trace.meta["warnings"])


def test_kernels_on_two_streams_may_overlap(tmp_path: Path) -> None:
    events = [
        _ev("Session", "model_run", 0, 500),
        _ev("Node", "a_kernel_time", 10, 5, op_name="MatMul"),
        _ev("Kernel", "k_a", 11, 300, stream="7", parent_name="a_kernel_time"),
        _ev("Node", "b_kernel_time", 20, 5, op_name="MatMul"),
        _ev("Kernel", "k_b", 21, 300, stream="8", parent_name="b_kernel_time"),
    ]
    trace = read(_write(tmp_path, "synthetic_ort_two_streams.json", events))
    assert trace.ops.select("start", "stream").rows() == [(11_000, 7), (21_000, 8)]


@pytest.mark.parametrize("spell", [str.lower, str.upper])
def test_categories_in_another_case(tmp_path: Path, spell: Any) -> None:
    """A tool that rewrote the profile with "kernel"/"node"/"session": read as ORT's spelling, not dropped
    (lower-case "kernel" alone used to drop the kernels and count the host times as GPU busy time)."""
    events = _gpu_bound()
    expected = read(_write(tmp_path, "synthetic_ort_gpu_bound.json", events))
    respelled = [dict(e, cat=spell(e["cat"])) for e in events]
    trace = read(_write(tmp_path, "synthetic_ort_gpu_respelled.json", respelled))
    assert trace.meta["device"] == "gpu"
    assert trace.ops.equals(expected.ops) and trace.ranges.equals(expected.ranges)
    only_kernels = [dict(e, cat="kernel") if e["cat"] == "Kernel" else e for e in events]
    assert read(_write(tmp_path, "synthetic_ort_gpu_kernel.json", only_kernels)).ops.equals(expected.ops)


def test_cpu_profile_in_lower_case(tmp_path: Path) -> None:
    events = [
        _ev("session", "model_run", 0, 100),
        _ev("node", "/l0/MatMul_kernel_time", 5, 20, op_name="MatMul", input_type_shape=[{"float": [2, 8]}]),
    ]
    trace = read(_write(tmp_path, "synthetic_ort_lower.json", events))
    assert trace.ops["name"].to_list() == ["MatMul:/l0/MatMul"]
    assert trace.meta["first_op_inputs"][0]["dims"] == [[2, 8]]


def test_kernels_grouped_after_the_nodes_are_not_linked_to_another_run(tmp_path: Path) -> None:
    """A tool that grouped the events by category puts every Kernel after every Node: the nearest earlier
    node of a kernel's parent name is then the last run's, which is no sign of two clocks."""
    events = _gpu_bound()
    grouped = [e for e in events if e["cat"] != "Kernel"] + [e for e in events if e["cat"] == "Kernel"]
    trace = read(_write(tmp_path, "synthetic_ort_gpu_grouped.json", grouped))
    assert trace.meta.get("ops_before_parent") is None
    # in ORT's own order the same kernels are all linked, none before its node
    assert (
        read(_write(tmp_path, "synthetic_ort_gpu_bound.json", events)).meta.get("ops_before_parent") is None
    )


def test_profile_at_ort_event_cap_is_warned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ORT keeps at most 1,000,000 Session and Node events and drops the rest (later runs) silently."""
    monkeypatch.setattr(ort_reader, "ORT_MAX_EVENTS", 6, raising=False)
    events = []
    for r in range(3):
        events.append(_ev("Session", "model_run", 100 * r, 50))
        events.append(_ev("Node", f"n{r}_kernel_time", 100 * r + 5, 10, op_name="Relu"))
    trace = read(_write(tmp_path, "synthetic_ort_capped.json", events))
    assert any("ORT's cap (6)" in w and "runs after the cap are missing" in w for w in trace.meta["warnings"])
    monkeypatch.setattr(ort_reader, "ORT_MAX_EVENTS", 7)
    trace = read(_write(tmp_path, "synthetic_ort_capped.json", events))
    assert not any("cap" in w for w in trace.meta["warnings"])
    assert trace.ranges.filter(pl.col("name") == "model_run").height == 3
