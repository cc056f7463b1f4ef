"""Random synthetic workloads written both as an Nsight Systems SQLite export (tests/nsys_builder.py) and as a
Kineto JSON trace, for the cross-format differential tests (tests/test_diff11_*.py). Every trace written here is
synthetic (named ``*.synthetic.*``); nothing is a measurement.

A workload is abstract: ranges, host API calls and device ops with integer-ns times relative to 0, one process
(pid 100) on one or more threads, one or two devices, several streams. ``write_nsys`` / ``write_kineto`` lay it
out at ``base`` ns; Kineto times are written as µs with exactly three decimals (as Kineto does), so both files
hold the same nanoseconds.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.nsys_builder import NsysBuilder

PID = 100
MAIN_TID = 100

#: name -> the nsys runtime name (with its _vNNNN suffix)
NSYS_NAMES = {
    "cudaLaunchKernel": "cudaLaunchKernel_v7000",
    "cudaMemcpyAsync": "cudaMemcpyAsync_v3020",
    "cudaMemsetAsync": "cudaMemsetAsync_v3020",
    "cudaStreamSynchronize": "cudaStreamSynchronize_v3020",
    "cudaDeviceSynchronize": "cudaDeviceSynchronize_v3020",
    "cudaGraphLaunch": "cudaGraphLaunch_v10000",
    "cudaEventRecord": "cudaEventRecord_v3020",
    "cudaStreamWaitEvent": "cudaStreamWaitEvent_v3020",
    "cudaGetDevice": "cudaGetDevice_v3020",
}


@dataclass
class Call:
    start: int
    end: int
    name: str
    corr: int | None
    tid: int = MAIN_TID


@dataclass
class Op:
    start: int
    end: int
    kind: str  # kernel, memcpy, memset
    stream: int
    corr: int | None
    device: int = 0
    graph: int | None = None
    name: str = "gemm_kernel"


@dataclass
class Range:
    start: int
    end: int
    name: str = "iteration"
    tid: int = MAIN_TID


@dataclass
class Workload:
    ranges: list[Range] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    devices: int = 1

    def shifted(self, by: int) -> Workload:
        return Workload(
            [Range(r.start + by, r.end + by, r.name, r.tid) for r in self.ranges],
            [Call(c.start + by, c.end + by, c.name, c.corr, c.tid) for c in self.calls],
            [
                Op(o.start + by, o.end + by, o.kind, o.stream, o.corr, o.device, o.graph, o.name)
                for o in self.ops
            ],
            self.devices,
        )


# ------------------------------------------------------------------------------------------------ writers


def write_nsys(w: Workload, path: Path, base: int = 0, order: random.Random | None = None) -> Path:
    b = NsysBuilder()
    for d in range(w.devices):
        b.gpu(d, "NVIDIA H100")
    b.mem_kinds()
    rows: list[tuple[str, Any]] = (
        [("range", r) for r in w.ranges] + [("call", c) for c in w.calls] + [("op", o) for o in w.ops]
    )
    if order is not None:
        order.shuffle(rows)
    for what, x in rows:
        if what == "range":
            b.nvtx_range(base + x.start, base + x.end, x.name, pid=PID, tid=x.tid)
        elif what == "call":
            b.runtime(
                base + x.start, base + x.end, NSYS_NAMES[x.name], correlation=x.corr, pid=PID, tid=x.tid
            )
        elif x.kind == "kernel":
            b.kernel(
                base + x.start, base + x.end, x.name, device=x.device, stream=x.stream, correlation=x.corr,
                pid=PID, graph=x.graph,
            )  # fmt: skip
        elif x.kind == "memcpy":
            b.memcpy(
                base + x.start, base + x.end, copy_kind=1, device=x.device, stream=x.stream, correlation=x.corr,
                pid=PID, src_kind=1, dst_kind=2,
            )  # fmt: skip
        else:
            b.memset(
                base + x.start, base + x.end, device=x.device, stream=x.stream, correlation=x.corr, pid=PID
            )
    return b.write(path)


def _us(ns: int, integer: bool = False) -> str:
    if integer:
        assert ns % 1000 == 0, ns
        return str(ns // 1000)
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def _event(
    cat: str, name: str, pid: int, tid: int, start: int, end: int, args: dict[str, Any] | None, integer: bool
) -> str:
    head = json.dumps({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid})[:-1]
    text = f'{head}, "ts": {_us(start, integer)}, "dur": {_us(end - start, integer)}'
    if args:
        text += ', "args": ' + json.dumps(args)
    return text + "}"


def write_kineto(
    w: Workload, path: Path, base: int = 0, order: random.Random | None = None, integer: bool = False
) -> Path:
    """``w`` as a Kineto JSON (µs with three decimals; whole µs written as integers with ``integer``, as
    Kineto before 2023 did)."""
    events: list[str] = []
    for r in w.ranges:
        events.append(
            _event("user_annotation", r.name, PID, r.tid, base + r.start, base + r.end, None, integer)
        )
    for c in w.calls:
        args = {"External id": c.corr, "correlation": c.corr} if c.corr is not None else {}
        events.append(_event("cuda_runtime", c.name, PID, c.tid, base + c.start, base + c.end, args, integer))
    for o in w.ops:
        args: dict[str, Any] = {"device": o.device, "stream": o.stream, "context": 1}
        if o.corr is not None:
            args.update({"correlation": o.corr, "External id": o.corr})
        if o.kind == "kernel":
            cat, name = "kernel", o.name
            if o.graph is not None:
                args["graph id"] = o.graph
        elif o.kind == "memcpy":
            cat, name = "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)"
        else:
            cat, name = "gpu_memset", "Memset (Device)"
        events.append(_event(cat, name, o.device, o.stream, base + o.start, base + o.end, args, integer))
    if order is not None:
        order.shuffle(events)
    head = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": d, "name": "NVIDIA H100"} for d in range(w.devices)],
    }
    text = json.dumps(head)[:-1] + ', "traceEvents": [\n' + ",\n".join(events) + "\n]}\n"
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------------------------ generator


@dataclass
class Params:
    """What a random workload may hold (each a switch the strategies draw)."""

    iterations: int = 4
    streams: tuple[int, ...] = (7,)
    copies: bool = False
    memsets: bool = False
    graphs: bool = False
    syncs: str = "some"  # none, some, all
    empty_iterations: bool = False
    second_thread: bool = False
    devices: int = 1
    stream_waits: bool = False
    #: whole-µs times everywhere (older Kineto's integer ``ts``/``dur``)
    whole_us: bool = False
    #: ops 0 to 2 ns apart and 0-ns kernels (rounding edges)
    tight: bool = False
    #: an ``iteration`` range nested in another on the same thread, ranges overlapping on another thread
    nested: bool = False
    #: a launch from a thread that holds no range, work launched before the capture (no call in the trace)
    foreign: bool = False
    #: some launches inside a range made by a worker thread that holds no range (they count in the range)
    worker: bool = False


def generate(rng: random.Random, p: Params) -> Workload:
    """A random workload: ``p.iterations`` ranges, each issuing some launches (calls of random length, host
    gaps between them, ops starting after their call by a random lag, queued behind their stream), maybe a
    sync at the end; ranges end a random while after their last call (GPU work may outlive them). Times are
    whole ns drawn from wide ranges so that sub-µs parts are exercised (whole µs with ``p.whole_us``)."""
    w = Workload(devices=p.devices)
    unit = 1000 if p.whole_us else 1

    def r(lo: int, hi: int) -> int:
        if p.whole_us:
            return rng.randint(-(-lo // 1000), max(-(-lo // 1000), hi // 1000)) * 1000
        return rng.randint(lo, hi)

    t = r(1_000, 50_000) + 100_000
    corr = 1000
    free: dict[tuple[int, int], int] = {}
    graph_id = 0
    if p.foreign:
        # work launched before the capture began: a correlation id whose call is not in the trace
        s0 = r(0, 50_000)
        w.ops.append(Op(s0, s0 + r(1_000, 200_000), "kernel", p.streams[0], 7, 0))
        free[(0, p.streams[0])] = w.ops[-1].end
    for _ in range(p.iterations):
        start = t
        tid = MAIN_TID
        if p.second_thread and rng.random() < 0.3:
            tid = MAIN_TID + 1
        t += r(0, 5_000)
        n_items = 0 if (p.empty_iterations and rng.random() < 0.25) else rng.randint(1, 6)
        inner: tuple[int, int] | None = None
        for k in range(n_items):
            t += r(0, 20_000)
            if p.nested and k == 1 and rng.random() < 0.5:
                inner = (t, 0)
            kind = rng.choice(
                ["kernel"] * 4
                + (["memcpy"] if p.copies else [])
                + (["memset"] if p.memsets else [])
                + (["graph"] if p.graphs else [])
                + (["wait"] if p.stream_waits else [])
                + (["query"] if p.empty_iterations else [])
            )
            device = rng.randrange(p.devices)
            stream = rng.choice(p.streams)
            corr += 1
            call_len = r(500, 8_000)
            name = {
                "kernel": "cudaLaunchKernel",
                "memcpy": "cudaMemcpyAsync",
                "memset": "cudaMemsetAsync",
                "graph": "cudaGraphLaunch",
                "wait": "cudaStreamWaitEvent",
                "query": "cudaGetDevice",
            }[kind]
            caller = MAIN_TID + 5 if p.worker and kind != "wait" and rng.random() < 0.4 else tid
            w.calls.append(Call(t, t + call_len, name, corr, caller))
            if kind in ("wait", "query"):
                t += call_len
                continue
            lag = r(200, 30_000)
            if p.tight and rng.random() < 0.5:
                lag = rng.choice([0, 1, 2]) * unit
            ready = t + call_len + lag if kind != "graph" else t + r(1, call_len)
            s = max(ready, free.get((device, stream), 0))
            if p.tight and free.get((device, stream)) is not None and rng.random() < 0.3:
                s = max(s, free[(device, stream)] + rng.choice([0, 1, 2]) * unit)
            if kind == "graph":
                graph_id += 1
                for _k in range(rng.randint(1, 4)):
                    d = r(100, 40_000)
                    w.ops.append(Op(s, s + d, "kernel", stream, corr, device, graph_id, "graph_kernel"))
                    s += d + (rng.choice([0, 1, 2]) * unit if p.tight else r(0, 2_000))
                free[(device, stream)] = s
            else:
                d = r(1, 60_000) if kind == "kernel" else r(100, 10_000)
                if p.tight and kind == "kernel" and rng.random() < 0.2:
                    d = 0
                w.ops.append(Op(s, s + d, kind, stream, corr, device))
                free[(device, stream)] = s + d
            t += call_len
            if inner is not None and inner[1] == 0 and k >= 2:
                inner = (inner[0], t + r(1, 3_000))
        if inner is not None and inner[1] > inner[0]:
            w.ranges.append(Range(inner[0], inner[1], "iteration", tid))
            t = max(t, inner[1])
        sync = p.syncs == "all" or (p.syncs == "some" and rng.random() < 0.5)
        if sync and n_items:
            t += r(0, 20_000)
            corr += 1
            name = rng.choice(["cudaDeviceSynchronize", "cudaStreamSynchronize"])
            done = max(free.values(), default=t)
            end = max(t + r(300, 3_000), done + r(100, 3_000))
            w.calls.append(Call(t, end, name, corr, tid))
            t = end
        t += r(1, 10_000)
        w.ranges.append(Range(start, t, "iteration", tid))
        if p.foreign and rng.random() < 0.5:
            # a helper thread without ranges launches work between iterations
            corr += 1
            c0 = t + r(0, 3_000)
            w.calls.append(Call(c0, c0 + r(500, 3_000), "cudaLaunchKernel", corr, MAIN_TID + 7))
            s = max(w.calls[-1].end + r(200, 5_000), free.get((0, p.streams[-1]), 0))
            w.ops.append(Op(s, s + r(1_000, 50_000), "kernel", p.streams[-1], corr, 0))
            free[(0, p.streams[-1])] = w.ops[-1].end
        t += r(0, 30_000)
    if p.nested and p.second_thread and w.ranges:
        # a range on another thread overlapping the first iteration (same name: a thread-pool worker)
        first = w.ranges[0]
        w.ranges.append(Range(first.start + r(0, 2_000), first.end + r(0, 20_000), "iteration", MAIN_TID + 3))
    return w


# ------------------------------------------------------------------------------------------------ the truth

LAUNCHES = ("cudaLaunchKernel", "cudaGraphLaunch")
SYNCS = ("cudaDeviceSynchronize", "cudaStreamSynchronize")
CAUSE_NAMES = ("dispatch", "launch", "sync", "other_api", "in_flight")


def _union(intervals: list[tuple[int, int]], merge: int = 1) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1] + merge:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def truth(w: Workload) -> list[dict[str, int | bool]]:
    """Per iteration, from the workload itself (no tracekit code): ``latency``, ``busy``, ``idle``, each
    cause's ns, ``synchronized``, ``gaps``; by docs/design.md sections 4 and 5, for workloads whose
    ``iteration`` ranges neither nest nor overlap (one process)."""
    ranges = sorted(w.ranges, key=lambda r: r.start)
    for a, b in zip(ranges, ranges[1:], strict=False):
        assert a.end <= b.start, "the truth is for ranges one after another"
    calls = {c.corr: c for c in w.calls if c.corr is not None}

    def iteration_of(op: Op) -> int | None:
        call = calls.get(op.corr) if op.corr is not None else None
        t = call.start if call is not None else (None if op.corr is not None else op.start)
        if t is None:
            return None
        for i, r in enumerate(ranges):
            if r.start <= t < r.end:
                return i
        return None

    own: list[list[Op]] = [[] for _ in ranges]
    for op in w.ops:
        i = iteration_of(op)
        if i is not None:
            own[i].append(op)
    out: list[dict[str, int | bool]] = []
    previous_end: int | None = None
    for i, r in enumerate(ranges):
        ops = own[i]
        gpu_end = max((o.end for o in ops), default=None)
        synchronized = gpu_end is None or gpu_end <= r.end
        if synchronized:
            ws, we = r.start, r.end
        else:
            ws = max(r.start, previous_end) if previous_end is not None else r.start
            we = max(r.end, gpu_end, ws)
        if gpu_end is not None:
            previous_end = gpu_end if previous_end is None else max(previous_end, gpu_end)
        segments = _union([(max(o.start, ws), o.end) for o in ops])
        busy = sum(e - s for s, e in segments)
        gaps: list[tuple[int, int]] = []
        cursor = ws
        for s, e in segments:
            if s > cursor:
                gaps.append((cursor, s))
            cursor = max(cursor, e)
        if we > cursor:
            gaps.append((cursor, we))
        causes = dict.fromkeys(CAUSE_NAMES, 0)
        for gs, ge in gaps:
            if not segments:  # no op, or every op of 0 ns: the analysis labels the latter's gap leading
                position = "leading" if ops else "empty"
            elif (gs, ge) == gaps[-1] and ge == we and gs >= segments[-1][1]:
                position = "trailing"
            else:
                position = "inner"
            for cause, ns in _gap_causes(w, calls, gs, ge, position, r.tid, ops).items():
                causes[cause] += ns
        launches = [c for c in w.calls if c.name in LAUNCHES and r.start <= c.start < r.end]
        # launch latency: over the iteration's kernel and graph launch calls (copy and memset calls launch ops
        # too, but are not launches: since 2026-11-28), from the call's start to its first op's
        firsts, queues = [], []
        for corr in sorted({o.corr for o in ops if o.corr in calls and calls[o.corr].name in LAUNCHES}):
            first = min(o.start for o in ops if o.corr == corr)
            firsts.append(first - calls[corr].start)
            queues.append(max(0, first - calls[corr].end))
        out.append(
            {"latency": we - ws, "busy": busy, "idle": we - ws - busy, "synchronized": synchronized,
             "gaps": len(gaps), **causes, "kernels": sum(o.kind == "kernel" for o in ops),
             "launches": len(launches), "launch_api_ns": sum(c.end - c.start for c in launches),
             "launch_latency_ns": _median(firsts), "queue_ns": _median(queues)}
        )  # fmt: skip
    return out


def _median(values: list[int]) -> float | None:
    if not values:
        return None
    v = sorted(values)
    n = len(v)
    return float(v[n // 2]) if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _gap_causes(
    w: Workload, calls: dict[int, Call], gs: int, ge: int, position: str, tid: int, own: list[Op]
) -> dict[str, int]:
    """The causes of the gap ``[gs, ge)`` (section 5: launch order first, host state second). Its next op:
    an op of positive duration starting at its end, of any iteration; for a gap running to the window's end
    (trailing, or the one gap of an iteration whose ops all last 0 ns), an op of 0 ns of the iteration's own
    (``own``) starting at its end (since 2026-11-28: test_diff11_windows, test_hostile12_trailing); for
    the gap of an iteration without ops (``empty``), none."""
    device_from: int | None = None
    thread = tid
    zero_own = [o for o in own if o.start == ge and o.end == o.start]
    if position == "empty":
        nexts = []
    elif position == "trailing":
        nexts = zero_own
    else:
        nexts = [o for o in w.ops if o.start == ge and o.end > o.start] or zero_own
    if nexts:

        def launched(o: Op) -> int | None:
            c = calls.get(o.corr) if o.corr is not None else None
            return c.end if c is not None else (None if o.corr is None else -(1 << 62))

        known = [o for o in nexts if launched(o) is not None]
        if known:
            first = min(known, key=lambda o: launched(o))  # type: ignore[arg-type,return-value]
            device_from = launched(first)
            c = calls.get(first.corr) if first.corr is not None else None
            if c is not None:
                thread = c.tid
    causes = dict.fromkeys(CAUSE_NAMES, 0)
    host_end = ge if device_from is None else max(gs, min(ge, device_from))
    causes["in_flight"] = ge - host_end
    t = gs
    for c in sorted((c for c in w.calls if c.tid == thread), key=lambda c: c.start):
        s, e = max(c.start, gs), min(c.end, host_end)
        if e <= s:
            continue
        causes["dispatch"] += s - t
        key = "launch" if c.name in LAUNCHES else "sync" if c.name in SYNCS else "other_api"
        causes[key] += e - s
        t = e
    causes["dispatch"] += max(0, host_end - t)
    return causes
