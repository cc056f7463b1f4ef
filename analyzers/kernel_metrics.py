"""SM activity and warp occupancy from per-kernel metrics (Nsight Compute, or Kineto's estimate).

Per kernel (percent):

- SMs active: ``sm__cycles_active.avg.pct_of_peak_sustained_elapsed``; when only base counters exist,
  100 × ``sm__cycles_active.avg`` / ``sm__cycles_elapsed.avg``, else 100 × ``sm__cycles_active.avg`` /
  ``gpc__cycles_elapsed.max`` (reports collected without ``sm__cycles_elapsed``). The first one present
  and not NaN is used; ``how`` names it.
- Warp occupancy: ``sm__warps_active.avg.pct_of_peak_sustained_active`` (achieved occupancy: resident warps
  over the SM's warp slots, averaged over the cycles the SM was active); for Kineto traces the profiler's
  ``est. achieved occupancy %`` (an *estimate* CUPTI derives from launch parameters; labelled as such).

Two aggregates:

- kernel-time average = Σ(kernel time × value) / Σ(kernel time): the SM state *while kernels run*.
- wall-time figure, per iteration = Σ(kernel time × value) / latency over the iteration's kernels, then the
  mean over iterations (the study's definition: idle time counts as 0). Needs a timeline trace of the same
  run: kernel times are then the timeline's (measured in the application, not under ncu's replay).

Joining Nsight Compute kernels to a timeline: ncu kernels are taken in profiling order, restricted to the
NVTX range that delimits iterations when they carry it (innermost, else anywhere in their range stack:
``meta["nvtx_stacks"]``); the timeline's kernels of the analyzed iterations
are taken in start order. When every iteration launches the same number K of kernels, ncu kernel j is
matched to position j mod K of every iteration (ncu usually profiles fewer iterations than the timeline
holds; repeated positions are averaged); otherwise kernels are matched one to one in order, and only
iterations whose kernels are all matched get a value. Names are compared after reduction to the bare
function name (``void ns::k<...>(args)`` -> ``k``; an Itanium-mangled name, ``ncu --print-kernel-base
mangled``, reduces to the same bare name); a count mismatch is a warning. A name mismatch means the matched
ncu value is another kernel's: that timeline kernel gets no value (its iteration no wall-time figure), with a
warning; when most matched names differ (a profile cut elsewhere in the iteration, another configuration's
kernels), no ncu value is used at all.

NaN values (an incomplete ncu replay) and kernels without a value are skipped and counted, never read as 0
in the kernel-time average (the covered share of kernel time is ``coverage``). In the wall-time figure a
NaN kernel would count as 0: an iteration whose NaN kernels hold more than ``NAN_TIME_TOLERANCE`` (1%) of
its kernel time gets no value. Cycle counts in SI-prefixed units ("Kcycle") are scaled to cycles before
the SM-active ratio is taken.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tracekit.analyzers.iterations import IterationAnalysis, assign_ops, choose_ranges
from tracekit.analyzers.stats import summarize_columns
from tracekit.model import Trace

SM_ACTIVE_PCT = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
SM_CYCLES_ACTIVE = "sm__cycles_active.avg"
SM_CYCLES_ELAPSED = "sm__cycles_elapsed.avg"
GPC_CYCLES_ELAPSED = "gpc__cycles_elapsed.max"
WARPS_ACTIVE_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"
KINETO_OCCUPANCY = "est. achieved occupancy %"
NEEDED = (
    SM_ACTIVE_PCT,
    SM_CYCLES_ACTIVE,
    SM_CYCLES_ELAPSED,
    GPC_CYCLES_ELAPSED,
    WARPS_ACTIVE_PCT,
    KINETO_OCCUPANCY,
)
SM_ACTIVE_RATIO = f"100*{SM_CYCLES_ACTIVE}/{SM_CYCLES_ELAPSED}"
SM_ACTIVE_GPC_RATIO = f"100*{SM_CYCLES_ACTIVE}/{GPC_CYCLES_ELAPSED}"
COLUMNS = ("sms_active", "warp_occupancy")


def _skip_template_args(s: str, i: int) -> int:
    """Index just past the ``I...E`` template argument list of a mangled name that opens at ``s[i]`` ("I")."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c.isdigit():  # a source name: <length><identifier>
            m = re.match(r"\d+", s[i:])
            i += len(m.group()) + int(m.group()) if m else 1
            continue
        if c in "ST":  # a substitution or template parameter: S_, S0_, T_, T1_; St, Sa... have no "_"
            m = re.match(r"[ST][0-9A-Z]*_", s[i:])
            i += len(m.group()) if m else 2 if c == "S" else 1
            continue
        if c == "L" and not s.startswith("L_Z", i):  # a literal: L <type> <value> E
            i += 1
            m = re.match(r"\d+", s[i:])
            if m:  # an enumeration type, named by its source name
                i += len(m.group()) + int(m.group())
            end = s.find("E", i)
            if end < 0:
                return len(s)
            i = end + 1
            continue
        if c in "INXJ":
            depth += 1
        elif c == "E":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == "D" and i + 1 < len(s):
            i += 1
        i += 1
    return len(s)


def _mangled_base(name: str) -> str | None:
    """The bare function name of an Itanium-mangled name (``ncu --print-kernel-base mangled``:
    ``_ZN2at6native29vectorized_elementwise_kernelILi4E...EEviT0_T1_`` -> ``vectorized_elementwise_kernel``);
    None when it does not parse as one."""
    i = 2
    if name.startswith("L", i):  # internal linkage
        i += 1
    nested = name.startswith("N", i)
    if nested:
        i += 1
        while i < len(name) and name[i] in "rVKRO":  # cv- and ref-qualifiers of a member function
            i += 1
    last = None
    while i < len(name):
        c = name[i]
        if c.isdigit():
            m = re.match(r"\d+", name[i:])
            assert m is not None
            start = i + len(m.group())
            last = name[start : start + int(m.group())]
            i = start + int(m.group())
            if len(last) < int(m.group()):
                return None
        elif c == "I":
            i = _skip_template_args(name, i)
        elif c == "S":
            m = re.match(r"S[0-9A-Z]*_|St|Sa|Sb|Ss|Si|So|Sd", name[i:])
            if m is None:
                return None
            i += len(m.group())
        else:
            break
        if not nested:
            if i < len(name) and name[i] == "I":
                i = _skip_template_args(name, i)
            break
        if i < len(name) and name[i] == "E":
            break
    if last is None:
        return None
    return "anon" if last.startswith("_GLOBAL__N") else last


def base_name(name: str | None) -> str | None:
    """The bare function name of a kernel: drops return type, template arguments, parameters, namespaces.
    An Itanium-mangled name (``_Z...``, as ``ncu --print-kernel-base mangled`` prints it) gives the same bare
    name as its demangled spelling (timelines keep demangled names)."""
    if name is None:
        return None
    stripped = name.strip()
    if stripped.startswith("_Z") and (bare := _mangled_base(stripped)) is not None:
        return bare
    s = stripped.replace("(anonymous namespace)", "anon").replace("<unnamed>", "anon")
    previous = None
    while previous != s:  # remove innermost template argument lists until none remain
        previous = s
        s = re.sub(r"<[^<>]*>", "", s)
    s = s.split("(", 1)[0].strip()
    s = s.split()[-1] if s.split() else s
    return s.rsplit("::", 1)[-1]


#: SI prefixes ncu's automatic units put on counts ("Kcycle", "Mcycle"; ``--print-units base`` writes "cycle")
_PREFIX = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _cycle_scale(unit: pl.Expr) -> pl.Expr:
    """The factor from a cycle count's unit to cycles ("Kcycle" -> 1000); 1 for every other unit. The SM-active
    ratio divides two cycle counts, whose units ncu may scale differently."""
    prefix = unit.str.strip_chars().str.extract(r"^([kKMGT]?)cycles?$", 1)
    return prefix.replace_strict(_PREFIX, default=1.0, return_dtype=pl.Float64).fill_null(1.0)


def _candidates(present: set[str]) -> dict[str, list[tuple[str, pl.Expr]]]:
    def col(name: str) -> pl.Expr:
        return pl.col(name) if name in present else pl.lit(None, pl.Float64)

    return {
        "sms_active": [
            (SM_ACTIVE_PCT, col(SM_ACTIVE_PCT)),
            (SM_ACTIVE_RATIO, 100.0 * col(SM_CYCLES_ACTIVE) / col(SM_CYCLES_ELAPSED)),
            (SM_ACTIVE_GPC_RATIO, 100.0 * col(SM_CYCLES_ACTIVE) / col(GPC_CYCLES_ELAPSED)),
        ],
        "warp_occupancy": [
            (WARPS_ACTIVE_PCT, col(WARPS_ACTIVE_PCT)),
            (KINETO_OCCUPANCY, col(KINETO_OCCUPANCY)),
        ],
    }


def per_kernel(kernel_metrics: pl.DataFrame) -> pl.DataFrame:
    """One row per kernel: kernel, name, range, duration_ns, sms_active, sms_active_how, warp_occupancy,
    warp_occupancy_how (values in %; NaN where the chosen metric is NaN; null where none was collected)."""
    kernels = kernel_metrics.select("kernel", "name", "range", "duration_ns").unique("kernel", keep="first")
    wanted = kernel_metrics.filter(pl.col("metric").is_in(NEEDED))
    if "unit" in wanted.columns:
        wanted = wanted.with_columns(pl.col("value") * _cycle_scale(pl.col("unit")))
    if wanted.is_empty():
        wide = kernels
    else:
        wide = kernels.join(
            wanted.pivot(on="metric", index="kernel", values="value", aggregate_function="first"),
            on="kernel",
            how="left",
        )
    present = set(wide.columns)
    exprs = []
    for column, cands in _candidates(present).items():
        usable = [(how, e.cast(pl.Float64)) for how, e in cands]
        good = lambda e: e.is_not_null() & e.is_not_nan()  # noqa: E731
        value = pl.coalesce([pl.when(good(e)).then(e) for _, e in usable] + [e for _, e in usable])
        how = pl.coalesce(
            [pl.when(good(e)).then(pl.lit(h)) for h, e in usable]
            + [pl.when(e.is_not_null()).then(pl.lit(h)) for h, e in usable]
        )
        exprs += [value.alias(column), how.alias(f"{column}_how")]
    return wide.select("kernel", "name", "range", "duration_ns", *exprs).sort("kernel")


@dataclass
class KernelMetricsResult:
    """``kernels``: per-kernel values (plus, when joined, iteration, position, timeline_ns, name_match);
    ``iterations``: index, latency_ms, sms_active, warp_occupancy (wall-time, %) or None without a timeline;
    ``summary[column]``: {"source", "metric" (how), "unit", "wall_time" (mean over iterations, or None),
    "kernel_time", "kernels" (with a value), "nan_skipped", "missing", "coverage", stats over iterations}
    or None when no kernel has the metric."""

    source: str
    kernels: pl.DataFrame
    iterations: pl.DataFrame | None
    summary: dict[str, dict[str, Any] | None]
    warnings: list[str] = field(default_factory=list)

    def value(self, column: str, wall_time: bool = True) -> float | None:
        entry = self.summary.get(column)
        if entry is None:
            return None
        return entry["wall_time"] if wall_time else entry["kernel_time"]


def _timeline_kernels(
    timeline: Trace, analysis: IterationAnalysis, range_name: str | None, ops: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Kernels of the analyzed iterations: iteration, position (0-based within it, start order), name, ns.

    ``ops``: the timeline's ops already assigned to the analyzed iterations (``Analysis.ops``), else
    assigned here."""
    if ops is None:
        ranges, _, _ = choose_ranges(timeline, range_name if range_name is not None else analysis.range_name)
        ops = assign_ops(timeline, ranges)
    ops = ops.filter(
        (pl.col("kind") == "kernel") & pl.col("iteration").is_in(analysis.iterations["index"].implode())
    )
    return (
        ops.sort("iteration", "start", "end")
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("iteration").alias("position"))
        .select(
            "op",
            "iteration",
            "position",
            pl.col("name").alias("timeline_name"),
            (pl.col("end") - pl.col("start")).alias("timeline_ns"),
        )
    )


def _join_ncu(values: pl.DataFrame, timeline_kernels: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """Timeline kernels with the matched ncu values (see module docstring)."""
    m = values.height
    counts = timeline_kernels.group_by("iteration").len()["len"]
    n = timeline_kernels.height
    if m == 0 or n == 0:
        return timeline_kernels.clear().with_columns(
            [pl.lit(None, pl.Float64).alias(c) for c in COLUMNS] + [pl.lit(None, pl.String).alias("name")]
        )
    k = int(counts[0]) if counts.n_unique() == 1 else None
    ordered = values.sort("kernel").with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("j"))
    if k is not None and m >= k:
        used = (m // k) * k
        if m % k:
            warnings.append(
                f"Nsight Compute holds {m} kernels, not a multiple of the {k} kernels per iteration: "
                f"the last {m % k} are ignored"
            )
        reps = ordered.filter(pl.col("j") < used).with_columns((pl.col("j") % k).alias("position"))
        names = reps.group_by("position").agg(pl.col("name").first())
        by_pos = (
            reps.group_by("position")
            .agg(
                [pl.col(c).filter(pl.col(c).is_not_nan()).mean().alias(c) for c in COLUMNS]
                + [pl.col(c).is_nan().all().alias(f"{c}_nan") for c in COLUMNS]
            )
            .join(names, on="position")
        )
        by_pos = by_pos.with_columns(
            [pl.when(pl.col(f"{c}_nan")).then(float("nan")).otherwise(pl.col(c)).alias(c) for c in COLUMNS]
        ).drop([f"{c}_nan" for c in COLUMNS])
        return timeline_kernels.join(by_pos, on="position", how="left")
    if m != n:
        warnings.append(
            f"Nsight Compute holds {m} kernels but the timeline's analyzed iterations hold {n} "
            f"(kernels per iteration vary: {counts.min()}..{counts.max()}): matched one to one in order; "
            "iterations not fully matched get no value"
        )
    seq = timeline_kernels.sort("iteration", "position").with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("j")
    )
    joined = seq.join(ordered.select("j", "name", *COLUMNS), on="j", how="left").drop("j")
    return joined


def _check_names(joined: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    if joined.is_empty():
        return joined.with_columns(pl.lit(None, pl.Boolean).alias("name_match"))
    joined = joined.with_columns(
        pl.col("name").map_elements(base_name, return_dtype=pl.String).alias("_a"),
        pl.col("timeline_name").map_elements(base_name, return_dtype=pl.String).alias("_b"),
    ).with_columns(
        pl.when(pl.col("name").is_null())
        .then(None)
        .otherwise(pl.col("_a") == pl.col("_b"))
        .alias("name_match")
    )
    bad = joined.filter(pl.col("name_match") == False)  # noqa: E712
    if bad.height:
        first = bad.row(0, named=True)
        warnings.append(
            f"{bad.height} of {joined.filter(pl.col('name_match').is_not_null()).height} matched kernels differ in "
            f"name (first: iteration {first['iteration']} position {first['position']}: Nsight Compute "
            f"{first['_a']!r} vs timeline {first['_b']!r}): the join by order may be wrong"
        )
    return joined.drop("_a", "_b")


def _drop_mismatched(joined: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``joined`` with no Nsight Compute value on the timeline kernels whose matched ncu kernel has another
    name (:func:`_check_names`): that value is another kernel's (a shifted or reordered profile, another
    configuration's), so the kernel counts as unmeasured, and its iteration gets no wall-time value."""
    bad = joined.get_column("name_match").eq(False).fill_null(False)
    if not bad.any():
        return joined
    matched = int(joined.get_column("name_match").is_not_null().sum())
    if bad.sum() > matched / 2:  # most names differ: the order itself is wrong, the "matches" are chance
        warnings.append(
            f"the names of {int(bad.sum())} of {matched} matched kernels differ: the Nsight Compute profile is "
            "not in the timeline's kernel order (another configuration, or cut elsewhere in the iteration), "
            "so none of its values is used"
        )
        return joined.with_columns([pl.lit(None, pl.Float64).alias(c) for c in COLUMNS])
    iterations = joined.filter(bad).get_column("iteration").n_unique()
    warnings.append(
        f"the Nsight Compute values of the {int(bad.sum())} kernels whose names differ are not used (they are "
        f"another kernel's): {iterations} of {joined.get_column('iteration').n_unique()} iterations get no "
        "wall-time value, and the kernel-time averages leave those kernels out"
    )
    return joined.with_columns([pl.when(bad).then(None).otherwise(pl.col(c)).alias(c) for c in COLUMNS])


#: the largest share of an iteration's kernel time that kernels with a NaN value (ncu could not measure
#: them) may hold for the iteration's wall-time figure to be given: they count as 0 in it, so it is low by
#: up to their share of the kernel time times their (unknown) value
NAN_TIME_TOLERANCE = 0.01


def _kernel_time_average(
    frame: pl.DataFrame, column: str, duration: str
) -> tuple[float | None, int, int, int]:
    """(Σ d·v / Σ d over kernels with a value and a duration, kernels used, NaN skipped, without a value)."""
    v = pl.col(column)
    ok = v.is_not_null() & v.is_not_nan() & pl.col(duration).is_not_null()
    row = frame.select(
        (pl.when(ok).then(pl.col(duration) * v).sum()).alias("num"),
        pl.when(ok).then(pl.col(duration)).sum().alias("den"),
        ok.sum().alias("used"),
        (v.is_not_null() & v.is_nan()).sum().alias("nan"),
        v.is_null().sum().alias("missing"),
    ).row(0, named=True)
    avg = row["num"] / row["den"] if row["den"] else None
    return avg, int(row["used"]), int(row["nan"]), int(row["missing"])


def _wall_time_per_iteration(joined: pl.DataFrame, analysis: IterationAnalysis) -> pl.DataFrame:
    """Per analyzed iteration: Σ(kernel time × value) / latency of each column (%), None when some kernel
    of the iteration has no value, or when its NaN kernels hold more than :data:`NAN_TIME_TOLERANCE` of its
    kernel time (they would count as 0: a figure too low by an unknown amount)."""
    lat = analysis.iterations.select("index", "latency_ms")
    ns = pl.col("timeline_ns")
    per_iter = joined.group_by("iteration").agg(
        [
            ((pl.when(pl.col(c).is_not_nan()).then(pl.col(c)).otherwise(None) * ns).sum()).alias(f"{c}_num")
            for c in COLUMNS
        ]
        + [
            (
                pl.col(c).is_null().any()
                | (pl.when(pl.col(c).is_nan()).then(ns).otherwise(0).sum() > NAN_TIME_TOLERANCE * ns.sum())
            ).alias(f"{c}_incomplete")
            for c in COLUMNS
        ]
        + [pl.col(c).is_not_null().any().alias(f"{c}_any") for c in COLUMNS]
    )
    return (
        lat.join(per_iter, left_on="index", right_on="iteration", how="left")
        .select(
            "index",
            "latency_ms",
            *[
                pl.when(pl.col(f"{c}_any") & ~pl.col(f"{c}_incomplete") & (pl.col("latency_ms") > 0))
                .then(pl.col(f"{c}_num") / (pl.col("latency_ms") * 1e6))
                .otherwise(None)
                .alias(c)
                for c in COLUMNS
            ],
        )
        .sort("index")
    )


def analyze_kernel_metrics(
    metrics_trace: Trace,
    timeline: Trace | None = None,
    analysis: IterationAnalysis | None = None,
    range_name: str | None = None,
    ops: pl.DataFrame | None = None,
) -> KernelMetricsResult:
    """SMs active / warp occupancy from ``metrics_trace.kernel_metrics`` (see module docstring).

    ``timeline`` + ``analysis`` (its :func:`analyze_iterations` result) give the wall-time figure; ``ops``
    (optional) the timeline's ops by iteration, when already computed. When
    ``metrics_trace`` *is* ``timeline`` (Kineto's per-kernel estimates), kernel_metrics' ``kernel`` index is
    matched to the timeline's kernels in start order instead of the ncu join.
    """
    warnings: list[str] = []
    km = metrics_trace.kernel_metrics
    same_trace = timeline is not None and metrics_trace is timeline
    source = "kineto estimate" if (same_trace or km["metric"].eq(KINETO_OCCUPANCY).any()) else "ncu"
    values = per_kernel(km)
    scope = range_name or (analysis.range_name if analysis is not None else None)
    if not same_trace and scope is not None and values["range"].is_not_null().any():
        in_scope = values.filter(pl.col("range") == scope)
        stacks = metrics_trace.meta.get("nvtx_stacks")
        if in_scope.is_empty() and stacks:  # the iteration range may be an outer one (operator ranges inside)
            inside = [k for k, stack in enumerate(stacks) if scope in stack]
            in_scope = values.filter(pl.col("kernel").is_in(inside))
        if in_scope.height:
            values = in_scope
        else:
            warnings.append(
                f"no Nsight Compute kernel ran inside an NVTX range named {scope!r}; "
                f"using all {values.height} kernels in profiling order"
            )
    joined: pl.DataFrame | None = None
    if timeline is not None and analysis is not None:
        tk = _timeline_kernels(timeline, analysis, range_name, ops)
        if same_trace:
            # kernel_metrics' ``kernel`` = rank of the kernel among the trace's kernels in start order.
            rank = (
                timeline.ops.with_row_index("op")
                .filter(pl.col("kind") == "kernel")
                .select(pl.col("op"), pl.int_range(pl.len(), dtype=pl.Int64).alias("kernel"))
            )
            joined = (
                tk.join(rank, on="op", how="left")
                .join(values.select("kernel", "name", *COLUMNS), on="kernel", how="left")
                .drop("kernel")
            )
        else:
            joined = _join_ncu(values, tk, warnings)
        joined = _check_names(joined, warnings)
        if not same_trace:
            joined = _drop_mismatched(joined, warnings)
    summary: dict[str, dict[str, Any] | None] = {}
    iterations: pl.DataFrame | None = None
    if joined is not None and analysis is not None:
        iterations = _wall_time_per_iteration(joined, analysis)
    duration = "timeline_ns" if joined is not None else "duration_ns"
    frame = joined if joined is not None else values
    for c in COLUMNS:
        how = values[f"{c}_how"].drop_nulls()
        if how.is_empty():
            summary[c] = None
            continue
        avg, used, _, _ = _kernel_time_average(frame, c, duration)
        # NaN / missing are counted over the metric trace's own kernels (not over joined timeline kernels).
        nan = int((values[c].is_not_null() & values[c].is_nan()).sum())
        missing = int(values[c].is_null().sum())
        entry: dict[str, Any] = {
            "source": "kineto estimate" if how[0] == KINETO_OCCUPANCY else "ncu",
            "metric": how.mode().sort()[0],
            "unit": "%",
            "kernel_time": avg,
            "wall_time": None,
            "kernels": used,
            "nan_skipped": nan,
            "missing": missing,
        }
        if nan:
            said = f"{c}: {nan} kernel{'s' if nan != 1 else ''} with NaN {entry['metric']} skipped"
            if joined is not None:
                nan_time = joined.filter(pl.col(c).is_not_null() & pl.col(c).is_nan())["timeline_ns"].sum()
                share = nan_time / (joined["timeline_ns"].sum() or 1)
                said += (
                    f" ({100 * share:.3g}% of the kernel time; an iteration whose NaN kernels hold more than "
                    f"{100 * NAN_TIME_TOLERANCE:g}% of its kernel time gets no wall-time value: they would "
                    "count as 0)"
                )
            warnings.append(said)
        if how.n_unique() > 1:
            entry["metrics_used"] = sorted(how.unique().to_list())
        if frame.height:
            total = frame.select(pl.col(duration).sum()).item() or 0
            covered = (
                frame.filter(pl.col(c).is_not_null() & pl.col(c).is_not_nan())
                .select(pl.col(duration).sum())
                .item()
                or 0
            )
            entry["coverage"] = covered / total if total else None
        if iterations is not None:
            stats = summarize_columns(iterations, [c])[c].to_dict()
            entry["wall_time"] = stats["mean"]
            entry["iterations"] = int(iterations[c].is_not_null().sum())
            entry.update({f"wall_{k}": v for k, v in stats.items()})
        summary[c] = entry
    return KernelMetricsResult(source, frame, iterations, summary, warnings)
