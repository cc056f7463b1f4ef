"""NVML helpers: GPU identity and clocks for run.json.

The CUDA device of a run is mapped to its NVML index by UUID (:func:`tracekit.collectors.gpu.cuda_device_map`):
CUDA orders GPUs fastest first, NVML by PCI bus, so positions alone are wrong on mixed machines.
:func:`physical_gpu_index` (``CUDA_VISIBLE_DEVICES`` entries -> NVML index) is kept for callers that have no
torch device properties; it cannot see CUDA's fastest-first reordering.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def physical_gpu_index(
    logical: int, visible: str | None, uuid_to_index: Callable[[str], int | None] | None = None
) -> int | None:
    """Physical index of logical CUDA device ``logical`` given ``CUDA_VISIBLE_DEVICES`` = ``visible``.

    ``visible`` None (unset): the identity. Empty / "-1" / "NoDevFiles": no GPU (None). Entries are indices or
    ``GPU-<uuid>`` strings (prefixes allowed); parsing stops at the first invalid entry, as CUDA does. MIG
    instances (``MIG-...``) have no physical index for GPU metrics: None.
    """
    if visible is None:
        return logical
    entries: list[str] = []
    for raw in visible.split(","):
        item = raw.strip()
        if not item or item == "-1" or item.lower() == "nodevfiles":
            break
        entries.append(item)
    if logical < 0 or logical >= len(entries):
        return None
    entry = entries[logical]
    if entry.isdigit():
        return int(entry)
    if entry.startswith("MIG-"):
        return None
    if uuid_to_index is None:
        uuid_to_index = nvml_uuid_to_index
    return uuid_to_index(entry if entry.startswith("GPU-") else f"GPU-{entry}")


def _nvml() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:
        return None


def nvml_uuid_to_index(uuid: str) -> int | None:
    """Physical index of the GPU whose UUID equals or starts with ``uuid`` (unique prefix), via NVML."""
    nv = _nvml()
    if nv is None:
        return None
    matches = []
    for i in range(nv.nvmlDeviceGetCount()):
        handle = nv.nvmlDeviceGetHandleByIndex(i)
        dev_uuid = nv.nvmlDeviceGetUUID(handle)
        dev_uuid = dev_uuid.decode() if isinstance(dev_uuid, bytes) else dev_uuid
        if dev_uuid == uuid or dev_uuid.startswith(uuid):
            matches.append(i)
    return matches[0] if len(matches) == 1 else None


def gpu_info(index: int) -> dict[str, Any] | None:
    """Name, UUID, memory, driver and clocks (current and max SM / memory MHz) of physical GPU ``index``."""
    nv = _nvml()
    if nv is None:
        return None

    def text(v: Any) -> str:
        return v.decode() if isinstance(v, bytes) else str(v)

    try:
        handle = nv.nvmlDeviceGetHandleByIndex(index)
        info: dict[str, Any] = {
            "index": index,
            "name": text(nv.nvmlDeviceGetName(handle)),
            "uuid": text(nv.nvmlDeviceGetUUID(handle)),
            "driver": text(nv.nvmlSystemGetDriverVersion()),
        }
    except Exception:
        return None
    for key, fn, arg in (
        ("memory_total_mib", "nvmlDeviceGetMemoryInfo", None),
        ("sm_clock_mhz", "nvmlDeviceGetClockInfo", "NVML_CLOCK_SM"),
        ("mem_clock_mhz", "nvmlDeviceGetClockInfo", "NVML_CLOCK_MEM"),
        ("max_sm_clock_mhz", "nvmlDeviceGetMaxClockInfo", "NVML_CLOCK_SM"),
        ("max_mem_clock_mhz", "nvmlDeviceGetMaxClockInfo", "NVML_CLOCK_MEM"),
    ):
        try:
            if arg is None:
                info[key] = int(getattr(nv, fn)(handle).total // (1024 * 1024))
            else:
                info[key] = int(getattr(nv, fn)(handle, getattr(nv, arg)))
        except Exception:
            pass
    try:
        major, minor = nv.nvmlDeviceGetCudaComputeCapability(handle)
        info["compute_capability"] = f"{major}.{minor}"
    except Exception:
        pass
    return info
