"""An independent reference for the Kineto reader's ``cpu_ops`` frame: the top-level CPU operators decoded
again from the file with the reader's raw event table, by the rule stated in the trace model."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracekit.readers.kineto import read_events
from tracekit.readers.nesting import nesting_depth


def kineto_cpu_ops(path: Path | str) -> pl.DataFrame:
    """The top-level CPU operators (``cpu_op``/``Operator`` events not nested in another on their thread,
    ``record_function`` scopes, whose names hold a ``#`` or are ``iteration``, excluded: ``ProfilerStep#N``,
    ``Optimizer.step#SGD.step``) of a Kineto trace: ``start``, ``end`` (ns, the reader's clock), ``pid``,
    ``thread``, ``name``: what ``trace.cpu_ops`` holds (:data:`tracekit.model.CPU_OPS_SCHEMA`) once the
    Kineto reader fills it, computed here from :func:`~tracekit.readers.kineto.read_events` (a second decode:
    a test oracle, never used by the analysis)."""
    events = read_events(Path(path))[0]
    # complete events: phase "X" (readers that keep only complete events' durations drop the phase column)
    complete = pl.col("ph") == "X" if "ph" in events.columns else pl.col("dur_ns").is_not_null()
    frame = events.filter(
        complete
        & pl.col("cat_l").is_in(["cpu_op", "operator"])
        & ~(pl.col("name").str.contains("#", literal=True) | (pl.col("name") == "iteration"))
    ).select(
        "start",
        (pl.col("start") + pl.col("dur_ns")).alias("end"),
        pl.col("pid").cast(pl.Int64, strict=False),
        pl.col("tid")
        .cast(pl.String)
        .str.extract(r"(-?\d+)\s*$", 1)
        .cast(pl.Int64, strict=False)
        .alias("thread"),
        pl.col("name").cast(pl.String),
    )
    return frame.filter(nesting_depth(frame, ["pid", "thread"]) == 0)
