"""Kineto quirks of real profilers, round 16: merged multi-process files whose correlation ids collide, and
others (see each test).

Every trace built here is SYNTHETIC (hand-built Kineto JSON, file names holding "synthetic", metadata saying
so, exact answers); no real trace is copied into the repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from tests.builders import kineto_event
from tracekit.api import analyze
from tracekit.readers import kineto as K
from tracekit.readers.kineto import read

STEP_US = 1000


def _write(tmp_path: Path, events: list[dict[str, Any]], name: str = "kineto16.synthetic.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events}))
    return path


def _process(
    pid: int, device: int, first_corr: int = 1, t0: int = 1_000_000, steps: int = 3, kernel_us: int = 100
) -> list[dict[str, Any]]:
    """One process's capture: ``steps`` ProfilerSteps of 1 ms from ``t0`` (us), each with two
    ``cudaLaunchKernel`` calls (at +100 and +500 us, 10 us) of one ``kernel_us`` kernel each, 50 us after its
    call, on ``device`` (event pid = the device, as Kineto writes it), stream 7, correlation ids counted from
    ``first_corr``, with their ac2g flows."""
    events, corr = [], first_corr
    for k in range(steps):
        start = t0 + k * STEP_US
        events.append(kineto_event("user_annotation", f"ProfilerStep#{k}", start, STEP_US, pid=pid, tid=pid))
        for offset in (100, 500):
            call = start + offset
            events.append(
                kineto_event("cuda_runtime", "cudaLaunchKernel", call, 10, pid, pid, correlation=corr)
            )
            events.append(
                kineto_event(
                    "kernel",
                    "gemm",
                    call + 50,
                    kernel_us,
                    device,
                    7,
                    device=device,
                    stream=7,
                    correlation=corr,
                )
            )
            events.append(
                {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": pid, "tid": pid, "ts": call}
            )
            events.append(
                {
                    "ph": "f",
                    "cat": "ac2g",
                    "name": "ac2g",
                    "id": corr,
                    "pid": device,
                    "tid": 7,
                    "ts": call + 50,
                    "bp": "e",
                }
            )
            corr += 1
    return events


# --- two processes in one file whose correlation ids collide (each process's CUPTI counts its own ids from 1)


def test_ops_of_two_processes_sharing_ids_are_linked_to_their_own_process(tmp_path: Path) -> None:
    """Processes 100 (GPU 0) and 200 (GPU 1) number their launches from 1; process 200's capture began 3 ms
    later (ids 1..6 again). Every kernel is its own process's: a kernel cannot have been launched by a call
    made after it started, and a launch call makes one kernel. Before: every kernel was linked to the first
    call of its id (process 100's), so 100's steps held 4 kernels each (2 of them 3 ms after the step) and
    200's none."""
    path = _write(tmp_path, _process(100, 0) + _process(200, 1, t0=1_003_000))
    trace = read(path)
    by_device = trace.ops.group_by("device").agg(pl.col("pid").unique().sort()).sort("device")
    assert by_device.to_dicts() == [{"device": 0, "pid": [100]}, {"device": 1, "pid": [200]}]
    assert not any("several processes" in w for w in trace.meta["warnings"])
    result = analyze(path)
    assert result.iterations["kernels"].to_list() == [2] * 6
    assert [round(ms * 1e6) for ms in result.iterations["gpu_busy_ms"]] == [200_000] * 6


def test_a_device_used_by_one_process_tells_whose_shared_ids_are(tmp_path: Path) -> None:
    """Only ids 1..6 collide: process 200 numbers from 1 and runs 6 steps (ids 1..12), process 100 runs 3
    (ids 1..6). GPU 1's kernels with ids 7..12 are process 200's alone, so GPU 1 is process 200's, and so are
    its kernels with ids 1..6."""
    path = _write(tmp_path, _process(100, 0) + _process(200, 1, steps=6))
    ops = read(path).ops
    assert ops.filter(pl.col("device") == 1)["pid"].to_list() == [200] * 12
    assert ops.filter(pl.col("device") == 0)["pid"].to_list() == [100] * 6


def test_a_call_made_after_the_op_began_did_not_launch_it(tmp_path: Path) -> None:
    """Both processes drive device 0 (each sees its GPU as cuda:0) and number from 1, but process 200's capture
    is 10 s later: a kernel cannot have been launched by a call made after it started."""
    path = _write(tmp_path, _process(100, 0) + _process(200, 0, t0=11_000_000))
    ops = read(path).ops.sort("start")
    assert ops["pid"].to_list() == [100] * 6 + [200] * 6
    result = analyze(path)
    assert result.iterations["kernels"].to_list() == [2] * 6


def _undecidable(tmp_path: Path) -> Path:
    """Processes 100 (GPU 0) and 200 (GPU 1) number their launches from 1 over the same milliseconds (200's
    calls 1 us after 100's): each kernel's id is used by a call of both, both calls began before it, and each
    device's kernels all have such ids. Which process launched each kernel cannot be told."""
    return _write(tmp_path, _process(100, 0) + _process(200, 1, t0=1_000_001))


def test_ops_whose_process_nothing_tells_are_said(tmp_path: Path) -> None:
    """The 12 kernels stay linked to the first call of their id (process 100's), as before, and a warning
    says so, with the count and the processes, and ``meta`` counts them for the analysis."""
    trace = read(_undecidable(tmp_path))
    said = [w for w in trace.meta["warnings"] if "several processes" in w]
    assert len(said) == 1
    assert said[0].startswith(
        "12 device ops carry correlation ids that calls of several processes (pids 100, 200)"
    )
    assert trace.meta[K.SHARED_IDS] == 12
    assert trace.ops["pid"].to_list() == [100] * 12


def test_ops_whose_process_nothing_tells_make_the_verdict_uncertain(tmp_path: Path) -> None:
    """Process 100's steps read 4 kernels each and 200's none: which is only one of the two readings the
    trace allows (the other: 2 each). The verdict should say it cannot tell."""
    result = analyze(_undecidable(tmp_path))
    assert result.iterations["kernels"].to_list() == [4, 0, 4, 0, 4, 0]  # (what is shown)
    assert "several processes" in (result.summary.verdict_uncertain or "")


def test_one_process_keeps_its_links(tmp_path: Path) -> None:
    """The usual file (one process): unchanged, 2 kernels a step."""
    path = _write(tmp_path, _process(100, 0))
    assert read(path).ops["pid"].to_list() == [100] * 6
    assert analyze(path).iterations["kernels"].to_list() == [2, 2, 2]


# --- negative durations: libkineto wrote dur = -ts for an event whose end it missed (kineto#646)


def _with_lost_end(category: str, nth: int = 0) -> list[dict[str, Any]]:
    """Process 100's 3 steps with the ``nth`` event of ``category`` given ``dur`` = -``ts``."""
    events = _process(100, 0)
    chosen = [e for e in events if e.get("cat") == category][nth]
    chosen["dur"] = -chosen["ts"]
    return events


def test_a_kernel_whose_end_was_lost_counts_and_makes_busy_time_unknown(tmp_path: Path) -> None:
    """Step 0's first kernel has dur = -ts. It ran (its start is known), for a time the trace lost. Before: it
    was dropped, step 0 read 1 kernel and 0.1 ms busy with a confident verdict. Now: 2 kernels, busy 0.1 ms
    counted from the kernel whose end is known, and the verdict is uncertain (busy short by how long it ran)."""
    path = _write(tmp_path, _with_lost_end("kernel"))
    trace = read(path)
    assert trace.ops["end"].null_count() == 1
    assert trace.meta["ops_without_end"] == 1
    assert any(w.startswith("1 of 6 GPU ops") and "negative" in w for w in trace.meta["warnings"])
    result = analyze(path)
    assert result.iterations["kernels"].to_list() == [2, 2, 2]
    assert [round(ms * 1e6) for ms in result.iterations["gpu_busy_ms"]] == [100_000, 200_000, 200_000]
    assert "no start or end time" in (result.summary.verdict_uncertain or "")


def test_a_launch_call_whose_end_was_lost_still_launches_its_kernel(tmp_path: Path) -> None:
    """Step 0's first cudaLaunchKernel has dur = -ts. Before: the call was dropped, so its kernel read as
    launched before the capture began: step 0 held 1 kernel, 1 launch and 0.1 ms busy. Now the call stays,
    lasting 0 (its start is known), and a warning says so: 2 kernels, 2 launches, 0.2 ms busy a step."""
    path = _write(tmp_path, _with_lost_end("cuda_runtime"))
    trace = read(path)
    assert trace.api.height == 6
    assert sorted((trace.api["end"] - trace.api["start"]).to_list()) == [0] + [10_000] * 5
    said = [w for w in trace.meta["warnings"] if "negative dur" in w]
    assert len(said) == 1 and said[0].startswith("1 API calls have a negative dur")
    result = analyze(path)
    assert result.iterations["kernels"].to_list() == [2, 2, 2]
    assert result.iterations["launches"].to_list() == [2, 2, 2]
    assert [round(ms * 1e6) for ms in result.iterations["gpu_busy_ms"]] == [200_000] * 3


def test_a_step_whose_end_was_lost_is_no_iteration(tmp_path: Path) -> None:
    """ProfilerStep#1 has dur = -ts: a range whose end is lost delimits no iteration, and is left out as
    before (with the warning every reader's rows of negative duration get); the two others stand, and its 2
    kernels count in none."""
    path = _write(tmp_path, _with_lost_end("user_annotation", 1))
    result = analyze(path)
    assert result.iterations["kernels"].to_list() == [2, 2]
    assert any(w.startswith("1 ranges with a negative duration") for w in result.warnings)


# --- ids written as decimals (1.0): a trace written again by Python's json or pandas (a float column)


def _as_decimals(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` with every pid, tid, args id and flow id written as a decimal (100.0), as ``json.dumps`` writes
    a float, and as pandas writes an integer column holding a NaN."""
    for event in events:
        for key in ("pid", "tid", "id"):
            if key in event:
                event[key] = float(event[key])
        for key in event.get("args", {}):
            event["args"][key] = float(event["args"][key])
    return events


def test_ids_written_as_decimals_link_ops_to_their_launches(tmp_path: Path) -> None:
    """Process 100's 3 steps with each step's second kernel queued: launched at +500 us, it starts at +1050,
    in the next step's range. Linked to its launch, each step holds its 2 kernels. Before, with the ids
    written as 1.0, no id read: every kernel 'had no launching call in the trace' and went by its start
    (steps of 1, 2, 2 kernels, the last one in none), and the calls had no process."""
    events = _process(100, 0)
    for event in events:
        if event.get("cat") == "kernel" and event["ts"] % STEP_US == 550:
            event["ts"] += 500
    path = _write(tmp_path, _as_decimals(events))
    trace = read(path)
    assert trace.ops["correlation"].to_list() == [1, 2, 3, 4, 5, 6]
    assert trace.api["pid"].to_list() == [100] * 6
    assert trace.ops["device"].to_list() == [0] * 6 and trace.ops["stream"].to_list() == [7] * 6
    assert not any("no runtime/driver call" in w for w in trace.meta["warnings"])
    assert analyze(path).iterations["kernels"].to_list() == [2, 2, 2]


def test_an_id_with_a_fraction_is_no_id(tmp_path: Path) -> None:
    """An id of 1.5 is no integer: no correlation (as a text id that does not read), never 1 or 2."""
    events = _process(100, 0, steps=1)
    events[2]["args"]["correlation"] = 1.5
    events[4]["id"] = 1.5
    ops = read(_write(tmp_path, events)).ops.sort("start")
    assert ops["correlation"].to_list() == [None, 2]


def test_flow_ids_written_as_decimals_give_the_correlation(tmp_path: Path) -> None:
    """Kernels without their correlation arg, the ac2g flows' ids written as 1.0 ... 6.0: each kernel takes
    its flow's id (before: none, every kernel 'launched before the capture')."""
    events = _as_decimals(_process(100, 0))
    for event in events:
        if event.get("cat") == "kernel":
            del event["args"]["correlation"]
    trace = read(_write(tmp_path, events))
    assert trace.ops.sort("start")["correlation"].to_list() == [1, 2, 3, 4, 5, 6]
    assert (
        analyze(_write(tmp_path, events, "again.synthetic.json")).iterations["kernels"].to_list() == [2] * 3
    )


# --- the Python tracer's events of a batch become one frame, not one per chunk (cost only: same rows)


def _python_parts(*names_per_chunk: list[str]) -> list[dict[str, Any]]:
    """One chunk's Python tracer columns per list of names (events 10 us apart from 0, lasting 3 us, pid 1,
    tid 2), each encoded by itself as the decoding does."""
    from tracekit.readers import kineto_json, kineto_wire

    parts, ts = [], 0
    for names in names_per_chunk:
        events = []
        for name in names:
            events.append(
                {"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 2, "ts": ts, "dur": 3}
            )
            ts += 10
        decoded = kineto_json._DECODE_FAST.decode(json.dumps(events).encode())
        parts.append(kineto_wire._python_columns(decoded))
    return parts


def test_a_batch_of_python_chunks_gives_the_rows_of_its_chunks() -> None:
    """Three chunks whose names overlap (each chunk numbers its own distinct names from 0): one frame of the
    9 rows, each with its own name, in order, as the chunks one by one give them."""
    parts = _python_parts(["a", "b", "a"], ["b", "c", "c"], ["d", "a", "b"])
    merged = K._python_batch(parts)
    assert len(merged) == 1
    one = K._python_rows(merged[0])
    assert one["name"].to_list() == ["a", "b", "a", "b", "c", "c", "d", "a", "b"]
    assert one["start"].to_list() == [10_000 * i for i in range(9)]
    assert one.equals(K._finish_rows([K._python_rows(part) for part in parts]))


def test_python_chunks_encoded_otherwise_stay_apart() -> None:
    """A chunk whose pid column is text (a string pid) is encoded otherwise: the chunks are left as they are."""
    parts = _python_parts(["a"], ["b"])
    parts[1]["pid"] = ("list", ["one"])
    assert K._python_batch(parts) == parts


# --- the rules that tell a shared id's process, each pinned


def test_a_call_that_began_with_its_op_may_have_launched_it(tmp_path: Path) -> None:
    """Process 100's kernels start in the microsecond their calls begin (a whole-microsecond clock); process
    200 numbers from 1 too, 10 s later, on the same device. A call beginning at the op's start is no later
    than the op: each kernel is its own process's, no warning."""
    events = _process(100, 0)
    for event in events:
        if event.get("cat") == "kernel" or (event.get("ph") == "f"):
            event["ts"] -= 50
    path = _write(tmp_path, events + _process(200, 0, t0=11_000_000))
    trace = read(path)
    assert trace.ops.sort("start")["pid"].to_list() == [100] * 6 + [200] * 6
    assert K.SHARED_IDS not in trace.meta


def test_a_rule_that_leaves_an_op_no_process_is_not_applied_to_it(tmp_path: Path) -> None:
    """As in the device test (GPU 1 is process 200's: its kernels of ids 7..12 are 200's alone), but GPU 1's
    kernel of id 1 starts 5 us before either process's call of id 1 (the host and device clocks disagree):
    the time rule leaves it no process, so it tells nothing, and the device rule gives it to 200."""
    events = _process(100, 0) + _process(200, 1, steps=6)
    kernel = next(
        e for e in events if e.get("cat") == "kernel" and e["pid"] == 1 and e["args"]["correlation"] == 1
    )
    kernel["ts"] -= 55
    ops = read(_write(tmp_path, events)).ops
    assert ops.filter(pl.col("device") == 1)["pid"].to_list() == [200] * 12


def test_a_graph_launch_makes_more_than_one_op(tmp_path: Path) -> None:
    """Process 100's graph launch of id 1 at 1000 us runs K1 (1050 us) and K2 (1200 us) on GPU 0; process
    200's kernel launch of id 1 at 1100 us runs K3 (1150 us) on GPU 1. K1 is 100's (200's call came after
    it). That does not take 100's graph launch from K2: a graph launch makes many ops. K2 and K3 cannot be
    told (both calls began before each): they stay with the first call, said in the warning."""
    events = [
        kineto_event("cuda_runtime", "cudaGraphLaunch", 1000, 10, 100, 100, correlation=1),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 1100, 10, 200, 200, correlation=1),
        kineto_event("kernel", "k1", 1050, 20, 0, 7, device=0, stream=7, correlation=1),
        kineto_event("kernel", "k2", 1200, 20, 0, 7, device=0, stream=7, correlation=1),
        kineto_event("kernel", "k3", 1150, 20, 1, 7, device=1, stream=7, correlation=1),
    ]
    trace = read(_write(tmp_path, events))
    assert dict(zip(trace.ops["name"], trace.ops["pid"], strict=True)) == {"k1": 100, "k2": 100, "k3": 100}
    assert trace.meta[K.SHARED_IDS] == 2


def test_a_kernel_of_no_duration_keeps_its_end(tmp_path: Path) -> None:
    """dur 0 is no lost end (a sub-microsecond kernel on a whole-microsecond clock reads 0): end = start,
    no warning; only a negative dur is one."""
    events = _process(100, 0, steps=1)
    events[2]["dur"] = 0
    trace = read(_write(tmp_path, events))
    assert trace.ops.sort("start")["end"].to_list() == [1_000_150_000, 1_000_650_000]
    assert "ops_without_end" not in trace.meta
