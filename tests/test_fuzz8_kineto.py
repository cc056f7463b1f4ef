"""Kineto gaps of fuzz round 8: CUDA graphs with conditional (while) nodes, the 2021 spelling's GPU-side
annotations, blocking copies in the idle attribution, one line per missing end time, serving idle steps.
Every trace here is hand-built (synthetic, made up for the test, not a measurement); real traces are read
where present."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracekit
from tests.builders import kineto_event, kineto_file
from tests.conftest import REAL_TRACES
from tracekit.readers.kineto import read

STEPS = 3
PID, TID = 10, 11


def _gpu_run(
    spelling: str = "2023",
    kernels: int = 3,
    gpu_annotations: bool = False,
    launch: str = "cudaLaunchKernel",
    kernel_name: str = "gemm",
    extra: Any = None,
) -> list[dict[str, Any]]:
    """``STEPS`` 1000 µs ProfilerSteps on one thread (pid 10, tid 11); in each, ``kernels`` launches (5 µs,
    100 µs apart, from 10 µs into the step), each kernel (50 µs, stream 7, device 0) starting 10 µs after
    its call began: per step 150 µs busy of 1000. ``spelling`` "2021": ``Operator``/``Runtime``/``Kernel``,
    kernel tid "stream 7", and GPU annotations as Kineto wrote them then (category ``User``, pid the device,
    tid "stream 7 user", no args but ``External id``: libkineto's output_json.cpp of 2021,
    ``handleGenericActivity``); "2023": ``user_annotation``/``cuda_runtime``/``kernel`` and
    ``gpu_user_annotation`` (args ``device``, ``stream``). ``gpu_annotations``: each step's GPU-side
    annotation from its first kernel's start to its last kernel's end. ``extra(i, t0)``: more events of
    step i (a list)."""
    old = spelling == "2021"
    step_cat = "Operator" if old else "user_annotation"
    runtime, kernel_cat = ("Runtime", "Kernel") if old else ("cuda_runtime", "kernel")
    events: list[dict[str, Any]] = []
    corr = 0
    for i in range(STEPS):
        t0 = 1000 + i * 1000
        events.append(kineto_event(step_cat, f"ProfilerStep#{i}", t0, 1000, PID, TID))
        first = last = 0
        for k in range(kernels):
            corr += 1
            call = t0 + 10 + 100 * k
            events.append(kineto_event(runtime, launch, call, 5, PID, TID, correlation=corr))
            tid: Any = "stream 7" if old else 7
            events.append(
                kineto_event(
                    kernel_cat, kernel_name, call + 10, 50, 0, tid, device=0, stream=7, correlation=corr
                )
            )
            first = first or call + 10
            last = call + 60
        if gpu_annotations:
            if old:
                event = kineto_event("User", f"ProfilerStep#{i}", first, last - first, 0, "stream 7 user")
                event["args"] = {"External id": i + 1}
            else:
                event = kineto_event(
                    "gpu_user_annotation", f"ProfilerStep#{i}", first, last - first, 0, 7, device=0, stream=7
                )
            events.append(event)
        if extra is not None:
            events += extra(i, t0)
    return events


# ------------------------------------------------------------------ 2: the 2021 spelling's GPU annotations


def test_2021_gpu_annotations_category_user_are_read_as_gpu_ranges(tmp_path: Path) -> None:
    """Kineto of 2021 wrote the GPU-side copy of a ``record_function`` annotation as category ``User`` on
    the device's row (pid the device, tid "stream 7 user"); later versions as ``gpu_user_annotation``.
    Both read as ranges of domain "gpu" on thread 7 (the stream), pid the main process: the same frame."""
    old = read(kineto_file(tmp_path, _gpu_run("2021", gpu_annotations=True), "old.synthetic.json"))
    new = read(kineto_file(tmp_path, _gpu_run("2023", gpu_annotations=True), "new.synthetic.json"))
    for trace in (old, new):
        gpu = trace.ranges.filter(pl.col("domain") == "gpu").sort("start")
        assert gpu.select("name", "start", "end", "pid", "thread").rows() == [
            (f"ProfilerStep#{i}", (1020 + 1000 * i) * 1000, (1270 + 1000 * i) * 1000, PID, 7)
            for i in range(STEPS)
        ]
        assert gpu["depth"].to_list() == [0] * STEPS
    # and they do not change the iterations (domain "gpu" is ignored for the choice)
    a_old, a_new = (
        tracekit.analyze(kineto_file(tmp_path, _gpu_run(s, gpu_annotations=True), f"{s}.json"))
        for s in ("2021", "2023")
    )
    assert a_old.iterations["gpu_busy_ms"].to_list() == a_new.iterations["gpu_busy_ms"].to_list()
    assert a_old.iterations["gpu_busy_ms"].to_list() == [pytest.approx(0.15)] * STEPS


def test_a_user_category_event_off_the_gpu_rows_is_not_a_gpu_range(tmp_path: Path) -> None:
    """Only the 2021 writer's GPU rows (tid "stream N user") are GPU annotations: a ``User`` event on a host
    thread (another tool's chrome-trace category) stays unread, as before."""
    events = _gpu_run("2021")
    events.append(kineto_event("User", "something", 1500, 10, PID, TID))
    trace = read(kineto_file(tmp_path, events, "host_user.synthetic.json"))
    assert trace.ranges.filter(pl.col("domain") == "gpu").is_empty()


# ------------------------------------------------------------------ 4: one line per missing end time


def test_a_gpu_op_without_an_end_time_is_reported_once(tmp_path: Path) -> None:
    """A kernel whose ``dur`` does not read has no end time: the reader says so (counting the trace's GPU
    ops), and the analysis said it again for the ops inside the iterations: two lines for one fact. One
    now (the reader's); the busy time leaves the kernel out, as both said."""
    events = _gpu_run()
    kernel = next(e for e in events if e["cat"] == "kernel" and e["ts"] == 2020)
    kernel["dur"] = None
    a = tracekit.analyze(kineto_file(tmp_path, events, "no_end.synthetic.json"))
    lines = [w for w in a.warnings if "no end time" in w or "no readable dur" in w]
    assert len(lines) == 1, lines
    assert lines[0].startswith("1 of 9 GPU ops")
    assert a.iterations["gpu_busy_ms"].to_list() == [
        pytest.approx(0.15),
        pytest.approx(0.1),
        pytest.approx(0.15),
    ]
    assert a.iterations["kernels"].to_list() == [3, 3, 3]


# ------------------------------------------------------------------ 1: CUDA graphs with conditional nodes

SET_CONDITIONAL = "void at::cuda::(anonymous namespace)::set_conditional_handle_kernel(CUgraphConditionalHandle, bool const*)"


def _graph_run(signal: str | None) -> list[dict[str, Any]]:
    """Each step replays a CUDA graph (one 5 µs ``cudaGraphLaunch`` at 10 µs, its three 50 µs kernels of
    ``graph id`` 1 from 20 µs, 100 µs apart). ``signal``: a capture-time call made in the first step (a
    conditional handle created, a capture into an existing graph: how PyTorch captures the body of a
    ``torch.cond``/``torch.while_loop`` node), or "kernel": the graph's first kernel is PyTorch's
    ``set_conditional_handle_kernel`` (it sets a conditional node's value at replay)."""

    def steps(i: int, t0: int) -> list[dict[str, Any]]:
        corr = 100 + i
        out = [kineto_event("cuda_runtime", "cudaGraphLaunch", t0 + 10, 5, PID, TID, correlation=corr)]
        for k in range(3):
            name = SET_CONDITIONAL if signal == "kernel" and k == 0 else "gemm"
            out.append(
                kineto_event(
                    "kernel",
                    name,
                    t0 + 20 + 100 * k,
                    50,
                    0,
                    7,
                    device=0,
                    stream=7,
                    correlation=corr,
                    graph_id=1,
                )
            )
        if i == 0 and signal not in (None, "kernel"):
            out.append(kineto_event("cuda_runtime", signal, t0 + 1, 2, PID, TID, correlation=90))
        return out

    return _gpu_run(kernels=0, extra=steps)


@pytest.mark.parametrize(
    "signal",
    [
        "cudaGraphConditionalHandleCreate",
        "cuGraphConditionalHandleCreate",
        "cudaStreamBeginCaptureToGraph",
        "kernel",
    ],
)
def test_conditional_graph_nodes_warn_that_busy_may_be_under_counted(tmp_path: Path, signal: str) -> None:
    """kineto#1062: a CUDA graph with a while node runs its body again on the device, and only the first
    iteration's kernels are traced; nothing in the trace says so. What does: the calls that create a
    conditional node's handle or capture into its body graph, and PyTorch's kernel that sets the condition
    at each replay. With any of them, a warning that GPU busy may be under-counted, and a framework-bound
    verdict (here 15%) is uncertain: the untraced iterations were device work."""
    a = tracekit.analyze(kineto_file(tmp_path, _graph_run(signal), f"cond_{signal}.synthetic.json"))
    lines = [w for w in a.warnings if "conditional" in w]
    assert len(lines) == 1, a.warnings
    assert "kineto#1062" in lines[0] and "under-counted" in lines[0]
    assert a.summary.bound == "framework"
    assert "conditional" in (a.summary.verdict_uncertain or "")
    assert a.iterations["gpu_busy_ms"].to_list() == [pytest.approx(0.15)] * STEPS


def test_a_graph_without_conditional_nodes_gets_no_such_warning(tmp_path: Path) -> None:
    a = tracekit.analyze(kineto_file(tmp_path, _graph_run(None), "plain_graph.synthetic.json"))
    assert not [w for w in a.warnings if "conditional" in w]
    assert "conditional" not in (a.summary.verdict_uncertain or "")


# ------------------------------------------------------------------ 3: blocking copies in the attribution


def _copy_run(kind: str) -> list[dict[str, Any]]:
    """Each 1000 µs step (t0): a 5 µs ``cudaLaunchKernel`` at 10 µs, its 200 µs kernel at 20 µs; a copy; a
    5 µs ``cudaLaunchKernel`` at 300 µs, its 50 µs kernel at 310 µs. The copy (10 µs at 240 µs: the device
    idle 20 µs between the first kernel's end and the copy, then 60 µs after it):

    - "blocking": a ``cudaMemcpyAsync`` from 30 to 260 µs of a "Memcpy DtoH (Device -> Pageable)" (to
      pageable memory, it returns once the copy is done): it returns 10 µs after its copy ended, having
      waited for the kernel before it;
    - "cudaMemcpy": the same call, synchronous by name, of a copy named as nsys names it ("[CUDA memcpy
      DtoH]": no memory kind);
    - "sync": a 5 µs ``cudaMemcpyAsync`` at 30 µs of a "Memcpy DtoH (Device -> Pinned)", then a
      ``cudaStreamSynchronize`` from 36 to 260 µs;
    - "staging": a ``cudaMemcpyAsync`` from 225 to 245 µs of a "Memcpy HtoD (Pageable -> Device)" that ends
      after the call returned (the call stages the data, the host's own work, and does not wait);
    - "fast": a ``cudaMemcpyAsync`` from 225 to 260 µs of a "Memcpy HtoD (Pinned -> Device)" that ends
      before the call returns (a slow call of an asynchronous copy, as in the real B200 vLLM trace);
    - "memset": the same with a ``cudaMemsetAsync`` of a "Memset (Device)" (as in the H200 compile traces:
      an 11 µs call, its 0.7 µs memset ended first);
    - "dtod": a synchronous ``cudaMemcpy`` from 225 to 260 µs of a "Memcpy DtoD (Device -> Device)" (no
      host-side wait for a device-to-device copy)."""
    calls, op_name = {
        "blocking": ([("cudaMemcpyAsync", 30, 230, True)], "Memcpy DtoH (Device -> Pageable)"),
        "cudaMemcpy": ([("cudaMemcpy", 30, 230, True)], "[CUDA memcpy DtoH]"),
        "sync": (
            [("cudaMemcpyAsync", 30, 5, True), ("cudaStreamSynchronize", 36, 224, False)],
            "Memcpy DtoH (Device -> Pinned)",
        ),
        "staging": ([("cudaMemcpyAsync", 225, 20, True)], "Memcpy HtoD (Pageable -> Device)"),
        "fast": ([("cudaMemcpyAsync", 225, 35, True)], "Memcpy HtoD (Pinned -> Device)"),
        "memset": ([("cudaMemsetAsync", 225, 35, True)], "Memset (Device)"),
        "dtod": ([("cudaMemcpy", 225, 35, True)], "Memcpy DtoD (Device -> Device)"),
    }[kind]
    category = "gpu_memset" if kind == "memset" else "gpu_memcpy"

    def copy(i: int, t0: int) -> list[dict[str, Any]]:
        corr = 1000 + i
        out = []
        for name, at, dur, linked in calls:
            args = {"correlation": corr} if linked else {}
            out.append(kineto_event("cuda_runtime", name, t0 + at, dur, PID, TID, **args))
        out.append(kineto_event(category, op_name, t0 + 240, 10, 0, 7, device=0, stream=7, correlation=corr))
        out.append(
            kineto_event("cuda_runtime", "cudaLaunchKernel", t0 + 300, 5, PID, TID, correlation=2000 + i)
        )
        out.append(
            kineto_event("kernel", "relu", t0 + 310, 50, 0, 7, device=0, stream=7, correlation=2000 + i)
        )
        return out

    events = _gpu_run(kernels=1, extra=copy)
    for e in events:  # the first kernel lasts 200 µs
        if e["cat"] == "kernel" and e["name"] == "gemm":
            e["dur"] = 200
    return events


def _causes(tmp_path: Path, kind: str) -> dict[str, list[float]]:
    a = tracekit.analyze(kineto_file(tmp_path, _copy_run(kind), f"copy_{kind}.synthetic.json"))
    it = a.iterations
    assert it["gpu_busy_ms"].to_list() == [pytest.approx(0.26)] * STEPS
    return {
        c: [round(v, 6) for v in it[f"{c}_ms"].to_list()]
        for c in ("sync", "other_api", "launch", "in_flight")
    }


@pytest.mark.parametrize("kind", ["blocking", "cudaMemcpy"])
def test_a_blocking_copy_waits_as_a_sync_call_does(tmp_path: Path, kind: str) -> None:
    """A copy call that waits for its copy (synchronous by name, or an asynchronous copy to pageable host
    memory) and returned only after the copy ended kept the host waiting on the device: the idle time
    inside it is ``sync``, as inside ``cudaStreamSynchronize`` after an asynchronous copy (HTA and Nsight
    Systems count a blocking copy as a synchronization). Here the 20 µs between the kernel the copy waited
    for and the copy (the host blocked, then waking to issue it) and the 10 µs after the copy before the
    call returned: 30 µs of sync, no other_api. They read as 30 µs of other_api before.

    An asynchronous copy and then a stream synchronization (already right): the 10 µs after the copy are
    sync; the 20 µs before it are device-side (``in_flight``, with the two kernels' 5 µs each): the copy was
    on the device's queue since its call returned, where a blocking copy to pageable memory is issued only
    once the host, waiting for the stream to drain, wakes."""
    blocking, sync = _causes(tmp_path, kind), _causes(tmp_path, "sync")
    assert blocking["sync"] == [0.03] * STEPS
    assert blocking["other_api"] == [0.0] * STEPS
    assert blocking["in_flight"] == [0.01] * STEPS
    assert sync["sync"] == [0.01] * STEPS and sync["other_api"] == [0.0] * STEPS
    assert sync["in_flight"] == [0.03] * STEPS
    assert blocking["launch"] == sync["launch"] == [0.01] * STEPS


@pytest.mark.parametrize("kind", ["staging", "fast", "memset", "dtod"])
def test_a_copy_call_that_does_not_wait_stays_other_api(tmp_path: Path, kind: str) -> None:
    """The host's own work inside a call is no wait: the staging of a copy from pageable memory (the call
    returns before its copy ends: 15 µs of the idle 20 µs before the copy are inside it), and the calls
    that return after their op ended but wait for nothing by their kind: an asynchronous copy from pinned
    memory, an asynchronous memset, a synchronous device-to-device copy (15 µs before the op, 10 µs after
    it inside the call). All other_api, as before."""
    causes = _causes(tmp_path, kind)
    expected = 0.015 if kind == "staging" else 0.025
    assert causes["other_api"] == [expected] * STEPS and causes["sync"] == [0.0] * STEPS


# ------------------------------------------------------------------ 5: SGLang idle steps (none in the real traces)

SGLANG = ("sglang_qwen3-8b_decode", "sglang_qwen3-8b_prefilldecode", "sglang_decode_capture_bs_32_rank0")


@pytest.mark.parametrize("name", SGLANG)
def test_the_real_sglang_traces_hold_no_idle_step(name: str) -> None:
    """The TraceLens SGLang traces hold one step each (an ``execute_…`` range with its ``step[DECODE bs=32]``
    or ``step[EXTEND …]`` inside; a ``ProfilerStep#134`` around a CUDA-graph capture), each with device
    work (555, 527, 2 kernels): no idle or padding step (one with no or trivial GPU work between requests)
    is there to distort the median, so none is excluded from the verdict (finding of round 8: such an
    exclusion would rest on no real trace)."""
    path = REAL_TRACES / "tracelens" / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    a = tracekit.analyze(path)
    assert a.iterations.height == 1
    assert a.iterations["kernels"].to_list()[0] > 0
    assert not [w for w in a.warnings if "excluded" in w]


def test_a_compute_bound_verdict_with_conditional_graphs_keeps_the_warning_alone(tmp_path: Path) -> None:
    """More device time than traced only raises the utilization: a compute-bound verdict (88% here) stands,
    with the reader's warning (the busy time may be under-counted) and no doubt."""
    events = _graph_run("cudaGraphConditionalHandleCreate")
    for e in events:
        if e["cat"] == "kernel" and (e["ts"] - 220) % 1000 == 0:
            e["dur"] = 780
    a = tracekit.analyze(kineto_file(tmp_path, events, "cond_compute.synthetic.json"))
    assert a.iterations["gpu_busy_ms"].to_list() == [pytest.approx(0.88)] * STEPS
    assert a.summary.bound == "compute" and not a.summary.verdict_uncertain
    lines = [w for w in a.warnings if "conditional" in w]
    assert len(lines) == 1 and lines[0].startswith("the trace runs CUDA graphs with conditional nodes (1 ")
