"""One GPU at a time: the per-device analyses of a trace whose ops ran on two or more devices, and the
per-device rows ``tracekit analyze`` shows for them.

Each device's part of the trace (its ops, their launching calls, its processes' ranges:
:func:`tracekit.analyzers.ranges.split_by_device`) is analyzed like a whole trace
(:func:`tracekit.analyzers.iterations.analyze_iterations`). :func:`analyze_devices` does it once per trace;
the single-trace table (:func:`per_device_rows`) and a many-trace run's per-GPU fleet rows
(:func:`tracekit.fleet.compact.per_gpu`) both read those analyses, so that no device is analyzed twice: a
many-trace run asks for the idle split by cause (``attribute``), which the table alone does not need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.analyzers.sweep import FRAMEWORK_BOUND_UTILIZATION
from tracekit.errors import NoActivityError

if TYPE_CHECKING:
    from tracekit.analyzers.iterations import IterationAnalysis
    from tracekit.model import Trace

#: The per-device row's medians (ms, and utilization as a fraction), as :func:`per_device_rows` gives them.
ROW_MEDIANS = ("latency_ms", "gpu_busy_ms", "framework_overhead_ms", "gpu_utilization")


@dataclass(frozen=True)
class DeviceAnalysis:
    """One device's part of a multi-GPU trace (``part``) and its analysis (``result``), or ``error`` (one
    line: none of its work falls in an iteration); ``attributed``: whether ``result`` has the idle split by
    cause."""

    device: int | None
    part: Trace
    result: IterationAnalysis | None = None
    error: str | None = None
    attributed: bool = False


def analyze_devices(
    trace: Trace,
    range_name: str | None = None,
    skip: int | None = 0,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
    split_idle_ms: float | None = None,
    attribute: bool = False,
) -> list[DeviceAnalysis] | None:
    """Each device's analysis, in device order (the device-less part last), or None when the trace's ops ran
    on fewer than two devices. ``attribute``: with the idle split by cause (what a many-trace run's per-GPU
    rows show; the single trace's table needs only the medians and the verdict)."""
    from tracekit.analyzers.iterations import analyze_iterations
    from tracekit.analyzers.ranges import split_by_device

    devices = trace.ops.get_column("device").drop_nulls()
    if devices.len() == 0 or devices.min() == devices.max() or devices.n_unique() < 2:
        return None
    out: list[DeviceAnalysis] = []
    for device, part in sorted(split_by_device(trace).items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        try:
            result = analyze_iterations(
                part, range_name, skip, bound_threshold, split_idle_ms, attribute=attribute
            )
        except NoActivityError as exc:
            out.append(DeviceAnalysis(device, part, error=exc.message, attributed=attribute))
            continue
        out.append(DeviceAnalysis(device, part, result, attributed=attribute))
    return out


def per_device_rows(
    trace: Trace,
    range_name: str | None = None,
    skip: int | None = 0,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
    split_idle_ms: float | None = None,
    together: tuple[str | None, float | None] | None = None,
    analyses: list[DeviceAnalysis] | None = None,
) -> list[dict[str, Any]] | None:
    """One summary row per GPU of a multi-GPU trace, or None when its ops ran on fewer than two devices.
    ``together``: the whole trace's (bound, median utilization), all devices counted busy together;
    ``analyses``: the trace's :func:`analyze_devices` when already made (else made here, without the idle
    split).

    A row holds ``device``, ``iterations``, median ``latency_ms``/``gpu_busy_ms``/``framework_overhead_ms``
    (ms), median ``gpu_utilization`` (fraction), ``bound`` and ``verdict_uncertain`` (why it may be wrong, or
    None); a device none of whose work falls in an iteration gets ``error`` instead."""
    if analyses is None:
        analyses = analyze_devices(trace, range_name, skip, bound_threshold, split_idle_ms)
    if analyses is None:
        return None
    rows: list[dict[str, Any]] = []
    for one in analyses:
        if one.result is None:
            rows.append({"device": one.device, "error": one.error})
            continue
        summary = one.result.summary
        stats = summary.fields
        rows.append(
            {
                "device": one.device,
                "iterations": summary.iterations,
                **{name: stats[name].p50 for name in ROW_MEDIANS},
                "bound": summary.bound,
                # why this device's verdict may be wrong ("verdict uncertain: ..."), or None
                "verdict_uncertain": summary.verdict_uncertain,
            }
        )
    shared = devices_sharing_iterations(trace)
    if together is not None and together[0] == "compute" and shared:
        for row in rows:
            if row.get("bound") == "framework" and row["device"] in shared and not row["verdict_uncertain"]:
                util = together[1]
                row["verdict_uncertain"] = (
                    f"verdict uncertain: one process drives devices {', '.join(str(d) for d in sorted(shared))} "
                    f"in the same iterations, which together are busy {util:.0%} of them (compute-bound): this "
                    "device's idle time includes its waits for the other devices' work, which this row counts as "
                    "framework overhead"
                )
    return rows


def independent_devices_doubt(
    trace: Trace, bound: str | None, utilization: Any, per_device: list[dict[str, Any]] | None
) -> str | None:
    """Why the headline verdict may be wrong when the trace's GPUs are driven by separate processes (no
    process drives two: ranks, or a pipeline's stages, in one capture) and every GPU's own verdict differs
    from it: the headline counts the devices busy together, so GPUs taking turns read busier (or idler)
    together than any is alone: the mirror of :func:`per_device_rows`' doubt for one process driving several
    GPUs. ``utilization``: the headline's utilization statistics (its ``p50``); None otherwise."""
    rows = [r for r in per_device or () if "bound" in r]
    if bound is None or len(rows) < 2 or len(rows) != len(per_device or ()):
        return None
    if any(r["bound"] is None or r["bound"] == bound for r in rows) or devices_sharing_iterations(trace):
        return None
    each = ", ".join(
        f"GPU {r['device']} {r['gpu_utilization']:.0%}" for r in rows if r.get("gpu_utilization") is not None
    )
    together = f" ({utilization.p50:.0%})" if utilization is not None and utilization.p50 is not None else ""
    return (
        f"verdict uncertain: the trace's GPUs are driven by separate processes, and each alone is "
        f"{rows[0]['bound']}-bound ({each} busy, median), while the headline counts them busy together{together}; "
        "see the per-device rows"
    )


def devices_sharing_iterations(trace: Trace) -> set[int]:
    """The devices of the processes whose ops ran on two or more devices (one process driving several GPUs:
    pipeline stages, model parallelism in one process), whose iterations those devices share."""
    ops = trace.ops.select("pid", "device").drop_nulls().unique()
    many = ops.group_by("pid").agg(pl.col("device").n_unique().alias("n")).filter(pl.col("n") > 1)
    if many.is_empty():
        return set()
    return set(ops.filter(pl.col("pid").is_in(many["pid"].implode()))["device"].to_list())


def gpu_models_warning(trace: Trace) -> str | None:
    """A warning when the trace's kernels ran on GPUs of more than one model (``meta["gpus"]`` names each
    device): the trace's ``gpu`` names the busiest only, and the iterations' figures mix the models (a trace
    of an H100 and an A100, equally busy, had read "gpu: NVIDIA H100" alone). None otherwise."""
    gpus = trace.meta.get("gpus")
    if not isinstance(gpus, list) or len(gpus) < 2 or trace.ops.is_empty():
        return None
    names = {g.get("id"): g.get("name") for g in gpus if isinstance(g, dict) and g.get("name") is not None}
    kernels = trace.ops.filter(pl.col("kind") == "kernel")
    used = (kernels if kernels.height else trace.ops).group_by("device").len()
    by_model: dict[str, int] = {}
    for device, count in used.iter_rows():
        if device in names:
            by_model[str(names[device])] = by_model.get(str(names[device]), 0) + int(count)
    if len(by_model) < 2:
        return None
    what = "kernels" if kernels.height else "device ops"
    shown = ", ".join(f"{name}: {n}" for name, n in sorted(by_model.items(), key=lambda kv: (-kv[1], kv[0])))
    return (
        f"the {what} ran on GPUs of {len(by_model)} models ({shown} {what}): the trace's GPU names the "
        f"busiest, {trace.meta.get('gpu')}, and the iterations' figures mix the models"
    )
