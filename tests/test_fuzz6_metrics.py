"""Fuzzing the GPU-metrics path (nsys samples -> SMs active / warp occupancy) after the first real nsys traces
with GPU metrics (H200, nsys 2025.3.1, sample_traces/h200_bert_fp16/nsys-*). The traces here are synthetic
(built in tmp_path, named so); each case is one found on copies of the real traces:

- coarse sampling: a sample's value is the mean over the period its timestamp opens, so an iteration shorter
  than two sampling periods holds one or two samples whose values may be mostly time outside it (the real
  CUDA-graph trace resampled to 100 Hz read 22-30% SMs active, 40% at 10 kHz): no value, with a warning;
- sampling that stops inside the loop (capture range): an iteration sampled for less than half of its window
  gets no value;
- a metric whose only match is not in % ("Compute Warps in Flight [Avg Warps per Cycle]" where the
  "[Throughput %]" one is missing: 6.9 shown as warp occupancy %): no value, with a warning;
- a % metric of a later name pattern is preferred over a non-% one of an earlier pattern.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tests.nsys_builder import NsysBuilder
from tracekit.analyzers.gpu_metrics import analyze_gpu_metrics, choose_metric
from tracekit.model import Trace
from tracekit.readers import read_trace
from tracekit.session import analyze_trace

SM = "SMs Active [Throughput %]"
WARPS = "Compute Warps in Flight [Throughput %]"
ITERATION_NS = 800_000  # a CUDA-graph iteration of BERT-base b1 on an H200: ~0.77 ms
T0 = 1_000_000
ITERATIONS = 20


def build(path: Path, period_ns: int, value_of, *, until_ns: int | None = None, metrics=(SM, WARPS)) -> Path:
    """A synthetic export: ``ITERATIONS`` back-to-back 'iteration' ranges of ``ITERATION_NS`` from ``T0``,
    one kernel each (600 us), then 10 ms of idle GPU; GPU-metric samples every ``period_ns`` from 0 to the
    end (or ``until_ns``), the value of a sample at t being ``value_of(t)``."""
    b = NsysBuilder()
    b.gpu(0, "Synthetic GPU")
    for i in range(ITERATIONS):
        start = T0 + i * ITERATION_NS
        b.runtime(start + 10_000, start + 20_000, "cudaLaunchKernel_v7000", correlation=i + 1)
        b.kernel(start + 30_000, start + 630_000, "synthetic_kernel", correlation=i + 1)
        b.nvtx_range(start, start + ITERATION_NS, "iteration")
    end = T0 + ITERATIONS * ITERATION_NS + 10_000_000
    for t in range(0, until_ns if until_ns is not None else end, period_ns):
        for metric in metrics:
            b.gpu_metric(t, metric, value_of(t))
    return b.write(path)


def metrics_of(path: Path):
    trace = read_trace(path)
    analysis = analyze_trace(trace)
    return trace, analyze_gpu_metrics(trace, analysis.iterations)


def loop_value(t: int) -> float:
    """40% while the loop runs, 2% in the idle time after it (and before it)."""
    return 40.0 if T0 <= t < T0 + ITERATIONS * ITERATION_NS else 2.0


def test_fine_sampling_still_gives_the_mean_of_the_window_samples(tmp_path: Path) -> None:
    trace, result = metrics_of(build(tmp_path / "synthetic_fine.nsys.sqlite", 100_000, loop_value))
    assert trace.meta["gpu_metrics_period_ns"] == 100_000
    # both window ends included: the last iteration also holds the first idle sample (2%), at its end
    assert result.iterations["samples"].to_list() == [9] * ITERATIONS
    assert result.iterations["sms_active"].to_list() == [40.0] * 19 + [pytest.approx((8 * 40 + 2) / 9)]
    assert result.warnings == []


def test_samples_coarser_than_the_iterations_give_no_value(tmp_path: Path) -> None:
    """100 Hz against 0.8 ms iterations: the one sample that starts inside the last iteration measured 10 ms
    of mostly idle GPU (2%); the previous code showed 2.0% as the loop's SMs active."""
    path = build(tmp_path / "synthetic_coarse.nsys.sqlite", 10_000_000, loop_value)
    trace, result = metrics_of(path)
    assert trace.meta["gpu_metrics_period_ns"] == 10_000_000
    assert result.value("sms_active") is None and result.value("warp_occupancy") is None
    assert result.iterations["sms_active"].null_count() == ITERATIONS
    assert any(
        w.startswith(f"20 of 20 iterations are shorter than 2 sampling periods of {SM!r} (10 ms, 100 Hz;")
        and "nsys --gpu-metrics-frequency" in w
        for w in result.warnings
    ), result.warnings


def test_the_table_shows_no_coarse_value(tmp_path: Path) -> None:
    from tracekit.analyzers.table import table_row
    from tracekit.inputs import resolve_input
    from tracekit.session import AnalysisOptions

    path = build(tmp_path / "synthetic_coarse.nsys.sqlite", 10_000_000, loop_value)
    row, warnings = table_row(resolve_input(path), AnalysisOptions())
    assert row["sms_active"] is None and row["sms_active_source"] is None
    assert row["warp_occupancy"] is None
    assert any("shorter than 2 sampling periods" in w for w in warnings)


def test_an_iteration_of_two_periods_or_more_keeps_its_value(tmp_path: Path) -> None:
    # 400 us: each 0.8 ms iteration spans exactly two periods (the rule's edge) and holds two samples or more
    _, result = metrics_of(build(tmp_path / "synthetic_edge.nsys.sqlite", 400_000, loop_value))
    assert result.iterations["sms_active"].null_count() == 0
    assert min(result.iterations["samples"]) >= 2


def test_sampling_that_stops_inside_the_loop(tmp_path: Path) -> None:
    """Samples until 0.3 ms into iteration 10 (a capture range ending there): iteration 10 was sampled for
    less than half of its window and gets no value, like the ten after it; the previous code gave it the
    value of its first 0.3 ms."""
    stop = T0 + 10 * ITERATION_NS + 300_000
    path = build(
        tmp_path / "synthetic_cut.nsys.sqlite", 100_000, lambda t: 40.0 + (t // 100_000) % 3, until_ns=stop
    )
    _, result = metrics_of(path)
    values = result.iterations["sms_active"].to_list()
    assert all(v is not None for v in values[:10])
    assert values[10:] == [None] * 10
    assert result.iterations["samples"].to_list()[10] == 3
    assert any(
        w.startswith(f"10 of 20 iterations hold {SM!r} samples for less than half of their window")
        and "9 of them none at all" in w
        for w in result.warnings
    ), result.warnings


def test_the_stated_frequency_stands_in_for_a_single_sample(tmp_path: Path) -> None:
    """One sample in the whole export: its period is the capture's stated frequency (100 Hz: 10 ms)."""
    path = build(tmp_path / "synthetic_one_sample.nsys.sqlite", 10**12, loop_value)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE GPU_METRICS SET timestamp = ?, rawTimestamp = ?", (T0 + 100_000,) * 2)
        con.execute("CREATE TABLE META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT)")
        con.execute("INSERT INTO META_DATA_CAPTURE VALUES ('GPU_METRICS_OPTIONS:SAMPLING_FREQUENCY', '100')")
    trace, result = metrics_of(path)
    assert trace.meta["gpu_metrics_period_ns"] == 10_000_000
    assert result.value("sms_active") is None


def test_sample_period_is_the_median_interval_despite_jitter_and_holes() -> None:
    from tracekit.readers.nsys_gpu_metrics import sampling_period_ns

    class NoExport:
        def key_values(self, table: str) -> dict[str, str]:
            return {}

    stamps = [0, 99_998, 200_000, 299_999, 400_000, 5_000_000, 5_100_000, 5_199_998]
    frame = pl.DataFrame({"timestamp": stamps * 2, "device": [0] * 16})  # two metrics per sample
    assert sampling_period_ns(NoExport(), frame) == 100_000
    assert sampling_period_ns(NoExport(), frame.head(1)) is None


def _trace(samples: list[tuple[int, int, str, str, float]]) -> Trace:
    ops = pl.DataFrame({"start": [1100], "end": [1200], "device": [0], "kind": ["kernel"], "name": ["k"]})
    gm = pl.DataFrame(samples, schema=["timestamp", "device", "metric", "unit", "value"], orient="row")
    return Trace(ops=ops, gpu_metrics=gm, meta={"synthetic": True})


WINDOW = pl.DataFrame({"index": [0], "window_start_ns": [1000], "window_end_ns": [1500]})


def test_a_warp_metric_not_in_percent_is_not_reported_as_one() -> None:
    """nsys 2025.3 writes "Compute Warps in Flight" as [Throughput %], [Avg] and [Avg Warps per Cycle]; with
    the % one missing, the previous code showed the warps per cycle (6.9 on the real CUDA-graph trace) in
    the warp-occupancy % column."""
    result = analyze_gpu_metrics(
        _trace([(1200, 0, "Compute Warps in Flight [Avg Warps per Cycle]", "Cycle", 6.9)]), WINDOW
    )
    assert result.value("warp_occupancy") is None
    assert result.summary["warp_occupancy"]["unit"] == "Cycle"
    assert result.iterations["warp_occupancy"].to_list() == [6.9]  # kept, in its own unit
    assert (
        "warp occupancy: the matching metric 'Compute Warps in Flight [Avg Warps per Cycle]' is in 'Cycle', "
        "not %: not reported as a percentage"
    ) in result.warnings


def test_the_table_falls_back_past_a_metric_not_in_percent() -> None:
    from tracekit.analyzers.utilization import utilization

    class Analyzed:
        trace_data = _trace([(1200, 0, "Compute Warps in Flight [Avg]", "Avg", 903643.0)])
        iterations = WINDOW
        range_name = None
        ops = None

    result = utilization(Analyzed())  # type: ignore[arg-type]
    assert result.wall["warp_occupancy"].value is None


def test_a_percent_metric_of_a_later_pattern_wins_over_another_unit() -> None:
    frame = pl.DataFrame(
        {
            "timestamp": [1, 1],
            "device": [0, 0],
            "metric": ["Compute Warps in Flight [Avg]", "Warp Occupancy"],
            "unit": ["Avg", "%"],
            "value": [1.0, 1.0],
        }
    )
    choice = choose_metric(frame, "warp_occupancy")
    assert choice is not None and choice.metric == "Warp Occupancy"


def test_a_bracketed_unit_is_the_whole_bracket(tmp_path: Path) -> None:
    """nsys 2025.3's non-% variants: "[Avg Warps per Cycle]" had been given the unit "Cycle" (its last word)."""
    b = NsysBuilder()
    b.gpu(0, "Synthetic GPU")
    b.kernel(0, 10, "k", correlation=1)
    for name in ("Compute Warps in Flight [Avg Warps per Cycle]", "Compute Warps in Flight [Avg]", SM):
        b.gpu_metric(1000, name, 5.0)
    b.gpu_metric(1000, "GPC Clock Frequency [MHz]", 1755)
    trace = read_trace(b.write(tmp_path / "synthetic_units.nsys.sqlite"))
    units = dict(trace.gpu_metrics.select("metric", "unit").unique().iter_rows())
    assert units == {
        "Compute Warps in Flight [Avg Warps per Cycle]": "Avg Warps per Cycle",
        "Compute Warps in Flight [Avg]": "Avg",
        SM: "%",
        "GPC Clock Frequency [MHz]": "MHz",
    }


@pytest.mark.parametrize(("sampled_pw", "reported"), [(0, False), (1, True)])
def test_samples_of_a_gpu_the_process_did_not_use(tmp_path: Path, sampled_pw: int, reported: bool) -> None:
    """A two-GPU box where the process ran on the box's GPU 1 as its CUDA device 0 (CUDA_VISIBLE_DEVICES=1;
    TARGET_INFO_CUDA_DEVICE says so). Samples of GPU 0 had been mapped to CUDA id 0 (its cuDevice) and read as
    the used GPU's; they now belong to no device. Samples of GPU 1 are the used GPU's."""
    b = NsysBuilder()
    b.gpu(0, "Synthetic GPU")
    b.gpu(1, "Synthetic GPU")
    b.runtime(100_000, 110_000, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(120_000, 900_000, "synthetic_kernel", correlation=1, device=0)
    b.nvtx_range(0, 1_000_000, "iteration")
    for t in range(0, 1_100_000, 100_000):
        b.gpu_metric(t, SM, 50.0, pw_gpu_id=sampled_pw)
    path = b.write(tmp_path / "synthetic_two_gpus.nsys.sqlite")
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER)")
        con.execute("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (1, 0, 100)")
    trace, result = metrics_of(path)
    assert trace.gpu_metrics["device"].to_list()[0] == (0 if reported else None)
    if reported:
        assert result.value("sms_active") == pytest.approx(50.0)
    else:
        assert result.value("sms_active") is None
        assert result.warnings[0] == (
            f"GPU-metrics samples ({SM!r}) come from a GPU the export ties to no traced process's CUDA device but the kernels "
            "ran on GPU 0: SMs active is not reported (the sampled GPU is not known to be the one used)"
        )


def _kineto_estimates(rows: list[tuple[int, float]]) -> Trace:
    """A synthetic trace holding only Kineto occupancy estimates: (kernel duration ns, estimate %)."""
    km = pl.DataFrame(
        {
            "kernel": list(range(len(rows))),
            "name": ["k"] * len(rows),
            "range": [None] * len(rows),
            "duration_ns": [d for d, _ in rows],
            "metric": ["est. achieved occupancy %"] * len(rows),
            "unit": ["%"] * len(rows),
            "value": [v for _, v in rows],
        },
        schema_overrides={"range": pl.String},
    )
    return Trace(kernel_metrics=km, meta={"synthetic": True})


@pytest.mark.parametrize(
    ("rows", "kept", "warned"),
    [
        ([(700, 0.0), (300, 20.0)], False, True),  # 70% of the kernel time unestimated: no figure
        ([(300, 0.0), (700, 20.0)], True, True),  # 30%: kept, with a warning
        ([(50, 0.0), (950, 20.0)], True, False),  # 5%: kept, nothing said
    ],
)
def test_kineto_estimates_of_zero_over_half_the_kernel_time_give_no_warp_occupancy(
    rows, kept, warned
) -> None:
    from tracekit.analyzers.kernel_metrics import KernelMetricsResult
    from tracekit.analyzers.utilization import Utilization, _fill_from_estimate

    entry = {"metric": "est. achieved occupancy %", "wall_time": 2.0, "kernel_time": 6.0}
    estimate = KernelMetricsResult(
        source="kineto estimate", kernels=pl.DataFrame(), iterations=None, summary={"warp_occupancy": entry}
    )
    result = Utilization()
    _fill_from_estimate(result, estimate, _kineto_estimates(rows))
    assert (result.wall["warp_occupancy"].value == 2.0) is kept
    assert (result.kernel_time["warp_occupancy"] == 6.0) is kept
    assert (result.kernel_time_source == "kineto estimate") is kept
    assert bool(result.warnings) is warned


def test_an_ncu_figure_is_not_touched_by_the_kineto_estimates() -> None:
    from tracekit.analyzers.kernel_metrics import KernelMetricsResult
    from tracekit.analyzers.utilization import Figure, Utilization, _fill_from_estimate

    entry = {"metric": "est. achieved occupancy %", "wall_time": 2.0, "kernel_time": 6.0}
    estimate = KernelMetricsResult(
        source="kineto estimate", kernels=pl.DataFrame(), iterations=None, summary={"warp_occupancy": entry}
    )
    result = Utilization()
    result.wall["warp_occupancy"] = Figure(1.0, "ncu", "sm__warps_active.avg.pct_of_peak_sustained_active")
    result.kernel_time.update(warp_occupancy=3.0)
    result.kernel_time_source = "ncu"
    _fill_from_estimate(result, estimate, _kineto_estimates([(700, 0.0), (300, 20.0)]))
    assert result.warnings == []
    assert result.wall["warp_occupancy"].value == 1.0 and result.kernel_time["warp_occupancy"] == 3.0


def test_the_real_h200_kineto_trace_gives_no_estimated_warp_occupancy() -> None:
    """BERT-base fp16 b1 on an H200 under torch.profiler: the estimate read 0.26% warp occupancy, where nsys
    GPU metrics (0.98%) and ncu joined to the same timeline (0.98%) measured it; 72% of the kernel time had
    an estimate of 0."""
    from tests.conftest import SAMPLE_TRACES
    from tracekit.analyzers.table import table_row
    from tracekit.inputs import resolve_input
    from tracekit.session import AnalysisOptions

    path = SAMPLE_TRACES / "h200_bert_fp16" / "pytorch" / "pytorch_b1_s128.torch.json.gz"
    row, warnings = table_row(resolve_input(path), AnalysisOptions())
    assert row["warp_occupancy"] is None and row["warp_occupancy_source"] is None
    assert row["warp_occupancy_kernel_time"] is None and row["kernel_time_source"] is None
    assert any(
        w.startswith(
            "torch.profiler's occupancy estimate is 0 for 2480 of 4040 kernels, 72% of the kernel time"
        )
        for w in warnings
    ), warnings


def test_a_percent_sample_outside_0_to_100_is_no_value() -> None:
    """A corrupt sample (255 in an integer column) had been averaged in: 40% SMs active read 112%."""
    samples = [(1100, 0, SM, "%", 40.0), (1200, 0, SM, "%", 255.0), (1300, 0, SM, "%", 40.0)]
    result = analyze_gpu_metrics(_trace(samples), WINDOW)
    assert result.iterations["sms_active"].to_list() == [40.0]
    assert result.iterations["samples"].to_list() == [3]
    assert f"1 of 3 {SM!r} samples lie outside 0-100%: read as samples without a value" in result.warnings
