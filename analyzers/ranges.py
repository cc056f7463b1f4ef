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

    Patterns are matched once per distinct name, not per range. Ranges held in time by another range of
    the series are left out (the outermost are kept), as for exact names: see the same-name rule below.

Default choice, first rule that finds ranges (host ranges only; GPU-projected annotations are ignored). A
format whose reader declares its iteration (``meta["default_range"]``, with ``meta["default_range_reason"]``;
ONNX Runtime profiles: ``model_run``, one per ``InferenceSession.run``) takes those ranges whenever they exist,
before the rules below:

    1. ranges named ``iteration`` (what ``tracekit collect`` writes);
    2. torch.profiler steps ``ProfilerStep#N`` (``profiler.step()``);
    3. serving-engine step ranges (:data:`ENGINE_STEPS`): the *outermost* ones (a step range inside another
       step range of the same process, e.g. SGLang's ``step[EXTEND ...]`` inside ``execute_15360_context_...``,
       is not a candidate: the enclosing step holds the whole step, host stalls included), of the engine with
       the most such ranges;
    4. the most frequent name among top-level ranges, counting only ranges on a thread that launches device
       work when there are any (so worker threads' ranges do not outvote the launching thread's), and only
       names whose ranges hold a launch call (of their process) when some do (a library's own
       instrumentation, e.g. nvFuser's many ranges around host code, is no iteration of the work; the names
       passed over are said); ties: the name whose ranges hold the most launch calls, then the earliest first
       range. PyTorch operator and collective ranges (:func:`operator_ranges`: ``aten::mul, seq = 3, op_id =
       7`` from ``emit_nvtx``, ``nccl:all_reduce`` from a process group) are no candidates: one operator or
       collective call is never an iteration. Numbered names that a loop's counter makes (``step 0`` ...
       ``step 4``, ``iteration_12``: each once on its thread, none overlapping another there) count as one
       name, chosen as ``re:^step \\d+$`` (:func:`_numbered_series`). When the choice is a single range
       (no tie) and a name repeats among the ranges directly inside it (its thread, one level down; those
       holding a launch call when some do), the choice line names it, with the ``--range`` that takes it:
       a ``benchmark`` range around a timed loop's ``step`` ranges, or a ``forward`` range around its
       ``layer`` ranges (which are no iterations), look the same, so the one range stays the choice.

    When rule 4 finds no candidate -- every range is an operator or collective range (an ``emit_nvtx``
    trace without a step or iteration scope, or a window cut from a longer capture that lost the ranges
    around the work), or the trace holds launch calls and no candidate name's ranges hold one (ranges around
    host code only) -- the trace is analyzed as if it had no ranges (below): one window over it, with the
    reason said.

    The choice is said in one line (``how``), with the other candidates it saw: nested engine steps, names
    tied with the chosen one.

Same name on several threads, or nested (one rule for the default and for ``--range``)
    An instance of the chosen name (or pattern) is left out when another instance holds it in time (starts
    no later and ends no earlier) on its own thread, or on another thread of the same process when its own
    thread runs no instance that nothing holds (:func:`_left_out`). nvFuser's ``compileFusionParallel`` runs
    on the main thread around the same range on its worker threads: the main thread's instances are the
    iterations. A thread that also runs instances of its own is a thread pool running iterations at once:
    its held instances stay. A warning says how many instances were left out and why; another says when
    instances that remain overlap in time (different threads): an op launched in the overlap belongs to the
    instance of its own thread, or, when its thread holds none, to the later-starting one.

Ranges without a start or an end time (null: never closed, or never opened)
    are no candidates for any rule or pattern: such a range has no latency. A warning names them. The Nsight
    Systems reader leaves a range that was never closed (the capture ended inside it) with a null end, and
    says so; a :class:`~tracekit.model.Trace` built by hand may hold either.

Ranges without a name (null: a Kineto event that lost its ``name``)
    are no candidates either; a warning counts them. When no named range is left, the trace is analyzed as
    one window (as with no ranges at all, below), with that reason in the choice line; ``--range`` then
    finds nothing.

No ranges at all (a GPU-only Kineto trace, ``activities=[CUDA]``; an Nsight Systems trace without NVTX)
    One synthetic window covers the trace: it opens at the first op's launch time and closes at the last op's
    end. An op's launch time is the start of its launching API call (the first call with its (pid,
    correlation)) when the trace holds it, else the op's own start; the analyzer assigns ops to iterations by
    that same time.

``split_idle_ms`` (``--split-idle MS``; default off)
    Automatic iterations cut at GPU idle gaps: the ops are taken in start order; an op starts a new iteration
    when its start is more than ``MS`` milliseconds after the latest end of all earlier ops (a gap in the
    union of the ops' busy intervals, all streams; a gap of exactly ``MS`` does not cut). An op belongs to
    the window its start falls in, so windows' *device* spans never overlap; the window itself -- its
    latency -- runs from its first op's launch time to its last op's end. Windows may overlap when the host
    runs ahead of the device (it launched the next window's first op before this window's work ended): each
    window's latency is still its own first launch to last end, what a caller waiting for that work would
    see, and a warning says how many windows overlap. Annotated ranges are ignored in this mode, and it
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
the idle-time attribution read -- plus ``name`` (the range's own name, "window" for synthetic windows;
:mod:`tracekit.analyzers.steps` classifies by it), ``device`` (Int32: the device of synthetic windows when the
trace holds one device, else null) and ``gpu_start``, ``gpu_end`` (synthetic windows only, else null: the
window's device span; ops are assigned to a synthetic window by their start in ``[gpu_start, gpu_end]``, to a
range by their launch: :mod:`tracekit.analyzers.iterations`). :func:`select_ranges` returns it in a
:class:`RangeChoice`, with the warnings of the choice.
"""

from __future__ import annotations

import bisect
import fnmatch
import math
import re
import shlex
from dataclasses import dataclass, field

import polars as pl

from tracekit.errors import NoActivityError, TracekitError
from tracekit.model import API_NAME_SUFFIX, HOUR_NS, LAUNCH_API_NAMES, Trace, merged_intervals, on_host

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
#: The numbers in a range name (``step 3``, ``iteration_12``, ``iter 3 forward``): names alike but for them form
#: a series in rule 4 (:func:`_numbered_series`).
NUMBER = r"\d+"
#: Where :func:`_numbered_series` puts a number in a name's stem.
_NUMBER_MARK = "\x00"
#: Any engine's step range name (:data:`ENGINE_STEPS` as one pattern).
ANY_ENGINE_STEP = "|".join(f"(?:{regex})" for regex in ENGINE_STEPS.values())

#: Columns of the returned frame (those ``analyze_iterations`` reads, then ``name``, ``device`` and, for
#: synthetic windows, their device span ``gpu_start``/``gpu_end``).
RANGE_COLUMNS: dict[str, pl.DataType] = {
    "iteration": pl.Int64,
    "range_start": pl.Int64,
    "range_end": pl.Int64,
    "thread": pl.Int64,
    "pid": pl.Int64,
    "name": pl.String,
    "device": pl.Int32,
    "gpu_start": pl.Int64,
    "gpu_end": pl.Int64,
}
#: How many other candidate names a choice line lists at most.
LISTED_CANDIDATES = 5
#: Largest ``split_idle_ms`` accepted (ms; ~31.7 years): the threshold in ns must fit int64 with room.
MAX_SPLIT_IDLE_MS = 1e12


@dataclass
class RangeChoice:
    """The iteration ranges of a trace and how they were chosen.

    ``frame``: :data:`RANGE_COLUMNS`, one row per iteration in start order; ``name``: the chosen name or
    pattern (passing it back as ``range_name`` selects the same ranges); ``how``: one line saying which rule
    chose them and which other candidates it saw; ``warnings``: instances of the chosen name left out, or
    overlapping, or windows that overlap (module docstring)."""

    frame: pl.DataFrame
    name: str
    how: str
    warnings: list[str] = field(default_factory=list)

    @property
    def synthetic(self) -> bool:
        """Whether the iterations are synthetic windows (ops assigned by start, not by launch)."""
        return bool(self.frame.height) and self.frame.get_column("gpu_start").null_count() == 0


#: PyTorch's operator namespaces: a range named ``aten::mul`` is one operator call (``emit_nvtx``, with or
#: without its suffixes), never an iteration.
OPERATOR_NAMESPACES = (
    r"^(?:aten|prim|prims|c10d|_c10d_functional|_c10d_functional_autograd|autograd|profiler)::"
)
#: The suffixes ``torch.autograd.profiler.emit_nvtx`` appends to every range it opens (``seq``: an autograd
#: operator's sequence number; ``op_id``: the RecordFunction's id).
EMIT_NVTX_SUFFIX = r",\s*(?:seq|op_id)\s*=\s*\d"
#: The ranges PyTorch's process groups open around each collective call (``ProcessGroupNCCL``'s profiling
#: title ``nccl:all_reduce``, ``nccl:_all_gather_base``, ``nccl:send 0->1``; ``gloo:``, ``mpi:``, ``ucc:``,
#: ``xccl:`` alike): one call, never an iteration (a DDP trace without profiler steps has more
#: ``nccl:all_reduce`` ranges, top-level on the autograd thread, than steps).
COLLECTIVE_RANGES = r"^(?:nccl|gloo|mpi|ucc|xccl|hccl):[A-Za-z_]|^(?:nccl|rccl)[A-Z][A-Za-z]*$"
#: NVTX domains of libraries whose every range is one API call: NCCL (2.19 on) opens ``ncclAllReduce``,
#: ``ncclGroupEnd``, ``ncclCommInitRank`` ... in its own domain ``NCCL`` (RCCL likewise); CCCL (CUB, Thrust)
#: one range per device algorithm call (``cub::DeviceRadixSort::SortPairs``) in domain ``CCCL``.
LIBRARY_DOMAINS = ("NCCL", "RCCL", "CCCL")


def operator_ranges(names: pl.Expr, keys: pl.Expr, domains: pl.Expr | None = None) -> pl.Expr:
    """Whether a range is one PyTorch operator or collective call (no iteration candidate of rule 4): its
    grouping key is in one of :data:`OPERATOR_NAMESPACES`, or is a process group's collective or an NCCL
    API call (:data:`COLLECTIVE_RANGES`), or its NVTX domain is a communication library's
    (:data:`LIBRARY_DOMAINS`), or it was opened by ``emit_nvtx`` (:data:`EMIT_NVTX_SUFFIX`) and its key is
    namespaced (``FSDP::pre_forward (layer.0), op_id = 12``: a library's hook, which ``emit_nvtx`` wraps like
    an operator). A user's own ``record_function("step")`` under ``emit_nvtx`` (``step, op_id = 5``) is not
    namespaced and stays a candidate."""
    namespaced = keys.str.contains(r"^[A-Za-z_][\w.]*::")
    library = pl.lit(False) if domains is None else domains.is_in(LIBRARY_DOMAINS).fill_null(False)
    return (
        keys.str.contains(OPERATOR_NAMESPACES)
        | keys.str.contains(COLLECTIVE_RANGES)
        | library
        | (names.str.contains(EMIT_NVTX_SUFFIX) & namespaced)
    )


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


def _held(rows: pl.DataFrame, by: tuple[str, ...] = ("pid",)) -> pl.Series:
    """Per row of ``rows`` (``pid``, ``start``, ``end``, and the columns of ``by``): whether another row of
    the same group (``by``: the process; or its thread too) holds it in time (starts no later and ends no
    earlier). Of identical intervals the one of the thread with the most rows holds the others (the main
    thread's iteration holds a worker's copy of it), then the lowest thread id, then the name: never the
    input order, so that the rows' order (nsys 2025.6+ writes them in any order) cannot change which is an
    iteration."""
    keys = list(by)
    ranked = rows.with_row_index("_row")
    tie = []
    if "thread" in rows.columns:
        ranked = ranked.with_columns(pl.len().over("pid", "thread").alias("_n"))
        tie += [("_n", True), ("thread", False)]
    if "name" in rows.columns:
        tie += [("name", False)]
    order = ranked.sort(
        [*keys, "start", "end", *(c for c, _ in tie), "_row"],
        descending=[*([False] * len(keys)), False, True, *(d for _, d in tie), False],
        nulls_last=True,
    )
    reach = pl.col("end").cum_max().shift(1).over(keys)
    held = order.select("_row", (reach.is_not_null() & (reach >= pl.col("end"))).alias("held"))
    return held.sort("_row").get_column("held")


def _left_out(rows: pl.DataFrame, one_per_thread: bool = False) -> pl.Series:
    """Per instance of the chosen ranges (``pid``, ``thread``, ``start``, ``end``): whether it is left out as
    nested. An instance another holds on its own thread is nested (a push/pop stack is a thread's). One held
    in time by an instance of another thread is nested when its thread holds no instance that is not so
    held: worker threads' ranges inside the main thread's (nvFuser's ``compileFusionParallel``: 2 main-thread
    ranges kept, 8 worker ones left out). A thread that also runs instances of its own, held by none, is a
    thread pool running iterations at once: its held instances are iterations too (a real recording of 12
    iterations on 4 threads had read as 9). ``one_per_thread``: the ranges are calls that a thread makes one at
    a time and never from inside another thread's (ONNX Runtime's ``model_run``: one per ``run()`` of the
    calling thread), so only the first rule applies: a thread whose runs all lie within another thread's runs
    is a second caller running at the same time, not a worker (a real ORT profile of two threads calling
    ``run()`` had lost 4 of its 8 runs, their nodes counted in the other thread's)."""
    on_thread = _held(rows, ("pid", "thread"))
    if one_per_thread:
        return on_thread
    in_process = _held(rows)
    free = rows.filter(~in_process).select("pid", "thread").unique().with_columns(pl.lit(True).alias("_free"))
    has_free = (
        rows.select("pid", "thread")
        .join(free, on=["pid", "thread"], how="left", nulls_equal=True, maintain_order="left")
        .get_column("_free")
        .fill_null(False)
    )
    return on_thread | (in_process & ~has_free)


def _launch_calls(trace: Trace) -> pl.DataFrame:
    """The trace's launch calls (:data:`tracekit.model.LAUNCH_API_NAMES`) as (``pid``, ``start``), those
    with both, in start order (a :class:`~tracekit.model.Trace` keeps its API calls sorted by start): what
    :func:`_launch_counts` searches, built once per range choice."""
    return trace.api.filter(pl.col("name").is_in(LAUNCH_API_NAMES)).select("pid", "start").drop_nulls()


def _launch_counts(calls: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Per ``key`` of ``rows`` (``key``, ``pid``, ``start``, ``end``): ``launches``, how many of the launch
    ``calls`` (:func:`_launch_calls`) of the same process start inside its ranges (a call inside two ranges of
    the key counts twice; a range without a pid holds none; a Trace holds no range ending before it
    starts). By binary search over each process's calls (in start order), not by pairing every range with
    every call."""
    counts = pl.Series("launches", [0] * rows.height, dtype=pl.Int64)
    for pid in rows.get_column("pid").drop_nulls().unique().to_list():
        at = rows.get_column("pid").eq_missing(pid)
        own = rows.filter(at)
        times = calls.filter(pl.col("pid") == pid).get_column("start")
        inside = times.search_sorted(own.get_column("end"), "left") - times.search_sorted(
            own.get_column("start"), "left"
        )
        counts = counts.scatter(at.arg_true(), inside.cast(pl.Int64))
    return rows.select("key").with_columns(counts).group_by("key").agg(pl.col("launches").sum())


def _name_counts(rows: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """Per ``key`` of ``rows``: ``n`` ranges, the ``first`` one's start and the ``launches`` inside them
    (:func:`_launch_counts`), unsorted; what rule 4 ranks names by."""
    return (
        rows.group_by("key")
        .agg(pl.len().alias("n"), pl.col("start").min().alias("first"))
        .join(_launch_counts(calls, rows), on="key")  # (a row for every key)
    )


def _listed(texts: list[str]) -> str:
    """``a, b, c`` (at most :data:`LISTED_CANDIDATES`, then "and N more")."""
    more = len(texts) - LISTED_CANDIDATES
    return ", ".join(texts[:LISTED_CANDIDATES]) + (f" and {more} more" if more > 0 else "")


def _counted(pairs: list[tuple[str, int]]) -> str:
    """``'a' (3 ranges), 'b' (1 range)`` of (name, count) pairs, listed by :func:`_listed`."""
    return _listed([f"{key!r} ({n} range{'s' if n != 1 else ''})" for key, n in pairs])


def _names(values: list[str]) -> str:
    """``'a', 'b', 'c'`` (at most :data:`LISTED_CANDIDATES`, then "and N more")."""
    return _listed([repr(v) for v in values])


def _engine_choice(candidates: pl.DataFrame, engine: pl.Series) -> tuple[pl.DataFrame, str, str]:
    """Rule 3: the outermost engine-step ranges of the engine with the most of them (module docstring)."""
    steps = candidates.filter(engine.is_not_null()).with_columns(engine.drop_nulls().alias("engine"))
    outer = steps.filter(~_held(steps))
    counts = outer.get_column("engine").value_counts().sort(["count", "engine"], descending=[True, False])
    top = counts["engine"][0]
    chosen = outer.filter(pl.col("engine") == top)
    sized = f"({chosen.height} ranges of {chosen['name'].n_unique()} names)"
    how = f"{top} serving-engine steps {sized}"
    others = steps.filter(pl.col("engine") != top)
    if others.height:
        inner = steps.filter(_held(steps) & (pl.col("engine") != top))
        if top == "vLLM" and _each_holds_sglang(chosen, inner):
            # SGLang's scheduler opens its steps in vLLM's format around its own step[...] (analyzers/steps.py
            # says step_engine "SGLang" of such a step): the steps are SGLang's
            names = _names(sorted(inner["name"].unique().to_list()))
            how = (
                f"SGLang serving-engine steps in vLLM's format {sized}, each around its SGLang step range: "
                f"{inner.height} nested inside them ({names})"
            )
            others = others.join(inner, on=["pid", "start", "end", "name"], how="anti")
            inner = inner.clear()
        parts = []
        for label, rows in (
            ("nested inside them", inner),
            ("outside them", others.join(inner, on=["pid", "start", "end", "name"], how="anti")),
        ):
            if rows.height:
                engines = "/".join(sorted(set(rows["engine"].to_list())))
                names = _names(sorted(rows["name"].unique().to_list()))
                parts.append(
                    f"{rows.height} {engines} step range{'s' if rows.height > 1 else ''} {label} ({names})"
                )
        if parts:
            how += "; also seen: " + "; ".join(parts)
    return chosen, REGEX_PREFIX + ENGINE_STEPS[top], how + "; choose another with --range"


def _each_holds_sglang(chosen: pl.DataFrame, inner: pl.DataFrame) -> bool:
    """Whether every ``chosen`` step range holds an SGLang step range of ``inner`` (the engine steps nested in
    another) of its own process: then the chosen ones are SGLang's steps written in vLLM's format."""
    sglang = inner.filter(pl.col("engine") == "SGLang")
    if sglang.is_empty():
        return False
    pairs = (
        chosen.select("pid", "start", "end")
        .with_row_index("_step")
        .join(
            sglang.select("pid", pl.col("start").alias("_s"), pl.col("end").alias("_e")),
            on="pid",
            how="inner",
            nulls_equal=True,
        )
    )
    held = pairs.filter((pl.col("_s") >= pl.col("start")) & (pl.col("_e") <= pl.col("end")))
    return held.get_column("_step").n_unique() == chosen.height


def _operators_said(operators: pl.DataFrame, top_depth: int | None) -> str:
    """The operator ranges rule 4 passed over (``operators``, at least one), as said in its choice line: the
    outermost of them, by name and count, when they are as shallow as the top-level candidates (or there are
    none); else ""."""
    depth = operators["depth"].min()
    if top_depth is not None and depth > top_depth:
        return ""  # nested inside the candidates: they were never top-level
    counted = (
        operators.filter(pl.col("depth") == depth)
        .group_by("key")
        .agg(pl.len(), pl.col("start").min())
        .sort(["len", "start"], descending=[True, False])
        .select("key", "len")
    )
    return "PyTorch operator and collective ranges (one call each, no iteration): " + _counted(counted.rows())


def _frequent_choice(candidates: pl.DataFrame, trace: Trace) -> tuple[pl.DataFrame | None, str, str]:
    """Rule 4: the most frequent top-level name, on launching threads when there are any (docstring).
    (None, "", reason) when no range is a candidate: the trace is then analyzed as one window."""
    is_operator = candidates.select(
        operator_ranges(pl.col("name"), pl.col("key"), pl.col("domain")).fill_null(False)
    ).to_series()
    # a window needs timed ops: without them (a CPU-only capture) operator ranges are all there is to measure
    windowable = bool(
        trace.ops.select((pl.col("start").is_not_null() & pl.col("end").is_not_null()).any()).item()
    )
    skipped = ""
    if is_operator.any() and (windowable or not is_operator.all()):
        operators = candidates.filter(is_operator)
        candidates = candidates.filter(~is_operator)
        skipped = _operators_said(operators, candidates["depth"].min() if candidates.height else None)
        if candidates.is_empty():
            return None, "", f"the trace's ranges are all {skipped}"
    top_level = candidates.filter(pl.col("depth") == candidates["depth"].min())
    qualifier = ""
    launching = (
        trace.api.filter(pl.col("name").is_in(LAUNCH_API_NAMES)).select("pid", "thread").unique()
        if not trace.api.is_empty()
        else None
    )
    if launching is not None and launching.height:
        on_launching = candidates.join(launching, on=["pid", "thread"], how="semi")
        if on_launching.height and on_launching.height < candidates.height:
            qualifier = ", on the thread that launches the device work"
            top_level = on_launching.filter(pl.col("depth") == on_launching["depth"].min())
    top_level, series = _numbered_series(top_level)
    calls = _launch_calls(trace)
    counts = _name_counts(top_level, calls).sort(["n", "first"], descending=[True, False])
    passed = f"; passed over {skipped}" if skipped else ""
    if windowable and not (counts["launches"] > 0).any() and launching is not None and launching.height:
        held = "no top-level range holds a launch call of the trace's device work: " + _counted(
            counts.select("key", "n").rows()
        )
        return None, "", f"passed over {skipped}; {held}" if skipped else held
    if (counts["launches"] > 0).any():
        # ranges that launch nothing (a library's own instrumentation, setup) are no iterations of the work
        holding = counts.filter(pl.col("launches") > 0)
        idle = counts.filter((pl.col("launches") == 0) & (pl.col("n") >= holding["n"][0]))
        counts = holding
        if idle.height:  # said only where it changed the choice
            qualifier += ", holding launch calls"
            passed += "; passed over for holding no launch call: " + _counted(idle.select("key", "n").rows())
    n = int(counts["n"][0])
    name, tie_note = _tie_broken(counts)
    chosen = top_level.filter(pl.col("key") == name)
    hint = ""
    if n == 1 and not tie_note:
        inner = _repeated_inside(chosen, candidates, calls)
        if inner is not None:
            hint = (
                f"; inside it {inner[0]!r} repeats {inner[1]} times (--range {shlex.quote(inner[0])} takes "
                "those as the iterations)"
            )
    counted = f"{n} of them{qualifier}"
    if name in series:
        counted = (
            f"{n} numbered ranges {series[name]}, one name each: the loop's counter in the name{qualifier}"
        )
    how = f"most frequent top-level range ({counted}){tie_note}{passed}{hint}"
    how += "; choose another with --range"
    return chosen, name, how


def _numbered_series(rows: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """``rows`` (rule 4's top-level candidates) with the ``key`` of each numbered series replaced by the
    series' pattern, and {pattern: the series' first and last names, as said}. A timed loop that puts its
    counter in the range name (``nvtx.range_push(f"step {i}")``, ``record_function(f"iteration_{i}")``) gives
    every range its own name: counted by name, each is 1, and the earliest alone had been the iteration. A
    series is the names holding a letter that differ only in their numbers (``step 3``, ``iteration_12``,
    ``Iteration #4``, ``batch7``, ``iter 3 forward``: :data:`NUMBER`), at least two of them, where no
    name occurs twice on a thread (a counter never repeats: ``layer1``/``layer2`` run once per pass are no
    counter) and no two of them overlap on a thread (a loop's iterations follow one another: ``request 17``
    and ``request 18`` open at once are no counter). ``ProfilerStep#N`` is grouped by :func:`range_key`
    already."""
    stem = _numbered_stem(pl.col("key"), numbered_only=True)
    numbered = (
        rows.with_row_index("_row").with_columns(stem.alias("_stem")).filter(pl.col("_stem").is_not_null())
    )
    if numbered.is_empty():
        return rows, {}
    thread = ["_stem", "pid", "thread"]
    reach = pl.col("end").cum_max().shift(1).over(thread, order_by=["start", "end"])
    per_stem = (
        numbered.with_columns(
            (pl.len().over([*thread, "key"]) > 1).alias("_repeats"),
            (pl.col("start") < reach).fill_null(False).alias("_overlaps"),
        )
        .group_by("_stem")
        .agg(
            pl.col("key").n_unique().alias("names"),
            (pl.col("_repeats") | pl.col("_overlaps")).any().alias("bad"),
            pl.col("key").sort_by("start").first().alias("first_name"),
            pl.col("key").sort_by("start").last().alias("last_name"),
        )
        .filter((pl.col("names") >= 2) & ~pl.col("bad"))
    )
    if per_stem.is_empty():
        return rows, {}
    stems = per_stem["_stem"].to_list()
    said = [f"{a!r} … {b!r}" for a, b in zip(per_stem["first_name"], per_stem["last_name"], strict=True)]
    patterns = pl.DataFrame(
        {
            "_stem": stems,
            "_pattern": [
                REGEX_PREFIX + "^" + NUMBER.join(map(_escaped, x.split(_NUMBER_MARK))) + "$" for x in stems
            ],
            "_said": said,
        },
        schema={"_stem": pl.String, "_pattern": pl.String, "_said": pl.String},
    )
    members = numbered.join(patterns, on="_stem").select("_row", "_pattern")
    out = (
        rows.with_row_index("_row")
        .join(members, on="_row", how="left", maintain_order="left")
        .with_columns(pl.coalesce("_pattern", "key").alias("key"))
        .drop("_row", "_pattern")
    )
    return out, dict(zip(patterns["_pattern"].to_list(), patterns["_said"].to_list(), strict=True))


def _numbered_stem(key: pl.Expr, numbered_only: bool = False) -> pl.Expr:
    """``key`` with each run of digits replaced by a mark, for names holding a letter and a digit: names alike
    but for their numbers share it. Other names keep ``key`` (null with ``numbered_only``)."""
    numbered = key.str.contains(NUMBER) & key.str.contains("[A-Za-z]")
    stem = pl.when(numbered).then(key.str.replace_all(NUMBER, _NUMBER_MARK))
    return stem if numbered_only else stem.otherwise(key)


def _escaped(text: str) -> str:
    """``text`` as a regular expression that matches it, escaping only what a regex reads specially (spaces
    and ``#`` stay as they are, so the pattern reads as the name does: ``re:^step \\d+$``)."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def _tie_broken(counts: pl.DataFrame) -> tuple[str, str]:
    """The most frequent key of ``counts`` (``key``, ``n``, ``first``, ``launches``; sorted by ``n``
    descending) and the note of a tie ("" when none): a tie goes to the key whose ranges hold the most launch
    calls, then to the earliest first range."""
    n = int(counts["n"][0])
    tied = counts.filter(pl.col("n") == n)
    if tied.height == 1:
        return tied["key"][0], ""
    tied = tied.sort(["launches", "first"], descending=[True, False])
    rule = "most launch calls inside" if tied["launches"][0] > tied["launches"][1] else "earliest"
    return tied["key"][0], f"; tied at {n} with {_names(tied['key'].to_list()[1:])} (picked the {rule})"


def _repeated_inside(
    outer: pl.DataFrame, candidates: pl.DataFrame, calls: pl.DataFrame
) -> tuple[str, int] | None:
    """When rule 4's choice is a single range (``outer``; ``calls``: :func:`_launch_calls`): the most frequent
    name among the ranges directly inside it (its thread, one level deeper, within its time), counting only
    those holding a launch call when some do (numbered names as one: :func:`_numbered_series`), with its
    count, if it has 2 ranges or more there; else None
    (also when the one range holds launch calls and none of the ranges inside it does). Said in the choice
    line, not taken: a ``benchmark`` range around a timed loop's ``step`` ranges and a ``forward`` range
    around its ``layer`` ranges look the same, and taking the layers as iterations would leave the time
    between them out of the verdict."""
    r = outer.row(0, named=True)
    inside = candidates.filter(
        pl.col("pid").eq_missing(r["pid"])
        & pl.col("thread").eq_missing(r["thread"])
        & (pl.col("depth") == r["depth"] + 1)
        & (pl.col("start") >= r["start"])
        & (pl.col("end") <= r["end"])
    )
    if inside.height < 2:
        return None
    inside, _ = _numbered_series(inside)
    counts = _name_counts(inside, calls)
    if (counts["launches"] > 0).any():
        counts = counts.filter(pl.col("launches") > 0)
    elif _launch_counts(calls, outer)["launches"].sum():
        return None  # the one range launches its work outside every range inside it: they are no steps
    counts = counts.sort("n", descending=True)  # (ties: _tie_broken)
    n = int(counts["n"][0])
    if n < 2:
        return None
    return _tie_broken(counts)[0], n


def _default_choice(candidates: pl.DataFrame, trace: Trace) -> tuple[pl.DataFrame | None, str, str]:
    """The default rules 1-4 of the module docstring: (chosen rows, name, how); (None, "", reason) when rule 4
    finds no candidate (one window over the trace)."""
    key = candidates["key"]
    if (key == DEFAULT_RANGE).any():
        return candidates.filter(key == DEFAULT_RANGE), DEFAULT_RANGE, f"default range name {DEFAULT_RANGE!r}"
    if (key == PROFILER_STEP_KEY).any():
        how = "torch.profiler steps (no 'iteration' range)"
        engine = _engine_of(candidates["name"])
        if engine.is_not_null().any():  # e.g. vLLM's execute_... inside each profiler.step()
            steps = candidates.filter(engine.is_not_null()).with_columns(engine.drop_nulls().alias("engine"))
            engines = "/".join(sorted(set(steps["engine"].to_list())))
            names = _names(sorted(steps["name"].unique().to_list()))
            how += (
                f"; also seen: {steps.height} {engines} step range{'s' if steps.height > 1 else ''} ({names})"
            )
        return (
            candidates.filter(key == PROFILER_STEP_KEY),
            PROFILER_STEP_KEY,
            how + "; choose another with --range",
        )
    engine = _engine_of(candidates["name"])
    if engine.is_not_null().any():
        return _engine_choice(candidates, engine)
    return _frequent_choice(candidates, trace)


def _range_frame(
    chosen: pl.DataFrame, name: str, one_per_thread: bool = False
) -> tuple[pl.DataFrame, list[str]]:
    """The outermost-in-time ``chosen`` ranges (module docstring), in start order, as the returned frame, and
    the warnings: instances left out, instances that overlap. ``one_per_thread``: see :func:`_left_out`."""
    held = _left_out(chosen, one_per_thread)
    warnings = []
    if held.any():
        out = chosen.filter(held)
        kept = chosen.filter(~held)
        other_thread = out.join(
            kept.select("pid", "thread").unique(), on=["pid", "thread"], how="anti"
        ).height
        where = (
            f"{other_thread} of them on threads with no kept instance"
            if other_thread
            else "all on the threads of the kept ones"
        )
        warnings.append(
            f"left out {out.height} of {chosen.height} {name!r} ranges: each lies inside another range of "
            f"that name in the same process (the outermost in time are the iterations; {where})"
        )
        chosen = kept
    chosen = chosen.sort("start", "end")
    frame = chosen.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("iteration"),
        pl.col("start").alias("range_start"),
        pl.col("end").alias("range_end"),
        pl.col("thread"),
        pl.col("pid"),
        pl.col("name"),
        pl.lit(None, pl.Int32).alias("device"),
        pl.lit(None, pl.Int64).alias("gpu_start"),
        pl.lit(None, pl.Int64).alias("gpu_end"),
    )
    pids = frame.get_column("pid").drop_nulls().unique().sort()
    if pids.len() > 1:
        shown = ", ".join(str(p) for p in pids.head(4).to_list()) + (", ..." if pids.len() > 4 else "")
        warnings.append(
            f"the {frame.height} {name!r} ranges come from {pids.len()} processes (pids {shown}): they are "
            "analyzed as one series of iterations, each holding the work its own process launched"
        )
    starts_early = (pl.col("range_start") < pl.col("range_end").cum_max().shift(1).over("pid")).fill_null(
        False
    )
    # (of one thread: a push/pop stack's ranges nest or follow each other, so two that cross are damaged data,
    # or NVTX start/end ranges, which may cross; a range of unknown thread is not taken for one of the same)
    crosses = (
        pl.col("thread").is_not_null()
        & (pl.col("range_start") < pl.col("range_end").cum_max().shift(1).over("pid", "thread"))
    ).fill_null(False)
    overlap, crossing = frame.select(
        (starts_early & ~crosses).sum().alias("overlap"), crosses.sum().alias("crossing")
    ).row(0)
    if crossing:
        warnings.append(
            f"{crossing} of the {frame.height} {name!r} ranges start before an earlier one of the same thread "
            "ends: ranges of one thread that cross are no push/pop stack (damaged data, or NVTX start/end ranges, "
            "which may cross), so these iterations may not be what the program ran: each is read from its start "
            "to its end, and work launched where two overlap counts in the later-starting one"
        )
    if overlap:
        warnings.append(
            f"{overlap} of the {frame.height} {name!r} ranges start before an earlier one of the same process "
            "ends (different threads running iterations at once): work launched where they overlap counts in the "
            "range of the thread that launched it (in the later-starting one when that thread has no range)"
        )
    return frame, warnings


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


def check_split_idle(split_idle_ms: object, path: str | None = None, option: str = "--split-idle") -> None:
    """TracekitError (one line naming ``option``) unless ``split_idle_ms`` is a finite number of ms in [0,
    :data:`MAX_SPLIT_IDLE_MS`] (larger thresholds would not fit int64 nanoseconds)."""
    number = isinstance(split_idle_ms, (int, float)) and not isinstance(split_idle_ms, bool)
    if not number or not math.isfinite(split_idle_ms):  # type: ignore[arg-type]
        raise TracekitError(f"{option} must be a finite number of ms, not {split_idle_ms!r}", path)
    if not 0 <= split_idle_ms <= MAX_SPLIT_IDLE_MS:  # type: ignore[operator]
        raise TracekitError(
            f"{option} must be a number of ms >= 0 and <= {MAX_SPLIT_IDLE_MS:g}, not {split_idle_ms!r}", path
        )


def choose_ranges(
    trace: Trace, range_name: str | None = None, split_idle_ms: float | None = None
) -> tuple[pl.DataFrame, str, str]:
    """Select the iteration ranges: (frame, chosen name or pattern, how it was chosen, one line).

    :func:`select_ranges` without the warnings (same arguments)."""
    choice = select_ranges(trace, range_name, split_idle_ms)
    return choice.frame, choice.name, choice.how


def _is_text(value: str) -> bool:
    """Whether ``value`` is encodable as UTF-8 (no lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def select_ranges(
    trace: Trace, range_name: str | None = None, split_idle_ms: float | None = None
) -> RangeChoice:
    """Select the iteration ranges (module docstring) as a :class:`RangeChoice`.

    ``range_name``: exact name, ``re:REGEX`` or glob (module docstring); None: the default rules.
    ``split_idle_ms``: cut the device timeline at idle gaps longer than this (ms) instead of using ranges.
    Raises NoActivityError when nothing matches or the trace holds neither ranges nor ops, TracekitError on
    a bad pattern, value or option combination."""
    path = trace.meta.get("path")
    if range_name is not None and not _is_text(range_name):
        # (argv from a terminal of another encoding: b'ite\xe9' reaches Python as 'ite\udce9', which polars
        # cannot take; the readers keep such a name, escaped in the trace, as its escape text 'ite\\udce9', so
        # the argument is matched as that)
        range_name = range_name.encode("utf-8", "backslashreplace").decode("utf-8")
    if range_name is not None and split_idle_ms is None:
        synthetic = _synthetic_request(trace, range_name)
        if synthetic is not None:
            if synthetic[0] is not None:
                check_split_idle(synthetic[0], path)
            return synthetic_windows(trace, synthetic[0], requested=True)
    if split_idle_ms is not None:
        if range_name is not None:
            raise TracekitError("--range and --split-idle exclude each other: use one of them", path)
        check_split_idle(split_idle_ms, path)
        if trace.meta.get("timeline") is False:
            raise TracekitError(
                "--split-idle cuts a timeline at its idle gaps, and this trace has none: its kernels are laid "
                "back to back (Nsight Compute records no start times); analyze its timeline (nsys, "
                "torch.profiler) with --split-idle, or give both to tracekit table --ncu",
                path,
            )
        return synthetic_windows(trace, split_idle_ms)
    candidates = trace.ranges.filter(on_host()).with_columns(range_key(pl.col("name")).alias("key"))
    # A range never closed (nsys: the capture ended inside it) has no end; a hand-built Trace may lack either.
    untimed = candidates.filter(pl.col("start").is_null() | pl.col("end").is_null())
    if untimed.height:
        candidates = candidates.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    # A range of no duration beside ranges of its name that have one lost its end (Kineto writes dur 0 for a
    # range whose end it did not record, kineto#646): no iteration of latency 0 (or below).
    # Names alike but for their numbers count as one name here (a numbered series, engine steps whose names
    # hold their request counts): a ``step_4`` of 0 µs beside ``step_0`` ... ``step_3`` lost its end too.
    lengthless = candidates.filter(
        (pl.col("end") <= pl.col("start"))
        & (pl.col("end") > pl.col("start")).any().over(_numbered_stem(pl.col("key")))
    )
    if lengthless.height:
        candidates = candidates.join(
            lengthless.select("start", "end", "key"), on=["start", "end", "key"], how="anti"
        )
    # A range without a name (a Kineto event that lost its "name") cannot be chosen, by name or by rule.
    unnamed = candidates.filter(pl.col("name").is_null()).height
    if unnamed:
        candidates = candidates.filter(pl.col("name").is_not_null())
    if unnamed and candidates.is_empty():
        said = (
            f"the trace's {unnamed} ranges have no name"
            if unnamed > 1
            else "the trace's one range has no name"
        )
        if range_name is not None:
            raise NoActivityError(
                f"no range named {range_name!r}: {said} (leave out --range to analyze the whole trace, or "
                "split it with --split-idle MS)",
                path,
            )
        choice = synthetic_windows(trace, None, reason=f"no named ranges ({said})")
    else:
        choice = _select_closed(trace, candidates, range_name, path)
        choice = _without_instants(trace, candidates, choice, range_name, path)
    if unnamed:
        choice.warnings.append(
            f"left out {unnamed} range{'s' if unnamed > 1 else ''} without a name: a range needs a name "
            "to be chosen as the iterations"
        )
    if lengthless.height:
        names = _names(lengthless.get_column("name").unique(maintain_order=True).to_list())
        n = lengthless.height
        choice.warnings.append(
            f"left out {n} range{'s' if n > 1 else ''} of no duration ({names}) beside ranges of the same name "
            "(or the same but for its numbers) that have one: a range whose end the profiler did not record "
            "reads 0 (Kineto writes dur 0 then); "
            "it is no iteration, and the work it launched counts in none"
        )
    if untimed.height:
        names = _names(untimed.get_column("key").unique(maintain_order=True).to_list())
        n = untimed.height
        choice.warnings.append(
            f"left out {n} range{'s' if n > 1 else ''} without a start or an end time ({names}): "
            "such a range has no latency and is no iteration"
        )
    mixed = None if choice.synthetic else _domains_of(choice.frame, candidates)
    if mixed is not None:
        choice.warnings.append(mixed)
    return choice


def _domains_of(chosen: pl.DataFrame, candidates: pl.DataFrame) -> str | None:
    """A warning when the chosen ranges come from more than one NVTX domain (a library's own domain may name
    a range as the user does: 'iteration' ranges of the default domain and of a library's between them had
    made 6 iterations, 3 of them empty, unsaid); None otherwise. ``chosen``: the choice's frame; ``candidates``:
    the ranges it was chosen from (with ``domain``)."""
    if chosen.is_empty() or "domain" not in candidates.columns:
        return None
    keys = ["start", "end", "pid", "thread", "name"]
    domains = (
        chosen.select(pl.col("range_start").alias("start"), pl.col("range_end").alias("end"), *keys[2:])
        .join(candidates.select(*keys, "domain"), on=keys, how="left", nulls_equal=True)
        .group_by("domain")
        .len()
        .sort("len", "domain", descending=[True, False], nulls_last=True)
    )
    if domains.height < 2:
        return None
    counts = ", ".join(f"{d if d is not None else 'none'}: {n}" for d, n in domains.iter_rows())
    return (
        f"the {chosen.height} iteration ranges come from {domains.height} NVTX domains ({counts}): a library may "
        "name its own ranges as the program names its iterations, and those are other work; --range chooses "
        "by name, not by domain"
    )


def _without_instants(
    trace: Trace, candidates: pl.DataFrame, choice: RangeChoice, range_name: str | None, path: str | None
) -> RangeChoice:
    """``choice``, unless every range it chose lasts 0 (or less) and no range of their name (or of the same
    name but for its numbers) has a duration: instants (markers, or ranges whose every end the profiler did not
    record: Kineto writes dur 0 then), none of which has a latency. Then the choice is made again without such
    ranges, with a warning; with ``--range`` naming them, a NoActivityError. (Beside ranges of their name that
    have a duration, such ranges are left out before the choice: :func:`select_ranges`.)"""
    frame = choice.frame
    if choice.synthetic or frame.is_empty() or not (frame["range_end"] <= frame["range_start"]).all():
        return choice
    matched = frame.get_column("name").unique(maintain_order=True).to_list()
    n = frame.height
    what = f"the {n} {choice.name!r} ranges" if n > 1 else f"the one {choice.name!r} range"
    if matched != [choice.name]:
        what += f" ({_names(matched)})"
    said = (
        f"{what}: {'they all last' if n > 1 else 'it lasts'} 0, and no range of {'their' if n > 1 else 'its'} "
        "name has a duration: markers, or ranges whose end the profiler did not record (Kineto writes dur 0 "
        "then), so none is an iteration (none has a latency)"
    )
    if range_name is not None:
        raise NoActivityError(
            f"no iteration in {said}; leave out --range to analyze the whole trace, or split it with "
            "--split-idle MS",
            path,
        )
    instant = (pl.col("end") <= pl.col("start")) & ~(pl.col("end") > pl.col("start")).any().over(
        _numbered_stem(pl.col("key"))
    )
    again = _select_closed(trace, candidates.filter(~instant), None, path)
    again.warnings.insert(0, f"left out {said}")
    return again


def _untimed_nvtx(trace: Trace) -> str:
    """The NVTX ranges an Nsight Compute report's kernels ran in (``meta["nvtx_ranges"]``, the ncu reader), as
    ``'a', 'b'``; "" when none (any other trace)."""
    names = trace.meta.get("nvtx_ranges")
    if trace.meta.get("timeline") is not False or not isinstance(names, list) or not names:
        return ""
    return _names([str(n) for n in names])


def _select_closed(
    trace: Trace, candidates: pl.DataFrame, range_name: str | None, path: str | None
) -> RangeChoice:
    """:func:`select_ranges` among ``candidates``, the trace's closed CPU ranges with their ``key``."""
    if candidates.is_empty():
        if range_name is not None:
            gpu_side = trace.ranges.filter(pl.col("domain") == "gpu").height
            if gpu_side:  # (torch.profiler with activities=[CUDA]: the steps only as their device spans)
                raise NoActivityError(
                    f"no range named {range_name!r}: the trace holds no host ranges, only {gpu_side:,} GPU-side "
                    "annotations (the projections of host ranges onto the GPU timeline: they span only their "
                    "device work, so none is an iteration); leave out --range to analyze the whole trace, or "
                    "split it with --split-idle MS",
                    path,
                )
            untimed = _untimed_nvtx(trace)
            if untimed:
                raise NoActivityError(
                    f"no range named {range_name!r}: Nsight Compute records NVTX ranges only as the push/pop "
                    f"ranges open at each kernel's launch, with no start or end ({untimed}), so none is an "
                    "iteration; leave out --range to analyze the report as one window",
                    path,
                )
            raise NoActivityError(
                f"no range named {range_name!r}: the trace holds no NVTX ranges or profiler annotations "
                "(leave out --range to analyze the whole trace, or split it with --split-idle MS)",
                path,
            )
        return synthetic_windows(trace, None)
    declared = _format_default(trace, candidates)
    if range_name is None and declared is None:
        candidates = _without_setup(trace, candidates, path)
        if candidates.is_empty():
            return synthetic_windows(trace, None)
    if range_name is None and declared is not None:
        chosen, name, how = declared
    elif range_name is None:
        chosen, name, how = _default_choice(candidates, trace)
        if chosen is None:
            return synthetic_windows(trace, None, reason=f"no iteration ranges: {how}")
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
        chosen, left_out = _in_launching_processes(chosen, trace, range_name)
        frame, warnings = _range_frame(chosen, range_name, _one_per_thread(trace, range_name))
        warnings = left_out + warnings
        how = "requested with --range"
        if not ((candidates["name"] == range_name) | (candidates["key"] == range_name)).any():
            kind = pattern_kind(range_name)
            matched = frame.get_column("name").unique(maintain_order=True).to_list()
            ranges_of = f"{frame.height} range{'s' if frame.height != 1 else ''} of {len(matched)} name"
            how += f" ({kind}: {ranges_of}{'s' if len(matched) != 1 else ''}: {_names(matched)})"
        return RangeChoice(frame, range_name, how, warnings)
    chosen, left_out = _in_launching_processes(chosen, trace, name)
    frame, warnings = _range_frame(chosen, name, _one_per_thread(trace, name))
    return RangeChoice(frame, name, how, left_out + warnings)


def _without_setup(trace: Trace, candidates: pl.DataFrame, path: str | None) -> pl.DataFrame:
    """``candidates`` without the set-up ranges a reader lists in ``meta["session_setup"]`` (ONNX Runtime:
    model loading, session initialization), which are never iterations; a :class:`NoActivityError` when
    nothing is left to analyze (a profile of a session that ran no inference: set-up alone had read as one
    iteration of the model loading's length)."""
    setup = trace.meta.get("session_setup")
    if not isinstance(setup, list) or not setup:
        return candidates
    names = [x.get("name") for x in setup if isinstance(x, dict) and x.get("name")]
    is_setup = (pl.col("domain") == "session").fill_null(False) & pl.col("name").is_in(names)
    if "depth" in candidates.columns:
        is_setup &= (pl.col("depth") == 0).fill_null(False)
    left = candidates.filter(~is_setup)
    if left.is_empty() and trace.ops.is_empty():
        said = ", ".join(f"{x['name']} {x['ms']:.3f} ms" for x in setup if isinstance(x, dict) and "ms" in x)
        declared = trace.meta.get("default_range")
        raise NoActivityError(
            f"no iteration to analyze: the profile holds session set-up only ({said}), no "
            f"{declared or 'run'!r} and no operator: the session ran no inference while profiling",
            path,
        )
    return left


def _one_per_thread(trace: Trace, name: str) -> bool:
    """Whether the ranges named ``name`` are ONNX Runtime's ``model_run`` calls (its reader's default range):
    one per ``run()`` of the calling thread, never made from inside another thread's (:func:`_left_out`)."""
    return trace.meta.get("format") == "ort" and name == trace.meta.get("default_range")


def _in_launching_processes(chosen: pl.DataFrame, trace: Trace, name: str) -> tuple[pl.DataFrame, list[str]]:
    """The ``chosen`` ranges without those of a process whose ranges of that name hold none of its launch
    calls, when another process's do (a helper process that annotates its own steps, a data loader: its
    ranges are no iterations of the device work, and counted with the others they would add iterations of 0
    GPU busy); and the warning that says so. Unchanged when the ranges are all of one process, when the trace
    holds no launch call, or when no process's ranges hold one (a CPU-only trace). Ranges without a process
    stay (nothing says whose they are)."""
    pids = chosen.get_column("pid").drop_nulls().unique()
    if pids.len() < 2:
        return chosen, []
    calls = _launch_calls(trace)
    if calls.is_empty():
        return chosen, []
    per_process = _launch_counts(calls, chosen.with_columns(key=pl.col("pid")))
    idle = per_process.filter((pl.col("launches") == 0) & pl.col("key").is_not_null())["key"]
    if idle.is_empty() or idle.len() == per_process.filter(pl.col("key").is_not_null()).height:
        return chosen, []
    out = pl.col("pid").is_in(idle.implode()).fill_null(False)
    n = chosen.select(out.sum()).item()
    listed = _listed([str(p) for p in sorted(idle.to_list())])
    warning = (
        f"left out {n} {name!r} ranges of process{'es' if idle.len() > 1 else ''} {listed}, which "
        "launch no device work inside them (another process's ranges of that name hold its launches: those "
        "are the iterations)"
    )
    return chosen.filter(~out), [warning]


def _format_default(trace: Trace, candidates: pl.DataFrame) -> tuple[pl.DataFrame, str, str] | None:
    """The per-format default (rule 0): the ranges named ``trace.meta["default_range"]`` when its reader
    declares one (ONNX Runtime: ``model_run``) and the trace holds them; else None."""
    declared = trace.meta.get("default_range")  # a format's own iteration (ORT: model_run), when present
    if not declared or not (candidates["key"] == declared).any():
        return None
    how = f"{trace.meta.get('default_range_reason') or 'the format default'}; choose another with --range"
    return candidates.filter(pl.col("key") == declared), declared, how


# ------------------------------------------------------------------------------------ synthetic windows


def launch_times(trace: Trace) -> pl.DataFrame:
    """The trace's ops as (``device``, ``launch``, ``start``, ``end``): ``launch`` is the start of the op's
    launching call (the earliest API call with its (pid, correlation)) when the trace holds one and it is not
    after the op's start nor more than an hour before it (a damaged time), else the op's start. In
    ``trace.ops`` order."""
    ops = trace.ops.select("device", "pid", "correlation", "start", "end")
    calls = (
        trace.api.filter(pl.col("correlation").is_not_null())
        .group_by("pid", "correlation")
        .agg(pl.col("start").min().alias("call_start"))
    )
    if calls.is_empty():
        return ops.select("device", pl.col("start").alias("launch"), "start", "end")
    joined = ops.join(calls, on=["pid", "correlation"], how="left", maintain_order="left")
    # (a call more than an hour before its op is no launch delay but a damaged time: the op's own start, so
    # that a --split-idle window does not stretch over the hours between them, 7,200,000 ms)
    call = pl.when(pl.col("start") - pl.col("call_start") <= HOUR_NS).then(pl.col("call_start"))
    return joined.select(
        "device",
        pl.min_horizontal(call.fill_null(pl.col("start")), pl.col("start")).alias("launch"),
        "start",
        "end",
    )


def idle_split(ops: pl.DataFrame, split_idle_ms: float | None) -> pl.DataFrame:
    """Group ``ops`` (``launch``, ``start``, ``end``) into iterations at idle gaps (module docstring).

    Returns one row per iteration, in start order: ``range_start`` (first launch), ``range_end`` (last op
    end; never before ``range_start``), ``ops`` (count), ``gpu_start``, ``gpu_end`` (the device span: the
    groups' spans never overlap). ``split_idle_ms`` None: one iteration."""
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
            pl.len().alias("ops"),
        )
        .sort("gpu_start")
    )
    return groups.select(
        "range_start",
        pl.max_horizontal("gpu_end", "range_start").alias("range_end"),
        pl.col("ops").cast(pl.Int64),
        "gpu_start",
        "gpu_end",
    )


def _ms_text(ms: float) -> str:
    """``ms`` as short text that reads back as the same float (``1.0`` -> "1", ``0.05`` -> "0.05")."""
    short = f"{ms:g}"
    return short if float(short) == ms else repr(float(ms))


#: ``--split-idle`` windows beyond this share of the ops (half: two ops a window or fewer) cut single ops, not
#: iterations (a warning says so).
SPLIT_TOO_FINE = 0.5
#: ... on traces of at least this many ops (a handful of ops says nothing of what an iteration holds).
SPLIT_MIN_OPS = 20
#: The readers' warnings that say what they left out of the trace or could not read: the reason a trace left
#: with nothing to analyze was left so (every op dropped for a negative duration, every row untimed, a
#: duration in a unit tracekit does not know, ...).
LEFT_OUT = re.compile(r"\b(ignored|left out|skipped|dropped|unknown|no readable|no (?:start|end) time)\b")


def synthetic_windows(
    trace: Trace, split_idle_ms: float | None, requested: bool = False, reason: str | None = None
) -> RangeChoice:
    """Ranges made from the ops alone: one window over the trace, or iterations cut at idle gaps (module
    docstring). ``requested``: asked for by name (``--range window``, ``--range 'idle>MSms'``) rather than
    forced by a trace without ranges or by ``--split-idle``; ``reason``: why the default took one window over
    a trace that has ranges (rule 4 found no candidate); only the wording of the choice differs.

    The name returned ("window", ``idle>MSms``) selects the same ranges when passed back as ``range_name``."""
    path = trace.meta.get("path")
    ops = launch_times(trace).filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    if ops.is_empty():
        host = trace.ranges.filter(on_host()).height
        if host and (split_idle_ms is not None or requested):
            option = "--split-idle" if not requested else "a synthetic window"
            activity = (
                f"none of this trace's {trace.ops.height:,} device ops has both a start and an end time"
                if trace.ops.height
                else "this trace has no device activity"
            )
            raise NoActivityError(
                f"{option} cuts the device timeline, and {activity}; its {host:,} ranges are not used in that "
                "mode (analyze them with --range NAME, or without --split-idle)",
                path,
            )
        left_out = "; ".join(w for w in trace.meta.get("warnings", []) if LEFT_OUT.search(w))
        if trace.ops.height:  # (device ops, none with a start and an end: no window can be cut around them)
            raise NoActivityError(
                f"no ranges, and none of its {trace.ops.height:,} device ops has both a start and an end time: "
                f"nothing to analyze{f' (the reader said: {left_out})' if left_out else ''}",
                path,
            )
        why = f" (the reader left out what it could not use: {left_out})" if left_out else ""
        raise NoActivityError(f"no ranges and no device activity: nothing to analyze{why}", path)
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
        "gpu_start",
        "gpu_end",
    )
    warnings = []
    overlapping = int(
        frame.select((pl.col("range_start") < pl.col("gpu_end").shift(1)).fill_null(False).sum()).item()
    )
    if overlapping:
        warnings.append(
            f"{overlapping} of {frame.height} windows begin (first op's launch) before the previous window's "
            "device work ended: the host launched ahead of the GPU; each window's latency still runs from its "
            "first launch to its last op's end, so these latencies overlap"
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
            return RangeChoice(frame, WINDOW_NAME, f"requested with --range: {what}", warnings)
        if reason is not None:
            how = f"{reason}: {what}; choose ranges with --range or split the trace with --split-idle MS"
            return RangeChoice(frame, WINDOW_NAME, how, warnings)
        gpu_side = trace.ranges.filter(pl.col("domain") == "gpu").height
        none = (
            f"no host ranges in the trace (its {gpu_side:,} GPU-side annotations, the projections of host "
            "ranges onto the GPU timeline, are not iterations: they span only their device work)"
            if gpu_side
            else "no ranges in the trace"
        )
        untimed = _untimed_nvtx(trace)
        if untimed and not gpu_side:
            none = (
                "no timed ranges in the trace (Nsight Compute records NVTX ranges only as the push/pop ranges "
                f"open at each kernel's launch, with no start or end: {untimed})"
            )
        if trace.meta.get("timeline") is False:  # (Nsight Compute: kernels back to back, no gaps to cut at)
            how = f"{none}: {what}"
        else:
            how = f"{none}: {what}; split it into iterations with --split-idle MS"
        return RangeChoice(frame, WINDOW_NAME, how, warnings)
    ms = _ms_text(split_idle_ms)
    if ops.height >= SPLIT_MIN_OPS and frame.height >= SPLIT_TOO_FINE * ops.height:
        warnings.append(
            f"--split-idle {ms} cut the device timeline into {frame.height} windows for {ops.height} ops "
            f"({ops.height / frame.height:.1f} a window): almost every gap between two ops split an iteration, so "
            "these are single ops, not iterations, and the idle time between them is in no window; choose a "
            "longer gap (the trace's own idle gaps between iterations), or the trace's ranges with --range"
        )
    warnings += _windows_against_ranges(trace, ops, frame)
    idle = "the CPU operators were" if device == -1 else f"the GPU ({where}) was"
    what = f"{frame.height} iterations cut where {idle} idle longer than {ms} ms"
    how = f"requested with --range: {what}" if requested else f"--split-idle {ms}: {what}"
    host = trace.ranges.filter(on_host()).height
    if host and not requested:
        how += f" (the trace's {host:,} ranges are not used in this mode)"
    return RangeChoice(frame, f"idle>{ms}ms", how, warnings)


def windows_off_ranges(trace: Trace, split_idle_ms: float) -> tuple[int, int, str, str] | None:
    """Whether the ``--split-idle split_idle_ms`` windows of ``trace`` are not its iterations, the ranges the
    default rules choose (:func:`select_ranges` without it): (windows, ranges, the ranges' name, what the
    threshold did: "cuts inside", "joins", or "cuts inside and joins"), or None when they are (each range holds
    exactly one window and each window lies in one range: :func:`_off_ranges`) or the trace has no ranges the
    default rules choose, or only one (a whole run's or a benchmark's range is no count of iterations:
    splitting it is the option's use). What :func:`synthetic_windows` warns of, for a caller that holds the
    trace (compare, report)."""
    ops = launch_times(trace).filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    if ops.is_empty():
        return None
    found = _against_ranges(trace, ops, idle_split(ops, split_idle_ms))
    return None if found is None else found[:4]


def _against_ranges(
    trace: Trace, ops: pl.DataFrame, windows: pl.DataFrame
) -> tuple[int, int, str, str, RangeChoice] | None:
    """(windows, ranges, name, what the threshold did, the default choice) of :func:`windows_off_ranges`."""
    try:
        default = select_ranges(trace)
    except TracekitError:
        return None
    count = default.frame.height
    if default.synthetic or count < 2:
        # (one range, a whole run's or a benchmark's, is no count of iterations: splitting it is the option's use)
        return None
    n = windows.height
    if n == count:
        if not _off_ranges(ops, windows, default.frame):
            return None
        verb = "cuts inside and joins"
    else:
        verb = "cuts inside" if n > count else "joins"
    return n, count, default.name, verb, default


def _off_ranges(ops: pl.DataFrame, windows: pl.DataFrame, ranges: pl.DataFrame) -> int:
    """How many of ``windows`` (:func:`idle_split`'s, as many as ``ranges``) are not one range each: a window
    whose ops (assigned by their device start, as the analysis assigns them) were launched in no range or in
    more than one, or in a range that another window's ops were launched in too. 0: the windows coincide with
    the ranges (one-to-one). Counts alone had taken 4 windows that cut one iteration in two and joined two
    others (0.108, 0.108, 0.308, 1.308 ms for 4 ranges of 0.99 ms) for the 4 iterations."""
    spans = ranges.select(
        pl.col("range_start").alias("r_start"), pl.col("range_end").alias("r_end")
    ).with_row_index("range")
    placed = (
        ops.select("launch", "start")
        .sort("start")
        .join_asof(
            windows.select("gpu_start").with_row_index("window").sort("gpu_start"),
            left_on="start",
            right_on="gpu_start",
            strategy="backward",
        )
        .sort("launch")
        .join_asof(spans.sort("r_start"), left_on="launch", right_on="r_start", strategy="backward")
        .with_columns(
            pl.when(pl.col("launch") <= pl.col("r_end")).then(pl.col("range")).otherwise(None).alias("range")
        )
    )
    per_window = placed.group_by("window").agg(
        pl.col("range").n_unique().alias("ranges"),  # (null counts as a value: launched outside every range)
        pl.col("range").first().alias("first"),
    )
    alone = per_window.filter((pl.col("ranges") == 1) & pl.col("first").is_not_null())
    shared = alone.filter(pl.col("first").is_duplicated()).height
    return windows.height - alone.height + shared


def _windows_against_ranges(trace: Trace, ops: pl.DataFrame, windows: pl.DataFrame) -> list[str]:
    """A warning when ``--split-idle`` cut ``windows`` from a trace whose own iterations, the ranges the
    default rules choose (:func:`select_ranges` without it), are not those windows: more windows, the threshold
    cut inside iterations (the H200 eager sample's 0.36 ms dispatch gaps against its 0.04 ms between
    iterations: 105 windows of 0.226 ms for 20 ranges of 8 ms); fewer, it joined them; as many, not at the
    ranges (:func:`_off_ranges`), it did both. With the longest idle gap of the device timeline inside a range
    and the shortest one between ranges: whether any threshold would cut at the ranges, and which. Nothing when
    the trace has no ranges the default rules choose, only one, or when each window is one range."""
    found = _against_ranges(trace, ops, windows)
    if found is None:
        return []
    n, count, name, verb, default = found
    said = (
        f"{n} window{'s' if n != 1 else ''} against {count} ranges named {name!r} in the trace"
        f"{', but not at them' if n == count else ''}: the threshold {verb} iterations"
    )
    # the device timeline's busy stretches (disjoint, in order); the gaps between them are its idle gaps
    busy = merged_intervals(ops)
    gap_start = busy.get_column("end").to_list()[:-1]
    gap_end = busy.get_column("start").to_list()[1:]
    spans = sorted(
        zip(default.frame["range_start"].to_list(), default.frame["range_end"].to_list(), strict=True)
    )
    starts = [a for a, _ in spans]
    reach = []  # the latest end of the ranges that start at or before each one (ranges may nest or overlap)
    for _, end in spans:
        reach.append(max(end, reach[-1]) if reach else end)
    inside: list[int] = []
    between: list[int] = []  # gaps from the first range's start to the last one's end, in none of them
    for a, b in zip(gap_start, gap_end, strict=True):
        if b <= a or a < starts[0] or b > reach[-1]:
            continue
        k = bisect.bisect_right(starts, a) - 1
        (inside if k >= 0 and reach[k] >= b else between).append(b - a)
    if not inside or not between:
        return [said]
    longest, shortest = max(inside), min(between)
    if longest >= shortest:
        advice = (
            f"an idle gap inside a range lasts up to {longest / 1e6:.3g} ms, longer than the shortest between two "
            f"ranges, {shortest / 1e6:.3g} ms: no --split-idle threshold cuts this trace at its ranges; analyze "
            "the ranges themselves, without --split-idle"
        )
    else:
        advice = (
            f"idle gaps inside a range last up to {longest / 1e6:.3g} ms, between two ranges at least "
            f"{shortest / 1e6:.3g} ms: a threshold between the two cuts at the ranges, or analyze the ranges "
            "themselves, without --split-idle"
        )
    return [f"{said} ({advice})"]


# ------------------------------------------------------------------------------------------ per device


def devices(trace: Trace) -> list[int | None]:
    """The devices that ran ops, in order; None stands for ops whose device is not recorded (a reader that
    skipped the column)."""
    ids = trace.ops.get_column("device").unique().to_list()
    return sorted(ids, key=lambda d: (d is None, d if d is not None else 0))


def device_trace(trace: Trace, device: int | None, thread_devices: pl.DataFrame | None = None) -> Trace:
    """The part of ``trace`` one device saw: its ops; the API calls launching them, plus the calls that
    launched no op of any device (synchronizations, allocations, event records: without a correlation id,
    or with one no op carries; launch calls aside, whose missing work is another device's or lost); the
    ranges of the processes that launched them (all ranges when none of them recorded a range). ``meta`` is
    copied, with ``device_id`` set. (nsys and Kineto give every runtime call a correlation id: keeping only
    id-less calls had dropped every ``cudaDeviceSynchronize``, and a device's idle time spent waiting in one
    read "dispatch" in its per-GPU row.)"""
    ops = trace.ops.filter(pl.col("device").eq_missing(pl.lit(device, pl.Int32)))
    keys = ops.select("pid", "correlation").filter(pl.col("correlation").is_not_null()).unique()
    linked = trace.ops.select("pid", "correlation").filter(pl.col("correlation").is_not_null()).unique()
    unlinked = trace.api.filter(pl.col("correlation").is_not_null()).join(
        linked, on=["pid", "correlation"], how="anti", nulls_equal=True
    )
    unlinked = unlinked.filter(~pl.col("name").str.replace(API_NAME_SUFFIX, "").is_in(list(LAUNCH_API_NAMES)))
    api = pl.concat(
        [
            trace.api.filter(pl.col("correlation").is_null()),
            unlinked,
            trace.api.join(keys, on=["pid", "correlation"], how="semi"),
        ]
    )
    if api.height > 1 and trace.api.height:  # the trace's order (by start), as its frames keep it
        api = api.sort("start", maintain_order=True)
    pids = ops["pid"].drop_nulls().unique()
    if thread_devices is None:
        thread_devices = _thread_devices(trace)
    ranges = _without_other_devices_series(
        trace.ranges.filter(pl.col("pid").is_in(pids.implode())), thread_devices, device
    )
    if ranges.filter(on_host()).is_empty():
        ranges = trace.ranges
    meta = dict(trace.meta)
    meta["device_id"] = device
    meta["warnings"] = list(trace.warnings)
    return Trace(ops=ops, api=api, ranges=ranges, meta=meta)


def _thread_devices(trace: Trace) -> pl.DataFrame:
    """(pid, thread, device): the devices each host thread launched work on (its calls joined to their ops)."""
    if "thread" not in trace.api.columns or trace.ops.is_empty():
        return pl.DataFrame(schema={"pid": pl.Int64, "thread": pl.Int64, "device": pl.Int32})
    return (
        trace.api.select("pid", "thread", "correlation")
        .filter(pl.col("correlation").is_not_null())
        .join(trace.ops.select("pid", "correlation", "device").unique(), on=["pid", "correlation"])
        .select("pid", "thread", "device")
        .unique()
    )


def _without_other_devices_series(
    ranges: pl.DataFrame, thread_devices: pl.DataFrame, device: int | None
) -> pl.DataFrame:
    """``ranges`` (of the processes that ran work on ``device``) without those of a thread that launches work
    on other devices only, where a thread launching on ``device`` holds ranges of the same name: one process
    driving a GPU per thread, each thread running its own iterations (the other threads' series are other
    GPUs' iterations, empty on this one: two threads each driving one GPU 60% and 20% busy had given each
    GPU's row all 8 iterations, GPU 0 at 30%, "framework", for 60%). Ranges of threads that launch nothing
    (a main thread around work launched by others) and names no launching thread of ``device`` holds stay."""
    if ranges.is_empty() or thread_devices.is_empty():
        return ranges
    by_thread = thread_devices.group_by("pid", "thread").agg(
        pl.col("device").eq_missing(pl.lit(device, pl.Int32)).any().alias("here")
    )
    if by_thread.get_column("here").all():
        return ranges
    marked = ranges.join(by_thread, on=["pid", "thread"], how="left", nulls_equal=True, maintain_order="left")
    own = marked.filter(pl.col("here").fill_null(False)).select("pid", "name").unique()
    elsewhere = marked.get_column("here").eq_missing(False)
    shared = pl.struct("pid", "name").is_in(own.select(pl.struct("pid", "name")).to_series().implode())
    return ranges.filter(~(elsewhere & shared))


def split_by_device(trace: Trace) -> dict[int | None, Trace]:
    """One trace per device that ran ops (:func:`device_trace`), in device order; ``{}`` when the trace has
    no ops. A trace of one device (or whose ops' device is not recorded) is returned as it is, keyed by its
    device (None: not recorded)."""
    ids = devices(trace)
    if len(ids) <= 1:
        return {d: trace for d in ids}
    thread_devices = _thread_devices(trace)
    return {d: device_trace(trace, d, thread_devices) for d in ids}
