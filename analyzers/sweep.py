"""Sweep-level analyses: the framework-bound plateau and the transition batch size (docs/design.md)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

#: Default tolerance: a batch size is on the plateau while its latency is within 10% of batch size 1's.
PLATEAU_TOLERANCE = 0.10
#: Default utilization threshold below which an iteration is framework-bound.
FRAMEWORK_BOUND_UTILIZATION = 0.5


def plateau_and_transition(
    latency_ms_by_batch: Mapping[int, float], tolerance: float = PLATEAU_TOLERANCE
) -> tuple[list[int], int | None]:
    """Framework-bound plateau and transition batch size of one latency-vs-batch-size curve.

    The plateau is the run of batch sizes, from the smallest upward, whose latency stays within
    ``tolerance`` (fraction) of the smallest batch size's latency; the transition batch size is the first
    batch size past the plateau, or ``None`` when latency never leaves it. Latency in any unit.
    """
    if not latency_ms_by_batch:
        return [], None
    batches = sorted(latency_ms_by_batch)
    base = latency_ms_by_batch[batches[0]]
    plateau: list[int] = []
    for batch in batches:
        if latency_ms_by_batch[batch] <= base * (1.0 + tolerance):
            plateau.append(batch)
        else:
            return plateau, batch
    return plateau, None


def is_framework_bound(
    gpu_utilization: float | None, threshold: float = FRAMEWORK_BOUND_UTILIZATION
) -> bool | None:
    """True when GPU utilization (busy / latency, 0..1) is below ``threshold``; None when unknown."""
    if gpu_utilization is None:
        return None
    return gpu_utilization < threshold


def bound_of(gpu_utilization: float | None, threshold: float = FRAMEWORK_BOUND_UTILIZATION) -> str | None:
    """ "framework" when :func:`is_framework_bound`, else "compute"; None when the utilization is unknown.

    The one framework-bound rule: a trace's verdict applies it to the median utilization over iterations,
    the report's sweeps to each configuration's mean."""
    bound = is_framework_bound(gpu_utilization, threshold)
    return None if bound is None else ("framework" if bound else "compute")


def bound_doubt(
    utilizations: Collection[float | None], threshold: float = FRAMEWORK_BOUND_UTILIZATION
) -> str | None:
    """Why the verdict :func:`bound_of` gives on the median of per-iteration ``utilizations`` does not hold
    across the iterations ("verdict uncertain: ..."), or None: when the distribution-free 95% interval of the
    median (:func:`tracekit.analyzers.stability.median_interval`, the interval every latency median gets) lies
    across the threshold, the iterations do not tell framework-bound from compute-bound; with fewer than 6
    iterations (no interval) when they fall on both sides. Iterations all on one side, or a median whose
    interval is on one side (however many iterations lie on the other), leave the verdict standing."""
    import math
    import statistics

    from tracekit.analyzers.stability import median_interval

    values = [float(u) for u in utilizations if u is not None and not math.isnan(float(u))]
    if len(values) < 2:
        return None
    below = sum(u < threshold for u in values)
    above = len(values) - below
    if not below or not above:
        return None
    median = statistics.median(values)
    head = (
        f"verdict uncertain: the median utilization {100 * median:.1f}% ({bound_of(median, threshold)}-bound)"
    )
    interval = median_interval(values)
    if interval is None:
        return (
            f"{head} rests on {len(values)} iterations on both sides of the {100 * threshold:.0f}% threshold: "
            f"{below} framework-bound, {above} compute-bound (too few for an interval of the median)"
        )
    low, high = interval
    if not low < threshold <= high:
        return None
    return (
        f"{head} has a 95% interval of {100 * low:.1f}% to {100 * high:.1f}%, across the {100 * threshold:.0f}% "
        f"threshold: {below} of {len(values)} iterations are framework-bound, {above} compute-bound"
    )


#: What makes two configurations of one runtime and sequence length belong to different sweeps: a sweep's
#: latency curve, plateau and transition are those of one model on one device at one precision.
#: ``unidentified``: the trace of a configuration whose model nothing states and whose batch size is only
#: inferred (the file name, the content): it is no evidence of being the same model as any other, so it is
#: a sweep by itself (report.py ``config_row``).
SWEEP_IDENTITY: tuple[str, ...] = ("model", "device", "precision", "unidentified")


def sweep_key(item: Mapping[str, Any]) -> tuple[Any, ...]:
    """The sweep of a configuration row, or a sweep's own (runtime, seq_len, model, device, precision)."""
    return (item["runtime"], item["seq_len"], *(item.get(k) for k in SWEEP_IDENTITY))


def sweep_label(sweep: Mapping[str, Any]) -> str:
    """A sweep's name as the report prints it: its ``label`` (``pytorch (cpu, fp32)`` where the runtime alone
    does not name it), else its runtime (a sweep of a report.json written without labels)."""
    return sweep.get("label") or sweep["runtime"]


def config_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """One configuration: its sweep and its batch size."""
    return (*sweep_key(row), row["batch_size"])


def latency_basis(row: Mapping[str, Any]) -> tuple[Any, Any]:
    """What a configuration row's latency is: untraced, or traced under which profiler (each inflates latency
    its own way): two latencies are compared only on one basis."""
    return row["latency_source"], (row.get("profiler") if row["latency_source"] == "traced" else None)


#: How a batch size stands against the plateau line (:func:`plateau_with_noise`).
ON_PLATEAU, OFF_PLATEAU, WITHIN_NOISE = "on", "off", "within noise"


def plateau_with_noise(
    measurements: Mapping[int, Any], tolerance: float = PLATEAU_TOLERANCE, undecided: Collection[int] = ()
) -> tuple[list[int], list[int], int | None, dict[int, str]]:
    """The plateau and transition of :func:`plateau_and_transition`, stated only outside the noise.

    ``measurements``: batch size -> :class:`tracekit.analyzers.stability.Measurement` of its latency. Each
    batch size's latency ratio to the smallest batch size's, with the conservative interval of
    :func:`tracekit.analyzers.stability.difference`, is "on" the plateau when the whole interval is at most
    1 + ``tolerance``, "off" when it is entirely above, and "within noise" when it straddles the line (a set
    without an interval is judged by its median alone, as before). Returns (plateau: the leading "on" batch
    sizes; edge: the batch sizes after it and before the first "off" one, undecided; transition: the first
    "off" batch size after the plateau and edge, or None; {batch size: state}). The ``undecided`` batch
    sizes (whose latency cannot be compared with the smallest's) are "within noise" whatever their ratio.
    """
    from tracekit.analyzers.stability import difference, ratio_state

    batches = sorted(measurements)
    if not batches:
        return [], [], None, {}
    base = measurements[batches[0]]
    states: dict[int, str] = {batches[0]: ON_PLATEAU}  # the smallest batch size defines the line
    for batch in batches[1:]:
        state = ratio_state(difference(base, measurements[batch]), 1.0 + tolerance)
        if batch in undecided:
            state = None
        states[batch] = {"below": ON_PLATEAU, "above": OFF_PLATEAU}.get(state or "", WITHIN_NOISE)
    plateau: list[int] = []
    edge: list[int] = []
    for batch in batches:
        if states[batch] == OFF_PLATEAU:
            return plateau, edge, batch, states
        if states[batch] == ON_PLATEAU and not edge:
            plateau.append(batch)
        else:
            edge.append(batch)
    return plateau, edge, None, states
