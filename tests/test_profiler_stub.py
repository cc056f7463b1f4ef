"""The step torch.profiler stops in (the last ``ProfilerStep#N``, opened by the last ``p.step()`` and closed at
stop, holding nothing of the run) is left out, with a warning; a last step holding anything is kept. Traces
are hand-built here (synthetic)."""

from __future__ import annotations

import polars as pl
import pytest

from tests.builders import make_trace
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.model import CPU_OPS_SCHEMA, Trace

STEPS = [(0, 1000, "ProfilerStep#1"), (1000, 2000, "ProfilerStep#2"), (2000, 2050, "ProfilerStep#3")]
API = [(100, 150, 1, "cudaLaunchKernel"), (1100, 1150, 2, "cudaLaunchKernel")]
OPS = [(200, 900, 1, 7), (1200, 1900, 2, 7)]


def with_cpu_ops(trace: Trace, rows: list[tuple[int, int, str]]) -> Trace:
    cpu = pl.DataFrame(
        [(s, e, 1, 1, n) for s, e, n in rows], schema=list(CPU_OPS_SCHEMA.items()), orient="row"
    )
    return Trace(ops=trace.ops, api=trace.api, ranges=trace.ranges, meta=trace.meta, cpu_ops=cpu)


def test_the_step_the_profiler_stopped_in_is_left_out() -> None:
    a = analyze_iterations(make_trace(ranges=STEPS, api=API, ops=OPS))
    assert a.iterations["latency_ms"].to_list() == pytest.approx([1e-3, 1e-3])
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.7e-3, 0.7e-3])
    assert any(w.startswith("left out the last step, ProfilerStep#3 (0.000 ms)") for w in a.warnings)
    assert not any("hold no device op" in w for w in a.warnings)


@pytest.mark.parametrize("holds", ["launch", "op", "cpu operator"])
def test_a_last_step_holding_anything_is_kept(holds: str) -> None:
    api, ops = list(API), list(OPS)
    if holds == "launch":  # a launch whose kernel is not in the trace
        api.append((2010, 2020, 3, "cudaLaunchKernel"))
    if holds == "op":
        api.append((2010, 2020, 3, "cudaLaunchKernel"))
        ops.append((2030, 2040, 3, 7))
    trace = make_trace(ranges=STEPS, api=api, ops=ops)
    if holds == "cpu operator":
        trace = with_cpu_ops(trace, [(2010, 2030, "aten::add")])
    a = analyze_iterations(trace)
    assert not any(w.startswith("left out the last step") for w in a.warnings)
    if holds == "launch":  # its kernel not in the trace, after the last linked launch: cut off by the capture
        assert a.iterations.height == 2
        assert any(w.startswith("left out the last iteration, ProfilerStep#3: 1 of its") for w in a.warnings)
    else:
        assert a.iterations.height == 3


def test_a_last_step_as_long_as_the_others_is_a_step_of_the_run() -> None:
    # nothing ran in it, but it lasted as long as the others (500 of 1000 ns is not under half): kept
    steps = [*STEPS[:2], (2000, 2500, "ProfilerStep#3")]
    assert analyze_iterations(make_trace(ranges=steps, api=API, ops=OPS)).iterations.height == 3
    stub = [*STEPS[:2], (2000, 2499, "ProfilerStep#3")]
    assert analyze_iterations(make_trace(ranges=stub, api=API, ops=OPS)).iterations.height == 2


def test_only_profiler_steps_and_only_the_last_one() -> None:
    # a user's 'iteration' ranges: an empty last one is the user's, kept
    named = [(s, e, "iteration") for s, e, _ in STEPS]
    assert analyze_iterations(make_trace(ranges=named, api=API, ops=OPS)).iterations.height == 3
    # an empty step in the middle is kept (it is a step of the run)
    middle = [STEPS[0], (1000, 1050, "ProfilerStep#2"), (2000, 3000, "ProfilerStep#3")]
    api = [API[0], (2100, 2150, 2, "cudaLaunchKernel")]
    ops = [OPS[0], (2200, 2900, 2, 7)]
    assert analyze_iterations(make_trace(ranges=middle, api=api, ops=ops)).iterations.height == 3
    # every step empty: nothing to compare with, nothing left out
    empty = analyze_iterations(make_trace(ranges=STEPS, api=[], ops=[(5000, 6000, 9, 7)]))
    assert not any(w.startswith("left out the last step") for w in empty.warnings)


# ------------------------------------------------------------- the last iteration cut off by the capture's end


def _cut_capture(tmp_path, lost_in_last: int, iterations: int = 10) -> object:
    """An nsys export (synthetic) of ``iterations`` ranges of 80 µs, each launching 3 kernels of 18 µs; the
    capture ends before the device runs the last ``lost_in_last`` kernels of the last iteration."""
    from tests.nsys_builder import NsysBuilder

    us, c = 1000, 1
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    for i in range(iterations):
        s = 100 * us + i * 100 * us
        b.nvtx_range(s, s + 80 * us, "iteration")
        for k in range(3):
            b.runtime(
                s + 2 * us + k * 3 * us, s + 4 * us + k * 3 * us, "cudaLaunchKernel_v7000", correlation=c
            )
            if i < iterations - 1 or k < 3 - lost_in_last:
                b.kernel(s + 10 * us + k * 20 * us, s + 28 * us + k * 20 * us, f"k{k}", correlation=c)
            c += 1
    path = tmp_path / f"cut{lost_in_last}_{iterations}.synthetic.sqlite"
    b.write(str(path))
    return path


def test_the_last_iteration_cut_off_by_the_capture_is_left_out(tmp_path) -> None:
    from tracekit.readers import read_trace

    a = analyze_iterations(read_trace(_cut_capture(tmp_path, 2)))
    assert a.iterations.height == 9  # was 10, the last with 0.018 ms busy of 0.054
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.054] * 9)
    assert any(
        w.startswith("left out the last iteration, iteration: 2 of its launch calls have no op in the trace")
        for w in a.warnings
    )
    whole = analyze_iterations(read_trace(_cut_capture(tmp_path, 0)))
    assert whole.iterations.height == 10
    assert not any(w.startswith("left out the last") for w in whole.warnings)
    # one iteration only: nothing else to measure, it is kept
    alone = analyze_iterations(read_trace(_cut_capture(tmp_path, 2, iterations=1)))
    assert alone.iterations.height == 1


def test_a_lost_kernel_before_a_kept_one_of_the_last_iteration_is_not_a_cut_off() -> None:
    # the last iteration's first launch has no kernel but its second has: records lost mid-iteration, not the
    # capture's end (lost_kernels' business): the iteration is kept
    trace = make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        api=[
            (100, 150, 1, "cudaLaunchKernel"),
            (1100, 1150, 2, "cudaLaunchKernel"),
            (1200, 1250, 3, "cudaLaunchKernel"),
        ],
        ops=[(200, 900, 1, 7), (1300, 1900, 3, 7)],
    )
    assert analyze_iterations(trace).iterations.height == 2
