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


def _mismatches(row: dict[str, Any]) -> list[str]:
    """How a measured row's configuration differs from the published setup (batch size, precision, and
    sequence length / model where the row knows them); unknown batch size or precision is a difference."""
    out = []
    for key, short in (("batch_size", "bs"), ("precision", "")):
        value, published = row.get(key), PAPER_SETUP[key]
        if value is None:
            out.append(f"{key.replace('_', ' ')} unknown")
        elif value != published:
            out.append(f"{short}{value} (published {short}{published})")
    seq = row.get("seq_len")
    if seq is not None and seq != PAPER_SETUP["seq_len"]:
        out.append(f"s{seq} (published s{PAPER_SETUP['seq_len']})")
    model = row.get("model")
    if model and not str(model).lower().startswith(PAPER_SETUP["model"]):
        out.append(f"model {model} (published {PAPER_SETUP['model']})")
    return out


def align_with_paper(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Measured rows beside the published ones, aligned by runtime, in the study's order.

    One entry per measured row of a published runtime (``published``: that runtime's Table 3 row), one per
    published runtime without a measured row (``measured`` None), then one per measured row of another
    runtime (``published`` None). ``measured`` is the row's index in ``rows``. ``latency_ratio`` is
    measured / published latency (``latency_basis``: the measured row's untraced latency where it has one,
    else its traced latency) when the configurations match (same batch size and precision; sequence
    length and model where known), else None with the differences in ``mismatch``; ``latency_ratio_low`` /
    ``_high``: the untraced latency's 95% interval over the published latency, where the run recorded it."""
    published = {p["runtime"]: p for p in paper_rows()}
    by_runtime: dict[str | None, list[int]] = {}
    for i, row in enumerate(rows):
        by_runtime.setdefault(row.get("runtime"), []).append(i)
    entries: list[dict[str, Any]] = []

    def entry(index: int | None, paper: dict[str, Any] | None) -> dict[str, Any]:
        row = rows[index] if index is not None else None
        mismatch = _mismatches(row) if row is not None and paper is not None else []
        ratio = basis = low = high = None
        if row is not None and paper is not None and not mismatch:
            # The untraced latency where the run has one: a profiler slows a run (1.1-2x on the H200 samples),
            # and a published latency is a latency, not a traced one.
            key = next((k for k in ("untraced_latency_ms", "latency_ms") if row.get(k) is not None), None)
            if key is not None:
                ratio = row[key] / paper["latency_ms"]
                basis = "untraced" if key == "untraced_latency_ms" else "traced"
                if basis == "untraced" and row.get("untraced_ci_low") is not None:
                    # the measurement's noise: its 95% interval over the published value
                    low = row["untraced_ci_low"] / paper["latency_ms"]
                    high = row["untraced_ci_high"] / paper["latency_ms"]
        return {
            "runtime": (row or paper or {}).get("runtime"),
            "measured": index,
            "published": paper,
            "mismatch": mismatch,
            "latency_ratio": ratio,
            "latency_ratio_low": low,
            "latency_ratio_high": high,
            "latency_basis": basis,
        }

    for runtime, paper in published.items():
        entries += [entry(i, paper) for i in by_runtime.pop(runtime, [])] or [entry(None, paper)]
    entries += [entry(i, None) for indices in by_runtime.values() for i in indices]
    return entries
