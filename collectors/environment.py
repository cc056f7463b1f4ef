"""What a run ran on: device resolution, package and tool versions, CPU and GPU identity for run.json."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from typing import Any

from tracekit.errors import TracekitError


def resolve_device(requested: str, runtime: str, cuda_only: bool) -> str:
    """``auto`` -> ``cuda:0`` when torch sees a CUDA device, else ``cpu``; ``cuda`` -> ``cuda:0``.

    A CUDA-only runtime, or ``--device cuda``, on a machine without CUDA raises one line (exit 2).
    """
    import torch

    has_cuda = torch.cuda.is_available()
    if requested not in ("auto", "cpu") and not requested.startswith("cuda"):
        raise TracekitError(f"unknown device '{requested}'; choose from: auto, cpu, cuda, cuda:N")
    if requested == "cpu" and cuda_only:
        raise TracekitError(f"runtime '{runtime}' needs a CUDA device; it cannot run with --device cpu")
    if requested.startswith("cuda") or (requested == "auto" and cuda_only):
        if not has_cuda:
            why = (
                "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA device is visible"
            )
            what = f"runtime '{runtime}'" if cuda_only else "--device cuda"
            raise TracekitError(f"{what} needs CUDA, and {why}")
        index = int(requested.split(":")[1]) if ":" in requested else 0
        if index >= torch.cuda.device_count():
            raise TracekitError(f"{requested}: only {torch.cuda.device_count()} CUDA device(s) visible")
        return f"cuda:{index}"
    if requested == "auto" and has_cuda:
        return "cuda:0"
    return "cpu"


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


def gpu_for(device: str) -> dict[str, Any] | None:
    """GPU info for ``cuda:N`` (physical index resolved through CUDA_VISIBLE_DEVICES), None on CPU."""
    if not device.startswith("cuda"):
        return None
    import torch

    from tracekit.collectors.profilers.nvml import gpu_info, physical_gpu_index

    logical = int(device.split(":")[1]) if ":" in device else 0
    physical = physical_gpu_index(logical, os.environ.get("CUDA_VISIBLE_DEVICES"))
    info = gpu_info(physical) if physical is not None else None
    if info is None:
        info = {"name": torch.cuda.get_device_name(logical)}
    info["logical"] = logical
    info["physical_index"] = physical
    return info
