"""Serving-engine traces (vLLM, SGLang), round 14: host time with nothing recorded, step classes, nested steps.

Every trace built here is SYNTHETIC (hand-built Kineto JSON, file names holding "synthetic", exact answers);
the real traces (../shared/real_traces/tracelens) are read where present, never copied into the repo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import kineto_event, kineto_file
from tests.test_hostile13_analysis_props import _analyze, generated
from tracekit.analyzers import plausibility as P
from tracekit.api import analyze, read_trace

REAL = Path(__file__).parents[2] / "shared/real_traces/tracelens"
UNRECORDED = "no CPU operator or API call on any host thread"


def _vllm_steps(steps: int = 3, step_us: int = 10_000, execute: bool = True) -> list[dict[str, Any]]:
    """vLLM's worker as a torch.profiler trace: ``profiler.step()`` then an ``execute_*`` range (vLLM's
    ``annotate_profile``), so ``ProfilerStep#k`` runs from step k's start to step k+1's. Each step: one
    ``aten::linear`` [100, 1900) us holding 10 launches (call [100 + 180 i, +10), kernel [+15, +150) on stream
    7), a ``cudaDeviceSynchronize`` [1900, 2000), then nothing at all until the next step: the engine waiting
    for requests (a blocked thread, which torch.profiler does not record)."""
    events, corr = [], 1
    for k in range(steps):
        t0 = k * step_us
        events.append(kineto_event("user_annotation", f"ProfilerStep#{k + 1}", t0, step_us))
        if execute:
            events.append(
                kineto_event("user_annotation", "execute_context_0(0)_generation_4(4)", t0 + 10, 1990)
            )
        events.append(kineto_event("cpu_op", "aten::linear", t0 + 100, 1800))
        for i in range(10):
            call = t0 + 100 + 180 * i
            events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", call, 10, correlation=corr))
            events.append(
                kineto_event(
                    "kernel", f"gemm_{i}", call + 15, 150, pid=0, tid=7, correlation=corr, stream=7, device=0
                )
            )
            corr += 1
        events.append(kineto_event("cuda_runtime", "cudaDeviceSynchronize", t0 + 1900, 100))
    return events


def _eager_steps(steps: int = 3, python_us: int = 400) -> list[dict[str, Any]]:
    """An eager model: per step 10 operators [t, t+50) us, each launching a 150 us kernel (call [t+10, +10),
    kernel [t+25, +150)), with ``python_us`` of Python between operators (nothing recorded: real framework
    code) and a synchronize closing the step."""
    events, corr = [], 1
    for k in range(steps):
        t0 = k * 10_000
        t = t0
        for _ in range(10):
            events.append(kineto_event("cpu_op", "aten::addmm", t, 50))
            events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", t + 10, 10, correlation=corr))
            events.append(
                kineto_event(
                    "kernel", "gemm", t + 25, 150, pid=0, tid=7, correlation=corr, stream=7, device=0
                )
            )
            corr += 1
            t += 50 + python_us
        events.append(kineto_event("cuda_runtime", "cudaDeviceSynchronize", t, 100))
        events.append(kineto_event("user_annotation", f"ProfilerStep#{k + 1}", t0, t + 100 - t0))
    return events


def _doubts(analysis: Any) -> list[str]:
    return [w for w in analysis.warnings if UNCERTAIN_PREFIX in w and UNRECORDED in w]


UNCERTAIN_PREFIX = "verdict uncertain: "


# ------------------------------------------------------------------------------ host time with nothing recorded


def test_a_profiler_step_holding_the_engines_wait_has_its_framework_bound_verdict_doubted(
    tmp_path: Path,
) -> None:
    # Before: "framework-bound, median GPU utilization 15.0%" with no word: 8.25 ms of the 10 ms step is
    # "dispatch", 8.1 ms of it a stretch in which the trace records nothing on any thread or device (the engine
    # waiting for the next request, or Python scheduling code: the trace cannot tell).
    path = kineto_file(tmp_path, _vllm_steps(), "vllm_wait.synthetic.json")
    a = analyze(path)
    assert a.range_name == "ProfilerStep#*"
    assert a.iterations.get_column("latency_ms").to_list() == [10.0, 10.0, 10.0]
    assert a.iterations.get_column("gpu_busy_ms").to_list() == [1.5, 1.5, 1.5]
    assert a.iterations.get_column("dispatch_ms").to_list() == [8.25, 8.25, 8.25]
    assert a.verdict == "framework"
    doubts = _doubts(a)
    assert len(doubts) == 1, a.warnings
    assert a.summary.verdict_uncertain is not None and UNRECORDED in a.summary.verdict_uncertain
    # per iteration: [0, 100) us before the step's first operator and [2000, 10000) us after its synchronize
    assert "a median 8.100 ms an iteration, of a median latency of 10.000 ms (81.0%)" in doubts[0]
    assert "without it the median GPU utilization is 78.9% (threshold 50%)" in doubts[0]
    # the engine's own step ranges are named, as the way to analyze the work alone
    assert "execute_" in doubts[0]


def test_with_python_tracing_the_doubt_says_the_host_was_waiting(tmp_path: Path) -> None:
    # vLLM turns with_stack on by default: the blocked wait is then recorded, as a Python call event
    # (torch/csrc/autograd/profiler_python.cpp records PyTrace_CALL and PyTrace_C_CALL); the Kineto reader keeps
    # the Python record per thread (kineto15), so the doubt says the verdict rests on the host's waits.
    events = _vllm_steps()
    events += [
        kineto_event("python_function", "queue.py(171): get", k * 10_000 + 2100, 7800) for k in range(3)
    ]
    a = analyze(kineto_file(tmp_path, events, "vllm_wait_stack.synthetic.json"))
    (doubt,) = _doubts(a)
    assert (
        "blocked in a waiting call for a median 7.800 ms an iteration ('queue.py: get' 23.400 ms in all)"
        in doubt
    )
    assert "rests on the host's waits" in doubt
    assert "torch.profiler records nothing" not in doubt
    (plain,) = _doubts(analyze(kineto_file(tmp_path, _vllm_steps(), "vllm_wait.synthetic.json")))
    assert "torch.profiler records nothing for a thread that is blocked" in plain


def test_the_host_silence_doubt_weighs_the_verdict_at_the_analysis_threshold(tmp_path: Path) -> None:
    a = analyze(kineto_file(tmp_path, _vllm_steps(), "vllm_wait.synthetic.json"), bound_threshold=0.1)
    assert a.verdict == "compute"
    assert _doubts(a) == []


def test_the_doubt_itself_takes_the_threshold(tmp_path: Path) -> None:
    # (what the call above would get: at 10% the 15.0% verdict is compute-bound, nothing to doubt; at 90% the
    # 78.9% without the silences is still framework-bound, nothing to doubt either; at 50% it flips)
    trace = read_trace(kineto_file(tmp_path, _vllm_steps(), "vllm_wait.synthetic.json"))
    import polars as pl

    frame = pl.DataFrame(
        {
            "window_start": [0, 10_000_000, 20_000_000],
            "window_end": [10_000_000, 20_000_000, 30_000_000],
            "latency_ns": [10_000_000] * 3,
            "busy_ns": [1_500_000] * 3,
        }
    )
    assert P.unrecorded_host(trace, frame, 0.1) is None
    assert P.unrecorded_host(trace, frame, 0.9) is None
    assert "78.9% (threshold 50%), not 15.0%" in (P.unrecorded_host(trace, frame, 0.5) or "")


def test_the_engines_own_steps_analyzed_need_no_doubt(tmp_path: Path) -> None:
    # The same trace with --range on vLLM's execute_* ranges: 1.99 ms steps, 1.5 ms busy (75.4%), compute-bound.
    path = kineto_file(tmp_path, _vllm_steps(), "vllm_wait.synthetic.json")
    a = analyze(path, range="execute_*")
    assert a.iterations.get_column("latency_ms").to_list() == [1.99, 1.99, 1.99]
    assert a.verdict == "compute"
    assert _doubts(a) == []


def test_the_unrecorded_time_is_measured_per_iteration_exactly(tmp_path: Path) -> None:
    path = kineto_file(tmp_path, _vllm_steps(), "vllm_wait.synthetic.json")
    trace = read_trace(path)
    frame = _raw_windows([(0, 10_000_000), (10_000_000, 20_000_000), (20_000_000, 30_000_000)])
    # (the first step's 100 us before the trace's first record is no stretch of 1 ms: not counted)
    assert P.unrecorded_ns(trace, frame).to_list() == [8_000_000, 8_100_000, 8_100_000]
    # a window of the work alone holds none: [100, 2000) us is recorded throughout
    assert P.unrecorded_ns(trace, _raw_windows([(100_000, 2_000_000)])).to_list() == [0]
    # a window over the wait holds it whole
    assert P.unrecorded_ns(trace, _raw_windows([(3_000_000, 7_000_000)])).to_list() == [4_000_000]
    # a row without a window holds none (and does not disturb the others)
    import polars as pl

    rows = pl.DataFrame(
        {"window_start": [None, 3_000_000], "window_end": [None, 7_000_000]},
        schema={"window_start": pl.Int64, "window_end": pl.Int64},
    )
    assert P.unrecorded_ns(trace, rows).to_list() == [0, 4_000_000]


def test_silences_shorter_than_a_millisecond_are_framework_code(tmp_path: Path) -> None:
    # Eager: 400 us of Python between operators, 10 times a step (4.6 ms steps, 1.5 ms busy, 32.6%): silent
    # stretches, but none of 1 ms: framework code as before, no doubt, the verdict stays.
    path = kineto_file(tmp_path, _eager_steps(python_us=400), "eager.synthetic.json")
    a = analyze(path)
    assert a.verdict == "framework"
    assert _doubts(a) == []
    trace = read_trace(path)
    assert P.unrecorded_ns(trace, _raw_windows([(0, 4_600_000)])).to_list() == [0]


@pytest.mark.parametrize(("silence_us", "expected_ns"), [(1000, 1_000_000), (999, 0)])
def test_a_silence_of_exactly_the_minimum_counts(tmp_path: Path, silence_us: int, expected_ns: int) -> None:
    # an operator [0, 100) us launching a kernel [25, 75), then nothing until a second operator: a silence of
    # exactly 1 ms counts whole, one of 999 us not at all
    t = 100 + silence_us
    events = [
        kineto_event("user_annotation", "ProfilerStep#1", 0, t + 100),
        kineto_event("cpu_op", "aten::linear", 0, 100),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 10, 10, correlation=1),
        kineto_event("kernel", "gemm", 25, 50, pid=0, tid=7, correlation=1, stream=7, device=0),
        kineto_event("cpu_op", "aten::linear", t, 100),
    ]
    trace = read_trace(kineto_file(tmp_path, events, "edge.synthetic.json"))
    assert P.unrecorded_ns(trace, _raw_windows([(0, (t + 100) * 1000)])).to_list() == [expected_ns]


def test_no_doubt_without_cpu_operators_or_on_a_compute_bound_verdict(tmp_path: Path) -> None:
    # Without CPU operators (an Nsight Systems trace without NVTX records only API calls) a silence says
    # nothing: no measure. A compute-bound verdict only gains from leaving silent time out: no doubt.
    events = [e for e in _vllm_steps() if e["cat"] != "cpu_op"]
    trace = read_trace(kineto_file(tmp_path, events, "no_ops.synthetic.json"))
    assert P.unrecorded_ns(trace, _raw_windows([(0, 10_000_000)])) is None
    busy = _vllm_steps(step_us=3_000)  # 1.5 ms of 3 ms: 50%, compute-bound
    a = analyze(kineto_file(tmp_path, busy, "busy.synthetic.json"))
    assert a.verdict == "compute"
    assert _doubts(a) == []


def test_launched_work_waiting_on_an_idle_device_is_not_host_silence(tmp_path: Path) -> None:
    # A kernel launched at [100, 110) us that starts at 3000 us (a launch lag: the device blocked): the host
    # records nothing from 110 us to 3000 us, but the op is pending: that time is in_flight, not dispatch, and
    # the launch-lag rule speaks for it. Silence counts from the kernel's end (3150 us) to the window's end.
    events = [
        kineto_event("user_annotation", "ProfilerStep#1", 0, 5000),
        kineto_event("cpu_op", "aten::linear", 90, 30),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 100, 10, correlation=1),
        kineto_event("kernel", "gemm", 3000, 150, pid=0, tid=7, correlation=1, stream=7, device=0),
    ]
    trace = read_trace(kineto_file(tmp_path, events, "lag.synthetic.json"))
    assert P.unrecorded_ns(trace, _raw_windows([(0, 5_000_000)])).to_list() == [1_850_000]


def _raw_windows(windows: list[tuple[int, int]]) -> Any:
    """The frame ``plausibility.doubts`` is given, as far as :func:`P.unrecorded_ns` reads it."""
    import polars as pl

    return pl.DataFrame(
        {"window_start": [w[0] for w in windows], "window_end": [w[1] for w in windows]},
        schema={"window_start": pl.Int64, "window_end": pl.Int64},
    )


# ------------------------------------------------------------------------------------------------- real traces


@pytest.mark.skipif(not REAL.exists(), reason="the real traces are not here")
@pytest.mark.parametrize(
    "name",
    ["vllm_decode_full_graphs", "sglang_qwen3-8b_decode", "h100_bert-small"],
)
def test_no_real_serving_step_holds_a_millisecond_of_silence(name: str) -> None:
    # Each real trace captures one engine step, recorded throughout: no stretch of 1 ms without a CPU operator,
    # an API call or device work (running or launched), so no silence and no doubt; the verdicts do not move.
    a = analyze(REAL / f"{name}.json.gz")
    assert _doubts(a) == []
    import polars as pl

    windows = a.iterations.select(
        pl.col("window_start_ns").alias("window_start"), pl.col("window_end_ns").alias("window_end")
    )
    assert P.unrecorded_ns(a.trace_data, windows).to_list() == [0] * a.iterations.height


# ------------------------------------------------------------------------------ one step annotated twice


def _nested_steps(steps: int = 2) -> list[dict[str, Any]]:
    """A ProfilerStep around each engine step, the step annotated twice as the real SGLang traces are:
    ``execute_32_context_0(...)_generation_32(...)`` [10, 2000) us holding ``step[DECODE bs=32]`` [20, 1920):
    one decode step of 32 requests, 10 launches of 150 us kernels."""
    events, corr = [], 1
    for k in range(steps):
        t0 = k * 3000
        events.append(kineto_event("user_annotation", f"ProfilerStep#{k + 1}", t0, 3000))
        events.append(
            kineto_event("user_annotation", "execute_32_context_0(sq0)_generation_32(sq32)", t0 + 10, 1990)
        )
        events.append(kineto_event("user_annotation", "step[DECODE bs=32]", t0 + 20, 1900))
        events.append(kineto_event("cpu_op", "aten::linear", t0 + 100, 1800))
        for i in range(10):
            call = t0 + 100 + 180 * i
            events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", call, 10, correlation=corr))
            events.append(
                kineto_event(
                    "kernel", "gemm", call + 15, 150, pid=0, tid=7, correlation=corr, stream=7, device=0
                )
            )
            corr += 1
    return events


def test_a_step_annotated_twice_counts_its_requests_once(tmp_path: Path) -> None:
    # Before: generation_requests 64 per ProfilerStep (32 from the execute_ name + 32 from the step[...] inside
    # it, the same step's two annotations summed); 32 requests ran.
    a = analyze(kineto_file(tmp_path, _nested_steps(), "nested.synthetic.json"))
    assert a.range_name == "ProfilerStep#*"
    frame = a.iterations.select("step_class", "context_requests", "generation_requests")
    assert frame.rows() == [("decode", 0, 32), ("decode", 0, 32)]


def test_a_step_annotated_twice_is_one_step_in_the_batch_evidence(tmp_path: Path) -> None:
    # Before: "SGLang and vLLM step names: 32 requests in each of 4 step(s)" for 2 steps.
    a = analyze(kineto_file(tmp_path, _nested_steps(), "nested.synthetic.json"))
    assert a.config.batch_size == 32
    assert a.config.evidence["batch_size"] == (
        "SGLang and vLLM step names: 32 requests in each of 2 step(s) ('execute_32_context_0(sq0)_generation_32(sq32)')"
    )


@pytest.mark.skipif(not REAL.exists(), reason="the real traces are not here")
@pytest.mark.parametrize(
    ("name", "batch"),
    [("sglang_qwen3-8b_decode", "32 requests"), ("sglang_qwen3-8b_prefilldecode", "15 requests")],
)
def test_the_real_sglang_step_is_one_step(name: str, batch: str) -> None:
    # execute_... holds step[...]: one step, two annotations (before: "in each of 2 step(s)")
    trace = read_trace(REAL / f"{name}.json.gz")
    from tracekit.analyzers.identify import batch_from_steps

    found = batch_from_steps(trace)
    assert found is not None and f"{batch} in each of 1 step(s)" in found.evidence


# ------------------------------------------------------------------------------ property: silence is dispatch


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9), st.sampled_from([1_000, 5_000, 20_000]))
def test_host_silence_is_always_part_of_the_dispatch_time(seed: int, minimum: int) -> None:
    # Generated traces (hostile13's: 1-2 processes, threads, streams, devices, graph launches, copies, stream
    # waits, syncs) with CPU operators around some calls: every iteration's silent time (stretches of at least
    # `minimum` ns here) is part of its dispatch time, as the doubt says ("counted as dispatch").
    import random
    from unittest.mock import patch

    import polars as pl

    from tracekit.model import CPU_OPS_SCHEMA, conform

    trace = generated(seed)
    if (
        trace.ops.is_empty()
    ):  # (no device op: no verdict, and unrecorded_ns measures nothing, by its contract)
        return
    r = random.Random(seed)
    rows = [
        (s - r.randint(0, 3000), e + r.randint(0, 3000), p, t, "aten::op")
        for s, e, p, t in trace.api.select("start", "end", "pid", "thread").iter_rows()
        if r.random() < 0.5
    ]
    if not rows:
        return
    frame = pl.DataFrame(rows, schema=["start", "end", "pid", "thread", "name"], orient="row")
    trace.cpu_ops = conform(frame, CPU_OPS_SCHEMA)
    a = _analyze(trace)
    if a is None or a.iterations.is_empty():
        return
    windows = a.iterations.select(
        pl.col("window_start_ns").alias("window_start"), pl.col("window_end_ns").alias("window_end")
    )
    with patch.object(P, "UNRECORDED_MIN_NS", minimum):
        silent = P.unrecorded_ns(trace, windows)
    assert silent is not None
    dispatch = (a.iterations.get_column("dispatch_ms") * 1e6).round(0).cast(pl.Int64)
    for x, d in zip(silent.to_list(), dispatch.to_list(), strict=True):
        assert d is None or x <= d + 1


@pytest.mark.skipif(not REAL.exists(), reason="the real traces are not here")
def test_a_real_vllm_step_inside_a_profiler_step_that_holds_a_wait_is_doubted() -> None:
    # The real vLLM full-graph decode step (its execute_* range: 19.114 ms, 10.718 ms busy, 56.1%) inside a
    # ProfilerStep that runs on 50 ms past the range's start, as vLLM's profiler.step() makes one run to the
    # next step: the 30.886 ms after the step's last device op, with nothing recorded, had read
    # "framework-bound, 21.4%" with no word. The 7.8 ms launch lag before the graph's ops ran (launched,
    # pending) is no silence: 56.1% without the silence is the step's own utilization.
    import polars as pl

    from tracekit.analyzers.iterations import analyze_iterations
    from tracekit.model import RANGES_SCHEMA, conform

    trace = read_trace(REAL / "vllm_decode_full_graphs.json.gz")
    step = trace.ranges.filter(pl.col("name").str.starts_with("execute_"))
    outer = step.with_columns(
        pl.lit("ProfilerStep#7").alias("name"), (pl.col("start") + 50_000_000).alias("end")
    ).select(trace.ranges.columns)
    trace.ranges = conform(pl.concat([trace.ranges, outer]), RANGES_SCHEMA).sort(
        ["start", "end"], descending=[False, True]
    )
    a = analyze_iterations(trace)
    assert a.summary.bound == "framework"
    (doubt,) = [w for w in a.warnings if UNRECORDED in w]
    assert "a median 30.886 ms an iteration, of a median latency of 50.000 ms (61.8%)" in doubt
    assert "without it the median GPU utilization is 56.1% (threshold 50%), not 21.4%" in doubt


# ------------------------------------------------------------------------------ idle steps deciding the verdict


def _dp_steps(pattern: str) -> list[dict[str, Any]]:
    """SGLang steps of 1 ms each, one per letter of ``pattern``: ``d`` a decode step of 8 requests (7 launches
    of 100 us kernels: 70%), ``i`` an idle one (``step[IDLE bs=0]``, a data-parallel rank's padding forward:
    one kernel, 10%)."""
    events, corr, t = [], 1, 0
    for kind in pattern:
        events.append(
            kineto_event(
                "user_annotation", "step[IDLE bs=0]" if kind == "i" else "step[DECODE bs=8]", t, 1000
            )
        )
        events.append(kineto_event("cpu_op", "aten::linear", t + 10, 980))
        for i in range(1 if kind == "i" else 7):
            call = t + 20 + 130 * i
            events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", call, 5, correlation=corr))
            events.append(
                kineto_event(
                    "kernel", "gemm", call + 10, 100, pid=0, tid=7, correlation=corr, stream=7, device=0
                )
            )
            corr += 1
        t += 1000
    return events


def test_idle_steps_that_decide_the_verdict_make_it_uncertain(tmp_path: Path) -> None:
    # Before: "framework-bound, median 10.0%" with no word: 6 of the 9 steps are IDLE (no request), and the 3
    # steps that served requests ran at 70%.
    a = analyze(kineto_file(tmp_path, _dp_steps("diidiidii"), "dp_idle.synthetic.json"))
    assert a.iterations.get_column("step_class").cast(str).to_list() == ["decode", "idle", "idle"] * 3
    assert a.verdict == "framework"
    assert a.summary.verdict_uncertain is not None
    (doubt,) = [w for w in a.warnings if "idle steps" in w]
    assert doubt.startswith("verdict uncertain: 6 of the 9 steps are idle steps")
    assert "median GPU utilization 10.0% (framework-bound) is theirs" in doubt
    assert "the 3 steps that served requests have a median of 70.0% (compute-bound; threshold 50%)" in doubt


def test_idle_steps_that_do_not_decide_the_verdict_are_not_doubted(tmp_path: Path) -> None:
    # 2 idle steps among 7: the median (70.0%) is the served steps' own
    a = analyze(kineto_file(tmp_path, _dp_steps("ddiddid"), "dp_few_idle.synthetic.json"))
    assert a.verdict == "compute"
    assert [w for w in a.warnings if "idle steps" in w] == []


def test_work_launched_before_the_capture_is_pending_from_the_windows_start(tmp_path: Path) -> None:
    # A kernel [3000, 3100) us whose launch call is not in the trace (launched before the capture began, as
    # 509 ops of the real h100_qwen trace): the device had work launched and waiting throughout [0, 3000) us
    # (the attribution counts that time as dispatch, the op being no iteration's; the silence leaves it out,
    # as it leaves out every launched op's wait). Before: 4.7 ms, from the first record (the op) only.
    # Silence is [3300, 5000) us, after the step's work.
    events = [
        kineto_event("user_annotation", "ProfilerStep#1", 0, 5000),
        kineto_event("kernel", "gemm_early", 3000, 100, pid=0, tid=7, correlation=99, stream=7, device=0),
        kineto_event("cpu_op", "aten::linear", 3100, 200),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 3150, 10, correlation=1),
        kineto_event("kernel", "gemm", 3170, 100, pid=0, tid=7, correlation=1, stream=7, device=0),
    ]
    trace = read_trace(kineto_file(tmp_path, events, "precapture.synthetic.json"))
    assert P.unrecorded_ns(trace, _raw_windows([(0, 5_000_000)])).to_list() == [1_700_000]
