"""Nsight Compute reader: hand-written CSVs in ncu's real layouts, and the real .ncu-rep files."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import real_trace
from tracekit.errors import TraceFormatError
from tracekit.readers import detect_format, read_trace
from tracekit.readers.ncu import TIMELINE_WARNING, innermost_range

NVTX = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"

# The ``--csv --page raw`` layout: program/==PROF== lines, a header (identity columns, NVTX column with
# --nvtx, one column per metric), a units row, one row per kernel. Values are hand-made (not measured).
RAW_CSV = f"""==PROF== Connected to process 4242 (/usr/bin/python3.11)
model loaded
==PROF== Profiling "gemm_kernel" - 0: 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","{NVTX}","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","device__attribute_display_name","gpu__time_duration.sum","sm__cycles_active.avg","sm__cycles_elapsed.avg","sm__warps_active.avg.pct_of_peak_sustained_active"
"","","","","","","","","","","","","","usecond","cycle","cycle","%"
"0","4242","python3.11","127.0.0.1","1  ""<default domain>:iteration:none:none:none:none:none:none""  ""<default domain>:layer:0:none:none:none:none:none:none"" ","void ns::gemm_kernel<float, 128>(float const*, float*)","1","7","(128, 1, 1)","(64, 1, 1)","0","8.0","NVIDIA A100-SXM4-40GB","2.50","1,500","2,000","25.5"
"1","4242","python3.11","127.0.0.1","1  ""<default domain>:iteration:none:none:none:none:none:none"" ","softmax_kernel(float*)","1","7","(256, 1, 1)","(8, 1, 1)","0","8.0","NVIDIA A100-SXM4-40GB","1.25","300","1,000","n/a"
"2","4242","python3.11","127.0.0.1","","copy_kernel","1","13","(32, 1, 1)","(1, 1, 1)","0","8.0","NVIDIA A100-SXM4-40GB","nan","10","",""
"""

# The default details page (long layout), as printed by ``ncu --csv`` with ``--metrics``.
DETAILS_CSV = """"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","app","host","k1(int*)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,000"
"0","1","app","host","k1(int*)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","40.00"
"1","1","app","host","k2(int*)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","0.003"
"1","1","app","host","k2(int*)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","n/a"
"""


def write(tmp_path: Path, text: str, name: str = "run.ncu.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def metric(trace, kernel: int, name: str) -> float:
    frame = trace.kernel_metrics.filter((pl.col("kernel") == kernel) & (pl.col("metric") == name))
    assert frame.height == 1, (kernel, name, frame)
    return frame["value"][0]


def test_raw_page_kernels_metrics_units_and_ranges(tmp_path):
    path = write(tmp_path, RAW_CSV)
    assert detect_format(path) == "ncu-csv"
    trace = read_trace(path)
    assert trace.meta["format"] == "ncu-csv"
    assert trace.meta["gpu"] == "NVIDIA A100-SXM4-40GB"
    assert trace.meta["timeline"] is False
    kernels = trace.kernel_metrics.unique("kernel").sort("kernel")
    assert kernels["kernel"].to_list() == [0, 1, 2]
    assert kernels["name"].to_list() == [
        "void ns::gemm_kernel<float, 128>(float const*, float*)",
        "softmax_kernel(float*)",
        "copy_kernel",
    ]
    # innermost range; a range name containing ':' survives; no NVTX -> null
    assert kernels["range"].to_list() == ["layer:0", "iteration", None]
    # usecond -> ns; "nan" duration -> null
    assert kernels["duration_ns"].to_list() == [2500, 1250, None]
    assert metric(trace, 0, "sm__cycles_active.avg") == 1500.0  # thousands separator
    assert metric(trace, 0, "sm__cycles_elapsed.avg") == 2000.0
    assert metric(trace, 0, "gpu__time_duration.sum") == 2.5
    assert math.isnan(metric(trace, 1, "sm__warps_active.avg.pct_of_peak_sustained_active"))  # "n/a" -> NaN
    # empty cells are "not collected": no row
    assert trace.kernel_metrics.filter(
        (pl.col("kernel") == 2) & (pl.col("metric") == "sm__cycles_elapsed.avg")
    ).is_empty()
    units = dict(trace.kernel_metrics.select("metric", "unit").unique().iter_rows())
    assert units["gpu__time_duration.sum"] == "usecond"
    assert units["sm__cycles_active.avg"] == "cycle"
    # string-valued metric columns are not rows
    assert "device__attribute_display_name" not in trace.kernel_metrics["metric"].to_list()


def test_raw_page_ops_are_back_to_back_and_flagged(tmp_path):
    trace = read_trace(write(tmp_path, RAW_CSV))
    assert trace.ops.select("start", "end", "kind", "stream").rows() == [
        (0, 2500, "kernel", 7),
        (2500, 3750, "kernel", 7),
    ]
    assert trace.ops["device"].to_list() == [0, 0]
    assert TIMELINE_WARNING in trace.warnings


def test_details_page(tmp_path):
    trace = read_trace(write(tmp_path, DETAILS_CSV))
    kernels = trace.kernel_metrics.unique("kernel").sort("kernel")
    assert kernels["duration_ns"].to_list() == [1000, 3000]
    assert kernels["range"].to_list() == [None, None]
    assert metric(trace, 0, "sm__warps_active.avg.pct_of_peak_sustained_active") == 40.0
    assert math.isnan(metric(trace, 1, "sm__warps_active.avg.pct_of_peak_sustained_active"))


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("", None),
        (None, None),
        (
            '1  "<default domain>:outer:none:none:none:none:none:none"  "<default domain>:inner:none:none:none:none:none:none" ',
            "inner",
        ),
        ('7  "tracekit:a:b:c:none:none:none:none:none:none" ', "a:b:c"),
        ('1  "<default domain>:only" ', "only"),
    ],
)
def test_innermost_range(cell, expected):
    assert innermost_range(cell) == expected


def test_not_ncu_csv(tmp_path):
    with pytest.raises(TraceFormatError, match="no ncu CSV header"):
        read_trace(write(tmp_path, "==PROF== Connected to process 1\n==ERROR== no kernels were profiled\n"))


def test_header_only(tmp_path):
    header = RAW_CSV.splitlines()[3] + "\n" + RAW_CSV.splitlines()[4] + "\n"
    with pytest.raises(TraceFormatError, match="no kernel rows"):
        read_trace(write(tmp_path, header))


# ----------------------------------------------------------------------------------------- real reports


def test_real_cutlass_report():
    pytest.importorskip("ncu_report")
    trace = read_trace(real_trace("ncu", "cutlass_a100_3kernels.ncu-rep"))
    assert trace.meta["format"] == "ncu-rep"
    assert trace.meta["format_version"] == "2024.1.1.0"
    assert trace.meta["gpu"] == "NVIDIA A100 80GB PCIe"
    kernels = trace.kernel_metrics.unique("kernel").sort("kernel")
    assert kernels["range"].to_list() == ["Non-fused-GEMM", "Non-fused-GEMM", "Fused-GEMM"]
    assert kernels["duration_ns"].to_list() == [11168, 10880, 25984]
    occupancy = [metric(trace, k, "sm__warps_active.avg.pct_of_peak_sustained_active") for k in range(3)]
    assert [round(v, 2) for v in occupancy] == [6.00, 5.84, 6.04]
    assert round(metric(trace, 0, "sm__cycles_active.avg"), 1) == 7609.0
    assert round(metric(trace, 2, "sm__cycles_elapsed.avg"), 1) == 27307.4
    assert trace.ops["end"].to_list() == [11168, 22048, 48032]


def test_real_sglang_report_keeps_nan():
    pytest.importorskip("ncu_report")
    trace = read_trace(real_trace("ncu", "sglang_h800_5kernels.ncu-rep"))
    assert trace.meta["format_version"] == "2023.3.0.0"
    assert trace.meta["gpu"] == "NVIDIA H800"
    kernels = trace.kernel_metrics.unique("kernel").sort("kernel")
    assert kernels.height == 5
    assert kernels["range"].null_count() == 5  # --nvtx on, no range open
    assert kernels["duration_ns"].to_list()[-1] is None
    assert math.isnan(metric(trace, 4, "sm__warps_active.avg.pct_of_peak_sustained_active"))
    assert trace.kernel_metrics.filter(pl.col("metric") == "sm__cycles_elapsed.avg").is_empty()
    assert trace.ops.height == 4  # the NaN-duration kernel cannot be laid out
