"""Measurement statistics (tracekit.analyzers.stability) and adaptive timing (collectors.harness.TimingBudget):
exact answers on hand-made sets, invariants on random ones. Every value set here is synthetic."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.analyzers.stability import (
    MIN_CI_SAMPLES,
    Measurement,
    difference,
    is_tight,
    measure,
    median_ci_ranks,
    outlier_indices,
    ratio_state,
    warmup_prefix,
)
from tracekit.collectors.harness import TimingBudget, time_iterations


def test_median_interval_ranks_are_the_binomial_order_statistics() -> None:
    # n = 6: only the extremes hold the median with >= 95% (1 - 2 / 64 = 96.9%); below 6 nothing does.
    assert median_ci_ranks(5) is None
    assert median_ci_ranks(6) == (0, 5)
    # n = 20: P(Binomial(20, 1/2) <= 5) = 2.07% <= 2.5% < P(<= 6) = 5.77%: ranks 5 and 14 (0-based).
    assert median_ci_ranks(20) == (5, 14)
    # n = 100: the textbook ranks 40 and 61 (1-based).
    assert median_ci_ranks(100) == (39, 60)
    # Large n uses the normal approximation: close to n/2 -+ 1.96 sqrt(n)/2.
    lo, hi = median_ci_ranks(10_000)  # type: ignore[misc]
    assert abs(lo - (5000 - 1.96 * 50)) <= 2 and hi == 9999 - lo


def test_exact_statistics_of_a_hand_made_set() -> None:
    values = [10.0, 11.0, 9.0, 10.5, 9.5, 10.0, 10.2, 9.8]
    m = measure(values)
    assert m.count == 8 and m.kept == 8 and m.dropped == {}
    assert m.median == pytest.approx(10.0)
    # n = 8: ranks 0 and 7 (P(X <= 0) = 0.39%, P(X <= 1) = 3.5%): the interval is [min, max].
    assert (m.ci_low, m.ci_high) == (9.0, 11.0)
    assert m.mean == pytest.approx(statistics.fmean(values))
    assert m.cv == pytest.approx(statistics.stdev(values) / statistics.fmean(values))
    assert not m.unstable and m.warnings == ()


def test_the_issue_case_warmup_then_stable() -> None:
    """Issue 28's batch-1 run: five iterations at 1.7-2.0 s (another process had the CPU), then ~230 ms."""
    rng = random.Random(7)
    slow = [1800.0, 1900.0, 1700.0, 2000.0, 1750.0]
    fast = [230.0 + rng.uniform(-5, 5) for _ in range(15)]
    # the process got 0.3 s of CPU per second in the slow iterations, 1.9 (two busy cores) in the others
    cpu = [v * 0.3 for v in slow] + [v * 1.9 for v in fast]
    m = measure(slow + fast, cpu, device="cpu")
    assert m.warmup == (0, 1, 2, 3, 4) and m.outliers == ()
    assert m.dropped == {0: "warmup", 1: "warmup", 2: "warmup", 3: "warmup", 4: "warmup"}
    assert m.median == pytest.approx(statistics.median(fast))
    assert m.ci_low is not None and m.ci_high is not None and m.ci_low >= min(fast) and m.ci_high <= max(fast)
    assert m.cause == "cpu_stolen" and m.cpu_per_wall == pytest.approx(1.9)
    assert "iterations 0-4" in m.notes[0] and "15 of 20 iterations kept" in m.notes[0]
    assert any("another process held" in w for w in m.warnings)
    # The mean of all twenty (what the report used to show) is five times the truth.
    assert statistics.fmean(slow + fast) > 2 * m.median


def test_outliers_dropped_by_rule_and_named() -> None:
    values = [5.0, 5.1, 4.9, 5.0, 5.05, 4.95, 50.0, 5.0, 5.02, 4.98, 5.01, 4.99]
    m = measure(values)
    assert m.outliers == (6,) and m.warmup == ()
    assert m.median == pytest.approx(statistics.median([v for i, v in enumerate(values) if i != 6]))
    assert "rule 'outlier'" in m.notes[0] and "iteration 6" in m.notes[0]
    # More than a quarter would be outliers: none are dropped, the set is called unstable (no single mode).
    bimodal = [1.0, 1.01, 0.99, 1.0, 1.0, 1.02, 0.98, 1.0, 9.0, 9.0, 9.0, 9.1]
    assert outlier_indices(bimodal[:8] + bimodal[8:]) == []
    mb = measure(bimodal)
    assert mb.outliers == () and mb.unstable and "no single mode" in mb.warnings[-1]


def test_trend_and_instability() -> None:
    rising = [10.0 + 0.1 * i + (0.05 if i % 2 else -0.05) for i in range(60)]
    m = measure(rising)
    assert m.trend is not None and m.trend.startswith("rose from")
    assert m.unstable and "latency rose" in m.warnings[0]
    flat = [10.0 + (0.05 if i % 2 else -0.05) for i in range(60)]
    assert measure(flat).trend is None and not measure(flat).unstable


def test_more_cpu_work_is_not_called_stolen() -> None:
    wall = [10.0] * 10 + [20.0] * 4 + [10.0] * 10
    cpu = [w * 1.0 for w in wall]  # CPU time grew with the wall time
    m = measure(wall, cpu, device="cpu")
    assert m.cause == "more_cpu_work"
    assert not any("another process" in w for w in m.warnings)


def test_nulls_and_tiny_sets() -> None:
    assert measure([]).median is None
    m = measure([3.0, None, 5.0, float("nan"), 4.0])  # type: ignore[list-item]
    assert m.count == 3 and m.median == 4.0 and not m.noise_known and m.relative_ci is None
    assert Measurement.from_json({"mean": 3.0}) is None
    assert Measurement.from_json(m.to_json()) == m


def test_difference_states_only_outside_the_noise() -> None:
    a = measure([10.0 + 0.1 * (i % 5) for i in range(20)])  # 10.0 .. 10.4
    b = measure([10.1 + 0.1 * (i % 5) for i in range(20)])  # overlapping
    c = measure([12.0 + 0.1 * (i % 5) for i in range(20)])  # clearly higher
    assert difference(a, b).significant is False
    d = difference(a, c)
    assert d.significant is True and d.ratio == pytest.approx(12.2 / 10.2)
    assert d.ratio_low == pytest.approx(c.ci_low / a.ci_high) and d.ratio_high == pytest.approx(
        c.ci_high / a.ci_low
    )
    # Against a threshold: the whole interval below, above, or straddling it.
    assert ratio_state(d, 1.1) == "above" and ratio_state(d, 1.3) == "below"
    assert ratio_state(d, 1.2) == "within noise"
    # Without an interval (fewer than 6 iterations): the medians alone, significance unknown.
    few = difference(measure([1.0, 2.0, 3.0]), measure([4.0, 5.0, 6.0]))
    assert few.significant is None and few.ratio == pytest.approx(2.5) and ratio_state(few, 2.0) == "above"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(min_value=0.01, max_value=1e4, allow_nan=False), min_size=1, max_size=80),
)
def test_invariants(values: list[float]) -> None:
    m = measure(values)
    assert m.count == len(values) and m.kept + len(m.dropped) == m.count and m.kept >= 1
    assert len(m.warmup) <= len(values) // 2
    kept = [v for i, v in enumerate(values) if i not in m.dropped]
    assert m.median == pytest.approx(statistics.median(kept))
    assert min(values) <= m.median <= max(values)  # type: ignore[operator]
    if m.kept >= MIN_CI_SAMPLES:
        assert m.ci_low is not None and m.ci_high is not None
        assert min(kept) <= m.ci_low <= m.median <= m.ci_high <= max(kept)  # type: ignore[operator]
    else:
        assert not m.noise_known
    assert warmup_prefix(values) == len(m.warmup)
    # a set is never "different" from itself
    assert difference(m, m).significant in (False, None)


def test_interval_coverage_on_known_distribution() -> None:
    """The 95% interval holds the true median in about 95% of repeated samples (seeded; exponential values,
    skewed like latencies)."""
    rng = random.Random(3)
    true_median = math.log(2)
    hits = 0
    trials = 400
    for _ in range(trials):
        sample = [rng.expovariate(1.0) for _ in range(30)]
        ranks = median_ci_ranks(30)
        assert ranks is not None
        ordered = sorted(sample)
        hits += ordered[ranks[0]] <= true_median <= ordered[ranks[1]]
    assert 0.93 <= hits / trials <= 0.995


# ------------------------------------------------------------------------------------------ adaptive timing


class _Clock:
    """A fake perf_counter/perf_counter_ns/process_time_ns: each run() advances it by the next duration."""

    def __init__(self, durations_ms: list[float]) -> None:
        self.t_ns = 0
        self.cpu_ns = 0
        self.durations = iter(durations_ms)

    def run(self) -> None:
        step = int(next(self.durations) * 1e6)
        self.t_ns += step
        self.cpu_ns += step // 2


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    def make(durations: list[float]) -> _Clock:
        c = _Clock(durations)
        import tracekit.collectors.harness as harness

        monkeypatch.setattr(harness.time, "perf_counter_ns", lambda: c.t_ns)
        monkeypatch.setattr(harness.time, "perf_counter", lambda: c.t_ns / 1e9)
        monkeypatch.setattr(harness.time, "process_time_ns", lambda: c.cpu_ns)
        return c

    return make


def test_budget_stops_when_the_interval_is_tight(clock) -> None:  # type: ignore[no-untyped-def]
    c = clock([10.0] * 1000)
    cpu: list[float] = []
    budget = TimingBudget(min_time_s=0.0, max_time_s=100.0, target=0.02)
    lat = time_iterations(c.run, lambda: None, 0, 3, cpu_ms=cpu, budget=budget)
    # Identical iterations: the interval (from 6 on) has zero width, so timing stops at the first check.
    assert len(lat) == MIN_CI_SAMPLES and budget.stopped_by == "tight"
    assert cpu == [5.0] * len(lat)


def test_budget_min_time_then_max_time(clock) -> None:  # type: ignore[no-untyped-def]
    c = clock([10.0] * 1000)
    budget = TimingBudget(min_time_s=0.5, max_time_s=100.0)
    lat = time_iterations(c.run, lambda: None, 0, 3, budget=budget)
    assert len(lat) == 50 and budget.stopped_by == "tight"  # 50 x 10 ms = the 0.5 s minimum
    noisy = [10.0 if i % 2 else 30.0 for i in range(1000)]  # never within 2%
    c2 = clock(noisy)
    budget = TimingBudget(min_time_s=0.0, max_time_s=1.0)
    lat = time_iterations(c2.run, lambda: None, 0, 3, budget=budget)
    assert budget.stopped_by == "max_time" and sum(lat) == pytest.approx(1000.0, abs=30.0)
    # --max-time 0: exactly --iters iterations.
    c3 = clock([10.0] * 10)
    budget = TimingBudget(min_time_s=1.0, max_time_s=0.0)
    assert len(time_iterations(c3.run, lambda: None, 0, 4, budget=budget)) == 4


def test_is_tight() -> None:
    assert is_tight(measure([10.0] * 10))
    assert not is_tight(measure([10.0, 12.0] * 10))
    assert not is_tight(measure([10.0] * 3))  # no interval yet


def test_preemption_names_the_cause_when_cpu_time_cannot() -> None:
    """Spinning threads keep CPU time growing with wall time; involuntary context switches still show that
    the scheduler took the CPU away (synthetic counts)."""
    wall = [10.0] * 10 + [20.0] * 4 + [10.0] * 10
    cpu = list(wall)  # CPU time grew with wall time: alone, no cause
    assert measure(wall, cpu, device="cpu").cause == "more_cpu_work"
    m = measure(wall, cpu, device="cpu", preempted=[0] * 10 + [5] * 4 + [0] * 10)
    assert m.cause == "preempted" and "preempted 5 times per slow iteration against 0" in m.warnings[0]
    # as often per ms as the others: not a cause
    even = measure(wall, cpu, device="cpu", preempted=[1] * 10 + [2] * 4 + [1] * 10)
    assert even.cause == "more_cpu_work"


def test_harness_records_involuntary_switches(clock) -> None:  # type: ignore[no-untyped-def]
    c = clock([1.0] * 10)
    switches: list[int] = []
    time_iterations(c.run, lambda: None, 0, 5, preempted=switches)
    assert len(switches) == 5 and all(isinstance(n, int) and n >= 0 for n in switches)


def test_table_measured_over_published_carries_the_interval() -> None:
    """`table --paper`: measured / published latency with the untraced median's 95% interval beside it."""
    from tracekit.analyzers.paper import PAPER_SETUP, align_with_paper
    from tracekit.analyzers.table import _untraced_center
    from tracekit.renderers.table import ratio_cell

    stats = {"mean": 12.0, "median": 10.54, "ci_low": 10.0, "ci_high": 11.0}  # as collect records them
    assert _untraced_center(stats) == 10.54 and _untraced_center({"mean": 12.0}) == 12.0
    row = {
        "runtime": "pytorch",
        "batch_size": PAPER_SETUP["batch_size"],
        "precision": PAPER_SETUP["precision"],
        "seq_len": PAPER_SETUP["seq_len"],
        "untraced_latency_ms": _untraced_center(stats),
        "untraced_ci_low": stats["ci_low"],
        "untraced_ci_high": stats["ci_high"],
    }
    entry = next(e for e in align_with_paper([row]) if e["measured"] == 0)
    assert entry["latency_ratio"] == pytest.approx(1.0)  # the paper's PyTorch row: 10.54 ms
    assert entry["latency_ratio_low"] == pytest.approx(10.0 / 10.54)
    assert ratio_cell(entry) == "1.00× [0.95–1.04]"


def test_stolen_cpu_with_preemption_says_the_wait_was_for_a_cpu() -> None:
    wall = [10.0] * 10 + [20.0] * 4 + [10.0] * 10
    cpu = [10.0] * 10 + [10.0] * 4 + [10.0] * 10  # the slow iterations got no more CPU: half their time lost
    alone = measure(wall, cpu, device="cpu")
    assert (
        alone.cause == "cpu_stolen"
        and "or for I/O" in alone.warnings[0]
        and "preempted" not in alone.warnings[0]
    )
    both = measure(wall, cpu, device="cpu", preempted=[0] * 10 + [7] * 4 + [0] * 10)
    assert both.cause == "cpu_stolen" and "preempted 7 times per slow iteration against 0" in both.warnings[0]


# -- a slow start left in a trace (analyze) ---------------------------------------------------------------------
def test_slow_start_counts_leading_slow_iterations_that_move_the_mean() -> None:
    from tracekit.analyzers.stability import slow_start

    steady = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 0.99]
    assert slow_start([100.0, *steady]) == 1
    assert slow_start([3.0, 2.0, *steady]) == 2
    assert slow_start(steady) == 0
    assert slow_start([0.5, *steady]) == 0  # a fast start is no warm-up
    # a slow first iteration too small to move the mean by 5%: 1.2 among nine of 1.0 moves it 2%
    assert slow_start([1.2, *[1.0] * 9]) == 0
    assert slow_start([1.6, *[1.0] * 9]) == 1  # 6%
    assert slow_start([9.0, 1.0, 1.0]) == 0  # fewer than 4: no second half to judge by


def _warm_trace():
    from tests.builders import make_trace

    ms = 1_000_000
    ranges = [(0, 100 * ms, "iteration")] + [
        (100 * ms + i * ms, 100 * ms + (i + 1) * ms - 1000, "iteration") for i in range(9)
    ]
    api = [(s + 1000, s + 2000, i, "cudaLaunchKernel") for i, (s, _, _) in enumerate(ranges)]
    ops = [(s + 3000, e - 5000, i, 7) for i, (s, e, _) in enumerate(ranges)]
    return make_trace(ranges=ranges, api=api, ops=ops)


def test_analyze_warns_of_a_slow_start_in_the_means() -> None:
    # a first iteration of 100 ms before nine of 1 ms (lazy loading, compilation) read a mean latency of
    # 10.899 ms, and a CUDA-graph projection from that mean, without a word
    from tracekit.analyzers.iterations import analyze_iterations

    said = [w for w in analyze_iterations(_warm_trace(), skip=None).warnings if "slow start" in w]
    assert said == [
        "the first 1 of 10 'iteration' iterations are a slow start (100.000 ms, against a median of 0.999 ms for "
        "the rest): warm-up in the trace (lazy loading, compilation, cold caches); the means, the medians and the "
        "verdict include them (mean latency 10.899 ms, 0.999 without them; median 0.999 ms, 0.999 without them): "
        "--skip 1 drops them"
    ]
    # a --skip the user chose is theirs: no word
    assert not [w for w in analyze_iterations(_warm_trace(), skip=0).warnings if "slow start" in w]
    assert analyze_iterations(_warm_trace(), skip=1).iterations.height == 9


def test_a_slow_first_half_is_not_called_warm_up_alone_and_moves_the_medians() -> None:
    # a real H200 compile-cudagraphs b8 trace (sample_traces/h200_bert_fp16/compile-cudagraphs-run5): its first
    # 10 of 20 iterations at 1.36-1.49 ms, the last 10 at 1.18-1.28. The warning had said "warm-up in the
    # trace ... the medians and the verdict do not [include them]", while the median, 1.319 ms, lay between
    # the two levels.
    from tests.builders import make_trace
    from tracekit.analyzers.iterations import analyze_iterations

    us = 1_000

    def slow_start_said(lengths_us: list[int]) -> list[str]:
        starts, t = [], 0
        for length in lengths_us:
            starts.append((t, t + length * us))
            t += length * us + 10 * us
        ranges = [(s, e, "iteration") for s, e in starts]
        api = [(s + us, s + 2 * us, i, "cudaLaunchKernel") for i, (s, _) in enumerate(starts)]
        ops = [(s + 3 * us, e - 5 * us, i, 7) for i, (s, e) in enumerate(starts)]
        warnings = analyze_iterations(make_trace(ranges=ranges, api=api, ops=ops), skip=None).warnings
        return [w for w in warnings if "slow start" in w]

    # a cold first step decaying over the first half (the sweep-cuda-graphs b2 sample's shape) is warm-up, and
    # the median moves a little
    assert slow_start_said([1550, 900, 890, 880, 870, 844, 844, 843, 853, 840]) == [
        "the first 5 of 10 'iteration' iterations are a slow start (1.550, 0.900, 0.890, ... ms, against a "
        "median of 0.844 ms for the rest): warm-up in the trace (lazy loading, compilation, cold caches); the "
        "means, the medians and the verdict include them (mean latency 0.931 ms, 0.845 without them; median "
        "0.861 ms, 0.844 without them): --skip 5 drops them"
    ]
    assert slow_start_said([1450] * 10 + [1220] * 10) == [
        "the first 10 of 20 'iteration' iterations are a slow start (1.450, 1.450, 1.450, ... ms, against a "
        "median of 1.220 ms for the rest): the whole first half of the run, at one level: warm-up left in the "
        "trace and a change of level during the run (GPU clocks, host load, another process) cannot be told apart; the "
        "means, the medians and the verdict include them (mean latency 1.335 ms, 1.220 without them; median "
        "1.335 ms, 1.220 without them): --skip 10 drops them, a longer run would tell which"
    ]


def test_median_ci_ranks_is_fast_over_long_runs() -> None:
    """The trend rule takes two intervals over thirds of the kept iterations: a 2,500-iteration trace (10^6
    kernels) asks for n = 833, which a CDF summed anew for each rank had taken 0.3 s to give (and grew as n^2);
    every n up to 1,000 now takes a few milliseconds in all, with the ranks the exact sums give."""
    import time

    start = time.perf_counter()
    ranks = [median_ci_ranks(n) for n in range(6, 1001)]
    assert time.perf_counter() - start < 2.0
    assert ranks[833 - 6] == (387, 445)
    assert median_ci_ranks(1001) == (468, 532)
