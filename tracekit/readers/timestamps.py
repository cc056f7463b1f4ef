"""Timestamps impossibly far from the rest of a trace: one rule for every reader that places events in time
(Nsight Systems SQLite, Kineto).

A damaged row or an exporter's bug can stamp one device op 292 years after the others (a start of 2^63 - 807
ns in an nsys export, ``"ts": 9.2e15`` in a Kineto trace, -2^63 ns). Read as it is, that op stretches its
iteration to 292 years (an "unsynchronized" latency of 9.2e12 ms, a framework-bound verdict with no doubt),
takes every ``--split-idle`` window's kernels with it, and wraps int64 arithmetic downstream. Such events are
left out, with one warning that counts them and says where they were:

- where the trace says when its capture ran (nsys: ``ANALYSIS_DETAILS``, the session clock's 0 to its
  ``duration``) and none of its ranges lies outside that, an event starting more than
  :data:`CAPTURE_SLACK_NS` before the capture began or after it ended, or ending after it (every real export's
  device ops and calls lie within it: checked on the eleven real and sample exports). Inside the capture
  nothing is far, however long its silences (a server traced for hours waits between requests);
- otherwise (no capture stated: Kineto, an nsys export without ``ANALYSIS_DETAILS``; or ranges outside the
  stated capture, whose record is then contradicted and said so), the starts of every event and range are cut
  into clusters where two neighbours lie more than :data:`FAR_NS` apart. A cluster is kept when it is the
  largest, or when it holds ranges beside its device ops or calls (a phase of the program of its own: a
  profiler paused for two hours, then resumed). An event of any other cluster is far (a lone row hours from
  everything, no range beside it), and so is one that ends more than :data:`FAR_NS` after its cluster's last
  start (a kernel of 28 years). Only relative: Kineto stamps events in epoch microseconds (~1.7e15 µs), so no
  absolute bound holds;
- in any trace, an event whose end passes 2^63 ns (it would wrap around to a negative time).

Only a minority is ever left out: a kind of event (device ops, API calls) of which half or more would go is
kept whole and said (a device clock other than the host's is a different problem, said by the analysis'
clock checks).

Ranges (NVTX ranges, Kineto annotations) place the trace, and are judged too: one starting outside the stated
capture with no device work outside it beside it, or (no capture) in a cluster of nothing but ranges while
the trace's body holds other events, or ending as an event may not (above; a range may last through a
silence, so its end is late only where no event starts within :data:`FAR_NS` of it), is left out when a minority of
the ranges (an NVTX range 5 h after a 20-ms capture had been an iteration of no work; an iteration whose end
was damaged, one of 5 hours swallowing every later one). A range of a trace of ranges alone is judged only
against a stated capture.

A device op whose launch call was left out while the op was not keeps its own time: the correlation id joins
the call's start (which decides the op's iteration) to the op, and only the call's time is damaged
(:func:`launched_by_far_calls`; the readers take the op's link away, so that it is placed by its own start).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import polars as pl

from tracekit.model import HOUR_NS

#: how far (ns) an event may lie from the main group of a trace's events: an hour (a profiler's capture of one
#: process holds no silence that long: a scheduled profiler writes one trace per active cycle)
FAR_NS = HOUR_NS
#: how far (ns) an event may start outside the capture the trace says it made: a minute
CAPTURE_SLACK_NS = 60 * 10**9


def _points(series: pl.Series) -> np.ndarray:
    """The non-null values of ``series`` as float64 (distances of an hour need no nanosecond precision, and
    float64 differences of int64 times cannot wrap around)."""
    return series.drop_nulls().cast(pl.Float64).to_numpy()


def _span(*groups: Iterable[pl.Series]) -> float:
    """max - min of the non-null values of every series (ns, as float64); 0 when there are none."""
    lows, highs = [], []
    for series in (s for group in groups for s in group):
        if series.len() > series.null_count():
            lows.append(float(series.min()))  # type: ignore[arg-type]
            highs.append(float(series.max()))  # type: ignore[arg-type]
    return max(highs) - min(lows) if lows else 0.0


def main_group(starts: Sequence[pl.Series]) -> tuple[float, float] | None:
    """[first, last] start (ns) of the largest group of ``starts`` (groups cut where two neighbouring starts
    lie more than :data:`FAR_NS` apart: :func:`_clusters`, with no ranges); None when all starts form one
    group, or no group holds more than half of them."""
    cuts = _clusters(list(starts), [])
    return None if cuts.kept.all() else cuts.largest


def _distance(ns: float) -> str:
    """``ns`` as the largest whole unit that fits (years, days, hours)."""
    for unit, size in (("years", 365.25 * 86_400e9), ("days", 86_400e9), ("hours", 3_600e9)):
        if ns >= size:
            return f"{ns / size:,.0f} {unit}"
    return f"{ns / 1e9:,.0f} s"


class _Cuts(NamedTuple):
    """The trace's events cut into clusters (:func:`_clusters`), per cluster (in time order)."""

    lows: np.ndarray  # first start
    highs: np.ndarray  # last start
    kept: np.ndarray  # kept (its events are not far)
    largest: tuple[float, float]  # the largest cluster's first and last start
    with_events: np.ndarray  # holds events that may be left out (device ops, calls)
    only_ranges: np.ndarray  # holds ranges and nothing else

    def of(self, values: pl.Series) -> np.ndarray:
        """The cluster of each of ``values`` (a null: the first)."""
        return np.clip(
            np.searchsorted(
                self.lows, values.cast(pl.Float64).fill_null(self.lows[0]).to_numpy(), side="right"
            )
            - 1,
            0,
            None,
        )


def _clusters(
    starts: Sequence[pl.Series], anchors: Sequence[pl.Series], ranges: Sequence[pl.Series] = ()
) -> _Cuts:
    """The trace's events cut into clusters where two neighbouring starts lie more than :data:`FAR_NS` apart.
    A cluster is kept when it is the largest, or when it holds both ranges or other events that place the trace
    (``ranges``, ``anchors``) and events that may be left out (``starts``), or events of two or more of
    ``starts`` (device ops and API calls), at least half as many as the largest cluster holds: a phase of the
    program of its own (a profiler paused for two hours, then resumed), not a damaged row; every cluster, when
    none holds more than half the events (no body of the trace to be far from)."""
    kinds = [
        (0, [_points(s) for s in starts]),
        (1, [_points(a) for a in anchors]),
        (2, [_points(r) for r in ranges]),
    ]
    parts = [p for _, group in kinds for p in group]
    points = np.concatenate(parts) if parts else np.zeros(0)
    kind = np.concatenate(
        [np.full(p.size, k, dtype=np.int64) for k, group in kinds for p in group]
        or [np.zeros(0, dtype=np.int64)]
    )
    # (which of ``starts`` each point is, -1 for the others)
    series = np.concatenate(
        [
            np.full(p.size, i if k == 0 else -1, dtype=np.int64)
            for k, group in kinds
            for i, p in enumerate(group)
        ]
        or [np.zeros(0, dtype=np.int64)]
    )
    if points.size == 0:
        one = np.ones(1, dtype=bool)
        return _Cuts(np.zeros(1), np.zeros(1), one, (0.0, 0.0), ~one, ~one)
    order = np.argsort(points, kind="stable")
    points, kind, series = points[order], kind[order], series[order]
    bounds = np.concatenate(([0], np.flatnonzero(np.diff(points) > FAR_NS) + 1, [points.size]))
    lows, highs = points[bounds[:-1]], points[bounds[1:] - 1]
    per_kind = {k: np.add.reduceat((kind == k).astype(np.int64), bounds[:-1]) for k in (0, 1, 2)}
    count = {k: n > 0 for k, n in per_kind.items()}
    # (a cluster holding events of two or more of ``starts`` -- device ops beside the calls that launched
    # them -- is work of its own, as one with ranges beside its events is: 30 CPU operators 5 h after every
    # kernel and its call had made all the GPU work 'far')
    series_in = np.zeros(bounds.size - 1, dtype=np.int64)
    for i in range(len(starts)):
        series_in += np.add.reduceat((series == i).astype(np.int64), bounds[:-1]) > 0
    both = series_in >= 2
    # (the trace's body is where most of its work is: the events that may be left out and those that place it;
    # ranges count only in a trace of nothing else. 30 lone annotations 5 h after 3 iterations holding all the
    # work had been its body, and the work's cluster 'far')
    weight = (kind != 2).astype(np.int64)
    if not weight.any():
        weight = np.ones(points.size, dtype=np.int64)
    sizes = np.add.reduceat(weight, bounds[:-1])
    best = int(np.argmax(sizes))
    # (... when it holds at least half as many of them as the body does: a kernel and its launch call both
    # stamped 285 years away are a damaged pair, not a phase -- kept, the one window had read 9e12 ms)
    both &= 2 * per_kind[0] >= per_kind[0][best]
    kept = ((count[1] | count[2]) & count[0]) | both
    kept[best] = True
    if sizes[best] * 2 <= weight.sum():  # no cluster holds most of the trace: none is the trace, none is far
        kept[:] = True
    only_ranges = count[2] & ~count[0] & ~count[1]
    return _Cuts(lows, highs, kept, (float(lows[best]), float(highs[best])), count[0], only_ranges)


def far_events(
    starts: Mapping[str, pl.Series],
    anchors: Sequence[pl.Series] = (),
    capture: tuple[int, int] | None = None,
    durations: Mapping[str, pl.Series] | None = None,
    ends: Mapping[str, pl.Series] | None = None,
    ranges: Mapping[str, pl.Series] | None = None,
) -> tuple[dict[str, pl.Series], str | None]:
    """Which events lie impossibly far from the rest of the trace (see the module doc), and the warning that
    says so (None when none does).

    ``starts``: a noun ("device ops", "API calls") -> the start times (ns, nulls allowed: a null is never far)
    of events that may be left out; ``anchors``: start times of other events that place the trace (a CPU
    operator), never left out; ``ranges``: a noun ("NVTX ranges") -> the start times of the trace's ranges,
    which place it as anchors do, but may be left out themselves where they lie far from all its work (below);
    ``capture``: (start, end) of the capture on the trace's clock (ns), when the trace says it;
    ``durations``: per noun, the durations (ns) where the reader computes the ends as start + duration;
    ``ends``: per noun, the end times (ns) where the reader has them.

    Where a capture is stated and no anchor, nor any range beside device ops or calls that lie outside it
    too, lies outside it, an event starting outside it (with :data:`CAPTURE_SLACK_NS`), or ending after it,
    is far, and so is a range starting outside it with no such work beside it (an NVTX range 5 h after a
    20-ms capture: an iteration with no work). Otherwise (no capture, or one contradicted by what lies outside
    it) the events are cut into clusters (:func:`_clusters`), and an event is far when its cluster is not kept
    (a lone row hours from the rest, no range beside it), or when it ends more than :data:`FAR_NS` after its
    cluster's last start (a kernel of 28 years); a range is far when its cluster holds nothing but ranges and
    is not kept, where the trace's body holds other events (a trace of ranges alone has nothing else to place
    it). A range's end (``ends``/``durations`` of its noun) is judged as an event's is (after the stated
    capture, or more than :data:`FAR_NS` from every event's start: an 'iteration' whose end was damaged had
    swallowed every later iteration into one of 5 hours; a step that waited 90 minutes for the next one to
    begin ends beside that one's start, and is kept). An end past 2^63 ns (which would wrap around to
    a negative time) is far in any case. Only a minority of each noun is left out. Returns a boolean Series per noun of ``starts`` and ``ranges`` (True: leave it
    out), of its input's length."""
    ranges = dict(ranges or {})
    end_values: dict[str, pl.Series] = {}
    for noun, series in (*starts.items(), *ranges.items()):
        if ends is not None and noun in ends:
            end_values[noun] = ends[noun].cast(pl.Float64)
        elif durations is not None and noun in durations:
            # (in float64: start + duration cannot wrap around there)
            end_values[noun] = series.cast(pl.Float64) + durations[noun].cast(pl.Float64)
    nothing = {
        noun: pl.Series(noun, np.zeros(s.len(), dtype=bool)) for noun, s in (*starts.items(), *ranges.items())
    }
    if capture is None and _span(starts.values(), anchors, ranges.values(), end_values.values()) <= FAR_NS:
        # (no group lies apart, no end far past the starts: the common case, answered without sorting)
        if all(not (e.max() or 0) >= 2.0**63 for e in end_values.values()):  # type: ignore[operator]
            return nothing, None
    contradicted = anchors_out = 0
    #: per range noun, the ranges outside the stated capture with no work outside it beside them
    lone: dict[str, pl.Series] = {}
    if capture is not None:
        lo, hi = capture[0] - CAPTURE_SLACK_NS, capture[1] + CAPTURE_SLACK_NS

        def outside(s: pl.Series) -> pl.Series:
            v = s.cast(pl.Float64)
            return ((v < lo) | (v > hi)).fill_null(False)

        marks = np.concatenate([_points(a) for a in anchors]) if anchors else np.zeros(0)
        contradicted = anchors_out = int(((marks < lo) | (marks > hi)).sum())
        if ranges:
            out = _clusters(
                [s.filter(outside(s)) for s in starts.values()],
                [],
                [r.filter(outside(r)) for r in ranges.values()],
            )
            for noun, series in ranges.items():
                beside = pl.Series(noun, out.with_events[out.of(series)])
                contradicted += int((outside(series) & beside).sum())
                lone[noun] = outside(series) & ~beside
    stated = capture if capture is not None and not contradicted else None
    cuts = _clusters(list(starts.values()), list(anchors), list(ranges.values()))
    apart = not bool(cuts.kept.all())  # some cluster is not kept
    body = not bool(cuts.only_ranges[int(np.searchsorted(cuts.lows, cuts.largest[0]))])
    far: dict[str, pl.Series] = {}
    #: per kind (False: events, True: ranges): "N nouns" left out, "N of M nouns" kept (too many to leave out as
    #: damaged rows), and the first far one of each reason (capture, group, end, late) of those left out and of
    #: those kept
    left: dict[bool, list[str]] = {False: [], True: []}
    kept: dict[bool, list[str]] = {False: [], True: []}
    examples: dict[tuple[bool, bool], dict[str, int]] = {
        (r, k): {} for r in (False, True) for k in (False, True)
    }
    for noun, series in (*starts.items(), *ranges.items()):
        values = series.cast(pl.Float64)
        none = nothing[noun]
        reasons = {"capture": none, "group": none, "end": none, "late": none}
        where = cuts.of(series)  # each event's cluster (by its start; a null start: never far by it)
        is_range = noun in ranges and noun not in starts
        if is_range:
            if stated is not None:
                reasons["capture"] = lone[noun]
            elif apart and body:
                reasons["group"] = (
                    pl.Series(noun, ~cuts.kept[where] & cuts.only_ranges[where]) & values.is_not_null()
                )
        elif stated is not None:
            lo, hi = stated[0] - CAPTURE_SLACK_NS, stated[1] + CAPTURE_SLACK_NS
            reasons["capture"] = ((values < lo) | (values > hi)).fill_null(False)
        elif apart:
            reasons["group"] = pl.Series(noun, ~cuts.kept[where]) & values.is_not_null()
        end = end_values.get(noun)
        if end is not None:
            reasons["end"] = (end >= 2.0**63).fill_null(False)
            if stated is not None:
                limit = pl.Series(noun, np.full(series.len(), stated[1] + CAPTURE_SLACK_NS, dtype=np.float64))
            elif is_range:
                # a range may last through a silence (an idle server's step, waiting for the next request): its
                # end is late only where no event of the trace starts within FAR_NS of it (the cluster whose
                # first start is the last at or before end + FAR_NS: its last start + FAR_NS)
                reach = end.cast(pl.Float64).fill_null(float("-inf")).to_numpy() + FAR_NS
                beside = np.maximum(np.searchsorted(cuts.lows, reach, side="right") - 1, where)
                limit = pl.Series(noun, cuts.highs[beside] + FAR_NS)
            else:
                limit = pl.Series(noun, cuts.highs[where] + FAR_NS)
            reasons["late"] = ((end > limit) & ~reasons["end"]).fill_null(False)
        mask = reasons["capture"] | reasons["group"] | reasons["end"] | reasons["late"]
        count = int(mask.sum())
        total = series.len() - series.null_count()
        far[noun] = none
        if not count:
            continue
        minority = count * 2 < total
        if minority:
            far[noun] = mask
            left[is_range].append(f"{count:,} {noun}")
        else:
            kept[is_range].append(f"{count:,} of {total:,} {noun}")
        for reason, found in reasons.items():
            at = (end if reason == "late" and end is not None else series).filter(found)
            if at.len() and reason not in examples[is_range, not minority]:
                edge = cuts.largest[1] if reason == "group" else stated[1] if reason == "capture" else 0  # type: ignore[index]
                late = reason in ("end", "late") or float(at.max()) > edge  # type: ignore[arg-type]
                examples[is_range, not minority][reason] = int(at.max() if late else at.min())  # type: ignore[arg-type]
    said = []
    if contradicted and capture is not None:
        outside_events = sum(int(outside(s).sum()) for s in starts.values())
        if outside_events:
            # (the anchors, CPU operators, are counted as such, not among the ranges; mutation20)
            parts = [
                f"{n:,} {noun if n > 1 else one}"
                for n, noun, one in (
                    (contradicted - anchors_out, "of its ranges", "of its ranges"),
                    (anchors_out, "CPU operators", "CPU operator"),
                    (outside_events, "other events", "other event"),
                )
                if n
            ]
            said.append(
                f"the trace says its capture ran from {capture[0]:,} to {capture[1]:,} ns, but "
                f"{', '.join(parts[:-1]) + ' and ' + parts[-1] if len(parts) > 1 else parts[0]} lie outside it: "
                "that record is not used to judge its events' times"
            )
    capture = stated
    for is_range in (False, True):
        consequence = (
            "a range so far from all the work of its capture (a damaged row or an exporter's bug), and read as it "
            "is such a range becomes an iteration hours long, or one without work"
            if is_range
            else "an event so far from the rest of its capture (a damaged row or an exporter's bug), and read as it "
            "is one such time becomes an iteration's latency"
        )
        if left[is_range]:
            said.append(
                f"{' and '.join(left[is_range])} stamped {_where(examples[is_range, False], capture, cuts.largest)}, "
                f"left out: no profiler records {consequence}"
            )
        if kept[is_range]:
            said.append(
                f"{' and '.join(kept[is_range])} are stamped "
                f"{_where(examples[is_range, True], capture, cuts.largest)}: too many to leave out as damaged rows, so they "
                "are kept, but the trace's clocks (or its record of the capture) disagree with them: "
                + (
                    "the iterations they make are not real"
                    if is_range
                    else "latencies and launch delays between them and the rest are not real"
                )
            )
    return far, "; ".join(said) if said else None


def placed_by_own_start_said(count: int) -> str:
    """What the far-event warning adds for the ``count`` device ops whose launch calls were left out as far
    (:func:`launched_by_far_calls`), as the nsys and Kineto readers say it."""
    return (
        f"; {count:,} device ops launched by those calls lie among the rest (only their calls' times are "
        "damaged): each is placed in its iteration by its own start, with no launch call"
    )


def launched_by_far_calls(
    ops: pl.DataFrame, calls: pl.DataFrame, far_calls: pl.Series, keys: Sequence[str] = ("pid", "correlation")
) -> pl.Series:
    """Per op (rows of ``ops``), whether the calls carrying its ``keys`` (its correlation id, and its process
    where the ids are per process) were all left out as far (``far_calls``, per row of ``calls``) while the op
    itself was not: its call's time is damaged, not the op's. A correlation id joins the call's start (which
    decides the op's iteration, and its launch delay) to the op; with the call gone, the op read as it is would
    count as launched before the capture began, in no iteration. Such an op keeps its own time (the reader
    takes its link away: it is placed by its own start)."""
    keys = list(keys)
    if not far_calls.any() or ops.is_empty():
        return pl.Series("far_call", np.zeros(ops.height, dtype=bool))
    gone = calls.filter(far_calls).select(keys).drop_nulls().unique()
    still = calls.filter(~far_calls).select(keys).drop_nulls().unique()
    gone = gone.join(still, on=keys, how="anti").with_columns(far_call=pl.lit(True))
    found = (
        ops.select(keys)
        .join(gone, on=keys, how="left", maintain_order="left")
        .get_column("far_call")
        .fill_null(False)
    )
    if "pid" in keys and "correlation" in keys and ops.get_column("pid").null_count():
        # an op of no recorded process (nsys globalPid NULL; the reader gives it its call's later): by its id
        # alone, where far calls carry that id (whichever process's call it was) and no kept call does
        ids = gone.select("correlation").unique()
        ids = ids.join(still.select("correlation").unique(), on="correlation", how="anti").get_column(
            "correlation"
        )
        found = found | (
            ops.get_column("pid").is_null()
            & ops.get_column("correlation").is_in(ids.implode()).fill_null(False)
        )
    return found


def _where(
    examples: dict[str, int], capture: tuple[int, int] | None, group: tuple[float, float] | None
) -> str:
    """Where far events lie, for the warning: ``examples``, the first of each reason (capture, group, end)."""
    if "capture" in examples and capture is not None:
        t = examples["capture"]
        edge = capture[1] if t > capture[1] else capture[0]
        return (
            f"outside the capture (which the trace says ran from {capture[0]:,} to {capture[1]:,} ns), e.g. one "
            f"at {t:,} ns, {_distance(abs(t - edge))} {'after its end' if t > edge else 'before its start'}"
        )
    if "group" in examples and group is not None:
        t = examples["group"]
        edge = group[1] if t > group[1] else group[0]
        return (
            f"more than an hour from every other event (the others lie from {group[0]:,.0f} to "
            f"{group[1]:,.0f} ns), e.g. one at {t:,} ns, {_distance(abs(t - edge))} "
            f"{'after' if t > edge else 'before'} them"
        )
    if "late" in examples:
        t = examples["late"]
        if capture is not None:
            return (
                f"to end after the capture (which the trace says ran from {capture[0]:,} to {capture[1]:,} ns), "
                f"e.g. one ending at {t:,} ns, {_distance(max(0, t - capture[1]))} after its end"
            )
        return f"to end more than an hour after every other event began, e.g. one ending at {t:,} ns"
    return (
        f"with an end past 2^63 ns (292 years: start + duration; e.g. one starting at {examples['end']:,} ns), "
        "which would wrap around to a negative time"
    )
