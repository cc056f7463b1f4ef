"""What the profiler itself cost a traced run, from the same configuration timed without it.

``tracekit collect`` times every configuration twice: untraced (no profiler: run.json's
``untraced_latency_ms``) and traced (the trace analyzed here). A profiler slows the host (Nsight Systems'
OS-runtime and CUDA API tracing, torch.profiler's operator records), and that slowdown lands in the trace's
idle gaps: it reads as framework overhead, and can make a compute-bound run look framework-bound. On an H200,
TorchScript BERT-base at batch 1 ran in 2.106 ms untraced (median) and 7.347 ms under nsys: 5.2 ms of the
6.85 ms "framework overhead" the trace shows was the profiler's.

:func:`findings` compares the analyzed iterations' median latency with the untraced median:

- above :data:`tracekit.analyzers.recommendations.PERTURBATION_RATIO` (1.25x), a warning says by how much, and
  that the overhead includes the profiler's cost (about the difference of the medians, ms per iteration);
- a framework-bound verdict is then checked against the untraced latency: GPU busy (ms, median, from the
  trace: kernels keep their durations under a profiler) over the untraced median latency is the utilization
  the run would have without the profiler, at most. At or above the threshold the verdict may be the
  profiler's ("verdict uncertain"); below it the verdict holds untraced too, and a note says so with the
  number. A compute-bound verdict needs no check: without the profiler's host cost the GPU is busier still.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracekit.analyzers.recommendations import PERTURBATION_RATIO


def untraced_median_ms(untraced: Mapping[str, Any] | None) -> float | None:
    """The untraced median latency (ms) of run.json's statistics (``median``, else ``p50``); None without
    one, or when it is not a positive number."""
    if not untraced:
        return None
    value = untraced.get("median", untraced.get("p50"))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None
    return float(value)


def findings(
    latency_ms: float | None,
    busy_ms: float | None,
    bound: str | None,
    bound_threshold: float,
    untraced: Mapping[str, Any] | None,
    profiler: str | None = None,
) -> tuple[list[str], list[str], str | None]:
    """(warnings, notes, doubt) about the profiler's cost. ``latency_ms``/``busy_ms``: the analyzed iterations'
    median latency and GPU busy time (ms); ``bound``: the verdict ("framework", "compute" or None);
    ``untraced``: the configuration's untraced latency statistics (run.json), None when not recorded;
    ``profiler``: its name, for the words. ``doubt``: a "verdict uncertain: ..." text, or None."""
    reference = untraced_median_ms(untraced)
    if reference is None or latency_ms is None or not latency_ms > 0:
        return [], [], None
    ratio = latency_ms / reference
    if ratio <= PERTURBATION_RATIO:
        return [], [], None
    who = profiler or "the profiler"
    warnings = [
        f"{who} slowed this run {ratio:.2f}x: median latency {latency_ms:.3f} ms traced against {reference:.3f} ms "
        "untraced (the same configuration timed without a profiler, run.json): the framework overhead shown "
        f"includes {who}'s own cost, about {latency_ms - reference:.3f} ms per iteration"
    ]
    if bound != "framework" or busy_ms is None:
        return warnings, [], None
    untraced_utilization = busy_ms / reference
    said = (
        f"the GPU busy time traced here ({busy_ms:.3f} ms, median) is {untraced_utilization:.1%} "
        f"of the untraced median latency ({reference:.3f} ms)"
    )
    if untraced_utilization >= bound_threshold:
        doubt = (
            f"verdict uncertain: without {who}, {said}, at or above the {bound_threshold:.0%} threshold: the run may be "
            f"compute-bound, and framework-bound only under {who}"
        )
        return [*warnings, doubt], [], doubt
    return (
        warnings,
        [f"framework-bound without {who} too: {said}, below the {bound_threshold:.0%} threshold"],
        None,
    )
