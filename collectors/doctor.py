"""What this machine can collect: CUDA devices under their three numberings, the torch / ONNX Runtime builds
(and whether ORT's CUDA provider really loads), Nsight Systems / Nsight Compute and their permissions, and
which runtimes and profilers will work. Used by ``tracekit doctor``; needs none of the collection extras
(what is missing is reported, with the extra that installs it)."""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import shutil
from typing import Any

from tracekit.collectors.profilers import PROFILERS
from tracekit.collectors.runtimes import CUDA_ONLY, ONNX_RUNTIMES, RUNTIMES

INSTALL_COLLECT = "pip install 'tracekit[collect]'"
INSTALL_GPU = "pip install 'tracekit[gpu]'"


def _pkg(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except Exception:
        return False
    return True


def torch_status() -> dict[str, Any]:
    """torch's version, CUDA build, and the CUDA devices it sees."""
    if not _importable("torch"):
        return {"installed": False, "why": f"torch is not installed ({INSTALL_COLLECT})"}
    import torch

    available = bool(torch.cuda.is_available())
    data: dict[str, Any] = {
        "installed": True,
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": available,
        "device_count": int(torch.cuda.device_count()) if available else 0,
    }
    if not available:
        data["why"] = (
            "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA device is visible"
        )
    return data


def devices(count: int, nsys_listing: dict[str, int] | None) -> list[dict[str, Any]]:
    """Every visible CUDA device: CUDA index, NVML index, UUID, PCI bus, nsys GPU id, name, driver."""
    from tracekit.collectors.gpu import cuda_device_map

    return [cuda_device_map(i, nsys_listing).to_json() for i in range(count)]


#: IR version of doctor's probe model (see :func:`_tiny_onnx`).
PROBE_IR_VERSION = 8


def _tiny_onnx() -> bytes:
    """A one-node (Identity) ONNX model, to learn whether a provider loads without exporting anything."""
    from onnx import TensorProto, helper

    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph(
        [node],
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    # IR version 8 (onnx 1.10+, ORT 1.10+): the installed onnx would write its newest (onnx 1.23: IR 14),
    # which an older ORT rejects at load, and the probe would then blame the CUDA provider.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=PROBE_IR_VERSION)
    return model.SerializeToString()


def ort_status(cuda: bool) -> dict[str, Any]:
    """ONNX Runtime packages, compiled-in providers, and whether a CUDA session really lands on CUDA."""
    packages = {"onnxruntime": _pkg("onnxruntime"), "onnxruntime-gpu": _pkg("onnxruntime-gpu")}
    if not _importable("onnxruntime"):
        return {
            "installed": False,
            "packages": packages,
            "why": f"onnxruntime is not installed ({INSTALL_COLLECT})",
        }
    import onnxruntime as ort

    data: dict[str, Any] = {
        "installed": True,
        "version": getattr(ort, "__version__", None),
        "packages": packages,
        "available_providers": list(ort.get_available_providers()),
        "cuda_provider_loads": False,
    }
    if packages["onnxruntime"] and packages["onnxruntime-gpu"]:
        data["warning"] = "both onnxruntime and onnxruntime-gpu are installed; keep only onnxruntime-gpu"
    if "CUDAExecutionProvider" not in data["available_providers"]:
        data["why"] = f"no CUDAExecutionProvider in this build (install onnxruntime-gpu: {INSTALL_GPU})"
        return data
    if not cuda:
        data["why"] = "no CUDA device to load the CUDA provider on"
        return data
    from tracekit.collectors.runtimes.onnx import (
        create_session,
        cuda_provider_problem,
        preload_cuda_libraries,
    )

    note = preload_cuda_libraries(ort)
    try:
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        session, error = create_session(
            ort, _tiny_onnx(), sess_options=opts, providers=["CUDAExecutionProvider"]
        )
        used = list(session.get_providers())
    except Exception as exc:
        data["why"] = f"session creation failed: {type(exc).__name__}: {str(exc).strip()[:200]}"
        return data
    data["cuda_provider_loads"] = bool(used) and used[0] == "CUDAExecutionProvider"
    if not data["cuda_provider_loads"]:
        data["why"] = (
            f"onnxruntime fell back to the CPU; its own words: EP Error {error}"
            if error
            else cuda_provider_problem(ort, used, note)
        )
    return data


def nsys_status(cuda: bool) -> dict[str, Any]:
    """nsys path and version; on a GPU, whether GPU-metrics sampling is permitted (and which option)."""
    from tracekit.collectors.profilers import tool_problem
    from tracekit.collectors.profilers.nsys import find_nsys, nsys_version

    nsys = find_nsys()
    if not nsys:
        return {"found": False, "why": "nsys not on PATH (install Nsight Systems)"}
    version = nsys_version(nsys)
    problem = tool_problem("TRACEKIT_NSYS", "nsys") if version is None else None
    if problem:  # TRACEKIT_NSYS names nothing that runs: not "found"
        return {"found": False, "why": problem}
    data: dict[str, Any] = {"found": True, "path": nsys, "version": version}
    importer = importer_status(nsys)
    if importer is not None:
        data["importer"] = importer
    if cuda:
        from tracekit.collectors.gpu import probe_nsys_gpu_metrics

        probe = probe_nsys_gpu_metrics(nsys, version)
        data["gpu_metrics"] = probe.to_json()
    else:
        data["gpu_metrics"] = {"permitted": False, "reason": "no CUDA device"}
    return data


def importer_status(nsys: str) -> dict[str, Any] | None:
    """The QdstrmImporter beside ``nsys`` (None: none found) and whether it starts: nsys turns its raw capture
    into a report with it, and Nsight Compute's bundled nsys on an H200 image left only a ``.qdstrm`` because
    its importer could not load libdw.so.1."""
    import subprocess

    from tracekit.collectors.profilers.nsys import IMPORTER_LIBRARY_HINT, find_importer

    importer = find_importer(nsys)
    if importer is None:
        return None
    try:
        proc = subprocess.run([str(importer), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"path": str(importer), "starts": False, "why": f"{type(exc).__name__}: {exc}"}
    said = (proc.stdout + proc.stderr).strip()
    if "error while loading shared libraries" in said:
        line = next(ln for ln in said.splitlines() if "error while loading shared libraries" in ln)
        return {"path": str(importer), "starts": False, "why": f"{line.strip()} ({IMPORTER_LIBRARY_HINT})"}
    return {"path": str(importer), "starts": True}


def ncu_status(cuda: bool) -> dict[str, Any]:
    """ncu path and version; on a GPU, whether a one-kernel profile may read the performance counters."""
    from tracekit.collectors.environment import _tool_version
    from tracekit.collectors.profilers import tool_problem
    from tracekit.collectors.profilers.ncu import find_ncu

    ncu = find_ncu()
    if not ncu:
        return {"found": False, "why": "ncu not on PATH (install Nsight Compute)"}
    version = _tool_version([ncu, "--version"])
    problem = tool_problem("TRACEKIT_NCU", "ncu") if version is None else None
    if problem:  # TRACEKIT_NCU names nothing that runs: not "found"
        return {"found": False, "why": problem}
    data: dict[str, Any] = {"found": True, "path": ncu, "version": version}
    if cuda:
        from tracekit.collectors.gpu import probe_ncu_counters

        data["counters"] = probe_ncu_counters(ncu).to_json()
    else:
        data["counters"] = {"permitted": False, "reason": "no CUDA device"}
    return data


def runtimes(torch_s: dict[str, Any], ort_s: dict[str, Any], has_tf: bool) -> dict[str, dict[str, Any]]:
    """Which ``--runtime`` values will run here, and on what (``works`` False with ``why`` otherwise)."""
    cuda = bool(torch_s.get("cuda_available"))
    out: dict[str, dict[str, Any]] = {}
    for name in RUNTIMES:
        why = None
        if not torch_s.get("installed") or not has_tf:
            why = f"needs torch and transformers ({INSTALL_COLLECT})"
        elif name in ONNX_RUNTIMES and not (ort_s.get("installed") and _importable("onnx")):
            why = f"needs onnx and onnxruntime ({INSTALL_COLLECT})"
        elif name in CUDA_ONLY and not cuda:
            why = f"needs CUDA ({torch_s.get('why')})"
        elif name == "onnx-cuda-graphs" and not ort_s.get("cuda_provider_loads"):
            why = f"needs ORT's CUDA provider ({ort_s.get('why')})"
        if why:
            out[name] = {"works": False, "why": why}
            continue
        on = ["cuda"] if name in CUDA_ONLY else (["cpu", "cuda"] if cuda else ["cpu"])
        if name == "onnx" and cuda and not ort_s.get("cuda_provider_loads"):
            on = ["cpu"]
        entry: dict[str, Any] = {"works": True, "devices": on}
        if name.startswith("compile") and not (
            shutil.which("cc") or shutil.which("gcc") or shutil.which("c++")
        ):
            entry["note"] = "torch.compile needs a C/C++ compiler (none found on PATH)"
        out[name] = entry
    return out


def profilers(
    torch_s: dict[str, Any], ort_s: dict[str, Any], nsys_s: dict[str, Any], ncu_s: dict[str, Any]
) -> dict[str, Any]:
    """Which ``--profiler`` values will work here, with what they record."""
    cuda = bool(torch_s.get("cuda_available"))
    out: dict[str, dict[str, Any]] = {}
    for name in PROFILERS:
        if name == "none":
            continue
        if name == "nsys":
            if not nsys_s.get("found"):
                out[name] = {"works": False, "why": nsys_s["why"]}
            elif (nsys_s.get("importer") or {}).get("starts") is False:
                out[name] = {
                    "works": False,
                    "why": f"its QdstrmImporter cannot start: {nsys_s['importer']['why']}",
                }
            else:
                metrics = nsys_s.get("gpu_metrics", {})
                what = "CUDA API, kernels, NVTX" if cuda else "NVTX and OS runtime only (no CUDA here)"
                extra = (
                    "GPU metrics sampled"
                    if metrics.get("permitted")
                    else f"no GPU metrics: {metrics.get('reason')}"
                )
                out[name] = {"works": True, "records": f"{what}; {extra}"}
        elif name == "torch":
            ok = bool(torch_s.get("installed"))
            out[name] = {"works": ok} | (
                {"records": "CPU ops" + (" and CUDA kernels" if cuda else "")}
                if ok
                else {"why": torch_s.get("why")}
            )
        elif name == "ort":
            ok = bool(ort_s.get("installed"))
            out[name] = {"works": ok} | (
                {"records": "ONNX Runtime node timings"} if ok else {"why": ort_s.get("why")}
            )
        elif name == "ncu":
            counters = ncu_s.get("counters", {})
            if not ncu_s.get("found"):
                out[name] = {"works": False, "why": ncu_s["why"]}
            elif not cuda:
                out[name] = {"works": False, "why": "needs a CUDA device"}
            elif not counters.get("permitted"):
                out[name] = {"works": False, "why": counters.get("reason")}
            else:
                out[name] = {"works": True, "records": "per-kernel SM activity and warp occupancy"}
    return out


def diagnose() -> dict[str, Any]:
    """The whole ``tracekit doctor`` document (JSON-ready)."""
    from tracekit.collectors.environment import cpu_model

    torch_s = torch_status()
    cuda = bool(torch_s.get("cuda_available"))
    nsys_s = nsys_status(cuda)
    listing = (nsys_s.get("gpu_metrics") or {}).get("devices") or None
    devs = devices(torch_s["device_count"], listing) if cuda else []
    ort_s = ort_status(cuda)
    ncu_s = ncu_status(cuda)
    has_tf = _importable("transformers")
    doc = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpu": cpu_model()},
        "cuda": cuda,
        "summary": (
            f"{len(devs)} CUDA device(s): GPU collection possible"
            if cuda
            else f"CPU only: {torch_s.get('why', 'no CUDA')}; GPU runtimes and ncu are unavailable"
        ),
        "torch": torch_s,
        "transformers": {"installed": has_tf, "version": _pkg("transformers")},
        "onnxruntime": ort_s,
        "devices": devs,
        "nsys": nsys_s,
        "ncu": ncu_s,
    }
    doc["runtimes"] = runtimes(torch_s, ort_s, has_tf)
    doc["profilers"] = profilers(torch_s, ort_s, nsys_s, ncu_s)
    return doc
