"""One table of the per-iteration fields: name, unit, label and device wording, read by every renderer.

A field's *name* is its stable key (JSON keys, polars columns, CSV headers of GPU traces). Its *label* may
hold ``{device}``, filled with "GPU" on GPU traces and "operator" on CPU-only traces (where the "device
work" is CPU operators); :func:`device_name` does the same for names shown in CSV headers.

To add a per-iteration metric (e.g. the idle-time attribution's ``dispatch_ms``): compute the column in
:func:`tracekit.analyzers.iterations.analyze_iterations` (or a step it calls) and add one :class:`Field` to
:data:`ITERATION_FIELDS`. The summary statistics, the JSON/CSV documents, the terminal and Markdown tables,
the Python API and ``compare`` then carry it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: Word for the device work of a trace measured on a GPU / on CPU operators only.
DEVICE_WORDS: dict[str, str] = {"gpu": "GPU", "cpu": "operator"}


@dataclass(frozen=True)
class Field:
    """One per-iteration metric.

    ``kind``: "count" (an integer per iteration; its statistics may be fractional), "duration" (in ``unit``),
    or "fraction" (0..1). ``compare_label``: the row label in ``tracekit compare``'s summary (means over
    iterations); None leaves the field out of it.
    """

    name: str
    unit: str
    label: str
    kind: str = "duration"
    description: str = ""
    compare_label: str | None = None

    def label_for(self, device: str | None) -> str:
        """The label with the device word of ``device`` ("gpu", "cpu"; mixed/unknown: "device")."""
        return self.label.replace("{device}", device_word(device))

    def compare_label_for(self, device: str | None) -> str:
        """The ``compare`` row label with the device word of ``device``."""
        return (self.compare_label or self.label).replace("{device}", device_word(device))

    @property
    def digits(self) -> int:
        """Decimals shown for statistics of this field in tables (counts: 1, others: 3)."""
        return 1 if self.kind == "count" else 3


def device_word(device: str | None) -> str:
    """ "GPU" for a GPU trace, "operator" for a CPU-only trace, "device" when mixed or unknown."""
    return DEVICE_WORDS.get(device or "", "device")


def common_device(devices: Iterable[str | None]) -> str | None:
    """The one device of several traces ("gpu" / "cpu"), or None when they differ or none is known."""
    found = {d for d in devices if d}
    return found.pop() if len(found) == 1 else None


def device_name(name: str, device: str | None) -> str:
    """A ``gpu_*`` key as shown for ``device``: ``gpu_busy_ms`` -> ``operator_busy_ms`` on CPU-only data,
    ``device_busy_ms`` on mixed data; other names unchanged."""
    if not name.startswith("gpu_") or device == "gpu":
        return name
    return ("operator_" if device == "cpu" else "device_") + name[len("gpu_") :]


#: The per-iteration numeric fields, in the order of the JSON document and the summary table.
ITERATION_FIELDS: tuple[Field, ...] = (
    Field("latency_ms", "ms", "latency", "duration", "effective window length", "latency (ms)"),
    # (the range's wall-clock length on the host, not thread CPU time: named so, as nsys and HTA users read "CPU
    # time" as the time a thread ran)
    Field("cpu_ms", "ms", "range length on host", "duration", "the range's own length", "range length (ms)"),
    Field(
        "gpu_busy_ms", "ms", "{device} busy", "duration", "union of the ops' intervals", "{device} busy (ms)"
    ),
    Field(
        "framework_overhead_ms",
        "ms",
        "framework overhead",
        "duration",
        "latency - busy",
        "framework overhead (ms)",
    ),
    Field(
        "gpu_utilization",
        "",
        "{device} utilization (busy / latency)",
        "fraction",
        "busy / latency",
        "{device} utilization",
    ),
    Field("kernels", "count", "kernels / ops", "count", "ops of kind kernel/operator", "kernels / iteration"),
    Field(
        "launches", "count", "launch calls", "count", "launch API calls in the range", "launches / iteration"
    ),
    Field(
        "launch_api_us",
        "µs",
        "launch-call CPU time",
        "duration",
        "summed launch-call time",
        "launch-call time (µs)",
    ),
    Field(
        "launch_latency_us", "µs", "launch latency (op start - call start)", "duration", "median per launch"
    ),
    Field(
        "queue_us",
        "µs",
        "queue time (op start - call end, >= 0)",
        "duration",
        "median per launch of max(0, first op start - call end): 0 when the op started before its call returned",
    ),
    Field(
        "idle_gaps",
        "count",
        "idle gaps",
        "count",
        "sub-intervals with no op running",
        "idle gaps / iteration",
    ),
    Field("idle_ms", "ms", "idle", "duration", "latency - busy (summed idle gaps)", "idle (ms)"),
    # The idle time by cause (tracekit.analyzers.attribution): the five sum to idle_ms, to the nanosecond.
    Field(
        "dispatch_ms",
        "ms",
        "idle: dispatch (host outside API calls)",
        "duration",
        "idle time while the launching host thread is outside every CUDA/HIP API call: Python and framework "
        "code, operator dispatch, graph construction, control flow",
        "idle: dispatch (ms)",
    ),
    Field(
        "launch_ms",
        "ms",
        "idle: in launch calls",
        "duration",
        "idle time while the launching host thread is inside a kernel or graph launch call",
        "idle: launch (ms)",
    ),
    Field(
        "sync_ms",
        "ms",
        "idle: in sync calls",
        "duration",
        "idle time while the launching host thread is inside a synchronization call",
        "idle: sync (ms)",
    ),
    Field(
        "other_api_ms",
        "ms",
        "idle: in other API calls",
        "duration",
        "idle time while the launching host thread is inside any other API call (allocation, event record, ...)",
        "idle: other API (ms)",
    ),
    Field(
        "in_flight_ms",
        "ms",
        "idle: launched, not started",
        "duration",
        "idle time after the next op's launch call returned and before it started (device-side launch "
        "latency and scheduling)",
        "idle: in flight (ms)",
    ),
)

FIELDS: dict[str, Field] = {f.name: f for f in ITERATION_FIELDS}
#: Names of :data:`ITERATION_FIELDS`, in order.
NUMERIC_FIELDS: list[str] = [f.name for f in ITERATION_FIELDS]
#: Per-iteration fields that are integers (shown without decimals).
COUNT_FIELDS: frozenset[str] = frozenset(f.name for f in ITERATION_FIELDS if f.kind == "count")
