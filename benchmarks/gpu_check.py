#!/usr/bin/env python
"""A GPU check of tracekit's collection that fits an air-gapped GPU box: about 6 minutes, a few files back.

    python benchmarks/gpu_check.py -o OUT [--device cuda:0] [--budget-s 420] [--iters 20] [--only STEP ...]

It needs only what such a box's image has (torch with CUDA, transformers, onnx, onnxruntime (CPU build is
enough), nvidia-ml-py, rich, numpy, Nsight Compute) plus tracekit itself: no polars, no ``nvtx`` package
(NVTX ranges go through ``torch.cuda.nvtx`` when it is missing). Nsight Systems is used when one is found
(``TRACEKIT_NSYS``, PATH, or the nsys Nsight Compute bundles, whose importer needs ``libdw.so.1`` on
``LD_LIBRARY_PATH``). Steps, in this order, each a ``tracekit collect`` of BERT-base, fp16, sequence 128,
under torch.profiler (Kineto) unless said:

    pytorch, cuda-graphs, torchscript     batch 1 and 8 (one process each: --in-process)
    pytorch-ncu                           batch 1 under Nsight Compute (SMs active, warp occupancy)
    compile, compile-cudagraphs           batch 1 and 8 (Inductor compiles: the slow steps)
    nsys-pytorch, nsys-cuda-graphs,       batch 1 and 8 under Nsight Systems with GPU metrics (when an nsys
    nsys-torchscript, nsys-compile        is found)
    onnx-cpu                              ONNX Runtime on the CPU provider, fp32, batch 1, ORT profiler (left
                                          out when the nsys steps run, to keep to the time budget)
    onnx-cuda, onnx-cuda-graphs           batch 1 and 8 on ORT's CUDA provider, IO binding, then ORT's own CUDA
                                          graphs (left out where onnxruntime has no CUDAExecutionProvider)
    doctor                                ``tracekit doctor`` as JSON

A step that would start after ``--budget-s`` is skipped and said so. Then the invariants are checked on what
was written, with the standard library only (:mod:`tracekit.collectors.kineto_check`,
:mod:`tracekit.collectors.nsys_check`): warm-up left out of the trace, kernels in every timed iteration, one
graph launch per iteration for graph runtimes and none for the others, the same attention kernels and no
fp32/TF32 GEMM kernels across the fp16 runtimes, untraced vs traced latency, Nsight Compute's coverage of
whole iterations, nsys GPU-metric samples where permitted, and what each runtime said of itself in run.json
(graphs really used; ORT on the CUDA provider with IO binding and no Memcpy node).

Output in ``OUT``: the other steps' run directories together in ``runs.tar.gz``, each nsys step's as
``<step>.tar.gz`` without its ``.nsys-rep`` reports (two configurations' exports gzip to 4-7 MB, under the
16 MiB a file that comes back may hold; a step over it, such as nsys-compile's 26 MB, as one
``<step>.<configuration>.tar.gz`` per configuration) (``tar xf`` them, then ``tracekit analyze``/``table
--paper`` on a CPU machine) and ``gpu_check.json`` (every step's time, exit
code and output tail, every check). Exit 0 when every step ran and every check passed, 1 otherwise, 2 (one
line) without torch or a CUDA device.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

#: (step, runtime, extra collect arguments, rough seconds on one H100/H200 for the estimate).
STEPS: tuple[tuple[str, str, tuple[str, ...], int], ...] = (
    ("pytorch", "pytorch", ("--batch-sizes", "1,8", "--profiler", "torch"), 30),
    ("cuda-graphs", "cuda-graphs", ("--batch-sizes", "1,8", "--profiler", "torch"), 30),
    ("torchscript", "torchscript", ("--batch-sizes", "1,8", "--profiler", "torch"), 35),
    ("pytorch-ncu", "pytorch", ("--batch-sizes", "1", "--profiler", "ncu"), 90),
    ("compile", "compile", ("--batch-sizes", "1,8", "--profiler", "torch"), 90),
    ("compile-cudagraphs", "compile-cudagraphs", ("--batch-sizes", "1,8", "--profiler", "torch"), 90),
    # Nsight Systems (when an nsys is found: TRACEKIT_NSYS, PATH, or the one Nsight Compute bundles)
    ("nsys-pytorch", "pytorch", ("--batch-sizes", "1,8", "--profiler", "nsys"), 90),
    ("nsys-cuda-graphs", "cuda-graphs", ("--batch-sizes", "1,8", "--profiler", "nsys"), 90),
    ("nsys-torchscript", "torchscript", ("--batch-sizes", "1,8", "--profiler", "nsys"), 90),
    ("nsys-compile", "compile", ("--batch-sizes", "1,8", "--profiler", "nsys"), 180),
    (
        "onnx-cpu",
        "onnx",
        ("--batch-sizes", "1", "--profiler", "ort", "--device", "cpu", "--precision", "fp32"),
        60,
    ),
    # ONNX Runtime's CUDA provider (only where onnxruntime-gpu is installed; the image of the H200 loans had the
    # CPU build): IO binding on device buffers, then ORT's own CUDA graph capture. Last, so that on such a box
    # they take what the budget leaves; run them with --only onnx-cuda onnx-cuda-graphs doctor.
    ("onnx-cuda", "onnx", ("--batch-sizes", "1,8", "--profiler", "torch"), 90),
    ("onnx-cuda-graphs", "onnx-cuda-graphs", ("--batch-sizes", "1,8", "--profiler", "torch"), 90),
)
STEP_NAMES = tuple(s[0] for s in STEPS) + ("doctor",)
GRAPH_STEPS = frozenset({"cuda-graphs", "compile-cudagraphs", "nsys-cuda-graphs", "onnx-cuda-graphs"})
#: Steps on ORT's CUDA provider: run only where onnxruntime lists CUDAExecutionProvider (:func:`ort_cuda_missing`).
ORT_CUDA_STEPS = ("onnx-cuda", "onnx-cuda-graphs")
NSYS_STEPS = ("nsys-pytorch", "nsys-cuda-graphs", "nsys-torchscript", "nsys-compile")
#: Where an image may keep its only nsys: the one Nsight Compute bundles (its importer needs libdw.so.1).
BUNDLED_NSYS = "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys"
#: fp16 Kineto steps whose kernels are compared (precision, attention).
FP16_TORCH_STEPS = ("pytorch", "cuda-graphs", "torchscript", "compile", "compile-cudagraphs")
#: Kernel-name markers of fp32 or TF32 matrix products (cuBLAS/CUTLASS/nvjet spellings).
FP32_GEMM_MARKERS = ("sgemm", "tf32", "_sss_", "nvjet_sss", "nvjet_tst", "f32f32_f32f32")
GEMM_MARKERS = ("gemm", "nvjet", "xmma", "cutlass", "matmul")
ATTENTION_MARKERS = ("flash", "fmha", "attention", "efficient_attention")


def refuse(message: str) -> int:
    print(f"gpu_check: {message}", file=sys.stderr)
    return 2


def preflight(device: str) -> str | None:
    """None when this machine can run the check, else the one-line reason."""
    try:
        import torch
    except ImportError:
        return "needs torch with CUDA; torch is not installed here"
    if not torch.cuda.is_available():
        why = "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA device is visible"
        return f"needs a CUDA device, and {why}"
    index = int(device.split(":")[1]) if ":" in device else 0
    if index >= torch.cuda.device_count():
        return f"{device}: only {torch.cuda.device_count()} CUDA device(s) visible"
    return None


def run_step(argv: list[str], timeout: float, cwd: Path) -> dict[str, Any]:
    """Run ``python -m tracekit.cli ARGV`` in ``cwd``; its exit code, seconds and output tail.

    Not in the repository root: ``-m`` puts the current folder first on sys.path, and the checkout's
    ``tracekit/`` (which lacks ``tracekit.collectors``) would shadow an installed tracekit."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tracekit.cli", *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
        )
        rc, text = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or b""
        rc, text = 124, (out.decode(errors="replace") if isinstance(out, bytes) else out) + "\n(timed out)"
    seconds = time.perf_counter() - start
    print(f"gpu_check: {' '.join(argv[:3])}: exit {rc} in {seconds:.0f} s", flush=True)
    return {"argv": argv, "rc": rc, "seconds": round(seconds, 1), "output_tail": text[-3000:]}


def collect_argv(
    step: str, runtime: str, extra: tuple[str, ...], args: argparse.Namespace, out: Path
) -> list[str]:
    argv = ["collect", "--runtime", runtime, "--model", args.model, "--seq-lens", "128"]
    if "--device" not in extra:
        argv += ["--device", args.device]
    if "--precision" not in extra:
        argv += ["--precision", "fp16"]
    iters = str(min(args.iters, 10)) if step == "onnx-cpu" else str(args.iters)
    argv += [*extra, "--warmup", str(args.warmup), "--iters", iters, "--no-progress", "--overwrite"]
    # the untraced set times on until its interval is tight: at most --max-time s a configuration here
    argv += ["--max-time", str(args.max_time)]
    if "ncu" not in extra and "nsys" not in extra:
        argv.append("--in-process")
    return [*argv, "-o", str(out / step)]


# -- checks (standard library only) ----------------------------------------------------------------------------
def check(name: str, ok: bool | None, detail: str, **data: Any) -> dict[str, Any]:
    return {"check": name, "ok": ok, "detail": detail, **data}


def kineto_checks(run_dir: Path, step: str, iters: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Checks on every Kineto trace of one run directory; also returns kernel names per batch size."""
    from tracekit.collectors.kineto_check import summarize

    out: list[dict[str, Any]] = []
    names: dict[str, Any] = {}
    run = json.loads((run_dir / "run.json").read_text())
    for cfg in run.get("configs", []):
        trace = cfg.get("traces", {}).get("torch")
        label = f"{step} b{cfg['batch_size']}"
        if cfg.get("status") != "ok" or not trace:
            out.append(check("collected", False, f"{label}: {cfg.get('error') or 'no torch trace'}"))
            continue
        s = summarize(run_dir / trace)
        names[str(cfg["batch_size"])] = s.kernel_names
        per = s.kernels_per_iteration
        out.append(
            check(
                "iterations",
                len(s.iterations) == iters,
                f"{label}: {len(s.iterations)} ranges, {iters} timed",
            )
        )
        out.append(
            check(
                "warm-up excluded",
                s.warmup_ranges == 0,
                f"{label}: {s.warmup_ranges} warm-up ranges in the trace",
            )
        )
        out.append(
            check(
                "kernels in every iteration",
                bool(per) and min(per) > 0,
                f"{label}: kernels per iteration {min(per) if per else 0}..{max(per) if per else 0}, "
                f"{s.kernels_outside} of {s.kernels_total} kernels launched outside the iterations",
            )
        )
        launches = sorted(set(s.graph_launches_per_iteration))
        want = 1 if step in GRAPH_STEPS else 0
        out.append(
            check(
                "graph launches per iteration",
                launches == [want],
                f"{label}: {launches} (expected {want})",
            )
        )
        ratio = cfg.get("perturbation", {}).get("torch")
        untraced = (cfg.get("untraced_latency_ms") or {}).get("mean")
        out.append(
            check(
                "traced/untraced latency",
                None if ratio is None else bool(ratio >= 0.95),
                f"{label}: untraced {untraced:.3f} ms, traced/untraced {ratio:.3f}"
                if ratio is not None and untraced is not None
                else f"{label}: no ratio",
                untraced_ms=untraced,
                ratio=ratio,
            )
        )
        out.append(check("summary", None, label, **s.to_json()))
    return out, names


def runtime_checks(run_dir: Path, step: str) -> list[dict[str, Any]]:
    """What each configuration's runtime said of itself (run.json ``runtime_details``, its ``describe()``):

    - a graph step: ``cuda_graphs_used`` true (torch: the capture ran; compile-cudagraphs: Inductor's cudagraph
      trees hold graphs and made no skip decision, its fallback to kernel launches being silent otherwise;
      ORT: the session accepted ``enable_cuda_graph`` and its capture runs were made in prepare);
    - an ORT CUDA step: the session's first provider is CUDAExecutionProvider with IO binding (ORT falls back to
      the CPU silently, and a CPU latency must not be read as CUDA's), and ORT's Memcpy count is 0 (a node it
      placed off the CUDA provider runs on the CPU with a copy each way, in the latency).
    """
    out: list[dict[str, Any]] = []
    graphs = step in GRAPH_STEPS
    ort_cuda = step in ORT_CUDA_STEPS
    if not (graphs or ort_cuda):
        return out
    run = json.loads((run_dir / "run.json").read_text())
    for cfg in run.get("configs", []):
        if cfg.get("status") != "ok":
            continue  # kineto_checks says "collected" False with the error
        label = f"{step} b{cfg['batch_size']}"
        details = cfg.get("runtime_details")
        if not isinstance(details, dict):
            out.append(check("runtime details", False, f"{label}: run.json holds no runtime_details"))
            continue
        if ort_cuda:
            provider, binding = details.get("provider_used"), details.get("io_binding")
            copies = details.get("memcpy_nodes")
            out.append(
                check(
                    "ORT on the CUDA provider",
                    provider == "CUDAExecutionProvider" and binding is True,
                    f"{label}: {provider}, IO binding {binding}",
                )
            )
            out.append(
                check(
                    "ORT Memcpy nodes",
                    copies == 0 and not isinstance(copies, bool),
                    f"{label}: {copies} host<->device copy nodes ORT inserted",
                )
            )
        if graphs:
            used = details.get("cuda_graphs_used")
            if "graphs_recorded" in details:
                how = (
                    f" ({details.get('graphs_recorded')} graph(s) in Inductor's cudagraph trees, "
                    f"{details.get('cudagraph_skips')} cudagraph skips)"
                )
            elif "capture_runs_in_prepare" in details:
                how = f" ({details.get('capture_runs_in_prepare')} runs in prepare allocate and capture)"
            else:
                how = ""
            out.append(
                check("runtime used CUDA graphs", used is True, f"{label}: cuda_graphs_used {used}{how}")
            )
    return out


def ort_cuda_missing() -> str | None:
    """Why the ORT CUDA steps cannot run here (one line), None when onnxruntime lists CUDAExecutionProvider.
    (Listed is not loadable: the collection itself refuses a session ORT moved to the CPU.)"""
    try:
        import onnxruntime

        providers = list(onnxruntime.get_available_providers())
    except Exception as exc:
        return f"onnxruntime cannot be imported ({type(exc).__name__})"
    if "CUDAExecutionProvider" in providers:
        return None
    return f"onnxruntime has no CUDAExecutionProvider here ({', '.join(providers)}): the CPU build"


def precision_checks(kernel_names: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """fp16 runtimes: no fp32/TF32 GEMM kernel; eager, TorchScript and CUDA graphs run the same attention kernels."""
    out: list[dict[str, Any]] = []
    attention: dict[str, list[str]] = {}
    for step, per_batch in kernel_names.items():
        names = {n for batch in per_batch.values() for n in batch}
        low = {n: n.lower() for n in names}
        gemm = sorted(n for n, lc in low.items() if any(m in lc for m in GEMM_MARKERS))
        fp32 = sorted(n for n in gemm if any(m in low[n] for m in FP32_GEMM_MARKERS))
        attention[step] = sorted(n for n, lc in low.items() if any(m in lc for m in ATTENTION_MARKERS))
        out.append(
            check(
                "fp16 GEMMs",
                not fp32,
                f"{step}: {len(gemm)} GEMM kernel names, {len(fp32)} fp32/TF32",
                gemm_kernels=gemm[:20],
                fp32_gemm_kernels=fp32[:20],
            )
        )
    same = [s for s in ("pytorch", "torchscript", "cuda-graphs") if s in attention]
    if len(same) >= 2:
        first = attention[same[0]]
        out.append(
            check(
                "same attention kernels",
                all(attention[s] == first for s in same),
                ", ".join(f"{s}: {len(attention[s])}" for s in same),
                attention_kernels={s: attention[s] for s in attention},
            )
        )
    return out


def ncu_checks(out_dir: Path, kernels_per_iteration_b1: int | None) -> list[dict[str, Any]]:
    """Nsight Compute profiled whole iterations: its kernel count is NCU_ITERATIONS x kernels per iteration."""
    from tracekit.collectors.profilers.ncu import NCU_ITERATIONS

    run_dir = out_dir / "pytorch-ncu"
    csvs = sorted(run_dir.glob("*.ncu.csv*"))
    if not csvs:
        return [check("ncu coverage", False, "no ncu CSV written")]
    opener = gzip.open if csvs[0].suffix == ".gz" else open
    with opener(csvs[0], "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        rows = list(csv.reader(fh))
    header = rows[0] if rows else []
    data = [r for r in rows[2:] if r]  # row 2 holds the units
    ids = {r[header.index("ID")] for r in data} if "ID" in header else set(range(len(data)))
    metrics = [m for m in header if m.startswith(("sm__", "gpu__"))]
    expected = NCU_ITERATIONS * kernels_per_iteration_b1 if kernels_per_iteration_b1 else None
    return [
        check(
            "ncu coverage",
            None if expected is None else len(ids) == expected,
            f"{len(ids)} kernels profiled, expected {expected} ({NCU_ITERATIONS} iterations x "
            f"{kernels_per_iteration_b1} kernels in the pytorch b1 torch.profiler trace)",
            metrics=metrics,
        )
    ]


def nsys_for_check() -> str | None:
    """The nsys to collect with: TRACEKIT_NSYS or PATH, else the one Nsight Compute bundles, else None."""
    import glob

    from tracekit.collectors.profilers.nsys import find_nsys

    return find_nsys() or next(iter(sorted(glob.glob(BUNDLED_NSYS), reverse=True)), None)


def _runs_before_timed(trace: Path) -> int:
    """The runs an nsys trace holds before its timed ones, as its sidecar says (``warmup_in_trace``,
    ``warmup_iterations``: the profiler warm-up step); 0 without a sidecar or when it says none."""
    from tracekit.inputs import load_sidecar_meta  # (standard library only, as the box needs)

    meta = load_sidecar_meta(trace)
    count = meta.get("warmup_iterations") if meta.get("warmup_in_trace") is True else 0
    return count if isinstance(count, int) and count >= 0 else 0


def nsys_checks(out_dir: Path, iters: int) -> list[dict[str, Any]]:
    """The nsys steps' traces (:mod:`tracekit.collectors.nsys_check`): every timed iteration and nothing
    else in the trace (the warm-up stays out of the capture range), kernels in every iteration, one graph
    launch per iteration for CUDA graphs and none for eager, GPU-metric samples where they were permitted."""
    from tracekit.collectors.nsys_check import summarize

    out: list[dict[str, Any]] = []
    for step in NSYS_STEPS:
        run_dir = out_dir / step
        if not (run_dir / "run.json").is_file():
            continue
        run = json.loads((run_dir / "run.json").read_text())
        metrics = run.get("gpu_metrics") or {}
        for cfg in run.get("configs", []):
            trace = cfg.get("traces", {}).get("nsys")
            label = f"{step} b{cfg['batch_size']}"
            if cfg.get("status") != "ok" or not trace:
                out.append(check("collected", False, f"{label}: {cfg.get('error') or 'no nsys trace'}"))
                continue
            s = summarize(run_dir / trace)
            per = s.kernels_per_iteration
            want = 1 if step in GRAPH_STEPS else 0
            launches = sorted(set(s.graph_launches_per_iteration))
            before = _runs_before_timed(run_dir / trace)  # the profiler warm-up step the sidecar names
            out += [
                check(
                    "iterations",
                    len(per) == iters + before,
                    f"{label}: {len(per)} ranges, {before} profiler warm-up + {iters} timed",
                ),
                check(
                    "warm-up excluded",
                    s.kernels_outside == 0,
                    f"{label}: {s.kernels_outside} of {s.kernels_total} kernels launched outside the iterations",
                ),
                check(
                    "kernels in every iteration",
                    bool(per) and min(per) > 0,
                    f"{label}: kernels per iteration {min(per) if per else 0}..{max(per) if per else 0}",
                ),
                check(
                    "graph launches per iteration",
                    launches == [want],
                    f"{label}: {launches} (expected {want})",
                ),
                check(
                    "GPU metrics",
                    None
                    if not metrics.get("permitted")
                    else bool(s.gpu_metric_samples) and metrics.get("verified"),
                    f"{label}: {s.gpu_metric_samples} samples; run.json (the run's first trace): "
                    f"{metrics.get('verification') or metrics.get('reason')}",
                ),
                check("summary", None, label, **s.to_json()),
            ]
        out += runtime_checks(run_dir, step)
    return out


def environment(device: str) -> dict[str, Any]:
    """GPU, versions and the CUDA -> NVML mapping, as collection records them."""
    env: dict[str, Any] = {}
    try:
        from tracekit.collectors.environment import gpu_for, versions
        from tracekit.collectors.profilers.ncu import find_ncu

        env["versions"] = versions(None, find_ncu())
        env["gpu"] = gpu_for(device)
    except Exception as exc:
        env["error"] = f"{type(exc).__name__}: {exc}"
    return env


#: Largest file put in a bundle: an ncu report (.ncu-rep) of BERT-base's 600 kernels passes 16 MiB, the most
#: a GPU box may hand back per file; its CSV export, which tracekit reads, stays.
MAX_BUNDLED_BYTES = 8 << 20


def _small_enough(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if info.isfile() and info.size > MAX_BUNDLED_BYTES:
        print(f"gpu_check: {info.name} ({info.size >> 20} MiB) left out of the bundle", flush=True)
        return None
    return info


def _pack(out: Path, name: str, steps: list[str], keep: Any, remove: bool = True) -> str | None:
    """``OUT/<name>`` (gzipped tar) of the run directories ``OUT/<step>/`` present, each removed once packed
    unless ``remove`` is false; ``keep``: the tar filter. None when no step left a directory."""
    import shutil

    present = [step for step in steps if (out / step).is_dir()]
    if not present:
        return None
    with tarfile.open(out / name, "w:gz") as tar:
        for step in present:
            tar.add(out / step, arcname=step, filter=keep)
            if remove:
                shutil.rmtree(out / step)
    return name


def bundle(out: Path, steps: list[str]) -> str | None:
    """``OUT/runs.tar.gz`` of the torch.profiler, ncu and ORT steps' run directories ``OUT/<step>/`` (a few
    MB together), which are then removed: few files come back from a GPU box."""
    return _pack(out, "runs.tar.gz", steps, _small_enough)


def _without_reports(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if info.name.endswith((".nsys-rep", ".qdstrm")) else info


#: The most a file coming back from a GPU box may hold.
MAX_RETURNED_BYTES = 16 << 20


def _configurations(run_dir: Path) -> list[str]:
    """The configuration stems (``compile_b1_s128``) of a run directory's nsys exports, sorted."""
    return sorted({p.name.split(".nsys.")[0] for p in run_dir.glob("*.nsys.sqlite*")})


def bundle_nsys(out: Path) -> list[str]:
    """``OUT/<step>.tar.gz`` for each nsys step's run directory (SQLite exports and sidecars; the ``.nsys-rep``
    reports stay: 12-15 MB exports gzip to 2-5 MB), which is then removed. One file per step keeps each under
    the 16 MiB a file coming back from a GPU box may hold; a step whose file would pass it (nsys-compile's two
    exports, with 4.4 million GPU-metric samples, gzipped to 25.8 MB on the 2026-11-28 H200 loan) is packed
    as one ``<step>.<configuration>.tar.gz`` per configuration instead, each with the run's run.json and
    latency.csv."""
    import shutil

    names: list[str] = []
    for step in NSYS_STEPS:
        name = _pack(out, f"{step}.tar.gz", [step], _without_reports, remove=False)
        if name is None:
            continue
        run_dir = out / step
        configurations = _configurations(run_dir)
        if (out / name).stat().st_size <= MAX_RETURNED_BYTES or len(configurations) < 2:
            names.append(name)
        else:
            (out / name).unlink()
            for config in configurations:

                def this_configuration(info: tarfile.TarInfo, config: str = config) -> tarfile.TarInfo | None:
                    base = info.name.rsplit("/", 1)[-1]
                    if info.isfile() and ".nsys." in base and not base.startswith(config + "."):
                        return None
                    return _without_reports(info)

                names.append(_pack(out, f"{step}.{config}.tar.gz", [step], this_configuration, remove=False))
        shutil.rmtree(run_dir)
    return [name for name in names if name]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "-o", "--output", default="runs/gpu-check", help="output folder (default runs/gpu-check)"
    )
    parser.add_argument("--device", default="cuda:0", help="CUDA device (default cuda:0)")
    parser.add_argument("--model", default="bert-base", help="zoo model (default bert-base)")
    parser.add_argument("--warmup", type=int, default=10, help="warm-up iterations (default 10)")
    parser.add_argument("--iters", type=int, default=20, help="timed iterations (default 20; ORT on CPU: 10)")
    parser.add_argument(
        "--max-time",
        type=float,
        default=5.0,
        help="collect's --max-time: the untraced timing's cap per configuration (default 5 s)",
    )
    parser.add_argument(
        "--budget-s", type=float, default=420, help="start no step after this (default 420 s)"
    )
    parser.add_argument("--only", nargs="+", choices=STEP_NAMES, help="run only these steps")
    parser.add_argument("--no-bundle", action="store_true", help="leave the run directories unpacked")
    args = parser.parse_args(argv)
    reason = preflight(args.device)
    if reason:
        return refuse(reason)
    os.environ.setdefault("TRACEKIT_NO_PROGRESS", "1")
    out = Path(args.output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    summary: dict[str, Any] = {"environment": environment(args.device), "steps": {}, "checks": []}
    wanted = set(args.only or STEP_NAMES)
    nsys = nsys_for_check()
    if nsys:
        os.environ["TRACEKIT_NSYS"] = nsys
        if not args.only:  # the time budget: the ORT CPU step (checked on any machine) gives way
            wanted.discard("onnx-cpu")
            summary["steps"]["onnx-cpu"] = {"left out": "nsys steps ran instead (the time budget)"}
    no_ort_cuda = ort_cuda_missing() if wanted & set(ORT_CUDA_STEPS) else None
    for step, runtime, extra, estimate in STEPS:
        if step not in wanted:
            continue
        if step in ORT_CUDA_STEPS and no_ort_cuda:
            summary["steps"][step] = {"left out": no_ort_cuda}
            continue
        if step in NSYS_STEPS and not nsys:
            summary["steps"][step] = {"left out": "no nsys (TRACEKIT_NSYS, PATH, or Nsight Compute's bundle)"}
            continue
        left = args.budget_s - (time.perf_counter() - t0)
        if left < estimate / 3:
            summary["steps"][step] = {
                "skipped": f"{left:.0f} s of the budget left, about {estimate} s needed"
            }
            continue
        summary["steps"][step] = run_step(
            # at least twice its estimate: on the 2026-11-28 H200 loan nsys-compile b8, started with 75 s of the
            # budget left, was killed at 135 s; alone it took 87 s after b1's 48
            collect_argv(step, runtime, extra, args, out),
            max(60.0, 2.0 * estimate, left + 60),
            out,
        )
    if "doctor" in wanted:
        summary["steps"]["doctor"] = run_step(["doctor", "--format", "json"], 180, out)
    names: dict[str, Any] = {}
    b1_kernels: int | None = None
    for step in FP16_TORCH_STEPS + ORT_CUDA_STEPS:
        if (out / step / "run.json").is_file():
            try:
                checks, names[step] = kineto_checks(out / step, step, args.iters)
                checks += runtime_checks(out / step, step)
            except Exception as exc:
                checks = [check("readable", False, f"{step}: {type(exc).__name__}: {exc}")]
            summary["checks"] += checks
            if step == "pytorch":
                for c in checks:
                    if (
                        c["check"] == "summary"
                        and c["detail"] == "pytorch b1"
                        and c.get("kernels_per_iteration")
                    ):
                        kpi = c["kernels_per_iteration"]
                        b1_kernels = kpi["max"] if kpi["min"] == kpi["max"] else None
    summary["checks"] += precision_checks(names)
    if (out / "pytorch-ncu" / "run.json").is_file():
        summary["checks"] += ncu_checks(out, b1_kernels)
    try:
        summary["checks"] += nsys_checks(out, args.iters)
    except Exception as exc:
        summary["checks"].append(check("readable", False, f"nsys: {type(exc).__name__}: {exc}"))
    summary["seconds"] = round(time.perf_counter() - t0, 1)
    failed_steps = [s for s, r in summary["steps"].items() if r.get("rc") not in (0, None) or "skipped" in r]
    failed_checks = [c for c in summary["checks"] if c["ok"] is False]
    summary["failed_steps"], summary["failed_checks"] = failed_steps, len(failed_checks)
    if not args.no_bundle:
        nsys_bundles = bundle_nsys(out)
        runs = bundle(out, [s for s in STEP_NAMES if s not in NSYS_STEPS])
        summary["files"] = ([runs] if runs else []) + nsys_bundles
    (out / "gpu_check.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    for c in summary["checks"]:
        if c["ok"] is not None:
            print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['check']}: {c['detail']}")
    print(
        f"gpu_check: {summary['seconds']:.0f} s; failed steps: {failed_steps or 'none'}; failed checks: {len(failed_checks)}"
    )
    return 1 if failed_steps or failed_checks else 0


if __name__ == "__main__":
    sys.exit(main())
