"""Wall-time SMs active / warp occupancy from GPU-metrics samples (hand-built traces, exact values)."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import real_trace
from tracekit.analyzers.gpu_metrics import analyze_gpu_metrics, choose_metric
from tracekit.model import Trace

WINDOWS = pl.DataFrame(
    {"index": [0, 1, 2], "window_start_ns": [1000, 2000, 3000], "window_end_ns": [1500, 2500, 3500]}
)


def trace_with(samples: list[tuple[int, int, str, str, float]], kernel_device: int = 0) -> Trace:
    """A synthetic trace: one kernel per window on ``kernel_device``, and the given (t, device, metric, unit, v)."""
    ops = pl.DataFrame(
        {
            "start": [1100, 2100, 3100],
            "end": [1200, 2200, 3200],
            "device": [kernel_device] * 3,
            "kind": ["kernel"] * 3,
            "name": ["k"] * 3,
        }
    )
    gm = pl.DataFrame(samples, schema=["timestamp", "device", "metric", "unit", "value"], orient="row")
    return Trace(ops=ops, gpu_metrics=gm, meta={"synthetic": True})


def test_window_means_exact():
    samples = [
        (999, 0, "SMs Active", "%", 100.0),  # before window 0: ignored
        (1000, 0, "SMs Active", "%", 10.0),  # on the start: counted
        (1250, 0, "SMs Active", "%", 20.0),
        (1500, 0, "SMs Active", "%", 60.0),  # on the end: counted
        (1501, 0, "SMs Active", "%", 100.0),  # after: ignored
        (2400, 0, "SMs Active", "%", 7.0),
        (3000, 0, "SMs Active", "%", 1.0),
        (3200, 0, "SMs Active", "%", 2.0),
        (1250, 0, "Compute Warps in Flight", "%", 4.0),
        (2250, 0, "Compute Warps in Flight", "%", 8.0),
        (3250, 0, "Compute Warps in Flight", "%", 3.0),
    ]
    result = analyze_gpu_metrics(trace_with(samples), WINDOWS)
    assert result.iterations["sms_active"].to_list() == pytest.approx([30.0, 7.0, 1.5])
    assert result.iterations["warp_occupancy"].to_list() == pytest.approx([4.0, 8.0, 3.0])
    assert result.iterations["samples"].to_list() == [3, 1, 2]
    assert result.value("sms_active") == pytest.approx((30.0 + 7.0 + 1.5) / 3)
    assert result.value("warp_occupancy") == pytest.approx(5.0)
    assert result.summary["sms_active"]["metric"] == "SMs Active"
    assert result.summary["sms_active"]["unit"] == "%"
    assert result.summary["sms_active"]["device"] == 0
    assert result.warnings == []


@pytest.mark.parametrize(
    ("names", "column", "expected"),
    [
        (["SM Active", "SM Issue", "Unallocated Warps in Active SMs"], "sms_active", "SM Active"),
        (
            ["SMs Active [Throughput %]", "GR Active [Throughput %]"],
            "sms_active",
            "SMs Active [Throughput %]",
        ),
        (
            ["Compute Warps In Flight", "Vertex/Tess/Geometry Warps In Flight"],
            "warp_occupancy",
            "Compute Warps In Flight",
        ),
        (
            ["Compute Warps in Flight [Avg]", "Compute Warps in Flight [Throughput %]"],
            "warp_occupancy",
            "Compute Warps in Flight [Throughput %]",
        ),
        (["Warp Occupancy"], "warp_occupancy", "Warp Occupancy"),
        (["sms active"], "sms_active", "sms active"),
        (["Async Compute In Flight", "Pixel Warps In Flight"], "warp_occupancy", None),
    ],
)
def test_metric_name_variants(names, column, expected):
    units = {n: ("warps" if n.endswith("[Avg]") else "%") for n in names}
    frame = pl.DataFrame(
        {
            "timestamp": [1] * len(names),
            "device": [0] * len(names),
            "metric": names,
            "unit": [units[n] for n in names],
            "value": [1.0] * len(names),
        }
    )
    choice = choose_metric(frame, column)
    assert (choice.metric if choice else None) == expected


def test_non_percent_unit_is_kept():
    samples = [(1200, 0, "Compute Warps in Flight [Avg]", "warps", 12.0)]
    result = analyze_gpu_metrics(trace_with(samples), WINDOWS)
    assert result.summary["warp_occupancy"]["unit"] == "warps"
    assert result.iterations["warp_occupancy"].to_list()[0] == 12.0


def test_samples_from_another_gpu_give_no_value_and_a_warning():
    samples = [(1200, 1, "SM Active", "%", 0.0), (1200, 1, "Compute Warps In Flight", "%", 0.0)]
    result = analyze_gpu_metrics(trace_with(samples, kernel_device=3), WINDOWS)
    assert result.value("sms_active") is None
    assert result.value("warp_occupancy") is None
    assert result.iterations["sms_active"].null_count() == 3
    assert any("come from GPU 1 but the kernels ran on GPU 3" in w for w in result.warnings)


def test_only_the_kernel_gpu_counts():
    samples = [(1200, 0, "SM Active", "%", 50.0), (1200, 1, "SM Active", "%", 0.0)]
    result = analyze_gpu_metrics(trace_with(samples, kernel_device=0), WINDOWS)
    assert result.iterations["sms_active"].to_list() == [50.0, None, None]
    assert any("2 of 3 iterations have no 'SM Active' sample" in w for w in result.warnings)


def test_no_samples():
    result = analyze_gpu_metrics(trace_with([]), WINDOWS)
    assert result.summary == {"sms_active": None, "warp_occupancy": None}
    assert result.iterations["samples"].to_list() == [0, 0, 0]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(900, 3600), st.floats(0, 100)), min_size=1, max_size=40))
def test_iteration_value_is_the_mean_of_its_window_samples(points):
    samples = [(t, 0, "SM Active", "%", v) for t, v in points]
    result = analyze_gpu_metrics(trace_with(samples), WINDOWS)
    for row in result.iterations.iter_rows(named=True):
        w = WINDOWS.row(row["index"], named=True)
        inside = [v for t, v in points if w["window_start_ns"] <= t <= w["window_end_ns"]]
        assert row["samples"] == len(inside)
        if inside:
            assert row["sms_active"] == pytest.approx(sum(inside) / len(inside))
        else:
            assert row["sms_active"] is None


def test_paper_trace_metrics_come_from_another_gpu():
    """The study's own trace sampled GPU metrics on an idle GPU: no value, a warning (never 0)."""
    from tracekit.analyzers.iterations import analyze_iterations
    from tracekit.readers import read_trace

    trace = read_trace(real_trace("paper", "framework_tax_bert_fp16_bs1_cudagraphs_rtx8000.sqlite"))
    assert not trace.gpu_metrics.is_empty(), "the nsys reader must read the GENERIC_EVENTS GPU metrics"
    analysis = analyze_iterations(trace, "forward")
    result = analyze_gpu_metrics(trace, analysis.iterations)
    assert result.value("sms_active") is None
    assert result.value("warp_occupancy") is None
    assert result.choices["sms_active"].metric == "SM Active"
    assert result.choices["warp_occupancy"].metric == "Compute Warps In Flight"
    assert any("but the kernels ran on GPU 3" in w for w in result.warnings)
