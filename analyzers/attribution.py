"""Where the framework tax goes: every idle nanosecond of every iteration attributed to its cause.

The idle time of an iteration (latency - busy, :mod:`tracekit.analyzers.iterations`) is the union of its idle
gaps (leading, inner, trailing) inside the effective window. Each gap is split into consecutive *pieces* by
the state of one host thread: the thread that issued the launch call of the gap's *next op* (the op of the
iteration whose start ends the gap; of several, the one whose launch call returned first), or, when that is
unknown (trailing gap, no next op, an op with no launching call or one on no known thread), the iteration's
main thread (the thread of its range). At time t of the gap the cause is:

- ``in_flight``: the next op's launch call has returned (t >= call end) and the op has not started: device-side
  launch latency, queueing and scheduling (nearly all idle time of a CUDA-graph replay);
- otherwise the state of the host thread at t:
  - ``launch``: inside a launch call (:data:`tracekit.model.LAUNCH_API_NAMES`, graph launches included);
  - ``sync``: inside a synchronization call (:data:`SYNC_API_NAMES`);
  - ``other_api``: inside any other CUDA/HIP API call (allocation, event record, memcpy's host part, ...);
  - ``dispatch``: outside every API call: Python and framework code, operator dispatch, graph construction,
    control flow. This is the framework tax proper.

Nested or overlapping API calls on one thread: the *outermost* call decides, i.e. at time t the running call
that started first (of two starting together, the longer; of two identical intervals, the cause listed
first in ``launch, sync, other_api``). A call partly overlapping an earlier one decides from the earlier
one's end on. With no launching call (missing correlation ids, CPU-only traces) a gap has no ``in_flight``
piece. On CPU-only traces the device ops are operators and the gaps are mostly ``dispatch``.

Kineto traces also hold the host's CPU operators (``aten::linear``, ...): given them (``cpu_ops``),
dispatch pieces are split further at the boundaries of the top-level operator running on the piece's thread
and named after it (``cpu_op``, null outside every operator).

Units: ``*_ns`` integer nanoseconds, ``*_ms`` milliseconds. Exactness: per gap the five causes sum to the
gap's duration to the nanosecond, so per iteration ``busy + dispatch + launch + sync + other_api +
in_flight = latency``.

Everything is vectorized: per-gap sums come from cumulative sums over each host thread's call intervals and
binary searches (no per-gap Python loop; the only loops are over the few host threads that launch work).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from tracekit.analyzers.stats import summarize_columns

from tracekit.model import LAUNCH_API_NAMES, sort_frame

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
)
#: API name suffixes that do not change what a call does (per-thread default stream, version).
_NAME_SUFFIX = r"(_ptsz|_ptds)?(_v\d+)?$"

#: Per-iteration columns of :func:`attribute_idle` (integer ns; the ``_ms`` columns are these / 1e6).
CAUSE_NS: tuple[str, ...] = tuple(f"{c}_ns" for c in CAUSES)
CAUSE_MS: tuple[str, ...] = tuple(f"{c}_ms" for c in CAUSES)


@dataclass
class Attribution:
    """The result of :func:`attribute_idle`.

    ``gaps``: the input gaps with ``pid``, ``thread`` (the host thread whose state decided), ``next_call_end``
    (null: no launching call) and one ``*_ns`` column per cause. ``iterations``: per iteration ``index``,
    ``idle_ns`` and the causes in ns and ms. ``pieces``: consecutive pieces (see :func:`idle_pieces`), only
    when asked for. ``top_operators``: dispatch time by top-level CPU operator (only with ``cpu_ops``).
    """

    gaps: pl.DataFrame
    iterations: pl.DataFrame
    summary: dict[str, Any]
    pieces: pl.DataFrame | None = None
    top_operators: pl.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------- host states


def api_cause(names: pl.Expr) -> pl.Expr:
    """Host-state code (1 launch, 2 sync, 3 other_api; UInt8) of API calls by name."""
    base = names.str.replace(_NAME_SUFFIX, "")
    return (
        pl.when(base.is_in(list(LAUNCH_API_NAMES)))
        .then(pl.lit(_LAUNCH, pl.UInt8))
        .when(base.is_in(list(SYNC_API_NAMES)))
        .then(pl.lit(_SYNC, pl.UInt8))
        .otherwise(pl.lit(_OTHER, pl.UInt8))
    )


def _call_causes(api: pl.DataFrame) -> pl.Series:
    """:func:`api_cause` of every row of ``api``, computed once per distinct name (millions of calls share a
    handful of names)."""
    names = api.get_column("name")
    distinct = names.unique().drop_nulls()
    codes = pl.DataFrame({"name": distinct}).select(api_cause(pl.col("name"))).to_series()
    return names.replace_strict(distinct, codes, default=pl.lit(_OTHER, pl.UInt8), return_dtype=pl.UInt8)


def outermost_intervals(frame: pl.DataFrame, label: str) -> pl.DataFrame:
    """Disjoint intervals saying which row of ``frame`` (``start``, ``end``, ``pid``, ``thread``, ``label``)
    decides at each instant of its thread: the running row that started first (ties: the longer, then the
    lower ``label``). Returns ``pid``, ``thread``, ``start``, ``end``, ``label`` sorted by (pid, thread, start),
    only intervals longer than 0 ns. Row k decides over [max(start_k, reach), end_k), reach being the latest
    end of the rows before it on its thread."""
    rows = frame.select("pid", "thread", "start", "end", label).filter(
        pl.col("start").is_not_null() & pl.col("end").is_not_null() & (pl.col("end") > pl.col("start"))
    )
    rows = sort_frame(rows, ["pid", "thread", "start", "end", label], [False, False, False, True, False])
    if rows.is_empty():
        return rows
    one_thread = rows.select((pl.col("pid").n_unique() == 1) & (pl.col("thread").n_unique() == 1)).item()
    reach = pl.col("end").cum_max().shift(1)
    if not one_thread:
        reach = reach.over(["pid", "thread"])
    return (
        rows.with_columns(pl.max_horizontal("start", reach).alias("start"))
        .filter(pl.col("end") > pl.col("start"))
        .with_columns(pl.col("pid").set_sorted())
    )


def host_states(api: pl.DataFrame) -> pl.DataFrame:
    """Each host thread's outermost API calls as disjoint intervals: ``pid``, ``thread``, ``start``, ``end``,
    ``cause`` (UInt8 code: 1 launch, 2 sync, 3 other_api), sorted by (pid, thread, start)."""
    if api.is_empty():
        return pl.DataFrame(
            schema={
                "pid": pl.Int64,
                "thread": pl.Int64,
                "start": pl.Int64,
                "end": pl.Int64,
                "cause": pl.UInt8,
            }
        )
    calls = api.select("start", "end", "pid", "thread").with_columns(_call_causes(api).alias("cause"))
    return outermost_intervals(calls, "cause")


# ------------------------------------------------------------------------------------------- next ops


#: pid * 2**32 + correlation as one Int64 key, when in these bounds (else a hash join is used).
_PID_LIMIT = 1 << 31
_CORRELATION_LIMIT = 1 << 32


def _keys_fit(frame: pl.DataFrame) -> bool:
    if frame.is_empty():
        return True
    lo_p, hi_p, lo_c, hi_c = frame.select(
        pl.col("pid").min().alias("a"),
        pl.col("pid").max().alias("b"),
        pl.col("correlation").min().alias("c"),
        pl.col("correlation").max().alias("d"),
    ).row(0)
    pid_ok = lo_p is None or (lo_p >= 0 and hi_p < _PID_LIMIT)
    corr_ok = lo_c is None or (lo_c >= 0 and hi_c < _CORRELATION_LIMIT)
    return pid_ok and corr_ok


def launching_calls(keys: pl.DataFrame, api: pl.DataFrame) -> pl.DataFrame:
    """For each row of ``keys`` (``pid``, ``correlation``), in order: its launching call's ``call_start``,
    ``call_end``, ``call_pid``, ``call_thread`` (nulls when none). The launching call is the outermost API
    call with the same (pid, correlation): earliest start, then longest (then lowest thread)."""
    calls = api.select("pid", "correlation", "start", "end", "thread").filter(
        pl.col("pid").is_not_null() & pl.col("correlation").is_not_null() & pl.col("start").is_not_null()
    )
    out_cols = {
        "call_start": pl.col("start"),
        "call_end": pl.col("end"),
        "call_pid": pl.col("pid"),
        "call_thread": pl.col("thread"),
    }
    if calls.is_empty() or keys.is_empty() or not (_keys_fit(calls) and _keys_fit(keys)):
        first = calls.sort(
            ["pid", "correlation", "start", "end", "thread"], descending=[False, False, False, True, False]
        ).unique(subset=["pid", "correlation"], keep="first", maintain_order=True)
        joined = keys.select("pid", "correlation").join(
            first, on=["pid", "correlation"], how="left", maintain_order="left"
        )
        return joined.select(**out_cols)
    key = (pl.col("pid") * _CORRELATION_LIMIT + pl.col("correlation")).alias("key")
    calls = sort_frame(
        calls.select(key, "start", "end", "pid", "thread"),
        ["key", "start", "end", "thread"],
        [False, False, True, False],
    )
    first = calls.select(pl.col("key").ne_missing(pl.col("key").shift(1))).to_series()
    if not first.all():
        calls = calls.filter(first)
    call_keys = calls.get_column("key")
    wanted = keys.select(key).to_series()
    pos = call_keys.search_sorted(wanted, side="left").cast(pl.Int64).clip(upper_bound=calls.height - 1)
    hit = wanted.is_not_null() & (call_keys.gather(pos) == wanted)
    at = pl.select(pl.when(hit).then(pos)).to_series()
    return calls.select(
        pl.col(c).gather(at).alias(name)
        for name, c in (
            ("call_start", "start"),
            ("call_end", "end"),
            ("call_pid", "pid"),
            ("call_thread", "thread"),
        )
    )


def iteration_at(times: pl.Series, ranges: pl.DataFrame) -> pl.Series:
    """For each time, the ``iteration`` of ``ranges`` (sorted by ``range_start``) whose [range_start,
    range_end) holds it: the last range starting at or before it (null: none)."""
    if ranges.is_empty() or times.is_empty():
        return pl.Series("iteration", [None] * len(times), dtype=pl.Int64)
    pos = ranges.get_column("range_start").search_sorted(times, side="right").cast(pl.Int64) - 1
    at = pos.clip(lower_bound=0)
    inside = (pos >= 0) & times.is_not_null() & (times < ranges.get_column("range_end").gather(at))
    return pl.select(
        pl.when(inside).then(ranges.get_column("iteration").gather(at)).alias("iteration")
    ).to_series()


def _candidates(gaps: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """(gap row ``g``, op row ``o``) for every op starting exactly at the end of a non-trailing gap."""
    ends = gaps.get_column("end_ns")
    starts = ops.get_column("start")
    lo = starts.search_sorted(ends, side="left").cast(pl.Int64)
    hi = starts.search_sorted(ends, side="right").cast(pl.Int64)
    frame = pl.DataFrame({"g": pl.int_range(gaps.height, dtype=pl.Int64, eager=True), "lo": lo, "n": hi - lo})
    frame = frame.filter((pl.col("n") > 0) & (gaps.get_column("position") != "trailing"))
    if frame.is_empty() or frame.get_column("n").max() == 1:
        return frame.select("g", pl.col("lo").alias("o"))
    return frame.select("g", pl.int_ranges("lo", pl.col("lo") + pl.col("n")).alias("o")).explode("o")


def next_op_calls(
    gaps: pl.DataFrame, ops: pl.DataFrame, api: pl.DataFrame, ranges: pl.DataFrame
) -> pl.DataFrame:
    """Per gap (in order): the launching call of its next op: ``call_end``, ``call_pid``, ``call_thread``
    (nulls when the gap has no next op or the op no launching call).

    The next op of a gap is an op with a positive duration, of the gap's iteration, starting at the gap's
    end; of several, the one whose launch call returned first (ops without a call last). An op's iteration is
    ``ops["iteration"]`` when given, else the range holding its launching call's start (or its own start)."""
    ops = ops.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    ops = sort_frame(ops, ["start"], [False])
    pairs = _candidates(gaps, ops)
    o = pairs.get_column("o")
    cand = ops.select(
        pl.col("start").gather(o),
        pl.col("end").gather(o),
        pl.col("pid").gather(o),
        pl.col("correlation").gather(o),
    )
    calls = launching_calls(cand, api)
    if "iteration" in ops.columns:
        op_iteration = ops.get_column("iteration").gather(o)
    else:
        when = calls.get_column("call_start").fill_null(cand.get_column("start"))
        op_iteration = iteration_at(when, ranges)
    gap_iteration = gaps.get_column("iteration").gather(pairs.get_column("g"))
    cand = pl.concat([pairs.select("g"), calls], how="horizontal").filter(
        (op_iteration == gap_iteration) & (cand.get_column("end") > cand.get_column("start"))
    )
    if cand.select(pl.col("g").is_duplicated().any()).item():
        cand = cand.sort(
            ["g", "call_end", "call_start", "call_pid", "call_thread"], nulls_last=True, maintain_order=True
        ).unique(subset="g", keep="first", maintain_order=True)
    out = pl.DataFrame({"g": pl.int_range(gaps.height, dtype=pl.Int64, eager=True)})
    return out.join(
        cand.select("g", "call_end", "call_pid", "call_thread"), on="g", how="left", maintain_order="left"
    ).drop("g")


# ------------------------------------------------------------------------------------------- per gap


def _integrals(starts: np.ndarray, ends: np.ndarray, codes: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Time before ``t`` covered by disjoint sorted intervals, per code 1..3: array (3, len(t))."""
    lengths = ends - starts
    k = np.searchsorted(starts, t, side="right") - 1
    kk = np.clip(k, 0, None)
    covered = np.where(k >= 0, np.minimum(t - starts[kk], lengths[kk]), 0)
    out = np.empty((3, len(t)), dtype=np.int64)
    for j, code in enumerate((_LAUNCH, _SYNC, _OTHER)):
        cum = np.concatenate([[0], np.cumsum(np.where(codes == code, lengths, 0))])
        out[j] = np.where(k >= 0, cum[kk], 0) + np.where(codes[kk] == code, covered, 0)
    return out


def _thread_groups(pid: pl.Series, thread: pl.Series) -> list[tuple[Any, Any, np.ndarray | None]]:
    """(pid, thread, row indices or None for all rows) per distinct host thread of the gaps."""
    keys = pl.DataFrame({"pid": pid, "thread": thread})
    distinct = keys.unique(maintain_order=True)
    if distinct.height == 1:
        p, t = distinct.row(0)
        return [(p, t, None)]
    out = []
    for p, t in distinct.iter_rows():
        mask = keys.select(pl.col("pid").eq_missing(p) & pl.col("thread").eq_missing(t)).to_series()
        out.append((p, t, mask.arg_true().to_numpy()))
    return out


def _states_of(states: pl.DataFrame, pid: Any, thread: Any) -> pl.DataFrame:
    if pid is None or thread is None:
        return states.clear()
    if (
        states.height
        and states.select((pl.col("pid").n_unique() == 1) & (pl.col("thread").n_unique() == 1)).item()
    ):
        p, t = states.select(pl.col("pid").first(), pl.col("thread").first()).row(0)
        return states if (p, t) == (pid, thread) else states.clear()
    return states.filter((pl.col("pid") == pid) & (pl.col("thread") == thread))


def main_threads(ranges: pl.DataFrame, api: pl.DataFrame) -> pl.DataFrame:
    """``ranges`` with ``pid`` (kept when present; else the pid of the API calls on the range's thread)."""
    if "pid" in ranges.columns:
        return ranges
    pids = api.filter(pl.col("thread").is_not_null()).group_by("thread").agg(pl.col("pid").min())
    return ranges.join(pids, on="thread", how="left", maintain_order="left")


def attribute_gaps(
    gaps: pl.DataFrame,
    ops: pl.DataFrame,
    api: pl.DataFrame,
    ranges: pl.DataFrame,
    states: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Split every gap into the five causes (see module docstring).

    ``gaps``: ``iteration``, ``start_ns``, ``end_ns``, ``position`` (:func:`analyze_iterations`'s gaps);
    ``ops``: ``start``, ``end``, ``pid``, ``correlation`` and optionally ``iteration`` (``trace.ops`` or
    :func:`assign_ops`'s output); ``api``: ``trace.api``; ``ranges``: the iteration ranges (``iteration``,
    ``range_start``, ``range_end``, ``thread``, ``pid``; see :func:`iteration_ranges`); ``states``:
    :func:`host_states` of ``api`` when already computed. Returns the gaps (same order) with ``pid``,
    ``thread``, ``next_call_end`` and ``dispatch_ns`` ... ``in_flight_ns``."""
    ranges = main_threads(sort_frame(ranges, ["range_start"], [False]), api)
    states = host_states(api) if states is None else states
    nxt = next_op_calls(gaps, ops, api, ranges)
    by_iteration = ranges.sort("iteration")
    pos = by_iteration.get_column("iteration").search_sorted(gaps.get_column("iteration")).cast(pl.Int64)
    own = nxt.get_column("call_thread").is_not_null()
    pid = pl.select(
        pl.when(own).then(nxt.get_column("call_pid")).otherwise(by_iteration.get_column("pid").gather(pos))
    ).to_series()
    thread = pl.select(
        pl.when(own)
        .then(nxt.get_column("call_thread"))
        .otherwise(by_iteration.get_column("thread").gather(pos))
    ).to_series()
    s = gaps.get_column("start_ns").to_numpy()
    e = gaps.get_column("end_ns").to_numpy()
    call_end = nxt.get_column("call_end")
    c = np.clip(call_end.fill_null(np.iinfo(np.int64).max).to_numpy(), s, e)
    api_ns = np.zeros((3, gaps.height), dtype=np.int64)
    for p, t, rows in _thread_groups(pid, thread):
        mine = _states_of(states, p, t)
        if mine.is_empty():
            continue
        arrays = [mine.get_column(col).to_numpy() for col in ("start", "end", "cause")]
        ss, cc = (s, c) if rows is None else (s[rows], c[rows])
        part = _integrals(*arrays, cc) - _integrals(*arrays, ss)
        if rows is None:
            api_ns = part
        else:
            api_ns[:, rows] = part
    return gaps.with_columns(
        pid.alias("pid"),
        thread.alias("thread"),
        call_end.alias("next_call_end"),
        pl.Series("dispatch_ns", (c - s) - api_ns.sum(axis=0)),
        pl.Series("launch_ns", api_ns[0]),
        pl.Series("sync_ns", api_ns[1]),
        pl.Series("other_api_ns", api_ns[2]),
        pl.Series("in_flight_ns", e - c),
    )


# ------------------------------------------------------------------------------------------- per iteration


def per_iteration(gap_causes: pl.DataFrame, index: pl.Series | None = None) -> pl.DataFrame:
    """Per iteration: ``index``, ``idle_ns`` and each cause in ns and ms (iterations of ``index`` without
    gaps get zeros; None: the iterations present in ``gap_causes``)."""
    sums = (
        gap_causes.group_by("iteration")
        .agg(
            (pl.col("end_ns") - pl.col("start_ns")).sum().alias("idle_ns"),
            *(pl.col(c).sum() for c in CAUSE_NS),
        )
        .rename({"iteration": "index"})
    )
    if index is None:
        index = sums.get_column("index").sort()
    frame = pl.DataFrame({"index": index.cast(pl.Int64)}).join(
        sums, on="index", how="left", maintain_order="left"
    )
    cols = ["idle_ns", *CAUSE_NS]
    return frame.with_columns(pl.col(cols).fill_null(0).cast(pl.Int64)).with_columns(
        (pl.col("idle_ns") / 1e6).alias("idle_ms"),
        *((pl.col(ns) / 1e6).alias(ms) for ns, ms in zip(CAUSE_NS, CAUSE_MS, strict=True)),
    )


def summarize_attribution(frame: pl.DataFrame) -> dict[str, Any]:
    """Mean/p50/p90 (and p99, min, max) over iterations of idle and each cause (ms), and each cause's share
    of the total idle time (fraction; None when there is none)."""
    summary: dict[str, Any] = summarize_columns(frame, ["idle_ms", *CAUSE_MS])
    total = int(frame.get_column("idle_ns").sum()) if frame.height else 0
    summary["share_of_idle"] = {
        c: (int(frame.get_column(f"{c}_ns").sum()) / total if total else None) for c in CAUSES
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


def cpu_operator_intervals(cpu_ops: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """Outermost CPU operators per thread as disjoint intervals (``pid``, ``thread``, ``start``, ``end``,
    ``op``: index into the returned names)."""
    ops = cpu_ops.select("start", "end", "pid", "thread", "name").sort(
        ["pid", "thread", "start", "end", "name"],
        descending=[False, False, False, True, False],
        nulls_last=True,
    )
    names = ops.get_column("name")
    ops = ops.with_row_index("op").with_columns(pl.col("op").cast(pl.Int64))
    return outermost_intervals(ops, "op"), names


def _thread_pieces(
    s: np.ndarray, c: np.ndarray, mine: pl.DataFrame, mine_ops: pl.DataFrame | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Host pieces of gaps [s, c) on one thread: (row, start, end, cause code 0..3, operator index or -1)."""
    if mine.is_empty():
        row, lo, hi, lab = np.arange(len(s)), s, c, np.full(len(s), -1)
        keep = hi > lo
        row, lo, hi, lab = row[keep], lo[keep], hi[keep], lab[keep]
    else:
        arrays = [mine.get_column(col).to_numpy() for col in ("start", "end", "cause")]
        row, lo, hi, lab = _split(s, c, arrays[0], arrays[1], arrays[2].astype(np.int64))
    cause = np.where(lab < 0, 0, lab)
    op = np.full(len(row), -1)
    if mine_ops is None or mine_ops.is_empty():
        return row, lo, hi, cause, op
    dispatch = np.flatnonzero(cause == 0)
    arrays = [mine_ops.get_column(col).to_numpy() for col in ("start", "end", "op")]
    sub, s2, e2, lab2 = _split(lo[dispatch], hi[dispatch], *arrays)
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
    gap_causes: pl.DataFrame, states: pl.DataFrame, cpu_ops: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The consecutive pieces of every gap: ``iteration``, ``start_ns``, ``end_ns``, ``cause`` (Enum of
    :data:`CAUSES`), ``pid``, ``thread`` (the host thread whose state decided), ``cpu_op`` (the top-level CPU
    operator running on that thread during a dispatch piece; null elsewhere or without ``cpu_ops``).

    ``gap_causes``: :func:`attribute_gaps`'s output; ``states``: :func:`host_states`; ``cpu_ops``: CPU
    operators (``start``, ``end``, ``pid``, ``thread``, ``name``; see :func:`kineto_cpu_ops`). Pieces come in
    gap order, then time order; per gap they tile [start_ns, end_ns) exactly."""
    s = gap_causes.get_column("start_ns").to_numpy()
    e = gap_causes.get_column("end_ns").to_numpy()
    call_end = gap_causes.get_column("next_call_end").fill_null(np.iinfo(np.int64).max).to_numpy()
    c = np.clip(call_end, s, e)
    op_intervals, names = (None, None) if cpu_ops is None else cpu_operator_intervals(cpu_ops)
    parts: list[tuple[np.ndarray, ...]] = []
    for p, t, rows in _thread_groups(gap_causes.get_column("pid"), gap_causes.get_column("thread")):
        mine_ops = None if op_intervals is None else _states_of(op_intervals, p, t)
        idx = np.arange(len(s)) if rows is None else rows
        row, lo, hi, cause, op = _thread_pieces(s[idx], c[idx], _states_of(states, p, t), mine_ops)
        parts.append((idx[row], lo, hi, cause, op))
    flight = np.flatnonzero(e > c)
    parts.append((flight, c[flight], e[flight], np.full(len(flight), 4), np.full(len(flight), -1)))
    g, lo, hi, cause, op = (np.concatenate([p[i] for p in parts]) for i in range(5))
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


def attribute_idle(
    gaps: pl.DataFrame,
    ops: pl.DataFrame,
    api: pl.DataFrame,
    ranges: pl.DataFrame,
    index: pl.Series | None = None,
    cpu_ops: pl.DataFrame | None = None,
    pieces: bool = False,
) -> Attribution:
    """Attribute every idle nanosecond of every iteration (module docstring).

    ``gaps``, ``ops``, ``api``, ``ranges``: see :func:`attribute_gaps`; ``index``: the iterations to report
    (e.g. the analysis' ``iterations["index"]``; None: those of ``ranges``); ``cpu_ops``: CPU operators to
    name dispatch pieces by (Kineto, :func:`kineto_cpu_ops`; implies ``pieces``); ``pieces``: also build the
    piece list (millions of rows on large traces: off by default)."""
    states = host_states(api)
    gap_causes = attribute_gaps(gaps, ops, api, ranges, states)
    if index is None:
        index = ranges.get_column("iteration").sort()
    iterations = per_iteration(gap_causes, index)
    result = Attribution(gap_causes, iterations, summarize_attribution(iterations))
    if pieces or cpu_ops is not None:
        result.pieces = idle_pieces(gap_causes, states, cpu_ops)
        if cpu_ops is not None:
            result.top_operators = top_dispatch_operators(result.pieces)
    no_call = gap_causes.filter((pl.col("position") != "trailing") & pl.col("next_call_end").is_null()).height
    if no_call and not api.is_empty():
        result.warnings.append(
            f"{no_call} of {gap_causes.height} idle gaps end at an op with no launching API call in the trace "
            "(missing correlation id): their host thread is the iteration's main thread and they have no "
            "in_flight piece"
        )
    return result


def iteration_ranges(trace: Any, range_name: str | None = None) -> pl.DataFrame:
    """The iteration ranges of ``trace`` as :func:`tracekit.analyzers.iterations.choose_ranges` picks them
    (``iteration``, ``range_start``, ``range_end``, ``thread``) with the range's ``pid``."""
    from tracekit.analyzers.iterations import choose_ranges

    ranges, _, _ = choose_ranges(trace, range_name)
    return with_range_pids(ranges, trace.ranges)


def with_range_pids(ranges: pl.DataFrame, all_ranges: pl.DataFrame) -> pl.DataFrame:
    """Iteration ranges (``iteration``, ``range_start``, ``range_end``, ``thread``) with the ``pid`` of the
    trace range (``all_ranges``: ``trace.ranges``) they were chosen from."""
    if "pid" in ranges.columns:
        return ranges
    pids = all_ranges.select(
        pl.col("start").alias("range_start"), pl.col("end").alias("range_end"), "thread", "pid"
    ).unique(subset=["range_start", "range_end", "thread"], keep="first")
    return ranges.join(pids, on=["range_start", "range_end", "thread"], how="left", maintain_order="left")


def attribute_trace(
    trace: Any, analysis: Any, cpu_ops: pl.DataFrame | None = None, pieces: bool = False
) -> Attribution:
    """:func:`attribute_idle` of an :class:`~tracekit.analyzers.iterations.IterationAnalysis` of ``trace``."""
    chosen = getattr(analysis, "ranges", None)
    if chosen is None:
        ranges = iteration_ranges(trace, analysis.range_name)
    else:
        ranges = with_range_pids(chosen, trace.ranges)
    ops = trace.ops.select("start", "end", "pid", "correlation")
    return attribute_idle(
        analysis.gaps, ops, trace.api, ranges, analysis.iterations.get_column("index"), cpu_ops, pieces
    )


def kineto_cpu_ops(path: Any) -> pl.DataFrame:
    """The top-level CPU operators (``cpu_op``/``Operator`` events not nested in another on their thread,
    ``ProfilerStep#N`` excluded) of a Kineto trace: ``start``, ``end`` (ns, the reader's clock), ``pid``,
    ``thread``, ``name``. The trace model does not keep them for GPU traces yet: this decodes the file again
    with the reader's :func:`~tracekit.readers.kineto.read_events`."""
    from pathlib import Path

    from tracekit.readers.kineto import read_events
    from tracekit.readers.nesting import nesting_depth

    events = read_events(Path(path))[0]
    frame = events.filter(
        (pl.col("ph") == "X")
        & pl.col("cat_l").is_in(["cpu_op", "operator"])
        & ~pl.col("name").str.contains(r"^ProfilerStep#\d+$")
    ).select(
        "start",
        (pl.col("start") + pl.col("dur_ns")).alias("end"),
        pl.col("pid").cast(pl.Int64, strict=False),
        pl.col("tid")
        .cast(pl.String)
        .str.extract(r"(-?\d+)\s*$", 1)
        .cast(pl.Int64, strict=False)
        .alias("thread"),
        pl.col("name").cast(pl.String),
    )
    return frame.filter(nesting_depth(frame, ["pid", "thread"]) == 0)


# ------------------------------------------------------------------------------------------- CUDA graphs

#: Default device-side gap between consecutive kernels of a CUDA-graph replay, ns: the median of the 2,256
#: kernel-to-kernel gaps of the 10 replays in the study's own Nsight Systems trace (BERT fp16, batch 1,
#: PyTorch + CUDA Graphs, Quadro RTX 8000; p10 256 ns, p90 1,184 ns). A measurement of one GPU, not a law.
GRAPH_KERNEL_GAP_NS = 576

#: What :func:`project_cuda_graphs` assumes, as printed with its result.
GRAPH_ASSUMPTIONS: tuple[str, ...] = (
    "kernels keep their durations (the same kernels, replayed from one graph)",
    "the dispatch, launch, sync and other_api time of the inner gaps (between the iteration's first and "
    "last op) disappears: that host work is captured into the graph",
    "each inner gap becomes max(its in_flight time, kernel_gap_ns): device-side waits already in the trace "
    "stay, and consecutive graph kernels are at least kernel_gap_ns apart",
    "host work before the first op (the leading gap's dispatch, other_api and sync time: input preparation, "
    "and the first operator's own dispatch, which a graph would also remove) is kept, so is everything after "
    "the last op (the trailing gap: post-processing, the final sync, the range close)",
    "one graph launch replaces the first op's launch and in_flight time: it costs graph_launch_ns from its "
    "call to the first kernel",
)


def project_cuda_graphs(
    iterations: pl.DataFrame,
    gap_causes: pl.DataFrame,
    graph_launch_ns: int | None = None,
    kernel_gap_ns: int = GRAPH_KERNEL_GAP_NS,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Projected latency of each iteration if launch and dispatch between kernels disappeared (the iteration
    replayed as one CUDA graph), with the assumptions as data.

    ``iterations``: :func:`analyze_iterations`'s frame (``index``, ``window_start_ns``, ``window_end_ns``,
    ``launch_latency_us``); ``gap_causes``: :func:`attribute_gaps`'s output. ``graph_launch_ns``: time from
    the graph launch call to its first kernel (None: the median over iterations of the trace's own launch
    latency, call start to first op start). Per iteration (ns): projected = busy + leading host time
    (dispatch + other_api + sync of the leading gap) + graph_launch_ns + Σ_inner max(in_flight, kernel_gap_ns)
    + trailing gap; iterations without ops keep their latency. Returns (``index``, ``latency_ms``,
    ``projected_ms``, ``saved_ms``, ``speedup``), and a dict with the assumptions and the summary."""
    source = "given"
    if graph_launch_ns is None:
        median_us = iterations.get_column("launch_latency_us").median() if iterations.height else None
        graph_launch_ns = 0 if median_us is None else round(float(median_us) * 1000)
        source = (
            "median over iterations of this trace's launch latency (launch call start -> first op start)"
            if median_us is not None
            else "no launch in this trace: 0"
        )
    g = gap_causes
    host = pl.col("dispatch_ns") + pl.col("other_api_ns") + pl.col("sync_ns")
    parts = g.group_by("iteration").agg(
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("idle"),
        host.filter(pl.col("position") == "leading").sum().alias("leading_host"),
        pl.max_horizontal("in_flight_ns", pl.lit(kernel_gap_ns))
        .filter(pl.col("position") == "inner")
        .sum()
        .alias("inner"),
        (pl.col("end_ns") - pl.col("start_ns"))
        .filter(pl.col("position") == "trailing")
        .sum()
        .alias("trailing"),
    )
    frame = iterations.select(
        "index", (pl.col("window_end_ns") - pl.col("window_start_ns")).alias("latency")
    ).join(parts.rename({"iteration": "index"}), on="index", how="left", maintain_order="left")
    frame = frame.with_columns(pl.col("idle", "leading_host", "inner", "trailing").fill_null(0))
    busy = pl.col("latency") - pl.col("idle")
    projected = (
        pl.when(busy > 0)
        .then(busy + pl.col("leading_host") + graph_launch_ns + pl.col("inner") + pl.col("trailing"))
        .otherwise(pl.col("latency"))
    )
    frame = frame.select(
        "index",
        (pl.col("latency") / 1e6).alias("latency_ms"),
        (projected / 1e6).alias("projected_ms"),
        ((pl.col("latency") - projected) / 1e6).alias("saved_ms"),
        pl.when(projected > 0).then(pl.col("latency") / projected).alias("speedup"),
    )
    info = {
        "assumptions": list(GRAPH_ASSUMPTIONS),
        "parameters": {
            "graph_launch_ns": {"value": graph_launch_ns, "source": source},
            "kernel_gap_ns": {
                "value": kernel_gap_ns,
                "source": "given"
                if kernel_gap_ns != GRAPH_KERNEL_GAP_NS
                else "default: median kernel-to-kernel gap of the CUDA-graph replays in the study's own "
                "Nsight Systems trace (Quadro RTX 8000)",
            },
        },
        "summary": summarize_columns(frame, ["latency_ms", "projected_ms", "saved_ms", "speedup"]),
    }
    return frame, info
