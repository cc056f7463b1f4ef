"""Range selection (tracekit.analyzers.ranges): the cases the full mutation run of issue 33 (2026-11-26,
``python benchmarks/mutation.py ranges``) found unchecked, one test per behaviour.

Every trace here is hand-built (synthetic, not a measurement); each test asserts the exact frame, name, line or
warning a user sees.
"""

from __future__ import annotations

import polars as pl
import pytest

from tests.builders import device_trace as make_trace
from tests.builders import spans
from tracekit.analyzers import ranges as R
from tracekit.errors import NoActivityError, TracekitError
from tracekit.model import Trace

# ------------------------------------------------------------------------------------ --split-idle


def test_a_gap_one_ns_longer_than_the_threshold_cuts():
    # 1 ms = 1_000_000 ns exactly: a gap of 1_000_001 ns cuts, one of 1_000_000 ns does not
    ops = [(0, 100, None, 7), (1_000_101, 1_000_200, None, 7), (2_000_200, 2_000_300, None, 7)]
    choice = R.select_ranges(make_trace(ops=ops), None, split_idle_ms=1.0)
    assert spans(choice.frame) == [(0, 100), (1_000_101, 2_000_300)]
    assert choice.name == "idle>1ms"


def test_idle_split_returns_each_iteration_with_its_op_count_and_device_span():
    # two groups at 1 ms: ops 0-1 (launched from 0) and ops 2-4; ops given out of start order
    ops = pl.DataFrame(
        {
            "launch": [3_500_000, 0, 50, 3_000_000, 3_000_500],
            "start": [3_500_100, 100, 400, 3_000_100, 3_000_600],
            "end": [3_500_200, 300, 900, 3_000_400, 3_000_700],
        }
    )
    out = R.idle_split(ops, 1.0)
    assert out.columns == ["range_start", "range_end", "ops", "gpu_start", "gpu_end"]
    assert out["ops"].dtype == pl.Int64
    assert out.rows() == [(0, 900, 2, 100, 900), (3_000_000, 3_500_200, 3, 3_000_100, 3_500_200)]
    assert R.idle_split(ops, None).rows() == [(0, 3_500_200, 5, 100, 3_500_200)]


def test_a_launch_call_recorded_after_its_op_started_does_not_open_the_window_late():
    # clock skew: the launching call (1500 ns) is recorded after its kernel's start (1000 ns); the window
    # opens at the kernel's start, not at the call
    trace = make_trace(api=[(1500, 1600, 1, "cudaLaunchKernel")], ops=[(1000, 2000, 1, 7)])
    choice = R.select_ranges(trace, None)
    assert spans(choice.frame) == [(1000, 2000)]
    assert R.launch_times(trace).rows() == [(0, 1000, 1000, 2000)]


def test_an_op_without_an_end_is_not_in_a_window():
    # an op whose end was not recorded (null) has no interval: the window covers the complete op only
    trace = make_trace(ops=[(500, None, None, 7), (1000, 2000, None, 7)])
    choice = R.select_ranges(trace, None)
    assert spans(choice.frame) == [(1000, 2000)]
    assert choice.frame["gpu_start"].to_list() == [1000]


@pytest.mark.parametrize(("split", "name"), [(1.0, None), (None, "window")])
def test_gpu_projected_ranges_alone_do_not_count_as_unused_ranges(split, name):
    # no ops and only GPU-projected annotations: nothing to analyze, not "its 1 ranges are not used"
    trace = make_trace(ranges=[(0, 100, "k", 0, "gpu")], meta={"path": "run.sqlite"})
    with pytest.raises(NoActivityError) as err:
        R.select_ranges(trace, name, split_idle_ms=split)
    assert str(err.value) == "run.sqlite: no ranges and no device activity: nothing to analyze"


@pytest.mark.parametrize(
    ("split", "name", "option"), [(1.0, None, "--split-idle"), (None, "window", "a synthetic window")]
)
def test_host_ranges_without_device_activity_are_said_unused(split, name, option):
    trace = make_trace(ranges=[(0, 100, "iteration")], meta={"path": "run.sqlite"})
    with pytest.raises(NoActivityError) as err:
        R.select_ranges(trace, name, split_idle_ms=split)
    assert str(err.value) == (
        f"run.sqlite: {option} cuts the device timeline, and this trace has no device activity; its 1 ranges "
        "are not used in that mode (analyze them with --range NAME, or without --split-idle)"
    )


# ------------------------------------------------------------------------ same name, nested or overlapping

THREADED = ("start", "end", "name", "depth", "domain", "thread", "pid")


def test_an_instance_inside_another_on_another_thread_is_left_out_and_said_so():
    ranges = [
        (0, 1000, "iteration", 0, None, 1, 1),
        (2000, 3000, "iteration", 0, None, 1, 1),
        (100, 900, "iteration", 0, None, 2, 1),  # a worker thread's instance inside the first
    ]
    choice = R.select_ranges(make_trace(ranges=ranges, range_fields=THREADED), None)
    assert spans(choice.frame) == [(0, 1000), (2000, 3000)]
    assert choice.frame["thread"].to_list() == [1, 1]
    assert choice.frame["iteration"].to_list() == [0, 1]
    assert choice.warnings == [
        "left out 1 of 3 'iteration' ranges: each lies inside another range of that name in the same process "
        "(the outermost in time are the iterations; 1 of them on threads with no kept instance)"
    ]


def test_an_instance_nested_on_the_same_thread_is_left_out_and_said_so():
    ranges = [(0, 1000, "iteration", 0, None, 1, 1), (100, 900, "iteration", 1, None, 1, 1)]
    choice = R.select_ranges(make_trace(ranges=ranges, range_fields=THREADED), "iteration")
    assert spans(choice.frame) == [(0, 1000)]
    assert choice.warnings == [
        "left out 1 of 2 'iteration' ranges: each lies inside another range of that name in the same process "
        "(the outermost in time are the iterations; all on the threads of the kept ones)"
    ]


@pytest.mark.parametrize(
    ("second", "kept", "said"),
    [
        ((0, 1000), 1, "left out 1 of 2"),  # identical: the first holds it
        ((500, 1000), 1, "left out 1 of 2"),  # same end, later start
        ((0, 500), 1, "left out 1 of 2"),  # same start, earlier end
        ((500, 1500), 2, "1 of the 2 'iteration' ranges start before"),  # overlaps past the end
        ((1000, 1500), 2, None),  # starts where the first ends: neither held nor overlapping
    ],
)
def test_which_instances_another_holds(second, kept, said):
    """A worker thread's one instance inside the main thread's in time is nested (the thread runs no instance
    of its own): left out."""
    ranges = [(0, 1000, "iteration", 0, None, 1, 1), (*second, "iteration", 0, None, 2, 1)]
    choice = R.select_ranges(make_trace(ranges=ranges, range_fields=THREADED), None)
    assert choice.frame.height == kept
    assert spans(choice.frame)[0] == (0, 1000)
    assert [w[: len(said)] for w in choice.warnings] == ([said] if said else [])


def test_held_is_per_row_in_input_order():
    rows = pl.DataFrame(
        {
            "pid": [1, 1, 2, 1, 1],
            "start": [100, 0, 100, 0, 0],
            "end": [900, 1000, 900, 1000, 2000],
        }
    )
    # row 4 (0-2000) holds rows 0, 1 and 3 of process 1; process 2's row is held by nothing
    assert R._held(rows).to_list() == [True, True, False, True, False]
    # of identical intervals, the first in input order holds the others
    twins = pl.DataFrame({"pid": [1, 1, 1], "start": [0, 0, 0], "end": [1000, 1000, 1000]})
    assert R._held(twins).to_list() == [False, True, True]


def test_instances_of_other_processes_neither_hold_nor_overlap_each_other():
    ranges = [
        (0, 1000, "iteration", 0, None, 1, 1),
        (500, 1500, "iteration", 0, None, 2, 1),  # overlaps the first, same process
        (200, 800, "iteration", 0, None, 1, 2),  # inside the first in time, but another process
    ]
    choice = R.select_ranges(make_trace(ranges=ranges, range_fields=THREADED), None)
    assert spans(choice.frame) == [(0, 1000), (200, 800), (500, 1500)]
    assert choice.frame["pid"].to_list() == [1, 2, 1]
    assert choice.warnings == [
        "the 3 'iteration' ranges come from 2 processes (pids 1, 2): they are analyzed as one series of "
        "iterations, each holding the work its own process launched",
        "1 of the 3 'iteration' ranges start before an earlier one of the same process ends (different "
        "threads running iterations at once): work launched where they overlap counts in the range of the "
        "thread that launched it (in the later-starting one when that thread has no range)",
    ]


# ----------------------------------------------------------------------------------- keys and names


def test_range_keys():
    names = [
        "ProfilerStep#12",
        "ProfilerStep#12a",
        "xProfilerStep#1",
        "aten::mm, seq = 3, op_id = 7",
        "aten::mm,sizes=[[1, 2]]",
        "aten::add,  input_op_ids = [1]",
        "aten::mm,  op_id=5",
        "aten::mm, other = 1",
    ]
    keys = pl.select(R.range_key(pl.lit(pl.Series(names)))).to_series().to_list()
    assert keys == [
        "ProfilerStep#*",
        "ProfilerStep#12a",
        "xProfilerStep#1",
        "aten::mm",
        "aten::mm",
        "aten::add",
        "aten::mm",
        "aten::mm, other = 1",
    ]


def _counted(names: list[str], meta=None) -> Trace:
    rs = [(10_000 + i * 1000, 10_800 + i * 1000, n) for i, n in enumerate(names)]
    return make_trace(ranges=rs, ops=[(10_050, 10_100, None, 7)], meta=meta or {"path": "run.sqlite"})


def test_a_name_matching_nothing_lists_the_keys_most_frequent_first():
    trace = _counted(["b", "a", "ProfilerStep#1", "a", "c", "ProfilerStep#2", "c", "a", "c"])
    with pytest.raises(NoActivityError) as err:
        R.select_ranges(trace, "zzz")
    assert str(err.value) == (
        "run.sqlite: no range matches 'zzz'; ranges in this trace: 'a', 'c', 'ProfilerStep#*', 'b'"
    )


def test_a_name_matching_nothing_lists_fifteen_keys_at_most():
    names = [f"r{i:02d}" for i in range(17)]
    with pytest.raises(NoActivityError) as err:
        R.select_ranges(_counted(names), "re:^zzz")
    assert str(err.value).endswith("ranges in this trace: " + ", ".join(repr(n) for n in names[:15]))


def test_a_name_on_a_trace_without_ranges_is_refused_with_the_way_out():
    trace = make_trace(ops=[(0, 10, None, 7)], meta={"path": "run.sqlite"})
    with pytest.raises(NoActivityError) as err:
        R.select_ranges(trace, "iteration")
    assert str(err.value) == (
        "run.sqlite: no range named 'iteration': the trace holds no NVTX ranges or profiler annotations "
        "(leave out --range to analyze the whole trace, or split it with --split-idle MS)"
    )


def test_range_and_split_idle_together_are_refused():
    with pytest.raises(TracekitError) as err:
        R.select_ranges(_counted(["a"]), "a", split_idle_ms=1.0)
    assert str(err.value) == "run.sqlite: --range and --split-idle exclude each other: use one of them"


def test_a_real_range_named_like_a_synthetic_window_is_taken_as_a_range():
    for name in ("window", "idle>1ms"):
        choice = R.select_ranges(_counted([name, name, "other"]), name)
        assert spans(choice.frame) == [(10_000, 10_800), (11_000, 11_800)]
        assert (choice.name, choice.how, choice.synthetic) == (name, "requested with --range", False)


# ------------------------------------------------------------------------------------ format default


def test_a_format_default_range_is_taken_with_its_reason():
    names = ["model_run", "x", "x", "model_run", "x"]
    meta = {"path": "run.json", "default_range": "model_run", "default_range_reason": "ONNX Runtime runs"}
    choice = R.select_ranges(_counted(names, meta), None)
    assert choice.name == "model_run"
    assert spans(choice.frame) == [(10_000, 10_800), (13_000, 13_800)]
    assert choice.how == "ONNX Runtime runs; choose another with --range"
    meta = {"path": "run.json", "default_range": "model_run"}
    assert (
        R.select_ranges(_counted(names, meta), None).how == "the format default; choose another with --range"
    )
    # asked for by name, another range is taken; declared but absent, the default rules apply
    assert R.select_ranges(_counted(names, meta), "x").frame.height == 3
    meta = {"path": "run.json", "default_range": "absent"}
    assert R.select_ranges(_counted(names, meta), None).name == "x"


def test_profiler_steps_say_the_engine_steps_inside_them():
    vllm = "execute_context_0(0)_generation_1(1)"
    ranges = [(0, 1000, "ProfilerStep#1"), (100, 900, vllm, 1), (2000, 3000, "ProfilerStep#2")]
    choice = R.select_ranges(make_trace(ranges=ranges, ops=[(200, 300, None, 7)]), None)
    assert choice.name == "ProfilerStep#*"
    assert spans(choice.frame) == [(0, 1000), (2000, 3000)]
    assert choice.how == (
        f"torch.profiler steps (no 'iteration' range); also seen: 1 vLLM step range ({vllm!r}); "
        "choose another with --range"
    )
    ranges.append((2100, 2900, vllm, 1))
    choice = R.select_ranges(make_trace(ranges=ranges, ops=[(200, 300, None, 7)]), None)
    assert choice.how == (
        f"torch.profiler steps (no 'iteration' range); also seen: 2 vLLM step ranges ({vllm!r}); "
        "choose another with --range"
    )
    sglang = "step[DECODE bs=1]"
    ranges[-1] = (2100, 2900, sglang, 1)
    choice = R.select_ranges(make_trace(ranges=ranges, ops=[(200, 300, None, 7)]), None)
    assert choice.how == (
        f"torch.profiler steps (no 'iteration' range); also seen: 2 SGLang/vLLM step ranges ({vllm!r}, "
        f"{sglang!r}); choose another with --range"
    )
    plain = [(0, 1000, "ProfilerStep#1"), (2000, 3000, "ProfilerStep#2")]
    choice = R.select_ranges(make_trace(ranges=plain, ops=[(200, 300, None, 7)]), None)
    assert choice.how == "torch.profiler steps (no 'iteration' range); choose another with --range"


# --------------------------------------------------------------------------- synthetic windows, said


def _windows_trace(devices=(0, 0), ranges=()) -> Trace:
    ops = [(1000, 2000, None, 7, devices[0]), (5_000_000, 5_000_500, None, 7, devices[1])]
    return make_trace(ranges=ranges, ops=ops)


@pytest.mark.parametrize(
    ("devices", "where", "device"),
    [
        ((0, 0), "device 0", 0),
        ((3, 3), "device 3", 3),
        ((-1, -1), "CPU operators", -1),
        ((0, 1), "all 2 devices together", None),
        ((None, None), "device not recorded", None),
        ((2, None), "device not recorded", None),  # one device recorded, another op's not
    ],
)
def test_synthetic_windows_say_where_they_were_cut(devices, where, device):
    trace = _windows_trace(devices)
    choice = R.select_ranges(trace, None)
    assert choice.how == (
        f"no ranges in the trace: one window over the whole trace ({where}, first op launch to last op end); "
        "split it into iterations with --split-idle MS"
    )
    assert choice.frame["device"].to_list() == [device]
    assert (choice.name, choice.synthetic, choice.warnings) == ("window", True, [])
    assert choice.frame.rows() == [(0, 1000, 5_000_500, None, None, "window", device, 1000, 5_000_500)]
    assert choice.frame.schema == pl.Schema(R.RANGE_COLUMNS)
    again = R.select_ranges(trace, "window")
    assert again.how == (
        f"requested with --range: one window over the whole trace ({where}, first op launch to last op end)"
    )
    assert again.warnings == [] and again.synthetic
    split = R.select_ranges(trace, None, split_idle_ms=2.5)
    idle = (
        "the CPU operators were" if device == -1 else f"the GPU ({where}) was"
    )  # not "the GPU (CPU operators)"
    what = f"2 iterations cut where {idle} idle longer than 2.5 ms"
    assert (split.name, split.how) == ("idle>2.5ms", f"--split-idle 2.5: {what}")
    assert split.frame["device"].to_list() == [device, device]
    assert R.select_ranges(trace, "idle>2.5ms").how == f"requested with --range: {what}"


def test_split_idle_says_the_host_ranges_it_does_not_use():
    ranges = [(0, 10_000, "iteration"), (20_000, 30_000, "iteration"), (0, 10, "k", 0, "gpu")]
    trace = _windows_trace(ranges=ranges)
    choice = R.select_ranges(trace, None, split_idle_ms=1)
    assert choice.how == (
        "--split-idle 1: 2 iterations cut where the GPU (device 0) was idle longer than 1 ms "
        "(the trace's 2 ranges are not used in this mode)"
    )
    assert R.select_ranges(trace, "idle>1ms").how == (
        "requested with --range: 2 iterations cut where the GPU (device 0) was idle longer than 1 ms"
    )


def test_ranges_are_not_synthetic():
    choice = R.select_ranges(_counted(["a", "a"]), None)
    assert choice.synthetic is False
    assert choice.frame.select("device", "gpu_start", "gpu_end").null_count().row(0) == (2, 2, 2)
    assert choice.frame.schema == pl.Schema(R.RANGE_COLUMNS)


def test_a_window_launched_exactly_when_the_previous_one_ended_does_not_overlap_it():
    # op 2 is launched at 2000 ns, the instant op 1 (window 0's last) ends: no overlap, no warning
    trace = make_trace(
        api=[(500, 600, 1, "cudaLaunchKernel"), (2000, 2100, 2, "cudaLaunchKernel")],
        ops=[(1000, 2000, 1, 7), (5_000_000, 5_000_100, 2, 7)],
    )
    choice = R.select_ranges(trace, None, split_idle_ms=1.0)
    assert spans(choice.frame) == [(500, 2000), (2000, 5_000_100)]
    assert choice.warnings == []


def test_ranges_starting_together_in_two_processes_are_in_end_order():
    ranges = [(0, 1000, "iteration", 0, None, 1, 1), (0, 500, "iteration", 0, None, 1, 2)]
    choice = R.select_ranges(make_trace(ranges=ranges, range_fields=THREADED), None)
    assert choice.frame.select("iteration", "range_start", "range_end", "pid").rows() == [
        (0, 0, 500, 2),
        (1, 0, 1000, 1),
    ]
    assert choice.warnings == [
        "the 2 'iteration' ranges come from 2 processes (pids 1, 2): they are analyzed as one series of "
        "iterations, each holding the work its own process launched"
    ]


def test_a_bad_split_idle_is_refused_naming_the_file():
    with pytest.raises(TracekitError) as err:
        R.select_ranges(_counted(["a", "a"]), None, split_idle_ms=-1.0)
    assert str(err.value) == "run.sqlite: --split-idle must be a number of ms >= 0 and <= 1e+12, not -1.0"


def test_a_thread_that_runs_its_own_instances_too_keeps_the_held_ones():
    """A thread pool: thread 2 runs an instance of its own (2000-3000) besides one that thread 1's long one
    holds in time (100-900): its instances are iterations running at once, both kept; a worker thread whose
    every instance lies inside another thread's (thread 3) is nested, left out (nvFuser's workers)."""
    ranges = [
        (0, 1000, "iteration", 0, None, 1, 1),
        (100, 900, "iteration", 0, None, 2, 1),
        (2000, 3000, "iteration", 0, None, 2, 1),
        (200, 300, "iteration", 0, None, 3, 1),
    ]
    choice = R.select_ranges(make_trace(ranges=ranges, range_fields=THREADED), None)
    assert spans(choice.frame) == [(0, 1000), (100, 900), (2000, 3000)]
    assert choice.warnings[0] == (
        "left out 1 of 4 'iteration' ranges: each lies inside another range of that name in the same process "
        "(the outermost in time are the iterations; 1 of them on threads with no kept instance)"
    )
    # one thread nesting its own: left out, whatever the other threads do
    nested = [(0, 1000, "iteration", 0, None, 1, 1), (100, 900, "iteration", 1, None, 1, 1)]
    assert spans(R.select_ranges(make_trace(ranges=nested, range_fields=THREADED), None).frame) == [(0, 1000)]
