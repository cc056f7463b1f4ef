"""Sweep-level report data: one row per configuration, per-sweep plateau/transition/headroom, the timeline
of one configuration, and recommendations computed from the data (never invented).

A *configuration* is one (runtime, sequence length, batch size) trace; a *sweep* is the set of
configurations of one runtime and one sequence length, ordered by batch size.

Units: ``*_ms`` milliseconds, ``*_us`` microseconds, fractions in 0..1, throughput in samples per second.

- latency_ms: the latency the sweep analysis uses: the **median** of the untraced iterations when the run
  recorded them (``latency_source`` "untraced"), else of the traced iterations (``latency_source`` "traced"),
  after the stability rules of :mod:`tracekit.analyzers.stability` (warm-up drift and outliers dropped, by
  rule); latency_ci_low / latency_ci_high its 95% interval (null with fewer than 6 kept iterations, or when
  the run recorded only summary statistics), latency_cv the coefficient of variation, latency_iterations /
  latency_dropped the iterations kept and dropped, latency_unstable whether the set is unstable (the reason
  and, when known, its cause are in the row's warnings).
- traced_median_ms: the median of the traced iterations (same rules); profiler_ratio: traced_median_ms over
  the untraced median.
- traced_latency_ms / gpu_busy_ms / framework_overhead_ms / gpu_utilization / kernels / launches: means over
  the traced iterations (``tracekit.analyzers.iterations``) that the stability rules keep
  (traced_kept_iterations of them: warm-up drift and outliers of the traced latency left out, so one stalled
  iteration does not move the breakdown). The busy/overhead breakdown is always the traced one.
- framework_overhead_fraction: framework_overhead_ms / traced_latency_ms.
- dispatch_ms / launch_ms / sync_ms / other_api_ms / in_flight_ms: the framework overhead (idle time) by cause,
  means over the traced iterations (:mod:`tracekit.analyzers.attribution`); they sum to framework_overhead_ms.
- graph_projected_ms: mean projected latency if launch and dispatch between kernels disappeared (the
  iterations replayed as CUDA graphs, :func:`tracekit.analyzers.attribution.project_cuda_graphs`), over the
  same iterations as traced_latency_ms (those the stability rules keep); null on CPU-only traces, traces that
  already replay graphs and traces without device work.
- launch_api_ms: summed CPU time of the launch calls per iteration (mean).
- profiler_ratio: traced / untraced median latency (profiler perturbation), null without untraced.
- latency_vs_smallest: latency_ms over the smallest batch size's, with the conservative interval
  latency_vs_smallest_low / _high (:func:`tracekit.analyzers.stability.difference`); vs_smallest: "higher",
  "lower" or "within noise" (the two 95% intervals overlap), null without intervals. sweep_base: true on the
  smallest batch size itself, the base of the ratios: its latency_vs_smallest is 1 by definition, with no
  interval and no vs_smallest (a row against itself is no measurement).
- plateau (:func:`tracekit.analyzers.sweep.plateau_with_noise`): the batch sizes from the smallest upward whose
  latency ratio to the smallest batch size's stays at most 1 + ``plateau_tolerance`` with its whole interval;
  plateau_edge: the batch sizes after them whose interval straddles that line ("within noise", undecided);
  transition_batch_size: the first batch size whose whole interval is above the line (null when none);
  plateau_state per row: "on", "off" or "within noise".
- headroom_batch_size: the largest plateau batch size ("free headroom"); headroom_latency_ratio its latency
  over the smallest batch's (with _low/_high and headroom_difference: "higher", "lower" or "within noise");
  headroom_throughput_gain its throughput (batch / latency) over the smallest batch's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.analyzers.attribution import ALREADY_GRAPHS, Projection, projection
from tracekit.analyzers.identify import INFERRED_SOURCES, UNCERTAIN
from tracekit.analyzers.iterations import SLOW_START_MARK
from tracekit.analyzers.ranks import range_warning
from tracekit.analyzers.recommendations import Recommendation, recommend
from tracekit.analyzers.stability import Measurement, difference, measure
from tracekit.analyzers.sweep import (
    FRAMEWORK_BOUND_UTILIZATION,
    ON_PLATEAU,
    PLATEAU_TOLERANCE,
    SWEEP_IDENTITY,
    WITHIN_NOISE,
    bound_of,
    config_key,
    latency_basis,
    plateau_with_noise,
    sweep_key,
    sweep_label,
)
from tracekit.model import LAUNCH_API_NAMES, on_host

#: The idle-time causes, as report columns (:data:`tracekit.analyzers.attribution.CAUSE_MS`).
CAUSE_COLUMNS: tuple[str, ...] = ("dispatch_ms", "launch_ms", "sync_ms", "other_api_ms", "in_flight_ms")

if TYPE_CHECKING:
    from tracekit.analysis import Analysis

#: Per-iteration columns whose mean over the kept traced iterations a row carries.
MEAN_COLUMNS: tuple[str, ...] = (
    "latency_ms",
    "gpu_busy_ms",
    "framework_overhead_ms",
    *CAUSE_COLUMNS,
    "gpu_utilization",
    "kernels",
    "launches",
    "launch_api_us",
    "launch_latency_us",
    "idle_gaps",
)

#: Column order of the per-configuration table (report.csv, JSON "configs").
CONFIG_COLUMNS: list[str] = [
    "runtime",
    "model",
    "seq_len",
    "batch_size",
    "device",
    "profiler",
    "synthetic",
    "iterations",
    "skipped_iterations",
    "synchronized",
    "latency_ms",
    "latency_source",
    "latency_ci_low",
    "latency_ci_high",
    "latency_cv",
    "latency_iterations",
    "latency_dropped",
    "latency_unstable",
    "untraced_latency_ms",
    "traced_latency_ms",
    "traced_median_ms",
    "traced_kept_iterations",
    "profiler_ratio",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "framework_overhead_fraction",
    "dispatch_ms",
    "launch_ms",
    "sync_ms",
    "other_api_ms",
    "in_flight_ms",
    "graph_projected_ms",
    "gpu_utilization",
    "bound",
    "verdict_uncertain",
    "kernels",
    "launches",
    "launch_api_ms",
    "launch_latency_us",
    "idle_gaps",
    "latency_vs_smallest",
    "latency_vs_smallest_low",
    "latency_vs_smallest_high",
    "vs_smallest",
    "sweep_base",
    "throughput_per_s",
    "on_plateau",
    "plateau_state",
    "transition_batch_size",
    "path",
]


def untraced_measurement(analyzed: Analysis) -> Measurement | None:
    """The untraced set's statistics: as ``tracekit collect`` recorded them (run.json / sidecar), else
    measured from the run's ``latency.csv`` (runs collected before the statistics were recorded), else the
    recorded median (p50, mean) alone, without an interval. None when the run recorded no untraced latency.
    The one rule analyze's profiler-cost check uses too (:func:`tracekit.analyzers.profiler_cost.untraced_of`)."""
    from tracekit.analyzers.profiler_cost import untraced_of

    return untraced_of(analyzed.config, "cpu" if analyzed.device == "cpu" else "gpu")


def config_row(analyzed: Analysis) -> dict[str, Any]:
    """One configuration's report row from its analyzed trace (see module docstring); its traced figures
    withheld where its iterations are ``--split-idle`` windows that are not its trace's iterations
    (:func:`_windows_withheld`)."""
    from tracekit.analyzers.compare import windows_not_iterations

    row = _config_row(analyzed)
    cut = windows_not_iterations(analyzed)
    return row if cut is None else _windows_withheld(row, cut)


#: The row's figures that are per iteration of the traced set: withheld over windows that are not iterations.
PER_ITERATION_KEYS: tuple[str, ...] = (
    "traced_latency_ms",
    "traced_median_ms",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "framework_overhead_fraction",
    *CAUSE_COLUMNS,
    "graph_projected_ms",
    "gpu_utilization",
    "bound",
    "kernels",
    "launches",
    "launch_api_ms",
    "launch_latency_us",
    "idle_gaps",
)


def _windows_withheld(row: dict[str, Any], cut: str) -> dict[str, Any]:
    """``row`` without its per-iteration traced figures (:data:`PER_ITERATION_KEYS`), and without its latency
    where that is the traced one, with a warning: its iterations are windows that are not iterations (``cut``,
    :func:`tracekit.analyzers.compare.windows_not_iterations`). The H200 eager b1 sample under
    ``--split-idle 0.05`` (675 windows for 20 iterations) had read 'the launch-call time alone is 0.0338 ms per
    iteration (6 launches ...): projected latency 0.0306 ms' and '89% of latency is framework overhead (0.148
    ms of 0.165 ms)', per window."""
    out = {**row, **dict.fromkeys(PER_ITERATION_KEYS)}
    out.update(_graph_caveat=None, _replays_graphs=False)
    what = "busy/overhead breakdown, its verdict"
    if row["latency_source"] == "traced":
        out.update(
            latency_ms=None,
            latency_ci_low=None,
            latency_ci_high=None,
            latency_cv=None,
            latency_unstable=None,
            _latency=None,
        )
        what += " and its latency (the traced one: left out of the sweep)"
    # (where the row's own warnings already count the windows against the ranges, the reason is named, not
    # said twice)
    from tracekit.analyzers.compare import windows_sentence

    counted = windows_sentence(row["warnings"]) is not None
    why = (
        "the windows cut at idle gaps that the warning above counts, not its trace's iterations"
        if counted
        else cut
    )
    out["warnings"] = [
        *row["warnings"],
        f"the report shows none of its traced figures ({what}): its iterations are {why}",
    ]
    return out


def _config_row(analyzed: Analysis) -> dict[str, Any]:
    config, summary = analyzed.config, analyzed.summary
    frame = analyzed.iterations
    traced_stats = measure(
        frame.get_column("latency_ms").to_list(), indices=frame.get_column("index").to_list()
    )
    if traced_stats.dropped:  # the breakdown's means leave out what the stability rules dropped
        keep = [i not in traced_stats.dropped for i in range(frame.height)]
        frame = frame.filter(pl.Series(keep))
    columns = [c for c in MEAN_COLUMNS if c in frame.columns]
    means = (
        frame.select(pl.col(c).cast(pl.Float64).mean() for c in columns).row(0, named=True) if columns else {}
    )

    def mean(name: str) -> float | None:
        value = means.get(name)
        return None if value is None else float(value)

    traced = mean("latency_ms")
    untraced_stats = untraced_measurement(analyzed)
    used = untraced_stats if untraced_stats is not None else traced_stats
    source = "untraced" if untraced_stats is not None else "traced"
    untraced = untraced_stats.median if untraced_stats is not None else None
    # (the untraced latency is of the run's own iterations: beside --split-idle windows or another --range's
    # ranges a profiler ratio is no ratio, 0.124 ms windows over 4.453 ms iterations read 0.028)
    apart = _not_the_timed_iterations(analyzed) if untraced_stats is not None else None
    perturbation = (
        difference(untraced_stats, traced_stats) if untraced_stats is not None and apart is None else None
    )
    overhead = mean("framework_overhead_ms")
    launch_api_us = mean("launch_api_us")
    projection = _row_projection(analyzed, frame, bool(traced_stats.dropped))
    return {
        "runtime": config.runtime or "unknown",
        "model": config.model,
        "seq_len": config.seq_len,
        "batch_size": config.batch_size,
        "device": analyzed.device,
        "precision": config.precision,
        # a trace that states no model and whose batch size is a guess: a sweep by itself (SWEEP_IDENTITY)
        "unidentified": str(config.path)
        if config.model is None and config.sources.get("batch_size") in INFERRED_SOURCES
        else None,
        "profiler": config.profiler,
        "synthetic": config.synthetic,
        # the batch sizes its sources give (a value in doubt: no sweep figure is drawn from it)
        "_batch_candidates": list(config.uncertain.get("batch_size", ()))
        if config.sources.get("batch_size") == UNCERTAIN
        else None,
        "iterations": summary.iterations,
        "skipped_iterations": analyzed.skipped,
        "synchronized": summary.synchronized,
        "latency_ms": used.median,
        "latency_source": source,
        "latency_ci_low": used.ci_low,
        "latency_ci_high": used.ci_high,
        "latency_cv": used.cv,
        "latency_iterations": used.kept,
        "latency_dropped": used.count - used.kept,
        "latency_unstable": used.unstable,
        "untraced_latency_ms": untraced,
        "traced_latency_ms": traced,
        "traced_median_ms": traced_stats.median,
        "profiler_ratio": perturbation.ratio if perturbation is not None else None,
        "traced_kept_iterations": frame.height,
        "gpu_busy_ms": mean("gpu_busy_ms"),
        "framework_overhead_ms": overhead,
        "framework_overhead_fraction": overhead / traced if overhead is not None and traced else None,
        **{name: mean(name) for name in CAUSE_COLUMNS},
        "graph_projected_ms": projection.projected_ms
        if projection is not None and projection.applies
        else None,
        "_graph_caveat": projection.caveat if projection is not None and projection.applies else None,
        "_replays_graphs": projection is not None and (projection.reason or "").startswith(ALREADY_GRAPHS),
        "gpu_utilization": mean("gpu_utilization"),
        "bound": summary.bound,
        # why the row's verdict may be wrong (the analysis' doubts, its iterations' split on it among them)
        "verdict_uncertain": summary.verdict_uncertain,
        "kernels": mean("kernels"),
        "launches": mean("launches"),
        "launch_api_ms": None if launch_api_us is None else launch_api_us / 1e3,
        "launch_latency_us": mean("launch_latency_us"),
        "idle_gaps": mean("idle_gaps"),
        "path": str(config.path),
        # the ranges its iterations are (a sweep of rows cut by different ranges is warned: build_report)
        "_range": analyzed.range_name,
        "warnings": _row_warnings(analyzed, traced_stats)
        + _uncertain_unsaid(analyzed, summary.verdict_uncertain)
        + _traced_spread(analyzed, instability=source != "traced")
        + [f"{source} latency: {w}" for w in used.warnings]
        + ([] if apart is None else [apart]),
        "latency_stats": {**used.to_json(), "source": source},
        "_latency": used,
        "_perturbation": perturbation,
    }


def _not_the_timed_iterations(analyzed: Analysis) -> str | None:
    """Why the analyzed iterations are not the ones the untraced latency timed (None: they are): windows of
    ``--split-idle``, or a ``--range`` other than the one the run's sidecar names, by analyze's profiler-cost
    rule (:func:`tracekit.session.analyze_trace`: the default choice is the run's own iterations), so that
    report and analyze give one ratio. (An ORT run's sidecar said 'iteration', the collector's NVTX name, while
    its profile's timed runs are 'model_run', which the default rules choose: report had given no ratio.)"""
    meta = analyzed.source.trace.meta if analyzed.source is not None else {}
    timed = meta.get("range")
    name = analyzed.range_name or ""
    requested = analyzed.range_choice.startswith("requested with --range")
    if name.startswith("idle>"):
        what = f"--split-idle windows ({name})"
    elif requested and timed is not None and name != timed:
        what = f"'{name}' ranges"
    else:
        return None
    said = f"'{timed}' iterations" if timed is not None else "whole iterations"
    return (
        f"no profiler ratio: the untraced latency is of the run's {said}, and the traced latency here is of "
        f"{what}, not the same quantity"
    )


def _uncertain_unsaid(analyzed: Analysis, uncertain: str | None) -> list[str]:
    """The row's verdict doubt as a warning where none of the analysis' warnings says it (the split of the
    iterations on the verdict is in the summary only), so that a row marked uncertain says why."""
    if not uncertain or any(w.startswith("verdict uncertain") and w in uncertain for w in analyzed.warnings):
        return []
    return [uncertain]


def _traced_spread(analyzed: Analysis, instability: bool) -> list[str]:
    """The traced latency's spread, where the stability rules' dropped iterations move the row's traced mean
    (theirs: the kept iterations') away from analyze's and table's (every iteration's) by more than 5%, or
    the set is unstable (:func:`tracekit.analyzers.stability.spread_warning`, the same sentence as table's, the
    other way round); a slow start the analysis already names is left to its warning. ``instability`` False:
    the traced set is the latency the row uses, whose instability its own warning says."""
    from tracekit.analyzers.stability import slow_start, spread_warning

    frame = analyzed.iterations
    if frame.is_empty() or "latency_ms" not in frame.columns:
        return []
    latency = frame.get_column("latency_ms").to_list()
    said = slow_start(latency) if any(SLOW_START_MARK in w for w in analyzed.warnings) else 0
    text = spread_warning(
        latency,
        mean_kept=True,
        said=said,
        indices=frame.get_column("index").to_list(),
        instability=instability,
    )
    return [] if text is None else [f"traced latency: {text}"]


def _row_projection(analyzed: Analysis, kept: pl.DataFrame, dropped: bool) -> Projection | None:
    """The CUDA-graph projection over the row's iterations ``kept`` (those the stability rules keep, as the
    row's traced means are): the analysis' own is over every analyzed iteration, so beside a traced latency
    without a slow start its mean projected latency held the slow iterations (a saving too small, or none).
    Recomputed when the rules dropped iterations; its setup-call caveat only while one of the set-up
    iterations it names is kept. None for a loaded analysis (no attribution to recompute from) that dropped
    some: the launch-call rule then falls back to its own estimate from the row's means."""
    whole = analyzed.projection
    if not dropped or whole is None or not whole.applies:
        return whole
    source = analyzed.source
    attribution = None if source is None else source.iterations.attribution
    if source is None or attribution is None:
        return None
    result = source.iterations
    indices = set(kept.get_column("index").to_list())
    caveat = result.setup_caveat if indices & set(result.setup_iterations) else None
    return projection(kept, attribution, analyzed.device, caveat, result.capture_refusal)


def _row_warnings(analyzed: Analysis, traced_stats: Measurement) -> list[str]:
    """The analysis' warnings, but its slow start where the stability rules dropped it from this row's traced
    means (both :func:`tracekit.analyzers.stability.warmup_prefix`): its "the means, the medians and the
    verdict include them" is not this row's, whose traced latency is the mean without them; the drop is said instead. An analysis' own spread
    sentence (:data:`tracekit.analyzers.stability.SPREAD_MARK`, of the mean of every iteration) is left out
    the same way: the row says its own, of its traced mean (:func:`_traced_spread`)."""
    from tracekit.analyzers.stability import SPREAD_MARK

    warnings = _profiler_cost_as_the_row(
        analyzed, traced_stats, [w for w in analyzed.warnings if not w.startswith(SPREAD_MARK)]
    )
    if not traced_stats.warmup or not any(SLOW_START_MARK in w for w in warnings):
        return warnings
    return [w for w in warnings if SLOW_START_MARK not in w] + [
        f"traced latency: {n}" for n in traced_stats.notes
    ]


def _profiler_cost_as_the_row(
    analyzed: Analysis, traced_stats: Measurement, warnings: list[str]
) -> list[str]:
    """``warnings`` with analyze's profiler-cost warning (:func:`tracekit.analyzers.profiler_cost.findings`)
    said over the traced iterations the stability rules keep, as the row's ``traced_median_ms`` and
    ``profiler_ratio`` and the untraced median are, where the rules dropped some: analyze's is over every
    iteration, and report.md had said "slowed this run 2.10x" in its warnings beside "tracing inflated latency
    up to 2.00x" in its recommendations, of one run (9.0 + 5 x 2.0 + 4 x 2.2 ms, untraced 1.0). Left out when
    the kept iterations' median is within the warning's ratio."""
    from tracekit.analyzers.profiler_cost import SLOWED_MARK, findings

    if not traced_stats.dropped:
        return warnings
    out = []
    for w in warnings:
        if SLOWED_MARK not in w or "ms untraced (the same configuration timed without a profiler" not in w:
            out.append(w)
            continue
        who = w.split(SLOWED_MARK, 1)[0]
        source = w.split("timed without a profiler, ", 1)[1].split("): ", 1)[0]
        overhead = analyzed.summary.fields.get("framework_overhead_ms")
        said, _, _ = findings(
            traced_stats,
            None,
            None,
            0.5,
            analyzed.config,
            who,
            device=analyzed.config.device,
            overhead_ms=None if overhead is None else overhead.p50,
            source=source,
        )
        out.extend(said)
    return out


def _sweep_label(runtime: str, identity: dict[str, Any], varying: list[str]) -> str:
    """``pytorch``, or ``pytorch (bert-base, cpu)`` when the report's rows differ in model, device or
    precision, or hold a trace of no stated model (named by its file): then several sweeps can share a
    runtime and sequence length."""
    parts = [
        (Path(identity[k]).name if k == "unidentified" else str(identity[k]))
        if identity[k] is not None
        else f"{k} unknown"
        for k in varying
        if identity[k] is not None or k != "unidentified"  # an unidentified trace is named by its file
    ]
    return runtime + (f" ({', '.join(parts)})" if parts else "")


def _measurement(row: dict[str, Any]) -> Measurement | None:
    """The row's latency statistics (a row built from numbers alone: its latency as a median without an
    interval)."""
    stats = row.get("_latency")
    if isinstance(stats, Measurement):
        return stats
    if row.get("latency_ms") is None:
        return None
    return Measurement(count=0, kept=0, median=float(row["latency_ms"]))


@dataclass
class SweepReport:
    """Everything the report renders: configuration rows, sweeps, recommendations, warnings."""

    configs: list[dict[str, Any]]
    sweeps: list[dict[str, Any]]
    recommendations: list[Recommendation]
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def transition_by_runtime(self) -> dict[str, dict[str, int | None]]:
        """``{runtime: {str(seq_len): transition batch size or None}}`` (JSON-ready keys)."""
        out: dict[str, dict[str, int | None]] = {}
        for sweep in self.sweeps:
            label = sweep_label(sweep)
            out.setdefault(label, {})[str(sweep["seq_len"])] = sweep["transition_batch_size"]
        return out

    @property
    def synthetic(self) -> bool:
        return any(row["synthetic"] for row in self.configs)

    def to_json(self, describe: Callable[[Recommendation], str]) -> dict[str, Any]:
        """The ``report.json`` document; ``describe`` words each recommendation."""
        return {
            "synthetic": self.synthetic,
            "settings": self.settings,
            "transition_batch_size": self.transition_by_runtime,
            "sweeps": self.sweeps,
            "configs": [
                {k: row.get(k) for k in CONFIG_COLUMNS + ["warnings", "latency_stats"]}
                for row in self.configs
            ],
            "recommendations": [rec.to_json(describe(rec)) for rec in self.recommendations],
            "warnings": self.warnings,
        }


def build_report(
    rows: list[dict[str, Any]],
    plateau_tolerance: float = PLATEAU_TOLERANCE,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
    settings: dict[str, Any] | None = None,
) -> SweepReport:
    """Group configuration rows into sweeps (runtime, seq_len), find plateaus, transitions and headroom,
    and derive the recommendations. Rows without a batch size stay in the table but not in any sweep.

    Mutates each row: adds ``latency_vs_smallest``, ``throughput_per_s``, ``on_plateau`` and
    ``transition_batch_size`` (the sweep's).
    """
    warnings: list[str] = []
    seen: set[tuple[Any, ...]] = set()
    kept: list[dict[str, Any]] = []
    for row in _without_repeats(rows, warnings):
        key = config_key(row)
        if row["batch_size"] is not None and key in seen:
            identity = ", ".join(f"{k} {row.get(k)}" for k in SWEEP_IDENTITY if row.get(k) is not None)
            warnings.append(
                f"{row['path']}: duplicate configuration (runtime {row['runtime']}, seq {row['seq_len']}, "
                f"batch {row['batch_size']}{', ' + identity if identity else ''}); kept the first one"
            )
            continue
        seen.add(key)
        kept.append(row)
    for row in kept:
        for key in (
            "latency_vs_smallest",
            "latency_vs_smallest_low",
            "latency_vs_smallest_high",
            "vs_smallest",
            "sweep_base",
            "on_plateau",
            "plateau_state",
            "transition_batch_size",
        ):
            row.setdefault(key, None)
        lat, batch = row["latency_ms"], row["batch_size"]
        row["throughput_per_s"] = batch / lat * 1e3 if _positive(lat) and batch is not None else None
        if batch is not None and lat is not None and not _positive(lat):
            # (a median of 0 ms had been 'lower' than batch 1, 0.00x, on the plateau, and the free headroom)
            source = f"{row['latency_source']} " if row.get("latency_source") else ""
            warnings.append(
                f"{row['path']}: its {source}latency median is {lat!r} ms, no duration of a run: left out of "
                "the sweep (no ratio, plateau or throughput is drawn from it)"
            )
        if batch is None and row.get("_batch_candidates"):
            warnings.append(
                f"{row['path']}: batch size uncertain (its sources give "
                f"{' and '.join(map(str, row['_batch_candidates']))}); left out of sweeps: no throughput or "
                "plateau is drawn from it"
            )
        elif batch is None:
            warnings.append(
                f"{row['path']}: batch size unknown (no run.json or .meta.json); left out of sweeps"
            )

    runtime_order: list[str] = []
    for row in kept:
        if row["runtime"] not in runtime_order:
            runtime_order.append(row["runtime"])
    # One sweep per runtime, sequence length, model, device and precision: a CPU run's batch 1 and a GPU
    # run's batch 8 of one runtime are no latency curve (they had been read as one: "0.00x, 2186x the
    # throughput for free").
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in kept:
        if row["batch_size"] is not None and _positive(row["latency_ms"]):
            groups.setdefault(sweep_key(row), []).append(row)
    varying = [k for i, k in enumerate(SWEEP_IDENTITY) if len({key[2 + i] for key in groups}) > 1]

    sweeps: list[dict[str, Any]] = []
    for key, members in sorted(
        groups.items(),
        key=lambda kv: (
            runtime_order.index(kv[0][0]),
            kv[0][1] if kv[0][1] is not None else -1,
            *(str(v) for v in kv[0][2:]),
        ),
    ):
        members.sort(key=lambda r: r["batch_size"])
        sweep = _sweep(key[0], key[1], members, plateau_tolerance, bound_threshold)
        sweep.update(precision=key[4], unidentified=key[5])
        sweep["label"] = _sweep_label(key[0], dict(zip(SWEEP_IDENTITY, key[2:], strict=True)), varying)
        sweeps.append(sweep)
        # batch sizes whose iterations are cut by different ranges: one batch's iteration may be other work
        # than another's (ProfilerStep#* of two iterations against 'iteration': '2.11x' for the same work per
        # iteration); said as `analyze A B` says it (ranks.range_warning)
        warnings.extend(
            f"{sweep['label']}{'' if key[1] is None else f' (seq {key[1]})'}: {text}"
            for text in range_warning(
                [
                    {"range": r["_range"], "label": f"batch {r['batch_size']}"}
                    for r in members
                    if r.get("_range")
                ]
            )
        )
        if sweep["not_compared"]:
            first = members[0]
            warnings.append(
                f"{sweep['label']}{'' if key[1] is None else f' (seq {key[1]})'}: batch "
                f"{', '.join(map(str, sweep['not_compared']))} has no {_basis_text(first)} latency like batch "
                f"{first['batch_size']}'s (a profiler inflates latency by its own factor at each batch size), "
                "so it is not compared with it: undecided, neither on nor off the plateau"
            )

    recommendations = recommend(kept, sweeps, plateau_tolerance, bound_threshold)
    for row in kept:
        warnings.extend(f"{row['path']}: {w}" for w in row.get("warnings", []))
    base_settings = {"plateau_tolerance": plateau_tolerance, "bound_threshold": bound_threshold}
    base_settings.update(settings or {})
    return SweepReport(kept, sweeps, recommendations, base_settings, warnings)


def _without_repeats(rows: list[dict[str, Any]], warnings: list[str]) -> list[dict[str, Any]]:
    """``rows`` with each recording's first row only (one recording is one configuration: the same file given
    twice, by a link, or a byte-identical copy, had been two sweep points), and a warning in ``warnings`` for
    each repeat. Where the repeat is labelled another batch size, the kept row's batch size is in doubt: no
    sweep figure is drawn from it (batch 1's trace again as batch 2 had read 'on the plateau, 2.0x the
    throughput')."""
    from tracekit.io import Recordings

    seen = Recordings()
    out = []
    for row in rows:
        first, how = seen.find(row.get("path"))
        if first is None:
            seen.add(row.get("path"), row)
            out.append(row)
            continue
        assert isinstance(first, dict)
        text = f"{row['path']} is the same recording as {first['path']} ({how}): counted once"
        given = list(first.get("_batch_candidates") or [first["batch_size"]])
        if row["batch_size"] not in given and row["batch_size"] is not None and None not in given:
            first["_batch_candidates"] = [*given, row["batch_size"]]
            first["batch_size"] = None
            text += f", its batch size uncertain ({' or '.join(map(str, first['_batch_candidates']))})"
        warnings.append(text)
    return out


def _state_word(significant: bool | None, ratio: float | None) -> str | None:
    """ "higher" / "lower" when a difference is outside the noise, "within noise", or None (noise unknown)."""
    if significant is None or ratio is None:
        return None
    if not significant:
        return WITHIN_NOISE
    return "higher" if ratio > 1 else "lower"


def _positive(value: Any) -> bool:
    """A positive finite number (a latency a ratio can be taken of)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf")


def _basis_text(row: dict[str, Any]) -> str:
    source, profiler = latency_basis(row)
    return source + (f" ({profiler})" if profiler else "")


def _sweep(
    runtime: str, seq: Any, members: list[dict[str, Any]], tolerance: float, bound_threshold: float
) -> dict[str, Any]:
    sources = sorted({r["latency_source"] for r in members})
    base = members[0]
    # A batch size whose latency is of another kind than the smallest's (traced where it is untraced, or
    # traced under another profiler: a profiler's inflation differs by batch size and by profiler) is not
    # compared with it: undecided, never on or off the plateau (an untraced batch 1 against a traced batch 8
    # had read 1.69x, a transition, for an untraced 1.20x; traced against traced reads 0.95x, a plateau)
    unlike = [r["batch_size"] for r in members if latency_basis(r) != latency_basis(base)]
    stats = {r["batch_size"]: _measurement(r) for r in members}
    plateau, edge, transition, states = plateau_with_noise(stats, tolerance, undecided=unlike)
    by_batch = {r["batch_size"]: r for r in members}
    for row in members:
        if row["batch_size"] in unlike:
            row["sweep_base"] = False
            row["plateau_state"] = states[row["batch_size"]]
            row["on_plateau"] = None
            row["transition_batch_size"] = transition
            continue
        if row is base:
            # the base of every ratio: 1 by definition, no interval (an interval of a row against itself,
            # difference(m, m), had read "1.00x [0.99–1.01]", a confidence about an identity)
            row["sweep_base"] = True
            row["latency_vs_smallest"] = 1.0 if _positive(row["latency_ms"]) else None
            row["latency_vs_smallest_low"] = row["latency_vs_smallest_high"] = None
            row["vs_smallest"] = None
        else:
            diff = difference(stats[base["batch_size"]], stats[row["batch_size"]])
            row["sweep_base"] = False
            row["latency_vs_smallest"] = diff.ratio
            row["latency_vs_smallest_low"] = diff.ratio_low
            row["latency_vs_smallest_high"] = diff.ratio_high
            row["vs_smallest"] = _state_word(diff.significant, diff.ratio)
        row["plateau_state"] = states[row["batch_size"]]
        row["on_plateau"] = {ON_PLATEAU: True, WITHIN_NOISE: None}.get(states[row["batch_size"]], False)
        row["transition_batch_size"] = transition
    headroom = by_batch[plateau[-1]] if plateau else base
    gain = gain_low = gain_high = None
    if headroom["throughput_per_s"] and base["throughput_per_s"]:
        gain = headroom["throughput_per_s"] / base["throughput_per_s"]
        scale = headroom["batch_size"] / base["batch_size"] if base["batch_size"] else None
        if scale and headroom["latency_vs_smallest_low"] and headroom["latency_vs_smallest_high"]:
            gain_low = scale / headroom["latency_vs_smallest_high"]
            gain_high = scale / headroom["latency_vs_smallest_low"]
    # (each row's verdict, the median utilization's as analyze gives it: the mean of the kept iterations
    # can lie on the other side of the threshold, 6 iterations at 45% and 4 at 95%: median 45%, mean 65%)
    # (a row without a verdict: from its utilization, as rows built without an analysis)
    framework_bound = [
        r["batch_size"]
        for r in members
        if (r.get("bound") or bound_of(r["gpu_utilization"], bound_threshold)) == "framework"
    ]
    return {
        "runtime": runtime,
        "seq_len": seq,
        "model": base["model"],
        "device": base["device"],
        "latency_source": sources[0] if len(sources) == 1 else "mixed",
        # batch sizes whose latency is of another source than the smallest's: not compared with it
        "not_compared": unlike,
        "latency_statistic": "median",
        "batch_sizes": [r["batch_size"] for r in members],
        "latency_ms": [r["latency_ms"] for r in members],
        "latency_ci_low": [r.get("latency_ci_low") for r in members],
        "latency_ci_high": [r.get("latency_ci_high") for r in members],
        "noise_known": all(m is not None and m.noise_known for m in stats.values()),
        "smallest_batch_size": base["batch_size"],
        "smallest_latency_ms": base["latency_ms"],
        "plateau": plateau,
        "plateau_edge": edge,
        "plateau_states": [states[r["batch_size"]] for r in members],
        "transition_batch_size": transition,
        "transition_latency_ratio": (
            by_batch[transition]["latency_vs_smallest"] if transition is not None else None
        ),
        "transition_latency_ratio_low": (
            by_batch[transition]["latency_vs_smallest_low"] if transition is not None else None
        ),
        "transition_latency_ratio_high": (
            by_batch[transition]["latency_vs_smallest_high"] if transition is not None else None
        ),
        "headroom_batch_size": headroom["batch_size"],
        "headroom_latency_ratio": headroom["latency_vs_smallest"],
        "headroom_latency_ratio_low": headroom["latency_vs_smallest_low"],
        "headroom_latency_ratio_high": headroom["latency_vs_smallest_high"],
        "headroom_difference": headroom["vs_smallest"],
        "headroom_throughput_gain": gain,
        "headroom_throughput_gain_low": gain_low,
        "headroom_throughput_gain_high": gain_high,
        "framework_bound_batch_sizes": framework_bound,
        # the traced latency of each batch size = busy + each idle cause (means, ms; the breakdown figure)
        "gpu_busy_ms": [r["gpu_busy_ms"] for r in members],
        "idle_by_cause_ms": {name[: -len("_ms")]: [r.get(name) for r in members] for name in CAUSE_COLUMNS},
    }


# --------------------------------------------------------------------------------------------- timeline


@dataclass
class Timeline:
    """The events of a few iterations of one configuration, times in ms from the first shown window start.

    ``bars``: lane, category, start_ms, duration_ms (one row per range, API call or op); ``gaps``: start_ms,
    duration_ms of the idle gaps; ``iterations``: index, start_ms, end_ms (effective windows), latency_ms,
    gpu_busy_ms. ``lanes`` lists the lanes top to bottom.
    """

    title: str
    device: str
    lanes: list[str]
    bars: pl.DataFrame
    gaps: pl.DataFrame
    iterations: pl.DataFrame
    truncated: bool = False


#: The cause of an idle piece whose trace cannot tell it (no host API call recorded).
UNATTRIBUTED = "unattributed"


def idle_pieces_of(analyzed: Analysis) -> pl.DataFrame:
    """Every idle gap of the analyzed iterations cut into its attributed pieces (``iteration``, ``start_ns``,
    ``end_ns``, ``cause``, ``pid``, ``thread``, ``cpu_op``; :func:`tracekit.analyzers.attribution.idle_pieces`):
    per iteration they sum to its idle time. Empty when the trace has no device activity (latency only). A
    trace whose idle time is not attributed (device work without any host API call:
    :data:`tracekit.analyzers.iterations.HOST_UNRECORDED`) gives its gaps whole, each of cause
    :data:`UNATTRIBUTED`."""
    from tracekit.analyzers.attribution import attribute_trace

    if analyzed.gaps.is_empty():
        return pl.DataFrame(
            schema={"iteration": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64, "cause": pl.String}
        )
    if analyzed.attribution is None:
        return analyzed.gaps.select("iteration", "start_ns", "end_ns", cause=pl.lit(UNATTRIBUTED))
    trace = analyzed.trace_data
    cpu_ops = trace.cpu_ops if trace.cpu_ops.height else None
    pieces = attribute_trace(trace, analyzed, cpu_ops=cpu_ops, pieces=True).pieces
    analyzed_iterations = analyzed.iterations.get_column("index").implode()
    return pieces.filter(pl.col("iteration").is_in(analyzed_iterations))


#: Most ops drawn in a timeline; fewer iterations are shown when one iteration exceeds it.
TIMELINE_MAX_OPS = 30_000
#: Most GPU-stream lanes; the rest are drawn in an "other streams" lane.
TIMELINE_MAX_STREAMS = 4


def build_timeline(analyzed: Analysis, count: int = 3, title: str = "") -> Timeline:
    """Rows for the per-iteration timeline figure: CPU ranges (by depth), launch and other API calls, device
    ops by stream, idle gaps. Shows the first ``count`` analyzed iterations (fewer when they hold more than
    ``TIMELINE_MAX_OPS`` ops)."""
    trace, analysis = analyzed.trace_data, analyzed
    iters = analysis.iterations.sort("index")
    ranges = analysis.ranges
    ops = analyzed.ops
    per_iter = ops.group_by("iteration").len()
    shown = iters.head(count)
    truncated = False
    while shown.height > 1:
        n_ops = per_iter.filter(pl.col("iteration").is_in(shown["index"].implode()))["len"].sum()
        if n_ops <= TIMELINE_MAX_OPS:
            break
        shown = shown.head(shown.height - 1)
        truncated = True
    idx = shown["index"].implode()
    t0 = int(shown["window_start_ns"].min())
    t1 = int(shown["window_end_ns"].max())
    ms = 1e6

    def rel(frame: pl.DataFrame, lane: pl.Expr, category: pl.Expr) -> pl.DataFrame:
        return frame.select(
            lane.alias("lane"),
            category.alias("category"),
            ((pl.col("start") - t0) / ms).alias("start_ms"),
            ((pl.col("end") - pl.col("start")) / ms).alias("duration_ms"),
        )

    window = (pl.col("end") > t0) & (pl.col("start") < t1)
    threads = ranges.filter(pl.col("iteration").is_in(idx))["thread"].unique()
    cpu_ranges = trace.ranges.filter(window & on_host())
    if threads.null_count() == 0 and threads.len():
        cpu_ranges = cpu_ranges.filter(pl.col("thread").is_in(threads.implode()))
    min_depth = cpu_ranges["depth"].min() if cpu_ranges.height else 0
    cpu_ranges = cpu_ranges.with_columns((pl.col("depth") - (min_depth or 0)).alias("d")).filter(
        pl.col("d") < 3
    )
    range_bars = rel(
        cpu_ranges,
        pl.format("CPU range depth {}", pl.col("d")),
        pl.when(pl.col("d") == 0).then(pl.lit("range")).otherwise(pl.lit("nested range")),
    )

    api = trace.api.filter(window)
    api_bars = rel(
        api,
        pl.lit("CPU API calls"),
        pl.when(pl.col("name").is_in(LAUNCH_API_NAMES))
        .then(pl.lit("launch call"))
        .when(pl.col("name").str.contains("(?i)synchron"))
        .then(pl.lit("sync call"))
        .otherwise(pl.lit("other API call")),
    )

    shown_ops = ops.filter(pl.col("iteration").is_in(idx))
    work = "GPU" if analysis.device == "gpu" else "CPU operators"
    lane_unit = "stream" if analysis.device == "gpu" else "thread"  # CPU traces: stream holds the thread id
    streams = (
        shown_ops.group_by("stream")
        .len()
        .sort(["len", "stream"], descending=[True, False])["stream"]
        .to_list()
    )
    top = [s for s in streams if s is not None][:TIMELINE_MAX_STREAMS]
    stream_lane = (
        pl.when(pl.col("stream").is_null())
        .then(pl.lit(work))
        .when(pl.col("stream").is_in(top))
        .then(pl.format(f"{work} {lane_unit} {{}}", pl.col("stream")))
        .otherwise(pl.lit(f"{work} other {lane_unit}s"))
    )
    op_bars = rel(shown_ops, stream_lane, pl.col("kind"))

    gaps = analysis.gaps.filter(pl.col("iteration").is_in(idx)).select(
        ((pl.col("start_ns") - t0) / ms).alias("start_ms"), (pl.col("duration_ns") / ms).alias("duration_ms")
    )
    iterations = shown.select(
        "index",
        ((pl.col("window_start_ns") - t0) / ms).alias("start_ms"),
        ((pl.col("window_end_ns") - t0) / ms).alias("end_ms"),
        "latency_ms",
        "gpu_busy_ms",
    )
    bars = pl.concat([range_bars, api_bars, op_bars], how="vertical_relaxed")
    range_lanes = sorted(range_bars["lane"].unique().to_list())
    op_lanes = ([work] if None in streams else []) + [f"{work} {lane_unit} {s}" for s in top]
    if len([s for s in streams if s is not None]) > len(top):
        op_lanes.append(f"{work} other {lane_unit}s")
    lanes = range_lanes + (["CPU API calls"] if api_bars.height else []) + op_lanes
    return Timeline(title, analysis.device, lanes, bars, gaps, iterations, truncated)
