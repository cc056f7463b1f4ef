"""SMs active / warp occupancy of one configuration (analyzers/utilization.py): which source fills each
figure, with which label, and which warnings survive the merge (issue 33's mutation testing found these
unchecked). Real inputs: the committed H200 BERT traces (Kineto, Nsight Compute CSV) and the synthetic
nsys SQLite sample (GPU-metrics samples); hand-built metric summaries where a rule needs an input the
readers never produce."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import tracekit
import tracekit.analyzers.gpu_metrics as gpu_metrics
from tracekit.analyzers.gpu_metrics import GpuMetricsResult
from tracekit.analyzers.kernel_metrics import KernelMetricsResult
from tracekit.analyzers.utilization import (
    Figure,
    Utilization,
    _fill_kernel_time,
    _fill_wall,
    kernel_time_only,
    utilization,
)
from tracekit.readers import read_trace
from tracekit.session import EVERYTHING, analyze_input

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"
H200 = SAMPLES / "h200_bert_fp16"
NCU = H200 / "pytorch-ncu" / "pytorch_b1_s128.ncu.csv.gz"
SYN = SAMPLES / "synthetic" / "table3_pytorch" / "pytorch_b1_s128.synthetic.sqlite"


def _metrics(summary: dict, source: str = "ncu", warnings: list[str] | None = None) -> KernelMetricsResult:
    return KernelMetricsResult(source, pl.DataFrame(), None, summary, warnings or [])


def _entry(**values) -> dict:
    return {"metric": "m", "unit": "%", "kernel_time": None, "wall_time": None, **values}


# --- the merge rules, on hand-built per-kernel summaries --------------------------------------------------


def test_a_wall_figure_keeps_its_own_source_else_the_callers() -> None:
    result = Utilization()
    metrics = _metrics(
        {
            "sms_active": _entry(wall_time=41.0, source="ncu (range 'forward')", metric="sm__cycles"),
            "warp_occupancy": {
                k: v for k, v in _entry(wall_time=12.5, metric="warps").items() if k != "source"
            },
        }
    )
    _fill_wall(result, metrics, "kineto estimate")
    assert result.wall["sms_active"] == Figure(41.0, "ncu (range 'forward')", "sm__cycles")
    assert result.wall["warp_occupancy"] == Figure(12.5, "kineto estimate", "warps")
    # a figure already there (a better source) is kept; a None wall time fills nothing
    _fill_wall(result, _metrics({"sms_active": _entry(wall_time=99.0, source="x")}), "y")
    assert result.wall["sms_active"].value == 41.0
    empty = Utilization()
    _fill_wall(
        empty, _metrics({"sms_active": _entry(wall_time=None, source="x"), "warp_occupancy": None}), "y"
    )
    assert empty.wall["sms_active"] == Figure() and empty.wall["warp_occupancy"] == Figure()


def test_kernel_time_figures_name_every_source_once_in_order() -> None:
    result = Utilization()
    metrics = _metrics(
        {
            "sms_active": _entry(kernel_time=40.0, source="ncu"),
            "warp_occupancy": {k: v for k, v in _entry(kernel_time=3.4).items() if k != "source"},
        },
        source="kineto estimate",
    )
    _fill_kernel_time(result, metrics)
    assert result.kernel_time == {"sms_active": 40.0, "warp_occupancy": 3.4}
    assert result.kernel_time_source == "ncu / kineto estimate"
    same = Utilization()
    _fill_kernel_time(
        same, _metrics({c: _entry(kernel_time=1.0, source="ncu") for c in ("sms_active", "warp_occupancy")})
    )
    assert same.kernel_time_source == "ncu"  # one source named once
    none = Utilization()
    _fill_kernel_time(
        none, _metrics({"sms_active": _entry(kernel_time=None, source="ncu"), "warp_occupancy": None})
    )
    assert none.kernel_time_source is None and none.kernel_time == {
        "sms_active": None,
        "warp_occupancy": None,
    }


def test_fields_are_the_table_row_keys() -> None:
    result = Utilization()
    result.wall["sms_active"] = Figure(9.7, "nsys metrics", "SMs Active [%]")
    result.kernel_time["warp_occupancy"] = 3.4
    result.kernel_time_source = "kineto estimate"
    assert result.fields() == {
        "sms_active": 9.7,
        "sms_active_source": "nsys metrics",
        "sms_active_metric": "SMs Active [%]",
        "warp_occupancy": None,
        "warp_occupancy_source": None,
        "warp_occupancy_metric": None,
        "sms_active_kernel_time": None,
        "warp_occupancy_kernel_time": 3.4,
        "kernel_time_source": "kineto estimate",
    }


# --- real inputs -----------------------------------------------------------------------------------------


def test_an_ncu_report_alone_gives_kernel_time_averages_and_says_why_nothing_else() -> None:
    result = kernel_time_only(read_trace(NCU))
    fields = result.fields()
    assert fields["kernel_time_source"] == "ncu"
    assert fields["sms_active_kernel_time"] == pytest.approx(39.876913171849125, rel=1e-12)
    assert fields["warp_occupancy_kernel_time"] == pytest.approx(12.779832251497517, rel=1e-12)
    assert all(fields[k] is None for k in ("sms_active", "warp_occupancy", "sms_active_source"))
    assert result.warnings == [
        "Nsight Compute report without a timeline trace: latency and wall-time SMs active / "
        "warp occupancy unknown; kernel-time averages only"
    ]


def test_ncu_wins_over_the_kineto_estimate_and_its_warnings_are_kept() -> None:
    """Batch 1 against batch 1's ncu report: ncu fills every figure (not the Kineto estimate, which the
    trace also has), without a warning. Alone, the Kineto estimate gives no figure: 72% of the kernel time has
    an estimate of 0 (it read 0.26% where ncu measured 0.98%). Batch 8 against it (another kernel order: 3220
    of 3820 names differ) gives no ncu figure (it had filled them, a wrong number), the join's warnings stay,
    prefixed, and the Kineto estimate gives none either (74% unestimated)."""
    analyzed = tracekit.analyze(H200 / "pytorch" / "pytorch_b1_s128.torch.json.gz")
    result = utilization(analyzed, read_trace(NCU))
    assert result.wall["warp_occupancy"].source == "ncu" and result.kernel_time_source == "ncu"
    assert result.wall["warp_occupancy"].metric == "sm__warps_active.avg.pct_of_peak_sustained_active"
    assert result.wall["warp_occupancy"].value == pytest.approx(0.9756, abs=1e-4)
    assert result.warnings == []
    kineto_only = utilization(analyzed)
    assert kineto_only.wall["warp_occupancy"].value is None and kineto_only.kernel_time_source is None
    [said] = kineto_only.warnings
    assert said.startswith("torch.profiler's occupancy estimate is 0 for 2480 of 4040 kernels, 72% of the")
    assert "no warp occupancy from it" in said
    other = utilization(tracekit.analyze(H200 / "pytorch" / "pytorch_b8_s128.torch.json.gz"), read_trace(NCU))
    assert other.wall["warp_occupancy"].source is None and other.wall["sms_active"].source is None
    assert len(other.warnings) == 4 and all(w.startswith("ncu: ") for w in other.warnings[:3])
    assert "not a multiple of the 191 kernels per iteration" in other.warnings[0]
    assert "so none of its value" in other.warnings[2]
    assert "0 for 2500 of 3820 kernels, 74% of the kernel time" in other.warnings[3]


def test_nsys_metrics_come_first_with_their_unit_and_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    analyzed = analyze_input(SYN, None, EVERYTHING)  # with its GPU metrics, as table reads it
    result = utilization(analyzed, read_trace(NCU))
    assert result.wall["sms_active"].source == "nsys metrics"
    assert result.wall["sms_active"].metric == "SMs Active [Throughput %]"  # its unit said once (fixncu16)
    # the H200 profile is not this synthetic trace's kernels (3560 of 4000 names differ): no ncu figure, said
    assert result.kernel_time_source is None
    assert len(result.warnings) == 3 and "so none of its value" in result.warnings[2]
    # a sampled metric without a unit keeps its name bare; the GPU-metrics warnings come before ncu's
    real = gpu_metrics.analyze_gpu_metrics

    def unitless(trace, iterations) -> GpuMetricsResult:
        got = real(trace, iterations)
        summary = {c: (None if e is None else {**e, "unit": ""}) for c, e in got.summary.items()}
        return GpuMetricsResult(got.iterations, summary, got.choices, ["sampled on GPU 1, not GPU 0"])

    monkeypatch.setattr(gpu_metrics, "analyze_gpu_metrics", unitless)
    result = utilization(analyzed, read_trace(NCU))
    assert result.wall["sms_active"].metric == "SMs Active [Throughput %]"
    assert result.warnings[0] == "sampled on GPU 1, not GPU 0"
    assert len(result.warnings) == 4 and all(w.startswith("ncu: ") for w in result.warnings[1:])
