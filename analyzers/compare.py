"""Two analyzed traces side by side: summary deltas and per-kernel-name time and count deltas.

Summary rows compare the **median over iterations** (p50) of each field of :data:`tracekit.fields.ITERATION_FIELDS`
that has a ``compare_label``: the same statistic the framework-bound verdict is taken from, so a side's verdict
and its utilization row always agree. delta = B − A; ratio = B / A (None when A is 0 or either is unknown).
Each median comes with its distribution-free 95% interval (``a_low``/``a_high``, ``b_low``/``b_high``;
:func:`tracekit.analyzers.stability.median_interval`, null with fewer than 6 iterations); ``significant`` is
True when the two intervals do not overlap, False when they do (the difference is *within noise*), None when
either side has no interval.

Per-kernel-name figures are per iteration, over the analyzed iterations (after ``--skip``):

- count_a / count_b: mean number of ops of that name per iteration (every op kind: kernels, memcpy, memset,
  CPU operators).
- time_a_us / time_b_us: mean summed duration of those ops per iteration, in µs (summed op durations, not a
  union: concurrent ops on several streams both count).
- time_delta_us = time_b_us − time_a_us; count_delta = count_b − count_a; time_ratio = time_b_us / time_a_us
  (None when time_a_us is 0). A name absent from one side is null there (shown "—"), and so are its deltas
  and ratio: its ops did not run there, or that side has no op data at all (``a_has_ops``/``b_has_ops`` in
  the document). Rows are sorted by |time delta| counting an absent side as 0, largest first (ties: larger
  total time first).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.analyzers.stability import median_interval
from tracekit.analyzers.stats import Summary
from tracekit.fields import FIELDS, ITERATION_FIELDS

if TYPE_CHECKING:
    from tracekit.analysis import Analysis

#: The statistic compared (and the verdict's): the median over iterations.
STATISTIC = "p50"

#: Summary fields that mean the same whatever the traces measured (the host's clock); the others are device
#: time (GPU kernels, or CPU operators on a CPU-only trace) and are not differenced across devices.
HOST_FIELDS = ("latency_ms", "cpu_ms", "launches", "launch_api_us")

#: Summary row labels that say more than the field table's (shared with ``analyze``): the latency compared is
#: the traced iterations' (``report``'s sweep latency is the untraced latency.csv), and the kernel count by
#: device: kernels without copies and memsets on GPU traces, operators on CPU-only ones (its per-name table
#: counts every op kind).
COMPARE_LABELS = {"latency_ms": "traced latency (ms)"}
KERNEL_LABELS = {
    "gpu": "kernels / iteration (copies, memsets not counted)",
    "cpu": "operators / iteration",
}
#: The kernel count's label where the two sides measured different devices (or it is unknown).
KERNEL_LABEL_MIXED = "kernels or operators / iteration"


def compare_label(name: str, device: str | None) -> str:
    """The ``compare`` summary row label of field ``name`` for traces of ``device`` (their common one)."""
    if name == "kernels":
        return KERNEL_LABELS.get(device or "", KERNEL_LABEL_MIXED)
    return COMPARE_LABELS.get(name) or FIELDS[name].compare_label_for(device)


KERNEL_DELTA_SCHEMA: dict[str, pl.DataType] = {
    "name": pl.String,
    "count_a": pl.Float64,
    "count_b": pl.Float64,
    "count_delta": pl.Float64,
    "time_a_us": pl.Float64,
    "time_b_us": pl.Float64,
    "time_delta_us": pl.Float64,
    "time_ratio": pl.Float64,
}


def per_name(
    analyzed: Analysis, iterations: int | None = None, notes: list[str] | None = None
) -> pl.DataFrame:
    """Per op name: mean count and mean summed duration (µs) per analyzed iteration (``iterations``: over that
    many instead, for a whole-trace window that holds them: :func:`window_iterations`).

    An op without a start or end ran for an unknown time, not 0: a name never timed has no time (null), and a
    name timed in some iterations only has its mean over the iterations in which each of its ops was timed
    (an iteration without the name counts, as 0), said in ``notes``. Kernels without ``dur`` had read 'time
    0.000 µs' (ratio 0.0), and a kernel of 10 µs timed in 1 of 4 iterations 2.5 µs (ratio 0.25)."""
    n_iter = iterations or analyzed.iterations.height
    if n_iter == 0 or analyzed.trace_data.ops.is_empty():
        return pl.DataFrame(schema={"name": pl.String, "count": pl.Float64, "time_us": pl.Float64})
    per_iteration = analyzed.ops.group_by("name", "iteration").agg(
        pl.len().alias("n"),
        (pl.col("end") - pl.col("start")).sum().alias("ns"),
        (pl.col("end").is_null() | pl.col("start").is_null()).any().alias("untimed"),
    )
    per = per_iteration.group_by("name").agg(
        pl.col("n").sum().alias("n"),
        pl.col("ns").filter(~pl.col("untimed")).sum().alias("ns"),
        pl.col("untimed").sum().cast(pl.Int64).alias("untimed"),
    )
    # (a whole-trace window of ``iterations``: its one window timed or not, nothing between)
    known = (
        pl.when(pl.col("untimed") == 0).then(pl.lit(n_iter)).otherwise(pl.lit(0))
        if iterations
        else pl.lit(n_iter) - pl.col("untimed")
    )
    per = per.with_columns(known.alias("known"))
    if notes is not None:
        _untimed_said(per, n_iter, notes)
    return per.select(
        "name",
        (pl.col("n") / n_iter).cast(pl.Float64).alias("count"),
        pl.when(pl.col("known") > 0)
        .then(pl.col("ns") / 1e3 / pl.col("known"))
        .cast(pl.Float64)
        .alias("time_us"),
    )


def _untimed_said(per: pl.DataFrame, n_iter: int, notes: list[str]) -> None:
    """Notes on the names of :func:`per_name`'s frame (``n``, ``untimed``, ``known``) that ran without a
    duration: never timed (no time), or timed in some iterations only (the mean over those)."""
    never = per.filter(pl.col("known") == 0).sort("name")["name"].to_list()
    partly = per.filter((pl.col("untimed") > 0) & (pl.col("known") > 0)).sort("known", "name")
    if never:
        notes.append(
            f"{len(never)} op name{'s' if len(never) > 1 else ''} ({_names_shown(never)}) ran without a "
            f"duration in every iteration: {'their' if len(never) > 1 else 'its'} per-name time is not known "
            "(shown as none, not 0)"
        )
    if not partly.is_empty():
        first = partly.row(0, named=True)
        notes.append(
            f"{partly.height} op name{'s' if partly.height > 1 else ''} "
            f"({_names_shown(partly['name'].to_list())}) ran without a duration in some iterations: "
            f"{'their' if partly.height > 1 else 'its'} per-name time is the mean over the iterations in which "
            f"{'they were' if partly.height > 1 else 'it was'} timed (as few as {first['known']} of {n_iter}, "
            f"{_shown_name(first['name'])}), not over all {n_iter}"
        )


def _names_shown(names: list[str], most: int = 3) -> str:
    shown = ", ".join(_shown_name(n) for n in names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


#: Copy and memset names with their memory kind (Kineto's "Memset (Device)", "Memcpy HtoD (Pageable ->
#: Device)"), and the kind a profiler writes where it did not learn it (a copy or memset inside a CUDA graph
#: replay: "Memset (Unknown)").
_KINDED = r"^(Memset|Memcpy [A-Za-z]+) \((.+)\)$"
UNKNOWN_KIND = "Unknown"


def _unknown_kinds_matched(a: pl.DataFrame, b: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``a`` and ``b`` with a copy or memset whose memory kind one side did not learn (``UNKNOWN_KIND``: the
    same op replayed from a CUDA graph) named as the other side's op of that kind, when that side has exactly
    one name of that op left unmatched: both renamed "Memset (Device in A, Unknown in B)". Without this the
    same memsets read as one name gone and another new. Other names are kept. Loops over distinct names
    (tens), not events."""
    # (a kernel of no name -- an nsys name id missing from StringIds, a Kineto "name": null -- has no kind)
    names_a, names_b = (set(side["name"].drop_nulls().to_list()) for side in (a, b))
    # (op, memory kind) of every copy and memset name, parsed once
    kinded = {n: m.groups() for n in names_a | names_b if (m := re.match(_KINDED, n)) is not None}
    renames_a: dict[str, str] = {}
    renames_b: dict[str, str] = {}
    for own, other, own_renames, other_renames, unknown_side, known_side in (
        (names_a, names_b, renames_a, renames_b, "A", "B"),
        (names_b, names_a, renames_b, renames_a, "B", "A"),
    ):
        for name in sorted(own - other):
            op, kind = kinded.get(name, (None, None))
            if kind != UNKNOWN_KIND:
                continue
            candidates = [
                n
                for n in sorted(other - own)
                if n not in other_renames
                and n in kinded
                and kinded[n][0] == op
                and kinded[n][1] != UNKNOWN_KIND
            ]
            if len(candidates) != 1:
                continue
            joined = f"{op} ({kinded[candidates[0]][1]} in {known_side}, {UNKNOWN_KIND} in {unknown_side})"
            own_renames[name] = joined
            other_renames[candidates[0]] = joined
    if renames_a:
        a = a.with_columns(pl.col("name").replace(renames_a))
    if renames_b:
        b = b.with_columns(pl.col("name").replace(renames_b))
    return a, b


# Nsight Compute demangles a kernel's name in its own way, so the same kernel of one run is spelled
# differently in an ncu report and in a Kineto or Nsight Systems trace: ``at::<unnamed>`` for
# ``at::native::(anonymous namespace)``, namespaces dropped (``at::vectorized_gather_kernel`` for
# ``at::native::vectorized_gather_kernel``), ``0``/``1`` and ``(int)4`` for ``false``/``true`` and ``4``,
# ``2`` for ``2ul``, ``[lambda(int) (instance 1)]`` for ``{lambda(int)#1}``, ``>>`` for ``> >``, ``void `` before a
# function template inside the template arguments, and parameter lists in template parameter names (``const T1 &``).
_LAMBDA_ARGS = r"\((?:[^()]|\([^()]*\))*\)"
_KINETO_LAMBDA = re.compile(r"\{lambda" + _LAMBDA_ARGS + r"#(\d+)\}")
_NCU_LAMBDA = re.compile(r"\[lambda" + _LAMBDA_ARGS + r"\s*\(instance (\d+)\)\]")
_ANONYMOUS = re.compile(r"(?:\(anonymous namespace\)|<unnamed>)::")
_RETURN_VOID = re.compile(r"\bvoid\s+(?=[A-Za-z_])")
_INT_SUFFIX = re.compile(r"\b(\d+)(?:ull|ul|ll|u|l)\b", re.IGNORECASE)
_QUALIFIER = re.compile(r"\b[A-Za-z_]\w*::")
_PARENS = re.compile(r"\([^()]*\)")
_SPACE = re.compile(r"\s+")


def kernel_name_key(name: str) -> str:
    """A kernel's name with what Nsight Compute and Kineto/Nsight Systems spell differently taken out: every
    namespace or class qualifier, every parenthesised group (parameter lists, casts such as ``(int)``, a lambda's
    arguments), a return type ``void``, integer suffixes, ``true``/``false`` as 1/0 and all spaces; lambdas as
    ``lambda#N``. What stays: the kernel's and every template's own name and the template arguments. Two kernels
    that differ only in what is taken out get the same key: :func:`paired_spellings` pairs a key only where
    each side has exactly one name of it."""
    key = _KINETO_LAMBDA.sub(r"lambda#\1", name)
    key = _NCU_LAMBDA.sub(r"lambda#\1", key)
    key = _ANONYMOUS.sub("", key)
    key = _RETURN_VOID.sub("", key)
    key = re.sub(r"\bfalse\b", "0", key)
    key = re.sub(r"\btrue\b", "1", key)
    key = _QUALIFIER.sub("", key)
    while True:
        shorter = _PARENS.sub("", key)
        if shorter == key:
            break
        key = shorter
    key = _INT_SUFFIX.sub(r"\1", key)
    return _SPACE.sub("", key)


#: a template parameter as Nsight Compute names one in a parameter list (``T1``, ``const T6 *``)
_TEMPLATE_PARAMETER = re.compile(r"\bT\d*\b")
_CV = re.compile(r"\b(?:const|volatile)\b")
_OPENING = {")": "(", ">": "<", "]": "[", "}": "{"}


def _parameters(name: str) -> list[str] | None:
    """The parameters of the parameter list that ends ``name`` (split at its top-level commas), or None when
    the name does not end in one."""
    text = name.rstrip()
    if not text.endswith(")"):
        return None
    depth, i = 0, len(text) - 1
    while i >= 0:  # back to the "(" that opens the last group
        c = text[i]
        if c in _OPENING:
            depth += 1
        elif c in "(<[{":
            depth -= 1
            if depth == 0:
                break
        i -= 1
    if i < 0:
        return None
    inner, parts, level, current = text[i + 1 : -1], [], 0, []
    for c in inner:
        if c in "(<[{":
            level += 1
        elif c in ")>]}":
            level -= 1
        if c == "," and level == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
    parts.append("".join(current))
    return [p.strip() for p in parts] if inner.strip() else []


def same_parameters(a: str, b: str) -> bool:
    """Whether two spellings of a kernel's name can be one function by their parameter lists: the same number
    of parameters, each alike once spelled as :func:`kernel_name_key` spells names (``const`` aside), or a
    template parameter on either side (Nsight Compute names a templated kernel's parameters ``T1``, ``const
    T6 *``); a name without a list says nothing. Overloads (``scale_kernel(__half*, int)`` and
    ``scale_kernel(float*, int)``) are two kernels, whose key alone is one."""
    pa, pb = _parameters(a), _parameters(b)
    if pa is None or pb is None:
        return True
    if len(pa) != len(pb):
        return False
    for x, y in zip(pa, pb, strict=True):
        if _TEMPLATE_PARAMETER.search(x) or _TEMPLATE_PARAMETER.search(y):
            continue
        if kernel_name_key(_CV.sub("", x)) != kernel_name_key(_CV.sub("", y)):
            return False
    return True


def paired_spellings(
    names_ncu: list[str], names_other: list[str]
) -> tuple[dict[str, str], list[tuple[str, list[str], list[str]]]]:
    """(renames, ambiguous): ``renames`` maps an ncu name to the other side's name of the same kernel where
    the two differ in spelling only (:func:`kernel_name_key`), the key being held by exactly that one name on
    each side and neither name found on the other side as it is; ``ambiguous``: (key, ncu names, other names)
    of each key that would pair names found on one side only but is held by several names on a side (two
    kernels that differ only in what the key leaves out): not paired."""
    ncu_set, other_set = set(names_ncu), set(names_other)
    by_key_ncu: dict[str, list[str]] = {}
    by_key_other: dict[str, list[str]] = {}
    for names, by_key in ((sorted(ncu_set), by_key_ncu), (sorted(other_set), by_key_other)):
        for name in names:
            by_key.setdefault(kernel_name_key(name), []).append(name)
    renames: dict[str, str] = {}
    ambiguous: list[tuple[str, list[str], list[str]]] = []
    for key, ncu_names in sorted(by_key_ncu.items()):
        other_names = by_key_other.get(key, [])
        lone_ncu = [n for n in ncu_names if n not in other_set]
        lone_other = [n for n in other_names if n not in ncu_set]
        if not lone_ncu or not lone_other:
            continue
        if len(ncu_names) == 1 and len(other_names) == 1:
            if same_parameters(ncu_names[0], other_names[0]):  # (else two overloads: two kernels, not paired)
                renames[ncu_names[0]] = other_names[0]
        else:
            ambiguous.append((key, ncu_names, other_names))
    return renames, ambiguous


def _shown_name(name: str, limit: int = 80) -> str:
    return name if len(name) <= limit else name[: limit - 3] + "..."


def kernel_deltas(
    a: pl.DataFrame, b: pl.DataFrame, ncu_side: str | None = None, notes: list[str] | None = None
) -> pl.DataFrame:
    """Outer join of two :func:`per_name` frames; deltas B − A, sorted by |time delta| (then total time, name).
    A copy or memset of unknown memory kind on one side is matched to the other side's
    (:func:`_unknown_kinds_matched`). ``ncu_side`` ("a" or "b"): the side that is an Nsight Compute report
    beside another profiler's trace, whose kernel names are paired with the other side's spelling of the same
    kernel (:func:`paired_spellings`) and shown in that spelling; what was paired, and what was not because
    it is ambiguous, is said in ``notes``."""
    a, b = _unknown_kinds_matched(a, b)
    if ncu_side in ("a", "b"):
        ncu, other = (a, b) if ncu_side == "a" else (b, a)
        renames, ambiguous = paired_spellings(ncu["name"].to_list(), other["name"].to_list())
        if renames:
            ncu = ncu.with_columns(pl.col("name").replace(renames))
            a, b = (ncu, other) if ncu_side == "a" else (other, ncu)
        if notes is not None:
            side, others = ncu_side.upper(), "B" if ncu_side == "a" else "A"
            if renames:
                notes.append(
                    f"{len(renames)} kernel name{'s' if len(renames) > 1 else ''} of {side} (Nsight Compute) "
                    f"paired with {others}'s spelling of the same kernel and shown in it (ncu demangles "
                    "namespaces, lambdas, template arguments and parameter lists in its own way)"
                )
            for _key, ncu_names, other_names in ambiguous:
                notes.append(
                    f"not paired: {len(ncu_names)} kernel name{'s' if len(ncu_names) > 1 else ''} of {side} "
                    f"and {len(other_names)} of {others} differ only in their spelling of namespaces, "
                    f"parameter lists or casts (e.g. {_shown_name(ncu_names[0])}), so which is which cannot "
                    "be told: each is shown as a name of its side only"
                )
    joined = a.rename({"count": "count_a", "time_us": "time_a_us"}).join(
        b.rename({"count": "count_b", "time_us": "time_b_us"}), on="name", how="full", coalesce=True
    )
    ta, tb = pl.col("time_a_us").fill_null(0.0), pl.col("time_b_us").fill_null(0.0)
    return (
        joined.with_columns(
            (pl.col("count_b") - pl.col("count_a")).alias("count_delta"),
            (pl.col("time_b_us") - pl.col("time_a_us")).alias("time_delta_us"),
            pl.when(pl.col("time_a_us") != 0)
            .then(pl.col("time_b_us") / pl.col("time_a_us"))
            .alias("time_ratio"),
        )
        .with_columns((tb - ta).abs().alias("_abs"), (ta + tb).alias("_tot"))
        .sort(["_abs", "_tot", "name"], descending=[True, True, False])
        .select(list(KERNEL_DELTA_SCHEMA))
        .cast(KERNEL_DELTA_SCHEMA)
    )


def summary_deltas(
    a: Summary,
    b: Summary,
    device: str | None = "gpu",
    frames: tuple[pl.DataFrame, pl.DataFrame] | None = None,
    same_device: bool = True,
) -> list[dict[str, Any]]:
    """Rows metric, name (label), a, b, delta (b − a), ratio (b / a) of the medians of two summaries, with
    each median's 95% interval and whether the difference is outside the noise (module docstring) when the
    per-iteration ``frames`` (A's, B's) are given.

    ``device``: the traces' common device ("cpu": busy/utilization worded as operator time); ``same_device``
    False (one side measured CPU operators, the other GPU kernels): only :data:`HOST_FIELDS` get a delta,
    a ratio and ``significant``, the device-time fields keep each side's value with those null."""
    rows = []
    for f in ITERATION_FIELDS:
        if f.compare_label is None:
            continue
        va, vb = getattr(a[f.name], STATISTIC), getattr(b[f.name], STATISTIC)
        apart = not same_device and f.name not in HOST_FIELDS
        ia = ib = None
        if frames is not None:
            ia, ib = (_interval(frame, f.name) for frame in frames)
        significant = None
        if ia is not None and ib is not None and va is not None and vb is not None and not apart:
            significant = ia[1] < ib[0] or ib[1] < ia[0]
        rows.append(
            {
                "metric": f.name,
                "name": compare_label(f.name, device),
                "a": va,
                "b": vb,
                "delta": vb - va if va is not None and vb is not None and not apart else None,
                "ratio": vb / va if va not in (None, 0) and vb is not None and not apart else None,
                "a_low": ia[0] if ia else None,
                "a_high": ia[1] if ia else None,
                "b_low": ib[0] if ib else None,
                "b_high": ib[1] if ib else None,
                "significant": significant,
            }
        )
    return rows


def _interval(frame: pl.DataFrame, column: str) -> tuple[float, float] | None:
    """The 95% interval of the median of ``column`` over the iterations (nulls skipped), or None."""
    if column not in frame.columns:
        return None
    values = frame.get_column(column).drop_nulls().cast(pl.Float64).to_list()
    return median_interval(values)


def _measured(device: str | None) -> str:
    return "CPU operators" if device == "cpu" else "GPU kernels" if device == "gpu" else f"{device} work"


def _side(analyzed: Analysis) -> dict[str, Any]:
    return {
        "path": analyzed.trace.path,
        "runtime": analyzed.config.runtime,
        "runtime_source": analyzed.config.sources.get("runtime"),
        "runtime_label": analyzed.config.runtime_label,
        "bound": analyzed.summary.bound,
        "gpu_utilization": getattr(analyzed.summary["gpu_utilization"], STATISTIC),
        "iterations": analyzed.iterations.height,
        "device": analyzed.device,
        "synthetic": analyzed.config.synthetic,
    }


#: The range name of an analysis whose one "iteration" is a window over its whole trace (no ranges in it).
WHOLE_TRACE_WINDOW = "window"


def is_whole_trace_window(analyzed: Analysis) -> bool:
    """Whether the analysis has no iterations of its own: one window over the whole trace (a trace without
    ranges, such as an Nsight Compute report), whose figures are totals over the trace, not per iteration."""
    return analyzed.range_name == WHOLE_TRACE_WINDOW and analyzed.iterations.height == 1


def window_iterations(analyzed: Analysis) -> int | None:
    """How many iterations a whole-trace window holds by its run's own word (the sidecar's ``iterations``:
    ``tracekit collect --profiler ncu`` profiles that many 'iteration' ranges and nothing else), or None."""
    meta = analyzed.source.trace.meta if analyzed.source is not None else {}
    count = meta.get("iterations")
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else None


def windows_sentence(warnings: Sequence[str]) -> str | None:
    """The analysis' own warning that counts ``--split-idle`` windows against the trace's ranges
    (:func:`tracekit.analyzers.ranges.synthetic_windows`: "N windows against M ranges named X in the trace: ..."),
    or None."""
    return next((w for w in warnings if _WINDOWS_SENTENCE.match(w)), None)


_WINDOWS_SENTENCE = re.compile(r"\d+ windows? against \d+ ranges named ")


def windows_not_iterations(analyzed: Analysis) -> str | None:
    """Why a side's iterations, windows cut at idle gaps (``--split-idle``: range ``idle>MSms``), are not its
    iterations, or None (they are, as far as its trace can tell): its trace holds ranges the default rules
    choose, at least 2 of them, and the windows are not those ranges (:func:`tracekit.analyzers.ranges.
    windows_off_ranges`: they number otherwise, the threshold cut inside iterations or joined them; or as
    many, but not one window to each range, it did both; the reader's own warning,
    :func:`tracekit.analyzers.ranges.synthetic_windows`). Their figures are then per window, not per
    iteration: the H200 eager b1 sample under ``--split-idle 0.05`` is 675 windows of 0.124 ms for 20
    iterations of 7.9 ms, its CUDA-graph b1 6 windows for 20, and compare had read 'B / A 10.03x' on the
    latency and 71.5x on GPU busy; 4 windows that cut one iteration in two and joined two others (0.108,
    0.108, 0.308, 1.308 ms for 4 ranges of 0.99 ms) had passed as the 4 iterations by their count."""
    name = analyzed.range_name or ""
    if not name.startswith("idle>"):
        return None
    from tracekit.analyzers.ranges import _synthetic_request, windows_off_ranges
    from tracekit.errors import TracekitError

    try:
        trace = analyzed.trace_data
        request = _synthetic_request(trace, name)
    except TracekitError:
        # (an analysis loaded from its JSON document has no trace: the reader's own sentence, where it said one)
        said = windows_sentence(analyzed.warnings)
        return (
            None
            if said is None
            else f"{said.split(' (', 1)[0]}, so its figures are per window, not per iteration"
        )
    if request is None or request[0] is None:
        return None
    found = windows_off_ranges(trace, request[0])
    if found is None:
        return None
    windows, count, range_name, verb = found
    at = ", but not at them" if windows == count else ""
    return (
        f"{windows} windows cut at idle gaps ({name}) against the {count} ranges named {range_name!r} its trace "
        f"holds{at}: the threshold {verb} iterations, so its figures are per window, not per iteration"
    )


def _without_sides(rows: list[dict[str, Any]], sides: list[str]) -> list[dict[str, Any]]:
    """The summary rows with the values of ``sides`` (and then every delta, ratio and interval test) withheld;
    the rows as they are without any."""
    if not sides:
        return rows
    gone: dict[str, Any] = {"delta": None, "ratio": None, "significant": None}
    for side in sides:
        gone.update({side: None, f"{side}_low": None, f"{side}_high": None})
    return [{**row, **gone} for row in rows]


def compare(a: Analysis, b: Analysis, config: str | None = None) -> dict[str, Any]:
    """The comparison document: ``summary`` rows, ``kernels`` (all names, top changes first), both sides.

    Where one side is a whole-trace window (:func:`is_whole_trace_window`) and the other has iterations, the
    window's figures are totals over its trace, not per iteration: its summary values are withheld, and its
    per-name figures are divided by the iterations its run says it holds (:func:`window_iterations`), or
    withheld when nothing says how many."""
    from tracekit.fields import common_device

    windows = [side for side, x in (("a", a), ("b", b)) if is_whole_trace_window(x)]
    window = windows[0] if len(windows) == 1 else None
    spans: dict[str, int | None] = {"a": None, "b": None}
    window_notes: list[str] = []
    if window is not None:
        analyzed, other = (a, b) if window == "a" else (b, a)
        spans[window] = window_iterations(analyzed)
        held = (
            f"its run says it holds {spans[window]} iterations, so the per-name table divides its figures by "
            f"{spans[window]}"
            if spans[window]
            else "nothing says how many iterations it holds, so the per-name table shows none of its figures"
        )
        window_notes.append(
            f"{window.upper()} has no iterations of its own (one window over its whole trace) and "
            f"{'B' if window == 'a' else 'A'} has {other.iterations.height}: {window.upper()}'s figures are totals "
            f"over its trace, not per iteration, so the summary shows none of them; {held}"
        )
    elif len(windows) == 2:
        # two whole-trace windows (two Nsight Compute reports): each side's figures are totals over its own
        # trace, of as many iterations as its run says (3 against 6, or unknown): not per iteration, and not
        # comparable as they are (two 3-iteration reports read "606 kernels / iteration" for 202)
        spans = {"a": window_iterations(a), "b": window_iterations(b)}
        known = [side.upper() for side in ("a", "b") if spans[side]]
        unknown = [side.upper() for side in ("a", "b") if not spans[side]]
        if not unknown:
            held = (
                f"the per-name table divides A's figures by {spans['a']} and B's by {spans['b']}, the iterations "
                "their runs say they hold"
            )
        elif known:
            held = (
                f"the per-name table divides {known[0]}'s figures by {spans[known[0].lower()]}, the iterations its "
                f"run says it holds; nothing says how many {unknown[0]} holds, so it shows none of {unknown[0]}'s"
            )
        else:
            held = (
                "nothing says how many iterations either holds (a sidecar's 'iterations'), so the per-name table "
                "shows none of their figures"
            )
        window_notes.append(
            "A and B have no iterations of their own (each one window over its whole trace): their figures are "
            f"totals over each trace, not per iteration, so the summary shows none of them; {held}"
        )
    # windows of --split-idle that are not the side's iterations: per window, not comparable per iteration
    cut = {side: why for side, x in (("a", a), ("b", b)) if (why := windows_not_iterations(x)) is not None}
    for side, why in cut.items():
        window_notes.append(
            f"{side.upper()}'s iterations are {why}: the summary and the per-name table show none of "
            f"{side.upper()}'s figures (compare without --split-idle, or with a threshold that cuts at the ranges)"
        )
    ncu = [side for side, x in (("a", a), ("b", b)) if x.config.profiler == "ncu"]
    spelling_notes: list[str] = []
    untimed: dict[str, list[str]] = {"a": [], "b": []}
    kernels = kernel_deltas(
        per_name(a, spans["a"], untimed["a"]),
        per_name(b, spans["b"], untimed["b"]),
        ncu_side=ncu[0] if len(ncu) == 1 else None,
        notes=spelling_notes,
    )
    withheld = {side for side in [*windows, *cut] if spans[side] is None}
    untimed_notes = [
        f"{side.upper()}: {note}" for side in ("a", "b") if side not in withheld for note in untimed[side]
    ]
    for side in [*windows, *cut]:
        if spans[side] is None:
            kernels = kernels.with_columns(
                pl.lit(None, pl.Float64).alias(c)
                for c in (f"count_{side}", f"time_{side}_us", "count_delta", "time_delta_us", "time_ratio")
                if c in kernels.columns
            )
    device = common_device([a.device, b.device])
    same_device = not (a.device and b.device and a.device != b.device)
    apart = (
        []
        if same_device
        else [
            f"A measured {_measured(a.device)} and B {_measured(b.device)}: busy, utilization, kernels and idle "
            "time are different quantities on the two sides, so only latency, range length and launches are "
            "differenced"
        ]
    )
    # iterations cut by different ranges ('iteration' against 'ProfilerStep#*', or ORT's 'model_run', which
    # leaves out the Python call around it): one side's iteration may be other work than the other's; said as
    # `analyze A B` says it (ranks.range_warning); whole-trace windows and --split-idle windows that are not
    # the iterations are said above
    if not windows and not cut:
        from tracekit.analyzers.ranks import range_warning

        apart += range_warning([{"range": a.range_name, "label": "A"}, {"range": b.range_name, "label": "B"}])
    summary = summary_deltas(a.summary, b.summary, device, (a.iterations, b.iterations), same_device)
    sides = {"a": _side(a), "b": _side(b)}
    for side in cut:  # (the median utilization of its windows, not of its iterations)
        sides[side]["gpu_utilization"] = None
    return {
        "config": config,
        "statistic": STATISTIC,
        "device": device,
        "a": sides["a"],
        "b": sides["b"],
        "summary": _without_sides(summary, [*windows, *cut]),
        "kernels": kernels.to_dicts(),
        "a_has_ops": not a.trace_data.ops.is_empty(),
        "b_has_ops": not b.trace_data.ops.is_empty(),
        "warnings": apart
        + window_notes
        + spelling_notes
        + untimed_notes
        + [f"A: {w}" for w in a.warnings]
        + [f"B: {w}" for w in b.warnings],
    }
