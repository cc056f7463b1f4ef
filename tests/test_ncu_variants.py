"""Nsight Compute CSV variants that ncu's printing options produce (the default details page with section
labels, --print-summary, several processes, --metrics without the duration, an empty profile, Windows line
ends, a BOM, ncu's log lines, base units). Every CSV is hand-made here (values invented, not measured)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tracekit.cli import main
from tracekit.errors import TraceFormatError
from tracekit.readers import read_trace

IDS = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC"'
DETAILS_HEADER = f'{IDS},"Section Name","Metric Name","Metric Unit","Metric Value"'
RAW_HEADER = f'{IDS},"gpu__time_duration.sum","sm__warps_active.avg.pct_of_peak_sustained_active"'
RAW_UNITS = '"","","","","","","","","","","","usecond","%"'
#: a templated kernel name: commas inside the quoted field
TEMPLATE = "void at::kernel<float, 4, at::Op<int, long>>(int, T1 *)"


def write(tmp_path: Path, text: str, name: str = "synthetic.ncu.csv", newline: str = "\n") -> Path:
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


def ident(kid: int, pid: int = 4242, name: str = "k(int*)") -> str:
    return f'"{kid}","{pid}","app","127.0.0.1","{name}","1","7","(128, 1, 1)","(8, 1, 1)","0","9.0"'


def raw_row(kid: int, duration: str, occupancy: str, pid: int = 4242, name: str = "k(int*)") -> str:
    return f'{ident(kid, pid, name)},"{duration}","{occupancy}"'


def durations(trace) -> list[int | None]:
    return trace.kernel_metrics.unique("kernel").sort("kernel")["duration_ns"].to_list()


# ------------------------------------------------------------- the default details page: section labels


def details_row(kid: int, section: str, label: str, unit: str, value: str, pid: int = 4242) -> str:
    return f'{ident(kid, pid)},"{section}","{label}","{unit}","{value}"'


SOL = "GPU Speed Of Light Throughput"


def test_details_page_with_section_labels_reads_duration_and_counters(tmp_path):
    """``ncu --csv`` without --metrics prints the details page with each metric's section label ("Duration",
    "Achieved Occupancy"), not its name: the kernel durations and counters must still be read."""
    rows = [
        DETAILS_HEADER,
        details_row(0, SOL, "Duration", "usecond", "3.17"),
        details_row(0, SOL, "Elapsed Cycles", "cycle", "6,229"),
        details_row(0, SOL, "SM Active Cycles", "cycle", "26.33"),
        details_row(0, "Occupancy", "Achieved Occupancy", "%", "6.00"),
        details_row(1, SOL, "Duration", "msecond", "1.25"),
        details_row(1, SOL, "Elapsed Cycles", "cycle", "1,000"),
        details_row(1, SOL, "SM Active Cycles", "cycle", "500"),
        details_row(1, "Occupancy", "Achieved Occupancy", "%", "40.5"),
    ]
    trace = read_trace(write(tmp_path, "\n".join(rows) + "\n"))
    assert durations(trace) == [3170, 1_250_000]
    assert trace.ops["end"].to_list() == [3170, 1_253_170]
    values = {(k, m): v for k, m, v in trace.kernel_metrics.select("kernel", "metric", "value").iter_rows()}
    assert values[(0, "sm__warps_active.avg.pct_of_peak_sustained_active")] == 6.0
    assert values[(1, "gpc__cycles_elapsed.max")] == 1000.0
    assert values[(1, "sm__cycles_active.avg")] == 500.0


def test_label_of_another_section_is_not_taken_for_the_duration(tmp_path):
    """Only the SpeedOfLight section's "Duration" is gpu__time_duration.sum: a label of the same text in
    another section is left as it is."""
    rows = [
        DETAILS_HEADER,
        details_row(0, SOL, "Duration", "nsecond", "2,000"),
        details_row(0, "PM Sampling", "Duration", "nsecond", "999,999"),
    ]
    trace = read_trace(write(tmp_path, "\n".join(rows) + "\n"))
    assert durations(trace) == [2000]


# ------------------------------------------------------------------------------- --print-summary


SUMMARY_HEADER = (
    '"Process ID","Process Name","Host Name","Kernel Name","Block Size","Grid Size","Device","CC",'
    '"Invocations","Section Name","Metric Name","Metric Unit","Minimum","Maximum","Average"'
)
SUMMARY_ROW = (
    '"4242","app","127.0.0.1","k(int*)","(128, 1, 1)","(8, 1, 1)","0","9.0","14",'
    '"GPU Speed Of Light Throughput","Duration","usecond","3.10","3.40","3.20"'
)


@pytest.mark.parametrize("with_id", [False, True])
def test_print_summary_is_refused_by_name(tmp_path, with_id):
    """--print-summary per-kernel gives statistics per kernel *name*: reading its averages as kernels would
    give a wrong GPU busy time and kernel count, so it is refused with a line that names it."""
    header, row = SUMMARY_HEADER, SUMMARY_ROW
    if with_id:
        header, row = '"ID",' + header, '"0",' + row
    text = f"==PROF== Connected to process 4242 (/usr/bin/app)\n{header}\n{row}\n"
    with pytest.raises(TraceFormatError, match="--print-summary"):
        read_trace(write(tmp_path, text))


def test_print_summary_cli_one_line_exit_2(tmp_path, capsys):
    path = write(tmp_path, f"{SUMMARY_HEADER}\n{SUMMARY_ROW}\n")
    assert main(["analyze", str(path), "--format", "json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert "--print-summary" in err and path.name in err


# ---------------------------------------------------------------------------- several processes


def test_processes_that_reuse_ids_are_separate_kernels(tmp_path):
    """Kernels of two processes with the same IDs (0, 1 each) are four kernels, not two: dropping the
    second process's would shorten GPU busy time without a word."""
    rows = [
        RAW_HEADER,
        RAW_UNITS,
        raw_row(0, "1.00", "10", pid=100),
        raw_row(1, "2.00", "20", pid=100),
        raw_row(0, "3.00", "30", pid=200),
        raw_row(1, "4.00", "40", pid=200),
    ]
    trace = read_trace(write(tmp_path, "\n".join(rows) + "\n"))
    assert durations(trace) == [1000, 2000, 3000, 4000]
    assert trace.ops["end"].max() == 10_000
    assert trace.meta["kernels"] == 4


def test_details_page_processes_that_reuse_ids(tmp_path):
    rows = [DETAILS_HEADER]
    for pid, kid, value in ((100, 0, "1.00"), (100, 1, "2.00"), (200, 0, "3.00"), (200, 1, "4.00")):
        rows.append(
            details_row(kid, "Command line profiler metrics", "gpu__time_duration.sum", "usecond", value, pid)
        )
    trace = read_trace(write(tmp_path, "\n".join(rows) + "\n"))
    assert durations(trace) == [1000, 2000, 3000, 4000]


def test_interleaved_ids_of_two_processes_keep_profiling_order(tmp_path):
    """IDs unique across processes (ncu's global profiling order) stay in ID order."""
    rows = [
        RAW_HEADER,
        RAW_UNITS,
        raw_row(0, "1.00", "10", pid=100),
        raw_row(1, "2.00", "20", pid=200),
        raw_row(2, "3.00", "30", pid=100),
    ]
    trace = read_trace(write(tmp_path, "\n".join(rows) + "\n"))
    assert durations(trace) == [1000, 2000, 3000]


def test_repeated_kernel_row_is_warned(tmp_path):
    rows = [
        RAW_HEADER,
        RAW_UNITS,
        raw_row(0, "1.00", "10"),
        raw_row(1, "2.00", "20"),
        raw_row(0, "1.00", "10"),
    ]
    trace = read_trace(write(tmp_path, "\n".join(rows) + "\n"))
    assert durations(trace) == [1000, 2000]
    assert any("repeat the ID" in w for w in trace.warnings)


# ------------------------------------------------------------------ missing duration, empty profile


def test_metrics_without_duration_say_so(tmp_path):
    """--metrics without gpu__time_duration.sum: the counters are read, and a warning says why there are no
    kernel durations (instead of a bare 'nothing to analyze')."""
    text = (
        f'{IDS},"sm__warps_active.avg.pct_of_peak_sustained_active"\n'
        '"","","","","","","","","","","","%"\n'
        f'{ident(0)},"12.5"\n'
    )
    trace = read_trace(write(tmp_path, text))
    assert trace.ops.is_empty()
    assert trace.kernel_metrics.filter(pl.col("metric").str.starts_with("sm__warps"))["value"].to_list() == [
        12.5
    ]
    assert any("gpu__time_duration.sum" in w and "durations are unknown" in w for w in trace.warnings)


def test_no_kernels_profiled_names_ncus_warning(tmp_path):
    text = (
        "==PROF== Connected to process 4242 (/usr/bin/app)\n"
        "==WARNING== No kernels were profiled.\n"
        "==PROF== Disconnected from process 4242\n"
    )
    with pytest.raises(TraceFormatError, match="No kernels were profiled"):
        read_trace(write(tmp_path, text))


# ----------------------------------------------------------------- encodings and number formats (guards)


def test_crlf_bom_log_lines_and_templated_names(tmp_path):
    rows = [
        "==PROF== Connected to process 4242 (C:\\app.exe)",
        "program output, with a comma",
        "==WARNING== Found outstanding GPU clock reset, trying to revert...",
        RAW_HEADER,
        RAW_UNITS,
        raw_row(0, "1,234.5", "10", name=TEMPLATE),
        raw_row(1, "n/a", "20"),
        "==PROF== Disconnected from process 4242",
    ]
    path = write(tmp_path, "\ufeff" + "\n".join(rows) + "\n", newline="\r\n")
    trace = read_trace(path)
    kernels = trace.kernel_metrics.unique("kernel").sort("kernel")
    assert kernels["name"].to_list() == [TEMPLATE, "k(int*)"]
    assert kernels["duration_ns"].to_list() == [1_234_500, None]
    assert any("1 of 2 kernels have no readable" in w for w in trace.warnings)


@pytest.mark.parametrize(
    ("unit", "value"), [("nsecond", "3,168"), ("ns", "3168"), ("us", "3.168"), ("ms", "0.003168")]
)
def test_print_units_base_and_dynamic_agree(tmp_path, unit, value):
    text = f"{RAW_HEADER}\n{RAW_UNITS.replace('usecond', unit)}\n{raw_row(0, value, '10')}\n"
    assert durations(read_trace(write(tmp_path, text))) == [3168]


# ------------------------------------------------------------------------------------- range replay


def test_results_without_launch_dimensions_are_warned_as_ranges(tmp_path):
    """A result row with empty Block Size and Grid Size is no kernel launch (range replay writes one per
    range): read as one kernel, its duration spanning a whole range, with a warning that says so."""
    row = '"0","4242","app","127.0.0.1","iteration","1","","","","0","9.0","812.5","n/a"'
    text = f"{RAW_HEADER}\n{RAW_UNITS}\n{row}\n"
    trace = read_trace(write(tmp_path, text))
    assert any("no launch dimensions" in w and "range" in w for w in trace.warnings)
    kernels = f"{RAW_HEADER}\n{RAW_UNITS}\n{raw_row(0, '1.0', '10')}\n"
    assert not any("launch dimensions" in w for w in read_trace(write(tmp_path, kernels, "k.csv")).warnings)


def test_a_csv_re_saved_without_quotes_is_still_an_ncu_csv(tmp_path):
    """ncu quotes every field; pandas, Excel or Python's csv module re-save it quoting only where needed. That
    file was refused as "not a trace tracekit can read"; it reads as the quoted one does."""
    import csv
    import io

    quoted = "\n".join(
        [RAW_HEADER, RAW_UNITS, raw_row(1, "3.5", "50"), raw_row(2, "1.5", "25", name=TEMPLATE)]
    )
    rows = list(csv.reader(io.StringIO(quoted)))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    assert out.getvalue().startswith("ID,Process ID,")  # no quotes where none are needed
    plain = read_trace(write(tmp_path, out.getvalue(), "unquoted.synthetic.ncu.csv"))
    again = read_trace(write(tmp_path, quoted, "quoted.synthetic.ncu.csv"))
    assert durations(plain) == durations(again) == [3500, 1500]
