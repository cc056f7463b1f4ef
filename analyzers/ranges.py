"""Which ranges are the iterations: names, patterns, serving-engine steps, and synthetic windows.

:func:`choose_ranges` has the contract of :func:`tracekit.analyzers.iterations.choose_ranges` (a ranges frame,
the chosen name, a one-line account of how it was chosen) and extends it.

``--range PATTERN``
    A range belongs to the series when its name, or its grouping key (``ProfilerStep#12`` ->
    ``ProfilerStep#*``; PyTorch ``emit_nvtx`` suffixes such as ``, seq = 3, op_id = 7`` dropped), matches:

    1. exactly (``--range iteration``, ``--range 'step[DECODE bs=32]'``): exact names are tried first, so a
       name holding ``[`` or ``*`` is never misread as a pattern;
    2. ``re:REGEX``: Python regular expression, searched anywhere in the name (anchor with ``^``/``$``):
       ``--range 're:^step\\['`` takes every SGLang step whatever its mode and batch size;
    3. a glob when the pattern holds ``*``, ``?`` or ``[`` (``fnmatch``, case-sensitive, whole name):
       ``--range 'execute_*'`` takes every vLLM step whatever its token counts.

    Patterns are matched once per distinct name, not per range. Ranges nested in other ranges of the
    series are dropped (the outermost level is kept), as for exact names.

Default choice, first rule that finds ranges (host ranges only; GPU-projected annotations are ignored). A
format whose reader declares its iteration (``meta["default_range"]``, with ``meta["default_range_reason"]``;
ONNX Runtime profiles: ``model_run``, one per ``InferenceSession.run``) takes those ranges whenever they exist,
before the rules below:

    1. ranges named ``iteration`` (what ``tracekit collect`` writes);
    2. torch.profiler steps ``ProfilerStep#N`` (``profiler.step()``);
    3. serving-engine step ranges (:data:`ENGINE_STEPS`), the engine with the most step ranges;
    4. the most frequent name among top-level ranges (ties: the earliest first range).

No ranges at all (a GPU-only Kineto trace, ``activities=[CUDA]``; an Nsight Systems trace without NVTX)
    One synthetic window covers the trace: it opens at the first op's launch time and closes at the last op's
    end. An op's launch time is the start of its launching API call (the first call with its (pid,
    correlation)) when the trace holds it, else the op's own start; the analyzer assigns ops to iterations by
    that same time.

``split_idle_ms`` (``--split-idle MS``; default off)
    Automatic iterations cut at GPU idle gaps: the ops are taken in start order; an op starts a new iteration
    when its start is more than ``MS`` milliseconds after the latest end of all earlier ops (a gap in the
    union of the ops' busy intervals, all streams; a gap of exactly ``MS`` does not cut). An iteration's range
    runs from its first op's launch time to its last op end, cut back to the next iteration's start if they
    overlap (an op launched before the previous iteration's GPU work ended). It ignores annotated ranges and
    cannot be combined with ``range_name``.

The windows cover every device in the trace together. For one row per device, split the trace first with
:func:`split_by_device` and choose ranges in each part (a device's windows would overlap another's, and
iterations must not overlap).

Sources of the serving-engine step names (read in each project's source):

vLLM
    ``vllm-project/vllm``, ``vllm/v1/worker/gpu_worker.py``, ``Worker.annotate_profile``: each
    ``execute_model`` call runs inside ``profiler.step()`` then a ``record_function`` named
    ``execute_new_{new}_cached_{cached}`` (earlier V1 releases),
    ``execute_context_{ctx_reqs}({ctx_tokens})_generation_{gen_reqs}({gen_tokens})`` (later ones; counts from
    ``compute_iteration_details`` in ``vllm/v1/utils.py``) or, with
    ``profiler_config.detailed_trace_annotation``,
    ``execute_{tokens}_context_{ctx_reqs}(sq{..}sk{..}sqsq{..}sqsk{..})_generation_{gen_reqs}(sq{..}...)``.
SGLang
    ``sgl-project/sglang``, ``python/sglang/srt/utils/profile_utils.py`` and (newer)
    ``python/sglang/srt/model_executor/step_span_utils.py``, ``build_step_span_name``, wrapped around every
    ``ModelRunner.forward``: ``step[EXTEND bs={bs} toks={tokens}]`` or ``step[{ForwardMode name} bs={bs}]``,
    with optional ``c=.. g=.. c_sq=.. g_sq=..`` fields before the ``]``. ``draft step[...]`` spans (EAGLE
    draft forwards, seen in a test of that function) are not steps of their own and are not taken.
TensorRT-LLM
    ``NVIDIA/TensorRT-LLM``, ``tensorrt_llm/_torch/pyexecutor/py_executor.py``, ``PyExecutor._forward_step``:
    an NVTX range ``[Executor] _forward_step {iter}: {ctx} ctx reqs, {gen} gen reqs`` (earlier releases:
    ``_forward_step: {ctx} ctx reqs, {gen} gen reqs``).

Frame returned: ``iteration`` (Int64, 0..n-1 in start order), ``range_start``, ``range_end`` (ns),
``thread`` and ``pid`` of the range (null for synthetic windows) -- the columns ``analyze_iterations`` and
the idle-time attribution read -- plus ``name``
(the range's own name, "window" for synthetic windows; :mod:`tracekit.analyzers.steps` classifies by it) and
``device`` (Int32: the device of synthetic windows when the trace holds one device, else null).
"""

from __future__ import annotations

import fnmatch
import re

import polars as pl

from tracekit.errors import NoActivityError, TracekitError
from tracekit.model import Trace

DEFAULT_RANGE = "iteration"
PROFILER_STEP_KEY = "ProfilerStep#*"
REGEX_PREFIX = "re:"
GLOB_CHARS = frozenset("*?[")
#: Name of the synthetic ranges of :func:`choose_ranges` when the trace has no ranges or ``split_idle_ms``.
WINDOW_NAME = "window"

#: Serving-engine step ranges recognised by the default choice: engine -> regular expression over the whole
#: range name (sources in the module docstring).
ENGINE_STEPS: dict[str, str] = {
    "vLLM": (
        r"^execute_(?:new_\d+_cached_\d+"
        r"|(?:\d+_)?context_\d+\([^)]*\)_generation_\d+\([^)]*\))$"
    ),
    "SGLang": r"^step\[[A-Z][A-Z0-9_]* bs=\d+[^\]]*\]$",
    "TensorRT-LLM": r"^(?:\[Executor\] )?_forward_step(?: \d+)?: \d+ ctx reqs, \d+ gen reqs$",
}

#: Columns of the returned frame (those ``analyze_iterations`` reads, then ``name`` and ``device``).
RANGE_COLUMNS: dict[str, pl.DataType] = {
    "iteration": pl.Int64,
    "range_start": pl.Int64,
    "range_end": pl.Int64,
    "thread": pl.Int64,
    "pid": pl.Int64,
    "name": pl.String,
    "device": pl.Int32,
}


def range_key(names: pl.Expr) -> pl.Expr:
    """The name ranges are grouped by: ``ProfilerStep#123`` -> ``ProfilerStep#*``, and PyTorch ``emit_nvtx``
    names lose their per-call suffixes (``aten::mul, seq = 3, op_id = 314339`` -> ``aten::mul``)."""
    return names.str.replace(r"^ProfilerStep#\d+$", PROFILER_STEP_KEY).str.replace(
        r",\s*(seq|op_id|sizes|input_op_ids)\s*=.*$", ""
    )


def pattern_kind(pattern: str) -> str:
    """How ``--range PATTERN`` is read when no range has that exact name: "regex", "glob" or "exact"."""
    if pattern.startswith(REGEX_PREFIX):
        return "regex"
    if GLOB_CHARS & set(pattern):
        return "glob"
    return "exact"


def _matcher(pattern: str, path: str | None):
    """A predicate over names for a regex or glob ``pattern``; TracekitError on a bad regular expression."""
    if pattern.startswith(REGEX_PREFIX):
        try:
            compiled = re.compile(pattern[len(REGEX_PREFIX) :])
        except re.error as exc:
            raise TracekitError(f"--range {pattern!r}: bad regular expression ({exc})", path) from exc
        return lambda name: compiled.search(name) is not None
    return lambda name: fnmatch.fnmatchcase(name, pattern)


def _matching(candidates: pl.DataFrame, pattern: str, path: str | None) -> pl.Series:
    """Per candidate row: whether its name or key matches ``pattern`` (tested once per distinct string)."""
    exact = (candidates["name"] == pattern) | (candidates["key"] == pattern)
    if exact.any() or pattern_kind(pattern) == "exact":
        return exact
    match = _matcher(pattern, path)
    distinct = pl.concat([candidates["name"], candidates["key"]]).unique().drop_nulls().to_list()
    hits = pl.Series([s for s in distinct if match(s)], dtype=pl.String)
    return candidates["name"].is_in(hits.implode()) | candidates["key"].is_in(hits.implode())


def _engine_of(names: pl.Series) -> pl.Series:
    """Per name: the serving engine whose step naming it follows (null: none)."""
    expr = pl.lit(None, pl.String)
    for engine, regex in reversed(ENGINE_STEPS.items()):
        expr = pl.when(pl.col("name").str.contains(regex)).then(pl.lit(engine)).otherwise(expr)
    return pl.DataFrame({"name": names}).select(expr.alias("engine")).to_series()


def _default_choice(candidates: pl.DataFrame) -> tuple[pl.DataFrame, str, str]:
    """The default rules 1-4 of the module docstring: (chosen rows, name, how)."""
    key = candidates["key"]
    if (key == DEFAULT_RANGE).any():
        return candidates.filter(key == DEFAULT_RANGE), DEFAULT_RANGE, f"default range name {DEFAULT_RANGE!r}"
    if (key == PROFILER_STEP_KEY).any():
        how = "torch.profiler steps (no 'iteration' range); choose another with --range"
        return candidates.filter(key == PROFILER_STEP_KEY), PROFILER_STEP_KEY, how
    engine = _engine_of(candidates["name"])
    if engine.is_not_null().any():
        counts = engine.drop_nulls().value_counts().sort(["count", "engine"], descending=[True, False])
        top = counts["engine"][0]
        chosen = candidates.filter(engine == top)
        chosen = chosen.filter(pl.col("depth") == chosen["depth"].min())
        how = (
            f"{top} serving-engine steps ({chosen.height} ranges of {chosen['name'].n_unique()} names); "
            "choose another with --range"
        )
        return chosen, REGEX_PREFIX + ENGINE_STEPS[top], how
    top_level = candidates.filter(pl.col("depth") == candidates["depth"].min())
    counts = (
        top_level.group_by("key")
        .agg(pl.len().alias("n"), pl.col("start").min().alias("first"))
        .sort(["n", "first"], descending=[True, False])
    )
    name = counts["key"][0]
    how = f"most frequent top-level range ({counts['n'][0]} of them); choose another with --range"
    return candidates.filter(pl.col("key") == name), name, how


def _range_frame(chosen: pl.DataFrame) -> pl.DataFrame:
    """The outermost level of ``chosen`` ranges, in start order, as the returned frame."""
    chosen = chosen.filter(pl.col("depth") == chosen["depth"].min()).sort("start", "end")
    return chosen.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("iteration"),
        pl.col("start").alias("range_start"),
        pl.col("end").alias("range_end"),
        pl.col("thread"),
        pl.col("pid"),
        pl.col("name"),
        pl.lit(None, pl.Int32).alias("device"),
    )


_IDLE_NAME = re.compile(r"^idle>(\d+(?:\.\d*)?(?:e[+-]?\d+)?)ms$")


def _synthetic_request(trace: Trace, range_name: str) -> tuple[float | None] | None:
    """``(split_idle_ms,)`` when ``range_name`` is a name :func:`synthetic_windows` gives ("window": the
    whole trace; ``idle>MSms``: split at gaps longer than MS) and no range of the trace is named so; else
    None. So the name a choice returns selects the same ranges again."""
    if range_name != WINDOW_NAME and not _IDLE_NAME.match(range_name):
        return None
    if (trace.ranges.get_column("name") == range_name).any():
        return None
    match = _IDLE_NAME.match(range_name)
    return (float(match.group(1)) if match else None,)


def choose_ranges(
    trace: Trace, range_name: str | None = None, split_idle_ms: float | None = None
) -> tuple[pl.DataFrame, str, str]:
    """Select the iteration ranges: (frame, chosen name or pattern, how it was chosen, one line).

    ``range_name``: exact name, ``re:REGEX`` or glob (module docstring); None: the default rules.
    ``split_idle_ms``: cut the device timeline at idle gaps longer than this (ms) instead of using ranges.
    Raises NoActivityError when nothing matches or the trace holds neither ranges nor ops, TracekitError on
    a bad pattern or option combination."""
    path = trace.meta.get("path")
    if range_name is not None and split_idle_ms is None:
        synthetic = _synthetic_request(trace, range_name)
        if synthetic is not None:
            return synthetic_windows(trace, synthetic[0], requested=True)
    if split_idle_ms is not None:
        if range_name is not None:
            raise TracekitError("--range and --split-idle exclude each other: use one of them", path)
        if not split_idle_ms >= 0:
            raise TracekitError(f"--split-idle must be a number of ms >= 0, not {split_idle_ms!r}", path)
        return synthetic_windows(trace, split_idle_ms)
    candidates = trace.ranges.filter(pl.col("domain").is_null() | (pl.col("domain") != "gpu")).with_columns(
        range_key(pl.col("name")).alias("key")
    )
    if candidates.is_empty():
        if range_name is not None:
            raise NoActivityError(
                f"no range named {range_name!r}: the trace holds no NVTX ranges or profiler annotations "
                "(leave out --range to analyze the whole trace, or split it with --split-idle MS)",
                path,
            )
        return synthetic_windows(trace, None)
    declared = trace.meta.get("default_range")  # a format's own iteration (ORT: model_run), when present
    if range_name is None and declared and (candidates["key"] == declared).any():
        chosen, name = candidates.filter(pl.col("key") == declared), declared
        how = f"{trace.meta.get('default_range_reason') or 'the format default'}; choose another with --range"
    elif range_name is None:
        chosen, name, how = _default_choice(candidates)
    else:
        chosen = candidates.filter(_matching(candidates, range_name, path))
        if chosen.is_empty():
            names = (
                candidates.group_by("key")
                .len()
                .sort(["len", "key"], descending=[True, False])
                .head(15)["key"]
            )
            raise NoActivityError(
                f"no range matches {range_name!r}; ranges in this trace: " + ", ".join(map(repr, names)), path
            )
        frame = _range_frame(chosen)
        how = "requested with --range"
        if not ((candidates["name"] == range_name) | (candidates["key"] == range_name)).any():
            kind = pattern_kind(range_name)
            how += f" ({kind}: {frame.height} ranges of {frame['name'].n_unique()} names)"
        return frame, range_name, how
    return _range_frame(chosen), name, how


# ------------------------------------------------------------------------------------ synthetic windows


def launch_times(trace: Trace) -> pl.DataFrame:
    """The trace's ops as (``device``, ``launch``, ``start``, ``end``): ``launch`` is the start of the op's
    launching call (the earliest API call with its (pid, correlation)) when the trace holds one and it is not
    after the op's start, else the op's start. In ``trace.ops`` order."""
    ops = trace.ops.select("device", "pid", "correlation", "start", "end")
    calls = (
        trace.api.filter(pl.col("correlation").is_not_null())
        .group_by("pid", "correlation")
        .agg(pl.col("start").min().alias("call_start"))
    )
    if calls.is_empty():
        return ops.select("device", pl.col("start").alias("launch"), "start", "end")
    joined = ops.join(calls, on=["pid", "correlation"], how="left", maintain_order="left")
    return joined.select(
        "device",
        pl.min_horizontal(pl.col("call_start").fill_null(pl.col("start")), pl.col("start")).alias("launch"),
        "start",
        "end",
    )


def idle_split(ops: pl.DataFrame, split_idle_ms: float | None) -> pl.DataFrame:
    """Group ``ops`` (``launch``, ``start``, ``end``) into iterations at idle gaps (module docstring).

    Returns one row per iteration, in start order: ``range_start`` (first launch), ``range_end`` (last op end,
    cut back to the next range's start where they overlap), ``ops`` (count), ``gpu_start``, ``gpu_end``.
    ``split_idle_ms`` None: one iteration."""
    ops = ops.sort("start", "end")
    if split_idle_ms is None:
        new = pl.int_range(pl.len()) == 0
    else:
        threshold = round(split_idle_ms * 1e6)
        reach = pl.col("end").cum_max().shift(1)
        new = reach.is_null() | ((pl.col("start") - reach) > threshold)
    groups = (
        ops.with_columns(new.cast(pl.Int64).cum_sum().alias("group"))
        .group_by("group", maintain_order=True)
        .agg(
            pl.col("launch").min().alias("range_start"),
            pl.col("start").min().alias("gpu_start"),
            pl.col("end").max().alias("gpu_end"),
            pl.col("launch").max().alias("last_launch"),
            pl.len().alias("ops"),
        )
        .sort("range_start")
    )
    # The analyzer's ranges are half-open [start, end): an op launched at the last end (zero length) still
    # lies inside; and ranges must not overlap, so each ends no later than the next starts.
    end = pl.max_horizontal("gpu_end", pl.col("last_launch") + 1)
    return groups.select(
        "range_start",
        pl.min_horizontal(end, pl.col("range_start").shift(-1).fill_null(end)).alias("range_end"),
        pl.col("ops").cast(pl.Int64),
        "gpu_start",
        "gpu_end",
    )


def _ms_text(ms: float) -> str:
    """``ms`` as short text that reads back as the same float (``1.0`` -> "1", ``0.05`` -> "0.05")."""
    short = f"{ms:g}"
    return short if float(short) == ms else repr(float(ms))


def synthetic_windows(
    trace: Trace, split_idle_ms: float | None, requested: bool = False
) -> tuple[pl.DataFrame, str, str]:
    """Ranges made from the ops alone: one window over the trace, or iterations cut at idle gaps (module
    docstring). ``requested``: asked for by name (``--range window``, ``--range 'idle>MSms'``) rather than
    forced by a trace without ranges or by ``--split-idle``; only the wording of the choice differs.

    The name returned ("window", ``idle>MSms``) selects the same ranges when passed back as ``range_name``."""
    path = trace.meta.get("path")
    ops = launch_times(trace).filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    if ops.is_empty():
        raise NoActivityError("no ranges and no device activity: nothing to analyze", path)
    known = ops["device"].drop_nulls().unique()
    windows = idle_split(ops, split_idle_ms)
    device = int(known[0]) if known.len() == 1 and not ops["device"].null_count() else None
    frame = windows.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("iteration"),
        "range_start",
        "range_end",
        pl.lit(None, pl.Int64).alias("thread"),
        pl.lit(None, pl.Int64).alias("pid"),
        pl.lit(WINDOW_NAME).alias("name"),
        pl.lit(device, pl.Int32).alias("device"),
    )
    if device is not None:
        where = "CPU operators" if device == -1 else f"device {device}"
    elif known.len() > 1:
        where = f"all {known.len()} devices together"
    else:
        where = "device not recorded"
    if split_idle_ms is None:
        what = f"one window over the whole trace ({where}, first op launch to last op end)"
        if requested:
            return frame, WINDOW_NAME, f"requested with --range: {what}"
        return (
            frame,
            WINDOW_NAME,
            f"no ranges in the trace: {what}; split it into iterations with --split-idle MS",
        )
    ms = _ms_text(split_idle_ms)
    what = f"{frame.height} iterations cut where the GPU ({where}) was idle longer than {ms} ms"
    how = f"requested with --range: {what}" if requested else f"--split-idle {ms}: {what}"
    return frame, f"idle>{ms}ms", how


# ------------------------------------------------------------------------------------------ per device


def devices(trace: Trace) -> list[int | None]:
    """The devices that ran ops, in order; None stands for ops whose device is not recorded (a reader that
    skipped the column)."""
    ids = trace.ops.get_column("device").unique().to_list()
    return sorted(ids, key=lambda d: (d is None, d if d is not None else 0))


def device_trace(trace: Trace, device: int | None) -> Trace:
    """The part of ``trace`` one device saw: its ops; the API calls launching them, plus calls without a
    correlation id (synchronizations, allocations); the ranges of the processes that launched them (all
    ranges when none of them recorded a range). ``meta`` is copied, with ``device_id`` set."""
    ops = trace.ops.filter(pl.col("device").eq_missing(pl.lit(device, pl.Int32)))
    keys = ops.select("pid", "correlation").filter(pl.col("correlation").is_not_null()).unique()
    api = pl.concat(
        [
            trace.api.filter(pl.col("correlation").is_null()),
            trace.api.join(keys, on=["pid", "correlation"], how="semi"),
        ]
    )
    pids = ops["pid"].drop_nulls().unique()
    ranges = trace.ranges.filter(pl.col("pid").is_in(pids.implode()))
    if ranges.filter(pl.col("domain").is_null() | (pl.col("domain") != "gpu")).is_empty():
        ranges = trace.ranges
    meta = dict(trace.meta)
    meta["device_id"] = device
    meta["warnings"] = list(trace.warnings)
    return Trace(ops=ops, api=api, ranges=ranges, meta=meta)


def split_by_device(trace: Trace) -> dict[int | None, Trace]:
    """One trace per device that ran ops (:func:`device_trace`), in device order; ``{}`` when the trace has
    no ops. A trace of one device (or whose ops' device is not recorded) is returned as it is, keyed by its
    device (None: not recorded)."""
    ids = devices(trace)
    if len(ids) <= 1:
        return {d: trace for d in ids}
    return {d: device_trace(trace, d) for d in ids}
