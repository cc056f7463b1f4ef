"""The wording of the report's recommendations (:mod:`tracekit.analyzers.recommendations`): one sentence
per kind, "GPU" or "operator" from the trace's device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracekit.analyzers.recommendations import Recommendation
from tracekit.fields import device_word


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _ms(x: float) -> str:
    return f"{x:.3g} ms" if x < 100 else f"{x:.0f} ms"


def _name(r: Recommendation) -> str:
    return f"{r.runtime}{'' if r.seq_len is None else f' (seq {r.seq_len})'}"


def _where(r: Recommendation) -> str:
    return f"{r.runtime}, batch {r.batch_size}" + (f", seq {r.seq_len}" if r.seq_len is not None else "")


def _framework_overhead(r: Recommendation) -> str:
    n = r.numbers
    text = (
        f"{_where(r)}: {_pct(n['framework_overhead_fraction'])} of latency is framework overhead "
        f"({_ms(n['framework_overhead_ms'])} of {_ms(n['traced_latency_ms'])}; {device_word(r.device)} busy "
        f"{_ms(n['gpu_busy_ms'])})"
    )
    if "alternative_runtime" in n:
        return text + (
            f": {n['alternative_runtime']} measured {n['speedup']:.1f}x faster here "
            f"({_ms(n['alternative_latency_ms'])} vs {_ms(n['latency_ms'])}, {r.facts['latency_source']})."
        )
    if r.device == "gpu":
        return text + ": the GPU is idle most of the iteration."
    return text + ": operators run less than half of the iteration."


def _headroom(r: Recommendation) -> str:
    n, f = r.numbers, r.facts
    return (
        f"{_name(r)}: batch {r.batch_size} costs {n['latency_ratio']:.2f}x batch {n['smallest_batch_size']} "
        f"({_ms(f['latency_ms'])} vs {_ms(f['smallest_latency_ms'])}), "
        f"{n['throughput_gain']:.1f}x the throughput for free."
    )


def _transition(r: Recommendation) -> str:
    n, f = r.numbers, r.facts
    b0, tol = f["smallest_batch_size"], _pct(f["tolerance"])
    if r.batch_size is None:
        return (
            f"{_name(r)}: latency stays within {tol} of batch {b0} over the whole measured range "
            f"(up to batch {n['largest_batch_size']})."
        )
    if f["last_plateau"] == b0:
        text = (
            f"{_name(r)}: no framework-bound plateau: batch {r.batch_size} already costs "
            f"{n['latency_ratio']:.2f}x batch {b0} (tolerance {tol})"
        )
    else:
        text = (
            f"{_name(r)}: latency stays within {tol} of batch {b0} up to batch {f['last_plateau']} "
            f"and leaves the plateau at batch {r.batch_size} ({n['latency_ratio']:.2f}x)"
        )
    util = n["gpu_utilization"]
    return text + (
        f"; {device_word(r.device)} utilization there is {_pct(util)}." if util is not None else "."
    )


def _launch_calls(r: Recommendation) -> str:
    n = r.numbers
    launch_ms, traced = n["launch_api_ms"], n["traced_latency_ms"]
    return (
        f"{_where(r)}: the launch-call time alone is {_ms(launch_ms)} per iteration "
        f"({n['launches']:.0f} launches, {_pct(launch_ms / traced)} of the traced {_ms(traced)}); "
        + (
            f"CUDA graphs would remove launches and dispatch between kernels: projected latency "
            f"{_ms(n['projected_latency_ms'])} (busy + in-flight gaps + one graph launch)."
            if n.get("projection") == "attribution"
            else f"a CUDA graph would remove it (projected latency {_ms(n['projected_latency_ms'])} at best)."
        )
    )


def _compute_bound(r: Recommendation) -> str:
    busy = "GPU is" if r.device == "gpu" else "operators are"
    return (
        f"{_name(r)}: from batch {r.batch_size} the {busy} busy {_pct(r.numbers['gpu_utilization'])} of the "
        f"iteration (compute-bound at the {_pct(r.facts['bound_threshold'])} threshold): from there device "
        "work, not framework overhead, is the larger share of latency."
    )


def _profiler_perturbation(r: Recommendation) -> str:
    return (
        f"{_name(r)}: tracing inflated latency up to {r.numbers['profiler_ratio']:.2f}x (batch {r.batch_size}: "
        f"{_ms(r.facts['traced_latency_ms'])} traced vs {_ms(r.facts['untraced_latency_ms'])} untraced); the "
        "busy/overhead breakdown is from the traced runs, the sweep uses the untraced latency."
    )


WORDING: dict[str, Callable[[Recommendation], str]] = {
    "framework_overhead": _framework_overhead,
    "headroom": _headroom,
    "transition": _transition,
    "launch_calls": _launch_calls,
    "compute_bound": _compute_bound,
    "profiler_perturbation": _profiler_perturbation,
}


def describe(rec: Recommendation) -> str:
    """The sentence of one recommendation."""
    return WORDING[rec.kind](rec)


def to_json(recs: list[Recommendation]) -> list[dict[str, Any]]:
    """The report.json ``recommendations`` list (each with its ``text``)."""
    return [rec.to_json(describe(rec)) for rec in recs]
