"""Issue 30 (and issue 25's window independence): the window rules of docs/design.md section 4, options that
refuse extreme values in one line, and gap causes that do not depend on how the trace is cut into windows.

Traces here are hand-built or simulated in the test (synthetic, labelled so), plus the committed samples and
../shared/real_traces (skipped when absent).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import make_trace
from tracekit.analyzers import ranges as R
from tracekit.analyzers.attribution import idle_pieces
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.model import Trace

from .conftest import REAL_TRACES, SAMPLE_TRACES

US = 1000

# -------------------------------------------------------------------- synchronized latency = the range


def test_a_synchronized_iteration_has_its_range_as_latency_even_inside_earlier_gpu_work() -> None:
    # Iteration 0's GPU work [50, 5000) outlives its range [0, 100) (unsynchronized). Iteration 1's range
    # [200, 300) holds no op and lies inside that work: before issue 30 its window started at the previous
    # GPU end (5000) and its latency was 0; it is synchronized (nothing of it runs after its range), so its
    # latency is its range's length, and its one gap is 'empty'.
    trace = make_trace(
        ranges=[(0, 100, "iteration"), (200, 300, "iteration")],
        api=[(10, 20, 1, "cudaLaunchKernel")],
        ops=[(50, 5000, 1, 7)],
    )
    a = analyze_iterations(trace)
    it = a.iterations
    assert it["synchronized"].to_list() == [False, True]
    assert it["latency_ms"].to_list() == pytest.approx([5000e-6, 100e-6])
    assert it["cpu_ms"][1] == it["latency_ms"][1]
    assert it["gpu_utilization"].to_list() == pytest.approx([4950 / 5000, 0.0])
    gaps = a.gaps.filter(pl.col("iteration") == 1)
    assert gaps["position"].to_list() == ["empty"] and gaps["duration_ns"].to_list() == [100]
    assert any(w.startswith("1 of 2 iterations hold no device op") for w in a.warnings)
    # no false "missing correlation id": the empty iteration's gap has no next op, and every op has its call
    assert not any("correlation" in w for w in a.warnings)


def test_unsynchronized_iterations_of_two_processes_each_start_at_their_own_previous_gpu_end(
    tmp_path: Path,
) -> None:
    # One nsys report of two ranks (``nsys profile torchrun``): processes 100 and 200 on devices 0 and 1, each
    # with 4 ranges of 1 ms, 2 ms apart, and one kernel from +0.2 to +1.5 ms (GPU work outlives the range);
    # process 200 starts 0.3 ms later. Each rank alone: latency 1.5 ms (steady state: from the previous GPU
    # end of its own process, or its range start), busy 1.3 ms. Before, process 200's windows started at
    # process 100's GPU end: 0.3 ms latency, 100% utilization.
    from tests.nsys_builder import NsysBuilder
    from tracekit.readers import read_trace

    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.gpu(1, "NVIDIA H100")
    for pid, device, offset in ((100, 0, 0), (200, 1, 300 * US)):
        for i in range(4):
            s = i * 2000 * US + offset
            b.nvtx_range(s, s + 1000 * US, "iteration", pid=pid, tid=pid)
            b.runtime(
                s + 100 * US, s + 110 * US, "cudaLaunchKernel_v7000", correlation=i + 1, pid=pid, tid=pid
            )
            b.kernel(s + 200 * US, s + 1500 * US, "gemm", correlation=i + 1, pid=pid, device=device)
    path = tmp_path / "two_ranks.synthetic.sqlite"
    b.write(str(path))
    it = analyze_iterations(read_trace(path)).iterations
    assert it.height == 8
    assert it["latency_ms"].to_list() == pytest.approx([1.5] * 8)
    assert it["gpu_busy_ms"].to_list() == pytest.approx([1.3] * 8)


# ------------------------------------------------------- --split-idle on a simulated host-runs-ahead trace


def host_runs_ahead(
    bursts: int, per_burst: int, launch_ns: int, kernel_ns: int, pause_ns: int, latency_ns: int = 100
) -> Trace:
    """A synthetic (simulated here) trace: the host launches ``per_burst`` kernels, one every ``launch_ns``,
    pauses ``pause_ns``, and so on; a kernel starts ``latency_ns`` after its launch call returns, or when the
    previous one ends (one stream), and runs ``kernel_ns``. With kernel_ns > launch_ns the GPU falls behind
    and the next burst is launched while the previous one still runs. Ground truth is computed by the tests
    from the same numbers."""
    api, ops, t, gpu, corr = [], [], 0, 0, 0
    for _ in range(bursts):
        for _ in range(per_burst):
            corr += 1
            api.append((t, t + launch_ns // 2, corr, "cudaLaunchKernel"))
            start = max(t + launch_ns // 2 + latency_ns, gpu)
            ops.append((start, start + kernel_ns, corr, 7))
            gpu = start + kernel_ns
            t += launch_ns
        t += pause_ns
    return make_trace(api=api, ops=ops, meta={"path": "host_runs_ahead.synthetic", "synthetic": True})


def test_split_idle_windows_follow_the_documented_rule_when_the_host_runs_ahead() -> None:
    # Bursts of 4 kernels of 50 us launched 10 us apart, a 190 us pause, 60 us from a call's return to its
    # kernel. Burst 1's kernels run [65, 265) us; burst 2's first kernel is launched at 230 us, while burst 1
    # still runs, and starts at 295 us: the GPU idles 30 us in between. Likewise for burst 3.
    trace = host_runs_ahead(
        bursts=3, per_burst=4, launch_ns=10 * US, kernel_ns=50 * US, pause_ns=190 * US, latency_ns=60 * US
    )
    choice = R.select_ranges(trace, None, split_idle_ms=0.001)
    frame = choice.frame
    ops = trace.ops.sort("start")
    api = trace.api.sort("start")
    # The groups: a cut where an op starts more than 1 us after every earlier op ended.
    starts, ends = ops["start"].to_numpy(), ops["end"].to_numpy()
    cut = np.r_[True, starts[1:] - np.maximum.accumulate(ends)[:-1] > 1 * US]
    group = np.cumsum(cut) - 1
    launch = api["start"].to_numpy()  # one call per op, in the same order
    want = [(int(launch[group == g].min()), int(ends[group == g].max())) for g in range(group.max() + 1)]
    assert list(zip(frame["range_start"], frame["range_end"], strict=True)) == want
    # the host ran ahead: each window after the first began before the previous one's device work ended
    assert [s < e for (s, _), (_, e) in zip(want[1:], want[:-1], strict=True)] == [True] * (len(want) - 1)
    assert choice.warnings[0].startswith(f"{len(want) - 1} of {len(want)} windows begin (first op's launch)")
    a = analyze_iterations(trace, split_idle_ms=0.001)
    it = a.iterations
    assert it["latency_ms"].to_list() == pytest.approx([(e - s) / 1e6 for s, e in want])
    assert it["kernels"].sum() == ops.height
    assert it["synchronized"].all() and not any("unsynchronized" in w for w in a.warnings)


@settings(max_examples=40, deadline=None)
@given(
    bursts=st.integers(1, 4),
    per_burst=st.integers(1, 5),
    launch_us=st.integers(1, 30),
    kernel_us=st.integers(1, 80),
    pause_us=st.integers(0, 200),
    latency_us=st.integers(0, 100),
    split_us=st.integers(0, 100),
)
def test_split_idle_windows_are_first_launch_to_last_end(
    bursts: int, per_burst: int, launch_us: int, kernel_us: int, pause_us: int, latency_us: int, split_us: int
) -> None:
    trace = host_runs_ahead(bursts, per_burst, launch_us * US, kernel_us * US, pause_us * US, latency_us * US)
    frame = R.select_ranges(trace, None, split_idle_ms=split_us / 1000).frame
    ops = trace.ops.join(trace.api.select("correlation", pl.col("start").alias("launch")), on="correlation")
    ops = ops.sort("start")
    starts, ends = ops["start"].to_numpy(), ops["end"].to_numpy()
    cut = np.r_[True, starts[1:] - np.maximum.accumulate(ends)[:-1] > split_us * US]
    group = np.cumsum(cut) - 1
    launch = ops["launch"].to_numpy()
    want = [(int(launch[group == g].min()), int(ends[group == g].max())) for g in range(group.max() + 1)]
    assert list(zip(frame["range_start"], frame["range_end"], strict=True)) == want
    it = analyze_iterations(trace, split_idle_ms=split_us / 1000).iterations
    assert it["kernels"].to_list() == [int((group == g).sum()) for g in range(group.max() + 1)]
    assert it["latency_ms"].to_list() == pytest.approx([(e - s) / 1e6 for s, e in want])


# ------------------------------------------------------------------ every numeric option, extreme values


def _numeric_options() -> list[str]:
    """The options of ``analyze`` whose values are numbers (argparse type float or int)."""
    import argparse

    from tracekit.cli import build_parser

    parser = build_parser(["analyze"])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    analyze = sub.choices["analyze"]
    return sorted(
        a.option_strings[-1] for a in analyze._actions if a.option_strings and a.type in (float, int)
    )


def test_the_numeric_options_are_known() -> None:
    assert {"--split-idle", "--skip", "--bound-threshold"} <= set(_numeric_options())


EXTREMES = [
    "inf", "-inf", "nan", "-nan", "1e308", "-1e308", "1e40", "-1e40", "5e-324", "0", "-0.0", "-1",
    str(2**63), str(-(2**63)), str(10**40), "1e12", "1000000000001", "0.5", "1",
]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small synthetic Kineto file: two iterations, each one launch and one kernel."""
    events = []
    for i, t in enumerate((0, 1000)):
        events += [
            {"ph": "X", "cat": "user_annotation", "name": "iteration", "pid": 1, "tid": 1, "ts": t, "dur": 900},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 10,
             "dur": 5, "args": {"correlation": i + 1}},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t + 20, "dur": 100,
             "args": {"device": 0, "stream": 7, "correlation": i + 1}},
        ]  # fmt: skip
    path = tmp_path_factory.mktemp("options") / "tiny.synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    option=st.sampled_from(_numeric_options()),
    value=st.one_of(
        st.sampled_from(EXTREMES),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.integers(-(2**80), 2**80).map(str),
    ),
)
def test_no_value_of_any_numeric_option_is_an_internal_error(
    tiny_trace: Path, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracekit.cli import main

    try:
        code = main(["analyze", str(tiny_trace), f"{option}={value}", "--format", "json"])
    except SystemExit as exc:  # argparse's own one-line refusal of a non-number (an int option given 1e308)
        code = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code in (0, 2), (option, value, err)
    if code == 2:
        errors = [line for line in err if not line.startswith("warning:")]
        assert len(errors) == 1 and "internal error" not in errors[0] and option.lstrip("-") in errors[0]


@pytest.mark.parametrize("value", EXTREMES)
def test_split_idle_extremes_are_refused_before_any_work(tiny_trace: Path, value: str, capsys) -> None:
    from tracekit.cli import main

    missing = tiny_trace.with_name("absent.json")  # refused before the (missing) file is even opened
    code = main(["analyze", str(missing), f"--split-idle={value}"])
    err = capsys.readouterr().err.strip()
    number = float(value)
    if not (number == number and abs(number) != float("inf")) or not 0 <= number <= R.MAX_SPLIT_IDLE_MS:
        assert code == 2 and err.startswith("tracekit: --split-idle must be a") and "\n" not in err
    else:
        assert code == 2 and "absent.json" in err  # a good value: the missing file is the error


# ----------------------------------------------------------------- gap causes do not depend on the window


def _pieces_by_gap(trace: Trace, analysis) -> pl.DataFrame:  # noqa: ANN001
    """Every piece of every idle gap with the end of its gap (its next op's start): ``gap_end``, ``start_ns``,
    ``end_ns``, ``cause``."""
    gaps = analysis.gap_causes(trace).sort("iteration", "start_ns")
    pieces = idle_pieces(gaps, trace.api)
    # pieces tile the gaps in gap order: the k-th piece belongs to the gap its running length falls in
    lengths = (pieces["end_ns"] - pieces["start_ns"]).cum_sum() - (pieces["end_ns"] - pieces["start_ns"])
    bounds = gaps["duration_ns"].cum_sum()
    gap = bounds.search_sorted(lengths, side="right")
    return pieces.select(
        gaps["end_ns"].gather(gap).alias("gap_end"),
        gaps["position"].gather(gap).cast(pl.String).alias("position"),
        "start_ns",
        "end_ns",
        pl.col("cause").cast(pl.String),
    )


def assert_same_causes(trace: Trace, windowings: list[dict]) -> int:
    """Analyze ``trace`` under each windowing (keyword arguments of analyze_iterations) and check that every
    instant of a gap that ends at the same op (the same gap end, not a trailing or empty gap) has the same
    cause in every one. Returns the number of overlapping piece pairs compared."""
    cuts = []
    for kw in windowings:
        try:
            cuts.append(_pieces_by_gap(trace, analyze_iterations(trace, **kw)))
        except Exception as exc:  # noqa: BLE001 -- a windowing with nothing to analyze proves nothing
            if "NoActivity" not in type(exc).__name__:
                raise
    compared = 0
    ending = pl.col("position").is_in(["leading", "inner"])
    for a, b in zip(cuts, cuts[1:], strict=False):
        pairs = (
            a.filter(ending)
            .join(b.filter(ending), on="gap_end", suffix="_b")
            .filter(pl.max_horizontal("start_ns", "start_ns_b") < pl.min_horizontal("end_ns", "end_ns_b"))
        )
        bad = pairs.filter(pl.col("cause") != pl.col("cause_b"))
        assert bad.is_empty(), bad.head(5)
        compared += pairs.height
    return compared


@st.composite
def random_traces(draw: st.DrawFn) -> Trace:
    """Random hand-built traces: ranges, launches on two threads, stream waits, syncs, kernels on two
    streams that may queue behind each other or outlive their range, ops launched before the capture."""
    ranges, api, ops, t, corr = [], [], [], 0, 0
    for _ in range(draw(st.integers(1, 3))):
        start = t + draw(st.integers(0, 50))
        end = start + draw(st.integers(50, 300))
        ranges.append((start, end, "iteration"))
        for _ in range(draw(st.integers(0, 5))):
            a = draw(st.integers(start, end))
            corr += 1
            name = draw(st.sampled_from(["cudaLaunchKernel", "cudaStreamWaitEvent", "cudaDeviceSynchronize"]))
            api.append((a, a + draw(st.integers(1, 20)), corr, name))
            if name == "cudaLaunchKernel":
                k = a + draw(st.integers(0, 200))
                ops.append((k, k + draw(st.integers(1, 60)), corr, draw(st.sampled_from([7, 8]))))
        t = end
    for _ in range(draw(st.integers(0, 2))):  # launched before the capture (no call in the trace)
        corr += 1
        k = draw(st.integers(0, t + 100))
        ops.append((k, k + draw(st.integers(1, 60)), corr, 7))
    return make_trace(ranges, api, ops)


WINDOWINGS = [{}, {"split_idle_ms": 0.0}, {"split_idle_ms": 0.00005}, {"split_idle_ms": 1e9}]


@settings(max_examples=150, deadline=None)
@given(trace=random_traces())
def test_gap_causes_are_the_same_under_every_windowing(trace: Trace) -> None:
    if trace.ops.is_empty():
        return
    assert_same_causes(trace, WINDOWINGS)


@pytest.mark.parametrize(
    "path",
    sorted(p for p in (SAMPLE_TRACES / "synthetic").glob("table3_*/*_b1_s128.synthetic.sqlite")),
    ids=lambda p: p.parent.name,
)
def test_gap_causes_are_the_same_under_every_windowing_on_simulated_traces(path: Path) -> None:
    from tracekit.readers import read_trace

    assert assert_same_causes(read_trace(path), [{}, {"split_idle_ms": 0.0}, {"split_idle_ms": 0.01}]) > 0


def _real_files() -> list[Path]:
    if not REAL_TRACES.is_dir():
        return []
    files = sorted((REAL_TRACES / "tracelens").glob("*.json.gz")) + sorted(
        (REAL_TRACES / "nsys").glob("*.sqlite")
    )
    files += sorted((REAL_TRACES / "kineto").glob("*.json.gz"))
    return [f for f in files if "local_nvtx_only_cpu" not in f.name]


REAL_FILES = _real_files()
#: every real timeline trace: the above, the study's own traces, and the CPU-only NVTX export (no ops); the
#: Nsight Compute reports have no timeline (no windows to check)
EVERY_REAL = (
    REAL_FILES
    + (sorted((REAL_TRACES / "paper").glob("*.sqlite")) if REAL_TRACES.is_dir() else [])
    + (sorted((REAL_TRACES / "paper" / "kineto").glob("*.json")) if REAL_TRACES.is_dir() else [])
    + ([REAL_TRACES / "nsys" / "local_nvtx_only_cpu_2022.4.sqlite"] if REAL_TRACES.is_dir() else [])
)
H200 = sorted((SAMPLE_TRACES / "h200_bert_fp16").glob("*/*_b1_s128.torch.json.gz"))


@pytest.mark.real_traces
@pytest.mark.parametrize("path", REAL_FILES + H200, ids=lambda p: p.name)
def test_gap_causes_are_the_same_under_default_and_split_idle_on_real_traces(path: Path) -> None:
    from tracekit.readers import read_trace

    trace = read_trace(path)
    assert assert_same_causes(trace, [{}, {"split_idle_ms": 0.0}, {"split_idle_ms": 0.1}]) > 0


# ------------------------------------------------------------- every real trace: the rules, and the facts


@pytest.mark.real_traces
@pytest.mark.parametrize("path", EVERY_REAL + H200, ids=lambda p: p.name)
def test_real_traces_follow_the_window_rules_and_warn_only_facts(path: Path) -> None:
    from tracekit.readers import read_trace

    trace = read_trace(path)
    a = analyze_iterations(trace)
    it = a.iterations
    synced = it.filter(pl.col("synchronized"))
    assert (synced["window_start_ns"] == synced["start_ns"]).all()
    assert (synced["window_end_ns"] == synced["end_ns"]).all()
    assert synced["latency_ms"].to_list() == pytest.approx(synced["cpu_ms"].to_list())
    # every count a warning states is the direct count
    calls = trace.api.filter(pl.col("correlation").is_not_null()).select("pid", "correlation").unique()
    with_corr = trace.ops.filter(pl.col("correlation").is_not_null())
    missing = with_corr.join(calls, on=["pid", "correlation"], how="anti").height if calls.height else 0
    # ops without their launching call: outside every range, or inside the one window (which holds every op)
    phrase = (
        "device ops in the windows were launched before the capture began"
        if a.range_name == "window"
        else "have a correlation id but no launching call"
    )
    said = [w for w in a.warnings if phrase in w]
    assert [int(w.split()[0]) for w in said] == ([missing] if missing else [])
    from tracekit.analyzers.iterations import assign_ops

    holding = assign_ops(trace, a.ranges)["iteration"].unique()
    without = it.filter(~pl.col("index").is_in(holding.implode())).height if trace.ops.height else 0
    said = [w for w in a.warnings if "hold no device op" in w]
    assert [int(w.split()[0]) for w in said] == ([without] if without else [])
    assert not any("missing correlation id" in w for w in a.warnings)
    # --split-idle windows: first launch to last end of each group
    if trace.ops.is_empty():  # ranges without device activity: the mode says why it has nothing to cut
        from tracekit.errors import NoActivityError

        with pytest.raises(NoActivityError, match="ranges are not used in that mode"):
            analyze_iterations(trace, split_idle_ms=0.1)
        return
    w = analyze_iterations(trace, split_idle_ms=0.1)
    frame = w.ranges
    assert (frame["range_start"] <= frame["gpu_start"]).all()
    assert (frame["range_end"] == frame["gpu_end"]).all()
    assert (frame["gpu_end"].shift(1).fill_null(-1) < frame["gpu_start"]).all()
    # the analysis may leave windows out (a last one the capture cut off, with a warning); the ranges frame
    # keeps every window, so each analyzed iteration is matched to its own window by index
    kept = frame.join(w.iterations.select(pl.col("index").alias("iteration")), on="iteration")
    assert kept.height == w.iterations.height
    left_out = frame.height - kept.height
    assert left_out == sum("left out the last" in x for x in w.warnings)
    assert w.iterations["latency_ms"].to_list() == pytest.approx(
        ((kept["range_end"] - kept["range_start"]) / 1e6).to_list()
    )


def test_split_idle_on_ranges_without_ops_says_the_ranges_are_not_used() -> None:
    # issue 30: "no ranges and no device activity" was said of a trace with 1,824 NVTX ranges
    from tracekit.errors import NoActivityError

    trace = make_trace(ranges=[(0, 100, "iteration"), (100, 200, "iteration")])
    with pytest.raises(NoActivityError) as err:
        analyze_iterations(trace, split_idle_ms=1.0)
    assert str(err.value) == (
        "hand-built: --split-idle cuts the device timeline, and this trace has no device activity; its 2 ranges "
        "are not used in that mode (analyze them with --range NAME, or without --split-idle)"
    )
    with pytest.raises(NoActivityError, match="no ranges and no device activity"):
        analyze_iterations(make_trace(), split_idle_ms=1.0)


def test_gaps_file_holds_every_gap_with_its_causes(tmp_path: Path, capsys) -> None:
    from tracekit.cli import main

    sample = SAMPLE_TRACES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"
    out = tmp_path / "gaps.csv"
    assert main(["analyze", str(sample), "--format", "json", "--gaps", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    gaps = pl.read_csv(out)
    assert gaps.height == sum(it["idle_gaps"] for it in doc["iterations"])
    causes = ["dispatch_ns", "launch_ns", "sync_ns", "other_api_ns", "in_flight_ns"]
    assert (gaps.select(pl.sum_horizontal(causes)).to_series() == gaps["duration_ns"]).all()
    per_iteration = gaps.group_by("iteration").agg(pl.col("dispatch_ns").sum()).sort("iteration")
    assert per_iteration["dispatch_ns"].to_list() == [
        round(it["dispatch_ms"] * 1e6) for it in doc["iterations"]
    ]
    assert set(gaps["cause"]) <= {"dispatch", "launch", "sync", "other_api", "launch_latency", "queued",
                                  "stream_wait", "launch_lag"}  # fmt: skip
    as_json = tmp_path / "gaps.json"
    assert main(["analyze", str(sample), "--format", "json", "--gaps", str(as_json)]) == 0
    capsys.readouterr()
    assert len(json.loads(as_json.read_text())) == gaps.height
    # refused before any work: an input, a folder, a missing folder
    for bad, said in ((sample, "refusing to write over an input"), (tmp_path, "is a folder"),
                      (tmp_path / "no" / "g.csv", "does not exist")):  # fmt: skip
        assert main(["analyze", str(sample), "--gaps", str(bad)]) == 2
        assert said in capsys.readouterr().err
