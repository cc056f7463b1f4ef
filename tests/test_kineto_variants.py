"""Kineto (torch.profiler) traces of spellings and devices beyond CUDA: Intel XPU and PrivateUse1 runtime calls
(Kineto's ``xpu_runtime``, ``xpu_driver``, ``privateuse1_runtime`` categories), and annotations written as
begin/end pairs. Every trace is hand-built here (synthetic, made up for the test, not a measurement)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tracekit
from tests.builders import kineto_event, kineto_file
from tracekit.readers.kineto import read

#: iterations (ProfilerStep ranges) of :func:`_trace` and kernels per iteration
STEPS = 3
KERNELS = 3
#: µs: iteration length, launch-call length, kernel length
STEP_US, CALL_US, KERNEL_US = 1000, 10, 200


def _trace(
    tmp_path: Path,
    calls: list[tuple[str, str]],
    name: str = "variant.synthetic.json",
    kernel_category: str = "kernel",
) -> Path:
    """``STEPS`` ProfilerStep ranges (pid 10, tid 11), each with ``KERNELS`` kernels (device 0, stream 7,
    200 µs, back to back from 100 µs into the step), each launched by the ``calls`` (category, name) given:
    the first a 10 µs call, each next one nested inside the previous (1 µs in, 2 µs shorter), all carrying
    the kernel's correlation id."""
    events: list[dict[str, Any]] = []
    correlation = 1
    for step in range(STEPS):
        t0 = 1000 + step * STEP_US
        events.append(kineto_event("user_annotation", f"ProfilerStep#{step}", t0, STEP_US - 10, 10, 11))
        for k in range(KERNELS):
            ts = t0 + 10 + k * 50
            events.append(kineto_event("cpu_op", "aten::mm", ts, 30, 10, 11))
            for depth, (category, call) in enumerate(calls):
                events.append(
                    kineto_event(
                        category, call, ts + 5 + depth, CALL_US - 2 * depth, 10, 11, correlation=correlation
                    )
                )
            start = t0 + 100 + k * (KERNEL_US + 10)
            events.append(
                kineto_event(
                    kernel_category, f"gemm{k}", start, KERNEL_US, 0, 7, device=0, correlation=correlation
                )
            )
            correlation += 1
    return kineto_file(tmp_path, events, name)


def _no_orphans(warnings: list[str]) -> bool:
    """No warning that the kernels' launching calls are missing from the trace."""
    return not any("no runtime/driver call" in w for w in warnings)


@pytest.mark.parametrize(
    "launch", ["urEnqueueKernelLaunch", "urEnqueueKernelLaunchWithArgsExp", "piEnqueueKernelLaunch"]
)
def test_xpu_runtime_launches_are_read_and_counted(tmp_path: Path, launch: str) -> None:
    """Intel XPU: Kineto's XPU plugin writes SYCL runtime calls as ``xpu_runtime`` events carrying the
    kernel's correlation id. They were dropped: every kernel was said to be launched before the capture
    window, no launch was counted and the launch calls' time read as dispatch."""
    path = _trace(tmp_path, [("xpu_runtime", launch)])
    trace = read(path)
    assert trace.api.height == STEPS * KERNELS
    assert set(trace.api["kind"]) == {"runtime"}
    assert set(trace.ops["pid"]) == {10}  # the launching process, joined by correlation
    assert _no_orphans(trace.warnings)
    a = tracekit.analyze(path)
    assert a.iterations["kernels"].to_list() == [KERNELS] * STEPS
    assert a.iterations["launches"].to_list() == [KERNELS] * STEPS
    assert a.iterations["launch_api_us"].to_list() == [KERNELS * CALL_US] * STEPS
    # idle time inside a launch call: the first kernel's call (the others run while a kernel does)
    assert a.iterations["launch_ms"].to_list() == [pytest.approx(CALL_US / 1000)] * STEPS
    assert not any("do not know as kernel launches" in w for w in a.warnings)


def test_level_zero_call_nested_in_the_runtime_launch_counts_once(tmp_path: Path) -> None:
    """The Level Zero call (``xpu_driver``) that a SYCL launch makes runs inside it, with the same correlation
    id: one launch per kernel, not two, and its time once."""
    path = _trace(
        tmp_path,
        [("xpu_runtime", "urEnqueueKernelLaunch"), ("xpu_driver", "zeCommandListAppendLaunchKernel")],
    )
    trace = read(path)
    assert sorted(set(trace.api["kind"])) == ["driver", "runtime"]
    assert _no_orphans(trace.warnings)
    a = tracekit.analyze(path)
    assert a.iterations["launches"].to_list() == [KERNELS] * STEPS
    assert a.iterations["launch_api_us"].to_list() == [KERNELS * CALL_US] * STEPS


@pytest.mark.parametrize(
    ("category", "call"),
    [("privateuse1_runtime", "synthLaunchKernel"), ("xpu_driver", "zeCommandListAppendLaunchKernel")],
)
def test_launches_of_unknown_names_are_named_in_a_warning(tmp_path: Path, category: str, call: str) -> None:
    """A device plugin's runtime calls (``privateuse1_runtime``), or Level Zero calls recorded without the
    SYCL ones, launch the kernels under names tracekit does not count as launches: the launch count would
    read 0 beside the kernels. The reader says which calls, and no longer that the kernels were launched
    before the capture window."""
    path = _trace(tmp_path, [(category, call)])
    trace = read(path)
    assert trace.api.height == STEPS * KERNELS
    assert _no_orphans(trace.warnings)
    unknown = [w for w in trace.warnings if "does not know as kernel launches" in w]
    assert unknown == [
        f"{STEPS * KERNELS} of {STEPS * KERNELS} kernels were launched by calls that tracekit does not know as "
        f"kernel launches ({call}): launch counts and launch-call time leave them out, and the time spent in "
        "those calls counts as other API time"
    ]


def test_cuda_launches_and_copies_raise_no_unknown_launch_warning(tmp_path: Path) -> None:
    """The warning is for kernels only: a memcpy launched by ``cudaMemcpyAsync`` is no kernel launch."""
    events = [
        kineto_event("cuda_runtime", "cudaLaunchKernel", 10, 5, 10, 11, correlation=1),
        kineto_event("cuda_runtime", "cudaMemcpyAsync", 20, 5, 10, 11, correlation=2),
        kineto_event("kernel", "k", 30, 10, 0, 7, device=0, stream=7, correlation=1),
        kineto_event("gpu_memcpy", "Memcpy HtoD", 45, 10, 0, 7, device=0, stream=7, correlation=2),
    ]
    trace = read(kineto_file(tmp_path, events, "cuda.synthetic.json"))
    assert trace.warnings == []


@pytest.mark.parametrize("phases", [("b", "e"), ("B", "E")])
def test_profiler_steps_written_as_begin_end_pairs_are_said_unread(
    tmp_path: Path, phases: tuple[str, str]
) -> None:
    """ProfilerStep annotations written as begin/end pairs are not read: the analysis then takes the trace as
    one window and said the trace had no ranges; the reader now says its annotations were not read."""
    events: list[dict[str, Any]] = []
    for step in range(STEPS):
        t0 = 1000 + step * STEP_US
        for phase, ts in zip(phases, (t0, t0 + STEP_US - 10), strict=True):
            event = {
                "ph": phase,
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": 10,
                "tid": 11,
            }
            events.append({**event, "ts": ts, "id": step})
        events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", t0 + 10, 5, 10, 11, correlation=step))
        events.append(kineto_event("kernel", "k", t0 + 20, 100, 0, 7, device=0, stream=7, correlation=step))
    trace = read(kineto_file(tmp_path, events, "begin_end.synthetic.json"))
    assert trace.ranges.is_empty()
    assert trace.warnings == [
        "the trace has events of category 'user_annotation' but none is a complete event ('ph': 'X') with a "
        "readable ts: no range was read from them (begin/end pairs are not read), so the iterations they mark "
        "are not known"
    ]


@pytest.mark.parametrize(("runtime", "call"), [("mtia_runtime", "runFunction"), ("hpu_op", "hpuLaunch")])
def test_accelerators_whose_device_events_kineto_names_otherwise_are_read(
    tmp_path: Path, runtime: str, call: str
) -> None:
    """MTIA's on-device events (``mtia_ccp_events``, which HTA reads as kernels and newer Kineto aliases to
    its kernel type) and the host runtimes of MTIA and Gaudi (``mtia_runtime``, ``hpu_op``). They were
    dropped: the trace read as a CPU-only run, its CPU operators' time as the "device" busy time."""
    path = _trace(tmp_path, [(runtime, call)], kernel_category="mtia_ccp_events")
    trace = read(path)
    assert trace.meta["device"] == "gpu"
    assert trace.ops.height == STEPS * KERNELS and set(trace.ops["kind"]) == {"kernel"}
    assert trace.api.height == STEPS * KERNELS and _no_orphans(trace.warnings)
    a = tracekit.analyze(path)
    assert a.iterations["kernels"].to_list() == [KERNELS] * STEPS
    assert a.iterations["gpu_busy_ms"].to_list() == [pytest.approx(KERNELS * KERNEL_US / 1000)] * STEPS
    # their launch calls' names are not known launches: said, not counted
    assert any("does not know as kernel launches" in w for w in a.warnings)
