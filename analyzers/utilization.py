"""SMs active and warp occupancy of one configuration, from the best source available (the study's Table 3).

Wall-time figures (idle time counts as 0), percent, mean over the analyzed iterations, from the first source
that has a value:

1. ``nsys metrics``: Nsight Systems GPU-metrics samples inside each iteration's window
   (:mod:`tracekit.analyzers.gpu_metrics`; the study's definition);
2. ``ncu``: Nsight Compute per-kernel values joined to the timeline's kernels, Σ(kernel time × value) /
   latency per iteration (:mod:`tracekit.analyzers.kernel_metrics`);
3. ``kineto estimate``: torch.profiler's per-kernel ``est. achieved occupancy %`` (warp occupancy only),
   weighted the same way; not taken where kernels it left at 0 hold more than :data:`UNESTIMATED_MAX` of the
   kernel time (:func:`unestimated_kernels`).

The kernel-time-only averages (Σ(kernel time × value) / Σ kernel time: the SMs while kernels run) come from
ncu, else the Kineto estimate. Unknown values stay None, never 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from tracekit.analysis import Analysis
    from tracekit.analyzers.kernel_metrics import KernelMetricsResult
    from tracekit.model import Trace

#: The two figures, as result keys.
COLUMNS = ("sms_active", "warp_occupancy")
#: Above this share of kernel time with a Kineto occupancy estimate of 0, the estimate gives no figure; from
#: ``UNESTIMATED_WARN`` up to it, a warning (:func:`unestimated_kernels`).
UNESTIMATED_MAX = 0.5
UNESTIMATED_WARN = 0.1
#: Kernels of one iteration running at once (on one device) beyond this share of their union's time: a
#: per-kernel figure's Σ(kernel time x value) / latency adds their values, and no wall-time figure is given
#: from per-kernel values (:func:`concurrent_kernels`).
CONCURRENT_MAX = 0.05
#: The figures' names, as the warnings print them.
LABELS = {"sms_active": "SMs active", "warp_occupancy": "warp occupancy"}


@dataclass
class Figure:
    """One wall-time figure: value (%), where it came from, and which metric it is."""

    value: float | None = None
    source: str | None = None
    metric: str | None = None


@dataclass
class Utilization:
    """SMs active / warp occupancy of one configuration (see the module docstring)."""

    wall: dict[str, Figure] = field(default_factory=lambda: {c: Figure() for c in COLUMNS})
    kernel_time: dict[str, float | None] = field(default_factory=lambda: dict.fromkeys(COLUMNS))
    kernel_time_source: str | None = None
    warnings: list[str] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        """Flat keys of the ``table`` row: sms_active, sms_active_source, ..., kernel_time_source."""
        out: dict[str, Any] = {}
        for column in COLUMNS:
            fig = self.wall[column]
            out.update({column: fig.value, f"{column}_source": fig.source, f"{column}_metric": fig.metric})
        out.update({f"{c}_kernel_time": self.kernel_time[c] for c in COLUMNS})
        out["kernel_time_source"] = self.kernel_time_source
        return out


def _fill_wall(result: Utilization, metrics: KernelMetricsResult, source: str) -> None:
    """Take a wall-time figure from per-kernel metrics where no better source gave one."""
    for column in COLUMNS:
        entry = metrics.summary.get(column)
        if result.wall[column].value is None and entry is not None and entry.get("wall_time") is not None:
            result.wall[column] = Figure(entry["wall_time"], entry.get("source", source), entry["metric"])


def _fill_kernel_time(result: Utilization, metrics: KernelMetricsResult) -> None:
    sources = []
    for column in COLUMNS:
        entry = metrics.summary.get(column)
        if entry is not None and entry.get("kernel_time") is not None:
            result.kernel_time[column] = entry["kernel_time"]
            sources.append(entry.get("source", metrics.source))
    if sources:
        result.kernel_time_source = " / ".join(dict.fromkeys(sources))


def kernel_time_only(ncu: Trace) -> Utilization:
    """An Nsight Compute report without a timeline: kernel-time averages only."""
    from tracekit.analyzers.kernel_metrics import analyze_kernel_metrics

    metrics = analyze_kernel_metrics(ncu)
    result = Utilization(warnings=list(metrics.warnings))
    _fill_kernel_time(result, metrics)
    result.warnings.append(
        "Nsight Compute report without a timeline trace: latency and wall-time SMs active / "
        "warp occupancy unknown; kernel-time averages only"
    )
    return result


def utilization(analyzed: Analysis, ncu: Trace | None = None) -> Utilization:
    """SMs active / warp occupancy of an analyzed timeline trace, ``ncu`` its Nsight Compute trace if any."""
    from tracekit.analyzers.gpu_metrics import analyze_gpu_metrics
    from tracekit.analyzers.kernel_metrics import KINETO_OCCUPANCY, analyze_kernel_metrics

    trace, analysis = analyzed.trace_data, analyzed
    result = Utilization()
    if not trace.gpu_metrics.is_empty():
        gm = analyze_gpu_metrics(trace, analysis.iterations)
        result.warnings += gm.warnings
        for column in COLUMNS:
            entry = gm.summary.get(column)
            if entry is not None and entry.get("mean") is not None:
                named = with_unit(entry["metric"], entry.get("unit") or "")
                result.wall[column] = Figure(entry["mean"], "nsys metrics", named)
    if ncu is not None:
        metrics = analyze_kernel_metrics(ncu, trace, analysis, analysis.range_name, analyzed.ops)
        result.warnings += [f"ncu: {w}" for w in metrics.warnings]
        _fill_wall(result, metrics, "ncu")
        _fill_kernel_time(result, metrics)
    if trace.kernel_metrics["metric"].eq(KINETO_OCCUPANCY).any():
        metrics = analyze_kernel_metrics(trace, trace, analysis, analysis.range_name, analyzed.ops)
        result.warnings += metrics.warnings
        _fill_from_estimate(result, metrics, trace)
    _withhold_summed(result, analyzed)
    return result


def with_unit(metric: str, unit: str) -> str:
    """``metric`` named with its ``unit`` in brackets ("SMs Active [%]"), unless the name already ends in a
    bracket whose last word is the unit: Nsight Systems 2024+ names carry it ("SMs Active [Throughput %]", unit
    "%"), which had read "SMs Active [Throughput %] [%]". No unit: the name alone."""
    unit = unit.strip()
    if not unit:
        return metric
    said = re.search(r"\[([^\[\]]*)\]\s*$", metric)
    if said is not None and said.group(1).split()[-1:] == [unit]:
        return metric
    return f"{metric} [{unit}]"


def concurrent_kernels(ops: pl.DataFrame) -> tuple[int, float]:
    """(the number of devices, the share of kernel time beyond the union of each iteration's kernels on each
    device) of ``ops`` (``iteration``, ``device``, ``kind``, ``start``, ``end``: the analyzed iterations'
    ops); 0.0 when no kernel ran alongside another of its iteration and device."""
    import polars as pl

    from tracekit.model import newly_covered

    kernels = ops.filter(
        (pl.col("kind") == "kernel") & pl.col("start").is_not_null() & pl.col("end").is_not_null()
    ).select("iteration", "device", "start", "end")
    if kernels.is_empty():
        return 0, 0.0
    devices = kernels.get_column("device").drop_nulls().n_unique()
    kernels = kernels.sort("iteration", "device", "start")
    own = newly_covered("start", "end", "iteration", "device")
    total, union = kernels.select(
        (pl.col("end") - pl.col("start")).sum().alias("total"), own.sum().alias("union")
    ).row(0)
    # ((total - union) / union, the difference first: 210 ns over 200 is 0.05, not 0.050000000000000044)
    return devices, (total - union) / union if union else 0.0


def _withhold_summed(result: Utilization, analyzed: Analysis) -> None:
    """No wall-time figure from per-kernel values (ncu's, the Kineto estimate) where the analyzed iterations'
    kernels ran at once: on two or more devices, or on one beyond :data:`CONCURRENT_MAX` of their time, or
    where the figure exceeds 100%. Σ(kernel time x value) / latency adds the values of kernels running
    together: two GPUs each 98% busy with kernels at 60% warp occupancy had read 117.6%. A warning says why;
    the kernel-time averages (weighted means of the values) stay. Nsight Systems' sampled metrics (per GPU,
    :mod:`tracekit.analyzers.gpu_metrics`) are not affected."""
    columns = [
        c for c in COLUMNS if result.wall[c].value is not None and result.wall[c].source != "nsys metrics"
    ]
    if not columns:
        return
    devices, extra = concurrent_kernels(analyzed.ops)
    for column in columns:
        value = result.wall[column].value
        assert value is not None
        if devices > 1:
            why = f"the analyzed iterations' kernels ran on {devices} devices"
        elif extra > CONCURRENT_MAX:
            why = f"kernels of an iteration ran at once ({extra:.0%} of their union's time again)"
        elif value > 100:
            why = "kernels of an iteration ran at once"
        else:
            continue
        result.warnings.append(
            f"wall-time {LABELS[column]} not given: {why}, and Σ(kernel time × value) / latency adds the "
            f"values of kernels running together ({value:.1f}% here, from {result.wall[column].source}); "
            "the kernel-time average stays"
        )
        result.wall[column] = Figure()


def _fill_from_estimate(result: Utilization, metrics: KernelMetricsResult, trace: Trace) -> None:
    """Take the Kineto occupancy estimate's figures where no better source gave them, unless the kernels it
    left at 0 hold too much of the kernel time (:func:`unestimated_kernels`): then none, and a warning."""
    entry = metrics.summary.get("warp_occupancy") or {}
    for_wall = result.wall["warp_occupancy"].value is None and entry.get("wall_time") is not None
    for_kernel = result.kernel_time_source is None and entry.get("kernel_time") is not None
    if not (for_wall or for_kernel):
        return
    import polars as pl

    # Judged over the kernels the figure is computed from (the analyzed iterations'), when the result has them:
    # warm-up kernels had diluted (or swollen) the share of kernels estimated 0.
    kernels = metrics.kernels
    scope = (
        kernels.select(pl.col("timeline_ns").alias("duration_ns"), pl.col("warp_occupancy").alias("value"))
        if {"timeline_ns", "warp_occupancy"} <= set(kernels.columns) and kernels.height
        else None
    )
    usable, said = unestimated_kernels(trace, scope)
    result.warnings += said
    if not usable:
        return
    _fill_wall(result, metrics, "kineto estimate")
    if result.kernel_time_source is None:
        _fill_kernel_time(result, metrics)


def unestimated_kernels(trace: Trace, scope: pl.DataFrame | None = None) -> tuple[bool, list[str]]:
    """Whether torch.profiler's occupancy estimate in ``trace`` may be used, and what to say of it; ``scope``
    (duration_ns, value): the kernels to judge it over (the analyzed iterations', whose figure it gives; a
    warm-up kernel outside them had diluted the share), else every estimated kernel of the trace.

    Kineto's ``est. achieved occupancy %`` is a whole percent, 0 both below 0.5% and where it made no
    estimate: on the real H200 BERT traces the kernels of 0 (cuBLAS nvjet GEMMs and cuDNN attention among
    them, whose grids are not that small) hold 72% of the kernel time, and the estimate read 0.26% warp
    occupancy where nsys and ncu measured 0.98% (CUDA graphs: 2.4% against 5.4%). Where such kernels hold more
    than :data:`UNESTIMATED_MAX` of the kernel time the estimate is not used (never a guess), with a warning;
    from :data:`UNESTIMATED_WARN` up to it, a warning gives their share (the figure may be low by up to it)."""
    import polars as pl

    from tracekit.analyzers.kernel_metrics import KINETO_OCCUPANCY

    if scope is not None:
        est = scope.filter(
            pl.col("duration_ns").is_not_null() & pl.col("value").is_not_null() & pl.col("value").is_not_nan()
        )
    else:
        est = trace.kernel_metrics.filter(
            (pl.col("metric") == KINETO_OCCUPANCY)
            & pl.col("duration_ns").is_not_null()
            & pl.col("value").is_not_null()
        )
    total = est["duration_ns"].sum()
    if not total:
        return True, []
    zero = est.filter(pl.col("value") == 0)
    share = zero["duration_ns"].sum() / total
    if share < UNESTIMATED_WARN:
        return True, []
    what = (
        f"torch.profiler's occupancy estimate is 0 for {zero.height} of {est.height} kernels, {share:.0%} of "
        "the kernel time (it writes whole percents: 0 below 0.5%, and 0 where it made no estimate)"
    )
    if share <= UNESTIMATED_MAX:
        return True, [f"{what}: the warp occupancy from it may be low by up to that share"]
    return False, [
        f"{what}: no warp occupancy from it (more than {UNESTIMATED_MAX:.0%} of the kernel time unestimated; "
        "the real H200 BERT-base traces read 0.26% where nsys and ncu measured 0.98%): use nsys GPU metrics "
        "or --ncu"
    ]
