"""SM activity and warp occupancy from per-kernel metrics (Nsight Compute, or Kineto's estimate).

Per kernel (percent):

- SMs active: ``sm__cycles_active.avg.pct_of_peak_sustained_elapsed``; when only base counters exist,
  100 × ``sm__cycles_active.avg`` / ``sm__cycles_elapsed.avg``, else 100 × ``sm__cycles_active.avg`` /
  ``gpc__cycles_elapsed.max`` (reports collected without ``sm__cycles_elapsed``), else the legacy names ncu
  2019.x writes on Pascal, 100 × ``sm__active_cycles_avg`` / ``sm__elapsed_cycles_avg``. The first one
  present and not NaN is used; ``how`` names it.
- Warp occupancy: ``sm__warps_active.avg.pct_of_peak_sustained_active`` (achieved occupancy: resident warps
  over the SM's warp slots, averaged over the cycles the SM was active; on Pascal, the legacy
  ``sm__active_warps_avg_per_active_cycle_pct``); for Kineto traces the profiler's
  ``est. achieved occupancy %`` (an *estimate* CUPTI derives from launch parameters; labelled as such).

Two aggregates:

- kernel-time average = Σ(kernel time × value) / Σ(kernel time): the SM state *while kernels run*.
- wall-time figure, per iteration = Σ(kernel time × value) / latency over the iteration's kernels, then the
  mean over iterations (the study's definition: idle time counts as 0). Needs a timeline trace of the same
  run: kernel times are then the timeline's (measured in the application, not under ncu's replay).

Joining Nsight Compute kernels to a timeline: ncu kernels are taken in profiling order, which is launch order
(ncu serializes kernels at their launch), restricted to the NVTX range that delimits iterations when they carry
it (anywhere in their range stack, ``meta["nvtx_stacks"]``, where some kernel ran in nested ranges: the
iteration range is innermost for the kernels launched in it and outer for those inside operator ranges; else
the innermost); the timeline's kernels of the
analyzed iterations are taken in launch order too: by their launching call's start when every kernel of the
iteration has one, else by correlation id, else by start (on two streams start order is not launch order;
ties, the kernels of one graph launch, by start). When every iteration launches the same number K of kernels,
ncu kernel j is matched to position j mod K of every iteration (ncu usually profiles fewer iterations than the
timeline holds; repeated positions are averaged; a remainder short of a whole iteration is ignored, unless
the profile was realigned, below);
otherwise kernels are matched one to one in order. Names are compared after reduction to the bare function
name (``void ns::k<...>(args)`` -> ``k``; an Itanium-mangled name, ``ncu --print-kernel-base mangled``, is
demangled by the C++ runtime through ``cxxfilt``, else read by a parser of its own, and reduces to the same
bare name); so are launch dimensions (grid and block) where both sides have them (ncu's ``launch__grid_dim_x``
... metrics; a timeline's from its ``launches`` frame, which the Kineto and nsys readers fill when asked
for it, as ``tracekit table --ncu`` does: :func:`timeline_launches`). A name or launch mismatch means the matched ncu value is another kernel's:
that timeline kernel gets no value (its iteration no wall-time figure), with a warning; when most matched
kernels differ (a profile cut elsewhere in the iteration, another configuration's kernels), no ncu value is
used at all.

A profile whose names do not all match from the iteration's start (``--launch-skip``, a profile cut
elsewhere) is realigned only where one offset, and one alone, makes every one of its kernel names match (the
position within the iteration when counts are equal, else the index in the analyzed kernel sequence, the
profile wholly inside it), and where the profile holds a whole iteration, first kernel to last, from there (it
is then the timeline's sequence seen from another start; two kernels swapped in a two-kernel iteration are a
shift by one too). At two or more such offsets (an iteration that repeats itself, a model's layers), or without
a whole iteration, it is not realigned, and a warning says so.

Only iterations the profile covers wholly give a figure: a partial iteration gets no wall-time value, and the
kernel-time average is over the wholly profiled iterations. A profile that covers no iteration wholly (cut
short by ``--launch-count``: the first kernels of an iteration are not its mix) gives no kernel-time average
either (``kernel_time_profiled`` keeps the average over its kernels alone), with a warning.

Kernels that ran inside NVTX start/end ranges only (the reader's ``meta["nvtx_start_end"]``; such ranges are not
read) get no scope: all are joined in profiling order, with a warning.

A report whose kernels are named by their NVTX ranges (``ncu --print-nvtx-rename kernel``: the reader's
``meta["nvtx_renamed"]``) is not joined: no name can be checked, so no value of it is used, with a warning.

Results the reader lists in ``meta["range_results"]`` (no launch dimensions: range replay's one result per
range) are no kernels and are left out, with a warning.

Without a timeline, the kernel-time average weights each value by ncu's own duration: where a kernel with a
value has none (``n/a``: cut short by ``--kill`` or a replay timeout; unreadable), its weight is unknown and
no kernel-time average is given, with a warning.

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

import numpy as np
import polars as pl

from tracekit.analyzers.iterations import IterationAnalysis, assign_ops, choose_ranges
from tracekit.analyzers.stats import summarize_columns
from tracekit.model import LAUNCH_DIMS, Trace

SM_ACTIVE_PCT = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
SM_CYCLES_ACTIVE = "sm__cycles_active.avg"
SM_CYCLES_ELAPSED = "sm__cycles_elapsed.avg"
GPC_CYCLES_ELAPSED = "gpc__cycles_elapsed.max"
WARPS_ACTIVE_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"
KINETO_OCCUPANCY = "est. achieved occupancy %"
#: the legacy names ncu 2019.x writes on Pascal (compute capability 6.x; its own rules read the occupancy so)
LEGACY_CYCLES_ACTIVE = "sm__active_cycles_avg"
LEGACY_CYCLES_ELAPSED = "sm__elapsed_cycles_avg"
LEGACY_WARPS_ACTIVE_PCT = "sm__active_warps_avg_per_active_cycle_pct"
NEEDED = (
    SM_ACTIVE_PCT,
    SM_CYCLES_ACTIVE,
    SM_CYCLES_ELAPSED,
    GPC_CYCLES_ELAPSED,
    WARPS_ACTIVE_PCT,
    KINETO_OCCUPANCY,
    LEGACY_CYCLES_ACTIVE,
    LEGACY_CYCLES_ELAPSED,
    LEGACY_WARPS_ACTIVE_PCT,
)
SM_ACTIVE_RATIO = f"100*{SM_CYCLES_ACTIVE}/{SM_CYCLES_ELAPSED}"
SM_ACTIVE_GPC_RATIO = f"100*{SM_CYCLES_ACTIVE}/{GPC_CYCLES_ELAPSED}"
SM_ACTIVE_LEGACY_RATIO = f"100*{LEGACY_CYCLES_ACTIVE}/{LEGACY_CYCLES_ELAPSED}"
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
    """The bare function name of an Itanium-mangled name, by tracekit's own small parser (the fallback of
    :func:`_demangled`: ``_ZN2at6native29vectorized_elementwise_kernelILi4E...EEviT0_T1_`` ->
    ``vectorized_elementwise_kernel``); None when it does not parse as one."""
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
        if nested and c == "L":  # internal linkage of a name inside a namespace (host stubs: _ZN2nsL1kIiEEvv)
            i += 1
            continue
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


_DEMANGLER: Any = None


def _demangled(name: str) -> str | None:
    """``name`` demangled by the C++ runtime's ``__cxa_demangle`` (through ``cxxfilt``, as ``c++filt`` prints
    it); None when ``cxxfilt`` or the C++ runtime library is missing, or the runtime cannot demangle it (real
    CUTLASS kernel names of 1,500+ characters from an A100 ncu report are such: libstdc++ 12 and c++filt
    refuse them; :func:`_mangled_base` reads them)."""
    global _DEMANGLER
    if _DEMANGLER is None:
        try:
            import cxxfilt

            _DEMANGLER = cxxfilt
        except Exception:  # not installed, or loading libc / libstdc++ failed (OSError from ctypes)
            _DEMANGLER = False
    if _DEMANGLER is False:
        return None
    try:
        return _DEMANGLER.demangle(name)
    except Exception:  # cxxfilt.InvalidName, LibraryNotFound (no libstdc++ / libc++), InternalError
        return None


def base_name(name: str | None) -> str | None:
    """The bare function name of a kernel: drops return type, template arguments, parameters, namespaces and
    ABI tags (``[abi:cxx11]``). An Itanium-mangled name (``_Z...``, as ``ncu --print-kernel-base mangled``
    prints it) is demangled first (:func:`_demangled`, else read by :func:`_mangled_base`), so it gives the
    same bare name as its demangled spelling (timelines keep demangled names)."""
    if name is None:
        return None
    stripped = name.strip()
    if stripped.startswith("_Z"):
        demangled = _demangled(stripped)
        if demangled is not None and not demangled.startswith("_Z"):
            return base_name(demangled)
        if (bare := _mangled_base(stripped)) is not None:
            return bare
    s = stripped.replace("(anonymous namespace)", "anon").replace("<unnamed>", "anon")
    s = re.sub(r"\[abi:[^\]]*\]", "", s)
    previous = None
    while previous != s:  # remove innermost template argument lists until none remain
        previous = s
        s = re.sub(r"<[^<>]*>", "", s)
    s = s.split("(", 1)[0].strip()
    s = s.split()[-1] if s.split() else s
    return s.rsplit("::", 1)[-1]


def _base_names(names: pl.Series) -> pl.Series:
    """:func:`base_name` of each name, computed once per distinct name."""
    distinct = names.drop_nulls().unique()
    mapping = {n: base_name(n) for n in distinct.to_list()}
    return names.replace_strict(mapping, default=None, return_dtype=pl.String)


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
            (SM_ACTIVE_LEGACY_RATIO, 100.0 * col(LEGACY_CYCLES_ACTIVE) / col(LEGACY_CYCLES_ELAPSED)),
        ],
        "warp_occupancy": [
            (WARPS_ACTIVE_PCT, col(WARPS_ACTIVE_PCT)),
            (LEGACY_WARPS_ACTIVE_PCT, col(LEGACY_WARPS_ACTIVE_PCT)),
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


#: How the warnings name each per-kernel column.
_LABELS = {"sms_active": "SMs active", "warp_occupancy": "warp occupancy"}


def _impossible_shares(values: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``values`` (:func:`per_kernel`) with every SMs-active or warp-occupancy value that no share can be (below
    0, above 100, or not finite: a cycle ratio over 0 elapsed cycles) made NaN (missing: skipped and counted,
    as ncu's "n/a"), and a warning per column naming the metric, how many kernels and the extreme value. The
    ncu reader reads a ``%`` share of a peak outside 0-100 so already; this checks what it does not see: the
    ratio of two cycle counts (active cycles above elapsed ones: a damaged counter, or two replay passes that
    disagree), ncu 2019.x's legacy warp percentage and Kineto's occupancy estimate."""
    for column, label in _LABELS.items():
        v = pl.col(column)
        bad = (v.is_not_null() & ~v.is_nan() & ((v < 0) | (v > 100) | ~v.is_finite())).fill_null(False)
        flagged = values.filter(bad)
        if flagged.is_empty():
            continue
        finite = flagged.filter(pl.col(column).is_finite())
        extremes = []
        if finite.height and finite[column].max() > 100:
            extremes.append(f"largest {finite[column].max():g}%")
        if finite.height and finite[column].min() < 0:
            extremes.append(f"smallest {finite[column].min():g}%")
        if finite.height < flagged.height:
            extremes.append("not a finite number")
        how = ", ".join(sorted(set(flagged[f"{column}_how"].drop_nulls().to_list())))
        warnings.append(
            f"{label} ({how}): {flagged.height} of {values.height} kernels have a value outside 0-100% "
            f"({', '.join(extremes)}), which no share can be: read as missing (NaN) for those kernels"
        )
        values = values.with_columns(pl.when(bad).then(float("nan")).otherwise(v).alias(column))
    return values


@dataclass
class KernelMetricsResult:
    """``kernels``: per-kernel values (plus, when joined, iteration, position (launch order), timeline_ns,
    name_match, ``launch``/``timeline_launch`` (grid and block of each side, null where unknown) and
    launch_match);
    ``iterations``: index, latency_ms, sms_active, warp_occupancy (wall-time, %) or None without a timeline;
    ``summary[column]``: {"source", "metric" (how), "unit", "wall_time" (mean over iterations, or None),
    "kernel_time", "kernels" (with a value), "nan_skipped", "missing", "coverage", stats over iterations;
    "kernel_time_profiled" when the profile covers no iteration wholly and "kernel_time" is withheld) or None
    when no kernel has the metric."""

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


#: ncu's launch-dimension metrics (``launch__grid_dim_x`` ...); a timeline's are its ``launches`` frame (or,
#: where a caller built them so, ``kernel_metrics`` rows keyed like Kineto's estimates: ``kernel`` = rank among
#: its kernels in start order; :func:`timeline_launches`)
LAUNCH_METRICS = (
    "launch__grid_dim_x",
    "launch__grid_dim_y",
    "launch__grid_dim_z",
    "launch__block_dim_x",
    "launch__block_dim_y",
    "launch__block_dim_z",
)


def _launch_text(columns: tuple[str, ...]) -> pl.Expr:
    """ "grid (x, y, z) block (x, y, z)" of six columns (grid x, y, z, then block x, y, z), as whole numbers."""
    return pl.format(
        "grid ({}, {}, {}) block ({}, {}, {})", *(pl.col(c).cast(pl.Int64).cast(pl.String) for c in columns)
    )


def launch_dims(kernel_metrics: pl.DataFrame) -> pl.DataFrame:
    """kernel, ``launch`` ("grid (x, y, z) block (x, y, z)") of the kernels that have all six
    :data:`LAUNCH_METRICS` (none NaN); no row for the others."""
    rows = kernel_metrics.filter(
        pl.col("metric").is_in(LAUNCH_METRICS) & pl.col("value").is_not_null() & pl.col("value").is_not_nan()
    )
    if rows.is_empty():
        return pl.DataFrame(schema={"kernel": pl.Int64, "launch": pl.String})
    wide = rows.pivot(on="metric", index="kernel", values="value", aggregate_function="first")
    if not set(LAUNCH_METRICS) <= set(wide.columns):
        return pl.DataFrame(schema={"kernel": pl.Int64, "launch": pl.String})
    launch = _launch_text(LAUNCH_METRICS)
    return wide.filter(pl.all_horizontal(pl.col(c).is_not_null() for c in LAUNCH_METRICS)).select(
        pl.col("kernel").cast(pl.Int64), launch.alias("launch")
    )


#: the launch dimensions' columns of :data:`tracekit.model.LAUNCHES_SCHEMA`, in :data:`LAUNCH_METRICS` order
LAUNCH_COLUMNS = LAUNCH_DIMS


def timeline_launches(timeline: Trace) -> pl.DataFrame:
    """op (row of ``timeline.ops``), ``timeline_launch`` (as :func:`launch_dims` writes it) of the timeline's
    kernels whose launch dimensions it recorded: its ``launches`` frame (read on request, see
    :data:`tracekit.model.LAUNCHES_SCHEMA`), matched to the kernels by stream, start and end, a key that two
    kernels (or two launch rows) share being left unmatched (never another kernel's); else ``kernel_metrics``
    rows of the :data:`LAUNCH_METRICS` names, keyed by the kernel's rank among the trace's kernels in start
    order."""
    kernels = (
        timeline.ops.with_row_index("op")
        .filter(pl.col("kind") == "kernel")
        .select(pl.col("op").cast(pl.Int64), "stream", "start", "end")
    )
    launches = timeline.launches
    if launches.height:
        key = ["stream", "start", "end"]
        once = pl.len().over(key) == 1
        found = launches.filter(once).select(*key, _launch_text(LAUNCH_COLUMNS).alias("timeline_launch"))
        return kernels.filter(once).join(found, on=key, how="inner").select("op", "timeline_launch")
    rank = kernels.select("op", pl.int_range(pl.len(), dtype=pl.Int64).alias("kernel"))
    dims = launch_dims(timeline.kernel_metrics)
    return rank.join(dims, on="kernel", how="inner").select("op", pl.col("launch").alias("timeline_launch"))


def _timeline_kernels(
    timeline: Trace, analysis: IterationAnalysis, range_name: str | None, ops: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Kernels of the analyzed iterations: op, iteration, position (0-based within it, launch order), name,
    ns, ``timeline_launch`` (the timeline's launch dimensions, :func:`launch_dims`; null when it has none).

    Launch order: Nsight Compute numbers kernels in launch order (it serializes them at the launch), which is
    start order on one stream but not across streams. An iteration's kernels are ordered by their launching
    call's start (``call_start``) when every one of them has it, else by correlation id (ids are handed out at
    the launch call) when every one has one, else by start; ties (the kernels of one graph launch share its
    call and id) by start.

    ``ops``: the timeline's ops already assigned to the analyzed iterations (``Analysis.ops``), else
    assigned here."""
    if ops is None:
        ranges, _, _ = choose_ranges(timeline, range_name if range_name is not None else analysis.range_name)
        ops = assign_ops(timeline, ranges)
    ops = ops.filter(
        (pl.col("kind") == "kernel") & pl.col("iteration").is_in(analysis.iterations["index"].implode())
    )
    call = pl.col("call_start") if "call_start" in ops.columns else pl.lit(None, pl.Int64)
    corr = pl.col("correlation") if "correlation" in ops.columns else pl.lit(None, pl.Int64)
    key = (
        pl.when(call.is_not_null().all().over("iteration"))
        .then(call)
        .when(corr.is_not_null().all().over("iteration"))
        .then(corr)
        .otherwise(pl.col("start"))
    )
    ops = ops.with_columns(key.alias("_key"), corr.alias("_corr"))
    launch = timeline_launches(timeline)
    return (
        ops.sort("iteration", "_key", "_corr", "start", "end", nulls_last=True)
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("iteration").alias("position"))
        .with_columns(pl.col("op").cast(pl.Int64))
        .join(launch, on="op", how="left", maintain_order="left")
        .select(
            "op",
            "iteration",
            "position",
            pl.col("name").alias("timeline_name"),
            (pl.col("end") - pl.col("start")).alias("timeline_ns"),
            "timeline_launch",
        )
    )


def _codes(ncu: pl.Series, timeline: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """The bare names (:func:`base_name`) of ``ncu`` and ``timeline`` as integer codes shared by both; -1 and
    -2 where a name is missing (so that a missing name matches nothing)."""
    a, b = _base_names(ncu), _base_names(timeline)
    both = pl.concat([a, b]).drop_nulls().unique().sort()
    mapping = {name: i for i, name in enumerate(both.to_list())}
    code = lambda s, missing: s.replace_strict(mapping, default=missing, return_dtype=pl.Int64).to_numpy()  # noqa: E731
    return code(a, -1), code(b, -2)


#: the most candidate offsets :func:`_perfect_offsets` checks (each a comparison of the whole profile); more
#: (every kernel of the profile occurs that often in the timeline) is taken as ambiguous
MAX_OFFSETS = 4096


def _perfect_offsets(ncu: np.ndarray, ref: np.ndarray, periodic: bool) -> list[int] | None:
    """Every offset s at which all ncu kernels' names match: ncu kernel j <-> ``ref[(j + s) % len(ref)]``
    (``periodic``: the positions of an iteration) or ``ref[j + s]`` (the whole sequence, ncu inside it).

    Candidates come from the ncu name rarest in ``ref`` (each of its occurrences fixes one offset), then each
    candidate is checked on all ncu kernels at once. None when there are more than :data:`MAX_OFFSETS`
    candidates."""
    m, k = len(ncu), len(ref)
    if m == 0 or k == 0 or (not periodic and m > k):
        return []
    codes = max(int(ref.max()), int(ncu.max()), 0) + 1
    counts = np.bincount(ref[ref >= 0], minlength=codes)
    seen = np.where(ncu >= 0, counts[ncu.clip(0)], 0)
    j = int(np.argmin(seen))
    if seen[j] == 0:
        return []
    starts = np.flatnonzero(ref == ncu[j]) - j
    j_all = np.arange(m)
    out = []
    candidates = np.unique(starts % k if periodic else starts)
    if candidates.size > MAX_OFFSETS:  # a sequence this repetitive cannot place a profile unambiguously
        return None
    for s in candidates.tolist():
        if not periodic and (s < 0 or s + m > k):
            continue
        idx = (j_all + s) % k if periodic else j_all + s
        if np.array_equal(ref[idx], ncu):
            out.append(int(s))
    return out


def _holds_an_iteration(s: int, m: int, k: int | None, timeline_kernels: pl.DataFrame) -> bool:
    """Whether a profile of ``m`` kernels joined from offset ``s`` (:func:`_offset`) holds a whole iteration,
    first kernel to last: then it is the timeline's kernel sequence seen from another start, not a reordering
    that happens to fit (two kernels swapped in a two-kernel iteration are a shift by one too)."""
    if k is not None:
        return m - (k - s) % k >= k
    sizes = timeline_kernels.group_by("iteration").len().sort("iteration")["len"].to_numpy()
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return bool(((first >= s) & (first + sizes <= s + m)).any())


def _offset(ordered: pl.DataFrame, timeline_kernels: pl.DataFrame, k: int | None, warnings: list[str]) -> int:
    """Where ncu's first kernel sits in the timeline: 0 (as profiled from an iteration's start), unless the
    names do not all match there and do at exactly one other offset (a profile shifted by ``--launch-skip``, or
    cut elsewhere in the iteration): that offset, with a warning. Position within an iteration when every
    iteration has ``k`` kernels, else index in the analyzed iterations' kernel sequence. Two or more such
    offsets (an iteration that repeats itself: the layers of a model), or one from which the profile holds no
    whole iteration (:func:`_holds_an_iteration`), leave it at 0, said in a warning."""
    if k is not None:
        ref_frame = timeline_kernels.sort("iteration", "position").group_by("position", maintain_order=True)
        ref_names = ref_frame.agg(pl.col("timeline_name").first()).sort("position")["timeline_name"]
    else:
        ref_names = timeline_kernels.sort("iteration", "position")["timeline_name"]
    ncu, ref = _codes(ordered["name"], ref_names)
    periodic = k is not None
    m = len(ncu)
    at_zero = ncu[: min(m, len(ref))] if not periodic else ncu
    if periodic and np.array_equal(ref[np.arange(m) % len(ref)], ncu):
        return 0
    if not periodic and np.array_equal(ref[: len(at_zero)], at_zero):
        return 0
    found = _perfect_offsets(ncu, ref, periodic)
    if found is None:
        warnings.append(
            f"the Nsight Compute kernel names do not all match the timeline's from its start, and every one of "
            f"them recurs there more than {MAX_OFFSETS} times: the profile cannot be realigned unambiguously, "
            "so it is not"
        )
        return 0
    if len(found) == 1 and found[0] != 0 and not _holds_an_iteration(found[0], m, k, timeline_kernels):
        warnings.append(
            f"the Nsight Compute kernel names match the timeline's only from {'position' if periodic else 'kernel'} "
            f"{found[0]} on, but the profile holds no whole iteration from there (a reordered profile could match "
            "so too): it is not realigned"
        )
        return 0
    if len(found) == 1 and found[0] != 0:
        s = found[0]
        where = (
            f"position {s} of the iteration's {k} kernels"
            if periodic
            else f"kernel {s} of the analyzed iterations' {len(ref)}"
        )
        warnings.append(
            f"the Nsight Compute profile starts at {where}, not at its first (--launch-skip, or a profile cut "
            f"elsewhere): all {m} of its kernel names match the timeline there and at no other offset, so it is "
            "joined from there"
        )
        return s
    if len(found) > 1:
        shown = ", ".join(str(s) for s in found[:5]) + (", ..." if len(found) > 5 else "")
        warnings.append(
            f"the Nsight Compute kernel names do not all match the timeline's from its start, and match at "
            f"{len(found)} other offsets ({shown}): the profile cannot be realigned unambiguously, so it is not"
        )
    return 0


def _join_ncu(values: pl.DataFrame, timeline_kernels: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """Timeline kernels with the matched ncu values (see module docstring); ``launch`` (ncu's launch
    dimensions) when ``values`` has it."""
    m = values.height
    counts = timeline_kernels.group_by("iteration").len()["len"]
    n = timeline_kernels.height
    carried = [c for c in ("launch",) if c in values.columns]
    if m == 0 or n == 0:
        return timeline_kernels.clear().with_columns(
            [pl.lit(None, pl.Float64).alias(c) for c in COLUMNS]
            + [pl.lit(None, pl.String).alias(c) for c in ("name", *carried)]
        )
    k = int(counts[0]) if counts.n_unique() == 1 else None
    ordered = values.sort("kernel").with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("j"))
    s = _offset(ordered, timeline_kernels, k, warnings)
    if k is not None:
        if m >= k and s == 0:
            used = (m // k) * k
            if m % k:
                warnings.append(
                    f"Nsight Compute holds {m} kernels, not a multiple of the {k} kernels per iteration: "
                    f"the last {m % k} are ignored"
                )
        else:  # realigned, or fewer kernels than an iteration's (each at its own position; see the caller)
            used = m
        reps = ordered.filter(pl.col("j") < used).with_columns(((pl.col("j") + s) % k).alias("position"))
        names = reps.group_by("position").agg(pl.col(c).first() for c in ("name", *carried))
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
    if s or m != n:
        warnings.append(
            f"Nsight Compute holds {m} kernels but the timeline's analyzed iterations hold {n} "
            f"(kernels per iteration vary: {counts.min()}..{counts.max()}): matched one to one in order; "
            "iterations not wholly matched get no wall-time value, and the kernel-time averages cover the "
            "wholly matched ones"
        )
    seq = timeline_kernels.sort("iteration", "position").with_columns(
        (pl.int_range(pl.len(), dtype=pl.Int64) - s).alias("j")
    )
    joined = seq.join(ordered.select("j", "name", *COLUMNS, *carried), on="j", how="left").drop("j")
    return joined


def _check_names(joined: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    if joined.is_empty():
        return joined.with_columns(pl.lit(None, pl.Boolean).alias("name_match"))
    joined = joined.with_columns(
        _base_names(joined["name"]).alias("_a"), _base_names(joined["timeline_name"]).alias("_b")
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


def _check_launch(joined: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``joined`` with ``launch_match``: whether the matched ncu kernel's launch dimensions (grid and block)
    are the timeline kernel's; null where either side lacks them (a timeline reader that keeps none, an ncu
    report without them). A difference is evidence that the pairing is wrong, as a name's is."""
    ncu = pl.col("launch") if "launch" in joined.columns else pl.lit(None, pl.String)
    tl = pl.col("timeline_launch") if "timeline_launch" in joined.columns else pl.lit(None, pl.String)
    joined = joined.with_columns(
        pl.when(ncu.is_null() | tl.is_null()).then(None).otherwise(ncu == tl).alias("launch_match")
    )
    bad = joined.filter(pl.col("launch_match") == False)  # noqa: E712
    if bad.height:
        first = bad.row(0, named=True)
        compared = int(joined.get_column("launch_match").is_not_null().sum())
        warnings.append(
            f"{bad.height} of {compared} matched kernels differ in launch dimensions (first: iteration "
            f"{first['iteration']} position {first['position']}: Nsight Compute {first['launch']} vs timeline "
            f"{first['timeline_launch']}): the join by order may be wrong"
        )
    return joined


def _drop_mismatched(joined: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``joined`` with no Nsight Compute value on the timeline kernels whose matched ncu kernel has another
    name (:func:`_check_names`) or other launch dimensions (:func:`_check_launch`): that value is another
    kernel's (a shifted or reordered profile, another configuration's), so the kernel counts as unmeasured,
    and its iteration gets no wall-time value."""
    by_name = joined.get_column("name_match").eq(False).fill_null(False)
    by_launch = (
        joined.get_column("launch_match").eq(False).fill_null(False)
        if "launch_match" in joined.columns
        else pl.Series([False] * joined.height, dtype=pl.Boolean)
    )
    joined = _drop_unchecked(joined, warnings)
    bad = by_name | by_launch
    if not bad.any():
        return joined
    what = (
        "names or launch dimensions"
        if by_name.any() and by_launch.any()
        else "names"
        if by_name.any()
        else "launch dimensions"
    )
    # (the kernels compared by name or by launch dimensions: a timeline kernel of no name is compared by the
    # latter alone; counted by name only, 6 kernels of no name whose dimensions differ read '6 of 0')
    compared = joined.get_column("name_match").is_not_null()
    if "launch_match" in joined.columns:
        compared = compared | joined.get_column("launch_match").is_not_null()
    matched = int(compared.sum())
    if bad.sum() > matched / 2:  # most differ: the order itself is wrong, the "matches" are chance
        warnings.append(
            f"the {what} of {int(bad.sum())} of {matched} matched kernels differ: the Nsight Compute profile is "
            "not in the timeline's kernel order (another configuration, or cut elsewhere in the iteration), "
            "so none of its values is used"
        )
        return joined.with_columns([pl.lit(None, pl.Float64).alias(c) for c in COLUMNS])
    iterations = joined.filter(bad).get_column("iteration").n_unique()
    warnings.append(
        f"the Nsight Compute values of the {int(bad.sum())} kernels whose {what} differ are not used (they are "
        f"another kernel's): {iterations} of {joined.get_column('iteration').n_unique()} iterations get no "
        "wall-time value, and the kernel-time averages leave those kernels out"
    )
    return joined.with_columns([pl.when(bad).then(None).otherwise(pl.col(c)).alias(c) for c in COLUMNS])


def _drop_unchecked(joined: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``joined`` without the Nsight Compute values of the timeline kernels that have no name (a Kineto kernel
    of ``"name": null``, an nsys name id missing from StringIds) and no launch dimensions to compare either:
    nothing can check that the join by order paired them with their own kernels (an unrelated report's values
    had been used, unsaid), so they count as unmeasured, as a report renamed by NVTX ranges does. Kernels of no
    name whose launch dimensions match are kept, and a warning says they were checked by those alone."""
    ncu_named = joined.get_column("name").is_not_null()
    nameless = joined.get_column("timeline_name").is_null() & ncu_named
    if not nameless.any():
        return joined
    launch = (
        joined.get_column("launch_match")
        if "launch_match" in joined.columns
        else pl.Series([None] * joined.height, dtype=pl.Boolean)
    )
    unchecked = nameless & launch.is_null()
    by_launch = nameless & launch.eq(True).fill_null(False)
    matched = int(ncu_named.sum())
    if by_launch.any():
        warnings.append(
            f"{int(by_launch.sum())} of {matched} matched kernels have no name in the timeline: their Nsight "
            "Compute values are matched by position and launch dimensions only"
        )
    if not unchecked.any():
        return joined
    warnings.append(
        f"{int(unchecked.sum())} of {matched} matched kernels have no name in the timeline and no launch "
        "dimensions to check them by: the join by order cannot be checked, so their Nsight Compute values are "
        "not used"
    )
    return joined.with_columns([pl.when(unchecked).then(None).otherwise(pl.col(c)).alias(c) for c in COLUMNS])


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
    of the iteration has no value or no known time on the timeline, or when its NaN kernels hold more than
    :data:`NAN_TIME_TOLERANCE` of its kernel time (they would count as 0: a figure too low by an unknown
    amount)."""
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
                # (a kernel of no known time -- no start or end on the timeline -- weighs nothing: its
                # iteration of untimed kernels had read 0%, pulling the mean down, beside its withheld busy)
                | ns.is_null().any()
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
    values = _impossible_shares(per_kernel(km), warnings)
    ranges = [] if same_trace else list(metrics_trace.meta.get("range_results") or [])
    if ranges:
        # A range-replay result spans a whole range, the gaps between its kernels included: no kernel's value.
        total = values.height
        values = values.filter(~pl.col("kernel").is_in(ranges))
        warnings.append(
            f"{total - values.height} of {total} results are ranges, not kernels (no launch dimensions: "
            "--replay-mode range/app-range, or --graph-profiling graph): their values span the gaps between a "
            "range's kernels too, and are not used"
        )
    scope = range_name or (analysis.range_name if analysis is not None else None)
    if not same_trace and scope is not None and values["range"].is_not_null().any():
        stacks = metrics_trace.meta.get("nvtx_stacks")
        if stacks:
            # The iteration range may be an outer one (operator ranges inside) for some kernels and the innermost
            # for others (launched in the iteration range itself): every kernel with it in its stack is in scope.
            inside = [k for k, stack in enumerate(stacks) if scope in stack]
            in_scope = values.filter(pl.col("kernel").is_in(inside))
        else:
            in_scope = values.filter(pl.col("range") == scope)
        if in_scope.height:
            values = in_scope
        else:
            warnings.append(
                f"no Nsight Compute kernel ran inside an NVTX range named {scope!r}; "
                f"using all {values.height} kernels in profiling order"
            )
    elif not same_trace and scope is not None and metrics_trace.meta.get("nvtx_start_end"):
        warnings.append(
            f"{metrics_trace.meta['nvtx_start_end']} Nsight Compute kernels ran inside NVTX start/end ranges "
            f"(nvtxRangeStart/End), which tracekit does not read, and none inside a push/pop range: the scope of "
            f"{scope!r} is not applied to them; all {values.height} kernels are used in profiling order"
        )
    joined: pl.DataFrame | None = None
    measured = any(values[f"{c}_how"].is_not_null().any() for c in COLUMNS)
    if not same_trace and not measured:
        # A report without any SM-activity or occupancy metric (--section LaunchStats, --metrics without
        # them): there is nothing to join, and the join's name checks would only add noise.
        warnings.append(
            "the Nsight Compute report holds no SM-activity or warp-occupancy metric "
            f"({SM_ACTIVE_PCT}, {SM_CYCLES_ACTIVE} with {SM_CYCLES_ELAPSED} or {GPC_CYCLES_ELAPSED}, "
            f"{WARPS_ACTIVE_PCT}): no SMs active or warp occupancy from it"
        )
    elif timeline is not None and analysis is not None:
        tk = _timeline_kernels(timeline, analysis, range_name, ops)
        if not same_trace and metrics_trace.meta.get("nvtx_renamed"):
            # ncu --print-nvtx-rename kernel: the report names each kernel by an NVTX range, so no kernel can
            # be told from another by name; a join by position alone could pair any two.
            warnings.append(
                "the Nsight Compute kernels are named by their NVTX ranges (ncu --print-nvtx-rename kernel), not "
                "by their functions: they cannot be matched to the timeline's kernels, so no value of the report "
                "is used; export it with --print-nvtx-rename none"
            )
            joined = tk.with_columns(
                [pl.lit(None, pl.Float64).alias(c) for c in COLUMNS] + [pl.lit(None, pl.String).alias("name")]
            )
        elif same_trace:
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
            processes = metrics_trace.meta.get("processes") or 1
            if processes > 1:
                warnings.append(
                    f"the Nsight Compute report holds the kernels of {processes} processes (a multi-process "
                    "application, or runs appended to one file): joined by position to this one timeline, the "
                    "kernels of every process are matched to it and their values averaged; if they are other "
                    "runs or configurations, the figures mix them"
                )
            joined = _join_ncu(values.join(launch_dims(km), on="kernel", how="left"), tk, warnings)
        if not metrics_trace.meta.get("nvtx_renamed") or same_trace:
            joined = _check_names(joined, warnings)
            if not same_trace:
                joined = _check_launch(joined, warnings)
                joined = _drop_mismatched(joined, warnings)
    summary: dict[str, dict[str, Any] | None] = {}
    iterations: pl.DataFrame | None = None
    if joined is not None and analysis is not None:
        iterations = _wall_time_per_iteration(joined, analysis)
    duration = "timeline_ns" if joined is not None else "duration_ns"
    frame = joined if joined is not None else values
    # The kernel-time average of a join is over the iterations the profile covers wholly: a profile cut short
    # (--launch-count) holds the first kernels of an iteration only, not its mix of kernels.
    averaged = frame
    partial = False
    if joined is not None and not same_trace and joined.height:
        averaged = joined.filter(pl.col("name").is_not_null().all().over("iteration"))
        paired = int(joined.get_column("name").is_not_null().sum())
        partial = averaged.is_empty() and paired > 0
        if partial:
            first = joined.filter(pl.col("name").is_not_null()).get_column("iteration")[0]
            of_first = joined.filter(pl.col("iteration") == first)
            warnings.append(
                f"Nsight Compute profiled no analyzed iteration wholly ({int(of_first['name'].is_not_null().sum())} "
                f"of the {of_first.height} kernels of iteration {first}: a profile cut short, --launch-count?): "
                "no wall-time figure and no kernel-time average is given, the kernels profiled not being the "
                "iteration's mix (their own average is kept as kernel_time_profiled)"
            )
    for c in COLUMNS:
        how = values[f"{c}_how"].drop_nulls()
        if how.is_empty():
            summary[c] = None
            continue
        avg, used, _, _ = _kernel_time_average(averaged, c, duration)
        profiled = _kernel_time_average(frame, c, duration)[0] if partial else None
        if joined is None and avg is not None:
            # Without a timeline each value is weighted by ncu's own duration: a kernel with a value and no
            # readable duration (n/a: cut short by --kill or a replay timeout) has an unknown weight.
            v = pl.col(c)
            untimed = values.filter(v.is_not_null() & v.is_not_nan() & pl.col("duration_ns").is_null()).height
            if untimed:
                avg = None
                warnings.append(
                    f"{c}: {untimed} kernel(s) with a value have no duration (n/a or unreadable): their weight "
                    "in the kernel-time average is unknown, so none is given"
                )
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
        if partial:
            entry["kernel_time_profiled"] = profiled
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
