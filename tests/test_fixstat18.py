"""fixstat18: the stability rules (a level shift, non-finite latencies), recorded untraced statistics that
contradict each other, compare's per-name times of untimed kernels, and --split-idle windows that number as
many as the ranges without being them.

Every input is hand-built and SYNTHETIC (files named ``*.synthetic.*``, trace metadata saying so)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import run_cli

T0 = 1_700_000_000_000_000  # µs


def _kineto(path: Path, iterations: list[tuple[int, list[tuple[Any, ...]]]], dur: int = 900) -> Path:
    """Kineto trace (SYNTHETIC): per (range start µs, [(kernel start µs, kernel dur µs or None)]) an 'iteration'
    annotation of ``dur`` µs and its kernels named k0, k1, ... (by position; a third element: the name), each
    launched 8 µs before it starts by a call of 5 µs."""
    events: list[dict[str, Any]] = []
    corr = 1
    for start, kernels in iterations:
        events.append({"ph": "X", "cat": "user_annotation", "name": "iteration", "pid": 1, "tid": 1,
                       "ts": T0 + start, "dur": dur})  # fmt: skip
        for k, (s, d, *named) in enumerate(kernels):
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": T0 + s - 8, "dur": 5, "args": {"correlation": corr}})  # fmt: skip
            kernel: dict[str, Any] = {"ph": "X", "cat": "kernel", "name": named[0] if named else f"k{k}",
                                      "pid": 0, "tid": 7,
                                      "ts": T0 + s, "args": {"correlation": corr, "device": 0, "stream": 7}}  # fmt: skip
            if d is not None:
                kernel["dur"] = d
            events.append(kernel)
            corr += 1
    path.write_text(json.dumps({"traceEvents": events, "traceName": f"synthetic {path.name}"}))
    return path


def _sidecar(trace: Path, **extra: Any) -> None:
    meta = {"synthetic": True, "runtime": "pytorch", "batch_size": 1, "seq_len": 128, "device": "gpu",
            "range": "iteration", "profiler": "torch", **extra}  # fmt: skip
    trace.with_name(trace.name.removesuffix(".json") + ".meta.json").write_text(json.dumps(meta))


# --------------------------------------------------------------- analyzers/stability.py: a level shift


def test_a_fall_that_outlasts_half_the_run_is_a_level_shift_not_warm_up() -> None:
    """12 at 2.0 ms then 8 at 1.0: nothing dropped (it had been 12 of 20: 10 as warm-up, 2 as outliers, and the
    rest 'stable, 1.0 [1.0-1.0]'); unstable, the fall said at iteration 12; median 2.0 of all 20, interval
    [1.0, 2.0]."""
    from tracekit.analyzers.stability import level_shift, measure, slow_start, warmup_prefix

    values = [2.0] * 12 + [1.0] * 8
    assert (warmup_prefix(values), level_shift(values), slow_start(values)) == (0, 12, 0)
    r = measure(values)
    assert (r.count, r.kept, r.median, r.ci_low, r.ci_high, r.warmup, r.outliers) == (
        20,
        20,
        2.0,
        1.0,
        2.0,
        (),
        (),
    )
    assert r.unstable is True
    assert r.warnings == (
        "unstable: latency fell from 2 to 1 ms at iteration 12 (the first 12 of 20 ran slower: a level shift that "
        "lasted past half the run, not warm-up); coefficient of variation 31.4% (> 10%)",
    )
    # the milder form: 11 then 9 (had been 11 of 20 dropped, 'stable 1.0')
    r = measure([2.0] * 11 + [1.0] * 9)
    assert (r.kept, r.median, r.unstable, level_shift([2.0] * 11 + [1.0] * 9)) == (20, 2.0, True, 11)
    assert "latency fell from 2 to 1 ms at iteration 11 (the first 11 of 20" in r.warnings[0]


def test_a_level_shift_is_a_change_that_counts() -> None:
    """DRIFT_MIN (5%): 12 at 1.06 then 8 at 1.0 is a shift (unstable, nothing dropped, median 1.06); 12 at 1.03
    then 8 at 1.0 is not (the warm-up rule as before: 12 dropped, 1.0, stable; left to the lead, see the report)."""
    from tracekit.analyzers.stability import level_shift, measure

    r = measure([1.06] * 12 + [1.0] * 8)
    assert (level_shift([1.06] * 12 + [1.0] * 8), r.kept, r.median, r.unstable) == (12, 20, 1.06, True)
    assert r.warnings == (
        "unstable: latency fell from 1.06 to 1 ms at iteration 12 (the first 12 of 20 ran slower: a level shift "
        "that lasted past half the run, not warm-up)",
    )
    r = measure([1.03] * 12 + [1.0] * 8)
    assert (level_shift([1.03] * 12 + [1.0] * 8), r.kept, r.median, r.unstable) == (0, 8, 1.0, False)


def test_a_warm_up_of_exactly_half_the_run_is_still_dropped() -> None:
    """The rule's cap: 10 at 5.0 then 10 at 1.0 drops the 10 (stable, 1.0); 3 at 3.0 then 17 at 1.0 drops 3."""
    from tracekit.analyzers.stability import level_shift, measure

    r = measure([5.0] * 10 + [1.0] * 10)
    assert (r.kept, r.median, r.warmup, r.unstable, level_shift([5.0] * 10 + [1.0] * 10)) == (
        10,
        1.0,
        tuple(range(10)),
        False,
        0,
    )
    r = measure([3.0] * 3 + [1.0] * 17)
    assert (r.kept, r.median, r.warmup, r.unstable) == (17, 1.0, (0, 1, 2), False)


# --------------------------------------------------------------- analyzers/stability.py: non-finite latencies


def test_infinite_latencies_are_left_out_with_a_warning() -> None:
    """9 x 1.0 and one inf: 9 kept, median 1.0, said (statistics.stdev had raised AttributeError); -inf too;
    all inf: no median; an inf CPU time is no CPU time."""
    from tracekit.analyzers.stability import measure

    r = measure([1.0] * 9 + [math.inf])
    assert (r.count, r.kept, r.median, r.ci_low, r.ci_high, r.unstable) == (9, 9, 1.0, 1.0, 1.0, False)
    assert r.warnings == (
        "1 of 10 iterations (iteration 9) has an infinite latency (ms), no duration: left out of the statistics",
    )
    r = measure([-math.inf, 2.0, math.inf, 2.0, 2.0, math.nan])
    assert (r.count, r.kept, r.median) == (3, 3, 2.0)
    assert r.warnings[0].startswith("2 of 5 iterations (iterations 0, 2) have an infinite latency")
    r = measure([math.inf] * 3)
    assert (r.count, r.kept, r.median) == (0, 0, None)
    assert r.warnings == (
        "3 of 3 iterations (iterations 0-2) have an infinite latency (ms), no duration: left out of the statistics",
    )
    r = measure([5.0] + [1.0] * 9, cpu=[math.inf] + [0.5] * 9)
    assert (r.kept, r.median, r.warmup, r.cause) == (9, 1.0, (0,), None)


def test_report_of_a_latency_csv_holding_inf_reads_the_other_nine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sidecar whose untraced statistics lack a median (latency.csv is read): 9 x 1.0 ms and 'inf' give the
    untraced median 1.0 and the warning (it had been 'internal error: AttributeError', exit 1)."""
    trace = _kineto(
        tmp_path / "pytorch_b1_s128.synthetic.torch.json",
        [(i * 1000, [(i * 1000 + 10, 10)]) for i in range(4)],
    )
    _sidecar(trace, untraced_latency_ms={"mean": 1.0, "count": 10})
    rows = ["runtime,batch_size,seq_len,iteration,latency_ms"]
    rows += [f"pytorch,1,128,{i},{v}" for i, v in enumerate(["1.0"] * 9 + ["inf"])]
    (tmp_path / "latency.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "rep"
    code, _, err = run_cli(capsys, "report", str(trace), "-o", str(out), "--no-figures", "-q")
    assert code == 0, err
    (row,) = json.loads((out / "report.json").read_text())["configs"]
    assert row["untraced_latency_ms"] == 1.0
    assert row["warnings"] == [
        "untraced latency: 1 of 10 iterations (iteration 9) has an infinite latency (ms), no duration: left out "
        "of the statistics"
    ]


def test_a_latency_csv_of_no_finite_latency_is_not_used_and_said() -> None:
    """10 x inf (or NaN): no value of latency.csv is used; the recorded mean (1.0) is, without an interval, and
    both are said (all inf had given no untraced latency and no word). A finite set is measured as before."""
    from tracekit.analyzers.profiler_cost import untraced_measurement

    m = untraced_measurement({"mean": 1.0, "count": 10}, ([math.inf] * 10, None))
    assert m is not None
    assert (m.median, m.count, m.ci_low) == (1.0, 10, None)
    assert m.warnings == (
        "10 of 10 iterations (iterations 0-9) have an infinite latency (ms), no duration: left out of the "
        "statistics",
        "latency.csv holds no finite latency of this configuration: the recorded mean is used instead, without "
        "an interval",
    )
    m = untraced_measurement({"p50": 2.0, "mean": 1.0}, ([math.nan] * 3, None))
    assert m is not None and (m.median, m.warnings) == (
        2.0,
        ("latency.csv holds no finite latency of this configuration: the recorded p50 is used instead, without an "
         "interval",),
    )  # fmt: skip
    m = untraced_measurement({"mean": 5.0}, ([2.0] * 9 + [math.inf], None))
    assert m is not None and (m.median, m.count, m.kept) == (2.0, 9, 9)


# --------------------------------------------------------------- tracekit/runs.py: contradicting statistics


@pytest.mark.parametrize(
    ("stats", "said"),
    [
        (
            {"median": 10.0, "ci_low": 0.9, "ci_high": 1.1, "kept": 10, "count": 10},
            "untraced_latency_ms.median (10.0) lies outside its own interval untraced_latency_ms.ci_low/ci_high "
            "[0.9, 1.1]: statistics that contradict each other",
        ),
        (
            {"median": 0.5, "ci_low": 0.9, "ci_high": 1.1, "kept": 10, "count": 10},
            "untraced_latency_ms.median (0.5) lies outside its own interval untraced_latency_ms.ci_low/ci_high "
            "[0.9, 1.1]: statistics that contradict each other",
        ),
        (
            {"median": 1.0, "ci_low": 0.9, "ci_high": 1.1, "kept": 11, "count": 10},
            "untraced_latency_ms.kept (11) is above untraced_latency_ms.count (10): statistics that contradict "
            "each other",
        ),
    ],
)
def test_untraced_statistics_that_contradict_each_other_are_refused(stats: dict[str, Any], said: str) -> None:
    from tracekit.inputs import check_sidecar
    from tracekit.runs import check_run

    assert check_sidecar({"untraced_latency_ms": stats}) == said
    run = {"configs": [{"batch_size": 1, "seq_len": 8, "traces": {}, "untraced_latency_ms": stats}]}
    assert check_run(run) == said.replace("untraced_latency_ms", "configs[0].untraced_latency_ms")


def test_untraced_statistics_at_their_bounds_are_used() -> None:
    """A median equal to either bound (ties: [1.0, 1.0]) and kept == count pass; no interval, no check."""
    from tracekit.inputs import check_sidecar

    for stats in (
        {"median": 1.0, "ci_low": 1.0, "ci_high": 1.0, "kept": 10, "count": 10},
        {"median": 0.9, "ci_low": 0.9, "ci_high": 1.1},
        {"median": 1.1, "ci_low": 0.9, "ci_high": 1.1},
        {"median": 10.0, "ci_low": 0.9},
        {"median": 10.0, "min": 0.9, "max": 1.1},  # (min/max not checked against the median: see runs.py)
    ):
        assert check_sidecar({"untraced_latency_ms": stats}) is None, stats


def test_report_refuses_a_sidecar_whose_median_lies_outside_its_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It had been used: report.md '10 [0.9–1.1]', profiler ratio 0.09."""
    trace = _kineto(
        tmp_path / "pytorch_b1_s128.synthetic.torch.json",
        [(i * 1000, [(i * 1000 + 10, 10)]) for i in range(4)],
    )
    _sidecar(
        trace, untraced_latency_ms={"median": 10.0, "ci_low": 0.9, "ci_high": 1.1, "kept": 10, "count": 10}
    )
    code, _, err = run_cli(capsys, "report", str(trace), "-o", str(tmp_path / "rep"), "--no-figures", "-q")
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "pytorch_b1_s128.synthetic.torch.meta.json" in err
    assert "untraced_latency_ms.median (10.0) lies outside its own interval" in err


# --------------------------------------------------------------- analyzers/compare.py: per-name times


def _compare(capsys: pytest.CaptureFixture[str], a: Path, b: Path, *args: str) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "compare", str(a), str(b), *args, "--format", "json")
    assert code == 0, err
    (comparison,) = json.loads(out)["comparisons"]
    return comparison


def _its(kernels: list[list[int | None]]) -> list[tuple[int, list[tuple[int, int | None]]]]:
    """Iterations 1 ms apart, each with kernels k0, k1, ... of the given durations (µs; None: no dur) at 10,
    110, ... µs into it."""
    return [
        (i * 1000, [(i * 1000 + 10 + 100 * k, d) for k, d in enumerate(ds)]) for i, ds in enumerate(kernels)
    ]


def test_compare_gives_untimed_kernels_no_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A: k0 10 µs, k1 20 µs in each of 4 iterations; B: the same without dur. B's per-name time is none (it
    had read 0.0, delta -10.0, ratio 0.0), its counts stay 1.0, and it is said."""
    a = _kineto(tmp_path / "a.synthetic.json", _its([[10, 20]] * 4))
    b = _kineto(tmp_path / "b.synthetic.json", _its([[None, None]] * 4))
    comparison = _compare(capsys, a, b)
    rows = {k["name"]: k for k in comparison["kernels"]}
    assert {n: (k["count_a"], k["count_b"], k["time_a_us"], k["time_b_us"], k["time_delta_us"], k["time_ratio"])
            for n, k in rows.items()} == {"k0": (1.0, 1.0, 10.0, None, None, None),
                                          "k1": (1.0, 1.0, 20.0, None, None, None)}  # fmt: skip
    assert (
        "B: 2 op names (k0, k1) ran without a duration in every iteration: their per-name time is not known "
        "(shown as none, not 0)"
    ) in comparison["warnings"]
    assert not [w for w in comparison["warnings"] if w.startswith("A: 2 op names")]


def test_compare_gives_a_partly_timed_kernel_its_mean_over_its_timed_iterations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """B: k0 of 10 µs in iterations 0 and 1, without dur in 2, absent from 3; k1 of 30 µs in all 4. k0's time
    is (10 + 10 + 0) / 3 iterations = 6.667 µs (iteration 2 unknown; 3 known, as 0), count 0.75; it had read
    20 / 4 = 5.0. A: k0 10 µs and k1 30 µs in each: delta -3.333, ratio 0.6667; k1 unchanged."""
    a = _kineto(tmp_path / "a.synthetic.json", _its([[10, 30]] * 4))
    b = _kineto(
        tmp_path / "b.synthetic.json",
        [(0, [(10, 10), (110, 30)]), (1000, [(1010, 10), (1110, 30)]), (2000, [(2010, None), (2110, 30)]),
         (3000, [(3110, 30, "k1")])],
    )  # fmt: skip
    comparison = _compare(capsys, a, b)
    rows = {k["name"]: k for k in comparison["kernels"]}
    k0 = rows["k0"]
    assert (k0["count_a"], k0["count_b"], k0["time_a_us"]) == (1.0, 0.75, 10.0)
    assert (rows["k1"]["time_b_us"], rows["k1"]["time_ratio"]) == (30.0, 1.0)
    assert (k0["time_b_us"], k0["time_delta_us"], k0["time_ratio"]) == pytest.approx(
        (20 / 3, 20 / 3 - 10, 2 / 3), abs=1e-9
    )
    assert [w for w in comparison["warnings"] if "some iterations" in w] == [
        "B: 1 op name (k0) ran without a duration in some iterations: its per-name time is the mean over the "
        "iterations in which it was timed (as few as 3 of 4, k0), not over all 4"
    ]


# ------------------------------------------------- analyzers/compare.py + ranges.py: windows that are not the ranges


def _windows(tmp_path: Path, name: str, iterations: list[tuple[int, list[tuple[Any, ...]]]], dur: int = 990):
    import tracekit

    return tracekit.analyze(_kineto(tmp_path / f"{name}.synthetic.json", iterations, dur=dur), split_idle=0.3)


#: 4 ranges of 990 µs, 1 ms apart, 2 kernels each: a 500-µs gap inside iteration 0 and 100 µs between iterations
#: 2 and 3 (kernel spans in µs). --split-idle 0.3 gives 4 windows, 0.108, 0.108, 0.308, 1.308 ms (as in
#: test_review18): as many as the ranges, not at them.
CUT_AND_JOINED = [
    (0, [(10, 100), (610, 100)]),
    (1000, [(1110, 100), (1310, 100)]),
    (2000, [(2010, 100), (2210, 700)]),
    (3000, [(3010, 100), (3210, 100)]),
]


def test_windows_as_many_as_the_ranges_but_not_at_them_are_said_and_withheld(tmp_path: Path) -> None:
    from tracekit.analyzers.compare import windows_not_iterations
    from tracekit.analyzers.ranges import (
        _off_ranges,
        idle_split,
        launch_times,
        select_ranges,
        windows_off_ranges,
    )

    analyzed = _windows(tmp_path, "cut_and_joined", CUT_AND_JOINED)
    assert analyzed.iterations["latency_ms"].to_list() == pytest.approx(
        [0.108, 0.108, 0.308, 1.308], abs=1e-12
    )
    trace = analyzed.trace_data
    ops = launch_times(trace)
    # windows 0 and 1 in range 0 (one range, two windows), window 3 over ranges 2 and 3: 3 of 4 are not a range
    assert _off_ranges(ops, idle_split(ops, 0.3), select_ranges(trace).frame) == 3
    assert windows_off_ranges(trace, 0.3) == (4, 4, "iteration", "cuts inside and joins")
    assert windows_off_ranges(trace, 0.45) == (3, 4, "iteration", "joins")  # (cuts at 500 and 600 µs only)
    assert windows_not_iterations(analyzed) == (
        "4 windows cut at idle gaps (idle>0.3ms) against the 4 ranges named 'iteration' its trace holds, but not "
        "at them: the threshold cuts inside and joins iterations, so its figures are per window, not per iteration"
    )
    assert [w for w in analyzed.warnings if "against 4 ranges" in w] == [
        "4 windows against 4 ranges named 'iteration' in the trace, but not at them: the threshold cuts inside and "
        "joins iterations (an idle gap inside a range lasts up to 0.5 ms, longer than the shortest between two "
        "ranges, 0.1 ms: no --split-idle threshold cuts this trace at its ranges; analyze the ranges themselves, "
        "without --split-idle)"
    ]


def test_windows_that_are_the_ranges_are_iterations(tmp_path: Path) -> None:
    """4 ranges, 2 kernels each 100 µs apart, 690 µs between iterations: --split-idle 0.3 cuts at the ranges,
    4 windows of 0.308 ms, each in its own range: nothing said, nothing withheld."""
    from tracekit.analyzers.compare import windows_not_iterations
    from tracekit.analyzers.ranges import windows_off_ranges

    analyzed = _windows(tmp_path, "at_ranges", _its_at([(100, 100)] * 4))
    assert analyzed.iterations["latency_ms"].to_list() == pytest.approx([0.308] * 4, abs=1e-12)
    assert windows_off_ranges(analyzed.trace_data, 0.3) is None
    assert windows_not_iterations(analyzed) is None
    assert not [w for w in analyzed.warnings if "windows against" in w]


def _its_at(pairs: list[tuple[int, int]]) -> list[tuple[int, list[tuple[Any, ...]]]]:
    """Iterations 1 ms apart, each a kernel of 100 µs at 10 µs and a second one ``gap`` µs after its end, of
    ``second`` µs: per (gap, second)."""
    return [
        (i * 1000, [(i * 1000 + 10, 100), (i * 1000 + 110 + gap, second)])
        for i, (gap, second) in enumerate(pairs)
    ]


def test_a_window_of_ops_launched_outside_every_range_is_no_range(tmp_path: Path) -> None:
    """3 ranges (0, 1000, 2000 µs) of 990 µs; a kernel launched at 3492 µs, after them all; ranges 1 and 2 joined
    (their kernels 50 µs apart, range 1's 30 µs): 3 windows for 3 ranges, one in no range, one over two."""
    from tracekit.analyzers.ranges import windows_off_ranges

    iterations = [(0, [(10, 100)]), (1000, [(1010, 900), (1940, 50)]), (2000, [(2040, 100)])]
    path = _kineto(tmp_path / "outside.synthetic.json", iterations, dur=990)
    events = json.loads(path.read_text())
    events["traceEvents"] += [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": T0 + 3492,
         "dur": 5, "args": {"correlation": 99}},
        {"ph": "X", "cat": "kernel", "name": "late", "pid": 0, "tid": 7, "ts": T0 + 3500, "dur": 10,
         "args": {"correlation": 99, "device": 0, "stream": 7}},
    ]  # fmt: skip
    path.write_text(json.dumps(events))
    from tracekit.api import read_trace

    assert windows_off_ranges(read_trace(path), 0.3) == (3, 3, "iteration", "cuts inside and joins")


def test_report_and_compare_withhold_windows_as_many_as_but_not_at_the_ranges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report: the row's traced figures withheld (it had shown traced median 0.208 ms per window for 0.99-ms
    iterations); compare: the summary withheld with the reason."""
    trace = _kineto(tmp_path / "pytorch_b1_s128.synthetic.torch.json", CUT_AND_JOINED, dur=990)
    _sidecar(trace)
    out = tmp_path / "rep"
    code, _, err = run_cli(
        capsys, "report", str(trace), "--split-idle", "0.3", "-o", str(out), "--no-figures", "-q"
    )
    assert code == 0, err
    (row,) = json.loads((out / "report.json").read_text())["configs"]
    assert (
        row["iterations"],
        row["traced_median_ms"],
        row["latency_ms"],
        row["gpu_busy_ms"],
        row["bound"],
    ) == (
        4,
        None,
        None,
        None,
        None,
    )
    # (the count is the reader's sentence; the report's own names it since f08037a)
    assert [w for w in row["warnings"] if "against 4 ranges" in w][0].startswith(
        "4 windows against 4 ranges named 'iteration' in the trace, but not at them: the threshold cuts inside and "
        "joins iterations"
    )
    assert row["warnings"][-1].startswith("the report shows none of its traced figures")
    b = _kineto(tmp_path / "b.synthetic.json", CUT_AND_JOINED, dur=990)
    comparison = _compare(capsys, trace, b, "--split-idle", "0.3")
    latency = next(m for m in comparison["summary"] if m["metric"] == "latency_ms")
    assert (latency["a"], latency["b"], latency["ratio"]) == (None, None, None)
    assert comparison["warnings"][0].startswith(
        "A's iterations are 4 windows cut at idle gaps (idle>0.3ms) against the 4 ranges named 'iteration' its "
        "trace holds, but not at them: the threshold cuts inside and joins iterations"
    )
