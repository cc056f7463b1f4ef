"""The reference study's published numbers, as data, and the runtime taxonomy of its Table 3.

Fernandez et al., "The Framework Tax" (2023), Table 3: BERT-Base, batch size 1, sequence length 128, fp16,
NVIDIA Quadro RTX 8000. SMs active and warp occupancy there are Nsight Systems GPU-metrics samples averaged
over wall time (idle time included). These are published values, not measurements made by tracekit.
"""

from __future__ import annotations

from typing import Any

PAPER_CITATION = "Fernandez et al., The Framework Tax (2023), Table 3"
PAPER_SETUP = {
    "model": "bert-base",
    "batch_size": 1,
    "seq_len": 128,
    "precision": "fp16",
    "gpu": "Quadro RTX 8000",
}

#: runtime -> (graph compilation, kernel serialization), tracekit runtime names.
RUNTIME_TRAITS: dict[str, tuple[str, str]] = {
    "pytorch": ("none", "none"),
    "torchscript": ("just-in-time", "none"),
    "cuda-graphs": ("none", "yes"),
    "onnx": ("ahead-of-time", "none"),
    "onnx-cuda-graphs": ("ahead-of-time", "yes"),
    "compile": ("just-in-time", "none"),
    "compile-cudagraphs": ("just-in-time", "yes"),
}

#: Display order of runtimes in tables (others follow, alphabetically).
RUNTIME_ORDER = tuple(RUNTIME_TRAITS)

#: Table 3 rows: latency in ms, SMs active and warp occupancy in % (wall-time nsys samples).
PAPER_TABLE3: list[dict[str, Any]] = [
    {"runtime": "pytorch", "label": "PyTorch", "latency_ms": 10.54, "sms_active": 2.6, "warp_occupancy": 0.9},
    {
        "runtime": "torchscript",
        "label": "PyTorch + TorchScript",
        "latency_ms": 6.14,
        "sms_active": 18.5,
        "warp_occupancy": 3.0,
    },
    {
        "runtime": "cuda-graphs",
        "label": "PyTorch + CUDA Graphs",
        "latency_ms": 2.82,
        "sms_active": 57.0,
        "warp_occupancy": 9.2,
    },
    {
        "runtime": "onnx",
        "label": "ONNX Runtime",
        "latency_ms": 2.56,
        "sms_active": 22.3,
        "warp_occupancy": 9.5,
    },
    {
        "runtime": "onnx-cuda-graphs",
        "label": "ONNX Runtime + CUDA Graphs",
        "latency_ms": 2.11,
        "sms_active": 59.0,
        "warp_occupancy": 20.3,
    },
]


def runtime_traits(runtime: str | None) -> tuple[str | None, str | None]:
    """(graph compilation, kernel serialization) of a runtime name; (None, None) when unknown."""
    if runtime is None:
        return None, None
    return RUNTIME_TRAITS.get(runtime.lower(), (None, None))


def paper_rows() -> list[dict[str, Any]]:
    """Table 3 as row dicts with the taxonomy columns filled in."""
    rows = []
    for row in PAPER_TABLE3:
        compilation, serialization = RUNTIME_TRAITS[row["runtime"]]
        rows.append(
            {
                **row,
                "graph_compilation": compilation,
                "kernel_serialization": serialization,
                **{k: PAPER_SETUP[k] for k in ("batch_size", "seq_len")},
            }
        )
    return rows
