"""Recommendations computed from a sweep report's data (never invented): one small function per rule, each
returning a typed :class:`Recommendation` or None. The wording is in :mod:`tracekit.renderers.recommendations`.

A rule fires only when its condition holds, per sweep (runtime, sequence length):

- ``framework_overhead``: at the smallest batch size the framework overhead is at least ``1 - bound_threshold``
  of the traced latency; names the fastest other runtime measured at the same batch size and sequence length
  when it is at least ``FASTER_RATIO_MIN`` times faster (same latency source).
- ``launch_calls``: on a GPU trace, at the smallest batch size, the launch-call CPU time is at least
  ``LAUNCH_SHARE_MIN`` of latency and there are at least as many launches as half the kernels (no CUDA graph
  yet): the projected latency under CUDA graphs is the idle-time attribution's projection
  (``graph_projected_ms``: busy + one replay gap per kernel + the replay's head and tail,
  :func:`tracekit.analyzers.attribution.project_cuda_graphs`), or, when the trace gives none, max(GPU busy,
  latency − launch time); and only when that projection is at least ``LAUNCH_SHARE_MIN`` of the traced latency
  below it (launch calls that ran while the GPU was busy cost nothing a graph would save), and, where the run
  timed the configuration without the profiler, that much below the untraced latency too (a saving only the
  profiler's idle time makes is none).
- ``headroom``: the plateau extends past the smallest batch size: the largest batch size on it costs little
  more latency and multiplies throughput; whether its latency differs from the smallest batch size's at all
  is stated only outside the noise (``difference``: "higher", "lower" or "within noise").
- ``transition``: where latency leaves the plateau (or that it never does in the measured range), and the
  batch sizes within noise of the plateau line (``edge``).
- ``compute_bound``: the first batch size from which every measured batch size's utilization reaches
  ``bound_threshold`` (``reached_before``: smaller batch sizes that reached it, followed by one that did not).
- ``profiler_perturbation``: tracing inflated latency by more than ``PERTURBATION_RATIO``, with the whole
  interval of the ratio above it (a ratio within noise of the line is not a finding).

Every comparison of latencies uses the medians and their 95% intervals (:mod:`tracekit.analyzers.stability`):
an alternative runtime is named only when it is faster by ``FASTER_RATIO_MIN`` outside the noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tracekit.analyzers.stability import Measurement, difference, ratio_state
from tracekit.analyzers.sweep import (
    FRAMEWORK_BOUND_UTILIZATION,
    PLATEAU_TOLERANCE,
    config_key,
    is_framework_bound,
    latency_basis,
    sweep_key,
)

#: Traced launch-call time below this fraction of latency gives no CUDA-graph recommendation.
LAUNCH_SHARE_MIN = 0.10
#: Traced/untraced latency ratio above which the report warns about profiler perturbation.
PERTURBATION_RATIO = 1.25
#: A runtime must be at least this much faster (ratio) to be named as the alternative.
FASTER_RATIO_MIN = 1.10
#: Order of the kinds in the report (most actionable first; stable within a kind).
RECOMMENDATION_ORDER = (
    "framework_overhead",
    "launch_calls",
    "headroom",
    "transition",
    "compute_bound",
    "profiler_perturbation",
)

Row = dict[str, Any]


@dataclass(frozen=True)
class Recommendation:
    """One finding. ``numbers``: the values it rests on (in report.json); ``facts``: further values the
    wording quotes; ``device``: "gpu" / "cpu" (wording of busy/utilization)."""

    kind: str
    runtime: str
    seq_len: Any
    batch_size: int | None
    numbers: dict[str, Any]
    device: str = "gpu"
    facts: dict[str, Any] = field(default_factory=dict)
    #: The sweep's name where the runtime alone does not name it (``pytorch (cpu, fp32)``).
    label: str | None = None

    def to_json(self, text: str) -> dict[str, Any]:
        """The report.json entry (``text``: its wording)."""
        return {
            "kind": self.kind,
            "runtime": self.runtime,
            **({"sweep": self.label} if self.label and self.label != self.runtime else {}),
            "seq_len": self.seq_len,
            "batch_size": self.batch_size,
            "text": text,
            "numbers": self.numbers,
        }


@dataclass(frozen=True)
class SweepView:
    """What a rule sees of one sweep: the sweep, its member rows by batch size, every row, the settings."""

    sweep: dict[str, Any]
    members: list[Row]
    index: dict[tuple[Any, Any, Any], Row]
    tolerance: float
    bound_threshold: float

    @property
    def base(self) -> Row:
        return self.members[0]

    def rec(self, kind: str, batch: int | None, numbers: dict[str, Any], **facts: Any) -> Recommendation:
        s = self.sweep
        return Recommendation(
            kind, s["runtime"], s["seq_len"], batch, numbers, self.base["device"], facts, s.get("label")
        )

    def row(self, batch: int) -> Row:
        """The sweep's configuration of batch size ``batch``."""
        return self.index[(*sweep_key(self.sweep), batch)]


def framework_overhead(v: SweepView) -> Recommendation | None:
    base = v.base
    frac = base["framework_overhead_fraction"]
    if frac is None or frac < 1.0 - v.bound_threshold:
        return None
    runtime, b0 = v.sweep["runtime"], base["batch_size"]
    # another runtime of the same model, device, precision, sequence length and batch size: another model's
    # or device's latency says nothing of what switching runtime buys
    same = sweep_key(v.sweep)[1:]
    others = [
        r
        for (rt, *rest, b), r in v.index.items()
        if rt != runtime
        and tuple(rest) == same
        and b == b0
        and r["latency_ms"]
        and latency_basis(r) == latency_basis(base)  # untraced, or traced under the same profiler
    ]
    best = min(others, key=lambda r: r["latency_ms"], default=None)
    faster = diff = None
    if best is not None:
        diff = difference(_stats(best), _stats(base))
        faster = ratio_state(diff, FASTER_RATIO_MIN)
    numbers: dict[str, Any] = {
        "framework_overhead_fraction": frac,
        "framework_overhead_ms": base["framework_overhead_ms"],
        "gpu_busy_ms": base["gpu_busy_ms"],
        "traced_latency_ms": base["traced_latency_ms"],
    }
    if best is not None and faster == "above":
        numbers.update(
            alternative_runtime=best["runtime"],
            alternative_latency_ms=best["latency_ms"],
            latency_ms=base["latency_ms"],
            speedup=base["latency_ms"] / best["latency_ms"],
            # judged by the medians alone when either side has no interval (fewer than 6 iterations)
            noise_known=diff is not None and diff.ratio_low is not None and diff.ratio_high is not None,
        )
    # the analysis doubts this configuration's verdict (a graph-capture step, lost records, ...): the share is
    # said with that doubt, not as a finding
    uncertain = bool(base.get("verdict_uncertain"))
    return v.rec(
        "framework_overhead", b0, numbers, latency_source=base["latency_source"], verdict_uncertain=uncertain
    )


def _stats(row: Row) -> Measurement:
    """A row's latency statistics (its median alone when the row carries none)."""
    stats = row.get("_latency")
    return stats if isinstance(stats, Measurement) else Measurement(0, 0, row["latency_ms"])


#: How far the traced busy time of a configuration may exceed the latency used for it before that latency is
#: not believed (:func:`latency_doubt`): busy time is part of the latency (a profiler that slows operators
#: much makes the traced and untraced runs differ too, and the claim is withheld then as well).
BUSY_OVER_LATENCY_MAX = 1.0


def latency_doubt(v: SweepView, batch: int) -> str | None:
    """Why the latencies of the smallest batch and ``batch`` cannot carry a claim of free throughput, or None:
    either set is unstable (the stability rules: too noisy, or the process not running for part of it, as on
    a loaded machine), or the traced busy time of either exceeds the latency used for it by more than
    :data:`BUSY_OVER_LATENCY_MAX` (the work took longer than the latency says the run did: a CPU run whose
    untraced set was starved read 'batch 4 costs the same as batch 1' at 1650 ms beside 1806 ms of operator
    busy time)."""
    base, row = v.base, v.row(batch)
    unstable = [str(r["batch_size"]) for r in (base, row) if r.get("latency_unstable")]
    if unstable:
        return (
            f"the latency set of batch {' and '.join(dict.fromkeys(unstable))} is unstable (see its warning)"
        )
    word = "operator" if base.get("device") == "cpu" else "GPU"
    for r in (base, row):
        busy, latency = r.get("gpu_busy_ms"), r.get("latency_ms")
        if busy and latency and busy > BUSY_OVER_LATENCY_MAX * latency:
            return (
                f"batch {r['batch_size']}'s traced {word} busy time, {busy:.3f} ms, exceeds its latency, "
                f"{latency:.3f} ms: the latencies were not measured under the same conditions as the traces"
            )
    return None


def headroom(v: SweepView) -> Recommendation | None:
    hb, b0 = v.sweep["headroom_batch_size"], v.base["batch_size"]
    if hb is None or hb == b0:
        return None
    s = v.sweep
    numbers = {
        "latency_ratio": s["headroom_latency_ratio"],
        "latency_ratio_low": s.get("headroom_latency_ratio_low"),
        "latency_ratio_high": s.get("headroom_latency_ratio_high"),
        "difference": s.get("headroom_difference"),
        "throughput_gain": s["headroom_throughput_gain"],
        "throughput_gain_low": s.get("headroom_throughput_gain_low"),
        "throughput_gain_high": s.get("headroom_throughput_gain_high"),
        "smallest_batch_size": b0,
    }
    doubt = latency_doubt(v, hb)
    return v.rec(
        "headroom",
        hb,
        numbers,
        latency_ms=v.row(hb)["latency_ms"],
        smallest_latency_ms=v.base["latency_ms"],
        **({"withheld": doubt} if doubt else {}),
    )


def transition(v: SweepView) -> Recommendation | None:
    s, b0 = v.sweep, v.base["batch_size"]
    tb = s["transition_batch_size"]
    edge = list(s.get("plateau_edge") or [])
    facts = {
        "tolerance": v.tolerance,
        "smallest_batch_size": b0,
        "last_plateau": s["plateau"][-1] if s["plateau"] else b0,
        "edge": edge,
        "not_compared": list(s.get("not_compared") or []),
        "edge_ratios": [
            (v.row(b)["latency_vs_smallest_low"], v.row(b)["latency_vs_smallest_high"]) for b in edge
        ],
    }
    if tb is not None:
        util = v.row(tb)["gpu_utilization"]
        numbers = {
            "latency_ratio": s["transition_latency_ratio"],
            "latency_ratio_low": s.get("transition_latency_ratio_low"),
            "latency_ratio_high": s.get("transition_latency_ratio_high"),
            "gpu_utilization": util,
            "within_noise_batch_sizes": edge,
            # the batch size measured just before: the plateau ends somewhere after it, at tb at the latest
            "after_batch_size": s["batch_sizes"][s["batch_sizes"].index(tb) - 1],
        }
        return v.rec("transition", tb, numbers, **facts)
    if len(s["batch_sizes"]) > 1:
        numbers = {"largest_batch_size": s["batch_sizes"][-1], "within_noise_batch_sizes": edge}
        doubt = latency_doubt(v, s["batch_sizes"][-1])
        return v.rec("transition", None, numbers, **facts, **({"withheld": doubt} if doubt else {}))
    return None  # one batch size: no sweep to speak of


def launch_calls(v: SweepView) -> Recommendation | None:
    base = v.base
    launches, kernels = base["launches"], base["kernels"]
    launch_ms, traced = base["launch_api_ms"], base["traced_latency_ms"]
    if not (
        base["device"] == "gpu"
        and launches
        and kernels
        and launch_ms is not None
        and traced
        and launch_ms >= LAUNCH_SHARE_MIN * traced
        and launches >= 0.5 * kernels
    ):
        return None
    projected = base.get("graph_projected_ms") or max(base["gpu_busy_ms"] or 0.0, traced - launch_ms)
    if traced - projected < LAUNCH_SHARE_MIN * traced:
        # the launch calls ran while the device was busy (a GPU-bound run): a graph would buy little or nothing
        return None
    untraced = base.get("untraced_latency_ms")
    if untraced and untraced - projected < LAUNCH_SHARE_MIN * untraced:
        # the saving is the profiler's: without it the run already takes about the projected latency (traced
        # 3.0 ms, untraced 1.0, projected 0.95: a graph saves 5% of the real run, not 68%)
        return None
    numbers = {
        "launch_api_ms": launch_ms,
        "launches": launches,
        "traced_latency_ms": traced,
        "projected_latency_ms": projected,
        "projection": "attribution" if base.get("graph_projected_ms") else "launch time removed",
    }
    if untraced:
        numbers["untraced_latency_ms"] = untraced  # the saving is judged against it too
    if base.get("_replays_graphs"):
        numbers["replays_graphs"] = True  # the launches counted are those outside the graphs it replays
    if base.get("_graph_caveat"):
        numbers["caveat"] = base["_graph_caveat"]  # the analysis' reason the saving is too large here
    return v.rec("launch_calls", base["batch_size"], numbers)


def compute_bound(v: SweepView) -> Recommendation | None:
    known = [r for r in v.members if r["gpu_utilization"] is not None]
    framework = [bool(is_framework_bound(r["gpu_utilization"], v.bound_threshold)) for r in known]
    if not framework or not framework[0] or framework[-1]:
        return None
    # "from batch B" holds for every larger batch size measured: the first of the compute-bound tail (a batch
    # size that reached the threshold and a larger one that fell back below it is named, not passed over)
    start = len(framework) - framework[::-1].index(True)
    first = known[start]
    earlier = [r["batch_size"] for r, fw in zip(known[:start], framework[:start], strict=True) if not fw]
    numbers = {"gpu_utilization": first["gpu_utilization"], "reached_before": earlier}
    return v.rec("compute_bound", first["batch_size"], numbers, bound_threshold=v.bound_threshold)


def profiler_perturbation(v: SweepView) -> Recommendation | None:
    def beyond(row: Row) -> bool:
        diff = row.get("_perturbation")
        if diff is not None:
            return ratio_state(diff, PERTURBATION_RATIO) == "above"
        return row["profiler_ratio"] is not None and row["profiler_ratio"] > PERTURBATION_RATIO

    # A set the stability rules call unstable (another process held the CPU for part of it) says nothing of
    # the profiler: its ratio is the contention's, so only stable sets can show an inflation (headroom and
    # transition withhold their claims on such sets likewise, :func:`latency_doubt`).
    perturbed = [r for r in v.members if beyond(r) and not r.get("latency_unstable")]
    if not perturbed:
        return None
    worst = max(perturbed, key=lambda r: r["profiler_ratio"])
    diff = worst.get("_perturbation")
    numbers = {
        "profiler_ratio": worst["profiler_ratio"],
        "profiler_ratio_low": getattr(diff, "ratio_low", None),
        "profiler_ratio_high": getattr(diff, "ratio_high", None),
        "batch_sizes": [r["batch_size"] for r in perturbed],
    }
    return v.rec(
        "profiler_perturbation",
        worst["batch_size"],
        numbers,
        traced_latency_ms=worst.get("traced_median_ms") or worst["traced_latency_ms"],
        untraced_latency_ms=worst["untraced_latency_ms"],
    )


#: The rules, in the order they are evaluated per sweep.
RULES: tuple[Callable[[SweepView], Recommendation | None], ...] = (
    framework_overhead,
    headroom,
    transition,
    launch_calls,
    compute_bound,
    profiler_perturbation,
)


def recommend(
    rows: list[Row],
    sweeps: list[dict[str, Any]],
    tolerance: float = PLATEAU_TOLERANCE,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
) -> list[Recommendation]:
    """Every rule applied to every sweep; ordered by :data:`RECOMMENDATION_ORDER` (stable within a kind)."""
    index = {config_key(r): r for r in rows if r["batch_size"] is not None}
    out: list[Recommendation] = []
    for sweep in sweeps:
        members = [index[(*sweep_key(sweep), b)] for b in sweep["batch_sizes"]]
        view = SweepView(sweep, members, index, tolerance, bound_threshold)
        out += [rec for rule in RULES if (rec := rule(view)) is not None]
    order = {k: i for i, k in enumerate(RECOMMENDATION_ORDER)}
    return sorted(out, key=lambda r: order.get(r.kind, len(order)))
