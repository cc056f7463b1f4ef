"""NVIDIA's own ``nsys stats`` reports as an independent oracle for tracekit's Nsight Systems numbers.

``nsys stats --report NAME --format csv --output - FILE.sqlite`` runs NVIDIA's SQL reports on an export.
The reports used here, with what they compute (Nsight Systems 2022.4.2's scripts,
``target-linux-x64/reports/*.py``), and where tracekit's definitions differ:

``gpukernsum``
    ``CUPTI_ACTIVITY_KIND_KERNEL`` grouped by (``demangledName``, grid, block): count, sum/min/max of
    ``end - start``. Summed here over grid and block to one row per name (tracekit's ops carry no launch
    dimensions). tracekit leaves out rows CUPTI could not time (start = end = 0, with a warning); nsys
    counts them (0 ns each).
``gpumemtimesum``
    memcpy (named by ``copyKind``: "[CUDA memcpy HtoD]") and memset rows, grouped by that name. tracekit
    names a copy from or to pageable memory "[CUDA memcpy HtoD (Pageable -> Device)]" and a managed-memory
    copy "[CUDA memcpy Unified HtoD]" (nsys: "[CUDA Unified Memory memcpy HtoD]"): :func:`memop_key` maps
    both to nsys's names.
``cudaapisum``
    ``CUPTI_ACTIVITY_KIND_RUNTIME`` grouped by ``nameId``: count and sum of ``end - start``. nsys strips a
    version suffix only when it is ``_v`` and four digits (``_v7000``; ``cudaLaunchKernelExC_v11060`` stays);
    tracekit strips any one ``_v<digits>`` (before ``_ptsz``/``_ptds``): :func:`api_key` strips every
    trailing one on both sides. nsys 2022.4 writes each call twice (a "CUDA backtrace" row with the same
    correlation id): nsys counts both, tracekit one.
``nvtxsum`` (``nvtxppsum``: push/pop only)
    ``NVTX_EVENTS`` push/pop (59) and start/end (60) ranges grouped by tag = "<domain>:<name>" for a domain
    that has a create event (75) in the range's process, else the name (registered string before
    ``text``). A range without end (never closed) lasts to the largest timestamp of ``NVTX_EVENTS``;
    tracekit gives it no end (no duration). tracekit names a domain without create event by its id and
    a domain named "gpu" "gpu (NVTX)".
``gputrace``
    every kernel, memcpy and memset: start, duration, correlation id, device, stream, name. The device is the
    row's raw ``deviceId`` (joined to ``TARGET_INFO_GPU.id`` for its name: an export without that table
    fails the report); tracekit's is the same id except where ``TARGET_INFO_CUDA_DEVICE`` shows processes
    numbering their GPUs differently (then nsys's GPU id; no compared export does).
``kernexectrace``, ``nvtxkernsum``, ``nvtxpptrace``
    per kernel its launch call (API start, duration); kernels per NVTX range by launch call; push/pop ranges
    with their nesting level (push/pop only; tracekit's depth counts open start/end ranges too). nsys finds
    a range's parent through an R-tree of float32 timestamps: past ~8e9 ns of session time it misses
    parents, and its levels are wrong.

Every figure is an integer number of nanoseconds. :func:`nsys_report` returns None when the installed nsys
has no report of that name.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl

NSYS = shutil.which("nsys")

#: name -> (count, total, min, max), all ns
Stats = tuple[int, int, int, int]


def nsys_report(path: Path, report: str) -> list[dict[str, str]] | None:
    """The rows of ``nsys stats --report REPORT`` on the export ``path`` (empty when nsys says SKIPPED:
    the export has no such data), None when this nsys has no such report."""
    assert NSYS is not None
    done = subprocess.run(
        [NSYS, "stats", "--report", report, "--format", "csv", "--output", "-", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if "could not be found" in done.stderr:
        return None
    # nsys exits 0 when a report fails ("ERROR: Report 'x.py' encountered an internal error: ..."): an
    # error must not read as an empty report
    assert done.returncode == 0 and "ERROR" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    body = [line for line in lines if not line.startswith("Processing [")]
    text = "\n".join(body).strip()
    if not text or text.startswith("SKIPPED:"):
        return []
    return list(csv.DictReader(io.StringIO(text)))


def _merge(into: dict[str, list[int]], key: str, count: int, total: int, lo: int, hi: int) -> None:
    if key in into:
        c, t, mn, mx = into[key]
        into[key] = [c + count, t + total, min(mn, lo), max(mx, hi)]
    else:
        into[key] = [count, total, lo, hi]


def _summary(rows: list[dict[str, str]], name: str, count: str, key=lambda s: s) -> dict[str, Stats]:
    out: dict[str, list[int]] = {}
    for r in rows:
        _merge(
            out,
            key(r[name]),
            int(r[count]),
            int(r["Total Time (ns)"]),
            int(r["Min (ns)"]),
            int(r["Max (ns)"]),
        )
    return {k: (v[0], v[1], v[2], v[3]) for k, v in out.items()}


def api_key(name: str) -> str:
    """A CUDA API name without its version suffixes (``_v7000``, ``_v2_v12000``), kept ``_ptsz``/``_ptds``."""
    return re.sub(r"(?:_v\d+)+(_ptsz|_ptds)?$", r"\1", name)


def memop_key(name: str) -> str:
    """tracekit's memory-op name as nsys's gpumemtimesum spells it."""
    name = re.sub(r" \([A-Za-z ]+ -> [A-Za-z ]+\)\]$", "]", name)
    return name.replace("[CUDA memcpy Unified ", "[CUDA Unified Memory memcpy ")


def kernels_nsys(rows: list[dict[str, str]]) -> dict[str, Stats]:
    return _summary(rows, "Name", "Instances")


def memops_nsys(rows: list[dict[str, str]]) -> dict[str, Stats]:
    return _summary(rows, "Operation", "Count")


def nvtx_nsys(rows: list[dict[str, str]]) -> dict[str, Stats]:
    return _summary(rows, "Range", "Instances")


def api_nsys(rows: list[dict[str, str]]) -> dict[str, tuple[int, int]]:
    full = _summary(rows, "Name", "Num Calls", api_key)
    return {k: (v[0], v[1]) for k, v in full.items()}


def _stats(frame: pl.DataFrame, key: pl.Expr) -> dict[str, Stats]:
    d = pl.col("end") - pl.col("start")
    grouped = frame.group_by(key.alias("key")).agg(n=pl.len(), total=d.sum(), lo=d.min(), hi=d.max())
    return {r["key"]: (r["n"], r["total"], r["lo"], r["hi"]) for r in grouped.iter_rows(named=True)}


def kernels_tracekit(ops: pl.DataFrame) -> dict[str, Stats]:
    return _stats(ops.filter(pl.col("kind") == "kernel"), pl.col("name"))


def memops_tracekit(ops: pl.DataFrame) -> dict[str, Stats]:
    frame = ops.filter(pl.col("kind").is_in(["memcpy", "memset"]))
    return _stats(frame, pl.col("name").map_elements(memop_key, return_dtype=pl.String))


def api_tracekit(api: pl.DataFrame) -> dict[str, tuple[int, int]]:
    full = _stats(api, pl.col("name").map_elements(api_key, return_dtype=pl.String))
    return {k: (v[0], v[1]) for k, v in full.items()}


def nvtx_tag(domain: pl.Expr, name: pl.Expr) -> pl.Expr:
    """nsys's range tag: the name in the default domain, else "<domain>:<name>"."""
    return pl.when(domain == "default").then(name).otherwise(domain + ":" + name)


def nvtx_tracekit(ranges: pl.DataFrame) -> dict[str, Stats]:
    """Closed ranges only (a range without end has no duration in tracekit)."""
    closed = ranges.filter(pl.col("end").is_not_null())
    return _stats(closed, nvtx_tag(pl.col("domain"), pl.col("name")))


def unclosed_tags(ranges: pl.DataFrame) -> set[str]:
    open_ = ranges.filter(pl.col("end").is_null())
    return set(open_.select(nvtx_tag(pl.col("domain"), pl.col("name"))).to_series().to_list())


def iterations_tracekit(iterations: pl.DataFrame) -> Stats:
    d = iterations.get_column("end_ns") - iterations.get_column("start_ns")
    return (iterations.height, int(d.sum()), int(d.min()), int(d.max()))


def launch_medians(rows: list[dict[str, str]], iterations: pl.DataFrame) -> list[tuple[int, float, float]]:
    """From ``kernexectrace`` (one row per kernel, with its launch call): per iteration (a call counts in the
    iteration its call starts in, of its own process is not checked: single-process exports), the kernel
    launch calls, the median of (first kernel start - call start) and of max(0, first kernel start - call
    end), in us, as tracekit's ``launches``, ``launch_latency_us`` and ``queue_us`` define them."""
    frame = pl.DataFrame(
        {
            "pid": [int(r["PID"]) for r in rows],
            "call_start": [int(r["API Start (ns)"]) for r in rows],
            "call_dur": [int(r["API Dur (ns)"]) for r in rows],
            "start": [int(r["Kernel Start (ns)"]) for r in rows],
        },
        schema={"pid": pl.Int64, "call_start": pl.Int64, "call_dur": pl.Int64, "start": pl.Int64},
    )
    first = frame.group_by("pid", "call_start", "call_dur").agg(pl.col("start").min())
    out = []
    for start, end in zip(iterations["start_ns"], iterations["end_ns"], strict=True):
        calls = first.filter((pl.col("call_start") >= start) & (pl.col("call_start") < end))
        latency = calls["start"] - calls["call_start"]
        queue = (latency - calls["call_dur"]).clip(lower_bound=0)
        out.append((calls.height, latency.median() / 1e3, queue.median() / 1e3))
    return out


def pptrace_frame(rows: list[dict[str, str]]) -> pl.DataFrame:
    """``nvtxpptrace`` (one row per push/pop range: start, end, tag, pid, tid, nesting level) as a frame."""
    return pl.DataFrame(
        {
            "start": [int(r["Start (ns)"]) for r in rows],
            "end": [int(r["End (ns)"]) for r in rows],
            "tag": [r["Name"] for r in rows],
            "pid": [int(r["PID"]) for r in rows],
            "thread": [int(r["TID"]) for r in rows],
            "level": [int(r["Lvl"]) for r in rows],
        },
        schema={
            "start": pl.Int64,
            "end": pl.Int64,
            "tag": pl.String,
            "pid": pl.Int64,
            "thread": pl.Int64,
            "level": pl.Int64,
        },
    )


def gputrace_frame(rows: list[dict[str, str]]) -> pl.DataFrame:
    """``gputrace`` (one row per kernel, memcpy, memset): start, duration, correlation id, device (the id in
    "NVIDIA H100 (0)"), stream and name."""

    def device(text: str) -> int | None:
        found = re.search(r"\((\d+)\)$", text or "")
        return int(found.group(1)) if found else None

    def number(text: str) -> int | None:
        return None if text in ("", "None") else int(text)

    return pl.DataFrame(
        {
            "start": [int(r["Start (ns)"]) for r in rows],
            "dur": [int(r["Duration (ns)"]) for r in rows],
            "correlation": [number(r["CorrId"]) for r in rows],
            "device": [device(r["Device"]) for r in rows],
            "stream": [number(r["Strm"]) for r in rows],
            "name": [r["Name"] for r in rows],
        },
        schema={
            "start": pl.Int64,
            "dur": pl.Int64,
            "correlation": pl.Int64,
            "device": pl.Int64,
            "stream": pl.Int64,
            "name": pl.String,
        },
    )
