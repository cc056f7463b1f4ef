"""mutation14b: tests that kill the surviving mutants of round 14's analysis code.

Mutants of plausibility (unrecorded_ns, unrecorded_host, idle_steps, gpu_tracing_stopped, lost_device_events),
stability (spread_warning, the 'no single mode' DRIFT_MIN rule), sweep.bound_doubt, ranges (the
windows-against-ranges warning, the zero-duration range rule), steps.outermost_steps, report's
framework_bound_batch_sizes and iterations' launch notes and spread wiring were applied by hand to a private copy;
each test here kills at least one that the existing tests let live.

Every trace built here is SYNTHETIC (hand-built Kineto JSON, file names holding "synthetic"), with exact answers
worked out in the comments. Times in Kineto events are in us; frames and results are in ns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.builders import kineto_event, kineto_file
from tracekit.analyzers import plausibility as P
from tracekit.analyzers.stability import measure
from tracekit.api import read_trace


def _windows(windows: list[tuple[int, int]]) -> pl.DataFrame:
    """The frame ``plausibility.unrecorded_ns`` reads: ``window_start``, ``window_end`` (ns)."""
    return pl.DataFrame(
        {"window_start": [w[0] for w in windows], "window_end": [w[1] for w in windows]},
        schema={"window_start": pl.Int64, "window_end": pl.Int64},
    )


def _one_step(extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """A ProfilerStep [0, 5000) us whose only work is an operator [2000, 2200) launching a kernel (call [2050,
    2060), kernel [2100, 2200)): nothing recorded in [0, 2000) (2 ms) nor in [2200, 5000) (2.8 ms)."""
    return [
        kineto_event("user_annotation", "ProfilerStep#1", 0, 5000),
        kineto_event("cpu_op", "aten::linear", 2000, 200),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 2050, 10, correlation=1),
        kineto_event("kernel", "gemm", 2100, 100, pid=0, tid=7, correlation=1, stream=7, device=0),
        *(extra or []),
    ]


# ------------------------------------------------------------------------------ plausibility.unrecorded_ns


def test_a_silence_before_the_first_record_counts(tmp_path: Path) -> None:
    # [0, 2000) us before the operator and [2200, 5000) us after it: 2.0 + 2.8 = 4.8 ms (mutant P3, no silence
    # before the first record: 2.8 ms)
    trace = read_trace(kineto_file(tmp_path, _one_step(), "first.synthetic.json"))
    assert P.unrecorded_ns(trace, _windows([(0, 5_000_000)])).to_list() == [4_800_000]
    # a window of the leading silence alone holds all of it
    assert P.unrecorded_ns(trace, _windows([(0, 2_000_000)])).to_list() == [2_000_000]


def test_an_instant_record_breaks_a_silence(tmp_path: Path) -> None:
    # An operator of no duration at 2800 us is a record: the host ran then. [2200, 2800) us is 0.6 ms (no
    # stretch), [2800, 5000) 2.2 ms: 2.0 + 2.2 = 4.2 ms (mutant P10, zero-length records dropped: 4.8 ms)
    events = _one_step([kineto_event("cpu_op", "aten::empty", 2800, 0)])
    trace = read_trace(kineto_file(tmp_path, events, "instant.synthetic.json"))
    assert P.unrecorded_ns(trace, _windows([(0, 5_000_000)])).to_list() == [4_200_000]


def test_a_row_without_a_window_start_holds_no_silence(tmp_path: Path) -> None:
    # a row whose window has an end but no start holds none (mutant P11, only the end checked: 4.8 ms from 0)
    trace = read_trace(kineto_file(tmp_path, _one_step(), "nostart.synthetic.json"))
    rows = pl.DataFrame(
        {"window_start": [None, 0], "window_end": [5_000_000, 5_000_000]},
        schema={"window_start": pl.Int64, "window_end": pl.Int64},
    )
    assert P.unrecorded_ns(trace, rows).to_list() == [0, 4_800_000]


# ------------------------------------------------------------------------------ plausibility.unrecorded_host


def _host_frame(busy_ns: int) -> pl.DataFrame:
    """One iteration over the step of :func:`_one_step`: window [0, 5 ms), latency 5 ms, ``busy_ns`` busy."""
    return pl.DataFrame(
        {"window_start": [0], "window_end": [5_000_000], "latency_ns": [5_000_000], "busy_ns": [busy_ns]}
    )


def test_a_verdict_exactly_at_the_threshold_without_the_silence_is_doubted(tmp_path: Path) -> None:
    # 0.1 ms busy of 5 ms (2.0%, framework-bound); without the 4.8 ms silence 0.1 of 0.2 ms: exactly 50.0%,
    # compute-bound by the one rule (framework-bound is below the threshold): the verdict would flip, doubted
    # (mutant P13, `util_rest <= threshold`: no doubt)
    trace = read_trace(kineto_file(tmp_path, _one_step(), "edge.synthetic.json"))
    doubt = P.unrecorded_host(trace, _host_frame(100_000), 0.5)
    assert doubt is not None
    assert "a median 4.800 ms an iteration, of a median latency of 5.000 ms (96.0%)" in doubt
    assert "without it the median GPU utilization is 50.0% (threshold 50%), not 2.0%" in doubt


def test_an_iteration_silent_throughout_has_no_utilization_without_its_silence(tmp_path: Path) -> None:
    # Two iterations of the step: [0, 5) ms (4.8 ms silent, 0.1 ms busy) and [2.2, 5) ms, silent throughout
    # (2.8 ms, given 0.028 ms busy). Without its silence the second has no time left: no utilization, left out
    # of the median (mutant P14, `latency >= silent`: 0.028 / 0, inf, the median of [50%, inf] reads inf%).
    # Medians: silence (4.8 + 2.8) / 2 = 3.8 ms of latency (5 + 2.8) / 2 = 3.9 ms (97.4%); utilization
    # (2.0% + 1.0%) / 2 = 1.5%; without the silence 50.0% (the first alone).
    trace = read_trace(kineto_file(tmp_path, _one_step(), "silent.synthetic.json"))
    frame = pl.DataFrame(
        {
            "window_start": [0, 2_200_000],
            "window_end": [5_000_000, 5_000_000],
            "latency_ns": [5_000_000, 2_800_000],
            "busy_ns": [100_000, 28_000],
        }
    )
    doubt = P.unrecorded_host(trace, frame, 0.5)
    assert doubt is not None
    assert "a median 3.800 ms an iteration, of a median latency of 3.900 ms (97.4%)" in doubt
    assert "without it the median GPU utilization is 50.0% (threshold 50%), not 1.5%" in doubt


def test_the_host_silence_doubt_weighs_the_median_utilization_not_the_mean(tmp_path: Path) -> None:
    # Three iterations: [0, 5) ms (4.8 ms silent, 0.1 ms busy: 2%, 50% without the silence) and twice the
    # operator's [2.0, 2.2) ms, no silence, 0.098 and 0.2 ms busy (49%, 100%). The verdict's median 49.0% is
    # framework-bound and without the silence the median is 50.0%: doubted. (mutant P15, the mean 50.3% as the
    # verdict: compute-bound, no doubt)
    trace = read_trace(kineto_file(tmp_path, _one_step(), "median.synthetic.json"))
    frame = pl.DataFrame(
        {
            "window_start": [0, 2_000_000, 2_000_000],
            "window_end": [5_000_000, 2_200_000, 2_200_000],
            "latency_ns": [5_000_000, 200_000, 200_000],
            "busy_ns": [100_000, 98_000, 200_000],
        }
    )
    doubt = P.unrecorded_host(trace, frame, 0.5)
    assert doubt is not None
    assert "without it the median GPU utilization is 50.0% (threshold 50%), not 49.0%" in doubt


def test_no_host_silence_is_measured_on_a_cpu_trace(tmp_path: Path) -> None:
    # the same events said to be a CPU run: its ops are CPU work, a silence says nothing (mutant P20, the
    # device check dropped: 4.8 ms)
    trace = read_trace(kineto_file(tmp_path, _one_step(), "cpu.synthetic.json"))
    assert P.unrecorded_ns(trace, _windows([(0, 5_000_000)])).to_list() == [4_800_000]
    trace.meta["device"] = "cpu"
    assert P.unrecorded_ns(trace, _windows([(0, 5_000_000)])) is None


def test_a_row_of_no_latency_is_left_out_of_the_host_silence_doubt(tmp_path: Path) -> None:
    # the iteration [0, 5) ms (2.0%, 50.0% without its silence) and one of no latency (no utilization): left
    # out, the doubt reads 50.0% not 2.0% (mutant P24, `latency >= 0`: 0 / 0 joins the median, 'not nan%')
    trace = read_trace(kineto_file(tmp_path, _one_step(), "zero.synthetic.json"))
    frame = pl.DataFrame(
        {
            "window_start": [0, 2_000_000],
            "window_end": [5_000_000, 2_000_000],
            "latency_ns": [5_000_000, 0],
            "busy_ns": [100_000, 0],
        }
    )
    doubt = P.unrecorded_host(trace, frame, 0.5)
    assert doubt is not None
    assert "a median 4.800 ms an iteration, of a median latency of 5.000 ms (96.0%)" in doubt
    assert "without it the median GPU utilization is 50.0% (threshold 50%), not 2.0%" in doubt


def _execute(host_us: int, gpu_copies_us: list[int]) -> list[dict[str, Any]]:
    """:func:`_one_step` with a vLLM ``execute_*`` host range [2000, 2000 + host_us) us and GPU-side copies
    of it (Kineto's ``gpu_user_annotation``, on the device's stream) of the given lengths."""
    name = "execute_context_0(0)_generation_4(4)"
    events = [kineto_event("user_annotation", name, 2000, host_us)]
    events += [
        kineto_event("gpu_user_annotation", name, 2100 + 60 * i, length, pid=0, tid=7, device=0, stream=7)
        for i, length in enumerate(gpu_copies_us)
    ]
    return _one_step(events)


def test_the_engine_steps_hint_needs_steps_shorter_than_the_iterations(tmp_path: Path) -> None:
    # the execute_* range lasts 200 us: an iteration of exactly 200 us holds nothing more, no hint; of 201 us
    # one (mutant P21, `>`: a hint at 200 us)
    trace = read_trace(kineto_file(tmp_path, _execute(200, []), "hint.synthetic.json"))
    assert P._engine_steps_hint(trace, 200_000.0) == ""
    assert P._engine_steps_hint(trace, 201_000.0) == (
        "; the trace holds the engine's own steps ('execute_context_0(0)_generation_4(4)', ...), which hold "
        "the work alone: --range names them"
    )


def test_the_engine_steps_hint_measures_the_host_steps_only(tmp_path: Path) -> None:
    # the host step lasts 200 us, its two GPU-side copies 50 us: against 100 us iterations the steps are
    # longer, no hint (mutant P22, the copies counted: median 50 us, a hint)
    trace = read_trace(kineto_file(tmp_path, _execute(200, [50, 50]), "gpu_copies.synthetic.json"))
    assert trace.ranges.filter(pl.col("domain") == "gpu").height == 2
    assert P._engine_steps_hint(trace, 100_000.0) == ""


# ------------------------------------------------------------------------------ plausibility.idle_steps


def _sglang_steps(steps: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """SGLang steps of 1 ms each: (mode, kernels): ``step[MODE bs=8]`` (``step[IDLE bs=0]`` for IDLE) with
    an operator [+10, +990) us launching that many 100 us kernels (call at +20 + 130 i, kernel 10 us later):
    utilization kernels / 10."""
    events: list[dict[str, Any]] = []
    corr, t = 1, 0
    for mode, kernels in steps:
        name = "step[IDLE bs=0]" if mode == "IDLE" else f"step[{mode} bs=8]"
        events.append(kineto_event("user_annotation", name, t, 1000))
        events.append(kineto_event("cpu_op", "aten::linear", t + 10, 980))
        for i in range(kernels):
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


def _idle_doubt(tmp_path: Path, steps: list[tuple[str, int]], name: str) -> tuple[Any, list[str]]:
    from tracekit.api import analyze

    a = analyze(kineto_file(tmp_path, _sglang_steps(steps), f"{name}.synthetic.json"))
    return a, [w for w in a.warnings if "idle steps" in w]


def test_mixed_steps_served_requests(tmp_path: Path) -> None:
    # 3 MIXED steps at 70% among 6 idle ones at 10%: the median 10.0% is the idle steps' (mutant I2, MIXED not
    # counted as served: no served step, no doubt)
    a, doubts = _idle_doubt(tmp_path, [("MIXED", 7), ("IDLE", 1), ("IDLE", 1)] * 3, "mixed_idle")
    assert a.iterations.get_column("step_class").cast(str).to_list() == ["mixed", "idle", "idle"] * 3
    assert a.verdict == "framework"
    (doubt,) = doubts
    # (mutant I10, every step not a decode step counted idle: '9 of the 9')
    assert doubt.startswith("verdict uncertain: 6 of the 9 steps are idle steps")
    assert "the 3 steps that served requests have a median of 70.0% (compute-bound; threshold 50%)" in doubt


def test_the_served_steps_verdict_is_their_median(tmp_path: Path) -> None:
    # served steps at 70%, 70% and 0% (median 70.0% compute-bound; mean 46.7% framework-bound), 4 idle at 10%:
    # all 7's median 10.0% (mutant I4, the served mean: both framework-bound, no doubt)
    steps = [("DECODE", 7), ("IDLE", 1), ("DECODE", 7), ("IDLE", 1), ("DECODE", 0), ("IDLE", 1), ("IDLE", 1)]
    a, doubts = _idle_doubt(tmp_path, steps, "served_median")
    assert a.verdict == "framework"
    (doubt,) = doubts
    assert doubt.startswith("verdict uncertain: 4 of the 7 steps are idle steps")
    assert "the 3 steps that served requests have a median of 70.0% (compute-bound; threshold 50%)" in doubt


def test_idle_steps_alone_are_no_doubt(tmp_path: Path) -> None:
    # every step idle: no served step to weigh against (mutant I5, that guard dropped: formatting None raises)
    a, doubts = _idle_doubt(tmp_path, [("IDLE", 1)] * 3, "all_idle")
    assert a.verdict == "framework"
    assert doubts == []


def test_idle_steps_weigh_both_verdicts_at_the_analysis_threshold(tmp_path: Path) -> None:
    # decode at 70%, idle at 10% (3 of 9): at --bound-threshold 0.8 both medians are framework-bound, no doubt;
    # at 0.05 both compute-bound (mutant I6, the verdicts at 50%: the idle median 10.0% framework-bound, the
    # served 70.0% compute-bound, doubted; mutant I9, doubts() not passing the threshold: the same)
    from tracekit.api import analyze

    path = kineto_file(
        tmp_path, _sglang_steps([("DECODE", 7), ("IDLE", 1), ("IDLE", 1)] * 3), "t.synthetic.json"
    )
    for threshold, verdict in ((0.8, "framework"), (0.05, "compute")):
        a = analyze(path, bound_threshold=threshold)
        assert a.verdict == verdict
        assert [w for w in a.warnings if "idle steps" in w] == []
    assert [w for w in analyze(path).warnings if "idle steps" in w] != []


def test_an_iteration_without_a_finite_utilization_is_no_step_of_the_idle_doubt(tmp_path: Path) -> None:
    # Five steps: DECODE 70%, IDLE 10%, IDLE of no latency with 0.1 ms busy (no finite utilization), DECODE
    # 70%, IDLE 10%. Without the third: medians 40.0% (framework) against the served 70.0%: doubted, 2 of 4
    # (mutant I8, only nulls left out: inf joins, the median of 5 is 70.0%, no doubt)
    steps = [("DECODE", 7), ("IDLE", 1), ("IDLE", 1), ("DECODE", 7), ("IDLE", 1)]
    trace = read_trace(kineto_file(tmp_path, _sglang_steps(steps), "inf.synthetic.json"))
    frame = pl.DataFrame(
        {
            "iteration": list(range(5)),
            "range_start": [k * 1_000_000 for k in range(5)],
            "range_end": [(k + 1) * 1_000_000 for k in range(5)],
            "name": ["step[IDLE bs=0]" if m == "IDLE" else f"step[{m} bs=8]" for m, _ in steps],
            "pid": [1] * 5,
            "latency_ns": [1_000_000, 1_000_000, 0, 1_000_000, 1_000_000],
            "busy_ns": [700_000, 100_000, 100_000, 700_000, 100_000],
        }
    )
    doubt = P.idle_steps(trace, frame, 0.5)
    assert doubt is not None
    assert doubt.startswith("verdict uncertain: 2 of the 4 steps are idle steps")
    assert "median GPU utilization 40.0% (framework-bound) is theirs" in doubt
    assert "the 2 steps that served requests have a median of 70.0% (compute-bound; threshold 50%)" in doubt


# ------------------------------------------------- plausibility.gpu_tracing_stopped, lost_device_events


def _meta_trace(meta: dict[str, Any], ops: bool = True) -> Any:
    """A hand-built trace with one 100 us kernel (or none) and ``meta``."""
    from tests.builders import make_trace

    return make_trace(ops=[(1_000, 101_000, 1, 7)] if ops else [], meta={"path": "meta.synthetic", **meta})


def test_gpu_tracing_that_stopped_doubts_only_a_trace_with_device_ops() -> None:
    # no device op: no verdict to doubt (mutant G1, the ops check dropped: a doubt)
    stopped = {"gpu_tracing_stopped_early": True}
    assert P.gpu_tracing_stopped(_meta_trace(stopped, ops=False)) is None
    doubt = P.gpu_tracing_stopped(_meta_trace(stopped))
    assert doubt is not None and doubt.startswith("verdict uncertain: torch.profiler (libkineto) stopped")
    assert P.gpu_tracing_stopped(_meta_trace({})) is None


@pytest.mark.parametrize(
    ("lost", "doubted"),
    [
        ({"device": ["CUPTI dropped 12 records"]}, True),
        ({"all": ["events were lost"]}, True),  # mutant L1 (device only): no doubt
        ({"gpu_metrics": ["GPU metrics samples were lost"]}, False),  # mutant L2 (any loss): a doubt
        ({"nvtx": ["NVTX events were lost"]}, False),
        ({}, False),
    ],
)
def test_lost_events_doubt_a_verdict_where_device_work_may_be_lost(
    lost: dict[str, Any], doubted: bool
) -> None:
    doubt = P.lost_device_events(_meta_trace({"lost_events": lost}))
    assert (doubt is not None) is doubted
    if doubted:
        assert doubt.startswith("verdict uncertain: Nsight Systems says it lost events during the capture")


def test_lost_events_without_device_ops_are_no_doubt() -> None:
    # (mutant L3, the ops check dropped: a doubt on a trace with no verdict)
    assert P.lost_device_events(_meta_trace({"lost_events": {"device": ["x"]}}, ops=False)) is None


# ------------------------------------------------------------------ stability: the 'no single mode' rule


#: Six iterations within 0.5% of 10 ms (the median of the nine below is 10.0: the fifth in order).
CORE = [9.96, 9.97, 9.98, 9.99, 10.0, 10.01]


def _two_modes(far: float) -> list[float]:
    """:data:`CORE` with three iterations at ``far`` ms between them (no trend): 3 of 9 iterations, more than
    a quarter, all with modified z-scores far above 3.5 (MAD 0.03)."""
    c = CORE
    return [c[0], far, c[1], c[2], far, c[3], c[4], far, c[5]]


def test_a_second_mode_exactly_five_percent_away_is_no_second_mode() -> None:
    # 10.5 ms is 0.5 ms from the median 10.0: exactly DRIFT_MIN (5%), not more: one mode, stable (mutant S1,
    # `>=`; S3, a 1% floor: 'unstable: ... no single mode')
    m = measure(_two_modes(10.5))
    assert m.outliers == () and not m.unstable and m.warnings == ()


def test_a_second_mode_six_percent_away_is_one() -> None:
    # 10.6 ms, 6% from the median: unstable, no single mode (mutant S4, a 10% floor: stable; S5, the distance
    # from the mean 10.19 ms, 4.0%: stable). spread_warning says the reason alone (mutant W12: it adds '(no
    # outlier by rule 'outlier')', which says nothing here)
    from tracekit.analyzers.stability import spread_warning

    values = _two_modes(10.6)
    m = measure(values)
    assert m.outliers == () and m.cv == pytest.approx(0.03021, abs=5e-6)
    assert m.warnings == ("unstable: more than 25% of the iterations are outliers (no single mode)",)
    assert spread_warning(values) == (
        "iteration latencies vary 1.1x (9.96 to 10.6 ms; coefficient of variation 3.0% over all 9): unstable: "
        "more than 25% of the iterations are outliers (no single mode)"
    )


def test_exactly_a_quarter_of_the_iterations_apart_is_still_one_mode() -> None:
    # 8 iterations, median 10.015: 10.3 (z 6.4, but 2.8% away) and twice 10.6 (z 13.2, 5.8% away). Three
    # z-outliers, more than a quarter, so none is dropped; two are a second mode: 2 of 8, exactly 25%, not more
    # (mutant S6, `>=`: unstable)
    values = [9.98, 10.6, 9.99, 10.0, 10.3, 10.01, 10.6, 10.02]
    m = measure(values)
    assert m.outliers == () and not m.unstable and m.warnings == ()


def test_a_z_score_of_exactly_the_outlier_threshold_is_no_second_mode() -> None:
    # Median 10.0, MAD exactly 1.0; three iterations at 10 + 3.5 / 0.6745 ms score exactly 3.5, not more:
    # unstable by the coefficient of variation alone (mutant S7, `>=`: 'no single mode' too)
    high = 15.189028910303929
    values = [8.5, high, 9.0, 9.5, high, 9.75, 10.0, high, 11.0]
    assert measure(values).warnings == ("unstable: coefficient of variation 25.0% (> 10%)",)


# ---------------------------------------------------------------------------- stability.spread_warning


def _stalled(stall: float) -> list[float]:
    """20 iterations: 9.75 and 10.25 ms alternating (9 each) and 10.0, mean exactly 10.0 (coefficient of
    variation 2.4%), with one stall of ``stall`` ms as iteration 10 (an outlier: modified z-score 26 at 20 ms).
    The mean of all is 10 + (stall - 10) / 20."""
    k = [9.75, 10.25] * 9 + [10.0]
    return k[:10] + [stall] + k[10:]


@pytest.mark.parametrize(
    ("stall", "said"),
    [
        (20.0, False),  # mean of all 10.5: exactly 5% above 10.0, not more (mutant W1, `>=`: said)
        (16.0, False),  # 10.3, 3% (mutant W2b, a 2% threshold: said)
        (22.0, True),  # 10.6, 6% (mutant W2, a 10% threshold: not said)
    ],
)
def test_a_stall_is_worth_a_word_when_it_moves_the_mean_by_more_than_five_percent(
    stall: float, said: bool
) -> None:
    from tracekit.analyzers.stability import spread_warning

    values = _stalled(stall)
    m = measure(values)
    assert m.outliers == (10,) and m.mean == 10.0 and not m.unstable
    text = spread_warning(values)
    assert (text is not None) is said
    if said:
        assert text == (
            "iteration latencies vary 2.3x (9.75 to 22 ms; coefficient of variation 25.4% over all 20): "
            "iteration 10 is an outlier (rule 'outlier': modified z-score > 3.5), and the mean includes it "
            "(10.6 ms, 10 without it)"
        )


def test_two_unstable_iterations_are_said() -> None:
    # 5 and 7 ms: coefficient of variation 23.6% (mutant W5, at least 3 iterations: nothing)
    from tracekit.analyzers.stability import spread_warning

    assert spread_warning([5.0, 7.0]) == (
        "iteration latencies vary 1.4x (5 to 7 ms; coefficient of variation 23.6% over all 2): unstable: "
        "coefficient of variation 23.6% (> 10%) (no outlier by rule 'outlier')"
    )


def test_instability_said_elsewhere_is_left_out_of_a_moved_mean() -> None:
    # NOISY with instability=False (the report's warning says it): the moved mean alone, no 'still unstable'
    # (mutant W10: the instability appended anyway)
    from tracekit.analyzers.stability import spread_warning

    noisy = [3120.0, 5515.0, 5628.0, 1239.0, 1691.0, 1546.0, 2323.0, 2014.0, 1218.0, 1697.0]
    assert spread_warning(noisy, instability=False) == (
        "iteration latencies vary 4.6x (1218 to 5628 ms; coefficient of variation 64.0% over all 10): "
        "iterations 1-2 are outliers (rule 'outlier': modified z-score > 3.5), and the mean includes them "
        "(2599 ms, 1856 without them)"
    )
    # an unstable set without outliers: nothing, its instability is said elsewhere
    assert spread_warning([5.0, 7.0] * 5, instability=False) is None


def test_a_first_iteration_that_is_the_slowest_is_the_spreads_top() -> None:
    # a 22 ms first iteration before the 19 of _stalled: warm-up, and the top of the range (mutant W15, the
    # maximum taken after the first: '1.1x (9.75 to 10.25 ms')
    from tracekit.analyzers.stability import spread_warning

    values = [22.0, *[9.75, 10.25] * 9, 10.0]
    assert spread_warning(values) == (
        "iteration latencies vary 2.3x (9.75 to 22 ms; coefficient of variation 25.4% over all 20): iteration 0 "
        "is warm-up (rule 'warmup'), and the mean includes it (10.6 ms, 10 without it)"
    )


# ---------------------------------------------------------------------------------- sweep.bound_doubt


def test_two_iterations_on_both_sides_are_a_doubt() -> None:
    # (mutant B1, at least 3 iterations: None)
    from tracekit.analyzers.sweep import bound_doubt

    assert bound_doubt([0.3, 0.7]) == (
        "verdict uncertain: the median utilization 50.0% (compute-bound) rests on 2 iterations on both sides of "
        "the 50% threshold: 1 framework-bound, 1 compute-bound (too few for an interval of the median)"
    )


def test_an_iteration_at_the_threshold_is_compute_bound() -> None:
    # 50% is compute-bound by the one rule (framework-bound is below): 1 and 3 (mutant B2, `<=`: 2 and 2)
    from tracekit.analyzers.sweep import bound_doubt

    assert bound_doubt([0.3, 0.5, 0.5, 0.7]) == (
        "verdict uncertain: the median utilization 50.0% (compute-bound) rests on 4 iterations on both sides of "
        "the 50% threshold: 1 framework-bound, 3 compute-bound (too few for an interval of the median)"
    )


def test_an_interval_whose_low_end_is_the_threshold_leaves_the_verdict_standing() -> None:
    # 10 iterations: the interval of the median is the 2nd and 9th in order, 50% to 70%: all of it
    # compute-bound (mutant B3, `low <= threshold`: a doubt)
    from tracekit.analyzers.sweep import bound_doubt

    assert bound_doubt([0.3, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.7, 0.8]) is None


def test_an_interval_whose_high_end_is_the_threshold_crosses_it() -> None:
    # the interval 20% to 50%: its top is compute-bound, so it lies across (mutant B4, `threshold < high`:
    # None)
    from tracekit.analyzers.sweep import bound_doubt

    assert bound_doubt([0.1, 0.2, 0.3, 0.3, 0.3, 0.3, 0.3, 0.4, 0.5, 0.9]) == (
        "verdict uncertain: the median utilization 30.0% (framework-bound) has a 95% interval of 20.0% to "
        "50.0%, across the 50% threshold: 8 of 10 iterations are framework-bound, 2 compute-bound"
    )


def test_an_iteration_without_a_utilization_is_no_side() -> None:
    # NaN (a latency of 0) is left out: 2 iterations (mutant B7: NaN counted, compute-bound, '3 iterations')
    from tracekit.analyzers.sweep import bound_doubt

    doubt = bound_doubt([0.3, float("nan"), 0.7])
    assert (
        doubt is not None
        and "rests on 2 iterations" in doubt
        and "1 framework-bound, 1 compute-bound" in doubt
    )


def test_analyze_weighs_the_split_at_its_bound_threshold(tmp_path: Path) -> None:
    # 6 iterations of 10 ms, 5.5 and 6.5 ms busy alternating (55%, 65%): at 50% all compute-bound, no doubt; at
    # --bound-threshold 0.6 they split 3 and 3, the interval of the median (the extremes, 6 iterations) across
    # (mutant B8, analyze's call at the default 50%: no doubt)
    from tests.test_stability14 import kineto_trace
    from tracekit.api import analyze

    path = kineto_trace(tmp_path, [10.0] * 6, [5.5, 6.5] * 3)
    assert analyze(path).summary.verdict_uncertain is None
    a = analyze(path, bound_threshold=0.6)
    assert a.summary.verdict_uncertain is not None
    assert "across the 60% threshold: 3 of 6 iterations are framework-bound, 3 compute-bound" in (
        a.summary.verdict_uncertain
    )


def test_the_interval_is_of_every_iteration() -> None:
    # 11 iterations: the interval of the median is the 2nd and 10th in order, 20% to 70%: across (mutant B10,
    # the interval of the 9 without the extremes, their 2nd and 8th: 55% to 60%, no doubt)
    from tracekit.analyzers.sweep import bound_doubt

    assert bound_doubt([0.1, 0.2, 0.55, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.7, 0.8]) == (
        "verdict uncertain: the median utilization 60.0% (compute-bound) has a 95% interval of 20.0% to 70.0%, "
        "across the 50% threshold: 2 of 11 iterations are framework-bound, 9 compute-bound"
    )


def test_the_report_weighs_the_split_at_its_bound_threshold(tmp_path: Path) -> None:
    # 6 iterations at 45% and 55% alternating: split at 50% (3 and 3, the interval of the median across), all
    # compute-bound at --bound-threshold 0.3: the report's row is doubted at 50% only (mutant B9, the report's
    # own check at 50% whatever the threshold: doubted at 0.3 too)
    from tests.test_stability14 import kineto_trace
    from tracekit.api import report_data
    from tracekit.session import AnalysisOptions

    path = kineto_trace(tmp_path, [10.0] * 6, [4.5, 5.5] * 3)
    built, _, _ = report_data([path], figures=False)
    (row,) = built.configs
    assert "across the 50% threshold: 3 of 6 iterations are framework-bound, 3 compute-bound" in (
        row["verdict_uncertain"] or ""
    )
    built, _, _ = report_data([path], AnalysisOptions.from_kwargs(bound_threshold=0.3), figures=False)
    assert built.configs[0]["bound"] == "compute"
    assert built.configs[0]["verdict_uncertain"] is None


# ------------------------------------------------------------------- ranges: ranges of no duration


def _ranges_trace(ranges: list[tuple[int, int, str]]) -> Any:
    """Three 1 ms ``iteration`` slots, each with a launch at +50 us and its kernel [+100, +300) us, and
    ``ranges`` (ns)."""
    from tests.builders import device_trace

    ms = 1_000_000
    ops = [(k * ms + 100_000, k * ms + 300_000, k + 1, 7, 0) for k in range(3)]
    api = [(k * ms + 50_000, k * ms + 60_000, k + 1, "cudaLaunchKernel") for k in range(3)]
    return device_trace(ranges=ranges, api=api, ops=ops)


def test_ranges_of_no_duration_of_a_name_that_never_has_one_are_left_alone() -> None:
    # 'marker' ranges are instants (all of them): no lost end, nothing left out and nothing said (mutant R2,
    # every range of no duration left out; R5, beside any range of any name with one: 'left out 2 ranges of no
    # duration ('marker') beside ranges of the same name that have one', which is false)
    from tracekit.analyzers.ranges import select_ranges

    ms = 1_000_000
    trace = _ranges_trace(
        [(0, ms, "iteration"), (ms, 2 * ms, "iteration"), (2 * ms, 3 * ms, "iteration")]
        + [(ms // 2, ms // 2, "marker"), (3 * ms // 2, 3 * ms // 2, "marker")]
    )
    choice = select_ranges(trace)
    assert choice.name == "iteration" and choice.frame.height == 3
    assert choice.warnings == []


def test_a_range_of_no_duration_leaves_a_range_starting_with_it_alone() -> None:
    # iteration [1, 1) ms lost its end; iteration [1, 2) ms begins at the same time: only the first is left out
    # (mutant R4, matched on start alone: both, 2 iterations)
    from tracekit.analyzers.ranges import select_ranges

    ms = 1_000_000
    trace = _ranges_trace(
        [
            (0, ms, "iteration"),
            (ms, ms, "iteration"),
            (ms, 2 * ms, "iteration"),
            (2 * ms, 3 * ms, "iteration"),
        ]
    )
    choice = select_ranges(trace)
    assert choice.frame.get_column("range_start").to_list() == [0, ms, 2 * ms]
    assert choice.frame.get_column("range_end").to_list() == [ms, 2 * ms, 3 * ms]
    assert [w[:59] for w in choice.warnings] == [
        "left out 1 range of no duration ('iteration') beside ranges"
    ]


# ------------------------------------------------------------- ranges: --split-idle against the ranges

#: Where the hand-built split traces begin (us).
BASE = 10_000

NO_THRESHOLD = (
    "longer than the shortest between two ranges, {between} ms: no --split-idle threshold cuts this trace at "
    "its ranges; analyze the ranges themselves, without --split-idle)"
)


def _split_said(
    ranges: list[tuple[int, int, int]], kernels: list[tuple[int, int, int]], split_ms: float
) -> tuple[int, list[str]]:
    """``--split-idle split_ms`` on ``iteration`` ranges (start, end, pid) and kernels (start, end, pid), in
    us, each kernel launched by a 1 us call 5 us before it (same process): the windows cut and the
    windows-against-ranges warnings."""
    from tests.builders import device_trace
    from tracekit.analyzers.ranges import select_ranges

    us = 1000
    trace = device_trace(
        ranges=[(a * us, b * us, "iteration", 0, "user", p, p) for a, b, p in ranges],
        api=[
            ((s - 5) * us, (s - 4) * us, i + 1, "cudaLaunchKernel", p) for i, (s, _, p) in enumerate(kernels)
        ],
        ops=[(s * us, e * us, i + 1, 7, 0, p) for i, (s, e, p) in enumerate(kernels)],
        range_fields=("start", "end", "name", "depth", "domain", "thread", "pid"),
        api_fields=("start", "end", "correlation", "name", "pid"),
        op_fields=("start", "end", "correlation", "stream", "device", "pid"),
    )
    choice = select_ranges(trace, split_idle_ms=split_ms)
    return choice.frame.height, [w for w in choice.warnings if "against" in w]


def _three_ranges(step: int = 1040) -> list[tuple[int, int, int]]:
    """Three 1000 us ``iteration`` ranges, one every ``step`` us from :data:`BASE`."""
    return [(BASE + step * k, BASE + step * k + 1000, 1) for k in range(3)]


def _kernels(
    offsets: list[list[tuple[int, int]]], ranges: list[tuple[int, int, int]]
) -> list[tuple[int, int, int]]:
    """Kernels at (start, end) offsets (us) from each range's start."""
    return [(a + s, a + e, 1) for (a, _, _), spans in zip(ranges, offsets, strict=True) for s, e in spans]


def test_a_longest_gap_inside_equal_to_the_shortest_between_leaves_no_threshold() -> None:
    # ranges every 1260 us; kernels [20, 120), [420, 520), [820, 980) in each: gaps of 300 us inside and
    # 300 us between (980 to the next range's +20). No threshold separates them: cutting at > 0.3 ms cuts
    # nothing, at less than that cuts both (mutant WA9, `longest > shortest`: 'a threshold between the two')
    ranges = _three_ranges(1260)
    kernels = _kernels([[(20, 120), (420, 520), (820, 980)]] * 3, ranges)
    assert _split_said(ranges, kernels, 0.1) == (
        9,
        [
            "9 windows against 3 ranges named 'iteration' in the trace: the threshold cuts inside iterations (an "
            "idle gap inside a range lasts up to 0.3 ms, " + NO_THRESHOLD.format(between="0.3")
        ],
    )


def test_a_gap_from_the_first_ranges_start_is_inside_it() -> None:
    # a kernel before the first range ends exactly at its start; the first range's first kernel starts 500 us
    # in: a 0.5 ms gap inside it (the others' 0.3 ms; between 0.08) (mutant WA6, a gap starting at the first
    # range's start left out: 'up to 0.3 ms')
    ranges = _three_ranges()
    first = [(500, 600), (620, 720), (820, 980)]
    rest = [(20, 120), (420, 520), (820, 980)]
    kernels = [(BASE - 200, BASE, 1), *_kernels([first, rest, rest], ranges)]
    assert _split_said(ranges, kernels, 0.1) == (
        6,
        [
            "6 windows against 3 ranges named 'iteration' in the trace: the threshold cuts inside iterations (an "
            "idle gap inside a range lasts up to 0.5 ms, " + NO_THRESHOLD.format(between="0.08")
        ],
    )


def test_a_gap_from_a_ranges_start_is_inside_it() -> None:
    # the first range's last kernel [150, 1040) ends exactly at the second range's start, whose first kernel
    # starts 500 us in: that 0.5 ms gap is inside the second range (mutant WA7, bisect_left: the first range's,
    # between: inside up to 0.22 ms)
    ranges = _three_ranges()
    kernels = _kernels([[(20, 120), (150, 1040)], [(500, 600), (820, 980)], [(20, 120), (150, 980)]], ranges)
    assert _split_said(ranges, kernels, 0.05) == (
        4,
        [
            "4 windows against 3 ranges named 'iteration' in the trace: the threshold cuts inside iterations (an "
            "idle gap inside a range lasts up to 0.5 ms, " + NO_THRESHOLD.format(between="0.08")
        ],
    )


def test_a_gap_up_to_a_ranges_end_is_inside_it() -> None:
    # the first range's second kernel starts exactly at its end (1000 us): the 0.88 ms gap before it is inside
    # (mutant WA8, `reach > b`: between, inside up to 0.7 ms)
    ranges = _three_ranges()
    kernels = _kernels([[(20, 120), (1000, 1030)], [(20, 120), (820, 980)], [(20, 120), (820, 980)]], ranges)
    assert _split_said(ranges, kernels, 0.1) == (
        4,
        [
            "4 windows against 3 ranges named 'iteration' in the trace: the threshold cuts inside iterations (an "
            "idle gap inside a range lasts up to 0.88 ms, " + NO_THRESHOLD.format(between="0.03")
        ],
    )


def test_a_gap_up_to_the_last_ranges_end_is_inside_it() -> None:
    # the last range's second kernel starts exactly at its end: its 0.88 ms gap counts, inside (mutant WA11,
    # `b >= reach`: left out, up to 0.7 ms)
    ranges = _three_ranges()
    kernels = _kernels([[(20, 120), (820, 980)], [(20, 120), (820, 980)], [(20, 120), (1000, 1020)]], ranges)
    assert _split_said(ranges, kernels, 0.1) == (
        4,
        [
            "4 windows against 3 ranges named 'iteration' in the trace: the threshold cuts inside iterations (an "
            "idle gap inside a range lasts up to 0.88 ms, " + NO_THRESHOLD.format(between="0.08")
        ],
    )


def test_a_gap_inside_an_earlier_longer_range_is_inside() -> None:
    # process 1's range [0, 3000) us and process 2's [200, 700) inside it (both launch work), then process 1's
    # [3040, 4040). The gap [350, 1500) follows the later-starting short range's end but lies inside the long
    # one: inside, 1.15 ms (mutant WA10, each range's own end: between, inside up to 0.24 ms)
    ranges = [(BASE, BASE + 3000, 1), (BASE + 200, BASE + 700, 2), (BASE + 3040, BASE + 4040, 1)]
    kernels = [
        (BASE + 20, BASE + 120, 1),
        (BASE + 250, BASE + 350, 2),
        (BASE + 1500, BASE + 2900, 1),
        (BASE + 3060, BASE + 3160, 1),
        (BASE + 3400, BASE + 4000, 1),
    ]
    assert _split_said(ranges, kernels, 0.1) == (
        5,
        [
            "5 windows against 3 ranges named 'iteration' in the trace: the threshold cuts inside iterations (an "
            "idle gap inside a range lasts up to 1.15 ms, " + NO_THRESHOLD.format(between="0.16")
        ],
    )


def test_windows_joining_ranges_without_idle_inside_them_say_the_count_alone() -> None:
    # one kernel [20, 980) us a range: no idle gap inside any, 80 us between: --split-idle 0.1 joins all three
    # into one window; with no gap inside to weigh, the count alone is said (mutant WA13, advice on no gaps:
    # max() of nothing raises)
    ranges = _three_ranges()
    kernels = _kernels([[(20, 980)]] * 3, ranges)
    assert _split_said(ranges, kernels, 0.1) == (
        1,
        ["1 window against 3 ranges named 'iteration' in the trace: the threshold joins iterations"],
    )


# ------------------------------------------------------------------------------ steps.outermost_steps


def _outermost(
    ranges: list[tuple[int, int, str, int] | tuple[int, int, str, int, str]],
) -> list[tuple[Any, ...]]:
    """:func:`tracekit.analyzers.steps.outermost_steps` of ranges (start, end, name, pid[, domain]) as
    (start, end, name, pid) rows."""
    from tests.builders import make_trace
    from tracekit.analyzers.steps import outermost_steps

    rows = [(r[0], r[1], r[2], 0, r[4] if len(r) > 4 else "user", 1, r[3]) for r in ranges]
    trace = make_trace(ranges=rows, range_fields=("start", "end", "name", "depth", "domain", "thread", "pid"))
    return outermost_steps(trace).select("start", "end", "name", "pid").rows()


DECODE = "step[DECODE bs=32]"
EXECUTE = "execute_32_context_0(0)_generation_32(32)"


def test_a_step_annotated_twice_over_the_same_interval_counts_once() -> None:
    # two step ranges over exactly [0, 10): the first is kept (mutant O1, `reach > end`: both)
    assert _outermost([(0, 10, EXECUTE, 1), (0, 10, DECODE, 1)]) == [(0, 10, EXECUTE, 1)]


def test_a_step_starting_with_its_enclosing_step_is_held_by_it() -> None:
    # [0, 5) inside [0, 10): same start, the longer is the outer one whatever their order in the trace (mutant
    # O3, shorter first: both kept)
    assert _outermost([(0, 5, DECODE, 1), (0, 10, EXECUTE, 1)]) == [(0, 10, EXECUTE, 1)]


def test_steps_of_another_process_are_not_held() -> None:
    # a data-parallel rank's step [2, 5) during another's [0, 10): each is a step (mutant O2, across
    # processes: the second dropped)
    assert _outermost([(0, 10, DECODE, 1), (2, 5, DECODE, 2)]) == [(0, 10, DECODE, 1), (2, 5, DECODE, 2)]


def test_a_step_after_another_inner_one_is_still_held_by_the_outer() -> None:
    # [30, 40) follows [10, 20), both inside [0, 100) (mutant O4, the previous end alone: [30, 40) kept)
    assert _outermost([(0, 100, EXECUTE, 1), (10, 20, DECODE, 1), (30, 40, DECODE, 1)]) == [
        (0, 100, EXECUTE, 1)
    ]


def test_gpu_side_copies_of_steps_are_no_steps() -> None:
    # Kineto's GPU-side copy of a step (domain 'gpu') spans its device work, not the step (mutant O5: kept)
    assert _outermost([(0, 10, DECODE, 1), (3, 8, DECODE, 0, "gpu")]) == [(0, 10, DECODE, 1)]


# ------------------------------------------------------------ iterations' spread wiring, report's sweeps


def test_analyze_names_a_dropped_iteration_by_its_index(tmp_path: Path) -> None:
    # three 10 ms iterations skipped (--skip 3), then the 20 of _stalled(22): the stall is iteration 13 of the
    # trace, the 11th analyzed (mutant IW2, positions: 'iteration 10')
    from tests.test_stability14 import kineto_trace
    from tracekit.api import analyze

    path = kineto_trace(tmp_path, [10.0] * 3 + _stalled(22.0), 2.0)
    a = analyze(path, skip=3)
    assert a.iterations.get_column("index").to_list()[:2] == [3, 4]
    assert [w for w in a.warnings if "vary" in w] == [
        "iteration latencies vary 2.3x (9.75 to 22 ms; coefficient of variation 25.4% over all 20): iteration 13 "
        "is an outlier (rule 'outlier': modified z-score > 3.5), and the mean includes it (10.6 ms, 10 without it)"
    ]


def test_a_row_without_a_verdict_goes_by_its_utilization_at_the_reports_threshold() -> None:
    # rows without a verdict at 20%, 40% and 60%: framework-bound below 50% (batches 1, 2), below 30% at
    # --bound-threshold 0.3 (batch 1) (mutant RP2, their utilization weighed at 50% whatever the threshold)
    from tests.test_report import make_row
    from tracekit.analyzers.report import build_report

    rows = [make_row("pytorch", b, 10.0, busy=busy) for b, busy in ((1, 2.0), (2, 4.0), (4, 6.0))]
    assert build_report(rows).sweeps[0]["framework_bound_batch_sizes"] == [1, 2]
    assert build_report(rows, bound_threshold=0.3).sweeps[0]["framework_bound_batch_sizes"] == [1]


# ------------------------------------------------------------------------------ second batch of mutants


def test_an_op_whose_id_two_calls_carry_waits_from_the_first(tmp_path: Path) -> None:
    # one correlation id on two launch calls, [50, 60) and [3000, 3010) us, its kernel [3100, 3200): the op is
    # pending from the first call's end, so [100, 3000) is no silence; only [3200, 5000) is, 1.8 ms (mutant Q1,
    # from the last call's end: 2.9 ms more)
    events = [
        kineto_event("user_annotation", "ProfilerStep#1", 0, 5000),
        kineto_event("cpu_op", "aten::linear", 0, 100),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 50, 10, correlation=1),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 3000, 10, correlation=1),
        kineto_event("kernel", "gemm", 3100, 100, pid=0, tid=7, correlation=1, stream=7, device=0),
    ]
    trace = read_trace(kineto_file(tmp_path, events, "reused.synthetic.json"))
    assert trace.api.height == 2
    assert P.unrecorded_ns(trace, _windows([(0, 5_000_000)])).to_list() == [1_800_000]


def test_the_host_silence_doubt_gives_the_median_latency(tmp_path: Path) -> None:
    # the three iterations of the median test: latencies 5, 0.2 and 0.2 ms, silences 4.8, 0 and 0 ms: medians
    # 0.2 ms and 0 (mutant Q3, the mean latency: 1.800 ms)
    trace = read_trace(kineto_file(tmp_path, _one_step(), "median_latency.synthetic.json"))
    frame = pl.DataFrame(
        {
            "window_start": [0, 2_000_000, 2_000_000],
            "window_end": [5_000_000, 2_200_000, 2_200_000],
            "latency_ns": [5_000_000, 200_000, 200_000],
            "busy_ns": [100_000, 98_000, 200_000],
        }
    )
    doubt = P.unrecorded_host(trace, frame, 0.5) or ""
    assert "a median 0.000 ms an iteration, of a median latency of 0.200 ms (0.0%)" in doubt


def test_the_engine_steps_hint_weighs_the_median_step() -> None:
    # host execute_* steps of 50, 300 and 300 us against 100 us iterations: the median step (300 us) is longer,
    # no hint (mutant Q11, the shortest step: a hint)
    from tests.builders import make_trace

    name = "execute_context_0(0)_generation_4(4)"
    trace = make_trace(ranges=[(0, 50_000, name), (1_000_000, 1_300_000, name), (2_000_000, 2_300_000, name)])
    assert P._engine_steps_hint(trace, 100_000.0) == ""
    assert P._engine_steps_hint(trace, 300_001.0) != ""


def test_the_idle_doubt_counts_every_analyzed_iteration(tmp_path: Path) -> None:
    # 3 steps (DECODE 70%, IDLE 10%, IDLE 10%) and an iteration that holds no step (10%): the median 10.0% is
    # over all 4, so '2 of the 4' (mutant Q2, idle and served alone: 'of the 3')
    steps = [("DECODE", 7), ("IDLE", 1), ("IDLE", 1)]
    trace = read_trace(kineto_file(tmp_path, _sglang_steps(steps), "unclassified.synthetic.json"))
    frame = pl.DataFrame(
        {
            "iteration": list(range(4)),
            "range_start": [k * 1_000_000 for k in range(4)],
            "range_end": [(k + 1) * 1_000_000 for k in range(4)],
            "name": ["step[DECODE bs=8]", "step[IDLE bs=0]", "step[IDLE bs=0]", "iteration"],
            "pid": [1] * 4,
            "latency_ns": [1_000_000] * 4,
            "busy_ns": [700_000, 100_000, 100_000, 100_000],
        }
    )
    doubt = P.idle_steps(trace, frame, 0.5) or ""
    assert doubt.startswith("verdict uncertain: 2 of the 4 steps are idle steps")


def test_two_ranges_of_no_duration_are_counted_as_two() -> None:
    # two 'iteration' ranges lost their ends (mutant Q5, counted by name: 'left out 1 range')
    from tracekit.analyzers.ranges import select_ranges

    ms = 1_000_000
    trace = _ranges_trace(
        [(0, ms, "iteration"), (ms, ms, "iteration"), (ms, 2 * ms, "iteration")]
        + [(2 * ms, 2 * ms, "iteration"), (2 * ms, 3 * ms, "iteration")]
    )
    choice = select_ranges(trace)
    assert choice.frame.height == 3
    assert [w[:60] for w in choice.warnings] == [
        "left out 2 ranges of no duration ('iteration') beside ranges"
    ]
