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
    return f"{r.label or r.runtime}{'' if r.seq_len is None else f' (seq {r.seq_len})'}"


def _where(r: Recommendation) -> str:
    return f"{r.label or r.runtime}, batch {r.batch_size}" + (
        f", seq {r.seq_len}" if r.seq_len is not None else ""
    )


def _framework_overhead(r: Recommendation) -> str:
    n = r.numbers
    text = (
        f"{_where(r)}: {_pct(n['framework_overhead_fraction'])} of latency is framework overhead "
        f"({_ms(n['framework_overhead_ms'])} of {_ms(n['traced_latency_ms'])}; {device_word(r.device)} busy "
        f"{_ms(n['gpu_busy_ms'])})"
    )
    if r.facts.get("verdict_uncertain"):
        return text + (
            ": but the analysis doubts this configuration's verdict (its warning says why), so this share is "
            "no finding until that is settled."
        )
    if "alternative_runtime" in n:
        return text + (
            f": {n['alternative_runtime']} measured {n['speedup']:.1f}x faster here, "
            + ("outside the noise " if n.get("noise_known", True) else "")
            + f"({_ms(n['alternative_latency_ms'])} vs {_ms(n['latency_ms'])}, {r.facts['latency_source']} "
            + "medians"
            + ("" if n.get("noise_known", True) else "; noise unknown: too few iterations for an interval")
            + ")."
        )
    if r.device == "gpu":
        return text + ": the GPU is idle most of the iteration."
    return text + ": operators run less than half of the iteration."


def _interval(low: float | None, high: float | None, digits: int = 2) -> str:
    """'0.93-1.04x' (the ratio's 95% interval), '1.9x' when both ends read the same at ``digits``, or ''
    without one."""
    if low is None or high is None:
        return ""
    low_text, high_text = f"{low:.{digits}f}", f"{high:.{digits}f}"
    return f"{low_text}x" if low_text == high_text else f"{low_text}–{high_text}x"


def _headroom(r: Recommendation) -> str:
    n, f = r.numbers, r.facts
    b0 = n["smallest_batch_size"]
    ratio = _interval(n.get("latency_ratio_low"), n.get("latency_ratio_high"))
    gain = _interval(n.get("throughput_gain_low"), n.get("throughput_gain_high"), 1)
    latencies = f"{_ms(f['latency_ms'])} vs {_ms(f['smallest_latency_ms'])} median"
    if f.get("withheld"):
        return (
            f"{_name(r)}: batch {r.batch_size} measured {n['latency_ratio']:.2f}x batch {b0} ({latencies}), but "
            f"no free throughput is claimed: {f['withheld']}."
        )
    if n.get("difference") == "within noise":
        return (
            f"{_name(r)}: batch {r.batch_size} costs the same as batch {b0} within noise "
            f"({n['latency_ratio']:.2f}x, 95% interval {ratio}; {latencies}): {gain} the throughput for free."
        )
    if n.get("difference") is None:
        return (
            f"{_name(r)}: batch {r.batch_size} costs {n['latency_ratio']:.2f}x batch {b0} ({latencies}; noise "
            f"unknown: too few iterations for an interval), {n['throughput_gain']:.1f}x the throughput."
        )
    return (
        f"{_name(r)}: batch {r.batch_size} costs {n['latency_ratio']:.2f}x batch {b0} (95% interval {ratio}, "
        f"outside the noise; {latencies}), {gain} the throughput "
        + (f"for {n['latency_ratio'] - 1:.0%} more latency." if n["latency_ratio"] > 1 else "for free.")
    )


def _edge(r: Recommendation, undecided: bool = True) -> str:
    """'; batch 8 (1.06-1.14x) is within noise of the 10% line: undecided' for the undecided batch sizes
    (without ': undecided' where the sentence goes on)."""
    f = r.facts
    edge = f.get("edge") or []
    if not edge:
        return ""
    apart = set(f.get("not_compared") or [])
    parts = [
        f"{b}" + (f" ({_interval(lo, hi)})" if lo is not None else "")
        for b, (lo, hi) in zip(edge, f.get("edge_ratios") or [(None, None)] * len(edge), strict=False)
        if b not in apart
    ]
    noun = "batch" if len(parts) == 1 else "batches"
    verb = "is" if len(parts) == 1 else "are"
    text = (
        f"; {noun} {', '.join(parts)} {verb} within noise of the {_pct(f['tolerance'])} line" if parts else ""
    )
    if apart:
        names = ", ".join(str(b) for b in edge if b in apart)
        text += (
            f"; {'batch' if len(apart) == 1 else 'batches'} {names} not compared (a latency of another source "
            f"than batch {f['smallest_batch_size']}'s)"
        )
    return text + (": undecided" if undecided else "")


def _withheld_plateau(r: Recommendation) -> str:
    """No transition, and the plateau claim withheld: what was measured within the tolerance (the plateau),
    what only within noise of its line (the edge), never 'within 10% up to' a batch size that was not."""
    n, f = r.numbers, r.facts
    b0, tol, last, largest = (
        f["smallest_batch_size"],
        _pct(f["tolerance"]),
        f["last_plateau"],
        n["largest_batch_size"],
    )
    if last == largest:
        measured = f"latency measured within {tol} of batch {b0} up to batch {largest}"
    else:
        within = f"latency measured within {tol} of batch {b0} up to batch {last}" if last != b0 else ""
        edge = _edge(r, undecided=False)
        measured = (within + edge if within else edge.removeprefix("; ")) or f"batch {largest} measured"
        measured += f" (measured up to batch {largest})"
    return f"{_name(r)}: {measured}, but no plateau is claimed: {f['withheld']}."


def _transition(r: Recommendation) -> str:
    n, f = r.numbers, r.facts
    b0, tol = f["smallest_batch_size"], _pct(f["tolerance"])
    if r.batch_size is None:
        if f.get("withheld"):
            return _withheld_plateau(r)
        if f.get("edge"):
            return (
                f"{_name(r)}: latency stays within {tol} of batch {b0} up to batch {f['last_plateau']}"
                + _edge(r)
                + f" (measured up to batch {n['largest_batch_size']})."
            )
        return (
            f"{_name(r)}: latency stays within {tol} of batch {b0} over the whole measured range "
            f"(up to batch {n['largest_batch_size']})."
        )
    ratio = _interval(n.get("latency_ratio_low"), n.get("latency_ratio_high"))
    # (no interval: medians of too few iterations; the headroom and runtime wordings say so too)
    noise = "" if ratio else "; noise unknown: too few iterations for an interval"
    where = f"{n['latency_ratio']:.2f}x" + (f", 95% interval {ratio}" if ratio else noise)
    after = n.get("after_batch_size")
    if after is not None and r.batch_size > 2 * after:
        # batch sizes between were not measured (skipped, failed): the transition is not known more closely
        gap = (
            f"; no batch size between {after} and {r.batch_size} was measured, so the plateau ends somewhere "
            f"after batch {after}, at batch {r.batch_size} at the latest"
        )
    else:
        gap = ""
    if f["last_plateau"] == b0 and not f.get("edge") and gap:
        text = (
            f"{_name(r)}: batch {r.batch_size} costs {n['latency_ratio']:.2f}x batch {b0} ("
            + (f"95% interval {ratio}; " if ratio else "")
            + f"tolerance {tol}{noise})"
        )
    elif f["last_plateau"] == b0 and not f.get("edge"):
        text = (
            f"{_name(r)}: no framework-bound plateau: batch {r.batch_size} already costs "
            f"{n['latency_ratio']:.2f}x batch {b0} ("
            + (f"95% interval {ratio}; " if ratio else "")
            + f"tolerance {tol}{noise})"
        )
    else:
        text = (
            f"{_name(r)}: latency stays within {tol} of batch {b0} up to batch {f['last_plateau']}"
            + _edge(r)
            + f"; it leaves the plateau at batch {r.batch_size} ({where})"
        )
    util = n["gpu_utilization"]
    return (
        text
        + (f"; {device_word(r.device)} utilization there is {_pct(util)}" if util is not None else "")
        + gap
        + "."
    )


def _launch_calls(r: Recommendation) -> str:
    n = r.numbers
    launch_ms, traced = n["launch_api_ms"], n["traced_latency_ms"]
    return (
        f"{_where(r)}: the launch-call time alone is {_ms(launch_ms)} per iteration "
        f"({n['launches']:.0f} launches, {_pct(launch_ms / traced)} of the traced {_ms(traced)}); "
        + (
            f"CUDA graphs would remove launches and dispatch between kernels: projected latency "
            f"{_ms(n['projected_latency_ms'])} (busy + one replay gap per kernel + the replay's head and tail)."
            if n.get("projection") == "attribution"
            else (
                "the run already replays CUDA graphs; capturing the launches left outside them would remove "
                f"that time (projected latency {_ms(n['projected_latency_ms'])} at best)."
                if n.get("replays_graphs")
                else f"a CUDA graph would remove it (projected latency {_ms(n['projected_latency_ms'])} at best)."
            )
        )
        + (f" Caution: {n['caveat']}." if n.get("caveat") else "")
    )


def _compute_bound(r: Recommendation) -> str:
    busy = "GPU is" if r.device == "gpu" else "operators are"
    before = r.numbers.get("reached_before") or []
    also = (
        f" ({'batch' if len(before) == 1 else 'batches'} {', '.join(map(str, before))} reached it too, but a "
        "larger batch size fell back below it)"
        if before
        else ""
    )
    return (
        f"{_name(r)}: from batch {r.batch_size} the {busy} busy {_pct(r.numbers['gpu_utilization'])} of the "
        f"iteration (compute-bound at the {_pct(r.facts['bound_threshold'])} threshold){also}: from there "
        "device work, not framework overhead, is the larger share of latency."
    )


def _profiler_perturbation(r: Recommendation) -> str:
    n = r.numbers
    ratio = _interval(n.get("profiler_ratio_low"), n.get("profiler_ratio_high"))
    return (
        f"{_name(r)}: tracing inflated latency up to {n['profiler_ratio']:.2f}x ("
        + (f"95% interval {ratio}; " if ratio else "")
        + f"batch {r.batch_size}: {_ms(r.facts['traced_latency_ms'])} traced vs "
        f"{_ms(r.facts['untraced_latency_ms'])} untraced, medians); the busy/overhead breakdown is from the "
        "traced runs, the sweep uses the untraced latency."
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
