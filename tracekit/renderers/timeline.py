"""A timeline to look at: one analyzed trace as Chrome trace-event JSON (Perfetto's ``ui.perfetto.dev`` and
``chrome://tracing`` open it), written by ``tracekit analyze TRACE --timeline out.json``.

What it holds (Trace Event Format: complete events ``ph: "X"`` with ``ts``/``dur`` in **microseconds**, counter
events ``ph: "C"``, metadata ``ph: "M"`` naming processes and threads; every ``pid``/``tid`` an integer):

- process 1, "tracekit analysis": the track "iterations" (one slice per analyzed iteration over its latency
  window, with latency, busy, utilization and idle time as args), the track "idle by cause" (every idle gap
  of those iterations cut into its attributed pieces, each a slice named by its cause: ``dispatch``,
  ``launch``, ``sync``, ``other_api``, ``in_flight``; they sum to the analysis' idle time to the
  nanosecond) and the counter "utilization" (busy / latency of each iteration over its window, 0 between
  windows);
- process 2, "host": the trace's own ranges, API calls and CPU operators, one track per host thread and kind;
- process 3, "device" (GPU traces: a track per device and stream) or "CPU operators" (CPU-only traces: a
  track per thread): the trace's ops.

Times count from the trace's earliest event (``otherData.time_origin_ns`` on the trace's clock), so ``ts``
values stay small and keep nanoseconds exactly (three decimals). Slices on one track must nest or be
disjoint to display; a track whose events overlap without nesting (rare: e.g. NVTX start/end ranges) is split
into lanes, each named with its lane number. Built column-wise with polars (``struct.json_encode``), so a trace
of a million kernels is a few seconds' work, not a Python loop per event.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tracekit.renderers.tabular import round_frame

if TYPE_CHECKING:
    from tracekit.analysis import Analysis

#: The processes of the timeline.
ANALYSIS_PID, HOST_PID, DEVICE_PID = 1, 2, 3
#: Tracks of the analysis process.
ITERATIONS_TID, IDLE_TID = 1, 2
#: Name of the utilization counter.
UTILIZATION_COUNTER = "utilization"


def _us(column: str, origin: int) -> pl.Expr:
    """``column`` (ns) as µs from ``origin``, rounded to the ns."""
    return ((pl.col(column) - origin) / 1000.0).round(3)


def _dur_us(start: str, end: str) -> pl.Expr:
    return ((pl.col(end) - pl.col(start)) / 1000.0).round(3)


def nesting_lanes(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A lane per event (0, 1, ...) so that on every lane the events nest or are disjoint; events must come
    sorted by start (ties: longer first). Disjoint or nested tracks (nearly all) stay on lane 0."""
    n = len(starts)
    lanes = np.zeros(n, dtype=np.int64)
    if n < 2:
        return lanes
    if np.all(starts[1:] >= np.maximum.accumulate(ends)[:-1]):
        return lanes  # disjoint: the common case, checked without a loop
    stacks: list[list[int]] = []  # per lane: the ends of the open events
    for i in range(n):
        s, e = int(starts[i]), int(ends[i])
        for lane, stack in enumerate(stacks):
            while stack and stack[-1] <= s:
                stack.pop()
            if not stack or e <= stack[-1]:
                stack.append(e)
                lanes[i] = lane
                break
        else:
            stacks.append([e])
            lanes[i] = len(stacks) - 1
    return lanes


class _Tracks:
    """Integer tids and their names, per process."""

    def __init__(self) -> None:
        self.names: dict[tuple[int, int], str] = {}
        self._next: dict[int, int] = {}

    def add(self, pid: int, name: str) -> int:
        tid = self._next.get(pid, 1)
        self._next[pid] = tid + 1
        self.names[(pid, tid)] = name
        return tid


def _slices(
    frame: pl.DataFrame,
    pid: int,
    key: list[str],
    label: pl.Expr,
    track_name: Any,
    category: pl.Expr,
    args: list[pl.Expr],
    origin: int,
    tracks: _Tracks,
) -> list[pl.DataFrame]:
    """Complete events of ``frame`` (``start``, ``end`` ns), one track per distinct ``key`` (and lane); an
    event without a start or an end (not recorded: the analysis counts it, warned) has no slice to draw."""
    frame = frame.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    if frame.is_empty():
        return []
    frame = frame.sort([*key, "start", "end"], descending=[False] * len(key) + [False, True], nulls_last=True)
    out = []
    for group_key, part in frame.group_by(key, maintain_order=True):
        lanes = nesting_lanes(part.get_column("start").to_numpy(), part.get_column("end").to_numpy())
        part = part.with_columns(pl.Series("_lane", lanes))
        for lane in range(int(lanes.max()) + 1 if len(lanes) else 0):
            name = track_name(group_key) + (f" (lane {lane + 1})" if lane else "")
            tid = tracks.add(pid, name)
            rows = part.filter(pl.col("_lane") == lane)
            out.append(
                rows.select(
                    label.cast(pl.String).alias("name"),
                    category.cast(pl.String).alias("cat"),
                    pl.lit("X").alias("ph"),
                    _us("start", origin).alias("ts"),
                    _dur_us("start", "end").alias("dur"),
                    pl.lit(pid).alias("pid"),
                    pl.lit(tid).alias("tid"),
                    pl.struct(args).alias("args") if args else pl.lit(None).alias("args"),
                )
            )
    return out


def _encode(frames: list[pl.DataFrame]) -> list[str]:
    """Each row as one JSON object (polars does the encoding)."""
    lines: list[str] = []
    for frame in frames:
        if frame.height:
            if frame.get_column("args").dtype == pl.Null:
                frame = frame.drop("args")
            lines += frame.select(pl.struct(pl.all()).struct.json_encode()).to_series().to_list()
    return lines


def _origin(analyzed: Analysis) -> int:
    trace = analyzed.trace_data
    starts = [
        f.get_column("start").min()
        for f in (trace.ops, trace.api, trace.ranges, trace.cpu_ops)
        if f.height and "start" in f.columns
    ]
    starts = [s for s in starts if s is not None]
    windows = analyzed.iterations.get_column("window_start_ns").min() if analyzed.iterations.height else None
    if windows is not None:
        starts.append(windows)
    return int(min(starts)) if starts else 0


def timeline_events(analyzed: Analysis, pieces: pl.DataFrame) -> dict[str, Any]:
    """The trace-event document of ``analyzed`` (module docstring); ``pieces``: the idle pieces of its
    iterations (:func:`tracekit.analyzers.report.idle_pieces_of`). Returns ``{"lines": [JSON objects as
    text], "other": otherData}`` (:func:`render_timeline` joins them)."""
    trace, analysis = analyzed.trace_data, analyzed
    origin = _origin(analyzed)
    tracks = _Tracks()
    frames: list[pl.DataFrame] = []
    cpu = analysis.device == "cpu"

    # -- the analysis: iterations, idle pieces, utilization counter
    # figures as the JSON writers write them (12 significant digits: 0.630345, not 0.6303449999999999)
    iters = round_frame(analyzed.iterations.sort("window_start_ns"))
    tracks.names[(ANALYSIS_PID, ITERATIONS_TID)] = "iterations"
    tracks.names[(ANALYSIS_PID, IDLE_TID)] = "idle by cause"
    tracks._next[ANALYSIS_PID] = IDLE_TID + 1
    if iters.height:
        wanted = ["latency_ms", "gpu_busy_ms", "gpu_utilization", "idle_ms", "synchronized"]
        # windows that overlap (a synchronized range inside earlier GPU work, --split-idle windows of a host
        # that ran ahead) go on lanes of their own, as on the other tracks: misnested slices on one track are
        # dropped by Perfetto (hostile20)
        iters = iters.sort(["window_start_ns", "window_end_ns"], descending=[False, True])
        lanes = nesting_lanes(
            iters.get_column("window_start_ns").to_numpy(), iters.get_column("window_end_ns").to_numpy()
        )
        lane_tids = [ITERATIONS_TID] + [
            tracks.add(ANALYSIS_PID, f"iterations (lane {lane + 1})")
            for lane in range(1, int(lanes.max()) + 1)
        ]
        iters = iters.with_columns(pl.Series("_tid", [lane_tids[lane] for lane in lanes], dtype=pl.Int64))
        frames.append(
            iters.select(
                pl.format("iteration {}", pl.col("index")).alias("name"),
                pl.lit("iteration").alias("cat"),
                pl.lit("X").alias("ph"),
                _us("window_start_ns", origin).alias("ts"),
                _dur_us("window_start_ns", "window_end_ns").alias("dur"),
                pl.lit(ANALYSIS_PID).alias("pid"),
                pl.col("_tid").alias("tid"),
                pl.struct(
                    [pl.col("index").alias("iteration"), *[pl.col(c) for c in wanted if c in iters.columns]]
                ).alias("args"),
            )
        )
        # (an iteration whose utilization the analysis withholds, its device ops untimed, draws no sample: the
        # counter does not say 0.0 where nothing is known)
        util = pl.col("gpu_utilization") if "gpu_utilization" in iters.columns else pl.lit(0.0)
        up = iters.select(pl.col("window_start_ns").alias("t"), util.cast(pl.Float64).alias("v"))
        unknown = up.filter(pl.col("v").is_null()).get_column("t")
        up = up.filter(pl.col("v").is_not_null())
        down = iters.select(pl.col("window_end_ns").alias("t"), pl.lit(0.0).alias("v")).filter(
            ~pl.col("t").is_in(unknown.implode())
        )
        # a window's end coinciding with the next one's start keeps the next one's value
        counter = pl.concat([down, up]).unique(subset="t", keep="last", maintain_order=True).sort("t")
        frames.append(
            counter.select(
                pl.lit(UTILIZATION_COUNTER).alias("name"),
                pl.lit("utilization").alias("cat"),
                pl.lit("C").alias("ph"),
                _us("t", origin).alias("ts"),
                pl.lit(ANALYSIS_PID).alias("pid"),
                pl.lit(0).alias("tid"),
                pl.struct(pl.col("v").alias(f"{'operator' if cpu else 'GPU'} busy / latency")).alias("args"),
            )
        )
    if pieces.height:
        frames.append(
            pieces.sort("start_ns").select(
                pl.col("cause").cast(pl.String).alias("name"),
                pl.lit("idle").alias("cat"),
                pl.lit("X").alias("ph"),
                _us("start_ns", origin).alias("ts"),
                _dur_us("start_ns", "end_ns").alias("dur"),
                pl.lit(ANALYSIS_PID).alias("pid"),
                pl.lit(IDLE_TID).alias("tid"),
                pl.struct(
                    pl.col("iteration"),
                    *([pl.col("cpu_op")] if "cpu_op" in pieces.columns else []),
                ).alias("args"),
            )
        )

    # -- the trace's own events
    def host_name(kind: str) -> Any:
        return lambda k: f"pid {k[0]} thread {k[1]}: {kind}"

    ranges = trace.ranges.filter(pl.col("end").is_not_null())
    frames += _slices(
        ranges,
        HOST_PID,
        ["pid", "thread"],
        pl.col("name"),
        host_name("ranges"),
        pl.when(pl.col("domain") == "gpu").then(pl.lit("gpu range")).otherwise(pl.lit("range")),
        [pl.col("domain"), pl.col("depth")],
        origin,
        tracks,
    )
    frames += _slices(
        trace.api,
        HOST_PID,
        ["pid", "thread"],
        pl.col("name"),
        host_name("API calls"),
        pl.lit("api"),
        [pl.col("correlation")],
        origin,
        tracks,
    )
    if trace.cpu_ops.height and {"start", "end", "name"} <= set(trace.cpu_ops.columns):
        key = [c for c in ("pid", "thread") if c in trace.cpu_ops.columns]
        frames += _slices(
            trace.cpu_ops,
            HOST_PID,
            key,
            pl.col("name"),
            host_name("CPU operators"),
            pl.lit("cpu_op"),
            [],
            origin,
            tracks,
        )

    def ops_name(k: tuple[Any, ...]) -> str:
        if cpu:
            return f"thread {k[1]} operators"
        return f"{'GPU' if k[0] is not None and k[0] >= 0 else 'device'} {k[0]} stream {k[1]}"

    ops_key = ["device", "stream"]
    frames += _slices(
        trace.ops,
        DEVICE_PID,
        ops_key,
        pl.col("name").fill_null(pl.col("kind").cast(pl.String)),
        ops_name,
        pl.col("kind"),
        [pl.col("correlation"), pl.col("pid").alias("launching_pid")],
        origin,
        tracks,
    )

    meta = [
        {
            "ph": "M",
            "name": "process_name",
            "pid": ANALYSIS_PID,
            "tid": 0,
            "args": {"name": "tracekit analysis"},
        },
        {"ph": "M", "name": "process_name", "pid": HOST_PID, "tid": 0, "args": {"name": "host"}},
        {
            "ph": "M",
            "name": "process_name",
            "pid": DEVICE_PID,
            "tid": 0,
            "args": {"name": "CPU operators" if cpu else "device"},
        },
    ]
    meta += [
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}
        for pid in (ANALYSIS_PID, HOST_PID, DEVICE_PID)
    ]
    for (pid, tid), name in sorted(tracks.names.items()):
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        meta.append(
            {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}}
        )
    idle_ns = int((pieces.get_column("end_ns") - pieces.get_column("start_ns")).sum()) if pieces.height else 0
    other = {
        "made_by": "tracekit analyze --timeline",
        "trace": str(trace.meta.get("path") or ""),
        "synthetic": bool(trace.meta.get("synthetic", False)),
        "device": analysis.device,
        "range": analysis.range_name,
        "time_origin_ns": origin,
        "time_unit": "ts and dur in microseconds from time_origin_ns",
        "iterations": iters.height,
        "idle_ns_total": idle_ns,
        "open_in": "https://ui.perfetto.dev (Open trace file) or chrome://tracing",
    }
    lines = [json.dumps(m) for m in meta] + _encode(frames)
    return {"lines": lines, "other": other}


def render_timeline(events: dict[str, Any]) -> str:
    """The JSON text: ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``."""
    body = ",\n".join(events["lines"])
    other = json.dumps(events["other"], indent=1)
    return f'{{"displayTimeUnit": "ms",\n"otherData": {other},\n"traceEvents": [\n{body}\n]}}\n'


def check_timeline_output(path: str, trace: str, output: str | None) -> None:
    """TracekitError (exit 2) before any work when ``--timeline FILE`` is named for another format (an image,
    CSV: :func:`tracekit.io.check_named_for`), would replace the trace or ``-o``'s file, is a folder, or its
    folder does not exist."""
    from pathlib import Path

    from tracekit.errors import TracekitError
    from tracekit.io import check_file_target, check_named_for, check_outputs, same_file

    target = Path(path)
    check_outputs([target], [trace], option="--timeline")
    if output and same_file(output, target):
        raise TracekitError("--timeline and -o name the same file", target)
    check_named_for(
        target,
        "--timeline",
        "Chrome trace-event JSON (for ui.perfetto.dev)",
        [".json"],
        "name it .json (or .json.gz)",
        gzip=True,
    )
    check_file_target(target, "--timeline")


def write_timeline(analyzed: Analysis, path: str) -> None:
    """Write the timeline of ``analyzed`` to ``path`` atomically (gzipped when it ends in ``.gz``)."""
    import gzip

    from tracekit.analyzers.report import idle_pieces_of
    from tracekit.io import write_bytes_atomic

    text = render_timeline(timeline_events(analyzed, idle_pieces_of(analyzed)))
    data = text.encode()
    if str(path).lower().endswith(".gz"):  # (as check_timeline_output reads the name: T.JSON.GZ too)
        data = gzip.compress(data, compresslevel=6)
    write_bytes_atomic(path, data)
