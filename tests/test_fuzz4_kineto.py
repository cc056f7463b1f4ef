"""Kineto (torch.profiler) traces edited the way unseen real GPU traces differ from the committed ones: launch
records lost by the profiler, synchronization calls, CUDA-graph replays, flows without correlation args,
several GPUs of one process. Every trace here is hand-built (synthetic, made up for the test, not a
measurement); the real-trace checks skip when ``../shared`` is absent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders import kineto_event, kineto_file
from tracekit.readers.kineto import read

#: iterations (ProfilerStep ranges) of :func:`_steps` and kernels per iteration
STEPS = 3
KERNELS = 3
#: µs: iteration length, launch-call length, kernel length
STEP_US, CALL_US, KERNEL_US = 1000, 10, 200
#: process and thread of the host events
PID, TID = 10, 11


def _steps(
    tmp_path: Path,
    name: str = "steps.synthetic.json",
    lost_calls: tuple[int, ...] = (),
    extra: list[dict[str, Any]] | None = None,
    call_pid: dict[int, int] | None = None,
) -> Path:
    """``STEPS`` ProfilerStep ranges (pid 10, tid 11), each with ``KERNELS`` kernels (device 0, stream 7,
    200 µs, back to back from 100 µs into the step), launched by 10 µs ``cudaLaunchKernel`` calls; correlation
    ids 1, 2, ... in launch order. The calls of ``lost_calls`` (correlation ids) are left out, as a profiler
    that dropped their records would; ``call_pid`` puts the call of a correlation id in another process;
    ``extra`` events are added as they are."""
    events: list[dict[str, Any]] = []
    correlation = 1
    for step in range(STEPS):
        t0 = 1000 + step * STEP_US
        events.append(kineto_event("user_annotation", f"ProfilerStep#{step}", t0, STEP_US - 10, PID, TID))
        for k in range(KERNELS):
            ts = t0 + 10 + k * 50
            if correlation not in lost_calls:
                pid = (call_pid or {}).get(correlation, PID)
                events.append(
                    kineto_event(
                        "cuda_runtime", "cudaLaunchKernel", ts, CALL_US, pid, TID, correlation=correlation
                    )
                )
            start = t0 + 100 + k * (KERNEL_US + 10)
            events.append(
                kineto_event("kernel", f"gemm{k}", start, KERNEL_US, 0, 7, device=0, correlation=correlation)
            )
            correlation += 1
    return kineto_file(tmp_path, events + (extra or []), name)


def _orphan_warning(warnings: list[str]) -> str:
    """The reader's one warning about GPU ops without their launching call."""
    (found,) = [w for w in warnings if "no runtime/driver call" in w]
    return found


# ------------------------------------------------------------------------------- lost launch records


def test_ops_whose_launch_records_were_lost_are_not_said_launched_before_the_capture(tmp_path: Path) -> None:
    """A kernel whose correlation id lies between the ids of the trace's own calls was launched during the
    capture (the profiler numbers a process's calls in the order they begin): its call's record was lost, as
    CUPTI loses records when its buffers fill. The warning had said "launched before the capture window" of
    every such kernel (a real V100 trace with a sixth of its launch records removed: 871 kernels, 84.7 ms of
    work, counted in no iteration and explained as work from before the capture)."""
    trace = read(_steps(tmp_path, lost_calls=(4, 5)))
    warning = _orphan_warning(trace.meta["warnings"])
    assert warning.startswith(
        "2 of 9 GPU ops have no runtime/driver call with their correlation id in the trace"
    )
    assert (  # two 200 µs kernels
        "(2 of them, 0.400 ms of work, carry ids between the first and the last id of the trace's own calls, "
        "1 to 9: launched during the capture, the records of their launch calls lost)" in warning
    )
    assert "launched before the capture window" not in warning


def test_ops_launched_before_the_capture_keep_their_explanation(tmp_path: Path) -> None:
    """Ids below every call of the trace (a busy device still running work launched before the capture
    began, as in the real recsys and Qwen traces) are said launched before the capture, and counted apart
    from lost records in the same trace."""
    early = kineto_event("kernel", "early", 900, 50, 0, 7, device=0, correlation=0)
    no_id = kineto_event("kernel", "no_id", 950, 20, 0, 7, device=0)
    only_early = _orphan_warning(
        read(_steps(tmp_path, "a.synthetic.json", extra=[early, no_id])).meta["warnings"]
    )
    assert only_early == (
        "2 of 11 GPU ops have no runtime/driver call with their correlation id in the trace (launched before "
        "the capture window, or no correlation)"
    )
    both = _orphan_warning(read(_steps(tmp_path, "b.synthetic.json", (5,), [early, no_id])).meta["warnings"])
    assert "(1 of them, 0.200 ms of work, carry ids between the first and the last id" in both
    assert both.endswith("; the other 2: launched before the capture window, or no correlation)")


def test_ids_of_two_processes_are_not_compared(tmp_path: Path) -> None:
    """Two processes number their calls separately, so an op's id between one process's first and last call
    says nothing: the old wording stays."""
    path = _steps(tmp_path, lost_calls=(5,), call_pid={9: 20})
    assert _orphan_warning(read(path).meta["warnings"]).endswith(
        "(launched before the capture window, or no correlation)"
    )


@pytest.mark.parametrize(
    "path",
    [
        "kineto/hta_a100sxm80_recsys_rank0.json.gz",
        "tracelens/h100_qwen1.5-0.5b_chat.json.gz",
    ],
)
def test_real_traces_with_work_from_before_the_capture_say_so(real_traces: Path, path: str) -> None:
    """Both real traces whose device ran work launched before the capture: none of those ops is said lost
    (their ids are all below the trace's calls')."""
    trace = read(real_traces / path)
    assert _orphan_warning(trace.meta["warnings"]).endswith(
        "(launched before the capture window, or no correlation)"
    )


# ----------------------------------------------------------------------------------- ROCm fill kernels


def test_rocm_fill_kernels_of_memset_calls_are_no_unknown_launches(tmp_path: Path) -> None:
    """ROCm runs ``hipMemsetAsync`` as a fill kernel, which Kineto's rocprofiler-sdk path records as a kernel
    dispatch carrying the memset call's correlation id. A memset is no launch (as on CUDA, where it is a
    ``gpu_memset`` event), so no warning says the kernels were launched under unknown launch names; a kernel of
    a call tracekit does not know (a plugin's runtime) still is named."""
    fill = [
        kineto_event("cuda_runtime", "hipMemsetAsync", 1050, 8, PID, TID, correlation=100),
        kineto_event("kernel", "__amd_rocclr_fillBufferAligned.kd", 1060, 3, 0, 7, device=0, correlation=100),
    ]
    warnings = read(_steps(tmp_path, "fill.synthetic.json", extra=fill)).meta["warnings"]
    assert not any("does not know as kernel launches" in w for w in warnings)
    plugin = [
        kineto_event("privateuse1_runtime", "npuLaunch", 2050, 8, PID, TID, correlation=101),
        kineto_event("kernel", "npu_kernel", 2060, 3, 0, 7, device=0, correlation=101),
    ]
    warnings = read(_steps(tmp_path, "plugin.synthetic.json", extra=fill + plugin)).meta["warnings"]
    (unknown,) = [w for w in warnings if "does not know as kernel launches" in w]
    assert unknown.startswith("1 of 11 kernels were launched by calls that tracekit does not know as kernel ")
    assert "(npuLaunch)" in unknown
