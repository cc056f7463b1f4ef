"""mutation13: tests that kill the surviving mutants of today's smaller changes: kineto._outermost_calls,
simulate's _rank_overrides, ranks.ends_together_note, devices.independent_devices_doubt. Hand-built inputs
(synthetic), times in integer ns."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl
import pytest

from tests.builders import make_trace
from tracekit.analyzers.devices import independent_devices_doubt
from tracekit.analyzers.ranks import ENDS_TOGETHER_NOTE, ends_together_note
from tracekit.commands.simulate import _rank_overrides
from tracekit.errors import TracekitError
from tracekit.model import API_SCHEMA, conform
from tracekit.readers.kineto import _outermost_calls
from tracekit.simulate.ranks import RankSimulation

# ------------------------------------------------------------------------------- kineto._outermost_calls


def _api(*rows: tuple) -> pl.DataFrame:
    """rows: (start, end, correlation, name[, pid[, thread[, kind]]])"""
    fields = ("start", "end", "correlation", "name", "pid", "thread", "kind")
    defaults = (1, 1, "runtime")  # pid, thread, kind
    records = [dict(zip(fields, (*row, *defaults[len(row) - 4 :]), strict=True)) for row in rows]
    return conform(pl.DataFrame(records), API_SCHEMA)


def _kept(api: pl.DataFrame) -> list[tuple[int, str]]:
    out = _outermost_calls(api)
    return list(zip(out["start"].to_list(), out["name"].to_list(), strict=True))


def test_a_nested_driver_launch_of_the_same_correlation_is_dropped() -> None:
    # cudaLaunchKernel [100, 110) holds cuLaunchKernel [102, 106), both correlation 1: one launch
    api = _api((100, 110, 1, "cudaLaunchKernel"), (102, 106, 1, "cuLaunchKernel", 1, 1, "driver"))
    assert _kept(api) == [(100, "cudaLaunchKernel")]


def test_correlation_zero_is_no_pair() -> None:
    # id 0 is 'none' (as a null): the same nesting under id 0 keeps both calls
    api = _api((100, 110, 0, "cudaLaunchKernel"), (102, 106, 0, "cuLaunchKernel", 1, 1, "driver"))
    assert _kept(api) == [(100, "cudaLaunchKernel"), (102, "cuLaunchKernel")]


def test_a_nested_call_that_is_no_launch_is_kept() -> None:
    # a launch holding a non-launch call of its correlation (a Level Zero call of a SYCL launch, here a
    # cuMemcpyAsync): kept, it counts in no launch figure
    api = _api((100, 110, 1, "cudaLaunchKernel"), (102, 106, 1, "cuMemcpyAsync", 1, 1, "driver"))
    assert _kept(api) == [(100, "cudaLaunchKernel"), (102, "cuMemcpyAsync")]


def test_a_launch_nested_in_a_call_that_is_no_launch_is_kept() -> None:
    # cudaMemcpyAsync [100, 110) of id 1 holding a cuLaunchKernel [102, 106) of id 1: the outer one is no
    # launch, so no launch was recorded twice: both kept
    api = _api((100, 110, 1, "cudaMemcpyAsync"), (102, 106, 1, "cuLaunchKernel", 1, 1, "driver"))
    assert _kept(api) == [(100, "cudaMemcpyAsync"), (102, "cuLaunchKernel")]


def test_a_nested_launch_beginning_with_its_caller_is_dropped() -> None:
    # cuLaunchKernel [100, 106) begins with cudaLaunchKernel [100, 110): nested (start >= the outer's)
    api = _api((100, 110, 1, "cudaLaunchKernel"), (100, 106, 1, "cuLaunchKernel", 1, 1, "driver"))
    assert _kept(api) == [(100, "cudaLaunchKernel")]


def test_the_same_interval_under_another_name_is_dropped() -> None:
    # two launch calls of id 1 over the same [100, 110) on one thread, of one kind, but named differently:
    # not an event written twice (that is equal in every field), one launch recorded twice: the first kept
    api = _api((100, 110, 1, "cudaLaunchKernel"), (100, 110, 1, "cudaLaunchKernelExC"))
    assert _kept(api) == [(100, "cudaLaunchKernel")]


def test_an_event_written_twice_is_left_to_the_trace() -> None:
    # equal in every field: both stay here (the Trace drops one and says so)
    api = _api((100, 110, 1, "cudaLaunchKernel"), (100, 110, 1, "cudaLaunchKernel"))
    assert _kept(api) == [(100, "cudaLaunchKernel"), (100, "cudaLaunchKernel")]


def test_another_processs_launch_nested_in_time_with_the_same_id_is_kept() -> None:
    # pid 1's cudaLaunchKernel [100, 110) id 1 and pid 2's [102, 106) id 1 (ids are per process), plus
    # pid 1's nested cuLaunchKernel [103, 105) id 1 so that an id repeats within a process
    api = _api(
        (100, 110, 1, "cudaLaunchKernel", 1, 1),
        (102, 106, 1, "cudaLaunchKernel", 2, 2),
        (103, 105, 1, "cuLaunchKernel", 1, 1, "driver"),
    )
    assert _kept(api) == [(100, "cudaLaunchKernel"), (102, "cudaLaunchKernel")]


# ------------------------------------------------------------------------------- simulate._rank_overrides


def test_rank_overrides_are_typed_as_each_field() -> None:
    out = _rank_overrides([" straggler_factor = 1.5 ", "steps=3", "host_delay_ns=1,2,3"], RankSimulation)
    assert out == {"straggler_factor": 1.5, "steps": 3, "host_delay_ns": [1, 2, 3]}
    assert type(out["steps"]) is int and type(out["straggler_factor"]) is float


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ("ranks=3", "--set ranks: not a parameter of simulate --ranks"),
        ("=5", "--set expects KEY=VALUE, got '=5'"),
        ("steps", "--set expects KEY=VALUE, got 'steps'"),
        ("steps=2.5", "--set steps=2.5: expected int"),
        ("clock_offset_ns=1,x", "--set clock_offset_ns=1,x: expected list[int]"),
    ],
)
def test_rank_overrides_refuse_what_they_cannot_apply(item: str, said: str) -> None:
    with pytest.raises(TracekitError) as info:
        _rank_overrides([item], RankSimulation)
    assert said in str(info.value)


# ------------------------------------------------------------------------------- ranks.ends_together_note

SKEW = {"steps": 4, "median_start_skew_ms": 0.01}


def test_ends_together_note_when_a_straggler_arrives_last_and_no_trace_ends_last() -> None:
    assert ends_together_note({"straggler": "rank 1"}, SKEW) == ENDS_TOGETHER_NOTE
    assert ends_together_note({"tied": ["rank 0", "rank 1"]}, SKEW) == ENDS_TOGETHER_NOTE


@pytest.mark.parametrize(
    ("straggler", "skew_found"),
    [
        ({}, SKEW),  # nobody arrives last
        ({"straggler": "rank 1"}, {**SKEW, "ends_last": "rank 1"}),  # a trace ends its steps last
        ({"straggler": "rank 1"}, {"steps": 0, "median_start_skew_ms": 0.0}),  # no step compared
        # steps, but their starts not told apart (a skew within the clocks' residual)
        ({"straggler": "rank 1"}, {"steps": 4, "median_start_skew_ms": 0.0, "why": "within the residual"}),
        ({"straggler": "rank 1"}, {"steps": 0, "why": "iterations are cut by different ranges"}),
    ],
)
def test_no_ends_together_note_otherwise(straggler: dict, skew_found: dict) -> None:
    assert ends_together_note(straggler, skew_found) is None


# ------------------------------------------------------------------------------- devices.independent_devices_doubt


def _two_processes_two_gpus(shared: bool = False):
    # pid 1 launches a kernel on GPU 0, pid 2 one on GPU 1 (shared: pid 1 launches both)
    api = [(0, 10, 1, "cudaLaunchKernel", 1, 1), (0, 10, 2, "cudaLaunchKernel", 1 if shared else 2, 2)]
    ops = [(20, 100, 1, 7, "kernel", 0, 1), (20, 100, 2, 7, "kernel", 1, 1 if shared else 2)]
    return make_trace(
        api=api,
        ops=ops,
        meta={"path": "mutants13_synthetic", "synthetic": True},
        api_fields=("start", "end", "correlation", "name", "pid", "thread"),
        op_fields=("start", "end", "correlation", "stream", "kind", "device", "pid"),
    )


def _row(device: int, bound: str | None, utilization: float) -> dict:
    return {"device": device, "bound": bound, "gpu_utilization": utilization}


TOGETHER = SimpleNamespace(p50=0.684)


def test_independent_devices_doubt_names_each_gpu_and_the_headline() -> None:
    rows = [_row(0, "framework", 0.374), _row(1, "framework", 0.4)]
    assert independent_devices_doubt(_two_processes_two_gpus(), "compute", TOGETHER, rows) == (
        "verdict uncertain: the trace's GPUs are driven by separate processes, and each alone is "
        "framework-bound (GPU 0 37%, GPU 1 40% busy, median), while the headline counts them busy together "
        "(68%); see the per-device rows"
    )
    for unknown in (None, SimpleNamespace(p50=None)):  # (no headline median: none said, no TypeError)
        assert independent_devices_doubt(_two_processes_two_gpus(), "compute", unknown, rows).endswith(
            "counts them busy together; see the per-device rows"
        )


@pytest.mark.parametrize(
    "rows",
    [
        [_row(0, "framework", 0.374)],  # one GPU
        [_row(0, "framework", 0.374), _row(1, "compute", 0.9)],  # one GPU agrees with the headline
        [_row(0, "framework", 0.374), _row(1, None, 0.9)],  # one GPU has no verdict
        [_row(0, "framework", 0.374), _row(1, "framework", 0.4), {"device": 2, "why": "withheld"}],
    ],
)
def test_no_independent_devices_doubt_unless_every_gpu_differs(rows: list[dict]) -> None:
    assert independent_devices_doubt(_two_processes_two_gpus(), "compute", TOGETHER, rows) is None


def test_no_independent_devices_doubt_when_one_process_drives_two_gpus() -> None:
    rows = [_row(0, "framework", 0.374), _row(1, "framework", 0.4)]
    assert independent_devices_doubt(_two_processes_two_gpus(shared=True), "compute", TOGETHER, rows) is None


def _two_ranks_ending_together(r0_steps, r1_steps):
    # two ranks, aligned on two all-reduces that end together at 0.95 and 2.95 ms; rank 0 enters each 400 us
    # before its end, rank 1 50 us before: rank 1 arrives last (the straggler), each step ends together
    from tests.builders import EPOCH, compact_result
    from tracekit.analyzers.ranks import summarize

    ends = [EPOCH + 950_000, EPOCH + 2_950_000]
    at = lambda steps: [(EPOCH + s, EPOCH + e) for s, e in steps]  # noqa: E731
    r0 = compact_result("rank0", 0, ends=ends, starts=[e - 400_000 for e in ends], steps=at(r0_steps))
    r1 = compact_result("rank1", 1, ends=ends, starts=[e - 50_000 for e in ends], steps=at(r1_steps))
    return summarize([r0, r1])


def test_the_ends_together_note_goes_with_a_named_slowest_only() -> None:
    # rank 0 begins step 1 first ([0, 1) ms against [0.2, 1) ms), rank 1 step 2 ([2, 3) against [2.1, 3)):
    # each is the longest once, so 'slowest by step' names none and takes no note; the spread's medians
    # (0.95 against 0.9 ms) name rank 0, with the note
    doc = _two_ranks_ending_together(
        [(0, 1_000_000), (2_100_000, 3_000_000)], [(200_000, 1_000_000), (2_000_000, 3_000_000)]
    )
    assert doc["straggler"]["straggler"] == "rank 1"
    assert doc["slowest_by_step"] == {"steps": 2}
    assert doc["spread"]["slowest"] == "rank 0" and doc["spread"]["note"] == ENDS_TOGETHER_NOTE


# ------------------------------------------------------------------------------- inputs.resolve_inputs


def test_a_missing_path_among_several_is_kept_and_alone_is_refused(tmp_path) -> None:
    from tracekit.inputs import resolve_inputs

    present = tmp_path / "present.synthetic.json"
    present.write_text('{"traceEvents": []}')
    missing = tmp_path / "missing.synthetic.json"
    inputs = resolve_inputs([str(present), str(missing)])
    assert [(i.path, i.format) for i in inputs] == [(present, "kineto"), (missing, None)]
    with pytest.raises(TracekitError) as info:
        resolve_inputs([str(missing)])
    assert str(info.value) == f"{missing}: no such file or directory"
    # one path given as a string is one input, not its characters
    assert [i.path for i in resolve_inputs(str(present))] == [present]
