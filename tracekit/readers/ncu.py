"""Nsight Compute reports: ``ncu --csv --page raw`` CSV and ``.ncu-rep`` (through the optional ``ncu_report``).

What Nsight Compute measures is per-kernel hardware counters, each kernel replayed in isolation (serialized,
often with locked clocks and flushed caches). The reader fills:

``kernel_metrics``
    one row per (kernel, numeric metric): ``kernel`` = 0-based profiling order in the report (ncu's ``ID``),
    ``name`` = kernel name as the report spells it (the CSV's ``Kernel Name``, demangled by default; the
    demangled name for ``.ncu-rep``), ``range`` = innermost NVTX push/pop range open at the launch (last entry
    of the last domain that has one; null when none or when ncu ran without ``--nvtx``; the ranges of every
    domain are the kernel's stack, ``meta["nvtx_stacks"]``), ``duration_ns`` =
    ``gpu__time_duration.sum`` converted to ns (null when absent or NaN; where no kernel has it, its ``.avg``,
    ``.max`` or ``.min`` roll-up, equal to it (``--metrics gpu__time_duration.avg``; ``meta["duration_metric"]``
    names it), else ``gpu__time_duration``, the legacy name of ncu 2019.x on Pascal), ``metric``, ``unit`` (as
    ncu wrote it), ``value`` (float; NaN kept where ncu reported NaN/``n/a``, e.g. an incomplete replay). String-valued
    metrics are not rows; ``device__attribute_display_name`` becomes ``meta["gpu"]``. The CSV's ``Grid Size``
    and ``Block Size`` ("(128, 1, 1)") are read as ``launch__grid_dim_x`` ... ``launch__block_dim_z`` rows
    (unit "") where the report does not hold those metrics itself (``--metrics`` without them): the timeline
    join compares them; a cell written otherwise gives none.
``ops``
    one op of kind "kernel" per kernel whose duration is known (of kind "graph" for a range result: below),
    **laid out back to back from t = 0** in profiling order. ncu does not record when kernels ran in the
    application, so these start/end times are not measurements: ``meta["timeline"]`` is ``False`` and a
    reader warning says so. Only the durations are real (and they were measured under ncu's replay
    conditions, not the application's).

``meta``: ``processes`` (CSV, only when more than one: the count of (Host Name, Process ID)), ``nvtx_renamed``
(CSV, only when every kernel run inside NVTX ranges is named as one of them: ``--print-nvtx-rename kernel``
output, with a warning; the join to a timeline uses none of its values), ``nvtx_start_end`` (only when some
kernel ran inside an NVTX start/end range: their count; such ranges are not read), ``format``
"ncu-csv" | "ncu-rep", ``format_version`` (the Nsight Compute version that wrote a
``.ncu-rep``, read from the report's embedded version string; unknown for CSV), ``gpu``, ``device`` "gpu",
``timeline`` False, ``kernels`` (the count of results, range results included), ``synthetic`` ("synthetic" in
the file name, as the other readers), ``nvtx_stacks`` (only when some kernel ran inside nested push/pop
ranges: per kernel, its ranges outer to inner; ``range`` is the innermost), ``nvtx_ranges`` (only when some
kernel ran inside a push/pop range: the innermost ranges' names, in profiling order of their first kernel;
ncu records them as the state at each launch, with no start or end, so none can be an iteration).

CSV input: leading ``==PROF==``/program output lines are skipped up to the header (its first field is
``"ID"``); without one, the error quotes ncu's last ``==WARNING==``/``==ERROR==`` lines ("No kernels were
profiled."). A file may hold several tables, each from its own header line (runs appended with ``>>``, one
table per process): each is read under its own columns and units row (a second table's rows had been read
under the first's, values of another metric and durations in another unit), with a warning; the raw and the
details page mixed in one file are refused. The raw page is wide (one row per kernel, one column per metric, a
second row of units); the details page (``Metric Name``/``Metric Unit``/``Metric Value`` columns) is read too,
with metric names (``--metrics``, ``--print-metric-name name``), "Label (metric_name)" (``label-name``, on
either page: read as the metric name) or section labels (the default): the labels tracekit uses
(:data:`SECTION_LABELS`, e.g. "Duration" of the SpeedOfLight section) are read as their metric names.
``--print-summary`` output (Minimum/Maximum/Average per kernel name, not per kernel) is refused. A kernel is
its process (``Host Name``, ``Process ID``) and ``ID``: processes that reuse IDs keep all their kernels;
a row repeating an earlier one's process and ID is warned about and ignored. No duration metric at all
(``--metrics`` without it) is a warning: no ops. Result rows without launch dimensions (empty ``Block Size``
and ``Grid Size``: range replay's range results, ``--graph-profiling graph``'s whole graphs) are kept as ops
of kind "graph" (one whole piece of device work whose kernels are not recorded one by one, as Nsight Systems'
whole-graph rows: no kernel, not in a kernel count), with a warning, and listed in ``meta["range_results"]``
(their kernel indices; ``kernel_metrics`` keeps their rows): their values span a whole range, gaps included,
so the per-kernel figures leave them out. Numbers may carry
thousands separators (``1,234.5``, ``1,234,567``: one to three digits, then groups of exactly three). Any
other comma in a number (``3,168000``, ``3,1``: a decimal comma?) makes it unreadable, NaN like ``n/a``, and
so does every comma in a metric that has such a value; a warning counts them, and a file in which every
duration is written so is refused (no duration could be read). A cell of ``--print-metric-instances
values|details`` ("158 (0: 158)": the aggregate, then the instance values) is read as its aggregate, with a
note.

Implausible values: a share of a peak (unit ``%``, ``*.pct_of_peak_sustained_*``) below 0, or above 100 on
any roll-up but ``.max``, is read as NaN (missing) and a warning names the metric, the kernels and the extreme
value. Kernels whose
duration does not read (``n/a``, ``nan``, empty, a decimal comma) are left out of ``ops``, with a warning
that counts them.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.errors import TraceFormatError
from tracekit.model import KERNEL_METRICS_SCHEMA, OPS_SCHEMA, Trace, empty_frame

DURATION_METRIC = "gpu__time_duration.sum"
#: the duration's legacy name (ncu 2019.x on Pascal), read as :data:`DURATION_METRIC` where that is absent
LEGACY_DURATION = "gpu__time_duration"
#: the duration's other roll-ups, read (in this order) where :data:`DURATION_METRIC` is absent
#: (``--metrics gpu__time_duration.avg``): ncu measures a kernel's duration once, so its roll-ups are equal
#: (on every one of the 606 kernels of the real H200 report in sample_traces/h200_bert_fp16/pytorch-ncu)
DURATION_ROLLUPS = ("gpu__time_duration.avg", "gpu__time_duration.max", "gpu__time_duration.min")


def duration_metric(metrics: pl.Series) -> str:
    """The metric the kernel durations are read from: :data:`DURATION_METRIC` where any kernel has it, else
    the first of :data:`DURATION_ROLLUPS` some kernel has, else :data:`LEGACY_DURATION` where present (the
    caller renames it), else :data:`DURATION_METRIC` (none: no duration)."""
    present = set(metrics.unique().to_list())
    for name in (DURATION_METRIC, *DURATION_ROLLUPS, LEGACY_DURATION):
        if name in present:
            return name
    return DURATION_METRIC


GPU_NAME_METRIC = "device__attribute_display_name"
#: NVTX push/pop column of the CSV (``--nvtx``); its cells read
#: ``<tid> "<domain>:<range>:<PL_Type>:<PL_Value>:<CLR_Type>:<Color>:<Msg_Type>:<Msg>" ...`` outer to inner.
NVTX_PUSH_POP_PREFIX = "thread Domain:Push/Pop_Range"
#: the CSV's NVTX start/end range column (``Id:Domain:Start/Stop_Range:...``): not read; ``meta["nvtx_start_end"]``
#: counts the kernels that ran inside such a range
NVTX_START_END = "Start/Stop_Range"
#: Columns of the CSV that identify a kernel rather than hold a metric.
ID_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "Section Name",
)
#: Multipliers from ncu's time units to nanoseconds.
TIME_UNITS_NS: dict[str, float] = {
    "ns": 1.0,
    "nsecond": 1.0,
    "nsec": 1.0,
    "nanosecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "usec": 1e3,
    "microsecond": 1e3,
    "µs": 1e3,  # MICRO SIGN
    "μs": 1e3,  # GREEK SMALL LETTER MU, which the same "us" is also written with
    "ms": 1e6,
    "msecond": 1e6,
    "msec": 1e6,
    "millisecond": 1e6,
    "s": 1e9,
    "second": 1e9,
    "sec": 1e9,
}
TIMELINE_WARNING = (
    "Nsight Compute records no kernel start times: the ops frame lays its kernels back to back from 0 "
    "(meta timeline=false); only their durations are measured"
)
_VERSION_RE = re.compile(rb"(20\d\d\.\d+\.\d+(?:\.\d+)?) \(build \d+\)")
#: the header of ``ncu --print-summary per-kernel|per-gpu|per-nvtx`` output: statistics over the invocations of
#: each kernel name (Minimum/Maximum/Average columns), not one row per kernel
_SUMMARY_HEADER = re.compile(r'"?Metric Name"?,.*"?Minimum"?,"?Maximum"?,"?Average"?')
#: a header with an "Invocations" column (the count of calls a summary row is over) and a "Metric Name" column:
#: ``--print-summary`` output too, whatever its statistics columns (a per-nvtx form has "Average" alone)
_INVOCATIONS = re.compile(r'(^|,)"?Invocations"?(,|$)')
_METRIC_NAME = re.compile(r'(^|,)"?Metric Name"?(,|$)')


def _is_summary_header(line: str) -> bool:
    return bool(_SUMMARY_HEADER.search(line) or (_INVOCATIONS.search(line) and _METRIC_NAME.search(line)))


SUMMARY_ERROR = (
    "ncu --print-summary output (statistics over the invocations of each kernel name), not one "
    "row per kernel: kernel durations and counts cannot be read from it; export the raw page: "
    "ncu --import REPORT.ncu-rep --csv --page raw"
)
#: the SpeedOfLight section's display name: "GPU Speed Of Light Throughput" in newer ncu, "GPU Speed Of Light" in
#: older ones (public outputs of 2020 and of April 2023 print it; its Duration / Elapsed Cycles / SM Active Cycles
#: labels are the same)
SOL_SECTIONS = ("GPU Speed Of Light Throughput", "GPU Speed Of Light")
#: metrics the details page names by their section label (``--print-metric-name label``, the default):
#: (section display name, label) -> metric name, from ncu's SpeedOfLight and Occupancy section files
SECTION_LABELS: dict[tuple[str, str], str] = {
    **{(sol, "Duration"): "gpu__time_duration.sum" for sol in SOL_SECTIONS},
    **{(sol, "Elapsed Cycles"): "gpc__cycles_elapsed.max" for sol in SOL_SECTIONS},
    **{(sol, "SM Active Cycles"): "sm__cycles_active.avg" for sol in SOL_SECTIONS},
    ("Occupancy", "Achieved Occupancy"): "sm__warps_active.avg.pct_of_peak_sustained_active",
}


# --------------------------------------------------------------------------------------------- helpers


def range_stack(cell: str | None) -> list[str]:
    """The push/pop ranges named in one cell of the CSV's NVTX column, outer to inner (empty when none).

    The cell lists ``"<domain>:<range>:<6 payload/colour/message fields>"`` entries, outer to inner; a range
    name may itself contain ``:``.
    """
    if not cell:
        return []
    names = []
    for entry in re.findall(r'"([^"]*)"', cell):
        parts = entry.split(":")
        if len(parts) >= 8:
            name = ":".join(parts[1:-6])
        elif len(parts) >= 2:
            name = parts[1]
        else:
            continue
        if name and name != "none":
            names.append(name)
    return names


def innermost_range(cell: str | None) -> str | None:
    """The innermost push/pop range named in one cell of the CSV's NVTX column (None when none)."""
    stack = range_stack(cell)
    return stack[-1] if stack else None


def _nested_stacks(stacks: list[list[str]], meta: dict[str, Any]) -> None:
    """``meta["nvtx_stacks"]`` (per kernel, its push/pop ranges outer to inner) when some kernel ran inside
    more than one range: ``range`` keeps only the innermost, and the iteration range a kernel ran in may be an
    outer one (operator ranges inside ``iteration``)."""
    if any(len(stack) > 1 for stack in stacks):
        meta["nvtx_stacks"] = stacks


#: a number whose commas are thousands separators: one to three digits, then groups of exactly three
#: ("1,234", "3,168.0", "1,234,567"); "3,168000" or "3,1" (a decimal comma?) is not one
_THOUSANDS = r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?([eE][+-]?\d+)?$"
#: digits with a comma somewhere, as a number would be written: the cells :data:`_THOUSANDS` is tested on
_COMMA_NUMBER = r"^[+-]?\d[\d,]*(\.\d*)?([eE][+-]?\d+)?$"
#: a thousands grouping that a decimal comma could have written too ("3,168": 3168, or 3.168?)
_AMBIGUOUS = r"^[+-]?\d{1,3},\d{3}$"
#: an integer with a dot grouping, as a decimal-comma locale writes it ("3.000": 3000 in de_DE, 3.0 in C)
_DOT_GROUPED = r"^[+-]?\d{1,3}(\.\d{3})+$"


def _numbers(col: pl.Expr) -> pl.Expr:
    """Parse ncu number strings (thousands separators allowed: :data:`_THOUSANDS`); null where not a number,
    a comma that is not a thousands separator ("3,168000") included."""
    text = col.str.strip_chars()
    readable = ~text.str.contains(",", literal=True) | text.str.contains(_THOUSANDS)
    return pl.when(readable).then(text.str.replace_all(",", "", literal=True)).cast(pl.Float64, strict=False)


#: a cell of ``--print-metric-instances values|details`` (ncu 2023.1+): the metric's aggregate, then its instance
#: values in parentheses ("158 (0: 158)", "1,000 (0: 1,000; 1: 1,000)"); group 1 is the aggregate
_INSTANCED = r"^([+-]?\d[\d,]*(?:\.\d*)?(?:[eE][+-]?\d+)?)\s+\(.*\)$"


def _with_values(long: pl.DataFrame) -> pl.DataFrame:
    """``long`` (metric, raw: the cell text, stripped) with ``value`` (:func:`_numbers`), ``doubtful`` and
    ``dotted``: the cell is written with a comma that is not a thousands separator ("3,168000", "3,1": a
    decimal comma?), or it is a single group that a decimal comma could have written (:data:`_AMBIGUOUS`,
    "3,168") in a metric that has such a cell; or (``dotted``, doubtful too) it is an integer with a dot
    grouping (:data:`_DOT_GROUPED`, "3.000") in a file that has such a comma anywhere: the locale that writes
    a decimal comma groups thousands with a dot (de_DE: "3.000" is 3000 ns in base units, read as 3). A
    doubtful cell has no value (null): the callers read it as unreadable, NaN, like "n/a". Groupings no
    decimal comma writes ("3,168.0", "1,234,567") always read. A cell of instance values (:data:`_INSTANCED`,
    "158 (0: 158)") is read as its aggregate, the number before them (``instanced``)."""
    aggregate = pl.col("raw").str.extract(_INSTANCED, 1)
    long = long.with_columns(
        pl.coalesce(aggregate, pl.col("raw")).alias("raw"),
        aggregate.is_not_null().fill_null(False).alias("instanced"),
    )
    raw = pl.col("raw")
    comma = raw.str.contains(",", literal=True).fill_null(False)
    misread = comma & raw.str.contains(_COMMA_NUMBER) & ~raw.str.contains(_THOUSANDS)
    # the evidence of a decimal-comma locale: a number with one comma and no thousands grouping ("26,333333",
    # "5,5"); a list ("0,1,2,3") is none
    decimal_comma = raw.str.contains(r"^[+-]?\d+,\d+$") & ~raw.str.contains(_THOUSANDS)
    dotted = (raw.str.contains(_DOT_GROUPED) & decimal_comma.any()).fill_null(False)
    doubtful = misread | (raw.str.contains(_AMBIGUOUS) & misread.any().over("metric")) | dotted
    return long.with_columns(
        pl.when(~doubtful).then(_numbers(raw)).alias("value"),
        doubtful.fill_null(False).alias("doubtful"),
        dotted.alias("dotted"),
    )


def _comma_warning(long: pl.DataFrame, kernels: int, path: Path) -> list[str]:
    """The warning for the doubtful cells of ``long`` (:func:`_with_values`), none when there are none.
    TraceFormatError when every kernel's duration is such a cell: no duration can be read."""
    doubtful = long.filter(pl.col("doubtful"))
    if doubtful.is_empty():
        return []
    dotted = doubtful.filter(pl.col("dotted"))
    commas = doubtful.filter(~pl.col("dotted"))
    source = duration_metric(long.get_column("metric"))
    durations = doubtful.filter(pl.col("metric") == source)
    if durations.get_column("kernel").n_unique() == kernels:
        comma_durations = durations.filter(~pl.col("dotted"))
        what = (
            f"holds a comma that is not, or may not be, a thousands separator ({comma_durations['raw'][0]!r}: "
            "a decimal comma?)"
            if comma_durations.height
            else f"is written as an integer with a dot grouping ({durations['raw'][0]!r}) in a file of "
            "decimal commas"
        )
        raise TraceFormatError(
            f"every {source} value {what}: no kernel duration can be read; export the CSV with '.' as "
            "the decimal point (LC_ALL=C)",
            path,
        )
    said = []
    if commas.height:
        first = commas.row(0, named=True)
        said.append(
            f"{commas.height} values of {commas.get_column('metric').n_unique()} metric(s) hold a comma that is "
            f"not, or may not be, a thousands separator (e.g. {first['metric']} {first['raw']!r}: a decimal "
            "comma?): read as unreadable (NaN), as 'n/a' is"
        )
    if dotted.height:
        first = dotted.row(0, named=True)
        said.append(
            f"{dotted.height} values of {dotted.get_column('metric').n_unique()} metric(s) are integers with a "
            f"dot grouping (e.g. {first['metric']} {first['raw']!r}) in a file whose numbers have a decimal "
            "comma: 3000 or 3.0? read as unreadable (NaN), as 'n/a' is"
        )
    return said


#: the metrics tracekit reads (durations, SM-activity and occupancy counters, by name prefix): a value of one of
#: them that does not read is said (:func:`_unread_warning`), a string metric of another kind is not
USED_METRIC_PREFIXES = (
    "gpu__time_duration",
    "sm__cycles_active",
    "sm__cycles_elapsed",
    "gpc__cycles_elapsed",
    "sm__warps_active",
    "sm__active_cycles",
    "sm__elapsed_cycles",
    "sm__active_warps",
)


def _unread_warning(unread: pl.DataFrame) -> list[str]:
    """A warning per metric tracekit uses (:data:`USED_METRIC_PREFIXES`) with values that are not numbers
    ("50;48;52"): a raw-page column none of whose cells reads is otherwise taken for a string metric and
    dropped, a details-page row so written left out, without a word. ``unread``: long rows (metric, raw)."""
    used = unread.filter(
        pl.any_horizontal([pl.col("metric").str.starts_with(prefix) for prefix in USED_METRIC_PREFIXES])
        & pl.col("raw").is_not_null()
        & (pl.col("raw") != "")
    )
    said = []
    for (metric,), rows in used.group_by(["metric"], maintain_order=True):
        said.append(
            f"{metric}: {rows.height} value(s) are not numbers tracekit can read (e.g. {rows['raw'][0]!r}) and are "
            "not read: those kernels have no such value"
        )
    return said


def _unreadable_durations(unread: pl.DataFrame, readable: pl.Series, path: Path) -> None:
    """TraceFormatError when the duration metric's column is there but none of its values reads as a number
    ("1 000", "1\u00a0000" or "1'000": thousands grouped with a space, a no-break space or an apostrophe, as
    some locales write them; "n/a" everywhere): said before as 'no kernel has gpu__time_duration.sum ...
    collect it too', a metric the file holds. ``unread``: long rows (metric, raw) whose value does not read;
    ``readable``: the metric names of the rows that read."""
    source = duration_metric(readable)
    if source in set(readable.to_list()):
        return
    for name in (DURATION_METRIC, *DURATION_ROLLUPS, LEGACY_DURATION):
        rows = unread.filter(pl.col("metric") == name)
        if rows.height:
            raise TraceFormatError(
                f"none of the {rows.height} values of {name} (the kernels' durations) reads as a number (e.g. "
                f"{rows['raw'][0]!r}; tracekit reads numbers as ncu writes them, with ',' grouping thousands "
                "and '.' as the decimal point): no kernel's duration is known; export the CSV again with "
                "LC_ALL=C (or collect the kernels again, where ncu wrote n/a)",
                path,
            )


def _instances_warning(long: pl.DataFrame) -> list[str]:
    """A note on the cells read as the aggregate before their instance values (:func:`_with_values`)."""
    instanced = long.filter(pl.col("instanced"))
    if instanced.is_empty():
        return []
    return [
        f"{instanced.height} values of {instanced.get_column('metric').n_unique()} metric(s) are followed by their "
        f"instance values (--print-metric-instances; e.g. {instanced['metric'][0]}): the aggregate before them is "
        "read, as ncu printed it (it may be rounded there; the plain export has every digit)"
    ]


#: the longest duration read (ns): a day; a longer one (or an infinite one) is no kernel's, and past 2**63 ns
#: no int64 holds it
MAX_DURATION_NS = 86_400 * 10**9


def _to_ns(value: pl.Expr, unit: pl.Expr) -> pl.Expr:
    factor = unit.str.strip_chars().replace_strict(TIME_UNITS_NS, default=None, return_dtype=pl.Float64)
    return (value * factor).round(0)


#: the metrics whose value is a share of a peak (``<counter>.<rollup>.pct_of_peak_sustained_<when>``)
PEAK_SHARE = ".pct_of_peak_sustained_"


def _impossible_percentages(long: pl.DataFrame, warnings: list[str]) -> pl.DataFrame:
    """``long`` (kernel, metric, unit, value) with every share of a peak that cannot be one made NaN (read as
    missing, as ncu's "n/a": the analyses skip and count such kernels), and a warning per metric naming it,
    how many kernels and the extreme value.

    Checked: the metrics of unit "%" that are a share of a peak (:data:`PEAK_SHARE`, the SM-activity and
    warp-occupancy figures among them). Such a share is impossible below 0, and above 100 unless the metric
    is a ``.max`` roll-up (the busiest unit's count over the *average* unit's peak:
    ``sm__warps_active.max.pct_of_peak_sustained_active`` reads several hundred % on real reports). Other
    percentages are left as ncu wrote them: hit rates read a little over 100% on real reports
    (``lts__t_sector_op_write_hit_rate.pct`` 100.4%), and tracekit reports none of them."""
    value = pl.col("value")
    share = (pl.col("unit").str.strip_chars() == "%") & pl.col("metric").str.contains(
        PEAK_SHARE, literal=True
    )
    capped = ~pl.col("metric").str.contains(".max.", literal=True)
    impossible = share & value.is_not_nan() & ((value < 0) | (capped & (value > 100)))
    flagged = long.select(impossible.fill_null(False)).to_series()
    if not flagged.any():
        return long
    per_metric = (
        long.filter(flagged)
        .group_by("metric")
        .agg(pl.col("kernel").n_unique().alias("n"), value.min().alias("low"), value.max().alias("high"))
        .sort("metric")
    )
    for metric, n, low, high in per_metric.iter_rows():
        extremes = [f"largest {high:g}%"] if high > 100 else []
        extremes += [f"smallest {low:g}%"] if low < 0 else []
        warnings.append(
            f"{metric}: {n} kernel(s) have a value outside 0-100% ({', '.join(extremes)}), which no share of a "
            "peak can be: read as missing (NaN) for those kernels"
        )
    return long.with_columns(pl.when(flagged).then(float("nan")).otherwise(value).alias("value"))


def _finish(kernels: pl.DataFrame, long: pl.DataFrame, meta: dict[str, Any], path: Path) -> Trace:
    """Build the Trace from ``kernels`` (kernel, name, range, device, stream) and long metrics
    (kernel, metric, unit, value)."""
    if kernels.is_empty():
        raise TraceFormatError("Nsight Compute report holds no profiled kernels", path)
    warnings: list[str] = meta.setdefault("warnings", [])
    metric = pl.col("metric")
    source = duration_metric(long.get_column("metric"))
    if source == LEGACY_DURATION:
        # ncu 2019.x on Pascal names the duration without its roll-up
        renamed = pl.when(metric == LEGACY_DURATION).then(pl.lit(DURATION_METRIC)).otherwise(metric)
        long = long.with_columns(renamed.alias("metric"))
        source = DURATION_METRIC
    elif source != DURATION_METRIC:
        # --metrics gpu__time_duration.avg (or .max/.min) without .sum: the same measurement
        meta["duration_metric"] = source
    long = _impossible_percentages(long, warnings)
    duration = (
        long.filter(pl.col("metric") == source)
        .with_columns(
            pl.when(pl.col("value").is_nan())
            .then(None)
            .otherwise(_to_ns(pl.col("value"), pl.col("unit")))
            .alias("duration_ns")
        )
        .with_columns(
            # a duration no kernel can have ("inf", "1e400", "-5": infinite, past the int64 ns range, or
            # negative) is unreadable, as "n/a" is
            pl.when(pl.col("duration_ns").is_between(0, MAX_DURATION_NS))
            .then(pl.col("duration_ns"))
            .alias("duration_ns")
        )
        .select("kernel", pl.col("duration_ns").cast(pl.Int64))
        .unique("kernel", keep="first")
    )
    kernels = kernels.join(duration, on="kernel", how="left").sort("kernel")
    unknown_units = long.filter(
        (pl.col("metric") == source)
        & pl.col("value").is_not_nan()
        & ~pl.col("unit").str.strip_chars().is_in(list(TIME_UNITS_NS))
    )
    if duration.is_empty():  # no kernel has the duration metric at all
        warnings.append(
            f"no kernel has {DURATION_METRIC} (Duration), e.g. ncu --metrics without it, or a section set "
            "without SpeedOfLight: kernel durations are unknown, so this report gives no kernel ops and no GPU "
            "busy time; collect it too (--metrics gpu__time_duration.sum,...)"
        )
    elif unknown_units.height:
        warnings.append(f"{source} has an unknown time unit {unknown_units['unit'][0]!r}; durations unknown")
    else:
        untimed = kernels.get_column("duration_ns").null_count()
        if untimed and duration.height:  # some kernel has the duration metric: the others' did not read
            warnings.append(
                f"{untimed} of {kernels.height} kernels have no readable {source} (n/a, nan, empty "
                "or not a number): they are left out of the ops, so GPU busy time is short by however long "
                "they ran"
            )
    kernel_metrics = long.join(
        kernels.select("kernel", "name", "range", "duration_ns"), on="kernel", how="left"
    )
    timed = kernels.filter(pl.col("duration_ns").is_not_null())
    # a range result (no launch dimensions: meta range_results) is one whole piece of device work whose
    # kernels are not recorded one by one, as Nsight Systems' whole-graph rows are: kind "graph", no kernel
    ranges = list(meta.get("range_results") or [])
    kind = pl.when(pl.col("kernel").is_in(ranges)).then(pl.lit("graph")).otherwise(pl.lit("kernel"))
    ops = timed.with_columns(
        (pl.col("duration_ns").cum_sum() - pl.col("duration_ns")).alias("start"),
    ).with_columns(
        (pl.col("start") + pl.col("duration_ns")).alias("end"),
        kind.alias("kind"),
    )
    if timed.height:
        warnings.append(TIMELINE_WARNING)
    meta.update(device="gpu", timeline=False, kernels=kernels.height)
    named = kernels.get_column("range").drop_nulls().unique(maintain_order=True).to_list()
    if named:  # (ncu --nvtx: the ranges open at each launch, with no times: the analysis says so)
        meta["nvtx_ranges"] = named
    return Trace(
        ops=ops if timed.height else empty_frame(OPS_SCHEMA),
        kernel_metrics=kernel_metrics.select(list(KERNEL_METRICS_SCHEMA)),
        meta=meta,
    )


# ------------------------------------------------------------------------------------------------- CSV


def _is_header(line: str) -> bool:
    return line.startswith('"ID"') or line.startswith(("ID,", "ID;", "ID\t"))


#: field separators other than ncu's comma that a re-saved CSV may use, as a message names them
_OTHER_SEPARATORS = {";": "';'", "\t": "a tab"}


def _other_separator(line: str) -> str | None:
    """How the header ``line`` separates its fields when not by a comma (";" or a tab: a spreadsheet's re-save,
    in a locale that writes decimal commas for ";"), as a message names it; None for ncu's comma."""
    after = line[4:5] if line.startswith('"ID"') else line[2:3]
    return _OTHER_SEPARATORS.get(after)


def _csv_tables(path: Path) -> tuple[list[str], list[str]]:
    """The CSV tables of an ncu output file (plain or gzipped), each from its header line (first field "ID")
    to the next header: one table, or several where runs were appended to one file (``>>``) or ncu wrote one
    table per process. Each keeps its own columns and units row. UTF-8, or UTF-16 with its byte order mark. Lines of ncu's log (``==PROF==``) are dropped;
    its ``==ERROR==`` lines are returned too (a kernel ncu failed to profile: a replay timeout, a driver error,
    is missing from the tables). Read through :func:`tracekit.io.read_inflated`: a pipe once, the inflated
    size watched."""
    from tracekit.io import read_inflated

    data = read_inflated(path)
    # Windows PowerShell 5.1 writes a redirected output (`ncu --csv ... > x.csv`) as UTF-16 with a byte order mark
    utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
    text = data.decode("utf-16" if utf16 else "utf-8-sig", errors="replace")
    # (a byte-order mark starts each file that files were joined from, `cat a.csv b.csv`: a table's header
    # after one had read as a row of the table before)
    lines = [line.removeprefix("\ufeff") for line in text.splitlines()]
    tables: list[list[str]] = []
    for line in lines:
        if _is_summary_header(line):
            raise TraceFormatError(SUMMARY_ERROR, path)
        if _is_header(line):
            other = _other_separator(line)
            if other is not None:
                raise TraceFormatError(
                    f"an ncu CSV whose fields are separated by {other}, not ',' (re-saved by a spreadsheet, perhaps "
                    "in a locale that writes decimal commas): export it again with ncu --csv",
                    path,
                )
            tables.append([line])
        elif tables and line.strip() and not line.startswith("=="):
            tables[-1].append(line)
    if tables:
        errors = [ln.strip() for ln in lines if ln.startswith("==ERROR==")]
        return ["\n".join(table) + "\n" for table in tables], errors
    said = [ln.strip() for ln in lines if ln.startswith(("==WARNING==", "==ERROR=="))]
    raise TraceFormatError(
        'no ncu CSV header (a line starting with "ID") found'
        + (f"; ncu said: {' / '.join(said[-3:])}" if said else ""),
        path,
    )


#: a metric as ``--print-metric-name label-name`` writes it: "Duration (gpu__time_duration.sum)"
_LABEL_NAME = r"^.*\(([A-Za-z0-9_:]+__[^\s()]+)\)$"


def _read_table(text: str, number: int, path: Path) -> pl.DataFrame:
    """One CSV table of the file (all strings), its rows tagged ``_table`` = ``number``; a column named
    "Label (metric_name)" (``--print-metric-name label-name``) is named by its metric name. A row with more
    non-empty fields than the header is refused (:func:`_overlong_row`): its fields would be read a column off."""
    try:
        frame = pl.read_csv(io.StringIO(text), infer_schema=False, has_header=True)
    except pl.exceptions.ComputeError as exc:
        if "more fields" not in str(exc):
            raise TraceFormatError(f"damaged ncu CSV ({_csv_problem(exc, text)})", path) from exc
        _overlong_row(text, path)
        frame = None  # extra fields that are all empty (a trailing comma): dropped
    except pl.exceptions.NoDataError as exc:
        raise TraceFormatError(f"damaged ncu CSV ({_csv_problem(exc, text)})", path) from exc
    if frame is None:
        try:
            frame = pl.read_csv(
                io.StringIO(text), infer_schema=False, has_header=True, truncate_ragged_lines=True
            )
        except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
            raise TraceFormatError(f"damaged ncu CSV ({_csv_problem(exc, text)})", path) from exc
    names = {c: m.group(1) for c in frame.columns if (m := re.match(_LABEL_NAME, c))}
    rename = {c: n for c, n in names.items() if n not in frame.columns and list(names.values()).count(n) == 1}
    # (``_line``: the row's number in the table, its header row 1, as :func:`_overlong_row` counts)
    return frame.rename(rename).with_columns(
        pl.lit(number, pl.Int64).alias("_table"), pl.int_range(2, pl.len() + 2, dtype=pl.Int64).alias("_line")
    )


def _csv_problem(exc: Exception, text: str) -> str:
    """What is wrong with the CSV table ``text`` that polars refused with ``exc``, in one line: the row and the
    problem as Python's csv module finds them in strict mode (a quoted field that never closes: the file cut
    short inside it, or a quote not doubled), else the core of polars' message (its advice, several lines
    about its own options, is left out)."""
    import csv

    rows = csv.reader(io.StringIO(text), strict=True)
    try:
        for _ in rows:
            pass
    except csv.Error as err:
        return f"row {rows.line_num} of the CSV table: {err}: a quoted field does not close (the file cut short, or a quote inside a field not doubled)"
    message = str(exc)
    core = re.search(r"Original error: ```(.*?)```", message, re.S)
    return " ".join(
        (core.group(1) if core else message.splitlines()[0] if message else type(exc).__name__).split()
    )


def _overlong_row(text: str, path: Path) -> None:
    """TraceFormatError naming the first row of ``text`` (one CSV table) with more non-empty fields than its
    header: a field with a comma written without quotes (a kernel name "void k<float, 4>(int*)" in a CSV whose
    quotes were removed, ``sed 's/"//g'``) moves every later field one column right, so each value would be
    read as another column's (a duration as the CC, an occupancy as a duration)."""
    import csv

    rows = csv.reader(io.StringIO(text))
    width = len(next(rows, []))
    for number, row in enumerate(rows, start=2):
        if len(row) > width and any(field.strip() for field in row[width:]):
            raise TraceFormatError(
                f"row {number} of the CSV table has {len(row)} fields, its header {width}: a field with a comma "
                f"written without quotes (were the CSV's quotes removed?) moves the values after it into other "
                f"columns; export it again (ncu --csv quotes every field): {','.join(row)[:120]!r}",
                path,
            )


def _is_details(frame: pl.DataFrame) -> bool:
    return {"Metric Name", "Metric Value"} <= set(frame.columns)


def _read_csv(path: Path) -> Trace:
    texts, errors = _csv_tables(path)
    tables = [_read_table(text, i, path) for i, text in enumerate(texts)]
    meta: dict[str, Any] = {"format": "ncu-csv", "format_version": None, "warnings": []}
    if errors:
        meta["warnings"].append(
            f"ncu reported {len(errors)} error(s) in this output (first: {errors[0]!r}): a kernel it failed to "
            "profile is missing from the report, so the kernels after it are one position off in a join by "
            "order (their names then differ, and their values are withheld)"
        )
    if len({_is_details(t) for t in tables}) > 1:
        raise TraceFormatError(
            "the file holds both the raw page and the details page of ncu (CSV tables appended into one "
            "file?): export one page per file",
            path,
        )
    if len(tables) > 1:
        same = len({tuple(t.columns) for t in tables}) == 1
        meta["warnings"].append(
            f"the file holds {len(tables)} CSV tables, each with its own header line (runs appended to one "
            f"file, or one table per process), {'with the same columns' if same else 'with different columns'}: "
            "each is read under its own header and units"
        )
    # Tables of different columns: a column one table lacks is empty (null) in its rows.
    frame = pl.concat(tables, how="diagonal") if len(tables) > 1 else tables[0]
    if "Kernel Name" not in frame.columns:
        raise TraceFormatError("ncu CSV has no 'Kernel Name' column", path)
    # ncu writes every kernel's row with its name; a row with an ID, no name and a process of no named row is
    # none (a line of the application's output printed among the rows, "1,0.53", would be a kernel of a
    # "process" 0.53). Nameless rows of a named row's process are kept (a range result may be nameless).
    procs = [c for c in PROCESS_COLUMNS if c in frame.columns]
    named = pl.col("Kernel Name").fill_null("").str.strip_chars() != ""
    nameless = pl.lit(False)
    if procs and frame.select(named.any()).item():  # with no named row, no process tells a row apart
        proc = pl.concat_str([pl.col(c).fill_null("").str.strip_chars() for c in procs], separator="\x1f")
        known = proc.is_in(frame.filter(named).select(proc.alias("p")).get_column("p").implode())
        nameless = _numbers(pl.col("ID")).is_not_null() & ~named & ~known
    dropped = frame.filter(nameless).height
    if dropped:
        frame = frame.filter(~nameless)
        meta["warnings"].append(
            f"{dropped} row(s) of the CSV table have an ID but no kernel name and no named kernel's process (lines "
            "of the application's output printed among ncu's rows?): they are no kernel and are left out"
        )
    # ncu writes every kernel's row with its ID: a named row whose ID does not read is damaged (a units row
    # has neither); it is left out, as it was, but no longer without a word
    unread_id = named & _numbers(pl.col("ID")).is_null()
    damaged = frame.filter(unread_id).unique(["ID", "Kernel Name", *procs], keep="first", maintain_order=True)
    if damaged.height:
        first_id, first_name = damaged.row(0, named=True)["ID"], damaged.row(0, named=True)["Kernel Name"]
        meta["warnings"].append(
            f"{damaged.height} row(s) of the CSV table name a kernel but have no readable ID (first: "
            f"{(first_id or '').strip()!r}, kernel {first_name.strip()[:80]!r}): ncu writes every kernel's ID, so "
            "the row is damaged and is left out: GPU busy time and the kernel count miss it"
        )
    nvtx_col = next((c for c in frame.columns if c.startswith(NVTX_PUSH_POP_PREFIX)), None)
    start_end = next((c for c in frame.columns if NVTX_START_END in c), None)
    if start_end is not None:
        # NVTX start/end ranges (nvtxRangeStart/End) are not read: say how many kernels ran inside one
        marked = frame.filter(
            _numbers(pl.col("ID")).is_not_null() & (pl.col(start_end).fill_null("").str.strip_chars() != "")
        )
        if marked.height:
            meta["nvtx_start_end"] = _with_key(marked).get_column("_key").n_unique()
    if _is_details(frame):
        kernels, long = _details_page(frame, nvtx_col, path)
        string_values = long.filter(pl.col("value").is_null())
        _unreadable_durations(string_values, long.filter(pl.col("value").is_not_null())["metric"], path)
        meta["warnings"] += _unread_warning(string_values)
        gpu_rows = string_values.filter(pl.col("metric") == GPU_NAME_METRIC)
    else:
        kernels, long, gpu_rows = _raw_page(frame, nvtx_col, path, meta["warnings"])
    if gpu_rows.height:
        meta["gpu"] = gpu_rows["raw"][0]
    elif "Device" in frame.columns:
        names = frame.filter(pl.col("ID").is_not_null() & (pl.col("ID") != ""))["Device"].drop_nulls()
        if names.len() and not names[0].strip().isdigit():
            meta["gpu"] = names[0].strip()
    meta["warnings"] += (
        _comma_warning(long, kernels.height, path) + _instances_warning(long) + _launchless_warning(kernels)
    )
    if kernels.get_column("_launchless").any():
        meta["range_results"] = kernels.filter(pl.col("_launchless")).get_column("kernel").to_list()
    _nested_stacks(kernels.get_column("_stack").to_list(), meta)
    meta["warnings"] += _renamed_warning(kernels, meta)
    long = long.filter(pl.col("value").is_not_null()).select("kernel", "metric", "unit", "value")
    long = pl.concat([long, _launch_rows(kernels, long)])
    processes = kernels.get_column("_proc").n_unique()
    if processes > 1:
        meta["processes"] = processes
    kernels = kernels.drop("_proc", "_launchless", "_stack", *LAUNCH_FIELDS)
    return _finish(kernels, long, meta, path)


#: columns that, with ``ID``, identify one profiled kernel: IDs of different processes may coincide
PROCESS_COLUMNS = ("Host Name", "Process ID")


def _with_key(rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with ``_id`` (the ID as a number), ``_proc`` (0-based rank of the row's process, host and
    process ID, by first appearance) and ``_key`` (process and ID: one kernel)."""
    procs = [c for c in PROCESS_COLUMNS if c in rows.columns]
    proc = (
        pl.concat_str([pl.col(c).fill_null("").str.strip_chars() for c in procs], separator="\x1f")
        if procs
        else pl.lit("")
    )
    return (
        rows.with_columns(_numbers(pl.col("ID")).alias("_id"), proc.alias("_p"))
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"))
        .with_columns(
            (pl.col("_row").min().over("_p").rank("dense").cast(pl.Int64) - 1).alias("_proc"),
            pl.concat_str([pl.col("_p"), pl.col("_id").cast(pl.String)], separator="\x1e").alias("_key"),
        )
        .drop("_p", "_row")
    )


#: the launch dimensions of a kernel row; a range-replay result has none
LAUNCH_COLUMNS = ("Block Size", "Grid Size")
#: ncu's launch-dimension metrics, as :data:`LAUNCH_COLUMNS` spell them ("(128, 1, 1)")
LAUNCH_METRICS = {
    "Grid Size": ("launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z"),
    "Block Size": ("launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z"),
}
#: the kernel table's columns holding :data:`LAUNCH_METRICS`' values (null where the cell does not read)
LAUNCH_FIELDS = tuple(f"_{m}" for metrics in LAUNCH_METRICS.values() for m in metrics)
#: a Block/Grid Size cell: three counts, each written with or without thousands separators, separated by a
#: comma and a space ("(1,024, 1, 1)"); any other spelling does not read
_DIMS = r"^\(\s*(\d{1,3}(?:,\d{3})*|\d+)\s*,\s+(\d{1,3}(?:,\d{3})*|\d+)\s*,\s+(\d{1,3}(?:,\d{3})*|\d+)\s*\)$"


def _launch_dims(cell: pl.Expr, column: str) -> list[pl.Expr]:
    """The three counts of a Block/Grid Size cell as :data:`LAUNCH_FIELDS` columns (null: not readable)."""
    text = cell.str.strip_chars()
    return [
        text.str.extract(_DIMS, i + 1)
        .str.replace_all(",", "", literal=True)
        .cast(pl.Int64, strict=False)
        .alias(f"_{metric}")
        for i, metric in enumerate(LAUNCH_METRICS[column])
    ]


def _launch_rows(kernels: pl.DataFrame, long: pl.DataFrame) -> pl.DataFrame:
    """Long rows (kernel, metric, unit, value) of the launch dimensions read from the Block/Grid Size columns,
    for the (kernel, metric) pairs ``long`` lacks: the join compares them with a timeline's (a report collected
    with ``--metrics`` holds no ``launch__*`` metric, but every CSV has these columns)."""
    rows = (
        kernels.select("kernel", *LAUNCH_FIELDS)
        .unpivot(index="kernel", on=list(LAUNCH_FIELDS), variable_name="metric", value_name="value")
        .filter(pl.col("value").is_not_null())
        .select(
            "kernel",
            pl.col("metric").str.strip_prefix("_"),
            pl.lit("", pl.String).alias("unit"),
            pl.col("value").cast(pl.Float64),
        )
    )
    return rows.join(long.select("kernel", "metric"), on=["kernel", "metric"], how="anti")


def _launchless_warning(kernels: pl.DataFrame) -> list[str]:
    """A warning when result rows have no launch dimensions (:data:`LAUNCH_COLUMNS` empty): what range
    replay (``--replay-mode range|app-range``) writes for a whole NVTX/profiler range instead of a kernel.
    Such a row's duration covers its range's kernels and gaps: it is one op of kind "graph" (:func:`_finish`),
    no kernel. ``kernels``: :func:`_kernel_table`'s frame."""
    n = int(kernels.get_column("_launchless").sum())
    if not n:
        return []
    example = kernels.filter(pl.col("_launchless")).get_column("name")[0]
    return [
        f"{n} of {kernels.height} results have no launch dimensions (empty Block Size and Grid Size; e.g. "
        f"{example!r}): range-replay results (--replay-mode range/app-range), or whole CUDA graphs "
        "(--graph-profiling graph)? Each is one op of kind 'graph', no kernel (not in the kernel count; meta "
        "range_results): its duration spans a whole range, the gaps between the range's kernels included, so "
        "no kernel time (Σ kernel durations) can be read from it"
    ]


def _renamed_warning(kernels: pl.DataFrame, meta: dict[str, Any]) -> list[str]:
    """A warning, and ``meta["nvtx_renamed"]``, when every kernel that ran inside NVTX push/pop ranges (two or
    more) is named as one of its ranges: ``ncu --print-nvtx-rename kernel`` output, whose kernel names are
    not their functions' (a join to a timeline cannot tell its kernels apart by name). ``kernels``:
    :func:`_kernel_table`'s frame."""
    pairs = [(n, s) for n, s in zip(kernels["name"].to_list(), kernels["_stack"].to_list(), strict=True) if s]
    renamed = sum(1 for name, stack in pairs if name is not None and name.strip() in stack)
    if len(pairs) < 2 or renamed < len(pairs):
        return []
    meta["nvtx_renamed"] = True
    return [
        f"{renamed} of {kernels.height} kernels are named as an NVTX range they ran in (e.g. {pairs[0][0]!r}): "
        "ncu --print-nvtx-rename kernel output, which keeps no function name; a join to a timeline cannot match "
        "its kernels (export with --print-nvtx-rename none)"
    ]


def _kernel_table(rows: pl.DataFrame, nvtx_col: str | None) -> pl.DataFrame:
    """kernel index (0-based, in ID order: ncu's profiling order; when processes reuse IDs, processes in order
    of first appearance, then ID order), ``_key``, name, innermost NVTX range, device, stream per kernel.
    ``rows``: the kernel rows, keyed (:func:`_with_key`)."""
    first = rows.unique("_key", keep="first", maintain_order=True)
    reused = first.get_column("_id").n_unique() < first.height
    first = first.sort(["_proc", "_id"] if reused else ["_id"])
    stacks = (
        first[nvtx_col].map_elements(range_stack, return_dtype=pl.List(pl.String))
        if nvtx_col is not None
        else pl.Series("_stack", [[]] * first.height, dtype=pl.List(pl.String))
    )
    ranges = stacks.list.last()
    device = _numbers(pl.col("Device")).cast(pl.Int32, strict=False) if "Device" in first.columns else None
    stream = _numbers(pl.col("Stream")).cast(pl.Int64, strict=False) if "Stream" in first.columns else None
    launch = [pl.col(c).fill_null("").str.strip_chars() == "" for c in LAUNCH_COLUMNS if c in first.columns]
    launchless = pl.all_horizontal(launch) if len(launch) == len(LAUNCH_COLUMNS) else pl.lit(False)
    dims = [
        e
        for c in LAUNCH_COLUMNS
        for e in (
            _launch_dims(pl.col(c), c)
            if c in first.columns
            else [pl.lit(None, pl.Int64).alias(f"_{m}") for m in LAUNCH_METRICS[c]]
        )
    ]
    return first.select(
        pl.col("_key"),
        pl.col("_proc"),
        launchless.alias("_launchless"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("kernel"),
        pl.col("Kernel Name").alias("name"),
        pl.Series("range", ranges, dtype=pl.String),
        pl.Series("_stack", stacks, dtype=pl.List(pl.String)),
        (device if device is not None else pl.lit(None, pl.Int32)).alias("device"),
        (stream if stream is not None else pl.lit(None, pl.Int64)).alias("stream"),
        *dims,
    )


def _raw_page(
    frame: pl.DataFrame, nvtx_col: str | None, path: Path, warnings: list[str]
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Wide ``--page raw``: kernels, long metrics (kernel, metric, unit, raw, value), GPU-name rows; a warning
    is added to ``warnings`` for kernel rows that repeat an earlier one's process and ID."""
    id_cols = set(ID_COLUMNS) | {c for c in frame.columns if ":" in c and "Range" in c}
    metric_cols = [c for c in frame.columns if c not in id_cols and "__" in c]
    is_kernel = _numbers(pl.col("ID")).is_not_null()
    # Each table's units row (the first row without an ID and a kernel name) holds the units of its columns,
    # for the kernel rows below it up to a later units row (one with a unit in it), which holds for the rows
    # below that: ncu writes one, under its header; a second is said (:func:`_second_units_rows`).
    nameless = ~is_kernel & (pl.col("Kernel Name").is_null() | (pl.col("Kernel Name") == ""))
    first = nameless & (nameless.cast(pl.Int64).cum_sum().over("_table") == 1)
    filled = pl.any_horizontal(
        [pl.col(c).fill_null("").str.strip_chars() != "" for c in metric_cols] or [False]
    )
    is_units = first | (nameless & filled)
    frame = frame.with_columns(_units=is_units.cast(pl.Int64).cum_sum().over("_table").clip(lower_bound=1))
    unit_rows = frame.filter(is_units)
    units = (
        unit_rows.select("_table", "_units", *metric_cols)
        .unpivot(index=["_table", "_units"], on=metric_cols, variable_name="metric", value_name="unit")
        .with_columns(pl.col("unit").fill_null(""))
        if metric_cols
        else pl.DataFrame(
            schema={"_table": pl.Int64, "_units": pl.Int64, "metric": pl.String, "unit": pl.String}
        )
    )
    warnings += _second_units_rows(unit_rows, units, frame.filter(is_kernel))
    rows = _with_key(frame.filter(is_kernel))
    if rows.is_empty():
        raise TraceFormatError("ncu CSV holds no kernel rows", path)
    kernels = _kernel_table(rows, nvtx_col)
    if rows.height > kernels.height:
        warnings.append(
            f"{rows.height - kernels.height} kernel rows repeat the ID of an earlier row of the same process: "
            "only the first is read (a CSV written twice into one file?)"
        )
    if not metric_cols:
        raise TraceFormatError(
            "ncu CSV has no metric columns (expected names like gpu__time_duration.sum)", path
        )
    long = (
        rows.unique("_key", keep="first", maintain_order=True)
        .select(["_key", "_table", "_units", *metric_cols])
        .unpivot(index=["_key", "_table", "_units"], on=metric_cols, variable_name="metric", value_name="raw")
        .join(kernels.select("_key", "kernel"), on="_key", how="left")
        .join(units, on=["_table", "_units", "metric"], how="left", maintain_order="left")
        .with_columns(pl.col("unit").fill_null(""), pl.col("raw").str.strip_chars())
        .drop("_table", "_units")
        .filter(pl.col("raw").is_not_null() & (pl.col("raw") != ""))
        .pipe(_with_values)
    )
    # A column is numeric when any of its cells parses or is a doubtful number (:func:`_with_values`); its
    # unparseable cells ("n/a", "nan", "3,168000") are NaN.
    numeric = long.group_by("metric").agg(
        (pl.col("value").is_not_null() | pl.col("doubtful")).any().alias("numeric")
    )
    long = long.join(numeric, on="metric")
    gpu_rows = long.filter((pl.col("metric") == GPU_NAME_METRIC) & ~pl.col("numeric"))
    _unreadable_durations(
        long.filter(~pl.col("numeric")), long.filter(pl.col("numeric")).get_column("metric"), path
    )
    warnings += _unread_warning(long.filter(~pl.col("numeric")))
    long = long.filter(pl.col("numeric")).with_columns(pl.col("value").fill_null(float("nan")))
    return kernels, long.sort("kernel", "metric"), gpu_rows


def _second_units_rows(unit_rows: pl.DataFrame, units: pl.DataFrame, kernel_rows: pl.DataFrame) -> list[str]:
    """A warning for each units row below a table's first (:func:`_raw_page`) that changes a unit: the kernel
    rows below it are read in its units (the file says so), but ncu writes one units row, under its header (two
    outputs joined without the second's header?). A second row of the same units changes nothing and is not
    said. Was: skipped without a word, the rows below read in the first row's units."""
    said = []
    for (table,), rows in unit_rows.group_by(["_table"], maintain_order=True):
        if rows.height < 2:
            continue
        of = units.filter(pl.col("_table") == table)
        for index, line in zip(rows["_units"].to_list()[1:], rows["_line"].to_list()[1:], strict=True):
            changed = (
                of.filter(pl.col("_units") == index)
                .join(of.filter(pl.col("_units") == index - 1), on="metric", suffix="_above")
                .filter(pl.col("unit").str.strip_chars() != pl.col("unit_above").str.strip_chars())
            )
            if changed.is_empty():
                continue
            below = kernel_rows.filter((pl.col("_table") == table) & (pl.col("_units") == index)).height
            first = changed.row(0, named=True)
            said.append(
                f"row {line} of the CSV table{f' {table + 1}' if unit_rows['_table'].n_unique() > 1 else ''} is a "
                f"second units row ({first['metric']} in {first['unit'].strip()!r}, {first['unit_above'].strip()!r} "
                f"above it{f', and {changed.height - 1} other unit(s)' if changed.height > 1 else ''}): the "
                f"{below} kernel row(s) below it are read in its units, but ncu writes one units row, under its "
                "header: were two outputs joined without the second's header? Check which units hold"
            )
    return said


def _details_page(frame: pl.DataFrame, nvtx_col: str | None, path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Long details page: kernels and long metrics (kernel, metric, unit, raw, value; value null for strings)."""
    rows = _with_key(frame.filter(_numbers(pl.col("ID")).is_not_null()))
    if rows.is_empty():
        raise TraceFormatError("ncu CSV holds no kernel rows", path)
    kernels = _kernel_table(rows, nvtx_col)
    unit_col = pl.col("Metric Unit") if "Metric Unit" in rows.columns else pl.lit("")
    label = pl.col("Metric Name").str.strip_chars().str.replace(_LABEL_NAME, "$1")
    section = pl.col("Section Name").str.strip_chars() if "Section Name" in rows.columns else None
    metric = label
    for (section_name, label_name), name in SECTION_LABELS.items():
        matches = label == label_name
        if section is not None:
            matches = matches & (section == section_name)
        metric = pl.when(matches).then(pl.lit(name)).otherwise(metric)
    long = (
        rows.join(kernels.select("_key", "kernel"), on="_key", how="left")
        .select(
            "kernel",
            metric.alias("metric"),
            unit_col.fill_null("").alias("unit"),
            pl.col("Metric Value").str.strip_chars().alias("raw"),
        )
        .filter(pl.col("metric").is_not_null() & (pl.col("metric") != ""))
        .pipe(_with_values)
        .with_columns(
            pl.when(
                pl.col("value").is_null()
                & (pl.col("raw").str.to_lowercase().is_in(["nan", "n/a", "-nan"]) | pl.col("doubtful"))
            )
            .then(float("nan"))
            .otherwise(pl.col("value"))
            .alias("value")
        )
        .unique(["kernel", "metric"], keep="first", maintain_order=True)
    )
    return kernels, long


# ---------------------------------------------------------------------------------------------- ncu-rep


def report_version(path: Path, limit: int = 64 << 20) -> str | None:
    """The Nsight Compute version embedded in a .ncu-rep ("2024.1.1.0"), scanning at most ``limit`` bytes."""
    chunk = 1 << 20
    tail = b""
    read = 0
    with open(path, "rb") as fh:
        while read < limit:
            block = fh.read(chunk)
            if not block:
                return None
            read += len(block)
            match = _VERSION_RE.search(tail + block)
            if match:
                return match.group(1).decode()
            tail = block[-64:]
    return None


#: how an Nsight Compute report file begins (every .ncu-rep of ../shared/real_traces/ncu, 2023-2025)
NCU_REPORT_MAGIC = b"NVR\0"


def _begins_as_report(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(NCU_REPORT_MAGIC)) == NCU_REPORT_MAGIC
    except OSError:
        return False


def _read_rep(path: Path) -> Trace:
    try:
        import ncu_report  # type: ignore[import-not-found]
    except ImportError as exc:
        raise TraceFormatError(
            "reading .ncu-rep needs the ncu_report module (pip install 'tracekit[ncu]', i.e. ncu-report), or "
            "export a CSV: ncu --import X.ncu-rep --csv --page raw > X.csv",
            path,
        ) from exc
    try:
        context = ncu_report.load_report(str(path))
    except Exception as exc:  # the SWIG layer raises assorted types on damaged files
        raise TraceFormatError(f"cannot load Nsight Compute report ({exc})", path) from exc
    if context.num_ranges() == 0 and not _begins_as_report(path):
        # (ncu_report loads any bytes as a report of nothing)
        raise TraceFormatError(
            f"not an Nsight Compute report: it does not begin as one does (damaged, or another file named "
            f"{path.suffix}); profile again, or export a CSV where the report opens: ncu --import X.ncu-rep "
            "--csv --page raw > X.csv",
            path,
        )
    string_kind = ncu_report.IMetric.ValueKind_STRING
    kernel_rows: list[dict[str, Any]] = []
    names: list[str] = []
    units: list[str] = []
    values: list[float] = []
    kernel_ids: list[int] = []
    gpu: str | None = None
    skipped = 0
    kernel = 0
    in_start_end = 0  # kernels inside an NVTX start/end range (not read, as in the CSV)
    stacks: list[list[str]] = []
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            if action.workload_type() != ncu_report.IAction.WorkloadType_KERNEL:
                skipped += 1
                continue
            # the push/pop ranges of every domain, in the report's domain order, as the CSV's NVTX cell lists
            # them (the default domain's "iteration" and NCCL's "ncclAllReduce" are both open at its kernels)
            stack: list[str] = []
            state = action.nvtx_state()
            if state is not None:
                started = False
                for domain_id in state.domains():
                    domain = state.domain_by_id(domain_id)
                    stack += [str(name) for name in domain.push_pop_ranges()]
                    started = started or bool(list(getattr(domain, "start_end_ranges", list)()))
                in_start_end += started
            stream = action.metric_by_name("launch__stream_id")
            stacks.append(list(stack))
            kernel_rows.append(
                {
                    "kernel": kernel,
                    "name": action.name(ncu_report.IAction.NameBase_DEMANGLED),
                    "range": stack[-1] if stack else None,
                    "device": None,
                    "stream": None if stream is None or not stream.has_value() else int(stream.as_uint64()),
                }
            )
            for metric_name in action.metric_names():
                metric = action.metric_by_name(metric_name)
                if metric is None or not metric.has_value():
                    continue
                if metric.kind() == string_kind:
                    if metric_name == GPU_NAME_METRIC and gpu is None:
                        gpu = metric.as_string()
                    continue
                kernel_ids.append(kernel)
                names.append(metric_name)
                units.append(metric.unit())
                values.append(float(metric.as_double()))
            kernel += 1
    kernels = pl.DataFrame(
        kernel_rows,
        schema={
            "kernel": pl.Int64,
            "name": pl.String,
            "range": pl.String,
            "device": pl.Int32,
            "stream": pl.Int64,
        },
    )
    long = pl.DataFrame(
        {"kernel": kernel_ids, "metric": names, "unit": units, "value": values},
        schema={"kernel": pl.Int64, "metric": pl.String, "unit": pl.String, "value": pl.Float64},
    )
    meta: dict[str, Any] = {
        "format": "ncu-rep",
        "format_version": report_version(path),
        "gpu": gpu,
        "warnings": [],
    }
    _nested_stacks(stacks, meta)
    if in_start_end:
        meta["nvtx_start_end"] = in_start_end
    if skipped and not kernel_rows:
        raise TraceFormatError(
            f"Nsight Compute report holds {skipped} results that are not kernels (whole ranges, graphs or command "
            "lists: range replay, --replay-mode range|app-range, or --graph-profiling graph) and no kernel result, "
            "and tracekit reads "
            "kernel results from a .ncu-rep: export the CSV (ncu --import X.ncu-rep --csv --page raw) to read them "
            "as range results (durations only)",
            path,
        )
    if skipped:
        meta["warnings"].append(
            f"{skipped} non-kernel results (range or graph replay) in the report were skipped"
        )
    return _finish(kernels, long, meta, path)


def read(path: Path) -> Trace:
    """Read an Nsight Compute CSV (``--csv --page raw`` or details page) or ``.ncu-rep`` into a Trace."""
    path = Path(path)
    if path.suffix in (".ncu-rep", ".ncu-repz"):
        trace = _read_rep(path)
    else:
        trace = _read_csv(path)
    trace.meta["path"] = str(path)
    # (as the ORT, Kineto and nsys readers: synthetic data is named so, and labelled)
    trace.meta["synthetic"] = "synthetic" in path.name.lower()
    return trace
