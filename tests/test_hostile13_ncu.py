"""Nsight Compute CSV forms of real ncu versions that tracekit had not seen (hostile 13).

- ``--metrics gpu__time_duration.avg`` (or ``.max``/``.min``) without ``.sum``: ncu measures the duration
  once per kernel, so its four roll-ups are equal (all 606 kernels of the real H200 report in
  sample_traces/h200_bert_fp16/pytorch-ncu hold the same value in each); no duration had been read, so no
  op and no kernel-time average.
- ``--print-metric-instances details|values`` (ncu 2023.1+): a metric with instance values is written
  "<aggregate> (<instances>)", e.g. ``"158 (0: 158)"``; no cell of such a column read as a number, so the
  column was dropped as a string metric and the report was said to hold no SM-activity or occupancy metric.

Every CSV here is hand-made (file names say synthetic; values invented, not measured), so the truth is known.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tracekit.analyzers.kernel_metrics import analyze_kernel_metrics
from tracekit.readers import read_trace

IDS = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC"'
)
DETAILS = f'{IDS},"Section Name","Metric Name","Metric Unit","Metric Value"'
BLANKS = '"","","","","","","","","","",""'
WARPS = "sm__warps_active.avg.pct_of_peak_sustained_active"
SM_PCT = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
CLI = "Command line profiler metrics"


def write(tmp_path: Path, lines: list[str], name: str = "synthetic.ncu.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def ident(kid: int, name: str = "k(int*)") -> str:
    return f'"{kid}","4242","app","127.0.0.1","{name}","1","7","(128, 1, 1)","(8, 1, 1)","0","9.0"'


def header(*metrics: str) -> str:
    return IDS + "".join(f',"{m}"' for m in metrics)


def units(*units_: str) -> str:
    return BLANKS + "".join(f',"{u}"' for u in units_)


def row(kid: int, *values: str) -> str:
    return ident(kid) + "".join(f',"{v}"' for v in values)


def detail(kid: int, metric: str, unit: str, value: str, section: str = CLI) -> str:
    return f'{ident(kid)},"{section}","{metric}","{unit}","{value}"'


def durations(trace) -> list[int | None]:
    return trace.kernel_metrics.unique("kernel").sort("kernel")["duration_ns"].to_list()


# ------------------------------------------------------- the duration collected under another roll-up


@pytest.mark.parametrize("rollup", ["avg", "max", "min"])
def test_a_raw_page_with_the_duration_under_another_rollup_reads_it(tmp_path, rollup):
    """``--metrics gpu__time_duration.<rollup>,...``: 10 us and 30 us kernels, warp occupancy 50% and 10%:
    the kernel-time average is (10*50 + 30*10) / 40 = 20%."""
    path = write(
        tmp_path,
        [
            header(f"gpu__time_duration.{rollup}", WARPS),
            units("usecond", "%"),
            row(0, "10", "50"),
            row(1, "30", "10"),
        ],
    )
    trace = read_trace(path)
    assert durations(trace) == [10_000, 30_000]
    assert (trace.ops["end"] - trace.ops["start"]).to_list() == [10_000, 30_000]
    assert not any("no kernel has" in w for w in trace.meta["warnings"])
    summary = analyze_kernel_metrics(trace).summary["warp_occupancy"]
    assert summary["kernel_time"] == pytest.approx(20.0)
    assert summary["kernels"] == 2


def test_the_details_page_with_the_duration_as_avg_reads_it_in_each_rows_unit(tmp_path):
    """Details page (``ncu --csv --metrics gpu__time_duration.avg,...``): each row has its own unit."""
    path = write(
        tmp_path,
        [
            DETAILS,
            detail(0, "gpu__time_duration.avg", "msecond", "1.5"),
            detail(0, WARPS, "%", "40"),
            detail(1, "gpu__time_duration.avg", "usecond", "500"),
            detail(1, WARPS, "%", "80"),
        ],
    )
    trace = read_trace(path)
    assert durations(trace) == [1_500_000, 500_000]
    summary = analyze_kernel_metrics(trace).summary["warp_occupancy"]
    assert summary["kernel_time"] == pytest.approx((1.5 * 40 + 0.5 * 80) / 2.0)


def test_the_sum_is_preferred_where_both_are_present(tmp_path):
    """Both roll-ups collected (they agree on a real report); where they differ, ``.sum`` is the one read."""
    path = write(
        tmp_path,
        [
            header("gpu__time_duration.avg", "gpu__time_duration.sum", WARPS),
            units("usecond", "usecond", "%"),
            row(0, "7", "10", "50"),
        ],
    )
    assert durations(read_trace(path)) == [10_000]


def test_the_real_h200_reports_four_duration_rollups_agree_kernel_by_kernel():
    """The fact the fallback rests on, on the committed real report (ncu 2025.3.1, H200): avg = max = min =
    sum for every kernel."""
    import gzip
    import io

    import polars as pl

    path = (
        Path(__file__).parent.parent / "sample_traces/h200_bert_fp16/pytorch-ncu/pytorch_b1_s128.ncu.csv.gz"
    )
    frame = pl.read_csv(io.StringIO(gzip.open(path).read().decode()), infer_schema=False).slice(1)
    cols = [f"gpu__time_duration.{r}" for r in ("avg", "max", "min", "sum")]
    same = frame.select(pl.all_horizontal([pl.col(c) == pl.col(cols[3]) for c in cols]).all()).item()
    assert frame.height == 606 and same


# ------------------------------------------------- --print-metric-instances: "<aggregate> (<instances>)"


def test_instance_values_after_the_aggregate_read_as_the_aggregate_on_the_raw_page(tmp_path):
    """``ncu --page raw --csv --print-metric-instances details``: 10 and 30 us kernels, SM active 500/1,000 and
    300/1,000 cycles, warp occupancy 50% and 10%. Kernel-time averages: SMs active (10*50 + 30*30) / 40 = 35%,
    warp occupancy (10*50 + 30*10) / 40 = 20%."""
    path = write(
        tmp_path,
        [
            header("gpu__time_duration.sum", WARPS, "sm__cycles_active.avg", "sm__cycles_elapsed.avg"),
            units("usecond", "%", "cycle", "cycle"),
            row(0, "10", "50 (0: 50)", "500 (0: 400; 1: 600)", "1,000 (0: 1,000; 1: 1,000)"),
            row(1, "30", "10 (0: 10)", "300 (0: 300; 1: 300)", "1,000 (0: 1,000; 1: 1,000)"),
        ],
    )
    trace = read_trace(path)
    result = analyze_kernel_metrics(trace)
    assert result.summary["sms_active"]["kernel_time"] == pytest.approx(35.0)
    assert result.summary["warp_occupancy"]["kernel_time"] == pytest.approx(20.0)
    said = [w for w in trace.meta["warnings"] if "instance" in w]
    assert len(said) == 1 and "6 values of 3 metric(s)" in said[0]
    assert not any("holds no SM-activity" in w for w in result.warnings)


def test_instance_values_on_the_details_page_read_as_the_aggregate(tmp_path):
    path = write(
        tmp_path,
        [
            DETAILS,
            detail(0, "gpu__time_duration.sum", "usecond", "10"),
            detail(0, SM_PCT, "%", "62.5 (0: 60; 1: 65)"),
            detail(1, "gpu__time_duration.sum", "usecond", "30"),
            detail(1, SM_PCT, "%", "12.5 (0: 10; 1: 15)"),
        ],
    )
    result = analyze_kernel_metrics(read_trace(path))
    assert result.summary["sms_active"]["kernel_time"] == pytest.approx((10 * 62.5 + 30 * 12.5) / 40)


def test_a_string_in_parentheses_is_not_taken_for_an_instance_list(tmp_path):
    """A string-valued metric that happens to start with a digit stays a string (not a row)."""
    path = write(
        tmp_path,
        [
            header("gpu__time_duration.sum", "launch__func_cache_config"),
            units("usecond", ""),
            row(0, "10", "CachePreferNone (default)"),
        ],
    )
    trace = read_trace(path)
    assert "launch__func_cache_config" not in trace.kernel_metrics["metric"].to_list()
    assert not any("instance" in w for w in trace.meta["warnings"])


# ------------------------------------------- kernels partly inside operator ranges inside the iteration range


def test_kernels_partly_inside_operator_ranges_are_all_in_the_iteration_scope(tmp_path):
    """The real H200 profile (3 iterations of 202 kernels in NVTX range 'iteration') with every other kernel
    also inside an operator range 'aten::linear' (its innermost), the others launched in 'iteration' itself:
    only the kernels whose innermost range is 'iteration' had been taken as in scope (half of them), joined
    by position to the timeline's 202 kernels: their names differed, and no figure was given ("not in the
    timeline's kernel order"). Every kernel is inside 'iteration': the figures of the whole profile, 3.094 %
    SMs active and 0.976 % warp occupancy (as with every kernel nested: tests/test_fuzz7_ncu.py)."""
    from tests.test_fuzz7_ncu import KINETO, _real_rows, _write
    from tracekit.analyzers.iterations import analyze_iterations

    rows = _real_rows()
    head, units_row, body = rows[0], rows[1], rows[2:]
    nvtx = next(i for i, c in enumerate(head) if c.startswith("thread Domain:Push/Pop_Range"))
    for i, r in enumerate(body):
        if i % 2:
            r[nvtx] = r[nvtx].rstrip() + ' "<default domain>:aten::linear:none:none:none:none:none:none" '
    ncu = read_trace(_write([head, units_row, *body], tmp_path / "synthetic_half_nested.ncu.csv"))
    assert ncu.meta["nvtx_stacks"][1] == ["iteration", "aten::linear"]
    assert ncu.meta["nvtx_stacks"][0] == ["iteration"]
    tl = read_trace(KINETO)
    result = analyze_kernel_metrics(ncu, tl, analyze_iterations(tl))
    assert result.warnings == []
    assert result.value("sms_active") == pytest.approx(3.0936, abs=1e-3)
    assert result.value("warp_occupancy") == pytest.approx(0.9756, abs=1e-3)


# ------------------------------------------------------ a real 2020 details page's form (pinned, it reads right)

OLD_HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name",'
    '"Metric Name","Metric Unit","Metric Value"'
)


def old_detail(kid: int, name: str, section: str, label: str, unit: str, value: str) -> str:
    return (
        f'"{kid}","110830","cfd_000","127.0.0.1","{name}","2020-Apr-09 15:38:19","1","7","{section}","{label}",'
        f'"{unit}","{value}"'
    )


def test_the_details_page_of_ncu_2020_reads_right(tmp_path):
    """The form of a real ncu 2020 log (public repository AndrewXu22/optimal_unified_memory,
    rodinia_3.1/cuda/cfd/kernel-level-measurement/nsight_cfd_097K.log, Tesla V100): the program's output and
    ==PROF== lines first, a "Kernel Time" column, no Block/Grid Size columns but "Block Size" / "Grid Size"
    labels in Launch Statistics, section "GPU Speed Of Light", durations in nsecond, no thousands separators.
    Values as that log has them for its first two kernels: SMs active 8114.86 / 11734 = 69.157 % and
    37367.66 / 49400 = 75.643 %; kernel-time averages (10720 * 69.157 + 39200 * 75.643) / 49920 and
    (10720 * 48.18 + 39200 * 38.71) / 49920."""
    sol = "GPU Speed Of Light"
    lines = [
        "Name:                     Tesla V100-SXM2-16GB",
        "Done...",
        "==PROF== Connected to process 110830",
    ]
    lines += ["==PROF== Disconnected from process 110830", OLD_HEADER]
    for kid, name, elapsed, active, duration, occupancy in [
        (0, "cuda_compute_step_factor", "11734", "8114.86", "10720", "48.18"),
        (1, "cuda_compute_flux", "49400", "37367.66", "39200", "38.71"),
    ]:
        lines += [
            old_detail(kid, name, sol, "Memory Frequency", "cycle/second", "738805970.15"),
            old_detail(kid, name, sol, "Elapsed Cycles", "cycle", elapsed),
            old_detail(kid, name, sol, "Duration", "nsecond", duration),
            old_detail(kid, name, sol, "SM Active Cycles", "cycle", active),
            old_detail(kid, name, sol, "SM [%]", "%", "18.70"),
            old_detail(kid, name, "Launch Statistics", "Block Size", "", "192"),
            old_detail(kid, name, "Launch Statistics", "Grid Size", "", "506"),
            old_detail(kid, name, "Occupancy", "Achieved Occupancy", "%", occupancy),
            old_detail(kid, name, "Occupancy", "Theoretical Occupancy", "%", "93.75"),
        ]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [10720, 39200]
    assert trace.meta["kernels"] == 2
    result = analyze_kernel_metrics(trace)
    sm = [100 * 8114.86 / 11734, 100 * 37367.66 / 49400]
    assert result.kernels["sms_active"].to_list() == pytest.approx(sm)
    assert result.summary["sms_active"]["kernel_time"] == pytest.approx(
        (10720 * sm[0] + 39200 * sm[1]) / 49920
    )
    assert result.summary["warp_occupancy"]["kernel_time"] == pytest.approx(
        (10720 * 48.18 + 39200 * 38.71) / 49920
    )
    assert result.warnings == []


# ------------------------------------------- --print-nvtx-rename kernel: kernel names are NVTX range names

NVTX = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def nvtx_row(kid: int, name: str, ranges: list[str], *values: str) -> str:
    cell = "4242 " + " ".join(f'""<default domain>:{r}:none:none:none:none:none:none""' for r in ranges)
    ident_ = (
        f'"{kid}","4242","app","127.0.0.1","{cell} ","{name}","1","7","(128, 1, 1)","(8, 1, 1)","0","9.0"'
    )
    return ident_ + "".join(f',"{v}"' for v in values)


NVTX_HEADER = (
    f'"ID","Process ID","Process Name","Host Name","{NVTX}","Kernel Name","Context","Stream","Block Size",'
    f'"Grid Size","Device","CC","gpu__time_duration.sum","{SM_PCT}","{WARPS}"'
)
NVTX_UNITS = '"","","","","","","","","","","","","nsecond","%","%"'


def renamed_profile(tmp_path: Path, names: list[str], stacks: list[list[str]]) -> Path:
    rows = [NVTX_HEADER, NVTX_UNITS]
    rows += [nvtx_row(i, n, s, "150", "50", "10") for i, (n, s) in enumerate(zip(names, stacks, strict=True))]
    return write(tmp_path, rows, "synthetic_nvtx_renamed.ncu.csv")


def test_kernel_names_that_are_their_nvtx_ranges_are_said_and_not_joined(tmp_path):
    """``ncu --print-nvtx-rename kernel`` writes each kernel's enclosing NVTX range as its name: joined to a
    timeline (2 iterations of A and B), no name could match, and the warning blamed the profile's order
    ("another configuration, or cut elsewhere in the iteration"). The reader says what it is; the join gives
    no value and says why."""
    from tests.test_table import timeline
    from tracekit.analyzers.iterations import analyze_iterations

    stacks = [["iteration"], ["iteration", "aten::mm"], ["iteration"], ["iteration", "aten::mm"]]
    names = ["iteration", "aten::mm", "iteration", "aten::mm"]
    ncu = read_trace(renamed_profile(tmp_path, names, stacks))
    said = [w for w in ncu.meta["warnings"] if "--print-nvtx-rename" in w]
    assert len(said) == 1 and "4 of 4 kernels" in said[0]
    assert ncu.meta["nvtx_renamed"] is True
    tl = timeline()
    result = analyze_kernel_metrics(ncu, tl, analyze_iterations(tl))
    assert result.value("sms_active") is None and result.value("warp_occupancy") is None
    assert result.value("sms_active", wall_time=False) is None
    assert any("--print-nvtx-rename" in w for w in result.warnings)
    assert not any("another configuration" in w for w in result.warnings)


def test_kernel_names_beside_their_ranges_are_not_taken_for_renamed(tmp_path):
    """Function names in NVTX ranges of other names: no such warning, and the join gives its figures."""
    from tests.test_table import timeline
    from tracekit.analyzers.iterations import analyze_iterations

    names = ["void ns::A<int>(int*)", "B(float*)", "void ns::A<int>(int*)", "B(float*)"]
    ncu = read_trace(renamed_profile(tmp_path, names, [["iteration"]] * 4))
    assert "nvtx_renamed" not in ncu.meta
    tl = timeline()
    result = analyze_kernel_metrics(ncu, tl, analyze_iterations(tl))
    # per iteration (1000 ns): (200 * 50 + 100 * 50) / 1000 = 15 %
    assert result.value("sms_active") == pytest.approx(15.0)


# ------------------------------------------------------ UTF-16 (Windows PowerShell 5.1's `ncu --csv ... > x.csv`)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_csv_written_in_utf16_with_a_byte_order_mark_is_read(tmp_path, encoding):
    """Windows PowerShell 5.1 writes a redirected command's output (``>``, Out-File) as UTF-16LE with a byte
    order mark: the header was not found ('no ncu CSV header'), though it is there."""
    lines = [
        "==PROF== Disconnected from process 110830",
        header("gpu__time_duration.sum", WARPS),
        units("usecond", "%"),
        row(0, "10", "50"),
        row(1, "30", "10"),
    ]
    text = "\r\n".join(lines) + "\r\n"
    data = text.encode(encoding) if encoding == "utf-16" else b"\xfe\xff" + text.encode(encoding)
    path = tmp_path / "synthetic_utf16.ncu.csv"
    path.write_bytes(data)
    trace = read_trace(path)
    assert durations(trace) == [10_000, 30_000]
    assert analyze_kernel_metrics(trace).summary["warp_occupancy"]["kernel_time"] == pytest.approx(20.0)


# ------------------------------------------------- --print-summary per-nvtx: "Invocations" and "Average" only


def test_a_per_nvtx_summary_is_refused_as_a_summary(tmp_path):
    """``ncu --print-summary per-nvtx --csv``: one row per (NVTX range, kernel name, metric) with its
    "Invocations" and "Average" (the form a public test fixture of such output has: no ID, no Minimum or
    Maximum column). It had been refused as 'no ncu CSV header (a line starting with "ID")', which says
    nothing of what the file is."""
    from tracekit.errors import TraceFormatError

    rng = '" ""block::A3:none:none:none:none:none:none"" "'
    lines = [
        "==PROF== Connected",
        '"Domain","Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name","Invocations","Metric Name",'
        '"Average"',
        f'"<default domain>",{rng},"nvjet_tst","3","gpu__time_duration.sum","1000"',
    ]
    with pytest.raises(TraceFormatError, match="--print-summary"):
        read_trace(write(tmp_path, lines))


def test_a_per_kernel_summary_of_ncu_2025_is_refused_as_a_summary(tmp_path):
    """The header a public document prints for ``ncu --import X.ncu-rep --csv --print-summary per-kernel``
    (Nsight Compute of 2025, CC 11.0)."""
    from tracekit.errors import TraceFormatError

    lines = [
        '"Process ID","Process Name","Host Name","Kernel Name","Block Size","Grid Size","Device","CC","Invocations",'
        '"Section Name","Metric Name","Metric Unit","Minimum","Maximum","Average"',
        '"109199","bench","127.0.0.1","saxpyKernel(float, const float *, float *, unsigned long)","(256, 1, 1)",'
        '"(4096, 1, 1)","0","11.0","14","Occupancy","Theoretical Occupancy","%","100.00","100.00","100.00"',
    ]
    with pytest.raises(TraceFormatError, match="--print-summary"):
        read_trace(write(tmp_path, lines))


# ------------------------------------------- a row with more fields than its header (quotes removed: sed 's/"//g')


def test_a_row_with_more_fields_than_the_header_is_refused_not_shifted(tmp_path):
    """A CSV whose quotes were removed (``sed 's/"//g'``, to read it more easily): a kernel name with a comma
    splits into two fields, and every later field moved one column right. The extra field had been dropped
    silently, so kernel 1's duration read 9 us (its CC, 9.0) and its warp occupancy 30% (its duration): a
    kernel-time average of 40.5% where the truth is (10*50 + 30*10) / 40 = 20%. Refused, naming the row."""
    from tracekit.errors import TraceFormatError

    lines = [
        "ID,Process ID,Process Name,Host Name,Kernel Name,Context,Stream,Block Size,Grid Size,Device,CC,"
        f"gpu__time_duration.sum,{WARPS}",
        ",,,,,,,,,,,usecond,%",
        '0,42,app,h,k(int*),1,7,"(128, 1, 1)","(8, 1, 1)",0,9.0,10,50',
        '1,42,app,h,void k<float, 4>(int*),1,7,"(128, 1, 1)","(8, 1, 1)",0,9.0,30,10',
    ]
    with pytest.raises(TraceFormatError, match=r"14 fields.*13") as err:
        read_trace(write(tmp_path, lines))
    assert "void k<float" in str(err.value)


def test_the_cli_refuses_it_in_one_line(tmp_path, capsys):
    from tracekit.cli import main

    lines = [
        f"ID,Process ID,Kernel Name,gpu__time_duration.sum,{WARPS}",
        ",,,usecond,%",
        "0,42,void k<float, 4>(int*),30,10",
    ]
    path = write(tmp_path, lines)
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "fields" in err and "Traceback" not in err


def test_a_trailing_empty_field_is_still_read(tmp_path):
    """A trailing comma (an empty extra field) moves nothing: the row reads as before."""
    lines = [
        header("gpu__time_duration.sum", WARPS),
        units("usecond", "%"),
        row(0, "10", "50") + ",",
        row(1, "30", "10"),
    ]
    trace = read_trace(write(tmp_path, lines))
    assert durations(trace) == [10_000, 30_000]
    assert analyze_kernel_metrics(trace).summary["warp_occupancy"]["kernel_time"] == pytest.approx(20.0)


# ------------------------------------------- NVTX start/end ranges only (nvtxRangeStart/End, not push/pop)

STARTSTOP = "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def test_kernels_in_start_end_ranges_only_are_said_to_be_unscoped(tmp_path):
    """An application that marks its iterations with NVTX start/end ranges (``nvtxRangeStartA``,
    ``torch.cuda.nvtx.range_start``): ncu writes them in its Start/Stop column, which tracekit does not read, so
    no kernel has a range and the iteration scope was skipped without a word. Now a warning says so (the values
    are joined in profiling order as before)."""
    from tests.test_table import timeline
    from tracekit.analyzers.iterations import analyze_iterations

    head = (
        f'"ID","Process ID","Process Name","Host Name","{NVTX}","{STARTSTOP}","Kernel Name","Context","Stream",'
        f'"Block Size","Grid Size","Device","CC","gpu__time_duration.sum","{SM_PCT}","{WARPS}"'
    )
    blanks = '"","","","","","","","","","","","","","nsecond","%","%"'
    names = ["void ns::A<int>(int*)", "B(float*)", "void ns::A<int>(int*)", "B(float*)"]
    rows = [
        f'"{i}","4242","app","127.0.0.1","","1 ""<default domain>:iteration:none:none:none:none:none:none"" ",'
        f'"{n}","1","7","(128, 1, 1)","(8, 1, 1)","0","9.0","150","50","10"'
        for i, n in enumerate(names)
    ]
    ncu = read_trace(write(tmp_path, [head, blanks, *rows], "synthetic_startstop.ncu.csv"))
    assert ncu.meta["nvtx_start_end"] == 4
    tl = timeline()
    result = analyze_kernel_metrics(ncu, tl, analyze_iterations(tl))
    said = [w for w in result.warnings if "start/end" in w]
    assert len(said) == 1 and "'iteration'" in said[0] and "4 kernels" in said[0]
    assert result.value("sms_active") == pytest.approx(15.0)


def test_an_empty_start_stop_column_says_nothing(tmp_path):
    """The real H200 report has the column, every cell empty: no such meta, no warning."""
    from tests.test_fuzz7_ncu import NCU_CSV

    assert "nvtx_start_end" not in read_trace(NCU_CSV).meta


# ------------------------------------------------------- a program's output line inside the CSV table


def test_a_program_line_inside_the_table_is_no_kernel(tmp_path):
    """A line of the application's own output printed between ncu's CSV rows ("1,0.53": an epoch and a loss)
    parsed as a row whose ID is 1 and whose Process ID is "0.53": a third kernel, of a second "process", with
    no name and no duration (the join then warned of two processes). ncu writes every kernel row with its
    name: a row without one is no kernel; it is left out and said."""
    lines = [
        header("gpu__time_duration.sum", WARPS),
        units("usecond", "%"),
        row(0, "10", "50"),
        "1,0.53",
        row(1, "30", "10"),
    ]
    trace = read_trace(write(tmp_path, lines))
    assert trace.meta["kernels"] == 2
    assert "processes" not in trace.meta
    assert durations(trace) == [10_000, 30_000]
    said = [w for w in trace.meta["warnings"] if "no kernel name" in w]
    assert len(said) == 1 and "1 row" in said[0]


def test_a_nameless_row_of_a_named_kernels_process_is_kept(tmp_path):
    """A nameless result of the profiled process (a range result without a name, no launch dimensions) is
    still a result: kept, as a range result."""
    nameless = '"2","4242","app","127.0.0.1","","1","7","","","0","9.0","5","20"'
    lines = [
        header("gpu__time_duration.sum", WARPS),
        units("usecond", "%"),
        row(0, "10", "50"),
        row(1, "30", "10"),
    ]
    trace = read_trace(write(tmp_path, [*lines, nameless]))
    assert trace.meta["kernels"] == 3
    assert trace.meta["range_results"] == [2]
    assert not any("no kernel name" in w for w in trace.meta["warnings"])


# ------------------------------------------- .ncu-rep: push/pop ranges in two NVTX domains (NCCL's and the default)


class _Metric:
    def __init__(self, value, unit="", kind=1):
        self._value, self._unit, self._kind = value, unit, kind

    def has_value(self):
        return True

    def kind(self):
        return self._kind

    def as_string(self):
        return str(self._value)

    def as_double(self):
        return float(self._value)

    def as_uint64(self):
        return int(self._value)

    def unit(self):
        return self._unit


class _Domain:
    def __init__(self, pushed, started=()):
        self._pushed, self._started = pushed, list(started)

    def push_pop_ranges(self):
        return self._pushed

    def start_end_ranges(self):
        return self._started


class _State:
    def __init__(self, domains, started=None):
        self._domains, self._started = domains, started or {}

    def domains(self):
        return list(range(len(self._domains)))

    def domain_by_id(self, i):
        return _Domain(self._domains[i], self._started.get(i, ()))


class _Action:
    def __init__(self, name, domains, metrics, started=None):
        self._name, self._domains, self._metrics, self._started = name, domains, metrics, started

    def workload_type(self):
        return 0

    def nvtx_state(self):
        return _State(self._domains, self._started)

    def name(self, base):
        return self._name

    def metric_names(self):
        return list(self._metrics)

    def metric_by_name(self, name):
        return self._metrics.get(name)


class _Range:
    def __init__(self, actions):
        self._actions = actions

    def num_actions(self):
        return len(self._actions)

    def action_by_idx(self, i):
        return self._actions[i]


def fake_ncu_report(actions):
    import types

    module = types.ModuleType("ncu_report")
    module.IMetric = types.SimpleNamespace(ValueKind_STRING=0)
    module.IAction = types.SimpleNamespace(WorkloadType_KERNEL=0, NameBase_DEMANGLED=1)
    context = types.SimpleNamespace(num_ranges=lambda: 1, range_by_idx=lambda i: _Range(actions))
    module.load_report = lambda path: context
    return module


def test_a_report_with_ranges_in_two_nvtx_domains_keeps_both_in_the_stack(tmp_path, monkeypatch):
    """A kernel inside the default domain's 'iteration' and NCCL's own domain's 'ncclAllReduce' (NCCL 2.19+
    pushes NVTX ranges in its domain): the .ncu-rep reader kept the last domain's ranges only, so that kernel
    was not in 'iteration' and was left out of the scope (2 of the 3 kernels averaged: (10*50 + 30*10) / 40 =
    20 %). Both domains' ranges are its stack now, as the CSV's NVTX cell lists them: all 3 in scope,
    (10*50 + 20*80 + 30*10) / 60 = 40 %."""
    import sys

    def action(name, domains, duration, occupancy):
        metrics = {"gpu__time_duration.sum": _Metric(duration, "ns"), WARPS: _Metric(occupancy, "%")}
        return _Action(name, domains, metrics)

    actions = [
        action("k0", [["iteration"]], 10_000, 50),
        action("ncclDevKernel_AllReduce", [["iteration"], ["ncclAllReduce"]], 20_000, 80),
        action("k2", [["iteration"]], 30_000, 10),
    ]
    monkeypatch.setitem(sys.modules, "ncu_report", fake_ncu_report(actions))
    path = tmp_path / "synthetic.ncu-rep"
    path.write_bytes(b"synthetic")
    trace = read_trace(path)
    assert trace.meta["nvtx_stacks"] == [["iteration"], ["iteration", "ncclAllReduce"], ["iteration"]]
    result = analyze_kernel_metrics(trace, range_name="iteration")
    assert result.summary["warp_occupancy"]["kernels"] == 3
    assert result.summary["warp_occupancy"]["kernel_time"] == pytest.approx(40.0)


def test_a_report_with_start_end_ranges_only_counts_their_kernels(tmp_path, monkeypatch):
    """The .ncu-rep reader counts the kernels inside NVTX start/end ranges as the CSV reader does (meta
    nvtx_start_end), so that the join says the scope is not applied to them."""
    import sys

    metrics = {"gpu__time_duration.sum": _Metric(10_000, "ns"), WARPS: _Metric(50, "%")}
    actions = [_Action(f"k{i}", [[]], metrics, started={0: ["iteration"]}) for i in range(2)]
    monkeypatch.setitem(sys.modules, "ncu_report", fake_ncu_report(actions))
    path = tmp_path / "synthetic.ncu-rep"
    path.write_bytes(b"synthetic")
    trace = read_trace(path)
    assert trace.meta["nvtx_start_end"] == 2
    result = analyze_kernel_metrics(trace, range_name="iteration")
    assert any("start/end" in w for w in result.warnings)


# ------------------------------------------- a metric tracekit uses, written in a form it cannot read


@pytest.mark.parametrize("page", ["raw", "details"])
def test_a_used_metric_none_of_whose_values_reads_is_said(tmp_path, page):
    """Values of the warp occupancy written in a form that is not a number (an instance list without its
    aggregate in parentheses, "50;48;52"): the column had been taken for a string metric and dropped without
    a word, and the report said to hold no occupancy metric. Now the reader names it and its first value."""
    if page == "raw":
        lines = [header("gpu__time_duration.sum", WARPS), units("usecond", "%")]
        lines += [row(0, "10", "50;48;52"), row(1, "30", "10;9;11")]
    else:
        lines = [
            DETAILS,
            detail(0, "gpu__time_duration.sum", "usecond", "10"),
            detail(0, WARPS, "%", "50;48;52"),
        ]
        lines += [detail(1, "gpu__time_duration.sum", "usecond", "30"), detail(1, WARPS, "%", "10;9;11")]
    trace = read_trace(write(tmp_path, lines))
    said = [w for w in trace.meta["warnings"] if WARPS in w and "not read" in w]
    assert len(said) == 1 and "'50;48;52'" in said[0] and "2 value" in said[0]
    assert durations(trace) == [10_000, 30_000]


def test_string_metrics_tracekit_does_not_use_are_not_said(tmp_path):
    lines = [header("gpu__time_duration.sum", "launch__func_cache_config"), units("usecond", "")]
    lines += [row(0, "10", "CachePreferNone")]
    assert not any("not read" in w for w in read_trace(write(tmp_path, lines)).meta["warnings"])


def test_a_report_of_nameless_results_only_keeps_them(tmp_path):
    """Where no row has a name (range results of a range replay, were they nameless), none is dropped as
    program output: there is no named kernel's process to tell them from."""
    lines = [header("gpu__time_duration.sum", WARPS), units("usecond", "%")]
    lines += [f'"{i}","4242","app","127.0.0.1","","1","7","","","0","9.0","5","20"' for i in range(2)]
    trace = read_trace(write(tmp_path, lines))
    assert trace.meta["kernels"] == 2
    assert trace.meta["range_results"] == [0, 1]
