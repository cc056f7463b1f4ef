"""Run one configuration (build model, prepare runtime, warm up, time) in this process.

Used in-process by the sweep for untraced, ``torch`` and ``ort`` runs, and as a child process
(``python -m tracekit.collectors.worker --config JSON --result FILE``) under the profilers that wrap a process
(``nsys``, ``ncu``): one child per configuration.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tracekit.collectors.harness import (
    TimingBudget,
    nvtx_ranges,
    operator_ranges,
    time_iterations,
    use_plain_nvtx,
)
from tracekit.collectors.inputs import make_inputs
from tracekit.collectors.runtimes import RunContext, get_runtime
from tracekit.collectors.zoo import BuiltModel, ModelSpec, build

_MODELS: dict[tuple[Any, ...], BuiltModel] = {}


def get_model(spec: ModelSpec, device: str, precision: str, seed: int = 0) -> BuiltModel:
    """Build (once per process) the model on ``device`` in ``precision``."""
    key = (spec, device, precision, seed)
    if key not in _MODELS:
        _MODELS.clear()
        model = build(spec, seed)
        module = model.module.to(device)
        if precision == "fp16":
            module = module.half()
        model.module = module.eval()
        _MODELS[key] = model
    return _MODELS[key]


def select_device(device: str) -> None:
    """Make ``cuda:N`` the process's current CUDA device (``torch.cuda.set_device``): streams, graph capture,
    ``torch.cuda.synchronize()`` and ORT's default stream all act on the current device, device 0 otherwise."""
    from tracekit.collectors.runtimes.base import cuda_index

    index = cuda_index(device)
    if index is not None:
        import torch

        torch.cuda.set_device(index)


def apply_tf32(enabled: bool) -> dict[str, bool]:
    """TF32 for fp32 matmuls (cuBLAS) and convolutions (cuDNN) in torch, on or off together; ONNX Runtime gets
    the same through ``use_tf32``. Returns the settings read back (for run.json)."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    # cuDNN picks convolution algorithms by heuristics, not by timing them: the same rule as ONNX Runtime's
    # cudnn_conv_algo_search=HEURISTIC (collectors/runtimes/onnx.py), so conv models compare like with like.
    torch.backends.cudnn.benchmark = False
    return {
        "torch_matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "torch_cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "torch_cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
    }


_MODEL_RUN = re.compile(rb'"name"\s*:\s*"model_run"')


def copy_ort_profile(written: str, out: Path) -> int:
    """Gzip ORT's profile to ``out`` (about 1 KB per node event) and return how many ``model_run`` events it
    holds (every ``Run`` since the session was created: shape probes, warm-up, ORT's CUDA-graph capture run)."""
    runs = 0
    with open(written, "rb") as src, gzip.open(out, "wb", compresslevel=6) as dst:
        for line in src:
            runs += len(_MODEL_RUN.findall(line))
            dst.write(line)
    os.unlink(written)
    return runs


def run_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Run one configuration; returns ``{"latencies_ms": [...], "describe": {...}, "trace": path|None, ...}``.

    ``cfg``: model (name), layers, hidden, gen_tokens, runtime, device, precision, batch_size, seq_len,
    warmup, iters, profiler ("none" | "nsys" | "ncu" | "torch" | "ort"), trace_out (file the torch/ort
    profile is written to), opset, seed, op_ranges (bool: NVTX range per torch operator), tf32 (bool), budget
    (untraced runs: :class:`~tracekit.collectors.harness.TimingBudget` fields). The result also holds
    ``cpu_ms`` (process CPU time per timed iteration), ``preempted`` (involuntary context switches per timed
    iteration) and, for an adaptive set, ``stopped_by``.
    """
    import torch

    spec = ModelSpec(cfg["model"], cfg.get("layers"), cfg.get("hidden"), cfg.get("gen_tokens", 8))
    device, precision, profiler = cfg["device"], cfg["precision"], cfg.get("profiler", "none")
    select_device(device)
    if cfg.get("nvtx") == "plain":
        use_plain_nvtx()
    tf32 = apply_tf32(bool(cfg.get("tf32", False)))
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg["threads"]))
    model = get_model(spec, device, precision, cfg.get("seed", 0))
    inputs = make_inputs(model, cfg["batch_size"], cfg["seq_len"], device, precision, cfg.get("seed", 0))
    runtime = get_runtime(cfg["runtime"])
    tmpdir = Path(tempfile.mkdtemp(prefix="tracekit-ort-")) if profiler == "ort" else None
    ctx = RunContext(
        model=model,
        inputs=inputs,
        device=device,
        precision=precision,
        opset=cfg.get("opset", 17),
        ort_profile_prefix=str(tmpdir / "ort") if tmpdir else None,
        tf32=bool(cfg.get("tf32", False)),
    )
    result: dict[str, Any] = {"tf32": tf32, "attention": model.attention, "warnings": []}
    try:
        if profiler == "torch" and runtime.captures_graphs:
            # Graphs captured before the profiler starts may lose their kernels in the trace; the documented
            # workaround initializes the profiler (CUPTI) once before capture.
            torch.profiler._utils._init_for_cuda_graphs()
            result["torch_profiler_graph_init"] = True
        runtime.prepare(ctx)
        result.update(_timed(runtime, cfg, device, profiler))
        described = runtime.describe()
        result.update(describe=described, nvtx=nvtx_ranges().method)
        result["warnings"] = [*result.get("warnings", []), *runtime_warnings(described)]
        return result
    finally:
        runtime.close()
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)


def runtime_warnings(described: dict[str, Any]) -> list[str]:
    """What a runtime's own account of itself (``describe()``) says the user should know: ONNX Runtime's
    host<->device copy nodes on CUDA (``memcpy_nodes``: nodes it placed off the CUDA provider, whose copies
    are in the latency)."""
    copies = described.get("memcpy_nodes")
    if isinstance(copies, int) and not isinstance(copies, bool) and copies > 0:
        return [
            f"onnxruntime inserted {copies} host<->device copy node(s) for the CUDA provider: some nodes run on "
            "the CPU, and their copies are in the latency (run.json runtime_details.memcpy_nodes)"
        ]
    return []


#: Iterations run under the profiler before the timed ones: under torch.profiler traced and discarded (its
#: schedule's ``warmup``, as PyTorch's profiler recipe advises: the first traced steps are skewed by the
#: profiler's own start-up), under nsys on CUDA recorded as the first 'iteration' ranges of the capture and
#: named in the sidecar, which analyze drops. Without it, the first timed iteration of the committed H200
#: CUDA-graph traces took 2.8-3.8x the median of the rest (0.83-0.85 ms) under torch.profiler, the first replay
#: under a freshly started CUPTI, and 1.2-1.3x under nsys.
PROFILER_WARMUP_STEPS = 1


def _timed(runtime: Any, cfg: dict[str, Any], device: str, profiler: str) -> dict[str, Any]:
    """Warm up and time under ``profiler``; the latencies, the trace written and what it holds."""
    import torch

    op_ranges = (lambda: operator_ranges(device)) if cfg.get("op_ranges") and runtime.eager_torch else None
    out: dict[str, Any] = {
        "trace": None,
        "op_ranges": bool(op_ranges),
        "warnings": [],
        "cpu_ms": [],
        "preempted": [],
    }
    if profiler == "torch":
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device.startswith("cuda"):
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        # Warm up outside the profiler; then PROFILER_WARMUP_STEPS iterations traced and discarded (the
        # schedule's warm-up: the first traced steps carry the profiler's start-up cost), then the timed ones.
        time_iterations(runtime.run, runtime.sync, cfg["warmup"], 0)
        schedule = torch.profiler.schedule(
            wait=0, warmup=PROFILER_WARMUP_STEPS, active=cfg["iters"], repeat=1
        )
        with torch.profiler.profile(activities=activities, schedule=schedule) as prof:
            time_iterations(runtime.run, runtime.sync, PROFILER_WARMUP_STEPS, 0, on_iteration=prof.step)
            out["latencies_ms"] = time_iterations(
                runtime.run,
                runtime.sync,
                0,
                cfg["iters"],
                record_function=True,
                on_iteration=prof.step,
                cpu_ms=out["cpu_ms"],
                preempted=out["preempted"],
            )
        out["profiler_warmup_steps"] = PROFILER_WARMUP_STEPS
        out["trace"] = _export_kineto(prof, Path(cfg["trace_out"]))
        from tracekit.collectors.kineto_check import empty_iteration_warnings

        out["warnings"] += empty_iteration_warnings(out["trace"], device)
        return out
    warmup = cfg["warmup"]
    if profiler == "nsys" and device.startswith("cuda"):
        # Warm up before the capture range opens, as the torch.profiler path does: a warm-up in the trace lies
        # in no 'iteration' range, and analyze warned of it on every run (a real H200 BERT-base run: 2,142
        # device ops launched outside every iteration), while the sidecar said warmup_in_trace false.
        time_iterations(runtime.run, runtime.sync, warmup, 0)
        warmup = 0
        start_capture()
        # Then PROFILER_WARMUP_STEPS iterations in the capture, as 'iteration' ranges the sidecar names
        # (warmup_in_trace, warmup_iterations) and analyze drops by default: the first iteration after the
        # capture opened carries the profiler's start-up (H200, 2026-11-28: the first of 20 CUDA-graph
        # iterations took 0.95 ms against a median of 0.75 at batch 1, 1.22 against 1.01 at batch 8).
        time_iterations(runtime.run, runtime.sync, 0, PROFILER_WARMUP_STEPS)
        out["runs_before_timed"] = out["profiler_warmup_steps"] = PROFILER_WARMUP_STEPS
    # Only the untraced set is timed adaptively (cfg "budget"): a traced set keeps --iters iterations, so a
    # trace's size and its warm-up count stay what the run says.
    budget = TimingBudget(**cfg["budget"]) if profiler == "none" and cfg.get("budget") else None
    out["latencies_ms"] = time_iterations(
        runtime.run,
        runtime.sync,
        warmup,
        cfg["iters"],
        op_ranges=op_ranges,
        cpu_ms=out["cpu_ms"],
        budget=budget,
        preempted=out["preempted"],
    )
    if budget is not None:
        out["stopped_by"] = budget.stopped_by
    if profiler == "ort":
        written = runtime.end_profiling()
        if written:
            trace = Path(cfg["trace_out"])
            runs = copy_ort_profile(written, trace)
            out["trace"] = str(trace)
            out["trace_runs"] = runs
            out["runs_before_timed"] = max(0, runs - cfg["iters"])
    return out


def start_capture() -> None:
    """Open nsys's capture range (``--capture-range=cudaProfilerApi``): everything before this call (model
    build, ONNX export, torch.compile, CUDA-graph capture, the warm-up) stays out of the trace; the profiler
    warm-up step and the timed iterations are in it, as the run's metadata says (``warmup_in_trace`` true,
    ``warmup_iterations`` :data:`PROFILER_WARMUP_STEPS`)."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.profiler.start()


def _export_kineto(prof: Any, out: Path) -> str:
    """Write the Kineto chrome trace gzipped to ``out`` (``.json.gz``)."""
    fd, raw = tempfile.mkstemp(suffix=".json", dir=out.parent)
    os.close(fd)
    try:
        prof.export_chrome_trace(raw)
        with open(raw, "rb") as src, gzip.open(out, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst)
    finally:
        os.unlink(raw)
    return str(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tracekit.collectors.worker")
    parser.add_argument("--config", required=True, help="configuration as JSON")
    parser.add_argument("--result", required=True, help="file to write the result JSON to")
    args = parser.parse_args(argv)
    cfg = json.loads(args.config)
    try:
        result = run_config(cfg)
    except Exception as exc:
        from tracekit.errors import RunFailure, TracekitError

        if isinstance(exc, TracekitError):
            result = {"error": exc.message, "usage": not isinstance(exc, RunFailure)}
        else:
            text = str(exc).strip()
            result = {"error": f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")}
        Path(args.result).write_text(json.dumps(result))
        return 1
    Path(args.result).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
