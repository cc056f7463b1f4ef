"""Read-only reads of SQLite tables into polars frames; knows SQLite, nothing of any profiler's schema.

Two engines give the same frames (same rows, order, values and dtypes):

* **ADBC** (``adbc-driver-sqlite``, when installed): the query's rows arrive as Arrow batches, columnar,
  without a Python object per value. Tables of :data:`SLICE_MIN_ROWS` rows or more are read in contiguous
  rowid slices, one per thread (SQLite and the Arrow import release the GIL), and joined in rowid order
  into one chunk per column.
* **sqlite3** (the standard library): rows fetched :data:`FETCH_ROWS` at a time and turned into frames
  chunk by chunk. Always used for small queries (discovery, string tables), and the fallback whenever ADBC
  fails, so that a damaged file is reported by sqlite3's error handling.

``TRACEKIT_SQLITE_ENGINE`` (:data:`ENGINE_ENV`) = "adbc" / "sqlite3" forces an engine for the large
tables; unset or "auto" uses ADBC when it is installed. Every connection opens the file read-only and
immutable (``?mode=ro&immutable=1``: no locks, no journal; the file is never written).

An immutable open reads the file alone, so what SQLite keeps beside it is looked at first
(:func:`open_database`): a write-ahead log (``-wal``, WAL mode) is merged into a temporary copy, and a hot
rollback journal (``-journal``: a writer ended in the middle of a transaction and left the file half
written) is rolled back on a temporary copy, as SQLite's next write open would, each with a warning; a file
whose writer still holds its write lock is refused in one line. The input and what lies beside it are never
changed.
"""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import polars as pl

from tracekit import limits
from tracekit.errors import TraceFormatError
from tracekit.limits import format_size
from tracekit.readers import GZIP_MAGIC, SQLITE_MAGIC

#: Rows per ``fetchmany`` in the sqlite3 path: bounds the Python objects alive at once.
FETCH_ROWS = 1 << 18
#: Rows per Arrow batch in the ADBC path. Each batch becomes one chunk of the frame: one batch holds a table
#: of up to 16M rows in one chunk (later operations are faster on contiguous columns), and no rechunk is
#: needed (a rechunk holds two copies of the table at once).
ADBC_BATCH_ROWS = 1 << 24
#: ``TRACEKIT_SQLITE_ENGINE``: "adbc" / "sqlite3" force a reader for the large numeric tables; unset (or
#: "auto") uses ADBC when ``adbc-driver-sqlite`` is installed, else the standard library.
ENGINE_ENV = "TRACEKIT_SQLITE_ENGINE"
#: Tables with at least this many rows are read in rowid slices, one per thread (see :func:`rowid_slices`).
SLICE_MIN_ROWS = 1 << 18


def quote(name: str) -> str:
    """Quote an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def read_only_uri(path: Path) -> str:
    """SQLite URI that opens ``path`` read-only and immutable (no locks, no journal, never written)."""
    return path.resolve().as_uri() + "?mode=ro&immutable=1"


def connect(path: Path) -> sqlite3.Connection:
    """Open ``path`` read-only and immutable (no locks, no journal, never written). A value longer than the
    event limit (``--max-event``, :data:`tracekit.limits.MAX_EVENT_BYTES`) fails to read ("string or blob
    too big") before SQLite allocates it: a forged record can declare a gigabyte string in a small file."""
    # check_same_thread False: the reader's small queries may come from the threads that read two large tables
    # at once (:meth:`Database.side_by_side`); SQLite serializes them (a read-only, immutable file)
    con = sqlite3.connect(read_only_uri(path), uri=True, check_same_thread=False)
    if hasattr(con, "setlimit"):  # Python 3.11+
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(limits.current.max_event, 1_000_000_000))
    # Files can hold text that is not valid UTF-8 (seen in nsys's TARGET_INFO_SYSTEM_ENV): replace, never fail.
    con.text_factory = _decode_text
    return con


def _decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


#: Width of the integer dtypes a frame's column may have (for :class:`UnfitValueError`'s line).
_INTEGER_BITS: dict[pl.DataType, int] = {
    pl.Int8: 8, pl.Int16: 16, pl.Int32: 32, pl.Int64: 64, pl.UInt8: 8, pl.UInt16: 16, pl.UInt32: 32, pl.UInt64: 64,
}  # fmt: skip


class UnfitValueError(ValueError):
    """A value read from SQLite that its column's dtype cannot hold (text ``'abc'``, a blob, or a REAL outside
    the 64-bit integer range in a timestamp column): the rows' frame cannot be built. ``column``: the output
    column; ``value``: the value as SQLite gave it; ``dtype``: the column's dtype; ``table``, ``source``,
    ``rowid``: the table, the SQL expression read and the row, when :meth:`Database.numeric_frame` found them
    (else None). ``str()`` is the one-line problem, without the file (:func:`open_database` adds it)."""

    def __init__(self, column: str, value: object, dtype: pl.DataType) -> None:
        super().__init__(column, value, dtype)
        self.column = column
        self.value = value
        self.dtype = dtype
        self.table: str | None = None
        self.source: str | None = None
        self.rowid: int | None = None

    def __str__(self) -> str:
        where = self.column
        if self.table is not None:
            source = self.source or quote(self.column)
            named = source[1:-1].replace('""', '"') if _is_identifier(source) else source
            where = f"{self.table}.{named}"
        numeric = "a number" if self.dtype.is_numeric() else f"of type {self.dtype}"
        kind = "an integer" if self.dtype.is_integer() else numeric
        row = f", rowid {self.rowid}" if self.rowid is not None else ""
        if self.dtype.is_integer() and isinstance(self.value, int) and not isinstance(self.value, bool):
            # An integer, but too large for the column (a device id of 2**32 - 1 in an Int32 column).
            bits = _INTEGER_BITS.get(self.dtype, 64)
            return (
                f"{where} holds a value outside the {bits}-bit integer range that column takes "
                f"({describe_value(self.value)}{row})"
            )
        return f"{where} holds a value that is not {kind} ({describe_value(self.value)}{row})"


def _is_identifier(sql: str) -> bool:
    """Whether ``sql`` is one quoted identifier (as :func:`quote` writes it), not an expression."""
    return len(sql) >= 2 and sql[0] == sql[-1] == '"' and '"' not in sql[1:-1].replace('""', "")


def describe_value(value: object) -> str:
    """A short account of an SQLite value for an error line: ``text 'abc'``, ``blob X'00010203'``, ``real
    1e+30, outside the 64-bit integer range`` (long text and blobs cut)."""
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if len(raw) > 16:
            return f"blob X'{raw[:16].hex().upper()}'... of {len(raw):,} bytes"
        return f"blob X'{raw.hex().upper()}'"
    if isinstance(value, str):
        return f"text {value[:40]!r}{'...' if len(value) > 40 else ''}"
    if isinstance(value, float):
        if math.isfinite(value) and abs(value) >= 2.0**63:
            return f"real {value!r}, outside the 64-bit integer range"
        return f"real {value!r}"
    return f"{type(value).__name__} {value!r}"[:60]


#: What polars raises when a row's value does not fit its column's dtype.
_UNFIT_ERRORS = (pl.exceptions.ComputeError, pl.exceptions.InvalidOperationError, OverflowError, TypeError)


def _unfit_value(rows: list[tuple], schema: dict[str, pl.DataType]) -> UnfitValueError | None:
    """The first value of ``rows`` (by column, then by row) that the frame builder refuses for its column's
    dtype, as an :class:`UnfitValueError`; None when each column builds on its own. Only called once the
    frame of ``rows`` failed: per column one build of the whole chunk, then a binary search over it (about
    20 builds of shrinking slices)."""
    for i, (name, dtype) in enumerate(schema.items()):
        column = [(r[i],) for r in rows]

        def builds(part: list[tuple], name: str = name, dtype: pl.DataType = dtype) -> bool:
            try:
                pl.DataFrame(part, schema=[(name, dtype)], orient="row")
            except _UNFIT_ERRORS:
                return False
            return True

        if builds(column):
            continue
        low, high = 0, len(column) - 1  # the first refused value lies in column[low..high]
        while low < high:
            mid = (low + high) // 2
            if builds(column[low : mid + 1]):
                low = mid + 1
            else:
                high = mid
        return UnfitValueError(name, column[low][0], dtype)
    return None


def fetch_frame(
    con: sqlite3.Connection,
    sql: str,
    schema: dict[str, pl.DataType],
    table: str | None = None,
    sources: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Run ``sql`` through sqlite3 and return its rows as a frame with ``schema`` (column order = SELECT
    order).

    Rows are fetched in chunks of :data:`FETCH_ROWS` and turned into frames chunk by chunk, so a large table
    never exists as one list of Python tuples. A value its column's dtype cannot hold (text ``'abc'`` in an
    integer column, a blob, a REAL outside the int64 range) raises :class:`UnfitValueError` naming the column
    and the value; text that reads as a number and REAL values within range are taken (as polars converts
    them). ``table`` (the one table ``sql`` reads) and ``sources`` (output column -> the SQL expression read,
    when other than the column's quoted name) let that error name the table, the column and the row, as
    :meth:`Database.numeric_frame`'s do (a blob in StringIds.value was 'value holds a value ...')."""
    try:
        return _fetch_frame(con, sql, schema)
    except UnfitValueError as exc:
        if table is not None:
            exc.table = table
            exc.source = (sources or {}).get(exc.column) or quote(exc.column)
            exc.rowid = rowid_of(con, table, exc.source, exc.value)
        raise


def _fetch_frame(con: sqlite3.Connection, sql: str, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    cursor = con.execute(sql)
    parts = []
    while rows := cursor.fetchmany(FETCH_ROWS):
        try:
            parts.append(pl.DataFrame(rows, schema=list(schema.items()), orient="row"))
        except _UNFIT_ERRORS as exc:
            unfit = _unfit_value(rows, schema)
            if unfit is None:
                raise
            raise unfit from exc
    if not parts:
        return pl.DataFrame(schema=schema)
    return parts[0] if len(parts) == 1 else pl.concat(parts, rechunk=True)


def rowid_of(con: sqlite3.Connection, table: str, source: str, value: object, where: str = "") -> int | None:
    """The rowid of the first row of ``table`` whose ``source`` (an SQL expression) is ``value`` (matching
    :func:`fetch_frame`'s rows: ``where`` applies), by one query; None when not found (a table without
    rowids, an expression over several columns)."""
    sql = f"SELECT rowid FROM {quote(table)}{_and_where(where, f' WHERE {source} IS ?')} LIMIT 1"
    try:
        row = con.execute(sql, (value,)).fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row and isinstance(row[0], int) else None


def _and_where(where: str, clause: str) -> str:
    """A WHERE clause of both ``where`` (a condition, or "") and ``clause`` (" WHERE condition", or "", as
    :func:`rowid_slices` gives it)."""
    conditions = [c for c in (where, clause.removeprefix(" WHERE ")) if c]
    return " WHERE " + " AND ".join(f"({c})" for c in conditions) if conditions else ""


def binary_to_text(values: pl.Series) -> pl.Series:
    """Bytes (Binary) -> text (String), bytes that are not UTF-8 as U+FFFD, as :func:`connect` reads text:
    one vectorized cast, or, when some value is not UTF-8, one decode per distinct value."""
    try:
        return values.cast(pl.String)
    except pl.exceptions.ComputeError:
        distinct = values.unique().drop_nulls()
        texts = pl.Series([bytes(v).decode("utf-8", "replace") for v in distinct], dtype=pl.String)
        return values.replace_strict(distinct, texts, default=None, return_dtype=pl.String)


def adbc_database(path: Path) -> Any | None:
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
        return adbc_driver_sqlite.connect(read_only_uri(path))
    except Exception:  # any driver failure: the sqlite3 path reports the problem properly
        return None


def read_threads() -> int:
    """Threads for sliced reads: polars' thread-pool size (``POLARS_MAX_THREADS`` sets it), at most 8."""
    return max(1, min(8, pl.thread_pool_size()))


def rowid_span(con: sqlite3.Connection, table: str) -> tuple[int, int] | None:
    """(smallest, largest) rowid of ``table`` (two B-tree lookups, not a scan), or None for an empty table
    or one without rowids."""
    try:
        low = con.execute(f"SELECT min(rowid) FROM {quote(table)}").fetchone()[0]
        high = con.execute(f"SELECT max(rowid) FROM {quote(table)}").fetchone()[0]
    except sqlite3.Error:
        return None
    if not isinstance(low, int) or not isinstance(high, int):
        return None
    return low, high


def rowid_slices(con: sqlite3.Connection, table: str, threads: int) -> list[str]:
    """WHERE clauses that split ``table`` into ``threads`` contiguous rowid ranges, in rowid order, or
    ``[""]`` (no split) for a small table, one thread, or a table without rowids.

    A full scan of a rowid table returns rows in rowid order, so the slices read one after the other
    return exactly the rows of the unsplit query, in the same order."""
    if threads < 2:
        return [""]
    span = rowid_span(con, table)
    if span is None or span[1] - span[0] + 1 < SLICE_MIN_ROWS:
        return [""]
    low, high = span
    step = (high - low + 1 + threads - 1) // threads
    bounds = [low + i * step for i in range(threads)]
    clauses = [f" WHERE rowid >= {b} AND rowid < {b + step}" for b in bounds[:-1]]
    return clauses + [f" WHERE rowid >= {bounds[-1]}"]


def adbc_sliced_frame(
    database: Any, sql: str, slices: list[str], schema: dict[str, pl.DataType]
) -> pl.DataFrame | None:
    """``sql`` + each of ``slices`` read through ADBC on its own thread (SQLite and the Arrow import release
    the GIL), the pieces joined in slice order; None when any piece fails."""
    if len(slices) == 1:
        return adbc_frame(database, sql + slices[0], schema)
    with ThreadPoolExecutor(max_workers=len(slices), thread_name_prefix="tracekit-read") as pool:
        pieces = list(pool.map(lambda where: adbc_frame(database, sql + where, schema), slices))
    if any(p is None for p in pieces):
        return None
    return concat_contiguous(pieces)


def concat_contiguous(pieces: list[pl.DataFrame]) -> pl.DataFrame:
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


def adbc_frame(database: Any, sql: str, schema: dict[str, pl.DataType]) -> pl.DataFrame | None:
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


class Database:
    """One SQLite file open read-only: table and column discovery (``sqlite_master`` / ``PRAGMA
    table_info``, cached), small queries through sqlite3 (:attr:`con`), large numeric tables through
    :meth:`numeric_frame` (ADBC when available, opened on first use)."""

    def __init__(self, con: sqlite3.Connection, path: Path | None = None) -> None:
        self.con = con
        self.path = path
        rows = con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
        self.tables: set[str] = {r[0] for r in rows}
        self._columns: dict[str, set[str]] = {}
        self._adbc: Any | None = None
        self._adbc_tried = False
        #: what the reader should say about how the file was read (e.g. a write-ahead log merged in)
        self.notes: list[str] = []
        #: tables read one per thread (:meth:`side_by_side`): each in one slice
        self._one_slice = False

    def has(self, table: str) -> bool:
        return table in self.tables

    def columns(self, table: str) -> set[str]:
        if table not in self._columns:
            rows = self.con.execute(f"PRAGMA table_info({quote(table)})").fetchall()
            self._columns[table] = {r[1] for r in rows}
        return self._columns[table]

    def col(self, table: str, *candidates: str, default: str = "NULL") -> str:
        """SQL for the first of ``candidates`` that ``table`` has, else ``default``."""
        cols = self.columns(table)
        for name in candidates:
            if name in cols:
                return quote(name)
        return default

    def nonempty(self, table: str) -> bool:
        return (
            self.has(table)
            and self.con.execute(f"SELECT 1 FROM {quote(table)} LIMIT 1").fetchone() is not None
        )

    def key_values(self, table: str) -> dict[str, str]:
        """name -> value of a (name, value) table such as nsys's META_DATA_EXPORT; {} when absent."""
        if not self.has(table) or not {"name", "value"} <= self.columns(table):
            return {}
        return {
            str(k): "" if v is None else str(v)
            for k, v in self.con.execute(f"SELECT name, value FROM {quote(table)}").fetchall()
        }

    def row_estimate(self, table: str) -> int | None:
        """Rows of ``table`` as its rowid span (exact when no row was ever deleted, as in profiler exports;
        an upper bound otherwise), found without a scan; None when unknown."""
        span = rowid_span(self.con, table)
        return None if span is None else span[1] - span[0] + 1

    def numeric_frame(
        self, table: str, exprs: Mapping[str, str], schema: dict[str, pl.DataType], where: str = ""
    ) -> pl.DataFrame:
        """``SELECT exprs FROM table [WHERE where]`` for large tables of numbers (and blobs): columnar through
        ADBC when available (several times faster than building Python tuples, and lean), else
        :func:`fetch_frame` (also when ADBC fails, e.g. on a column whose values change type midway).

        ``exprs`` maps output column -> SQL expression; ``schema`` gives the dtypes (same keys, same order).
        A value its column's dtype cannot hold raises :class:`UnfitValueError` with the table, the column read
        and the value's rowid (one more query, on that failure only), which :func:`open_database` turns into
        the one line naming the file."""
        sql = f"SELECT {', '.join(f'{e} AS {quote(c)}' for c, e in exprs.items())} FROM {quote(table)}"
        if self.adbc() is not None:
            threads = 1 if self._one_slice else read_threads()
            slices = [_and_where(where, s) for s in rowid_slices(self.con, table, threads)]
            frame = adbc_sliced_frame(self._adbc, sql, slices, schema)
            if frame is not None:
                return frame
        try:
            return fetch_frame(self.con, sql + _and_where(where, ""), schema)
        except UnfitValueError as exc:
            exc.table, exc.source = table, exprs[exc.column]
            exc.rowid = self._rowid_of(table, exc.source, exc.value, where)
            raise

    def _rowid_of(self, table: str, source: str, value: object, where: str = "") -> int | None:
        return rowid_of(self.con, table, source, value, where)

    def adbc(self) -> Any | None:
        """The ADBC database handle (opened on first use), or None when ADBC is not used."""
        if not self._adbc_tried and self.path is not None:
            self._adbc_tried = True
            self._adbc = adbc_database(self.path)
        return self._adbc

    def side_by_side(self, *calls: Any) -> list[Any]:
        """The results of ``calls`` (functions without arguments that read tables of this database), run at
        the same time, one per thread, each table read in one slice, when ADBC reads the tables and there is
        more than one read thread; else one after the other. Two large tables read side by side keep both
        cores busy with no slices to join afterwards (a join copies every column once more)."""
        if len(calls) < 2 or read_threads() < 2 or self.adbc() is None:
            return [call() for call in calls]
        for table in self.tables:  # the column lists the reads look up, cached before the threads start
            self.columns(table)
        self._one_slice = True
        try:
            with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="tracekit-table") as pool:
                futures = [pool.submit(call) for call in calls]
                return [f.result() for f in futures]
        finally:
            self._one_slice = False

    def close(self) -> None:
        if self._adbc is not None:
            self._adbc.close()
            self._adbc = None


def check_header(header: bytes, size: int, path: Path) -> None:
    """Refuse, before any query, an SQLite file whose 100-byte header is cut short, names a page size SQLite
    cannot have, or declares more pages than the file holds (SQLite would read the missing pages as
    zeros; a forged header can declare terabytes). The declared page count (offset 28) counts only when
    the change counter (offset 24) equals the version-valid-for number (offset 92), as SQLite reads it."""
    if len(header) < 100:
        raise TraceFormatError(
            f"corrupt SQLite (truncated: {size} bytes, less than its 100-byte header)", path
        )
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise TraceFormatError(f"corrupt SQLite (its header names a page size of {page_size})", path)
    pages = int.from_bytes(header[28:32], "big")
    if pages and header[24:28] == header[92:96] and pages * page_size > size:
        declared, held = format_size(pages * page_size), format_size(size)
        if declared == held:  # (a file a few bytes short: the sizes in bytes, which differ)
            declared, held = f"{pages * page_size:,} bytes", f"{size:,} bytes"
        raise TraceFormatError(
            f"corrupt SQLite (truncated or forged): its header declares {pages:,} pages of {page_size} bytes "
            f"({declared}) but the file holds {held}; refused before reading",
            path,
        )


@contextmanager
def open_database(path: Path, expected: str) -> Iterator[Database]:
    """``path`` open read-only as a :class:`Database`, closed on exit. Raises TraceFormatError naming the
    file for a missing, unreadable, empty or non-SQLite file (``expected`` names what was expected, e.g.
    "an Nsight Systems SQLite export"), and for an SQLite error while the block reads it ("corrupt SQLite").
    A gzipped SQLite file (``x.sqlite.gz``) is inflated to a temporary file first (:func:`inflated_copy`),
    read from there and removed on exit; every message still names ``path``."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise TraceFormatError(f"cannot read ({exc.strerror})", path) from exc
    if size == 0:
        raise TraceFormatError("empty file", path)
    with open(path, "rb") as fh:
        header = fh.read(100)
    with inflated_copy(path) if header.startswith(GZIP_MAGIC) else nullcontext(path) as source:
        if source != path:
            size = source.stat().st_size
            with open(source, "rb") as fh:
                header = fh.read(100)
            if not header:
                raise TraceFormatError("empty file (a gzip file that inflates to nothing)", path)
        wal = wal_beside(path, header) if source == path else None
        journal = hot_journal(path) if source == path and header.startswith(SQLITE_MAGIC) else None
        if journal is not None and writer_holds_lock(path):
            raise TraceFormatError(
                f"is being written: a process holds its write lock, and its rollback journal {journal.name} "
                "holds the writes it has begun; analyze it once the writer has ended",
                path,
            )
        merged: list[int] = []  # the log's committed frames that SQLite applied (merged_copy appends)
        copied = wal is not None or journal is not None
        with merged_copy(path, wal, merged, journal) if copied else nullcontext(source) as source:
            if copied:
                size = source.stat().st_size
                with open(source, "rb") as fh:
                    header = fh.read(100)
            try:
                with _opened(path, source, header, size, expected) as database:
                    if journal is not None:
                        database.notes.append(_journal_note(journal))
                    if wal is not None:
                        database.notes.append(_log_note(wal, merged[0] if merged else 0))
                    yield database
            except TraceFormatError as exc:
                if wal is None or not merged or merged[0] <= 0:
                    raise
                # (a log SQLite applied that is another file's turns the export into that file)
                raise TraceFormatError(
                    f"{exc.message}; it was read with the writes of its write-ahead log {wal.name} beside it: if "
                    "that log is not this file's, move it away",
                    path,
                ) from exc


def _log_note(wal: Path, frames: int) -> str:
    """The warning for a file read with its write-ahead log ``wal``, of which SQLite applied ``frames``."""
    try:
        size = format_size(wal.stat().st_size)
    except OSError:
        size = "size unknown"
    if frames > 0:
        return (
            f"the file is in WAL mode, and its write-ahead log {wal.name} beside it holds writes not yet "
            f"checkpointed into it ({size}): the two were read together, from a temporary copy (the file "
            "alone misses them)"
        )
    # SQLite ignores a log whose header or checksums do not hold, and the frames after the last commit
    # frame: a copy cut short, or bytes that are no log. What was read is the file alone, as SQLite reads it.
    return (
        f"the file is in WAL mode, and its write-ahead log {wal.name} beside it ({size}) holds no complete "
        "write SQLite can apply (cut short, damaged, or no log): the file was read alone, as SQLite reads it; "
        "the writes made last may be missing"
    )


def _journal_note(journal: Path) -> str:
    """The warning for a file read with its hot rollback journal ``journal`` rolled back."""
    try:
        size = format_size(journal.stat().st_size)
    except OSError:
        size = "size unknown"
    return (
        f"its rollback journal {journal.name} beside it is hot: a writer ended in the middle of a transaction "
        f"(killed, or its machine stopped) and left the file half written ({size} of pages to restore); it was "
        "read as SQLite reads it, that transaction rolled back, from a temporary copy (the file alone holds "
        "part of the unfinished writes; the file and the journal are unchanged). If the writer was an export "
        "that did not finish, what it had not committed is missing: export it again"
    )


#: The SQLite header's file format write and read versions (offsets 18, 19) of a database in WAL mode.
WAL_FORMAT = 2
#: The first 8 bytes of a rollback journal's header (``aJournalMagic`` in SQLite's pager.c).
JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")
#: SQLite's lock bytes (os_unix.c, from ``PENDING_BYTE`` = 0x40000000): PENDING, RESERVED, then the 510 bytes
#: SHARED and EXCLUSIVE locks take; a writer holds a write lock on one of them (RESERVED on, EXCLUSIVE while
#: it writes pages into the file), readers only read locks.
LOCK_BYTES = (0x40000000, 512)


def hot_journal(path: Path) -> Path | None:
    """The rollback journal ``<path>-journal`` when it is hot: it exists and its header begins with the
    journal's magic number, so SQLite would play it back (restore the pages it holds) on the next open that
    may write; else None. An empty journal, or one whose header is zeroed (``journal_mode=TRUNCATE`` /
    ``PERSIST`` after a commit), says the transaction ended: the file alone is what was committed."""
    journal = Path(f"{path}-journal")
    try:
        if not journal.is_file():
            return None
        with open(journal, "rb") as fh:
            head = fh.read(len(JOURNAL_MAGIC))
    except OSError:
        return None
    return journal if head == JOURNAL_MAGIC else None


def writer_holds_lock(path: Path) -> bool:
    """Whether another process holds a write lock on ``path``'s SQLite lock bytes (:data:`LOCK_BYTES`): a
    writer in its transaction. Asked with ``F_GETLK``, which takes no lock; False where it cannot be told
    (not Linux, a file system without POSIX locks)."""
    if not sys.platform.startswith("linux"):
        return False
    import fcntl
    import struct

    layout = "hhqqi4x"  # Linux's struct flock: l_type, l_whence, l_start, l_len, l_pid
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        start, length = LOCK_BYTES
        asked = struct.pack(layout, fcntl.F_RDLCK, os.SEEK_SET, start, length, 0)
        found = struct.unpack(layout, fcntl.fcntl(fd, fcntl.F_GETLK, asked))
    except (OSError, ValueError, struct.error):
        return False
    finally:
        os.close(fd)  # (this process holds no lock on it: the reads are immutable, the copies other files)
    return found[0] != fcntl.F_UNLCK


def wal_beside(path: Path, header: bytes) -> Path | None:
    """The write-ahead log ``<path>-wal`` of an SQLite file in WAL mode (``header``: its first 100 bytes),
    when it exists and is not empty; else None. Such a log holds the latest writes until a checkpoint moves
    them into the file, and an immutable connection (:func:`connect`) does not read it: the file alone
    would be read without them, rows missing and no error."""
    from tracekit.io import write_ahead_log

    if not header.startswith(SQLITE_MAGIC) or len(header) < 20 or WAL_FORMAT not in (header[18], header[19]):
        return None
    return write_ahead_log(path)


@contextmanager
def merged_copy(
    path: Path, wal: Path | None, frames: list[int] | None = None, journal: Path | None = None
) -> Iterator[Path]:
    """A temporary copy of the SQLite file ``path`` with its hot rollback journal ``journal`` rolled back
    (:func:`hot_journal`: the pages it holds restored, as SQLite's next write open does) and its write-ahead
    log ``wal`` checkpointed into it (and back in rollback-journal mode, so that it reads alone), removed on
    exit; ``path``, ``wal``, ``journal`` and their folder are left as they were. A log or journal SQLite
    cannot apply is a TraceFormatError naming ``path``; a log it ignores (a bad header, checksums that do
    not hold, no commit frame) leaves the copy as the file was. ``frames``, when given, gets the number of
    the log's committed frames SQLite applied (0: none)."""
    beside = " and ".join(
        f"{what} {p.name}"
        for what, p in (("rollback journal", journal), ("write-ahead log", wal))
        if p is not None
    )
    try:
        folder = Path(tempfile.mkdtemp(prefix="tracekit-"))
    except OSError as exc:
        raise TraceFormatError(
            f"cannot make a temporary copy to read it with its {beside} ({exc})", path
        ) from exc
    copy = folder / "export.sqlite"
    try:
        try:
            shutil.copyfile(path, copy)
            if journal is not None:
                shutil.copyfile(journal, f"{copy}-journal")
            if wal is not None:
                shutil.copyfile(wal, f"{copy}-wal")
        except OSError as exc:
            raise TraceFormatError(f"cannot copy it with its {beside} ({exc})", path) from exc
        try:
            con = sqlite3.connect(copy)
            try:
                # A read plays a hot journal back and opens the log (SQLite validates its header and frames
                # then); a passive checkpoint says how many committed frames it holds, the truncating one
                # applies them.
                con.execute("SELECT count(*) FROM sqlite_master").fetchall()
                if wal is not None:
                    row = con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    if frames is not None:
                        frames.append(int(row[1]) if row and isinstance(row[1], int) else 0)
                    con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                    con.execute("PRAGMA journal_mode=DELETE").fetchall()
            finally:
                con.close()
        except sqlite3.Error as exc:
            raise TraceFormatError(f"corrupt SQLite (its {beside}: {exc})", path) from exc
        if (
            journal is not None and hot_journal(copy) is not None
        ):  # (not played back: never read half written)
            raise TraceFormatError(
                f"its rollback journal {journal.name} beside it is hot (a writer ended in the middle of a "
                "transaction), and SQLite did not roll it back on a copy: the file is half written",
                path,
            )
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def inflated_copy(path: Path) -> Iterator[Path]:
    """A temporary file holding the inflated bytes of the gzipped ``path`` (the inflated size watched as
    every gzipped input's is: :func:`tracekit.io.inflate_into`), removed on exit. SQLite needs random
    access: a compressed export cannot be read in place."""
    from tracekit.io import inflate_into

    try:
        fd, name = tempfile.mkstemp(prefix="tracekit-", suffix=".sqlite")
    except OSError as exc:
        raise TraceFormatError(f"cannot make a temporary file to inflate it into ({exc})", path) from exc
    copy = Path(name)
    try:
        with os.fdopen(fd, "wb") as sink:
            inflate_into(path, sink)
        yield copy
    finally:
        copy.unlink(missing_ok=True)


@contextmanager
def _opened(path: Path, source: Path, header: bytes, size: int, expected: str) -> Iterator[Database]:
    """The :class:`Database` of ``source`` (``path`` itself, or its inflated copy), every error naming ``path``."""
    if not header.startswith(SQLITE_MAGIC):
        raise TraceFormatError(f"not an SQLite database (expected {expected})", path)
    check_header(header, size, path)
    try:
        con = connect(source)
    except sqlite3.Error as exc:
        raise TraceFormatError(f"cannot open as SQLite ({exc})", path) from exc
    database = None
    try:
        database = Database(con, source)
        yield database
    except UnfitValueError as exc:
        raise TraceFormatError(str(exc), path) from exc
    except sqlite3.DataError as exc:
        if "too big" not in str(exc):
            raise TraceFormatError(f"corrupt SQLite ({exc})", path) from exc
        raise limits.LimitError(
            f"holds a value longer than {format_size(limits.current.max_event)} (or its record says so); pass "
            "--max-event SIZE to allow it",
            path,
        ) from exc
    except sqlite3.DatabaseError as exc:
        raise TraceFormatError(f"corrupt SQLite ({_first_line(exc)})", path) from exc
    except UnicodeDecodeError as exc:  # (sqlite3 decodes names as UTF-8: a damaged schema's are not)
        raise TraceFormatError(
            f"corrupt SQLite (a name in its schema is not UTF-8 text: {exc.reason})", path
        ) from exc
    finally:
        if database is not None:
            database.close()
        con.close()


def _first_line(exc: Exception) -> str:
    """SQLite's message, its first line (a malformed schema's message quotes the damaged CREATE statement,
    dozens of lines), cut at 200 characters."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."
