"""What a freshly written torch.profiler (Kineto) trace holds per timed iteration, without polars.

Collection runs on machines that have torch but not tracekit's analysis stack (an air-gapped GPU box with a
fixed image), so this module reads the gzipped chrome trace with the standard library only. It is a check of
the collection, not an analysis: ``tracekit analyze`` stays the measurement.

Per ``iteration`` range (the ``record_function`` annotations the harness writes, category
``user_annotation``), the host-side CUDA runtime/driver calls that start inside it are the iteration's
launches; the device ops (kernels, memcpy, memset) whose ``correlation`` id matches one of those calls are
the iteration's device work, wherever on the GPU timeline they ran (GPU work is counted in the step that
launched it). Graph launches are the ``cudaGraphLaunch``/``cuGraphLaunch`` calls among them.
"""

from __future__ import annotations

import bisect
import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Launch API names (prefixes) of a whole-graph launch.
GRAPH_LAUNCH_PREFIXES: tuple[str, ...] = ("cudaGraphLaunch", "cuGraphLaunch")
#: Kineto categories of host-side CUDA API calls.
API_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
#: Kineto categories of device ops.
DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})


@dataclass
class IterationSummary:
    """One timed iteration: its host-side range (µs, Kineto's unit), launches and the device ops they made."""

    start_us: float
    end_us: float
    kernels: int = 0
    device_ops: int = 0
    graph_launches: int = 0
    api_calls: int = 0
    #: Host-side operators (``cpu_op``) that start inside the range: the work of a CPU run.
    cpu_ops: int = 0


@dataclass
class TraceSummary:
    """Per-iteration summaries plus the trace-wide facts the collection checks need."""

    path: str
    iterations: list[IterationSummary] = field(default_factory=list)
    warmup_ranges: int = 0
    kernel_names: dict[str, int] = field(default_factory=dict)
    kernels_total: int = 0
    kernels_outside: int = 0

    @property
    def kernels_per_iteration(self) -> list[int]:
        return [it.kernels for it in self.iterations]

    @property
    def graph_launches_per_iteration(self) -> list[int]:
        return [it.graph_launches for it in self.iterations]

    def to_json(self) -> dict[str, Any]:
        per = self.kernels_per_iteration
        return {
            "trace": Path(self.path).name,
            "iterations": len(self.iterations),
            "warmup_ranges_in_trace": self.warmup_ranges,
            "kernels_per_iteration": {"min": min(per), "max": max(per)} if per else None,
            "graph_launches_per_iteration": sorted(set(self.graph_launches_per_iteration)),
            "kernels_total": self.kernels_total,
            "kernels_outside_iterations": self.kernels_outside,
            "distinct_kernel_names": len(self.kernel_names),
        }


def load_events(path: str | Path) -> list[dict[str, Any]]:
    """The ``traceEvents`` list of a Kineto chrome trace (``.json`` or ``.json.gz``)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        data = json.load(fh)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    return [e for e in events or [] if isinstance(e, dict)]


def summarize(path: str | Path, range_name: str = "iteration") -> TraceSummary:
    """Summarize a Kineto trace per ``range_name`` range (see the module docstring)."""
    events = load_events(path)
    summary = TraceSummary(str(path))
    ranges: list[tuple[float, float]] = []
    api: list[tuple[float, int, str]] = []
    device: list[tuple[int, str, str]] = []
    cpu_ops: list[float] = []
    for ev in events:
        if ev.get("ph") != "X":
            continue
        cat, name = ev.get("cat"), str(ev.get("name", ""))
        ts, dur = float(ev.get("ts", 0)), float(ev.get("dur", 0))
        args = ev.get("args") or {}
        if cat == "user_annotation":
            if name == range_name:
                ranges.append((ts, ts + dur))
            elif name == "warmup":
                summary.warmup_ranges += 1
        elif cat == "cpu_op":
            cpu_ops.append(ts)
        elif cat in API_CATEGORIES:
            api.append((ts, int(args.get("correlation", -1)), name))
        elif cat in DEVICE_CATEGORIES:
            device.append((int(args.get("correlation", -1)), cat, name))
    ranges.sort()
    summary.iterations = [IterationSummary(s, e) for s, e in ranges]
    starts = [s for s, _ in ranges]
    owner: dict[int, int] = {}  # correlation id -> iteration index
    for ts, corr, name in api:
        i = bisect.bisect_right(starts, ts) - 1
        if i < 0 or ts > ranges[i][1]:
            continue
        it = summary.iterations[i]
        it.api_calls += 1
        if name.startswith(GRAPH_LAUNCH_PREFIXES):
            it.graph_launches += 1
        if corr >= 0:
            owner[corr] = i
    for ts in cpu_ops:
        i = bisect.bisect_right(starts, ts) - 1
        if i >= 0 and ts <= ranges[i][1]:
            summary.iterations[i].cpu_ops += 1
    for corr, cat, name in device:
        i = owner.get(corr)
        if cat == "kernel":
            summary.kernels_total += 1
            summary.kernel_names[name] = summary.kernel_names.get(name, 0) + 1
        if i is None:
            if cat == "kernel":
                summary.kernels_outside += 1
            continue
        it = summary.iterations[i]
        it.device_ops += 1
        if cat == "kernel":
            it.kernels += 1
    return summary


def empty_iteration_warnings(path: str | Path, device: str) -> list[str]:
    """One warning when some timed iteration did no work, else none: on ``cuda`` devices, no kernel launched
    in it (CUDA-graph kernels dropped by the profiler, or a runtime that did no device work); on the CPU, no
    operator ran in it."""
    try:
        summary = summarize(path)
    except Exception as exc:  # the check must not lose the run
        return [f"could not check the work per iteration: {type(exc).__name__}"]
    on_gpu = device.startswith("cuda")
    counts = [it.kernels if on_gpu else it.cpu_ops for it in summary.iterations]
    empty = sum(1 for k in counts if k == 0)
    if empty:
        what = "kernel" if on_gpu else "operator"
        return [f"{empty} of {len(counts)} timed iterations hold no {what} in the torch.profiler trace"]
    return []
