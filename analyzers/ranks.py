"""Across traces (ranks, GPUs, files): one row each, the spread, clock alignment, stragglers and skew.

Input: the compact results of :mod:`tracekit.fleet.compact`, one per trace. All times in ms unless named.

- **rows**: per trace, the mean of latency, GPU busy, framework overhead and each idle cause over its
  iterations, the median latency, and the mean communication / exposed communication per iteration (over a
  trace's GPUs their union, as its GPU busy is: ``comm_note`` says so where a trace has several GPUs).
- **GPU rows**: a trace whose ops ran on two or more GPUs (one process driving several, or one Nsight
  Systems capture of several ranks) keeps its row (its GPUs together: GPU busy is their union, as the
  trace's own analysis counts it) and adds one row per GPU under it (``gpu_rows``, labelled ``<trace> GPU k``:
  that GPU's own work and iterations, the trace's per-device analysis, with the same means). Every statistic
  below compares whole traces: a GPU row is not another rank (the GPUs of one process share its steps; those
  of one capture share its clock but not a job's rank), so no GPU row is a slowest, a reference, a straggler
  or a skewed trace; ``gpu_note`` says so in the document. Within a trace, its GPUs' mean busy time per
  iteration is compared (``gpu_busy_spread``: the busiest and least busy GPU, :func:`gpu_busy_spread`), and,
  where its GPUs ran steps of their own (one Nsight Systems capture of several ranks), their straggler, start
  skew and slowest by step on the capture's one clock, without alignment (``gpu_within``:
  :func:`within_capture`; the collectives matched in launch order must end together on that clock).
- **spread**: the slowest and fastest trace by median latency, and their ratio; where the traces number
  other steps (a capture that began at another step), by the median over the steps numbered alike in every
  trace (a slow first step only one rank captured is no difference between ranks), withheld when none is
  (:func:`spread_of`).
- **labels**: ``rank N`` when the trace says its rank (Kineto's ``distributedInfo``) and no other trace claims
  the same rank, else the file name (the path when names repeat).
- **clocks**: traces recorded on different hosts (or by different processes' clocks) cannot be compared by
  timestamp. Collectives (NCCL/RCCL all-reduce and the like) *end together* on every rank, so the offset of a
  trace's clock against the reference (the lowest rank, else the first trace) is the median, over the
  collectives both have (matched in launch order), of end(trace) - end(reference). ``residual_us`` is the
  largest disagreement left after removing it: small means the matching held (one collective matched: 0 by
  construction, so ``why`` says that one end alone gives each offset). Without collectives on every
  trace the clocks are ``not aligned`` and every timestamp comparison below is withheld (said so); so are
  they when two traces claim the same rank (separate runs, not the ranks of one job: collectives of
  unrelated runs do not end together), when a matched pair names different operations
  (:func:`kinds_differ`), when some trace runs collectives on two or more streams of one device (several
  communicators, process groups or point-to-point pairs, whose k-th collectives are not the same operation on
  every rank: :func:`several_communicators`), and when the residual is over half the median time between the
  reference's collectives (:func:`median_spacing`: a collective could then as well be matched to its
  neighbour). When
  the traces hold different numbers of collectives (a capture that began or ended at another one), the
  first ``n`` of each are matched, or the last ``n``: the one that fits is taken; when both fit (periodic
  steps), the one under which the traces' steps line up (:func:`steps_apart`), else the clocks are not
  aligned. Matched from the last, each trace's last steps are the ones lined up, skewed and compared for the
  slowest (a trace holding fewer began later); matched from the first, its first: without step numbers a
  capture that began later and one that ended earlier read the same, and are then not aligned.
  ``matched_from`` says which, and the straggler compares the same collectives. A compact result keeps the
  first 4,096 collectives of its trace (``collectives_total`` says how many it holds): where some trace's
  lists were cut, they are matched by position only where every trace holds as many in all, from the first
  only where every list begins at the same numbered step, else not at all (:func:`cut_lists`).
- **straggler** (needs aligned clocks): at each matched collective, the trace that *arrives* (starts the
  collective) last is the one the others wait for; the wait it causes is its arrival minus the median arrival
  of the others. The straggler is the trace that arrives last most often; reported with how often and the
  median and total wait it caused. A collective counts for a trace only when it arrives last by more than
  the alignment's ``residual_us`` (closer than the clocks are aligned, the order is not known), and for none
  when two arrive last together; so do the steps of ``ends_last`` below. Two traces that arrive last equally
  often are both named (``tied``), neither as the straggler; ``ends_last`` and ``slowest by step`` name
  nobody then.
- **skew** (needs aligned clocks): per step (iteration position, common to every trace), the spread of the
  aligned iteration starts; median and largest. Withheld, said why, when a trace's step does not overlap the
  reference's step of the same position once aligned (:func:`steps_apart`): then positions are not steps.
- Without aligned clocks, **slowest by step** compares durations only (which trace has the longest iteration
  at each step, how often; a latency not known, None or NaN, is no trace's longest).
- **captures of several ranks**: a trace whose GPUs ran steps of their own (one Nsight Systems capture of a
  process per GPU: :func:`within_capture`) holds its ranks' steps and collectives in one list, the k-th no
  one rank's: no trace is then aligned, skewed or compared by step with another (:func:`several_ranks_within`);
  its GPUs are compared within it.
- **steps by number**: when every trace numbers its steps (``ProfilerStep#N``, the compact result's ``step``)
  and the numbers differ (captures that began at other steps), steps and collectives are compared on the
  step numbers every trace holds (:func:`by_step_number`); none in common: nothing is compared across traces.
  A trace whose numbers are off by whole steps (its profiler counted from another start: its #6 is the others'
  #5) is renumbered where one shift alone makes the collectives end together, clearly better than any other
  and than its own numbers, with the steps lined up (a warning says so); where a shift fits better but not
  clearly, the note says the numbers may differ (:func:`renumbered`). Periodic steps keep their numbers.
- **point-to-point** kernels (send/receive, :data:`POINT_TO_POINT_KINDS` by the kernel's name: pipeline
  stages; NCCL runs all-to-all so too) pair two ranks, so the k-th of one rank is not the k-th of another:
  they are taken out of the collectives matched for the clocks and the straggler (:func:`collectives_only`;
  their time is still communication), and a trace of point-to-point kernels only has none to align on. A
  kernel's name is NCCL's hint of the first operation it runs, not a promise (NVIDIA/nccl#739, #714: NCCL
  2.13 named every kernel ``SendRecv``; a trace of those is left with nothing to align on, not misaligned).
- **process groups by kernel**: where every trace's kernels say their process group (PyTorch's ``Process Group
  Name`` on each NCCL kernel, the compact result's ``collective_groups``), the collectives are matched within
  the one group every trace's collectives are in (the one with most collectives; member ranks, where said,
  must hold every trace's rank): the k-th collective of a group is the same operation on every member, so
  groups serialized on one stream, or on streams of their own, no longer hide from or stop the matching
  (:func:`by_group`); no such group: not aligned. A kernel's ``Collective name`` also says point-to-point
  (``send``/``recv``, a rooted gather/scatter) or a collective (``all_to_all`` under a ``SendRecv`` kernel
  name, NCCL 2.13's ``SendRecv`` names) where it names one (:func:`_pairs`), and must agree across traces as
  the kernel's name must (without underscores: where a kernel carries no ``Collective name``, the range
  ProcessGroupNCCL opened around its launch, ``nccl:all_reduce``, names it:
  :func:`tracekit.fleet.compact.annotated_ops`).
- **process groups**: a trace that says it is in a group of two or more ranks without another trace's rank
  (``process_groups``, where the compact result carries it) runs collectives that trace does not, on one
  stream or several: not aligned (:func:`groups_apart`), unless matched by group as above. Groups serialized on one stream are otherwise not
  told apart (kernel names and times agree with a clock off by a wait); the residual then says how far the
  offsets may be wrong, and the straggler and the skew are withheld within it.
- **captures at other times**: where two or more traces' timestamps are wall-clock time
  (:func:`wall_clock_base`), steps compared (by number or position) that start further apart than a step
  plus a second (:data:`WALL_CLOCK_SLACK_NS`) at every step did not happen together: two captures that both
  hold ``ProfilerStep#5``-``#10`` at other times. The clocks are not aligned and the straggler, skew and
  slowest by step are withheld (:func:`captured_apart`); traces whose clocks start at their own origin
  cannot be checked so.
- **one job**: traces that say different world sizes, or a rank outside the one they say, are not aligned
  (:func:`job_apart`); ranks of the world size missing from the traces are warned (:func:`world_warnings`);
  a recording given twice (a path again, a link, a copy) is summarized once (:func:`without_repeats`).
- **skew within the residual**: a largest step-start skew no more than the alignment's residual is given with
  ``why`` (not told from none: the aligned starts are known to the residual only).
- **different configurations**: traces whose runs state different runtimes, batch sizes, sequence lengths
  or precisions (run.json, sidecars: a batch sweep analyzed together) are no ranks of one job: slowest by
  step and start skew are withheld with the reason (:func:`configurations_differ`); the spread stays.
- **whole-capture windows**: a trace without iteration ranges is one window (``window``: first launch to
  last op end), whose latency is how long the capture ran: traces all so (and the GPUs of one such capture)
  have no spread, start skew or slowest by step (:func:`whole_windows`); the straggler, by collectives, stays.
  Windows cut at idle gaps (``--split-idle``) are compared as steps, unless there is one (no gap that long:
  the whole capture again, :func:`uncut`).
- **warnings**: besides the above, each trace's own warnings (once per text, with the traces it applies to),
  and traces whose iterations are cut by different ranges (their steps may be different work: the spread,
  the skew and the slowest by step are then withheld, with ``why``).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from statistics import mean, median
from typing import Any

import numpy as np

#: How many traces a warning names before "and N more".
NAMED_TRACES = 5
#: Operations a kernel name says (``collective_kinds``: :data:`tracekit.fleet.compact.COLLECTIVE_KIND`, lower
#: case) that are point-to-point, not collectives: a send/receive pairs two ranks (pipeline stages), so the
#: k-th of one rank is not the k-th of another. NCCL also runs all-to-all as grouped send/receives under this
#: name: it is left out with them (not told apart by the name).
POINT_TO_POINT_KINDS = frozenset({"sendrecv", "send", "recv"})
#: Operations PyTorch names on a kernel (its ``Collective name`` arg, the compact result's ``collective_ops``)
#: that pair ranks rather than join every rank of the group: send and receive, and a gather or scatter to or
#: from one root (NCCL runs them as send/receives, and a rank that is not the root ends when its own transfer
#: does). Said on the kernel, they are known whatever its name says.
POINT_TO_POINT_OPS = frozenset({"send", "recv", "isend", "irecv", "gather", "scatter", "_gather", "_scatter"})
#: Operations PyTorch names that every rank of the group joins, each rank's kernel ending only once all have
#: arrived (``allreduce``, ``_allgather_base``, ``reduce_scatter_tensor_coalesced``, ``all_to_all``,
#: ``barrier``...): collectives, whatever the kernel's name says (NCCL runs all-to-all as send/receives, under a
#: ``SendRecv`` kernel name). Other names (``coalesced``, a newer one) leave the kernel's name to decide.
COLLECTIVE_OPS = r"^_?(all_?reduce|all_?gather|reduce_?scatter|broadcast|all_?to_?all|barrier)"
#: Timestamps at or after this many ns are read as Unix-epoch wall-clock time (2001-09-09): old Kineto traces
#: record the system clock. Smaller ones count from the trace's own origin (nsys: its session's start; newer
#: Kineto: ``baseTimeNanoseconds``, which the reader does not add), which says nothing of the wall clock.
WALL_CLOCK_FROM_NS = 10**18
#: How far apart the wall clocks of one job's hosts may read (NTP keeps them within milliseconds; a second
#: allows for a poorly synchronized host): only steps further apart than this and a step are known apart.
WALL_CLOCK_SLACK_NS = 1_000_000_000
#: Per-iteration fields averaged per trace (ms or a fraction).
MEAN_FIELDS = (
    "latency_ms",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "gpu_utilization",
    "dispatch_ms",
    "launch_ms",
    "sync_ms",
    "other_api_ms",
    "in_flight_ms",
    "comm_ms",
    "exposed_comm_ms",
)


def label(result: dict[str, Any]) -> str:
    """The trace's name in the summary: the one :func:`summarize` gave it (:func:`with_labels`), else
    ``rank 3`` when the trace says its rank, else its file name."""
    if result.get("label"):
        return str(result["label"])
    return f"rank {result['rank']}" if result.get("rank") is not None else result["name"]


def repeated_ranks(results: list[dict[str, Any]]) -> list[int]:
    """Ranks that more than one trace claims: such traces are not the ranks of one job (separate runs, each
    its own rank 0, as serving engines and single-GPU jobs record)."""
    known = Counter(r["rank"] for r in results if r.get("rank") is not None)
    return sorted(rank for rank, n in known.items() if n > 1)


def with_labels(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``results`` with a ``label`` each, unique: ``rank N`` when no other trace claims rank N,
    else the file name, else (file names repeat too) the path."""
    repeated = set(repeated_ranks(results))
    names = Counter(r["name"] for r in results)
    out = []
    for r in results:
        if r.get("rank") is not None and r["rank"] not in repeated:
            text = f"rank {r['rank']}"
        elif names[r["name"]] == 1:
            text = r["name"]
        else:
            text = str(r.get("path") or r["name"])
        out.append({**r, "label": text})
    return out


def _values(result: dict[str, Any], field: str) -> list[float]:
    """The iterations' values of ``field`` (a column of the compact result), nulls (None, NaN) left out."""
    column = result["iterations"].get(field)
    if column is None:
        return []
    return [float(v) for v in column if v is not None and not math.isnan(v)]


def _known(value: Any) -> bool:
    """Whether ``value`` is a number (not None, not NaN)."""
    return value is not None and not math.isnan(float(value))


def _mean(values: list[float]) -> float | None:
    return mean(values) if values else None


def steps_of(result: dict[str, Any]) -> int:
    """How many iterations the compact result holds."""
    return len(result["iterations"]["index"])


def row_figures(iterations: dict[str, Any]) -> dict[str, Any]:
    """A row's figures from iterations by column (the compact result's ``iterations``, or one GPU's:
    :func:`tracekit.fleet.compact.per_gpu`): ``iterations``, ``median_latency_ms`` and the mean of each of
    :data:`MEAN_FIELDS` (``mean_latency_ms``, ...; None without values)."""
    latencies = _values({"iterations": iterations}, "latency_ms")
    out: dict[str, Any] = {
        "iterations": len(iterations["index"]),
        "median_latency_ms": median(latencies) if latencies else None,
    }
    out.update({f"mean_{k}": _mean(_values({"iterations": iterations}, k)) for k in MEAN_FIELDS})
    return out


def trace_row(result: dict[str, Any]) -> dict[str, Any]:
    """One row of the cross-trace table."""
    figures = row_figures(result["iterations"])
    row: dict[str, Any] = {
        "trace": label(result),
        "file": result["name"],
        "rank": result.get("rank"),
        "gpu": result.get("gpu"),
        "device": result.get("device"),
        "range": result.get("range"),
        "iterations": figures.pop("iterations"),
        "median_latency_ms": figures.pop("median_latency_ms"),
    }
    row.update(figures)
    row["verdict"] = result.get("verdict")
    # (the why is among the trace's warnings, prefixed with its name)
    row["verdict_uncertain"] = bool(result.get("verdict_uncertain"))
    row["synthetic"] = result.get("synthetic", False)
    return row


def gpu_label(result: dict[str, Any], gpu: dict[str, Any]) -> str:
    """The name of one GPU's row of a multi-GPU trace: the trace's label, then ``GPU k`` (the device id the
    trace gives it: CUDA's device index in Nsight Systems and Kineto)."""
    device = gpu.get("device")
    return f"{label(result)} GPU {device}" if device is not None else f"{label(result)} ops without a device"


def gpu_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per GPU of each trace whose ops ran on two or more GPUs (the compact result's ``per_gpu``), in
    the traces' order: the keys of :func:`trace_row` (``trace`` is :func:`gpu_label`) plus ``of_trace`` (the
    trace's row) and ``device_id``; a GPU with no work in an iteration has ``error`` and no figures. These rows
    are not compared across traces (the module docstring's *GPU rows*)."""
    rows = []
    for r in results:
        for g in r.get("per_gpu") or ():
            figures = {k: g.get(k) for k in ("iterations", "median_latency_ms")}
            figures.update({f"mean_{k}": g.get(f"mean_{k}") for k in MEAN_FIELDS})
            row: dict[str, Any] = {
                "trace": gpu_label(r, g),
                "file": r["name"],
                "rank": r.get("rank"),
                "gpu": g.get("gpu") or r.get("gpu"),
                "device": r.get("device"),
                "range": g.get("range") or r.get("range"),
                **figures,
                "verdict": g.get("verdict"),
                "verdict_uncertain": bool(g.get("verdict_uncertain")),
                "synthetic": r.get("synthetic", False),
                "of_trace": label(r),
                "device_id": g.get("device"),
            }
            if g.get("error"):
                row["error"] = g["error"]
            rows.append(row)
    return rows


def gpu_busy_spread(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per trace of several GPUs (its :func:`gpu_rows`), the one comparison made between its GPUs: mean GPU
    busy per iteration, the busiest GPU against the least busy (``ratio``: busiest / least busy; None when
    the least busy is 0). The GPUs of one trace share its clock and, driven by one process, its steps, so
    their busy times per step are the same steps' (load balance: pipeline stages, a GPU waiting for
    another); their latencies are not compared (one process: the same steps). Not compared, with ``why``,
    when a GPU has no figures or the GPUs hold different numbers of iterations (other steps)."""
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_trace.setdefault(row["of_trace"], []).append(row)
    out = []
    for trace, gpus in by_trace.items():
        missing = [g["trace"] for g in gpus if g.get("mean_gpu_busy_ms") is None]
        counts = sorted({g.get("iterations") for g in gpus if g.get("iterations") is not None})
        if missing or len(gpus) < 2:
            out.append({"trace": trace, "why": f"{_named(missing)}: no figures"})
            continue
        if len(counts) > 1:
            out.append(
                {
                    "trace": trace,
                    "why": f"its GPUs hold {counts[0]} to {counts[-1]} iterations: their steps are not the same",
                }
            )
            continue
        out.append({"trace": trace, **extremes(gpus, "mean_gpu_busy_ms", "busiest", "least_busy")})
    return out


def extremes(rows: list[dict[str, Any]], field: str, high: str, low: str) -> dict[str, Any]:
    """The row of the largest ``field`` against the smallest of the others (another row also where every
    value ties, then at 1.000x): ``high``/``low`` name their ``trace``, ``<high>_<field>``/``<low>_<field>``
    their values, ``ratio`` the first over the second (None when the second is 0)."""
    top = max(rows, key=lambda r: r[field])
    bottom = min((r for r in rows if r is not top), key=lambda r: r[field])
    return {
        high: top["trace"],
        f"{high}_{field}": top[field],
        low: bottom["trace"],
        f"{low}_{field}": bottom[field],
        "ratio": top[field] / bottom[field] if bottom[field] else None,
    }


#: Within one capture (one clock), the k-th collectives of its GPUs, matched in launch order, are the same
#: operation only when they end together: their ends may differ by no more than this (ns), or twice the
#: matching's residual when larger (an all-reduce ends within microseconds on every rank).
SAME_CLOCK_TOLERANCE_NS = 20_000


def within_capture(result: dict[str, Any]) -> dict[str, Any] | None:
    """Across the GPUs of one trace (one capture, so one clock: no alignment needed), where it ran on two or
    more GPUs with figures and their iterations are not all the same windows (the GPUs of one process share
    its steps: nothing to compare); else None. ``trace``; ``gpus`` (their labels); ``skew`` and
    ``slowest_by_step`` as between traces (:func:`skew`, :func:`slowest_by_step`: offsets 0), steps matched by
    number or position (:func:`by_step_number`); ``straggler`` (:func:`stragglers`) when every GPU has
    collectives and those matched in launch order end together on the one clock (:func:`clock_offsets` finds
    offsets within :data:`SAME_CLOCK_TOLERANCE_NS`, or twice its residual, of 0), else ``straggler`` None
    with ``why``."""
    lanes = []
    for g in result.get("per_gpu") or ():
        lane = g.get("lane")
        if g.get("error") or not lane or not len(lane.get("iterations", {}).get("start_ns", ())):
            continue
        lanes.append(
            {
                "name": gpu_label(result, g),
                "label": f"GPU {g.get('device')}",
                "rank": None,
                "collective_starts_ns": np.zeros(0, dtype=np.int64),
                "collective_ends_ns": np.zeros(0, dtype=np.int64),
                "collective_kinds": [],
                **lane,
            }
        )
    if len(lanes) < 2:
        return None
    starts = [tuple(np.asarray(x["iterations"]["start_ns"]).tolist()) for x in lanes]
    ends = [tuple(np.asarray(x["iterations"]["end_ns"]).tolist()) for x in lanes]
    if len(set(starts)) == 1 and len(set(ends)) == 1:
        return None
    out: dict[str, Any] = {"trace": label(result), "gpus": [x["label"] for x in lanes]}
    steps_seen, numbered, shared = by_step_number(lanes)
    if not shared:
        out.update(why=numbered, straggler=None)
        return out
    if numbered:
        out["steps_note"] = numbered
    zero = [0] * len(steps_seen)
    # (one clock: the GPUs' steps are compared where they line up, the first of each, else the last of each,
    # a process that began a step later; neither: their durations are not compared either)
    steps = _common_steps(steps_seen)
    last = (
        steps_apart(steps_seen, zero, steps) is not None
        and steps_apart(steps_seen, zero, steps, True) is None
    )
    out["skew"] = skew(steps_seen, zero, 0, last)
    apart = out["skew"].get("why") if out["skew"].get("median_start_skew_ms") is None else None
    out["slowest_by_step"] = {"why": apart} if apart else slowest_by_step(steps_seen, last)
    # (each GPU's one window over the capture is no step: its span is the GPU's first launch to last op;
    # so is one window --split-idle left uncut on every GPU)
    idle = bool(IDLE_WINDOWS.match(str(result.get("range") or "")))
    if whole_windows([result]) or (idle and all(steps_of(x) == 1 for x in lanes)):
        how = "no idle gap long enough to cut it" if idle else "no iteration ranges"
        whose = (
            "each GPU's iteration is" if all(steps_of(x) == 1 for x in lanes) else "the trace's iteration is"
        )
        whole = (
            f"{label(result)}: {whose} one window over the capture ({how}), "
            "its first launch to its last op: no step; cut steps with --split-idle MS or --range NAME"
        )
        out.update(skew={"steps": 0, "why": whole}, slowest_by_step={"why": whole})
    out.update(straggler=None)
    if not all(len(x["collective_ends_ns"]) for x in steps_seen):
        out["straggler_why"] = "not every GPU has collectives"
        return out
    match = clock_offsets(steps_seen)
    if not match["aligned"]:
        out["straggler_why"] = match["why"]
        return out
    residual = round(match["residual_us"] * 1e3)
    bound = max(SAME_CLOCK_TOLERANCE_NS, 2 * residual)
    off = max(abs(o) for o in match["offsets_ns"])
    if off > bound:
        out["straggler_why"] = (
            f"the GPUs' collectives, matched in launch order, do not end together on the capture's one clock "
            f"({off / 1e6:.3f} ms apart): they are not the same operations (other process groups?)"
        )
        return out
    found = stragglers(steps_seen, zero, residual, match.get("matched_from") == "last")
    out["straggler"] = found.pop("straggler")
    out.update(found)
    return out


def several_ranks_within(results: list[dict[str, Any]]) -> str | None:
    """Why the traces' steps and collectives are not compared across traces: some trace holds GPUs that ran
    steps of their own (:func:`within_capture`: one Nsight Systems capture of several ranks, one process per
    GPU). Its iterations are its ranks' steps together and its collectives, in launch order, each of its ranks'
    in turn: matched against another trace's, the k-th is no one rank's (two nodes' captures of 2 ranks each
    were "aligned on 8 collective ends" for 4 all-reduces, and the wait of a straggler measured against one
    rank, not the job's others). None when no trace does (its GPUs share one process' steps, or it ran on one
    GPU)."""
    several = [label(r) for r in results if r.get("per_gpu") and within_capture(r) is not None]
    if not several:
        return None
    return (
        f"{_named(several)}: {'each holds' if len(several) > 1 else 'it holds'} GPUs that ran steps of their own "
        "(one capture of several ranks): its collectives and iterations, in one list, are no one rank's; its "
        "GPUs are compared within it only"
    )


def gpu_warnings(results: list[dict[str, Any]]) -> list[str]:
    """Why a GPU row's verdict may be wrong, or why it has no figures, prefixed with its name (once per
    text, as :func:`trace_warnings`)."""
    by_text: dict[str, list[str]] = {}
    for r in results:
        for g in r.get("per_gpu") or ():
            text = g.get("error") or g.get("verdict_uncertain")
            if text:
                by_text.setdefault(str(text), []).append(gpu_label(r, g))
    return [f"{_named(labels)}: {text}" for text, labels in by_text.items()]


def gpu_note(rows: list[dict[str, Any]]) -> str | None:
    """What the GPU rows are, and that the statistics do not compare them (None without GPU rows)."""
    if not rows:
        return None
    traces = list(dict.fromkeys(row["of_trace"] for row in rows))
    return (
        f"{_named(traces)}: {'each trace' if len(traces) > 1 else 'the trace'} ran on several GPUs, each "
        "shown as a row of its own (<trace> GPU k: that GPU's own work and iterations, as `tracekit analyze` "
        "on the trace shows it) under the trace's row, which counts its GPUs together (GPU busy: their union); "
        "the spread, clocks, straggler, skew and slowest by step compare whole traces, not GPUs; within a "
        "trace its GPUs' busy time is compared, and where its GPUs ran steps of their own (one capture of "
        "several processes: one clock) their straggler, start skew and slowest by step"
    )


def comm_note(results: list[dict[str, Any]]) -> str | None:
    """How the row of a trace of several GPUs counts its communication (:func:`tracekit.analyzers.
    communication.comm_per_iteration`), for the traces whose GPUs communicate; None when none does."""
    which = [
        label(r) for r in results if r.get("per_gpu") and any(_values(r, "comm_ms")) and len(r["per_gpu"]) > 1
    ]
    if not which:
        return None
    return (
        f"{_named(which)}: the trace's mean comm is the union over its GPUs (the time some GPU communicates, "
        "as its GPU busy is their union), its exposed comm the union of each GPU's communication that none of "
        "that GPU's own compute overlaps; each GPU's own is in its row"
    )


def _named(labels: list[str], sep: str = ", ") -> str:
    """``labels`` joined by ``sep``, the first :data:`NAMED_TRACES` of them, then how many more."""
    more = len(labels) - NAMED_TRACES
    return sep.join(labels[:NAMED_TRACES]) + (f" and {more} more" if more > 0 else "")


def trace_warnings(results: list[dict[str, Any]]) -> list[str]:
    """Each trace's own warnings (its analysis', as ``tracekit analyze`` on it alone prints them), once per
    text, prefixed with the traces it applies to: what qualifies a trace's numbers qualifies its row."""
    by_text: dict[str, list[str]] = {}
    for r in results:
        for text in r.get("warnings") or ():
            by_text.setdefault(str(text), []).append(label(r))
    return [f"{_named(labels)}: {text}" for text, labels in by_text.items()]


def configurations_differ(results: list[dict[str, Any]]) -> str | None:
    """Why the traces' steps are not compared (slowest by step, start skew), when their runs state different
    configurations (runtime, batch size, sequence length or precision, from run.json, sidecars or the trace's
    own metadata: ``stated_config``): a batch sweep analyzed together is no set of ranks, and step k of batch 1
    is no step of batch 8's job (the spread, of whole traces, stays); None when no two traces state different
    values of one key."""
    differ: list[str] = []
    for key, word in (("runtime", "runtime"), ("batch_size", "batch"), ("seq_len", "seq"), ("precision", "")):
        values = {str(r["stated_config"][key]) for r in results if key in (r.get("stated_config") or {})}
        if len(values) > 1:
            differ.append(f"{word} {', '.join(sorted(values, key=_natural))}".strip())
    if not differ:
        return None
    return (
        f"the traces are runs of different configurations ({'; '.join(differ)}), not ranks of one job: their "
        "steps are not compared step by step (tracekit report or table compares configurations)"
    )


def _natural(text: str) -> tuple[int, str]:
    """Numbers in number order, then words."""
    return (int(text), "") if text.isdigit() else (1 << 62, text)


def range_warning(results: list[dict[str, Any]]) -> list[str]:
    """A warning when the traces cut their iterations by different ranges (``ProfilerStep#*`` in one, an
    ``iteration`` annotation in another): their steps are not the same work, so steps are compared as
    positions only."""
    by_range: dict[str, list[str]] = {}
    for r in results:
        by_range.setdefault(str(r.get("range")), []).append(label(r))
    if len(by_range) < 2:
        return []
    parts = "; ".join(f"'{name}' in {_named(labels)}" for name, labels in by_range.items())
    return [
        f"iterations are cut by different ranges ({parts}): a step of one trace may be other work than a step of another"
    ]


#: The range name of one window over a whole trace (:data:`tracekit.analyzers.ranges.WINDOW_NAME`: a trace
#: without iteration ranges, first launch to last op end); windows cut at idle gaps are named otherwise.
WHOLE_WINDOW = "window"


#: The range name of windows cut at idle gaps (``--split-idle MS``: ``idle>MSms``).
IDLE_WINDOWS = re.compile(r"^idle>[0-9.e+-]+ms$")


def uncut(result: dict[str, Any]) -> bool:
    """Whether the trace's one iteration is a window over its whole capture: no iteration ranges
    (:data:`WHOLE_WINDOW`), or windows cut at idle gaps (:data:`IDLE_WINDOWS`) of which there is one (no gap
    that long: its first launch to its last op, as without ranges)."""
    cut = str(result.get("range") or "")
    return cut == WHOLE_WINDOW or (bool(IDLE_WINDOWS.match(cut)) and steps_of(result) == 1)


def whole_windows(results: list[dict[str, Any]]) -> str | None:
    """Why the traces' iterations are not compared as steps: some trace's one iteration is a window over its
    whole capture (:func:`uncut`: every trace's without ranges, ranges being alike where this is asked; one
    left uncut by --split-idle beside others' windows), whose latency is how long the capture ran (a capture
    that began earlier or ran longer is no slower rank, nor is it a step of the others'); None otherwise."""
    whole = [r for r in results if uncut(r)]
    if not whole:
        return None
    names = _named([label(r) for r in whole])
    each = "each is" if len(whole) > 1 else "it is"
    how = (
        "no iteration ranges"
        if all(r.get("range") == WHOLE_WINDOW for r in whole)
        else "no iteration ranges, or no idle gap long enough to cut it"
    )
    return (
        f"{names}: {each} one window over its whole capture ({how}): its latency is how long the capture ran, "
        "not a step; cut steps with --split-idle MS or --range NAME"
    )


def _order(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranks first in rank order, then the rest by file name."""
    return sorted(results, key=lambda r: (r.get("rank") is None, r.get("rank") or 0, r["name"]))


def collective_ns(result: dict[str, Any], key: str, n: int | None = None, last: bool = False) -> list[int]:
    """The first ``n`` (``last``: the last ``n``; all: None) collective starts or ends (``key``) of a compact
    result, as ints (ns)."""
    values = result.get(key)
    if values is None:
        return []
    picked = values if n is None else (values[len(values) - n :] if last else values[:n])
    return [int(v) for v in picked]


def kinds_differ(results: list[dict[str, Any]], n: int, last: bool = False) -> str | None:
    """Why the first ``n`` (``last``: the last ``n``) collectives of the traces, matched in launch order, are
    not the same ones: the first position where a trace's collective names another operation than the
    reference's (``collective_kinds``; "" or none known agrees with anything); None when they agree."""

    def kinds_of(result: dict[str, Any], key: str) -> np.ndarray:
        kinds = list(result.get(key) or [""] * n)
        if len(kinds) < n:  # (a list not kept for every collective says nothing)
            kinds = [""] * n
        return np.asarray(kinds[len(kinds) - n :] if last else kinds[:n], dtype=str)

    # the operation the kernel's name says, then the one PyTorch wrote on it (``Collective name``, or its
    # range's name: ``allreduce`` / ``nccl:all_reduce``, compared without underscores)
    for key in ("collective_kinds", "collective_ops"):
        ref = kinds_of(results[0], key)
        for r in results[1:]:
            kinds = kinds_of(r, key)
            same = np.char.replace(ref, "_", "") == np.char.replace(kinds, "_", "")
            bad = np.flatnonzero((ref != "") & (kinds != "") & ~same)
            if len(bad):
                i = int(bad[0])
                return (
                    f"the collectives differ: {label(r)}'s collective {i + 1} in launch order is {kinds[i]}, "
                    f"{label(results[0])}'s is {ref[i]} (other process groups, or captures that began at other "
                    "collectives)"
                )
    return None


def median_spacing(ends: list[int]) -> float | None:
    """The median time (ns) between consecutive collective ends, over those that do not end together; None
    with fewer than two apart."""
    steps = np.diff(np.sort(np.asarray(ends)))
    steps = steps[steps > 0]
    return float(np.median(steps)) if len(steps) else None


def world_sizes(results: list[dict[str, Any]]) -> dict[int, list[str]]:
    """The world sizes the traces say (``world_size``: Kineto's ``distributedInfo``, a sidecar's), each with
    the traces that say it."""
    sizes: dict[int, list[str]] = {}
    for r in results:
        if r.get("world_size"):
            sizes.setdefault(int(r["world_size"]), []).append(label(r))
    return sizes


def job_apart(results: list[dict[str, Any]]) -> str | None:
    """Why the traces are not the ranks of one job by what they say of it: different world sizes, or a rank
    outside the world size the traces say; None when nothing says so."""
    sizes = world_sizes(results)
    if len(sizes) > 1:
        said = "; ".join(f"{size} in {_named(labels)}" for size, labels in sorted(sizes.items()))
        return f"the traces say different world sizes ({said}): they are not the ranks of one job"
    if not sizes:
        return None
    (size,) = sizes
    beyond = [label(r) for r in results if r.get("rank") is not None and not 0 <= r["rank"] < size]
    if beyond:
        return (
            f"{_named(beyond)}: outside the world size of {size} that {_named(sizes[size])} say: they are not "
            "the ranks of one job"
        )
    return None


def world_warnings(results: list[dict[str, Any]]) -> list[str]:
    """A warning when the traces say one world size and ranks of it are not among them: the straggler, the
    skew and the spread are then those of the ranks given only."""
    sizes = world_sizes(results)
    if len(sizes) != 1 or len(results) < 2 or job_apart(results):
        return []
    (size,) = sizes
    given = {r["rank"] for r in results if r.get("rank") is not None}
    missing = sorted(set(range(size)) - given)
    if not missing or len(given) < len(results):
        return []
    shown = _named([str(m) for m in missing])
    return [
        f"{len(given)} of the {size} ranks the traces say their job has are here (missing: rank{'s' if len(missing) > 1 else ''} "
        f"{shown}): the straggler, the skew and the spread are among these ranks only"
    ]


def several_communicators(results: list[dict[str, Any]]) -> str | None:
    """Why the traces' collectives cannot be matched by launch order: some trace runs collectives on two or
    more streams of one device (``collective_streams``). PyTorch's ProcessGroupNCCL runs each process group's
    (and each point-to-point pair's) kernels on a stream of its own per device, so these are several
    communicators: with tensor and data parallelism rank 0's k-th collective may be its tensor-parallel group's
    ({0, 1}) and rank 2's that of another group ({2, 3}), which do not end together, and offsets from them
    can be wrong by a collective's wait while the residual stays small. None when every trace's collectives
    run on one stream per device (or their streams are not known)."""
    found = []
    for r in results:
        streams = r.get("collective_streams") or {}
        several = sorted(((n, d) for d, n in streams.items() if n > 1), key=lambda x: -x[0])
        if several:
            n, device = several[0]
            found.append((r, device, n))
    if not found:
        return None
    r, device, n = found[0]
    where = f"device {device}" if device is not None else "a device not named"
    also = f"; {_named([label(o) for o, _, _ in found[1:]])} on several streams too" if len(found) > 1 else ""
    return (
        f"{label(r)} runs collectives on {n} streams of {where}{also}: several communicators (process groups "
        "or point-to-point): which collective matches which across ranks is not known"
    )


def _rank_list(ranks: list[int] | set[int]) -> str:
    return _named([str(r) for r in sorted(ranks)])


def groups_apart(results: list[dict[str, Any]]) -> str | None:
    """Why the traces' collectives cannot be matched by launch order from what the traces say of their
    process groups (``process_groups``: the member ranks of each communicator a trace is in, as Kineto's
    ``distributedInfo.pg_config`` lists them): a trace in a group of two or more ranks that leaves out another
    trace's rank runs collectives that trace does not (rank 0's tensor-parallel {0, 1} is not rank 2's
    {2, 3}), whatever stream runs them: several groups on one stream (vLLM's pynccl, a framework passing its own
    stream) hide from :func:`several_communicators`. None when every such group holds every trace's rank, or
    nothing is said (groups of one rank have no collective across ranks)."""
    ranks = {int(r["rank"]) for r in results if r.get("rank") is not None}
    for r in results:
        for group in r.get("process_groups") or ():
            members = {int(m) for m in group}
            outside = ranks - members
            if len(members) >= 2 and outside:
                return (
                    f"{label(r)} is in a process group of ranks {_rank_list(members)}, without "
                    f"{_named([f'rank {o}' for o in sorted(outside)])}: its collectives are not all of the "
                    "other traces' (other process groups, on one stream or several): which collective matches "
                    "which across ranks is not known"
                )
    return None


def _pairs(op: str, kind: str) -> bool:
    """Whether a kernel is point-to-point: by the operation PyTorch names on it (``op``,
    :data:`POINT_TO_POINT_OPS`, :data:`COLLECTIVE_OPS`) where it names one it knows, else by its name's
    ``kind`` (:data:`POINT_TO_POINT_KINDS`)."""
    said = op.strip().lower()
    if said in POINT_TO_POINT_OPS:
        return True
    if said and re.match(COLLECTIVE_OPS, said):
        return False
    return kind in POINT_TO_POINT_KINDS


#: the per-collective lists of a compact result, in launch order, one entry per collective
_PER_COLLECTIVE = (
    "collective_starts_ns",
    "collective_ends_ns",
    "collective_kinds",
    "collective_iterations",
    "collective_ops",
    "collective_groups",
)


def _kept(result: dict[str, Any], keep: np.ndarray) -> dict[str, Any]:
    """``result`` with only the collectives ``keep`` (a mask over them) in each per-collective list that has
    one entry per collective (the others, not known, are left as they are)."""
    out = dict(result)
    n = len(keep)
    for key in _PER_COLLECTIVE:
        values = result.get(key)
        if values is None or len(values) != n:
            continue
        if isinstance(values, np.ndarray) and values.dtype != object:
            out[key] = values[keep]
        else:
            out[key] = [v for v, k in zip(values, keep.tolist(), strict=True) if k]
    return out


def collectives_only(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with its point-to-point kernels (:func:`_pairs`: by the operation PyTorch names on the kernel
    where it does, else by the kernel's name) taken out of the collectives matched across traces (every list
    of :data:`_PER_COLLECTIVE`), and how many there were (``point_to_point``); ``result`` itself when it has
    none or its kinds are not known. Their time is still communication (``comm_ms``:
    :mod:`tracekit.analyzers.communication`)."""
    kinds = result.get("collective_kinds")
    ends = result.get("collective_ends_ns")
    if kinds is None or ends is None or len(kinds) == 0 or len(kinds) != len(ends):
        return result
    ops = result.get("collective_ops")
    if ops is None or len(ops) != len(kinds):
        ops = [""] * len(kinds)
    p2p = np.asarray(
        [_pairs(str(o or ""), str(k or "")) for o, k in zip(ops, kinds, strict=True)], dtype=bool
    )
    if not p2p.any():
        return result
    out = _kept(result, ~p2p)
    out["collective_starts_ns"] = np.asarray(out["collective_starts_ns"])
    out["collective_ends_ns"] = np.asarray(out["collective_ends_ns"])
    out["point_to_point"] = int(p2p.sum())
    return out


def _group_text(result: dict[str, Any], groups: list[str]) -> str:
    said = [
        f"group {g} (ranks {_rank_list(m)})" if (m := _members(result, g)) else f"group {g}" for g in groups
    ]
    return f"{label(result)}: {_named(said)}"


def _members(result: dict[str, Any], group: str) -> set[int] | None:
    """The member ranks ``result`` gives process group ``group`` (``group_ranks``), None when not known: no
    such group, or a value that is not a list of integers (a cache entry of another layout)."""
    table = result.get("group_ranks")
    members = table.get(group) if isinstance(table, dict) else None
    if not isinstance(members, list | tuple) or not all(
        isinstance(m, int | np.integer) and not isinstance(m, bool) for m in members
    ):
        return None
    return {int(m) for m in members}


def by_group(results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """The traces with their collectives restricted to one process group every trace's collectives are in,
    where every trace says the group of its collectives (``collective_groups``: PyTorch's ``Process Group
    Name`` on each kernel, the same on every member rank): the k-th collective of one group is the same
    operation on every member rank, whatever stream or order other groups' run in (tensor- and
    data-parallel groups serialized on one stream, or on streams of their own). The group with the most
    collectives in every trace is taken (ties: the first by name); a group whose member ranks
    (``group_ranks``) leave out some trace's rank is not one of them. Each restricted trace says the group
    (``matched_group``). Returns (traces, why the clocks cannot be aligned or None, what was done or None);
    the traces as they are when fewer than two, or some trace says no group for any collective."""
    if len(results) < 2:
        return results, None, None
    labels = [["" if g is None else str(g) for g in r.get("collective_groups") or ()] for r in results]
    said = [{g for g in named if g} for named in labels]
    lengths_agree = all(
        len(r.get("collective_groups") or ()) == len(r.get("collective_ends_ns", ())) for r in results
    )
    if not all(said) or not lengths_agree:  # (groups not said for each collective: nothing to go by)
        return results, None, None
    ranks = {int(r["rank"]) for r in results if r.get("rank") is not None}

    def holds_every_rank(group: str) -> bool:
        for r in results:
            members = _members(r, group)
            if members is not None and not ranks <= members:
                return False
        return True

    common = sorted(g for g in set.intersection(*said) if holds_every_rank(g))
    if not common:
        held = _named([_group_text(r, sorted(g)) for r, g in zip(results, said, strict=True)], "; ")
        why = (
            f"no process group's collectives are in every trace ({held}, by the kernels' Process Group Name): "
            "which collective matches which across ranks is not known"
        )
        return results, why, None
    counts = {g: min(named.count(g) for named in labels) for g in common}
    chosen = sorted(common, key=lambda g: (-counts[g], g))[0]
    out = []
    for r, named in zip(results, labels, strict=True):
        restricted = _kept(r, np.asarray([g == chosen for g in named], dtype=bool))
        restricted["collective_starts_ns"] = np.asarray(restricted["collective_starts_ns"])
        restricted["collective_ends_ns"] = np.asarray(restricted["collective_ends_ns"])
        restricted["matched_group"] = chosen
        out.append(restricted)
    others = any(len(s) > 1 for s in said)
    # collectives that name no group (a kernel launched outside the process group, or whose args were lost)
    unnamed = [
        f"{label(r)}: {named.count('')}" for r, named in zip(results, labels, strict=True) if "" in named
    ]
    note = None
    if others or unnamed:
        members = next((m for r in results if (m := _members(r, chosen))), None)
        of = f" (ranks {_rank_list(members)})" if members else ""
        what = "belong to several process groups" if others else "name a process group only in part"
        note = (
            f"the traces' collectives {what}: clocks and stragglers are matched on process group {chosen}{of}'s "
            "collectives, which every trace holds, in their order"
        )
        if unnamed:
            note += (
                f"; collectives that name no process group are left out ({_named(unnamed)}): were some of them "
                f"group {chosen}'s, its collectives would be matched one off after them"
            )
    return out, None, note


def point_to_point_warnings(results: list[dict[str, Any]]) -> list[str]:
    """A warning naming the traces whose point-to-point kernels :func:`collectives_only` took out of the
    matching (none for one trace: nothing is matched)."""
    held = [label(r) for r in results if r.get("point_to_point")]
    if len(results) < 2 or not held:
        return []
    return [
        f"{_named(held)}: point-to-point kernels (send/receive: pipeline stages, or all-to-all, which NCCL runs "
        "as send/receives) are not matched across traces, as they pair two ranks, not every rank; their time "
        "is in the communication"
    ]


def wall_clock_base(result: dict[str, Any]) -> int | None:
    """What to add to the trace's timestamps (ns) for Unix-epoch wall-clock time: the compact result's
    ``wall_clock_base_ns`` where it says it, else 0 when they already are (:data:`WALL_CLOCK_FROM_NS`), else
    None (not known: the trace's own origin)."""
    if result.get("wall_clock_base_ns") is not None:
        return int(result["wall_clock_base_ns"])
    first = wall_clock_origin(result)
    return 0 if first >= WALL_CLOCK_FROM_NS else None


def wall_clock_origin(result: dict[str, Any]) -> int:
    """The trace's earliest known iteration start (ns, its own clock); -1 without one."""
    known = [v for v in _ns_values(result["iterations"].get("start_ns", ())) if v is not None]
    return min(known) if known else -1


def _ns_values(values: Any) -> list[int | None]:
    """A compact result's ns column (an int64 array, or a list holding None) as exact Python ints, None where
    a value is not known. (Plain Python and numpy, not polars: this module runs in the process that collects
    a many-trace run's results, which stays without polars so that its pool's memory is the workers'.)"""
    out: list[int | None] = []
    for v in values.tolist() if isinstance(values, np.ndarray) else values:
        try:
            out.append(None if v is None or v != v else int(v))
        except (TypeError, ValueError, OverflowError):
            out.append(None)
    return out


def captured_apart(results: list[dict[str, Any]]) -> str | None:
    """Why the traces' steps as compared (by number, :func:`by_step_number`, or by position) did not happen
    together: on the wall clock (:func:`wall_clock_base`, traces that have one) the same step of a trace starts
    further from the reference's than one job's hosts' clocks differ (:data:`WALL_CLOCK_SLACK_NS`) plus the
    longest step, at every step compared (ranks of one job start a step within about a step of each other). Two
    captures at other times that number their steps alike (``ProfilerStep#5``-``#10`` in both) are else paired
    step by step, and their collectives "aligned" with an offset of the time between them. None when every
    step is within that, or fewer than two traces have a wall clock (then not known)."""
    steps = _common_steps(results)
    clocked = [(r, base) for r in results if (base := wall_clock_base(r)) is not None]
    if steps == 0 or len(clocked) < 2:
        return None
    latencies = np.concatenate(
        [np.asarray(r["iterations"]["latency_ms"][:steps], dtype=np.float64) for r in results]
    )  # (None -> NaN: not known, left out)
    latencies = latencies[~np.isnan(latencies)]
    bound = WALL_CLOCK_SLACK_NS + (latencies.max() * 1e6 if len(latencies) else 0.0)

    ref, ref_base = clocked[0]
    origin = ref_base + wall_clock_origin(ref)

    def starts(r: dict[str, Any], base: int) -> np.ndarray:
        # (exact in int64, then as floats from the reference's first start: NaN where a start is not known)
        shift = base - origin
        values = _ns_values(r["iterations"]["start_ns"][:steps])
        return np.array([np.nan if v is None else float(v + shift) for v in values], dtype=np.float64)

    ref_starts = starts(ref, ref_base)
    for r, base in clocked[1:]:
        apart = starts(r, base) - ref_starts
        known = np.flatnonzero(~np.isnan(apart))  # (a step whose start is not known says nothing)
        if len(known) and np.all(np.abs(apart[known]) > bound):
            i = int(known[0])
            numbers = step_numbers(r)
            which, alike = (
                (f"step #{numbers[i]}", "numbered alike") if numbers else (f"step {i + 1}", "by position")
            )
            return (
                f"{label(r)}'s {which} starts {abs(apart[i]) / 1e9:.3f} s {'after' if apart[i] > 0 else 'before'} "
                f"{label(ref)}'s on the traces' wall clocks, more than one step plus the "
                f"{WALL_CLOCK_SLACK_NS / 1e9:g} s the clocks of one job's hosts may differ by: captured at "
                "different times (or on hosts whose clocks disagree that much, which nothing here tells apart), "
                f"so their steps, {alike}, are not known to have happened together"
            )
    return None


#: A result's flag (:func:`with_cut_flag`): its lists of collectives hold only the first of more
#: (``collectives_total``), the compact result's cap (tracekit.fleet.compact.MAX_COLLECTIVES).
CUT = "_collectives_cut"


def with_cut_flag(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with :data:`CUT` set where it holds more collectives (``collectives_total``) than its lists
    (cut at the compact result's cap): set before any list is restricted (by process group, step number,
    point-to-point kernels), which shortens the lists but not the total."""
    kept = len(result.get("collective_ends_ns", ()))
    total = result.get("collectives_total")
    cut = isinstance(total, int) and total > kept
    return {**result, CUT: (kept, total)} if cut else result


def cut_lists(results: list[dict[str, Any]], counts: list[int]) -> tuple[str | None, str | None]:
    """Where some trace's lists of collectives were cut (:func:`with_cut_flag`): (why the collectives cannot be
    matched, or None; how they may be matched, or None: from the first only). Only each trace's first
    collectives are kept, so matched from the last cannot be checked at all, nor from the first whether a
    capture began at another collective. So the lists are matched by position where every trace holds as many
    collectives in all and as many in the lists compared, and from the first where every list begins with the
    first collective of the same numbered step (:func:`step_numbers`; the steps numbered alike,
    :func:`by_step_number`); else not at all. (Past the cap, traces of 4,300 and 4,200 collectives had both read
    4,096 and been matched from the first, with no doubt: a capture begun 100 steps later was 'aligned' 26.150
    ms off for a 2.5 ms offset, residual 0.)"""
    cut = [r for r in results if r.get(CUT)]
    if not cut:
        return None, None
    totals = [r[CUT][1] if r.get(CUT) else len(r.get("collective_ends_ns", ())) for r in results]
    if len(set(totals)) == 1 and len(set(counts)) == 1:
        return None, None
    held = _named([f"{label(r)}: {r[CUT][0]:,} of {r[CUT][1]:,}" for r in cut], "; ")
    if _same_first_step(results):
        return None, (
            f"only the first collectives of some traces are kept ({held}), and every list begins at the same "
            "numbered step"
        )
    return (
        f"traces hold {min(totals):,} to {max(totals):,} collectives, and only the first of some are kept "
        f"({held}): whether they match from the first or from the last cannot be checked on the collectives "
        "kept, so which collective matches which is not known"
    ), None


def _same_first_step(results: list[dict[str, Any]]) -> bool:
    """Whether every trace numbers its steps, its first step (by number) is the same, and its first collective
    was launched in that step (``collective_iterations``)."""
    firsts = set()
    for r in results:
        numbers = step_numbers(r)
        of = r.get("collective_iterations")
        if not numbers or of is None or not len(of) or len(of) != len(r.get("collective_ends_ns", ())):
            return False
        first = min(numbers)
        if of[0] is None or int(of[0]) != int(r["iterations"]["index"][numbers.index(first)]):
            return False
        firsts.add(first)
    return len(firsts) == 1


def clock_offsets(
    results: list[dict[str, Any]], apart: str | None = None, groups: str | None = None
) -> dict[str, Any]:
    """Clock offsets (ns) of each trace against the reference, from collective ends (see module doc);
    ``apart``: why the traces are not one job's (:func:`job_apart`), then never aligned; ``groups``: why their
    collectives cannot be matched by process group (:func:`by_group`), then never aligned either."""
    counts = [len(r.get("collective_ends_ns", ())) for r in results]
    if len(results) >= 2 and apart:
        return {"aligned": False, "why": apart, "offsets_ns": None, "matched": 0}
    repeated = repeated_ranks(results)
    if len(results) >= 2 and repeated:
        why = (
            f"rank {repeated[0]} is claimed by {sum(r.get('rank') == repeated[0] for r in results)} traces: "
            "they are not the ranks of one job"
        )
        return {"aligned": False, "why": why, "offsets_ns": None, "matched": 0}
    several = (several_communicators(results) or groups_apart(results)) if len(results) >= 2 else None
    if groups:
        several = groups
    elif all(r.get("matched_group") for r in results):
        # (one process group's collectives, which every trace holds: one communicator, whatever streams
        # or other groups the traces also ran)
        several = None
    if several:
        return {"aligned": False, "why": several, "offsets_ns": None, "matched": 0}
    if len(results) < 2 or min(counts) == 0:
        missing = [r for r, n in zip(results, counts, strict=True) if n == 0]
        why = (
            "one trace"
            if len(results) < 2
            else f"no collective kernels to align on in {', '.join(label(r) for r in missing[:5])}"
            + (" ..." if len(missing) > 5 else "")
        )
        if len(results) >= 2 and all(r.get("point_to_point") for r in missing):
            why += (
                " (only point-to-point send/receive kernels, which pair two ranks, not every rank: not matched "
                "across ranks)"
            )
        return {"aligned": False, "why": why, "offsets_ns": None, "matched": 0}
    cut, first_only = cut_lists(results, counts)
    if cut:
        return {"aligned": False, "why": cut, "offsets_ns": None, "matched": 0}
    n = min(counts)
    differ = kinds_differ(results, n)
    if first_only:  # (lists cut at the cap, begun at one step: matched from the first, never from the last)
        if differ:
            return {"aligned": False, "why": differ, "offsets_ns": None, "matched": 0}
        return _partial_match(_aligned(results, n, last=False), results, n, first_only)
    same_count = len(set(counts)) == 1
    # (with equal counts the last n are the first n)
    differ_last = differ if same_count else kinds_differ(results, n, last=True)
    if differ and differ_last:
        return {"aligned": False, "why": differ, "offsets_ns": None, "matched": 0}
    first = _aligned(results, n, last=False)
    if same_count:
        return _aligned_or_not(first, results, n)
    # Traces hold different numbers of collectives: a capture that began (or ended) at another collective.
    # Matched from the first or from the last (each only where the operations agree); when both fit with
    # other offsets, the one under which the steps line up, else which is right is not known.
    last = _aligned(results, n, last=True)
    first["fits"] = first["fits"] and differ is None
    last["fits"] = last["fits"] and differ_last is None
    fits = [a for a in (first, last) if a["fits"]]
    span = f"traces hold {min(counts)} to {max(counts)} collectives"
    apart = max(abs(a - b) for a, b in zip(first["offsets"], last["offsets"], strict=True))
    how = ""
    if len(fits) == 2 and apart > max(first["residual"], last["residual"]):
        # Both fit (periodic steps): the one under which the traces' steps line up, if only one does.
        steps = _common_steps(results)
        lined_up = [a for a in fits if steps_apart(results, a["offsets"], steps, a is last) is None]
        if len(lined_up) != 1:
            why = (
                f"{span}: matched from the first or from the last, both fit, with clock offsets up to "
                f"{apart / 1e6:.3f} ms apart (captures that began or ended at other collectives), and the steps "
                f"line up under {'both' if lined_up else 'neither'}: which collective matches which is not known"
            )
            return {"aligned": False, "why": why, "offsets_ns": None, "matched": 0}
        fits, how = lined_up, "the only way the steps line up"
    chosen = fits[0] if fits else first
    chosen["last"] = chosen is last
    return _partial_match(chosen, results, n, how)


def _partial_match(chosen: dict[str, Any], results: list[dict[str, Any]], n: int, how: str) -> dict[str, Any]:
    """The ``clocks`` document of traces of different numbers of collectives matched from the first or (where
    ``chosen["last"]``) from the last ``n``: not aligned where the ends matched disagree by more than
    :data:`PARTIAL_MATCH_RESIDUAL_NS`; ``how``: why this way, or "" (said in parentheses after what was matched)."""
    counts = [len(r.get("collective_ends_ns", ())) for r in results]
    span = f"traces hold {min(counts)} to {max(counts)} collectives"
    end = "last" if chosen.get("last") else "first"
    if chosen["fits"] and chosen["residual"] > PARTIAL_MATCH_RESIDUAL_NS:
        # (a guess of which collective is which holds only where the ends it matches agree as one
        # collective's do; one all-reduce missing from a trace had matched 7 others 1060 us apart and given a
        # clock offset 10.8 ms off, and a straggler waiting 1.22 ms for a 0.2 ms truth)
        why = (
            f"{span}: matched from the {end}, their ends still disagree by up "
            f"to {chosen['residual'] / 1e3:.3f} µs (one collective's end on every rank agrees within "
            f"{PARTIAL_MATCH_RESIDUAL_NS / 1e3:.0f} µs): which collective matches which is not known"
        )
        return {"aligned": False, "why": why, "offsets_ns": None, "matched": 0}
    out = _aligned_or_not(chosen, results, n)
    if out["aligned"]:
        said = f" ({how})" if how else ""
        out["why"] = f"{span}; the {end} {n} were matched{said}" + (f"; {ONE_MATCHED}" if n == 1 else "")
        out["matched_from"] = end
    return out


def _aligned(results: list[dict[str, Any]], n: int, last: bool) -> dict[str, Any]:
    """Offsets of each trace against the reference from ``n`` collective ends matched in launch order: each
    trace's first ``n`` (``last``: its last ``n``), with the largest disagreement left (``residual``, ns) and
    whether it fits (within half the median spacing of the reference's collectives: :func:`median_spacing`)."""

    def ends(r: dict[str, Any]) -> list[int]:
        return collective_ns(r, "collective_ends_ns", n, last)

    ref = ends(results[0])
    offsets: list[int] = []
    residual = 0
    for r in results:
        diffs = [e - f for e, f in zip(ends(r), ref, strict=True)]
        off = int(median(diffs))
        offsets.append(off)
        residual = max(residual, max(abs(d - off) for d in diffs))
    spacing = median_spacing(ref)
    return {
        "offsets": offsets,
        "residual": residual,
        "spacing": spacing,
        "fits": spacing is None or residual <= spacing / 2,
    }


def _aligned_or_not(alignment: dict[str, Any], results: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """The ``clocks`` document of an alignment (:func:`_aligned`): aligned when it fits, else why not."""
    residual, spacing = alignment["residual"], alignment["spacing"]
    if not alignment["fits"]:
        why = (
            f"collective ends disagree by up to {residual / 1e3:.3f} µs once the offsets are taken out, more than "
            f"half the {spacing / 1e3:.3f} µs between {label(results[0])}'s collectives (median): which "
            "collective matches which is not known"
        )
        return {"aligned": False, "why": why, "offsets_ns": None, "matched": 0}
    out = {
        "aligned": True,
        "method": "collective ends",
        "matched": n,
        "offsets_ns": alignment["offsets"],
        "residual_us": residual / 1e3,
        "reference": label(results[0]),
    }
    if n == 1:  # (the residual is 0 by construction: nothing measured how well the ends agree)
        out["why"] = ONE_MATCHED
    return out


#: The clocks' ``why`` when one collective was matched (:func:`_aligned_or_not`).
ONE_MATCHED = "one collective matched: each offset is its end alone, which no other collective checks"


#: Where traces hold different numbers of collectives, the ones matched (from the first or from the last) are a
#: guess that holds only when their ends agree within this (ns) once the offsets are taken out: an all-reduce
#: ends within microseconds on every rank, and the clocks of a capture drift far less than this in its span.
PARTIAL_MATCH_RESIDUAL_NS = 100_000


def last_by_more_than(values: list[int] | list[float], tolerance_ns: int) -> int | None:
    """The position of the one latest of ``values`` (aligned times, ns), when it is later than every other by
    more than ``tolerance_ns`` (the clock alignment's residual: closer than that, the order is not known);
    None when two are last together or within the tolerance."""
    latest = max(values)
    if sum(v >= latest - tolerance_ns for v in values) > 1:
        return None
    return values.index(latest)


def most_often(counts: Counter[int]) -> tuple[int, int] | None:
    """(the trace counted most often, its count), when no other trace is counted as often; None when none
    is counted, or when two share the most (neither is *the* straggler, or *the* slowest)."""
    ranked = counts.most_common(2)
    if not ranked or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0]


def stragglers(
    results: list[dict[str, Any]], offsets: list[int], tolerance_ns: int, last_matched: bool = False
) -> dict[str, Any]:
    """Who arrives last at each matched collective, and the wait it causes (aligned clocks). A collective at
    which two traces arrive last together, or within ``tolerance_ns`` of each other (the alignment's
    residual), has no straggler: ranks in lockstep wait for nobody, and closer than the clocks are aligned,
    which came first is not known. ``last_matched``: the clocks were aligned on each trace's last
    collectives (:func:`clock_offsets`' ``matched_from``), so these are the ones compared."""
    n = min(len(r["collective_starts_ns"]) for r in results)
    starts = [collective_ns(r, "collective_starts_ns", n, last_matched) for r in results]
    last = Counter()
    waits: dict[int, list[float]] = {}
    for k in range(n):
        absolute = [s[k] - off for s, off in zip(starts, offsets, strict=True)]
        base = min(absolute)  # small numbers: a median of two epoch-ns values as a float loses ~256 ns
        arrivals = [a - base for a in absolute]
        i = last_by_more_than(arrivals, tolerance_ns)
        if i is None:
            continue
        others = arrivals[:i] + arrivals[i + 1 :]
        last[i] += 1
        waits.setdefault(i, []).append((arrivals[i] - median(others)) / 1e6)
    top = most_often(last)
    if top is None:
        out: dict[str, Any] = {"straggler": None, "collectives": n}
        if last:  # two or more arrive last equally often
            most = max(last.values())
            out.update(
                tied=[label(results[i]) for i, c in sorted(last.items()) if c == most], arrives_last=most
            )
        return out
    who, times = top
    return {
        "straggler": label(results[who]),
        "arrives_last": times,
        "collectives": n,
        "median_wait_ms": median(waits[who]),
        "total_wait_ms": sum(waits[who]),
        "arrives_last_by_trace": {label(results[i]): c for i, c in last.items()},
    }


def step_numbers(result: dict[str, Any]) -> list[int] | None:
    """The step number of each iteration (``ProfilerStep#N``: the compact result's ``step`` column), when
    every iteration has one and no two the same; else None (steps are then matched by position)."""
    column = result["iterations"].get("step")
    if column is None:
        return None
    numbers = list(column)
    if any(n is None or n != n for n in numbers) or len(set(numbers)) != len(numbers):
        return None
    return [int(n) for n in numbers]


#: How many runs of consecutive step numbers :func:`_spans` writes before "and N more runs".
SHOWN_RUNS = 4


def _spans(numbers: list[int]) -> str:
    """Step numbers as their runs (``#4-#6``; with a gap ``#4, #6``; past :data:`SHOWN_RUNS` runs, how many
    more and the last number); "none" for none."""
    if not numbers:
        return "none"
    ordered = sorted(set(numbers))
    runs: list[list[int]] = []
    for n in ordered:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ", ".join(f"#{a}" if a == b else f"#{a}-#{b}" for a, b in runs[:SHOWN_RUNS])
    more = len(runs) - SHOWN_RUNS
    return text + (f" and {more} more runs to #{ordered[-1]}" if more > 0 else "")


def by_step_number(results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None, bool]:
    """The traces as the step comparisons and the clock alignment see them: when every trace numbers its
    steps (:func:`step_numbers`) and the numbers differ (captures that began or ended at other steps: on-demand
    profiling starts at each rank's next step), each restricted to the steps numbered alike in every trace, in
    number order, with only the collectives launched in those steps (``collective_iterations``); else as they
    are, compared by position. Returns (traces, what was done or None, whether some step is common)."""
    numbers = [step_numbers(r) for r in results]
    if len(results) < 2 or any(n is None for n in numbers) or all(n == numbers[0] for n in numbers):
        return results, None, True
    common = sorted(set.intersection(*(set(n) for n in numbers)))  # type: ignore[arg-type]
    held = _named(
        [f"{label(r)} {_spans(n)}" for r, n in zip(results, numbers, strict=True)],  # type: ignore[arg-type]
        "; ",
    )
    if not common:
        return results, f"no step number is common to every trace ({held}): they recorded other steps", False
    out = []
    for r, nums in zip(results, numbers, strict=True):
        where = {n: i for i, n in enumerate(nums)}  # type: ignore[union-attr]
        keep = np.asarray([where[n] for n in common], dtype=np.int64)
        its = {
            k: np.asarray(v)[keep] if isinstance(v, np.ndarray) else [v[i] for i in keep]
            for k, v in r["iterations"].items()
        }
        restricted = {**r, "iterations": its}
        of = r.get("collective_iterations")
        if of is not None and len(of) == len(r.get("collective_ends_ns", ())):
            kept = set(np.asarray(r["iterations"]["index"])[keep].tolist())
            mask = np.asarray([i in kept for i in of], dtype=bool)
            restricted["collective_starts_ns"] = np.asarray(r["collective_starts_ns"])[mask]
            restricted["collective_ends_ns"] = np.asarray(r["collective_ends_ns"])[mask]
            kinds = list(r.get("collective_kinds") or [""] * len(mask))
            restricted["collective_kinds"] = [k for k, m in zip(kinds, mask, strict=True) if m]
            # (the steps of the collectives kept too: :func:`_same_first_step` reads the first one's)
            restricted["collective_iterations"] = [i for i, m in zip(of, mask, strict=True) if m]
            for key in ("collective_ops", "collective_groups"):
                said = r.get(key)
                if said is not None and len(said) == len(mask):
                    restricted[key] = [k for k, m in zip(said, mask, strict=True) if m]
        out.append(restricted)
    note = (
        f"the traces hold other steps ({held}): steps and collectives are compared on the {len(common)} steps "
        f"numbered alike in every trace ({_spans(common)}), not by position"
    )
    return out, note, True


#: A whole-step renumbering is taken (:func:`renumbered`) only where the collectives matched under it end
#: together over this many times better than under any other shift (the traces' own numbers too), and by
#: more than :data:`RENUMBERED_FLOOR_US`.
RENUMBERED_FACTOR = 10
RENUMBERED_FLOOR_US = 10.0
#: The whole-step shifts of a trace's step numbers :func:`renumbered` tries (each way).
RENUMBERED_SHIFTS = 3


def _renumber(result: dict[str, Any], shift: int) -> dict[str, Any]:
    """``result`` with its step numbers (``step``) ``shift`` added (itself for 0)."""
    if not shift:
        return result
    its = dict(result["iterations"])
    its["step"] = [None if n is None else int(n) + shift for n in its["step"]]
    return {**result, "iterations": its}


def _fit(
    results: list[dict[str, Any]], apart: str | None, groups: str | None, steps: int = 2
) -> tuple[float, Any] | None:
    """(largest residual in µs, the traces as compared) of the clocks aligned on ``results`` matched by step
    number (:func:`by_step_number`), None when they are not aligned on two or more collectives, or fewer than
    ``steps`` steps are numbered alike (a few collectives fit by chance)."""
    seen, _, shared = by_step_number(results)
    if not shared or _common_steps(seen) < steps:
        return None
    clocks = clock_offsets(seen, apart, groups)
    if not clocks["aligned"] or clocks["matched"] < 2:
        return None
    if steps_apart(seen, clocks["offsets_ns"], _common_steps(seen)) is not None:
        return None
    return float(clocks["residual_us"]), seen


def renumbered(
    results: list[dict[str, Any]],
    steps_seen: list[dict[str, Any]],
    numbered: str | None,
    apart: str | None = None,
    groups: str | None = None,
) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """Traces whose step numbers are off by whole steps (one rank's profiler counted from another start: its
    ``ProfilerStep#6`` is the others' #5): matched by number, a step is compared with another, and the clocks
    come out wrong by about a step. Each trace is tried against the reference with its numbers shifted by
    up to :data:`RENUMBERED_SHIFTS` steps each way; a shift is taken where, matched under it, the collectives
    end together :data:`RENUMBERED_FACTOR` times better (and over :data:`RENUMBERED_FLOOR_US` better) than
    under any other shift that leaves half the shorter trace's steps (two at least) numbered alike, its own
    numbers included (a shift that alone fits at all: where its collectives end together within
    :data:`RENUMBERED_FLOOR_US`), and the steps line up: the n-th collective of a step is
    the same on every rank, and steps of unequal durations fit one way only. Returns (the traces as compared,
    their step-number note, the warning that says what was shifted); where some shift fits better than the
    numbers but not so clearly, the note says the numbers may differ; else as given. Periodic steps fit every
    way: the numbers are then kept (nothing tells them apart)."""
    if not numbered or len(results) < 2 or any(step_numbers(r) is None for r in results):
        return steps_seen, numbered, None
    as_numbered = clock_offsets(steps_seen, apart, groups)
    if as_numbered["aligned"] and as_numbered["residual_us"] <= RENUMBERED_FLOOR_US:
        return steps_seen, numbered, None  # (no shift could fit clearly better)
    chosen = [0]
    doubted: list[str] = []
    # (a shift must leave half the shorter trace's steps numbered alike: a few collectives fit by chance)
    steps = max(2, math.ceil(min(steps_of(r) for r in results) / 2))
    for r in results[1:]:
        fits = {
            k: f[0]
            for k in range(-RENUMBERED_SHIFTS, RENUMBERED_SHIFTS + 1)
            if (f := _fit([results[0], _renumber(r, k)], apart, groups, steps))
        }
        if not fits:
            chosen.append(0)
            continue
        best = min(fits, key=lambda k: (fits[k], abs(k)))
        # (clear against every other shift that fits; a shift that alone fits at all is compared with no
        # other, so it must fit as collectives of one step end, within the floor: one collective missing from
        # a trace had let a -3 shift fit alone to 1020 µs and put the offset 21 ms off)
        others = [v for k, v in fits.items() if k != best]
        clear = all(v > max(RENUMBERED_FACTOR * fits[best], RENUMBERED_FLOOR_US) for v in others) and (
            bool(others) or fits[best] <= RENUMBERED_FLOOR_US
        )
        if best and clear:
            chosen.append(best)
            continue
        chosen.append(0)
        if best and fits[best] < fits.get(0, math.inf):
            own = f"to {fits[0]:.3f} µs" if 0 in fits else "and not at all"
            doubted.append(
                f"{label(r)}'s collectives end together to {fits[best]:.3f} µs with its step numbers "
                f"{best:+d}, {own} as they are"
            )
    if not any(chosen):
        if doubted:
            numbered += (
                f"; {_named(doubted, '; ')}: the step numbers may differ between the traces (a profiler that "
                "counted steps from another start)"
            )
        return steps_seen, numbered, None
    shifted = [_renumber(r, k) for r, k in zip(results, chosen, strict=True)]
    joint = _fit(shifted, apart, groups)
    if joint is None:
        return steps_seen, numbered, None
    residual, seen = joint
    _, note, _ = by_step_number(shifted)
    moved = [
        f"{label(r)}'s steps {_spans(n)} are {label(results[0])}'s {_spans([x + k for x in n])}"
        for r, k in zip(results, chosen, strict=True)
        if k and (n := step_numbers(r))
    ]
    warning = (
        f"{_named(moved, '; ')}: the same steps numbered from another start (matched so, the collectives end "
        f"together to {residual:.3f} µs and the steps line up; by the traces' own numbers they do not, or "
        f"{RENUMBERED_FACTOR}x less well): compared in {label(results[0])}'s numbering"
    )
    return seen, note, warning


def spread_of(
    rows: list[dict[str, Any]], steps_seen: list[dict[str, Any]], numbered: str | None, shared: bool
) -> dict[str, Any]:
    """The spread (:func:`extremes` of the median latencies): of the rows (every iteration of each trace)
    when the traces hold the same steps, or number none; when they number other steps (:func:`by_step_number`:
    a capture that began or ended at another step), of the medians over the steps numbered alike in every
    trace (``steps``, ``on_steps``: their numbers), since a step only one trace holds (a slow first step
    captured by one rank) is no difference between the traces; withheld, with ``why``, when no step number is
    common (their latencies are of other steps)."""
    timed = [r for r in rows if r["median_latency_ms"] is not None]
    if not numbered:
        return extremes(timed, "median_latency_ms", "slowest", "fastest")
    if not shared:
        return {"why": numbered}
    medians = [
        {"trace": label(r), "median_latency_ms": median(v)}
        for r in steps_seen
        if (v := _values(r, "latency_ms"))
    ]
    if len(medians) < 2:
        return {"why": f"{numbered}; fewer than two traces have a latency on them"}
    numbers = step_numbers(steps_seen[0]) or []
    return {
        **extremes(medians, "median_latency_ms", "slowest", "fastest"),
        "steps": len(numbers),
        "on_steps": _spans(numbers),
    }


def _common_steps(results: list[dict[str, Any]]) -> int:
    return min(steps_of(r) for r in results) if results else 0


def _positions(values: Any, steps: int, last: bool) -> np.ndarray:
    """The first ``steps`` of ``values`` (``last``: the last ``steps``)."""
    values = np.asarray(values)
    return values[len(values) - steps :] if last else values[:steps]


def steps_apart(
    results: list[dict[str, Any]], offsets: list[int], steps: int, last: bool = False
) -> str | None:
    """Why the traces' steps, matched by position, are not the same steps: the first step of a trace that does
    not overlap the reference's step of that position once the clocks are aligned (ranks of one job run a
    step together, so such steps are other steps: captures that began at different steps); None when every
    step overlaps. ``last``: each trace's last ``steps`` are compared (the clocks were aligned on the last
    collectives: a trace that holds fewer began later, so its steps are the others' last ones)."""
    if steps == 0:
        return None

    def window(r: dict[str, Any], off: int) -> tuple[np.ndarray, np.ndarray]:
        its = r["iterations"]
        return _positions(its["start_ns"], steps, last) - off, _positions(its["end_ns"], steps, last) - off

    ref_start, ref_end = window(results[0], offsets[0])
    for r, off in zip(results[1:], offsets[1:], strict=True):
        start, end = window(r, off)
        apart = np.flatnonzero((start >= ref_end) | (end <= ref_start))
        if len(apart):
            i = int(apart[0])
            which = (
                f"{'last' if last else 'first'} {steps}" if len({steps_of(t) for t in results}) > 1 else ""
            )
            of = f" (of the {which} steps each)" if which else ""
            return (
                f"step {i + 1}{of} of {label(r)} does not overlap step {i + 1} of {label(results[0])} once the "
                "clocks are aligned: the traces' steps do not line up (captures that began at different steps?)"
            )
    return None


def skew(
    results: list[dict[str, Any]], offsets: list[int], tolerance_ns: int, last_matched: bool = False
) -> dict[str, Any]:
    """Spread of aligned iteration starts per step, and which trace ends its steps last (a step counts for a
    trace only when it ends last by more than ``tolerance_ns``, as in :func:`stragglers`). ``last_matched``:
    the clocks were aligned on each trace's last collectives, so each trace's last steps are compared."""
    steps = _common_steps(results)
    spreads: list[float] = []
    ends_last = Counter()
    aligned = [
        (
            _positions(r["iterations"]["start_ns"], steps, last_matched),
            _positions(r["iterations"]["end_ns"], steps, last_matched),
            off,
        )
        for r, off in zip(results, offsets, strict=True)
    ]
    apart = steps_apart(results, offsets, steps, last_matched)
    if apart:
        return {"steps": steps, "why": apart}
    for i in range(steps):
        starts = [s[i] - off for s, _, off in aligned]
        ends = [e[i] - off for _, e, off in aligned]
        spreads.append((max(starts) - min(starts)) / 1e6)
        last = last_by_more_than(ends, tolerance_ns)
        if last is not None:
            ends_last[last] += 1
    out: dict[str, Any] = {
        "steps": steps,
        "median_start_skew_ms": median(spreads) if spreads else None,
        "max_start_skew_ms": max(spreads) if spreads else None,
    }
    if spreads and tolerance_ns and max(spreads) * 1e6 <= tolerance_ns:
        # (every aligned start is known to the residual only: a skew no larger is not told from none)
        out["why"] = (
            f"the largest, {max(spreads):.3f} ms, is no more than the clock alignment's residual "
            f"({tolerance_ns / 1e6:.3f} ms): not told from no skew"
        )
        out.update(median_start_skew_ms=None, max_start_skew_ms=None)  # (no figure beside the why)
    top = most_often(ends_last)
    if top is not None:
        out.update(ends_last=label(results[top[0]]), ends_last_steps=top[1])
    return out


#: What a longest step means when the aligned ranks end each step together (:func:`ends_together_note`).
ENDS_TOGETHER_NOTE = (
    "the ranks end each step together, none later than the clocks' residual: the longest step is the one begun "
    "first, not a slow rank; the straggler says who is late"
)


def ends_together_note(straggler: dict[str, Any], skew_found: dict[str, Any]) -> str | None:
    """:data:`ENDS_TOGETHER_NOTE` when, on aligned clocks, some trace arrives last at the collectives (a
    straggler or a tie is named) while none ends its steps last (:func:`skew`'s ``ends_last``: every step ends
    together, as a collective and a sync at the step's end make it) and the step starts are told apart (a
    skew beyond the residual): the longest step, and the slowest median latency, then belong to the trace
    that began its steps first, which is no slower; else None."""
    late = straggler.get("straggler") or straggler.get("tied")
    # (starts told apart: a skew within the residual says nothing of who began first)
    steps_compared = skew_found.get("steps") and not skew_found.get("why")
    if late and steps_compared and not skew_found.get("ends_last"):
        return ENDS_TOGETHER_NOTE
    return None


def slowest_by_step(results: list[dict[str, Any]], last: bool = False) -> dict[str, Any]:
    """Clock-free: which trace has the longest iteration at each common step (a step whose longest
    iteration is shared by two traces counts for none, as in :func:`skew`'s ``ends_last``); ``last``: each
    trace's last steps are the common ones (the clocks were aligned on the last collectives)."""
    steps = _common_steps(results)
    longest = Counter()
    latencies = [_positions(r["iterations"]["latency_ms"], steps, last) for r in results]
    for i in range(steps):
        # (a latency not known, None or NaN, is no trace's longest: the others' are compared, two or more)
        timed = [(k, float(column[i])) for k, column in enumerate(latencies) if _known(column[i])]
        slowest = last_by_more_than([v for _, v in timed], 0) if len(timed) >= 2 else None
        if slowest is not None:
            longest[timed[slowest][0]] += 1
    top = most_often(longest)
    if top is None:
        return {"steps": steps}
    return {"steps": steps, "slowest": label(results[top[0]]), "slowest_steps": top[1]}


def _recording(result: dict[str, Any]) -> list[Any]:
    """What tells one recording from another: the file it is (a path that exists, links resolved), and its
    rank, iteration times and collective ends when it has collectives (times to the nanosecond that no other
    rank's recording shares); none of either: not told."""
    keys: list[Any] = []
    path = result.get("path")
    if path and os.path.exists(path):
        keys.append(os.path.realpath(path))
    its = result["iterations"]
    if len(result.get("collective_ends_ns", ())) and len(its.get("start_ns", ())):
        keys.append(
            (
                result.get("rank"),
                tuple(its["start_ns"]),
                tuple(its.get("end_ns", ())),
                tuple(result["collective_ends_ns"]),
            )
        )
    return keys


def without_repeats(results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """``results`` with a recording given more than once (the same file by two paths, a link, a copy:
    :func:`_recording`) kept once, and a warning naming each repeat: counted twice it would be two traces
    claiming one rank (not one job), or a rank that ties with itself."""
    from tracekit.io import BYTE_COPY, CONTENT_COPY, Recordings

    seen: dict[Any, dict[str, Any]] = {}
    files = Recordings()  # (a copy of the file, byte for byte or once inflated, as table and report tell it)
    kept, warnings = [], []
    for r in results:
        keys = _recording(r)
        first = next((seen[k] for k in keys if k in seen), None)
        how = ""
        if first is None:
            found, how = files.find(r.get("path"))
            first = found if isinstance(found, dict) else None
        if first is not None:
            what = {BYTE_COPY: "a byte-identical copy", CONTENT_COPY: "a copy, once inflated"}.get(
                how, "the same file twice, a link or a copy"
            )
            warnings.append(
                f"{r.get('path') or r['name']} is the same recording as {first.get('path') or first['name']} "
                f"({what}): summarized once"
            )
            continue
        for k in keys:
            seen.setdefault(k, r)
        files.add(r.get("path"), r)
        kept.append(r)
    return kept, warnings


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The cross-trace document (see the module docstring)."""
    results, repeats = without_repeats(results)
    # (which traces' lists of collectives were cut at the compact result's cap, before any is restricted)
    results = [with_cut_flag(r) for r in results]
    # (point-to-point kernels are communication, not collectives matched across traces)
    results = with_labels(_order([collectives_only(r) for r in results]))
    # (collectives of one process group, where the kernels say their groups: matched within it)
    results, groups_why, grouped = by_group(results)
    rows = [trace_row(r) for r in results]
    doc: dict[str, Any] = {"rows": rows, "traces": len(rows), "warnings": []}
    per_gpu = gpu_rows(results)
    if per_gpu:  # (only where some trace ran on several GPUs: other documents are as they were)
        doc["gpu_rows"] = per_gpu
        doc["gpu_note"] = gpu_note(per_gpu)
        said = comm_note(results)
        if said:
            doc["comm_note"] = said
        doc["gpu_busy_spread"] = gpu_busy_spread(per_gpu)
        within = [w for r in results if (w := within_capture(r)) is not None]
        if within:
            doc["gpu_within"] = within
    timed = [r for r in rows if r["median_latency_ms"] is not None]
    # Iterations cut by different ranges (a whole-trace window in one, steps in the others) are not the same
    # work: latencies and steps are not compared across them.
    different = range_warning(results)
    cut_alike = not different
    apart = "iterations are cut by different ranges"
    # One window over a whole capture (no iteration ranges) is no step: its latency is how long the capture
    # ran, so neither latencies nor starts are compared (the collectives still are: the straggler)
    whole = whole_windows(results) if cut_alike else None
    # Steps numbered alike (ProfilerStep#N) are the same step on every rank of one job: compared by number
    steps_seen, numbered, shared = by_step_number(results)
    # (the same steps numbered from another start on some rank: compared by position, said so)
    steps_seen, numbered, renumbering = renumbered(
        results, steps_seen, numbered, job_apart(results), groups_why
    )
    if len(timed) >= 2 and not cut_alike:
        doc["spread"] = {"why": apart}
    if len(timed) >= 2 and cut_alike:
        doc["spread"] = {"why": whole} if whole else spread_of(rows, steps_seen, numbered, shared)
    clocks = clock_offsets(steps_seen, job_apart(results), groups_why)
    if not shared:
        clocks = {"aligned": False, "why": numbered, "offsets_ns": None, "matched": 0}
    # Steps that did not happen together (captures at other times) are not compared at all
    elsewhen = captured_apart(steps_seen) if shared and len(results) >= 2 else None
    # A trace of several ranks (one capture, a process per GPU) is compared within itself only
    elsewhen = elsewhen or (several_ranks_within(results) if len(results) >= 2 else None)
    if elsewhen and clocks["aligned"]:
        clocks = {"aligned": False, "why": elsewhen, "offsets_ns": None, "matched": 0}
    doc["clocks"] = clocks
    if len(results) >= 2:
        doc["slowest_by_step"] = (
            {"why": numbered}
            if not shared
            else {"why": elsewhen}
            if elsewhen
            else {"why": whole}
            if whole
            else slowest_by_step(steps_seen, clocks.get("matched_from") == "last")
            if cut_alike
            else {"why": apart}
        )
        if elsewhen:
            doc["warnings"].append(
                f"steps not compared across traces ({elsewhen}): straggler, start skew, ends-last and slowest "
                "by step are not computed"
            )
        elif clocks["aligned"]:
            tolerance = round(clocks["residual_us"] * 1e3)
            from_last = clocks.get("matched_from") == "last"
            doc["straggler"] = stragglers(steps_seen, clocks["offsets_ns"], tolerance, from_last)
            doc["skew"] = (
                {"steps": 0, "why": whole}
                if whole
                else skew(steps_seen, clocks["offsets_ns"], tolerance, from_last)
                if cut_alike
                else {"steps": 0, "why": apart}
            )
            note = ends_together_note(doc["straggler"], doc["skew"])
            if note:  # (the durations stand; what they mean is said beside them)
                for key in ("spread", "slowest_by_step"):
                    if doc.get(key) and not doc[key].get("why") and doc[key].get("slowest"):
                        doc[key]["note"] = note
        else:
            doc["warnings"].append(
                f"clocks not aligned ({clocks['why']}): straggler by arrival, start skew and ends-last are "
                "not computed; 'slowest by step' compares durations only"
            )
    configs = configurations_differ(results) if len(results) >= 2 else None
    if configs:  # (a batch sweep, or runs of several runtimes: step k of one is no step of the other's job)
        for key in ("slowest_by_step", "skew"):
            if key in doc and not doc[key].get("why"):
                doc[key] = {"steps": 0, "why": configs} if key == "skew" else {"why": configs}
        doc["warnings"].append(configs)
    if grouped:
        doc["warnings"].append(grouped)
    if numbered and shared:
        doc["warnings"].append(numbered)
    if renumbering:
        doc["warnings"].append(renumbering)
    steps = {steps_of(r) for r in results}
    if len(steps) > 1 and not numbered:
        doc["warnings"].append(
            f"traces hold {min(steps)} to {max(steps)} iterations; step comparisons use the "
            f"{'last' if clocks.get('matched_from') == 'last' else 'first'} {min(steps)}"
        )
    doc["warnings"] += (
        repeats
        + point_to_point_warnings(results)
        + world_warnings(results)
        + different
        + trace_warnings(results)
        + gpu_warnings(results)
    )
    return doc
