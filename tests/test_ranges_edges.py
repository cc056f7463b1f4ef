"""Range selection (tracekit.analyzers.ranges) at the edges the mutation run of issue 33 found unchecked.

Every trace here is hand-built (synthetic, not a measurement); each test asserts the exact frame, name, line or
error a user sees, so that a changed comparison, column or word in ranges.py fails at least one of them.
"""

from __future__ import annotations

import polars as pl
import pytest

from tests.builders import device_trace as make_trace
from tests.builders import spans
from tracekit.analyzers import ranges as R
from tracekit.errors import TracekitError
from tracekit.model import Trace


def _named(names: list[str], gap: int = 1000, length: int = 800) -> Trace:
    """One top-level range per name, back to back from 10 us, each with one kernel inside (no API calls)."""
    rs = [(10_000 + i * gap, 10_000 + i * gap + length, n) for i, n in enumerate(names)]
    ops = [(10_000 + i * gap + 50, 10_000 + i * gap + 550, None, 7) for i in range(len(names))]
    return make_trace(ranges=rs, ops=ops, meta={"path": "run.sqlite"})


# ------------------------------------------------------------------------------------- --range patterns


def test_a_bad_regex_names_the_file():
    with pytest.raises(TracekitError) as err:
        R.select_ranges(_named(["a", "b"]), "re:(")
    assert err.value.path == "run.sqlite"
    assert str(err.value).startswith("run.sqlite: --range 're:(': bad regular expression (")


def test_a_glob_may_match_the_name_but_not_its_key():
    # 'ProfilerStep#1?' matches the names ProfilerStep#10..#19, not their key 'ProfilerStep#*'
    names = [f"ProfilerStep#{i}" for i in (9, 10, 11, 20)]
    choice = R.select_ranges(_named(names), "ProfilerStep#1?")
    assert choice.frame["name"].to_list() == ["ProfilerStep#10", "ProfilerStep#11"]
    assert choice.how == (
        "requested with --range (glob: 2 ranges of 2 names: 'ProfilerStep#10', 'ProfilerStep#11')"
    )


def test_a_regex_may_match_the_key_but_not_the_name():
    # emit_nvtx names carry per-call suffixes; the key drops them, so an anchored regex matches the key only
    names = [
        "aten::mul, seq = 3, op_id = 7",
        "aten::add, seq = 4, op_id = 8",
        "aten::mul, seq = 5, op_id = 9",
    ]
    choice = R.select_ranges(_named(names), "re:^aten::mul$")
    assert choice.frame["name"].to_list() == [names[0], names[2]]
    assert choice.frame["range_start"].to_list() == [10_000, 12_000]
    assert choice.how == (
        "requested with --range (regex: 2 ranges of 2 names: 'aten::mul, seq = 3, op_id = 7', "
        "'aten::mul, seq = 5, op_id = 9')"
    )


# ------------------------------------------------------------------------------ serving-engine steps

VLLM = "execute_context_0(0)_generation_1(1)"
SGLANG = "step[DECODE bs=1]"
TRTLLM = "[Executor] _forward_step 9: 0 ctx reqs, 1 gen reqs"


def test_engine_steps_of_other_engines_are_said_nested_and_outside():
    # three vLLM steps; an SGLang step inside the first (held), an SGLang and a TensorRT-LLM step outside
    ranges = [
        (10_000, 10_800, VLLM),
        (11_000, 11_800, VLLM),
        (12_000, 12_800, VLLM),
        (10_100, 10_200, SGLANG, 1),
        (20_000, 20_100, SGLANG),
        (21_000, 21_100, TRTLLM),
    ]
    choice = R.select_ranges(make_trace(ranges=ranges, ops=[(10_150, 10_160, None, 7)]), None)
    assert spans(choice.frame) == [(10_000, 10_800), (11_000, 11_800), (12_000, 12_800)]
    assert choice.name == "re:" + R.ENGINE_STEPS["vLLM"]
    assert choice.how == (
        "vLLM serving-engine steps (3 ranges of 1 names); also seen: "
        f"1 SGLang step range nested inside them ({SGLANG!r}); "
        f"2 SGLang/TensorRT-LLM step ranges outside them ({TRTLLM!r}, {SGLANG!r}); choose another with --range"
    )


def test_engines_tied_on_step_count_take_the_first_by_name():
    # two SGLang and two vLLM steps, vLLM's first: 'SGLang' sorts before 'vLLM'
    ranges = [
        (10_000, 10_800, VLLM),
        (11_000, 11_800, SGLANG),
        (12_000, 12_800, VLLM),
        (13_000, 13_800, SGLANG),
    ]
    choice = R.select_ranges(make_trace(ranges=ranges, ops=[(10_150, 10_160, None, 7)]), None)
    assert spans(choice.frame) == [(11_000, 11_800), (13_000, 13_800)]
    assert choice.name == "re:" + R.ENGINE_STEPS["SGLang"]
    assert choice.how == (
        f"SGLang serving-engine steps (2 ranges of 1 names); also seen: 2 vLLM step ranges outside them "
        f"({VLLM!r}); choose another with --range"
    )


# ------------------------------------------------------------------------- most frequent name, ties


def _tied(launch_at: str) -> Trace:
    """'A' (10-11 us, 30-31 us) and 'B' (20-21 us, 40-41 us), two top-level ranges each, A first; a launch
    call at the start of each B range ("start") or at its end ("end"), none in A; "both": those at the start
    of each B range and one at the start of the first A range."""
    ranges = [(10_000, 11_000, "A"), (20_000, 21_000, "B"), (30_000, 31_000, "A"), (40_000, 41_000, "B")]
    at = {"start": 0, "end": 1000, "both": 0}[launch_at]
    starts = [20_000 + at, 40_000 + at] + ([10_000] if launch_at == "both" else [])
    api = [(t, t + 5, i + 1, "cudaLaunchKernel") for i, t in enumerate(starts)]
    ops = [(t + 100, t + 200, i + 1, 7) for i, t in enumerate(starts)]
    return make_trace(ranges=ranges, api=api, ops=ops)


def test_a_tie_goes_to_the_name_whose_ranges_hold_more_launch_calls():
    choice = R.select_ranges(_tied("both"), None)
    assert choice.name == "B"
    assert spans(choice.frame) == [(20_000, 21_000), (40_000, 41_000)]
    assert choice.how == (
        "most frequent top-level range (2 of them); tied at 2 with 'A' (picked the most launch calls inside); "
        "choose another with --range"
    )


def test_a_name_whose_ranges_hold_no_launch_call_is_passed_over():
    # A ties with B, but only B's ranges launch anything: A is no iteration of the work
    choice = R.select_ranges(_tied("start"), None)
    assert choice.name == "B"
    assert spans(choice.frame) == [(20_000, 21_000), (40_000, 41_000)]
    assert choice.how == (
        "most frequent top-level range (2 of them, holding launch calls); passed over for holding no launch "
        "call: 'A' (2 ranges); choose another with --range"
    )


def test_a_more_frequent_name_without_launches_loses_to_a_rarer_one_with_them():
    # nvFuser's own instrumentation: many short ranges around host code, one range around the kernel launches
    ranges = [(10_000 + i * 1000, 10_500 + i * 1000, "replay") for i in range(4)]
    ranges += [(20_000, 30_000, "runFusion"), (40_000, 40_500, "clear")]
    api = [(21_000, 21_100, 1, "cudaLaunchKernel"), (22_000, 22_100, 2, "cuLaunchKernelEx")]
    ops = [(21_500, 23_000, 1, 7), (23_000, 24_000, 2, 7)]
    choice = R.select_ranges(make_trace(ranges=ranges, api=api, ops=ops), None)
    assert choice.name == "runFusion"
    assert spans(choice.frame) == [(20_000, 30_000)]
    assert choice.how == (
        "most frequent top-level range (1 of them, holding launch calls); passed over for holding no launch "
        "call: 'replay' (4 ranges), 'clear' (1 range); choose another with --range"
    )


def test_a_launch_of_another_process_is_not_inside_a_range():
    # process 2's launch falls in the time of process 1's 'A' range: it does not count for it
    ranges = [(10_000, 11_000, "A", 0, None, 1), (20_000, 21_000, "B", 0, None, 1)]
    ranges += [(12_000, 13_000, "A", 0, None, 1)]
    api = [(10_100, 10_200, 1, "cudaLaunchKernel", 2), (20_100, 20_200, 2, "cudaLaunchKernel", 1)]
    ops = [(10_300, 10_400, 1, 7, 0, 2), (20_300, 20_400, 2, 7, 0, 1)]
    trace = make_trace(
        ranges=ranges,
        api=api,
        ops=ops,
        range_fields=("start", "end", "name", "depth", "domain", "pid"),
        api_fields=("start", "end", "correlation", "name", "pid"),
        op_fields=("start", "end", "correlation", "stream", "device", "pid"),
    )
    counts = R._launch_counts(
        R._launch_calls(trace), trace.ranges.with_columns(key=R.range_key(pl.col("name")))
    )
    assert dict(counts.sort("key").iter_rows()) == {"A": 0, "B": 1}


@pytest.mark.parametrize("requested", [None, "iteration"])
def test_ranges_of_a_process_that_launches_nothing_are_no_iterations(requested):
    # process 1 annotates its steps and launches the kernels; process 2 (a helper, a data loader) annotates
    # steps of its own name alike, overlapping them, and launches nothing: its ranges would add iterations of
    # 0 GPU busy. Left out, said so, by default and when the name is asked for; a range without a process stays
    fields = {
        "range_fields": ("start", "end", "name", "depth", "domain", "pid"),
        "api_fields": ("start", "end", "correlation", "name", "pid"),
        "op_fields": ("start", "end", "correlation", "stream", "device", "pid"),
    }
    ranges = [(10_000 * k, 10_000 * k + 5_000, "iteration", 0, None, 1) for k in (1, 2)]
    ranges += [(10_000 * k + 100, 10_000 * k + 4_000, "iteration", 0, None, 2) for k in (1, 2)]
    ranges += [(50_000, 55_000, "iteration", 0, None, None)]
    api = [(10_000 * k + 200, 10_000 * k + 300, k, "cudaLaunchKernel", 1) for k in (1, 2)]
    ops = [(10_000 * k + 400, 10_000 * k + 900, k, 7, 0, 1) for k in (1, 2)]
    choice = R.select_ranges(make_trace(ranges=ranges, api=api, ops=ops, **fields), requested)
    assert spans(choice.frame) == [(10_000, 15_000), (20_000, 25_000), (50_000, 55_000)]
    assert choice.warnings[0] == (
        "left out 2 'iteration' ranges of process 2, which launch no device work inside them (another "
        "process's ranges of that name hold its launches: those are the iterations)"
    )
    # no process's ranges hold a launch (a CPU-only trace): all are kept, as before
    cpu_only = make_trace(ranges=ranges, **fields)
    assert len(R.select_ranges(cpu_only, requested).frame) == 5
    # both processes launch (two ranks in one report): all are kept
    api2 = api + [(10_000 * k + 150, 10_000 * k + 160, 10 + k, "cudaLaunchKernel", 2) for k in (1, 2)]
    both = R.select_ranges(make_trace(ranges=ranges, api=api2, ops=ops, **fields), requested)
    assert len(both.frame) == 5 and not any("launch no device work" in w for w in both.warnings)


def test_two_processes_that_launch_nothing_are_both_named():
    fields = {
        "range_fields": ("start", "end", "name", "depth", "domain", "pid"),
        "api_fields": ("start", "end", "correlation", "name", "pid"),
    }
    ranges = [(10_000, 15_000, "step", 0, None, pid) for pid in (1, 2, 3)]
    api = [(10_200, 10_300, 1, "cudaLaunchKernel", 1)]
    choice = R.select_ranges(make_trace(ranges=ranges, api=api, **fields), "step")
    assert len(choice.frame) == 1
    assert choice.warnings[0].startswith("left out 2 'step' ranges of processes 2, 3, which launch no device")


def test_a_range_without_a_pid_holds_no_launch():
    ranges = [(10_000, 12_000, "nopid", 0, None, None), (30_000, 31_000, "ok", 0, None, 1)]
    api = [(t, t + 5, i + 1, "cudaLaunchKernel", 1) for i, t in enumerate((11_000, 30_500))]
    trace = make_trace(
        ranges=ranges,
        api=api,
        range_fields=("start", "end", "name", "depth", "domain", "pid"),
        api_fields=("start", "end", "correlation", "name", "pid"),
    )
    counts = R._launch_counts(
        R._launch_calls(trace), trace.ranges.with_columns(key=R.range_key(pl.col("name")))
    )
    assert dict(counts.sort("key").iter_rows()) == {"nopid": 0, "ok": 1}


def test_a_launch_at_a_range_end_is_not_inside_it():
    # the launches sit at the ends of B's ranges: no range holds one, so no name is an iteration of the work
    trace = _tied("end")
    counts = R._launch_counts(
        R._launch_calls(trace), trace.ranges.with_columns(key=R.range_key(pl.col("name")))
    )
    assert dict(counts.sort("key").iter_rows()) == {"A": 0, "B": 0}
    choice = R.select_ranges(trace, None)
    assert choice.name == "window"
    assert spans(choice.frame) == [(21_000, 41_200)]  # first launch to last op end
    assert choice.how == (
        "no iteration ranges: no top-level range holds a launch call of the trace's device work: "
        "'A' (2 ranges), 'B' (2 ranges): one window over the whole trace (device 0, first op launch to last op "
        "end); choose ranges with --range or split the trace with --split-idle MS"
    )


# ------------------------------------------------------------------------ PyTorch operator ranges (rule 4)


def _emit_nvtx(scope: str | None = None) -> Trace:
    """A trace as ``emit_nvtx`` writes it: top-level operator ranges ``aten::mul`` (3, each launching one
    kernel), ``aten::to`` (1) and an FSDP hook ``FSDP::pre_forward (layer.0)`` (1), all with its suffixes;
    ``scope``: a user's ``record_function`` name around all of them (``step, op_id = 1``)."""
    names = ["aten::mul, seq = 3, op_id = 11", "aten::to, op_id = 12", "aten::mul, seq = 4, op_id = 13"]
    names += ["FSDP::pre_forward (layer.0), op_id = 14", "aten::mul, seq = 5, op_id = 15"]
    depth = 0 if scope is None else 1
    ranges = [(10_000 + 1000 * i, 10_800 + 1000 * i, n, depth) for i, n in enumerate(names)]
    if scope is not None:
        ranges.insert(0, (9_000, 16_000, f"{scope}, op_id = 1", 0))
    launches = [10_100, 12_100, 14_100]  # one in each aten::mul
    api = [(t, t + 5, i + 1, "cudaLaunchKernel") for i, t in enumerate(launches)]
    ops = [(t + 100, t + 400, i + 1, 7) for i, t in enumerate(launches)]
    return make_trace(ranges=ranges, api=api, ops=ops)


def test_operator_ranges_are_no_iterations_the_trace_is_one_window():
    choice = R.select_ranges(_emit_nvtx(), None)
    assert choice.name == "window"
    assert spans(choice.frame) == [(10_100, 14_500)]
    assert choice.how == (
        "no iteration ranges: the trace's ranges are all PyTorch operator and collective ranges (one call "
        "each, no iteration): 'aten::mul' (3 ranges), 'aten::to' (1 range), "
        "'FSDP::pre_forward (layer.0)' (1 range): one window over the whole trace (device 0, first op launch "
        "to last op end); choose ranges with --range or split the trace with --split-idle MS"
    )


def test_one_operator_range_at_the_top_level_is_said():
    ranges = [(10_000, 11_000, "step", 0), (12_000, 12_500, "aten::copy_, op_id = 3", 0)]
    trace = make_trace(
        ranges=ranges, api=[(10_100, 10_105, 1, "cudaLaunchKernel")], ops=[(10_200, 10_300, 1, 7)]
    )
    assert R.select_ranges(trace, None).how == (
        "most frequent top-level range (1 of them); passed over PyTorch operator and collective ranges (one call "
        "each, no iteration): 'aten::copy_' (1 range); choose another with --range"
    )


def test_a_users_scope_under_emit_nvtx_is_the_iteration():
    # 'step, op_id = 1' is not namespaced: the user's own record_function, a candidate; the operators inside
    # it were never top-level, so they are not said
    choice = R.select_ranges(_emit_nvtx("step"), None)
    assert (choice.name, spans(choice.frame)) == ("step", [(9_000, 16_000)])
    assert choice.how == "most frequent top-level range (1 of them); choose another with --range"


def test_operator_ranges_beside_a_candidate_are_said_passed_over():
    trace = _emit_nvtx()
    extra = make_trace(
        ranges=[(20_000, 21_000, "decode", 0), (22_000, 22_500, "aten::to, op_id = 99", 0)],
        api=[(20_100, 20_105, 9, "cudaLaunchKernel")],
    )
    both = Trace(
        ops=trace.ops, api=pl.concat([trace.api, extra.api]), ranges=pl.concat([trace.ranges, extra.ranges])
    )
    choice = R.select_ranges(both, None)
    assert (choice.name, spans(choice.frame)) == ("decode", [(20_000, 21_000)])
    assert choice.how == (
        "most frequent top-level range (1 of them); passed over PyTorch operator and collective ranges (one "
        "call each, no iteration): 'aten::mul' (3 ranges), 'aten::to' (2 ranges), "
        "'FSDP::pre_forward (layer.0)' (1 range); choose another with --range"
    )


@pytest.mark.parametrize(
    ("name", "operator"),
    [
        ("aten::mul, seq = 3, op_id = 7", True),
        ("aten::empty", True),  # older emit_nvtx: no suffix when the op has no sequence number
        ("c10d::allreduce_, op_id = 4", True),
        ("_c10d_functional::all_gather_into_tensor", True),
        ("FSDP::post_forward (encoder.block.0), op_id = 317400", True),
        ("autograd::engine::evaluate_function: MulBackward0, op_id = 9", True),
        ("detach_, op_id = 317134", False),  # not namespaced: indistinguishable from a user scope
        ("step, op_id = 5", False),
        ("KernelExecutor::runFusion", False),  # a library's own range, not opened by emit_nvtx
        ("FSDP::pre_forward", False),
        ("nccl:all_reduce", True),  # ProcessGroupNCCL's range around one collective
        ("nccl:send 0->1", True),
        ("gloo:broadcast", True),
        ("nccl_step", False),
        ("NCCL:all_reduce", False),
        ("ncclAllReduce", True),  # NCCL's own NVTX range around the API call
        ("ncclGroupEnd", True),
        ("ncclx", False),
        ("xaten::mul, seq = 1", True),  # namespaced, with the suffix
        ("xaten::mul", False),
        ("aten:mul", False),
        ("my aten::mul", False),
    ],
)
def test_which_names_are_operator_ranges(name: str, operator: bool):
    frame = pl.DataFrame({"name": [name]}).with_columns(key=R.range_key(pl.col("name")))
    assert frame.select(R.operator_ranges(pl.col("name"), pl.col("key"))).item() is operator


@pytest.mark.parametrize(
    ("domain", "operator"), [("NCCL", True), ("RCCL", True), ("default", False), (None, False)]
)
def test_a_communication_librarys_domain_holds_no_iteration(domain: str | None, operator: bool):
    frame = pl.DataFrame({"name": ["AllReduce"], "domain": [domain]}, schema_overrides={"domain": pl.String})
    frame = frame.with_columns(key=R.range_key(pl.col("name")))
    got = frame.select(R.operator_ranges(pl.col("name"), pl.col("key"), pl.col("domain"))).item()
    assert got is operator


def test_nccl_api_ranges_in_its_own_domain_do_not_outvote_the_step():
    # NCCL 2.19+ opens a range around each API call in its own domain: 4 of them, 2 'step' ranges
    ranges = [(10_000, 20_000, "step", 0, None), (30_000, 40_000, "step", 0, None)]
    # named as no other rule knows them: the domain alone says they are NCCL's
    ranges += [(t, t + 500, "AllReduce", 0, "NCCL") for t in (21_000, 23_000, 25_000, 27_000)]
    api = [(10_100, 10_105, 1, "cudaLaunchKernel"), (30_100, 30_105, 2, "cudaLaunchKernel")]
    api += [
        (t + 100, t + 105, 3 + i, "cudaLaunchKernel") for i, t in enumerate((21_000, 23_000, 25_000, 27_000))
    ]
    trace = make_trace(ranges=ranges, api=api, range_fields=("start", "end", "name", "depth", "domain"))
    choice = R.select_ranges(trace, None)
    assert (choice.name, spans(choice.frame)) == ("step", [(10_000, 20_000), (30_000, 40_000)])
    assert choice.how == (
        "most frequent top-level range (2 of them); passed over PyTorch operator and collective ranges (one call "
        "each, no iteration): 'AllReduce' (4 ranges); choose another with --range"
    )


def test_a_cpu_only_emit_nvtx_trace_keeps_its_operator_ranges():
    # no device op to lay a window over: the operator ranges are all there is to measure (as before)
    names = ["aten::mul, seq = 1, op_id = 2", "aten::add", "aten::mul, seq = 2, op_id = 4"]
    trace = make_trace(ranges=[(10_000 + 2000 * i, 11_000 + 2000 * i, n) for i, n in enumerate(names)])
    choice = R.select_ranges(trace, None)
    assert (choice.name, spans(choice.frame)) == ("aten::mul", [(10_000, 11_000), (14_000, 15_000)])
    assert choice.how == "most frequent top-level range (2 of them); choose another with --range"


def test_launch_calls_without_device_ops_keep_the_ranges():
    # launches recorded, their kernels not (activity buffers lost): no window to fall back to
    trace = make_trace(
        ranges=[(10_000, 11_000, "host"), (12_000, 13_000, "host")],
        api=[(20_000, 20_010, 1, "cudaLaunchKernel")],
    )
    choice = R.select_ranges(trace, None)
    assert (choice.name, choice.frame.height) == ("host", 2)


def test_a_cpu_only_trace_keeps_its_most_frequent_range():
    # no launch call anywhere: rule 4 still takes the most frequent name (a CPU-only NVTX capture)
    choice = R.select_ranges(_named(["a", "b", "a"]), None)
    assert (choice.name, choice.how) == (
        "a",
        "most frequent top-level range (2 of them); choose another with --range",
    )


@pytest.mark.parametrize(
    ("count", "listed"),
    [
        (6, "'b', 'c', 'd', 'e', 'f'"),  # five others: all listed, no "and 0 more"
        (7, "'b', 'c', 'd', 'e', 'f' and 1 more"),
        (8, "'b', 'c', 'd', 'e', 'f' and 2 more"),
    ],
)
def test_tied_names_are_listed_five_at_most(count, listed):
    names = [chr(ord("a") + i) for i in range(count)]
    choice = R.select_ranges(_named(names), None)
    assert choice.name == "a"
    assert choice.how == (
        f"most frequent top-level range (1 of them); tied at 1 with {listed} (picked the earliest); "
        "choose another with --range"
    )


# ------------------------------------------------------------------------------------ --split-idle


@pytest.mark.parametrize(("bad", "shown"), [("1", "'1'"), (True, "True"), (None, "None"), ([1.0], "[1.0]")])
def test_split_idle_that_is_not_a_number_is_refused_naming_the_file(bad, shown):
    with pytest.raises(TracekitError) as err:
        R.check_split_idle(bad, "run.sqlite")
    assert str(err.value) == f"run.sqlite: --split-idle must be a finite number of ms, not {shown}"


def test_split_idle_out_of_bounds_names_the_file_and_the_option():
    with pytest.raises(TracekitError) as err:
        R.check_split_idle(-0.5, "run.sqlite", option="split_idle_ms")
    assert str(err.value) == "run.sqlite: split_idle_ms must be a number of ms >= 0 and <= 1e+12, not -0.5"
    R.check_split_idle(0, "run.sqlite")  # the bounds are accepted
    R.check_split_idle(R.MAX_SPLIT_IDLE_MS, "run.sqlite")


def test_a_synthetic_name_with_a_bad_threshold_is_refused_naming_the_file():
    ops = [(1000, 2000, None, 7)]
    with pytest.raises(TracekitError) as err:
        R.select_ranges(make_trace(ops=ops, meta={"path": "run.sqlite"}), "idle>1e13ms")
    assert (
        str(err.value)
        == "run.sqlite: --split-idle must be a number of ms >= 0 and <= 1e+12, not 10000000000000.0"
    )


# ------------------------------------------------------------------------------------------ per device


def test_devices_are_in_order_with_the_unrecorded_last():
    trace = make_trace(ops=[(100, 200, None, 7, 1), (300, 400, None, 7, None), (500, 600, None, 7, 0)])
    assert R.devices(trace) == [0, 1, None]
    assert list(R.split_by_device(trace)) == [0, 1, None]
    assert R.split_by_device(trace)[None].ops["start"].to_list() == [300]


def test_a_device_keeps_the_ranges_of_the_processes_that_launched_its_work():
    # process 1 ran device 0, process 2 device 1; each annotated its own iterations
    ranges = [
        (0, 1000, "iteration", 0, "user", 1),
        (0, 1000, "iteration", 0, "user", 2),
        (50, 60, "x", 1, None, 2),
    ]
    ops = [(100, 200, None, 7, 0, 1), (300, 400, None, 7, 1, 2)]
    trace = make_trace(
        ranges=ranges,
        ops=ops,
        range_fields=("start", "end", "name", "depth", "domain", "pid"),
        op_fields=("start", "end", "correlation", "stream", "device", "pid"),
    )
    parts = R.split_by_device(trace)
    assert parts[0].ranges["pid"].to_list() == [1]
    assert parts[1].ranges["pid"].to_list() == [2, 2]
    assert parts[1].ranges["domain"].to_list() == ["user", None]


def test_a_device_whose_process_has_only_gpu_ranges_keeps_every_range():
    # process 2 (device 1) recorded only GPU-projected annotations: not iterations, so every range is kept
    ranges = [(0, 1000, "iteration", 0, "user", 1), (300, 400, "k", 0, "gpu", 2)]
    ops = [(100, 200, None, 7, 0, 1), (300, 400, None, 7, 1, 2)]
    trace = make_trace(
        ranges=ranges,
        ops=ops,
        range_fields=("start", "end", "name", "depth", "domain", "pid"),
        op_fields=("start", "end", "correlation", "stream", "device", "pid"),
    )
    parts = R.split_by_device(trace)
    assert parts[0].ranges["pid"].to_list() == [1]
    assert parts[1].ranges.equals(trace.ranges)
    assert R.select_ranges(parts[1], None).frame["range_start"].to_list() == [0]


def test_a_device_trace_carries_the_warnings_as_its_own_copy():
    trace = make_trace(ops=[(100, 200, None, 7, 0), (300, 400, None, 7, 1)], meta={"path": "run.sqlite"})
    trace.meta["warnings"] = ["reader: something"]
    parts = R.split_by_device(trace)
    assert parts[1].warnings == ["reader: something"]
    assert parts[1].meta["path"] == "run.sqlite" and parts[1].meta["device_id"] == 1
    parts[1].warnings.append("device 1 only")
    assert trace.warnings == ["reader: something"]


# --------------------------------------------------------------------------------- ranges never closed


def test_a_range_never_closed_is_no_iteration_and_is_said():
    # The model allows a null end ("never closed"); such a range used to become an iteration of latency 0.
    trace = make_trace(
        ranges=[(0, 1000, "step"), (1000, None, "step"), (2000, 3000, "step"), (2500, None, "other")],
        api=[(100, 150, 1, "cudaLaunchKernel"), (2100, 2150, 3, "cudaLaunchKernel")],
        ops=[(200, 400, 1, 7), (2200, 2400, 3, 7)],
    )
    choice = R.select_ranges(trace)
    assert spans(choice.frame) == [(0, 1000), (2000, 3000)]
    assert choice.name == "step"
    assert choice.warnings == [
        "left out 2 ranges without a start or an end time ('step', 'other'): such a range has no latency and is no "
        "iteration"
    ]
    assert spans(R.select_ranges(trace, "step").frame) == [(0, 1000), (2000, 3000)]


def test_a_range_without_a_start_is_left_out_too():
    """A null start (never opened) would otherwise sort first and hold every later range of its process."""
    trace = make_trace(
        ranges=[(None, 5000, "step"), (0, 1000, "step"), (2000, 3000, "step")],
        api=[(100, 150, 1, "cudaLaunchKernel"), (2100, 2150, 3, "cudaLaunchKernel")],
        ops=[(200, 400, 1, 7), (2200, 2400, 3, 7)],
    )
    choice = R.select_ranges(trace)
    assert spans(choice.frame) == [(0, 1000), (2000, 3000)]
    assert choice.warnings == [
        "left out 1 range without a start or an end time ('step'): such a range has no latency and is no iteration"
    ]


def test_only_unclosed_ranges_give_the_whole_trace_window_and_say_so():
    trace = make_trace(
        ranges=[(1000, None, "step")], api=[(1100, 1150, 2, "cudaLaunchKernel")], ops=[(1200, 1400, 2, 7)]
    )
    choice = R.select_ranges(trace)
    assert spans(choice.frame) == [(1100, 1400)]
    assert choice.warnings == [
        "left out 1 range without a start or an end time ('step'): such a range has no latency and is no iteration"
    ]


# ------------------------------------------------------------- one top-level range around repeated ones


def _benchmark(inner: list[tuple[int, int, str, int]], thread: int = 1) -> Trace:
    """One top-level 'benchmark' range [10, 100) us on thread 1 around ``inner`` ranges (start, end, name,
    launches inside, each launch at the range's start + 100 ns with its kernel 100 ns later) on ``thread``."""
    ranges = [(10_000, 100_000, "benchmark", 0, 1)]
    api, ops = [], []
    for start, end, name, launches in inner:
        ranges.append((start, end, name, 1, thread))
        for k in range(launches):
            t = start + 100 + 10 * k
            api.append((t, t + 5, len(api) + 1, "cudaLaunchKernel", 1))
            ops.append((t + 100, t + 105, len(ops) + 1, 7))
    return make_trace(
        ranges=ranges,
        api=api,
        ops=ops,
        range_fields=("start", "end", "name", "depth", "thread"),
        api_fields=("start", "end", "correlation", "name", "thread"),
    )


ONE = "most frequent top-level range (1 of them)"
AGAIN = "; choose another with --range"


def _hint(name: str, n: int) -> str:
    return (
        f"{ONE}; inside it {name!r} repeats {n} times (--range {name} takes those as the iterations){AGAIN}"
    )


def test_one_range_around_a_timed_loop_stays_the_choice_and_names_its_steps():
    # the one range stays the iteration (a 'forward' around its 'layer' ranges looks the same); the line says
    # how to take the steps
    steps = [(20_000 + 10_000 * i, 25_000 + 10_000 * i, "step", 2) for i in range(3)]
    choice = R.select_ranges(_benchmark([(12_000, 13_000, "setup", 1), *steps]), None)
    assert (choice.name, spans(choice.frame)) == ("benchmark", [(10_000, 100_000)])
    assert choice.how == _hint("step", 3)


def test_a_hinted_name_is_quoted_for_the_shell():
    steps = [(20_000 + 10_000 * i, 25_000 + 10_000 * i, "train step", 1) for i in range(2)]
    how = R.select_ranges(_benchmark(steps), None).how
    assert (
        "inside it 'train step' repeats 2 times (--range 'train step' takes those as the iterations)" in how
    )


def test_nothing_repeated_inside_keeps_the_one_range():
    choice = R.select_ranges(
        _benchmark([(20_000, 30_000, "warmup", 1), (40_000, 50_000, "measure", 1)]), None
    )
    assert (choice.name, spans(choice.frame)) == ("benchmark", [(10_000, 100_000)])
    assert choice.how == ONE + AGAIN


def test_a_repeated_inner_name_without_launches_is_no_step():
    # 'log' repeats but launches nothing; 'forward', which launches, is there once: no descent
    inner = [(20_000 + 5_000 * i, 21_000 + 5_000 * i, "log", 0) for i in range(4)] + [
        (50_000, 60_000, "forward", 3)
    ]
    choice = R.select_ranges(_benchmark(inner), None)
    assert (choice.name, choice.how) == ("benchmark", ONE + AGAIN)


def test_ranges_on_another_thread_are_not_inside():
    # thread 2's 'step' ranges fall in the benchmark's time, but on their own thread (top-level there), and
    # thread 1 launches: the launching thread's one range stays the choice, nothing of thread 2 is inside it
    trace = _benchmark([(20_000 + 10_000 * i, 25_000 + 10_000 * i, "step", 1) for i in range(3)], thread=2)
    trace = Trace(ops=trace.ops, api=trace.api, ranges=trace.ranges.with_columns(depth=pl.lit(0, pl.Int32)))
    choice = R.select_ranges(trace, None)
    assert (choice.name, spans(choice.frame)) == ("benchmark", [(10_000, 100_000)])
    assert choice.how == (
        "most frequent top-level range (1 of them, on the thread that launches the device work); choose "
        "another with --range"
    )


def test_inner_steps_tie_like_top_level_ones():
    inner = [
        (20_000 + 10_000 * i, 25_000 + 10_000 * i, "fwd" if i % 2 == 0 else "bwd", 1 + i % 2)
        for i in range(4)
    ]
    choice = R.select_ranges(_benchmark(inner), None)
    assert choice.how == _hint("bwd", 2)  # the tie broken as at the top level: more launch calls inside


def test_two_steps_are_enough_and_may_touch_the_enclosing_range():
    # the first step starts with the benchmark range, the last ends with it (same ns)
    steps = [(10_000, 50_000, "step", 1), (60_000, 100_000, "step", 1)]
    assert R.select_ranges(_benchmark(steps), None).how == _hint("step", 2)


def test_the_inner_names_holding_launches_are_named_over_more_frequent_ones():
    # 'log' x3 launches nothing; 'step' x2 holds one launch in all: the steps
    inner = [(20_000 + 5_000 * i, 21_000 + 5_000 * i, "log", 0) for i in range(3)]
    inner += [(50_000, 60_000, "step", 1), (70_000, 80_000, "step", 0)]
    assert R.select_ranges(_benchmark(inner), None).how == _hint("step", 2)


def test_repeated_inner_ranges_launching_nothing_are_not_named():
    # the launches are in the benchmark range but outside its 'log' ranges: the logs are no steps
    inner = [(20_000 + 5_000 * i, 21_000 + 5_000 * i, "log", 0) for i in range(3)]
    trace = _benchmark(inner)
    launch = make_trace(
        api=[(60_000, 60_005, 1, "cudaLaunchKernel", 1)],
        ops=[(60_100, 60_200, 1, 7)],
        api_fields=("start", "end", "correlation", "name", "thread"),
    )
    trace = Trace(ops=launch.ops, api=launch.api, ranges=trace.ranges)
    choice = R.select_ranges(trace, None)
    assert (choice.name, choice.how) == ("benchmark", ONE + AGAIN)


def test_without_launch_calls_the_repeated_inner_ranges_are_named_by_count():
    # a CPU-only capture (no launch call anywhere): counted by number alone
    trace = _benchmark([(20_000 + 5_000 * i, 21_000 + 5_000 * i, "step", 0) for i in range(3)])
    assert R.select_ranges(trace, None).how == _hint("step", 3)
