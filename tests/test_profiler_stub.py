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
    assert a.iterations.height == 3
    assert not any(w.startswith("left out the last step") for w in a.warnings)


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
