#!/usr/bin/env python
"""Validate tracekit's GPU collection on this machine's GPU in one command (target: under 10 minutes).

    python benchmarks/gpu_validate.py [-o DIR] [--device cuda:N] [--iters N] [--precision fp16|fp32] [--no-ncu]

1. ``tracekit doctor`` (printed): CUDA devices, ORT's CUDA provider, nsys/ncu and their permissions.
2. ``tracekit collect`` of BERT-base, batch 1, sequence 128, for the five Table 3 runtimes (pytorch,
   torchscript, cuda-graphs, onnx, onnx-cuda-graphs) plus compile and compile-cudagraphs, each under Nsight
   Systems (with GPU metrics where permitted) and, for the five Table 3 runtimes, Nsight Compute (a few
   iterations, where counters are permitted). One run directory per runtime under ``DIR``.
3. ``tracekit table --paper`` over the run directories (printed), then the invariant checks of
   :mod:`tracekit.collectors.validate` on every nsys trace: every iteration has kernels, GPU busy <=
   latency, CUDA-graph runtimes launch one graph per iteration, untraced/traced latency ratio.

Exit 0 when every collection succeeded and every check passed, 1 otherwise, 2 (one line) without CUDA,
without torch, or without nsys.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TABLE3 = ("pytorch", "torchscript", "cuda-graphs", "onnx", "onnx-cuda-graphs")
EXTRA = ("compile", "compile-cudagraphs")


def refuse(message: str) -> int:
    print(f"gpu_validate: {message}", file=sys.stderr)
    return 2


def preflight(device: str) -> str | None:
    """None when this machine can run the validation, else the one-line reason: gpu_check's (torch with CUDA,
    the device visible), then an Nsight Systems found as gpu_check finds it (``TRACEKIT_NSYS``, PATH, else the
    nsys Nsight Compute bundles, the only one of some GPU images), which ``tracekit collect`` is then pointed
    at through ``TRACEKIT_NSYS``."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import gpu_check  # benchmarks/gpu_check.py

    why = gpu_check.preflight(device)
    if why is not None:
        return why
    nsys = gpu_check.nsys_for_check()
    if not nsys:
        return (
            "needs Nsight Systems (nsys): none on PATH or in TRACEKIT_NSYS, and no nsys bundled with "
            "Nsight Compute"
        )
    os.environ["TRACEKIT_NSYS"] = nsys
    return None


def tracekit(*argv: str) -> int:
    """Run ``tracekit ARGV`` in a child interpreter (stdout/stderr shown)."""
    return subprocess.run([sys.executable, "-m", "tracekit.cli", *argv]).returncode


def collect(runtime: str, out: Path, args: argparse.Namespace, ncu: bool) -> tuple[int, float]:
    argv = [
        "collect",
        "--runtime",
        runtime,
        "--model",
        "bert-base",
        "--device",
        args.device,
        "--precision",
        args.precision,
        "--batch-sizes",
        "1",
        "--seq-lens",
        "128",
        "--warmup",
        str(args.warmup),
        "--iters",
        str(args.iters),
        "--profiler",
        "nsys",
        "--no-progress",
        "--overwrite",
        "-o",
        str(out / runtime),
    ]
    if ncu:
        argv += ["--profiler", "ncu"]
    start = time.perf_counter()
    rc = tracekit(*argv)
    return rc, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-o", "--output", default="runs/gpu-validate", help="directory for the runs")
    parser.add_argument("--device", default="cuda:0", help="CUDA device (default cuda:0)")
    parser.add_argument(
        "--precision", default="fp16", choices=["fp16", "fp32"], help="default fp16 (Table 3)"
    )
    parser.add_argument("--warmup", type=int, default=10, help="warm-up iterations (default 10)")
    parser.add_argument("--iters", type=int, default=50, help="timed iterations (default 50)")
    parser.add_argument(
        "--no-ncu", action="store_true", help="skip Nsight Compute (default: where permitted)"
    )
    args = parser.parse_args(argv)
    reason = preflight(args.device)
    if reason:
        return refuse(reason)
    from tracekit.collectors.doctor import diagnose

    doc = diagnose()
    tracekit("doctor")
    ncu_ok = not args.no_ncu and bool(doc["profilers"].get("ncu", {}).get("works"))
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    timings: dict[str, float] = {}
    for runtime in TABLE3 + EXTRA:
        works = doc["runtimes"].get(runtime, {})
        if not works.get("works"):
            failures.append(f"{runtime}: cannot run here ({works.get('why')})")
            continue
        if "cuda" not in works.get("devices", ["cuda"]):  # onnx where ORT's CUDA provider does not load
            on = ", ".join(works.get("devices") or [])
            why = (
                (doc.get("onnxruntime") or {}).get("why") if runtime in ("onnx", "onnx-cuda-graphs") else None
            )
            failures.append(
                f"{runtime}: cannot run on {args.device} here (doctor: it runs on the {on} only"
                + (f"; {why})" if why else ")")
            )
            continue
        rc, seconds = collect(runtime, out, args, ncu_ok and runtime in TABLE3)
        timings[runtime] = seconds
        if rc != 0:
            failures.append(f"{runtime}: tracekit collect exited {rc}")
    dirs = [str(out / r) for r in TABLE3 + EXTRA if (out / r / "run.json").is_file()]
    if dirs:
        print("\n== tracekit table --paper ==", flush=True)
        tracekit("table", *dirs, "--paper")
    from tracekit.collectors.validate import check_trace, render_checks

    checks = []
    for directory in dirs:
        for sqlite in sorted(Path(directory).glob("*.nsys.sqlite")):
            try:
                checks += check_trace(sqlite)
            except Exception as exc:  # a trace the analyzer cannot read is a failure, not a crash
                failures.append(f"{sqlite.name}: {type(exc).__name__}: {exc}")
    print("\n== invariant checks ==")
    print(render_checks(checks))
    failures += [f"{c.trace}: {c.name}: {c.detail}" for c in checks if c.ok is False]
    summary = {"timings_s": {k: round(v, 1) for k, v in timings.items()}, "failures": failures}
    (out / "validate.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\ncollection times (s): {summary['timings_s']}; total {sum(timings.values()):.0f} s")
    if failures:
        print(f"gpu_validate: {len(failures)} problem(s); first: {failures[0]}", file=sys.stderr)
        return 1
    print("gpu_validate: all collections succeeded and all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
