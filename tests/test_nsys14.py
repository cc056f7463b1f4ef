"""Round 14, Nsight Systems reader: exports of nsys versions and captures tracekit had not seen (what nsys records
about its own lost events, schema drift across 2021.x to 2026.x, capture edges).

Sources: the message texts nsys writes about lost events are those of the Nsight Systems 2022.4.2 binaries
installed here (``strings`` of ``target-linux-x64/libToolsInjection64.so`` and ``host-linux-x64/libAnalysis.so``),
and the ``DIAGNOSTIC_EVENT`` schema and its enums are those of the real 2024.6, 2025.1 and 2026.2 exports in
``shared/real_traces/nsys`` (``text TEXT NOT NULL``, ``severity`` 2 Warning / 3 Error, ``source`` 1 Injection /
2 Daemon / 3 Analysis).

Every trace here is synthetic, hand-built with :class:`tests.nsys_builder.NsysBuilder` in pytest's temporary
folder and named ``*.synthetic.sqlite``; the expected numbers are exact, from the rows written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest

import tracekit
from tests.nsys_builder import NsysBuilder
from tracekit.cli import main
from tracekit.readers.nsys_sqlite import read

US = 1_000
REAL = Path(__file__).resolve().parents[2] / "shared" / "real_traces" / "nsys"

#: The DIAGNOSTIC_EVENT table as nsys 2024.6 to 2026.2 write it (real exports).
DIAGNOSTIC_DDL = (
    'CREATE TABLE DIAGNOSTIC_EVENT ("timestamp" INTEGER NOT NULL, "timestampType" INTEGER NOT NULL, '
    '"source" INTEGER NOT NULL, "severity" INTEGER NOT NULL, "text" TEXT NOT NULL, "globalPid" INTEGER)'
)


def _gpu_run(b: NsysBuilder, iterations: int = 4) -> NsysBuilder:
    """``iterations`` 'iteration' ranges of 40 µs, each launching one 20 µs kernel (6 to 26 µs into it) and
    synchronizing: GPU busy 20 of 40 µs, utilization 0.5 in every iteration."""
    b.gpu(0, "NVIDIA H100")
    corr = 1
    for i in range(iterations):
        t0 = 100 * US + i * 50 * US
        b.nvtx_range(t0, t0 + 40 * US, "iteration")
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=corr)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=corr)
        b.runtime(t0 + 5 * US, t0 + 27 * US, "cudaDeviceSynchronize_v3020", correlation=corr + 1)
        corr += 2
    return b


def _with_diagnostics(path: Path, rows: list[tuple[int, int, int, int, str]]) -> Path:
    """Add a DIAGNOSTIC_EVENT table with ``rows`` (timestamp, timestampType, source, severity, text) to
    ``path``, each for process 100."""
    con = sqlite3.connect(path)
    try:
        con.execute(DIAGNOSTIC_DDL)
        con.executemany(
            "INSERT INTO DIAGNOSTIC_EVENT VALUES (?, ?, ?, ?, ?, ?)", [(*r, 100 << 24) for r in rows]
        )
        con.commit()
    finally:
        con.close()
    return path


def _cli(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``tracekit analyze PATH``: (exit code, stdout and stderr as one line of words)."""
    code = main(["analyze", str(path)])
    out = capsys.readouterr()
    return code, " ".join((out.out + out.err).split())


# ---------------------------------------------------------------- DIAGNOSTIC_EVENT: events nsys lost


#: Messages nsys 2022.4.2's injection and analysis libraries write when events are lost (format strings filled
#: in), and what they lost.
LOSS_MESSAGES = [
    ("CUPTI dropped 1200 records. Some CUPTI events might be missing.", "device"),
    (
        "Number of CUPTI events produced: \t5000, CUPTI buffers: 64 of 64. Some CUPTI events might be missing. "
        "To make sure all the events are collected, let the application run until it quits, and make sure "
        "cudaDeviceReset() is called before exit.",
        "device",
    ),
    (
        "Number of incomplete CUPTI events dropped: 37. Incomplete events appear when GPU timestamp information "
        "have not been retrieved at the time the profiling session was stopped.",
        "device",
    ),
    ("Couldn't allocate CUPTI buffers 3 times.Some CUPTI events might be missing.", "device"),
    (
        "Could not parse 12 CUPTI activity records. Please try updating the CUDA driver or use more recent "
        "profiler version.",
        "device",
    ),
    ("Not all CUDA events might have been collected.", "device"),
    (
        "4 NVTX annotations were discarded because they contained at least one invalid string handle. Were "
        "the `nvtxEventAttributes_t` structures zero-initialized before setting the event attribute fields?",
        "nvtx",
    ),
    ("Cannot allocate CUPTI buffer. out of memory", "device"),
    ("Could not load the CUPTI library. Please make sure the installed CUDA version is supported.", "device"),
    ("Cannot initialize CUDA event collection", "device"),
    ("Unable to get NVTX CORE2 export table", "nvtx"),
    ("Not all NVTX events might have been collected.", "nvtx"),
    ("NVPW internal error (12 dropped samples)", "gpu_metrics"),
    (
        "Injection storage file /tmp/x.qdstrm has reach 95% of size limit (4.000000 GiB). Trace data will "
        "likely be truncated soon.",
        "all",
    ),
]


@pytest.mark.parametrize(
    ("text", "lost"), LOSS_MESSAGES, ids=[m[1] + str(i) for i, m in enumerate(LOSS_MESSAGES)]
)
def test_nsys_saying_it_lost_events_is_warned_and_recorded(tmp_path: Path, text: str, lost: str) -> None:
    """nsys 2024+ writes its own diagnostics into DIAGNOSTIC_EVENT, among them that CUPTI dropped records
    (its activity buffers overflowed) or that NVTX annotations were discarded. The reader did not read the
    table: a capture that lost kernels read as a GPU idle where they ran (GPU busy short, a framework-bound
    verdict from missing work), without a word. The reader now warns, quoting nsys, and records the loss in
    ``meta["lost_events"]`` (what was lost -> nsys's messages) for the analysis."""
    path = _gpu_run(NsysBuilder()).write(tmp_path / "lost.synthetic.sqlite")
    _with_diagnostics(path, [(0, 1, 3, 1, "Profiling has started."), (900_000, 1, 1, 2, text)])
    trace = read(path)
    found = [w for w in trace.meta["warnings"] if "DIAGNOSTIC_EVENT" in w]
    assert len(found) == 1, trace.meta["warnings"]
    assert " ".join(text.split())[:40] in found[0]
    assert trace.meta["lost_events"] == {lost: [text]}


def test_nsys_diagnostics_that_lose_nothing_are_not_warned(tmp_path: Path) -> None:
    """The diagnostics of the real 2024.6 / 2025.1 exports (counts of events collected, a daemon that could
    not sample the CPU, a child process without CUDA) and CPU-sampling losses (tracekit reads no CPU
    samples), and a drop count of 0, say nothing about lost trace events: no warning, no ``lost_events``."""
    benign = [
        (0, 1, 3, 1, "Profiling has started."),
        (10, 1, 1, 1, "Number of CUPTI events produced: \t1048, CUPTI buffers: 50."),
        (11, 1, 3, 1, "Number of CUDA events collected: \t989."),
        (
            12,
            1,
            2,
            3,
            "Unable to configure the collection of CPU IP/backtrace samples, context switch data, or "
            "event sampling data. Try the 'nsys status --environment' command to learn more.",
        ),  # fmt: skip
        (13, 2, 3, 2, "No CUDA events collected. Does the process use CUDA?"),
        (14, 2, 3, 2, "CUDA profiling might have not been started correctly."),
        (
            15,
            1,
            3,
            2,
            "Sampling events were lost in the interval 1 - 2 (1) ns. Thread states and CPU "
            "utilization on the timeline might be incorrect. Try reducing the sampling rate.",
        ),  # fmt: skip
        (16, 1, 1, 1, "CUPTI dropped 0 records. Some CUPTI events might be missing."),
        (16, 1, 3, 2, "Not all OS runtime events might have been collected."),
        (17, 1, 3, 1, "Profiling has stopped."),
    ]
    path = _with_diagnostics(_gpu_run(NsysBuilder()).write(tmp_path / "benign.synthetic.sqlite"), benign)
    trace = read(path)
    assert not [w for w in trace.meta["warnings"] if "DIAGNOSTIC_EVENT" in w]
    assert "lost_events" not in trace.meta


def test_lost_device_events_are_said_once_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tracekit analyze`` on a capture whose CUPTI dropped records, twice: exit 0, the utilization measured
    (0.5, from the kernels that are there) and one warning line quoting nsys."""
    path = _gpu_run(NsysBuilder()).write(tmp_path / "dropped.synthetic.sqlite")
    text = "CUPTI dropped 1200 records. Some CUPTI events might be missing."
    _with_diagnostics(path, [(900_000, 1, 1, 2, text), (950_000, 1, 1, 2, text)])
    code, out = _cli(path, capsys)
    assert code == 0, out
    assert "Traceback" not in out
    assert "GPU utilization (busy / latency) │ │ 0.500 │ 0.500" in out
    assert out.count("CUPTI dropped 1200 records") == 1
    assert "2 times" in out


def test_lost_device_events_make_the_verdict_uncertain(tmp_path: Path) -> None:
    """Kernels nsys lost are GPU busy time the trace lacks: a framework-bound verdict may come from them. The
    reader records the loss (``meta["lost_events"]["device"]``); the analysis should mark the verdict uncertain
    as it does for device tables it does not read (``plausibility.unread_device_work``)."""
    path = _gpu_run(NsysBuilder()).write(tmp_path / "dropped_doubt.synthetic.sqlite")
    _with_diagnostics(
        path, [(900_000, 1, 1, 2, "CUPTI dropped 1200 records. Some CUPTI events might be missing.")]
    )
    analysis = tracekit.analyze(path)
    assert analysis.verdict_uncertain is not None
    assert "Nsight Systems says it lost events during the capture" in analysis.verdict_uncertain
    # a loss of GPU metric samples alone leaves the verdict standing (busy time is not short by it)
    metrics = _gpu_run(NsysBuilder()).write(tmp_path / "dropped_metrics.synthetic.sqlite")
    _with_diagnostics(metrics, [(900_000, 1, 1, 2, "NVPW internal error (12 dropped samples)")])
    assert tracekit.analyze(metrics).verdict_uncertain is None


@pytest.mark.skipif(not REAL.is_dir(), reason="shared real traces absent")
@pytest.mark.parametrize("name", ["nvfuser_h200_2024.6.sqlite", "nvfuser_h200_crossentropy_2025.1.sqlite"])
def test_real_diagnostics_say_nothing_was_lost(name: str) -> None:
    """The two real exports with DIAGNOSTIC_EVENT rows (12 and 45 rows: counts, a sampling daemon that could not
    start, child processes without CUDA) lost nothing: no warning about it."""
    trace = read(REAL / name, frames=["ops", "ranges"])
    assert not [w for w in trace.meta["warnings"] if "DIAGNOSTIC_EVENT" in w]
    assert "lost_events" not in trace.meta


# ---------------------------------------------------------------- NVTX ranges begun before the capture started


def test_ranges_begun_before_the_capture_are_left_out(tmp_path: Path) -> None:
    """nsys writes timestamps from the capture's start (0): what happened before it (``-y`` delay, a capture
    range started later, ``nsys start``) is negative (recorded with nsys 2022.4: a domain created before ``-y``
    at -1.06 s). nsys 2022.4 drops ranges begun before the capture; an export that keeps them holds none of
    their device work before 0 (CUDA is traced from the capture's start on). Here two 'iteration' ranges lie
    wholly before the capture (-120..-80 and -70..-30 µs: no kernel, busy 0), one crosses its start (-20..20 µs,
    a 6 µs kernel after 0: busy 6 of 40 µs) and two lie inside it (100..140 and 150..190 µs, a 20 µs kernel each:
    0.5). Read as iterations they had made the median 0.15, "framework-bound"; they are left out, with a
    warning: 2 iterations of 0.5."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.nvtx_range(-120 * US, -80 * US, "iteration")
    b.nvtx_range(-70 * US, -30 * US, "iteration")
    b.nvtx_range(-20 * US, 20 * US, "iteration")
    b.runtime(1 * US, 2 * US, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(3 * US, 9 * US, "gemm", correlation=1)
    b.runtime(2 * US, 10 * US, "cudaDeviceSynchronize_v3020", correlation=2)
    corr = 3
    for t0 in (100 * US, 150 * US):
        b.nvtx_range(t0, t0 + 40 * US, "iteration")
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=corr)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=corr)
        b.runtime(t0 + 5 * US, t0 + 27 * US, "cudaDeviceSynchronize_v3020", correlation=corr + 1)
        corr += 2
    b.capture(300 * US)
    path = b.write(tmp_path / "before_capture.synthetic.sqlite")
    trace = read(path)
    assert trace.ranges.get_column("start").to_list() == [100 * US, 150 * US]
    assert [w for w in trace.meta["warnings"] if "before the capture" in w]
    analysis = tracekit.analyze(path)
    assert analysis.iterations["gpu_utilization"].to_list() == [0.5, 0.5]
    assert analysis.verdict == "compute"


# ---------------------------------------------------------------- a range ending before it starts


def test_a_range_ending_before_it_starts_leaves_the_nesting_of_its_thread_alone(tmp_path: Path) -> None:
    """A CPU-only capture (``nsys -t nvtx,osrt``): three 'iteration' ranges of 10 µs on one thread, each with
    a 4 µs 'op' inside, and one range 'broken' whose end (0) lies before its start (500 µs, after the
    iterations: a damaged row, or an exporter writing its default 0 for a missing end, as nsys 2021.x documents
    for every NOT NULL field).
    The nesting counted its end as a close at 0, before every start of the thread: every later depth one too
    small (clipped at 0), so the ops were top-level ranges, no operators, and the iterations held nothing. The
    range is dropped later as one with a negative duration; its own end now closes it at its start: depths
    [0, 1] per iteration, 3 operators, busy 4 of 10 µs (0.4)."""
    b = NsysBuilder()
    b.nvtx_range(500 * US, 0, "broken")
    for i in range(3):
        t0 = 100 * US + i * 20 * US
        b.nvtx_range(t0, t0 + 10 * US, "iteration")
        b.nvtx_range(t0 + 3 * US, t0 + 7 * US, "op")
    path = b.write(tmp_path / "broken_range.synthetic.sqlite")
    trace = read(path)
    named = trace.ranges.filter(pl.col("name").is_in(["iteration", "op"]))
    assert named.get_column("depth").to_list() == [0, 1, 0, 1, 0, 1]
    assert trace.ops.get_column("name").to_list() == ["op", "op", "op"]
    analysis = tracekit.analyze(path)
    assert analysis.iterations["gpu_utilization"].to_list() == [0.4, 0.4, 0.4]


# ---------------------------------------------------------------- an empty text beside a registered string


def test_an_empty_text_beside_a_registered_string_takes_the_registered_name(tmp_path: Path) -> None:
    """nsys 2021.x's exporter declares every field NOT NULL and writes a default where a value is missing
    (its documentation: "all fields are declared as NOT NULL, even where actual value may be missing, instead
    default value for that field is exported"): a range named by a registered string (``textId``) can carry
    ``text`` '' instead of null. The name was the empty text: three 'iteration' ranges read as ranges named '',
    chosen only as the most frequent top-level name. The registered string names them: 'iteration', and an
    empty text without a registered string stays ''."""
    b = NsysBuilder(version="2021.5.1.77", meta_table="EXPORT_META_DATA")
    b.gpu(0, "NVIDIA V100")
    sid = b.string("iteration")
    corr = 1
    for i in range(3):
        t0 = 100 * US + i * 50 * US
        b.add("NVTX_EVENTS", start=t0, end=t0 + 40 * US, eventType=59, text="", textId=sid,
              globalTid=(100 << 24) | 100, domainId=0)  # fmt: skip
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=corr)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=corr)
        b.runtime(t0 + 5 * US, t0 + 27 * US, "cudaDeviceSynchronize_v3020", correlation=corr + 1)
        corr += 2
    b.add("NVTX_EVENTS", start=300 * US, end=310 * US, eventType=59, text="", textId=0,
          globalTid=(100 << 24) | 100, domainId=0)  # fmt: skip
    trace = read(b.write(tmp_path / "empty_text.synthetic.sqlite"))
    assert trace.ranges.get_column("name").to_list() == ["iteration"] * 3 + [""]


# ---------------------------------------------------------------- an nvprof export


def test_an_nvprof_export_is_named_as_such_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """nvprof's SQLite output (``nvprof -o x.nvvp``) has CUPTI_ACTIVITY_KIND_* tables too, but its names are in
    ``StringTable`` (``_id_``, ``value``) and its kernels' ``name`` is an id into it. It was said to miss
    'required table StringIds', as if it were a damaged Nsight Systems export; it is named for what it is, in
    one line, exit 2."""
    path = tmp_path / "profile.synthetic.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY, value TEXT);
        INSERT INTO StringTable VALUES (1, 'gemm');
        CREATE TABLE Version(version INT);
        INSERT INTO Version VALUES (12);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(_id_ INTEGER PRIMARY KEY, start INT, end INT, deviceId INT,
            contextId INT, streamId INT, correlationId INT, name INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 1000, 2000, 0, 1, 7, 1, 1);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER PRIMARY KEY, cbid INT, start INT, end INT,
            processId INT, threadId INT, correlationId INT, returnValue INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 211, 500, 900, 1, 1, 1, 0);
        """
    )
    con.close()
    code, out = _cli(path, capsys)
    assert code == 2
    assert out.startswith(f"tracekit: {path}: ")
    assert "nvprof" in out.removeprefix(f"tracekit: {path}: ")
    assert "Traceback" not in out


# ---------------------------------------------------------------- rows in any order (nsys 2025.6+)


def _shuffled_copy(src: Path, dst: Path) -> Path:
    """A copy of ``src`` with the rows of every table in a fixed random order."""
    dst.write_bytes(src.read_bytes())
    con = sqlite3.connect(dst)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for t in tables:
            q = '"' + t.replace('"', '""') + '"'
            con.execute(
                f"CREATE TEMP TABLE _rows AS SELECT * FROM {q} ORDER BY (rowid * 7919) % 10007, rowid DESC"
            )
            con.execute(f"DELETE FROM {q}")
            con.execute(f"INSERT INTO {q} SELECT * FROM _rows")
            con.execute("DROP TABLE _rows")
        con.commit()
    finally:
        con.close()
    return dst


@pytest.mark.skipif(not REAL.is_dir(), reason="shared real traces absent")
@pytest.mark.parametrize("name", ["nvfuser_h200_2024.6.sqlite", "local_nvtx_only_cpu_2022.4.sqlite"])
def test_rows_in_any_order_give_the_same_analysis(tmp_path: Path, name: str) -> None:
    """nsys 2025.6's release notes: "It cannot be assumed that rows will continue to be exported in any
    particular order, including timestamp order." The real exports with every table's rows shuffled (but
    StringIds, whose id is its rowid: an INTEGER PRIMARY KEY keeps id order) give the same iterations and verdict."""
    src = REAL / name
    ordered = tracekit.analyze(src)
    shuffled = tracekit.analyze(_shuffled_copy(src, tmp_path / f"shuffled_{name}"))
    assert shuffled.iterations.equals(ordered.iterations)
    assert (shuffled.verdict, shuffled.verdict_uncertain) == (ordered.verdict, ordered.verdict_uncertain)


def test_a_capture_whose_cuda_trace_failed_is_no_cpu_only_run(tmp_path: Path) -> None:
    """An export with NVTX ranges and no CUDA table reads as a CPU-only run: its leaf ranges become operators
    and get a verdict. When nsys says its CUDA trace failed or lost records (here 'Could not load the CUPTI
    library'), the missing device work is the application's GPU work, not its absence: the trace is a GPU run
    without device ops (no operators from its ranges, no verdict), with the warning quoting nsys. Before, 3
    iterations of 10 µs with a 4 µs leaf 'op' each read as a CPU run, "operator utilization" 0.4,
    framework-bound."""
    b = NsysBuilder()
    for i in range(3):
        t0 = 100 * US + i * 20 * US
        b.nvtx_range(t0, t0 + 10 * US, "iteration")
        b.nvtx_range(t0 + 3 * US, t0 + 7 * US, "op")
    path = b.write(tmp_path / "cupti_failed.synthetic.sqlite")
    text = "Could not load the CUPTI library. Please make sure the installed CUDA version is supported."
    _with_diagnostics(path, [(50_000, 1, 1, 3, text)])
    trace = read(path)
    assert trace.meta["device"] == "gpu"
    assert trace.ops.height == 0
    analysis = tracekit.analyze(path)
    assert analysis.verdict is None


# ---------------------------------------------------------------- CUDA calls without their process


@pytest.mark.parametrize("how", ["no column", "null", "process 0"])
def test_cuda_calls_without_a_process_are_the_ops_process(tmp_path: Path, how: str) -> None:
    """CUDA API rows without ``globalTid`` (the column missing, or null) have no process, and correlation ids
    are unique only within a process: no call matched its kernels. On the real 2024.6 export with the column
    dropped, the kernels read as 'launched before the capture began', the iterations were replaced by one
    window, and the verdict was framework-bound at 0.1% (3.4% with the column). As ops without a process
    get the process of the trace's calls when those come from one, calls without a process get the process of
    the trace's device ops when those come from one, with a warning: 4 iterations of 0.5 here, as with it."""
    drop = {"CUPTI_ACTIVITY_KIND_RUNTIME": ["globalTid"]} if how == "no column" else {}
    b = _gpu_run(NsysBuilder(drop_columns=drop))
    if how != "no column":  # null, or nsys 2021.x's default 0 (process 0: no application's)
        for row in b.rows["CUPTI_ACTIVITY_KIND_RUNTIME"]:
            row["globalTid"] = None if how == "null" else 0
    path = b.write(tmp_path / "calls_without_process.synthetic.sqlite")
    trace = read(path)
    assert trace.api.get_column("pid").unique().to_list() == [100]
    assert [w for w in trace.meta["warnings"] if "no process" in w]
    analysis = tracekit.analyze(path)
    assert analysis.iterations["gpu_utilization"].to_list() == [0.5] * 4


def test_a_diagnostic_text_given_as_a_string_id_is_read(tmp_path: Path) -> None:
    """Every real DIAGNOSTIC_EVENT holds its message in ``text`` (TEXT); an export that stores it as a StringIds
    id, as most nsys tables store their names, is read through StringIds."""
    b = _gpu_run(NsysBuilder())
    sid = b.string("CUPTI dropped 77 records. Some CUPTI events might be missing.")
    path = b.write(tmp_path / "diag_id.synthetic.sqlite")
    con = sqlite3.connect(path)
    con.execute(DIAGNOSTIC_DDL.replace('"text" TEXT NOT NULL', '"text" INTEGER NOT NULL'))
    con.execute("INSERT INTO DIAGNOSTIC_EVENT VALUES (5, 1, 1, 2, ?, ?)", (sid, 100 << 24))
    con.commit()
    con.close()
    trace = read(path)
    assert trace.meta["lost_events"] == {
        "device": ["CUPTI dropped 77 records. Some CUPTI events might be missing."]
    }


def test_device_ops_of_process_0_are_ops_without_a_process(tmp_path: Path) -> None:
    """nsys 2021.x exports a default for a missing NOT NULL field: a kernel row without its process can carry
    ``globalPid`` 0, process 0, which no application is (the OS's idle task). Read as process 0, the kernels
    matched none of process 100's launch calls (correlation ids are per process): no iteration held a device
    op. They are ops without a process, given the process of the trace's calls (one here): 4 iterations of 0.5."""
    b = _gpu_run(NsysBuilder(version="2021.5.1.77", meta_table="EXPORT_META_DATA"))
    for row in b.rows["CUPTI_ACTIVITY_KIND_KERNEL"]:
        row["globalPid"] = 0
    path = b.write(tmp_path / "pid0.synthetic.sqlite")
    trace = read(path)
    assert trace.ops.get_column("pid").unique().to_list() == [100]
    analysis = tracekit.analyze(path)
    assert analysis.iterations["gpu_utilization"].to_list() == [0.5] * 4


# ---------------------------------------------------------------- the GPU named: a used GPU, not an unused one


def test_the_gpu_named_is_the_one_that_ran_the_kernels_not_an_unused_one(tmp_path: Path) -> None:
    """A box of three GPUs (nsys ids 0 'NVIDIA A100-SXM4-80GB', 1 'Tesla T4', 2 'NVIDIA H100 80GB HBM3', each
    with its own ``cuDevice``), a process started with ``CUDA_VISIBLE_DEVICES=2,0``: TARGET_INFO_CUDA_DEVICE maps
    its CUDA device 0 to GPU 2 and 1 to GPU 0; GPU 1 is unused, and its guessed CUDA id (its cuDevice, 1) is the
    used A100's. The kernels ran on CUDA device 1, the A100, but the unused T4, listed after it, took its id's
    name: the trace said 'Tesla T4'. A used GPU's name wins its id, and the unused GPU that shares it is not
    listed beside it."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA A100-SXM4-80GB", cu_device=0)
    b.gpu(1, "Tesla T4", cu_device=1)
    b.gpu(2, "NVIDIA H100 80GB HBM3", cu_device=2)
    b.cuda_device(2, 0)
    b.cuda_device(0, 1)
    corr = 1
    for i in range(4):
        t0 = 100 * US + i * 50 * US
        b.nvtx_range(t0, t0 + 40 * US, "iteration")
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=corr)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=corr, device=1)
        corr += 1
    trace = read(b.write(tmp_path / "visible_devices.synthetic.sqlite"))
    assert trace.meta["gpu"] == "NVIDIA A100-SXM4-80GB"
    assert trace.meta["gpus"] == [
        {"id": 1, "name": "NVIDIA A100-SXM4-80GB"},
        {"id": 0, "name": "NVIDIA H100 80GB HBM3"},
    ]


@pytest.mark.parametrize("visible", ['"1"', '"GPU-2222"'])
def test_cuda_visible_devices_of_the_launched_process_maps_its_devices(tmp_path: Path, visible: str) -> None:
    """Exports before TARGET_INFO_CUDA_DEVICE (the real 2024.6 one has none) list every GPU of the box in
    TARGET_INFO_GPU with its ``cuDevice``, and the kernels' ``deviceId`` is the process's own CUDA id. A process
    launched with ``CUDA_VISIBLE_DEVICES=1`` (or the GPU's UUID; META_DATA_CAPTURE records the launch's
    environment, ``PROCESS_0:ENVIRONMENT_VARIABLE``) ran its kernels on the box's GPU 1 as its device 0: that
    device was named after GPU 0 ('NVIDIA A100-SXM4-80GB' for a 'Tesla T4') and given GPU 0's metric samples
    (SMs active 5%, the idle GPU's, for the T4's 80%). The launch environment maps the process's devices."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA A100-SXM4-80GB", cu_device=0)
    b.gpu(1, "Tesla T4", cu_device=1)
    b.rows["TARGET_INFO_GPU"][0]["uuid"] = "GPU-1111"
    b.rows["TARGET_INFO_GPU"][1]["uuid"] = "GPU-2222"
    b.add("META_DATA_CAPTURE", name="PROCESS_0:ENVIRONMENT_VARIABLE", value=f"CUDA_VISIBLE_DEVICES={visible}")
    corr = 1
    for i in range(4):
        t0 = 100 * US + i * 50 * US
        b.nvtx_range(t0, t0 + 40 * US, "iteration")
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=corr)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=corr, device=0)
        corr += 1
    for t in range(90 * US, 300 * US, 10 * US):
        b.gpu_metric(t, "SMs Active [Throughput %]", 5, pw_gpu_id=0)
        b.gpu_metric(t, "SMs Active [Throughput %]", 80, pw_gpu_id=1)
    trace = read(b.write(tmp_path / "visible.synthetic.sqlite"), frames=["ops", "ranges", "gpu_metrics"])
    assert trace.meta["gpu"] == "Tesla T4"
    by_device = (
        trace.gpu_metrics.group_by("device").agg(pl.col("value").mean()).sort("device", nulls_last=True)
    )
    assert by_device.rows() == [(0, 80.0), (None, 5.0)]
