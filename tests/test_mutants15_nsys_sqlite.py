"""Mutation round 15 (helper mutation15): tests that kill surviving mutants of the nsys reader's round-14 code
(:mod:`tracekit.readers.nsys_sqlite`): NVTX ranges begun before the capture, nsys's DIAGNOSTIC_EVENT losses
(:func:`_loss_kind`, :func:`_lost_events`), process 0 as no process (:func:`op_pid`) and the mirror fills of a
missing process (:func:`_with_process_of`).

Every export is SYNTHETIC, hand-built with :class:`tests.nsys_builder.NsysBuilder` in pytest's temporary folder
and named ``*.synthetic.sqlite``; the expected numbers and texts are exact, from the rows written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.nsys_builder import NsysBuilder
from tracekit.readers.nsys_sqlite import _loss_kind, read

US = 1_000
DIAGNOSTIC_DDL = (
    'CREATE TABLE DIAGNOSTIC_EVENT ("timestamp" INTEGER NOT NULL, "timestampType" INTEGER NOT NULL, '
    '"source" INTEGER NOT NULL, "severity" INTEGER NOT NULL, "text" TEXT NOT NULL, "globalPid" INTEGER)'
)


def _gpu_run(b: NsysBuilder, iterations: int = 2, pid: int = 100) -> NsysBuilder:
    """``iterations`` 'iteration' ranges of 40 µs from 100 µs, 50 µs apart, each launching one 20 µs kernel."""
    b.gpu(0, "NVIDIA H100")
    corr = 1
    for i in range(iterations):
        t0 = 100 * US + i * 50 * US
        b.nvtx_range(t0, t0 + 40 * US, "iteration", pid=pid)
        b.runtime(t0 + 1 * US, t0 + 5 * US, "cudaLaunchKernel_v7000", correlation=corr, pid=pid)
        b.kernel(t0 + 6 * US, t0 + 26 * US, "gemm", correlation=corr, pid=pid)
        corr += 1
    return b


def _diagnostics(path: Path, rows: list[tuple[int, object]], ddl: str = DIAGNOSTIC_DDL) -> Path:
    """Add DIAGNOSTIC_EVENT rows (timestamp, text) to ``path``, severity 2, source 1, process 100."""
    con = sqlite3.connect(path)
    try:
        con.execute(ddl)
        if "timestamp" in ddl:
            con.executemany(
                "INSERT INTO DIAGNOSTIC_EVENT VALUES (?, 1, 1, 2, ?, ?)", [(t, x, 100 << 24) for t, x in rows]
            )
        else:
            con.executemany("INSERT INTO DIAGNOSTIC_EVENT VALUES (?)", [(x,) for _, x in rows])
        con.commit()
    finally:
        con.close()
    return path


def _said(trace, word: str) -> list[str]:  # noqa: ANN001
    return [w for w in trace.meta["warnings"] if word in w]


# ------------------------------------------------------------------------ NVTX ranges before the capture


def test_ranges_before_the_capture_are_named_counted_and_said_exactly(tmp_path: Path) -> None:
    """Five ranges begin before the capture (start < 0), in this order: 'zeta' -50..-40 µs, 'alpha' of no
    length at -30 µs, 'zeta' -20..10 µs (still open at 0), 'beta' -10..0 µs (closed exactly at 0: not open
    when it began) and 'omega' -5..30 µs (open at 0). The warning names the first three distinct names in
    order of appearance, counts 5 ranges, 2 of them crossing 0; only the two 'iteration' ranges stay."""
    b = _gpu_run(NsysBuilder())
    b.nvtx_range(-50 * US, -40 * US, "zeta")
    b.nvtx_range(-30 * US, -30 * US, "alpha")
    b.nvtx_range(-20 * US, 10 * US, "zeta")
    b.nvtx_range(-10 * US, 0, "beta")
    b.nvtx_range(-5 * US, 30 * US, "omega")
    trace = read(b.write(tmp_path / "before.synthetic.sqlite"))
    assert trace.ranges.sort("start").select("name", "start").rows() == [
        ("iteration", 100 * US),
        ("iteration", 150 * US),
    ]
    assert _said(trace, "before the capture") == [
        "5 NVTX range(s) began before the capture started ('zeta', 'alpha', 'beta'; start < 0, 2 of them still "
        "open when it began): the trace holds none of their work before the start, so they are left out (no "
        "iteration, no nesting), as nsys 2022.4 itself drops them"
    ]


def test_a_range_before_the_capture_that_never_closed_counts_as_open(tmp_path: Path) -> None:
    """A push at -10 µs never popped (end null) began before the capture and was open when it began."""
    b = _gpu_run(NsysBuilder())
    b.nvtx_range(-10 * US, None, "open")
    trace = read(b.write(tmp_path / "open.synthetic.sqlite"))
    assert trace.ranges.height == 2
    assert _said(trace, "before the capture")[0].startswith(
        "1 NVTX range(s) began before the capture started ('open'; start < 0, 1 of them still open when it "
        "began)"
    )


def test_ranges_that_start_at_or_after_0_are_kept_without_a_word(tmp_path: Path) -> None:
    """A range from exactly 0 (the capture's start) is no range before the capture."""
    b = _gpu_run(NsysBuilder())
    b.nvtx_range(0, 5 * US, "at_zero")
    trace = read(b.write(tmp_path / "at_zero.synthetic.sqlite"))
    assert sorted(trace.ranges.get_column("name").to_list()) == ["at_zero", "iteration", "iteration"]
    assert not _said(trace, "before the capture")


def test_a_range_without_a_start_is_no_range_before_the_capture(tmp_path: Path) -> None:
    """A row without a start (NULL, in an export whose table allows it: a damaged or hand-made one) is not
    said to have begun before the capture (the rule's test is null there, read as no)."""
    b = _gpu_run(NsysBuilder())
    b.nvtx_range(-10 * US, -5 * US, "early")
    path = b.write(tmp_path / "nostart.synthetic.sqlite")
    con = sqlite3.connect(path)
    # (start is NOT NULL in the builder's schema, as in nsys's: the table is copied without the constraint)
    con.execute("CREATE TABLE copy AS SELECT * FROM NVTX_EVENTS")
    con.execute("DROP TABLE NVTX_EVENTS")
    con.execute("ALTER TABLE copy RENAME TO NVTX_EVENTS")
    con.execute(
        'INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, domainId) VALUES (NULL, 5000, 59, '
        "'nostart', ?, 0)",
        ((100 << 24) | 100,),
    )
    con.commit()
    con.close()
    trace = read(path)
    assert _said(trace, "before the capture")[0].startswith(
        "1 NVTX range(s) began before the capture started ('early'; start < 0, 0 of them still open"
    )


# ------------------------------------------------------------------------ nsys's word that it lost events


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("CUPTI dropped 0 records. Some CUPTI events might be missing.", None),
        ("CUPTI dropped 0 records of 3. Some CUPTI events might be missing.", "device"),
        ("Some CUPTI events might be missing.", "device"),
        ("NVPW internal error (0 dropped samples)", None),
        ("NVPW internal error (3 dropped samples)", "gpu_metrics"),
        ("CUPTI dropped 5 sampling records.", None),
        ("Not all NVTX events might have been collected.", "nvtx"),
        ("Trace data will likely be truncated soon.", "all"),
        ("12 GPU events were lost.", "all"),
        ("Profiling has started.", None),
    ],
)
def test_loss_kind(text: str, kind: str | None) -> None:
    """What a diagnostic says was lost: a message whose every number is 0 loses nothing, one with a nonzero
    number or none at all does; PerfWorks' dropped samples are GPU metrics, other sampling losses nothing."""
    assert _loss_kind(text) == kind


def test_lost_events_are_quoted_in_order_counted_and_cut(tmp_path: Path) -> None:
    """Five messages, by first timestamp: an NVTX loss (twice), a CUPTI drop, a long CUPTI message (200
    characters, cut to 157 and '...'), a benign one, a GPU-metric loss and a truncation. The warning quotes
    the first three distinct losses in that order, with the repeat count, says 'and 2 more', then what each
    kind of loss means in the order device, nvtx, gpu_metrics, all; meta keeps every message by kind."""
    long = "CUPTI dropped 7 records. " + "x" * 175
    assert len(long) == 200
    nvtx = "4 NVTX annotations were discarded because they contained at least one invalid string handle."
    rows = [
        (50, "Truncated? no: Profiling has started."),
        (100, nvtx),
        (200, "  CUPTI dropped 12 records.   Some CUPTI events might be missing.  "),
        (300, nvtx),
        (400, long),
        (500, "NVPW internal error (3 dropped samples)"),
        (600, "Trace data will likely be truncated soon."),
    ]
    path = _diagnostics(_gpu_run(NsysBuilder()).write(tmp_path / "lost.synthetic.sqlite"), rows)
    trace = read(path)
    assert trace.meta["lost_events"] == {
        "nvtx": [nvtx],
        "device": ["CUPTI dropped 12 records.   Some CUPTI events might be missing.", long],
        "gpu_metrics": ["NVPW internal error (3 dropped samples)"],
        "all": ["Trace data will likely be truncated soon."],
    }
    cut = long[:157] + "..."
    assert _said(trace, "DIAGNOSTIC_EVENT") == [
        f"nsys says it lost events during this capture (DIAGNOSTIC_EVENT: {nvtx!r} (2 times); 'CUPTI dropped "
        f"12 records. Some CUPTI events might be missing.'; {cut!r}; and 2 more): CUDA activity (kernels, "
        "copies) may be missing: GPU busy is a lower bound, and a framework-bound verdict may come from work "
        "the trace lacks; NVTX ranges may be missing: iterations or operators may be lost; GPU metric samples "
        "may be missing: the metrics (SMs active, occupancy) cover less time; events of any kind may be missing "
        "from the trace"
    ]


def test_a_message_of_exactly_160_characters_is_quoted_whole(tmp_path: Path) -> None:
    """The quote keeps 160 characters as they are; one character more is cut to 157 and '...'."""
    whole = "CUPTI dropped 9 records. " + "y" * 135
    longer = "CUPTI dropped 8 records. " + "z" * 136
    assert (len(whole), len(longer)) == (160, 161)
    path = _gpu_run(NsysBuilder()).write(tmp_path / "edge.synthetic.sqlite")
    trace = read(_diagnostics(path, [(1, whole), (2, longer)]))
    assert _said(trace, "DIAGNOSTIC_EVENT")[0].startswith(
        f"nsys says it lost events during this capture (DIAGNOSTIC_EVENT: {whole!r}; {longer[:157] + '...'!r}): "
        "CUDA activity (kernels, copies) may be missing"
    )


def test_three_messages_are_all_quoted_without_more(tmp_path: Path) -> None:
    """Exactly three distinct losses: all quoted, no 'and N more', each said once (no count)."""
    texts = [f"CUPTI dropped {n} records." for n in (1, 2, 3)]
    path = _gpu_run(NsysBuilder()).write(tmp_path / "three.synthetic.sqlite")
    trace = read(_diagnostics(path, [(i, t) for i, t in enumerate(texts)]))
    assert _said(trace, "DIAGNOSTIC_EVENT") == [
        "nsys says it lost events during this capture (DIAGNOSTIC_EVENT: 'CUPTI dropped 1 records.'; 'CUPTI "
        "dropped 2 records.'; 'CUPTI dropped 3 records.'): CUDA activity (kernels, copies) may be missing: GPU "
        "busy is a lower bound, and a framework-bound verdict may come from work the trace lacks"
    ]


def test_messages_are_ordered_by_their_first_timestamp_not_their_rows(tmp_path: Path) -> None:
    """Rows written late first: the message first in time is quoted first."""
    path = _gpu_run(NsysBuilder()).write(tmp_path / "order.synthetic.sqlite")
    trace = read(_diagnostics(path, [(900, "CUPTI dropped 2 records."), (100, "CUPTI dropped 1 records.")]))
    assert trace.meta["lost_events"] == {"device": ["CUPTI dropped 1 records.", "CUPTI dropped 2 records."]}


def test_a_table_without_timestamps_is_read_in_row_order(tmp_path: Path) -> None:
    """A DIAGNOSTIC_EVENT of a ``text`` column alone (an export that drops the rest) is read in row order."""
    path = _gpu_run(NsysBuilder()).write(tmp_path / "notime.synthetic.sqlite")
    ddl = 'CREATE TABLE DIAGNOSTIC_EVENT ("text" TEXT NOT NULL)'
    trace = read(_diagnostics(path, [(0, "CUPTI dropped 2 records."), (0, "CUPTI dropped 1 records.")], ddl))
    assert trace.meta["lost_events"] == {"device": ["CUPTI dropped 2 records.", "CUPTI dropped 1 records."]}


def test_a_diagnostic_id_missing_from_stringids_and_a_blob_are_skipped(tmp_path: Path) -> None:
    """A ``text`` that is an id StringIds lacks, or bytes, is no message; a real id beside them is read."""
    b = _gpu_run(NsysBuilder())
    sid = b.string("CUPTI dropped 77 records.")
    path = b.write(tmp_path / "ids.synthetic.sqlite")
    con = sqlite3.connect(path)
    con.execute(DIAGNOSTIC_DDL.replace('"text" TEXT NOT NULL', '"text" NOT NULL'))
    rows = [(1, 9999), (2, b"CUPTI dropped 5 records."), (3, sid), (4, 9998)]
    con.executemany("INSERT INTO DIAGNOSTIC_EVENT VALUES (?, 1, 1, 2, ?, 0)", rows)
    con.commit()
    con.close()
    trace = read(path)
    assert trace.meta["lost_events"] == {"device": ["CUPTI dropped 77 records."]}
    assert "(DIAGNOSTIC_EVENT: 'CUPTI dropped 77 records.'):" in _said(trace, "DIAGNOSTIC_EVENT")[0]


def test_an_empty_diagnostic_table_or_one_without_text_says_nothing(tmp_path: Path) -> None:
    for ddl in (DIAGNOSTIC_DDL, 'CREATE TABLE DIAGNOSTIC_EVENT ("timestamp" INTEGER, "message" TEXT)'):
        path = _gpu_run(NsysBuilder()).write(tmp_path / f"empty{len(ddl)}.synthetic.sqlite")
        con = sqlite3.connect(path)
        con.execute(ddl)
        if "message" in ddl:
            con.execute("INSERT INTO DIAGNOSTIC_EVENT VALUES (1, 'CUPTI dropped 5 records.')")
        con.commit()
        con.close()
        trace = read(path)
        assert "lost_events" not in trace.meta
        assert not _said(trace, "DIAGNOSTIC_EVENT")


# ------------------------------------------------------------------------ a missing process


def test_ops_without_a_process_beside_calls_of_one_process_say_it_exactly(tmp_path: Path) -> None:
    b = _gpu_run(NsysBuilder())
    for row in b.rows["CUPTI_ACTIVITY_KIND_KERNEL"]:
        row["globalPid"] = None
    trace = read(b.write(tmp_path / "ops_null.synthetic.sqlite"))
    assert trace.ops.get_column("pid").to_list() == [100, 100]
    assert _said(trace, "no process id") == [
        "2 device ops have no process id (globalPid null): the trace's CUDA API calls all come from process "
        "100, so they are read as launched by it"
    ]


def test_calls_without_a_process_beside_ops_of_one_process_say_it_exactly(tmp_path: Path) -> None:
    b = _gpu_run(NsysBuilder())
    for row in b.rows["CUPTI_ACTIVITY_KIND_RUNTIME"]:
        row["globalTid"] = 0  # nsys 2021.x's default: process 0, no application's
    trace = read(b.write(tmp_path / "calls_zero.synthetic.sqlite"))
    assert trace.api.get_column("pid").to_list() == [100, 100]
    assert _said(trace, "no process id") == [
        "2 CUDA API calls have no process id (globalTid null or missing): the trace's device ops all come from "
        "process 100, so they are read as its calls"
    ]


def test_ops_without_a_process_beside_calls_of_two_processes_stay_unlinked(tmp_path: Path) -> None:
    """Calls of processes 100 and 200, kernels without a process: which process launched them is not
    known, so they keep no process, and the warning says why."""
    b = _gpu_run(NsysBuilder())
    b.runtime(400 * US, 401 * US, "cudaLaunchKernel_v7000", correlation=9, pid=200)
    for row in b.rows["CUPTI_ACTIVITY_KIND_KERNEL"]:
        row["globalPid"] = 0
    trace = read(b.write(tmp_path / "two.synthetic.sqlite"))
    assert trace.ops.get_column("pid").to_list() == [None, None]
    assert _said(trace, "no process id") == [
        "2 device ops have no process id (globalPid null) and the trace's CUDA API calls come from 2 processes: "
        "they cannot be linked to the calls that launched them"
    ]


def test_calls_without_a_process_beside_ops_of_two_processes_stay_without_one(tmp_path: Path) -> None:
    b = _gpu_run(NsysBuilder())
    b.kernel(400 * US, 401 * US, "other", correlation=9, pid=200)
    for row in b.rows["CUPTI_ACTIVITY_KIND_RUNTIME"]:
        row["globalTid"] = None
    trace = read(b.write(tmp_path / "two_calls.synthetic.sqlite"))
    assert trace.api.get_column("pid").to_list() == [None, None]
    assert _said(trace, "no process id") == [
        "2 CUDA API calls have no process id (globalTid null or missing) and the trace's device ops come from 2 "
        "processes: they cannot be linked to the work they launched"
    ]


def test_a_process_whose_id_is_a_multiple_of_2_to_the_24_is_not_process_0(tmp_path: Path) -> None:
    """Only the process id bits (24-47) being 0 is process 0: a globalPid with vm bits set but pid 100 reads
    as 100, and one whose pid bits are 0 but whose vm bits are set reads as no process."""
    b = _gpu_run(NsysBuilder())
    rows = b.rows["CUPTI_ACTIVITY_KIND_KERNEL"]
    rows[0]["globalPid"] = (1 << 56) | (100 << 24)
    rows[1]["globalPid"] = 1 << 56
    trace = read(b.write(tmp_path / "vm.synthetic.sqlite"))
    assert trace.ops.get_column("pid").to_list() == [100, 100]
    assert _said(trace, "no process id") == [
        "1 device ops have no process id (globalPid null): the trace's CUDA API calls all come from process "
        "100, so they are read as launched by it"
    ]


# ------------------------------------------------------------------------ nsys 2021.x's empty texts


def test_an_empty_text_takes_a_registered_name_but_not_string_0(tmp_path: Path) -> None:
    """Ranges by text and textId: '' beside registered 'iteration' reads 'iteration'; '' beside id 0 (nsys's
    own first string, here '[Unknown]') stays ''; 'own' beside a registered string keeps its own text; no text
    (null) beside a registered string reads it; '' beside an id StringIds lacks stays ''."""
    b = NsysBuilder(version="2021.5.1.77", meta_table="EXPORT_META_DATA")
    sid = b.string("iteration")
    gtid = (100 << 24) | 100
    for i, (text, text_id) in enumerate([("", sid), ("", 0), ("own", sid), (None, sid), ("", 999)]):
        t0 = 100 * US + i * 50 * US
        b.add("NVTX_EVENTS", start=t0, end=t0 + 40 * US, eventType=59, text=text, textId=text_id,
              globalTid=gtid, domainId=0)  # fmt: skip
    path = b.write(tmp_path / "texts.synthetic.sqlite")
    con = sqlite3.connect(path)
    con.execute("INSERT INTO StringIds VALUES (0, '[Unknown]')")
    con.commit()
    con.close()
    trace = read(path)
    assert trace.ranges.sort("start").get_column("name").to_list() == [
        "iteration",
        "",
        "own",
        "iteration",
        "",
    ]


def test_ranges_before_a_cuda_profiler_start_are_said_with_that_start(tmp_path: Path) -> None:
    """nsys says cudaProfilerStart began the capture at 10 µs: 'early' 5..8 µs and 'edge' 6..10 µs (closed
    exactly at the start) began before it, 'cross' 8..20 µs too, still open then; 'at' from 10 µs did not."""
    b = _gpu_run(NsysBuilder())
    b.nvtx_range(5 * US, 8 * US, "early")
    b.nvtx_range(6 * US, 10 * US, "edge")
    b.nvtx_range(8 * US, 20 * US, "cross")
    b.nvtx_range(10 * US, 12 * US, "at")
    path = b.write(tmp_path / "profiler_start.synthetic.sqlite")
    text = "Profiling started due to cudaProfilerStart API invoked in the application."
    trace = read(_diagnostics(path, [(0, "Profiling has started."), (10 * US, text)]))
    assert sorted(trace.ranges.get_column("name").to_list()) == ["at", "iteration", "iteration"]
    assert _said(trace, "before the capture")[0].startswith(
        "3 NVTX range(s) began before the capture started ('early', 'edge', 'cross'; start < 10000 ns, when "
        "cudaProfilerStart began it, 1 of them still open when it began): the trace holds none of their work"
    )


def test_one_message_written_with_and_without_spaces_is_counted_once(tmp_path: Path) -> None:
    """'CUPTI dropped 5 records.' and the same with spaces around it are one message (stripped), said twice."""
    path = _gpu_run(NsysBuilder()).write(tmp_path / "spaces.synthetic.sqlite")
    trace = read(_diagnostics(path, [(1, "CUPTI dropped 5 records."), (2, "  CUPTI dropped 5 records.  ")]))
    assert trace.meta["lost_events"] == {"device": ["CUPTI dropped 5 records."]}
    assert "(DIAGNOSTIC_EVENT: 'CUPTI dropped 5 records.' (2 times)):" in _said(trace, "DIAGNOSTIC_EVENT")[0]
