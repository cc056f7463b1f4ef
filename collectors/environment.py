"""What a run ran on: device resolution, package and tool versions, CPU and GPU identity for run.json."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import subprocess
from typing import Any

from tracekit.errors import TracekitError

#: The --device values: auto, cpu, cuda, cuda:N.
DEVICE = re.compile(r"auto|cpu|cuda(:[0-9]+)?")


def check_device(requested: str) -> None:
    """One line (TracekitError, exit 2) for a --device value that is none of :data:`DEVICE`'s (``cuda:x``,
    ``cudax``); checked before anything is imported, and again by :func:`resolve_device`."""
    if not DEVICE.fullmatch(requested):
        raise TracekitError(f"unknown device '{requested}'; choose from: auto, cpu, cuda, cuda:N")


def resolve_device(requested: str, runtime: str, cuda_only: bool) -> str:
    """``auto`` -> ``cuda:0`` when torch sees a CUDA device, else ``cpu``; ``cuda`` -> ``cuda:0``.

    A CUDA-only runtime, or ``--device cuda``, on a machine without CUDA raises one line (exit 2).
    """
    import torch

    check_device(requested)
    has_cuda = torch.cuda.is_available()
    if requested == "cpu" and cuda_only:
        raise TracekitError(f"runtime '{runtime}' needs a CUDA device; it cannot run with --device cpu")
    if requested.startswith("cuda") or (requested == "auto" and cuda_only):
        if not has_cuda:
            why = (
                "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA device is visible"
            )
            what = f"runtime '{runtime}'" if cuda_only else "--device cuda"
            raise TracekitError(f"{what} needs CUDA, and {why}: {_on_the_cpu(runtime, cuda_only)}")
        index = int(requested.split(":")[1]) if ":" in requested else 0
        if index >= torch.cuda.device_count():
            raise TracekitError(f"{requested}: only {torch.cuda.device_count()} CUDA device(s) visible")
        return f"cuda:{index}"
    if requested == "auto" and has_cuda:
        return "cuda:0"
    return "cpu"


def _on_the_cpu(runtime: str, cuda_only: bool) -> str:
    """What to do instead where CUDA is wanted and missing: the runtimes that run on the CPU, or ``--device
    cpu``, and ``tracekit doctor``, which says what this machine can run."""
    from tracekit.collectors.runtimes import CUDA_ONLY, RUNTIMES

    if cuda_only:
        on_cpu = ", ".join(r for r in RUNTIMES if r not in CUDA_ONLY)
        return (
            f"on this machine choose a runtime that runs on the CPU ({on_cpu}) with --device cpu; "
            "`tracekit doctor` says what it can run"
        )
    return f"run --runtime {runtime} with --device cpu (or auto); `tracekit doctor` says what this machine can run"


def cpu_model() -> str:
    """The CPU model name (``/proc/cpuinfo``), with the logical core count."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name} ({os.cpu_count()} logical cores)"


def _pkg(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _tool_version(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln.strip() for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    return lines[-1] if lines and out.returncode == 0 else None


def versions(nsys: str | None = None, ncu: str | None = None) -> dict[str, Any]:
    """Versions of python, tracekit's collection stack, CUDA/cuDNN as torch sees them, driver, nsys, ncu."""
    import torch

    data: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in (
        "tracekit",
        "torch",
        "transformers",
        "onnx",
        "onnxruntime",
        "onnxruntime-gpu",
        "onnxscript",
        "nvtx",
        "numpy",
    ):
        data[pkg] = _pkg(pkg)
    data["cuda"] = torch.version.cuda
    try:
        data["cudnn"] = torch.backends.cudnn.version() if torch.cuda.is_available() else None
    except Exception:
        data["cudnn"] = None
    try:
        import onnxruntime as ort

        data["onnxruntime_providers"] = ort.get_available_providers()
    except Exception:
        data["onnxruntime_providers"] = None
    from tracekit.collectors.profilers.nvml import _nvml

    nv = _nvml()
    try:
        driver = nv.nvmlSystemGetDriverVersion() if nv else None
        data["driver"] = driver.decode() if isinstance(driver, bytes) else driver
    except Exception:
        data["driver"] = None
    data["nsys"] = _tool_version([nsys, "--version"]) if nsys else None
    data["ncu"] = _tool_version([ncu, "--version"]) if ncu else None
    return {k: v for k, v in data.items() if v is not None}


def gpu_for(device: str, nsys_listing: dict[str, int] | None = None) -> dict[str, Any] | None:
    """GPU identity for ``cuda:N``, None on the CPU.

    The CUDA index is mapped to NVML (and nsys) by the GPU's UUID, never by position: CUDA numbers GPUs
    fastest first and over ``CUDA_VISIBLE_DEVICES``, NVML and nsys by PCI bus (see
    :mod:`tracekit.collectors.gpu`). ``nvml_index`` (also as ``physical_index``) and ``nsys_gpu_id`` come
    from that mapping; ``device_map`` holds the whole mapping for run.json.
    """
    from tracekit.collectors.gpu import cuda_device_map
    from tracekit.collectors.profilers.nvml import gpu_info
    from tracekit.collectors.runtimes.base import cuda_index

    index = cuda_index(device)
    if index is None:
        return None
    ident = cuda_device_map(index, nsys_listing)
    info = (gpu_info(ident.nvml_index) if ident.nvml_index is not None else None) or {}
    info.setdefault("name", ident.name)
    info.pop("index", None)
    info.update(
        cuda_index=index,
        nvml_index=ident.nvml_index,
        physical_index=ident.nvml_index,
        nsys_gpu_id=ident.nsys_gpu_id,
        uuid=info.get("uuid") or ident.uuid,
        logical=index,
        device_map=ident.to_json(),
    )
    return info
