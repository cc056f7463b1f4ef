"""Readers given values a profiler (or a damaged file) can get wrong, found by the fuzz campaign (findings W6
and W7): a duration that does not read, a GPU event the reader cannot take, a percentage no share of a peak
can be, a number written with a decimal comma. The reader says so in ``meta["warnings"]`` (or refuses the
file) instead of using the value silently.

The small traces are hand-built (synthetic, not measurements); the altered copies of committed samples are
made in the test's temporary folder, and nothing altered is committed."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.builders import kineto_event, kineto_file
from tests.conftest import SAMPLE_TRACES
from tracekit.api import analyze
from tracekit.cli import main
from tracekit.errors import TraceFormatError
from tracekit.readers import kineto, ncu, ort

PT_SAMPLE = SAMPLE_TRACES / "h200_bert_fp16" / "pytorch" / "pytorch_b1_s128.torch.json.gz"
NCU_SAMPLE = SAMPLE_TRACES / "h200_bert_fp16" / "pytorch-ncu" / "pytorch_b1_s128.ncu.csv.gz"
WARPS = "sm__warps_active.avg.pct_of_peak_sustained_active"
DURATION = "gpu__time_duration.sum"

# ------------------------------------------------------------------------------------------ Kineto (W6)


def _kineto_no_dur_warning(n: int, total: int) -> str:
    return (
        f"{n} of {total} GPU ops (kernel, memcpy, memset events) have no readable dur (null, negative, missing, "
        "NaN, Infinity or not a number): they have no end time, so they count as kernels but not in GPU busy time, "
        "which is short by however long they ran"
    )


def _launched(cat: str, name: str, ts: int, dur: Any, corr: int) -> list[dict[str, Any]]:
    """A 1 µs cudaLaunchKernel at ``ts - 2`` and the GPU event it launched (pid 0, stream 7)."""
    return [
        kineto_event("cuda_runtime", "cudaLaunchKernel", ts - 2, 1, pid=1, tid=1, correlation=corr),
        kineto_event(cat, name, ts, dur, pid=0, tid=7, correlation=corr, device=0, stream=7),
    ]


def test_kineto_gpu_ops_without_a_readable_dur_have_no_end_time_and_are_counted(tmp_path: Path) -> None:
    # One kernel with a good duration, then kernels whose dur is null, missing, NaN, Infinity, text and a
    # number past int64 ns, and a memset with a null dur. They used to become zero-length ops (end = start)
    # with no warning: GPU busy ~0 and "framework-bound" on a trace whose kernels all lost their durations.
    events = [kineto_event("user_annotation", "iteration", 0, 1000, pid=1, tid=1)]
    events += _launched("kernel", "good", 10, 5, 1)
    events += _launched("kernel", "null", 20, None, 2)
    missing = _launched("kernel", "missing", 30, 0, 3)
    del missing[1]["dur"]
    events += missing
    events += _launched("kernel", "nan", 40, float("nan"), 4)
    events += _launched("kernel", "inf", 50, float("inf"), 5)
    events += _launched("kernel", "text", 60, "abc", 6)
    events += _launched("kernel", "huge", 70, 10**17, 7)
    events += _launched("gpu_memset", "Memset (Device)", 80, None, 8)
    path = kineto_file(tmp_path, events, "synthetic_no_dur.json")  # json.dumps writes NaN and Infinity
    trace = kineto.read(path)
    assert trace.ops.select("name", "start", "end").rows() == [
        ("good", 10_000, 15_000),
        ("null", 20_000, None),
        ("missing", 30_000, None),
        ("nan", 40_000, None),
        ("inf", 50_000, None),
        ("text", 60_000, None),
        ("huge", 70_000, None),
        ("Memset (Device)", 80_000, None),
    ]
    assert trace.warnings == [_kineto_no_dur_warning(7, 8)]
    # host events keep reading an unreadable dur as 0 (only GPU ops carry a null end)
    assert trace.api.get_column("end").null_count() == 0


def test_kineto_sample_whose_kernels_lost_their_durations_says_so(tmp_path: Path) -> None:
    # The fuzz reproducer: every kernel event of the committed H200 sample with "dur": null.
    doc = json.loads(gzip.decompress(PT_SAMPLE.read_bytes()))
    kernels = 0
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel":
            event["dur"] = None
            kernels += 1
    path = tmp_path / "pytorch_b1_s128_dur_null.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    result = analyze(path)
    ops = result.trace_data.ops
    assert kernels == 4040 and ops.height == 4280  # 240 memsets keep their durations
    assert ops.filter(pl.col("kind") == "kernel").get_column("end").null_count() == kernels
    assert result.trace_data.warnings[0] == _kineto_no_dur_warning(4040, 4280)
    assert _kineto_no_dur_warning(4040, 4280) in result.warnings


def test_kineto_gpu_events_the_reader_cannot_take_are_named(tmp_path: Path) -> None:
    # Kernels whose category has a trailing space ("Kernel ") and kernels written as instant events
    # ("ph": "i") were dropped without a word; the trace then read as having no GPU work at all.
    spaced = _launched("Kernel ", "k", 10, 5, 1)
    instant = _launched("kernel", "k", 10, 5, 1)
    instant[1]["ph"] = "i"
    memset = _launched("gpu_memset", "Memset (Device)", 20, 2, 2)
    for name, events, expected in (
        (
            "spaced",
            spaced + memset,
            [
                "events of category 'Kernel ' were not read (the category tracekit reads is 'kernel', without "
                "spaces): what they record is left out of every figure"
            ],
        ),
        (
            "instant",
            instant + memset,
            [
                "the trace has events of category 'kernel' but none is a complete event ('ph': 'X') with a "
                "readable ts: no kernel was read, and the GPU work they record is left out of every figure"
            ],
        ),
    ):
        trace = kineto.read(kineto_file(tmp_path, events, f"synthetic_{name}.json"))
        assert trace.ops.get_column("kind").to_list() == ["memset"], name
        assert trace.warnings == expected, name


# --------------------------------------------------------------------------------------------- ORT (W6)


def _ort_event(cat: str, name: str, ts: Any, dur: Any, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": 10, "tid": 11, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _ort_file(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(events))
    return path


def test_ort_nodes_without_a_readable_dur_have_no_end_time_and_are_counted(tmp_path: Path) -> None:
    # Node events with "dur": null used to be zero-length operators: busy 0, "framework-bound", no warning.
    events = [
        _ort_event("Session", "model_run", 1000, 100),
        _ort_event("Node", "/0/MatMul_kernel_time", 1010, 20, op_name="MatMul"),
        _ort_event("Node", "/1/Relu_kernel_time", 1040, None, op_name="Relu"),
        _ort_event("Node", "/2/Add_kernel_time", 1060, float("nan"), op_name="Add"),
        _ort_event("Node", "/3/Gelu_kernel_time", None, 5, op_name="Gelu"),  # no ts: skipped
    ]
    trace = ort.read(_ort_file(tmp_path, "synthetic_ort_cpu.json", events))
    assert trace.ops.select("name", "start", "end").rows() == [
        ("MatMul:/0/MatMul", 1_010_000, 1_030_000),
        ("Relu:/1/Relu", 1_040_000, None),
        ("Add:/2/Add", 1_060_000, None),
    ]
    assert trace.warnings == [
        "1 complete events without a readable ts were skipped",
        "2 of 3 operators (Node events) have no readable dur (null, missing, NaN, Infinity or not a number): "
        "they have no end time, so they count as ops but not in busy time, which is short by however long "
        "they ran",
    ]


def test_ort_gpu_kernels_without_a_readable_dur_have_no_end_time_and_are_counted(tmp_path: Path) -> None:
    events = [
        _ort_event("Session", "model_run", 1000, 100),
        _ort_event("Node", "/0/MatMul_kernel_time", 1010, None, op_name="MatMul"),
        _ort_event("Kernel", "gemm", 1012, 10, stream="7", parent_name="/0/MatMul_kernel_time"),
        _ort_event("Kernel", "gemm2", 1025, None, stream="7", parent_name="/0/MatMul_kernel_time"),
    ]
    trace = ort.read(_ort_file(tmp_path, "synthetic_ort_gpu.json", events))
    assert trace.ops.select("name", "start", "end").rows() == [
        ("gemm", 1_012_000, 1_022_000),
        ("gemm2", 1_025_000, None),
    ]
    # the node, a range here, reads its unreadable dur as 0 as before
    assert trace.ranges.filter(pl.col("domain") == "node").select("start", "end").rows() == [
        (1_010_000, 1_010_000)
    ]
    assert (
        "1 of 2 GPU ops (Kernel events) have no readable dur (null, missing, NaN, Infinity or not a number): "
        "they have no end time, so they count as ops but not in GPU busy time, which is short by however long "
        "they ran"
    ) in trace.warnings


# --------------------------------------------------------------------------------------------- ncu (W7)

NCU_HEADER = (
    '"ID","Kernel Name","Device","gpu__time_duration.sum","sm__warps_active.avg.pct_of_peak_sustained_active",'
    '"sm__warps_active.max.pct_of_peak_sustained_active","lts__t_sector_op_write_hit_rate.pct",'
    '"sm__cycles_active.avg"\n'
    '"","","","usecond","%","%","%","cycle"\n'
)


def _ncu_csv(tmp_path: Path, rows: list[tuple[str, ...]], name: str = "synthetic.ncu.csv") -> Path:
    """A ``--page raw`` CSV of the columns of :data:`NCU_HEADER`, one row per kernel (ID, name, duration,
    warps avg %, warps max %, hit rate %, active cycles); the device column is 0."""
    lines = [
        ",".join(f'"{v}"' for v in (i, name_, "0", dur, avg, mx, hit, cycles))
        for i, (name_, dur, avg, mx, hit, cycles) in enumerate(rows)
    ]
    path = tmp_path / name
    path.write_text(NCU_HEADER + "\n".join(lines) + "\n")
    return path


def _values(trace: Any, metric: str) -> list[float]:
    frame = trace.kernel_metrics.filter(pl.col("metric") == metric).sort("kernel")
    return frame.get_column("value").to_list()


def _same(got: list[float], expected: list[float]) -> bool:
    return len(got) == len(expected) and all(
        (math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got, expected, strict=True)
    )


def test_ncu_shares_of_a_peak_outside_0_to_100_are_missing_and_named(tmp_path: Path) -> None:
    # A warp occupancy of 639% (or -3%) was used as is: a kernel-time average of several hundred percent.
    # The .max roll-up (the busiest SM over the average SM's peak) and hit rates legitimately pass 100% on
    # real reports: they are kept.
    path = _ncu_csv(
        tmp_path,
        [
            ("k0", "2.0", "639.5", "824.0", "100.4", "1,000"),
            ("k1", "1.0", "25.0", "30.0", "50.0", "500"),
            ("k2", "1.0", "-3.0", "30.0", "50.0", "500"),
            ("k3", "1.0", "100.0", "30.0", "50.0", "500"),
            ("k4", "1.0", "712.25", "30.0", "50.0", "500"),
        ],
    )
    trace = ncu.read(path)
    nan = float("nan")
    assert _same(_values(trace, WARPS), [nan, 25.0, nan, 100.0, nan])
    assert _values(trace, "sm__warps_active.max.pct_of_peak_sustained_active") == [824.0] + [30.0] * 4
    assert _values(trace, "lts__t_sector_op_write_hit_rate.pct") == [100.4] + [50.0] * 4
    assert trace.warnings[0] == (
        f"{WARPS}: 3 kernel(s) have a value outside 0-100% (largest 712.25%, smallest -3%), which no share "
        "of a peak can be: read as missing (NaN) for those kernels"
    )


def _sample_rows() -> list[list[str]]:
    """The committed ncu sample's rows: header, units, then one row per kernel."""
    return list(csv.reader(io.StringIO(gzip.decompress(NCU_SAMPLE.read_bytes()).decode())))


def _write_rows(path: Path, rows: list[list[str]]) -> Path:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows(rows)
    path.write_text(out.getvalue())
    return path


def test_ncu_sample_with_warp_occupancy_over_100_gives_no_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fuzz reproducer: the sample's warp occupancy x 50. `table --wide` printed a kernel-time warp
    # occupancy of 638.99% with no warning.
    rows = _sample_rows()
    column = rows[0].index(WARPS)
    for row in rows[2:]:
        row[column] = str(float(row[column]) * 50)
    path = _write_rows(tmp_path / "pytorch_b1_s128.ncu.csv", rows)
    assert ncu.read(path).warnings[0] == (
        f"{WARPS}: 606 kernel(s) have a value outside 0-100% (largest 1786.99%), which no share of a peak "
        "can be: read as missing (NaN) for those kernels"
    )
    assert main(["table", str(path), "--wide", "--format", "json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"][0]["warp_occupancy_kernel_time"] is None
    assert doc["rows"][0]["sms_active_kernel_time"] == pytest.approx(39.876913171849125)
    assert any(f"606 kernels with NaN {WARPS} skipped" in w for w in doc["warnings"])
    # the reader's own warning reaches the table (it used to show the analysis's only)
    assert any(
        w.endswith(
            f"{WARPS}: 606 kernel(s) have a value outside 0-100% (largest 1786.99%), which no share of a peak can be: read as missing (NaN) for those kernels"
        )
        for w in doc["warnings"]
    )
    assert not any("records no kernel start times" in w for w in doc["warnings"])  # the row says it otherwise


def test_ncu_reader_warnings_of_a_joined_report_are_named_by_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _sample_rows()
    column = rows[0].index(WARPS)
    for row in rows[2:]:
        row[column] = str(float(row[column]) * 50)
    report = _write_rows(tmp_path / "pytorch_b1_s128.ncu.csv", rows)
    timeline = SAMPLE_TRACES / "h200_bert_fp16" / "pytorch" / "pytorch_b1_s128.torch.json.gz"
    assert main(["table", str(timeline), "--ncu", str(report), "--format", "json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any(
        w.endswith(
            f"pytorch_b1_s128.ncu.csv: {WARPS}: 606 kernel(s) have a value outside 0-100% (largest 1786.99%), which no share of a peak can be: read as missing (NaN) for those kernels"
        )
        for w in doc["warnings"]
    ), doc["warnings"]


def test_ncu_commas_that_are_not_thousands_separators_are_unreadable(tmp_path: Path) -> None:
    # "3,168000" (a decimal comma) was read as 3168000: durations a million times too long. Thousands
    # separators ("1,000", "3,168.0", "1,234,567") still read; in a metric with a misread comma, a single
    # group of three ("2,500", "1,000": 2.5 or 2500?) is doubtful too, but "3,168.0" and "1,234,567" are not.
    path = _ncu_csv(
        tmp_path,
        [
            ("k0", "3,168.0", "10.0", "10.0", "10.0", "1,234,567"),
            ("k1", "3,168000", "10.0", "10.0", "10.0", "1,000"),
            ("k2", "2,500", "10.0", "10.0", "10.0", "500"),
            ("k3", "1.5", "10.0", "10.0", "10.0", "3,1"),
            ("k4", "n/a", "10.0", "10.0", "10.0", "500"),
        ],
    )
    trace = ncu.read(path)
    nan = float("nan")
    assert _same(_values(trace, DURATION), [3168.0, nan, nan, 1.5, nan])
    assert _same(_values(trace, "sm__cycles_active.avg"), [1234567.0, nan, 500.0, nan, 500.0])
    assert trace.ops.select("name", "start", "end").rows() == [
        ("k0", 0, 3_168_000),
        ("k3", 3_168_000, 3_169_500),
    ]
    assert trace.warnings[:2] == [
        "4 values of 2 metric(s) hold a comma that is not, or may not be, a thousands separator (e.g. "
        "gpu__time_duration.sum '3,168000': a decimal comma?): read as unreadable (NaN), as 'n/a' is",
        f"3 of 5 kernels have no readable {DURATION} (n/a, nan, empty or not a number): they are left out "
        "of the ops, so GPU busy time is short by however long they ran",
    ]


def test_ncu_details_page_comma_values_are_unreadable(tmp_path: Path) -> None:
    head = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
    rows = [
        ("0", "k0", DURATION, "nsecond", "1,000"),
        ("0", "k0", WARPS, "%", "40,5"),
        ("1", "k1", DURATION, "nsecond", "2,000"),
        ("1", "k1", WARPS, "%", "40.5"),
    ]
    path = tmp_path / "details.ncu.csv"
    path.write_text(head + "\n".join(",".join(f'"{v}"' for v in row) for row in rows) + "\n")
    trace = ncu.read(path)
    assert _values(trace, DURATION) == [1000.0, 2000.0]
    assert _same(_values(trace, WARPS), [float("nan"), 40.5])
    assert trace.warnings[0] == (
        f"1 values of 1 metric(s) hold a comma that is not, or may not be, a thousands separator (e.g. {WARPS} "
        "'40,5': a decimal comma?): read as unreadable (NaN), as 'n/a' is"
    )


def test_ncu_file_whose_every_duration_has_a_decimal_comma_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fuzz reproducer: every duration of the sample "3.168000" -> "3,168000". GPU busy read 2628352 ms
    # instead of 2.628352 ms.
    rows = _sample_rows()
    column = rows[0].index(DURATION)
    for row in rows[2:]:
        row[column] = row[column].replace(".", ",")
    path = _write_rows(tmp_path / "pytorch_b1_s128.ncu.csv", rows)
    message = (
        f"every {DURATION} value holds a comma that is not, or may not be, a thousands separator ('3,168000': "
        "a decimal comma?): no kernel duration can be read; export the CSV with '.' as the decimal point "
        "(LC_ALL=C)"
    )
    with pytest.raises(TraceFormatError) as caught:
        ncu.read(path)
    assert str(caught.value) == f"{path}: {message}"
    for command in (
        ["analyze", str(path), "--format", "json"],
        ["table", str(path), "--wide", "--format", "json"],
    ):
        assert main([*command, "--no-progress"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == f"tracekit: {path}: {message}\n"


def test_ncu_durations_in_an_unknown_unit_are_named_in_the_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The units row says "cycle" for the duration: no kernel has a duration, and the line used to say only
    # "nothing to analyze".
    rows = _sample_rows()
    rows[1][rows[0].index("gpu__time_duration.sum")] = "cycle"
    path = _write_rows(tmp_path / "cycles.ncu.csv", rows)
    assert main(["analyze", str(path), "--no-progress"]) == 2
    assert capsys.readouterr().err == (
        f"tracekit: {path}: no ranges and no device activity: nothing to analyze (the reader left out what it "
        "could not use: gpu__time_duration.sum has an unknown time unit 'cycle'; durations unknown)\n"
    )
