"""Reader for Nsight Systems SQLite exports (``nsys export --type sqlite``), versions 2022.4 to 2026.x.

Tables and columns are discovered at run time (``sqlite_master`` / ``PRAGMA table_info``); every table is
optional except that a file with none of ``StringIds``, ``NVTX_EVENTS`` or a ``CUPTI_ACTIVITY_KIND_*`` table
is not an Nsight Systems export, and ``StringIds`` is required as soon as a table that refers to it has rows.
The file is opened read-only and immutable; it is never modified.

What lands where (all timestamps are int64 nanoseconds on the export's session clock, unchanged):

``ops`` (GPU work)
    ``CUPTI_ACTIVITY_KIND_KERNEL`` -> kind "kernel"; ``name`` = the ``demangledName`` string (``shortName``
    when the demangled one is absent); ``device`` = ``deviceId`` (the CUDA device ordinal CUPTI reports);
    ``stream`` = ``streamId``; ``correlation`` = ``correlationId``; ``graph`` = ``graphId`` (null before
    nsys 2024.x, which does not export it); ``pid`` = ``(globalPid >> 24) & 0xFFFFFF`` (the OS pid).
    ``CUPTI_ACTIVITY_KIND_MEMCPY`` -> kind "memcpy", name "[CUDA memcpy HtoD]" etc. from ``copyKind``;
    ``CUPTI_ACTIVITY_KIND_MEMSET`` -> kind "memset", name "[CUDA memset]".
``api`` (host calls)
    ``CUPTI_ACTIVITY_KIND_RUNTIME`` (and ``CUPTI_ACTIVITY_KIND_DRIVER`` where an export has it).
    ``kind`` = "driver" for rows of the DRIVER table and for RUNTIME rows with ``eventClass`` 1
    (TRACE_PROCESS_EVENT_CUDA_DRIVER: nsys puts driver calls such as ``cuLaunchKernel`` there), else
    "runtime". ``name`` has one version suffix stripped (``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel``,
    ``cudaGetDeviceProperties_v2_v12000`` -> ``cudaGetDeviceProperties_v2``). ``pid`` / ``thread`` =
    ``(globalTid >> 24) & 0xFFFFFF`` / ``globalTid & 0xFFFFFF``. Rows that repeat one non-zero correlation id
    within a process (nsys 2022.4 writes each call twice, a plain "CUDA backtrace" row and the ``_v`` row)
    are collapsed to the outermost one: earliest start, then longest.
``ranges`` (NVTX)
    ``NVTX_EVENTS`` rows of eventType 59 (push/pop) and 60 (start/end); name from ``text`` or ``textId`` ->
    ``StringIds``; ``thread`` / ``pid`` from ``globalTid`` (for start/end ranges: the thread that started
    it); ``domain`` = the name given by the domain's eventType-75 row, "default" for domainId 0;
    ``depth`` = number of ranges on the same thread (any domain) still open when this one starts (0 = top
    level). A range with no end (never closed) ends at the trace end (the largest timestamp in the file's
    frames) and the reader adds a warning. Marks (34), thread names (39) and domain events (75/76) are not
    ranges.
``gpu_metrics``
    nsys 2024+: ``GPU_METRICS`` joined to ``TARGET_INFO_GPU_METRICS`` on (typeId, metricId) for
    ``metricName``. nsys 2022.x/2023.x: ``GENERIC_EVENTS`` rows whose type belongs to a
    ``GENERIC_EVENT_SOURCES`` source named "GpuMetrics"; each row is a JSON object {metric name: value}
    (``timestamp`` is null in 2022.4 exports: ``rawTimestamp``, on the session clock, is used then).
    ``device``: the sample's GPU, ``typeId & 0xFF`` (the PerfWorks GPU id), mapped to the CUDA device id
    through ``TARGET_INFO_GPU`` when it holds distinct ``cuDevice`` values. ``metric`` is the name as nsys
    spells it; ``unit`` is the bracketed suffix's last word ("SMs Active [Throughput %]" -> "%"); for the
    bracket-less 2022/2023 names it follows nsys's metric-set definitions: "... Frequency" -> "Hz",
    "... Started" / "... Requests ..." -> "count", otherwise "%".

CPU-only traces (no kernel, memcpy or memset row, e.g. a CPU PyTorch run under ``nsys -t nvtx,osrt`` with
``emit_nvtx``): ``ops`` holds the leaf NVTX ranges of depth >= 1 (ranges that contain no other range on
their thread), kind "operator", ``device`` -1, ``stream`` = the thread id, ``pid`` set, ``correlation`` and
``graph`` null; ``meta["device"]`` is then "cpu". Top-level ranges (the user's ``iteration``) stay ranges only.

``meta``: ``format`` "nsys-sqlite", ``format_version`` (EXPORT_PRODUCT_VERSION, e.g. "2024.6.2.25"),
``export_schema_version``, ``device``, ``gpu`` (name of the GPU that ran most kernels), ``gpus`` (list of
{id, name}, id = CUDA device id), ``driver`` (NvDriverVersion), ``cuda_driver`` ("12.8" from 12080),
``synthetic`` (True when the export metadata has TRACEKIT_SYNTHETIC = "1" or the file name says
"synthetic"), ``warnings``.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.errors import TraceFormatError
from tracekit.model import (
    API_SCHEMA,
    GPU_METRICS_SCHEMA,
    OPS_SCHEMA,
    FrameSpec,
    Trace,
    busiest_gpu_name,
    conform,
    empty_frame,
    sort_frame,
    wanted_frames,
)
from tracekit.readers.nesting import leaf_mask, nesting_depth

SQLITE_MAGIC = b"SQLite format 3\x00"

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
DRIVER_TABLE = "CUPTI_ACTIVITY_KIND_DRIVER"

#: NVTX_EVENTS.eventType values (ENUM_NSYS_EVENT_TYPE).
NVTX_MARK = 34
NVTX_THREAD_NAME = 39
NVTX_PUSH_POP = 59
NVTX_START_END = 60
NVTX_DOMAIN_CREATE = 75

#: ENUM_NSYS_EVENT_CLASS id of CUDA driver API calls in CUPTI_ACTIVITY_KIND_RUNTIME.
EVENT_CLASS_CUDA_DRIVER = 1

#: ENUM_CUDA_MEMCPY_OPER id -> the short direction nsys prints in "[CUDA memcpy HtoD]".
MEMCPY_KINDS: dict[int, str] = {
    0: "Unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
    11: "Unified HtoD",
    12: "Unified DtoH",
    13: "Unified DtoD",
}

API_SUFFIX = r"_v\d+$"


# --------------------------------------------------------------------------------------------- helpers


def _q(name: str) -> str:
    """Quote an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _uri(path: Path) -> str:
    """SQLite URI that opens ``path`` read-only and immutable (no locks, no journal, never written)."""
    return path.resolve().as_uri() + "?mode=ro&immutable=1"


def _connect(path: Path) -> sqlite3.Connection:
    """Open ``path`` read-only and immutable (no locks, no journal, never written)."""
    con = sqlite3.connect(_uri(path), uri=True)
    # Exports can hold text that is not valid UTF-8 (seen in TARGET_INFO_SYSTEM_ENV): replace, never fail.
    con.text_factory = _decode_text
    return con


def _decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


#: Rows per ``fetchmany`` in the sqlite3 path: bounds the Python objects alive at once.
FETCH_ROWS = 1 << 18
#: Rows per Arrow batch in the ADBC path. Each batch becomes one chunk of the frame: one batch holds a table
#: of up to 16M rows in one chunk (later operations are faster on contiguous columns), and no rechunk is
#: needed (a rechunk holds two copies of the table at once).
ADBC_BATCH_ROWS = 1 << 24
#: ``TRACEKIT_SQLITE_ENGINE``: "adbc" / "sqlite3" force a reader for the large numeric tables; unset (or
#: "auto") uses ADBC when ``adbc-driver-sqlite`` is installed, else the standard library.
ENGINE_ENV = "TRACEKIT_SQLITE_ENGINE"


def _frame(con: sqlite3.Connection, sql: str, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Run ``sql`` and return its rows as a frame with ``schema`` (column order = SELECT order).

    Rows are fetched in chunks of :data:`FETCH_ROWS` and turned into frames chunk by chunk, so a large table
    never exists as one list of Python tuples."""
    cursor = con.execute(sql)
    parts = []
    while rows := cursor.fetchmany(FETCH_ROWS):
        parts.append(pl.DataFrame(rows, schema=list(schema.items()), orient="row"))
    if not parts:
        return pl.DataFrame(schema=schema)
    return parts[0] if len(parts) == 1 else pl.concat(parts, rechunk=True)


def _adbc_database(path: Path) -> Any | None:
    """An ADBC SQLite database handle on ``path`` (read-only, immutable), or None when ADBC is not
    installed or not wanted (``TRACEKIT_SQLITE_ENGINE=sqlite3``)."""
    engine = os.environ.get(ENGINE_ENV, "auto").lower()
    if engine in ("sqlite3", "stdlib"):
        return None
    try:
        import adbc_driver_sqlite
    except ImportError:
        if engine == "adbc":
            raise
        return None
    try:
        return adbc_driver_sqlite.connect(_uri(path))
    except Exception:  # any driver failure: the sqlite3 path reports the problem properly
        return None


#: Tables with at least this many rows are read in rowid slices, one per thread (see :func:`_slices`).
SLICE_MIN_ROWS = 1 << 18


def _read_threads() -> int:
    """Threads for sliced reads: polars' thread-pool size (``POLARS_MAX_THREADS`` sets it), at most 8."""
    return max(1, min(8, pl.thread_pool_size()))


def _slices(con: sqlite3.Connection, table: str, threads: int) -> list[str]:
    """WHERE clauses that split ``table`` into ``threads`` contiguous rowid ranges, in rowid order, or
    ``[""]`` (no split) for a small table, one thread, or a table without rowids.

    A full scan of a rowid table returns rows in rowid order, so the slices read one after the other
    return exactly the rows of the unsplit query, in the same order."""
    if threads < 2:
        return [""]
    try:
        low = con.execute(f"SELECT min(rowid) FROM {_q(table)}").fetchone()[0]
        high = con.execute(f"SELECT max(rowid) FROM {_q(table)}").fetchone()[0]
    except sqlite3.Error:
        return [""]
    if not isinstance(low, int) or not isinstance(high, int) or high - low + 1 < SLICE_MIN_ROWS:
        return [""]
    step = (high - low + 1 + threads - 1) // threads
    bounds = [low + i * step for i in range(threads)]
    clauses = [f" WHERE rowid >= {b} AND rowid < {b + step}" for b in bounds[:-1]]
    return clauses + [f" WHERE rowid >= {bounds[-1]}"]


def _adbc_sliced_frame(
    database: Any, sql: str, slices: list[str], schema: dict[str, pl.DataType]
) -> pl.DataFrame | None:
    """``sql`` + each of ``slices`` read through ADBC on its own thread (SQLite and the Arrow import release
    the GIL), the pieces joined in slice order; None when any piece fails."""
    if len(slices) == 1:
        return _adbc_frame(database, sql + slices[0], schema)
    with ThreadPoolExecutor(max_workers=len(slices), thread_name_prefix="tracekit-read") as pool:
        pieces = list(pool.map(lambda where: _adbc_frame(database, sql + where, schema), slices))
    if any(p is None for p in pieces):
        return None
    return _concat_contiguous(pieces)


def _concat_contiguous(pieces: list[pl.DataFrame]) -> pl.DataFrame:
    """The rows of ``pieces`` one after the other, each column in one contiguous chunk (later gathers and
    binary searches are ~20% faster than on chunked columns), built column by column: each column of the
    pieces is released once copied, so at most one column exists twice at a time (a whole-frame rechunk
    would hold two copies of the table). The list is emptied, so that the caller's reference to it does
    not keep the pieces alive."""
    columns: dict[str, pl.Series] = {}
    for name in pieces[0].columns:
        parts = [p.get_column(name) for p in pieces]
        pieces[:] = [p.drop(name) for p in pieces]
        columns[name] = pl.concat(parts, rechunk=True)
        del parts
    pieces.clear()
    return pl.DataFrame(columns)


def _adbc_frame(database: Any, sql: str, schema: dict[str, pl.DataType]) -> pl.DataFrame | None:
    """Run ``sql`` through ADBC into a frame with ``schema``; None on any failure (type mismatch between
    batches, driver error), so that the caller falls back to sqlite3 and its error handling."""
    import adbc_driver_manager

    conn = stmt = None
    try:
        conn = adbc_driver_manager.AdbcConnection(database)
        stmt = adbc_driver_manager.AdbcStatement(conn)
        stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(ADBC_BATCH_ROWS)})
        stmt.set_sql_query(sql)
        stream, _ = stmt.execute_query()
        frame = pl.DataFrame(stream)
        if frame.width != len(schema):
            return None
        frame.columns = list(schema)
        return frame.cast(schema)
    except Exception:
        return None
    finally:
        if stmt is not None:
            stmt.close()
        if conn is not None:
            conn.close()


class _Export:
    """Table and column discovery for one open export."""

    def __init__(self, con: sqlite3.Connection, path: Path | None = None) -> None:
        self.con = con
        self.path = path
        rows = con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
        self.tables: set[str] = {r[0] for r in rows}
        self._columns: dict[str, set[str]] = {}
        self._adbc: Any | None = None
        self._adbc_tried = False

    def has(self, table: str) -> bool:
        return table in self.tables

    def columns(self, table: str) -> set[str]:
        if table not in self._columns:
            rows = self.con.execute(f"PRAGMA table_info({_q(table)})").fetchall()
            self._columns[table] = {r[1] for r in rows}
        return self._columns[table]

    def col(self, table: str, *candidates: str, default: str = "NULL") -> str:
        """SQL for the first of ``candidates`` that ``table`` has, else ``default``."""
        cols = self.columns(table)
        for name in candidates:
            if name in cols:
                return _q(name)
        return default

    def nonempty(self, table: str) -> bool:
        return (
            self.has(table) and self.con.execute(f"SELECT 1 FROM {_q(table)} LIMIT 1").fetchone() is not None
        )

    def key_values(self, table: str) -> dict[str, str]:
        """name -> value of a (name, value) table such as META_DATA_EXPORT; {} when absent."""
        if not self.has(table) or not {"name", "value"} <= self.columns(table):
            return {}
        return {
            str(k): "" if v is None else str(v)
            for k, v in self.con.execute(f"SELECT name, value FROM {_q(table)}").fetchall()
        }

    def numeric_frame(
        self, table: str, exprs: Mapping[str, str], schema: dict[str, pl.DataType]
    ) -> pl.DataFrame:
        """``SELECT exprs FROM table`` for large tables of numbers: columnar through ADBC when available
        (several times faster than building Python tuples, and lean), else :func:`_frame`.

        ``exprs`` maps output column -> SQL expression; ``schema`` gives the dtypes (same keys, same order)."""
        sql = f"SELECT {', '.join(f'{e} AS {_q(c)}' for c, e in exprs.items())} FROM {_q(table)}"
        if not self._adbc_tried and self.path is not None:
            self._adbc_tried = True
            self._adbc = _adbc_database(self.path)
        if self._adbc is not None:
            frame = _adbc_sliced_frame(self._adbc, sql, _slices(self.con, table, _read_threads()), schema)
            if frame is not None:
                return frame
        return _frame(self.con, sql, schema)

    def close(self) -> None:
        if self._adbc is not None:
            self._adbc.close()
            self._adbc = None


def _require_columns(export: _Export, table: str, needed: Iterable[str], path: Path) -> None:
    missing = [c for c in needed if c not in export.columns(table)]
    if missing:
        raise TraceFormatError(f"{table} lacks required column(s) {', '.join(missing)}", path)


def _lookup_names(frame: pl.DataFrame, strings: pl.DataFrame, id_col: str, out: str) -> pl.DataFrame:
    """Replace integer column ``id_col`` by the StringIds value, as column ``out`` (null when missing).

    StringIds ids are unique (its primary key): each id is mapped to its string, adding one column of string
    views that share StringIds' buffers (16 bytes a row), without copying the frame's other columns. A
    table with repeated ids (not an nsys export) is joined, as before, one row per match."""
    if strings.get_column("id").is_duplicated().any():
        joined = frame.join(
            strings.rename({"id": id_col, "value": out}), on=id_col, how="left", maintain_order="left"
        )
        return joined.drop(id_col)
    ids, values = strings.get_column("id"), strings.get_column("value")
    if ids.len() and ids.is_sorted() and ids[0] == 0 and ids[-1] == ids.len() - 1:
        # Ids 0..n-1 in order (how nsys writes StringIds): the id is the row, a gather instead of a hash.
        at = frame.get_column(id_col)
        at = pl.select(pl.when((at >= 0) & (at < ids.len())).then(at)).to_series()
        return frame.with_columns(values.gather(at).alias(out)).drop(id_col)
    names = pl.col(id_col).replace_strict(ids, values, default=None, return_dtype=pl.String)
    return frame.with_columns(names.alias(out)).drop(id_col)


def pid_of(global_id: pl.Expr) -> pl.Expr:
    """The OS process id in an nsys ``globalPid``/``globalTid``: bits 24-47 (``(id >> 24) & 0xFFFFFF``),
    computed in polars rather than in SQL (a vectorized pass instead of one SQL expression per row)."""
    return (global_id // (1 << 24)) & 0xFFFFFF


def tid_of(global_id: pl.Expr) -> pl.Expr:
    """The OS thread id in an nsys ``globalTid``: its low 24 bits."""
    return global_id & 0xFFFFFF


def _select(
    exprs: dict[str, str],
    schema: dict[str, pl.DataType],
    wanted: Collection[str] | None,
    always: Iterable[str],
) -> tuple[dict[str, str], dict[str, pl.DataType]]:
    """The part of ``exprs`` / ``schema`` to read: columns in ``wanted`` (None: all) plus ``always``."""
    if wanted is None:
        return exprs, schema
    keep = set(wanted) | set(always)
    return {c: e for c, e in exprs.items() if c in keep}, {c: t for c, t in schema.items() if c in keep}


# ----------------------------------------------------------------------------------------------- ops


def _read_kernels(
    export: _Export, strings: pl.DataFrame, path: Path, wanted: Collection[str] | None = None
) -> tuple[pl.DataFrame, int]:
    """Kernel rows (OPS_SCHEMA columns in ``wanted``, None = all) and the number whose name id is missing
    from StringIds."""
    t = KERNEL_TABLE
    _require_columns(export, t, ("start", "end"), path)
    cols = export.columns(t)
    name_cols = [c for c in ("demangledName", "shortName", "mangledName", "name") if c in cols]
    if not name_cols:
        raise TraceFormatError(f"{t} has no kernel name column (demangledName/shortName)", path)
    name_sql = f"COALESCE({', '.join(_q(c) for c in name_cols)})" if len(name_cols) > 1 else _q(name_cols[0])
    exprs = {
        "start": '"start"',
        "end": '"end"',
        "device": export.col(t, "deviceId"),
        "stream": export.col(t, "streamId"),
        "pid": export.col(t, "globalPid"),
        "correlation": export.col(t, "correlationId"),
        "graph": export.col(t, "graphId"),
        "name_id": name_sql,
    }
    schema = {
        "start": pl.Int64,
        "end": pl.Int64,
        "device": pl.Int32,
        "stream": pl.Int64,
        "pid": pl.Int64,
        "correlation": pl.Int64,
        "graph": pl.Int64,
        "name_id": pl.Int64,
    }
    # device is always read (meta names the GPU that ran most kernels). Name ids only with names: the
    # missing-name count (a warning) needs them, but a whole column is a cost analyze does not need to pay.
    want_names = wanted is None or "name" in wanted
    always = ("start", "end", "device", "name_id") if want_names else ("start", "end", "device")
    exprs, schema = _select(exprs, schema, wanted, always)
    frame = export.numeric_frame(t, exprs, schema)
    if "pid" in frame.columns:
        frame = frame.with_columns(pid_of(pl.col("pid")))
    if not want_names:
        return frame.with_columns(kind=pl.lit("kernel")), 0
    named = strings.filter(pl.col("value").is_not_null())
    nameless = frame.select(
        (pl.col("name_id").is_null() | ~pl.col("name_id").is_in(named.get_column("id").implode())).sum()
    ).item()
    frame = _lookup_names(frame, strings, "name_id", "name")
    return frame.with_columns(kind=pl.lit("kernel")), int(nameless)


def _read_copies(
    export: _Export, table: str, kind: str, path: Path, wanted: Collection[str] | None = None
) -> pl.DataFrame:
    _require_columns(export, table, ("start", "end"), path)
    exprs = {
        "start": '"start"',
        "end": '"end"',
        "device": export.col(table, "deviceId"),
        "stream": export.col(table, "streamId"),
        "pid": export.col(table, "globalPid"),
        "correlation": export.col(table, "correlationId"),
        "copy_kind": export.col(table, "copyKind") if kind == "memcpy" else "NULL",
    }
    schema = {
        "start": pl.Int64,
        "end": pl.Int64,
        "device": pl.Int32,
        "stream": pl.Int64,
        "pid": pl.Int64,
        "correlation": pl.Int64,
        "copy_kind": pl.Int64,
    }
    exprs, schema = _select(exprs, schema, wanted, ("start", "end", "device", "copy_kind"))
    frame = export.numeric_frame(table, exprs, schema)
    if "pid" in frame.columns:
        frame = frame.with_columns(pid_of(pl.col("pid")))
    if kind == "memcpy":
        direction = pl.col("copy_kind").replace_strict(MEMCPY_KINDS, default=None, return_dtype=pl.String)
        name = (
            pl.when(direction.is_null())
            .then(pl.lit("[CUDA memcpy]"))
            .otherwise(pl.concat_str(pl.lit("[CUDA memcpy "), direction, pl.lit("]")))
        )
    else:
        name = pl.lit("[CUDA memset]")
    return frame.with_columns(name=name, kind=pl.lit(kind), graph=pl.lit(None, pl.Int64)).drop("copy_kind")


# ----------------------------------------------------------------------------------------------- api


def _read_api_table(
    export: _Export, table: str, strings: pl.DataFrame, path: Path, wanted: Collection[str] | None = None
) -> pl.DataFrame:
    _require_columns(export, table, ("start", "end", "nameId"), path)
    exprs = {
        "start": '"start"',
        "end": '"end"',
        "global_tid": export.col(table, "globalTid"),
        "correlation": export.col(table, "correlationId"),
        "event_class": export.col(table, "eventClass"),
        "name_id": '"nameId"',
    }
    schema = {
        "start": pl.Int64,
        "end": pl.Int64,
        "global_tid": pl.Int64,
        "correlation": pl.Int64,
        "event_class": pl.Int64,
        "name_id": pl.Int64,
    }
    # pid and correlation key the collapse of duplicate rows; start/end order it. pid and thread both
    # come from globalTid, read once.
    always = ["start", "end", "global_tid", "correlation"]
    if wanted is None or "kind" in wanted:
        always.append("event_class")
    if wanted is None or "name" in wanted:
        always.append("name_id")
    exprs, schema = _select(exprs, schema, wanted, always)
    frame = export.numeric_frame(table, exprs, schema)
    want_thread = wanted is None or "thread" in wanted
    frame = frame.with_columns(
        pid_of(pl.col("global_tid")).alias("pid"),
        *([tid_of(pl.col("global_tid")).alias("thread")] if want_thread else []),
    ).drop("global_tid")
    if "name_id" in frame.columns:
        # Strip the version suffix once per distinct string, not once per call.
        names = strings.with_columns(pl.col("value").str.replace(API_SUFFIX, ""))
        frame = _lookup_names(frame, names, "name_id", "name")
    if wanted is None or "kind" in wanted:
        if table == DRIVER_TABLE:
            kind = pl.lit("driver")
        else:
            kind = (
                pl.when(pl.col("event_class") == EVENT_CLASS_CUDA_DRIVER)
                .then(pl.lit("driver"))
                .otherwise(pl.lit("runtime"))
            )
        frame = frame.with_columns(kind=kind)
    return frame.drop("event_class", strict=False)


#: (pid, correlation) fit one Int64 sort key, pid * 2**32 + correlation, when in these bounds.
_PID_LIMIT = 1 << 31
_CORRELATION_LIMIT = 1 << 32


def collapse_duplicate_calls(api: pl.DataFrame) -> pl.DataFrame:
    """One row per (pid, correlation) for non-null, non-zero correlation ids: the outermost call
    (earliest start, then longest; the earlier row on a full tie). Rows without a correlation id are all kept.

    Rows come out ordered by (start, end), calls with a correlation id before those without on a tie, each
    group in input order otherwise. Found by sorting on the (pid, correlation) key, which is a check when
    the table is in correlation order (nsys writes it so), rather than by hashing every row."""
    if api.height == 0:
        return api
    has_corr = pl.col("correlation").is_not_null() & (pl.col("correlation") != 0)
    flagged = api.with_columns((~has_corr).alias("_uncorrelated"))
    keyed = flagged.select("pid", "correlation", "start", "end", "_uncorrelated").with_row_index("_row")
    keyed = keyed.filter(~pl.col("_uncorrelated")).drop("_uncorrelated")
    bounds = keyed.select(
        pl.col("pid").min().alias("a"),
        pl.col("pid").max().alias("b"),
        pl.col("pid").null_count().alias("n"),
        pl.col("correlation").min().alias("c"),
        pl.col("correlation").max().alias("d"),
    ).row(0)
    lo_pid, hi_pid, null_pids, lo_corr, hi_corr = bounds
    if keyed.is_empty():
        winners = keyed.get_column("_row")
    elif (
        null_pids == 0
        and lo_pid >= 0
        and hi_pid < _PID_LIMIT
        and lo_corr >= 0
        and hi_corr < _CORRELATION_LIMIT
    ):
        keyed = keyed.with_columns((pl.col("pid") * _CORRELATION_LIMIT + pl.col("correlation")).alias("_key"))
        keyed = sort_frame(keyed, ["_key", "start", "end"], [False, False, True])
        winners = keyed.filter(pl.col("_key").ne_missing(pl.col("_key").shift(1))).get_column("_row")
    else:
        keyed = keyed.sort(["start", "end"], descending=[False, True], maintain_order=True)
        winners = keyed.unique(subset=["pid", "correlation"], keep="first", maintain_order=True).get_column(
            "_row"
        )
    keep = pl.repeat(False, api.height, dtype=pl.Boolean, eager=True).scatter(winners, True)
    kept = flagged.filter(keep | pl.col("_uncorrelated"))
    return sort_frame(kept, ["start", "end", "_uncorrelated"], [False, False, False]).drop("_uncorrelated")


# -------------------------------------------------------------------------------------------- ranges


def with_nesting(ranges: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Add ``depth`` (Int32, enclosing ranges still open at this one's start) and ``has_child`` (bool)."""
    return ranges.with_columns(depth=nesting_depth(ranges, keys), has_child=~leaf_mask(ranges, keys))


def _read_nvtx(export: _Export, strings: pl.DataFrame, path: Path) -> pl.DataFrame:
    """Raw NVTX ranges with names and domains; ``end`` may be null (depth computed later)."""
    t = "NVTX_EVENTS"
    _require_columns(export, t, ("start", "eventType"), path)
    sql = (
        f'SELECT "start", {export.col(t, "end")}, "eventType", {export.col(t, "globalTid")}, '
        f"{export.col(t, 'text')}, "
        f"{export.col(t, 'textId')}, {export.col(t, 'domainId')} FROM {_q(t)} "
        f'WHERE "eventType" IN ({NVTX_PUSH_POP}, {NVTX_START_END}, {NVTX_DOMAIN_CREATE})'
    )
    schema = {
        "start": pl.Int64,
        "end": pl.Int64,
        "event_type": pl.Int64,
        "global_tid": pl.Int64,
        "text": pl.String,
        "text_id": pl.Int64,
        "domain_id": pl.Int64,
    }
    frame = _frame(export.con, sql, schema)
    frame = frame.with_columns(
        pid_of(pl.col("global_tid")).alias("pid"), tid_of(pl.col("global_tid")).alias("thread")
    ).drop("global_tid")
    frame = _lookup_names(frame, strings, "text_id", "registered")
    frame = frame.with_columns(name=pl.coalesce("text", "registered")).drop("text", "registered")
    domains = (
        frame.filter(pl.col("event_type") == NVTX_DOMAIN_CREATE)
        .select("pid", "domain_id", domain_name=pl.col("name"))
        .unique(subset=["pid", "domain_id"], keep="last", maintain_order=True)
    )
    ranges = frame.filter(pl.col("event_type") != NVTX_DOMAIN_CREATE).join(
        domains, on=["pid", "domain_id"], how="left", nulls_equal=True
    )
    domain = (
        pl.when(pl.col("domain_id").fill_null(0) == 0)
        .then(pl.lit("default"))
        .when(pl.col("domain_name").is_not_null())
        .then(pl.col("domain_name"))
        .otherwise(pl.col("domain_id").cast(pl.String))
    )
    return ranges.with_columns(domain=domain).drop("domain_id", "domain_name", "event_type")


# --------------------------------------------------------------------------------------- gpu metrics


def metric_unit(name: pl.Expr) -> pl.Expr:
    """Unit of a metric from its nsys name (see the module docstring)."""
    bracket = name.str.extract(r"\[([^\]]*)\]\s*$", 1).str.strip_chars()
    last_word = bracket.str.extract(r"(\S+)$", 1)
    return (
        pl.when(bracket.is_not_null() & bracket.str.ends_with("%"))
        .then(pl.lit("%"))
        .when(bracket.is_not_null())
        .then(last_word)
        .when(name.str.contains(r"(?i)frequency"))
        .then(pl.lit("Hz"))
        .when(name.str.contains(r"(?i)started|requests"))
        .then(pl.lit("count"))
        .otherwise(pl.lit("%"))
    )


def _finish_metrics(frame: pl.DataFrame, pw_to_cuda: dict[int, int]) -> pl.DataFrame:
    pw = pl.col("type_id") & 0xFF
    device = pw.replace_strict(pw_to_cuda, default=pw, return_dtype=pl.Int64) if pw_to_cuda else pw
    return frame.with_columns(device=device.cast(pl.Int32), unit=metric_unit(pl.col("metric"))).select(
        list(GPU_METRICS_SCHEMA)
    )


def _read_gpu_metrics(export: _Export, pw_to_cuda: dict[int, int], warnings: list[str]) -> pl.DataFrame:
    t = "GPU_METRICS"
    cols = export.columns(t)
    if not {"metricId", "value"} <= cols:
        warnings.append("GPU_METRICS lacks metricId/value columns; GPU metrics skipped")
        return empty_frame(GPU_METRICS_SCHEMA)
    ts_cols = [c for c in ("timestamp", "rawTimestamp") if c in cols]
    if not ts_cols:
        warnings.append("GPU_METRICS has no timestamp column; GPU metrics skipped")
        return empty_frame(GPU_METRICS_SCHEMA)
    ts_sql = f"COALESCE({', '.join(_q(c) for c in ts_cols)})" if len(ts_cols) > 1 else _q(ts_cols[0])
    sql = f'SELECT {ts_sql}, {export.col(t, "typeId", default="0")}, "metricId", "value" FROM {_q(t)}'
    schema = {"timestamp": pl.Int64, "type_id": pl.Int64, "metric_id": pl.Int64, "value": pl.Float64}
    frame = _frame(export.con, sql, schema)
    names = empty_frame({"metric_id": pl.Int64, "metric": pl.String})
    join_on = ["metric_id"]
    info = "TARGET_INFO_GPU_METRICS"
    if export.has(info) and {"metricId", "metricName"} <= export.columns(info):
        if "typeId" in export.columns(info) and "typeId" in cols:
            names = _frame(
                export.con,
                f'SELECT DISTINCT "typeId", "metricId", "metricName" FROM {_q(info)}',
                {"type_id": pl.Int64, "metric_id": pl.Int64, "metric": pl.String},
            )
            names = names.unique(subset=["type_id", "metric_id"], keep="first")
            join_on = ["type_id", "metric_id"]
        else:
            names = _frame(
                export.con,
                f'SELECT "metricId", MIN("metricName") FROM {_q(info)} GROUP BY "metricId"',
                {"metric_id": pl.Int64, "metric": pl.String},
            )
    frame = frame.join(names, on=join_on, how="left")
    unnamed = frame.filter(pl.col("metric").is_null()).height
    if unnamed:
        warnings.append(
            f"{unnamed} GPU_METRICS samples have no name in TARGET_INFO_GPU_METRICS; named 'metric <id>'"
        )
        frame = frame.with_columns(
            metric=pl.coalesce(
                "metric", pl.concat_str(pl.lit("metric "), pl.col("metric_id").cast(pl.String))
            )
        )
    return _finish_metrics(frame, pw_to_cuda)


def _read_generic_gpu_metrics(
    export: _Export, pw_to_cuda: dict[int, int], warnings: list[str]
) -> pl.DataFrame:
    """GPU metrics stored as JSON rows in GENERIC_EVENTS (nsys 2022.x / 2023.x)."""
    if not (export.has("GENERIC_EVENT_SOURCES") and export.has("GENERIC_EVENT_TYPES")):
        warnings.append(
            "GENERIC_EVENTS without GENERIC_EVENT_SOURCES/TYPES; cannot tell GPU metrics apart, skipped"
        )
        return empty_frame(GPU_METRICS_SCHEMA)
    sources = export.con.execute('SELECT "sourceId", "data" FROM GENERIC_EVENT_SOURCES').fetchall()
    metric_sources: list[int] = []
    for source_id, data in sources:
        try:
            desc = json.loads(data)
        except (TypeError, ValueError):
            continue
        if isinstance(desc, dict) and desc.get("Name") == "GpuMetrics":
            metric_sources.append(int(source_id))
            if desc.get("TimeSource") not in (None, "SessionNs"):
                warnings.append(f"GPU metrics time source is {desc.get('TimeSource')!r}, not session ns")
    if not metric_sources:
        return empty_frame(GPU_METRICS_SCHEMA)
    cols = export.columns("GENERIC_EVENTS")
    ts_cols = [c for c in ("timestamp", "rawTimestamp") if c in cols]
    if not ts_cols or not {"typeId", "data"} <= cols:
        warnings.append("GENERIC_EVENTS lacks timestamp/typeId/data columns; GPU metrics skipped")
        return empty_frame(GPU_METRICS_SCHEMA)
    ts_sql = f"COALESCE({', '.join('g.' + _q(c) for c in ts_cols)})"
    ids = ", ".join(str(s) for s in metric_sources)
    where = f'g."typeId" IN (SELECT "typeId" FROM GENERIC_EVENT_TYPES WHERE "sourceId" IN ({ids}))'
    schema = {"timestamp": pl.Int64, "type_id": pl.Int64, "metric": pl.String, "raw": pl.String}
    try:
        frame = _frame(
            export.con,
            f'SELECT {ts_sql}, g."typeId", j.key, CAST(j.value AS TEXT) FROM GENERIC_EVENTS g, json_each(g."data") j '
            f"WHERE {where}",
            schema,
        )
    except sqlite3.OperationalError:  # SQLite built without JSON1: decode in polars instead
        rows = _frame(
            export.con,
            f'SELECT {ts_sql}, g."typeId", g."data" FROM GENERIC_EVENTS g WHERE {where}',
            {"timestamp": pl.Int64, "type_id": pl.Int64, "data": pl.String},
        )
        if rows.height == 0:
            return empty_frame(GPU_METRICS_SCHEMA)
        decoded = rows.with_columns(pl.col("data").str.json_decode(infer_schema_length=None)).unnest("data")
        value_cols = [c for c in decoded.columns if c not in ("timestamp", "type_id")]
        frame = decoded.with_columns(pl.col(value_cols).cast(pl.String)).unpivot(
            index=["timestamp", "type_id"], on=value_cols, variable_name="metric", value_name="raw"
        )
    frame = frame.with_columns(value=pl.col("raw").cast(pl.Float64, strict=False))
    bad = frame.filter(pl.col("value").is_null() & pl.col("raw").is_not_null()).height
    if bad:
        warnings.append(f"{bad} GENERIC_EVENTS GPU-metric values are not numbers; dropped")
    frame = frame.filter(pl.col("value").is_not_null())
    return _finish_metrics(frame, pw_to_cuda)


# ---------------------------------------------------------------------------------------------- gpus


def _gpu_table(export: _Export, env: dict[str, str]) -> list[dict[str, Any]]:
    """GPUs of the target: [{id (CUDA device id), name, pw (PerfWorks id)}]."""
    rows: list[dict[str, Any]] = []
    if export.has("TARGET_INFO_GPU") and "id" in export.columns("TARGET_INFO_GPU"):
        t = "TARGET_INFO_GPU"
        sql = (
            f'SELECT "id", {export.col(t, "name")}, {export.col(t, "pwGpuId")}, {export.col(t, "cuDevice")} '
            f'FROM {_q(t)} ORDER BY "id"'
        )
        rows = [
            {"gid": r[0], "name": r[1], "pw": r[2], "cu": r[3]} for r in export.con.execute(sql).fetchall()
        ]
    elif env.get("GpuInfo"):
        try:
            info = json.loads(env["GpuInfo"])
        except ValueError:
            info = {}
        gpus = info.get("Gpus", []) if isinstance(info, dict) else []
        rows = [
            {"gid": g.get("Id"), "name": g.get("Name"), "pw": g.get("PwGpuId"), "cu": g.get("CuDevice")}
            for g in gpus
            if isinstance(g, dict) and g.get("Id") is not None
        ]
    if not rows:
        return []
    cuda_of: dict[Any, Any] = {}
    if export.has("TARGET_INFO_CUDA_DEVICE") and {"gpuId", "cudaId"} <= export.columns(
        "TARGET_INFO_CUDA_DEVICE"
    ):
        pairs = set(
            export.con.execute('SELECT DISTINCT "gpuId", "cudaId" FROM TARGET_INFO_CUDA_DEVICE').fetchall()
        )
        by_gpu: dict[Any, set[Any]] = {}
        for gpu_id, cuda_id in pairs:
            by_gpu.setdefault(gpu_id, set()).add(cuda_id)
        if all(len(v) == 1 for v in by_gpu.values()) and len({next(iter(v)) for v in by_gpu.values()}) == len(
            by_gpu
        ):
            cuda_of = {k: next(iter(v)) for k, v in by_gpu.items()}
    cus = [r["cu"] for r in rows]
    cu_distinct = None not in cus and len(set(cus)) == len(cus)
    out = []
    for r in rows:
        cuda = cuda_of.get(r["gid"], r["cu"] if cu_distinct else r["gid"])
        out.append({"id": int(cuda), "name": r["name"], "pw": r["pw"] if r["pw"] is not None else r["gid"]})
    return out


# ---------------------------------------------------------------------------------------------- read


def read(path: Path, frames: FrameSpec = None) -> Trace:
    """Read an Nsight Systems SQLite export into a normalized :class:`Trace` (see the module docstring).

    ``frames`` (see :func:`tracekit.model.wanted_frames`) limits what is read: frames left out stay empty and
    columns left out are null. ``ops``, ``ranges`` and ``meta`` are always read (they decide the trace's
    device); ``api`` and ``gpu_metrics`` only when asked for, or when an NVTX range is never closed (the
    trace end that closes it is the latest timestamp of every frame). GPU-metric warnings come only with
    ``gpu_metrics``, and the count of kernels whose name id is missing from StringIds only when op names are
    read.

    Tables of :data:`SLICE_MIN_ROWS` rows or more are read through ADBC in contiguous rowid slices, one per
    thread (polars' thread-pool size), and joined in rowid order: the same rows in the same order as one
    scan, about twice as fast on two cores."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise TraceFormatError(f"cannot read ({exc.strerror})", path) from exc
    if size == 0:
        raise TraceFormatError("empty file", path)
    with open(path, "rb") as fh:
        if fh.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
            raise TraceFormatError("not an SQLite database (expected an Nsight Systems SQLite export)", path)
    try:
        con = _connect(path)
    except sqlite3.Error as exc:
        raise TraceFormatError(f"cannot open as SQLite ({exc})", path) from exc
    export = None
    try:
        export = _Export(con, path)
        return _read(export, path, wanted_frames(frames))
    except sqlite3.DatabaseError as exc:
        raise TraceFormatError(f"corrupt SQLite ({exc})", path) from exc
    finally:
        if export is not None:
            export.close()
        con.close()


def _read(export: _Export, path: Path, want: dict[str, frozenset[str] | None]) -> Trace:
    con = export.con
    warnings: list[str] = []
    cupti = {t for t in export.tables if t.startswith("CUPTI_ACTIVITY_KIND_")}
    if not ({"StringIds", "NVTX_EVENTS"} & export.tables or cupti):
        raise TraceFormatError("not an Nsight Systems export: no StringIds/NVTX_EVENTS/CUPTI tables", path)
    # Force a read of every table we use early, so that a damaged file fails here and not half-way.
    users = [t for t in (KERNEL_TABLE, RUNTIME_TABLE, DRIVER_TABLE) if export.nonempty(t)]
    if export.has("StringIds"):
        _require_columns(export, "StringIds", ("id", "value"), path)
        strings = _frame(con, 'SELECT "id", "value" FROM StringIds', {"id": pl.Int64, "value": pl.String})
    elif users:
        raise TraceFormatError(
            f"missing required table StringIds (names in {', '.join(users)} refer to it)", path
        )
    else:
        strings = empty_frame({"id": pl.Int64, "value": pl.String})

    # ops
    ops_cols = want.get("ops")
    parts = []
    nameless = 0
    if export.has(KERNEL_TABLE):
        kernels, nameless = _read_kernels(export, strings, path, ops_cols)
        parts.append(kernels)
    if export.has(MEMCPY_TABLE):
        parts.append(_read_copies(export, MEMCPY_TABLE, "memcpy", path, ops_cols))
    if export.has(MEMSET_TABLE):
        parts.append(_read_copies(export, MEMSET_TABLE, "memset", path, ops_cols))
    ops = pl.concat([conform(p, OPS_SCHEMA) for p in parts]) if parts else empty_frame(OPS_SCHEMA)
    if nameless:
        warnings.append(f"{nameless} kernels have a name id missing from StringIds")

    # api
    def read_api(cols: frozenset[str] | None) -> pl.DataFrame:
        api_parts = [
            _read_api_table(export, t, strings, path, cols)
            for t in (RUNTIME_TABLE, DRIVER_TABLE)
            if export.has(t)
        ]
        api = pl.concat([conform(p, API_SCHEMA) for p in api_parts]) if api_parts else empty_frame(API_SCHEMA)
        return collapse_duplicate_calls(api)

    api = read_api(want["api"]) if "api" in want else None

    # GPUs and metadata
    env = export.key_values("TARGET_INFO_SYSTEM_ENV")
    gpus = _gpu_table(export, env)
    pw_to_cuda = {int(g["pw"]): g["id"] for g in gpus if g["pw"] is not None}

    # ranges (read before GPU metrics: an unclosed range needs every frame's latest timestamp)
    if export.has("NVTX_EVENTS"):
        raw = _read_nvtx(export, strings, path)
    else:
        raw = empty_frame(
            {
                "start": pl.Int64,
                "end": pl.Int64,
                "pid": pl.Int64,
                "thread": pl.Int64,
                "name": pl.String,
                "domain": pl.String,
            }
        )
    unclosed = raw.filter(pl.col("end").is_null()).height
    if unclosed and api is None:
        api = read_api(frozenset({"start", "end"}))

    # gpu metrics
    gpu_metrics = None
    if "gpu_metrics" in want or unclosed:
        if export.has("GPU_METRICS"):
            gpu_metrics = _read_gpu_metrics(export, pw_to_cuda, warnings)
        elif export.has("GENERIC_EVENTS"):
            gpu_metrics = _read_generic_gpu_metrics(export, pw_to_cuda, warnings)
        else:
            gpu_metrics = empty_frame(GPU_METRICS_SCHEMA)

    if unclosed:
        assert api is not None and gpu_metrics is not None
        candidates = [
            ops.select(pl.col("end").max()).item(),
            api.select(pl.col("end").max()).item(),
            raw.select(pl.max_horizontal(pl.col("start").max(), pl.col("end").max())).item(),
            gpu_metrics.select(pl.col("timestamp").max()).item(),
        ]
        trace_end = max(int(c) for c in candidates if c is not None)
        raw = raw.with_columns(pl.col("end").fill_null(trace_end))
        warnings.append(f"{unclosed} NVTX range(s) never closed; closed at the trace end ({trace_end} ns)")
    ranges = with_nesting(raw, ["pid", "thread"])

    device = "gpu" if ops.height else "cpu"
    if not ops.height and ranges.height:
        leaves = ranges.filter((pl.col("depth") >= 1) & ~pl.col("has_child"))
        ops = leaves.select(
            "start",
            "end",
            device=pl.lit(-1, pl.Int32),
            stream=pl.col("thread"),
            pid=pl.col("pid"),
            kind=pl.lit("operator"),
            name=pl.col("name"),
        )

    meta = _meta(export, path, env, gpus, ops if device == "gpu" else None)
    meta["device"] = device
    if ops_cols is not None and device == "gpu":
        # Read for meta["gpu"] only: drop what was not asked for (null in the Trace).
        ops = ops.drop(
            [c for c in ("device", "stream", "pid", "correlation", "graph", "name") if c not in ops_cols]
        )
    meta["warnings"] = warnings
    return Trace(
        ops=ops,
        api=api if "api" in want else None,
        ranges=ranges,
        gpu_metrics=gpu_metrics if "gpu_metrics" in want else None,
        meta=meta,
    )


def _meta(
    export: _Export, path: Path, env: dict[str, str], gpus: list[dict[str, Any]], gpu_ops: pl.DataFrame | None
) -> dict[str, Any]:
    info = {**export.key_values("EXPORT_META_DATA"), **export.key_values("META_DATA_EXPORT")}
    meta: dict[str, Any] = {"path": str(path), "format": "nsys-sqlite"}
    if info.get("EXPORT_PRODUCT_VERSION"):
        meta["format_version"] = info["EXPORT_PRODUCT_VERSION"]
    if info.get("EXPORT_SCHEMA_VERSION"):
        meta["export_schema_version"] = info["EXPORT_SCHEMA_VERSION"]
    synthetic = info.get("TRACEKIT_SYNTHETIC") == "1" or "synthetic" in path.name.lower()
    meta["synthetic"] = synthetic
    driver = env.get("NvDriverVersion", "")
    if re.fullmatch(r"\d{8}", driver):  # nsys 2022.4 writes 470.161.03 as "47016103"
        driver = f"{driver[:3]}.{int(driver[3:6])}.{driver[6:]}"
    if driver and driver != "0":
        meta["driver"] = driver
    cuda = env.get("CudaDriverVersion", "")
    if re.fullmatch(r"\d{4,6}", cuda) and int(cuda) > 0:
        meta["cuda_driver"] = f"{int(cuda) // 1000}.{int(cuda) % 1000 // 10}"
    if gpus:
        meta["gpus"] = [{"id": g["id"], "name": g["name"]} for g in gpus]
        names = {g["id"]: g["name"] for g in gpus}
        gpu_name = None
        if gpu_ops is not None:
            gpu_name = busiest_gpu_name(gpu_ops, names)
        if gpu_name is None and gpu_ops is not None and len(set(names.values())) == 1:
            gpu_name = next(iter(names.values()))
        if gpu_name:
            meta["gpu"] = gpu_name
    return meta
