"""Behaviours of the Nsight Systems SQLite reader that mutation testing (issue 33) found unpinned.

Each test pins one observable behaviour of :mod:`tracekit.readers.nsys_sqlite` (frames, warnings, error
messages, progress steps, what a partial read selects) on small synthetic exports hand-built with
:class:`tests.nsys_builder.NsysBuilder`; none of them is a real trace.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tests.nsys_builder import NsysBuilder
from tracekit import progress
from tracekit.errors import TraceFormatError
from tracekit.readers import sqlite_engine
from tracekit.readers.nsys_sqlite import SIDE_BY_SIDE_MAX_ROWS, read


def rows(frame: pl.DataFrame, *cols: str) -> list[tuple]:
    return [tuple(r) for r in frame.select(cols).iter_rows()]


def _launches(b: NsysBuilder) -> NsysBuilder:
    """Two runtime launches and one driver launch (eventClass 1), each with its kernel, one memcpy and one
    memset: the synthetic GPU export most tests below start from."""
    b.runtime(100, 150, "cudaLaunchKernel_v7000", correlation=1, pid=42, tid=43)
    b.driver(200, 230, "cuLaunchKernel", correlation=2, pid=42, tid=43)
    b.runtime(300, 320, "cudaMemcpyAsync_v3020", correlation=3, pid=42, tid=43)
    b.kernel(160, 190, "gemm", correlation=1, pid=42, stream=13)
    b.kernel(240, 290, "relu", correlation=2, pid=42, stream=13)
    b.memcpy(330, 340, copy_kind=1, correlation=3, pid=42, stream=14)
    b.memset(350, 360, correlation=None, pid=42, stream=14)
    return b


# ---------------------------------------------------------------------------------------- partial reads


def test_partial_read_of_api_kinds_tells_driver_from_runtime_calls(tmp_path: Path) -> None:
    """A read that asks for the API calls' ``kind`` (and not their names) gets it: "driver" for eventClass 1
    rows, "runtime" for the others, not null."""
    path = _launches(NsysBuilder()).write(tmp_path / "partial_api.synthetic.sqlite")
    trace = read(path, frames={"ops": ["start", "end"], "api": ["start", "end", "kind"]})
    assert rows(trace.api, "start", "end", "kind", "name") == [
        (100, 150, "runtime", None),
        (200, 230, "driver", None),
        (300, 320, "runtime", None),
    ]


def test_partial_read_of_op_kinds_keeps_every_op_timed(tmp_path: Path) -> None:
    """``start`` and ``end`` of the ops are always read (the device's busy time needs them), also when a
    read asks for neither: the frame holds the real times, not nulls."""
    path = _launches(NsysBuilder()).write(tmp_path / "partial_ops.synthetic.sqlite")
    trace = read(path, frames={"ops": ["kind"]})
    assert rows(trace.ops, "start", "end", "kind", "name", "stream") == [
        (160, 190, "kernel", None, None),
        (240, 290, "kernel", None, None),
        (330, 340, "memcpy", None, None),
        (350, 360, "memset", None, None),
    ]


def test_partial_read_selects_only_the_columns_it_needs(tmp_path: Path, monkeypatch) -> None:
    """The cost a partial read saves: the SQL of each activity table selects only the asked-for columns and
    those the reader always needs (times, device; the kernel name ids only when names are asked for: on a
    large trace a whole column of ids is memory and time that analyze does not need to spend)."""
    path = _launches(NsysBuilder()).write(tmp_path / "partial_sql.synthetic.sqlite")
    selected: dict[str, list[str]] = {}
    numeric_frame = sqlite_engine.Database.numeric_frame

    def recording(self, table, exprs, schema, where=""):
        selected[table] = list(exprs)
        return numeric_frame(self, table, exprs, schema, where)

    monkeypatch.setattr(sqlite_engine.Database, "numeric_frame", recording)
    read(path, frames={"ops": ["start", "end", "kind"]})
    assert selected == {
        "CUPTI_ACTIVITY_KIND_KERNEL": ["start", "end", "device"],
        "CUPTI_ACTIVITY_KIND_MEMCPY": ["start", "end", "device", "copy_kind"],
        "CUPTI_ACTIVITY_KIND_MEMSET": ["start", "end", "device", "copy_kind"],
    }
    selected.clear()
    read(path, frames={"ops": ["name"]})
    assert selected["CUPTI_ACTIVITY_KIND_KERNEL"] == ["start", "end", "device", "name_id"]


def test_partial_read_of_graph_executions_keeps_their_end(tmp_path: Path) -> None:
    """Whole-graph executions in a partial read that asks for neither ``start`` nor ``end``: both are read
    (the device's busy time needs them), so each graph keeps its real end, not null."""
    b = NsysBuilder()
    b.runtime(100, 150, "cudaGraphLaunch_v10000", correlation=1)
    b.graph_execution(200, 800, graph=5, correlation=1)
    trace = read(b.write(tmp_path / "partial_graphs.synthetic.sqlite"), frames={"ops": ["kind"]})
    assert rows(trace.ops, "start", "end", "kind", "graph") == [(200, 800, "graph", None)]


def test_whole_graph_executions_warning_says_what_is_not_seen(tmp_path: Path) -> None:
    """The warning of a trace whose CUDA graphs were traced whole, word for word: how many, why, what the
    numbers then miss and how to profile instead."""
    b = NsysBuilder()
    b.runtime(100, 150, "cudaGraphLaunch_v10000", correlation=1)
    b.graph_execution(200, 800, graph=5, correlation=1)
    b.graph_execution(900, 1500, graph=5, correlation=1)
    trace = read(b.write(tmp_path / "graphs.synthetic.sqlite"))
    assert rows(trace.ops, "start", "end", "kind", "name", "graph") == [
        (200, 800, "graph", "CUDA graph 5", 5),
        (900, 1500, "graph", "CUDA graph 5", 5),
    ]
    assert trace.warnings == [
        "2 CUDA graph executions were traced whole (nsys --cuda-graph-trace=graph, the default with CUDA "
        "11.7+): each counts as GPU busy from its first node's start to its last node's end, the idle time "
        "between its kernels is not seen and its kernels are not counted; profile with "
        "--cuda-graph-trace=node for kernel-level numbers"
    ]


# ----------------------------------------------------------------------------------------- API tables


def test_rows_of_a_driver_table_are_driver_calls(tmp_path: Path) -> None:
    """An export with a separate ``CUPTI_ACTIVITY_KIND_DRIVER`` table (moved there from the RUNTIME table
    here, same columns): its rows are API calls of kind "driver", the RUNTIME rows "runtime"."""
    b = NsysBuilder()
    b.runtime(100, 150, "cudaLaunchKernel_v7000", correlation=1)
    b.driver(200, 230, "cuLaunchKernel", correlation=2)
    b.kernel(160, 190, "gemm", correlation=1)
    b.kernel(240, 290, "relu", correlation=2)
    path = b.write(tmp_path / "driver_table.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute(
            'CREATE TABLE "CUPTI_ACTIVITY_KIND_DRIVER" AS SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME '
            "WHERE eventClass = 1"
        )
        con.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_DRIVER SET eventClass = 0"
        )  # the table says it, not the class
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 1")
    con.close()
    trace = read(path)
    assert rows(trace.api, "start", "end", "pid", "thread", "correlation", "kind", "name") == [
        (100, 150, 100, 100, 1, "runtime", "cudaLaunchKernel"),
        (200, 230, 100, 100, 2, "driver", "cuLaunchKernel"),
    ]


# ---------------------------------------------------------------------------------------------- names


def test_memcpy_of_a_copy_kind_nsys_does_not_name_is_a_plain_memcpy(tmp_path: Path) -> None:
    """A ``copyKind`` outside ENUM_CUDA_MEMCPY_OPER (a newer CUPTI's kind) gives "[CUDA memcpy]", not an
    error; kind 0 is nsys's own "Unknown"."""
    b = NsysBuilder()
    b.memcpy(100, 200, copy_kind=0)
    b.memcpy(300, 400, copy_kind=8)
    b.memcpy(500, 600, copy_kind=99)
    trace = read(b.write(tmp_path / "copy_kinds.synthetic.sqlite"))
    assert rows(trace.ops, "start", "kind", "name") == [
        (100, "memcpy", "[CUDA memcpy Unknown]"),
        (300, "memcpy", "[CUDA memcpy DtoD]"),
        (500, "memcpy", "[CUDA memcpy]"),
    ]


def test_a_graph_execution_without_a_graph_id_is_named_cuda_graph(tmp_path: Path) -> None:
    """A whole-graph execution whose ``graphId`` is null: named plain "CUDA graph" (no id to add), graph
    null; one with an id is "CUDA graph <id>"."""
    b = NsysBuilder()
    b.runtime(100, 150, "cudaGraphLaunch_v10000", correlation=1)
    b.graph_execution(200, 800, graph=None, correlation=1)  # type: ignore[arg-type]
    b.graph_execution(900, 1500, graph=7, correlation=1)
    trace = read(b.write(tmp_path / "graph_null_id.synthetic.sqlite"))
    assert rows(trace.ops, "start", "kind", "name", "graph") == [
        (200, "graph", "CUDA graph", None),
        (900, "graph", "CUDA graph 7", 7),
    ]


def test_kernel_names_come_from_a_column_called_name(tmp_path: Path) -> None:
    """A kernel table whose only name column is ``name`` (no demangledName, shortName or mangledName): the
    kernels are named from it (ids into StringIds), not rejected as nameless."""
    kernel = "CUPTI_ACTIVITY_KIND_KERNEL"
    b = NsysBuilder(drop_columns={kernel: ["demangledName", "shortName", "mangledName"]})
    b.runtime(100, 150, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(160, 190, "gemm", correlation=1)
    path = b.write(tmp_path / "kernel_name_column.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute(f'ALTER TABLE "{kernel}" ADD COLUMN "name" INTEGER')
        con.execute(f"UPDATE \"{kernel}\" SET name = (SELECT id FROM StringIds WHERE value = 'gemm')")
    con.close()
    trace = read(path)
    assert rows(trace.ops, "start", "end", "kind", "name") == [(160, 190, "kernel", "gemm")]
    assert trace.warnings == []


def test_string_ids_not_numbered_from_zero_name_each_id_by_its_own_string(tmp_path: Path) -> None:
    """A StringIds that is not numbered 0..n-1 (hand-edited: a negative id -1 before ids 1..n, so n+1 rows
    whose largest id is n): each id still maps to its own string. A kernel naming id -1 is named by it; a
    kernel naming id 0, which the table lacks, has no name (with the missing-id warning), not the string of
    the table's first row."""
    b = NsysBuilder()
    b.kernel(100, 200, "gemm")
    b.kernel(300, 400, "relu")
    b.kernel(500, 600, "softmax")
    path = b.write(tmp_path / "negative_string_id.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute("INSERT INTO StringIds (id, value) VALUES (-1, 'negative')")
        con.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "demangledName" = -1 WHERE start = 300')
        con.execute(
            'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "demangledName" = 0, "shortName" = 0 WHERE start = 500'
        )
    con.close()
    trace = read(path)
    assert rows(trace.ops, "start", "name") == [(100, "gemm"), (300, "negative"), (500, None)]
    assert trace.warnings == ["1 kernels have a name id missing from StringIds"]


# ----------------------------------------------------------------------------------------------- NVTX


def test_a_domain_created_twice_in_a_process_names_its_ranges_once(tmp_path: Path) -> None:
    """Two domain-create rows (eventType 75) for one (process, domain id) with different names (a domain
    destroyed and created again): each range stays one range, named by the last creation; the same id in
    another process is another domain."""
    b = NsysBuilder()
    b.nvtx_domain(1, 4, "first")
    b.nvtx_domain(2, 4, "second")
    b.nvtx_domain(3, 4, "elsewhere", pid=200, tid=200)
    b.nvtx_range(10, 20, "a", domain=4)
    b.nvtx_range(30, 40, "b", domain=4, pid=200, tid=200)
    b.nvtx_range(50, 60, "c", domain=5)  # never created: its id
    trace = read(b.write(tmp_path / "domains.synthetic.sqlite"))
    assert rows(trace.ranges, "start", "end", "pid", "name", "domain") == [
        (10, 20, 100, "a", "second"),
        (30, 40, 200, "b", "elsewhere"),
        (50, 60, 100, "c", "5"),
    ]


def test_a_cpu_only_export_closes_an_unclosed_range_at_its_last_timestamp(tmp_path: Path) -> None:
    """An export with no CUDA table at all (``nsys -t nvtx``) and a push never popped: the range keeps a null
    end, and the warning names the latest timestamp of the file (here another thread's range end, 1200 ns),
    to which the nesting counts it open; the leaf
    ranges below the top level are the CPU trace's operators, and a GPU the machine has is listed in
    ``meta["gpus"]`` but not named as the trace's ``gpu`` (it ran nothing)."""
    b = NsysBuilder(version="2022.4.2.1", meta_table="EXPORT_META_DATA")
    b.gpu(0, "Quadro RTX 8000")  # in the machine, unused by the process: listed, not named its GPU
    b.nvtx_range(0, 900, "iteration")
    b.nvtx_range(10, 500, "aten::linear")
    b.nvtx_range(1000, None, "never_popped")
    b.nvtx_range(1100, 1200, "worker", tid=101)
    trace = read(b.write(tmp_path / "cpu_unclosed.synthetic.sqlite"))
    assert rows(trace.ranges, "start", "end", "thread", "depth", "name") == [
        (0, 900, 100, 0, "iteration"),
        (10, 500, 100, 1, "aten::linear"),
        (1000, None, 100, 0, "never_popped"),
        (1100, 1200, 101, 0, "worker"),
    ]
    assert trace.warnings == [
        "1 NVTX range(s) never closed (the capture ended inside them, at 1200 ns): they have no end time, so "
        "none of them is an iteration; ranges they enclose count them open to the trace end"
    ]
    assert trace.meta["device"] == "cpu"
    assert trace.meta["gpus"] == [{"id": 0, "name": "Quadro RTX 8000"}] and "gpu" not in trace.meta
    assert rows(trace.ops, "start", "end", "kind", "name") == [(10, 500, "operator", "aten::linear")]


def test_an_unclosed_range_ends_at_the_last_api_call_in_full_and_partial_reads(tmp_path: Path) -> None:
    """The trace end up to which a never-popped range counts as open (for the nesting; its own end stays
    null) counts the API calls, also in a read that does not
    ask for them (they are then read for their times only and not returned); a full read keeps every API
    column of its calls."""
    b = NsysBuilder()
    b.nvtx_range(0, 500, "iteration")
    b.nvtx_range(600, None, "iteration")
    b.runtime(610, 620, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(630, 700, "gemm", correlation=1)
    b.runtime(710, 2000, "cudaDeviceSynchronize_v3020", correlation=2)  # the file's latest timestamp
    path = b.write(tmp_path / "unclosed_api.synthetic.sqlite")
    full = read(path)
    assert rows(full.ranges, "start", "end", "name") == [(0, 500, "iteration"), (600, None, "iteration")]
    assert rows(full.api, "start", "end", "kind", "name") == [
        (610, 620, "runtime", "cudaLaunchKernel"),
        (710, 2000, "runtime", "cudaDeviceSynchronize"),
    ]
    assert full.warnings == [
        "1 NVTX range(s) never closed (the capture ended inside them, at 2000 ns): they have no end time, so "
        "none of them is an iteration; ranges they enclose count them open to the trace end"
    ]
    part = read(path, frames={"ops": None, "ranges": None})
    assert rows(part.ranges, "start", "end", "name") == [(0, 500, "iteration"), (600, None, "iteration")]
    assert part.api.height == 0
    assert part.warnings == full.warnings


def test_a_range_the_capture_ended_inside_is_no_iteration(tmp_path: Path) -> None:
    """Three 'iteration' ranges of 500 ns, the third never closed (the capture stopped inside it) and the
    file's latest timestamp 1 ms later: two iterations of 500 ns. Closed at the trace end, the third had
    been an iteration of ~1 ms, and the mean latency three times the real one."""
    from tracekit.session import analyze_trace

    b = NsysBuilder()
    for k in range(3):
        t = 1000 * k
        b.nvtx_range(t, None if k == 2 else t + 500, "iteration")
        b.runtime(t + 10, t + 20, "cudaLaunchKernel_v7000", correlation=k + 1)
        b.kernel(t + 30, t + 300, "gemm", correlation=k + 1)
        b.runtime(t + 310, t + 490, "cudaDeviceSynchronize_v3020", correlation=10 + k)
    b.runtime(1_002_000, 1_003_000, "cudaFree_v3020", correlation=99)
    analysis = analyze_trace(read(b.write(tmp_path / "capture_ended.synthetic.sqlite")))
    assert analysis.iterations.get_column("latency_ms").to_list() == [0.0005, 0.0005]
    assert any(
        w.startswith("1 NVTX range(s) never closed (the capture ended inside them") for w in analysis.warnings
    )


# --------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("CUPTI_ACTIVITY_KIND_KERNEL", "end"),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", "end"),
        ("CUPTI_ACTIVITY_KIND_MEMSET", "start"),
        ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "end"),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId"),
        ("NVTX_EVENTS", "eventType"),
    ],
)
def test_a_table_without_a_required_column_is_an_error_naming_the_file(
    tmp_path: Path, table: str, column: str
) -> None:
    """A table that lacks a column the reader cannot do without is a one-line error that names the file,
    the table and the column (the CLI prints it and exits with 2)."""
    b = NsysBuilder(drop_columns={table: [column]})
    _launches(b)
    b.graph_execution(400, 500, graph=3, correlation=9)
    b.nvtx_range(0, 1000, "iteration")
    path = b.write(tmp_path / "no_column.synthetic.sqlite")
    with pytest.raises(TraceFormatError) as caught:
        read(path)
    assert str(caught.value) == f"{path}: {table} lacks required column(s) {column}"
    assert caught.value.exit_code == 2


def test_an_api_table_error_of_a_large_trace_names_the_file(tmp_path: Path) -> None:
    """A trace whose kernel table spans more than SIDE_BY_SIDE_MAX_ROWS rowids is read one table after the
    other, not side by side: its API table's format error still names the file (here a RUNTIME table
    without ``nameId``; two kernels, the second at rowid SIDE_BY_SIDE_MAX_ROWS + 1, so that the row
    estimate, the rowid span, is over the limit)."""
    runtime = "CUPTI_ACTIVITY_KIND_RUNTIME"
    b = NsysBuilder(drop_columns={runtime: ["nameId"]})
    b.runtime(100, 150, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(160, 190, "gemm", correlation=1)
    b.kernel(200, 230, "relu")
    path = b.write(tmp_path / "large_api_error.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET rowid = ? WHERE start = 200", (SIDE_BY_SIDE_MAX_ROWS + 1,)
        )
    con.close()
    with pytest.raises(TraceFormatError) as caught:
        read(path)
    assert str(caught.value) == f"{path}: {runtime} lacks required column(s) nameId"


def test_a_string_table_that_gives_one_id_two_names_is_an_error(tmp_path: Path) -> None:
    """StringIds with an id repeated (nsys's ``id`` is a primary key, so not an export as written): an error
    naming the file, not a trace. Read as it was, each row naming the id came once per string: one kernel
    "gemm" became two ops, "gemm" and "gemm again", and the kernel count doubled without a warning."""
    b = NsysBuilder()
    b.runtime(100, 150, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(160, 190, "gemm", correlation=1)
    path = b.write(tmp_path / "repeated_ids.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute("ALTER TABLE StringIds RENAME TO old")
        con.execute('CREATE TABLE StringIds ("id" INTEGER NOT NULL, "value" TEXT NOT NULL)')
        con.execute("INSERT INTO StringIds SELECT id, value FROM old")
        con.execute("INSERT INTO StringIds SELECT id, value || ' again' FROM old WHERE value = 'gemm'")
        con.execute("DROP TABLE old")
    con.close()
    with pytest.raises(TraceFormatError) as caught:
        read(path)
    assert str(caught.value) == (  # "gemm" is id 2: the launch's name came first
        f"{path}: StringIds repeats 1 id(s) (first: 2): the names they stand for are ambiguous (an nsys "
        "export's ids are unique)"
    )


# ------------------------------------------------------------------------------------------- progress


def _progress_reports(monkeypatch) -> list[tuple[str, float | None]]:
    """The (stage, fraction) rows a read reports, as on a terminal with a progress display (appended to)."""
    reported: list[tuple[str, float | None]] = []
    monkeypatch.setattr(progress, "active", lambda: True)
    monkeypatch.setattr(progress, "report", lambda stage, fraction=None: reported.append((stage, fraction)))
    return reported


def test_progress_names_each_table_read_in_order(tmp_path: Path, monkeypatch) -> None:
    """On a progress display, a read reports each table it reads, with its rows, the bar at the share of
    the planned tables begun, then "normalizing" at 100%: GPU_METRICS included when metrics are read."""
    b = _launches(NsysBuilder())
    b.nvtx_range(0, 1000, "iteration")
    b.gpu(0, "NVIDIA H100")
    b.gpu_metric(500, "SMs Active [Throughput %]", 50)
    path = b.write(tmp_path / "progress.synthetic.sqlite")
    reported = _progress_reports(monkeypatch)
    monkeypatch.setattr(sqlite_engine, "read_threads", lambda: 1)  # one table after the other: a fixed order
    read(path)
    assert reported == [
        ("StringIds (5 rows)", 0.0),  # gemm, relu and the three API names
        ("KERNEL (2 rows)", 1 / 7),
        ("MEMCPY (1 rows)", 2 / 7),
        ("MEMSET (1 rows)", 3 / 7),
        ("RUNTIME (3 rows)", 4 / 7),
        ("NVTX_EVENTS (1 rows)", 5 / 7),
        ("GPU_METRICS (1 rows)", 6 / 7),
        ("normalizing", 1.0),
    ]


def test_progress_stays_at_most_full_when_an_unclosed_range_reads_unplanned_tables(
    tmp_path: Path, monkeypatch
) -> None:
    """A read that asks for no API calls nor GPU metrics plans 3 tables (StringIds, KERNEL, NVTX_EVENTS); a
    range never closed makes it read RUNTIME and GPU_METRICS too (for the trace end): those steps are
    reported with the bar full (1.0), never past it (GPU_METRICS is the 5th step of 3 planned)."""
    b = NsysBuilder()
    b.runtime(100, 150, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(160, 190, "gemm", correlation=1)
    b.nvtx_range(0, None, "iteration")
    b.gpu(0, "NVIDIA H100")
    b.gpu_metric(500, "SMs Active [Throughput %]", 50)
    path = b.write(tmp_path / "progress_unclosed.synthetic.sqlite")
    reported = _progress_reports(monkeypatch)
    trace = read(path, frames={"ops": None, "ranges": None})
    assert reported == [
        ("StringIds (2 rows)", 0.0),  # the launch's name and gemm
        ("KERNEL (1 rows)", 1 / 3),
        ("NVTX_EVENTS (1 rows)", 2 / 3),
        ("RUNTIME (1 rows)", 1.0),
        ("GPU_METRICS (1 rows)", 1.0),
        ("normalizing", 1.0),
    ]
    assert rows(trace.ranges, "start", "end", "name") == [(0, None, "iteration")]


# ------------------------------------------------------------------------- third sample (seed 35)


def test_a_file_that_is_not_sqlite_is_an_error_saying_an_nsys_export_was_expected(tmp_path: Path) -> None:
    """A file that is not SQLite at all (here synthetic JSON text) is a one-line error naming the file and
    what it should have been: an Nsight Systems SQLite export."""
    path = tmp_path / "not_sqlite.synthetic.sqlite"
    path.write_text('{"traceEvents": []}\n')
    with pytest.raises(TraceFormatError) as caught:
        read(path)
    assert str(caught.value) == f"{path}: not an SQLite database (expected an Nsight Systems SQLite export)"
    assert caught.value.exit_code == 2


def test_a_kernel_table_without_a_name_column_is_an_error_naming_the_file(tmp_path: Path) -> None:
    """A kernel table with none of demangledName, shortName, mangledName or name cannot name its kernels:
    a one-line error that names the file and the table."""
    kernels = "CUPTI_ACTIVITY_KIND_KERNEL"
    b = NsysBuilder(drop_columns={kernels: ["demangledName", "shortName", "mangledName"]})
    path = _launches(b).write(tmp_path / "nameless_kernels.synthetic.sqlite")
    with pytest.raises(TraceFormatError) as caught:
        read(path)
    assert str(caught.value) == f"{path}: {kernels} has no kernel name column (demangledName/shortName)"
    assert caught.value.exit_code == 2


def test_a_range_and_its_domain_without_a_thread_id_are_one_process(tmp_path: Path) -> None:
    """NVTX rows whose globalTid is NULL (no process known): a range of domain 4 takes the name of the
    domain created by another NULL-globalTid row (the same unknown process: the (pid, domain) join matches
    null to null), not the bare id "4"; a range of a known process with domain 4 stays unnamed ("4")."""
    b = NsysBuilder()
    b.nvtx_domain(1, 4, "anonymous")
    b.nvtx_range(10, 20, "a", domain=4)
    b.nvtx_range(30, 40, "b", domain=4, pid=200, tid=200)
    path = b.write(tmp_path / "null_tid_domain.synthetic.sqlite")
    with sqlite3.connect(path) as con:
        con.execute("UPDATE NVTX_EVENTS SET globalTid = NULL WHERE start IN (1, 10)")
    con.close()
    trace = read(path)
    assert rows(trace.ranges, "start", "end", "pid", "thread", "name", "domain") == [
        (10, 20, None, None, "a", "anonymous"),
        (30, 40, 200, 200, "b", "4"),
    ]
