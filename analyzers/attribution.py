"""Where the framework tax goes: every idle nanosecond of every iteration attributed to its cause.

The idle time of an iteration (latency - busy, :mod:`tracekit.analyzers.iterations`) is the union of its idle
gaps (leading, inner, trailing, empty) inside the window. Each gap ends at its *next op*: an op starting
at the gap's end, of this iteration or any other or none (of several, the one launched first: launched
before the capture, else the earliest call end), lasting more than 0 ns; a gap that runs to its window's end
(trailing, or the one gap of an iteration whose ops all last 0 ns) has as next op an op of 0 ns of its own
iteration starting at its end (only such an op can start at a window's end inside it: the latest op of an
unsynchronized iteration, a sub-µs kernel on a whole-µs clock), and most trailing gaps have none; empty gaps
have none. The cause of every instant t of a gap is decided by **launch order first, host state second**:

- *device-side* (``in_flight``): the next op had been launched at t -- its launch call had returned (t >=
  call end), or its launching call is not in the trace although it carries a correlation id (launched
  before the capture began, so before any gap in the trace). A gap whose next op was launched before the gap
  began is device-side whole, whatever the host was doing. The device-side time is named further
  (:data:`DEVICE_CAUSES`, per gap and per iteration; they sum to ``in_flight``):

  - ``stream_wait``: the op's launching thread issued a stream-wait call (``cudaStreamWaitEvent``,
    ``hipStreamWaitEvent``, ...: :data:`STREAM_WAIT_NAMES`) after its previous op-launching call and before
    this op's: the op waited on an event of another stream;
  - ``queued``: the op's device was running other work (ops of no iteration or of another one) meanwhile:
    the op waited behind it (another device's work is not counted: :class:`DeviceTimeline` per device);
  - ``launch_lag``: neither, and the device sat idle longer than :data:`LAUNCH_LAG_NS` (1 ms) with the op
    launched: no launch latency is that long, so the device was blocked by something the trace does not
    show, or the host and device clocks are offset (:func:`launch_lags` counts such ops; the analysis warns
    and marks its verdict uncertain);
  - ``launch_latency``: the rest: device-side launch latency and scheduling (nearly all idle time inside a
    CUDA-graph replay);

- otherwise (the next op not yet launched) the state at t of the host thread that issued the next op's
  launch call, or, when that is unknown (no next op, an op with no correlation id, a call on no
  known thread), the iteration's main thread (the thread of its range; none for synthetic windows):
  - ``launch``: inside a launch call (:data:`tracekit.model.LAUNCH_API_NAMES`, graph launches included);
  - ``sync``: inside a synchronization call (:data:`SYNC_API_NAMES`);
  - ``other_api``: inside any other CUDA/HIP API call (allocation, event record, memcpy's host part, ...);
    except the wait inside a *blocking copy*, which is ``sync`` (:func:`blocking_waits`): a copy call that
    waits by its kind (a synchronous copy other than device-to-device: ``cudaMemcpy``, ``cuMemcpyDtoH``,
    ``hipMemcpyWithStream``; an asynchronous copy to pageable host memory) and returned only after its copy
    ended kept the host waiting on the device, as HTA and Nsight Systems count it: from its first op's
    start, or, when the device ran work inside the call before that op (the copy waited for the stream to
    drain), from that work's end; the call's time before (the device idle, the host staging or
    submitting) stays ``other_api``, as do calls that merely outlived their op (a ``cudaMemsetAsync``, an
    asynchronous pinned or device-to-device copy) and copy calls that returned before their copy ended;
  - ``dispatch``: outside every API call: Python and framework code, operator dispatch, graph construction,
    control flow. This is the framework tax proper.

These rules read only the gap's next op and the clock, never the window: the same instant of the same gap
gets the same cause whichever ranges or ``--split-idle`` windows cut the trace (tested on real and
simulated traces). Inside a CUDA-graph replay every kernel's launching call is the one ``cudaGraphLaunch``:
gaps between the graph's kernels are ``in_flight`` once that call has returned, and ``launch`` while it is
still running.

Nested or overlapping API calls on one thread: the *outermost* call decides, i.e. at time t the running call
that started first (of two starting together, the longer; of two identical intervals, the cause listed
first in ``launch, sync, other_api``). A call partly overlapping an earlier one decides from the earlier
one's end on. An op with no correlation id (CPU-only traces, formats without links) has no device-side
piece. On CPU-only traces the device ops are operators and the gaps are mostly ``dispatch``.

Per gap (:func:`attribute_gaps`, the analysis' longest gaps, ``tracekit analyze --gaps FILE``): ``cause``,
the cause holding most of the gap (a device-side one whenever its next op was launched before it began),
``host_state``
(the deciding thread's state at the gap's start; null when no thread is known), ``thread``, and the
nanoseconds of every cause.

Kineto traces also hold the host's CPU operators (``aten::linear``, ...): given them (``cpu_ops``),
dispatch pieces are split further at the boundaries of the top-level operator running on the piece's thread
and named after it (``cpu_op``, null outside every operator).

Units: ``*_ns`` integer nanoseconds, ``*_ms`` milliseconds. Exactness: per gap the five causes sum to the
gap's duration to the nanosecond, so per iteration ``busy + dispatch + launch + sync + other_api +
in_flight = latency``; ``in_flight = launch_latency + queued + stream_wait + launch_lag``.

Everything is vectorized: per-gap sums come from cumulative sums over each host thread's call intervals and
binary searches (no per-gap Python loop; the only loops are over the few host threads that launch work
and over chunks of about a million gaps, which bound the temporaries).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from tracekit.analyzers.stats import Stats, summarize_columns
from tracekit.model import (
    API_NAME_SUFFIX,
    GRAPH_LAUNCH_NAMES,
    LAUNCH_API_NAMES,
    calls_named,
    names_mask,
    sort_frame,
)

#: The launching-call columns (as :func:`tracekit.analyzers.iterations._match_calls` returns them).
CALL_COLUMNS: tuple[str, ...] = ("call_start", "call_end", "call_pid", "call_thread")

#: The causes, in report order (an Enum: one byte a piece).
CAUSES: tuple[str, ...] = ("dispatch", "launch", "sync", "other_api", "in_flight")
CAUSE = pl.Enum(list(CAUSES))
#: Host-state codes of API calls (dispatch = outside every call = 0); identical intervals: lowest code wins.
_LAUNCH, _SYNC, _OTHER = 1, 2, 3

#: Host-blocking synchronization calls (after version and per-thread-stream suffixes are stripped).
SYNC_API_NAMES: tuple[str, ...] = (
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaThreadSynchronize",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
    "hipCtxSynchronize",
    # Intel XPU as Kineto's XPU plugin records it: SYCL's Unified Runtime and Plugin Interface calls
    # (``xpu_runtime``), and the Level Zero host waits they make (``xpu_driver``; nested inside them, where the
    # outermost call decides, or alone in a trace of driver calls only)
    "urQueueFinish",
    "urEventWait",
    "piQueueFinish",
    "piEventsWait",
    "zeEventHostSynchronize",
    "zeCommandQueueSynchronize",
    "zeCommandListHostSynchronize",
    "zeFenceHostSynchronize",
)

#: Stream-wait calls: the op launched next on the thread waits on an event of another stream.
STREAM_WAIT_NAMES: tuple[str, ...] = (
    "cudaStreamWaitEvent",
    "cuStreamWaitEvent",
    "hipStreamWaitEvent",
)
#: The device-side causes (the parts of ``in_flight``), in report order.
DEVICE_CAUSES: tuple[str, ...] = ("launch_latency", "queued", "stream_wait", "launch_lag")
DEVICE_NS: tuple[str, ...] = tuple(f"{c}_ns" for c in DEVICE_CAUSES)
#: A launched op that waits longer than this (ns) on an idle device, with no stream wait before it, is a
#: launch lag (module docstring): launch latencies are microseconds, not milliseconds.
LAUNCH_LAG_NS = 1_000_000
#: The per-gap causes (:func:`attribute_gaps`' ``cause``): host states, then the device-side causes.
GAP_CAUSE = pl.Enum(["dispatch", "launch", "sync", "other_api", *DEVICE_CAUSES])
#: The host states (:func:`attribute_gaps`' ``host_state``).
HOST_STATE = pl.Enum(["dispatch", "launch", "sync", "other_api"])

#: The CUDA-graph projection's defaults (:func:`project_cuda_graphs`), measured on the committed real trace
#: sample_traces/h200_bert_fp16/cuda-graphs/cuda-graphs_b1_s128.torch.json.gz (BERT-base fp16, batch 1,
#: PyTorch + CUDA Graphs, torch.profiler, one NVIDIA H200; 20 iterations, one cudaGraphLaunch of 202 kernels
#: each; ``tests/test_projection.py`` recomputes them from the file). Measurements of one GPU, not laws.
#: Kernel-to-kernel gap inside a replay, ns: the median over iterations of the mean inner gap (the sum of
#: the gaps is what a projection needs; the median gap is 448 ns, p90 1,120 ns).
GRAPH_KERNEL_GAP_NS = 777
#: Range start to the graph's first kernel, ns (median leading gap: the harness's host code before the
#: replay, 7 us, and the launch call's time to the first kernel, 19.5 us).
GRAPH_HEAD_NS = 26_792
#: Last kernel's end to range end, ns (median trailing gap: the synchronize returning, the range closing).
GRAPH_TAIL_NS = 12_458
#: Where the defaults come from, as the outputs print it.
GRAPH_DEFAULTS_SOURCE = (
    "measured: median over iterations of the committed H200 CUDA-graph trace "
    "(sample_traces/h200_bert_fp16/cuda-graphs, BERT-base fp16 batch 1)"
)

#: Per-iteration columns of :func:`attribute_idle` (integer ns; the ``_ms`` columns are these / 1e6).
CAUSE_NS: tuple[str, ...] = tuple(f"{c}_ns" for c in CAUSES)
CAUSE_MS: tuple[str, ...] = tuple(f"{c}_ms" for c in CAUSES)


@dataclass
class Attribution:
    """The result of :func:`attribute_idle`.

    ``iterations``: per iteration ``index``, ``idle_ns``, the causes in ns and ms and the device-side causes
    (:data:`DEVICE_NS`). ``summary``: see :func:`summarize_attribution`. Only when asked for (None otherwise,
    as they hold a row per gap or more): ``gaps``, the input gaps with the per-gap columns of
    :func:`attribute_gaps`; ``pieces``, the consecutive pieces (:func:`idle_pieces`); ``top_operators``,
    dispatch time by top-level CPU operator (with ``cpu_ops``). ``detail``: the per-gap columns of the gaps
    asked for by row (``detail_rows``). ``lags``: the ops that started long after launch on an idle device
    (:func:`launch_lags`: ``iteration``, ``start``, ``lag_ns``). ``warnings``: what the user should know.
    """

    gaps: pl.DataFrame | None
    iterations: pl.DataFrame
    summary: dict[str, Any]
    pieces: pl.DataFrame | None = None
    top_operators: pl.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)
    #: per iteration: :data:`PROJECTION_PARTS` (for :func:`project_cuda_graphs`), with the kernel gap used
    projection_parts: pl.DataFrame | None = None
    kernel_gap_ns: int = 0
    #: CUDA/HIP graph launch calls in the trace's API calls (> 0: the trace already replays graphs)
    graph_launches: int = 0
    detail: pl.DataFrame | None = None
    lags: pl.DataFrame | None = None
    #: iterations left out as of unknown idle time (their device ops untimed, or most of them:
    #: :func:`tracekit.analyzers.iterations._attribution_without`): no CUDA-graph projection either
    unknown: tuple[int, ...] = ()


# ------------------------------------------------------------------------------------------- host states

#: Stand-ins in int64 arrays: a null pid/thread/iteration, and "no call end" (later than any time).
_NULL = np.iinfo(np.int64).min
_FAR = np.iinfo(np.int64).max
#: Gaps handled at a time: bounds the temporaries, and keeps each chunk's binary searches inside the slice of
#: the (time-sorted) ops and calls its time span covers, which stays in cache.
_CHUNK = 1 << 16
#: Per host thread (pid, thread): disjoint intervals (starts, ends, labels), sorted by start.
Intervals = dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


def _np(series: pl.Series, fill: int = _NULL) -> np.ndarray:
    """An integer column as an int64 numpy array, nulls as ``fill``."""
    if series.null_count():
        series = series.fill_null(fill)
    return series.cast(pl.Int64).to_numpy()


def api_cause(names: pl.Expr) -> pl.Expr:
    """Host-state code (1 launch, 2 sync, 3 other_api; UInt8) of API calls by name."""
    base = names.str.replace(API_NAME_SUFFIX, "")
    return (
        pl.when(base.is_in(list(LAUNCH_API_NAMES)))
        .then(pl.lit(_LAUNCH, pl.UInt8))
        .when(base.is_in(list(SYNC_API_NAMES)))
        .then(pl.lit(_SYNC, pl.UInt8))
        .otherwise(pl.lit(_OTHER, pl.UInt8))
    )


def _classify(api: pl.DataFrame) -> tuple[np.ndarray, int]:
    """:func:`api_cause` of every row of ``api`` (int8 codes) and the number of graph launch calls: the
    names are classified once per distinct name (millions of calls share a handful), then each row is
    looked up. The masks are :func:`tracekit.model.names_mask`'s, which the rest of the analysis asks of the
    same frame (launches, graph launches): found once."""
    launch = names_mask(api, LAUNCH_API_NAMES).fill_null(False).to_numpy()
    sync = names_mask(api, SYNC_API_NAMES).fill_null(False).to_numpy()
    # (as api_cause: a launch name first, then a sync name, else other; a null name is other)
    codes = np.where(launch, _LAUNCH, np.where(sync, _SYNC, _OTHER)).astype(np.int8)
    graphs = int(names_mask(api, GRAPH_LAUNCH_NAMES).sum() or 0)
    return codes, graphs


def _search(sorted_values: np.ndarray, keys: np.ndarray, side: str = "left") -> np.ndarray:
    """``np.searchsorted(sorted_values, keys, side)``, searching only the slice of ``sorted_values`` between
    the keys' minimum and maximum (a chunk of time-ordered keys touches a small, cached part of a large
    array)."""
    if len(keys) == 0 or len(sorted_values) == 0:
        return np.searchsorted(sorted_values, keys, side=side)  # type: ignore[call-overload]
    lo = int(np.searchsorted(sorted_values, keys.min(), side="left"))
    hi = int(np.searchsorted(sorted_values, keys.max(), side="right"))
    return lo + search_sorted(sorted_values[lo:hi], keys, side)


#: Most values + keys :func:`search_sorted` merges (above: a binary search per key, no temporaries).
MERGE_MAX = 1 << 22


def search_sorted(sorted_values: np.ndarray, keys: np.ndarray, side: str = "left") -> np.ndarray:
    """``np.searchsorted(sorted_values, keys, side)``. Where the keys are sorted too (gaps and ops in time
    order) and not far fewer than the values, by one merge of the two sorted runs (a stable sort of their
    concatenation finds the two runs and merges them once) instead of a binary search per key: 1.3-2.5x
    faster at 10^5-10^6 keys. Not above :data:`MERGE_MAX` values and keys: the merge's temporaries (the
    concatenation and its order, 16 bytes per value and key) would weigh on the largest traces' peak memory."""
    n = len(sorted_values)
    large = n + len(keys) > MERGE_MAX
    if len(keys) < 2 or n == 0 or large or n > 2 * len(keys) or not np.all(keys[1:] >= keys[:-1]):
        return np.searchsorted(sorted_values, keys, side=side)  # type: ignore[call-overload]
    # "right" counts the values <= each key: values before equal keys; "left" the values < it: keys first
    values_first = side == "right"
    both = np.concatenate([sorted_values, keys] if values_first else [keys, sorted_values])
    order = np.argsort(both, kind="stable")
    at_key = order >= n if values_first else order < len(keys)
    return np.flatnonzero(at_key) - np.arange(len(keys))


def _outermost(s: np.ndarray, e: np.ndarray, lab: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One thread's intervals -> the disjoint intervals where each decides (see :func:`outermost_intervals`)."""
    if len(s) > 1 and not _in_outermost_order(s, e, lab):
        order = np.lexsort((lab, -e, s))
        s, e, lab = s[order], e[order], lab[order]
    # already disjoint, each call ending before the next starts (the usual case; then the ends rise too): no
    # copies, and no array of running ends (10^7 calls: 80 MB) to find it out
    if np.all(e > s) and np.all(s[1:] >= e[:-1]):
        return s, e, lab
    reach = np.empty_like(e)
    if len(e):
        reach[0] = s[0]
        np.maximum.accumulate(e[:-1], out=reach[1:])
    if np.all(reach <= s) and np.all(e > s):  # already disjoint (the usual case): no copies
        return s, e, lab
    start = np.maximum(s, reach)
    keep = e > start
    return start[keep], e[keep], lab[keep]


def _in_outermost_order(s: np.ndarray, e: np.ndarray, lab: np.ndarray) -> bool:
    """Whether rows are sorted by (start, end descending, label): checked on the few tied starts only."""
    if not np.all(s[1:] >= s[:-1]):
        return False
    tied = np.flatnonzero(s[1:] == s[:-1])
    if not len(tied):
        return True
    e0, e1, l0, l1 = e[tied], e[tied + 1], lab[tied], lab[tied + 1]
    return bool(np.all((e1 < e0) | ((e1 == e0) & (l1 >= l0))))


def thread_intervals(
    start: np.ndarray, end: np.ndarray, pid: np.ndarray, thread: np.ndarray, label: np.ndarray
) -> Intervals:
    """Per (pid, thread): the disjoint intervals in which each row decides, the running row that started
    first (ties: the longer, then the lower ``label``); row k decides over [max(start_k, reach), end_k),
    reach being the latest end of the rows before it on its thread. Empty intervals and rows with a null
    (``_NULL``) time, pid or thread are dropped. Arrays in, numpy arrays out."""
    ok = (end > start) & (start != _NULL) & (pid != _NULL) & (thread != _NULL)
    if not ok.all():
        start, end, pid, thread, label = start[ok], end[ok], pid[ok], thread[ok], label[ok]
    if len(start) == 0:
        return {}
    if pid.min() == pid.max() and thread.min() == thread.max():
        return {(int(pid[0]), int(thread[0])): _outermost(start, end, label)}
    order = np.lexsort((thread, pid))  # stable: each thread keeps its row order
    pid, thread = pid[order], thread[order]
    bounds = np.flatnonzero((pid[1:] != pid[:-1]) | (thread[1:] != thread[:-1])) + 1
    out: Intervals = {}
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(order)], strict=True):
        rows = order[lo:hi]
        out[(int(pid[lo]), int(thread[lo]))] = _outermost(start[rows], end[rows], label[rows])
    return out


def api_intervals(api: pl.DataFrame) -> Intervals:
    """Each host thread's outermost API calls as disjoint intervals labelled with their cause code."""
    return _api_intervals(api)[0]


def _api_intervals(api: pl.DataFrame) -> tuple[Intervals, int]:
    """:func:`api_intervals` and the number of graph launch calls."""
    if api.is_empty():
        return {}, 0
    codes, graphs = _classify(api)
    intervals = thread_intervals(
        _np(api.get_column("start")),
        _np(api.get_column("end")),
        _np(api.get_column("pid")),
        _np(api.get_column("thread")),
        codes,  # one byte a call
    )
    return intervals, graphs


def intervals_frame(intervals: Intervals, label: str) -> pl.DataFrame:
    """:data:`Intervals` as a frame: ``pid``, ``thread``, ``start``, ``end``, ``label``, by (pid, thread, start)."""
    parts = [
        pl.DataFrame(
            {
                "pid": np.full(len(s), p),
                "thread": np.full(len(s), t),
                "start": s,
                "end": e,
                label: lab.astype(np.int64),
            }
        )
        for (p, t), (s, e, lab) in sorted(intervals.items())
    ]
    if not parts:
        return pl.DataFrame(
            schema={"pid": pl.Int64, "thread": pl.Int64, "start": pl.Int64, "end": pl.Int64, label: pl.Int64}
        )
    return pl.concat(parts)


def host_states(api: pl.DataFrame) -> pl.DataFrame:
    """Each host thread's outermost API calls as disjoint intervals: ``pid``, ``thread``, ``start``, ``end``,
    ``cause`` (code: 1 launch, 2 sync, 3 other_api), sorted by (pid, thread, start)."""
    return intervals_frame(api_intervals(api), "cause")


# ------------------------------------------------------------------------------------------- next ops


class LaunchingCalls:
    """The launching call of each op (a row of a calls frame, or none), as numpy arrays: the matching of
    :func:`tracekit.analyzers.iterations._match_calls` (the outermost API call with the op's (pid,
    correlation): earliest start, then longest), shared with the iteration analysis rather than done twice.

    ``op_call``: per op (in the ops' order) the call's row, -1 for none; ``calls``: :data:`CALL_COLUMNS`."""

    def __init__(self, op_call: pl.Series, calls: pl.DataFrame) -> None:
        self.op_call = _np(op_call, -1)
        self.cols = {
            name: _np(calls.get_column(name)) if name in calls.columns else np.full(calls.height, _NULL)
            for name in CALL_COLUMNS
        }
        self.size = calls.height

    def lookup(self, ops: np.ndarray) -> dict[str, np.ndarray]:
        """``found`` (bool) and :data:`CALL_COLUMNS` (``_NULL`` where not found or unknown) of the ops at
        rows ``ops``."""
        row = self.op_call[ops] if self.size else np.full(len(ops), -1)
        found = row >= 0
        out = {"found": found, "row": row}
        if found.all():
            out.update({name: col[row] for name, col in self.cols.items()})
            return out
        at = np.where(found, row, 0)
        for name, col in self.cols.items():
            out[name] = np.where(found, col[at], _NULL) if self.size else np.full(len(ops), _NULL)
        return out


class DeviceTimeline:
    """All of a trace's device ops (every iteration's and none's) as the causes need them: the union of their
    busy intervals with running sums (how much of [a, b) some op was running: :meth:`busy_between`), and
    the latest end of the ops that started before a time (:meth:`reach_before`). ``starts``/``ends``: the
    ops' times (any order; nulls dropped). Built on first use. ``quiet``: the caller knows no gap overlaps
    another op (every op in the iteration of its window, windows in order): :meth:`busy_between` is 0
    without a search. ``devices``: the ops' devices, row for row (None: unknown); on two or more devices
    the queries take the device they ask about (``device``): one GPU's work neither queues an op of another
    nor keeps it from being idle (two ranks of one nsys report: rank 0's 1.5 ms launch lag on an idle GPU
    had read "queued" behind rank 1's kernel on the other GPU, and its launch-lag doubt was gone)."""

    def __init__(
        self, starts: np.ndarray, ends: np.ndarray, quiet: bool = False, devices: np.ndarray | None = None
    ) -> None:
        self._raw: tuple[np.ndarray, np.ndarray] | None = (starts, ends)
        self.quiet = quiet
        self._by_device: dict[int, DeviceTimeline] = {}
        if devices is not None and len(devices):
            known = devices[devices != _NULL]
            if len(known) and known.min() != known.max():
                for device in np.unique(known):
                    mine = devices == device
                    self._by_device[int(device)] = DeviceTimeline(starts[mine], ends[mine])

    def _build(self) -> None:
        if self._raw is None:
            return
        starts, ends = self._raw
        self._raw = None
        keep = (starts != _NULL) & (ends != _NULL)
        if not keep.all():
            starts, ends = starts[keep], ends[keep]
        if len(starts) > 1 and not np.all(starts[1:] >= starts[:-1]):
            order = np.argsort(starts, kind="stable")
            starts, ends = starts[order], ends[order]
        self.starts = starts
        self.reach = np.maximum.accumulate(ends) if len(ends) else ends
        # union segments: a new one where an op starts after every earlier op ended
        new = np.ones(len(starts), dtype=bool)
        if len(starts) > 1:
            new[1:] = starts[1:] > self.reach[:-1]
        first = np.flatnonzero(new)
        self.seg_start = starts[first]
        self.seg_end = self.reach[np.r_[first[1:] - 1, len(starts) - 1]] if len(first) else first
        self.cum = np.zeros(len(first) + 1, dtype=np.int64)
        np.cumsum(self.seg_end - self.seg_start, out=self.cum[1:])

    @classmethod
    def of(cls, ops: pl.DataFrame, quiet: bool = False) -> DeviceTimeline:
        """The timeline of ``ops`` (``start``, ``end`` and, when there, ``device``: a trace's ops frame,
        sorted by start as :class:`~tracekit.model.Trace` keeps it)."""
        devices = _np(ops.get_column("device")) if "device" in ops.columns else None
        return cls(_np(ops.get_column("start")), _np(ops.get_column("end")), quiet, devices)

    def _per_device(self, method: str, device: np.ndarray | None, *columns: np.ndarray) -> np.ndarray | None:
        """``method`` asked of each row's own device's timeline (None: one device, or ``device`` unknown:
        the whole timeline answers). Rows of a device without ops, or of no known device, get the whole
        timeline's answer."""
        if not self._by_device or device is None:
            return None
        out = getattr(self, "_whole_" + method)(*columns)
        for key, timeline in self._by_device.items():
            rows = np.flatnonzero(device == key)
            if len(rows):
                out[rows] = getattr(timeline, "_whole_" + method)(*(c[rows] for c in columns))
        return out

    def _busy_before(self, t: np.ndarray) -> np.ndarray:
        j = _search(self.seg_start, t, side="right")
        last = np.maximum(j - 1, 0)
        ahead = np.where(j > 0, np.maximum(self.seg_end[last] - t, 0), 0) if len(self.seg_start) else 0
        return self.cum[j] - ahead

    def busy_between(self, a: np.ndarray, b: np.ndarray, device: np.ndarray | None = None) -> np.ndarray:
        """Per row: ns of [a, b) during which some op (of the row's ``device``, when given) was running (0
        where b <= a)."""
        if self.quiet:
            return np.zeros(len(a), dtype=np.int64)
        per_device = self._per_device("busy_between", device, a, b)
        return per_device if per_device is not None else self._whole_busy_between(a, b)

    def _whole_busy_between(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        self._build()
        if len(self.seg_start) == 0:
            return np.zeros(len(a), dtype=np.int64)
        return np.maximum(self._busy_before(b) - self._busy_before(a), 0)

    def reach_before(self, t: np.ndarray, device: np.ndarray | None = None) -> np.ndarray:
        """Per time: the latest end of the ops (of the row's ``device``, when given) that started before it
        (``_NULL``: none did)."""
        per_device = self._per_device("reach_before", device, t)
        return per_device if per_device is not None else self._whole_reach_before(t)

    def _whole_reach_before(self, t: np.ndarray) -> np.ndarray:
        self._build()
        j = _search(self.starts, t, side="left")
        return (
            np.where(j > 0, self.reach[np.maximum(j - 1, 0)], _NULL)
            if len(self.starts)
            else np.full(len(t), _NULL)
        )


def stream_waited(calls: pl.DataFrame, launching: np.ndarray, api: pl.DataFrame) -> np.ndarray:
    """Per row of ``calls`` (:data:`CALL_COLUMNS`): whether its thread issued a stream-wait call
    (:data:`STREAM_WAIT_NAMES`) after the thread's previous op-launching call and before this one.
    ``launching``: per call row, whether it launched an op (only those count as "previous")."""
    out = np.zeros(calls.height, dtype=bool)
    if api.is_empty() or not calls.height:
        return out
    waits = calls_named(api, STREAM_WAIT_NAMES)
    if waits.is_empty():
        return out
    start, pid, thread = (_np(calls.get_column(c)) for c in ("call_start", "call_pid", "call_thread"))
    w_start, w_pid, w_thread = (_np(waits.get_column(c)) for c in ("start", "pid", "thread"))
    for p, t in {(int(a), int(b)) for a, b in zip(w_pid, w_thread, strict=True)}:
        mine = np.flatnonzero((pid == p) & (thread == t) & launching)
        if not len(mine):
            continue
        order = mine[np.argsort(start[mine], kind="stable")]
        s = start[order]
        w = np.sort(w_start[(w_pid == p) & (w_thread == t)])
        previous = np.r_[_NULL, s[:-1]]
        between = np.searchsorted(w, s, side="left") - np.searchsorted(w, previous, side="right")
        out[order] = between > 0
    return out


#: Copy calls (version and per-thread suffixes stripped): those without ``Async`` in the name are synchronous
#: (the host waits for the copy, except device-to-device: CUDA's "API synchronization behavior")
COPY_CALL = r"^(cuda|cu|hip)Memcpy"
#: :func:`copy_kinds` codes: another op, a device-to-device (or peer-to-peer) copy, a copy whose asynchronous
#: call may wait for it (pageable host memory, or host to host)
_COPY_OTHER, _COPY_DTOD, _COPY_TO_PAGEABLE = 0, 1, 2


def copy_kinds(ops: pl.DataFrame) -> pl.Series:
    """Per op (``kind``, ``name``: a trace's ops), ``copy_kind`` (Int8): 1 a device-to-device copy (a name
    with ``DtoD``: Kineto's "Memcpy DtoD (Device -> Device)", nsys' "[CUDA memcpy DtoD]"; or ``PtoP``, a copy
    between two GPUs, "[CUDA memcpy PtoP]": ``cudaMemcpyPeer`` is asynchronous with respect to the host),
    2 a copy an asynchronous call may wait for by CUDA's "API synchronization behavior": between device and
    pageable host memory, either way (``DtoH`` or ``HtoD``, and ``Pageable``: Kineto's "Memcpy DtoH (Device
    -> Pageable)", "Memcpy HtoD (Pageable -> Device)"; the nsys reader names such copies so from ``srcKind``
    / ``dstKind``, "[CUDA memcpy DtoH (Device -> Pageable)]"), or host to host (``HtoH``, fully synchronous),
    else 0. Only the copies' names are read (a filter, then a scatter)."""
    zero = pl.Series("copy_kind", np.zeros(ops.height, dtype=np.int8))
    if ops.is_empty() or not {"kind", "name"} <= set(ops.columns):
        return zero
    copies = (ops.get_column("kind") == "memcpy").fill_null(False)
    if not copies.any():
        return zero
    names = ops.get_column("name").filter(copies)
    code = (
        pl.select(
            pl.when(names.str.contains("DtoD|PtoP"))
            .then(pl.lit(_COPY_DTOD, pl.Int8))
            .when(
                names.str.contains("HtoH", literal=True)
                | (names.str.contains("DtoH|HtoD") & names.str.contains("Pageable", literal=True))
            )
            .then(pl.lit(_COPY_TO_PAGEABLE, pl.Int8))
            .otherwise(pl.lit(_COPY_OTHER, pl.Int8))
        )
        .to_series()
        .fill_null(_COPY_OTHER)
    )
    return zero.scatter(copies.arg_true(), code)


def _copy_calls(
    api: pl.DataFrame, pid: np.ndarray, thread: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per call given by (``pid``, ``thread``, ``start``, ``end``): (whether it is a synchronous copy call,
    whether an asynchronous one) by the names of the API rows with those values (:data:`COPY_CALL`)."""
    n = len(pid)
    sync_copy, async_copy = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    if api.is_empty() or not {"pid", "thread", "start", "end", "name"} <= set(api.columns):
        return sync_copy, async_copy
    keys = ["pid", "thread", "start", "end"]
    wanted = pl.DataFrame({"pid": pid, "thread": thread, "start": start, "end": end, "k": np.arange(n)})
    rows = (
        api.select(*(pl.col(c).cast(pl.Int64, strict=False) for c in keys), "name")
        .filter(pl.col("start").is_in(wanted.get_column("start").implode()))
        .join(wanted, on=keys, how="inner")
        .with_columns(base=pl.col("name").str.replace(API_NAME_SUFFIX, ""))
        .filter(pl.col("base").str.contains(COPY_CALL))
        .with_columns(asynchronous=pl.col("base").str.contains("Async", literal=True))
    )
    k, asynchronous = _np(rows.get_column("k")), rows.get_column("asynchronous").to_numpy()
    sync_copy[k[~asynchronous]] = True
    async_copy[k[asynchronous]] = True
    return sync_copy, async_copy


def blocking_waits(
    intervals: Intervals,
    op_start: np.ndarray,
    op_end: np.ndarray,
    calls: LaunchingCalls,
    timeline: DeviceTimeline | None,
    api: pl.DataFrame,
    op_copy: np.ndarray | None = None,
    op_device: np.ndarray | None = None,
) -> Intervals:
    """``intervals`` with the waits inside blocking copy calls labelled ``sync`` (a new dict; the threads'
    arrays it changes are copies). A blocking copy call is an outermost ``other_api`` call that returned
    only after every op it launched had ended (``op_start``, ``op_end``, ``op_copy``: the ops, row for row
    with ``calls.op_call``; ``op_copy``: :func:`copy_kinds`, None: unknown) and that waits by its kind:
    a synchronous copy (``cudaMemcpy``, ``cuMemcpyDtoH``, ``hipMemcpyWithStream``, ...: :data:`COPY_CALL`
    without ``Async``) other than device-to-device, or an asynchronous copy between device and pageable host
    memory, either way, or host to host (``cudaMemcpyAsync`` of a "Memcpy DtoH (Device -> Pageable)", which
    returns once the copy is done; of a "Memcpy HtoD (Pageable -> Device)", which syncs the stream first and
    stages the data; nsys' "[CUDA memcpy HtoD (Pageable -> Device)]": :func:`copy_kinds`).
    An asynchronous call that merely ran longer than its op (a ``cudaMemsetAsync`` of 11 µs whose 0.7 µs
    memset ended first, as in the H200 compile traces) waited for nothing.

    Its wait is from its first op's start on (the idle time after the copy, until the host wakes and the
    call returns) and, when the device ran work inside the call before that op (``timeline``: the copy
    waited for the work queued before it), from the end of that work (the device idle until the copy is
    issued on the drained stream): ``sync``, as a synchronization call's wait is. The rest of the call
    (before the device ran anything inside it) is the call's own host work (staging, submission):
    ``other_api`` still. One pass over the calls, a join of the few candidates' names, a sort per host
    thread holding such a call; none when no call blocked."""
    if not calls.size or not len(op_end):
        return intervals
    row = calls.op_call
    linked = row >= 0
    if not linked.any():
        return intervals
    call_start, call_end = calls.cols["call_start"], calls.cols["call_end"]
    # per op: did its call return after it ended (a gather and a comparison; nearly always no)
    ended = np.zeros(len(op_end), dtype=bool)
    ended[linked] = (call_end[row[linked]] >= op_end[linked]) & (call_start[row[linked]] != _NULL)
    if not ended.any():
        return intervals
    outlived = np.zeros(calls.size, dtype=bool)
    outlived[row[ended]] = True
    outlived[row[linked & ~ended]] = False  # some op of the call ended after it returned
    if not outlived.any():
        return intervals
    mine_ops = linked & outlived[np.where(linked, row, 0)]
    first = np.full(calls.size, _FAR)
    np.minimum.at(first, row[mine_ops], op_start[mine_ops])
    device = None
    if op_device is not None:  # a call's ops' device (a copy call launches one op)
        device = np.full(calls.size, _NULL)
        device[row[mine_ops]] = op_device[mine_ops]
    rows = np.flatnonzero(outlived)
    pid, thread = calls.cols["call_pid"][rows], calls.cols["call_thread"][rows]
    sync_copy, async_copy = _copy_calls(api, pid, thread, call_start[rows], call_end[rows])
    dtod = np.zeros(calls.size, dtype=bool)
    pageable = np.zeros(calls.size, dtype=bool)
    if op_copy is not None:
        dtod[row[linked & (op_copy == _COPY_DTOD)]] = True
        pageable[row[linked & (op_copy == _COPY_TO_PAGEABLE)]] = True
    waits = (sync_copy & ~dtod[rows]) | (async_copy & pageable[rows])
    if not waits.any():
        return intervals
    rows, pid, thread = rows[waits], pid[waits], thread[waits]
    cs, ce, os_ = call_start[rows], call_end[rows], first[rows]
    wait = os_.copy()
    if timeline is not None:
        # the latest end of the work of the op's device that started before the op
        reach = timeline.reach_before(os_, None if device is None else device[rows])
        ran = (reach != _NULL) & (reach > cs)
        wait = np.where(ran, np.minimum(reach, os_), os_)
    wait = np.maximum(wait, cs)
    out = dict(intervals)
    for key, mine in _thread_groups(pid, thread):
        if _NULL in key or key not in out:
            continue
        idx = np.arange(len(rows)) if mine is None else mine
        s, e, lab = out[key]
        # the call's own interval: the outermost one ending at its end, starting inside it, labelled other
        j = np.minimum(np.searchsorted(e, ce[idx], side="left"), len(e) - 1)
        hit = (e[j] == ce[idx]) & (s[j] >= cs[idx]) & (lab[j] == _OTHER) & (wait[idx] < e[j])
        if not hit.any():
            continue
        j, w = j[hit], np.maximum(wait[idx][hit], s[j[hit]])
        lab = lab.copy()
        whole = w <= s[j]
        lab[j[whole]] = _SYNC
        part, wp = j[~whole], w[~whole]
        if len(part):  # [s, w) stays other_api, [w, e) is the wait
            tail_end = e[part]
            e = e.copy()
            e[part] = wp
            s = np.concatenate([s, wp])
            e = np.concatenate([e, tail_end])
            lab = np.concatenate([lab, np.full(len(part), _SYNC, dtype=lab.dtype)])
            order = np.argsort(s, kind="stable")
            s, e, lab = s[order], e[order], lab[order]
        out[key] = (s, e, lab)
    return out


class _Context:
    """What attributing a chunk of gaps needs, prepared once: the ops sorted by start, the launching calls,
    the iteration ranges (with their main thread), the host threads' API intervals."""

    def __init__(
        self,
        ops: pl.DataFrame,
        api: pl.DataFrame,
        ranges: pl.DataFrame,
        intervals: Intervals,
        calls: pl.DataFrame | None = None,
        timeline: DeviceTimeline | None = None,
    ) -> None:
        from tracekit.analyzers.iterations import _iterations_of

        if ops.select(pl.any_horizontal(pl.col("start", "end").null_count() > 0)).item():
            ops = ops.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
        if calls is None:  # assign and match here (the iteration analysis passes its own)
            iteration, call, calls, missing = _iterations_of(ops, api, ranges)
            ops = ops.with_columns(iteration, call, missing.alias("no_launch"))
        if "copy_kind" not in ops.columns and {"kind", "name"} <= set(ops.columns):
            ops = ops.with_columns(copy_kinds(ops))
        ops = sort_frame(ops, ["start"], [False])
        self.op = {c: _np(ops.get_column(c)) for c in ("start", "end")}
        # the ops' devices (None: one device, or not known): the device timeline is asked about the op's own
        self.op_device = (
            _np(ops.get_column("device"))
            if "device" in ops.columns and ops.get_column("device").n_unique() > 1
            else None
        )
        self.op_iteration = _np(ops.get_column("iteration"))
        # the ops' processes, where the caller gives them: an op launched before the capture (no call to
        # name its process) is then no candidate for another process's gap either (_next_op_calls)
        self.op_pid = _np(ops.get_column("pid")) if "pid" in ops.columns else None
        no_launch = ops.get_column("no_launch") if "no_launch" in ops.columns else None
        self.op_no_launch = (
            no_launch.fill_null(False).to_numpy() if no_launch is not None and no_launch.any() else None
        )
        call = ops.get_column("call")
        self.calls = LaunchingCalls(call, calls)
        launching = np.zeros(calls.height, dtype=bool)
        used = _np(call.drop_nulls())
        launching[used] = True
        self.waited = stream_waited(calls, launching, api)
        self.timeline = timeline
        op_copy = _np(ops.get_column("copy_kind"), 0) if "copy_kind" in ops.columns else None
        intervals = blocking_waits(
            intervals, self.op["start"], self.op["end"], self.calls, timeline, api, op_copy, self.op_device
        )
        ranges = main_threads(sort_frame(ranges, ["range_start"], [False]), api)
        numbers = _np(ranges.get_column("iteration"))
        by_number = np.argsort(numbers, kind="stable")
        self.sorted_numbers = numbers[by_number]
        self.main_pid = _np(ranges.get_column("pid"))[by_number]
        self.main_thread = _np(ranges.get_column("thread"))[by_number]
        self.intervals = intervals
        self._prepared: dict[tuple[int, int], _Prepared | None] = {}

    def prepared(self, key: tuple[int, int]) -> _Prepared | None:
        """The API intervals of host thread ``key`` ready for :func:`_api_time` (None: it made no call)."""
        if key not in self._prepared:
            mine = None if _NULL in key else self.intervals.get(key)
            self._prepared[key] = None if mine is None or not len(mine[0]) else _Prepared.of(mine)
        return self._prepared[key]

    def main(self, iteration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(pid, thread) of each iteration's range."""
        if len(self.sorted_numbers) == 0:
            return np.full(len(iteration), _NULL), np.full(len(iteration), _NULL)
        last = len(self.sorted_numbers) - 1
        if self.sorted_numbers[0] == 0 and self.sorted_numbers[-1] == last:  # 0..n-1: the row is the number
            pos = np.clip(iteration, 0, last)
        else:
            pos = np.clip(np.searchsorted(self.sorted_numbers, iteration), 0, last)
        return self.main_pid[pos], self.main_thread[pos]


def _candidates(ends: np.ndarray, eligible: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gap rows, op rows): every op (``starts`` sorted) starting exactly at the end of an eligible gap."""
    n_ops = len(starts)
    if n_ops == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    lo = _search(starts, ends, side="left")
    at = np.minimum(lo, n_ops - 1)
    g = np.flatnonzero(eligible & (lo < n_ops) & (starts[at] == ends))
    o = lo[g]
    nxt = np.minimum(o + 1, n_ops - 1)
    if not np.any((o + 1 < n_ops) & (starts[nxt] == ends[g])):
        return g, o
    count = _search(starts, ends[g], side="right") - o
    offsets = np.cumsum(count) - count
    g = np.repeat(g, count)
    o = np.repeat(o, count) + (np.arange(len(g)) - np.repeat(offsets, count))
    return g, o


#: Stand-in call end of an op launched before the capture began (earlier than any time in the trace).
_BEFORE = _NULL + 1


def _next_op_calls(
    ctx: _Context, iteration: np.ndarray, trailing: np.ndarray, end: np.ndarray, eligible: np.ndarray
) -> dict[str, np.ndarray]:
    """Per gap: its next op's launch (``found``: the op has a launching call in the trace, ``call_end``,
    ``call_pid``, ``call_thread``; ``no_launch``: the op was launched before the capture began; ``waited``:
    its launching thread issued a stream wait just before it).

    The next op of an inner or leading gap is an op with a positive duration starting at the gap's end, of
    any iteration or none (launched in the gap's own process, when both are known): of several, the one
    launched first (ops launched before the capture first, ops
    without a call last), so the choice, and the gap's cause, do not depend on which ops the windows hold.
    A gap that runs to its window's end -- a trailing gap (``trailing``), or the one gap of an iteration
    whose ops all last 0 ns (labelled leading: no positive op starts at its end) -- has as next op an op of
    0 ns of its own iteration (``iteration``) starting at its end: only such an op can start at a window's
    end inside it (the latest op of an unsynchronized iteration, a sub-µs kernel on a whole-µs clock); not
    another iteration's, request's or rank's op that happens to start there. Empty gaps have none."""
    g, o = _candidates(end, eligible, ctx.op["start"])
    op_start, op_end = ctx.op["start"][o], ctx.op["end"][o]
    calls = ctx.calls.lookup(o)
    calls["no_launch"] = ctx.op_no_launch[o] if ctx.op_no_launch is not None else np.zeros(len(o), dtype=bool)
    calls["waited"] = (
        np.where(calls["row"] >= 0, ctx.waited[np.maximum(calls["row"], 0)], False)
        if len(ctx.waited)
        else np.zeros(len(o), dtype=bool)
    )
    calls["device"] = ctx.op_device[o] if ctx.op_device is not None else np.full(len(o), _NULL)
    # an op another process launched is no candidate for a gap of a process's iteration: it starts there by
    # coincidence (two ranks in one report, ns apart from nothing), and its thread's state is not this
    # process's host (it had turned 38 us of dispatch into in_flight); ops without a known launch, and gaps of
    # windows without a process (synthetic), keep every candidate
    main_pid = ctx.main(iteration[g])[0]
    op_pid = (
        calls["call_pid"]
        if ctx.op_pid is None
        else np.where(calls["call_pid"] == _NULL, ctx.op_pid[o], calls["call_pid"])
    )
    own_process = (op_pid == _NULL) | (main_pid == _NULL) | (op_pid == main_pid)
    positive = (op_end > op_start) & own_process
    zero_own = (op_end == op_start) & (ctx.op_iteration[o] == iteration[g])
    has_positive = np.zeros(len(end), dtype=bool)
    has_positive[g[positive]] = True
    keep = np.where(trailing[g], zero_own, positive | (zero_own & ~has_positive[g]))
    if not keep.all():
        g = g[keep]
        calls = {name: col[keep] for name, col in calls.items()}
    if len(g) > 1 and np.any(g[1:] == g[:-1]):  # several next ops: the one launched first
        end_key = np.where(calls["found"], calls["call_end"], np.where(calls["no_launch"], _BEFORE, _FAR))
        order = np.lexsort((calls["call_thread"], calls["call_pid"], calls["call_start"], end_key, g))
        g = g[order]
        first = np.r_[True, g[1:] != g[:-1]]
        g = g[first]
        calls = {name: col[order][first] for name, col in calls.items()}
    out = {"found": np.zeros(len(end), dtype=bool)}
    out.update({name: np.full(len(end), _NULL) for name in ("call_end", "call_pid", "call_thread", "device")})
    out.update({name: np.zeros(len(end), dtype=bool) for name in ("no_launch", "waited")})
    for name in out:
        out[name][g] = calls[name]
    return out


# ------------------------------------------------------------------------------------------- per gap


#: A cause code whose calls are fewer than this fraction of a thread's intervals gets arrays of its own
#: (small, cache-resident searches); the others share the thread's arrays (no copy).
_SPARSE = 0.25


@dataclass
class _Prepared:
    """One thread's API intervals (disjoint, sorted) ready for :func:`_api_time`. Per cause code present:
    (starts, ends, running sums of the lengths with a leading 0, labels or None). A frequent code shares the
    thread's starts and ends (its running sum counts only its own intervals, ``labels`` tells them apart); a
    sparse one gets its own few intervals (labels None)."""

    by_code: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]]

    @classmethod
    def of(cls, intervals: tuple[np.ndarray, np.ndarray, np.ndarray]) -> _Prepared:
        starts, ends, codes = intervals
        by_code = {}
        counts = np.bincount(codes, minlength=_OTHER + 1)
        for code in (_LAUNCH, _SYNC, _OTHER):
            n = int(counts[code])
            if n == 0:
                continue
            cum = np.zeros((n if n < _SPARSE * len(codes) else len(codes)) + 1, dtype=np.int64)
            lengths = cum[1:]  # the lengths, then their running sum, in place (no temporary of their size)
            if n == len(codes):  # one code only: every interval is its own
                np.subtract(ends, starts, out=lengths)
                by_code[code] = (starts, ends, cum, None)
            elif n < _SPARSE * len(codes):
                mine = np.flatnonzero(codes == code)
                s, e = starts[mine], ends[mine]
                np.subtract(e, s, out=lengths)
                by_code[code] = (s, e, cum, None)
            else:
                np.subtract(ends, starts, out=lengths)
                lengths[codes != code] = 0
                by_code[code] = (starts, ends, cum, codes)
            np.cumsum(lengths, out=lengths)
        return cls(by_code)


def _api_time(prepared: _Prepared, s: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Time of [s, c) (per row) inside one thread's intervals of code 1, 2, 3: array (3, len(s)). F(t), the
    time of a code's intervals before t, is the running sum over the intervals starting at or before t less
    the part of the last of them still to come after t (intervals are disjoint: only that one can reach past
    t); the answer is F(c) - F(s). One binary search per bound and distinct array."""
    t = np.stack([s, c], axis=1).reshape(-1)  # s0, c0, s1, c1, ...: in time order when the gaps are
    out = np.zeros((3, len(s)), dtype=np.int64)
    found: dict[int, np.ndarray] = {}
    for code, (starts, ends, cum, labels) in prepared.by_code.items():
        key = id(starts)
        if key not in found:
            found[key] = _search(starts, t, side="right")
        j = found[key]
        last = np.maximum(j - 1, 0)
        ahead = np.maximum(ends[last] - t, 0)
        mine = j > 0 if labels is None else (j > 0) & (labels[last] == code)
        before = cum[j] - np.where(mine, ahead, 0)
        out[code - 1] = before[1::2] - before[0::2]
    return out


def _thread_groups(pid: np.ndarray, thread: np.ndarray) -> list[tuple[tuple[int, int], np.ndarray | None]]:
    """((pid, thread), row indices or None for all rows) per distinct host thread of the gaps."""
    if len(pid) == 0:
        return []
    if pid.min() == pid.max() and thread.min() == thread.max():
        return [((int(pid[0]), int(thread[0])), None)]
    pairs, inverse = np.unique(np.stack([pid, thread], axis=1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    return [((int(p), int(t)), np.flatnonzero(inverse == i)) for i, (p, t) in enumerate(pairs)]


def main_threads(ranges: pl.DataFrame, api: pl.DataFrame) -> pl.DataFrame:
    """``ranges`` with ``pid``: a range's own pid where it has one; where the column is missing or the value
    null, the (smallest) pid of the API calls on the range's thread (null when its thread made none)."""
    has_pid = "pid" in ranges.columns
    if has_pid and ranges.get_column("pid").null_count() == 0:
        return ranges
    pids = (
        api.filter(pl.col("thread").is_not_null())
        .group_by("thread")
        .agg(pl.col("pid").min().alias("_api_pid"))
    )
    joined = ranges.join(pids, on="thread", how="left", maintain_order="left")
    if not has_pid:
        return joined.rename({"_api_pid": "pid"})
    return joined.with_columns(pl.col("pid").fill_null(pl.col("_api_pid"))).drop("_api_pid")


def _chunk_causes(
    ctx: _Context,
    iteration: np.ndarray,
    s: np.ndarray,
    e: np.ndarray,
    eligible: np.ndarray,
    trailing: np.ndarray,
) -> dict[str, np.ndarray]:
    """The attribution of a chunk of gaps (numpy in, numpy out): ``pid``, ``thread`` (the deciding host
    thread), ``next_call_end_ns`` (``_NULL``: none; ``_BEFORE``: launched before the capture), ``waited`` and
    one ``*_ns`` array per cause and device-side cause."""
    nxt = _next_op_calls(ctx, iteration, trailing, e, eligible)
    main_pid, main_thread = ctx.main(iteration)
    own = nxt["found"] & (nxt["call_thread"] != _NULL) & (nxt["call_pid"] != _NULL)
    before = nxt["no_launch"]
    pid = np.where(own, nxt["call_pid"], np.where(before, _NULL, main_pid))
    thread = np.where(own, nxt["call_thread"], np.where(before, _NULL, main_thread))
    # launch order first: from the next op's launch on (its call returned), the time is device-side
    c = np.where(nxt["found"], np.clip(nxt["call_end"], s, e), np.where(before, s, e))
    api_ns = np.zeros((3, len(s)), dtype=np.int64)
    for key, rows in _thread_groups(pid, thread):
        mine = ctx.prepared(key)
        if mine is None:
            continue
        if rows is None:
            api_ns = _api_time(mine, s, c)
        else:
            api_ns[:, rows] = _api_time(mine, s[rows], c[rows])
    device = e - c
    none = np.zeros(len(s), dtype=np.int64)  # (calloc: free until written)
    quiet = ctx.timeline is None or ctx.timeline.quiet
    # other work of the next op's device (another GPU's work queues nothing on this one)
    queued = none if quiet else ctx.timeline.busy_between(c, e, nxt["device"])  # type: ignore[union-attr]
    idle = device if quiet else device - queued
    waited = np.where(nxt["waited"], idle, 0) if nxt["waited"].any() else none
    rest = idle - waited if nxt["waited"].any() else idle
    long = rest > LAUNCH_LAG_NS
    lag = np.where(long, rest, 0) if long.any() else none
    return {
        "pid": pid,
        "thread": thread,
        "next_call_end_ns": np.where(nxt["found"], nxt["call_end"], np.where(before, _BEFORE, _NULL)),
        "dispatch_ns": (c - s) - api_ns.sum(axis=0),
        "launch_ns": api_ns[0],
        "sync_ns": api_ns[1],
        "other_api_ns": api_ns[2],
        "in_flight_ns": device,
        "launch_latency_ns": rest - lag,
        "queued_ns": queued,
        "stream_wait_ns": waited,
        "launch_lag_ns": lag,
    }


def _gap_chunks(gaps: pl.DataFrame, ctx: _Context) -> Iterator[tuple[slice, dict[str, np.ndarray]]]:
    """(rows, :func:`_chunk_causes`) for consecutive chunks of ``gaps`` (bounded temporaries)."""
    iteration = _np(gaps.get_column("iteration"))
    s, e = _np(gaps.get_column("start_ns")), _np(gaps.get_column("end_ns"))
    # empty gaps run to the window's end with no op; a trailing gap can end at an op of 0 ns (_next_op_calls)
    position = gaps.get_column("position")
    eligible = (position != "empty").to_numpy()
    trailing = (position == "trailing").to_numpy()
    for lo in range(0, gaps.height, _CHUNK):
        rows = slice(lo, lo + _CHUNK)
        yield rows, _chunk_causes(ctx, iteration[rows], s[rows], e[rows], eligible[rows], trailing[rows])


def _nullable(values: np.ndarray, name: str) -> pl.Series:
    series = pl.Series(name, values)
    return series.set(series == _NULL, None) if np.any(values == _NULL) else series  # type: ignore[arg-type]


def attribute_gaps(
    gaps: pl.DataFrame,
    ops: pl.DataFrame,
    api: pl.DataFrame,
    ranges: pl.DataFrame,
    intervals: Intervals | None = None,
    timeline: DeviceTimeline | None = None,
) -> pl.DataFrame:
    """Split every gap into its causes (see module docstring).

    ``gaps``: ``iteration``, ``start_ns``, ``end_ns``, ``position`` (:func:`analyze_iterations`'s gaps);
    ``ops``: ``start``, ``end``, ``pid``, ``correlation`` (``trace.ops``: every op, assigned here as the
    analysis assigns them); ``api``: ``trace.api``; ``ranges``: the iteration ranges (``iteration``,
    ``range_start``, ``range_end``, ``thread``, ``pid``; see :func:`iteration_ranges`); ``intervals``:
    :func:`api_intervals` of ``api`` when already computed; ``timeline``: :class:`DeviceTimeline` of all
    the trace's ops (None: of ``ops``). Returns the gaps (same order) with :data:`GAP_COLUMNS`."""
    if timeline is None:
        timeline = DeviceTimeline.of(ops.sort("start"))
    ctx = _Context(
        ops, api, ranges, api_intervals(api) if intervals is None else intervals, timeline=timeline
    )
    return _gap_frame(gaps, ctx)


#: The per-gap columns :func:`attribute_gaps` adds: the gap's ``cause`` (:data:`GAP_CAUSE`), the deciding
#: thread's state at the gap's start (``host_state``, :data:`HOST_STATE`; null: no thread known), that
#: thread (``pid``, ``thread``), its next op's launch (``next_call_end_ns``; null: no launching call in the
#: trace; ``no_launch``: launched before the capture), and the ns of every cause and device-side cause.
GAP_COLUMNS: tuple[str, ...] = (
    "cause",
    "host_state",
    "pid",
    "thread",
    "next_call_end_ns",
    "no_launch",
    *CAUSE_NS,
    *DEVICE_NS,
)


def _host_state_at(ctx: _Context, t: np.ndarray, pid: np.ndarray, thread: np.ndarray) -> np.ndarray:
    """Per row: the state code (0 dispatch, 1 launch, 2 sync, 3 other_api; -1: no thread) of host thread
    (pid, thread) at time t."""
    out = np.where((pid == _NULL) | (thread == _NULL), -1, 0)
    for key, rows in _thread_groups(pid, thread):
        if _NULL in key or key not in ctx.intervals:
            continue
        starts, ends, codes = ctx.intervals[key]
        idx = np.arange(len(t)) if rows is None else rows
        j = np.searchsorted(starts, t[idx], side="right") - 1
        at = np.maximum(j, 0)
        running = (j >= 0) & (ends[at] > t[idx]) if len(starts) else np.zeros(len(idx), dtype=bool)
        out[idx] = np.where(running, codes[at] if len(starts) else 0, 0)
    return out


def _gap_frame(
    gaps: pl.DataFrame, ctx: _Context, parts: list[dict[str, np.ndarray]] | None = None
) -> pl.DataFrame:
    """:func:`attribute_gaps` with its context prepared (``parts``: the chunks' arrays, when already
    computed)."""
    if parts is None:
        parts = [arrays for _, arrays in _gap_chunks(gaps, ctx)]
    names = ("pid", "thread", "next_call_end_ns", *CAUSE_NS, *DEVICE_NS)
    columns = {n: np.concatenate([p[n] for p in parts]) if parts else np.zeros(0, np.int64) for n in names}
    before = columns["next_call_end_ns"] == _BEFORE
    columns["next_call_end_ns"] = np.where(before, _NULL, columns["next_call_end_ns"])
    s = _np(gaps.get_column("start_ns"))
    # the cause holding most of the gap: a gap whose next op was launched before it began is device-side
    # whole (launch order first), so its cause is a device-side one
    every = [columns[f"{c}_ns"] for c in CAUSES[:4]] + [columns[n] for n in DEVICE_NS]
    cause = np.stack(every).argmax(axis=0) if len(s) else np.zeros(0, np.int64)
    state = _host_state_at(ctx, s, columns["pid"], columns["thread"])
    labels = list(GAP_CAUSE.categories)
    return gaps.with_columns(
        pl.Series("cause", cause).replace_strict(list(range(len(labels))), labels, return_dtype=GAP_CAUSE),
        pl.Series("host_state", state).replace_strict(
            [-1, 0, 1, 2, 3], [None, *HOST_STATE.categories], return_dtype=HOST_STATE
        ),
        *(_nullable(columns[n], n) for n in ("pid", "thread", "next_call_end_ns")),
        pl.Series("no_launch", before),
        *(pl.Series(n, columns[n]) for n in (*CAUSE_NS, *DEVICE_NS)),
    )


# ------------------------------------------------------------------------------------------- per iteration

#: Per-iteration sums kept for :func:`project_cuda_graphs` and :func:`replay_parameters` (ns): the leading
#: and trailing gaps' lengths, the number of inner gaps and their summed length, and Σ over inner gaps of max(kept device-side wait, kernel_gap_ns), where the
#: kept wait is the gap's queued + stream_wait + launch_lag time (dependencies a graph keeps; its launch
#: latency a graph removes).
PROJECTION_PARTS: tuple[str, ...] = ("leading_ns", "trailing_ns", "inner_gaps", "inner_ns", "inner_floor_ns")


class _Summer:
    """Σ values per position ``at`` (0..size-1) as int64, for several value arrays over the same positions:
    where ``at`` is sorted (the usual gap order) the group boundaries are found once and each array is one
    segmented sum; else a weighted bincount per array (exact below 2**53)."""

    def __init__(self, at: np.ndarray, size: int) -> None:
        self.at, self.size = at, size
        self.first: np.ndarray | None = None
        if len(at) and np.all(at[1:] >= at[:-1]):
            self.first = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
            self.where = at[self.first]

    def __call__(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.int64)
        if not len(self.at):
            return out
        if self.first is not None:
            out[self.where] = np.add.reduceat(values, self.first)
            return out
        return np.rint(np.bincount(self.at, weights=values, minlength=self.size)).astype(np.int64)


def _iteration_sums(
    gaps: pl.DataFrame,
    ctx: _Context,
    index: np.ndarray,
    kernel_gap_ns: int,
    kept: list[dict[str, np.ndarray]] | None = None,
) -> pl.DataFrame:
    """Per iteration of ``index`` (sorted): ``idle_ns``, the causes, the device-side causes and
    :data:`PROJECTION_PARTS`, summed chunk by chunk without keeping per-gap columns (unless ``kept``, a list:
    each chunk's per-gap arrays are appended to it, for :func:`_gap_frame`)."""
    names = ("idle_ns", *CAUSE_NS, *DEVICE_NS, *PROJECTION_PARTS)
    acc = {n: np.zeros(len(index), dtype=np.int64) for n in names}
    iteration = _np(gaps.get_column("iteration"))
    position = gaps.get_column("position").to_physical().to_numpy()  # 0 leading, 1 inner, 2 trailing, 3 empty
    s, e = _np(gaps.get_column("start_ns")), _np(gaps.get_column("end_ns"))
    contiguous = len(index) > 0 and index[-1] - index[0] == len(index) - 1
    for rows, arrays in _gap_chunks(gaps, ctx):
        if kept is not None:
            kept.append(arrays)
        it, where = iteration[rows], position[rows]
        pos = it - index[0] if contiguous else np.searchsorted(index, it)
        # every gap of an analyzed iteration (always so when the index is contiguous and covers the chunk)
        covered = contiguous and len(it) and it.min() >= index[0] and it.max() <= index[-1]
        if not covered:
            ok = (pos >= 0) & (pos < len(index))
            ok &= index[np.clip(pos, 0, max(len(index) - 1, 0))] == it
        if not covered and not ok.all():
            pos, where, arrays = pos[ok], where[ok], {n: a[ok] for n, a in arrays.items()}
            duration = (e[rows] - s[rows])[ok]
        else:
            duration = e[rows] - s[rows]
        add = _Summer(pos, len(index))
        for n in (*CAUSE_NS, *DEVICE_NS):
            acc[n] += add(arrays[n])
        acc["idle_ns"] += add(duration)
        inner = where == 1
        waits = arrays["queued_ns"] + arrays["stream_wait_ns"] + arrays["launch_lag_ns"]
        # a graph's kernel gap replaces the gap, never lengthens it: a gap already shorter (queued kernels
        # the device ran closer than a replay's median gap) stays as it was
        floor = np.maximum(waits, np.minimum(duration, kernel_gap_ns))
        acc["inner_floor_ns"] += add(np.where(inner, floor, 0))
        acc["inner_gaps"] += add(inner.astype(np.int64))
        acc["inner_ns"] += add(np.where(inner, duration, 0))
        for name, code in (("leading_ns", 0), ("trailing_ns", 2)):  # at most one such gap an iteration
            rows_of = np.flatnonzero(where == code)
            np.add.at(acc[name], pos[rows_of], duration[rows_of])
    frame = pl.DataFrame({"index": index, **acc})
    return frame.with_columns(
        (pl.col("idle_ns") / 1e6).alias("idle_ms"),
        *((pl.col(ns) / 1e6).alias(ms) for ns, ms in zip(CAUSE_NS, CAUSE_MS, strict=True)),
    )


def summarize_attribution(frame: pl.DataFrame) -> dict[str, Any]:
    """Mean/p50/p90 (and p99, min, max) over iterations of idle and each cause (ms), each cause's share
    of the total idle time (fraction; None when there is none), and the total of each device-side cause over
    the iterations (``device_side_ms``, ms)."""
    summary: dict[str, Any] = summarize_columns(frame, ["idle_ms", *CAUSE_MS])
    total = int(frame.get_column("idle_ns").sum()) if frame.height else 0
    summary["share_of_idle"] = {
        c: (int(frame.get_column(f"{c}_ns").sum()) / total if total else None) for c in CAUSES
    }
    summary["device_side_ms"] = {
        c: (int(frame.get_column(f"{c}_ns").sum()) / 1e6 if f"{c}_ns" in frame.columns else 0.0)
        for c in DEVICE_CAUSES
    }
    return summary


# ------------------------------------------------------------------------------------------- pieces


def _split(
    a: np.ndarray, b: np.ndarray, starts: np.ndarray, ends: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Cut each [a_i, b_i) at disjoint sorted intervals [starts, ends) (labels >= 0): (row i, start, end,
    label) of the non-empty parts, label -1 outside every interval, sorted by (row, start)."""
    k_lo = np.searchsorted(ends, a, side="right")
    k_hi = np.searchsorted(starts, b, side="left")
    n = np.maximum(k_hi - k_lo, 0)
    total = int(n.sum())
    offsets = np.cumsum(n) - n
    row = np.repeat(np.arange(len(a)), n)
    k = k_lo[row] + (np.arange(total) - offsets[row])
    cs = np.maximum(starts[k], a[row])
    ce = np.minimum(ends[k], b[row])
    first = np.ones(total, dtype=bool)
    first[1:] = row[1:] != row[:-1]
    before = np.empty(total, dtype=np.int64)
    before[1:] = ce[:-1]
    before[first] = a[row[first]]
    tail = a.copy()
    has = n > 0
    tail[has] = ce[offsets[has] + n[has] - 1]
    rows = np.concatenate([row, row, np.arange(len(a))])
    lo = np.concatenate([cs, before, tail])
    hi = np.concatenate([ce, cs, b])
    lab = np.concatenate([labels[k], np.full(total, -1), np.full(len(a), -1)])
    keep = hi > lo
    rows, lo, hi, lab = rows[keep], lo[keep], hi[keep], lab[keep]
    order = np.lexsort((lo, rows))
    return rows[order], lo[order], hi[order], lab[order]


def cpu_operator_intervals(cpu_ops: pl.DataFrame) -> tuple[Intervals, pl.Series]:
    """Outermost CPU operators per thread as disjoint intervals labelled with an index into the returned
    names (rows sorted first, so that the labels do not depend on row order)."""
    ops = cpu_ops.select("start", "end", "pid", "thread", "name").sort(
        ["pid", "thread", "start", "end", "name"],
        descending=[False, False, False, True, False],
        nulls_last=True,
    )
    intervals = thread_intervals(
        *(_np(ops.get_column(c)) for c in ("start", "end", "pid", "thread")), np.arange(ops.height)
    )
    return intervals, ops.get_column("name")


_NO_INTERVALS = (np.zeros(0, dtype=np.int64),) * 3


def _thread_pieces(
    s: np.ndarray,
    c: np.ndarray,
    mine: tuple[np.ndarray, np.ndarray, np.ndarray],
    mine_ops: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Host pieces of gaps [s, c) on one thread: (row, start, end, cause code 0..3, operator index or -1)."""
    row, lo, hi, lab = _split(s, c, *mine)
    cause = np.where(lab < 0, 0, lab)
    op = np.full(len(row), -1)
    if mine_ops is None or len(mine_ops[0]) == 0:
        return row, lo, hi, cause, op
    dispatch = np.flatnonzero(cause == 0)
    sub, s2, e2, lab2 = _split(lo[dispatch], hi[dispatch], *mine_ops)
    other = np.flatnonzero(cause != 0)
    parts = (
        np.concatenate([row[other], row[dispatch][sub]]),
        np.concatenate([lo[other], s2]),
        np.concatenate([hi[other], e2]),
        np.concatenate([cause[other], np.zeros(len(sub), dtype=cause.dtype)]),
        np.concatenate([op[other], lab2]),
    )
    order = np.lexsort((parts[1], parts[0]))
    return tuple(p[order] for p in parts)  # type: ignore[return-value]


def idle_pieces(
    gap_causes: pl.DataFrame,
    api: pl.DataFrame,
    cpu_ops: pl.DataFrame | None = None,
    intervals: Intervals | None = None,
) -> pl.DataFrame:
    """The consecutive pieces of every gap: ``iteration``, ``start_ns``, ``end_ns``, ``cause`` (Enum of
    :data:`CAUSES`), ``pid``, ``thread`` (the host thread whose state decided), ``cpu_op`` (the top-level CPU
    operator running on that thread during a dispatch piece; null elsewhere or without ``cpu_ops``).

    ``gap_causes``: :func:`attribute_gaps`'s output; ``api``: the API calls (or ``intervals``, their
    :func:`api_intervals`); ``cpu_ops``: CPU operators (``start``, ``end``, ``pid``, ``thread``, ``name``;
    the trace's ``cpu_ops`` frame). Pieces come in gap order, then time order; per gap they tile
    [start_ns, end_ns) exactly."""
    intervals = api_intervals(api) if intervals is None else intervals
    s, e = _np(gap_causes.get_column("start_ns")), _np(gap_causes.get_column("end_ns"))
    c = np.clip(_np(gap_causes.get_column("next_call_end_ns"), _FAR), s, e)
    if "no_launch" in gap_causes.columns:  # launched before the capture: device-side whole
        c = np.where(gap_causes.get_column("no_launch").to_numpy(), s, c)
    op_intervals, names = ({}, None) if cpu_ops is None else cpu_operator_intervals(cpu_ops)
    parts: list[tuple[np.ndarray, ...]] = []
    pid, thread = _np(gap_causes.get_column("pid")), _np(gap_causes.get_column("thread"))
    for key, rows in _thread_groups(pid, thread):
        idx = np.arange(len(s)) if rows is None else rows
        mine = _NO_INTERVALS if _NULL in key else intervals.get(key, _NO_INTERVALS)
        row, lo, hi, cause, op = _thread_pieces(s[idx], c[idx], mine, op_intervals.get(key))
        parts.append((idx[row], lo, hi, cause, op))
    flight = np.flatnonzero(e > c)
    parts.append((flight, c[flight], e[flight], np.full(len(flight), 4), np.full(len(flight), -1)))
    g, lo, hi, cause, op = (np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(5))
    order = np.lexsort((lo, g))
    g, lo, hi, cause, op = g[order], lo[order], hi[order], cause[order], op[order]
    gi = pl.Series(g)
    frame = pl.DataFrame(
        {
            "iteration": gap_causes.get_column("iteration").gather(gi),
            "start_ns": lo,
            "end_ns": hi,
            "cause": pl.Series(cause).replace_strict(
                list(range(len(CAUSES))), list(CAUSES), return_dtype=CAUSE
            ),
            "pid": gap_causes.get_column("pid").gather(gi),
            "thread": gap_causes.get_column("thread").gather(gi),
        }
    )
    if names is None:
        return frame.with_columns(pl.lit(None, pl.String).alias("cpu_op"))
    opi = pl.Series(op)
    named = pl.select(pl.when(opi >= 0).then(names.gather(opi.clip(lower_bound=0)))).to_series()
    return frame.with_columns(named.alias("cpu_op"))


#: How :func:`top_dispatch_operators` names dispatch time outside every CPU operator (Python code).
OUTSIDE_OPERATORS = "(outside CPU operators)"


def top_dispatch_operators(pieces: pl.DataFrame, count: int = 10) -> pl.DataFrame:
    """Dispatch time by enclosing top-level CPU operator, longest first: ``cpu_op``, ``dispatch_ms``,
    ``share`` (of all dispatch time), ``pieces``. Time outside every operator is named
    :data:`OUTSIDE_OPERATORS`."""
    dispatch = pieces.filter(pl.col("cause") == "dispatch")
    total = (
        int((dispatch.get_column("end_ns") - dispatch.get_column("start_ns")).sum()) if dispatch.height else 0
    )
    return (
        dispatch.group_by(pl.col("cpu_op").fill_null(OUTSIDE_OPERATORS))
        .agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("ns"), pl.len().alias("pieces"))
        .sort(["ns", "cpu_op"], descending=[True, False])
        .head(count)
        .select(
            "cpu_op",
            (pl.col("ns") / 1e6).alias("dispatch_ms"),
            (pl.col("ns") / total if total else pl.lit(None, pl.Float64)).alias("share"),
            pl.col("pieces").cast(pl.Int64),
        )
    )


# ------------------------------------------------------------------------------------------- entry points


def launch_lags(ctx: _Context, index: np.ndarray | None = None) -> pl.DataFrame:
    """The ops (of the iterations ``index``; None: all) that started more than :data:`LAUNCH_LAG_NS` after
    their launch call returned while the device was idle throughout (every op that started before them had
    ended by the call's end: nothing queued, on their stream or any other) and with no stream wait before
    them: ``iteration``, ``start``, ``lag_ns``. Such a wait is no launch latency: the device was blocked by
    something the trace does not show, or the host and device clocks are offset."""
    empty = pl.DataFrame(schema={"iteration": pl.Int64, "start": pl.Int64, "lag_ns": pl.Int64})
    row = ctx.calls.op_call
    if not ctx.calls.size or not len(row):
        return empty
    found = row >= 0
    call_end = np.where(found, ctx.calls.cols["call_end"][np.maximum(row, 0)], _NULL)
    lag = np.where(found & (call_end != _NULL), ctx.op["start"] - call_end, 0)
    cand = np.flatnonzero(lag > LAUNCH_LAG_NS)
    if not len(cand):
        return empty
    waited = ctx.waited[row[cand]] if len(ctx.waited) else np.zeros(len(cand), dtype=bool)
    idle = np.ones(len(cand), dtype=bool)
    if ctx.timeline is not None:
        device = ctx.op_device[cand] if ctx.op_device is not None else None
        reach = ctx.timeline.reach_before(ctx.op["start"][cand], device)
        idle = (reach == _NULL) | (reach <= call_end[cand])
    keep = cand[~waited & idle]
    it = ctx.op_iteration[keep]
    if index is not None:
        keep, it = keep[np.isin(it, index)], it[np.isin(it, index)]
    return pl.DataFrame({"iteration": it, "start": ctx.op["start"][keep], "lag_ns": lag[keep]})


@dataclass
class Setup:
    """What attributing gaps needs that does not depend on the gaps (:func:`setup`): the host threads' API
    intervals, the ops' launching calls and iterations, the device timeline; and ``graphs``, the graph
    launch calls in the trace."""

    ctx: _Context
    graphs: int


def setup(
    ops: pl.DataFrame,
    api: pl.DataFrame,
    ranges: pl.DataFrame,
    calls: pl.DataFrame | None = None,
    timeline: DeviceTimeline | None = None,
) -> Setup:
    """The :class:`Setup` of :func:`attribute_idle` (same arguments), built apart so that it can be built
    while the gaps are (on another thread: it reads only the trace and the op-to-call matching)."""
    intervals, graphs = _api_intervals(api)
    if timeline is None:  # (with or without calls: "None: of ops", as documented)
        timeline = DeviceTimeline.of(ops.sort("start"))
    ctx = _Context(ops, api, ranges, intervals, calls, timeline)
    for key in intervals:  # each host thread's intervals made ready for the per-gap sums
        ctx.prepared(key)
    return Setup(ctx, graphs)


def attribute_idle(
    gaps: pl.DataFrame,
    ops: pl.DataFrame,
    api: pl.DataFrame,
    ranges: pl.DataFrame,
    index: pl.Series | None = None,
    cpu_ops: pl.DataFrame | None = None,
    pieces: bool = False,
    per_gap: bool = False,
    kernel_gap_ns: int = GRAPH_KERNEL_GAP_NS,
    calls: pl.DataFrame | None = None,
    timeline: DeviceTimeline | None = None,
    detail_rows: pl.Series | None = None,
    prepared: Setup | None = None,
) -> Attribution:
    """Attribute every idle nanosecond of every iteration (module docstring).

    ``gaps``, ``ops``, ``api``, ``ranges``, ``timeline``: see :func:`attribute_gaps`; ``index``: the
    iterations to report (e.g. the analysis' ``iterations["index"]``; None: those of ``ranges``); ``cpu_ops``:
    CPU operators to name dispatch pieces by (the trace's ``cpu_ops`` frame; implies ``pieces``); ``pieces``:
    also build the piece list, ``per_gap``: the per-gap frame (millions of rows on large traces: both off by
    default, the per-iteration sums need neither); ``detail_rows``: rows of ``gaps`` whose per-gap columns
    to return in ``detail`` (e.g. the longest gaps); ``kernel_gap_ns``: see :func:`project_cuda_graphs`;
    ``calls``: the ops' launching calls when already matched (:data:`CALL_COLUMNS`; ``ops`` then has
    ``iteration``, ``call`` -- a row of ``calls`` or null -- and optionally ``no_launch``, instead of
    ``pid``/``correlation``); ``prepared``: :func:`setup` of these arguments, when already built."""
    prepared = prepared or setup(ops, api, ranges, calls, timeline)
    ctx, graphs, intervals = prepared.ctx, prepared.graphs, prepared.ctx.intervals
    if index is None:
        index = ranges.get_column("iteration")
    want_gaps = per_gap or pieces or cpu_ops is not None
    kept: list[dict[str, np.ndarray]] | None = [] if want_gaps else None
    numbers = np.sort(_np(index))
    sums = _iteration_sums(gaps, ctx, numbers, kernel_gap_ns, kept)
    iterations = sums.drop(list(PROJECTION_PARTS))
    result = Attribution(None, iterations, summarize_attribution(iterations))
    result.projection_parts = sums.select("index", *PROJECTION_PARTS)
    result.kernel_gap_ns = kernel_gap_ns
    result.graph_launches = graphs
    result.lags = launch_lags(ctx, numbers)
    if want_gaps:
        result.gaps = _gap_frame(gaps, ctx, kept)
        del kept
    if detail_rows is not None:
        result.detail = _gap_frame(gaps[detail_rows], ctx)
    if pieces or cpu_ops is not None:
        result.pieces = idle_pieces(result.gaps, api, cpu_ops, intervals)
        if cpu_ops is not None:
            result.top_operators = top_dispatch_operators(result.pieces)
    return result


def iteration_ranges(trace: Any, range_name: str | None = None) -> pl.DataFrame:
    """The iteration ranges of ``trace`` as :func:`tracekit.analyzers.iterations.choose_ranges` picks them
    (``iteration``, ``range_start``, ``range_end``, ``thread``) with the range's ``pid``."""
    from tracekit.analyzers.iterations import choose_ranges

    return choose_ranges(trace, range_name)[0]


def attribute_trace(
    trace: Any,
    analysis: Any,
    cpu_ops: pl.DataFrame | None = None,
    pieces: bool = False,
    per_gap: bool = False,
    kernel_gap_ns: int = GRAPH_KERNEL_GAP_NS,
) -> Attribution:
    """:func:`attribute_idle` of an :class:`~tracekit.analyzers.iterations.IterationAnalysis` of ``trace``
    (its ops assigned to iterations again, by the analysis' rules)."""
    ranges = getattr(analysis, "ranges", None)
    if ranges is None:
        ranges = iteration_ranges(trace, analysis.range_name)
    ops = trace.ops.select("start", "end", "pid", "correlation", "device")
    return attribute_idle(
        analysis.gaps,
        ops,
        trace.api,
        ranges,
        analysis.iterations.get_column("index"),
        cpu_ops,
        pieces,
        per_gap,
        kernel_gap_ns,
        timeline=DeviceTimeline.of(trace.ops),
    )


# ------------------------------------------------------------------------------------------- CUDA graphs


#: What :func:`project_cuda_graphs` assumes, as printed with its result.
GRAPH_ASSUMPTIONS: tuple[str, ...] = (
    "kernels keep their durations (the same kernels, replayed from one graph)",
    "all host work between the iteration's first and last op disappears (captured into the graph), and so "
    "does each kernel's own launch latency: every inner gap becomes kernel_gap_ns, the gap between "
    "consecutive kernels of a replay (or stays when already shorter), unless it holds a device-side wait a "
    "graph keeps (queued behind other work, a stream/event wait, a launch lag), which stays when longer",
    "the host work before the first op (input preparation, the forward's entry, the first operator's "
    "dispatch) becomes the replay's head, graph_head_ns (host code before the replay and the launch call's "
    "time to the first kernel), or stays when shorter",
    "the host work after the last op (post-processing, the final synchronize, the range close) becomes the "
    "replay's tail, graph_tail_ns (the synchronize returning), or stays when shorter: host work after a "
    "replay's launch overlaps the device work",
    "head, tail and kernel gap come from one GPU's replays (the defaults: an H200); on another GPU or "
    "harness they differ, so the projection is an estimate, not a measurement",
)


def replay_parameters(attribution: Attribution) -> dict[str, int]:
    """The projection's parameters as measured on a trace that replays CUDA graphs (one replay an
    iteration): ``kernel_gap_ns``, the median over iterations of the mean gap between consecutive kernels;
    ``graph_head_ns``, the median leading gap (iteration start to the first kernel); ``graph_tail_ns``, the
    median trailing gap (last kernel's end to the iteration's end). How :data:`GRAPH_KERNEL_GAP_NS`,
    :data:`GRAPH_HEAD_NS` and :data:`GRAPH_TAIL_NS` were measured."""
    parts = attribution.projection_parts
    assert parts is not None
    gaps = parts.filter(pl.col("inner_gaps") > 0)
    return {
        "kernel_gap_ns": round(gaps.select((pl.col("inner_ns") / pl.col("inner_gaps")).median()).item()),
        "graph_head_ns": round(parts.get_column("leading_ns").median()),  # type: ignore[arg-type]
        "graph_tail_ns": round(parts.get_column("trailing_ns").median()),  # type: ignore[arg-type]
    }


def project_cuda_graphs(
    iterations: pl.DataFrame,
    attribution: Attribution,
    graph_head_ns: int | None = None,
    graph_tail_ns: int | None = None,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Projected latency of each iteration if it were replayed as one CUDA graph, with the assumptions as
    data (:data:`GRAPH_ASSUMPTIONS`).

    ``iterations``: :func:`analyze_iterations`'s frame (``index``, ``window_start_ns``, ``window_end_ns``);
    ``attribution``: :func:`attribute_idle`'s result (its ``kernel_gap_ns`` is the gap assumed between graph
    kernels). Per iteration (ns): projected = min(leading gap, ``graph_head_ns``) + busy + Σ_inner
    max(kept device-side wait, kernel_gap_ns) + min(trailing gap, ``graph_tail_ns``) (defaults
    :data:`GRAPH_HEAD_NS`, :data:`GRAPH_TAIL_NS`, :data:`GRAPH_KERNEL_GAP_NS`, measured on a real H200
    replay); an iteration without ops keeps its latency. An eager trace's inner gaps are host work and
    per-kernel launch latency (its ``in_flight`` time: ~2 us a kernel on an H200), both of which a graph
    removes. Returns (``index``, ``latency_ms``, ``projected_ms``, ``saved_ms``, ``speedup``) and a dict:
    ``assumptions``, ``parameters`` (value and source of each), ``summary`` (mean/p50/p90/... per column)."""
    parts = attribution.projection_parts
    assert parts is not None
    head = GRAPH_HEAD_NS if graph_head_ns is None else graph_head_ns
    tail = GRAPH_TAIL_NS if graph_tail_ns is None else graph_tail_ns
    # (not the iterations of unknown idle time: one whose busy time is withheld had projected to its whole
    # latency, saving nothing, 1.49x for 2.94x)
    frame = iterations.filter(~pl.col("index").is_in(list(attribution.unknown))).select(
        "index", (pl.col("window_end_ns") - pl.col("window_start_ns")).alias("latency")
    )
    frame = frame.join(
        parts.join(attribution.iterations.select("index", "idle_ns"), on="index"),
        on="index",
        how="left",
        maintain_order="left",
    ).with_columns(pl.col("idle_ns", *PROJECTION_PARTS).fill_null(0))
    busy = pl.col("latency") - pl.col("idle_ns")
    projected = (
        pl.when(busy > 0)
        .then(
            pl.min_horizontal("leading_ns", pl.lit(head))
            + busy
            + pl.col("inner_floor_ns")
            + pl.min_horizontal("trailing_ns", pl.lit(tail))
        )
        .otherwise(pl.col("latency"))
    )
    frame = frame.select(
        "index",
        (pl.col("latency") / 1e6).alias("latency_ms"),
        (projected / 1e6).alias("projected_ms"),
        ((pl.col("latency") - projected) / 1e6).alias("saved_ms"),
        pl.when(projected > 0).then(pl.col("latency") / projected).alias("speedup"),
    )

    def source(given: int | None, default: int, value: int) -> str:
        return GRAPH_DEFAULTS_SOURCE if given is None and value == default else "given"

    info = {
        "assumptions": list(GRAPH_ASSUMPTIONS),
        "parameters": {
            "kernel_gap_ns": {
                "value": attribution.kernel_gap_ns,
                "source": source(None, GRAPH_KERNEL_GAP_NS, attribution.kernel_gap_ns),
            },
            "graph_head_ns": {"value": head, "source": source(graph_head_ns, GRAPH_HEAD_NS, head)},
            "graph_tail_ns": {"value": tail, "source": source(graph_tail_ns, GRAPH_TAIL_NS, tail)},
        },
        "summary": summarize_columns(frame, ["latency_ms", "projected_ms", "saved_ms", "speedup"]),
    }
    return frame, info


# ------------------------------------------------------------------------------------------- documents

#: One line per cause, as the outputs print them (the module docstring has the full rules).
CAUSE_DEFINITIONS: dict[str, str] = {
    "dispatch": "host outside every CUDA/HIP API call: Python and framework code, operator dispatch, graph "
    "construction, control flow (the framework tax proper)",
    "launch": "host inside a kernel or graph launch call",
    "sync": "host inside a synchronization call (cudaDeviceSynchronize, cudaStreamSynchronize, ...), or "
    "waiting inside a blocking copy (a copy call that returned after its copy ended)",
    "other_api": "host inside any other API call (allocation, event record, memcpy's host part, ...)",
    "in_flight": "device-side: the next op was launched (its launch call returned, or it was launched "
    "before the capture) and has not started: launch latency, queueing, stream waits (device_side splits it)",
}
#: One line per device-side cause (the parts of ``in_flight``).
DEVICE_CAUSE_DEFINITIONS: dict[str, str] = {
    "launch_latency": "the device idle, the op launched: launch latency and device-side scheduling",
    "queued": "the device busy with other work (ops of no iteration or of another): the op waited behind it",
    "stream_wait": "the op's thread issued a stream-wait call (cudaStreamWaitEvent, ...) just before "
    "launching it: it waited on an event of another stream",
    "launch_lag": f"the device idle longer than {LAUNCH_LAG_NS / 1e6:g} ms with the op launched and no stream "
    "wait: a blocked device or a host/device clock offset, not launch latency",
}
#: Whose host state decides, as the outputs print it.
THREAD_RULE = (
    "launch order first: once the op ending an idle interval was launched, the interval is device-side "
    "(in_flight); before, it is split by the state of the host thread that launched that op (else the "
    "iteration's main thread); per iteration busy + the five causes = latency, to the nanosecond"
)


@dataclass(frozen=True)
class Projection:
    """The CUDA-graph projection of an analysis (:func:`projection`): ``applies`` (False with a ``reason`` on
    CPU-only traces, traces without device work and traces that already replay graphs), else the means over
    iterations (``latency_ms``, ``projected_ms``, ``saved_ms``, ms; ``speedup`` = mean latency / mean projected
    latency), each column's statistics (``summary``), the ``assumptions``, the ``parameters`` (value and
    source of each) and the ``caveat``: why the saving is too large for this trace (None: no known reason;
    in the JSON only when there is one)."""

    applies: bool
    reason: str | None = None
    latency_ms: float | None = None
    projected_ms: float | None = None
    saved_ms: float | None = None
    speedup: float | None = None
    summary: Mapping[str, Stats] = field(default_factory=dict)
    assumptions: tuple[str, ...] = ()
    parameters: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    caveat: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``cuda_graph_projection`` object of ``tracekit analyze --format json``."""
        if not self.applies:
            return {"applies": False, "reason": self.reason}
        caveat = {} if self.caveat is None else {"caveat": self.caveat}
        return {
            "applies": True,
            "latency_ms": self.latency_ms,
            "projected_ms": self.projected_ms,
            "saved_ms": self.saved_ms,
            "speedup": self.speedup,
            "summary": {name: stats.to_dict() for name, stats in self.summary.items()},
            "assumptions": list(self.assumptions),
            "parameters": {k: dict(v) for k, v in self.parameters.items()},
            **caveat,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Projection:
        """The inverse of :meth:`to_json`."""
        if not doc.get("applies"):
            return cls(False, doc.get("reason"))
        return cls(
            True,
            None,
            doc.get("latency_ms"),
            doc.get("projected_ms"),
            doc.get("saved_ms"),
            doc.get("speedup"),
            {name: Stats(**stats) for name, stats in (doc.get("summary") or {}).items()},
            tuple(doc.get("assumptions") or ()),
            {k: dict(v) for k, v in (doc.get("parameters") or {}).items()},
            doc.get("caveat"),
        )


#: Why the projection does not apply to a trace that replays CUDA graphs (the start of its reason).
ALREADY_GRAPHS = "the trace already replays CUDA graphs"

#: Mean latency above this multiple of the median: the projection's means are a few slow iterations'.
SKEWED_MEAN = 1.5


def projection(
    iterations: pl.DataFrame,
    attribution: Attribution,
    device: str,
    caveat: str | None = None,
    refusal: str | None = None,
) -> Projection:
    """Stage *project*: the CUDA-graph projection of the analyzed ``iterations`` (:func:`project_cuda_graphs`),
    or why it does not apply. ``caveat``: what makes the projection's saving too large here (setup calls in
    the iterations, :mod:`tracekit.analyzers.setup_calls`); ``refusal``: a reason found earlier why it does not
    apply (iterations that capture graphs)."""
    if device == "cpu":
        return Projection(False, "CPU-only trace: nothing to capture into a CUDA graph")
    if refusal:
        return Projection(False, refusal)
    if attribution.graph_launches:
        return Projection(False, f"{ALREADY_GRAPHS} ({attribution.graph_launches} graph launch calls)")
    if not iterations.height or not (iterations.get_column("gpu_busy_ms").fill_null(0) > 0).any():
        return Projection(False, "no device work in the analyzed iterations")
    if iterations.filter(~pl.col("index").is_in(list(attribution.unknown))).is_empty():
        # (every iteration's idle time unknown: untimed ops, calls of unknown end; its figures had been null
        # beside 'applies', and the terminal view had failed on them)
        return Projection(
            False,
            "no analyzed iteration's idle time is known (device ops without times, or API calls of unknown "
            "end, in each: the warnings name them)",
        )
    frame, info = project_cuda_graphs(iterations, attribution)
    latency, projected = frame.get_column("latency_ms").mean(), frame.get_column("projected_ms").mean()
    typical = frame.select(pl.col("latency_ms", "projected_ms").median()).row(0)
    if latency and typical[0] and latency > SKEWED_MEAN * typical[0]:
        # a cold start in few iterations: its one-time costs are in the mean, and are no graph's to save
        skew = (
            f"the mean latency ({latency:.4g} ms) is {latency / typical[0]:.3g}x the median ({typical[0]:.4g} ms): "
            f"a few slow iterations (a cold start?) dominate the means, and their one-time costs are not what a "
            f"graph saves; the median iteration projects {typical[0]:.4g} -> {typical[1]:.4g} ms"
        )
        caveat = skew if caveat is None else f"{caveat}; {skew}"
    return Projection(
        True,
        None,
        latency,  # type: ignore[arg-type]
        projected,  # type: ignore[arg-type]
        frame.get_column("saved_ms").mean(),  # type: ignore[arg-type]
        latency / projected if projected else None,  # type: ignore[operator]
        info["summary"],
        tuple(info["assumptions"]),
        info["parameters"],
        caveat,
    )


@dataclass(frozen=True)
class CauseShare:
    """One cause's idle time over the analyzed iterations: ``mean_ms``, ``p50_ms``, ``p90_ms`` per iteration,
    ``total_ms`` over them (ms), ``share_of_idle`` (fraction of all idle time; None without idle time)."""

    cause: str
    mean_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    total_ms: float | None
    share_of_idle: float | None


@dataclass(frozen=True)
class DeviceSideShare:
    """One device-side cause (a part of ``in_flight``): ``total_ms`` over the iterations, ``share_of_in_flight``
    (fraction; None without in-flight time) and its definition."""

    cause: str
    total_ms: float
    share_of_in_flight: float | None
    definition: str


@dataclass(frozen=True)
class IdleSummary:
    """The idle time of an analysis by cause, as reported (:func:`idle_summary`): per cause (``causes``, in
    :data:`CAUSES` order) its :class:`CauseShare`; ``idle_ms`` (mean/p50/p90 per iteration); ``device_side``
    (per device-side cause); the definitions and the rule; ``top_dispatch_operators`` (dispatch time by
    enclosing top-level CPU operator, None when the trace holds no CPU operators). ``available`` False (with a
    ``reason``) for a trace without device or operator activity, whose idle time is unknown."""

    available: bool
    causes: tuple[CauseShare, ...]
    idle_ms: Mapping[str, float | None]
    device_side: tuple[DeviceSideShare, ...]
    definitions: Mapping[str, str]
    rule: str
    top_dispatch_operators: tuple[Mapping[str, Any], ...] | None = None
    reason: str | None = None

    def to_json(self, projection: Projection | None = None) -> dict[str, Any]:
        """The ``idle_attribution`` object of ``tracekit analyze --format json``, with ``projection`` as its
        ``cuda_graph_projection``."""
        head: dict[str, Any] = {"available": self.available}
        if not self.available:
            head["reason"] = self.reason
        causes = [
            {
                "cause": c.cause,
                "mean_ms": c.mean_ms,
                "p50_ms": c.p50_ms,
                "p90_ms": c.p90_ms,
                "total_ms": c.total_ms,
                "share_of_idle": c.share_of_idle,
            }
            for c in self.causes
        ]
        device_side = [
            {
                "cause": d.cause,
                "total_ms": d.total_ms,
                "share_of_in_flight": d.share_of_in_flight,
                "definition": d.definition,
            }
            for d in self.device_side
        ]
        top = self.top_dispatch_operators
        return {
            **head,
            "causes": causes,
            "idle_ms": dict(self.idle_ms),
            "device_side": device_side,
            "definitions": dict(self.definitions),
            "rule": self.rule,
            "cuda_graph_projection": None if projection is None else projection.to_json(),
            "top_dispatch_operators": None if top is None else [dict(r) for r in top],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> IdleSummary:
        """The inverse of :meth:`to_json` (its ``cuda_graph_projection`` is read by :meth:`Projection.from_json`)."""
        top = doc.get("top_dispatch_operators")
        return cls(
            available=bool(doc.get("available")),
            causes=tuple(CauseShare(**c) for c in doc.get("causes") or ()),
            idle_ms=dict(doc.get("idle_ms") or {}),
            device_side=tuple(DeviceSideShare(**d) for d in doc.get("device_side") or ()),
            definitions=dict(doc.get("definitions") or {}),
            rule=doc.get("rule", ""),
            top_dispatch_operators=None if top is None else tuple(dict(r) for r in top),
            reason=doc.get("reason"),
        )


def idle_summary(iterations: pl.DataFrame, attribution: Attribution) -> IdleSummary:
    """The :class:`IdleSummary` of the analyzed ``iterations`` (their ``idle_ms``) from ``attribution``."""
    summary, frame = attribution.summary, attribution.iterations
    if iterations.height and iterations.get_column("idle_ms").null_count() == iterations.height:
        # Latency-only traces (ranges without device or operator ops): there is no idle time to attribute, and
        # zeros would read as "no overhead".
        return IdleSummary(
            available=False,
            reason="the trace holds no device or operator activity: idle time is unknown",
            causes=tuple(CauseShare(c, None, None, None, None, None) for c in CAUSES),
            idle_ms={"mean": None, "p50": None, "p90": None},
            device_side=(),
            definitions=dict(CAUSE_DEFINITIONS),
            rule=THREAD_RULE,
            top_dispatch_operators=None,
        )
    in_flight = int(frame.get_column("in_flight_ns").sum()) / 1e6 if frame.height else 0.0
    device_side = (
        tuple(
            DeviceSideShare(
                c,
                summary["device_side_ms"][c],
                summary["device_side_ms"][c] / in_flight if in_flight else None,
                DEVICE_CAUSE_DEFINITIONS[c],
            )
            for c in DEVICE_CAUSES
        )
        if frame.height
        else ()
    )
    causes = []
    for cause in CAUSES:
        stats = summary[f"{cause}_ms"]
        causes.append(
            CauseShare(
                cause,
                stats.mean,
                stats.p50,
                stats.p90,
                int(frame.get_column(f"{cause}_ns").sum()) / 1e6 if frame.height else 0.0,
                summary["share_of_idle"][cause],
            )
        )
    idle = summary["idle_ms"]
    top = attribution.top_operators
    return IdleSummary(
        available=True,
        causes=tuple(causes),
        idle_ms={"mean": idle.mean, "p50": idle.p50, "p90": idle.p90},
        device_side=device_side,
        definitions=dict(CAUSE_DEFINITIONS),
        rule=THREAD_RULE,
        top_dispatch_operators=None if top is None else tuple(top.to_dicts()),
    )
