"""CPU-operator evidence of a Kineto trace for runtime identification (:mod:`tracekit.analyzers.identify`).

Two ``meta`` keys, computed vectorized from the events the Kineto reader already decodes (counts over
distinct names, one as-of join; no per-event Python):

``meta["cpu_op_summary"]``
    ``{"count": int, "names": {name: count}, "namespaces": {ns: count}, "launches": int,
    "launches_outside_ops": float | None}``. CPU operators are the complete events of category ``cpu_op``
    (``Operator`` in 2021 traces) with a readable ``ts``, ``record_function`` scopes (``ProfilerStep#N``,
    ``Optimizer.step#SGD.step``: a ``#`` in the name) excluded (the reader makes them ranges, not
    operators). ``count``: how many. ``names``: the 50 most frequent names with their counts, plus (at most 50 more, most frequent first) names that contain ``::`` but are not ``aten::``
    and names without ``::`` (``<forward op>``, ``fallback_function``, ``prim::...`` ...); ties broken by
    name; ordered by count, most frequent first. ``namespaces``: event counts by the part of the name
    before its first ``::`` ("" for names without one), over all CPU operators. ``launches``: kernel-launch
    calls (runtime/driver events whose name, version suffix stripped, is in
    :data:`tracekit.model.LAUNCH_API_NAMES`). ``launches_outside_ops``: the fraction (0..1) of those calls
    whose [start, end] lies inside no CPU operator of the same pid and tid (inside: operator start <= call
    start and call end <= operator end); None when there are no launches.
``meta["first_op_inputs"]``
    ``{"name": str, "dims": list, "types": list}`` of the first CPU operator (earliest start, then file
    order) whose ``args["Input Dims"]`` is a list whose first element is a non-empty list (a tensor of rank
    >= 1) and whose name is not a tensor-factory/copy op (:data:`NOT_MODEL_OPS`): ``dims`` its ``Input
    Dims``, ``types`` its ``Input type`` (``[]`` when absent), both verbatim. Absent when no operator
    qualifies.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from tracekit.model import LAUNCH_API_NAMES

#: names of the first operators that are not the model's (tensor creation, copies, views)
NOT_MODEL_OPS: tuple[str, ...] = tuple(
    f"aten::{n}"
    for n in (
        "empty",
        "zeros",
        "ones",
        "zero_",
        "fill_",
        "to",
        "copy_",
        "detach",
        "resize_",
        "empty_strided",
        "lift_fresh",
    )
)
#: how many most-frequent names ``names`` keeps, and how many non-ATen names at most on top of them
TOP_NAMES = 50
EXTRA_NAMES = 50
#: ``Input Dims`` text whose first element is a non-empty list: ``[[16, 3, ...``
_FIRST_TENSOR = r"^\s*\[\s*\[\s*-?\d"


def cpu_op_summary(cpu: pl.DataFrame, calls: pl.DataFrame) -> dict[str, Any]:
    """``meta["cpu_op_summary"]`` (see module doc) of CPU operators ``cpu`` (columns name, pid, tid, start,
    end) and launch candidates ``calls`` (runtime/driver events: name with the version suffix stripped,
    pid, tid, start, end); pid/tid as the reader keeps them (integers, or the events' text), the same type
    in both."""
    counts = (
        cpu.group_by("name")
        .agg(n=pl.len())
        .filter(pl.col("name").is_not_null())
        .sort(["n", "name"], descending=[True, False])
    )
    top = counts.head(TOP_NAMES)
    # names without "::" and names with "::" outside aten: exactly the names not starting with "aten::"
    extra = counts.slice(TOP_NAMES).filter(~pl.col("name").str.starts_with("aten::")).head(EXTRA_NAMES)
    kept = pl.concat([top, extra]).sort(["n", "name"], descending=[True, False])
    namespaces = (
        counts.group_by(
            ns=pl.when(pl.col("name").str.contains("::", literal=True))
            .then(pl.col("name").str.split("::").list.first())
            .otherwise(pl.lit(""))
        )
        .agg(n=pl.col("n").sum())
        .sort(["n", "ns"], descending=[True, False])
    )
    launches = calls.filter(pl.col("name").is_in(list(LAUNCH_API_NAMES)))
    return {
        "count": cpu.height,
        "names": dict(zip(kept.get_column("name").to_list(), kept.get_column("n").to_list(), strict=True)),
        "namespaces": dict(
            zip(namespaces.get_column("ns").to_list(), namespaces.get_column("n").to_list(), strict=True)
        ),
        "launches": launches.height,
        "launches_outside_ops": _outside_fraction(launches, cpu),
    }


def _outside_fraction(calls: pl.DataFrame, cpu: pl.DataFrame) -> float | None:
    """Fraction of ``calls`` not inside any interval of ``cpu`` on the same pid/tid (None without calls).

    A call is inside some operator exactly when, among the operators of its thread starting at or before
    it, the latest end reaches the call's end: a running maximum of ends over start order and an as-of
    join."""
    if calls.height == 0:
        return None
    if cpu.height == 0:  # no operator at all: every call is outside
        return 1.0
    keys = ["pid", "tid"]
    reach = (
        cpu.select(*keys, "start", "end")
        .filter(pl.col("start").is_not_null())
        .sort([*keys, "start"])
        .select(*keys, "start", reach=pl.col("end").cum_max().over(keys))
        # stable: of operators starting together, the last one carries the running maximum of them all
        .sort("start", maintain_order=True)
    )
    joined = (
        calls.select(*keys, "start", "end")
        .sort("start")
        .join_asof(reach, on="start", by=keys, strategy="backward", check_sortedness=False)
    )
    inside = joined.select((pl.col("reach") >= pl.col("end")).fill_null(False).sum()).item()
    return (calls.height - inside) / calls.height


def first_op_candidate(cpu: pl.DataFrame) -> pl.DataFrame:
    """The earliest (then first in row order) row of ``cpu`` (CPU operators: start, name, a_input_dims,
    a_input_type as JSON text) that qualifies for ``first_op_inputs``: zero or one row, same columns."""
    qualifies = (
        pl.col("a_input_dims").str.contains(_FIRST_TENSOR).fill_null(False)
        & ~pl.col("name").is_in(list(NOT_MODEL_OPS)).fill_null(False)
        & pl.col("start").is_not_null()
    )
    found = cpu.select("start", "name", "a_input_dims", "a_input_type").filter(qualifies)
    return found.sort("start", maintain_order=True).head(1)


def first_op_inputs(candidates: pl.DataFrame) -> dict[str, Any] | None:
    """``meta["first_op_inputs"]`` from the per-chunk candidates (:func:`first_op_candidate`, in file
    order), or None when there are none."""
    best = first_op_candidate(candidates)
    if best.height == 0:
        return None
    row = best.row(0, named=True)
    try:
        dims = json.loads(row["a_input_dims"])
        types = json.loads(row["a_input_type"]) if row["a_input_type"] else []
    except ValueError:  # pragma: no cover - the texts come from a validated JSON document
        return None
    return {"name": row["name"], "dims": dims, "types": types if isinstance(types, list) else []}
