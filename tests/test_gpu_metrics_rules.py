"""The edges of analyzers/gpu_metrics.py that issue 33's mutation run found untested: which GPU's samples
count, what a missing metric or an empty window gives (None with its warning, never 0), the frame's schema
on every path, and the device list in messages. Hand-built traces (synthetic), exact values."""

from __future__ import annotations

import polars as pl
import pytest

from tests.test_gpu_metrics import WINDOWS, trace_with
from tracekit.analyzers.gpu_metrics import _fmt, analyze_gpu_metrics, kernel_devices
from tracekit.model import Trace

SCHEMA = {"index": pl.Int64, "sms_active": pl.Float64, "warp_occupancy": pl.Float64, "samples": pl.Int64}


def _ops(rows: list[tuple[str, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "start": [1100 + 1000 * i for i in range(len(rows))],
            "end": [1200 + 1000 * i for i in range(len(rows))],
            "device": [d for _, d in rows],
            "kind": [k for k, _ in rows],
            "name": ["op"] * len(rows),
        }
    )


def test_the_kernels_gpus_decide_not_other_device_ops() -> None:
    trace = Trace(ops=_ops([("kernel", 0), ("memcpy", 1), ("memset", 2), ("kernel", 0)]))
    assert kernel_devices(trace) == [0]
    copies_only = Trace(ops=_ops([("memcpy", 1), ("memset", 2)]))
    assert kernel_devices(copies_only) == [1, 2]  # no kernel: any device op
    assert kernel_devices(Trace(ops=_ops([]).cast({"device": pl.Int64}))) == []


def _samples(rows: list[tuple[int, int, str, str, float]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["timestamp", "device", "metric", "unit", "value"], orient="row")


def test_samples_of_the_gpu_that_ran_the_kernels_only() -> None:
    # kernels on GPU 0, a memcpy on GPU 1; GPU 1's samples must not count
    ops = _ops([("kernel", 0), ("kernel", 0), ("kernel", 0), ("memcpy", 1)])
    gm = _samples([(1250, 0, "SMs Active", "%", 20.0), (1250, 1, "SMs Active", "%", 90.0)])
    result = analyze_gpu_metrics(Trace(ops=ops, gpu_metrics=gm), WINDOWS)
    assert result.iterations["sms_active"].to_list()[0] == 20.0
    assert result.summary["sms_active"]["device"] == 0


def test_without_device_ops_every_sampled_gpu_counts() -> None:
    gm = pl.DataFrame(
        [(1250, 0, "SMs Active", "%", 20.0), (1300, 1, "SMs Active", "%", 40.0)],
        schema=["timestamp", "device", "metric", "unit", "value"],
        orient="row",
    )
    result = analyze_gpu_metrics(Trace(gpu_metrics=gm), WINDOWS)
    assert result.iterations["sms_active"].to_list()[0] == 30.0
    assert result.summary["sms_active"]["device"] == [0, 1]
    assert "SMs active: samples of GPUs 0, 1 averaged together" in result.warnings


def test_two_gpus_averaged_together_are_said() -> None:
    samples = [(1250, 0, "SMs Active", "%", 20.0), (1250, 1, "SMs Active", "%", 40.0)]
    trace = trace_with(samples)
    ops = pl.concat([trace.ops, trace.ops.with_columns(pl.lit(1).alias("device"))])
    result = analyze_gpu_metrics(Trace(ops=ops, gpu_metrics=trace.gpu_metrics), WINDOWS)
    assert "SMs active: samples of GPUs 0, 1 averaged together" in result.warnings
    assert (
        "2 of 3 iterations have no 'SMs Active' sample inside their window (sampling period longer than the "
        "iteration?): no value for them"
    ) in result.warnings
    assert result.iterations["sms_active"].to_list() == [30.0, None, None]


def test_no_samples_at_all_gives_nulls_of_the_right_types_and_nothing_chosen() -> None:
    result = analyze_gpu_metrics(Trace(ops=_ops([("kernel", 0)])), WINDOWS)
    assert result.iterations.schema == SCHEMA
    assert result.iterations.to_dict(as_series=False) == {
        "index": [0, 1, 2],
        "sms_active": [None, None, None],
        "warp_occupancy": [None, None, None],
        "samples": [0, 0, 0],
    }
    assert result.summary == {"sms_active": None, "warp_occupancy": None}
    assert result.choices == {} and result.warnings == []
    assert result.value("sms_active") is None


def test_a_missing_metric_is_null_with_the_names_tried() -> None:
    result = analyze_gpu_metrics(trace_with([(1250, 0, "SMs Active", "%", 20.0)]), WINDOWS)
    assert result.iterations.schema == SCHEMA
    assert result.iterations["warp_occupancy"].to_list() == [None, None, None]
    assert result.summary["warp_occupancy"] is None and set(result.choices) == {"sms_active"}
    assert result.warnings[-1] == (
        r"no GPU-metrics samples for warp occupancy (names tried: ^\s*compute\s+warps\s+in\s+flight\b, "
        r"^\s*warp\s+occupancy\b)"
    )


def test_samples_of_another_gpu_give_null_not_zero() -> None:
    result = analyze_gpu_metrics(trace_with([(1250, 3, "SMs Active", "%", 20.0)], kernel_device=0), WINDOWS)
    assert result.iterations.schema == SCHEMA
    assert result.iterations["sms_active"].to_list() == [None, None, None]
    assert result.warnings[0] == (
        "GPU-metrics samples ('SMs Active') come from GPU 3 but the kernels ran on GPU 0: SMs active is not "
        "reported (the sampled GPU was not the one used)"
    )


@pytest.mark.parametrize(("devices", "text"), [([], "(unknown)"), ([2], "2"), ([0, 1], "0, 1")])
def test_device_lists_in_messages(devices: list[int], text: str) -> None:
    assert _fmt(devices) == text


def test_the_summary_says_how_many_iterations_have_a_value_and_what_was_chosen() -> None:
    samples = [(1250, 0, "SMs Active", "%", 20.0), (2250, 0, "SMs Active", "%", 40.0)]
    result = analyze_gpu_metrics(trace_with(samples), WINDOWS)
    entry = result.summary["sms_active"]
    assert (entry["iterations"], entry["device"], entry["metric"], entry["unit"]) == (2, 0, "SMs Active", "%")
    assert entry["mean"] == 30.0 and entry["min"] == 20.0 and entry["max"] == 40.0
    choice = result.choices["sms_active"]
    assert (choice.column, choice.metric, choice.unit, choice.devices) == (
        "sms_active",
        "SMs Active",
        "%",
        [0],
    )
    assert result.iterations["samples"].to_list() == [1, 1, 0]


def test_a_metric_sampled_outside_every_window_has_no_summary() -> None:
    result = analyze_gpu_metrics(trace_with([(5000, 0, "SMs Active", "%", 20.0)]), WINDOWS)
    assert result.summary["sms_active"] is None and result.value("sms_active") is None
    assert result.iterations["sms_active"].to_list() == [None, None, None]
    assert result.iterations["samples"].to_list() == [0, 0, 0]


def test_only_another_gpus_samples_count_zero_samples() -> None:
    result = analyze_gpu_metrics(trace_with([(1250, 3, "SMs Active", "%", 20.0)]), WINDOWS)
    assert result.iterations["samples"].to_list() == [0, 0, 0]
    assert result.iterations.schema == SCHEMA


def test_a_sample_without_a_value_counts_as_a_sample_but_not_in_the_mean() -> None:
    # the documented count: samples whose timestamp lies in the window (a null value is still a sample)
    samples = [(1250, 0, "SMs Active", "%", 20.0), (1300, 0, "SMs Active", "%", None)]
    result = analyze_gpu_metrics(trace_with(samples), WINDOWS)
    assert result.iterations["sms_active"].to_list()[0] == 20.0
    assert result.iterations["samples"].to_list() == [2, 0, 0]


def test_overlapping_windows_each_count_the_samples_they_hold() -> None:
    """--split-idle windows may overlap when the host runs ahead: a sample in the overlap belongs to both, and a
    sample after a later window's end but inside an earlier, longer window belongs to the earlier one."""
    windows = pl.DataFrame(
        {"index": [0, 1], "window_start_ns": [1000, 1500], "window_end_ns": [3000, 2000]},
        schema={"index": pl.Int64, "window_start_ns": pl.Int64, "window_end_ns": pl.Int64},
    )
    samples = [
        (1200, 0, "SMs Active", "%", 10.0),
        (1800, 0, "SMs Active", "%", 30.0),
        (2500, 0, "SMs Active", "%", 50.0),
    ]
    result = analyze_gpu_metrics(trace_with(samples), windows)
    assert result.iterations["samples"].to_list() == [3, 1]
    assert result.iterations["sms_active"].to_list() == [30.0, 30.0]
