"""Reader for Nsight Systems SQLite exports (``nsys export --type sqlite``), versions 2022.4 to 2026.x.

Tables and columns are discovered at run time (``sqlite_master`` / ``PRAGMA table_info``); every table is
optional except that a file with none of ``StringIds``, ``NVTX_EVENTS`` or a ``CUPTI_ACTIVITY_KIND_*`` table
is not an Nsight Systems export, and ``StringIds`` is required as soon as a table that refers to it has rows
(its ids unique, as nsys's primary key makes them: an id given two strings is an error).
The file is opened read-only and immutable; it is never modified.

What lands where (all timestamps are int64 nanoseconds on the export's session clock, unchanged):

``ops`` (GPU work)
    ``CUPTI_ACTIVITY_KIND_KERNEL`` -> kind "kernel"; ``name`` = the ``demangledName`` string (``shortName``
    when the demangled one is absent); ``device`` = ``deviceId`` (the CUDA device ordinal CUPTI reports;
    where ``TARGET_INFO_CUDA_DEVICE`` shows the processes numbering their GPUs differently, each rank with
    its own ``CUDA_VISIBLE_DEVICES``, the nsys GPU id of (pid, deviceId) instead, for every op and
    ``meta["gpus"]``, with a warning);
    ``stream`` = ``streamId``; ``correlation`` = ``correlationId``; ``graph`` = ``graphId`` (null before
    nsys 2024.x, which does not export it); ``pid`` = ``(globalPid >> 24) & 0xFFFFFF`` (the OS pid).
    ``CUPTI_ACTIVITY_KIND_MEMCPY`` -> kind "memcpy", name "[CUDA memcpy HtoD]" etc. from ``copyKind``;
    ``CUPTI_ACTIVITY_KIND_MEMSET`` -> kind "memset", name "[CUDA memset]".
    ``CUPTI_ACTIVITY_KIND_GRAPH_TRACE`` (``--cuda-graph-trace=graph``, nsys's default with CUDA 11.7+: a graph
    replay is one row, its kernels are not recorded) -> kind "graph", name "CUDA graph <graphId>", ``graph`` =
    ``graphId``, with a warning (the GPU counts as busy over the whole graph; its kernels are not counted).
    A launch the export also holds node by node keeps its kernels, not its whole row; a row whose ``deviceId``
    is INT_MAX (its first node ran on the host) gets its stream's, else its process's device, else none.
    Rows of any of these tables that CUPTI could not time (start and end both 0) are left out, with a warning.
    Kernels lasting 0 ns (end = start; no real kernel does) are kept, with a warning from 10% of the kernels.
    Another ``CUPTI_ACTIVITY_KIND_*`` table with rows whose kind names device work
    (``..._DEVICE_GRAPH_TRACE``, ``..._MEMCPY2``, ``..._CDP_KERNEL``) is not read: a warning names it (its
    work is not in GPU busy); when it is the only GPU work the trace is no CPU-only one (no ops, no
    verdict). These tables, and NVTX_EVENTS, held only under a versioned name (``<name>_V<n>``) are read
    under it (the highest n), with a warning.
    An op's ``correlationId`` 0 (CUPTI's "none") is read as null. Ops without ``globalPid`` (null, or no such
    column) get the process of the trace's CUDA calls when those all come from one (with a warning); with
    calls of several processes they stay without one, and a warning says that they cannot be linked.
``api`` (host calls)
    ``CUPTI_ACTIVITY_KIND_RUNTIME`` (and ``CUPTI_ACTIVITY_KIND_DRIVER`` where an export has it).
    ``kind`` = "driver" for rows of the DRIVER table and for RUNTIME rows with ``eventClass`` 1
    (TRACE_PROCESS_EVENT_CUDA_DRIVER: nsys puts driver calls such as ``cuLaunchKernel`` there), else
    "runtime". ``name`` has one version suffix stripped (``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel``,
    ``cudaGetDeviceProperties_v2_v12000`` -> ``cudaGetDeviceProperties_v2``; before the per-thread suffix of a
    driver call, where CUPTI puts it: ``cuStreamBeginCapture_v2_ptsz`` -> ``cuStreamBeginCapture_ptsz``).
    ``pid`` / ``thread`` =
    ``(globalTid >> 24) & 0xFFFFFF`` / ``globalTid & 0xFFFFFF``. Rows that repeat one non-zero correlation id
    within a process (nsys 2022.4 writes each call twice, a plain "CUDA backtrace" row and the ``_v`` row)
    are collapsed to the outermost one: earliest start, then longest.
``ranges`` (NVTX)
    ``NVTX_EVENTS`` rows of eventType 59 (push/pop) and 60 (start/end), and 70 / 71 (the same, imported from an
    NVTXT text file with ``ImportNvtxt``); name from ``text`` or ``textId`` ->
    ``StringIds``; ``thread`` / ``pid`` from ``globalTid`` (for start/end ranges: the thread that started
    it); ``domain`` = the name given by the domain's eventType-75 row, "default" for domainId 0 (a domain
    named "gpu", the model's word for device-side annotations, is "gpu (NVTX)");
    ``depth`` = number of ranges on the same thread (any domain) still open when this one starts (0 = top
    level; a start/end range, NVTX's process range, that crosses the ranges of the thread it was started on
    counts in no other range's nesting: it is an async span, not a frame of that thread's stack). Event types (and the driver calls' ``eventClass``) are the ids the export's own
    ``ENUM_NSYS_EVENT_TYPE`` / ``ENUM_NSYS_EVENT_CLASS`` give them, where it has them. A range with no end
    (never closed: the capture ended inside it) keeps a null end, so that it has no latency and is no
    iteration; for the nesting it counts as open to the trace end (the largest
    timestamp in the file's frames), and the reader adds a warning. nsys 2022.4 gives such a range the
    capture's end (``ANALYSIS_DETAILS.duration``) instead of none: a range ending exactly there is read as
    never closed too. NVTX events whose ``textId`` is missing from StringIds (and
    without ``text``) have a null name, with a warning. Marks (34), thread names (39) and domain events
    (75/76) are not ranges, nor are the ranges nsys writes itself (its Python GIL trace, ``-t python-gil``:
    'Holding GIL' / 'Waiting for GIL' in domain "GIL Trace"; its Python sampling), left out with a warning.
``gpu_metrics``
    nsys 2024+: ``GPU_METRICS`` joined to ``TARGET_INFO_GPU_METRICS`` on (typeId, metricId) for
    ``metricName``. nsys 2022.x/2023.x: ``GENERIC_EVENTS`` rows whose type belongs to a
    ``GENERIC_EVENT_SOURCES`` source named "GpuMetrics"; each row is a JSON object {metric name: value}
    (``timestamp`` is null in 2022.4 exports: ``rawTimestamp``, on the session clock, is used then).
    ``device``: the sample's GPU, ``typeId & 0xFF`` (the PerfWorks GPU id), mapped to the CUDA device id
    through ``TARGET_INFO_GPU`` when it holds distinct ``cuDevice`` values; without any GPU table, the samples
    of several GPUs get no device (which CUDA device each is cannot be known), with a warning. ``metric`` is
    the name as nsys spells it; ``unit`` is "%" for a bracketed suffix ending in "%" ("SMs Active
    [Throughput %]"), else the bracket's content ("[Avg Warps per Cycle]" -> "Avg Warps per Cycle"; "[MHz]" ->
    "MHz", but "Hz" where the values are cycles per second, as nsys 2024+ stores its clocks under that name: an
    H200's GPC clock 1.98e9); for the bracket-less 2022/2023 names it follows nsys's metric-set definitions:
    "... Frequency" -> "Hz", "... Started" / "... Requests ..." -> "count", otherwise "%". Values as nsys stored
    them.
``launches`` (only when asked for by name: the Nsight Compute join's launch check)
    ``CUPTI_ACTIVITY_KIND_KERNEL``'s ``streamId``, ``start``, ``end`` and ``gridX``..``blockZ``
    (:func:`_read_launches`), one more scan of the kernel table.

CPU-only traces (no kernel, memcpy or memset row, e.g. a CPU PyTorch run under ``nsys -t nvtx,osrt`` with
``emit_nvtx``): ``ops`` holds the leaf NVTX ranges of depth >= 1 (ranges that contain no other range on
their thread), kind "operator", ``device`` -1, ``stream`` = the thread id, ``pid`` set, ``correlation`` and
``graph`` null (a leaf never closed ends at the trace end: open, hence busy, until the capture stopped inside it,
with a warning); ``meta["device"]`` is then "cpu". Top-level ranges (the user's ``iteration``) stay ranges only,
and so do ranges named ``iteration`` or ``ProfilerStep#N`` at any depth (inside a ``benchmark`` range they
are leaves of depth 1, and would be operators busy all of their own iteration: "compute-bound", 100%).
An export whose API tables hold kernel launch calls but no device op (CUPTI's activity buffers never flushed:
the process was killed) is no CPU-only trace: a GPU trace without ops, with a warning. A CPU-only trace whose
``META_DATA_CAPTURE`` lists what the capture traced without CUDA (``nsys profile -t nvtx,osrt``) is warned
about: any GPU work the application did is not in it.

``meta``: ``format`` "nsys-sqlite", ``format_version`` (EXPORT_PRODUCT_VERSION, e.g. "2024.6.2.25"),
``export_schema_version``, ``device``, ``gpu`` (name of the GPU that ran most kernels), ``gpus`` (list of
{id, name}, id = CUDA device id), ``driver`` (NvDriverVersion), ``cuda_driver`` ("12.8" from 12080),
``synthetic`` (True when the export metadata has TRACEKIT_SYNTHETIC = "1" or the file name says
"synthetic"), ``gpu_metrics_period_ns`` (when GPU metrics were read: the median interval between a GPU's
samples, else the capture's stated sampling frequency;
:func:`tracekit.readers.nsys_gpu_metrics.sampling_period_ns`), ``wall_clock_base_ns`` (the session's start as
ns since the Unix epoch, ``TARGET_INFO_SESSION_START_TIME.utcEpochNs``: the wall-clock time of timestamp 0,
where the export has it; :func:`tracekit.readers.nsys_meta.session_start_epoch_ns`), ``lost_events`` (only where
nsys's own diagnostics, ``DIAGNOSTIC_EVENT`` (2024+), say it lost events: {"device" / "nvtx" / "gpu_metrics" /
"all": nsys's messages}, with a warning quoting them; :func:`_lost_events`), ``warnings``.

This module decodes and normalizes the tables. The SQLite reads themselves (read-only connection, ADBC or
sqlite3, threaded rowid slices) are :mod:`tracekit.readers.sqlite_engine`; GPU metrics
:mod:`tracekit.readers.nsys_gpu_metrics`; GPUs and ``meta`` :mod:`tracekit.readers.nsys_meta`; the
(pid, correlation) key and the outermost-call rule :mod:`tracekit.calls`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, cast

import polars as pl

from tracekit import progress
from tracekit.calls import collapse_duplicate_calls
from tracekit.errors import TraceFormatError
from tracekit.model import (
    API_NAMES_READ,
    API_SCHEMA,
    LAUNCH_API_NAMES,
    LAUNCHES_SCHEMA,
    META_LOST_EVENTS,
    OPS_OF_FAR_CALLS,
    OPS_SCHEMA,
    OPS_WITHOUT_END,
    FrameSpec,
    Trace,
    calls_named,
    conform,
    empty_frame,
    union_ns,
    wanted_frames,
)
from tracekit.readers.nesting import leaf_mask, nesting_depth
from tracekit.readers.nsys_gpu_metrics import read_gpu_metrics, sampling_period_ns
from tracekit.readers.nsys_meta import export_meta, gpu_table, per_process_numbering
from tracekit.readers.sqlite_engine import Database, binary_to_text, fetch_frame, open_database, quote
from tracekit.readers.timestamps import (
    CAPTURE_SLACK_NS,
    FAR_NS,
    far_events,
    launched_by_far_calls,
    placed_by_own_start_said,
)

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
#: Largest kernel or API table (rows) read side by side with the other (one thread each,
#: :meth:`~tracekit.readers.sqlite_engine.Database.side_by_side`); above it the tables are read one after
#: the other, each in rowid slices: reading both at once holds both tables' decoding memory at once (~+320 MB
#: after the read at 10^7 kernels, measured), and the largest traces need the memory more than the speed.
SIDE_BY_SIDE_MAX_ROWS = 1 << 22
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
#: whole-graph executions: ``nsys profile --cuda-graph-trace=graph`` (the default with CUDA 11.7+), where the
#: kernels of a graph replay are not recorded one by one
GRAPH_TRACE_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
DRIVER_TABLE = "CUPTI_ACTIVITY_KIND_DRIVER"

#: NVTX_EVENTS.eventType values (ENUM_NSYS_EVENT_TYPE).
NVTX_MARK = 34
NVTX_THREAD_NAME = 39
NVTX_PUSH_POP = 59
NVTX_START_END = 60
#: The same two kinds of range imported from an NVTXT text file (Nsight's ``ImportNvtxt``), which NVIDIA's own
#: range reports (``nvtx_pushpop_trace``, ``nvtx_gpu_proj_trace``) read beside 59 and 60.
NVTXT_PUSH_POP = 70
NVTXT_START_END = 71
NVTX_DOMAIN_CREATE = 75

#: The ranges frame's domain of device-side copies of host ranges (Kineto's ``gpu_user_annotation``), which
#: the range choice passes over. Every NVTX range is a host range: a user's NVTX domain of that name is read
#: as "gpu (NVTX)" (its ranges had been invisible: 4 'iteration' ranges analyzed as one window of the trace).
GPU_SIDE_DOMAIN = "gpu"

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

#: ENUM_CUDA_MEM_KIND (memory kinds of a copy's ``srcKind`` / ``dstKind``) as nsys 2022.4 to 2026.2 write it.
MEM_KIND_ENUM = "ENUM_CUDA_MEM_KIND"
PAGEABLE_MEM_KIND = "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE"
MEM_KIND_PAGEABLE = 0
MEM_KINDS: dict[int, str] = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
    6: "Managed Static",
    7: "Unknown",
}

#: A version suffix of a CUDA API name, at the end or before the per-thread-default-stream suffix: CUPTI
#: names runtime calls ``cudaLaunchKernel_ptsz_v7000`` but versioned driver calls
#: ``cuMemcpyDtoHAsync_v2_ptsz`` (cupti_driver_cbid.h); replaced by :data:`API_SUFFIX_KEPT`.
API_SUFFIX = r"_v\d+(_ptsz|_ptds)?$"
API_SUFFIX_KEPT = "${1}"

#: NVTX ranges as read, before nesting (``end`` null for a range never closed).
RAW_RANGES_SCHEMA: dict[str, pl.DataType] = {
    "start": pl.Int64,
    "end": pl.Int64,
    "pid": pl.Int64,
    "thread": pl.Int64,
    "name": pl.String,
    "domain": pl.String,
}


def _require_columns(export: Database, table: str, needed: Iterable[str], path: Path) -> None:
    missing = [c for c in needed if c not in export.columns(table)]
    if missing:
        raise TraceFormatError(f"{table} lacks required column(s) {', '.join(missing)}", path)


def _lookup_names(frame: pl.DataFrame, strings: pl.DataFrame, id_col: str, out: str) -> pl.DataFrame:
    """Replace integer column ``id_col`` by the StringIds value, as column ``out`` (null when missing).

    StringIds ids are unique (its primary key; :func:`_read_strings` rejects a table that repeats one): each
    id is mapped to its string, adding one column of string views that share StringIds' buffers (16 bytes a
    row), without copying the frame's other columns."""
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


def op_pid(global_pid: pl.Expr) -> pl.Expr:
    """The process of a device op (:func:`pid_of` of its ``globalPid``), null for process 0: no application is the
    OS's idle task, and nsys 2021.x exports a default 0 for a field it lacks ("all fields are declared as NOT
    NULL ... default value for that field is exported"). An op without a process is then given the process of
    the trace's calls where there is one (:func:`_with_launching_process`); read as process 0, it matched no
    launch call at all."""
    pid = pid_of(global_pid)
    return pl.when(pid != 0).then(pid).alias(pid.meta.output_name())


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


def _activity_columns(export: Database, table: str) -> tuple[dict[str, str], dict[str, pl.DataType]]:
    """SQL and dtypes of the columns every CUPTI activity table (kernel, memcpy, memset) shares:
    ``start``, ``end``, ``device``, ``stream``, ``pid`` (still the globalPid) and ``correlation``."""
    sources = {"device": "deviceId", "stream": "streamId", "pid": "globalPid", "correlation": "correlationId"}
    exprs = {"start": '"start"', "end": '"end"'} | {c: export.col(table, s) for c, s in sources.items()}
    return exprs, {c: OPS_SCHEMA[c] for c in exprs}


def _read_kernels(
    export: Database, strings: pl.DataFrame, path: Path, wanted: Collection[str] | None = None
) -> tuple[pl.DataFrame, int]:
    """Kernel rows (OPS_SCHEMA columns in ``wanted``, None = all) and the number whose name id is missing
    from StringIds."""
    t = KERNEL_TABLE
    _require_columns(export, t, ("start", "end"), path)
    cols = export.columns(t)
    name_cols = [c for c in ("demangledName", "shortName", "mangledName", "name") if c in cols]
    if not name_cols:
        raise TraceFormatError(f"{t} has no kernel name column (demangledName/shortName)", path)
    name_sql = (
        f"COALESCE({', '.join(quote(c) for c in name_cols)})" if len(name_cols) > 1 else quote(name_cols[0])
    )
    exprs, schema = _activity_columns(export, t)
    exprs |= {"graph": export.col(t, "graphId"), "name_id": name_sql}
    schema |= {"graph": OPS_SCHEMA["graph"], "name_id": pl.Int64}
    # device is always read (meta names the GPU that ran most kernels). Name ids only with names: the
    # missing-name count (a warning) needs them, but a whole column is a cost analyze does not need to pay.
    want_names = wanted is None or "name" in wanted
    always = ("start", "end", "device", "name_id") if want_names else ("start", "end", "device")
    exprs, schema = _select(exprs, schema, wanted, always)
    frame = export.numeric_frame(t, exprs, schema)
    if "pid" in frame.columns:
        frame = frame.with_columns(op_pid(pl.col("pid")))
    if not want_names:
        return frame.with_columns(kind=pl.lit("kernel")), 0
    named = strings.filter(pl.col("value").is_not_null())
    nameless = frame.select(
        (pl.col("name_id").is_null() | ~pl.col("name_id").is_in(named.get_column("id").implode())).sum()
    ).item()
    frame = _lookup_names(frame, strings, "name_id", "name")
    return frame.with_columns(kind=pl.lit("kernel")), int(nameless)


#: CUPTI_ACTIVITY_KIND_KERNEL's launch dimensions -> :data:`tracekit.model.LAUNCHES_SCHEMA` columns
LAUNCH_DIM_COLUMNS: dict[str, str] = {
    "grid_x": "gridX",
    "grid_y": "gridY",
    "grid_z": "gridZ",
    "block_x": "blockX",
    "block_y": "blockY",
    "block_z": "blockZ",
}


def _read_launches(export: Database) -> pl.DataFrame | None:
    """The kernels' launch dimensions (:data:`tracekit.model.LAUNCHES_SCHEMA`: ``streamId``, ``start``,
    ``end``, ``gridX``..``blockZ``), read only when the ``launches`` frame is asked for; None when the export
    has no kernel table or lacks one of those columns. A kernel with a null dimension has no row."""
    t = KERNEL_TABLE
    if not export.has(t) or not {"start", "end", "streamId", *LAUNCH_DIM_COLUMNS.values()} <= export.columns(
        t
    ):
        return None
    exprs = {"stream": quote("streamId"), "start": '"start"', "end": '"end"'}
    exprs |= {c: quote(source) for c, source in LAUNCH_DIM_COLUMNS.items()}
    frame = export.numeric_frame(t, exprs, dict(LAUNCHES_SCHEMA))
    return frame.filter(pl.all_horizontal(pl.col(list(LAUNCH_DIM_COLUMNS)).is_not_null()))


def mem_kind_labels(export: Database) -> tuple[int, dict[int, str]]:
    """(the id of pageable host memory, id -> label) of the export's ``ENUM_CUDA_MEM_KIND`` (nsys 2022.4 to
    2026.2: :data:`MEM_KINDS`, pageable 0; CUPTI's own enum numbers them otherwise), the defaults where the
    export lacks it."""
    pageable = enum_ids(export, MEM_KIND_ENUM, {PAGEABLE_MEM_KIND: MEM_KIND_PAGEABLE})[PAGEABLE_MEM_KIND]
    labels = dict(MEM_KINDS)
    t = MEM_KIND_ENUM
    if export.has(t) and {"id", "label"} <= export.columns(t):
        found = {
            i: str(v)
            for i, v in export.con.execute(f'SELECT "id", "label" FROM {quote(t)}').fetchall()
            if isinstance(i, int) and v is not None
        }
        if found:
            labels = found
    return pageable, labels


def _read_copies(
    export: Database, table: str, kind: str, path: Path, wanted: Collection[str] | None = None
) -> pl.DataFrame:
    """Memcpy or memset rows. A copy with pageable host memory on either side (``srcKind`` / ``dstKind``,
    :func:`mem_kind_labels`) is named with its memory kinds as Nsight Systems' timeline and Kineto name it,
    "[CUDA memcpy DtoH (Device -> Pageable)]": its call may wait for the copy (CUDA's "API synchronization
    behavior"), which :func:`tracekit.analyzers.attribution.copy_kinds` reads from the name. Other copies
    keep the plain name. The kinds come as one SQL column (src * 2^16 + dst, null unless a side is
    pageable), dropped after naming."""
    _require_columns(export, table, ("start", "end"), path)
    exprs, schema = _activity_columns(export, table)
    exprs["copy_kind"] = export.col(table, "copyKind") if kind == "memcpy" else "NULL"
    schema["copy_kind"] = pl.Int64
    cols = export.columns(table)
    pageable, labels = mem_kind_labels(export) if kind == "memcpy" else (MEM_KIND_PAGEABLE, {})
    # the kinds only name the copy: not read when the name is not asked for
    with_kinds = kind == "memcpy" and {"srcKind", "dstKind"} <= cols and (wanted is None or "name" in wanted)
    if with_kinds:
        exprs["mem_kinds"] = (
            f'CASE WHEN "srcKind" = {pageable} OR "dstKind" = {pageable} '
            f'THEN "srcKind" * 65536 + "dstKind" END'
        )
        schema["mem_kinds"] = pl.Int64
    always = ("start", "end", "device", "copy_kind", "mem_kinds")
    exprs, schema = _select(exprs, schema, wanted, always)
    frame = export.numeric_frame(table, exprs, schema)
    if "pid" in frame.columns:
        frame = frame.with_columns(op_pid(pl.col("pid")))
    if kind == "memcpy":
        direction = pl.col("copy_kind").replace_strict(MEMCPY_KINDS, default=None, return_dtype=pl.String)
        suffix = pl.lit("]")
        if with_kinds:

            def label(ids: pl.Expr) -> pl.Expr:
                return ids.replace_strict(labels, default=None, return_dtype=pl.String).fill_null("Unknown")

            kinds = pl.col("mem_kinds")
            memory = pl.concat_str(pl.lit(" ("), label(kinds // 65536), pl.lit(" -> "), label(kinds % 65536))
            suffix = pl.when(kinds.is_null()).then(suffix).otherwise(pl.concat_str(memory, pl.lit(")]")))
        name = (
            pl.when(direction.is_null())
            .then(pl.lit("[CUDA memcpy]"))
            .otherwise(pl.concat_str(pl.lit("[CUDA memcpy "), direction, suffix))
        )
    else:
        name = pl.lit("[CUDA memset]")
    return frame.with_columns(name=name, kind=pl.lit(kind), graph=pl.lit(None, pl.Int64)).drop(
        "copy_kind", "mem_kinds", strict=False
    )


def _read_graph_executions(
    export: Database, path: Path, wanted: Collection[str] | None = None
) -> pl.DataFrame:
    """Whole-graph executions (:data:`GRAPH_TRACE_TABLE`) as ops of kind "graph", named "CUDA graph <id>",
    ``graph`` = ``graphId``."""
    t = GRAPH_TRACE_TABLE
    _require_columns(export, t, ("start", "end"), path)
    exprs, schema = _activity_columns(export, t)
    exprs["graph"], schema["graph"] = export.col(t, "graphId"), OPS_SCHEMA["graph"]
    exprs, schema = _select(exprs, schema, wanted, ("start", "end", "device", "graph"))
    frame = export.numeric_frame(t, exprs, schema)
    if "pid" in frame.columns:
        frame = frame.with_columns(op_pid(pl.col("pid")))
    name = (
        pl.when(pl.col("graph").is_null())
        .then(pl.lit("CUDA graph"))
        .otherwise(pl.concat_str(pl.lit("CUDA graph "), pl.col("graph").cast(pl.String)))
    )
    return frame.with_columns(name=name, kind=pl.lit("graph"))


# ----------------------------------------------------------------------------------------------- api


def _read_api_table(
    export: Database, table: str, strings: pl.DataFrame, path: Path, wanted: Collection[str] | None = None
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
        op_pid(pl.col("global_tid")).alias("pid"),  # (process 0, a default: none, as for the ops)
        *([tid_of(pl.col("global_tid")).alias("thread")] if want_thread else []),
    ).drop("global_tid")
    if "name_id" in frame.columns:
        # Strip the version suffix once per distinct string, not once per call.
        names = strings.with_columns(pl.col("value").str.replace(API_SUFFIX, API_SUFFIX_KEPT))
        frame = _lookup_names(frame, names, "name_id", "name")
    if wanted is None or "kind" in wanted:
        if table == DRIVER_TABLE:
            kind = pl.lit("driver")
        else:
            driver = enum_ids(
                export, "ENUM_NSYS_EVENT_CLASS", {"TRACE_PROCESS_EVENT_CUDA_DRIVER": EVENT_CLASS_CUDA_DRIVER}
            )["TRACE_PROCESS_EVENT_CUDA_DRIVER"]
            kind = (
                pl.when(pl.col("event_class") == driver).then(pl.lit("driver")).otherwise(pl.lit("runtime"))
            )
        frame = frame.with_columns(kind=kind)
    return frame.drop("event_class", strict=False)


# -------------------------------------------------------------------------------------------- ranges


#: Column of the raw NVTX ranges marking a start/end range (NVTX's process range, which may end on any thread:
#: no frame of a thread's push/pop stack), dropped before the Trace is built.
PROCESS_RANGE = "_process_range"


def with_nesting(ranges: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Add ``depth`` (Int32, enclosing ranges still open at this one's start) and ``has_child`` (bool)."""
    return ranges.with_columns(depth=nesting_depth(ranges, keys), has_child=~leaf_mask(ranges, keys))


def enum_ids(export: Database, table: str, defaults: dict[str, int]) -> dict[str, int]:
    """The ids an nsys ``ENUM_*`` table gives the names in ``defaults`` (name -> the id nsys 2022.4 to 2026.2
    give it), the default for a name the table lacks (or no such table): the reader keeps working on an
    export that renumbers an enum, instead of losing every row of the renumbered kind (no NVTX range read:
    the whole trace one window)."""
    if not export.has(table) or not {"id", "name"} <= export.columns(table):
        return dict(defaults)
    names = ", ".join("'" + n.replace("'", "''") + "'" for n in defaults)
    rows = export.con.execute(f'SELECT "name", "id" FROM {quote(table)} WHERE "name" IN ({names})').fetchall()
    found: dict[str, set[int]] = {}
    for name, id_ in rows:
        if isinstance(id_, int):
            found.setdefault(name, set()).add(id_)
    return {n: next(iter(found[n])) if len(found.get(n, ())) == 1 else d for n, d in defaults.items()}


def _session_ends(export: Database) -> list[int]:
    """The capture's end on the session clock (ns): ``ANALYSIS_DETAILS.duration`` (one per row, positive);
    [] when the export lacks it."""
    t = "ANALYSIS_DETAILS"
    if not export.has(t) or "duration" not in export.columns(t):
        return []
    rows = export.con.execute(f'SELECT DISTINCT "duration" FROM {quote(t)} WHERE "duration" > 0').fetchall()
    return [int(r[0]) for r in rows if isinstance(r[0], int)]


#: What nsys writes in DIAGNOSTIC_EVENT where ``--capture-range=cudaProfilerApi`` began the collection (2025.3, the
#: committed H200 samples: "Profiling started due to cudaProfilerStart API invoked in the application.", 12 to
#: 14 ms after "Profiling has started." at 0).
PROFILER_START_DIAGNOSTIC = r"(?i)^\s*profiling started due to cu(?:da)?ProfilerStart\b"


def _capture_start(diagnostics: list[Diagnostic]) -> int:
    """Where the capture's collection began on the session clock (ns): 0 (nsys writes timestamps from the
    capture's start), or, where nsys says cudaProfilerStart began it (:data:`PROFILER_START_DIAGNOSTIC`), that
    diagnostic's timestamp, the earliest: under ``--capture-range=cudaProfilerApi`` the clock's 0 is the
    session's start, and CUDA is traced from the cudaProfilerStart call on (in the real exports nothing of the
    application's lies between). ``diagnostics``: :func:`_read_diagnostics`."""
    starts = [
        d.first for d in diagnostics if d.first is not None and re.search(PROFILER_START_DIAGNOSTIC, d.text)
    ]
    return max(0, min(starts)) if starts else 0


def _without_ranges_before_capture(
    ranges: pl.DataFrame, warnings: list[str], capture_start: int = 0
) -> pl.DataFrame:
    """``ranges`` without those that began before the capture started (``start`` < ``capture_start``,
    :func:`_capture_start`: 0, as nsys writes timestamps from the capture's start and what came before it
    negative, recorded with nsys 2022.4, a domain created before a ``-y`` delay at -1.06 s; or the time nsys
    says cudaProfilerStart began the collection), with a warning. nsys 2022.4 drops such ranges itself (recorded
    with ``-y`` and an nvtx capture range); an export that keeps them holds none of their device work or CUDA
    calls before the start (CUDA is traced from the capture's start): read as iterations, their busy time was
    short by it, and a range wholly before the capture was an iteration without any work (utilization 0)."""
    # (a range ending before it starts is a damaged row, said and left out by the negative-duration rule)
    early = (
        (pl.col("start") < capture_start) & (pl.col("end").is_null() | (pl.col("end") >= pl.col("start")))
    ).fill_null(False)
    before = ranges.filter(early)
    if before.is_empty():
        return ranges
    names = ", ".join(repr(n) for n in before.get_column("name").unique(maintain_order=True).head(3))
    crossing = before.filter(pl.col("end").is_null() | (pl.col("end") > capture_start)).height
    started = (
        "start < 0" if capture_start == 0 else f"start < {capture_start} ns, when cudaProfilerStart began it"
    )
    warnings.append(
        f"{before.height} NVTX range(s) began before the capture started ({names}; {started}, "
        f"{crossing} of them still open when it began): the trace holds none of their work before the start, "
        "so they are left out (no iteration, no nesting), as nsys 2022.4 itself drops them"
    )
    return ranges.filter(~early)


#: NVTX domains nsys itself writes ranges in, which are no annotation of the program: its Python GIL trace
#: (``nsys profile -t python-gil``, nsys 2024+: a 'Holding GIL' / 'Waiting for GIL' range each time a Python
#: thread takes or waits for the GIL) and its Python sampling. Names as public readers of real exports give them
#: (two independent ones leave these domains out of the application's ranges).
PROFILER_NVTX_DOMAINS = ("GIL Trace", "Python Periodic Sampling")
#: The ranges of nsys's GIL trace, known by name also where their domain's create event is missing (a forked
#: child, whose parent created the domain), in a domain other than the default one.
GIL_RANGE_NAMES = ("Holding GIL", "Waiting for GIL")


def _without_profiler_ranges(ranges: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``ranges`` (with ``domain_id``, ``domain_name``) without those nsys wrote itself
    (:data:`PROFILER_NVTX_DOMAINS`, :data:`GIL_RANGE_NAMES`), with a warning. They hold no program structure and
    overlap the program's ranges without nesting in them (the GIL is taken and released anywhere): read as the
    program's, 'Holding GIL', the most frequent top-level range, became the iteration (one of 106 µs holding one of
    4 kernels, "framework-bound" at 0.19, where the 4 'step' ranges were compute-bound at 0.5), the program's
    ranges lost their depth, and in a CPU-only trace a wait for the GIL inside an iteration was an operator, busy."""
    own = pl.col("domain_name").is_in(PROFILER_NVTX_DOMAINS).fill_null(False) | (
        pl.col("domain_name").is_null()
        & (pl.col("domain_id").fill_null(0) != 0)
        & pl.col("name").is_in(GIL_RANGE_NAMES).fill_null(False)
    )
    found = ranges.filter(own)
    if found.is_empty():
        return ranges
    names = ", ".join(repr(n) for n in found.get_column("name").unique(maintain_order=True).head(3))
    warnings.append(
        f"{found.height} NVTX range(s) are nsys's own Python GIL trace or sampling ({names}), not the program's "
        "annotations: left out (no iteration, no nesting, no operator)"
    )
    return ranges.filter(~own)


def _crossing(raw: pl.DataFrame) -> pl.Series:
    """Per row of ``raw``: a start/end range (column :data:`PROCESS_RANGE`) that crosses another range of the
    thread it was started on (one open at its start that ends inside it, or one begun inside it still open at
    its end): no frame of that thread's stack. One that holds whole the ranges it overlaps nests as any range.
    Two inequality joins, each giving only the ranges open at one instant (a thread's stack there)."""
    candidate = raw.get_column(PROCESS_RANGE)
    if not candidate.any():
        return candidate
    rows = raw.with_row_index("_r")
    spans = rows.filter(candidate).select("_r", "pid", "thread", rs="start", re="end")
    others = rows.select(_o="_r", pp="pid", pt="thread", ps="start", pe="end")
    same_thread = (
        pl.col("pid").eq_missing(pl.col("pp"))
        & pl.col("thread").eq_missing(pl.col("pt"))
        & (pl.col("_r") != pl.col("_o"))
    )
    # open at its start, ending inside it
    out = spans.join_where(others, pl.col("ps") < pl.col("rs"), pl.col("pe") > pl.col("rs")).filter(
        same_thread & (pl.col("pe") < pl.col("re"))
    )
    # open at its end, begun inside it
    into = spans.join_where(others, pl.col("ps") < pl.col("re"), pl.col("pe") > pl.col("re")).filter(
        same_thread & (pl.col("ps") > pl.col("rs"))
    )
    crossing = pl.concat([out.get_column("_r"), into.get_column("_r")]).unique()
    return pl.int_range(raw.height, dtype=pl.UInt32, eager=True).is_in(crossing.implode())


def _nested(raw: pl.DataFrame) -> pl.DataFrame:
    """``raw`` NVTX ranges with ``depth`` and ``has_child`` (:func:`with_nesting`) on their thread (pid, thread),
    where a start/end range (column :data:`PROCESS_RANGE`: NVTX's process range, which may end on any thread,
    an async span such as a request's lifetime) that crosses the ranges of the thread it was started on
    (:func:`_crossing`) takes no part in their nesting: it is no frame of that thread's stack. Counted there, a
    serving loop's 'step' push/pop ranges begun while a request was open were nested in it: 'step' had one
    top-level range of 6 (one iteration, 5 of 6 kernels outside every iteration). Its own depth counts the other
    ranges of its thread open when it begins, but such ones; its children, every range of its thread it
    holds."""
    nested = with_nesting(raw, ["pid", "thread"])
    if PROCESS_RANGE not in raw.columns:
        return nested
    apart = _crossing(raw)
    if not apart.any():
        return nested.drop(PROCESS_RANGE)
    keys = ["pid", "thread"]
    index = pl.int_range(raw.height, dtype=pl.UInt32, eager=True)
    rest = with_nesting(raw.filter(~apart), keys)
    # such a range's own depth: the other ranges of its thread open at its start, but the ones set apart (each
    # one's depth among them alone taken off)
    among_apart = nesting_depth(raw.filter(apart), keys)
    apart_rows = index.filter(apart)
    depth = nested.get_column("depth")
    depth = depth.scatter(apart_rows, depth.gather(apart_rows) - among_apart)
    depth = depth.scatter(index.filter(~apart), rest.get_column("depth"))
    has_child = nested.get_column("has_child").scatter(index.filter(~apart), rest.get_column("has_child"))
    return nested.with_columns(depth, has_child).drop(PROCESS_RANGE)


def _read_nvtx(
    export: Database,
    strings: pl.DataFrame,
    path: Path,
    warnings: list[str],
    capture_start: int = 0,
    far: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
) -> pl.DataFrame:
    """Raw NVTX ranges with names and domains; ``end`` may be null (depth computed later). Read columnar
    (:meth:`~tracekit.readers.sqlite_engine.Database.numeric_frame`; PyTorch's ``emit_nvtx`` writes a range
    per operator, millions in a large trace), the text as bytes (:func:`binary_to_text`: bytes that are not
    UTF-8 as U+FFFD, as the row-by-row read gives them).

    A range that ends exactly at the capture's end (:func:`_session_ends`) was still open when the capture
    stopped: nsys 2022.4 writes the capture's end as its end (a push never popped, a process that died inside
    a range; checked by recording), which would make it an iteration as long as the rest of the capture.
    Its end is read as null (never closed), and the reader's never-closed warning counts it. But for the
    range that began strictly before every other range: under ``--capture-range=nvtx`` the capture starts at
    that range's push and stops at its pop, and nsys (2022.4, recorded) writes that pop as the capture's end
    too. That range keeps its end, with a warning (read as cut, a capture triggered by its only 'iteration'
    had been "no ranges: nothing to analyze", and the trigger range of one around 5 iterations was said to
    be cut by the capture). Warnings are appended to ``warnings``. ``far``: the rule that leaves out the ranges
    stamped impossibly far (:func:`_without_far_ranges`), applied first."""
    t = "NVTX_EVENTS"
    _require_columns(export, t, ("start", "eventType"), path)
    exprs = {
        "start": '"start"',
        "end": export.col(t, "end"),
        "event_type": '"eventType"',
        "global_tid": export.col(t, "globalTid"),
        "text": f"CAST({export.col(t, 'text')} AS BLOB)",
        "text_id": export.col(t, "textId"),
        "domain_id": export.col(t, "domainId"),
    }
    schema = {
        "start": pl.Int64,
        "end": pl.Int64,
        "event_type": pl.Int64,
        "global_tid": pl.Int64,
        "text": pl.Binary,
        "text_id": pl.Int64,
        "domain_id": pl.Int64,
    }
    types = enum_ids(
        export,
        "ENUM_NSYS_EVENT_TYPE",
        {
            "NvtxPushPopRange": NVTX_PUSH_POP,
            "NvtxStartEndRange": NVTX_START_END,
            "NvtxtPushPopRange": NVTXT_PUSH_POP,
            "NvtxtStartEndRange": NVTXT_START_END,
            "NvtxDomainCreate": NVTX_DOMAIN_CREATE,
        },
    )
    domain_create = types["NvtxDomainCreate"]
    where = f'"eventType" IN ({", ".join(str(i) for i in sorted(set(types.values())))})'
    frame = export.numeric_frame(t, exprs, schema, where=where)
    frame = frame.with_columns(binary_to_text(frame.get_column("text")))
    frame = frame.with_columns(
        pid_of(pl.col("global_tid")).alias("pid"),
        tid_of(pl.col("global_tid")).alias("thread"),
        pl.col("event_type")
        .is_in([types["NvtxStartEndRange"], types["NvtxtStartEndRange"]])
        .fill_null(False)
        .alias(PROCESS_RANGE),
    ).drop("global_tid")
    frame = _lookup_names(frame.with_columns(_text_id=pl.col("text_id")), strings, "text_id", "registered")
    unresolved = frame.select(
        (pl.col("text").is_null() & pl.col("_text_id").is_not_null() & pl.col("registered").is_null()).sum()
    ).item()
    if unresolved:
        warnings.append(
            f"{unresolved} NVTX event(s) name a registered string (textId) missing from StringIds: they have "
            "no name"
        )
    # An empty text beside a registered string (textId > 0; id 0 is nsys's own first string, "[Unknown]" or
    # "GpuMetrics") is no text: nsys 2021.x exports a default for every missing NOT NULL field.
    text = pl.col("text")
    usable = text.is_not_null() & ((text != "") | pl.col("registered").is_null() | (pl.col("_text_id") <= 0))
    frame = frame.with_columns(name=pl.when(usable).then(text).otherwise(pl.col("registered"))).drop(
        "text", "registered", "_text_id"
    )
    domains = (
        frame.filter(pl.col("event_type") == domain_create)
        .select("pid", "domain_id", domain_name=pl.col("name"))
        .unique(subset=["pid", "domain_id"], keep="last", maintain_order=True)
    )
    ranges = frame.filter(pl.col("event_type") != domain_create).join(
        domains, on=["pid", "domain_id"], how="left", nulls_equal=True
    )
    domain = (
        pl.when(pl.col("domain_id").fill_null(0) == 0)
        .then(pl.lit("default"))
        .when(pl.col("domain_name") == GPU_SIDE_DOMAIN)
        .then(pl.lit(f"{GPU_SIDE_DOMAIN} (NVTX)"))
        .when(pl.col("domain_name").is_not_null())
        .then(pl.col("domain_name"))
        .otherwise(pl.col("domain_id").cast(pl.String))
    )
    ranges = _without_profiler_ranges(ranges, warnings)
    ranges = ranges.with_columns(domain=domain).drop("domain_id", "domain_name", "event_type")
    if far is not None:  # (before any other rule: said once)
        ranges = far(ranges)
    ranges = _without_ranges_before_capture(ranges, warnings, capture_start)
    ends = _session_ends(export)
    # (the never-closed warning of :func:`_close_unclosed` counts them; a table of domain rows only, as nsys
    # 2022.4 leaves for the Python nvtx package 0.2.17, has no range whose start to compare)
    if ends and ranges.height:
        at_end = pl.col("end").is_in(ends)
        starts = ranges.get_column("start")
        first = starts.min()
        trigger = at_end & (pl.col("start") == first)
        alone = first is not None and int((starts == first).sum()) == 1
        if alone and ranges.select(trigger.any()).item():
            name = ranges.filter(trigger).get_column("name")[0]
            warnings.append(
                f"NVTX range {name!r} ends exactly at the capture's end and began before every other "
                "range: read as the range that started and stopped the capture (nsys "
                "--capture-range=nvtx), its end kept; had the capture been cut inside it, that end is the "
                "capture's"
            )
            at_end = at_end & ~trigger
        ranges = ranges.with_columns(pl.when(~at_end).then(pl.col("end")).alias("end"))
    return ranges


# ---------------------------------------------------------------------------------------------- read


def read(path: Path, frames: FrameSpec = None) -> Trace:
    """Read an Nsight Systems SQLite export into a normalized :class:`Trace` (see the module docstring).

    ``frames`` (see :func:`tracekit.model.wanted_frames`) limits what is read: frames left out stay empty and
    columns left out are null. ``ops``, ``ranges`` and ``meta`` are always read (they decide the trace's
    device); ``api`` and ``gpu_metrics`` only when asked for, or when an NVTX range is never closed (the
    trace end that closes it is the latest timestamp of every frame). GPU-metric warnings come only with
    ``gpu_metrics``, and the count of kernels whose name id is missing from StringIds only when op names are
    read.

    The kernel (and copy) tables and the API tables are read through ADBC side by side, one per thread
    (:meth:`tracekit.readers.sqlite_engine.Database.side_by_side`), up to :data:`SIDE_BY_SIDE_MAX_ROWS`; any
    other table, and those above it, of
    :data:`tracekit.readers.sqlite_engine.SLICE_MIN_ROWS` rows or more in contiguous rowid slices, one per
    thread, joined in rowid order: the same rows in the same order as one scan."""
    path = Path(path)
    with open_database(path, "an Nsight Systems SQLite export") as export:
        return _read(export, path, wanted_frames(frames))


def _read_strings(export: Database, path: Path, step: Callable[[str], None]) -> pl.DataFrame:
    """The StringIds table (id, value); fails early on a file that is not an nsys export, whose tables
    refer to a StringIds it lacks (reading each used table once, so that a damaged file fails here), or
    whose StringIds gives one id two strings."""
    cupti = {t for t in export.tables if t.startswith("CUPTI_ACTIVITY_KIND_")}
    if not ({"StringIds", "NVTX_EVENTS"} & export.tables or cupti):
        raise TraceFormatError("not an Nsight Systems export: no StringIds/NVTX_EVENTS/CUPTI tables", path)
    users = [t for t in (KERNEL_TABLE, RUNTIME_TABLE, DRIVER_TABLE) if export.nonempty(t)]
    if not export.has("StringIds") and export.has("StringTable"):
        # nvprof's SQLite output (nvprof -o x.nvvp): CUPTI tables too, names in StringTable(_id_, value)
        raise TraceFormatError(
            "an nvprof profile (names in StringTable), not an Nsight Systems export: tracekit does not read "
            "nvprof's format; profile with nsys (nsys profile -t cuda,nvtx, then nsys export --type sqlite)",
            path,
        )
    if export.has("StringIds"):
        _require_columns(export, "StringIds", ("id", "value"), path)
        step("StringIds")
        strings = fetch_frame(
            export.con,
            'SELECT "id", "value" FROM StringIds',
            {"id": pl.Int64, "value": pl.String},
            table="StringIds",
        )
        repeated = strings.get_column("id").filter(strings.get_column("id").is_duplicated()).unique()
        if repeated.len():
            # Two strings for one id: every row naming it would be read once per string (a kernel counted
            # twice), or with a name picked at random. nsys's StringIds.id is a primary key: not an export.
            raise TraceFormatError(
                f"StringIds repeats {repeated.len()} id(s) (first: {repeated.min()}): the names they stand "
                "for are ambiguous (an nsys export's ids are unique)",
                path,
            )
        return strings
    if users:
        raise TraceFormatError(
            f"missing required table StringIds (names in {', '.join(users)} refer to it)", path
        )
    return empty_frame({"id": pl.Int64, "value": pl.String})


def _read_ops(
    export: Database,
    strings: pl.DataFrame,
    path: Path,
    cols: frozenset[str] | None,
    warnings: list[str],
    step: Callable[[str], None],
    untimed: dict[str, int] | None = None,
) -> pl.DataFrame:
    """Kernels, memcpys and memsets (:data:`OPS_SCHEMA`; columns not in ``cols`` may be left out)."""
    parts = []
    nameless = 0
    whole_graphs = export.nonempty(GRAPH_TRACE_TABLE)
    if cols is not None and whole_graphs:
        # Placing whole-graph rows (:func:`_graph_rows_placed`) needs every op's launch key and stream; the
        # reader drops the columns not asked for afterwards.
        cols = cols | {"pid", "correlation", "stream"}
    if export.has(KERNEL_TABLE):
        step(KERNEL_TABLE)
        kernels, nameless = _read_kernels(export, strings, path, cols)
        parts.append(kernels)
    if export.has(MEMCPY_TABLE):
        step(MEMCPY_TABLE)
        parts.append(_read_copies(export, MEMCPY_TABLE, "memcpy", path, cols))
    if export.has(MEMSET_TABLE):
        step(MEMSET_TABLE)
        parts.append(_read_copies(export, MEMSET_TABLE, "memset", path, cols))
    if export.has(GRAPH_TRACE_TABLE):
        step(GRAPH_TRACE_TABLE)
        parts.append(_read_graph_executions(export, path, cols))
    ops = pl.concat([conform(p, OPS_SCHEMA) for p in parts]) if parts else empty_frame(OPS_SCHEMA)
    ops = _without_untimed(ops, warnings, untimed).with_columns(_no_zero_correlation())
    _zero_length_kernels(ops, warnings)
    if whole_graphs:
        ops = _graph_rows_placed(ops, warnings)
    graphs = ops.select((pl.col("kind") == "graph").sum()).item() if ops.height else 0
    if graphs:
        warnings.append(
            f"{graphs} CUDA graph executions were traced whole (nsys --cuda-graph-trace=graph, the default "
            "with CUDA 11.7+): each counts as GPU busy from its first node's start to its last node's end, "
            "the idle time between its kernels is not seen and its kernels are not counted; profile with "
            "--cuda-graph-trace=node for kernel-level numbers"
        )
    if nameless:
        warnings.append(f"{nameless} kernels have a name id missing from StringIds")
    for table in _unread_device_tables(export):
        rows = export.row_estimate(table)
        count = "" if rows is None else f"{rows:,} "
        warnings.append(
            f"table {table} ({count}rows) is not read: the GPU work it may hold is not in GPU busy"
        )
    return ops


#: CUPTI activity tables this reader reads as device work.
READ_DEVICE_TABLES = (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, GRAPH_TRACE_TABLE)


def _unread_device_tables(export: Database) -> list[str]:
    """CUPTI activity tables with rows whose kind names device work (a kernel, copy, set or graph) but that
    this reader does not read: a table a newer nsys may write (``CUPTI_ACTIVITY_KIND_MEMCPY2``, peer copies;
    ``..._DEVICE_GRAPH_TRACE``, graphs launched from the device; ``..._CDP_KERNEL``) would otherwise be
    missing from GPU busy without a word."""
    device_work = ("KERNEL", "MEMCPY", "MEMSET", "GRAPH_TRACE")
    return sorted(
        t
        for t in export.tables
        if t.startswith("CUPTI_ACTIVITY_KIND_")
        and t not in READ_DEVICE_TABLES
        and any(w in t.removeprefix("CUPTI_ACTIVITY_KIND_") for w in device_work)
        and export.nonempty(t)
    )


def _launch_calls(export: Database, strings: pl.DataFrame) -> int:
    """The number of calls in the export's CUDA API tables that launch device work
    (:data:`tracekit.model.LAUNCH_API_NAMES`, suffixes aside): counted by name id in SQL, for an export without
    device ops only. nsys traces the API through its own injection and the kernels through CUPTI's activity
    buffers: a process that exits without flushing them (killed, ``os._exit``, a time limit) leaves the launch
    calls and no kernel. Read as a CPU-only trace, its NVTX leaves had been the operators ("utilization" 0.79
    from host ranges, device "cpu")."""
    tables = [
        t for t in (RUNTIME_TABLE, DRIVER_TABLE) if export.nonempty(t) and "nameId" in export.columns(t)
    ]
    if not tables or strings.is_empty():
        return 0
    ids = calls_named(strings.rename({"value": "name"}), LAUNCH_API_NAMES).get_column("id").drop_nulls()
    if ids.is_empty():
        return 0
    listed = ", ".join(str(int(i)) for i in ids)
    return sum(
        int(
            export.con.execute(
                f'SELECT count(*) FROM {quote(_stored_name(export, t))} WHERE "nameId" IN ({listed})'
            ).fetchone()[0]
        )
        for t in tables
    )


def _stored_name(export: Database, table: str) -> str:
    """The name ``export`` holds ``table`` under (a :class:`_VersionedNames` view's versioned name), for SQL
    written by hand."""
    return export._real(table) if isinstance(export, _VersionedNames) else table


def _samples_without_gpu_table(samples: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """GPU-metric ``samples`` of an export without a GPU table (no TARGET_INFO_GPU, nor a GpuInfo), whose
    devices are PerfWorks GPU ids taken for CUDA device ids: with samples of several GPUs that is a guess (under
    ``CUDA_VISIBLE_DEVICES=1`` the process's device 0 is the box's GPU 1, whose samples are PerfWorks GPU 1:
    GPU 0's 80% SMs active was read as the kernels' GPU's, which ran at 10%). They get no device then, with a
    warning; the samples of a single GPU keep its id."""
    sampled = samples.get_column("device").drop_nulls().unique()
    if sampled.len() < 2:
        return samples
    warnings.append(
        f"GPU metrics of {sampled.len()} GPUs and no GPU table (TARGET_INFO_GPU) to say which CUDA device each "
        "is: the samples have no device (no SMs active or occupancy per GPU)"
    )
    return samples.with_columns(pl.lit(None, pl.Int32).alias("device"))


def _capture_event_types(export: Database) -> list[str]:
    """What the capture traced, as its ``META_DATA_CAPTURE`` lists it (``CAPTURE_EVENT_TYPE`` rows: "NvtxEvents",
    "Cuda", ...; the real 2024.6 to 2026.2 exports, traced with CUDA, name "Cuda"); [] when the export does not
    say (2022.4 writes no such table)."""
    t = "META_DATA_CAPTURE"
    if not export.has(t) or not {"name", "value"} <= export.columns(t):
        return []
    rows = export.con.execute(
        f'SELECT DISTINCT "value" FROM {quote(t)} WHERE "name" = \'CAPTURE_EVENT_TYPE\' ORDER BY "value"'
    ).fetchall()
    return [str(r[0]) for r in rows if r[0] is not None]


#: ``deviceId`` (and ``contextId``) of a whole-graph row whose first node runs on the host (CUPTI's
#: ``CUpti_ActivityGraphTrace2``: "If this is INT_MAX, then the start is on the host").
GRAPH_ON_HOST_DEVICE = 2**31 - 1


def _graph_rows_placed(ops: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``ops`` with the whole-graph rows (kind "graph") that the export also holds node by node left out, and
    those whose first node ran on the host given a device.

    - A graph row whose launch (pid, correlation) also has kernels in the kernel table was traced twice: the
      nodes are the measurement (a graph row counts its idle time between kernels as busy, 34 µs instead of
      the kernels' 20 µs, and says its kernels are not counted when they are).
    - ``deviceId`` :data:`GRAPH_ON_HOST_DEVICE` is no device: such a row runs on the device of the other ops
      of its stream, else of its process, when those ran on one device; else it stays without a device (a
      warning says so). Read as device 2147483647 it was a GPU of its own in the per-device rows, with the
      graph's busy time taken from the device that ran it."""
    if not {"pid", "correlation", "stream"} <= set(ops.columns):
        return ops
    keys = ["pid", "correlation"]
    # Only the graph rows are looked at (joins of every op had cost ~14 s at 10^7 kernels on 2 cores): their
    # row numbers, launch keys, streams and devices.
    graphs = (
        ops.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_row"), *keys, "stream", "device", "kind")
        .filter(pl.col("kind") == "graph")
        .drop("kind")
    )
    if graphs.is_empty():
        return ops
    noded = (
        ops.filter((pl.col("kind") == "kernel") & pl.col("correlation").is_not_null())
        .select(keys)
        .join(graphs.select(keys).unique(), on=keys, how="semi", nulls_equal=True)
        .unique()
    )
    twice = graphs.join(noded, on=keys, how="semi", nulls_equal=True).get_column("_row")
    keep = pl.repeat(True, ops.height, dtype=pl.Boolean, eager=True).scatter(twice, False)
    if twice.len():
        warnings.append(
            f"{twice.len()} CUDA graph executions were traced both whole and node by node: their kernels are "
            "counted, the whole-graph rows left out"
        )
    on_host = graphs.filter(
        (pl.col("device") == GRAPH_ON_HOST_DEVICE) & ~pl.col("_row").is_in(twice.implode())
    )
    if not on_host.is_empty():
        placed = ops.filter(
            pl.lit(keep) & pl.col("device").is_not_null() & (pl.col("device") != GRAPH_ON_HOST_DEVICE)
        )

        def only_device(by: list[str], name: str) -> pl.DataFrame:
            return (
                placed.group_by(by)
                .agg(pl.col("device").unique())
                .filter(pl.col("device").list.len() == 1)
                .select(*by, pl.col("device").list.first().alias(name))
            )

        on_host = (
            on_host.join(
                only_device(["pid", "stream"], "_stream_device"),
                on=["pid", "stream"],
                how="left",
                nulls_equal=True,
            )
            .join(only_device(["pid"], "_pid_device"), on="pid", how="left", nulls_equal=True)
            .select("_row", pl.coalesce("_stream_device", "_pid_device").alias("_device"))
        )
        unplaced = on_host.get_column("_device").null_count()
        if unplaced:
            warnings.append(
                f"{unplaced} CUDA graph executions began with a host node (deviceId INT_MAX) and no other op of "
                "their stream or process tells their GPU: they count on no device of their own"
            )
        device = (
            ops.get_column("device")
            .clone()
            .scatter(on_host.get_column("_row"), on_host.get_column("_device"))
        )
        ops = ops.with_columns(device)
    return ops.filter(keep) if twice.len() else ops


#: Share of the kernels lasting 0 ns from which the reader says so.
ZERO_LENGTH_SHARE = 0.1


def _zero_length_kernels(ops: pl.DataFrame, warnings: list[str]) -> None:
    """Warn when :data:`ZERO_LENGTH_SHARE` of the kernels or more end where they start: no real kernel takes
    0 ns (the shortest of the real exports take 0.9 to 4 µs), so their busy time, 0, is not what they took (a
    damaged export, or one a tool rewrote), where it had read as a confident "framework-bound"."""
    if not ops.height or not {"kind", "start", "end"} <= set(ops.columns):
        return
    kernels, zero = ops.select(
        (pl.col("kind") == "kernel").sum().alias("k"),
        ((pl.col("kind") == "kernel") & (pl.col("end") == pl.col("start"))).sum().alias("z"),
    ).row(0)
    if kernels and zero >= ZERO_LENGTH_SHARE * kernels:
        warnings.append(
            f"{zero:,} of {kernels:,} kernels last 0 ns (end = start; no real kernel does): their GPU busy "
            "time is not what they took, so the utilization and verdict are not to be trusted"
        )


def _no_zero_correlation() -> pl.Expr:
    """An op's ``correlation`` with 0 read as null: CUPTI numbers launches from 1, and 0 means "no
    correlation" (as :func:`tracekit.calls.collapse_duplicate_calls` reads it; API rows keep their 0, which
    that collapse leaves apart). An op carrying 0 matched no call and was counted in no iteration, as if
    launched before the capture (a device-launched kernel's time left out of its iteration's busy time);
    without an id it is placed by its start, with the analysis's warning."""
    return pl.when(pl.col("correlation") != 0).then(pl.col("correlation")).alias("correlation")


def _without_untimed(
    ops: pl.DataFrame, warnings: list[str], found: dict[str, int] | None = None
) -> pl.DataFrame:
    """``ops`` without the rows CUPTI could not time (start and end both 0, as its activity records say), which
    would otherwise sit at the session's start; a warning per kind left out, and their count per kind into
    ``found`` (the trace's ``meta["untimed_rows"]``: the analysis names them as the cause of graph replays
    without work, :func:`tracekit.analyzers.plausibility.lost_graph_replays`)."""
    untimed = (pl.col("start") == 0) & (pl.col("end") == 0)
    if not ops.height or not ops.select(untimed.any()).item():
        return ops
    counts = ops.filter(untimed).group_by("kind").len().sort("kind")
    for kind, n in counts.iter_rows():
        warnings.append(
            f"{n} {kind} rows have no timestamps (start and end 0: CUPTI could not time them): they count in "
            "the iterations their launch calls lie in, with no start or end time (not in any busy time)"
        )
        if found is not None:
            found[kind] = found.get(kind, 0) + int(n)
    # (kept, untimed: they ran, and their launch calls say in which iteration. Left out, an iteration of 2
    # launches had read 1 kernel and its busy time as known)
    return ops.with_columns(pl.when(~untimed).then(pl.col(c)).alias(c) for c in ("start", "end"))


def _read_api(
    export: Database,
    strings: pl.DataFrame,
    path: Path,
    cols: frozenset[str] | None,
    step: Callable[[str], None],
    collapse: bool = True,
) -> pl.DataFrame:
    """Runtime and driver calls (:data:`API_SCHEMA`), duplicate rows of one call collapsed to the outermost
    (``collapse``; the reader collapses them itself after leaving out the rows stamped far, so that a launch
    recorded twice, one row of it damaged, keeps the other: :func:`_without_far_events`)."""
    parts = []
    for table in (RUNTIME_TABLE, DRIVER_TABLE):
        if export.has(table):
            step(table)
            parts.append(_read_api_table(export, table, strings, path, cols))
    api = pl.concat([conform(p, API_SCHEMA) for p in parts]) if parts else empty_frame(API_SCHEMA)
    return collapse_duplicate_calls(api) if collapse else api


def _with_launching_process(ops: pl.DataFrame, api: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``ops`` whose process is unknown (``globalPid`` null, or a table without the column) given the process
    of the trace's CUDA calls when they all come from one: correlation ids are unique within a process, and
    an op without its process matched no launch call (every op counted in no iteration, "launched before the
    capture"). With calls of several processes such ops stay unlinked, and a warning says why."""
    return _with_process_of(
        ops,
        api,
        warnings,
        ("device ops have no process id (globalPid null)", "CUDA API calls"),
        ("launched by it", "the calls that launched them"),
    )


def _calls_with_process(api: pl.DataFrame, ops: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``api`` whose calls have no process (``globalTid`` null, or an API table without the column) given the
    process of the trace's device ops when they all come from one (the mirror of
    :func:`_with_launching_process`): a call without its process matched no op (on the real 2024.6 export
    without the column: every kernel 'launched before the capture', one window, framework-bound at 0.1%
    instead of 3.4%). With ops of several processes the calls stay without one, and a warning says so."""
    return _with_process_of(
        api,
        ops,
        warnings,
        ("CUDA API calls have no process id (globalTid null or missing)", "device ops"),
        ("its calls", "the work they launched"),
    )


def _with_process_of(
    rows: pl.DataFrame,
    other: pl.DataFrame,
    warnings: list[str],
    named: tuple[str, str],
    linked: tuple[str, str],
) -> pl.DataFrame:
    """``rows`` whose ``pid`` is null given ``other``'s one process, when ``other``'s rows all come from one;
    with several, left as they are. A warning says which: ``named`` = (the rows without a process, the other
    side), ``linked`` = (what the rows are read as, what they cannot be linked to)."""
    without, others = named
    read_as, unlinked = linked
    if "pid" not in rows.columns or "pid" not in other.columns:
        return rows
    unknown = rows.get_column("pid").null_count()
    if not unknown:
        return rows
    pids = other.get_column("pid").drop_nulls().unique()
    if pids.len() == 1:
        pid = int(pids[0])
        warnings.append(
            f"{unknown} {without}: the trace's {others} all come from process {pid}, so they are read as {read_as}"
        )
        return rows.with_columns(pl.col("pid").fill_null(pid))
    if pids.len() > 1:
        warnings.append(
            f"{unknown} {without} and the trace's {others} come from {pids.len()} processes: they cannot be "
            f"linked to {unlinked}"
        )
    return rows


def _ops_of_untraced_processes(
    ops: pl.DataFrame, api: pl.DataFrame, ranges: pl.DataFrame, warnings: list[str]
) -> pl.DataFrame:
    """``ops`` whose process holds neither a CUDA call nor an NVTX range in the trace, while other processes'
    calls are in it, with no correlation id, and a warning: their ids link to no call the trace could hold.
    nsys 2025.6's ``--cuda-trace-scope`` traces CUDA "across process trees or the entire system" (its release
    notes): the kernels of another tenant of the GPU come without its calls. With their ids they read as
    "launched before the capture began"; without, they are what they are, another process's work (the
    analysis counts them outside every iteration, by a process that holds no range). A process with ranges
    keeps its ids: its calls were lost, its ops are its own launches."""
    if not {"pid", "correlation"} <= set(ops.columns) or "pid" not in api.columns or ops.is_empty():
        return ops
    calling = api.get_column("pid").drop_nulls().unique()
    if calling.is_empty():
        return ops  # (no call at all: the analysis reads such a trace by the ops' own times, and says so)
    annotated = ranges.get_column("pid").drop_nulls().unique() if "pid" in ranges.columns else calling.clear()
    untraced = (
        pl.col("pid").is_not_null()
        & pl.col("correlation").is_not_null()
        & ~pl.col("pid").is_in(calling.implode())
        & ~pl.col("pid").is_in(annotated.implode())
    )
    found = ops.filter(untraced)
    if found.is_empty():
        return ops
    pids = found.get_column("pid").unique().sort()
    shown = ", ".join(str(p) for p in pids.head(5)) + (", ..." if pids.len() > 5 else "")
    warnings.append(
        f"{found.height} device ops come from {pids.len()} process(es) ({shown}) of which the trace holds no CUDA "
        "call and no NVTX range (a system-wide CUDA trace, nsys --cuda-trace-scope, or another tenant of the "
        "GPU): no launch of the traced processes, they count in no iteration"
    )
    return ops.with_columns(pl.when(~untraced).then(pl.col("correlation")).alias("correlation"))


def _renumbered(
    ops: pl.DataFrame, numbering: dict[tuple[int, int], int], warnings: list[str]
) -> tuple[pl.DataFrame, dict[tuple[int, int], int] | None]:
    """``ops`` with ``device`` the nsys GPU id of (pid, CUDA device id)
    (:func:`nsys_meta.per_process_numbering`: the processes number their GPUs differently), and the
    numbering used. Each rank of a job started with its
    own ``CUDA_VISIBLE_DEVICES`` says device 0: read as CUDA ids, the ranks' GPUs were one device (no
    per-device rows) and one GPU's metric samples were read as every rank's (SMs active 80% where the two GPUs
    averaged 45%). An op whose (pid, device) the table does not name gets no device, with a warning. When the
    table names none of the ops' pairs it tells nothing about them: ops unchanged, numbering None (CUDA
    ids)."""
    if not ops.height or "pid" not in ops.columns or "device" not in ops.columns:
        return ops, None
    table = pl.DataFrame(
        {
            "pid": [k[0] for k in numbering],
            "device": [k[1] for k in numbering],
            "_gpu": list(numbering.values()),
        },
        schema={"pid": pl.Int64, "device": pl.Int32, "_gpu": pl.Int32},
    )
    ops = ops.join(table, on=["pid", "device"], how="left", maintain_order="left")
    if ops.get_column("_gpu").null_count() == ops.height:
        return ops.drop("_gpu"), None
    unnamed = ops.filter(pl.col("_gpu").is_null() & pl.col("device").is_not_null()).height
    pids = sorted({k[0] for k in numbering})
    shown = ", ".join(map(str, pids[:8])) + (", ..." if len(pids) > 8 else "")
    warnings.append(
        f"the traced processes number their GPUs differently (CUDA_VISIBLE_DEVICES; TARGET_INFO_CUDA_DEVICE, "
        f"pids {shown}): devices are nsys's GPU ids, not CUDA device ids"
        + (
            f"; {unnamed} device ops of a (process, CUDA device) the export does not map have no device"
            if unnamed
            else ""
        )
    )
    return ops.with_columns(pl.col("_gpu").alias("device")).drop("_gpu"), numbering


#: Column marking the ranges :func:`_close_unclosed` closed (dropped before the Trace is built).
_NEVER_CLOSED = "_never_closed"


def _close_unclosed(
    raw: pl.DataFrame,
    ops: pl.DataFrame,
    api: pl.DataFrame,
    gpu_metrics: pl.DataFrame,
    warnings: list[str],
    capture_end: int | None = None,
) -> pl.DataFrame:
    """``raw`` NVTX ranges with a null ``end`` closed at the trace end (the latest timestamp of any frame, or
    ``capture_end`` (ns, ``ANALYSIS_DETAILS``) when later), for the nesting only: column
    :data:`_NEVER_CLOSED` marks them, and the reader puts their null end back."""
    unclosed = raw.filter(pl.col("end").is_null()).height
    candidates = [
        ops.select(pl.col("end").max()).item(),
        api.select(pl.col("end").max()).item(),
        raw.select(pl.max_horizontal(pl.col("start").max(), pl.col("end").max())).item(),
        gpu_metrics.select(pl.col("timestamp").max()).item(),
        capture_end,
    ]
    trace_end = max(int(c) for c in candidates if c is not None)
    warnings.append(
        f"{unclosed} NVTX range(s) never closed (the capture ended inside them, at {trace_end} ns): they have "
        "no end time, so none of them is an iteration; ranges they enclose count them open to the trace end"
    )
    return raw.with_columns(pl.col("end").is_null().alias(_NEVER_CLOSED), pl.col("end").fill_null(trace_end))


#: Names of the ranges the default range choice takes as iterations (``iteration``, what ``tracekit collect``
#: writes; torch.profiler's ``ProfilerStep#N``): never operators of a CPU-only trace, even as leaves inside
#: an outer range (a ``benchmark`` range around the loop), where they would be "busy" 100% of themselves.
ITERATION_NAMES = r"^(?:iteration|ProfilerStep#\d+)$"


def _cpu_operators(ranges: pl.DataFrame, warnings: list[str] | None = None) -> pl.DataFrame:
    """Ops of a CPU-only trace: the leaf NVTX ranges of depth >= 1, kind "operator" (module docstring), but
    those named as iterations (:data:`ITERATION_NAMES`).

    ``ranges`` as nested: a range never closed (column :data:`_NEVER_CLOSED`) ends at the trace end there, and
    an operator never closed keeps that end, with a warning into ``warnings``: it was open, hence busy, until
    the capture stopped inside it (with no end it had counted in its iteration as an op busy 0 µs)."""
    iteration = pl.col("name").str.contains(ITERATION_NAMES).fill_null(False)
    leaves = ranges.filter((pl.col("depth") >= 1) & ~pl.col("has_child") & ~iteration)
    if _NEVER_CLOSED in leaves.columns:
        open_ops = leaves.filter(pl.col(_NEVER_CLOSED))
        if open_ops.height and warnings is not None:
            names = ", ".join(
                repr(n) for n in open_ops.get_column("name").unique(maintain_order=True).head(3)
            )
            warnings.append(
                f"{open_ops.height} operator range(s) of this CPU-only trace never closed ({names}): each "
                f"counts as open up to the trace end ({open_ops.get_column('end').max()} ns), busy all of "
                "that time"
            )
    return leaves.select(
        "start",
        "end",
        device=pl.lit(-1, pl.Int32),
        stream=pl.col("thread"),
        pid=pl.col("pid"),
        kind=pl.lit("operator"),
        name=pl.col("name"),
    )


class _TableSteps:
    """Progress of one read (:mod:`tracekit.progress`): a step per table, "KERNEL (N rows)" (CUPTI tables
    without their common prefix), the bar at the share of the planned tables begun. Costs nothing when no progress display is shown."""

    def __init__(self, export: Database, planned: list[str]) -> None:
        self.export = export
        self.planned = max(1, len(planned))
        self.begun = 0

    def __call__(self, table: str) -> None:
        if progress.active():
            rows = self.export.row_estimate(table)
            name = table.removeprefix("CUPTI_ACTIVITY_KIND_")
            label = name if rows is None else f"{name} ({rows:,} rows)"
            progress.report(label, min(1.0, self.begun / self.planned))
        self.begun += 1

    def done(self, stage: str) -> None:
        """Every table read; ``stage`` is what comes next."""
        progress.report(stage, 1.0)


def _planned_tables(export: Database, want: dict[str, frozenset[str] | None]) -> list[str]:
    """The tables a read with ``want`` reads (one more pass over the API tables for an unclosed range)."""
    tables = ["StringIds", KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, GRAPH_TRACE_TABLE]
    if "api" in want:
        tables += [RUNTIME_TABLE, DRIVER_TABLE]
    tables.append("NVTX_EVENTS")
    if "gpu_metrics" in want and (table := _metrics_table(export)):
        tables.append(table)
    return [t for t in tables if export.has(t)]


def _metrics_table(export: Database) -> str | None:
    """The table that holds the GPU-metric samples, if any (see :mod:`tracekit.readers.nsys_gpu_metrics`)."""
    return next((t for t in ("GPU_METRICS", "GENERIC_EVENTS") if export.has(t)), None)


#: Tables read under a versioned name (``NVTX_EVENTS_V2``) when the export lacks the plain one.
VERSIONED_TABLES = (
    KERNEL_TABLE,
    MEMCPY_TABLE,
    MEMSET_TABLE,
    GRAPH_TRACE_TABLE,
    RUNTIME_TABLE,
    DRIVER_TABLE,
    "NVTX_EVENTS",
)


class _VersionedNames:
    """``export`` with each table of :data:`VERSIONED_TABLES` that it holds only under a versioned name
    (``<name>_V<n>``, the highest n; the names some readers of newer exports expect) answering to its plain
    name, for the :class:`Database` methods the reader calls with a table name. Without it such an export lost
    the table: NVTX_EVENTS_V2 alone read as no range (the whole trace one window), KERNEL_V2 as no kernel."""

    def __init__(self, export: Database, names: dict[str, str]) -> None:
        self._export = export
        self._names = names
        self.tables = (export.tables - set(names.values())) | set(names)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._export, name)

    def _real(self, table: str) -> str:
        return self._names.get(table, table)

    def has(self, table: str) -> bool:
        return self._export.has(self._real(table))

    def columns(self, table: str) -> set[str]:
        return self._export.columns(self._real(table))

    def col(self, table: str, *candidates: str, default: str = "NULL") -> str:
        return self._export.col(self._real(table), *candidates, default=default)

    def nonempty(self, table: str) -> bool:
        return self._export.nonempty(self._real(table))

    def row_estimate(self, table: str) -> int | None:
        return self._export.row_estimate(self._real(table))

    def key_values(self, table: str) -> dict[str, str]:
        return self._export.key_values(self._real(table))

    def numeric_frame(
        self, table: str, exprs: Mapping[str, str], schema: dict[str, pl.DataType], where: str = ""
    ) -> pl.DataFrame:
        return self._export.numeric_frame(self._real(table), exprs, schema, where=where)


def _with_versioned_names(export: Database, warnings: list[str]) -> Database:
    """``export``, or a :class:`_VersionedNames` view of it when it holds a table of :data:`VERSIONED_TABLES`
    only under a versioned name, or its plain one empty beside a versioned one with rows (an empty
    CUPTI_ACTIVITY_KIND_KERNEL beside a KERNEL_V2 that held every kernel had read as 'launch calls but no
    kernel'); a warning names each one read so."""
    names: dict[str, str] = {}
    for table in VERSIONED_TABLES:
        plain = export.has(table)
        if plain and export.nonempty(table):
            continue
        versions = [
            (int(m.group(1)), t)
            for t in export.tables
            if (m := re.fullmatch(re.escape(table) + r"_V(\d+)", t)) is not None
        ]
        if plain:  # an empty plain table beside versioned ones that hold the rows: the rows are read
            versions = [v for v in versions if export.nonempty(v[1])]
        if versions:
            names[table] = max(versions)[1]
    if not names:
        return export
    for table, real in sorted(names.items()):
        warnings.append(
            f"table {real} read as {table} (a versioned name this reader has not seen in an export)"
        )
    return cast(Database, _VersionedNames(export, names))


#: nsys's own diagnostics (2024+; the real 2024.6 to 2026.2 exports: ``timestamp``, ``timestampType``, ``source``,
#: ``severity``, ``text`` TEXT, ``globalPid``): among them, that it lost events.
DIAGNOSTIC_TABLE = "DIAGNOSTIC_EVENT"
#: What a diagnostic says was lost ("device": CUDA/CUPTI activity, so GPU work; "nvtx": ranges; "all": the
#: capture itself), by the texts nsys 2022.4.2's injection and analysis libraries write (``strings`` of
#: libToolsInjection64.so / libAnalysis.so): "CUPTI dropped %llu records. Some CUPTI events might be missing.",
#: "Number of CUPTI events produced: %llu, CUPTI buffers: %d of %d. Some CUPTI events might be missing. ...",
#: "Number of incomplete CUPTI events dropped: %llu. ...", "Couldn't allocate CUPTI buffers %d times.Some CUPTI
#: events might be missing.", "Could not parse %llu CUPTI activity records. ...", "Not all %s events might have
#: been collected.", "%zu NVTX annotations were discarded because ...", "Injection storage file %s has reach
#: %d%% of size limit (%f GiB). Trace data will likely be truncated soon. ...", and the injection's failures
#: to collect at all: "Cannot allocate CUPTI buffer. %s", "Cannot provide a valid buffer for CUPTI.", "Could not
#: load the CUPTI library. ...", "Cannot initialize CUDA event collection", "Cannot initialize CudaTracing
#: library", "Unable to get NVTX CORE export table". Checked in this order.
LOSS_PATTERNS: tuple[tuple[str, str], ...] = (
    ("all", r"will likely be truncated|trace data .*truncated"),
    (
        "nvtx",
        r"nvtx\b.*\b(discarded|dropped|lost|might be missing)|unable to get nvtx \w+ export table"
        r"|not all nvtx\b.* events might have been collected",
    ),
    (
        "device",
        r"cupti .*(dropped|might be missing|could not be|lost)|dropped \d+ records|could not parse \d+ cupti"
        r"|failed to convert cupti|not all (cuda|cupti|gpu)\b.* events might have been collected"
        r"|cannot allocate cupti buffer|cannot provide a valid buffer for cupti|could not load the cupti library"
        r"|cannot initialize (cuda event collection|cudatracing library)",
    ),
    # (what is lost must be what tracekit reads: "Not all OS runtime events might have been collected" is not)
    ("all", r"\b(trace |cuda |gpu |nvtx )?events? (were|was) (lost|dropped|discarded)"),
)
#: GPU-metric samples PerfWorks dropped (the 2022.4.2 CLI's "NVPW internal error (%1% dropped samples)").
GPU_METRICS_LOSS = r"nvpw\b.*dropped samples"
#: Losses that concern data tracekit does not read (CPU IP/backtrace sampling, thread states).
LOSS_IGNORED = r"sampl|cpu utilization|thread states"
#: The longest piece of a diagnostic quoted in a warning.
DIAGNOSTIC_QUOTE_CHARS = 160


def _loss_kind(text: str) -> str | None:
    """What ``text`` (an nsys diagnostic) says was lost (:data:`LOSS_PATTERNS`), or None: it loses nothing
    tracekit reads, or every number in it is 0 ("dropped 0 records")."""
    low = text.lower()
    if re.search(GPU_METRICS_LOSS, low):
        kind: str | None = "gpu_metrics"
    elif re.search(LOSS_IGNORED, low):
        return None
    else:
        kind = next((k for k, pattern in LOSS_PATTERNS if re.search(pattern, low)), None)
    numbers = [int(n) for n in re.findall(r"\d+", text)]
    if kind is None or (numbers and not any(numbers)):
        return None
    return kind


class Diagnostic(NamedTuple):
    """One distinct message of nsys's :data:`DIAGNOSTIC_TABLE` (a StringIds id resolved to its text)."""

    text: str
    #: how many rows hold it
    count: int
    #: its earliest integer ``timestamp`` (ns, session clock), None when no row has one
    first: int | None


def _read_diagnostics(export: Database, strings: pl.DataFrame) -> list[Diagnostic]:
    """:data:`DIAGNOSTIC_TABLE`'s distinct messages, each once with its count and earliest timestamp, in the
    order of their first appearance (earliest timestamp, then rowid): one read of the table, for the capture's
    start (:func:`_capture_start`) and nsys's word on lost events (:func:`_lost_events`). A table of a million
    repeated rows is read as the few messages it holds. A ``text`` that is an integer is a StringIds id; one
    that is no string (a missing id, a number) is left out. [] without the table or its ``text`` column."""
    t = DIAGNOSTIC_TABLE
    if not export.nonempty(t) or "text" not in export.columns(t):
        return []
    has_time = "timestamp" in export.columns(t)
    first = 'min(CASE WHEN typeof("timestamp") = \'integer\' THEN "timestamp" END)' if has_time else "NULL"
    order = 'min("timestamp"), min(rowid)' if has_time else "min(rowid)"
    rows = export.con.execute(
        f'SELECT "text", count(*), {first} FROM {quote(t)} GROUP BY "text" ORDER BY {order}'
    ).fetchall()
    by_id: dict[int, str] | None = None
    found: list[Diagnostic] = []
    for value, count, when in rows:
        if isinstance(value, int):
            if by_id is None:
                by_id = dict(strings.select("id", "value").iter_rows())
            value = by_id.get(value)
        if isinstance(value, str):
            found.append(Diagnostic(value, int(count), when))  # (an integer or None: the CASE above)
    return found


#: What nsys writes where the capture ends (real 2024.6 to 2026.2 exports; at ``ANALYSIS_DETAILS.duration``).
CAPTURE_STOP_DIAGNOSTIC = r"(?i)^\s*profiling has stopped\b"
#: nsys's record of its own work (:data:`PROFILER_OVERHEAD_TABLE`) where cudaProfilerStop ended the capture: it
#: flushed CUDA's activity records there (the real nsys 2025.3.1 probe exports, sample_traces/h200_nsys_probe:
#: "CUDA profiling data flush on cudaProfilerStop"; a capture that ends with the process has "... on process
#: exit").
FLUSH_ON_STOP = r"(?i)\bflush on cu(?:da)?ProfilerStop\b"
#: What nsys writes whenever cudaProfilerStop ends the capture before the program ends (those probe exports, also
#: the one with nothing traced after the stop but a range's pop and a sleep), after "Profiling has stopped.": the
#: events it did not collect are the program's after the stop, outside the capture.
NOT_ALL_COLLECTED = r"(?i)^\s*not all\b.* events might have been collected"


def _stopped_by_profiler_stop(
    export: Database, strings: pl.DataFrame, diagnostics: list[Diagnostic]
) -> int | None:
    """Where cudaProfilerStop ended the capture (ns, session clock): the earliest "Profiling has stopped."
    (:data:`CAPTURE_STOP_DIAGNOSTIC`), where nsys records that it flushed CUDA's activity records at
    cudaProfilerStop (:data:`FLUSH_ON_STOP`, a row of :data:`PROFILER_OVERHEAD_TABLE`); None otherwise."""
    stops = [
        d.first for d in diagnostics if d.first is not None and re.search(CAPTURE_STOP_DIAGNOSTIC, d.text)
    ]
    t = PROFILER_OVERHEAD_TABLE
    if not stops or not export.nonempty(t) or "nameId" not in export.columns(t):
        return None
    ids = {r[0] for r in export.con.execute(f'SELECT DISTINCT "nameId" FROM {quote(t)}').fetchall()}
    names = strings.filter(pl.col("id").is_in([i for i in ids if isinstance(i, int)])).get_column("value")
    if not any(isinstance(n, str) and re.search(FLUSH_ON_STOP, n) for n in names):
        return None
    return min(stops)


def _lost_events(
    diagnostics: list[Diagnostic], warnings: list[str], stopped_at: int | None = None
) -> dict[str, list[str]]:
    """What nsys says it lost (:data:`DIAGNOSTIC_TABLE`, any severity: the messages are warnings in 2024+, but
    an export may class them otherwise), as {what was lost: nsys's distinct messages, in order}, with one warning
    quoting them. ``diagnostics``: :func:`_read_diagnostics`. {} without any. Where cudaProfilerStop ended the
    capture at ``stopped_at`` (:func:`_stopped_by_profiler_stop`), a "Not all ... events might have been
    collected." first said after it (:data:`NOT_ALL_COLLECTED`) is about the program's events after the stop, no
    loss of the capture's."""
    t = DIAGNOSTIC_TABLE
    found: dict[str, list[str]] = {}
    times: dict[str, int] = {}
    for d in diagnostics:
        if (kind := _loss_kind(d.text)) is None:
            continue
        if (
            stopped_at is not None
            and d.first is not None
            and d.first >= stopped_at
            and re.search(NOT_ALL_COLLECTED, d.text)
        ):
            continue
        text = d.text.strip()
        if text not in times:
            found.setdefault(kind, []).append(text)
        times[text] = times.get(text, 0) + d.count
    if not found:
        return {}
    said = {
        "device": "CUDA activity (kernels, copies) may be missing: GPU busy is a lower bound, and a "
        "framework-bound verdict may come from work the trace lacks",
        "nvtx": "NVTX ranges may be missing: iterations or operators may be lost",
        "gpu_metrics": "GPU metric samples may be missing: the metrics (SMs active, occupancy) cover less time",
        "all": "events of any kind may be missing from the trace",
    }

    def quoted(text: str) -> str:
        short = " ".join(text.split())
        if len(short) > DIAGNOSTIC_QUOTE_CHARS:
            short = short[: DIAGNOSTIC_QUOTE_CHARS - 3] + "..."
        return repr(short) + (f" ({times[text]} times)" if times[text] > 1 else "")

    messages = [m for kind in found for m in found[kind]]
    shown = "; ".join(quoted(m) for m in messages[:3]) + (
        f"; and {len(messages) - 3} more" if len(messages) > 3 else ""
    )
    warnings.append(
        f"nsys says it lost events during this capture ({t}: {shown}): "
        + "; ".join(said[k] for k in ("device", "nvtx", "gpu_metrics", "all") if k in found)
    )
    return found


#: nsys's record of its own work on the application's threads (buffer flushes, TLS and chunk allocation, ...)
PROFILER_OVERHEAD_TABLE = "PROFILER_OVERHEAD"
#: nsys's own work on the CUDA-calling threads during the GPU work is said from this share of its span
PROFILER_OVERHEAD_SHARE = 0.01


def _profiler_overhead(
    export: Database, strings: pl.DataFrame, ops: pl.DataFrame, api: pl.DataFrame, warnings: list[str]
) -> None:
    """Warn when nsys's own work (:data:`PROFILER_OVERHEAD_TABLE`) on the threads that made CUDA calls took
    :data:`PROFILER_OVERHEAD_SHARE` or more of the span of the GPU work (first op start to last op end; the
    union of its rows, clipped to that span): where the device was idle, the host time it took is read as
    the framework's (``dispatch``). A small table (a row per flush or allocation), read whole."""
    t = PROFILER_OVERHEAD_TABLE
    if not export.nonempty(t) or not {"start", "end", "globalTid"} <= export.columns(t):
        return
    if (
        ops.is_empty()
        or not {"pid", "thread"} <= set(api.columns)
        or not {"start", "end"} <= set(ops.columns)
    ):
        return
    lo, hi = ops.select(pl.col("start").min(), pl.col("end").max()).row(0)
    if lo is None or hi is None or hi <= lo:
        return
    name = export.col(t, "nameId")
    rows = fetch_frame(
        export.con,
        f'SELECT "start", "end", "globalTid" AS global_tid, {name} AS name_id FROM {quote(t)}',
        {"start": pl.Int64, "end": pl.Int64, "global_tid": pl.Int64, "name_id": pl.Int64},
        table=t,
        sources={"global_tid": '"globalTid"', "name_id": name},
    )
    rows = (
        rows.with_columns(
            pid_of(pl.col("global_tid")).alias("pid"), tid_of(pl.col("global_tid")).alias("thread")
        )
        .join(api.select("pid", "thread").unique(), on=["pid", "thread"], how="semi")
        .with_columns(pl.col("start").clip(lo, hi), pl.col("end").clip(lo, hi))
        .filter(pl.col("end") > pl.col("start"))
        .sort("start")
    )
    if rows.is_empty():
        return
    union = union_ns(rows["start"], rows["end"])
    span = hi - lo
    if union < PROFILER_OVERHEAD_SHARE * span:
        return
    named = _lookup_names(rows, strings, "name_id", "name") if "name_id" in rows.columns else rows
    top = (
        named.group_by(pl.col("name").fill_null("unnamed"))
        .agg((pl.col("end") - pl.col("start")).sum().alias("ns"))
        .sort(["ns", "name"], descending=[True, False])
        .head(3)
    )
    parts = ", ".join(str(n) for n in top.get_column("name"))  # the longest first (summed over threads)
    warnings.append(
        f"nsys's own work on the threads that made CUDA calls ({t}: {parts}) took {union / 1e6:.3f} ms of the "
        f"{span / 1e6:.3f} ms from the first GPU op's start to the last one's end ({union / span:.1%}): inside "
        "the iterations, where the GPU was idle, it reads as framework time (dispatch), which it inflates"
    )


#: NVTX_EVENTS.eventType of ranges: push/pop and start/end (with and without a payload)
_RANGE_TYPES = "59, 60, 70, 71"


def _real_name(export: Database, table: str) -> str:
    """The name ``table`` has in the file (a :class:`_VersionedNames` view reads some under another)."""
    return export._real(table) if isinstance(export, _VersionedNames) else table


def _range_times(export: Database) -> pl.DataFrame:
    """The start and end times (ns; an end null where it is not an integer) of the export's NVTX ranges
    (push/pop and start/end), for the far-event rule."""
    t = "NVTX_EVENTS"
    if not export.has(t) or not {"start", "eventType"} <= export.columns(t):
        return pl.DataFrame(schema={"start": pl.Int64, "end": pl.Int64})
    end = export.col(t, "end")
    rows = export.con.execute(
        f"SELECT \"start\", CASE WHEN typeof({end}) = 'integer' THEN {end} END FROM {quote(_real_name(export, t))} "
        f'WHERE "eventType" IN ({_RANGE_TYPES}) AND typeof("start") = \'integer\''
    ).fetchall()
    return pl.DataFrame(rows, schema={"start": pl.Int64, "end": pl.Int64}, orient="row")


def _without_far_ranges(
    ranges: pl.DataFrame,
    ops: pl.DataFrame,
    api: pl.DataFrame | None,
    capture: tuple[int, int] | None,
    warnings: list[str],
) -> pl.DataFrame:
    """``ranges`` (raw NVTX ranges: start, end) without those stamped impossibly far from all the export's work
    (:func:`tracekit.readers.timestamps.far_events`, the ops and calls placing the trace), with a warning; for
    an export none of whose ops and calls lay far (:func:`_without_far_events` judged the ranges with them
    otherwise). One min/max over the ranges answers the usual export."""
    if ranges.is_empty():
        return ranges
    low, high, last = ranges.select(
        low=pl.col("start").min(), high=pl.col("start").max(), last=pl.col("end").max()
    ).row(0)
    if low is None:
        return ranges
    high = max(high, last if last is not None else high)
    work = [ops.get_column("start")] + ([] if api is None else [api.get_column("start")])
    if capture is not None:
        if low >= capture[0] - CAPTURE_SLACK_NS and high <= capture[1] + CAPTURE_SLACK_NS:
            return ranges
    else:
        points = [s for s in work if s.len() > s.null_count()]
        if not points:
            return ranges  # (a trace of ranges alone: nothing else places them)
        first = min(int(s.min()) for s in points)  # type: ignore[arg-type]
        latest = max(int(s.max()) for s in points)  # type: ignore[arg-type]
        if max(high, latest) - min(low, first) <= FAR_NS:
            return ranges
    far, warning = far_events(
        {},
        anchors=work,
        capture=capture,
        ends={"NVTX ranges": ranges.get_column("end")},
        ranges={"NVTX ranges": ranges.get_column("start")},
    )
    if warning is None:
        return ranges
    warnings.append(warning)
    return ranges.filter(~far["NVTX ranges"])


def _without_far_events(
    export: Database,
    ops: pl.DataFrame,
    api: pl.DataFrame | None,
    warnings: list[str],
) -> tuple[pl.DataFrame, pl.DataFrame | None, pl.DataFrame | None, int]:
    """``ops`` and ``api`` without the device ops and calls stamped impossibly far from the rest of the
    export (:func:`tracekit.readers.timestamps.far_events`): outside the capture that ``ANALYSIS_DETAILS``
    says ran from the session clock's 0 to its ``duration``, or an hour from every other op and call, with one
    warning; and the (start, end) of the NVTX ranges so stamped, with no work beside them (to be left out of
    the ranges), or None where no op or call lay far (the ranges are then judged as they are read:
    :func:`_without_far_ranges`). (A start of 2^63 - 807 ns read as it was made a latency of 9.2e12 ms, a
    start of -2^63 wrapped the launch delay around to +2^63; an NVTX range 5 h after a 20-ms capture was an
    iteration of no work.) ``api``: every row of a call recorded twice (collapsed after this).

    A device op whose launch call (its correlation id, in its process) was left out as far, while the op was
    not, keeps its own time: its correlation id is taken away, so that it is placed in its iteration by its own
    start (:func:`tracekit.readers.timestamps.launched_by_far_calls`), not said to have been launched before the
    capture began, in no iteration; the last of the four returned is how many (:data:`OPS_OF_FAR_CALLS`)."""
    ends = _session_ends(export)
    capture = (0, max(ends)) if ends else None
    starts = {"device ops": ops.get_column("start")}
    ends = {"device ops": ops.get_column("end")}
    if api is not None:
        starts["API calls"] = api.get_column("start")
        ends["API calls"] = api.get_column("end")
    none = pl.DataFrame(schema={"start": pl.Int64, "end": pl.Int64})
    far, warning = far_events(starts, capture=capture, ends=ends)
    if warning is None:  # (the ranges are judged where they are read: :func:`_without_far_ranges`)
        return ops, api, None, 0
    # (something lies far: the ranges tell a phase of the program of its own, or a damaged capture record, from
    # damaged rows, and may lie far themselves; read only then)
    ranges = _range_times(export)
    ends["NVTX ranges"] = ranges.get_column("end")
    far, warning = far_events(
        starts, capture=capture, ends=ends, ranges={"NVTX ranges": ranges.get_column("start")}
    )
    if warning is None:
        return ops, api, none, 0
    far_ops = far["device ops"]
    orphans = 0
    keys = [k for k in ("pid", "correlation") if k in ops.columns and api is not None and k in api.columns]
    if api is not None and "correlation" in keys and far["API calls"].any():
        orphaned = launched_by_far_calls(ops, api, far["API calls"], keys) & ~far_ops
        orphans = int(orphaned.sum())
        if orphans:
            ops = ops.with_columns(pl.when(~orphaned).then(pl.col("correlation")).alias("correlation"))
            warning += placed_by_own_start_said(orphans)
    warnings.append(warning)
    ops = ops.filter(~far_ops)
    if api is not None:
        api = api.filter(~far["API calls"])
    return ops, api, ranges.filter(far["NVTX ranges"]), orphans


def _read(export: Database, path: Path, want: dict[str, frozenset[str] | None]) -> Trace:
    warnings: list[str] = list(export.notes)
    untimed: dict[str, int] = {}
    export = _with_versioned_names(export, warnings)
    step = _TableSteps(export, _planned_tables(export, want))
    strings = _read_strings(export, path, step)
    diagnostics = _read_diagnostics(export, strings)
    ops_cols = want.get("ops")
    numbering = per_process_numbering(export)
    # Renumbering the ops' devices (:func:`_renumbered`) needs their process; dropped afterwards if not asked.
    read_cols = ops_cols | {"pid"} if ops_cols is not None and numbering is not None else ops_cols
    rows = max((export.row_estimate(t) or 0) for t in (KERNEL_TABLE, RUNTIME_TABLE))
    if "api" in want and rows <= SIDE_BY_SIDE_MAX_ROWS:  # the two largest tables, read side by side
        ops, api = export.side_by_side(
            lambda: _read_ops(export, strings, path, read_cols, warnings, step, untimed),
            lambda: _read_api(export, strings, path, want["api"], step, collapse=False),
        )
    else:
        ops = _read_ops(export, strings, path, read_cols, warnings, step, untimed)
        api = _read_api(export, strings, path, want["api"], step, collapse=False) if "api" in want else None

    ops, api, far_ranges, of_far_calls = _without_far_events(export, ops, api, warnings)
    if api is not None:  # (after the far rows are left out: a launch recorded twice keeps its undamaged row)
        api = collapse_duplicate_calls(api)

    def far_rule(ranges: pl.DataFrame) -> pl.DataFrame:
        """The NVTX ranges without those stamped impossibly far (said): judged with the ops and calls where
        one of them lay far (:func:`_without_far_events`), else here."""
        if far_ranges is not None:
            return ranges.join(far_ranges, on=["start", "end"], how="anti", nulls_equal=True)
        ends = _session_ends(export)
        return _without_far_ranges(ranges, ops, api, (0, max(ends)) if ends else None, warnings)

    if api is not None:
        ops = _with_launching_process(ops, api, warnings)
        api = _calls_with_process(api, ops, warnings)
    if numbering is not None:
        ops, numbering = _renumbered(ops, numbering, warnings)

    if api is not None:
        _profiler_overhead(export, strings, ops, api, warnings)

    env = export.key_values("TARGET_INFO_SYSTEM_ENV")
    gpus = gpu_table(export, env, numbering)
    # GPU-metric samples of a GPU no traced process used (CUDA_VISIBLE_DEVICES) get no device: its guessed CUDA
    # id can be the used GPU's (the process's device 0 being the box's GPU 1, the samples of GPU 0 were read as
    # its own).
    pw_to_cuda = {int(g["pw"]): (g["id"] if g["used"] else None) for g in gpus if g["pw"] is not None}

    # ranges (read before GPU metrics: an unclosed range needs every frame's latest timestamp)
    raw = empty_frame(RAW_RANGES_SCHEMA)
    if export.has("NVTX_EVENTS"):
        step("NVTX_EVENTS")
        raw = _read_nvtx(export, strings, path, warnings, _capture_start(diagnostics), far_rule)
    if api is not None:
        ops = _ops_of_untraced_processes(ops, api, raw, warnings)
    unclosed = raw.filter(pl.col("end").is_null()).height
    if unclosed and api is None:
        api = _read_api(export, strings, path, frozenset({"start", "end"}), step)
    gpu_metrics = None
    if "gpu_metrics" in want or unclosed:
        if table := _metrics_table(export):
            step(table)
        gpu_metrics = read_gpu_metrics(export, pw_to_cuda, warnings)
        if not gpus:
            gpu_metrics = _samples_without_gpu_table(gpu_metrics, warnings)
    if unclosed:
        assert api is not None and gpu_metrics is not None
        ends = _session_ends(export)
        raw = _close_unclosed(raw, ops, api, gpu_metrics, warnings, max(ends) if ends else None)
    step.done("normalizing")
    ranges = _nested(raw)
    # (a CPU-only trace's operators are taken from the ranges as nested: a never-closed one open to the trace end)
    nested = ranges
    if unclosed:
        # Nesting counted them open to the trace end; their own end stays unknown (no latency, no iteration).
        ranges = ranges.with_columns(pl.when(~pl.col(_NEVER_CLOSED)).then(pl.col("end")).alias("end")).drop(
            _NEVER_CLOSED
        )

    # GPU work in a table this reader does not read (a versioned or newer CUPTI table) is no CPU-only trace:
    # its NVTX leaves as operators had given a verdict on a GPU run from its host ranges alone.
    unread_tables = _unread_device_tables(export)
    unread = bool(unread_tables) if not ops.height else False
    # Launch calls without a kernel (CUPTI's activity buffers never flushed): a GPU run whose device work was
    # lost, no CPU-only one.
    lost = _launch_calls(export, strings) if not ops.height and not unread else 0
    if lost and not untimed:  # (rows CUPTI could not time are left out with their own warning)
        warnings.append(
            f"the export records {lost:,} kernel launch calls but no kernel, copy or memset: nsys lost the "
            "device's activity (CUPTI's records are flushed when the process exits or calls cudaProfilerStop; "
            "a process killed or ended with os._exit loses them), so this is a GPU run without device work, "
            "not a CPU-only trace"
        )
    # nsys's word that it lost CUDA activity (or could not trace CUDA at all): an export without device ops is
    # then a GPU run whose device work is missing, no CPU-only one (its NVTX leaves as operators had given a
    # verdict on a GPU run from its host ranges alone)
    lost_events = _lost_events(diagnostics, warnings, _stopped_by_profiler_stop(export, strings, diagnostics))
    device = "gpu" if ops.height or unread or lost or "device" in lost_events else "cpu"
    if device == "cpu" and ranges.height:
        ops = _cpu_operators(nested, warnings)
    if (
        device == "cpu"
        and (traced := _capture_event_types(export))
        and not any("cuda" in t.lower() for t in traced)
    ):
        warnings.append(
            f"the capture did not trace CUDA (it traced {', '.join(traced)}; nsys profile -t without cuda): read "
            "as a CPU-only run, any GPU work the application did is not in it"
        )
    meta = export_meta(export, path, env, gpus, ops if device == "gpu" else None)
    meta["device"] = device
    if lost_events:
        meta[META_LOST_EVENTS] = lost_events
    if "gpu_metrics" in want and gpu_metrics is not None and gpu_metrics.height:
        if (period := sampling_period_ns(export, gpu_metrics)) is not None:
            meta["gpu_metrics_period_ns"] = period
    if ops_cols is not None and device == "gpu":
        # Read for meta["gpu"] only: drop what was not asked for (null in the Trace).
        ops = ops.drop(
            [c for c in ("device", "stream", "pid", "correlation", "graph", "name") if c not in ops_cols]
        )
    if untimed:
        meta["untimed_rows"] = untimed
        meta[OPS_WITHOUT_END] = sum(untimed.values())  # (said here, kept untimed: not said again)
    if (
        unread_tables
    ):  # (warned above; the analysis weighs them: :func:`tracekit.analyzers.plausibility.unread_device_work`)
        meta["unread_device_tables"] = unread_tables
    launches = _read_launches(export) if "launches" in want and device == "gpu" else None
    if of_far_calls:  # (said by the far warning: the analysis does not say them again as ops without an id)
        meta[OPS_OF_FAR_CALLS] = of_far_calls
    meta["warnings"] = warnings
    meta[API_NAMES_READ] = "api" in want and (want["api"] is None or "name" in want["api"])
    return Trace(
        launches=launches,
        ops=ops,
        api=api if "api" in want else None,
        ranges=ranges,
        gpu_metrics=gpu_metrics if "gpu_metrics" in want else None,
        meta=meta,
    )
