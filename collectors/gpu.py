"""GPU identity across numbering schemes, and probes of what the GPU profilers are allowed to do.

Three numberings of the same GPUs exist on a multi-GPU machine:

- the **CUDA index** (``cuda:N``): CUDA orders devices fastest first (``CUDA_DEVICE_ORDER=FASTEST_FIRST``,
  the default) and only over ``CUDA_VISIBLE_DEVICES``;
- the **NVML index**: NVML orders all GPUs by PCI bus id, ignoring ``CUDA_VISIBLE_DEVICES``;
- the **nsys GPU id** of ``--gpu-metrics-device(s)``: Nsight Systems also numbers by PCI bus (its
  ``=help`` listing prints each id with its PCI address).

The one identifier all three share is the GPU's UUID. :func:`cuda_device_map` therefore takes
``torch.cuda.get_device_properties(i).uuid`` (printed without the ``GPU-`` prefix), prefixes ``GPU-`` and asks
NVML for that handle (``nvmlDeviceGetHandleByUUID``), then its NVML index and PCI bus id; the nsys id is the
entry of the nsys listing with the same PCI bus id (else the NVML index). Metrics sampling and the GPU
identity in ``run.json`` use that mapping, never the CUDA index.

Profiler permissions: Nsight Systems GPU-metrics sampling and Nsight Compute counters need access to the
GPU performance counters (``ERR_NVGPUCTRPERM`` when the driver restricts them to admin users) and cannot run
while DCGM profiling holds them. :func:`probe_nsys_gpu_metrics` and :func:`probe_ncu_counters` find out
before a sweep, so that a refusal costs a note, not the run.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

#: Text in profiler output that means "no access to the GPU performance counters".
PERMISSION_MARKERS: tuple[str, ...] = (
    "ERR_NVGPUCTRPERM",
    "insufficient privilege",
    "does not have permission",
    "permission denied",
)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml() -> Any | None:
    from tracekit.collectors.profilers.nvml import _nvml as init

    return init()


def torch_uuid(props: Any) -> str | None:
    """``GPU-<uuid>`` of a ``torch.cuda.get_device_properties`` result (torch prints it without the prefix)."""
    raw = getattr(props, "uuid", None)
    if raw is None:
        return None
    text = _text(raw).strip()
    if not text:
        return None
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


@dataclass
class DeviceIdentity:
    """One CUDA device under its three numberings (see the module docstring)."""

    cuda_index: int
    name: str | None = None
    uuid: str | None = None
    nvml_index: int | None = None
    pci_bus_id: str | None = None
    nsys_gpu_id: int | None = None
    driver: str | None = None
    compute_capability: str | None = None
    memory_total_mib: int | None = None
    how: str = "uuid"
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def cuda_device_map(cuda_index: int, nsys_listing: dict[str, int] | None = None) -> DeviceIdentity:
    """Map CUDA device ``cuda_index`` to its UUID, NVML index, PCI bus id and nsys GPU id.

    ``nsys_listing``: PCI bus id (lower case, ``0000:07:00.0``) -> nsys GPU id, from
    :func:`probe_nsys_gpu_metrics`; when absent the nsys id is the NVML index (both count by PCI bus).
    """
    import torch

    props = torch.cuda.get_device_properties(cuda_index)
    ident = DeviceIdentity(cuda_index=cuda_index, name=getattr(props, "name", None), uuid=torch_uuid(props))
    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
    if major is not None:
        ident.compute_capability = f"{major}.{minor}"
    total = getattr(props, "total_memory", None)
    if isinstance(total, int):
        ident.memory_total_mib = total // (1024 * 1024)
    nv = _nvml()
    if nv is None:
        ident.how = "none"
        ident.notes.append("NVML unavailable: no NVML index, GPU metrics device unknown")
        return ident
    try:
        ident.driver = _text(nv.nvmlSystemGetDriverVersion())
    except Exception:
        pass
    if ident.uuid is None or ident.uuid.startswith("MIG-"):
        ident.how = "none"
        ident.notes.append("no GPU UUID from torch (or a MIG instance): not mapped to NVML")
        return ident
    try:
        handle = handle_by_uuid(nv, ident.uuid)
        ident.nvml_index = int(nv.nvmlDeviceGetIndex(handle))
    except Exception as exc:
        ident.how = "none"
        ident.notes.append(f"NVML does not know {ident.uuid}: {type(exc).__name__}")
        return ident
    try:
        pci = nv.nvmlDeviceGetPciInfo(handle)
        bus = _text(getattr(pci, "busId", "") or getattr(pci, "busIdLegacy", "")).lower()
        ident.pci_bus_id = _short_bus(bus) if bus else None
    except Exception:
        pass
    ident.nsys_gpu_id = ident.nvml_index
    if nsys_listing and ident.pci_bus_id and ident.pci_bus_id in nsys_listing:
        ident.nsys_gpu_id = nsys_listing[ident.pci_bus_id]
    if ident.nvml_index != cuda_index:
        ident.notes.append(
            f"cuda:{cuda_index} is NVML GPU {ident.nvml_index} (CUDA orders fastest first or "
            "follows CUDA_VISIBLE_DEVICES; NVML orders by PCI bus)"
        )
    return ident


def handle_by_uuid(nv: Any, uuid: str) -> Any:
    """``nvmlDeviceGetHandleByUUID(uuid)``, as bytes where the binding takes only bytes: nvidia-ml-py wraps it in
    ``convertStrBytes`` (str in), but the bindings before it (NVIDIA's older pynvml.py, the ``pynvml`` package up
    to 11.4.1, which shadows nvidia-ml-py where both are installed) pass the argument to ``c_char_p``, and
    ``c_char_p(str)`` raises TypeError: the GPU was then said to be unknown to NVML and left unmapped."""
    try:
        return nv.nvmlDeviceGetHandleByUUID(uuid)
    except TypeError:
        return nv.nvmlDeviceGetHandleByUUID(uuid.encode())


def _short_bus(bus: str) -> str:
    """``00000000:07:00.0`` (NVML, 8-digit domain) -> ``0000:07:00.0`` (4-digit domain, as nsys prints)."""
    match = re.match(r"^([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-9a-f])$", bus.strip().lower())
    if not match:
        return bus.strip().lower()
    domain, b, d, f = match.groups()
    return f"{int(domain, 16):04x}:{b}:{d}.{f}"


# -- Nsight Systems GPU metrics -----------------------------------------------------------------------------
@dataclass
class ProbeResult:
    """Whether a profiler feature may be used here; ``reason`` is one line when it may not."""

    permitted: bool
    reason: str | None = None
    option: str | None = None
    devices: dict[str, int] = field(default_factory=dict)
    output: str = ""
    #: The profiler itself could not be started (OSError: no such file, not executable), not a refusal.
    unrunnable: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("output")
        data.pop("unrunnable")
        return data


def gpu_metrics_option(nsys: str, version: str | None = None) -> str | None:
    """The GPU-metrics option spelling the installed nsys accepts (``--gpu-metrics-devices`` on newer
    versions, ``--gpu-metrics-device`` on older ones), read from ``nsys profile --help``; None when neither."""
    try:
        text = subprocess.run([nsys, "profile", "--help"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        text = ""
    if "--gpu-metrics-devices" in text:
        return "--gpu-metrics-devices"
    if "--gpu-metrics-device" in text:
        return "--gpu-metrics-device"
    if version:  # no help text: decide by version (the plural arrived with 2023.4)
        match = re.match(r"(\d{4})\.(\d+)", version)
        if match:
            return (
                "--gpu-metrics-devices"
                if (int(match.group(1)), int(match.group(2))) >= (2023, 4)
                else "--gpu-metrics-device"
            )
    return None


def parse_gpu_metrics_help(text: str) -> ProbeResult:
    """Read ``nsys profile --gpu-metrics-device(s)=help``: which GPU ids it offers (by PCI bus id) and
    whether sampling is refused (no GPU, no permission, unsupported GPU)."""
    devices: dict[str, int] = {}
    for line in text.splitlines():
        match = re.match(r"^\s*(\d+):.*?PCI\[([0-9a-fA-F:.]+)\]", line)
        if match:
            devices[_short_bus(match.group(2))] = int(match.group(1))
    lowered = text.lower()
    for marker in PERMISSION_MARKERS:
        if marker.lower() in lowered:
            line = next(ln.strip() for ln in text.splitlines() if marker.lower() in ln.lower())
            return ProbeResult(False, f"no access to GPU performance counters ({line})", devices=devices)
    if not devices:
        first = next(
            (ln.strip() for ln in text.splitlines() if ln.strip() and "possible" not in ln.lower()),
            "nsys listed no GPU for metrics sampling",
        )
        return ProbeResult(False, first, devices=devices)
    return ProbeResult(True, devices=devices)


def probe_nsys_gpu_metrics(nsys: str, version: str | None = None) -> ProbeResult:
    """Ask nsys which GPUs it can sample metrics on (``=help``) and whether it is allowed to."""
    option = gpu_metrics_option(nsys, version)
    if option is None:
        return ProbeResult(False, "this nsys has no GPU-metrics option")
    try:
        proc = subprocess.run(
            [nsys, "profile", f"{option}=help"], capture_output=True, text=True, timeout=120
        )
        out = proc.stdout + proc.stderr
    except (OSError, subprocess.SubprocessError) as exc:
        return ProbeResult(False, f"nsys {option}=help failed: {type(exc).__name__}", option=option)
    result = parse_gpu_metrics_help(out)
    result.option, result.output = option, out
    return result


# -- Nsight Compute counters --------------------------------------------------------------------------------
#: A child that launches one CUDA kernel (the smallest thing ncu can profile).
NCU_PROBE_CHILD = "import torch; torch.ones(8, device='cuda').add_(1); torch.cuda.synchronize()"


def first_error_line(text: str) -> str | None:
    """The first ``==ERROR==`` (or ``==WARNING==`` about permissions) line of an ncu log, else None."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("==ERROR==") or any(m.lower() in stripped.lower() for m in PERMISSION_MARKERS):
            return stripped
    return None


def parse_ncu_probe(returncode: int, text: str) -> ProbeResult:
    """Did a one-kernel ncu run get counters? ``ERR_NVGPUCTRPERM`` or any ``==ERROR==`` means no."""
    err = first_error_line(text)
    if err:
        if any(m.lower() in err.lower() for m in PERMISSION_MARKERS):
            return ProbeResult(False, f"no access to GPU performance counters ({err})")
        return ProbeResult(False, err)
    if returncode != 0:
        return ProbeResult(False, f"ncu probe exited {returncode}")
    if "==PROF==" not in text and "gpu__time_duration" not in text:
        return ProbeResult(False, "ncu profiled no kernel in its probe")
    return ProbeResult(True)


def probe_ncu_counters(ncu: str) -> ProbeResult:
    """Profile one tiny kernel with ncu (a few seconds) to learn whether counters are readable."""
    child = [sys.executable, "-c", NCU_PROBE_CHILD]
    argv = [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--launch-count", "1"]
    try:
        proc = subprocess.run([*argv, *child], capture_output=True, text=True, timeout=300)
    except OSError as exc:
        return ProbeResult(False, f"ncu probe failed: {type(exc).__name__}", unrunnable=True)
    except subprocess.SubprocessError as exc:
        return ProbeResult(False, f"ncu probe failed: {type(exc).__name__}")
    result = parse_ncu_probe(proc.returncode, proc.stdout + proc.stderr)
    result.output = proc.stdout + proc.stderr
    return result
