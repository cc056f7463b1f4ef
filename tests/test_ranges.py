"""Range selection (tracekit.analyzers.ranges) on hand-built traces: exact answers for every rule.

Every trace here is hand-built (synthetic, not a measurement); the serving-engine step names follow the
formats in the engines' sources (see the docstring of tracekit.analyzers.ranges). The end-to-end tests run
``analyze_iterations`` and ``tracekit analyze``, which use this selection.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import builders
from tracekit.analyzers import iterations
from tracekit.analyzers import ranges as R
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.errors import NoActivityError, TracekitError
from tracekit.model import Trace

US = 1000  # ns


def make_trace(ranges=(), api=(), ops=(), meta=None) -> Trace:
    """ranges: (start, end, name[, depth[, domain]]); api: (start, end, corr, name);
    ops: (start, end, corr, stream[, device]). Times in ns; one process (pid 1), one thread."""
    return builders.make_trace(
        ranges, api, ops, meta, op_fields=("start", "end", "correlation", "stream", "device")
    )


def analyze_with(monkeypatch, trace: Trace, range_name=None, split_idle_ms=None, **kw):
    """analyze_iterations with the range selection of analyzers/ranges.py (wired in)."""
    assert iterations.choose_ranges is R.choose_ranges
    return analyze_iterations(trace, range_name, split_idle_ms=split_idle_ms, **kw)


# Three forward passes on one GPU, no API calls and no ranges (a GPU-only trace, activities=[CUDA]).
# Pass 1: streams 7 and 8 overlap: busy [1000, 1500] + [1550, 2000] us = 950 us, inner gap 50 us.
# Pass 2: [5000, 5400] + [5500, 6000] = 900 us, inner gap 100 us.   Pass 3: [9000, 9800] = 800 us.
# Gaps between passes: 2000 -> 5000 and 6000 -> 9000 us (3 ms each).
GPU_ONLY_OPS = [
    (1000 * US, 1500 * US, None, 7),
    (1550 * US, 1700 * US, None, 8),
    (1600 * US, 2000 * US, None, 7),
    (5000 * US, 5400 * US, None, 7),
    (5500 * US, 6000 * US, None, 7),
    (9000 * US, 9800 * US, None, 7),
]


@functools.cache
def gpu_only() -> Trace:
    """The three forward passes above (built on first use, not at import: see benchmarks/mutation.py)."""
    return make_trace(ops=GPU_ONLY_OPS)


def windows(frame: pl.DataFrame) -> list[tuple[int, int]]:
    return list(zip(frame["range_start"].to_list(), frame["range_end"].to_list(), strict=True))


# ------------------------------------------------------------------------------ no ranges: whole trace


def test_gpu_only_trace_is_one_window():
    frame, name, how = R.choose_ranges(gpu_only(), None)
    assert windows(frame) == [(1000 * US, 9800 * US)]
    assert frame["iteration"].to_list() == [0]
    assert frame["device"].to_list() == [0]
    assert frame["name"].to_list() == ["window"]
    assert name == "window"
    assert how.startswith("no ranges in the trace: one window over the whole trace (device 0")
    assert "\n" not in how


def test_gpu_side_annotations_alone_are_named_not_called_no_ranges():
    """A trace whose only ranges are GPU-side annotations (Kineto's gpu_user_annotation, without the host
    ranges they project) is one window too, but the choice says it has them: "no ranges" was false."""
    trace = make_trace(ranges=[(1000 * US, 3000 * US, "ProfilerStep#1", 0, "gpu")], ops=GPU_ONLY_OPS)
    frame, name, how = R.choose_ranges(trace, None)
    assert name == "window" and frame.height == 1
    assert how.startswith(
        "no host ranges in the trace (its 1 GPU-side annotations, the projections of host ranges onto the GPU "
        "timeline, are not iterations: they span only their device work): one window over the whole trace"
    )


def test_gpu_only_trace_analyzes_as_one_window(monkeypatch):
    a = analyze_with(monkeypatch, gpu_only())
    it = a.iterations
    assert it.height == 1
    assert it["latency_ms"].to_list() == pytest.approx([8.8])
    assert it["gpu_busy_ms"].to_list() == pytest.approx([2.65])
    assert it["framework_overhead_ms"].to_list() == pytest.approx([6.15])
    assert it["kernels"].to_list() == [6]
    assert it["idle_gaps"].to_list() == [4]  # 50 us, 3 ms, 100 us, 3 ms; no leading or trailing gap
    assert it["launches"].to_list() == [None]  # no API calls in the trace
    assert a.gaps["duration_ns"].sort().to_list() == [50 * US, 100 * US, 3000 * US, 3000 * US]


@pytest.mark.parametrize(
    ("split_ms", "expected"),
    [
        (1.0, [(1000, 2000), (5000, 6000), (9000, 9800)]),
        # 100 us is not longer than 0.1 ms: no cut there (the rule is strictly longer than MS)
        (0.1, [(1000, 2000), (5000, 6000), (9000, 9800)]),
        (0.05, [(1000, 2000), (5000, 5400), (5500, 6000), (9000, 9800)]),
        (0.0, [(1000, 1500), (1550, 2000), (5000, 5400), (5500, 6000), (9000, 9800)]),
        # the 3 ms gaps are not longer than 3 ms: one iteration
        (3.0, [(1000, 9800)]),
    ],
)
def test_split_idle_cuts_at_gaps_longer_than_ms(split_ms, expected):
    frame, name, how = R.choose_ranges(gpu_only(), None, split_idle_ms=split_ms)
    assert windows(frame) == [(s * US, e * US) for s, e in expected]
    assert frame["iteration"].to_list() == list(range(len(expected)))
    assert name == f"idle>{split_ms:g}ms"
    assert how == (
        f"--split-idle {split_ms:g}: {len(expected)} iterations cut where the GPU (device 0) was idle longer "
        f"than {split_ms:g} ms"
    )


def test_split_idle_gives_n_iterations_end_to_end(monkeypatch):
    a = analyze_with(monkeypatch, gpu_only(), split_idle_ms=1.0)
    it = a.iterations
    assert a.range_name == "idle>1ms"
    assert it["latency_ms"].to_list() == pytest.approx([1.0, 1.0, 0.8])
    assert it["gpu_busy_ms"].to_list() == pytest.approx([0.95, 0.9, 0.8])
    assert it["framework_overhead_ms"].to_list() == pytest.approx([0.05, 0.1, 0.0])
    assert it["kernels"].to_list() == [3, 2, 1]
    assert it["idle_gaps"].to_list() == [1, 1, 0]
    assert it["synchronized"].all()
    assert it.height == 3
    # --skip works on automatic iterations as on ranges
    b = analyze_with(monkeypatch, gpu_only(), split_idle_ms=1.0, skip=1)
    assert b.iterations["index"].to_list() == [1, 2]


def test_no_ranges_with_launch_calls_opens_at_the_first_launch():
    # A CPU+CUDA trace without annotations: the window opens at the first launching call (900 us), the
    # analyzer's assignment time for op 1, not at the first kernel (1000 us).
    trace = make_trace(
        api=[(900 * US, 950 * US, 1, "cudaLaunchKernel"), (4900 * US, 4950 * US, 2, "cudaLaunchKernel")],
        ops=[(1000 * US, 2000 * US, 1, 7), (5000 * US, 5500 * US, 2, 7)],
    )
    frame, _, _ = R.choose_ranges(trace, None)
    assert windows(frame) == [(900 * US, 5500 * US)]
    frame, _, _ = R.choose_ranges(trace, None, split_idle_ms=1.0)
    assert windows(frame) == [(900 * US, 2000 * US), (4900 * US, 5500 * US)]


def test_split_idle_windows_overlap_when_the_host_runs_ahead(monkeypatch):
    # Op 2 was launched (1500 us) before op 1's GPU work ended (2000 us), then waited. The documented rule
    # (docs/design.md): each window runs from its first op's launch to its last op's end, so window 1 starts
    # at 1500 us, inside window 0, and its latency counts the wait; ops belong to the window their start
    # falls in (device spans never overlap). Before issue 30, window 0 was cut back to 1500 us and window 1
    # reported the steady-state period (3500 us) with an "unsynchronized" warning about ranges that do not
    # exist in this mode.
    trace = make_trace(
        api=[(900 * US, 950 * US, 1, "cudaLaunchKernel"), (1500 * US, 1550 * US, 2, "cudaLaunchKernel")],
        ops=[(1000 * US, 2000 * US, 1, 7), (5000 * US, 5500 * US, 2, 7)],
    )
    choice = R.select_ranges(trace, None, split_idle_ms=1.0)
    assert windows(choice.frame) == [(900 * US, 2000 * US), (1500 * US, 5500 * US)]
    assert choice.frame["gpu_start"].to_list() == [1000 * US, 5000 * US]
    assert choice.warnings == [
        "1 of 2 windows begin (first op's launch) before the previous window's device work ended: the host "
        "launched ahead of the GPU; each window's latency still runs from its first launch to its last op's "
        "end, so these latencies overlap"
    ]
    a = analyze_with(monkeypatch, trace, split_idle_ms=1.0)
    it = a.iterations
    assert it["kernels"].to_list() == [1, 1]
    assert it["window_start_ns"].to_list() == [900 * US, 1500 * US]
    assert it["window_end_ns"].to_list() == [2000 * US, 5500 * US]
    assert it["latency_ms"].to_list() == pytest.approx([1.1, 4.0])
    assert it["synchronized"].to_list() == [True, True]
    assert not any("unsynchronized" in w for w in a.warnings)


def test_zero_length_last_op_stays_inside_its_window():
    # The window ends at the last op's end (2000); ops are assigned by start in the device span, so the
    # zero-length op at 2000 is inside (before issue 30 the range was stretched to 2001 for the launch rule).
    trace = make_trace(ops=[(1000, 2000, None, 7), (2000, 2000, None, 7)])
    frame, _, _ = R.choose_ranges(trace, None)
    assert windows(frame) == [(1000, 2000)]
    assert iterations.assign_ops(trace, frame).height == 2


def test_no_ranges_and_no_ops_is_refused():
    with pytest.raises(NoActivityError, match="no ranges and no device activity"):
        R.choose_ranges(make_trace(), None)


def test_range_name_on_a_trace_without_ranges_is_refused():
    with pytest.raises(NoActivityError, match="holds no NVTX ranges.*--split-idle MS"):
        R.choose_ranges(gpu_only(), "iteration")


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (-1.0, "must be a number of ms >= 0 and <= 1e+12, not -1.0"),
        (float("nan"), "must be a finite number of ms, not nan"),
        (float("inf"), "must be a finite number of ms, not inf"),
        (1e40, "must be a number of ms >= 0 and <= 1e+12, not 1e+40"),
    ],
)
def test_bad_split_idle_values(bad, said):
    # issue 30: inf crashed (OverflowError), 1e40 gave a polars "integer too large", nan was told ">= 0"
    with pytest.raises(TracekitError, match="--split-idle " + said.replace("+", r"\+")) as err:
        R.choose_ranges(gpu_only(), None, split_idle_ms=bad)
    assert "\n" not in str(err.value)


def test_split_idle_and_range_exclude_each_other():
    with pytest.raises(TracekitError, match="--range and --split-idle exclude each other"):
        R.choose_ranges(gpu_only(), "iteration", split_idle_ms=1.0)


def test_split_idle_ignores_ranges():
    trace = make_trace(ranges=[(0, 10_000 * US, "iteration")], ops=GPU_ONLY_OPS)
    frame, name, _ = R.choose_ranges(trace, None, split_idle_ms=1.0)
    assert frame.height == 3 and name == "idle>1ms"


# ------------------------------------------------------------------------------------------ per device


@functools.cache
def two_gpus() -> Trace:
    """Two GPUs, one launch each (built on first use, not at import)."""
    return make_trace(
        api=[
            (100, 110, 1, "cudaLaunchKernel"),
            (120, 130, 2, "cudaLaunchKernel"),
            (140, 150, None, "cudaDeviceSynchronize"),
        ],
        ops=[(200, 400, 1, 7, 0), (300, 600, 2, 7, 1), (700, 800, None, 9, 1)],
    )


def test_two_devices_together_are_one_window_and_say_so():
    frame, _, how = R.choose_ranges(two_gpus(), None)
    assert windows(frame) == [(100, 800)]
    assert frame["device"].to_list() == [None]
    assert "all 2 devices together" in how


def test_split_by_device_gives_one_window_per_device(monkeypatch):
    parts = R.split_by_device(two_gpus())
    assert list(parts) == [0, 1]
    assert parts[0].api["correlation"].to_list() == [1, None]
    assert parts[1].api["correlation"].to_list() == [2, None]
    assert parts[1].meta["device_id"] == 1
    f0, _, how0 = R.choose_ranges(parts[0], None)
    f1, _, _ = R.choose_ranges(parts[1], None)
    assert windows(f0) == [(100, 400)] and f0["device"].to_list() == [0]
    # device 1: op 2 launched at 120; op 3 has no launching call: its own start
    assert windows(f1) == [(120, 800)] and f1["device"].to_list() == [1]
    assert "device 0" in how0
    rows = {d: analyze_with(monkeypatch, t).iterations for d, t in parts.items()}
    assert rows[0]["latency_ms"].to_list() == pytest.approx([300 / 1e6])
    assert rows[0]["gpu_busy_ms"].to_list() == pytest.approx([200 / 1e6])
    assert rows[1]["latency_ms"].to_list() == pytest.approx([680 / 1e6])
    assert rows[1]["gpu_busy_ms"].to_list() == pytest.approx([400 / 1e6])
    assert rows[0]["launches"].to_list() == [1] and rows[1]["launches"].to_list() == [1]


def test_split_by_device_keeps_the_ranges_for_each_device(monkeypatch):
    trace = make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        ops=[
            (100, 300, None, 7, 0),
            (200, 500, None, 7, 1),
            (1100, 1200, None, 7, 0),
            (1300, 1900, None, 7, 1),
        ],
    )
    parts = R.split_by_device(trace)
    busy = {d: analyze_with(monkeypatch, t).iterations["gpu_busy_ms"].to_list() for d, t in parts.items()}
    assert busy[0] == pytest.approx([200 / 1e6, 100 / 1e6])
    assert busy[1] == pytest.approx([300 / 1e6, 600 / 1e6])


def test_one_device_is_not_copied():
    assert R.split_by_device(gpu_only()) == {0: gpu_only()}
    assert R.split_by_device(make_trace()) == {}


# ---------------------------------------------------------------------------------- default choice


def _steps(names, gap=1000, length=800, depth=0, extra=()):
    """One range per name, back to back; each with one launch and one kernel inside."""
    rs, api, ops = [], [], []
    for i, name in enumerate(names):
        s = 10_000 + i * gap
        rs.append((s, s + length, name, depth))
        api.append((s + 10, s + 20, i + 1, "cudaLaunchKernel"))
        ops.append((s + 50, s + 550, i + 1, 7))
    return make_trace(ranges=rs + list(extra), api=api, ops=ops)


# vLLM V1 (vllm/v1/worker/gpu_worker.py, Worker.annotate_profile), three generations of the name
VLLM_STEPS = [
    "execute_context_1(512)_generation_0(0)",
    "execute_context_0(0)_generation_1(1)",
    "execute_context_0(0)_generation_1(1)",
    "execute_context_1(64)_generation_1(1)",
]
VLLM_DETAILED = [
    "execute_512_context_1(sq512sk512sqsq262144sqsk262144)_generation_0(sq0sk0sqsq0sqsk0)",
    "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk4128sqsq32sqsk4128)",
    "execute_31_context_0(sq0sk0sqsq0sqsk0)_generation_31(sq31sk4030sqsq31sqsk4030)",
]
VLLM_OLD = ["execute_new_2_cached_0", "execute_new_0_cached_2", "execute_new_0_cached_2"]
# SGLang (python/sglang/srt/utils/profile_utils.py, build_step_span_name)
SGLANG_STEPS = ["step[EXTEND bs=2 toks=300]", "step[DECODE bs=2]", "step[DECODE bs=2]", "step[DECODE bs=1]"]
# TensorRT-LLM (tensorrt_llm/_torch/pyexecutor/py_executor.py, PyExecutor._forward_step)
TRTLLM_STEPS = [
    "[Executor] _forward_step 1: 1 ctx reqs, 0 gen reqs",
    "[Executor] _forward_step 2: 0 ctx reqs, 1 gen reqs",
    "[Executor] _forward_step 3: 0 ctx reqs, 1 gen reqs",
]


@pytest.mark.parametrize(
    ("names", "engine"),
    [
        (VLLM_STEPS, "vLLM"),
        (VLLM_DETAILED, "vLLM"),
        (VLLM_OLD, "vLLM"),
        (SGLANG_STEPS, "SGLang"),
        (TRTLLM_STEPS, "TensorRT-LLM"),
    ],
)
def test_default_recognises_serving_engine_steps(names, engine):
    trace = _steps(names)
    frame, name, how = R.choose_ranges(trace, None)
    assert frame["name"].to_list() == names
    assert frame["range_start"].to_list() == [10_000 + i * 1000 for i in range(len(names))]
    assert name == "re:" + R.ENGINE_STEPS[engine]
    distinct = len(set(names))
    assert how == (
        f"{engine} serving-engine steps ({len(names)} ranges of {distinct} names); choose another with --range"
    )
    # the returned name is a --range pattern that selects the same ranges
    again, _, _ = R.choose_ranges(trace, name)
    assert again["name"].to_list() == names


def test_engine_steps_beat_a_more_frequent_sibling():
    # TensorRT-LLM: one '_schedule' range per step; the most frequent name would be '_schedule'.
    schedule = [(10_000 + i * 1000 - 100, 10_000 + i * 1000 - 10, "_schedule") for i in range(3)]
    trace = _steps(TRTLLM_STEPS, extra=schedule)
    frame, _, how = R.choose_ranges(trace, None)
    assert frame["name"].to_list() == TRTLLM_STEPS
    assert how.startswith("TensorRT-LLM serving-engine steps")


def test_sglang_draft_steps_are_not_steps_of_their_own():
    trace = _steps(["draft step[DECODE bs=2]", "draft step[DECODE bs=2]", "step[DECODE bs=2]"])
    frame, _, _ = R.choose_ranges(trace, None)
    assert frame["name"].to_list() == ["step[DECODE bs=2]"]


def test_default_order_iteration_then_profiler_step_then_engine_then_most_frequent():
    engine = [(10_100, 10_700, "execute_context_0(0)_generation_1(1)", 1)]
    profiler = [(10_000, 10_800, "ProfilerStep#5", 0)]
    iteration = [(10_050, 10_750, "iteration", 1)]
    other = [(20_000, 20_100, "tokenize"), (21_000, 21_100, "tokenize")]
    ops = [(10_200, 10_300, None, 7)]
    t = make_trace(ranges=engine + profiler + iteration + other, ops=ops)
    assert R.choose_ranges(t, None)[1:] == ("iteration", "default range name 'iteration'")
    t = make_trace(ranges=engine + profiler + other, ops=ops)
    assert R.choose_ranges(t, None)[1] == "ProfilerStep#*"
    t = make_trace(ranges=engine + other, ops=ops)
    assert R.choose_ranges(t, None)[1].startswith("re:^execute_")
    t = make_trace(ranges=other + [(10_000, 10_800, "forward")], ops=ops)
    frame, name, how = R.choose_ranges(t, None)
    assert (name, frame.height) == ("tokenize", 2)
    assert how == "most frequent top-level range (2 of them); choose another with --range"


def test_gpu_projected_annotations_are_not_candidates():
    t = make_trace(ranges=[(0, 100, "iteration", 0, "gpu")], ops=[(10, 20, None, 7)])
    frame, name, _ = R.choose_ranges(t, None)
    assert name == "window" and windows(frame) == [(10, 20)]


# ---------------------------------------------------------------------------------- --range patterns


def test_glob_groups_differently_named_vllm_steps():
    trace = _steps(VLLM_STEPS, extra=[(10_200, 10_300, "execute_model_inner", 1)])
    frame, name, how = R.choose_ranges(trace, "execute_*")
    assert frame["name"].to_list() == VLLM_STEPS  # the nested match is dropped: outermost level only
    assert name == "execute_*"
    assert how == (
        "requested with --range (glob: 4 ranges of 3 names: 'execute_context_1(512)_generation_0(0)', "
        "'execute_context_0(0)_generation_1(1)', 'execute_context_1(64)_generation_1(1)')"
    )


def test_regex_groups_differently_named_sglang_steps():
    trace = _steps(SGLANG_STEPS + ["step_counter"])
    frame, _, how = R.choose_ranges(trace, r"re:^step\[")
    assert frame["name"].to_list() == SGLANG_STEPS
    assert how == (
        "requested with --range (regex: 4 ranges of 3 names: 'step[EXTEND bs=2 toks=300]', "
        "'step[DECODE bs=2]', 'step[DECODE bs=1]')"
    )
    # unanchored search
    frame, _, _ = R.choose_ranges(trace, "re:DECODE")
    assert frame["name"].to_list() == SGLANG_STEPS[1:]


def test_exact_name_wins_over_pattern_reading():
    trace = _steps(SGLANG_STEPS)
    frame, name, how = R.choose_ranges(trace, "step[DECODE bs=2]")
    assert frame.height == 2 and name == "step[DECODE bs=2]" and how == "requested with --range"


def test_profiler_step_key_and_glob():
    trace = _steps(["ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5"])
    assert R.choose_ranges(trace, "ProfilerStep#*")[0].height == 3
    assert R.choose_ranges(trace, "ProfilerStep#4")[0].height == 1
    assert R.choose_ranges(trace, "Profiler*")[0].height == 3


def test_pattern_matching_nothing_lists_the_names():
    trace = _steps(SGLANG_STEPS)
    with pytest.raises(NoActivityError, match=r"no range matches 'execute_\*'; ranges in this trace: "):
        R.choose_ranges(trace, "execute_*")


def test_bad_regex_is_one_line():
    with pytest.raises(TracekitError, match=r"--range 're:\(': bad regular expression") as err:
        R.choose_ranges(_steps(SGLANG_STEPS), "re:(")
    assert "\n" not in str(err.value)


def test_pattern_kind():
    assert [R.pattern_kind(p) for p in ("re:x", "a*", "a?", "a[1]", "iteration")] == [
        "regex",
        "glob",
        "glob",
        "glob",
        "exact",
    ]


def test_engine_steps_end_to_end(monkeypatch):
    a = analyze_with(monkeypatch, _steps(VLLM_DETAILED))
    assert a.iterations["kernels"].to_list() == [1, 1, 1]
    assert a.iterations["latency_ms"].to_list() == pytest.approx([800 / 1e6] * 3)
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([500 / 1e6] * 3)
    assert a.range_choice.startswith("vLLM serving-engine steps (3 ranges of 3 names)")


# ------------------------------------------------------------------------- a Kineto GPU-only file


def test_kineto_gpu_only_file(tmp_path: Path, monkeypatch):
    """A torch.profiler trace recorded with activities=[CUDA] only: kernels, no CPU events, no annotations
    (synthetic file in the current Kineto spelling)."""

    def kernel(ts, dur, corr):
        return {
            "ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7, "correlation": corr},
        }  # fmt: skip

    events = [kernel(100, 50, 1), kernel(160, 40, 2), kernel(5200, 30, 3), kernel(5240, 60, 4)]
    path = tmp_path / "gpu_only_synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    from tracekit.readers.kineto import read

    trace = read(path)
    assert trace.ranges.is_empty() and trace.api.is_empty()
    frame, _, how = R.choose_ranges(trace, None)
    assert windows(frame) == [(100 * US, 5300 * US)]
    a = analyze_with(monkeypatch, trace, split_idle_ms=1.0)
    assert a.iterations["latency_ms"].to_list() == pytest.approx([0.1, 0.1])
    assert a.iterations["gpu_busy_ms"].to_list() == pytest.approx([0.09, 0.09])


def test_cli_on_a_gpu_only_trace(tmp_path: Path, monkeypatch, capsys):
    """What ``tracekit analyze`` prints on a trace without ranges, and with --split-idle."""
    from tracekit.cli import main
    from tracekit.readers.kineto import read

    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": 100,
         "args": {"device": 0, "stream": 7}}
        for ts in (1000, 3000, 5000)
    ]  # fmt: skip
    path = tmp_path / "gpu_only_synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    assert read(path).ranges.is_empty()
    for split, n in ((None, 1), (1.0, 3)):
        extra = [] if split is None else ["--split-idle", str(split)]
        assert main(["analyze", str(path), "--format", "json", *extra]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert len(doc["iterations"]) == n
        assert doc["range"] == ("window" if split is None else "idle>1ms")
        assert doc["range_choice"].startswith(
            "no ranges in the trace" if split is None else "--split-idle 1:"
        )


# ---------------------------------------------------------------------------------------- invariants


@settings(max_examples=60, deadline=None)
@given(
    spans=st.lists(
        st.tuples(st.integers(0, 50_000), st.integers(0, 3_000), st.integers(7, 9)), min_size=1, max_size=40
    ),
    split_us=st.integers(0, 5_000),
)
def test_split_idle_invariants(spans, split_us):
    ops = [(s * US, (s + d) * US, None, stream) for s, d, stream in spans]  # times in us
    trace = make_trace(ops=ops)
    frame, _, _ = R.choose_ranges(trace, None, split_idle_ms=split_us / 1000)
    # reference: gaps in the union of the intervals, in a plain loop
    ivs = sorted((s * US, (s + d) * US) for s, d, _ in spans)
    cuts, reach = 0, ivs[0][1]
    for s, e in ivs[1:]:
        cuts += s - reach > split_us * US
        reach = max(reach, e)
    assert frame.height == cuts + 1
    starts, ends = frame["range_start"].to_list(), frame["range_end"].to_list()
    assert all(a <= b for a, b in zip(starts, ends, strict=True))
    # device spans never overlap; each window runs from its first op's start (no launch calls here) to its
    # last op's end
    g0, g1 = frame["gpu_start"].to_list(), frame["gpu_end"].to_list()
    assert all(e < s for e, s in zip(g1, g0[1:], strict=False))
    assert starts == g0 and ends == g1
    assert iterations.assign_ops(trace, frame).height == len(ops)  # every op in exactly one iteration
    union, reach = 0, None
    for s, e in ivs:
        if reach is None or s > reach:
            union += e - s
            reach = e
        elif e > reach:
            union += e - reach
            reach = e
    with pytest.MonkeyPatch.context() as mp:
        it = analyze_with(mp, trace, split_idle_ms=split_us / 1000).iterations
    assert round(it["gpu_busy_ms"].sum() * 1e6) == union
    assert it["kernels"].sum() == len(ops)


def test_ops_without_a_recorded_device():
    # A reader asked for ops without the device column (analyze's FRAMES_NEEDED today): one group, key None.
    trace = Trace(ops=gpu_only().ops.with_columns(pl.lit(None, pl.Int32).alias("device")), meta={"path": "x"})
    assert list(R.split_by_device(trace)) == [None]
    frame, _, how = R.choose_ranges(trace, None)
    assert windows(frame) == [(1000 * US, 9800 * US)] and frame["device"].to_list() == [None]
    assert "(device not recorded," in how


def test_cpu_only_trace_without_ranges():
    ops = gpu_only().ops.with_columns(pl.lit(-1, pl.Int32).alias("device"), pl.lit("operator").alias("kind"))
    frame, _, how = R.choose_ranges(Trace(ops=ops, meta={"path": "x"}), None, split_idle_ms=1.0)
    assert frame.height == 3 and "cut where the CPU operators were idle" in how and "GPU" not in how


def test_synthetic_names_select_the_same_windows_again():
    # kernel_metrics and attribution re-choose ranges from analysis.range_name: the names must round-trip.
    for split in (None, 1.0, 0.05, 0.0123456789):
        frame, name, _ = R.choose_ranges(gpu_only(), None, split_idle_ms=split)
        again, name2, how = R.choose_ranges(gpu_only(), name)
        assert windows(again) == windows(frame) and name2 == name
        assert how.startswith("requested with --range: ")
    assert R.choose_ranges(gpu_only(), None, split_idle_ms=0.0123456789)[1] == "idle>0.0123456789ms"
    # on an annotated trace too (the ranges are ignored, as with --split-idle)
    annotated = make_trace(ranges=[(0, 10_000 * US, "iteration")], ops=GPU_ONLY_OPS)
    assert R.choose_ranges(annotated, "idle>1ms")[0].height == 3
    assert R.choose_ranges(annotated, "window")[0].height == 1
    # a range really named "window" is that range
    named = make_trace(ranges=[(0, 500 * US, "window")], ops=GPU_ONLY_OPS)
    assert windows(R.choose_ranges(named, "window")[0]) == [(0, 500 * US)]


def test_engine_with_most_steps_wins():
    trace = _steps(VLLM_STEPS[:2] + SGLANG_STEPS[:3])
    frame, _, how = R.choose_ranges(trace, None)
    assert frame["name"].to_list() == SGLANG_STEPS[:3]
    assert how.startswith("SGLang serving-engine steps (3 ranges of 2 names)")


# ------------------------------------------------------------------ wired into the analyze document


def test_analyze_document_reports_serving_step_classes() -> None:
    """The analyze JSON carries each step's class and the framework tax per class (SGLang names)."""
    from tracekit.renderers.analysis import render
    from tracekit.session import analyze_trace

    doc = analyze_trace(_steps(SGLANG_STEPS)).to_json()
    assert [it["step_class"] for it in doc["iterations"]] == ["prefill", "decode", "decode", "decode"]
    classes = {row["step_class"]: row for row in doc["step_classes"]}
    assert classes["decode"]["steps"] == 3 and classes["prefill"]["steps"] == 1
    # each step: range 800 ns, kernel 500 ns -> overhead 300 ns
    assert classes["decode"]["framework_overhead_ms"] == pytest.approx(300e-6)
    assert "framework tax by serving-step class" in render(doc, "table")
    # a trace without engine steps has neither the columns nor the section
    plain = analyze_trace(_steps(["iteration"] * 2)).to_json()
    assert "step_classes" not in plain and "step_class" not in plain["iterations"][0]


def test_analyze_document_has_one_row_per_device() -> None:
    """Two GPUs, each running one kernel per iteration: a per-device row each, with its own busy time."""
    from tracekit.session import analyze_trace

    trace = make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        api=[(10, 20, 1, "cudaLaunchKernel"), (30, 40, 2, "cudaLaunchKernel"),
             (1010, 1020, 3, "cudaLaunchKernel"), (1030, 1040, 4, "cudaLaunchKernel")],
        ops=[(100, 300, 1, 7, 0), (100, 700, 2, 8, 1), (1100, 1300, 3, 7, 0), (1100, 1700, 4, 8, 1)],
    )  # fmt: skip
    rows = {r["device"]: r for r in analyze_trace(trace).to_json()["per_device"]}
    assert rows[0]["gpu_busy_ms"] == pytest.approx(200e-6) and rows[1]["gpu_busy_ms"] == pytest.approx(600e-6)
    assert rows[0]["iterations"] == rows[1]["iterations"] == 2
    single = make_trace(ranges=[(0, 1000, "iteration")], api=[(10, 20, 1, "cudaLaunchKernel")],
                        ops=[(100, 300, 1, 7, 0)])  # fmt: skip
    assert "per_device" not in analyze_trace(single).to_json()
