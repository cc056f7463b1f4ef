"""Kineto traces as PyTorch versions wrote them (fuzz round 5): spellings of 2021 (torch 1.8/1.9) and the
legacy autograd profiler's export, against the same run in today's spelling. Every trace here is hand-built
(synthetic, made up for the test, not a measurement); the real 2021 trace is read where present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tracekit
from tests.builders import kineto_event, kineto_file, write_file
from tests.conftest import REAL_TRACES
from tracekit.errors import TraceFormatError
from tracekit.readers.kineto import read

STEPS = 3


def _cpu_run(
    tmp_path: Path, spelling: str, step: str = "ProfilerStep#{}", scope: str = "Optimizer.step#SGD.step"
) -> Path:
    """A CPU-only run of ``STEPS`` 900 µs ProfilerSteps, each with three 100 µs ``aten::mm`` 50 µs apart, then
    ``Optimizer.step#SGD.step`` (PyTorch's ``record_function`` scope, 380 µs) around two 50 µs ``aten::add_``
    100 µs apart: operators busy 400 µs of 900. ``spelling`` "2021": every event ``Operator``, as Kineto wrote
    record_function scopes before it had ``user_annotation`` (the torch 1.9 tbplugin sample has
    ``Optimizer.step#SGD.step`` and ``enumerate(DataLoader)#...`` so); "2023": ``cpu_op`` and
    ``user_annotation``. ``step``: the name of the step ranges (``{}`` the step's number); ``scope``: the
    inner scope's."""
    op, annotation = ("Operator", "Operator") if spelling == "2021" else ("cpu_op", "user_annotation")
    events: list[dict[str, Any]] = []
    for i in range(STEPS):
        t0 = 1000 + i * 1000
        events.append(kineto_event(annotation, step.format(i), t0, 900, 10, 11))
        events += [kineto_event(op, "aten::mm", t0 + 10 + k * 150, 100, 10, 11) for k in range(3)]
        events.append(kineto_event(annotation, scope, t0 + 500, 380, 10, 11))
        events += [kineto_event(op, "aten::add_", t0 + 510 + k * 150, 50, 10, 11) for k in range(2)]
    return kineto_file(tmp_path, events, f"cpu_{spelling}.synthetic.json")


@pytest.mark.parametrize(
    ("step", "range_name"), [("ProfilerStep#{}", "ProfilerStep#*"), ("iteration", "iteration")]
)
def test_record_function_scopes_written_as_operators_are_ranges(
    tmp_path: Path, step: str, range_name: str
) -> None:
    """Kineto of 2021 wrote ``record_function`` scopes as ``Operator`` events: ``Optimizer.step#SGD.step``
    was taken as a top-level operator, its Python time between the two ``aten::add_`` as operator time: the
    run read 'compute-bound, 75.6%' (busy 0.680 ms of 0.900) where today's spelling of the same run reads
    'framework-bound, 44.4%' (0.400 ms). Scopes (a ``#`` in the name, PyTorch's ``<kind>#<name>``) are
    ranges now, as ``user_annotation`` events are, in either spelling; so is ``iteration``, the range
    ``tracekit collect`` opens and the analysis looks for first (as an operator it had held every other one:
    the Optimizer scopes were taken for the iterations, and the three 'iteration' operators said outside them)."""
    old, new = (tracekit.analyze(_cpu_run(tmp_path, s, step)) for s in ("2021", "2023"))
    for a in (old, new):
        assert a.range_name == range_name
        assert a.iterations["gpu_busy_ms"].to_list() == [pytest.approx(0.4)] * STEPS
        assert a.iterations["kernels"].to_list() == [5] * STEPS
        assert a.summary.bound == "framework" and not a.summary.verdict_uncertain
    trace = read(_cpu_run(tmp_path, "2021"))
    assert set(trace.ops["name"]) == {"aten::mm", "aten::add_"}
    user = trace.ranges.filter(trace.ranges["domain"] == "user")
    assert user["name"].to_list().count("Optimizer.step#SGD.step") == STEPS
    assert "Optimizer.step#SGD.step" not in trace.meta["cpu_op_summary"]["names"]


def test_a_2021_scope_of_another_name_makes_the_verdict_uncertain(tmp_path: Path) -> None:
    """A user's scope named otherwise (``forward``) cannot be told from an operator in the 2021 spelling: the
    run reads 'compute-bound, 75.6%' (its Python time inside the scope counted busy), as before, but no
    longer without a doubt that names the operators that may be scopes."""
    a = tracekit.analyze(_cpu_run(tmp_path, "2021", scope="forward"))
    assert a.iterations["gpu_busy_ms"].to_list() == [pytest.approx(0.68)] * STEPS
    assert a.summary.bound == "compute"
    assert "'forward' (3)" in (a.summary.verdict_uncertain or "")


def test_operators_of_a_2021_trace_raise_no_scope_doubt(tmp_path: Path) -> None:
    """No doubt for what is an operator: a namespaced one, an autograd node holding others
    (``AddmmBackward``), a leaf outside every namespace (``detach_``, as torch 1.9 recorded it)."""
    events: list[dict[str, Any]] = []
    for i in range(STEPS):
        t0 = 1000 + i * 1000
        events.append(kineto_event("Operator", f"ProfilerStep#{i}", t0, 900, 10, 11))
        events.append(kineto_event("Operator", "detach_", t0 + 10, 20, 10, 11))
        events.append(kineto_event("Operator", "aten::linear", t0 + 50, 300, 10, 11))
        events.append(kineto_event("Operator", "aten::mm", t0 + 60, 200, 10, 11))
        events.append(kineto_event("Operator", "AddmmBackward", t0 + 400, 300, 10, 11))
        events.append(kineto_event("Operator", "aten::mm", t0 + 410, 200, 10, 11))
    path = kineto_file(tmp_path, events, "cpu_ops_2021.synthetic.json")
    assert "scope_candidates" not in read(path).meta
    assert not tracekit.analyze(path).summary.verdict_uncertain


def test_scopes_of_a_2021_gpu_trace_name_no_dispatch(tmp_path: Path) -> None:
    """On a GPU trace the top-level CPU operators (``cpu_ops``) name dispatch time; a 2021 scope around the
    launching operators was that name (the DataLoader's or the optimizer's), never an operator."""
    events: list[dict[str, Any]] = []
    for step in range(STEPS):
        t0 = 1000 + step * 1000
        events.append(kineto_event("Operator", f"ProfilerStep#{step}", t0, 900, 10, 11))
        events.append(kineto_event("Operator", "Optimizer.step#SGD.step", t0 + 5, 300, 10, 11))
        events.append(kineto_event("Operator", "aten::add_", t0 + 10, 50, 10, 11))
        events.append(kineto_event("Runtime", "cudaLaunchKernel", t0 + 20, 10, 10, 11, correlation=step + 1))
        events.append(
            kineto_event(
                "Kernel", "k", t0 + 100, 100, 0, "stream 7", device=0, stream=7, correlation=step + 1
            )
        )
    trace = read(kineto_file(tmp_path, events, "gpu_2021.synthetic.json"))
    assert trace.cpu_ops["name"].to_list() == ["aten::add_"] * STEPS


@pytest.mark.skipif(not REAL_TRACES.is_dir(), reason="real traces absent")
def test_real_2021_trace_scopes_are_ranges() -> None:
    """The torch 1.9 tbplugin sample: its DataLoader and optimizer scopes (``Operator`` events) are ranges,
    not operators; the iterations stay its 6 ProfilerSteps."""
    path = REAL_TRACES / "kineto" / "kineto_tbplugin_v100_resnet50_worker0.pt.trace.json.gz"
    if not path.exists():
        pytest.skip("trace absent")
    trace = read(path)
    scopes = trace.ranges.filter(trace.ranges["name"].str.contains("#", literal=True))["name"]
    assert scopes.str.starts_with("enumerate(DataLoader)#").sum() == 6
    assert scopes.str.starts_with("Optimizer.step#").sum() == 6
    assert not trace.cpu_ops["name"].str.contains("#", literal=True).any()
    assert tracekit.analyze(path).range_name == "ProfilerStep#*"


def _legacy_events(cuda: bool) -> list[dict[str, Any]]:
    """What ``torch.autograd.profiler.profile(use_kineto=False).export_chrome_trace`` writes (PyTorch's
    ``EventList.export_chrome_trace``): complete events without a category, host ones of pid "CPU
    functions"; with ``use_cuda``, per operator a ``cpu_to_cuda`` flow and a "CUDA functions" event."""
    events: list[dict[str, Any]] = []
    for step in range(STEPS):
        ts = 1000.5 + step * 1000
        events.append(
            {"name": "aten::mm", "ph": "X", "ts": ts, "dur": 30.25, "tid": 1, "pid": "CPU functions"}
        )
        if cuda:
            flow = {"name": "aten::mm", "tid": 1, "pid": "CPU functions", "id": step, "cat": "cpu_to_cuda"}
            events.append({**flow, "ph": "s", "ts": ts})
            events.append({**flow, "ph": "f", "ts": ts + 50, "tid": 0, "pid": "CUDA functions"})
            events.append(
                {"name": "aten::mm", "ph": "X", "ts": ts + 50, "dur": 200, "tid": 0, "pid": "CUDA functions"}
            )
    return events


@pytest.mark.parametrize("cuda", [True, False])
def test_legacy_autograd_profiler_export_is_named(tmp_path: Path, cuda: bool) -> None:
    """The legacy export had read as 'no ranges and no device activity: nothing to analyze', which says
    nothing of why; the error now names the format and what to record instead."""
    path = write_file(tmp_path, "legacy.synthetic.json", json.dumps(_legacy_events(cuda)))
    with pytest.raises(TraceFormatError, match="legacy autograd profiler's export .*use_kineto=False"):
        read(path)


def test_an_empty_array_is_no_legacy_export(tmp_path: Path) -> None:
    """Nothing to read and nothing of the legacy export: the error stays the empty trace's."""
    path = write_file(tmp_path, "empty.synthetic.json", "[]")
    with pytest.raises(tracekit.errors.TracekitError) as error:
        tracekit.analyze(path)
    assert "legacy" not in str(error.value)
