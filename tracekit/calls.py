"""Host API calls and the device ops they launch: the (pid, correlation) key and the "outermost call" rule.

A profiler gives each launching call a correlation id, unique within its process, that the ops it launched
carry too; the pair (pid, correlation) names a call. Some exports hold several API rows for one pair
(nsys 2022.4 writes each call twice, a plain "CUDA backtrace" row and the ``_v`` row; a runtime call can
enclose the driver call it makes). The row that stands for the call is the **outermost** one: the earliest
start, then the longest, then the earlier row on a full tie.

Both the readers (collapsing duplicate rows, :func:`collapse_duplicate_calls`) and the analyzers (matching
ops to their launching call) use the rules below, so that they can never disagree. Everything is vectorized:
one Int64 key per pair and a sort that is only a check when the rows are already in key order (profilers
write them so), instead of hashing every row.
"""

from __future__ import annotations

import polars as pl

from tracekit.model import sort_frame

#: (pid, correlation) fits one Int64 key, pid * 2**32 + correlation, when 0 <= pid < PID_LIMIT and
#: 0 <= correlation < CORRELATION_LIMIT.
PID_LIMIT = 1 << 31
CORRELATION_LIMIT = 1 << 32

#: The outermost-first order of the calls of one pair: by start, then longest first.
OUTERMOST_ORDER: tuple[list[str], list[bool]] = (["start", "end"], [False, True])


def pair_keys_fit(*frames: pl.DataFrame) -> bool:
    """Whether every non-null ``pid`` and ``correlation`` of ``frames`` fits :func:`pair_key`."""
    for frame in frames:
        if frame.is_empty():
            continue
        lo_pid, hi_pid, lo_corr, hi_corr = frame.select(
            pl.col("pid").min().alias("a"),
            pl.col("pid").max().alias("b"),
            pl.col("correlation").min().alias("c"),
            pl.col("correlation").max().alias("d"),
        ).row(0)
        if lo_pid is not None and (lo_pid < 0 or hi_pid >= PID_LIMIT):
            return False
        if lo_corr is not None and (lo_corr < 0 or hi_corr >= CORRELATION_LIMIT):
            return False
    return True


def pair_key() -> pl.Expr:
    """One Int64 per (pid, correlation), column ``key`` (null when either is null); valid only where
    :func:`pair_keys_fit` holds (otherwise two pairs could share a key)."""
    return (pl.col("pid") * CORRELATION_LIMIT + pl.col("correlation")).alias("key")


def outermost_of_keys(calls: pl.DataFrame) -> pl.DataFrame:
    """The outermost row of each ``key`` of ``calls`` (columns ``key`` from :func:`pair_key`, ``start``,
    ``end``, any others), in ``key`` order."""
    calls = sort_frame(calls, ["key", *OUTERMOST_ORDER[0]], [False, *OUTERMOST_ORDER[1]])
    first = calls.select(pl.col("key").ne_missing(pl.col("key").shift(1))).to_series()
    return calls if first.all() else calls.filter(first)


def outermost_of_pairs(calls: pl.DataFrame) -> pl.DataFrame:
    """The outermost row of each (pid, correlation) of ``calls`` (a null is a value like any other), in
    outermost-first order (:data:`OUTERMOST_ORDER`). Hashes every row: for pairs that do not fit one key."""
    by, descending = OUTERMOST_ORDER
    return calls.sort(by, descending=descending, maintain_order=True).unique(
        subset=["pid", "correlation"], keep="first", maintain_order=True
    )


def outermost_calls(calls: pl.DataFrame) -> pl.DataFrame:
    """The outermost row of each (pid, correlation) of ``calls`` (``pid``, ``correlation``, ``start``,
    ``end``, any others): :func:`outermost_of_keys` (with a ``key`` column, in key order) when every pair
    is non-null and fits the key, else :func:`outermost_of_pairs` (no ``key``)."""
    nulls = calls.select(pl.col("pid").null_count() + pl.col("correlation").null_count()).item()
    if nulls == 0 and pair_keys_fit(calls):
        return outermost_of_keys(calls.with_columns(pair_key()))
    return outermost_of_pairs(calls)


def collapse_duplicate_calls(api: pl.DataFrame) -> pl.DataFrame:
    """One row per (pid, correlation) for non-null, non-zero correlation ids: the outermost call (see the
    module docstring). Rows without a correlation id are all kept.

    Rows come out ordered by (start, end), calls with a correlation id before those without on a tie, each
    group in input order otherwise."""
    if api.height == 0:
        return api
    has_corr = pl.col("correlation").is_not_null() & (pl.col("correlation") != 0)
    flagged = api.with_columns((~has_corr).alias("_uncorrelated"))
    keyed = flagged.select("pid", "correlation", "start", "end", "_uncorrelated").with_row_index("_row")
    keyed = keyed.filter(~pl.col("_uncorrelated")).drop("_uncorrelated")
    winners = outermost_calls(keyed).get_column("_row")
    keep = pl.repeat(False, api.height, dtype=pl.Boolean, eager=True).scatter(winners, True)
    kept = flagged.filter(keep | pl.col("_uncorrelated"))
    return sort_frame(kept, ["start", "end", "_uncorrelated"], [False, False, False]).drop("_uncorrelated")
