"""Runtime adapters, one module per runtime; :func:`get_runtime` builds one by its CLI name."""

from __future__ import annotations

import importlib

from tracekit.collectors.runtimes.base import RunContext, Runtime
from tracekit.errors import TracekitError

#: CLI name -> "module:Class" under collectors.runtimes.
RUNTIMES: dict[str, str] = {
    "pytorch": "pytorch:PyTorchRuntime",
    "torchscript": "torchscript:TorchScriptRuntime",
    "cuda-graphs": "cuda_graphs:CudaGraphsRuntime",
    "compile": "compile:CompileRuntime",
    "compile-cudagraphs": "compile:CompileCudaGraphsRuntime",
    "onnx": "onnx:OnnxRuntime",
    "onnx-cuda-graphs": "onnx:OnnxCudaGraphsRuntime",
}

#: Runtimes that need a CUDA device.
CUDA_ONLY: frozenset[str] = frozenset({"cuda-graphs", "compile-cudagraphs", "onnx-cuda-graphs"})
#: Runtimes that replay captured CUDA graphs: their first runs capture/record, so they need >= 2 warm-up runs.
GRAPH_RUNTIMES: frozenset[str] = frozenset({"cuda-graphs", "compile-cudagraphs", "onnx-cuda-graphs"})
#: Warm-up runs the graph runtimes need before timing (capture or recording must not land in timed runs).
GRAPH_MIN_WARMUP = 2
#: Warm-up runs each runtime needs before timing: the graph runtimes capture or record in their first runs, and
#: TorchScript's profiling executor profiles the first run(s) and optimizes the graph after them, so an
#: unoptimized run must not be timed.
MIN_WARMUP: dict[str, int] = {**{name: GRAPH_MIN_WARMUP for name in GRAPH_RUNTIMES}, "torchscript": 2}
#: Runtimes that execute through ONNX Runtime (the ``ort`` profiler applies to them only).
ONNX_RUNTIMES: frozenset[str] = frozenset({"onnx", "onnx-cuda-graphs"})


def check_runtime_name(name: str) -> None:
    if name not in RUNTIMES:
        raise TracekitError(f"unknown runtime '{name}'; choose from: {', '.join(RUNTIMES)}")


def get_runtime(name: str) -> Runtime:
    """A fresh adapter for runtime ``name`` (TracekitError listing the choices when unknown)."""
    check_runtime_name(name)
    module_name, cls_name = RUNTIMES[name].split(":")
    module = importlib.import_module(f"tracekit.collectors.runtimes.{module_name}")
    return getattr(module, cls_name)()


__all__ = [
    "CUDA_ONLY",
    "GRAPH_MIN_WARMUP",
    "GRAPH_RUNTIMES",
    "MIN_WARMUP",
    "ONNX_RUNTIMES",
    "RUNTIMES",
    "RunContext",
    "Runtime",
    "check_runtime_name",
    "get_runtime",
]
