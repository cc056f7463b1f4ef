"""The nsys reader's two SQLite engines (ADBC columnar, stdlib sqlite3) and partial reads agree exactly."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sqlite3
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import REAL_TRACES, SAMPLE_TRACES, inflated
from tests.nsys_builder import NsysBuilder
from tracekit.analyzers.iterations import FRAMES_NEEDED
from tracekit.inputs import TraceInput
from tracekit.model import SCHEMAS
from tracekit.readers import nsys_sqlite, read_trace, sqlite_engine
from tracekit.session import analyze_trace

HAS_ADBC = importlib.util.find_spec("adbc_driver_sqlite") is not None

SIM = SAMPLE_TRACES / "synthetic" / "table3_cuda-graphs" / "cuda-graphs_b1_s128.synthetic.sqlite"


def _files() -> list[Path]:
    files = [SIM, SAMPLE_TRACES / "cpu_onnx_bert_nsys" / "onnx_b1_s128.nsys.sqlite.gz"]
    if REAL_TRACES.is_dir():
        files += sorted(REAL_TRACES.glob("nsys/*.sqlite")) + sorted(REAL_TRACES.glob("paper/*.sqlite"))
    return files


def _export_says(path: Path) -> dict[str, object]:
    """What the export holds, by plain SQL on its tables (an oracle that shares no code with the reader):
    every kernel's (start, end, demangled name), the memcpy and memset counts, one runtime call per
    (thread, correlation id) (nsys 2022 writes each call twice, plain and ``_v``, with one id), and the
    closed NVTX push/pop and start/end ranges."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

        def count(sql: str, table: str) -> int:
            return con.execute(sql).fetchone()[0] if table in tables else 0

        kernels = (
            sorted(
                con.execute(
                    "SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                    "JOIN StringIds s ON s.id = k.demangledName"
                ).fetchall()
            )
            if "CUPTI_ACTIVITY_KIND_KERNEL" in tables
            else []
        )
        return {
            "kernels": kernels,
            "memcpy": count("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMCPY"),
            "memset": count("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_MEMSET"),
            "api": count(
                "SELECT count(*) FROM (SELECT DISTINCT globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
                "CUPTI_ACTIVITY_KIND_RUNTIME",
            ),
            "ranges": count(
                "SELECT count(*) FROM NVTX_EVENTS WHERE end IS NOT NULL AND eventType IN (59, 60)",
                "NVTX_EVENTS",
            ),
        }
    finally:
        con.close()


def _trace_says(trace) -> dict[str, object]:
    kind = pl.col("kind").cast(pl.String)
    return {
        "kernels": sorted(trace.ops.filter(kind == "kernel").select("start", "end", "name").rows()),
        "memcpy": trace.ops.filter(kind == "memcpy").height,
        "memset": trace.ops.filter(kind == "memset").height,
        "api": trace.api.height,
        "ranges": trace.ranges.height,
    }


@pytest.mark.skipif(not HAS_ADBC, reason="adbc-driver-sqlite is not installed")
@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_adbc_and_sqlite3_read_the_same_frames_and_leave_the_file_unchanged(path, monkeypatch):
    """Both engines read what the export holds (checked against plain SQL on its tables), and the same
    frames to the last row and column."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    expected = _export_says(inflated(path) if path.suffix == ".gz" else path)
    assert expected["kernels"] or expected["ranges"]  # not a vacuous comparison
    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", "adbc")
    a = read_trace(path)
    assert _trace_says(a) == expected
    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", "sqlite3")
    b = read_trace(path)
    assert _trace_says(b) == expected
    for name in SCHEMAS:
        assert getattr(a, name).equals(getattr(b, name)), name
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert not list(path.parent.glob(path.name + "-*"))  # no -journal / -wal / -shm left beside it


@pytest.mark.skipif(not HAS_ADBC, reason="adbc-driver-sqlite is not installed")
@pytest.mark.parametrize("sliced", [False, True])
def test_nvtx_ranges_read_columnar_equal_the_row_by_row_read(tmp_path, monkeypatch, sliced):
    # NVTX is read through ADBC like the kernels (emit_nvtx writes a range per operator: 2M ranges took 5 s
    # of Python tuples): every spelling of a name, a missing end, domains and text that is not UTF-8 read the
    # same through both engines, in one piece or in rowid slices whose first rows lack some columns' values
    b = NsysBuilder()
    b.nvtx_domain(5, 3, "mydomain")
    b.nvtx_mark(6, "a mark")
    for i in range(40):
        t = 100 * i + 10
        if i < 20:
            b.nvtx_range(t, t + 50, registered=f"registered {i % 3}")  # text null, textId set
        else:
            b.nvtx_range(t, t + 50, f"op {i % 4}", domain=3 if i % 2 else 0)
        b.nvtx_range(t + 5, t + 20, "bad" if i == 30 else "inner", start_end=i % 5 == 0)
    b.nvtx_range(4000, None, "never closed")
    b.nvtx_range(4010, 4020, None)  # neither text nor textId
    b.kernel(4015, 4030, "k", correlation=1)
    path = b.write(tmp_path / "nvtx.sqlite")
    with sqlite3.connect(path) as db:  # text that is not UTF-8, as nsys can store it
        db.execute("UPDATE NVTX_EVENTS SET text = CAST(X'62FF64' AS TEXT) WHERE text = 'bad'")
    if sliced:
        monkeypatch.setattr(sqlite_engine, "SLICE_MIN_ROWS", 2)
        monkeypatch.setattr(sqlite_engine, "read_threads", lambda: 3)
    nvtx_pieces: list[pl.DataFrame | None] = []
    adbc_frame = sqlite_engine.adbc_frame

    def recording(database, sql, schema):
        frame = adbc_frame(database, sql, schema)
        if "NVTX_EVENTS" in sql:
            nvtx_pieces.append(frame)
        return frame

    monkeypatch.setattr(sqlite_engine, "adbc_frame", recording)
    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", "adbc")
    a = read_trace(path)
    # read through ADBC (a failed piece would fall back to sqlite3 and make this test compare it with itself)
    assert len(nvtx_pieces) == (3 if sliced else 1) and all(p is not None for p in nvtx_pieces)
    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", "sqlite3")
    b_ = read_trace(path)
    assert a.ranges.equals(b_.ranges) and a.warnings == b_.warnings
    names = a.ranges.get_column("name").to_list()
    assert "b\ufffdd" in names and "registered 2" in names and None in names and "a mark" not in names
    assert set(a.ranges.get_column("domain")) == {"default", "mydomain"}
    assert a.ranges.height == 82


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_partial_read_gives_the_same_analysis_as_a_full_read(path):
    full = read_trace(path)
    part = read_trace(path, frames=FRAMES_NEEDED)
    assert part.gpu_metrics.is_empty()
    # the configuration stated, so that only the metrics are compared (identification reads op names)
    stated = TraceInput(path=path, runtime="r", batch_size=1, seq_len=1, precision="p")
    doc_full = analyze_trace(full, stated).to_json()
    doc_part = analyze_trace(part, stated).to_json()
    doc_full["warnings"] = [w for w in doc_full["warnings"] if "GPU_METRICS" not in w]
    assert json.dumps(doc_part, sort_keys=True) == json.dumps(doc_full, sort_keys=True)


def test_unclosed_range_gets_the_same_trace_end_in_a_partial_read(tmp_path):
    b = NsysBuilder()
    b.nvtx_range(0, 100, "iteration")
    b.nvtx_range(200, None, "iteration")  # never popped: no end; open to the trace's last timestamp
    b.nvtx_range(300, 400, "inside")  # nested in it
    b.kernel(10, 50, "k", correlation=1)
    b.runtime(5, 9, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(210, 900, "k", correlation=2)
    b.runtime(205, 209, "cudaLaunchKernel_v7000", correlation=2)
    path = b.write(tmp_path / "unclosed.sqlite")
    full, part = read_trace(path), read_trace(path, frames=FRAMES_NEEDED)
    assert full.ranges["end"].to_list() == part.ranges["end"].to_list() == [100, None, 400]
    assert full.ranges["depth"].to_list() == part.ranges["depth"].to_list() == [0, 0, 1]
    assert full.warnings == part.warnings
    assert "at 900 ns" in full.warnings[0]


@pytest.mark.skipif(not HAS_ADBC, reason="adbc-driver-sqlite is not installed")
@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_reads_split_into_rowid_slices_on_threads_equal_the_serial_read(path, monkeypatch):
    """Large tables are read in rowid slices, one per thread: rows, order and values must not change."""
    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", "sqlite3")
    serial = read_trace(path)
    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", "adbc")
    monkeypatch.setattr(sqlite_engine, "SLICE_MIN_ROWS", 2)
    monkeypatch.setattr(sqlite_engine, "read_threads", lambda: 3)
    queries: list[tuple[str, str]] = []
    adbc_frame = sqlite_engine.adbc_frame

    def counting_adbc_frame(database, sql, schema):
        import threading

        queries.append((sql, threading.current_thread().name))
        return adbc_frame(database, sql, schema)

    monkeypatch.setattr(sqlite_engine, "adbc_frame", counting_adbc_frame)
    sliced = read_trace(path)
    # The slices were really taken from NVTX_EVENTS (every export here has ranges); the kernel and API tables
    # were read side by side, each whole on a thread of its own (CPU-only exports have no kernels).
    assert any("(rowid >= " in q and "NVTX_EVENTS" in q for q, _ in queries)
    big = [(q, thread) for q, thread in queries if "KIND_KERNEL" in q or "KIND_RUNTIME" in q]
    assert all("rowid >=" not in q and thread.startswith("tracekit-table") for q, thread in big)
    assert (len(big) >= 2) == (serial.meta["device"] == "gpu")
    for name in SCHEMAS:
        assert getattr(sliced, name).equals(getattr(serial, name)), name


def test_pieces_are_joined_in_order_into_one_chunk_per_column():
    pieces = [pl.DataFrame({"a": [1, 2], "b": ["x", "y"]}), pl.DataFrame({"a": [3], "b": [None]})]
    joined = sqlite_engine.concat_contiguous(pieces)
    assert joined.to_dict(as_series=False) == {"a": [1, 2, 3], "b": ["x", "y", None]}
    assert joined.n_chunks("all") == [1, 1]
    assert pieces == []  # emptied: the caller's list does not keep the pieces alive


def test_rowid_slices_cover_every_row_once_in_order_with_gaps_in_rowids(tmp_path):
    path = tmp_path / "gaps.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (v INTEGER)")
    rowids = [3, 4, 5, 90, 91, 400, 401, 402, 1000]
    con.executemany("INSERT INTO t (rowid, v) VALUES (?, ?)", [(r, r * 10) for r in rowids])
    con.commit()
    for threads in (1, 2, 3, 4, 16):
        for minimum in (1, 100):
            clauses = sqlite_engine.rowid_slices(con, "t", threads) if minimum == 1 else [""]
            got = [v for c in clauses for (v,) in con.execute(f"SELECT v FROM t{c}")]
            assert got == [r * 10 for r in rowids], (threads, clauses)
    assert sqlite_engine.rowid_slices(con, "t", 1) == [""]
    con.execute("CREATE TABLE w (k INTEGER PRIMARY KEY, v INTEGER) WITHOUT ROWID")
    assert sqlite_engine.rowid_slices(con, "w", 4) == [""]  # no rowid: read whole
    con.close()


@given(st.integers(min_value=0, max_value=(1 << 63) - 1))
def test_pid_and_tid_of_a_global_id_match_nsys_bit_layout(global_id):
    frame = pl.DataFrame({"g": [global_id]}, schema={"g": pl.Int64})
    pid, tid = frame.select(nsys_sqlite.pid_of(pl.col("g")), nsys_sqlite.tid_of(pl.col("g")).alias("t")).row(
        0
    )
    assert (pid, tid) == ((global_id >> 24) & 0xFFFFFF, global_id & 0xFFFFFF)


@pytest.mark.parametrize("first_id", [0, 1], ids=["dense-from-0", "from-1"])
def test_name_lookup_maps_ids_and_leaves_unknown_ones_null(first_id):
    strings = pl.DataFrame(
        {"id": [first_id, first_id + 1, first_id + 2], "value": ["a", "b", "c"]},
        schema={"id": pl.Int64, "value": pl.String},
    )
    ids = [first_id + 2, None, first_id, -1, first_id + 3, first_id + 1, 99]
    frame = pl.DataFrame({"x": range(len(ids)), "name_id": ids}, schema={"x": pl.Int64, "name_id": pl.Int64})
    got = nsys_sqlite._lookup_names(frame, strings, "name_id", "name")
    assert got.columns == ["x", "name"]
    assert got["name"].to_list() == ["c", None, "a", None, None, "b", None]
