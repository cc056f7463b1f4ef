"""Round 16, Nsight Systems reader: what fresh real exports (nsys 2025.3.2, H200, with GPU metrics) showed the
reader got wrong, nsys's diagnostics read once, and hostile exports.

Sources are named in each test. Every trace here is synthetic, hand-built with :class:`tests.nsys_builder.NsysBuilder`
in pytest's temporary folder and named ``*.synthetic.sqlite``; the expected numbers are exact, from the rows
written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tests.nsys_builder import NsysBuilder
from tracekit.readers import sqlite_engine
from tracekit.readers.nsys_sqlite import read

US = 1_000

# ---------------------------------------------------------------- GPU metrics: the clock's unit

#: nsys 2024+ names the GPC clock "GPC Clock Frequency [MHz]", but the value it stores is its PerfWorks metric
#: ``gpc__cycles_elapsed.avg.per_second`` (NVIDIA's GpuMetrics.config, shipped with nsys: cycles per second):
#: a real nsys 2025.3.2 export of an H200 (boost clock 1980 MHz) holds 1,957,593,570 to 1,980,670,064 under that
#: name, and nsys 2022.4 stores the same counter, named "GPC Clock Frequency", in Hz (1.41e9 on a Quadro RTX
#: 8000, real export).
GPC_CLOCK = "GPC Clock Frequency [MHz]"


def _clock_samples(b: NsysBuilder, values: list[float], name: str = GPC_CLOCK) -> NsysBuilder:
    b.gpu(0, "NVIDIA H200")
    for i, v in enumerate(values):
        b.gpu_metric(100 * US + i * 100 * US, name, v)
        b.gpu_metric(100 * US + i * 100 * US, "SMs Active [Throughput %]", 40)
    b.kernel(100 * US, 150 * US, "gemm", correlation=1)
    return b


def test_a_clock_stored_in_cycles_per_second_is_in_hz_not_mhz(tmp_path: Path) -> None:
    """Read by its bracket, the clock's unit was "MHz" beside values of 1.98e9: an H200 at 1,980,670,064 MHz
    (2 PHz) in ``read_trace(...).gpu_metrics``. The values are cycles per second: the unit is "Hz", the values
    as nsys stored them, as the 2022.4 spelling of the same counter is read. A percentage keeps its unit."""
    path = _clock_samples(NsysBuilder(version="2025.3.2.0"), [1_957_593_570, 1_980_670_064]).write(
        tmp_path / "clock_hz.synthetic.sqlite"
    )
    metrics = read(path).gpu_metrics
    clock = metrics.filter(pl.col("metric") == GPC_CLOCK)
    assert clock["unit"].to_list() == ["Hz", "Hz"]
    assert clock["value"].to_list() == [1_957_593_570.0, 1_980_670_064.0]
    assert metrics.filter(pl.col("metric") == "SMs Active [Throughput %]")["unit"].unique().to_list() == ["%"]


def test_a_clock_stored_in_mhz_stays_mhz(tmp_path: Path) -> None:
    """A clock whose values are MHz (an export that stored what its name says: 1980) keeps "MHz": no GPU clock
    is 1 MHz or slower, nor 1 THz or faster, so the magnitude tells the two apart."""
    path = _clock_samples(NsysBuilder(version="2025.3.2.0"), [1957, 1980]).write(
        tmp_path / "clock_mhz.synthetic.sqlite"
    )
    clock = read(path).gpu_metrics.filter(pl.col("metric") == GPC_CLOCK)
    assert clock["unit"].to_list() == ["MHz", "MHz"]
    assert clock["value"].to_list() == [1957.0, 1980.0]


# ---------------------------------------------------------------- nsys's diagnostics, read once

#: The DIAGNOSTIC_EVENT table as nsys 2024.6 to 2026.2 write it (real exports).
DIAGNOSTIC_DDL = (
    'CREATE TABLE DIAGNOSTIC_EVENT ("timestamp" INTEGER NOT NULL, "timestampType" INTEGER NOT NULL, '
    '"source" INTEGER NOT NULL, "severity" INTEGER NOT NULL, "text" TEXT NOT NULL, "globalPid" INTEGER)'
)
#: What nsys 2025.3 writes when ``--capture-range=cudaProfilerApi`` starts the collection (real exports).
PROFILER_START = "Profiling started due to cudaProfilerStart API invoked in the application."


def _with_diagnostics(path: Path, rows: list[tuple[int | str, str]], *, timestamp_type: int = 1) -> Path:
    """Add DIAGNOSTIC_EVENT rows (timestamp, text) to ``path`` as nsys writes them (info, process 100); a
    timestamp given as text is stored as text (the column is declared INTEGER, not STRICT)."""
    con = sqlite3.connect(path)
    try:
        con.execute(DIAGNOSTIC_DDL)
        con.executemany(
            "INSERT INTO DIAGNOSTIC_EVENT VALUES (?, ?, 3, 1, ?, ?)",
            [(t, timestamp_type, s, 100 << 24) for t, s in rows],
        )
        con.commit()
    finally:
        con.close()
    return path


def _steps(b: NsysBuilder, starts: list[int]) -> NsysBuilder:
    """An 'iteration' of 40 µs at each of ``starts``, one 20 µs kernel each, synchronized: 0.5 busy."""
    b.gpu(0, "NVIDIA H200")
    for i, t0 in enumerate(starts):
        b.nvtx_range(t0, t0 + 40 * US, "iteration")
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=2 * i + 1)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=2 * i + 1)
        b.runtime(t0 + 5 * US, t0 + 27 * US, "cudaDeviceSynchronize_v3020", correlation=2 * i + 2)
    return b


def test_the_diagnostics_are_read_once_for_the_capture_start_and_the_losses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DIAGNOSTIC_EVENT was read twice, once for where cudaProfilerStart began the capture and once for what
    nsys says it lost. One read now gives both, the same: the range begun before the start (5 µs, before 10 µs)
    is left out, and the loss is warned and recorded."""
    path = _steps(NsysBuilder(version="2025.3.2.0"), [5 * US, 100 * US, 150 * US]).write(
        tmp_path / "diagnostics_once.synthetic.sqlite"
    )
    lost = "CUPTI dropped 3 records. Some CUPTI events might be missing."
    _with_diagnostics(path, [(0, "Profiling has started."), (10 * US, PROFILER_START), (200 * US, lost)])
    statements: list[str] = []
    connect = sqlite_engine.connect

    def traced(p: Path) -> sqlite3.Connection:
        con = connect(p)
        con.set_trace_callback(statements.append)
        return con

    monkeypatch.setattr(sqlite_engine, "connect", traced)
    trace = read(path)
    reads = [s for s in statements if "DIAGNOSTIC_EVENT" in s and "LIMIT 1" not in s and "PRAGMA" not in s]
    assert len(reads) == 1, reads
    assert trace.ranges.get_column("start").to_list() == [100 * US, 150 * US]
    assert trace.meta["lost_events"] == {"device": [lost]}


# ---------------------------------------------------------------- "Not all ... collected" after cudaProfilerStop

#: What nsys 2025.3.1 writes whenever cudaProfilerStop ends the capture before the program ends (the real probe
#: exports of sample_traces/h200_nsys_probe, also the one with nothing traced after the stop but a range's pop
#: and a sleep): after "Profiling has stopped." (at the capture's end), at the session's end on the host's clock.
NOT_ALL = [
    "Not all NVTX events might have been collected.",
    "Not all CUDA events might have been collected.",
    "Not all OS runtime libraries events might have been collected.",
]
#: nsys's record of its own work in those exports (PROFILER_OVERHEAD): CUDA's activity flushed at the stop.
FLUSH_ON_STOP = "CUDA profiling data flush on cudaProfilerStop"


def _stopped_capture(
    tmp_path: Path,
    name: str,
    *,
    flushed: bool,
    said_at: int,
    overhead: str = FLUSH_ON_STOP,
    more: list[tuple[int | str, str]] | None = None,
) -> Path:
    """Three 0.5-busy iterations in a capture cudaProfilerStart began at 10 µs and cudaProfilerStop ended at
    300 µs ("Profiling has stopped."), the 'Not all ... collected' lines at ``said_at`` (host clock), and, where
    ``flushed``, nsys's record of its work at the stop (``overhead``: its flush of CUDA's records); ``more``
    diagnostics (timestamp, text) after those."""
    b = _steps(NsysBuilder(version="2025.3.1.0"), [100 * US, 150 * US, 200 * US])
    b.capture(300 * US)
    if flushed:
        b.profiler_overhead(295 * US, 299 * US, overhead)
    path = b.write(tmp_path / name)
    rows: list[tuple[int | str, str]] = [
        (0, "Profiling has started."),
        (10 * US, PROFILER_START),
        (300 * US, "Profiling has stopped."),
    ]
    return _with_diagnostics(path, rows + [(said_at, text) for text in NOT_ALL] + (more or []))


def test_not_all_collected_after_a_cuda_profiler_stop_is_no_loss(tmp_path: Path) -> None:
    """nsys writes 'Not all NVTX/CUDA events might have been collected.' whenever cudaProfilerStop ends the
    capture before the program ends, even with no CUDA call after the stop (the real probe): what is not
    collected is what came after the stop, outside the capture, whose CUDA records nsys flushed at the stop
    (its PROFILER_OVERHEAD row). Read as a loss, every trace a program stopped with cudaProfilerStop (as
    ``torch.cuda.profiler.stop()`` does) had its verdict doubted ("Nsight Systems says it lost events"), the
    numbers unchanged: 0.5 busy in each of 3 iterations. Not a loss now: no lost_events, no doubt."""
    import tracekit

    path = _stopped_capture(tmp_path, "stopped.synthetic.sqlite", flushed=True, said_at=4_230_606_755)
    trace = read(path)
    assert "lost_events" not in trace.meta
    assert not [w for w in trace.meta["warnings"] if "lost events" in w]
    analysis = tracekit.analyze(path)
    assert analysis.iterations["gpu_utilization"].to_list() == [0.5, 0.5, 0.5]
    assert analysis.verdict_uncertain is None


@pytest.mark.parametrize(
    ("flushed", "said_at"),
    [(False, 4_230_606_755), (True, 250 * US)],
    ids=["no flush at the stop", "before it"],
)
def test_not_all_collected_stays_a_loss_without_a_flush_at_the_stop_or_before_it(
    tmp_path: Path, flushed: bool, said_at: int
) -> None:
    """Without nsys's record that it flushed CUDA's activity at cudaProfilerStop, or said before the capture
    stopped, the same lines are nsys's word that the capture may lack events: warned and recorded, as before."""
    path = _stopped_capture(tmp_path, "not_stopped.synthetic.sqlite", flushed=flushed, said_at=said_at)
    trace = read(path)
    assert trace.meta["lost_events"] == {"nvtx": NOT_ALL[:1], "device": NOT_ALL[1:2]}


CUPTI_LOSS = "CUPTI dropped 5 records. Some CUPTI events might be missing."


@pytest.mark.parametrize(
    ("case", "said_at", "overhead", "more", "lost"),
    [
        # said exactly when the capture stopped: after the stop's flush too
        ("at the stop", 300 * US, FLUSH_ON_STOP, [], None),
        # a real loss said after the stop stays one, beside the stop's lines
        (
            "a CUPTI loss after",
            4_230_606_755,
            FLUSH_ON_STOP,
            [(4_230_700_000, CUPTI_LOSS)],
            {"device": [CUPTI_LOSS]},
        ),
        # the same line first said inside the capture (then again after the stop) is the capture's loss
        ("said before too", 4_230_606_755, FLUSH_ON_STOP, [(250 * US, NOT_ALL[0])], {"nvtx": NOT_ALL[:1]}),
        # nsys's flush at the process's exit is no cudaProfilerStop: the capture ended with the program
        (
            "flushed at exit",
            4_230_606_755,
            "CUDA profiling data flush on process exit",
            [],
            {"nvtx": NOT_ALL[:1], "device": NOT_ALL[1:2]},
        ),
        # the first "Profiling has stopped." is the stop
        ("two stops", 400 * US, FLUSH_ON_STOP, [(500 * US, "profiling has stopped")], None),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_what_a_stop_explains(
    tmp_path: Path,
    case: str,
    said_at: int,
    overhead: str,
    more: list[tuple[int | str, str]],
    lost: dict[str, list[str]] | None,
) -> None:
    """Only the 'Not all ... collected' lines first said at or after the stop of a capture nsys flushed at
    cudaProfilerStop are no loss: ``lost`` is what is still recorded (None: nothing)."""
    path = _stopped_capture(
        tmp_path, "stop_edges.synthetic.sqlite", flushed=True, said_at=said_at, overhead=overhead, more=more
    )
    assert read(path).meta.get("lost_events") == lost, case


def test_a_not_all_line_without_a_timestamp_stays_a_loss(tmp_path: Path) -> None:
    """A 'Not all ... collected' line whose timestamp is no integer cannot be placed after the stop: a loss."""
    path = _stopped_capture(
        tmp_path,
        "untimed.synthetic.sqlite",
        flushed=True,
        said_at=4_230_606_755,
        more=[("late", "Not all GPU events might have been collected.")],
    )
    assert read(path).meta["lost_events"] == {"device": ["Not all GPU events might have been collected."]}


def test_the_capture_starts_at_the_earliest_integer_start_and_never_before_0(tmp_path: Path) -> None:
    """Of several 'Profiling started due to cudaProfilerStart' lines (spelled alike or not), the earliest with an
    integer timestamp is the start (one stored as text is left out); a start before 0 is 0. Ranges at 5, 15
    and 25 µs; starts said at 'x', 20 and 12 µs: the capture starts at 12 µs, the range at 5 µs is left out.
    Ranges at -1, 15 and 25 µs, a start said at -3 µs alone: the start is 0, and the range at -1 µs is still left
    out (begun before the capture)."""
    starts = [5 * US, 15 * US, 25 * US]
    said = [
        ("x", "  " + PROFILER_START),
        (20 * US, PROFILER_START),
        (12 * US, PROFILER_START.replace("cudaProfilerStart", "cuProfilerStart")),
    ]
    b = _steps(NsysBuilder(version="2025.3.2.0"), starts)
    path = _with_diagnostics(b.write(tmp_path / "starts.synthetic.sqlite"), said)
    assert read(path).ranges.get_column("start").to_list() == starts[1:]
    starts = [-1 * US, 15 * US, 25 * US]
    b = _steps(NsysBuilder(version="2025.3.2.0"), starts)
    path = _with_diagnostics(b.write(tmp_path / "negative.synthetic.sqlite"), [(-3 * US, PROFILER_START)])
    assert read(path).ranges.get_column("start").to_list() == starts[1:]


def test_a_diagnostic_table_without_text_says_nothing(tmp_path: Path) -> None:
    """A DIAGNOSTIC_EVENT with rows but no ``text`` column (a damaged or foreign export) gives no capture start
    and no loss, and no error."""
    path = _steps(NsysBuilder(version="2025.3.2.0"), [5 * US, 100 * US]).write(
        tmp_path / "no_text.synthetic.sqlite"
    )
    con = sqlite3.connect(path)
    try:
        con.execute('CREATE TABLE DIAGNOSTIC_EVENT ("timestamp" INTEGER, "severity" INTEGER)')
        con.execute("INSERT INTO DIAGNOSTIC_EVENT VALUES (10000, 1)")
        con.commit()
    finally:
        con.close()
    trace = read(path)
    assert trace.ranges.get_column("start").to_list() == [5 * US, 100 * US]
    assert "lost_events" not in trace.meta


def test_a_flush_at_the_stop_without_nsys_saying_it_stopped_is_no_stop(tmp_path: Path) -> None:
    """nsys's flush at cudaProfilerStop without its 'Profiling has stopped.' line: no stop is known, the 'Not
    all ... collected' lines stay a loss."""
    b = _steps(NsysBuilder(version="2025.3.1.0"), [100 * US, 150 * US])
    b.profiler_overhead(295 * US, 299 * US, FLUSH_ON_STOP)
    path = _with_diagnostics(
        b.write(tmp_path / "no_stop_line.synthetic.sqlite"), [(400 * US, t) for t in NOT_ALL]
    )
    assert read(path).meta["lost_events"] == {"nvtx": NOT_ALL[:1], "device": NOT_ALL[1:2]}


# ---------------------------------------------------------------- strict xfail for a file nsys16 does not own


def test_the_table_names_an_nsys_metric_once_with_its_unit(tmp_path: Path) -> None:
    """'SMs Active [Throughput %]' carries its unit in its name (nsys 2024+): the table's metric column should
    say it once."""
    import tracekit

    b = _steps(NsysBuilder(version="2025.3.2.0"), [100 * US, 150 * US, 200 * US])
    for t in range(100 * US, 250 * US, 10 * US):
        b.gpu_metric(t, "SMs Active [Throughput %]", 40)
    path = b.write(tmp_path / "metric_name.synthetic.sqlite")
    row = tracekit.table([path]).row(0, named=True)
    assert row["sms_active"] == 40.0
    assert row["sms_active_metric"] == "SMs Active [Throughput %]"
