"""Nsight Compute reading, fuzz 9: what a real ``ncu --csv`` output can hold on which tracekit showed a wrong
per-kernel figure with confidence, or none where the data allows one.

- several CSV tables in one file (``ncu --csv ... >> all.csv`` run after run, or one table per process):
  each table has its own header and its own units row; the rows of the second were read under the first's
  columns and units (values of another metric, durations in another unit);
- the details page of older ncu (section "GPU Speed Of Light", not "... Throughput"): no duration and no
  SM-active value was read;
- range replay (``--replay-mode range``/``app-range``): one result per range, its counters spanning the
  range's gaps too, had been shown as the kernel-time SMs active / warp occupancy;
- a kernel with a value and no duration (n/a) had been left out of the kernel-time average, which was shown;
  a dot-grouped integer ("3.000" ns) in a decimal-comma (de_DE) file had been read as 3;
- ``--print-metric-name label-name`` ("Duration (gpu__time_duration.sum)"): nothing had been read;
- ncu's ``==ERROR==`` lines (a kernel it failed to profile is missing) had been dropped without a word;
- the legacy metric names of ncu 2019.x on Pascal (``gpu__time_duration``, ``sm__active_cycles_avg``, ...):
  nothing had been read;
- the kernels of several processes joined to one timeline (their values averaged) without a word.

Every CSV here is hand-made (labelled synthetic: values invented, not measured), so the truth is known.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tracekit.analyzers.utilization import kernel_time_only
from tracekit.errors import TraceFormatError
from tracekit.readers import read_trace

IDS = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC"'
)
DURATION = "gpu__time_duration.sum"
WARPS = "sm__warps_active.avg.pct_of_peak_sustained_active"
SM_PCT = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
BLANKS = '"","","","","","","","","","",""'


def write(tmp_path: Path, lines: list[str], name: str = "synthetic.ncu.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def ident(kid: int, pid: int = 4242, name: str = "k(int*)", launch: bool = True) -> str:
    block, grid = ("(128, 1, 1)", "(8, 1, 1)") if launch else ("", "")
    return f'"{kid}","{pid}","app","127.0.0.1","{name}","1","7","{block}","{grid}","0","9.0"'


def header(*metrics: str) -> str:
    return IDS + "".join(f',"{m}"' for m in metrics)


def units(*units_: str) -> str:
    return BLANKS + "".join(f',"{u}"' for u in units_)


def row(kid: int, *values: str, pid: int = 4242, name: str = "k(int*)", launch: bool = True) -> str:
    return ident(kid, pid, name, launch) + "".join(f',"{v}"' for v in values)


def values(trace, metric: str) -> list[float]:
    frame = trace.kernel_metrics.filter(trace.kernel_metrics["metric"] == metric).sort("kernel")
    return frame["value"].to_list()


def durations(trace) -> list[int | None]:
    return trace.kernel_metrics.unique("kernel").sort("kernel")["duration_ns"].to_list()


# ------------------------------------------------------------------- several tables in one file


def test_a_second_table_is_read_under_its_own_header_and_units(tmp_path):
    """Two runs appended to one file (``>>``), the second with its metrics in another order and its duration
    in msecond: its rows had been read under the first table's columns and units (kernel 2's duration 30 us
    for 6 ms, its warp occupancy 6% for 30%)."""
    lines = [
        "==PROF== Connected to process 1",
        header(DURATION, WARPS),
        units("usecond", "%"),
        row(0, "2.0", "10.0", pid=1),
        row(1, "4.0", "20.0", pid=1),
        "==PROF== Disconnected from process 1",
        "==PROF== Connected to process 2",
        header(WARPS, DURATION),
        units("%", "msecond"),
        row(0, "30.0", "6.0", pid=2),
        row(1, "40.0", "8.0", pid=2),
        "==PROF== Disconnected from process 2",
    ]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [2000, 4000, 6_000_000, 8_000_000]
    assert values(trace, WARPS) == [10.0, 20.0, 30.0, 40.0]
    assert any("2 CSV tables" in w for w in trace.warnings)


def test_tables_of_one_header_each_read_as_one(tmp_path):
    """The same header twice (one process's table after another's, same columns): read as before, with the
    tables said."""
    lines = [
        header(DURATION, WARPS),
        units("usecond", "%"),
        row(0, "2.0", "10.0", pid=1),
        header(DURATION, WARPS),
        units("usecond", "%"),
        row(0, "3.0", "30.0", pid=2),
    ]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [2000, 3000]
    assert values(trace, WARPS) == [10.0, 30.0]


def test_a_details_table_after_a_raw_one_is_refused(tmp_path):
    """The raw page and the details page appended into one file: one line, exit 2, not a mix."""
    lines = [
        header(DURATION, WARPS),
        units("usecond", "%"),
        row(0, "2.0", "10.0"),
        IDS + ',"Section Name","Metric Name","Metric Unit","Metric Value"',
        ident(0) + ',"Occupancy","Achieved Occupancy","%","10.0"',
    ]
    with pytest.raises(TraceFormatError, match="raw page and the details page"):
        read_trace(write(tmp_path, lines))


# ------------------------------------------------------- the details page of ncu 2019.x to 2023.1


DETAILS = IDS + ',"Section Name","Metric Name","Metric Unit","Metric Value"'


def details(kid: int, section: str, label: str, unit: str, value: str) -> str:
    return ident(kid) + f',"{section}","{label}","{unit}","{value}"'


def test_the_details_page_of_an_older_ncu_names_its_section_gpu_speed_of_light(tmp_path):
    """ncu up to 2023.1 called the SpeedOfLight section "GPU Speed Of Light" (2020's nv-nsight-cu-cli prints
    "Duration msecond 3.32", "SM Active Cycles cycle 3430442.94" under it): its labels were not read, so no
    kernel had a duration and no SM-active value, and nothing was shown where the data gives both."""
    sol = "GPU Speed Of Light"
    lines = [
        DETAILS,
        details(0, sol, "Elapsed Cycles", "cycle", "4341767"),
        details(0, sol, "Duration", "msecond", "3.32"),
        details(0, sol, "SM Active Cycles", "cycle", "3430442.94"),
        details(0, "Occupancy", "Achieved Occupancy", "%", "12.50"),
        details(1, sol, "Elapsed Cycles", "cycle", "1000"),
        details(1, sol, "Duration", "usecond", "680"),
        details(1, sol, "SM Active Cycles", "cycle", "250"),
        details(1, "Occupancy", "Achieved Occupancy", "%", "50.0"),
    ]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [3_320_000, 680_000]
    result = kernel_time_only(trace)
    sm = (3_320_000 * 100 * 3430442.94 / 4341767 + 680_000 * 25.0) / 4_000_000
    assert result.kernel_time["sms_active"] == pytest.approx(sm)
    assert result.kernel_time["warp_occupancy"] == pytest.approx(
        (3_320_000 * 12.5 + 680_000 * 50.0) / 4_000_000
    )


# --------------------------------------------------------- range replay: results that are no kernel


def test_range_results_give_no_kernel_time_figure(tmp_path):
    """``--replay-mode range`` / ``app-range`` writes one result per NVTX or profiler range (empty Block Size
    and Grid Size): its counters span the whole range, the gaps between its kernels included. They had been
    read as kernels and their values shown as the kernel-time SMs active (40%) and warp occupancy (10%)."""
    lines = [
        header(DURATION, SM_PCT, WARPS),
        units("usecond", "%", "%"),
        row(0, "812.5", "40.0", "10.0", name="iteration", launch=False),
        row(1, "800.0", "40.0", "10.0", name="iteration", launch=False),
    ]
    trace = read_trace(write(tmp_path, lines))
    result = kernel_time_only(trace)
    assert result.kernel_time == {"sms_active": None, "warp_occupancy": None}
    assert any("2 of 2 results" in w and "not used" in w for w in result.warnings)


def test_kernels_beside_range_results_keep_their_figures(tmp_path):
    lines = [
        header(DURATION, SM_PCT, WARPS),
        units("usecond", "%", "%"),
        row(0, "812.5", "90.0", "90.0", name="iteration", launch=False),
        row(1, "1.0", "40.0", "10.0"),
        row(2, "3.0", "80.0", "30.0"),
    ]
    result = kernel_time_only(read_trace(write(tmp_path, lines)))
    assert result.kernel_time["sms_active"] == pytest.approx((40.0 + 3 * 80.0) / 4)
    assert result.kernel_time["warp_occupancy"] == pytest.approx((10.0 + 3 * 30.0) / 4)
    assert any("1 of 3 results" in w for w in result.warnings)


# ------------------------------------------- a locale's decimal comma, and kernels of unknown duration


def test_a_kernel_with_a_value_but_no_duration_withholds_the_kernel_time_average(tmp_path):
    """Nsight Compute alone weights each kernel's value by its duration: a kernel with a value and no readable
    duration (n/a: a kernel cut short by --kill or a replay timeout) has an unknown weight. The average over
    the other kernels (10%) had been shown as the report's; the truth is anywhere between 10% and 90%."""
    lines = [
        header(DURATION, SM_PCT, WARPS),
        units("usecond", "%", "%"),
        row(0, "n/a", "90.0", "90.0"),
        row(1, "1.0", "10.0", "10.0"),
    ]
    result = kernel_time_only(read_trace(write(tmp_path, lines)))
    assert result.kernel_time == {"sms_active": None, "warp_occupancy": None}
    assert any("1 kernel(s) with a value have no duration" in w for w in result.warnings)


def test_a_nan_kernel_without_a_duration_does_not_withhold_it(tmp_path):
    """A kernel whose values are n/a too (an incomplete replay) weighs nothing: the average stands."""
    lines = [
        header(DURATION, SM_PCT, WARPS),
        units("usecond", "%", "%"),
        row(0, "n/a", "n/a", "n/a"),
        row(1, "1.0", "10.0", "20.0"),
    ]
    result = kernel_time_only(read_trace(write(tmp_path, lines)))
    assert result.kernel_time == {"sms_active": 10.0, "warp_occupancy": 20.0}


def test_dot_grouped_integers_in_a_decimal_comma_file_are_unreadable(tmp_path):
    """A de_DE-style CSV (``--print-units base``: durations in ns, integers): "3.000" is 3000 ns written with
    a dot grouping, and was read as 3 ns (kernel-time SMs active 79.9% for 48.7%). In a file whose other
    numbers have a decimal comma ("26,333333"), a dot-grouped integer is doubtful like an ambiguous comma:
    unreadable, said in a warning."""
    lines = [
        header(DURATION, SM_PCT, WARPS, "sm__cycles_active.avg"),
        units("nsecond", "%", "%", "cycle"),
        row(0, "3.000", "40", "10", "26,333333"),
        row(1, "832", "80", "30", "5,5"),
    ]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [None, 832]
    assert any("dot" in w and "'3.000'" in w for w in trace.warnings)
    assert kernel_time_only(trace).kernel_time == {"sms_active": None, "warp_occupancy": None}


def test_dot_grouped_values_in_a_file_without_decimal_commas_read_as_decimals(tmp_path):
    lines = [header(DURATION, WARPS), units("usecond", "%"), row(0, "3.168", "10"), row(1, "1,234.5", "20")]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [3168, 1_234_500]
    assert not any("dot" in w for w in trace.warnings)


def test_a_file_whose_every_duration_is_doubtful_by_dot_grouping_is_refused(tmp_path):
    lines = [
        header(DURATION, WARPS),
        units("nsecond", "%"),
        row(0, "3.000", "10,5"),
        row(1, "1.500", "20,25"),
    ]
    with pytest.raises(TraceFormatError, match="no kernel duration can be read"):
        read_trace(write(tmp_path, lines))


# ------------------------------------------------------------- --print-metric-name label-name


def test_label_name_metric_names_are_read_by_their_metric_name(tmp_path):
    """``--print-metric-name label-name`` writes "Label (metric_name)" ("Duration (gpu__time_duration.sum)"):
    no duration and no SM-active or occupancy value had been read."""
    sol = "GPU Speed Of Light Throughput"
    lines = [
        DETAILS,
        details(0, sol, f"Duration ({DURATION})", "nsecond", "2000"),
        details(0, sol, "SM Active Cycles (sm__cycles_active.avg)", "cycle", "300"),
        details(0, sol, "Elapsed Cycles (gpc__cycles_elapsed.max)", "cycle", "1000"),
        details(0, "Occupancy", f"Achieved Occupancy ({WARPS})", "%", "12.5"),
    ]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [2000]
    assert kernel_time_only(trace).kernel_time == {"sms_active": 30.0, "warp_occupancy": 12.5}
    raw = [
        IDS + f',"Duration ({DURATION})","Achieved Occupancy ({WARPS})"',
        units("nsecond", "%"),
        row(0, "2000", "12.5"),
    ]
    trace = read_trace(write(tmp_path, raw, "raw.ncu.csv"))
    assert durations(trace) == [2000]
    assert values(trace, WARPS) == [12.5]


def test_ncus_error_lines_are_said(tmp_path):
    """A kernel ncu failed to profile (a replay timeout, a driver error) is missing from the table; ncu says so
    only in its log, which had been dropped without a word."""
    lines = [
        "==PROF== Connected to process 4242",
        '==ERROR== Failed to profile "k" in process 4242',
        header(DURATION, WARPS),
        units("usecond", "%"),
        row(0, "2.0", "10.0"),
        row(2, "2.0", "10.0"),
    ]
    trace = read_trace(write(tmp_path, lines))
    assert any("1 error(s)" in w and "Failed to profile" in w for w in trace.warnings)
    clean = read_trace(write(tmp_path, lines[:1] + lines[2:], "clean.ncu.csv"))
    assert not any("error" in w for w in clean.warnings)


def test_a_report_of_launch_statistics_only_says_it_has_no_figure(tmp_path):
    """``--section LaunchStats`` (launch__* metrics only): no SM-activity or occupancy metric; one line says so
    (the join had said that every kernel name differed and the profile covered no iteration)."""
    from tests.test_table import timeline
    from tracekit.analyzers.iterations import analyze_iterations
    from tracekit.analyzers.kernel_metrics import analyze_kernel_metrics

    lines = [
        header("launch__block_size", "launch__grid_size", "launch__waves_per_multiprocessor"),
        units("", "", ""),
        row(0, "128", "8", "0.01"),
        row(1, "256", "80", "0.5"),
    ]
    trace = read_trace(write(tmp_path, lines))
    tl = timeline()
    result = analyze_kernel_metrics(trace, tl, analyze_iterations(tl))
    assert result.summary == {"sms_active": None, "warp_occupancy": None}
    assert len(result.warnings) == 1 and "no SM-activity or warp-occupancy metric" in result.warnings[0]


# ------------------------------------------------------- legacy metric names (Pascal, ncu 2019.x)


def test_the_legacy_metric_names_of_a_pascal_report_are_read(tmp_path):
    """ncu 2019.x on Pascal (compute capability 6.x) writes the legacy names: ``gpu__time_duration``,
    ``sm__active_cycles_avg`` / ``sm__elapsed_cycles_avg``, ``sm__active_warps_avg_per_active_cycle_pct``
    (achieved occupancy; ncu's own rules read it for cc 6.x). No duration and no figure had been read."""
    lines = [
        header(
            "gpu__time_duration",
            "sm__active_cycles_avg",
            "sm__elapsed_cycles_avg",
            "sm__active_warps_avg_per_active_cycle_pct",
        ),
        units("usecond", "cycle", "cycle", "%"),
        row(0, "1.0", "300", "1000", "20.0"),
        row(1, "3.0", "2.5", "5", "40.0", name="k2(float*)"),
    ]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [1000, 3000]
    result = kernel_time_only(trace)
    assert result.kernel_time["sms_active"] == pytest.approx((30.0 + 3 * 50.0) / 4)
    assert result.kernel_time["warp_occupancy"] == pytest.approx((20.0 + 3 * 40.0) / 4)


# ---------------------------------------------------------------------- several processes, one timeline


def test_kernels_of_two_processes_joined_to_one_timeline_are_said_to_be_averaged(tmp_path):
    """Two processes' kernels (two ranks, or two runs appended) joined by position to one timeline: the values
    of both are averaged into its kernels (20% and 30% here, from 10/30 and 20/40). The figures stand, but had
    been shown without a word that they mix processes."""
    from tests.test_table import timeline
    from tracekit.analyzers.iterations import analyze_iterations
    from tracekit.analyzers.kernel_metrics import analyze_kernel_metrics

    lines = [
        header(DURATION, SM_PCT, WARPS),
        units("nsecond", "%", "%"),
        row(0, "150", "10", "5", pid=100, name="void ns::A<int>(int*)"),
        row(1, "90", "20", "5", pid=100, name="B(float*)"),
        row(0, "150", "30", "5", pid=200, name="void ns::A<int>(int*)"),
        row(1, "90", "40", "5", pid=200, name="B(float*)"),
    ]
    trace = read_trace(write(tmp_path, lines))
    assert trace.meta["processes"] == 2
    tl = timeline()
    result = analyze_kernel_metrics(trace, tl, analyze_iterations(tl))
    assert result.kernels.sort("iteration", "position")["sms_active"].to_list() == [20.0, 30.0, 20.0, 30.0]
    assert any("kernels of 2 processes" in w for w in result.warnings)
    one = read_trace(write(tmp_path, lines[:4], "one.ncu.csv"))
    assert "processes" not in one.meta
    assert not any("processes" in w for w in analyze_kernel_metrics(one, tl, analyze_iterations(tl)).warnings)


@pytest.mark.parametrize("unit", ["\u00b5s", "\u03bcs"])
def test_microseconds_with_either_mu_are_read(tmp_path, unit):
    lines = [header(DURATION, WARPS), units(unit, "%"), row(0, "3.5", "10")]
    assert durations(read_trace(write(tmp_path, lines))) == [3500]
