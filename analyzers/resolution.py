"""Coarse clocks: device ops timed in whole microseconds, and the idle gaps that rounding alone can make.

Older Kineto traces (PyTorch before ~2.0) and ONNX Runtime profiles write ``ts`` and ``dur`` as whole
microseconds, each cut from nanoseconds separately: the start loses up to 1 µs and the duration up to 1 µs.
So an op's recorded end can be up to 2 µs before its real one, and the next op's recorded start up to
1 µs before its real one: a gap recorded as g µs between two ops was really somewhere in (g - 2, g + 1) µs.
Between back-to-back kernels, which a busy GPU runs about a microsecond apart, such traces show thousands
of 1-2 µs gaps (the TensorBoard plugin's V100 ResNet-50 trace: 7,340 of its 8,280 gaps between ops; the
study's PyTorch batch-16 trace: 283 of 384, 9% of its idle time).

tracekit measures these gaps as recorded (they may be real: consecutive kernels do leave the device idle
for about a microsecond) and says how much of the idle time lies within the rounding:

- :func:`time_unit_ns`: 1000 when every op of the trace (at least :data:`MIN_OPS` of them with an end)
  starts and ends on a whole microsecond, else None (nanosecond clocks);
- :func:`small_gaps_per_iteration`: per iteration, the inner gaps (between two ops) of at most
  :data:`ROUNDING_GAP_UNITS` units (2 µs), count and ns;
- :func:`rounding_findings`: a note with their number and share of the idle time (from
  :data:`NOTE_SHARE` of it), and a "verdict uncertain" when counting them as busy would move the median
  utilization across the framework-bound threshold.
"""

from __future__ import annotations

import polars as pl

from tracekit.analyzers.stats import whole_ns

#: A microsecond, in ns: the unit of the coarse clocks.
MICROSECOND_NS = 1000
#: Fewest ops with an end that must all fall on whole microseconds before a clock is taken as coarse (with
#: nanosecond clocks, 20 ops all on whole microseconds by chance: one in 10^60).
MIN_OPS = 20
#: Inner gaps of at most this many clock units may be rounding alone (module docstring: a recorded gap of
#: g units was really in (g - 2, g + 1)).
ROUNDING_GAP_UNITS = 2
#: The share of the idle time in such gaps from which a note says so (below it, the rounding moves no shown
#: figure much; a verdict they could flip is said whatever the share).
NOTE_SHARE = 0.05


def time_unit_ns(ops: pl.DataFrame) -> int | None:
    """1000 (ns) when the ops' clock is whole microseconds: at least :data:`MIN_OPS` ops with a start and an
    end, each a multiple of 1000 ns; None otherwise."""
    timed = ops.select("start", "end").drop_nulls()
    whole = timed.select(
        ((pl.col("start") % MICROSECOND_NS == 0) & (pl.col("end") % MICROSECOND_NS == 0)).all()
    ).item()
    return MICROSECOND_NS if timed.height >= MIN_OPS and whole else None


def small_gaps_per_iteration(gaps: pl.DataFrame, unit_ns: int) -> pl.DataFrame:
    """Per iteration with inner gaps: ``iteration``, ``inner`` (count of inner gaps), ``small`` (those of at
    most :data:`ROUNDING_GAP_UNITS` × ``unit_ns``) and ``small_ns`` (their length). ``gaps``: the measured
    idle gaps (``iteration``, ``position``, ``duration_ns``)."""
    inner = gaps.filter(pl.col("position") == "inner")
    small = pl.col("duration_ns") <= ROUNDING_GAP_UNITS * unit_ns
    return (
        inner.group_by("iteration")
        .agg(
            pl.len().alias("inner"),
            small.sum().cast(pl.Int64).alias("small"),
            pl.col("duration_ns").filter(small).sum().cast(pl.Int64).alias("small_ns"),
        )
        .sort("iteration")
    )


def rounding_findings(
    frame: pl.DataFrame, per_iteration: pl.DataFrame, unit_ns: int, bound_threshold: float
) -> tuple[list[str], list[str]]:
    """(notes, doubts) about the inner gaps within the clock's rounding, over the analyzed iterations
    (``frame``: ``index``, ``latency_ms``, ``gpu_busy_ms``, ``gpu_utilization``, ``idle_ms``). The doubt ("verdict uncertain")
    comes when the median utilization is under ``bound_threshold`` and at or over it with those gaps counted
    busy."""
    analyzed = per_iteration.join(frame.select(iteration="index"), on="iteration", how="semi")
    small = int(analyzed.get_column("small").sum())
    if not small:
        return [], []
    inner = int(analyzed.get_column("inner").sum())
    small_ms = int(analyzed.get_column("small_ns").sum()) / 1e6
    # (the idle time holds the small gaps: never 0 here)
    share = small_ms / float(frame.get_column("idle_ms").sum())
    limit = ROUNDING_GAP_UNITS * unit_ns / 1000
    note = (
        f"the ops' timestamps are whole microseconds: {small:,} of the {inner:,} gaps between ops are at most "
        f"{limit:g} µs ({small_ms:,.3f} ms in all, {share:.0%} of the idle time), within the rounding of their "
        "ends; each may really have been anything from 0 to 3 µs"
    )

    # Per iteration with a latency, the utilization as recorded (the verdict's own column) and with the small
    # gaps counted busy (an iteration without small gaps: as recorded), from whole ns (the ms came from
    # them); busy + small gaps never exceed the latency.
    as_recorded, if_busy = (
        frame.join(analyzed, left_on="index", right_on="iteration", how="left")
        .filter(pl.col("latency_ms") > 0)
        .select(
            pl.col("gpu_utilization").median(),
            (
                (whole_ns(pl.col("gpu_busy_ms")) + pl.col("small_ns").fill_null(0))
                / whole_ns(pl.col("latency_ms"))
            )
            .median()
            .alias("if_busy"),
        )
        .row(0)
    )
    if as_recorded is None or not as_recorded < bound_threshold <= if_busy:
        return ([note] if share >= NOTE_SHARE else []), []
    doubt = (
        f"verdict uncertain: the median utilization is {as_recorded:.1%} as recorded but {if_busy:.1%} with the "
        f"gaps of at most {limit:g} µs between ops counted busy, across the {bound_threshold:.0%} threshold; "
        "the trace's whole-microsecond clock cannot tell those gaps from rounding"
    )
    return [note], [doubt]
