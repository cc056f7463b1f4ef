"""Reader for PyTorch profiler (Kineto) chrome traces, ``.json`` and ``.json.gz``, 2021 to current spellings.

The file is a JSON object with ``traceEvents`` (a bare JSON array of chrome-trace events is accepted too).
Only complete events (``ph`` "X") become rows; flow events (``ph`` "s"/"f"/"t") are used only to recover a
missing correlation id. Category names are matched case-insensitively, so the 2021 spelling (``Kernel``,
``Runtime``, ``Operator``, ``Memcpy``, ``Memset``, flows ``async``), the 2022 one (``cpu_op``,
``cuda_runtime``, ``Kernel``, flows ``async_cpu_to_gpu``) and the current one (``kernel``, ``gpu_memcpy``,
``gpu_memset``, ``cuda_runtime``, ``cuda_driver``, flows ``ac2g``) all read the same way.

Decoding (:mod:`tracekit.readers.kineto_stream`, :mod:`tracekit.readers.kineto_decode`): the file is
inflated and decoded as a stream, msgspec in chunks of a few MB of event JSON, so the whole inflated text is
never held; each field is kept as its exact JSON text where it is a number, and turned into a column only
for the events that need it (flow events are read, in a second pass, only when a GPU event lacks its
correlation id); there is no per-event Python code. ``read(path, progress=...)`` reports progress as
``progress(phase, fraction)``.

Timestamps: Kineto writes ``ts``/``dur`` in microseconds, as integers or as decimals with nanosecond
fractions. The JSON is parsed with decimals kept as text and converted exactly: ns = round(µs × 1000),
rounding half away from zero at the nanosecond (``1.0005`` µs -> 1001 ns, ``1.0004`` µs -> 1000 ns), so no
float rounding creeps in even for epoch-sized microsecond values. ``end`` = ``start`` + ``dur`` (both
converted). All frames keep Kineto's own clock; ``baseTimeNanoseconds`` (present in newer traces) is not
added: the origin does not matter as long as every frame shares it. It is kept as ``meta["wall_clock_base_ns"]``
(:func:`wall_clock_base`: the wall-clock time of timestamp 0), which tells captures of other times apart in a
many-trace summary; ``distributedInfo.pg_config``'s NCCL groups of two or more ranks are
``meta["process_groups"]`` (:func:`nccl_process_groups`). What PyTorch writes on each communication kernel
(``Collective name``, ``Process Group Name``, ``Process Group Ranks``) is ``meta["collective_args"]``
(:func:`collective_args`: read for the kernels that carry them only, never a column of every op).

Unreadable values: complete events without a readable ``ts`` are skipped, and a warning counts them, but for
GPU ops: one without a ``ts`` still ran, and keeps its place by its launch call with a null ``start`` and
``end`` (a kernel of unknown time; it had been dropped, and its iteration read 'framework', sure of it). A GPU
op whose ``dur`` does not read (null, missing, NaN/Infinity, not a number, past int64 ns) keeps its place
with a null ``end`` (no end time, as nsys leaves a NULL end: it counts as an op but in no busy time). A warning
counts each (``meta["ops_without_end"]``, :data:`tracekit.model.OPS_WITHOUT_END`, says the reader did, so the
analysis does not repeat it); the other events read such a duration as 0.

Not Kineto traces, named in one line (TraceFormatError) rather than analyzed: a trace without device ops that
holds an accelerator's runtime calls of a backend whose device work tracekit does not read (Intel Gaudi's
``hpu_op``, whose engine events are ``hpu_op`` too; MTIA, Glow or PrivateUse1 calls without their device
ops: :func:`_device_work_not_read`), which as a CPU run would have had its CPU operators' time stand for the
device's; a JAX/TensorFlow chrome trace (xprof's trace viewer JSON, TF1's timeline:
:data:`XLA_PROCESS_NAME`) or an Ascend NPU trace (torch_npu's ``trace_view.json``: :data:`ASCEND_PROCESS_NAME`)
when no event was kept or no device op was read (:func:`_foreign_trace`); and, when no event was kept, the
legacy autograd profiler's export.

CUDA graphs with conditional nodes (:func:`_conditional_graphs`): a while node repeats its body on the
device and the profiler records the body's kernels once (kineto#1062). When the trace shows such graphs
(a call of :data:`CONDITIONAL_GRAPH_CALLS`, or PyTorch's ``set_conditional_handle_kernel`` among the
kernels), a warning says GPU busy may be under-counted, and ``meta["graph_conditionals"]`` holds the
evidence and the warning (the analysis makes a framework-bound verdict uncertain then, in one line that
replaces this warning). GPU work the reader cannot take is named
by category in a warning (not counted: the decoder drops those events first): a GPU op category spelt
with spaces (``"Kernel "``), and a GPU op category none of whose events is a complete one with a readable
ts (kernels written as ``ph`` "i").

What lands where:

``ops`` (GPU work)
    categories ``kernel`` (and MTIA's on-device ``mtia_ccp_events``, as HTA reads them) -> kind "kernel",
    ``gpu_memcpy``/``Memcpy`` -> "memcpy", ``gpu_memset``/``Memset`` -> "memset". ``device`` = args "device" (else the event's pid, which Kineto sets to the device);
    ``stream`` = args "stream" (else the number in the tid, e.g. "stream 7" in 2021 traces);
    ``correlation`` = args "correlation" (0 reads as none where no call of the trace has it: roctracer's RCCL
    kernels; args "External id" is a different id and is not used); when a
    GPU event lacks it, the id of the flow event (``ac2g``/``async``/``async_cpu_to_gpu``) that ends on it
    (same pid, tid and ts) is used. ``graph`` = args "graph id" when present.
    ``pid``: Kineto puts the *device* in a GPU event's pid. tracekit needs the *process* so that analyzers
    can join ops to their launching call by (pid, correlation): an op's pid is the pid of the runtime/driver
    event carrying the same correlation id; ops with no such event (launched before the capture window, or
    no correlation) get the trace's main process pid (the pid with the most runtime/driver events, else the
    most CPU events). A warning counts the ops without a launching call in the trace, and apart those whose
    correlation id lies between the first and last of the trace's own calls' (one process): launched during
    the capture, their call records lost (:func:`_orphans_warning`).
``api`` (host calls)
    ``cuda_runtime``/``Runtime``/``xpu_runtime``/``privateuse1_runtime``/``mtia_runtime``/``hpu_op``/
    ``glow_runtime`` -> kind "runtime", ``cuda_driver``/``xpu_driver``/``privateuse1_driver``/``driver`` -> kind
    "driver" (Intel XPU: SYCL calls such as
    ``urEnqueueKernelLaunch`` and the Level Zero calls inside them); ``pid``/``thread`` from the event;
    ``correlation`` from args; one trailing ``_vNNNN`` version suffix is stripped from names. A launch call
    inside another launch call of the same (pid, correlation) (a runtime launch and the driver launch it
    makes, both recorded) is left out: the outer one stands for it (:func:`_outermost_calls`). A warning names
    the calls that launched kernels (same correlation id) under no launch name tracekit knows
    (:data:`tracekit.model.LAUNCH_API_NAMES`: a PrivateUse1 device's runtime, say), which the launch
    counts leave out.
``ranges``
    ``user_annotation`` events and the CPU-op events that are ``record_function`` scopes, named
    ``<kind>#<name>`` by PyTorch (``ProfilerStep#N``, kept as-is, the analyzer collapses them;
    ``Optimizer.step#SGD.step``; ``enumerate(DataLoader)#...``): Kineto wrote every scope as an operator
    before it had ``user_annotation`` (2021 spelling), and as an operator such a scope would hide the time
    between the operators it holds (:data:`SCOPE_MARK`) -> domain "user", pid/thread of the event; complete
    events only: a warning says so when the trace has ``user_annotation`` events but none complete
    (begin/end pairs). ``gpu_user_annotation`` (the same annotations projected
    onto the GPU timeline; in the 2021 spelling category ``User`` with tid "stream N user", pid the device
    and no ``stream`` arg, as libkineto's ``handleGenericActivity`` wrote them: read only with such a tid,
    :data:`LEGACY_GPU_RANGE_TID`) -> domain "gpu", pid = the main process pid, thread = the stream; the analyzer
    ignores domain "gpu" for iteration choice. ``depth`` = nesting depth among ranges of the same pid,
    thread and domain kind (gpu vs host), 0 = top level.
``kernel_metrics``
    Kineto's per-kernel ``est. achieved occupancy %`` arg: one row per kernel carrying it, ``kernel`` = the
    kernel's 0-based position among all kernels ordered by start (then end), ``range`` null, ``duration_ns``
    the kernel's duration, ``metric`` "est. achieved occupancy %", ``unit`` "%".

``launches`` (only when asked for by name: the Nsight Compute join's launch check)
    each kernel's ``grid`` and ``block`` args (``[x, y, z]``), with its stream, start and end as ``ops`` has
    them (:func:`_launches`: a second pass over the file, decoding nothing else; not from a pipe, which is
    read once: a warning says so).

CPU-only traces (no kernel, memcpy or memset event): ``ops`` holds the top-level CPU operators (``cpu_op`` /
``Operator`` events not nested in another CPU operator on their thread, scopes such as ProfilerStep
excluded), kind "operator", ``device`` -1, ``stream`` = the thread id, ``pid`` = the event's pid,
``correlation``/``graph`` null; ``meta["device"]`` is then "cpu".
``cpu_ops`` (GPU traces only; empty on CPU-only ones, whose operators are the ``ops``)
    the same top-level CPU operators: ``start``, ``end``, ``pid``, ``thread`` (numbered as ``api.thread``),
    ``name``, in file order; the idle-time attribution names dispatch time after the enclosing one. Built
    only when ``read(..., frames=...)`` asks for it (or frames is None).

Not read: ``cuda_sync`` events (CUPTI synchronization records on the GPU timeline: waits, not work),
``python_function`` stacks, memory instant events, ``fwdbwd`` flows, ``Trace`` spans.

``meta``: ``format`` "kineto", ``format_version`` ("schema 1, 2021 spelling" / "2022 spelling" /
"2023+ spelling"), ``schema_version``, ``kineto_spelling``, ``device`` ("gpu" | "cpu"), ``gpus`` (list of
{id, name} from ``deviceProperties``), ``gpu`` (name of the device that ran the most kernels; device 0's
when no kernel names a listed device), ``rank`` and ``world_size`` (``distributedInfo``'s), ``synthetic``
(top-level ``"tracekit_synthetic": true`` or "synthetic" in the file name), ``warnings``, ``cpu_op_summary``
and ``first_op_inputs`` (CPU-operator evidence for runtime identification:
:mod:`tracekit.readers.kineto_summary`); scalar entries of a ``tracekit_meta`` header (written by
``tracekit simulate``) fill keys not set otherwise.

CPU-only traces whose operators are not the program's work (a warning each, and the evidence in ``meta`` for
the analysis): ``compiled_cpu_code`` (:func:`_compiled_cpu_code`: torch.compile regions whose Inductor C++
kernels are no operators unless ``enable_kernel_profile`` is set; {regions, region_ms, unrecorded_ms,
warning}) and ``gpu_program_without_device_activity`` (:func:`_gpu_program_without_device_activity`:
operators that run for GPU tensors only, in a trace with no device op: a GPU program profiled without
``ProfilerActivity.CUDA``; {operators, warning}).
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import compress, repeat
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tracekit import limits
from tracekit.calls import OUTERMOST_ORDER
from tracekit.errors import TraceFormatError
from tracekit.io import is_stream, peek_input
from tracekit.limits import format_size
from tracekit.model import (
    API_NAMES_READ,
    API_SCHEMA,
    CALLS_WITHOUT_END,
    COMPILED_CPU_CODE,
    CPU_OPS_SCHEMA,
    GPU_PROGRAM_WITHOUT_DEVICE_ACTIVITY,
    GRAPH_LAUNCH_NAMES,
    KERNEL_METRICS_SCHEMA,
    LAUNCH_API_NAMES,
    LAUNCH_DIMS,
    LAUNCHES_SCHEMA,
    META_GPU_TRACING_STOPPED,
    META_OPS_OF_SHARED_IDS,
    META_PYTHON_THREADS,
    META_PYTHON_TRACING,
    OPS_OF_FAR_CALLS,
    OPS_SCHEMA,
    OPS_WITHOUT_END,
    RANGES_SCHEMA,
    UNREAD_DEVICE_EVENTS,
    FrameSpec,
    Trace,
    busiest_gpu_name,
    calls_named,
    conform,
    empty_frame,
    sort_frame,
    union_ns,
    wanted_frames,
)
from tracekit.readers import kineto_wire, kineto_worker
from tracekit.readers.kineto_decode import _values_text, columns, raw_column
from tracekit.readers.kineto_json import (
    _SEP,
    API_CATEGORIES,
    BEGIN_END_MARK,
    BEGIN_END_PHASES,
    COMM_FIELDS,
    COMM_ROWS,
    CPU_OP_CATEGORIES,
    DECODE_LAUNCHES,
    FLOW_CATEGORIES,
    GPU_RANGE_CATEGORIES,
    INPUT_FIELDS,
    INT_ARGS,
    KEPT_CATEGORIES,
    LAUNCH_FIELDS,
    LEGACY_GPU_RANGE_CATEGORIES,
    NESTED_TOO_DEEPLY,
    OP_CATEGORIES,
    PYTHON_CATEGORIES,
    READ_CATEGORIES,
    USER_RANGE_CATEGORIES,
    LaunchEvent,
    Progress,
    _Event,
    read_json_bytes,
)
from tracekit.readers.kineto_stream import stream_events
from tracekit.readers.kineto_summary import cpu_op_summary, first_op_candidate, first_op_inputs
from tracekit.readers.kineto_wire import WireChunk
from tracekit.readers.nesting import nesting_depth
from tracekit.readers.timestamps import FAR_NS, far_events, placed_by_own_start_said

GZIP_MAGIC = b"\x1f\x8b"

#: a CPU-op event whose name holds this is a ``record_function`` scope, not an operator: PyTorch names its own
#: scopes ``<kind>#<name>`` (``ProfilerStep#3``, ``Optimizer.step#SGD.step``,
#: ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``), and no operator name holds a ``#``. Kineto
#: wrote every scope as an operator (``Operator``) before it had ``user_annotation`` (2021 spelling)
SCOPE_MARK = "#"
#: CPU-op names that are ``record_function`` scopes too: the range ``tracekit collect`` opens around each timed
#: iteration, the analysis' default iteration name (a 2021 trace wrote it as an ``Operator``)
SCOPE_NAMES: tuple[str, ...] = ("iteration",)
#: the pid the legacy autograd profiler's export (``use_kineto=False``, PyTorch before 1.8) gives host events
LEGACY_PID = "CPU functions"
OCCUPANCY_ARG = "est. achieved occupancy %"
#: the warning when the ``launches`` frame is asked for and the trace comes from a pipe (read once)
LAUNCHES_FROM_A_PIPE = (
    "the kernels' launch dimensions are not read from a pipe (they take a second pass over the file): save "
    "the trace to a file for the Nsight Compute join to check them"
)
API_SUFFIX = r"_v\d{4,}$"
#: microsecond values from here on do not fit int64 nanoseconds
MAX_US = 9_223_372_036_854_775

# ------------------------------------------------------------------------------------------- loading


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building millions of acyclic objects (a 2x speed-up)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_json(path: Path) -> Any:
    """Parse a (possibly gzipped) JSON file, keeping decimals as their text so timestamps convert exactly.

    Raises TraceFormatError on a damaged gzip stream or truncated/invalid JSON.
    """
    raw = read_json_bytes(path)
    try:
        with gc_paused():
            return json.loads(raw, parse_float=str)
    except RecursionError:
        raise TraceFormatError(NESTED_TOO_DEEPLY, path) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"truncated or invalid JSON: {exc}", path) from exc


def us_to_ns(col: pl.Expr) -> pl.Expr:
    """Microsecond values (integers, or decimal text such as "4458676522690.655") -> int64 nanoseconds.

    Exact decimal arithmetic on the text: ns = round(µs × 1000), half away from zero ("1.0005" -> 1001).
    Values in exponent notation fall back to float arithmetic. Unparseable values, and values of 2^63 ns or
    more, give null.
    """
    text = col.cast(pl.String).str.strip_chars()
    negative = text.str.starts_with("-")
    body = text.str.strip_prefix("-").str.strip_prefix("+")
    plain = body.str.contains(r"^\d*\.?\d*$") & body.str.contains(r"\d")
    whole = pl.concat_str([pl.lit("0"), body.str.extract(r"^(\d*)", 1)]).cast(pl.Int64, strict=False)
    frac = body.str.extract(r"\.(\d*)$", 1).fill_null("")
    first3 = pl.concat_str([frac, pl.lit("000")]).str.slice(0, 3).cast(pl.Int64, strict=False)
    round_up = (frac.str.slice(3, 1) >= pl.lit("5")).fill_null(False).cast(pl.Int64)
    exact = whole * 1000 + first3 + round_up
    approx = (body.cast(pl.Float64, strict=False) * 1000.0).round(0).cast(pl.Int64, strict=False)
    # int64 ns overflow past ~9.2e15 µs (year 2262 as epoch time): such values are not timestamps
    magnitude = pl.when(plain & (whole < MAX_US)).then(exact).when(~plain).then(approx)
    return pl.when(negative).then(-magnitude).otherwise(magnitude)


def _flows_frame() -> pl.DataFrame:
    """No flow events (the columns of :func:`_flows`)."""
    return pl.DataFrame(schema={"pid": pl.String, "tid": pl.String, "start": pl.Int64, "id": pl.String})


def us_to_ns_series(text: pl.Series) -> pl.Series:
    """:func:`us_to_ns` of a String series. The spellings profilers write (integers, as Kineto did until
    2023; decimals with one to three fraction digits: "1712195495519689.047" as Kineto writes now,
    "1683564901548726.5" as a trace re-saved by Python's json has it) take one integer cast of the digits
    (the point removed) and one scaling to nanoseconds; the others go through :func:`_us_to_ns_split` (same
    result, slower)."""
    t = pl.col("t")
    dot = pl.col("dot")
    staged = pl.DataFrame({"t": text}).with_columns(dot=t.str.find(".", literal=True))
    places = t.str.len_bytes() - dot - 1  # fraction digits (null without a point)
    staged = staged.with_columns(
        places=pl.when(dot.is_null()).then(0).when(places.is_between(1, 3)).then(places),
        digits=pl.when(dot.is_null())
        .then(t)
        .when(places.is_between(1, 3) & t.str.tail(places).str.contains(r"^[0-9]+$"))
        .then(t.str.replace(".", "", literal=True))
        .cast(pl.Int64, strict=False),
    )
    # within int64 nanoseconds, as us_to_ns has it (|µs| < MAX_US); bounds, not abs(): abs(int64 min) wraps
    digits, places = pl.col("digits"), pl.col("places")
    scale = (10 ** (3 - places)).cast(pl.Int64)
    limit = MAX_US * (10**places).cast(pl.Int64)
    ns = staged.select(pl.when((digits > -limit) & (digits < limit)).then(digits * scale)).to_series()
    other = ns.is_null() & text.is_not_null()
    if other.any():
        idx = other.arg_true()
        ns = ns.scatter(idx, _us_to_ns_split(text.gather(idx)))
    return ns.alias(text.name)


def _us_to_ns_split(text: pl.Series) -> pl.Series:
    """:func:`us_to_ns` of a String series, fast on plain decimals ("-12", "1009612.574",
    "1683564901548726.5": at most 16 digits before the point, so epoch microseconds of any fraction length
    too): those are split at the point and cast (null from :data:`MAX_US` µs on, as :func:`us_to_ns` has
    it); the other values go through :func:`us_to_ns` (same result, regex-based and slower)."""
    frame = pl.DataFrame({"t": text})
    parts = pl.col("t").str.split_exact(".", 1)
    whole = parts.struct.field("field_0")
    frac4 = (
        parts.struct.field("field_1")
        .fill_null("")
        .str.pad_end(4, "0")
        .str.slice(0, 4)
        .cast(pl.Int64, strict=False)
    )
    # 16 digits always fit an int64; below MAX_US µs, µs x 1000 + 1000 does too
    whole_us = whole.str.strip_prefix("-").cast(pl.Int64, strict=False)
    magnitude = pl.when(whole_us < MAX_US).then(whole_us * 1000 + frac4 // 10 + (frac4 % 10 >= 5))
    plain = pl.col("t").str.contains(r"^-?\d{1,16}(\.\d+)?$")
    out = frame.select(
        plain=plain,
        ns=pl.when(plain).then(pl.when(whole.str.starts_with("-")).then(-magnitude).otherwise(magnitude)),
    )
    ns = out.get_column("ns")
    other = ~out.get_column("plain") & text.is_not_null()
    if other.any():
        idx = other.arg_true()
        ns = ns.scatter(idx, frame.select(us_to_ns(pl.col("t").gather(idx))).to_series())
    return ns.alias(text.name)


def leading_int(col: pl.Expr) -> pl.Expr:
    """An integer from text that is a number or ends in one ("stream 7" -> 7, "25738" -> 25738)."""
    return col.str.extract(r"(-?\d+)\s*$", 1).cast(pl.Int64, strict=False)


def leading_int_series(text: pl.Series) -> pl.Series:
    """:func:`leading_int` of a String series: the values that are plain integers ("25738") by one cast, the
    regex only for the others ("stream 7"); the same result (a text the cast reads is all digits, with an
    optional sign, and the regex reads the same number from it). An integer series is its own result."""
    if text.dtype.is_integer():
        return text.cast(pl.Int64)
    ints = text.cast(pl.Int64, strict=False)
    other = ints.is_null() & text.is_not_null()
    if other.any():
        idx = other.arg_true()
        ints = ints.scatter(
            idx, text.gather(idx).to_frame().select(leading_int(pl.col(text.name))).to_series()
        )
    return ints


# --------------------------------------------------------------------------------------------- nesting


# ---------------------------------------------------------------------------------------------- read


def _main_pid(x_events: pl.DataFrame) -> int | None:
    """The process pid of the trace: most runtime/driver events, else most CPU events (null when none)."""
    # counted per pid text first (a handful of distinct values), then per integer pid; only the two
    # columns used are read
    counts = (
        x_events.lazy()
        .select(
            "pid",
            is_api=pl.col("cat_l").is_in(list(API_CATEGORIES)),
            is_host=pl.col("cat_l").is_in(list(CPU_OP_CATEGORIES + USER_RANGE_CATEGORIES)),
        )
        .filter(pl.col("is_api") | pl.col("is_host"))
        .group_by("pid")
        .agg(api=pl.col("is_api").sum(), n=pl.len())
        .with_columns(pid_i=pl.col("pid").cast(pl.Int64, strict=False))
        .filter(pl.col("pid_i").is_not_null())
        .group_by("pid_i")
        .agg(pl.col("api").sum(), pl.col("n").sum())
        .collect()
    )
    if counts.height == 0:
        return None
    return int(counts.sort(["api", "n", "pid_i"], descending=[True, True, False])["pid_i"][0])


def _api(x_events: pl.DataFrame) -> pl.DataFrame:
    api = (
        x_events.select("cat_l", "start", "dur_ns", "pid", "tid_i", "a_correlation", "name")  # filtered
        .filter(pl.col("cat_l").is_in(list(API_CATEGORIES)))
        .select(
            "start",
            end=pl.col("start") + pl.col("dur_ns"),
            pid=pl.col("pid").cast(pl.Int64, strict=False),
            thread=pl.col("tid_i"),
            correlation=pl.col("a_correlation").cast(pl.Int64, strict=False),
            kind=_category_kind(API_CATEGORIES),
            name="name",
        )
    )
    return _outermost_calls(api.with_columns(_without_api_suffix(api.get_column("name"))))


#: How far (ns) a nested call's end may read past its caller's: traces of whole microseconds cut ts and dur
#: down apart, which puts an end up to 2 µs early (a call from 100.9 to 105.2 µs reads 100 + 4)
NESTED_END_SLACK_NS = 2000


def _outermost_calls(api: pl.DataFrame) -> pl.DataFrame:
    """``api`` without the launch calls that lie inside another launch call of the same (pid, correlation):
    one launch recorded twice, the outer row kept (the outermost, as :mod:`tracekit.calls` defines it).

    libkineto writes each CUPTI driver record of a tracked launch cbid (``cuLaunchKernel``,
    ``cuLaunchKernelEx``: "for triton kernel launches", ``CuptiActivityProfiler::handleDriverActivity``) with
    no check against the runtime record of the same correlation id, so a runtime launch whose driver call is
    recorded too would count as two launches (so would a HIP launch whose inner ``hipModuleLaunchKernel``
    is recorded). Nested: starting at or after the outer call's start and ending by its end, give or take
    :data:`NESTED_END_SLACK_NS`. Left as they are: a call equal to the outer one in every field (an event
    written twice: :class:`tracekit.model.Trace` drops it and says so), a nested call that is no launch (a
    SYCL launch's Level Zero call, which counts in no launch figure), and two launch calls of one pair that
    do not nest (an id reused: the
    analysis doubts its verdict on them, :func:`tracekit.analyzers.plausibility.reused_correlations`). Rows
    stay in file order; nothing is done when no pair repeats (no real trace seen has one)."""
    keyed = pl.col("correlation").is_not_null() & (pl.col("correlation") != 0)
    pairs = api.filter(keyed).select("pid", "correlation")
    ids = pairs.get_column("correlation")
    if ids.is_empty() or ids.n_unique() == ids.len():  # (no id twice: no pair twice, without hashing pairs)
        return api
    if pairs.select(pl.struct("pid", "correlation").n_unique()).item() == pairs.height:
        return api
    launch = pl.col("name").is_in(calls_named(api, LAUNCH_API_NAMES).get_column("name").unique().implode())
    by, descending = OUTERMOST_ORDER
    rows = (
        api.with_row_index("_row")
        .filter(keyed)
        .select("_row", "pid", "correlation", "start", "end", "thread", "kind", "name", launch=launch)
        .sort(by, descending=descending, maintain_order=True)
    )
    outer = [pl.col(c).first().over("pid", "correlation") for c in ("_row", "start", "end", "launch")]
    # an event written twice (equal in every field) is the Trace's to drop, with its 'recorded twice' warning
    same = [
        pl.col(c).eq_missing(pl.col(c).first().over("pid", "correlation")) for c in ("thread", "kind", "name")
    ]
    inner = rows.filter(
        pl.col("_row") != outer[0],
        pl.col("launch"),
        outer[3],
        pl.col("start") >= outer[1],
        pl.col("end") <= outer[2] + NESTED_END_SLACK_NS,
        ~((pl.col("start") == outer[1]) & (pl.col("end") == outer[2]) & pl.all_horizontal(same)),
    ).get_column("_row")
    if inner.is_empty():
        return api
    return api.with_row_index("_row").filter(~pl.col("_row").is_in(inner.implode())).drop("_row")


def _without_api_suffix(names: pl.Series) -> pl.Series:
    """API call names with one trailing ``_vNNNN`` version suffix stripped (:data:`API_SUFFIX`), the
    pattern run on the distinct names only (a handful, however many calls)."""
    distinct = names.unique()
    stripped = distinct.str.replace(API_SUFFIX, "")
    changed = distinct.ne_missing(stripped)
    if not changed.any():
        return names
    return names.replace(distinct.filter(changed), stripped.filter(changed))


def _gpu_ops(
    x_events: pl.DataFrame, flows: pl.DataFrame, api: pl.DataFrame, main_pid: int | None
) -> pl.DataFrame:
    gpu = x_events.filter(pl.col("cat_l").is_in(list(OP_CATEGORIES)))
    if gpu.height == 0:
        return empty_frame(OPS_SCHEMA)
    # 0 is no id unless a call of the trace has it: CUPTI's and roctracer's ids start at 1, roctracer gives 0
    # to every RCCL kernel (ROCm/roctracer#100), and PyTorch's profiler links only ids above 0
    correlation = pl.col("a_correlation").cast(pl.Int64, strict=False)
    zero_is_id = bool((api.get_column("correlation") == 0).any()) if api.height else False
    gpu = gpu.with_columns(
        correlation=correlation if zero_is_id else pl.when(correlation != 0).then(correlation)
    )
    if gpu["correlation"].null_count() and flows.height:
        # The flow event that ends on a GPU event sits at the same pid, tid and ts.
        ends = (
            flows.select("start")
            .with_columns(
                # (an id written 0.0 is 0, as the rows read it: :func:`_integers`)
                *(_as_integer_text(flows.get_column(c)) for c in ("pid", "tid")),
                flow_id=_integers(flows.get_column("id").cast(pl.String)),
            )
            .filter(pl.col("flow_id").is_not_null() & ((pl.col("flow_id") != 0) | zero_is_id))
            .unique(subset=["pid", "tid", "start"], keep="first")
        )
        # flows keep pid/tid as text; the rows may hold them as integers (:func:`_finish_rows`)
        gpu = (
            gpu.with_columns(pid_text=pl.col("pid").cast(pl.String), tid_text=pl.col("tid").cast(pl.String))
            .join(
                ends, left_on=["pid_text", "tid_text", "start"], right_on=["pid", "tid", "start"], how="left"
            )
            .drop("pid_text", "tid_text")
            .with_columns(correlation=pl.coalesce("correlation", "flow_id"))
        )
    gpu = _with_launch_pid(gpu, api)
    return gpu.select(
        "start",
        # no end time where the duration is unreadable (as nsys leaves a NULL end): counted in no busy time
        end=pl.when(~pl.col("dur_unread")).then(pl.col("start") + pl.col("dur_ns")),
        # (a device number past int32, a damaged value, reads as unknown, as one that does not read)
        device=pl.coalesce(
            pl.col("a_device").cast(pl.Int32, strict=False), pl.col("pid").cast(pl.Int32, strict=False)
        ),
        stream=pl.coalesce(pl.col("a_stream").cast(pl.Int64, strict=False), pl.col("tid_i")),
        pid=pl.coalesce("call_pid", pl.lit(main_pid, dtype=pl.Int64)),
        correlation="correlation",
        graph=pl.col("a_graph").cast(pl.Int64, strict=False),
        kind=_category_kind(OP_CATEGORIES),
        name="name",
        has_call=pl.col("call_pid").is_not_null(),
        shared_id="shared_id",
        occupancy=pl.col("a_occupancy").cast(pl.Float64, strict=False),
    )


def _unread_gpu_categories(categories: set[str], gpu_ops: pl.DataFrame) -> list[str]:
    """Warnings for GPU work the trace names but that no op holds: a category that is a GPU op category but
    for its spaces (``"Kernel "``: its events were not read), and a GPU op category of which no event became
    an op (none is a complete event, ``ph`` "X", with a readable ts: e.g. kernels written as instant
    events). ``categories``: every category name of the file's events; ``gpu_ops``: :func:`_gpu_ops`."""
    warnings = []
    for category in sorted(categories):
        known = category.strip().lower()
        if category.lower() not in READ_CATEGORIES and known in READ_CATEGORIES:
            warnings.append(
                f"events of category {category!r} were not read (the category tracekit reads is {known!r}, "
                "without spaces): what they record is left out of every figure"
            )
    kinds = {OP_CATEGORIES[c.lower()]: c for c in sorted(categories) if c.lower() in OP_CATEGORIES}
    if kinds:
        present = gpu_ops.select(*((pl.col("kind") == kind).any().alias(kind) for kind in kinds)).row(
            0, named=True
        )
        for kind, category in kinds.items():
            if not present[kind]:
                warnings.append(
                    f"the trace has events of category {category!r} but none is a complete event ('ph': 'X') "
                    f"with a readable ts: no {kind} was read, and the GPU work they record is left out of "
                    "every figure"
                )
    return warnings


def _closing_step_only(ranges: pl.DataFrame, categories: set[str]) -> list[str]:
    """A warning when a trace without any operator, call or device op (the caller checks) holds one range,
    a ``ProfilerStep#N``, and no event of another category than annotations and the profiler's ``Trace``
    span: what torch.profiler hands ``on_trace_ready`` when it stops during a schedule's wait or warm-up
    (``_transit_action`` to None runs start_trace, stop_trace and trace_ready), whose only event is the step
    the last ``p.step()`` opened and the stop closed (torch 2.13, real: a 7.7 µs ``ProfilerStep#5``).
    ``tensorboard_trace_handler`` writes it as a second file beside the run's trace; an ``on_trace_ready``
    that exports to one path overwrites the run's trace with it. The file cannot tell it from one step of
    work torch.profiler does not see (ORT or NumPy under torch.profiler), so the warning says "if". (More
    steps, Python tracing or memory events: no such warning.)"""
    user = ranges.filter(pl.col("domain") == "user")
    if user.height != 1 or not str(user["name"][0]).startswith(PROFILER_STEP_PREFIX):
        return []
    if {c.lower() for c in categories} - {*USER_RANGE_CATEGORIES, "trace"}:
        return []
    start, end = user["start"][0], user["end"][0]
    span = end - start if start is not None and end is not None else 0
    return [
        f"the trace holds one step, {user['name'][0]} ({span / 1e6:.3f} ms), and no operator, launch call or "
        "device op: if torch.profiler stopped during a schedule's wait or warm-up, this is the trace it writes "
        "then (the step the last p.step() opened; tensorboard_trace_handler writes it beside the run's trace, "
        "and an on_trace_ready that writes one path overwrites the run's trace with it), and its latency is not "
        "an iteration's: analyze the trace of the schedule's active steps"
    ]


#: how PyTorch names the range of each ``profiler.step()``
PROFILER_STEP_PREFIX = "ProfilerStep#"


def _unread_range_categories(categories: set[str], ranges: pl.DataFrame) -> list[str]:
    """A warning for annotations the trace names but no range holds: a ``user_annotation`` category none of
    whose events is a complete event (``ph`` "X") with a readable ts, e.g. ``ProfilerStep#N`` written as
    async ``b``/``e`` or ``B``/``E`` pairs. Without it the analysis would say the trace has no ranges and
    take it whole as one iteration. ``categories``: every category name of the file's events; ``ranges``:
    :func:`_ranges`."""
    named = sorted(c for c in categories if c.lower() in USER_RANGE_CATEGORIES)
    if not named or ranges.filter(pl.col("domain") == "user").height:
        return []
    return [
        f"the trace has events of category {named[0]!r} but none is a complete event ('ph': 'X') with a "
        "readable ts: no range was read from them (begin/end pairs are not read), so the iterations they mark "
        "are not known"
    ]


#: what the begin/end events of each kind of read category record, as :func:`_begin_end_warnings` says it
_PAIRED_LEFT_OUT = {
    "op": "the GPU work they record is left out of every figure (GPU busy time is short by it, and the "
    "iterations that launched it read as if it never ran)",
    "api": "the launch calls they record are left out of every figure (launch counts and launch overhead are "
    "short by them, and their ops are unlinked)",
    "cpu": "the CPU operators they record are left out of every figure",
    "range": "the iterations they mark are missing (their work reads as outside every iteration)",
    "gpu range": "the GPU-side annotations they record are not read",
}


def _begin_end_warnings(
    paired: set[str], read: set[str], device: str, gpu_ops: pl.DataFrame, ranges: pl.DataFrame
) -> tuple[list[str], list[str]]:
    """(warnings, unread work for ``meta``) for the read categories some of whose events are begin/end pairs
    (``ph`` "B"/"E", or async "b"/"e"), which tracekit does not read: Kineto writes complete events only, but a
    file merged from another writer's may hold both. ``paired``: those categories; ``read``: the lower-cased
    categories of the complete events read; ``device``: what the ops measured ("gpu", or "cpu": the CPU
    operators are the work). A device-op or annotation category none of whose events became an op or a range
    is said by :func:`_unread_gpu_categories` and :func:`_unread_range_categories` already (none is a complete
    event) and is not said again. The unread work (the verdict is doubted on it:
    :func:`tracekit.analyzers.plausibility.unread_device_work`) is the device ops' pairs, and on a CPU trace
    the operators' (review20: an operator so written had left its iteration's busy 0.2 ms for 0.3, sure)."""
    warnings, unread = [], []
    kinds = set(gpu_ops.get_column("kind").unique().to_list()) if gpu_ops.height else set()
    has_user_ranges = bool(ranges.filter(pl.col("domain") == "user").height)
    for category in sorted(paired):
        known = category.lower()
        if known in OP_CATEGORIES:
            if OP_CATEGORIES[known] not in kinds:
                continue  # (said: none is a complete event)
            kind = "op"
            unread.append(f"{category!r} events written as begin/end pairs")
        elif known in USER_RANGE_CATEGORIES:
            if not has_user_ranges:
                continue  # (said: none is a complete event)
            kind = "range"
        elif known in API_CATEGORIES:
            kind = "api"
        elif known in CPU_OP_CATEGORIES:
            kind = "cpu"
            if device == "cpu":
                unread.append(f"{category!r} events written as begin/end pairs")
        else:
            kind = "gpu range"
        beside = (
            "beside complete events ('ph' 'X') of that category"
            if known in read
            else "and none as a complete event ('ph' 'X')"
        )
        warnings.append(
            f"events of category {category!r} are written as begin/end pairs ('ph' 'B'/'E' or 'b'/'e') "
            f"{beside}: tracekit reads complete events only (as Kineto writes them), so {_PAIRED_LEFT_OUT[kind]}"
        )
    return warnings, unread


def _with_launch_pid(gpu: pl.DataFrame, api: pl.DataFrame) -> pl.DataFrame:
    """``gpu`` with ``call_pid``: the pid of the runtime/driver call carrying the op's correlation id (null when
    none does), and ``shared_id``: the op's id is used by calls of several processes and nothing below told
    which one launched it. When every such call has one and the same pid (one process: the usual case), that
    is a membership test of the correlation ids, not a group-by and a join.

    Correlation ids are per process (each process's CUPTI or roctracer counts its own from 1), so in a file
    holding several processes' captures one id may be used by calls of more than one (:func:`_launcher_pids`
    tells them apart)."""
    calls = api.filter(pl.col("correlation").is_not_null()).select("correlation", "pid", "start", "name")
    pids = calls.get_column("pid")
    if pids.null_count() == 0 and pids.n_unique() == 1:
        launched = pl.col("correlation").is_in(calls.get_column("correlation").implode())
        return gpu.with_columns(
            call_pid=pl.when(launched).then(pl.lit(pids[0], dtype=pl.Int64)), shared_id=pl.lit(False)
        )
    launch_pid = calls.group_by("correlation").agg(
        call_pid=pl.col("pid").first(), pids=pl.col("pid").n_unique()
    )
    gpu = gpu.join(launch_pid, on="correlation", how="left")
    shared = (pl.col("pids") > 1).fill_null(False)
    if not gpu.select(shared.any()).item():
        return gpu.drop("pids").with_columns(shared_id=pl.lit(False))
    gpu = gpu.with_row_index("_op")
    resolved = _launcher_pids(gpu.filter(shared), gpu.filter(~shared), calls)
    return (
        gpu.join(resolved, on="_op", how="left")
        .with_columns(
            call_pid=pl.coalesce("resolved_pid", "call_pid"),
            shared_id=shared & pl.col("resolved_pid").is_null(),
        )
        .drop("_op", "pids", "resolved_pid")
    )


#: ``meta`` key: how many device ops carry an id that calls of several processes use, with nothing to tell
#: which process launched them (:func:`_launcher_pids`): each is linked to its id's first call
SHARED_IDS = META_OPS_OF_SHARED_IDS


def _shared_ids_warning(ops: pl.DataFrame, api: pl.DataFrame, count: int) -> str:
    """The warning for the ``count`` ops whose launching process :func:`_launcher_pids` could not tell."""
    ids = ops.filter(pl.col("shared_id")).get_column("correlation").unique().implode()
    pids = sorted(
        api.filter(pl.col("correlation").is_in(ids)).get_column("pid").drop_nulls().unique().to_list()
    )
    return (
        f"{count} device ops carry correlation ids that calls of several processes (pids "
        f"{', '.join(map(str, pids))}) use, and neither their start, their device nor the other ops tell which "
        "process launched them: each is linked to the first such call in the file, so the iterations that count "
        "them may be another process's (correlation ids are per process: analyze each process's own trace)"
    )


#: the rounds of :func:`_launcher_pids`' one-op-per-launch rule (each may settle ops that free others)
LAUNCHER_ROUNDS = 8


def _launcher_pids(shared: pl.DataFrame, linked: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """(``_op``, ``resolved_pid``) for the ``shared`` ops (rows of :func:`_with_launch_pid`'s frame whose id
    calls of several processes use) whose launching process the trace tells, each of these keeping the
    candidates (the processes with a call of the op's id) that remain:

    - *time*: a call that began after the op started did not launch it;
    - *device*: where the ops of a device that only one process's calls name (``linked``) are all of some
      processes, an op of that device is one of theirs;
    - *one op per launch*: a kernel launch, copy or memset call (not a graph launch) makes one op, so a call
      another op is already settled on launched no other.

    A rule that would leave an op no candidate is not applied to it. An op with one candidate left is
    settled; the others are left out (``shared_id`` then)."""
    device = pl.coalesce(
        pl.col("a_device").cast(pl.Int32, strict=False), pl.col("pid").cast(pl.Int32, strict=False)
    )
    owners = (
        linked.filter(pl.col("call_pid").is_not_null())
        .select(device.alias("_device"), "call_pid")
        .group_by("_device")
        .agg(owners=pl.col("call_pid").unique())
    )
    candidates = (
        shared.select("_op", "correlation", op_start="start", _device=device)
        .join(calls.rename({"start": "call_start"}), on="correlation")
        .join(owners, on="_device", how="left")
        .with_columns(
            one_op=~pl.col("name").is_in(list(GRAPH_LAUNCH_NAMES)),
            ok_time=(pl.col("call_start") <= pl.col("op_start")).fill_null(True),
            ok_device=pl.col("owners").is_null() | pl.col("pid").is_in(pl.col("owners")),
        )
    )

    def narrowed(frame: pl.DataFrame, keep: pl.Expr) -> pl.DataFrame:
        # an op keeps the candidates that pass, unless none does (the rule then tells it nothing)
        return frame.filter(keep | ~keep.any().over("_op"))

    candidates = narrowed(narrowed(candidates, pl.col("ok_time")), pl.col("ok_device"))
    for _ in range(LAUNCHER_ROUNDS):
        one = pl.col("pid").n_unique().over("_op") == 1
        taken = (
            candidates.filter(one, pl.col("one_op"))
            .select("_op", taken_pid="pid", correlation="correlation")
            .unique(subset=["taken_pid", "correlation"], keep="first")
        )
        # a launch taken by an op already settled is not another op's
        free = candidates.join(
            taken, left_on=["pid", "correlation"], right_on=["taken_pid", "correlation"], how="left"
        )
        free_expr = pl.col("_op_right").is_null() | (pl.col("_op_right") == pl.col("_op"))
        before = candidates.height
        candidates = narrowed(free, free_expr).drop("_op_right")
        if candidates.height == before:
            break
    return (
        candidates.group_by("_op")
        .agg(pl.col("pid").unique())
        .filter(pl.col("pid").list.len() == 1)
        .select("_op", resolved_pid=pl.col("pid").list.first())
    )


#: API calls that copy or set memory (``cudaMemsetAsync``, ``hipMemset``, ``hipMemcpyWithStream``, ``cuMemcpyAsync``,
#: ...): the device work they make is a copy or a set, even where it runs as a kernel (ROCm's fill and blit kernels)
MEMORY_CALL = r"^(cuda|cu|hip)Mem(set|cpy)"

#: Calls that make a CUDA graph's conditional (if/while/switch) node: its handle, and the capture into its
#: body graph (PyTorch's ``CUDAGraph::begin_capture_to_conditional_node`` captures the body of a
#: ``torch.cond``/``torch.while_loop`` with ``cudaStreamBeginCaptureToGraph``). Version suffixes stripped.
CONDITIONAL_GRAPH_CALLS: tuple[str, ...] = (
    "cudaGraphConditionalHandleCreate",
    "cuGraphConditionalHandleCreate",
    "cudaStreamBeginCaptureToGraph",
    "cuStreamBeginCaptureToGraph",
)
#: Kernels that set a conditional node's value at each replay: PyTorch's ``set_conditional_handle_kernel``
#: (aten/src/ATen/cuda/CUDAGraph.cu; ``set_conditional_handle_clamped_kernel`` for a switch)
CONDITIONAL_GRAPH_KERNEL = "set_conditional_handle"
#: ``meta`` key: ``{"evidence": what showed conditional graph nodes (:func:`_conditional_graphs`), "warning":
#: the reader's warning}``; the analysis doubts a framework-bound verdict then, in the warning's place
CONDITIONAL_GRAPHS = "graph_conditionals"


def _conditional_graphs(gpu_ops: pl.DataFrame, api: pl.DataFrame) -> str | None:
    """What shows that the trace runs CUDA graphs with conditional nodes (the calls of
    :data:`CONDITIONAL_GRAPH_CALLS` by name and count, the kernels named after
    :data:`CONDITIONAL_GRAPH_KERNEL`), or None. A while node runs its body again on the device, and only its
    first iteration's kernels are traced (kineto#1062: nothing else in the trace says so). Counted over the
    distinct names (a handful), then one membership test."""
    found = []
    if api.height:
        names = api.get_column("name")
        counts = names.filter(names.is_in(list(CONDITIONAL_GRAPH_CALLS))).value_counts(sort=True)
        found += [
            f"{n} {name} call(s)"
            for name, n in counts.sort(["count", "name"], descending=[True, False]).rows()
        ]
    if gpu_ops.height:
        kernels = gpu_ops.filter(pl.col("kind") == "kernel").get_column("name")
        distinct = kernels.unique().drop_nulls()
        setters = distinct.filter(distinct.str.contains(CONDITIONAL_GRAPH_KERNEL, literal=True))
        if setters.len():
            found.append(
                f"{int(kernels.is_in(setters.implode()).sum())} {CONDITIONAL_GRAPH_KERNEL}_kernel kernel(s)"
            )
    return ", ".join(found) or None


def conditional_graphs_warning(evidence: str) -> str:
    """The warning of a trace that runs CUDA graphs with conditional nodes (``evidence``:
    :func:`_conditional_graphs`)."""
    return (
        f"the trace runs CUDA graphs with conditional nodes ({evidence}): a while node repeats its body on the "
        "device, and the profiler records the body's kernels once, not its later iterations (kineto#1062), so "
        "GPU busy time, kernel counts and utilization may be under-counted and the idle time over-counted, by "
        "however many iterations ran"
    )


def _unknown_launch_warning(gpu_ops: pl.DataFrame, api: pl.DataFrame) -> list[str]:
    """A warning for kernels whose launching call is in the trace (same pid and correlation id) but none of
    whose calls bears a launch name tracekit knows (:data:`tracekit.model.LAUNCH_API_NAMES`): e.g. a device
    plugin's runtime (``privateuse1_runtime``) or Level Zero calls alone (``xpu_driver``). The analyses
    count launches and launch-call time by name, so those would read 0 with the kernels there; the warning
    names the calls (the three most frequent). Calls without a name (damaged events) are not such calls, nor
    are memory copies and sets (:data:`MEMORY_CALL`): ROCm runs a ``hipMemsetAsync`` as a fill kernel, which
    Kineto's rocprofiler-sdk path records as a kernel dispatch under the call's correlation id, and a memset
    is no launch on CUDA either. ``gpu_ops``: :func:`_gpu_ops`; ``api``: :func:`_api`. One membership test
    of the kernels' correlation ids when every call has one pid (the usual case), else a join on (pid,
    correlation)."""
    names = api.select(pl.col("name").unique().drop_nulls())
    launch_names = calls_named(names, LAUNCH_API_NAMES).get_column("name").implode()
    keys = ["pid", "correlation"]
    linked = api.filter(pl.col("correlation").is_not_null() & pl.col("name").is_not_null())
    is_launch = pl.col("name").is_in(launch_names) | pl.col("name").str.contains(MEMORY_CALL)
    if linked.filter(~is_launch).height == 0:
        return []
    kernels = gpu_ops.filter((pl.col("kind") == "kernel") & pl.col("has_call")).select(keys)
    launches = linked.filter(is_launch).select(keys)
    pids = linked.get_column("pid")
    if pids.null_count() == 0 and pids.n_unique() == 1:
        unknown = kernels.filter(~pl.col("correlation").is_in(launches.get_column("correlation").implode()))
    else:
        unknown = kernels.join(launches, on=keys, how="anti")
    if unknown.height == 0:
        return []
    named = (
        linked.filter(~is_launch)
        .join(unknown, on=keys, how="semi")
        .group_by("name")
        .len()
        .sort(["len", "name"], descending=[True, False])
        .get_column("name")
        .head(3)
        .to_list()
    )
    return [
        f"{unknown.height} of {kernels.height} kernels were launched by calls that tracekit does not know as "
        f"kernel launches ({', '.join(named)}): launch counts and launch-call time leave them out, and the "
        "time spent in those calls counts as other API time"
    ]


def _orphans_warning(gpu_ops: pl.DataFrame, api: pl.DataFrame) -> str:
    """The warning for the GPU ops that have no runtime/driver call with their correlation id in the trace
    (``gpu_ops``: :func:`_gpu_ops`, some without ``has_call``; ``api``: :func:`_api`, not empty).

    The profiler numbers a process's calls in the order they begin (CUPTI's and roctracer's correlation ids
    only grow), so an op launched before the capture began carries an id below every call of the trace. An
    op whose id lies between the first and the last id of the trace's own calls was launched during the
    capture: its call's record was lost (CUPTI drops records when its activity buffers fill), and the
    analysis, which counts it in no iteration, is short by its work. Such ops are counted apart, with their
    summed duration, when the calls come from one process (ids of two processes are two sequences; the
    usual Kineto file is one process's)."""
    orphans = gpu_ops.filter(~pl.col("has_call"))
    head = (
        f"{orphans.height} of {gpu_ops.height} GPU ops have no runtime/driver call with their correlation id in "
        "the trace"
    )
    calls = api.filter(pl.col("correlation").is_not_null()).select("pid", "correlation")
    pids = calls.get_column("pid")
    if calls.is_empty() or pids.null_count() or pids.n_unique() != 1:
        return f"{head} (launched before the capture window, or no correlation)"
    first, last = calls.get_column("correlation").min(), calls.get_column("correlation").max()
    lost = orphans.filter(pl.col("correlation").is_between(first, last))
    if lost.is_empty():
        return f"{head} (launched before the capture window, or no correlation)"
    work_ms = lost.select((pl.col("end") - pl.col("start")).sum()).item() / 1e6
    rest = orphans.height - lost.height
    others = f"; the other {rest}: launched before the capture window, or no correlation" if rest else ""
    return (
        f"{head} ({lost.height} of them, {work_ms:.3f} ms of work, carry ids between the first and the last id "
        f"of the trace's own calls, {first} to {last}: launched during the capture, the records of their "
        f"launch calls lost{others})"
    )


def _category_kind(kinds: dict[str, str]) -> pl.Expr:
    """``cat_l`` mapped by ``kinds`` (lower-cased category -> kind; null for the others): one comparison
    per kind (a handful), cheaper than a per-row string lookup."""
    by_kind: dict[str, list[str]] = {}
    for category, kind in kinds.items():
        by_kind.setdefault(kind, []).append(category)
    expr = pl.lit(None, dtype=pl.String)
    for kind, categories in reversed(by_kind.items()):
        expr = pl.when(pl.col("cat_l").is_in(categories)).then(pl.lit(kind)).otherwise(expr)
    return expr


def top_level_cpu_ops(x_events: pl.DataFrame) -> pl.DataFrame:
    """The top-level CPU operators of the rows (``cpu_op``/``Operator`` events not nested in another
    operator on their pid and thread, ``record_function`` scopes excluded: :data:`SCOPE_MARK`): ``start``,
    ``end`` (ns, the trace's clock), ``pid``, ``thread`` (the number in the tid, as ``api.thread``), ``name``
    (:data:`tracekit.model.CPU_OPS_SCHEMA`), in file order."""
    return _top_level(_cpu_op_events(x_events))


def _top_level(operators: pl.DataFrame) -> pl.DataFrame:
    """The rows of :func:`_cpu_op_events` at depth 0, without the depth (:func:`top_level_cpu_ops`)."""
    # Top-level operators: their union is the time spent inside any operator (a leaf-only view would lose the
    # exclusive time of ops such as aten::addmm whose children are tiny bookkeeping ops).
    return operators.filter(pl.col("depth") == 0).drop("depth")


def _cpu_op_events(x_events: pl.DataFrame) -> pl.DataFrame:
    """The CPU operator rows (``record_function`` scopes excluded, null names dropped) as ``start``, ``end``,
    ``pid``, ``thread``, ``name``, in file order, with their ``depth`` among the operators of their pid and
    thread (0: top level)."""
    # the name test on the operator rows only (null names dropped, as by the reference kineto_cpu_ops)
    cpu = (
        x_events.select("cat_l", "start", "dur_ns", "pid", "tid_i", "name")  # only these are filtered
        .filter(pl.col("cat_l").is_in(list(CPU_OP_CATEGORIES)))
        .filter(~_is_scope(keep_null=True))  # null names dropped
        .select(
            "start",
            end=pl.col("start") + pl.col("dur_ns"),
            pid=pl.col("pid").cast(pl.Int64, strict=False),
            thread=pl.col("tid_i"),
            name="name",
        )
    )
    return cpu.with_columns(depth=nesting_depth(cpu, ["pid", "thread"]))


#: names of autograd nodes (``AddmmBackward``, ``CudnnConvolutionBackward0``): operators that hold others
AUTOGRAD_NODE = r"Backward\d*$"


def _scope_candidates(cpu: pl.DataFrame) -> dict[str, Any] | None:
    """``meta["scope_candidates"]`` of a CPU-only trace of the 2021 spelling, whose Kineto wrote every
    ``record_function`` scope as an ``Operator`` (``cpu``: its operators, :func:`_cpu_op_events`): the
    top-level operators in no operator namespace (no ``::``, no autograd node) that hold other operators may
    be a user's scopes (``forward``), which, read as operators, count the time between the operators they
    hold as operator busy time. Scopes named ``<kind>#<name>`` or ``iteration`` are ranges already
    (:func:`_is_scope`). ``{"count": how many, "names": the three most frequent names with their counts, as
    text}``, or None when there is none. The analysis doubts the verdict then
    (:func:`tracekit.analyzers.plausibility.operator_scopes`)."""
    plain = ~pl.col("name").str.contains("::", literal=True) & ~pl.col("name").str.contains(AUTOGRAD_NODE)
    tops = cpu.filter((pl.col("depth") == 0) & plain).select("pid", "thread", "start", "end", "name")
    if tops.is_empty():
        return None
    inner = cpu.filter(pl.col("depth") == 1).select("pid", "thread", "start").sort("start")
    held = inner.join_asof(
        tops.sort("start").rename({"end": "top_end", "start": "top_start"}),
        left_on="start",
        right_on="top_start",
        by=["pid", "thread"],
        strategy="backward",
        check_sortedness=False,  # (both sorted above)
    ).filter(pl.col("start") < pl.col("top_end"))
    holders = tops.join(
        held.select("pid", "thread", "top_start").unique(),
        left_on=["pid", "thread", "start"],
        right_on=["pid", "thread", "top_start"],
        how="semi",
    )
    if holders.is_empty():
        return None
    counts = holders.group_by("name").len().sort(["len", "name"], descending=[True, False]).head(3)
    named = ", ".join(f"'{n}' ({c})" for n, c in counts.iter_rows())
    return {"count": holders.height, "names": named}


def _cpu_ops(top_level: pl.DataFrame) -> pl.DataFrame:
    """The ``ops`` of a CPU-only trace: its top-level CPU operators (:func:`top_level_cpu_ops`)."""
    return top_level.select(
        "start",
        "end",
        device=pl.lit(-1, pl.Int32),
        stream="thread",
        pid="pid",
        kind=pl.lit("operator"),
        name="name",
    )


#: The tid of a GPU-side annotation in the 2021 spelling (category ``User``: libkineto's output_json.cpp,
#: ``handleGenericActivity``, wrote ``"tid": "stream {} user"``), the stream captured
LEGACY_GPU_RANGE_TID = r"^\s*stream\s+(-?\d+)\s+user\s*$"


def _ranges(x_events: pl.DataFrame, main_pid: int | None) -> pl.DataFrame:
    used = x_events.select("cat_l", "start", "dur_ns", "pid", "tid", "tid_i", "a_stream", "name")  # filtered
    host = (
        used.filter(pl.col("cat_l").is_in(list(USER_RANGE_CATEGORIES + CPU_OP_CATEGORIES)))
        .filter(pl.col("cat_l").is_in(list(USER_RANGE_CATEGORIES)) | _is_scope())
        .select(
            "start",
            end=pl.col("start") + pl.col("dur_ns"),
            pid=pl.col("pid").cast(pl.Int64, strict=False),
            thread=pl.col("tid_i"),
            domain=pl.lit("user"),
            name="name",
        )
    )
    # the 2021 spelling's (``User`` on a GPU row, "stream 7 user") with the later one's: only the tid holds
    # the stream then (a ``User`` event of another tid, a host thread's, is not a GPU annotation)
    legacy_stream = (
        pl.col("tid").cast(pl.String).str.extract(LEGACY_GPU_RANGE_TID, 1).cast(pl.Int64, strict=False)
    )
    gpu = used.filter(
        pl.col("cat_l").is_in(list(GPU_RANGE_CATEGORIES))
        | (pl.col("cat_l").is_in(list(LEGACY_GPU_RANGE_CATEGORIES)) & legacy_stream.is_not_null())
    ).select(
        "start",
        end=pl.col("start") + pl.col("dur_ns"),
        pid=pl.lit(main_pid, dtype=pl.Int64),
        thread=pl.coalesce(pl.col("a_stream").cast(pl.Int64, strict=False), pl.col("tid_i"), legacy_stream),
        domain=pl.lit("gpu"),
        name="name",
    )
    ranges = pl.concat([host, gpu]).unique(maintain_order=True)
    return ranges.with_columns(depth=nesting_depth(ranges, ["domain", "pid", "thread"]))


def _kernel_metrics(ops: pl.DataFrame) -> pl.DataFrame:
    kernels = ops.filter(pl.col("kind") == "kernel").select("start", "end", "name", "occupancy")
    # sorted only when not in (start, end) order already (a sort copies every kernel name)
    kernels = sort_frame(kernels, ["start", "end"], [False, False])
    kernels = kernels.with_row_index("kernel").filter(pl.col("occupancy").is_not_null())
    return kernels.select(
        pl.col("kernel").cast(pl.Int64),
        "name",
        range=pl.lit(None, pl.String),
        duration_ns=pl.col("end") - pl.col("start"),
        metric=pl.lit(OCCUPANCY_ARG),
        unit=pl.lit("%"),
        value="occupancy",
    )


def _spelling(categories: set[str]) -> str:
    """Which generation of Kineto category names the trace uses."""
    if categories & {"Operator", "Runtime", "async"}:
        return "2021"
    if categories & {"Kernel", "Memcpy", "Memset", "async_cpu_to_gpu"}:
        return "2022"
    if categories & {"kernel", "gpu_memcpy", "gpu_memset", "ac2g", "cuda_driver"}:
        return "2023+"
    if categories & {"cpu_op", "user_annotation", "cuda_runtime"}:
        return "2022+"
    return "unknown"


#: The category of the Python tracer's events (torch.profiler ``with_stack=True``; vLLM's profiler turns it on
#: by default, VLLM_TORCH_PROFILER_WITH_STACK=1).
PYTHON_TRACER_CATEGORY = "python_function"
#: What a trace recorded with the Python tracer cannot give: its own cost. Every TraceLens vLLM/SGLang trace
#: holds such events (15,230 in the B200 vLLM trace's 87 ms step); their cost is paid in host time.
PYTHON_TRACING_WARNING = (
    "recorded with Python call tracing (python_function events: torch.profiler's with_stack=True, vLLM's "
    "default): tracing every Python call slows the host, so host time (dispatch above all), latency and "
    "framework overhead are inflated by an amount the trace cannot give; profile without with_stack for host "
    "timings"
)


#: ``meta`` key: the Python tracer's record per host thread (:func:`python_threads`), where the trace has
#: python_function events: a list of {``pid``, ``thread`` (as ``api.thread``), ``running`` ([start, end] ns:
#: the thread ran Python, calls being made or returning at least every :data:`PYTHON_QUIET_NS`, outside every
#: blocking call), ``blocked`` ([start, end, call] ns: the thread was inside a blocking call of
#: :data:`BLOCKING_CALLS`, ``call`` its name without line number or address)}
PYTHON_THREADS = META_PYTHON_THREADS
#: Python-level blocking calls (``file.py(line): function``, any directory before the file): a thread inside one
#: is waiting (a lock, a condition, an event, a queue, a pipe, a socket, a selector, a future, a child process;
#: vLLM's worker spinning in its shared-memory queue for the scheduler's next message), however much Python runs
#: inside. Not asyncio's ``_run_once``, which also runs the loop's callbacks: its wait is ``selectors.py``'s
#: ``select``.
_BLOCKING_PYTHON = {
    "threading.py": "wait|wait_for|join|_wait_for_tstate_lock|acquire",
    "queue.py": "get|put|join",
    "multiprocessing/connection.py": "recv|recv_bytes|recv_bytes_into|_recv_bytes|_recv|poll|_poll|wait",
    "multiprocessing/queues.py": "get",
    "multiprocessing/synchronize.py": "wait|wait_for|acquire",
    "multiprocessing/pool.py": "get|wait",
    "concurrent/futures/_base.py": "result|exception|wait|as_completed",
    "selectors.py": "select",
    "socket.py": "accept|readinto",
    "subprocess.py": "wait|_wait|communicate",
    "zmq/sugar/socket.py": "recv_multipart|recv_pyobj|recv_json|recv_string|recv_serialized",
    "zmq/sugar/poll.py": "poll",
    "shm_broadcast.py": "acquire_read",
}
#: Blocking calls as the Python tracer names a C function (``repr`` of the callable): a lock's or a
#: SimpleQueue's wait, ``time.sleep``, ``os.sched_yield`` (a spin-wait's), ``select.select``, ``os.wait*``,
#: a selector object's poll, a socket's receive or accept, a ZeroMQ socket's receive or poll. (A C call not named
#: here that lasts, without a call inside, tells nothing: the analysis counts it neither waiting nor running.)
_BLOCKING_C = (
    r"<(?:built-in )?method '?(?:acquire|acquire_lock|_acquire_restore)'? of '?_thread\.(?:lock|RLock)"
    r"|<built-in method get of _queue\.SimpleQueue object"
    r"|<built-in function (?:sleep|select|sched_yield|wait|waitpid|wait4)>"
    r"|<built-in method (?:poll|select|control) of select\.(?:epoll|poll|devpoll|kqueue) object"
    r"|<built-in method (?:recv|recv_into|recvfrom|recvfrom_into|accept|_accept) of (?:_socket\.)?socket object"
    # pyzmq's Cython socket (its methods are builtins: C calls to the tracer) and its poll
    r"|<built-in method (?:recv|recv_multipart|recv_string|recv_pyobj|recv_json|poll) of (?:[\w.]*\.)?Socket object"
    r"|<built-in function zmq_poll>"
)
#: The Python tracer's names (``python_function`` events) of blocking calls (:data:`_BLOCKING_PYTHON`,
#: :data:`_BLOCKING_C`), as a regex
BLOCKING_CALLS = (
    "^(?:"
    + "|".join(
        r"(?:.*[/\\])?" + re.escape(f).replace("/", r"[/\\]") + r"\(\d+\): (?:" + names + ")$"
        for f, names in _BLOCKING_PYTHON.items()
    )
    + "|(?:"
    + _BLOCKING_C
    + "))"
)
#: A thread of the Python tracer counts as running Python only where its calls begin or end at most this far
#: apart (ns): a thread that stays in one frame longer, with no call made or returned, may be blocked in a
#: call the tracer does not see (a C extension's own function) as well as computing. Real serving traces:
#: 99.9% of the gaps between such events are under 25 µs (SGLang), 242 µs (vLLM B200, whose longer ones lie
#: in CPU operators); a gap held by an operator or API call is no silence anyway.
PYTHON_QUIET_NS = 100_000


def _call_name(name: pl.Expr) -> pl.Expr:
    """A Python tracer event's name without its line number or object address (``queue.py(171): get`` ->
    ``queue.py: get``; ``<built-in method acquire of _thread.lock object at 0x7f..>`` -> ``<built-in method
    acquire of _thread.lock object>``)."""
    return name.str.replace(r"\(\d+\): ", ": ").str.replace(r" at 0x[0-9A-Fa-f]+>$", ">")


def _merged(frame: pl.DataFrame, keys: list[str], *carry: str) -> pl.DataFrame:
    """The union of ``frame``'s [start, end] intervals per ``keys``: disjoint intervals, sorted (an interval that
    starts where the union so far ends joins it); ``carry``: the columns kept from each merged interval's first
    interval (the earliest, of those the longest)."""
    if frame.is_empty():
        return frame.select(*keys, "start", "end", *carry)
    ordered = frame.sort([*keys, "start", "end"], descending=[*(False for _ in keys), False, True])
    before = pl.col("end").cum_max().shift(1).over(keys)
    return (
        ordered.with_columns(piece=(pl.col("start") > before).fill_null(True).cum_sum())
        .group_by("piece", maintain_order=True)
        .agg(
            *(pl.col(k).first() for k in keys),
            pl.col("start").first(),
            pl.col("end").max(),
            *(pl.col(c).first() for c in carry),
        )
        .drop("piece")
    )


def _python_batch(parts: list[dict[str, tuple[str, Any]]]) -> list[dict[str, tuple[str, Any]]]:
    """A batch's Python tracer columns (one dict per chunk, :func:`tracekit.readers.kineto_wire._python_columns`)
    as one dict where every chunk encoded each column alike, so that they become a frame in one pass of a few
    operations, not one per chunk (each operation on a small frame costs its own overhead: a batch of
    millions of events in chunks of ~5,000 had spent more time there than in the events). The names' distinct
    strings are each chunk's own: the positions are moved by the strings of the chunks before. Otherwise
    ``parts`` as they are. The rows are the same either way, in the same order."""
    if len(parts) < 2:
        return parts
    kinds = {name: {part[name][0] for part in parts} for name in parts[0]}
    if any(len(k) != 1 for k in kinds.values()) or any(set(part) != set(kinds) for part in parts):
        return parts
    counts = [kineto_wire.python_count(part) for part in parts]
    if not all(counts):  # (no chunk without events is sent; an empty text would join as one more value)
        return parts
    merged: dict[str, tuple[str, Any]] = {}
    for name, (kind,) in kinds.items():
        payloads = [part[name][1] for part in parts]
        if kind in ("num", "ns"):
            merged[name] = kind, ",".join(payloads)
        elif kind == "raw":
            merged[name] = kind, _SEP.join(payloads)
        elif kind == "list":
            merged[name] = kind, [value for payload in payloads for value in payload]
        elif kind == "dict":
            distinct = [payload[0] for payload in payloads]
            sizes = [text.count(_SEP) + 1 for text in distinct]
            offsets = np.repeat(np.cumsum([0, *sizes[:-1]], dtype=np.uint32), counts)
            positions = pl.Series([",".join(payload[1] for payload in payloads)]).str.split(",").explode()
            positions = positions.cast(pl.UInt32) + pl.Series(offsets)
            strings = pl.Series([_SEP.join(distinct)]).str.split(_SEP).explode()
            merged[name] = "series", strings.gather(positions)
        else:
            return parts
    return [merged]


def _python_rows(columns: dict[str, tuple[str, Any]]) -> pl.DataFrame:
    """The rows :func:`python_pieces` reads (``start``, ``dur_ns``, ``pid``, ``tid``, ``name``) from a chunk's
    Python tracer columns (:data:`tracekit.readers.kineto_wire.PYTHON_EVENTS`); events without a readable ts
    left out."""
    frame = _wire_frame(columns, kineto_wire.python_count(columns))
    return frame.select(
        start=_nanoseconds(frame.get_column("ts")),
        dur_ns=_nanoseconds(frame.get_column("dur")).fill_null(0),
        pid="pid",
        tid="tid",
        name="name",
    ).filter(pl.col("start").is_not_null())


def python_pieces(rows: pl.DataFrame) -> pl.DataFrame:
    """One chunk's Python tracer events (rows of :func:`wire_rows`: ``start``, ``dur_ns``, ``pid``, ``tid``,
    ``name``) reduced to their threads' pieces: ``kind`` "run" (the union of the stretches between two of the
    thread's event starts or ends at most :data:`PYTHON_QUIET_NS` apart), "block" (the union of the
    thread's :data:`BLOCKING_CALLS` events, ``call`` the outermost one's name, :func:`_call_name`) and "edge"
    (the thread's first and last event time in the chunk, which :func:`python_threads` joins to the next
    chunk's), with ``pid`` and ``thread`` (the number in the tid). Vectorized (numpy, per thread); a few rows
    per thread and blocking call, whatever the number of events."""
    tid = rows.get_column("tid")
    events = rows.select(
        pid=pl.col("pid").cast(pl.Int64, strict=False),
        thread=leading_int_series(tid.cast(pl.String)) if tid.dtype != pl.Int64 else tid,
        start=pl.col("start"),
        end=pl.col("start") + pl.col("dur_ns"),
        name=pl.col("name"),
    )
    names = events.get_column("name").unique().drop_nulls()
    blocking = names.filter(names.str.contains(BLOCKING_CALLS))
    events = events.with_columns(blocking=pl.col("name").is_in(blocking.implode()).fill_null(False))
    out: list[tuple[Any, Any, str, int, int, str | None]] = []
    for (pid, thread), own in events.partition_by(
        ["pid", "thread"], as_dict=True, maintain_order=True
    ).items():
        start = own.get_column("start").to_numpy()
        end = own.get_column("end").to_numpy()
        times = np.sort(np.concatenate([start, end]))
        out.append((pid, thread, "edge", int(times[0]), int(times[-1]), None))
        close = np.diff(times) <= PYTHON_QUIET_NS
        at = np.flatnonzero(close)
        if len(at):
            first = np.concatenate([[True], at[1:] != at[:-1] + 1])
            last = np.concatenate([at[1:] != at[:-1] + 1, [True]])
            for lo, hi in zip(times[at[first]].tolist(), times[at[last] + 1].tolist(), strict=True):
                out.append((pid, thread, "run", lo, hi, None))
        waits = own.filter(pl.col("blocking"))
        if waits.height:
            waits = waits.sort(["start", "end"], descending=[False, True])
            w_lo, w_hi = waits.get_column("start").to_numpy(), waits.get_column("end").to_numpy()
            reach = np.maximum.accumulate(w_hi)
            new = np.flatnonzero(np.concatenate([[True], w_lo[1:] > reach[:-1]]))
            lo, hi = w_lo[new], np.maximum.reduceat(w_hi, new)
            long = hi - lo >= PYTHON_QUIET_NS  # (a shorter wait, a lock handed over, is the Python around it)
            new, lo, hi = new[long], lo[long], hi[long]
            calls = waits.get_column("name").gather(new).to_frame().select(_call_name(pl.col("name")))
            for a, b, call in zip(lo.tolist(), hi.tolist(), calls.to_series().to_list(), strict=True):
                out.append((pid, thread, "block", a, b, call))
    return pl.DataFrame(out, schema=_PIECES_SCHEMA, orient="row")


#: the columns of :func:`python_pieces`
_PIECES_SCHEMA: dict[str, pl.DataType] = {
    "pid": pl.Int64,
    "thread": pl.Int64,
    "kind": pl.String,
    "start": pl.Int64,
    "end": pl.Int64,
    "call": pl.String,
}


def python_threads(pieces: list[pl.DataFrame]) -> list[dict[str, Any]]:
    """``meta["python_threads"]`` (:data:`PYTHON_THREADS`) from the chunks' :func:`python_pieces`: per thread,
    its pieces merged across chunks, and its running time outside its blocked time."""
    if not pieces:
        return []
    every = pl.concat(pieces, how="vertical_relaxed")
    keys = ["pid", "thread"]
    # the stretch between one chunk's last event time of a thread and the next chunk's first, when short
    edges = every.filter(pl.col("kind") == "edge").sort([*keys, "start", "end"])
    seams = edges.select(*keys, start=pl.col("end").shift(1).over(keys), end=pl.col("start")).filter(
        (pl.col("end") - pl.col("start")).is_between(0, PYTHON_QUIET_NS)
    )
    runs = pl.concat([every.filter(pl.col("kind") == "run").select(*keys, "start", "end"), seams])
    running = _merged(runs, keys)
    blocked = _merged(every.filter(pl.col("kind") == "block"), keys, "call")
    threads = []
    for pid, thread in every.select(keys).unique().sort(keys, nulls_last=True).rows():
        mine = (pl.col("pid").eq_missing(pid)) & (pl.col("thread").eq_missing(thread))
        run = running.filter(mine)
        block = blocked.filter(mine)
        lo, hi = _minus(
            run.get_column("start").to_numpy(),
            run.get_column("end").to_numpy(),
            block.get_column("start").to_numpy(),
            block.get_column("end").to_numpy(),
        )
        threads.append(
            {
                "pid": pid,
                "thread": thread,
                "running": np.stack([lo, hi], axis=1).astype(np.int64).tolist(),
                "blocked": [[int(a), int(b), c] for a, b, c in block.select("start", "end", "call").rows()],
            }
        )
    return threads


def _minus(
    a_lo: np.ndarray, a_hi: np.ndarray, b_lo: np.ndarray, b_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The intervals of A (sorted, disjoint) outside every interval of B (sorted, disjoint), sorted."""
    if not len(a_lo) or not len(b_lo):
        return a_lo, a_hi
    cuts = np.unique(np.concatenate([a_lo, a_hi, b_lo, b_hi]))
    left, right = cuts[:-1], cuts[1:]
    ka = np.searchsorted(a_lo, left, side="right") - 1
    in_a = (ka >= 0) & (left < a_hi[np.maximum(ka, 0)])
    kb = np.searchsorted(b_lo, left, side="right") - 1
    in_b = (kb >= 0) & (left < b_hi[np.maximum(kb, 0)])
    keep = in_a & ~in_b
    left, right = left[keep], right[keep]
    if not len(left):
        return left, right
    new = np.concatenate([[True], left[1:] > right[:-1]])
    return left[new], np.maximum.reduceat(right, np.flatnonzero(new))


def _meta(
    path: Path, header: dict[str, Any], categories: set[str], ops: pl.DataFrame, device: str
) -> dict[str, Any]:
    meta: dict[str, Any] = {"path": str(path), "format": "kineto"}
    spelling = _spelling(categories)
    schema = header.get("schemaVersion")
    meta["schema_version"] = schema
    meta["kineto_spelling"] = spelling
    meta["format_version"] = (f"schema {schema}, " if schema is not None else "") + f"{spelling} spelling"
    meta["device"] = device
    synthetic = header.get("tracekit_synthetic") in (True, "true", "1", 1) or "synthetic" in path.name.lower()
    meta["synthetic"] = synthetic
    props = header.get("deviceProperties")
    gpus = []
    if isinstance(props, list):
        for p in props:
            if isinstance(p, dict) and p.get("name") is not None:
                try:
                    gpus.append({"id": int(p.get("id", len(gpus))), "name": str(p["name"])})
                except (TypeError, ValueError):
                    continue
    if gpus:
        meta["gpus"] = gpus
        names = {g["id"]: g["name"] for g in gpus}
        gpu_name = None
        if device == "gpu":
            gpu_name = busiest_gpu_name(ops, names)
            if gpu_name is None:
                gpu_name = names.get(0, gpus[0]["name"])
        if gpu_name:
            meta["gpu"] = gpu_name
    dist = header.get("distributedInfo")
    if isinstance(dist, dict):
        for key in ("rank", "world_size"):
            if dist.get(key) is not None:
                meta[key] = dist[key]
        groups = nccl_process_groups(dist.get("pg_config"))
        if groups:
            meta["process_groups"] = groups
    base = wall_clock_base(header.get("baseTimeNanoseconds"), ops)
    if base is not None:
        meta["wall_clock_base_ns"] = base
    extra = header.get("tracekit_meta")
    if isinstance(extra, dict):
        for key, value in extra.items():
            if key not in meta and (value is None or isinstance(value, (str, int, float, bool))):
                meta[key] = value
    return meta


def nccl_process_groups(config: Any) -> list[list[int]]:
    """The member ranks of each NCCL process group ``distributedInfo.pg_config`` lists (entries whose
    ``backend_config`` names nccl, of two or more ranks: a group of one has no collective across ranks), each
    sorted, once; entries that are not such lists of ranks are passed over."""
    groups: list[list[int]] = []
    if not isinstance(config, list):
        return groups
    for entry in config:
        if not isinstance(entry, dict) or "nccl" not in str(entry.get("backend_config", "")).lower():
            continue
        ranks = entry.get("ranks")
        if not isinstance(ranks, list) or not all(
            isinstance(r, int) and not isinstance(r, bool) for r in ranks
        ):
            continue
        members = sorted(set(ranks))
        if len(members) >= 2 and members not in groups:
            groups.append(members)
    return groups


#: Timestamps at or after this (ns; 2001-09-09) are wall-clock time already (the 2021 Kineto traces'
#: system clock); below it they count from ``baseTimeNanoseconds``.
EPOCH_NS_MIN = 10**18


def wall_clock_base(base: Any, ops: pl.DataFrame) -> int | None:
    """The wall-clock time (ns since the Unix epoch) of the trace's timestamp 0: Kineto writes ``ts`` as µs
    since ``baseTimeNanoseconds`` (the start of the current three-month interval on the system clock, libkineto's
    ``ChromeTraceBaseTime``), so the base is it, where the header gives a plausible one and the ops' timestamps
    count from it (below :data:`EPOCH_NS_MIN`); None otherwise (no ops to tell, or timestamps that are
    wall-clock time already, which need no base)."""
    if not isinstance(base, int) or isinstance(base, bool) or base < EPOCH_NS_MIN:
        return None
    if ops.is_empty() or "start" not in ops.columns:
        return None
    first = ops.get_column("start").min()
    if first is None or first >= EPOCH_NS_MIN:
        return None
    return base


def wire_rows(
    wire: WireChunk, comm: list[pl.DataFrame] | None = None, python: list[pl.DataFrame] | None = None
) -> tuple[pl.DataFrame, set[str], pl.DataFrame, int]:
    """(rows the analysis uses, the chunk's category names, the chunk's ``first_op_inputs`` candidate:
    :func:`tracekit.readers.kineto_summary.first_op_candidate`, complete events without a readable ts) of
    one wire chunk or batch as :mod:`tracekit.readers.kineto_wire` gives it.

    Rows kept: complete events of the categories read (ops, api, ranges, CPU operators) with a readable ts;
    the other events (python_function, cuda_sync, memory instants, flows, ...) were dropped with the chunk's
    decoding or are dropped here. The rows are final (:func:`_converted`) but for pid/tid, which stay
    integers where they are integers until :func:`_finish_rows` makes them text where some chunk has them
    as text. Flow events are read by
    :func:`_flows` only when needed. ``comm``: where given, the chunk's communication kernels' args
    (:func:`_comm_rows`) are appended to it when it has some. ``python``: where given, the chunk's Python
    tracer events reduced to each thread's pieces of running and blocked time (:func:`python_pieces`) are
    appended to it when it has some; they are never rows."""
    n, categories, columns, inputs = wire
    python_events = (inputs or {}).get(kineto_wire.PYTHON_EVENTS)
    if python_events is not None:  # (a fast chunk's Python tracer events, in columns of their own)
        inputs = {k: v for k, v in (inputs or {}).items() if k != kineto_wire.PYTHON_EVENTS} or None
        if python is not None:
            found = python_pieces(
                _finish_rows([_python_rows(part) for part in _python_batch(python_events[1])])
            )
            if found.height:
                python.append(found)
    if not columns:  # no rows, the category names only
        return _EMPTY_ROWS, categories or set(), _NO_FIRST_OP, 0
    comm_wire = {k: v for k, v in (inputs or {}).items() if k == COMM_ROWS or k in COMM_FIELDS}
    if comm_wire:
        inputs = {k: v for k, v in (inputs or {}).items() if k not in comm_wire} or None
    frame = _wire_frame(columns, n)
    if comm_wire and comm is not None:
        found = _comm_rows(frame, comm_wire)
        if found.height:
            comm.append(found)
    if categories is None:  # a lenient chunk: every event, every field as text
        categories = set(frame.get_column("cat").drop_nulls().unique().to_list())
        paired = frame.filter(pl.col("ph").is_in(list(BEGIN_END_PHASES))).get_column("cat")
        categories |= kineto_wire.begin_end_marks(paired.drop_nulls().unique().to_list())
        keep = frame.select(
            (pl.col("ph") == "X").fill_null(False)
            & pl.col("cat").str.to_lowercase().is_in(list(KEPT_CATEGORIES)).fill_null(False)
        ).to_series()
        frame = frame.filter(keep).drop("ph")
        if inputs is not None:  # the texts of every event: keep those of the CPU operator rows
            is_cpu = keep.scatter(keep.arg_true(), frame.select(_is_cpu_category()).to_series())
            inputs = {f: ("series", s) for f, s in _wire_frame(inputs, n).filter(is_cpu).to_dict().items()}
    frame = _converted(frame)
    first = _first_op(frame, inputs)
    if any(c.lower() in PYTHON_CATEGORIES for c in categories):
        is_python = frame.get_column("cat_l").is_in(list(PYTHON_CATEGORIES))
        if is_python.any():
            if python is not None:
                found = python_pieces(frame.filter(is_python & pl.col("start").is_not_null()))
                if found.height:
                    python.append(found)
            frame = frame.filter(~is_python)
    bad_ts = frame.get_column("start").null_count()
    if bad_ts:
        # (a device op without a start time still ran: it stays, untimed -- its call places it, and the
        # analysis counts it as a kernel of unknown time --, where other events without one are skipped)
        dropped = pl.col("start").is_null() & ~pl.col("cat_l").is_in(list(OP_CATEGORIES))
        bad_ts = int(frame.select(dropped.sum()).item())
        frame = frame.filter(~dropped)
    return frame.select("cat_l", *_ROW_COLUMNS), categories, first, bad_ts


#: the columns of :func:`_comm_rows`
COMM_SCHEMA: dict[str, pl.DataType] = {
    "device": pl.Int64,
    "stream": pl.Int64,
    "start": pl.Int64,
    "name": pl.String,
    "op": pl.String,
    "group": pl.String,
    "ranks": pl.String,
}


def _comm_rows(frame: pl.DataFrame, comm_wire: dict[str, Any]) -> pl.DataFrame:
    """The GPU ops of a chunk (``frame``: :func:`_wire_frame`, every row still there) that carry PyTorch's
    communication args (``comm_wire``: their positions and texts, :func:`tracekit.readers.kineto_wire._comm`):
    the op's ``device``, ``stream`` and ``start`` as :func:`_gpu_ops` makes them, its ``name``, and ``op``
    (``Collective name``), ``group`` (``Process Group Name``) and ``ranks`` (``Process Group Ranks``, JSON
    text) as written. A few rows: communication kernels only."""
    rows = pl.Series([comm_wire[COMM_ROWS][1]]).str.split(",").explode().cast(pl.UInt32)
    texts = _wire_frame({f: comm_wire[f] for f in COMM_FIELDS}, rows.len())
    picked = pl.concat([frame.gather(rows), texts], how="horizontal")
    if "ph" in picked.columns:  # a lenient chunk: every event of it
        picked = picked.filter((pl.col("ph") == "X").fill_null(False)).drop("ph")
    picked = picked.filter(pl.col("cat").str.to_lowercase().is_in(list(OP_CATEGORIES)).fill_null(False))
    if picked.is_empty():
        return empty_frame(COMM_SCHEMA)
    picked = _converted(picked).filter(pl.col("start").is_not_null())
    return picked.select(
        # (a device number past int32, a damaged value, reads as unknown, as one that does not read)
        device=pl.coalesce(
            pl.col("a_device").cast(pl.Int32, strict=False), pl.col("pid").cast(pl.Int32, strict=False)
        ),
        stream=pl.coalesce(
            pl.col("a_stream").cast(pl.Int64, strict=False), leading_int_series(picked["tid"])
        ),
        start="start",
        name=pl.col("name").cast(pl.String),
        op=pl.col("a_coll_name").cast(pl.String),
        group=pl.col("a_pg_name").cast(pl.String),
        ranks=pl.col("a_pg_ranks").cast(pl.String),
    )


def collective_args(comm: list[pl.DataFrame]) -> dict[str, Any] | None:
    """``meta["collective_args"]``: what PyTorch wrote on the trace's communication kernels (:func:`_comm_rows`
    of every chunk), one entry per kernel: ``device``, ``stream``, ``start`` (which find it among the ops; its
    name may have been cut) as comma-joined integers, ``op`` (``Collective name``: ``allreduce``, ``send``...)
    and ``group`` (``Process Group Name``: the same on every member rank) as comma-joined positions in
    ``ops`` / ``group_names`` (-1: not written); ``groups``: each group's member ranks ({name: sorted ranks},
    from ``Process Group Ranks``; a group whose ranks do not read as a list of integers is left out). Text, not
    lists: meta is JSON in the cache, and a list of Python ints costs ~40 bytes a kernel (40 MB more at peak
    on 200,000 labelled kernels; as text ~25 bytes). :func:`collective_args_frame` reads it back. None when
    no kernel carries them (traces before PyTorch 2.1, vLLM's pynccl, which bypasses the process group)."""
    if not comm:
        return None
    frame = pl.concat(comm).unique(subset=["device", "stream", "start"], keep="first", maintain_order=True)
    groups: dict[str, list[int]] = {}
    for group, ranks in frame.select("group", "ranks").unique(maintain_order=True).iter_rows():
        members = _rank_list(ranks)
        if group is not None and members is not None:
            groups.setdefault(group, members)
    out: dict[str, Any] = {"kernels": frame.height}
    for column in ("device", "stream", "start"):
        out[column] = _joined(frame.get_column(column))
    for column, table in (("op", "ops"), ("group", "group_names")):
        names = frame.get_column(column).drop_nulls().unique(maintain_order=True)
        out[table] = names.to_list()
        codes = frame.get_column(column).replace_strict(
            names, pl.int_range(names.len(), eager=True), default=-1
        )
        out[column] = _joined(codes)
    out["groups"] = groups
    return out


def _joined(column: pl.Series) -> str:
    """An integer column as one comma-joined text (null as -1)."""
    return column.fill_null(-1).cast(pl.String).str.join(",").item()


def _rank_list(text: str | None) -> list[int] | None:
    """``"[0, 1]"`` -> [0, 1] (sorted, once each); None when the text is not a JSON list of integers."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    return sorted(set(value))


def _converted(frame: pl.DataFrame) -> pl.DataFrame:
    """The text columns of a chunk's rows made final: ``cat_l`` (lower-cased category), ``start``/``dur_ns``
    in ns (:func:`us_to_ns_series`; ``start`` null where ts is unreadable, ``dur_ns`` 0 where dur is),
    ``dur_unread`` (true where dur is unreadable: null, missing, NaN/Infinity, not a number, or past int64
    ns; the GPU ops of such rows get no end time, :func:`_gpu_ops`), and each ``args`` column null on the
    rows whose frames do not use it (:data:`_ARG_USERS`)."""
    cat_l = frame.get_column("cat").str.to_lowercase().alias("cat_l")
    masked = [
        pl.when(pl.col("cat_l").is_in(list(users))).then(pl.col(field)).alias(field)
        for fields, users in _ARG_USERS
        for field in fields
    ]
    dur_ns = _nanoseconds(frame.get_column("dur"))
    return frame.with_columns(
        cat_l,
        start=_nanoseconds(frame.get_column("ts")),
        dur_ns=dur_ns.fill_null(0),
        dur_unread=dur_ns.is_null(),
    ).with_columns(masked)


def _nanoseconds(column: pl.Series) -> pl.Series:
    """A ``ts``/``dur`` column of a wire frame in ns: already in ns when the wire sent it so (Int64, the
    ``"ns"`` kind), else converted from its microsecond text (:func:`us_to_ns_series`)."""
    return column if column.dtype == pl.Int64 else us_to_ns_series(column)


def _wire_frame(columns: dict[str, tuple[str, Any]], n: int) -> pl.DataFrame:
    """The columns of a wire chunk (:mod:`tracekit.readers.kineto_wire`) as the rows keep them: ``cat``,
    ``name``, ``a_occupancy``, ``ts``, ``dur`` as text, the ``args`` ids as Int64, pid/tid as Int64 when
    every value is an integer, else as text. Columns of one kind are split together (one split per kind)."""
    parts: dict[str, pl.Series] = {}
    by_kind: dict[str, list[str]] = {}
    for name, (kind, payload) in columns.items():
        if kind == "series":
            parts[name] = payload.alias(name)
        elif kind == "list":
            parts[name] = (
                pl.Series(name, payload, dtype=pl.String) if name in ("cat", "name") else _id_series(payload)
            ).alias(name)
        elif n == 0:
            parts[name] = pl.Series(name, [], dtype=pl.String)
        elif kind == "dict":  # distinct strings gathered: each stored once, whatever the rows
            distinct, codes = payload
            positions = pl.Series([codes]).str.split(",").explode().cast(pl.UInt32)
            parts[name] = pl.Series(name, [distinct]).str.split(_SEP).explode().gather(positions)
        else:
            by_kind.setdefault(kind, []).append(name)
    for kind, names in by_kind.items():
        sep = _SEP if kind == "raw" else ","
        texts = pl.Series([sep.join(columns[name][1] for name in names)]).str.split(sep).explode()
        for i, name in enumerate(names):
            parts[name] = texts.slice(i * n, n).alias(name)
        if kind == "raw":
            for name in names:
                parts[name] = raw_column(parts[name])
        elif kind == "ns":  # integer ns text; within int64 ns as us_to_ns has it (|µs| < MAX_US), else null
            within = pl.col("ns").is_between(-MAX_US * 1000, MAX_US * 1000, closed="none")
            for name in names:
                ns = parts[name].cast(pl.Int64, strict=False).alias("ns")
                parts[name] = ns.to_frame().select(pl.when(within).then("ns")).to_series().alias(name)
    frame = pl.DataFrame([parts[name] for name in columns])
    nums = set(by_kind.get("num", ()))
    frame = frame.with_columns(
        *(_integers(frame.get_column(c)) for c in columns if c in INT_ARGS),
        *(pl.when(pl.col(c) != "null").then(pl.col(c)).alias(c) for c in nums if c not in INT_ARGS),
    )
    # (a lenient chunk's ids are its raw texts: 100.0 where a trace was written again by Python)
    ids = [c for c in ("pid", "tid") if c in nums or c in by_kind.get("raw", ())]
    if ids:  # integers unless some value is not (a string, or past int64)
        ints = pl.DataFrame([_integers(frame.get_column(c)) for c in ids])
        same = [c for c in ids if ints.get_column(c).null_count() == frame.get_column(c).null_count()]
        frame = frame.with_columns(ints.select(same)) if same else frame
    return frame


def _integers(text: pl.Series) -> pl.Series:
    """An id column (JSON number text, or Int64 already) as Int64: null where a value is no integer. A value
    written as a decimal whose fraction is 0 (``100.0``, ``1e3``: ids of a trace written again by Python's
    ``json``, or by pandas from a column holding a NaN) is that integer; ``1.5`` is none. Only a column where
    the integer cast leaves some value unread takes the decimal pass."""
    ints = text.cast(pl.Int64, strict=False)
    if text.dtype != pl.String or ints.null_count() == text.null_count() + int((text == "null").sum()):
        return ints
    decimal = text.cast(pl.Float64, strict=False)
    whole = (decimal.is_finite() & (decimal == decimal.floor()) & (decimal.abs() < 2**53)).fill_null(False)
    return ints.fill_null(decimal.cast(pl.Int64, strict=False).zip_with(whole, ints)).alias(text.name)


def _as_integer_text(ids: pl.Series) -> pl.Series:
    """Id texts with each integral decimal (``0.0``) written as its integer (``0``), as the rows keep them; other
    texts (``stream 7``) as they are."""
    text = ids.cast(pl.String)
    return _integers(text).cast(pl.String).fill_null(text).alias(ids.name)


def _id_series(values: list[Any]) -> pl.Series:
    """Decoded ids (int, str or None) as Int64 when all are integers, else as text
    (:func:`_finish_rows` makes every chunk's pid/tid text when one chunk's is)."""
    try:
        return pl.Series(values, dtype=pl.Int64)
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        return _values_text(values)


def _is_cpu_category() -> pl.Expr:
    """Rows of a CPU-operator category (``cpu_op``/``Operator``), by the ``cat`` column."""
    return pl.col("cat").str.to_lowercase().is_in(list(CPU_OP_CATEGORIES)).fill_null(False)


def _first_op(rows: pl.DataFrame, inputs: dict[str, Any] | None) -> pl.DataFrame:
    """The ``first_op_inputs`` candidate of one chunk (``rows``: :func:`_converted`, every row still there):
    ``inputs`` holds the ``Input Dims``/``Input type`` texts of its CPU operator rows (in row order), read for
    them only and not kept in the rows."""
    if inputs is None:
        return _NO_FIRST_OP
    cpu = rows.filter(pl.col("cat_l").is_in(list(CPU_OP_CATEGORIES)))
    if cpu.height == 0:
        return _NO_FIRST_OP
    texts = _wire_frame(inputs, cpu.height)
    cpu = pl.concat([cpu.select("start", "name"), texts], how="horizontal").filter(~_is_scope())
    return first_op_candidate(cpu.select("start", "name", *INPUT_FIELDS))


#: no ``first_op_inputs`` candidate (the columns of :func:`first_op_candidate`)
_NO_FIRST_OP = pl.DataFrame(
    schema={"start": pl.Int64, "name": pl.String, **dict.fromkeys(INPUT_FIELDS, pl.String)}
)


def _finish_rows(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """The kept event rows from the chunks' rows (:func:`wire_rows`): pid and tid each as integers (Int64)
    where every chunk has them so, else as text in every chunk (the readers of these rows take either:
    ids are compared and grouped, and read as numbers by a cast or :func:`leading_int_series`). Keeping
    the integers saves a cast to text and a parse back of every row's pid and tid."""
    text_ids = {c for part in parts for c in ("pid", "tid") if part.schema[c] != pl.Int64}
    if text_ids:
        parts = [part.with_columns(pl.col(c).cast(pl.String) for c in text_ids) for part in parts]
    return pl.concat(parts) if parts else _EMPTY_ROWS  # chunked: a rechunk copies every row


def _cpu_op_rows(rows: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """``rows.filter(_is_cpu_op())``, the name test made on the CPU-operator rows only; with ``columns``,
    only those (and the two tested) are kept and filtered."""
    if columns:
        rows = rows.select(*dict.fromkeys(("cat_l", "name", *columns)))
    return rows.filter(pl.col("cat_l").is_in(list(CPU_OP_CATEGORIES))).filter(_is_cpu_op())


def _is_cpu_op() -> pl.Expr:
    """CPU operator rows (``cpu_op``/``Operator`` events), ``record_function`` scopes excluded
    (``ProfilerStep#N``, ``Optimizer.step#SGD.step``: :data:`SCOPE_MARK`)."""
    return pl.col("cat_l").is_in(list(CPU_OP_CATEGORIES)) & ~_is_scope()


def _is_scope(keep_null: bool = False) -> pl.Expr:
    """CPU-op rows that are ``record_function`` scopes, not operators (:data:`SCOPE_MARK`,
    :data:`SCOPE_NAMES`): ranges of domain "user", as ``user_annotation`` events are, and in no operator
    frame. Null where the name is null when ``keep_null``, else false there."""
    name = pl.col("name")
    scope = name.str.contains(SCOPE_MARK, literal=True) | name.is_in(list(SCOPE_NAMES))
    return scope if keep_null else scope.fill_null(False)


def _summary(x_events: pl.DataFrame) -> dict[str, Any]:
    """``meta["cpu_op_summary"]`` (:func:`tracekit.readers.kineto_summary.cpu_op_summary`) of the rows."""
    span = ("pid", "tid", "start", pl.col("start") + pl.col("dur_ns"))
    cpu = _cpu_op_rows(x_events, "pid", "tid", "start", "dur_ns").select("name", *span[:3], end=span[3])
    calls = (
        x_events.select("cat_l", "name", "pid", "tid", "start", "dur_ns")  # only these are filtered
        .filter(pl.col("cat_l").is_in(list(API_CATEGORIES)))
        .select("name", *span[:3], end=span[3])
    )
    calls = calls.with_columns(_without_api_suffix(calls.get_column("name")))
    return cpu_op_summary(cpu, calls)


#: polars holds no string longer than this many bytes (its lengths are UInt32): a --max-string from here on
#: cuts nothing
_LONGEST_STRING = (1 << 32) - 1


def _cut_long_names(x_events: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``x_events`` with every name longer than the string limit cut to it (:func:`cut_long_names`). The
    decoder has already cut such a string in an event too long for a chunk window to a few times the limit
    (:mod:`tracekit.readers.json_value`), so that memory stayed bounded; this is the one cut the frames see."""
    return cut_long_names(x_events, warnings, "cat_l")


def cut_long_names(
    frame: pl.DataFrame, warnings: list[str], category: str, suffixes: tuple[str, ...] = ()
) -> pl.DataFrame:
    """``frame`` (``name``, ``start`` in ns, and ``category``) with every name longer than the string limit
    (:data:`tracekit.limits.MAX_STRING_BYTES`, ``--max-string``) cut to it (whole UTF-8 characters, keeping
    the first of ``suffixes`` it ends with: what the name says the event is), and a warning that counts them
    and names the first such event (its category, the start of its name, its ts). One vectorized length test
    when no name is that long. The Kineto and ONNX Runtime readers' one rule."""
    limit = limits.current.max_string
    if frame.is_empty() or limit >= _LONGEST_STRING:  # (polars' UInt32 lengths cannot be compared with it)
        return frame
    names = frame.get_column("name")
    long = (names.str.len_bytes() > limit).fill_null(False)
    if not long.any():
        return frame
    rows = long.arg_true()

    def cut_to(name: str) -> str:
        suffix = next((x for x in suffixes if name.endswith(x)), "")
        head = name[: len(name) - len(suffix)].encode("utf-8", "surrogatepass")
        return head[: max(0, limit - len(suffix))].decode("utf-8", "ignore") + suffix

    cut = [cut_to(name) for name in names.gather(rows).to_list()]
    first = frame.row(int(rows[0]), named=True)
    warnings.append(
        f"{len(rows)} event name(s) longer than {format_size(limit)} cut to {format_size(limit)} (--max-string "
        f"SIZE keeps more); the first: the {first[category]} event at ts {first['start'] / 1000:.3f} us named "
        f"'{cut[0][:60]}...'"
    )
    return frame.with_columns(names.scatter(rows, pl.Series(cut, dtype=pl.String)))


#: the lists libkineto's ChromeTraceLogger writes as top-level keys with what its logger collected while
#: tracing (``finalizeTrace``: ``"ERROR": [...]``, ``"WARNING": [...]``; ``"INFO"`` too, read only for the
#: record counts), most severe first
PROFILER_LOG_LEVELS: tuple[str, ...] = ("ERROR", "WARNING")
#: how many lines of each level ``meta["profiler_log"]`` keeps (the warning counts them all)
PROFILER_LOG_KEPT = 20
#: ``meta`` key: True when libkineto stopped collecting GPU activity before the trace ended
GPU_TRACING_STOPPED_EARLY = META_GPU_TRACING_STOPPED
#: libkineto's record counts when it stopped collecting GPU activity early (CuptiActivityProfiler's
#: ErrorCounts, logged at INFO: '... Unexpected CUDA events = 0, CUPTI stopped early? = 1')
_STOPPED_EARLY = re.compile(r"CUPTI stopped early\? = (?:1|true)\b")
#: its warning when the GPU buffers ran out (CuptiActivityApi::bufferRequested: 'Exceeded max GPU buffer
#: count (33 >= 32) - terminating tracing')
_BUFFERS_EXCEEDED = "Exceeded max GPU buffer count"
#: the prefix libkineto's logger puts before a message: 'WARNING:2024-05-22 17:15:22 2910249:2910249
#: CuptiActivityApi.cpp:140] '
_LOG_PREFIX = re.compile(r"^[A-Z]+:[^\]]*\]\s*")


def _log_message(line: str) -> str:
    """A libkineto log line without its level, time, ids and source position; at most 200 characters."""
    message = _LOG_PREFIX.sub("", line, count=1)
    return message if len(message) <= 200 else message[:199] + "…"


def _profiler_log(header: dict[str, Any]) -> tuple[dict[str, list[str]], str | None]:
    """What libkineto logged while tracing (:data:`PROFILER_LOG_LEVELS`' lists of the document's top level:
    {level: lines}, the levels that hold lines only) and, when it says it stopped collecting GPU activity
    early, its message for it ('' when only its record counts say so), else None. Lists that are not lists
    of strings are not read."""

    def lines(key: str) -> list[str]:
        value = header.get(key)
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    logged = {level: lines(level) for level in PROFILER_LOG_LEVELS}
    logged = {level: found for level, found in logged.items() if found}
    everything = [line for level in (*PROFILER_LOG_LEVELS, "INFO") for line in lines(level)]
    stopped = next((_log_message(line) for line in everything if _BUFFERS_EXCEEDED in line), None)
    if stopped is None and any(_STOPPED_EARLY.search(line) for line in everything):
        stopped = ""
    return logged, stopped


def _lost_ends(x_events: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``x_events`` with the negative ``dur`` of device ops and API calls read as unreadable: libkineto before
    kineto#646 (2022) wrote ``dur`` = -``ts`` for an event whose end it had missed (an end time of 0), so the
    event's start is known and its end is not. A device op keeps its place with no end time (it counts as an
    op, in no busy time, and the analysis doubts a verdict on it: :func:`_gpu_ops`); an API call lasts 0 from
    its start, as one whose dur does not read, so it still links its device work, and a warning counts them
    (the device ops' warning is the one for ops without an end). Before, both were dropped (as every frame's
    rows of negative duration are, :func:`tracekit.model.drop_negative_durations`): a launch call's kernel
    read as launched before the capture began, a kernel counted in no iteration and in no doubt. Ranges and
    CPU operators are left to that rule: a range whose end is lost delimits no iteration."""
    read_here = pl.col("cat_l").is_in([*OP_CATEGORIES, *API_CATEGORIES])
    negative = (pl.col("dur_ns") < 0) & ~pl.col("dur_unread") & read_here
    if not x_events.select(negative.any()).item():
        return x_events
    calls = x_events.filter(negative, pl.col("cat_l").is_in(list(API_CATEGORIES))).height
    if calls:
        warnings.append(
            f"{calls} API calls have a negative dur (an end the profiler lost: libkineto before 2022 wrote dur = "
            "-ts then, kineto#646): read as lasting 0 from their start, so each still links the device work it "
            "launched"
        )
    return x_events.with_columns(
        dur_ns=pl.when(negative).then(0).otherwise(pl.col("dur_ns")),
        dur_unread=pl.col("dur_unread") | negative,
    )


def _without_unplaced_events(
    path: Path, x_events: pl.DataFrame, warnings: list[str]
) -> tuple[pl.DataFrame, int]:
    """``x_events`` without the events torch.profiler could not place in time, with a warning counting them:
    events that read ``"ts": 0.000, "dur": 0.000`` in a trace whose other events have times. libkineto writes
    times relative to its base time and clamps one before the base to 0 (``transToRelativeTime``), and a
    duration below 0 to 0 (kineto#646: end times of 0); torch 2.12 wrote half a trace so (pytorch#188481: 'in
    the second half of the trace, nearly all of them list "ts": 0.000 and "dur": 0.000'). Kept, they made
    steps of 0 µs at time 0 (an iteration of latency 0) and device ops outside every iteration. An event at
    0 that lasts is kept (a hand-made trace's origin). A device op so written whose launch call is placed
    still ran where that call says: it stays, untimed (no start, no end; left out, its iteration had read one
    kernel fewer and its busy time as known). TraceFormatError when every device op is such an event.
    Returns the events and how many device ops were kept untimed so."""
    unplaced = (pl.col("start") == 0) & (pl.col("dur_ns") == 0) & ~pl.col("dur_unread")
    is_op = pl.col("cat_l").is_in(list(OP_CATEGORIES))
    counts = x_events.select(
        n=unplaced.sum(),
        placed=(~unplaced).sum(),
        ops=(unplaced & is_op).sum(),
        placed_ops=(~unplaced & is_op).sum(),
    ).row(0, named=True)
    if not counts["n"] or not counts["placed"]:
        return x_events, 0
    message = (
        f"{counts['n']:,} events ({counts['ops']:,} of them device ops) read ts 0.000 and dur 0.000, as "
        "torch.profiler writes an event it could not place in time (pytorch#188481): their times are unknown"
    )
    if counts["ops"] and not counts["placed_ops"]:
        raise TraceFormatError(
            f"{message}, and they are all of its device ops, so the device's busy time is not known: profile "
            "again (a shorter capture, or another torch version)",
            path,
        )
    is_call = pl.col("cat_l").is_in(list(API_CATEGORIES))
    correlation = pl.col("a_correlation").cast(pl.Int64, strict=False)
    placed_ids = x_events.filter(~unplaced & is_call).select(correlation).to_series().drop_nulls()
    # (an id that a zeroed call carries too -- another process's, in a file of several: correlation ids are
    # per process -- may be that call's op: whose call placed it is not known, so it is left out)
    zeroed_ids = x_events.filter(unplaced & is_call).select(correlation).to_series().drop_nulls()
    stays = (
        unplaced
        & is_op
        & correlation.is_in(placed_ids.implode()).fill_null(False)
        & ~correlation.is_in(zeroed_ids.implode()).fill_null(False)
    )
    kept_ops = int(x_events.select(stays.sum()).item())
    said = []
    left_out = counts["n"] - kept_ops
    if left_out:
        which = f"{left_out:,} of them are" if kept_ops else "they are"
        said.append(
            f"{which} left out of every figure: the steps, operators, calls and device work they record count "
            "nowhere, and an iteration that held some of them is short by them"
        )
    if kept_ops:
        said.append(
            f"{kept_ops:,} device ops whose launch calls are placed count as kernels of unknown time in the "
            "iterations those calls lie in (in no busy time)"
        )
    warnings.append(f"{message}: {'; '.join(said)}")
    kept = x_events.filter(~unplaced | stays).with_columns(
        start=pl.when(stays).then(None).otherwise(pl.col("start")),
        dur_unread=pl.col("dur_unread") | stays,
    )
    return kept, kept_ops


#: no call left out as far (:func:`_without_far_events`)
_NO_FAR_CALLS = pl.DataFrame(schema={"correlation": pl.Int64, "far_pid": pl.Int64})


def _without_far_events(x_events: pl.DataFrame) -> tuple[pl.DataFrame, str | None, pl.DataFrame]:
    """``x_events`` without the device ops, API calls and annotations stamped impossibly far from the rest of
    the trace (an hour from every other event, or with an end past int64:
    :func:`tracekit.readers.timestamps.far_events`; an annotation only where nothing but annotations lies
    near it), the warning that says so (None: nothing left out), and the correlation ids (with the process)
    of the calls left out whose ids no kept call carries (:func:`_placed_by_own_start`). The other events
    (operators) place the trace. A kernel at ts 9.2e15 µs, 292 years after its launch, was read as an
    iteration of 9.2e12 ms; an annotation 5 h after the others as an iteration of no work."""
    if x_events.is_empty():
        return x_events, None, _NO_FAR_CALLS
    start_f = pl.col("start").cast(pl.Float64)
    lo, hi, last = x_events.select(
        lo=start_f.min(), hi=start_f.max(), last=(start_f + pl.col("dur_ns").cast(pl.Float64)).max()
    ).row(0)
    if lo is None or (max(hi, last if last is not None else hi) - lo <= FAR_NS and (last or 0) < 2.0**63):
        # (every trace of an hour or less, its ends included: one pass)
        return x_events, None, _NO_FAR_CALLS
    kinds = x_events.select(
        op=pl.col("cat_l").is_in(list(OP_CATEGORIES)),
        call=pl.col("cat_l").is_in(list(API_CATEGORIES)),
        range=pl.col("cat_l").is_in([*USER_RANGE_CATEGORIES, *GPU_RANGE_CATEGORIES]),
    )
    start, dur = x_events.get_column("start"), x_events.get_column("dur_ns")
    is_op, is_call, is_range = kinds.get_column("op"), kinds.get_column("call"), kinds.get_column("range")
    nulls = pl.Series(values=[None] * x_events.height, dtype=start.dtype)
    is_other = ~(is_op | is_call | is_range)
    # (a trace without device ops is a CPU run: its operators are its work, judged as device ops are; where
    # device ops are, the operators place the trace)
    cpu_run = not bool(is_op.any())
    starts = {"device ops": start.zip_with(is_op, nulls), "API calls": start.zip_with(is_call, nulls)}
    if cpu_run:
        starts[_CPU_EVENTS] = start.zip_with(is_other, nulls)
    far, warning = far_events(
        starts,
        anchors=[] if cpu_run else [start.zip_with(is_other, nulls)],
        durations={"device ops": dur, "API calls": dur, "annotations": dur, _CPU_EVENTS: dur},
        ranges={"annotations": start.zip_with(is_range, nulls)},
    )
    if warning is None:
        return x_events, None, _NO_FAR_CALLS
    links = _NO_FAR_CALLS
    if far["API calls"].any() and "a_correlation" in x_events.columns:
        calls = x_events.select(
            correlation=pl.col("a_correlation").cast(pl.Int64, strict=False),
            far_pid=pl.col("pid").cast(pl.Int64, strict=False),
        ).filter(is_call)
        gone = far["API calls"].filter(is_call)
        links = (
            calls.filter(gone)
            .drop_nulls("correlation")
            .unique("correlation", keep="first", maintain_order=True)
            .join(calls.filter(~gone).drop_nulls("correlation"), on="correlation", how="anti")
        )
    gone = far["device ops"] | far["API calls"] | far["annotations"]
    if cpu_run:
        gone = gone | far[_CPU_EVENTS]
    return x_events.filter(~gone), warning, links


#: :func:`_without_far_events`' noun for the CPU events (operators, Python functions) of a trace without
#: device ops
_CPU_EVENTS = "CPU events"


def _placed_by_own_start(
    gpu_ops: pl.DataFrame, links: pl.DataFrame, warning: str
) -> tuple[pl.DataFrame, str, int]:
    """``gpu_ops`` (:func:`_gpu_ops`) where an op whose launch call was left out as far (``links``:
    :func:`_without_far_events`), while the op itself was not, keeps its own time: its correlation id is taken
    away (it is placed in its iteration by its own start, as
    :func:`tracekit.readers.timestamps.launched_by_far_calls` says), its process is its call's, and it is no
    op "launched before the capture window"; ``warning`` (the far-event warning) saying how many; and how many
    (:data:`tracekit.model.OPS_OF_FAR_CALLS`)."""
    if links.is_empty() or gpu_ops.is_empty():
        return gpu_ops, warning, 0
    ops = gpu_ops.join(links, on="correlation", how="left", maintain_order="left")
    orphaned = ops.get_column("far_pid").is_not_null() & ~ops.get_column("has_call")
    count = int(orphaned.sum())
    if not count:
        return gpu_ops, warning, 0
    ops = ops.with_columns(
        pid=pl.when(orphaned).then(pl.col("far_pid")).otherwise(pl.col("pid")),
        correlation=pl.when(~orphaned).then(pl.col("correlation")),
        has_call=pl.col("has_call") | orphaned,
    ).drop("far_pid")
    return ops, warning + placed_by_own_start_said(count), count


def _legacy_export(path: Path) -> bool:
    """Whether the file is the legacy autograd profiler's chrome trace (``EventList.export_chrome_trace``:
    complete events without a category, host ones of pid :data:`LEGACY_PID`). A second pass over the file,
    made only when no event of the first was kept (nothing to analyze then in any case)."""
    for chunk in stream_events(path, lenient=True):
        cols = columns(chunk, ("ph", "cat", "pid"), False)
        if cols.filter(
            (pl.col("ph") == "X") & pl.col("cat").is_null() & (pl.col("pid") == LEGACY_PID)
        ).height:
            return True
    return False


#: lower-cased categories of the host-side runtimes of accelerators whose device work tracekit reads only as
#: the device-op categories (:data:`OP_CATEGORIES`): Gaudi's ``hpu_op``, MTIA's, Glow's and a PrivateUse1
#: backend's. Such calls without one device op mean the device's work is not in what tracekit reads
#: (:func:`_device_work_not_read`)
ACCELERATOR_RUNTIMES: tuple[str, ...] = (
    "hpu_op",
    "mtia_runtime",
    "glow_runtime",
    "privateuse1_runtime",
    "privateuse1_driver",
)
#: the device-op categories, as an error names them
_OP_CATEGORY_NAMES = "kernel, gpu_memcpy, gpu_memset, mtia_ccp_events, mlu_memcpy, mlu_memset"
#: lower-cased runtime categories of vendors' Kineto forks that tracekit reads as calls but that, without a
#: device op, still say an accelerator ran whose work is not in the trace (:func:`_device_work_not_read`)
FORK_RUNTIMES: tuple[str, ...] = ("mlu_runtime",)
#: how a category that tracekit does not read names host calls (``<device>_runtime``, ``<device>_driver``), as
#: vendors' Kineto forks name their runtime's
FORK_CALL_SUFFIXES: tuple[str, ...] = ("_runtime", "_driver")
#: how a category that tracekit does not read names device work (``<device>_memcpy``, ``<device>_memset``,
#: ``<device>_kernel``), as vendors' forks name it (Cambricon's ``mlu_memcpy`` before tracekit read it)
FORK_WORK_SUFFIXES: tuple[str, ...] = ("_memcpy", "_memset", "_kernel")


def _unread_fork_categories(categories: set[str]) -> tuple[list[str], list[str]]:
    """The categories of the file that tracekit does not read but whose names say host calls
    (:data:`FORK_CALL_SUFFIXES`) or device work (:data:`FORK_WORK_SUFFIXES`), sorted: (calls, work). A
    category that is a read one but for its spaces is :func:`_unread_gpu_categories`'s."""
    unread = sorted(c for c in categories if c.strip().lower() not in READ_CATEGORIES)
    calls = [c for c in unread if c.strip().lower().endswith(FORK_CALL_SUFFIXES)]
    work = [c for c in unread if c.strip().lower().endswith(FORK_WORK_SUFFIXES)]
    return calls, work


def _unread_fork_warnings(categories: set[str]) -> list[str]:
    """Warnings for the events of a trace with device ops that a vendor's Kineto fork names in categories
    tracekit does not read (:func:`_unread_fork_categories`): calls left out of the launch counts and the
    host's API time, device work left out of the GPU busy time. Without them the figures would read as if
    the trace held nothing else (a fork's runtime calls unread had read as 'the host side was not
    profiled')."""
    calls, work = _unread_fork_categories(categories)
    warnings = [
        f"events of category {c!r} were not read (a runtime tracekit does not know): the calls they record are "
        "left out of the launch counts and of the host's API time, and the device ops they launched are not "
        "linked to them"
        for c in calls
    ]
    warnings += [
        f"events of category {c!r} were not read (device work of a category tracekit does not know): what they "
        "record is left out of the GPU busy time and of every device figure, which may be short by it"
        for c in work
    ]
    return warnings


def _device_work_not_read(x_events: pl.DataFrame, categories: set[str]) -> str | None:
    """Why a trace without device ops that holds an accelerator's runtime calls cannot be read as a CPU run,
    in one line; None when it holds none. Read as one, its CPU operators' time would stand for the device's
    busy time and the verdict would be theirs. The calls: events of :data:`ACCELERATOR_RUNTIMES` (counted),
    or of a category tracekit does not read named ``<device>_runtime``/``<device>_driver`` as vendors' Kineto
    forks name their runtime (Cambricon's ``mlu_runtime``; ``categories``: every category of the file). An
    Intel Gaudi (HPU) trace writes its host-side calls and its engines' (TPC, MME, DMA) work alike as
    ``hpu_op`` events, the latter with a ``HW event name`` arg, on the device's pid: no category tracekit
    reads as device work."""
    counts = (
        x_events.filter(pl.col("cat_l").is_in(list(ACCELERATOR_RUNTIMES)))
        .group_by("cat_l")
        .len()
        .sort("len", "cat_l", descending=[True, False])
    )
    calls, work = _unread_fork_categories(categories)
    forks = sorted({*calls, *work, *(c for c in categories if c.strip().lower() in FORK_RUNTIMES)})
    if counts.is_empty() and not forks:
        return None
    found = ", ".join(
        [f"{n:,} {cat} events" for cat, n in counts.iter_rows()]
        + [f"events of category {c!r}" for c in forks]
    )
    if "hpu_op" in counts.get_column("cat_l"):
        return (
            f"an Intel Gaudi (HPU) trace ({found}, no event of a device-op category tracekit reads: "
            f"{_OP_CATEGORY_NAMES}): tracekit does not read Gaudi's device work (its engines' hpu_op events), "
            "so the device's busy time is not known, and read as a CPU run its CPU operators' time would stand "
            "for the device's; tracekit reads the device activity of CUDA, ROCm, Intel XPU and MTIA traces"
        )
    return (
        f"the trace records an accelerator's runtime calls ({found}) but no event of a device-op category "
        f"tracekit reads ({_OP_CATEGORY_NAMES}): the device's work is not in it (its activity was not recorded, "
        "or the backend names it otherwise), so its busy time is not known, and read as a CPU run its CPU "
        "operators' time would stand for the device's; profile the device activity too"
    )


#: CPU operators that run for CUDA (ROCm) tensors only: cuDNN/MIOpen ops (not ``cudnn_is_acceptable``, a
#: check any convolution makes), flash and memory-efficient attention (the CPU's is
#: ``_scaled_dot_product_flash_attention_for_cpu``), and NCCL's ``record_function`` scopes (``nccl:all_reduce``)
GPU_ONLY_OPERATOR = (
    r"^aten::(_?cudnn_(?:[^i]|i[^s])|_?miopen_|_flash_attention_(?:forward|backward)$|"
    r"_efficient_attention_(?:forward|backward)$|"
    r"_scaled_dot_product_(?:flash|efficient|cudnn)_attention(?:_backward)?$)|^nccl:"
)


def _gpu_program_without_device_activity(operators: pl.DataFrame, gpus: Any) -> dict[str, Any] | None:
    """Evidence that a trace without device ops profiled a GPU program (``torch.profiler`` with
    ``activities=[ProfilerActivity.CPU]`` around a CUDA model), and the warning that says so; None otherwise.
    The evidence: CPU operators that run for GPU tensors only (:data:`GPU_ONLY_OPERATOR`; ``operators``: every
    CPU operator, nested ones too). Read as a CPU run, the host's operator time (on a GPU, operators return
    once their kernels are queued) stands for the work. ``gpus``: ``deviceProperties`` (Kineto lists the
    machine's GPUs whatever the activities; anything but a list of objects names none), named in the
    warning. Vectorized over the distinct names."""
    names = operators.get_column("name").drop_nulls().unique()
    found = names.filter(names.str.contains(GPU_ONLY_OPERATOR)).sort().to_list()
    if not found:
        return None
    shown = ", ".join(f"'{n}'" for n in found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    listed = [
        str(g.get("name"))
        for g in (gpus if isinstance(gpus, list) else [])
        if isinstance(g, dict) and g.get("name")
    ]
    machine = f" on a machine with {len(listed)} GPU(s) ({listed[0]})" if listed else ""
    warning = (
        f"the trace holds operators that run for GPU tensors only ({shown}) but no GPU activity{machine}: a GPU "
        "program profiled without ProfilerActivity.CUDA, whose operators' time is the host's (an operator on a "
        "GPU returns once its kernels are queued), not the device's, so the operator busy time and utilization "
        "say nothing of how busy the GPU was; profile with ProfilerActivity.CUDA for a verdict"
    )
    return {"operators": found, "warning": warning}


#: range and operator names that torch.compile's code runs under: Dynamo's frame (``Torch-Compiled Region:
#: 0/0``), Inductor's call of its compiled graph (``## Call CompiledFxGraph <hash> ##``) and AOTAutograd's
#: autograd function (``CompiledFunction``)
COMPILED_REGION_NAMES: tuple[str, ...] = ("Torch-Compiled Region", "CompiledFxGraph", "CompiledFunction")
#: the operators Inductor records for its generated C++ kernels when ``torch._inductor.config.cpp.
#: enable_kernel_profile`` is set (off by default): ``cpp_fused_<ops>_<n>`` (``kernel_cpp_<n>`` without
#: descriptive names)
COMPILED_KERNEL_OPERATOR = r"^(cpp_fused|kernel_cpp)"


def _compiled_cpu_code(ops: pl.DataFrame, ranges: pl.DataFrame) -> dict[str, Any] | None:
    """Evidence that a CPU-only trace ran torch.compile (Inductor) code whose kernels it does not record, and
    the warning that says so; None otherwise. Inductor's generated C++ kernels are plain function calls, not
    dispatcher operators: torch.profiler records them only when ``enable_kernel_profile`` is set
    (:data:`COMPILED_KERNEL_OPERATOR`), so by default the time they take inside the compiled regions is in
    no operator and reads as framework overhead (or, under an autograd ``CompiledFunction`` operator, the
    wrapper's overhead reads as operator time). ``unrecorded_ms``: the time of the compiled regions (the
    ranges of :data:`COMPILED_REGION_NAMES`, their union) that no top-level operator (``ops``) covers."""
    names = ranges.get_column("name")
    regions = ranges.filter(
        pl.any_horizontal(names.str.contains(n, literal=True) for n in COMPILED_REGION_NAMES)
    ).filter(pl.col("domain") != "gpu")
    op_names = ops.get_column("name")
    compiled_ops = ops.filter(op_names.str.starts_with(COMPILED_REGION_NAMES[2]))
    if regions.is_empty() and compiled_ops.is_empty():
        return None
    if op_names.str.contains(COMPILED_KERNEL_OPERATOR).any():
        return None  # recorded with enable_kernel_profile: the kernels are operators
    spans = pl.concat([regions.select("start", "end"), compiled_ops.select("start", "end")])
    region_ns = union_ns(spans.get_column("start"), spans.get_column("end"))
    ops_ns = union_ns(ops.get_column("start"), ops.get_column("end"))
    both = pl.concat([spans, ops.select("start", "end")])
    unrecorded = union_ns(both.get_column("start"), both.get_column("end")) - ops_ns
    # the compiled regions apart from one another (a graph call inside its Dynamo frame is one region)
    ordered = spans.sort("start", "end")
    count = ordered.select((pl.col("start") >= pl.col("end").cum_max().shift(1)).fill_null(True).sum()).item()
    warning = (
        f"the trace runs torch.compile'd code on the CPU ({count} compiled region(s), {region_ns / 1e6:.3f} ms) "
        "whose generated C++ kernels are not recorded as operators (Inductor records them only with "
        "torch._inductor.config.cpp.enable_kernel_profile = True): the compiled regions' "
        f"{unrecorded / 1e6:.3f} ms outside recorded operators is their kernels' work as much as framework "
        "overhead, so the operator busy time and utilization do not tell the two apart; record with "
        "enable_kernel_profile for a verdict"
    )
    return {
        "regions": count,
        "region_ms": region_ns / 1e6,
        "unrecorded_ms": unrecorded / 1e6,
        "warning": warning,
    }


#: what marks a JAX or TensorFlow chrome trace: a process named as XLA and TensorFlow name devices and hosts
#: (``/device:GPU:0``, ``/host:CPU``; TF1's timeline: ``/job:localhost/replica:0/task:0/device:GPU:0
#: Compute``), which xprof (JAX's ``jax.profiler``, TensorFlow's profiler, torch_xla, TensorBoard's trace
#: viewer) and TF1's ``timeline`` write as ``process_name`` metadata before the events. Kineto names processes
#: after the program (``python3``) and devices ``GPU 0``. Only a metadata event's ``args.name`` counts: an
#: event's own ``name`` (a user's ``record_function`` or NVTX range "/device:GPU:0") is no process name.
XLA_PROCESS_NAME = re.compile(
    r'"args"\s*:\s*\{[^{}]*?"name"\s*:\s*"((?:/job:[^"]*?)?/(?:device|host):[A-Za-z_]+[^"]{0,80})"'
)
#: what marks torch_npu's profiler output (``ASCEND_PROFILER_OUTPUT/trace_view.json``): the process that holds
#: the NPU's tasks, named so in its ``process_name`` metadata (beside "Python", "CANN", "Overlap Analysis"):
#: ``args.name``, not an event's own name (a user's range "Ascend Hardware")
ASCEND_PROCESS_NAME = re.compile(r'"args"\s*:\s*\{[^{}]*?"name"\s*:\s*"Ascend Hardware"')


def _foreign_trace(path: Path) -> str | None:
    """What ``path`` is, in one line, when its head (where those writers put their process names) shows a
    chrome trace of another framework's profiler that tracekit does not read: a JAX/TensorFlow (XLA) trace
    (:data:`XLA_PROCESS_NAME`) or an Ascend NPU trace (:data:`ASCEND_PROCESS_NAME`); None otherwise. Made only
    when no event was kept or no device op was read (a CPU run); not from a pipe, already read."""
    from tracekit.readers import _json_head

    if is_stream(path):
        return None
    try:
        head = _json_head(path, peek_input(path, 64))
    except TraceFormatError:
        return None
    xla = XLA_PROCESS_NAME.search(head)
    if xla:
        return (
            f"a JAX/TensorFlow trace (XLA's profiler, as JAX, TensorFlow and torch_xla write it: processes named "
            f"such as '{xla.group(1)}'), not a torch.profiler trace: tracekit reads torch.profiler/Kineto traces "
            "(and Nsight Systems, ONNX Runtime and Nsight Compute ones); for a JAX or TensorFlow program, profile "
            "it with nsys (nsys profile -t cuda,nvtx)"
        )
    if ASCEND_PROCESS_NAME.search(head):
        return (
            "an Ascend NPU trace (torch_npu's profiler: the NPU's tasks on a process named 'Ascend Hardware'), "
            "not a torch.profiler trace: tracekit reads torch.profiler/Kineto traces, and not the NPU's device "
            "activity, so read as a CPU run its CPU operators' time would stand for the NPU's"
        )
    return None


#: the launch dimensions of :func:`_launches`, in :data:`tracekit.model.LAUNCHES_SCHEMA` order
_DIMS: tuple[str, ...] = LAUNCH_DIMS


#: kernel events the launch-dimension pass turns into rows at once (a few chunks' worth: per-chunk frame work
#: would cost more than the decoding)
LAUNCH_BATCH = 1 << 14


def _launch_batches(
    chunks: Iterator[list[Any]], kernel_categories: set[str]
) -> Iterator[tuple[bool, list[Any]]]:
    """(fast, events) from decoded chunks: the kernel events of fast chunks (:class:`LaunchEvent`, picked by
    category in C-level passes) gathered into batches of at least :data:`LAUNCH_BATCH`; a chunk of other value
    types (:class:`_Event`: every event, the frame side picks) on its own."""
    batch: list[Any] = []
    for chunk in chunks:
        if chunk and type(chunk[0]) is _Event:
            yield False, chunk
            continue
        events = list(filter(LaunchEvent.__instancecheck__, chunk))
        cats = list(map(getattr, events, repeat("cat")))
        kernels = {c for c in set(cats) - {None} if c.lower() in kernel_categories}
        batch += compress(events, map(kernels.__contains__, cats))
        if len(batch) >= LAUNCH_BATCH:
            yield True, batch
            batch = []
    if batch:
        yield True, batch


def _launches(path: Path) -> pl.DataFrame:
    """The kernels' launch dimensions (:data:`tracekit.model.LAUNCHES_SCHEMA`): ``args`` ``grid`` and
    ``block`` (``[x, y, z]``) of the complete kernel events with a readable ts, ``stream``/``start``/``end``
    as :func:`_gpu_ops` makes them; a kernel without both lists of three integers has no row. A second pass
    over the file (as :func:`_flows`), made only when the ``launches`` frame is asked for: the first pass
    never decodes these args, so an analysis that does not ask pays nothing."""
    kernel_categories = {c for c, kind in OP_CATEGORIES.items() if kind == "kernel"}
    fields = ("ph", "cat", "tid", "ts", "dur", "a_stream", *LAUNCH_FIELDS)
    parts = [empty_frame(LAUNCHES_SCHEMA)]
    for fast, chunk in _launch_batches(stream_events(path, lenient=DECODE_LAUNCHES), kernel_categories):
        cols = columns(chunk, fields, fast).filter(
            pl.col("ph") == "X",
            pl.col("cat").str.to_lowercase().is_in(list(kernel_categories)),
            pl.col("a_grid").is_not_null() & pl.col("a_block").is_not_null(),
        )
        if cols.is_empty():
            continue
        start = us_to_ns_series(cols.get_column("ts"))
        dur = us_to_ns_series(cols.get_column("dur"))
        frame = cols.select(
            stream=pl.coalesce(pl.col("a_stream").cast(pl.Int64, strict=False), leading_int(pl.col("tid"))),
            start=start,
            end=start + dur,
            **{
                name: pl.col(field).str.strip_chars("[] \t\r\n").str.splitn(",", 3).struct.field(f"field_{i}")
                for field, names in zip(LAUNCH_FIELDS, (_DIMS[:3], _DIMS[3:]), strict=True)
                for i, name in enumerate(names)
            },
        )
        # each dimension a whole number (a list of other than three, or of other values, gives null)
        frame = frame.with_columns(pl.col(_DIMS).str.strip_chars().cast(pl.Int64, strict=False))
        parts.append(frame.filter(pl.col("start").is_not_null(), pl.all_horizontal(pl.col(_DIMS) >= 0)))
    return pl.concat(parts)


def _flows(path: Path) -> pl.DataFrame:
    """Flow events (``ph`` s/f/t of the flow categories, readable ts): pid, tid, start, id (text). A second
    pass over the file, made only when some GPU event lacks its correlation id."""
    parts = [_flows_frame()]
    for chunk in stream_events(path, lenient=True):
        cols = columns(chunk, ("ph", "cat", "pid", "tid", "ts", "id"), False)
        parts.append(
            cols.filter(
                pl.col("ph").is_in(["s", "f", "t"]),
                pl.col("cat").str.to_lowercase().is_in(list(FLOW_CATEGORIES)),
            )
            .with_columns(start=us_to_ns(pl.col("ts")))
            .filter(pl.col("start").is_not_null())
            .select("pid", "tid", "start", "id")
        )
    return pl.concat(parts)


#: ``args`` fields and the (lower-cased) categories of the events whose frames use them: ops (device,
#: stream, graph, occupancy, correlation), GPU annotations (stream), runtime/driver calls (correlation)
_ARG_USERS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("a_correlation",), (*OP_CATEGORIES, *API_CATEGORIES)),
    (("a_device", "a_stream", "a_graph", "a_occupancy"), (*OP_CATEGORIES, *GPU_RANGE_CATEGORIES)),
)
#: columns of the kept rows after ``cat_l``, in order (every chunk gives the same frame layout)
_ROW_COLUMNS: tuple[str, ...] = (
    "start",
    "name",
    "pid",
    "tid",
    *INT_ARGS,
    "a_occupancy",
    "dur_ns",
    "dur_unread",
)
#: rows of no chunk (the columns :func:`wire_rows` gives)
_EMPTY_ROWS = pl.DataFrame(
    schema={
        "cat_l": pl.String,
        "start": pl.Int64,
        **dict.fromkeys(("name", "pid", "tid"), pl.String),
        **dict.fromkeys(INT_ARGS, pl.Int64),
        "a_occupancy": pl.String,
        "dur_ns": pl.Int64,
        "dur_unread": pl.Boolean,
    }
)


def read_events(
    path: Path, progress: Progress | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any], set[str], int, dict[str, Any] | None]:
    """(kept event rows, flow events, header, category names, complete events without a readable ts,
    ``meta["first_op_inputs"]``) of a Kineto file.

    The file is decoded chunk by chunk, in a worker process when it is large enough
    (:mod:`tracekit.readers.kineto_worker`) and in this one otherwise or when the worker is lost; each
    chunk is reduced to the rows the frames need (:mod:`tracekit.readers.kineto_wire`,
    :func:`wire_rows`) before the next is read. TraceFormatError for values nested deeper than the decoder
    goes (msgspec's RecursionError, as for ``json.loads``)."""
    try:
        return _read_events(path, progress)
    except RecursionError:
        raise TraceFormatError(NESTED_TOO_DEEPLY, path) from None


def _read_events(
    path: Path, progress: Progress | None
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any], set[str], int, dict[str, Any] | None]:
    """:func:`read_events`, raising RecursionError as it is."""
    workers = kineto_worker.take(path)
    if workers is None and kineto_worker.wanted(path):
        with contextlib.suppress(kineto_worker.WorkerLost):
            workers = kineto_worker.start(path)
    if workers is not None:
        header: dict[str, Any] = {}
        try:
            return _read_chunks(path, workers.chunks(progress, header), header)
        except kineto_worker.WorkerLost:
            pass  # decode here instead
        finally:
            workers.close()
    header = {}
    wires = ((0, wire) for wire in kineto_wire.wire_chunks(path, progress, header=header))
    return _read_chunks(path, wires, header)


#: where :func:`_read_chunks` hands :func:`collective_args` to :func:`read` (a key no trace header has)
_COLLECTIVE_ARGS = "\x00collective_args"
#: where :func:`_read_chunks` hands :func:`python_threads` to :func:`read` (a key no trace header has)
_PYTHON_THREADS = "\x00python_threads"
#: where :func:`_read_chunks` hands :func:`read` the read categories some of whose events are begin/end pairs
#: (:data:`~tracekit.readers.kineto_json.BEGIN_END_MARK`; a key no trace header has)
_BEGIN_END = "\x00begin_end"


def _read_chunks(
    path: Path, wires: Iterator[tuple[int, WireChunk]], header: dict[str, Any]
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any], set[str], int, dict[str, Any] | None]:
    """:func:`read_events` from the file's wire chunks, as (part, chunk) with each part's chunks in file
    order (``header`` filled once they are read)."""
    parts: dict[int, list[pl.DataFrame]] = {}
    first_ops: dict[int, list[pl.DataFrame]] = {}
    categories: set[str] = set()
    comm: dict[int, list[pl.DataFrame]] = {}
    python: list[pl.DataFrame] = []  # (pieces of every part: merged whatever their order)
    with gc_paused():  # chunks of small acyclic objects: the cyclic GC would rescan them all, to no purpose
        bad_ts = 0
        for part, wire in wires:
            rows, cats, first, bad = wire_rows(wire, comm.setdefault(part, []), python)
            del wire
            bad_ts += bad
            parts.setdefault(part, []).append(rows)
            if first.height:
                first_ops.setdefault(part, []).append(first)
            categories |= cats
        marked = {c for c in categories if c.startswith(BEGIN_END_MARK)}
        categories -= marked
        header[_BEGIN_END] = {c.removeprefix(BEGIN_END_MARK) for c in marked}
        in_order = [rows for part in sorted(parts) for rows in parts[part]]
        first_op_parts = [first for part in sorted(first_ops) for first in first_ops[part]]
        del parts
        frame = _finish_rows(in_order)
        del in_order
        # Flow events matter only for GPU events without a correlation id (older traces): read them then.
        missing = frame.filter(
            pl.col("cat_l").is_in(list(OP_CATEGORIES)),
            pl.col("a_correlation").cast(pl.Int64, strict=False).is_null(),
        ).height
        flows = _flows(path) if missing else _flows_frame()
    first_op = first_op_inputs(pl.concat(first_op_parts)) if first_op_parts else None
    header[_COLLECTIVE_ARGS] = collective_args([c for part in sorted(comm) for c in comm[part]])
    header[_PYTHON_THREADS] = python_threads(python)
    return frame, flows, header, categories, bad_ts, first_op


def read(path: Path, progress: Progress | None = None, frames: FrameSpec = None) -> Trace:
    """Read a Kineto chrome trace (``.json`` or ``.json.gz``) into a normalized Trace (see module doc).

    ``progress``, when given, is called as ``progress(phase, fraction)`` while the file is read: phase
    "read" (the file inflated), "decode" (fraction of the event array decoded, one call per chunk of about
    :data:`tracekit.readers.kineto_decode.CHUNK_BYTES` bytes) and "frames" (1.0 when the frames are built).

    ``frames`` (:data:`tracekit.model.FrameSpec`, None = all): ``cpu_ops`` (the top-level CPU operators of a
    GPU trace) is built only when asked for; the other frames are always read.
    """
    path = Path(path)
    want = wanted_frames(frames)
    want_cpu_ops = "cpu_ops" in want
    x_events, flows, header, categories, bad_ts, first_op = read_events(path, progress)
    paired = header.pop(_BEGIN_END, set())
    if x_events.is_empty() and _legacy_export(path):
        raise TraceFormatError(
            "the legacy autograd profiler's export (torch.autograd.profiler with use_kineto=False, or PyTorch "
            f"before 1.8: events of pid '{LEGACY_PID}', no category), not a Kineto trace: it records no launch "
            "call, and its 'CUDA functions' time each operator with CUDA events, not its kernels; record with "
            "torch.profiler.profile instead",
            path,
        )
    if x_events.is_empty():
        foreign = _foreign_trace(path)
        if foreign:
            raise TraceFormatError(foreign, path)
    warnings: list[str] = []
    x_events = _cut_long_names(x_events, warnings)
    if bad_ts:
        warnings.append(f"{bad_ts} complete events without a readable ts were skipped")

    x_events, zeroed = _without_unplaced_events(path, x_events, warnings)
    x_events = _lost_ends(x_events, warnings)
    x_events, far_warning, far_calls = _without_far_events(x_events)
    x_events = x_events.with_columns(tid_i=leading_int_series(x_events.get_column("tid")))
    scopes = None
    gpu_program = None
    no_end = 0
    shared_ids = 0
    conditionals: dict[str, str] | None = None
    main_pid = _main_pid(x_events)
    api = _api(x_events)
    gpu_ops = _gpu_ops(x_events, flows, api, main_pid)
    of_far_calls = 0  # (ops whose id went with their far launch call: said by the far warning, not again)
    if far_warning is not None:
        gpu_ops, far_warning, of_far_calls = _placed_by_own_start(gpu_ops, far_calls, far_warning)
        warnings.append(far_warning)
    if gpu_ops.height:
        device = "gpu"
        ops = gpu_ops
        orphans = ops.filter(~pl.col("has_call")).height
        if orphans and api.is_empty() and not any(c.lower() in API_CATEGORIES for c in paired):
            # (calls written as begin/end pairs are the host side, said with them: _begin_end_warnings)
            warnings.append(
                f"the trace records {ops.height} GPU ops but no runtime/driver call at all: the host side was not "
                "profiled (torch.profiler without ProfilerActivity.CPU), so no op is linked to its launch"
            )
        elif orphans:
            warnings.append(_orphans_warning(ops, api))
        no_start, no_end = ops.select(
            no_start=pl.col("start").null_count(),
            no_end=(pl.col("start").is_not_null() & pl.col("end").is_null()).sum(),
        ).row(0)
        for count, field, unread, time in (
            (no_start - zeroed, "ts", "null, missing, NaN, Infinity or not a number", "start"),
            (no_end, "dur", "null, negative, missing, NaN, Infinity or not a number", "end"),
        ):
            if count:
                warnings.append(
                    f"{count} of {ops.height} GPU ops (kernel, memcpy, memset events) have no readable {field} "
                    f"({unread}): they have no {time} time, so they count as kernels but not in GPU busy time, "
                    "which is short by however long they ran"
                )
        no_end += no_start
        shared_ids = int(ops.get_column("shared_id").sum())
        if shared_ids:
            warnings.append(_shared_ids_warning(ops, api, shared_ids))
        warnings += _unknown_launch_warning(ops, api)
        evidence = _conditional_graphs(ops, api)
        if evidence:
            conditionals = {"evidence": evidence, "warning": conditional_graphs_warning(evidence)}
            warnings.append(conditionals["warning"])
        kernel_metrics = _kernel_metrics(ops)
        # the host's top-level operators: the idle-time attribution names dispatch time after them
        cpu_ops = top_level_cpu_ops(x_events) if want_cpu_ops else None
    else:
        not_read = _foreign_trace(path) or _device_work_not_read(x_events, categories)
        if not_read:
            raise TraceFormatError(not_read, path)
        device = "cpu"
        operators = _cpu_op_events(x_events)
        ops = _cpu_ops(_top_level(operators))
        if "Operator" in categories:  # 2021 spelling: a scope of another name reads as an operator
            scopes = _scope_candidates(operators)
        gpu_program = _gpu_program_without_device_activity(operators, header.get("deviceProperties") or [])
        if gpu_program:  # the analysis may withhold the verdict on it (its key in meta)
            warnings.append(gpu_program["warning"])
        kernel_metrics = None
        cpu_ops = None  # the operators are the ops already
    warnings += _unread_gpu_categories(categories, gpu_ops)
    if device == "gpu":  # (without device ops, such categories refuse the trace: _device_work_not_read)
        warnings += _unread_fork_warnings(categories)
    ranges = _ranges(x_events, main_pid)
    warnings += _unread_range_categories(categories, ranges)
    paired_warnings, unread_device_events = _begin_end_warnings(
        paired, set(x_events.get_column("cat_l").unique().to_list()), device, gpu_ops, ranges
    )
    warnings += paired_warnings
    if device == "cpu" and ops.is_empty() and api.is_empty():
        warnings += _closing_step_only(ranges, categories)
    compiled = _compiled_cpu_code(ops, ranges) if device == "cpu" else None
    if compiled:  # the analysis may doubt a verdict on it (its key in meta)
        warnings.append(compiled["warning"])
    if PYTHON_TRACER_CATEGORY in categories:
        warnings.append(PYTHON_TRACING_WARNING)
    comm_args = header.pop(_COLLECTIVE_ARGS, None)
    threads = header.pop(_PYTHON_THREADS, None)
    meta = _meta(path, header, categories, ops, device)
    if PYTHON_TRACER_CATEGORY in categories:
        meta[META_PYTHON_TRACING] = True  # (the analysis' doubts read it, and the threads' record below)
    if threads and device == "gpu":  # (the analysis tells a host silence's waits from its Python by it)
        meta[PYTHON_THREADS] = threads
    logged, stopped_early = _profiler_log(header)
    if stopped_early is not None:  # (the analysis may read it: the device work after that point is missing)
        meta[GPU_TRACING_STOPPED_EARLY] = True
        warnings.append(
            "torch.profiler (libkineto) stopped collecting GPU activity early"
            + (f" ({stopped_early!r})" if stopped_early else "")
            + ": the device work after that point is not in the trace, so the GPU busy time and utilization of "
            "the iterations it left out read too low (idle where the device ran) and the verdict may be wrong; "
            "profile fewer steps (a shorter schedule) so that its buffers hold them"
        )
    if logged:
        meta["profiler_log"] = {level: found[:PROFILER_LOG_KEPT] for level, found in logged.items()}
        counts = [
            f"{len(logged[level])} {level.lower()}(s)" for level in PROFILER_LOG_LEVELS if level in logged
        ]
        first = next(m for level in PROFILER_LOG_LEVELS for m in logged.get(level, []))
        warnings.append(
            f"torch.profiler (libkineto) logged {' and '.join(counts)} while tracing (first: "
            f"{_log_message(first)!r}): what they report may be missing from the trace"
        )
    if comm_args and device == "gpu":  # (the ranks' analysis matches collectives per process group by it)
        meta["collective_args"] = comm_args
    if compiled:
        meta[COMPILED_CPU_CODE] = compiled
    if gpu_program:
        meta[GPU_PROGRAM_WITHOUT_DEVICE_ACTIVITY] = gpu_program
    if scopes:  # the analysis doubts its verdict then (plausibility.operator_scopes)
        meta["scope_candidates"] = scopes
    meta["cpu_op_summary"] = _summary(x_events)
    if first_op is not None:
        meta["first_op_inputs"] = first_op
    if conditionals:  # the analysis doubts a framework-bound verdict then, in this warning's place
        meta[CONDITIONAL_GRAPHS] = conditionals
    if device == "gpu" and shared_ids:  # (the analysis may doubt a verdict on them)
        meta[SHARED_IDS] = shared_ids
    if device == "gpu" and no_end:  # said here: the analysis does not say it again for its iterations' ops
        meta[OPS_WITHOUT_END] = no_end
    launches = None
    if "launches" in want and device == "gpu":
        if is_stream(path):  # read once: no second pass
            warnings.append(LAUNCHES_FROM_A_PIPE)
        else:
            launches = _launches(path)
    if of_far_calls:
        meta[OPS_OF_FAR_CALLS] = of_far_calls
    without_end = x_events.filter(pl.col("cat_l").is_in(list(API_CATEGORIES)) & pl.col("dur_unread"))
    if (
        without_end.height
    ):  # (calls read as lasting 0: the analysis withholds their iterations' launch figures)
        meta[CALLS_WITHOUT_END] = without_end.select(
            pl.col("pid").cast(pl.Int64, strict=False), "start"
        ).rows()
    if unread_device_events:  # (the analysis doubts the verdict: plausibility.unread_device_work)
        meta[UNREAD_DEVICE_EVENTS] = unread_device_events
    meta["warnings"] = warnings
    meta[API_NAMES_READ] = True
    trace = Trace(
        ops=conform(ops, OPS_SCHEMA),
        api=conform(api, API_SCHEMA),
        ranges=conform(ranges, RANGES_SCHEMA),
        kernel_metrics=conform(kernel_metrics, KERNEL_METRICS_SCHEMA),
        meta=meta,
        cpu_ops=conform(cpu_ops, CPU_OPS_SCHEMA),
        launches=conform(launches, LAUNCHES_SCHEMA),
    )
    if progress:
        progress("frames", 1.0)
    return trace
