"""Hostile round 13, Kineto reader: real torch.profiler spellings not seen before, rebuilt by hand.

Every trace here is hand-built (``tracekit_synthetic``, file names holding "synthetic"); times are in
microseconds in the JSON, and the expected numbers follow from them by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tracekit
from tests.builders import kineto_event
from tracekit import limits
from tracekit.errors import TraceFormatError
from tracekit.readers.kineto import read

PID, TID, DEVICE, STREAM = 10, 11, 0, 7


def _write(tmp_path: Path, events: list[dict[str, Any]], name: str = "hostile13.synthetic.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events}))
    return path


def _call(cat: str, name: str, ts: int, dur: int, corr: int, tid: int = TID) -> dict[str, Any]:
    return kineto_event(cat, name, ts, dur, PID, tid, correlation=corr)


def _kernel(ts: int, dur: int, corr: int) -> dict[str, Any]:
    return kineto_event(
        "kernel", f"k{corr}", ts, dur, DEVICE, STREAM, device=DEVICE, stream=STREAM, correlation=corr
    )


# --- a) one launch recorded twice: the runtime call and the driver (or inner HIP) call it makes


@pytest.mark.parametrize(
    ("outer", "inner"),
    [
        (("cuda_runtime", "cudaLaunchKernel"), ("cuda_driver", "cuLaunchKernel")),
        (("cuda_runtime", "cudaLaunchKernelExC_v11060"), ("cuda_driver", "cuLaunchKernelEx")),
        (("cuda_runtime", "hipLaunchKernel"), ("cuda_runtime", "hipModuleLaunchKernel")),
    ],
)
def test_a_launch_recorded_by_its_runtime_and_its_nested_driver_call_counts_once(
    tmp_path: Path, outer: tuple[str, str], inner: tuple[str, str]
) -> None:
    """libkineto writes every CUPTI driver record of a tracked cbid (cuLaunchKernel, cuLaunchKernelEx: 'for
    triton kernel launches', CuptiActivityProfiler::handleDriverActivity) with no check against the runtime
    record of the same correlation id, so a runtime launch whose driver call is recorded too lands twice.
    Step 0..1000 µs; launch 1: runtime call 100..110 µs with the driver call 102..106 inside it, same
    correlation; launch 2: a plain runtime call 200..206 µs. Truth: 2 launches, 10 + 6 = 16 µs of launch
    calls, kernel 1 starts 20 µs after its call began and kernel 2 10 µs after (median latency 15 µs).
    Before: 3 launches and 20 µs of launch calls (the latency matched each kernel to its outermost call
    already)."""
    events = [
        kineto_event("user_annotation", "ProfilerStep#1", 0, 1000, PID, TID),
        _call(*outer, 100, 10, corr=1),
        _call(*inner, 102, 4, corr=1),
        _kernel(120, 30, corr=1),
        _call("cuda_runtime", outer[1], 200, 6, corr=2),
        _kernel(210, 30, corr=2),
    ]
    path = _write(tmp_path, events)
    trace = read(path)
    assert trace.api.height == 2
    assert trace.api["start"].to_list() == [100_000, 200_000]
    assert trace.api["end"].to_list() == [110_000, 206_000]
    row = tracekit.analyze(path, skip=0).iterations.row(0, named=True)
    assert row["launches"] == 2
    assert row["launch_api_us"] == pytest.approx(16.0, abs=1e-9)
    assert row["launch_latency_us"] == pytest.approx(15.0, abs=1e-9)


def test_calls_of_other_processes_with_the_same_correlation_id_are_both_kept(tmp_path: Path) -> None:
    """Correlation ids are per process: two processes' calls carrying id 1 are two calls."""
    events = [
        kineto_event("cuda_runtime", "cudaLaunchKernel", 100, 10, PID, TID, correlation=1),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 100, 10, PID + 1, TID, correlation=1),
        _kernel(120, 30, corr=1),
    ]
    trace = read(_write(tmp_path, events))
    assert sorted(trace.api["pid"].to_list()) == [PID, PID + 1]


def test_two_launch_calls_of_one_id_that_do_not_nest_are_both_kept(tmp_path: Path) -> None:
    """Two launch calls of one process that share id 1 but do not nest (100..110 and 200..206 µs: an id
    reused, not one launch recorded twice) stay two calls, for the analysis to doubt."""
    events = [
        _call("cuda_runtime", "cudaLaunchKernel", 100, 10, corr=1),
        _call("cuda_runtime", "cudaLaunchKernel", 200, 6, corr=1),
        _kernel(120, 30, corr=1),
    ]
    trace = read(_write(tmp_path, events))
    assert trace.api["start"].to_list() == [100_000, 200_000]


# --- the file torch.profiler writes when it stops in a schedule's wait or warm-up: one empty ProfilerStep


def _stub_events(step_us: float = 7.741, extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """What torch 2.13's profiler wrote (real run here, rebuilt): the loop ended while the schedule was in its
    warm-up, so the profiler stopped there and handed on_trace_ready a trace of that warm-up: the metadata,
    the Trace span, and the one ``ProfilerStep#5`` that the last ``p.step()`` opened and the stop closed."""
    return [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "python"}},
        {
            "ph": "M",
            "name": "thread_name",
            "pid": PID,
            "tid": PID,
            "args": {"name": f"thread {PID} (python)"},
        },
        kineto_event("user_annotation", "ProfilerStep#5", 5001314898071.743, step_us, PID, PID),
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": 5001314897988.735,
            "dur": 94.861,
            "args": {"Op count": 0},
        },
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 5001314898186.7},
        *(extra or []),
    ]


STUB_WARNING = (
    "the trace holds one step, ProfilerStep#5 (0.008 ms), and no operator, launch call or device op: if "
    "torch.profiler stopped during a schedule's wait or warm-up, this is the trace it writes then (the step the "
    "last p.step() opened; tensorboard_trace_handler writes it beside the run's trace, and an on_trace_ready that "
    "writes one path overwrites the run's trace with it), and its latency is not an iteration's: analyze the "
    "trace of the schedule's active steps"
)


def test_a_trace_of_only_the_closing_profiler_step_says_what_it_is(tmp_path: Path) -> None:
    """The analysis had shown a 0.008 ms latency for it, and advised profiling with ProfilerActivity.CUDA."""
    path = _write(tmp_path, _stub_events())
    assert STUB_WARNING in read(path).warnings
    assert STUB_WARNING in tracekit.analyze(path, skip=0).warnings


@pytest.mark.parametrize(
    "extra",
    [
        [kineto_event("user_annotation", "ProfilerStep#6", 5001314898100, 5000, PID, PID)],
        [kineto_event("cpu_op", "aten::mm", 5001314898072, 3, PID, PID)],
        [kineto_event("user_annotation", "preprocess", 5001314898072, 3, PID, PID)],
        [kineto_event("python_function", "run.py(12): <module>", 5001314898072, 3, PID, PID)],
    ],
)
def test_a_step_with_company_is_no_stub(tmp_path: Path, extra: list[dict[str, Any]]) -> None:
    """Two steps (the analysis's own rule then decides), an operator, another range, or Python tracing (work
    the profiler saw, not a stub): no such warning."""
    path = _write(tmp_path, _stub_events(extra=extra))
    assert not any("schedule's wait or warm-up" in w for w in read(path).warnings)


# --- a PyTorch execution trace (ExecutionTraceObserver, Chakra ET JSON) given for the Kineto trace


def test_an_execution_trace_is_named_in_one_line(tmp_path: Path) -> None:
    """``profile(execution_trace_observer=ExecutionTraceObserver().register_callback(path))`` writes a second
    JSON file beside the Kineto trace (torch 2.13, real here: schema "1.1.1-chakra.0.0.4", pid, time,
    start_ts, nodes, finish_ts): operators' ids, shapes and dependencies, no times. It had been refused as
    'not a Kineto trace: no traceEvents', which does not say which file to give instead."""
    doc = {
        "schema": "1.1.1-chakra.0.0.4",
        "pid": 21054,
        "time": "2026-11-28 09:36:22",
        "start_ts": 705281,
        "nodes": [{"id": 2, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1}],
        "finish_ts": 705999,
    }
    path = tmp_path / "et.synthetic.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError) as info:
        read(path)
    assert str(info.value) == (
        f"{path}: not a Kineto trace: no traceEvents (this looks like a PyTorch execution trace, "
        "ExecutionTraceObserver's Chakra JSON: it records operators and their dependencies, not their times; "
        "give the Kineto trace of the same run, export_chrome_trace's or tensorboard_trace_handler's)"
    )


@pytest.mark.parametrize("max_event", [None, 1 << 16])
def test_a_long_execution_trace_is_named_before_its_nodes_are_read(
    tmp_path: Path, max_event: int | None
) -> None:
    """An execution trace longer than the head the reader scans for ``traceEvents`` (1 MiB) is read key by
    key: it had been named 'no traceEvents' only after its nodes were read whole, and when the nodes array
    passes the event limit (16 MiB by default; a real model's ET does) the message had advised
    ``--max-event``, which would only have read the megabytes to say 'no traceEvents'."""
    nodes = [
        {"id": i, "name": "aten::mm", "ctrl_deps": 1, "inputs": {"shapes": [[64, 64]]}} for i in range(25_000)
    ]
    doc = {
        "schema": "1.1.1-chakra.0.0.4",
        "pid": 1,
        "time": "t",
        "start_ts": 1,
        "nodes": nodes,
        "finish_ts": 2,
    }
    path = tmp_path / "long_et.synthetic.json"
    path.write_text(json.dumps(doc))
    assert path.stat().st_size > 1 << 20
    limits_in_force = limits.reading_limits()
    values = None if max_event is None else (limits_in_force[0], limits_in_force[1], max_event)
    with limits.reading_limits_applied(values), pytest.raises(TraceFormatError) as info:
        read(path)
    assert "this looks like a PyTorch execution trace" in str(info.value)


def test_a_nested_launch_whose_end_rounds_past_its_runtime_call_counts_once(tmp_path: Path) -> None:
    """2021-22 traces write whole microseconds, ts and dur each cut down: a runtime call from 100.9 to 105.2 µs
    reads ts 100 dur 4 (end 104), the driver call inside it from 101.0 to 105.1 reads ts 101 dur 4 (end 105),
    past its caller's end (cutting ts and dur apart puts an end up to 2 µs early). One launch still."""
    events = [
        kineto_event("user_annotation", "ProfilerStep#1", 0, 1000, PID, TID),
        _call("cuda_runtime", "cudaLaunchKernel", 100, 4, corr=1),
        _call("cuda_driver", "cuLaunchKernel", 101, 4, corr=1),
        _kernel(120, 30, corr=1),
    ]
    trace = read(_write(tmp_path, events))
    assert trace.api["name"].to_list() == ["cudaLaunchKernel"]
