"""A probe of what Nsight Systems records around ``cudaProfilerStop``, for CUDA graphs and for OS runtime calls.

    python benchmarks/nsys_probe.py -o OUT [--nsys PATH]

Questions the committed exports cannot answer (round 15's nsys report): under ``--capture-range=cudaProfilerApi
--capture-range-end=stop`` (what ``tracekit collect --profiler nsys`` uses), does nsys keep NVTX ranges and OS
runtime calls made after ``cudaProfilerStop``, and what end does a range open at the stop get? Does a 2025.x
export say which CUDA graph a kernel came from (``KERNEL.graphId``, ``graphNodeId``) under
``--cuda-graph-trace=node`` and ``=graph``?

A small child program (a few matrix products on ``cuda:0``, ranges through ``torch.cuda.nvtx``) runs:
``setup`` range, capture of a CUDA graph of 3 products, then ``cudaProfilerStart``; 3 ``iteration`` ranges
(eager products, then one graph replay each); an ``open-at-stop`` range pushed before ``cudaProfilerStop`` and
popped 20 ms after it; 2 ``after-stop`` ranges with products, a 30 ms ``time.sleep`` and a 30 ms lock wait
(``osrt``): all of that (the default), nothing (``stop-node-quiet``) or only the ranges (``stop-node-nvtx``). Each variant is profiled, exported to SQLite, summarized with SQL (``OUT/nsys_probe.json``) and its
export gzipped into ``OUT`` (a few hundred KB). Standard library + torch only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CHILD = r"""
import os, threading, time, torch
from torch.cuda import nvtx
after = os.environ.get("PROBE_AFTER", "cuda,nvtx,osrt").split(",")
d = torch.device("cuda:0")
a = torch.randn(512, 512, device=d, dtype=torch.float16)
def work(n):
    x = a
    for _ in range(n):
        x = x @ a
    return x
nvtx.range_push("setup"); work(3); torch.cuda.synchronize(); nvtx.range_pop()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    work(3)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = work(3)
torch.cuda.synchronize()
print("T start", time.time_ns(), flush=True)
torch.cuda.profiler.start()
for i in range(3):
    nvtx.range_push("iteration")
    work(2)
    g.replay()
    torch.cuda.synchronize()
    nvtx.range_pop()
nvtx.range_push("open-at-stop")
work(1); torch.cuda.synchronize()
print("T stop", time.time_ns(), flush=True)
torch.cuda.profiler.stop()
time.sleep(0.02)
nvtx.range_pop()
for i in range(2):
    if "nvtx" in after:
        nvtx.range_push("after-stop")
    if "cuda" in after:
        work(2); torch.cuda.synchronize()
    if "nvtx" in after:
        nvtx.range_pop()
if "osrt" in after:
    time.sleep(0.03)
    lock = threading.Lock(); lock.acquire()
    threading.Timer(0.03, lock.release).start()
    lock.acquire()
print("T end", time.time_ns(), flush=True)
"""

#: The variants, each as its change to what ``tracekit collect`` runs (:func:`variant_argv`): the graph trace
#: mode, and whether the capture range (cudaProfilerApi, ended at the stop) is kept.
VARIANTS: dict[str, dict[str, Any]] = {
    "stop-node": {},  # what tracekit collect uses, unchanged
    "stop-graph": {"graph_trace": "graph"},
    # the same as stop-node, the child doing nothing traced after the stop (PROBE_AFTER=none), or only NVTX
    "stop-node-quiet": {},
    "stop-node-nvtx": {},
    # no capture range: the whole process
    "whole-node": {"capture_range": False},
}


def variant_argv(nsys: str, base: Path | str, child: list[str], name: str) -> list[str]:
    """The ``nsys profile`` command of variant ``name``: collect's own (``build_profile_argv`` with CUDA, no
    GPU metrics), changed only as :data:`VARIANTS` says, so that the probe cannot drift from collect."""
    from tracekit.collectors.profilers.nsys import build_profile_argv

    argv = build_profile_argv(nsys, base, child, cuda=True)
    change = VARIANTS[name]
    if "graph_trace" in change:
        argv = [
            f"--cuda-graph-trace={change['graph_trace']}" if a == "--cuda-graph-trace=node" else a
            for a in argv
        ]
    if change.get("capture_range", True) is False:
        argv = [a for a in argv if not a.startswith("--capture-range")]
    return argv


#: What the child does after cudaProfilerStop, per variant (default: CUDA work, NVTX ranges, OS runtime waits).
AFTER = {"stop-node-quiet": "none", "stop-node-nvtx": "nvtx"}


def columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def summarize(db: Path) -> dict[str, Any]:
    """What the export holds, by SQL: tables, ranges with their times, kernels per range, graph columns."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    tables = sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'"))
    out: dict[str, Any] = {"tables": tables}
    nv_cols = columns(con, "NVTX_EVENTS") if "NVTX_EVENTS" in tables else []
    if nv_cols:
        text = "COALESCE(n.text, s.value)" if "textId" in nv_cols else "n.text"
        join = "LEFT JOIN StringIds s ON s.id = n.textId" if "textId" in nv_cols else ""
        out["nvtx"] = [
            dict(zip(("text", "start", "end", "eventType", "globalTid"), r, strict=True))
            for r in con.execute(
                f"SELECT {text}, n.start, n.end, n.eventType, n.globalTid FROM NVTX_EVENTS n {join} ORDER BY n.start"
            )
        ]
    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        k_cols = columns(con, "CUPTI_ACTIVITY_KIND_KERNEL")
        out["kernel_columns"] = k_cols
        graph_cols = [c for c in k_cols if "graph" in c.lower()]
        out["kernels"] = [
            dict(zip(["start", "end", "correlationId", *graph_cols], r, strict=True))
            for r in con.execute(
                "SELECT start, end, correlationId"
                + "".join(f", {c}" for c in graph_cols)
                + " FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start"
            )
        ]
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        out["runtime_calls"] = [
            dict(zip(("name", "start", "end", "correlationId"), r, strict=True))
            for r in con.execute(
                "SELECT s.value, r.start, r.end, r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                "JOIN StringIds s ON s.id = r.nameId ORDER BY r.start"
            )
        ]
    for table in ("CUDA_GRAPH_EVENTS", "CUDA_GRAPH_NODE_EVENTS", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"):
        if table in tables:
            out[table] = {
                "columns": columns(con, table),
                "rows": con.execute(f"SELECT * FROM {table} LIMIT 50").fetchall(),
            }
    if "OSRT_API" in tables:
        out["osrt"] = [
            dict(zip(("name", "start", "end"), r, strict=True))
            for r in con.execute(
                "SELECT s.value, o.start, o.end FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId "
                "WHERE o.end - o.start > 10000000 ORDER BY o.start"
            )
        ]
        out["osrt_count"] = con.execute("SELECT count(*) FROM OSRT_API").fetchone()[0]
    for table in ("DIAGNOSTIC_EVENT", "TARGET_INFO_SESSION_START_TIME", "ANALYSIS_DETAILS"):
        if table in tables:
            rows = con.execute(f"SELECT * FROM {table} LIMIT 40").fetchall()
            out[table] = {"columns": columns(con, table), "rows": rows}
    con.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--nsys")
    parser.add_argument("--only", nargs="*", choices=sorted(VARIANTS))
    args = parser.parse_args(argv)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    from gpu_check import (
        nsys_for_check,  # (beside this script: TRACEKIT_NSYS, PATH, or Nsight Compute's bundle)
    )

    nsys = args.nsys or nsys_for_check()
    if nsys is None:
        print("nsys_probe: no nsys found", file=sys.stderr)
        return 2
    from tracekit.collectors.profilers.nsys import finalize

    work = Path(os.environ.get("TMPDIR", "/tmp")) / "nsys_probe_work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    child = work / "child.py"
    child.write_text(CHILD)
    summary: dict[str, Any] = {"nsys": nsys, "variants": {}}
    version = subprocess.run([nsys, "--version"], capture_output=True, text=True)
    summary["nsys_version"] = (version.stdout or version.stderr).strip()
    for name in args.only or list(VARIANTS):
        base = work / f"probe-{name}"
        argv_ = variant_argv(nsys, base, [sys.executable, str(child)], name)
        t0 = time.perf_counter()
        env = dict(os.environ, PROBE_AFTER=AFTER.get(name, "cuda,nvtx,osrt"))
        proc = subprocess.run(argv_, capture_output=True, text=True, timeout=150, env=env)
        entry: dict[str, Any] = {
            "argv": argv_[1:-2],
            "rc": proc.returncode,
            "seconds": round(time.perf_counter() - t0, 1),
            "child_times": [ln for ln in proc.stdout.splitlines() if ln.startswith("T ")],
            "output_tail": (proc.stdout + proc.stderr)[-1500:],
        }
        try:
            _, sqlite = finalize(nsys, base)
            entry["summary"] = summarize(sqlite)
            with open(sqlite, "rb") as src, gzip.open(out / f"probe-{name}.nsys.sqlite.gz", "wb", 9) as dst:
                shutil.copyfileobj(src, dst)
        except Exception as exc:  # a probe: say what failed and go on
            entry["error"] = f"{type(exc).__name__}: {exc}"
        summary["variants"][name] = entry
        print(
            f"nsys_probe: {name}: rc {proc.returncode} in {entry['seconds']} s {entry.get('error', '')}",
            flush=True,
        )
    (out / "nsys_probe.json").write_text(json.dumps(summary, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
