"""Serving-engine steps: prefill, decode or mixed, and the framework tax per class.

A serving engine runs one *step* (one forward over a batch) per scheduler iteration. A *prefill* step
processes prompt tokens of requests that have not produced a token yet (including chunks of a chunked
prefill); a *decode* step produces one token (or, with speculative decoding, a few) for requests already
generating; a *mixed* step holds both; an *idle* step has no request (data-parallel padding, a dummy batch).
Decode steps are short and many, which is where CUDA graphs and host scheduling decide the framework tax.

Classification is by the step's range name (formats and their sources in :mod:`tracekit.analyzers.ranges`).
From each name come a count of context (prefill) requests ``context_requests`` and of generation (decode)
requests ``generation_requests``; the class is *mixed* when both are > 0, *prefill* when only the first,
*decode* when only the second, *idle* when both are 0.

vLLM ``execute_context_{C}({tokens})_generation_{G}({tokens})`` and the detailed
``execute_{T}_context_{C}(sq{tokens}...)_generation_{G}(sq{tokens}...)``
    C and G as counted by ``compute_iteration_details`` (``vllm/v1/utils.py``): a request is a context request
    while it has generated no token, so a chunked-prefill continuation counts as context. Exact.
vLLM ``execute_new_{N}_cached_{M}`` (earlier V1)
    C = N (requests scheduled for the first time: always prefill), G = M (requests scheduled before). A cached
    request is decoding unless its prompt is being prefilled in chunks, so a chunk after the first counts as
    decode here: the class is exact without chunked prefill, approximate with it.
SGLang ``step[{MODE} bs={B} ...]``
    by ``ForwardMode``: EXTEND, PREFILL, SPLIT_PREFILL, DRAFT_EXTEND, DRAFT_EXTEND_V2 -> prefill (C = B, G = 0);
    DECODE, TARGET_VERIFY (speculative verification of generating requests) -> decode (C = 0, G = B); MIXED ->
    mixed, or with the detailed fields ``c={C} g={G}`` by those counts; IDLE, DUMMY_FIRST -> idle (C = G = 0).
    Other modes are left unclassified.
TensorRT-LLM ``[Executor] _forward_step {i}: {C} ctx reqs, {G} gen reqs``
    C context requests, G generation requests, as scheduled.

When the iterations are not themselves engine steps (the default choice takes torch.profiler's
``ProfilerStep#N`` first, and vLLM opens one around each step), an iteration takes the class of the engine
step ranges that start inside it: *mixed* when they include prefill and decode work (or a mixed step),
else their common class. Only the outermost step ranges count (:func:`outermost_steps`): one inside another
of its process is the same step annotated twice (SGLang's ``step[DECODE bs=32]`` inside
``execute_32_context_0(...)_generation_32(...)`` in the real SGLang traces), whose requests summed would count
twice. Iterations with no recognised step name stay unclassified (null). A step in vLLM's format holding an
SGLang ``step[...]`` of its process is SGLang's (its scheduler writes both there): ``step_engine`` is "SGLang".

Recorded shapes (Kineto ``Input Dims``) are not used: the trace model does not carry them.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from tracekit.analyzers.ranges import ENGINE_STEPS
from tracekit.model import Trace, on_host

#: The step classes (an Enum column ``step_class``; null = not classified).
STEP_CLASS = pl.Enum(["prefill", "decode", "mixed", "idle"])
#: The classes of steps that served requests (all but ``idle``).
SERVED_CLASSES = ("prefill", "decode", "mixed")

SGLANG_PREFILL_MODES = ("EXTEND", "PREFILL", "SPLIT_PREFILL", "DRAFT_EXTEND", "DRAFT_EXTEND_V2")
SGLANG_DECODE_MODES = ("DECODE", "TARGET_VERIFY")
SGLANG_IDLE_MODES = ("IDLE", "DUMMY_FIRST")

_VLLM_CONTEXT = r"^execute_(?:\d+_)?context_(\d+)\([^)]*\)_generation_(\d+)\([^)]*\)$"
_VLLM_NEW_CACHED = r"^execute_new_(\d+)_cached_(\d+)$"
_SGLANG = r"^step\[([A-Z][A-Z0-9_]*) bs=(\d+)[^\]]*\]$"
_SGLANG_CG = r" c=(\d+) g=(\d+)"
_TRTLLM = ENGINE_STEPS["TensorRT-LLM"].replace(
    r": \d+ ctx reqs, \d+ gen reqs", r": (\d+) ctx reqs, (\d+) gen reqs"
)

#: Per-class fields of :func:`class_summary`.
SUMMARY_FIELDS = ("latency_ms", "gpu_busy_ms", "framework_overhead_ms", "gpu_utilization")


def _int(name: pl.Expr, regex: str, group: int) -> pl.Expr:
    return name.str.extract(regex, group).cast(pl.Int64, strict=False)


def step_counts(names: pl.Expr) -> list[pl.Expr]:
    """Expressions over range names: ``step_engine`` (null: not an engine step), ``context_requests``,
    ``generation_requests`` (null where the name does not say)."""
    mode = names.str.extract(_SGLANG, 1)
    bs = _int(names, _SGLANG, 2)
    sglang_c = (
        pl.when(mode.is_in(SGLANG_PREFILL_MODES))
        .then(bs)
        .when(mode.is_in(SGLANG_DECODE_MODES + SGLANG_IDLE_MODES))
        .then(0)
        .when(mode == "MIXED")
        .then(_int(names, _SGLANG_CG, 1))
    )
    sglang_g = (
        pl.when(mode.is_in(SGLANG_DECODE_MODES))
        .then(bs)
        .when(mode.is_in(SGLANG_PREFILL_MODES + SGLANG_IDLE_MODES))
        .then(0)
        .when(mode == "MIXED")
        .then(_int(names, _SGLANG_CG, 2))
    )
    is_vllm = names.str.contains(ENGINE_STEPS["vLLM"])
    is_sglang = names.str.contains(ENGINE_STEPS["SGLang"])
    is_trt = names.str.contains(ENGINE_STEPS["TensorRT-LLM"])
    context = pl.coalesce(_int(names, _VLLM_CONTEXT, 1), _int(names, _VLLM_NEW_CACHED, 1))
    generation = pl.coalesce(_int(names, _VLLM_CONTEXT, 2), _int(names, _VLLM_NEW_CACHED, 2))
    return [
        pl.when(is_vllm)
        .then(pl.lit("vLLM"))
        .when(is_sglang)
        .then(pl.lit("SGLang"))
        .when(is_trt)
        .then(pl.lit("TensorRT-LLM"))
        .alias("step_engine"),
        pl.when(is_vllm)
        .then(context)
        .when(is_sglang)
        .then(sglang_c)
        .when(is_trt)
        .then(_int(names, _TRTLLM, 1))
        .alias("context_requests"),
        pl.when(is_vllm)
        .then(generation)
        .when(is_sglang)
        .then(sglang_g)
        .when(is_trt)
        .then(_int(names, _TRTLLM, 2))
        .alias("generation_requests"),
    ]


def _flags(names: pl.Expr) -> list[pl.Expr]:
    """Per name (after :func:`step_counts`): ``prefill_work``, ``decode_work`` (an SGLang MIXED step without
    counts has both), ``known`` (a step whose class the name gives: both counts readable)."""
    mode = names.str.extract(_SGLANG, 1)
    c, g = pl.col("context_requests"), pl.col("generation_requests")
    mixed_mode = (mode == "MIXED") & c.is_null()
    return [
        ((c > 0) | mixed_mode).fill_null(False).alias("prefill_work"),
        ((g > 0) | mixed_mode).fill_null(False).alias("decode_work"),
        # both counts read (a count past int64 is read as null: the step's work is not known, and a step of
        # unknown work is no idle step), or an SGLang MIXED step without them
        (pl.col("step_engine").is_not_null() & ((c.is_not_null() & g.is_not_null()) | mixed_mode))
        .fill_null(False)
        .alias("known"),
    ]


def classify_names(names: pl.Series) -> pl.DataFrame:
    """Classify step range names: ``name``, ``step_engine``, ``context_requests``, ``generation_requests``,
    ``step_class`` (module docstring; null: not a recognised step)."""
    frame = pl.DataFrame({"name": names.cast(pl.String)}).with_columns(step_counts(pl.col("name")))
    frame = frame.with_columns(_flags(pl.col("name")))
    return frame.select(
        "name",
        "step_engine",
        "context_requests",
        "generation_requests",
        _class_of("prefill_work", "decode_work", "known"),
    )


def _class_of(prefill: str, decode: str, known: str) -> pl.Expr:
    p, d = pl.col(prefill), pl.col(decode)
    return (
        pl.when(~pl.col(known))
        .then(None)
        .when(p & d)
        .then(pl.lit("mixed"))
        .when(p)
        .then(pl.lit("prefill"))
        .when(d)
        .then(pl.lit("decode"))
        .otherwise(pl.lit("idle"))
        .cast(STEP_CLASS)
        .alias("step_class")
    )


def outermost_steps(trace: Trace) -> pl.DataFrame:
    """The engine step ranges of ``trace`` (host ranges whose names :data:`ENGINE_STEPS` match; ``start``,
    ``end``, ``name``, ``pid``, in start order) that no other step range of the same process holds in time: a
    step range inside another is the same step annotated twice (the real SGLang traces' ``step[DECODE bs=32]``
    inside ``execute_32_context_0(...)_generation_32(...)``), not a second step. Of identical intervals the
    first is kept."""
    engine_regex = "|".join(f"(?:{r})" for r in ENGINE_STEPS.values())
    steps = (
        trace.ranges.filter(on_host() & pl.col("name").str.contains(engine_regex))
        .select("start", "end", "name", pl.col("pid").cast(pl.Int64))
        .with_row_index("_row")
        .sort(["pid", "start", "end", "_row"], descending=[False, False, True, False], nulls_last=True)
    )
    reach = pl.col("end").cum_max().shift(1).over("pid")
    held = reach.is_not_null() & (reach >= pl.col("end"))
    return steps.filter(~held).sort(["start", "_row"]).drop("_row")


def _inner_steps(own: pl.DataFrame, trace: Trace, steps: pl.DataFrame | None = None) -> pl.DataFrame:
    """(iteration, name) of the outermost engine step ranges of ``trace`` (:func:`outermost_steps`; or of
    ``steps``: ``start``, ``name``, ``pid``) that start inside each iteration's range *of the same process*
    (two engines in one trace, data-parallel ranks each with its own ``ProfilerStep``, run their steps side by
    side: one engine's step is no step of the other's iteration); by time alone where a range or an iteration
    has no process (a reader that records none)."""
    inner = (outermost_steps(trace) if steps is None else steps).select("start", "name", "pid")
    if inner.is_empty() or own.is_empty():
        return pl.DataFrame(schema={"iteration": pl.Int64, "name": pl.String})
    if "pid" not in own.columns:
        own = own.with_columns(pl.lit(None, pl.Int64).alias("pid"))
    by_process = inner.get_column("pid").null_count() == 0 and own.get_column("pid").null_count() == 0
    process = (pl.col("pid").cast(pl.Int64) if by_process else pl.lit(0, pl.Int64)).alias("_pid")
    inner = inner.with_columns(process)
    return (
        inner.join_asof(
            own.select("iteration", "range_start", "range_end", process).sort("range_start"),
            left_on="start",
            right_on="range_start",
            by="_pid",
            strategy="backward",
            check_sortedness=False,  # (both sorted above)
        )
        .filter(pl.col("start") < pl.col("range_end"))
        .select("iteration", "name")
    )


def step_classes(ranges: pl.DataFrame, trace: Trace | None = None) -> pl.DataFrame:
    """Per iteration of ``ranges`` (the frame of :func:`tracekit.analyzers.ranges.choose_ranges`):
    ``iteration``, ``step_engine``, ``step_class``, ``context_requests``, ``generation_requests`` (summed over
    the steps of the iteration; null when a step does not say).

    An iteration whose own name is a recognised step is classified by it; otherwise by the engine step ranges
    of ``trace`` (host ranges) that start inside ``[range_start, range_end)`` (module docstring)."""
    own = ranges.select(
        "iteration", "range_start", "range_end", "name", *(["pid"] if "pid" in ranges.columns else [])
    )
    steps = own.select("iteration", "name")
    if trace is not None:
        known = classify_names(steps["name"])["step_class"].is_not_null()
        inner = _inner_steps(own.filter(~known), trace)
        steps = pl.concat([steps.filter(known), inner])
    classified = pl.concat([steps.select("iteration"), classify_names(steps["name"])], how="horizontal")
    c, g = pl.col("context_requests"), pl.col("generation_requests")
    per_iteration = (
        classified.filter(pl.col("step_class").is_not_null())
        .group_by("iteration")
        .agg(
            pl.col("step_engine").first(),
            pl.col("step_class").is_in(["prefill", "mixed"]).any().alias("_p"),
            pl.col("step_class").is_in(["decode", "mixed"]).any().alias("_d"),
            pl.when(c.null_count() == 0).then(c.sum()).alias("context_requests"),
            pl.when(g.null_count() == 0).then(g.sum()).alias("generation_requests"),
        )
        .with_columns(pl.lit(True).alias("_k"))
        .with_columns(_class_of("_p", "_d", "_k"))
    )
    # an iteration holding an engine step whose class its name does not give (a count past int64, an SGLang
    # mode not known) is of unknown work: not the class, nor the counts, of its other steps (a step of an
    # unreadable context count beside a decode step of 4 had read 'decode', 0 context requests)
    unknown = classified.filter(pl.col("step_engine").is_not_null() & pl.col("step_class").is_null())
    if unknown.height:
        held = pl.col("iteration").is_in(unknown.get_column("iteration").implode())
        per_iteration = per_iteration.with_columns(
            pl.when(~held).then(pl.col(c)).alias(c)
            for c in ("step_class", "context_requests", "generation_requests")
        )
    if trace is not None:
        per_iteration = _sglang_in_vllm_format(per_iteration, own, trace)
    return own.select("iteration").join(
        per_iteration.select(
            "iteration", "step_engine", "step_class", "context_requests", "generation_requests"
        ),
        on="iteration",
        how="left",
    )


def _sglang_in_vllm_format(per_iteration: pl.DataFrame, own: pl.DataFrame, trace: Trace) -> pl.DataFrame:
    """``per_iteration`` with ``step_engine`` "SGLang" for the iterations read as vLLM steps that hold an SGLang
    ``step[...]`` range of their process: SGLang's scheduler opens its steps in vLLM's detailed format too
    (``execute_32_context_0(sq0sk0...)_generation_32(...)`` around ``step[DECODE bs=32]`` in the real TraceLens
    SGLang traces, opened in sglang/srt/managers/scheduler.py's ``_run_batch_inner``); vLLM writes no
    ``step[...]``. The classes and request counts are the vLLM-format name's, the same step's."""
    vllm = per_iteration.filter(pl.col("step_engine") == "vLLM")
    if vllm.is_empty():
        return per_iteration
    sglang = trace.ranges.filter(on_host() & pl.col("name").str.contains(ENGINE_STEPS["SGLang"]))
    if sglang.is_empty():
        return per_iteration
    pid = pl.col("pid").cast(pl.Int64) if "pid" in sglang.columns else pl.lit(None, pl.Int64).alias("pid")
    sglang = sglang.select("start", "name", pid)
    held = _inner_steps(own.join(vllm.select("iteration"), on="iteration", how="semi"), trace, sglang)
    return per_iteration.with_columns(
        pl.when(pl.col("iteration").is_in(held.get_column("iteration").implode()))
        .then(pl.lit("SGLang"))
        .otherwise(pl.col("step_engine"))
        .alias("step_engine")
    )


def add_step_class(
    iterations: pl.DataFrame, ranges: pl.DataFrame, trace: Trace | None = None
) -> pl.DataFrame:
    """``iterations`` (``IterationAnalysis.iterations``: ``index`` = the range's ``iteration``) with
    ``step_engine``, ``step_class``, ``context_requests``, ``generation_requests`` added (see
    :func:`step_classes`); row order kept."""
    classes = step_classes(ranges, trace).rename({"iteration": "index"})
    return iterations.join(classes, on="index", how="left", maintain_order="left")


def class_summary(iterations: pl.DataFrame) -> pl.DataFrame:
    """The framework tax per step class, over the iterations of :func:`add_step_class` (classes in the order
    prefill, decode, mixed, idle, then unclassified as a null class; classes with no step left out).

    Columns: ``step_class``; ``steps`` (count); ``latency_ms``, ``gpu_busy_ms``, ``framework_overhead_ms``:
    means in ms over the class's steps; ``gpu_utilization``: mean busy/latency fraction; ``p50_latency_ms``;
    ``overhead_share``: total framework overhead / total latency of the class's steps whose overhead is known
    (a fraction; null when none is: busy time withheld); ``total_ms``: the class's summed latency."""
    means = [pl.col(f).mean().alias(f) for f in SUMMARY_FIELDS]
    known = pl.col("framework_overhead_ms").is_not_null() & pl.col("latency_ms").is_not_null()
    return (
        iterations.group_by("step_class")
        .agg(
            pl.len().alias("steps"),
            *means,
            pl.col("latency_ms").median().alias("p50_latency_ms"),
            # over the steps whose overhead is known (null where none is: busy withheld, not 0%)
            pl.when(known.any())
            .then(
                pl.col("framework_overhead_ms").filter(known).sum() / pl.col("latency_ms").filter(known).sum()
            )
            .alias("overhead_share"),
            pl.col("latency_ms").sum().alias("total_ms"),
        )
        .sort("step_class", nulls_last=True)
    )


def class_summary_json(iterations: pl.DataFrame) -> list[dict[str, Any]]:
    """:func:`class_summary` as JSON rows (the unclassified class named "unclassified")."""
    frame = class_summary(iterations).with_columns(
        pl.col("step_class").cast(pl.String).fill_null("unclassified")
    )
    return frame.to_dicts()
