"""An independent, deliberately plain-Python implementation of the per-iteration metrics in docs/design.md.

Used only by tests, on small traces, to check the vectorized analyzer against a second reading of the same
definitions. It shares no code with ``analyzers``.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from tracekit.model import LAUNCH_API_NAMES, Trace


@dataclass
class RefIteration:
    start: int
    end: int
    latency_ns: int
    busy_ns: int
    gaps: list[int]
    kernels: int
    launches: int
    synchronized: bool


def reference_iterations(trace: Trace, range_name: str) -> list[RefIteration]:
    """Per-iteration metrics of the ranges named ``range_name`` (outermost in time only).

    ``ProfilerStep#*`` stands for every ``ProfilerStep#N``; a plain name also matches PyTorch ``emit_nvtx``
    names that carry per-call suffixes (``aten::mul, seq = 3, op_id = 7``). ``window``: one window over the
    whole trace, from the first op's launch (its launching call's start, else its own start) to the last op's
    end, holding every op.
    """
    if range_name == "window":
        return _window(trace)
    if range_name == "ProfilerStep#*":
        pattern = re.compile(r"ProfilerStep#\d+")
    else:
        pattern = re.compile(re.escape(range_name) + r"(,\s*(seq|op_id|sizes|input_op_ids)\s*=.*)?")
    rows = [
        r
        for r in trace.ranges.iter_rows(named=True)
        if pattern.fullmatch(r["name"] or "") and r["domain"] != "gpu"
    ]
    # an instance held in time by another instance of the same process is left out (identical: the first)
    rows = sorted(rows, key=lambda r: (r["pid"], r["start"], -r["end"]))
    rows = [
        r
        for k, r in enumerate(rows)
        if not any(o["pid"] == r["pid"] and o["end"] >= r["end"] for o in rows[:k])
    ]
    rows.sort(key=lambda r: (r["start"], r["end"]))
    # a launch (or start) belongs to a range of its own process: per pid, the last range starting at or before it
    by_pid: dict[int | None, list[int]] = {}
    for i, r in enumerate(rows):
        by_pid.setdefault(r["pid"], []).append(i)

    def which(t: int, pid: int | None = None) -> int | None:
        own = by_pid.get(pid, []) if pid is not None and len(by_pid) > 1 else list(range(len(rows)))
        starts = [rows[i]["start"] for i in own]
        k = bisect.bisect_right(starts, t) - 1
        if k >= 0 and t < rows[own[k]]["end"]:
            return own[k]
        return None

    calls = _launching_calls(trace)

    # An op belongs to the iteration whose range holds its launching call's start; an op with a correlation
    # id whose call is not in the trace (a trace that holds calls) belongs to none; an op without a
    # correlation id (or any op of a trace without calls) to the range holding its own start.
    per_iter: list[list[tuple[int, int, str]]] = [[] for _ in rows]
    for op in trace.ops.iter_rows(named=True):
        call = calls.get((op["pid"], op["correlation"])) if op["correlation"] is not None else None
        if call is None and op["correlation"] is not None and calls:
            continue
        i = which(call[0] if call else op["start"], op["pid"])
        if i is not None:
            per_iter[i].append((op["start"], op["end"], op["kind"]))

    launches = [0] * len(rows)
    for a in trace.api.iter_rows(named=True):
        if a["name"] in LAUNCH_API_NAMES:
            i = which(a["start"], a["pid"])
            if i is not None:
                launches[i] += 1

    return _measured(rows, per_iter, launches)


def _launching_calls(trace: Trace) -> dict[tuple[int, int], tuple[int, int]]:
    """(pid, correlation) -> (start, end) of the earliest API call with that correlation id."""
    calls: dict[tuple[int, int], tuple[int, int]] = {}
    for a in trace.api.iter_rows(named=True):
        if a["correlation"] is None:
            continue
        key = (a["pid"], a["correlation"])
        best = calls.get(key)
        if best is None or (a["start"], -a["end"]) < (best[0], -best[1]):
            calls[key] = (a["start"], a["end"])
    return calls


def _window(trace: Trace) -> list[RefIteration]:
    """The one synthetic window over the whole trace (see :func:`reference_iterations`)."""
    calls = _launching_calls(trace)
    ops = [op for op in trace.ops.iter_rows(named=True) if op["start"] is not None and op["end"] is not None]
    if not ops:
        return []
    launch_at = []
    for op in ops:
        call = calls.get((op["pid"], op["correlation"])) if op["correlation"] is not None else None
        launch_at.append(call[0] if call is not None and call[0] <= op["start"] else op["start"])
    row = {"start": min(launch_at), "end": max(op["end"] for op in ops)}
    launches = sum(
        1
        for a in trace.api.iter_rows(named=True)
        if a["name"] in LAUNCH_API_NAMES and row["start"] <= a["start"] < row["end"]
    )
    return _measured([row], [[(op["start"], op["end"], op["kind"]) for op in ops]], [launches])


def _measured(
    rows: list[dict], per_iter: list[list[tuple[int, int, str]]], launches: list[int]
) -> list[RefIteration]:
    """Per-iteration metrics of ``rows`` (start, end) holding the ops ``per_iter`` (start, end, kind)."""
    out: list[RefIteration] = []
    prev_gpu_end: int | None = None
    for i, r in enumerate(rows):
        ops = per_iter[i]
        gpu_end = max((e for _, e, _ in ops), default=None)
        synchronized = gpu_end is None or gpu_end <= r["end"]
        # A synchronized iteration's window is its range; an unsynchronized one is the steady-state period.
        w0 = r["start"] if synchronized or prev_gpu_end is None else max(r["start"], prev_gpu_end)
        w1 = max(r["end"] if gpu_end is None else max(r["end"], gpu_end), w0)
        # Sweep over clipped intervals; a gap of at most 1 ns (timestamp rounding) is busy time.
        clipped = sorted((max(s, w0), min(e, w1)) for s, e, _ in ops if min(e, w1) > max(s, w0))
        busy = 0
        gaps: list[int] = []
        cursor = w0
        for n, (s, e) in enumerate(clipped):
            if n and s - cursor <= 1:
                s = min(s, cursor)
            if s > cursor:
                gaps.append(s - cursor)
                busy += e - s
                cursor = e
            elif e > cursor:
                busy += e - cursor
                cursor = e
        if w1 > cursor:
            gaps.append(w1 - cursor)
        out.append(
            RefIteration(
                start=r["start"],
                end=r["end"],
                latency_ns=w1 - w0,
                busy_ns=busy,
                gaps=gaps,
                kernels=sum(1 for _, _, k in ops if k in ("kernel", "operator")),
                launches=launches[i],
                synchronized=synchronized,
            )
        )
        if gpu_end is not None:
            prev_gpu_end = gpu_end if prev_gpu_end is None else max(prev_gpu_end, gpu_end)
    return out
