"""What the host was doing during an idle GPU gap: the ``cpu_context`` of the longest gaps ("host was in").

A gap is named after what held the host for most of it, not after what was in progress at its first
nanosecond: a 15.7 ms gap of a DDP step that opens in the last 40 µs of a 90 µs ``nccl:broadcast`` range and
then spends 15.3 ms in ``aten::unflatten_dense_tensors`` is the operator's (97%), not the broadcast's.

Candidates are the intervals of the iteration's own process (any process for a window of every process)
that overlap the gap: its API calls (on each thread the outermost, ``cudaMemcpy`` rather than the driver call
nested in it), its host ranges (never an iteration's own range, nor a GPU-side range such as Kineto's
``gpu_user_annotation``, which spans the device's work) and its CPU operators (Kineto's ``cpu_op``). One of
them names the gap only when it covers at least half of it:

1. an API call, the one covering the most of the gap (a later one among equals): ``"cudaStreamSynchronize
   (93%)"``;
2. else a host range or CPU operator, the innermost such (the latest-started; on one thread, the one nested
   inside the others): ``"in range nccl:broadcast (80%)"``, ``"in op aten::item (97%)"``; never one that
   holds all of its iteration's device work (from the first op's start to the last one's end: ORT's
   ``SequentialExecutor::Execute`` inside ``model_run``, a module's forward around the whole step), which
   would name every gap of the iteration and so says nothing of any;
3. else ``"several API calls (62%)"`` when API calls together (their union) cover at least half of the gap;
4. else ``"host code outside API calls"``: the host ran code no single call, range or operator held for half
   of the gap (Python, framework dispatch, many short operators).

The share in parentheses is the candidate's overlap with the gap over the gap's length, rounded down to a
whole percent (a share just under 100% never reads 100%).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit.model import Trace, newly_covered, on_host

OUTSIDE = "host code outside API calls"


def _near(frame: pl.DataFrame, bounds: list[tuple[int, int]]) -> pl.DataFrame:
    """The rows of ``frame`` (in order) that may overlap one of ``bounds`` ([start, end) pairs), so that the
    overlap test runs on a few rows rather than on every call of the trace. Where ``start`` is sorted without
    nulls (the trace's API calls and ranges are), a bound's candidates lie between two binary searches: the
    rows from the first whose running maximum of ``end`` passes the bound's start (every earlier row ends at
    or before it) up to the first that starts at or after the bound's end. Else every row. No row that
    overlaps a bound is left out; rows that do not may stay (the caller's test drops them)."""
    starts = frame.get_column("start")
    if (
        frame.height < 2
        or not bounds
        or starts.dtype != pl.Int64
        or frame.schema["end"] != pl.Int64
        or starts.null_count()
        or not starts.is_sorted()
    ):
        return frame
    start = starts.to_numpy()
    reach = np.maximum.accumulate(frame.get_column("end").fill_null(np.iinfo(np.int64).min).to_numpy())
    rows = []
    for s, e in bounds:
        if s is None or e is None:
            return frame
        # rows before `lo` end at or before s (their running reach does); rows from `hi` start at or after e
        lo = int(np.searchsorted(reach, s, side="right"))
        hi = int(np.searchsorted(start, e, side="left"))
        if hi > lo:
            rows.append(np.arange(lo, hi))
    if not rows:
        return frame.clear()
    return frame[np.unique(np.concatenate(rows))]


def _overlapping(probe: pl.DataFrame, frame: pl.DataFrame) -> pl.DataFrame:
    """Each (gap, interval of ``frame``) pair that overlap, of the gap's process, with the overlap in ns."""
    # one pass keeps the few rows overlapping some gap (there are at most LONGEST_GAPS gaps); the join then
    # pairs them with their gaps
    bounds = probe.select("start_ns", "end_ns").unique().rows()
    src = _near(frame.select("start", "end", "pid", "thread", "name"), bounds).filter(
        (pl.col("end") > pl.col("start"))
        & pl.any_horizontal(
            [(pl.col("start") < e) & (pl.col("end") > s) for s, e in bounds] or [pl.lit(False)]
        )
    )
    if src.is_empty() or probe.is_empty():
        return pl.DataFrame(
            schema={
                "_row": pl.UInt32,
                "start": pl.Int64,
                "end": pl.Int64,
                "pid": pl.Int64,
                "thread": pl.Int64,
                "name": pl.String,
                "overlap": pl.Int64,
            }
        )
    pairs = probe.join_where(
        src.with_columns(pl.col("pid").cast(pl.Int64), pl.col("thread").cast(pl.Int64)),
        pl.col("start") < pl.col("end_ns"),
        pl.col("end") > pl.col("start_ns"),
    ).filter(pl.col("probe_pid").is_null() | pl.col("pid").is_null() | (pl.col("pid") == pl.col("probe_pid")))
    return pairs.select(
        "_row",
        "start",
        "end",
        "pid",
        "thread",
        "name",
        (pl.min_horizontal("end", "end_ns") - pl.max_horizontal("start", "start_ns")).alias("overlap"),
    )


def _share(overlap: pl.Expr) -> pl.Expr:
    """``overlap`` over the gap's length as a whole percent, rounded down."""
    return (overlap * 100 // pl.col("duration_ns")).cast(pl.Int64).cast(pl.String)


def cpu_context(
    trace: Trace, longest: pl.DataFrame, ranges: pl.DataFrame, work: pl.DataFrame | None = None
) -> pl.DataFrame:
    """``_row`` and ``cpu_context`` for each gap of ``longest`` (``_row``, ``iteration``, ``start_ns``,
    ``end_ns``, ``duration_ns``), under the rules of this module; ``ranges`` are the iteration windows
    (``iteration``, ``range_start``, ``range_end``, and ``pid`` where a window belongs to one process);
    ``work``: each iteration's device-work span (``iteration``, ``work_start``, ``work_end``), whose
    enclosing ranges and operators name no gap (rule 2)."""
    probe = longest.select(
        "_row", "iteration", "start_ns", "end_ns", pl.col("duration_ns").cast(pl.Int64)
    ).filter(pl.col("duration_ns") > 0)
    if "pid" in ranges.columns:
        owner = ranges.select("iteration", pl.col("pid").cast(pl.Int64).alias("probe_pid")).unique(
            "iteration"
        )
        probe = probe.join(owner, on="iteration", how="left")
    else:
        probe = probe.with_columns(pl.lit(None, pl.Int64).alias("probe_pid"))
    half = pl.col("overlap") * 2 >= pl.col("duration_ns")  # at least half of the gap, in exact integers

    # 1. API calls: on each thread the outermost of those in progress together, then the one covering most
    calls = _overlapping(probe, trace.api).sort(
        ["_row", "pid", "thread", "start", "end"],
        descending=[False, False, False, False, True],
        nulls_last=True,
    )
    outer_reach = pl.col("end").cum_max().shift(1).over(["_row", "pid", "thread"])
    outermost = calls.filter(outer_reach.is_null() | (pl.col("start") >= outer_reach))
    api_named = (
        outermost.join(probe.select("_row", "duration_ns"), on="_row")
        .filter(half)
        .sort(["overlap", "start"], descending=True)
        .unique("_row", keep="first")
        .select(
            "_row",
            pl.concat_str(pl.col("name"), pl.lit(" ("), _share(pl.col("overlap")), pl.lit("%)")).alias("api"),
        )
    )

    # 2. host ranges and CPU operators: the innermost (latest-started) of those covering most of the gap
    windows = ranges.select(pl.col("range_start").alias("start"), pl.col("range_end").alias("end"))
    host_ranges = trace.ranges.filter(on_host()).join(windows, on=["start", "end"], how="anti")
    held = pl.concat(
        [
            _overlapping(probe, host_ranges).with_columns(pl.lit("in range ").alias("prefix")),
            _overlapping(probe, trace.cpu_ops).with_columns(pl.lit("in op ").alias("prefix")),
        ]
    )
    if work is not None and not held.is_empty():
        # (filtered on the joined rows themselves: a join keeps no row order unless asked)
        around = (
            pl.col("work_start").is_not_null()
            & (pl.col("start") <= pl.col("work_start"))
            & (pl.col("end") >= pl.col("work_end"))
        )
        held = (
            held.join(probe.select("_row", "iteration"), on="_row")
            .join(work, on="iteration", how="left")
            .filter(~around)
            .drop("iteration", "work_start", "work_end")
        )
    held_named = (
        held.join(probe.select("_row", "duration_ns"), on="_row")
        .filter(half)
        .sort(["start", "end"], descending=[True, False], nulls_last=True)
        .unique("_row", keep="first")
        .select(
            "_row",
            pl.concat_str(
                pl.col("prefix"), pl.col("name"), pl.lit(" ("), _share(pl.col("overlap")), pl.lit("%)")
            ).alias("held"),
        )
    )

    # 3. API calls together: the union of the (outermost) calls' overlaps with the gap
    clipped = outermost.join(probe.select("_row", "start_ns", "end_ns", "duration_ns"), on="_row").select(
        "_row",
        "duration_ns",
        pl.max_horizontal("start", "start_ns").alias("s"),
        pl.min_horizontal("end", "end_ns").alias("e"),
    )
    union = (
        clipped.sort(["_row", "s"])
        .with_columns(newly_covered("s", "e", "_row").alias("new"))
        .group_by("_row")
        .agg(pl.col("new").sum().alias("overlap"), pl.col("duration_ns").first())
        .filter(half)
        .select(
            "_row",
            pl.concat_str(pl.lit("several API calls ("), _share(pl.col("overlap")), pl.lit("%)")).alias(
                "calls"
            ),
        )
    )

    return (
        longest.select("_row")
        .join(api_named, on="_row", how="left")
        .join(held_named, on="_row", how="left")
        .join(union, on="_row", how="left")
        .select("_row", pl.coalesce("api", "held", "calls", pl.lit(OUTSIDE)).alias("cpu_context"))
    )
