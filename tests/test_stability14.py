"""stability14: a mean or a verdict shown with confidence on iterations that contradict it.

Every trace here is hand-built (synthetic: the file names say so and the Kineto header carries
``"tracekit_synthetic": true``), with per-iteration latencies whose statistics are worked out by hand:

- :data:`NOISY` (firsthour13's CPU run, ``runs/bert-pt/pytorch_b4_s32``): mean of all ten 2599.1 ms; the
  modified z-scores against the median 1855.5 ms (MAD 542) are 4.55 and 4.69 for iterations 1 and 2 (5515,
  5628 ms), above 3.5: outliers by rule 'outlier'; 3120 ms (iteration 0) scores 1.57 and stays. Mean of the eight
  kept 14848 / 8 = 1856.0 ms (their coefficient of variation 33.9%); the warm-up rule drops nothing (3120 ms
  against the second half's median 1697 ms and MAD 317 scores 3.03). Max / min = 5628 / 1218 = 4.6x; the
  coefficient of variation of all ten (n - 1) 64.0%.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.builders import kineto_event
from tracekit.analyzers.stability import measure

#: firsthour13's noisy CPU run: iteration latencies (ms) in order.
NOISY = [3120.0, 5515.0, 5628.0, 1239.0, 1691.0, 1546.0, 2323.0, 2014.0, 1218.0, 1697.0]


def kineto_trace(
    folder: Path, latencies_ms: list[float], busy_ms: float | list[float], name: str = "pytorch_b4_s32"
) -> Path:
    """A synthetic Kineto trace (GPU): one ``iteration`` user range per latency (ms), 0.1 ms apart; in each a
    5 us ``cudaLaunchKernel`` at +10 us and its kernel from +20 us, ``busy_ms`` long (one value or one per
    iteration). File ``<name>.synthetic.json`` in ``folder``."""
    busy = busy_ms if isinstance(busy_ms, list) else [busy_ms] * len(latencies_ms)
    events: list[dict[str, Any]] = []
    t = 1_000_000.0  # us
    for i, (length, work) in enumerate(zip(latencies_ms, busy, strict=True)):
        events.append(kineto_event("user_annotation", "iteration", t, length * 1e3))
        events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", t + 10, 5, correlation=i + 1))
        events.append(
            kineto_event("kernel", "gemm", t + 20, work * 1e3, 0, 7, correlation=i + 1, device=0, stream=7)
        )
        t += length * 1e3 + 100
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events}))
    return path


def run_json(command: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    from tracekit.cli import main

    assert main([command, *argv, "--format", "json", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------------------- the numbers themselves


def test_the_noisy_runs_numbers_are_the_ones_worked_out_by_hand() -> None:
    m = measure(NOISY)
    assert m.outliers == (1, 2) and m.warmup == ()
    assert m.mean == pytest.approx(1856.0) and statistics.fmean(NOISY) == pytest.approx(2599.1)
    assert m.cv == pytest.approx(0.33937, abs=1e-5) and m.unstable
    assert statistics.stdev(NOISY) / statistics.fmean(NOISY) == pytest.approx(0.63960, abs=1e-5)


# ---------------------------------------------------------------- 1. one warning where the mean misleads


def test_spread_warning_names_the_outliers_the_mean_includes() -> None:
    from tracekit.analyzers.stability import spread_warning

    said = spread_warning(NOISY)
    assert said == (
        "iteration latencies vary 4.6x (1218 to 5628 ms; coefficient of variation 64.0% over all 10): "
        "iterations 1-2 are outliers (rule 'outlier': modified z-score > 3.5), and the mean includes them "
        "(2599 ms, 1856 without them); without them still unstable: coefficient of variation 33.9% (> 10%)"
    )


def test_spread_warning_for_a_mean_that_leaves_the_outliers_out() -> None:
    # The report's traced mean is the kept iterations' (1856 ms): said the other way round.
    from tracekit.analyzers.stability import spread_warning

    said = spread_warning(NOISY, mean_kept=True)
    assert said is not None and said.endswith(
        "iterations 1-2 are outliers (rule 'outlier': modified z-score > 3.5), and the mean leaves them out "
        "(1856 ms, 2599 with them, the mean of every iteration); without them still unstable: coefficient of "
        "variation 33.9% (> 10%)"
    )


def test_spread_warning_is_silent_on_a_steady_set_and_on_an_outlier_that_moves_the_mean_little() -> None:
    from tracekit.analyzers.stability import spread_warning

    steady = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 10.02, 9.98, 10.01]
    assert spread_warning(steady) is None
    # one stall of 12 ms among 20 iterations of ~10 ms: an outlier by rule, but the mean moves 1.0% (< 5%)
    stalled = [10.0 + (0.01 if i % 2 else -0.01) for i in range(20)]
    stalled[7] = 12.0
    assert measure(stalled).outliers == (7,)
    assert spread_warning(stalled) is None


def test_spread_warning_on_an_unstable_set_without_outliers() -> None:
    # Two levels, 5 and 7 ms, alternating: no outlier (MAD 1, z 0.67), CV 17.6% > 10% (pyperf's threshold).
    from tracekit.analyzers.stability import spread_warning

    values = [5.0, 7.0] * 5
    assert measure(values).outliers == ()
    assert spread_warning(values) == (
        "iteration latencies vary 1.4x (5 to 7 ms; coefficient of variation 17.6% over all 10): unstable: "
        "coefficient of variation 17.6% (> 10%) (no outlier by rule 'outlier')"
    )


def test_spread_warning_leaves_a_slow_start_already_said_to_its_own_warning() -> None:
    # The first two iterations are a slow start (the analysis already warns, naming them): nothing to add.
    from tracekit.analyzers.stability import slow_start, spread_warning

    values = [30.0, 20.0] + [10.0 + (0.01 if i % 2 else -0.01) for i in range(18)]
    assert slow_start(values) == 2
    assert spread_warning(values, said=2) is None
    assert spread_warning(values) is not None


# --------------------------------------------------------------------------------- analyze and table


def test_analyze_warns_that_its_mean_includes_outliers(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    trace = kineto_trace(tmp_path, NOISY, busy_ms=1000.0)
    doc = run_json("analyze", [str(trace)], capsys)
    assert doc["summary"]["latency_ms"]["mean"] == pytest.approx(2599.1, abs=0.01)
    assert any("the mean includes them (2599 ms, 1856 without them)" in w for w in doc["warnings"])


def test_table_says_its_traced_mean_includes_the_outliers_report_leaves_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = kineto_trace(tmp_path, NOISY, busy_ms=1000.0)
    doc = run_json("table", [str(trace)], capsys)
    (row,) = doc["rows"]
    assert row["latency_ms"] == pytest.approx(2599.1, abs=0.01)
    said = [w for w in doc["warnings"] if "vary 4.6x" in w]
    assert len(said) == 1
    assert "iterations 1-2 are outliers" in said[0]
    assert "the mean includes them (2599 ms, 1856 without them)" in said[0]


def test_report_says_its_traced_mean_leaves_the_outliers_out(tmp_path: Path) -> None:
    from tracekit.api import report_data

    trace = kineto_trace(tmp_path, NOISY, busy_ms=1000.0)
    built, _, _ = report_data([trace], figures=False)
    (row,) = built.configs
    assert row["traced_latency_ms"] == pytest.approx(1856.0, abs=0.01)
    said = [w for w in built.warnings if "vary 4.6x" in w]
    assert len(said) == 1 and "the mean leaves them out (1856 ms, 2599 with them" in said[0]


# -------------------------------------------------------------------------- 4. false 'no single mode'


def test_a_set_within_a_fraction_of_a_percent_is_not_called_unstable() -> None:
    # The synthetic sweep's b32 traced latencies (tests/golden/analyze/.../sweep_pytorch): 20.4164 to
    # 20.4495 ms, 0.16% apart. Their MAD is 0.0016 ms, so 20.43225 and 20.4164 score 3.8 and 7.9: two of
    # five 'outliers', and the set was called unstable, "no single mode", on a spread of 0.16%.
    values = [20.44691, 20.43225, 20.4495, 20.4164, 20.44848]
    m = measure(values)
    assert m.cv is not None and m.cv < 0.001
    assert not m.unstable and m.warnings == ()


def test_table_warns_of_an_unstable_set_and_report_says_it_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 5 and 7 ms alternating, 2.5 ms busy each: mean 6 ms, CV 17.6% (> 10%), no outlier. The table's mean gets
    # the one sentence; the report, whose latency is this traced set (no untraced), already warns "traced
    # latency: unstable: ..." and gets no second sentence.
    from tracekit.api import report_data

    trace = kineto_trace(tmp_path, [5.0, 7.0] * 5, busy_ms=2.5)
    doc = run_json("table", [str(trace)], capsys)
    assert doc["rows"][0]["latency_ms"] == pytest.approx(6.0, abs=1e-3)
    said = [w for w in doc["warnings"] if "vary 1.4x" in w]
    assert len(said) == 1 and said[0].endswith(
        "unstable: coefficient of variation 17.6% (> 10%) (no outlier by rule 'outlier')"
    )
    built, _, _ = report_data([trace], figures=False)
    assert [w for w in built.warnings if "unstable" in w] == [
        f"{trace}: traced latency: unstable: coefficient of variation 17.6% (> 10%)"
    ]


# ------------------------------------------------------------- 3. --split-idle against the trace's ranges


def split_trace(folder: Path) -> Path:
    """4 ``iteration`` ranges of 1000 us, 40 us apart (a range every 1040 us); in each three 100 us kernels at
    +20, +420 and +820 us (the last one 160 us), each launched 10 us before it: idle gaps of 300 us inside an
    iteration, 80 us between two (980 us to the next range's +20 us)."""
    events: list[dict[str, Any]] = []
    corr = 0
    for i in range(4):
        t = 1_000_000 + 1040 * i
        events.append(kineto_event("user_annotation", "iteration", t, 1000))
        for start, length in ((20, 100), (420, 100), (820, 160)):
            corr += 1
            events.append(
                kineto_event("cuda_runtime", "cudaLaunchKernel", t + start - 10, 5, correlation=corr)
            )
            events.append(
                kineto_event("kernel", "gemm", t + start, length, 0, 7, correlation=corr, device=0, stream=7)
            )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pytorch_b1_s128.synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events}))
    return path


def test_split_idle_that_cuts_inside_the_ranges_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    # --split-idle 0.1: the 300 us gaps inside the iterations cut, the 80 us gaps between them do not: windows
    # k0 | k1 | k2 + next k0 | ... = 9 windows for 4 ranges; no threshold can cut at the ranges (300 > 80).
    doc = run_json("analyze", [str(split_trace(tmp_path)), "--split-idle", "0.1"], capsys)
    assert doc["summary"]["iterations"] == 9
    said = [w for w in doc["warnings"] if "windows against" in w]
    assert said == [
        "9 windows against 4 ranges named 'iteration' in the trace: the threshold cuts inside iterations (an "
        "idle gap inside a range lasts up to 0.3 ms, longer than the shortest between two ranges, 0.08 ms: no "
        "--split-idle threshold cuts this trace at its ranges; analyze the ranges themselves, without "
        "--split-idle)"
    ]


def test_split_idle_that_joins_the_ranges_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    # --split-idle 0.5: no gap is longer, one window for the 4 ranges.
    doc = run_json("analyze", [str(split_trace(tmp_path)), "--split-idle", "0.5"], capsys)
    assert doc["summary"]["iterations"] == 1
    said = [w for w in doc["warnings"] if "windows against" in w or "window against" in w]
    assert said == [
        "1 window against 4 ranges named 'iteration' in the trace: the threshold joins iterations (an idle gap "
        "inside a range lasts up to 0.3 ms, longer than the shortest between two ranges, 0.08 ms: no "
        "--split-idle threshold cuts this trace at its ranges; analyze the ranges themselves, without "
        "--split-idle)"
    ]


def test_split_idle_that_matches_the_ranges_says_nothing_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The NOISY trace: one kernel a range, 0.1 ms between ranges, the range's idle tail ends it: --split-idle
    # 0.05 cuts 10 windows for the 10 ranges.
    doc = run_json("analyze", [str(kineto_trace(tmp_path, NOISY, 1000.0)), "--split-idle", "0.05"], capsys)
    assert doc["summary"]["iterations"] == 10
    assert not [w for w in doc["warnings"] if "against" in w]


# ------------------------------------------------------- 1b. a verdict the iterations split on


#: The NOISY trace's per-iteration utilization: a 1000 ms kernel in each range, so busy / latency = 1000 / L.
NOISY_UTILIZATION = [1000.0 / v for v in NOISY]


def test_the_noisy_traces_utilizations_straddle_the_threshold() -> None:
    # Sorted: 17.77, 18.13, 32.05, 43.05, 49.65 | 58.93, 59.14, 64.68, 80.71, 82.10 (%): the median 54.29% is
    # compute-bound, 5 of 10 iterations are framework-bound; the 95% interval of the median of 10 values is
    # ranks 1 and 8 (P(Binomial(10, 1/2) <= 1) = 11/1024 <= 2.5%): 18.13% to 80.71%, across 50%.
    from tracekit.analyzers.stability import median_interval

    assert statistics.median(NOISY_UTILIZATION) == pytest.approx(0.54290, abs=1e-5)
    assert median_interval(NOISY_UTILIZATION) == pytest.approx((1000 / 5515, 1000 / 1239))


def test_bound_doubt_when_the_medians_interval_crosses_the_threshold() -> None:
    from tracekit.analyzers.sweep import bound_doubt

    assert bound_doubt(NOISY_UTILIZATION) == (
        "verdict uncertain: the median utilization 54.3% (compute-bound) has a 95% interval of 18.1% to 80.7%, "
        "across the 50% threshold: 5 of 10 iterations are framework-bound, 5 compute-bound"
    )
    # every iteration on one side, or an interval on one side (the H200 compile-cudagraphs b1 sample: 2 of 20
    # below 50%, the median 53.4% with its interval 52.1-53.7%): the verdict stands
    assert bound_doubt([0.2, 0.3, 0.25, 0.31, 0.22, 0.28]) is None
    assert bound_doubt([0.49, 0.48] + [0.53 + 0.001 * i for i in range(18)]) is None


def test_bound_doubt_on_too_few_iterations_for_an_interval() -> None:
    # 4 iterations, 2 on each side: no interval of the median exists (fewer than 6), the split is the doubt
    from tracekit.analyzers.sweep import bound_doubt

    assert bound_doubt([0.3, 0.7, 0.35, 0.75]) == (
        "verdict uncertain: the median utilization 52.5% (compute-bound) rests on 4 iterations on both sides "
        "of the 50% threshold: 2 framework-bound, 2 compute-bound (too few for an interval of the median)"
    )


def test_report_marks_a_split_verdict_uncertain(tmp_path: Path) -> None:
    from tracekit.api import report_data

    built, _, _ = report_data([kineto_trace(tmp_path, NOISY, busy_ms=1000.0)], figures=False)
    (row,) = built.configs
    assert row["bound"] == "compute"
    assert (
        row["verdict_uncertain"] is not None
        and "5 of 10 iterations are framework-bound" in (row["verdict_uncertain"])
    )


def test_analyze_marks_a_split_verdict_uncertain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json("analyze", [str(kineto_trace(tmp_path, NOISY, busy_ms=1000.0))], capsys)
    assert doc["summary"]["bound"] == "compute"
    assert "5 of 10 iterations are framework-bound" in (doc["summary"]["verdict_uncertain"] or "")


def test_report_leaves_an_analysis_spread_sentence_to_its_own() -> None:
    # Once analyze says the spread of its own mean (the proposed iterations.py wiring), the report's row keeps
    # its own sentence (of its traced mean, without the outliers) and not the analysis' (of every iteration's).
    from types import SimpleNamespace

    from tracekit.analyzers.report import _row_warnings
    from tracekit.analyzers.stability import SPREAD_MARK, spread_warning

    theirs = spread_warning(NOISY)
    assert theirs is not None and theirs.startswith(SPREAD_MARK)
    analyzed = SimpleNamespace(warnings=["something else", theirs])
    assert _row_warnings(analyzed, measure(NOISY)) == ["something else"]  # type: ignore[arg-type]


def test_split_idle_inside_a_single_range_says_nothing_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One range over the whole run (a benchmark's, as the paper's 'graph_inference'): cutting inside it is what
    # --split-idle is for, so 3 windows against 1 range is no warning.
    events: list[dict[str, Any]] = [kineto_event("user_annotation", "graph_inference", 1_000_000, 3000)]
    for i in range(3):
        t = 1_000_000 + 1000 * i
        events.append(kineto_event("cuda_runtime", "cudaLaunchKernel", t + 10, 5, correlation=i + 1))
        events.append(
            kineto_event("kernel", "gemm", t + 20, 500, 0, 7, correlation=i + 1, device=0, stream=7)
        )
    path = tmp_path / "pytorch_b1_s128.synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events}))
    doc = run_json("analyze", [str(path), "--split-idle", "0.1"], capsys)
    assert doc["summary"]["iterations"] == 3
    assert not [w for w in doc["warnings"] if "against" in w]


# ------------------------------------------- 2b. table shows the untraced median without its recorded doubt


def test_table_carries_the_untraced_sets_recorded_instability(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The sidecar (as tracekit collect writes it) records the untraced set's statistics with its warning
    # (firsthour13's b1: median 1952 ms, CV 24.1%, unstable). table shows that median as untraced_latency_ms;
    # report says "untraced latency: unstable: ..." of it, and table now too.
    trace = kineto_trace(tmp_path, [10.0] * 8, busy_ms=5.0)
    recorded = {
        "median": 1952.4747215,
        "ci_low": 1703.775768,
        "ci_high": 2880.118808,
        "count": 10,
        "kept": 10,
        "cv": 0.24137599683720623,
        "unstable": True,
        "warnings": ["unstable: coefficient of variation 24.1% (> 10%)"],
    }
    sidecar = {"synthetic": True, "runtime": "pytorch", "batch_size": 4, "seq_len": 32}
    (tmp_path / "pytorch_b4_s32.synthetic.meta.json").write_text(
        json.dumps({**sidecar, "untraced_latency_ms": recorded})
    )
    doc = run_json("table", [str(trace)], capsys)
    assert doc["rows"][0]["untraced_latency_ms"] == pytest.approx(1952.4747215)
    assert [w for w in doc["warnings"] if "untraced latency" in w] == [
        "pytorch b4 s32: untraced latency: unstable: coefficient of variation 24.1% (> 10%)"
    ]


def test_table_notes_say_whose_mean_its_latency_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # table's latency_ms is the mean of every analyzed iteration (analyze's), report's traced mean that of the
    # iterations its stability rules keep: the note names both, so 2599 against 1856 has its reason in view.
    doc = run_json("table", [str(kineto_trace(tmp_path, [10.0] * 8, busy_ms=5.0))], capsys)
    assert doc["notes"][0] == (
        "latency_ms, gpu_busy_ms, framework_overhead_ms, gpu_utilization: mean over every analyzed traced "
        "iteration, as analyze's summary (traced latency: measured with the profiler on); report's traced mean "
        "leaves out the iterations its stability rules drop (warm-up drift, outliers), and a warning says so "
        "where that moves the mean by more than 5%"
    )
