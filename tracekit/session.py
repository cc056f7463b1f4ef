"""The analysis session shared by the command line and the Python API: one options object, one analysis
function, one bad-input policy.

- :class:`AnalysisOptions`: how iterations are chosen and judged, with every default in one place; built from
  the command line (:meth:`AnalysisOptions.from_args`) or the API's keywords
  (:meth:`AnalysisOptions.from_kwargs`), both checked by the same rules.
- :func:`analyze_input` / :func:`analyze_trace`: one input (:class:`tracekit.inputs.TraceInput`) to one
  frozen :class:`tracekit.analysis.Analysis`, in named stages:

  1. *read* (:func:`tracekit.readers.read_trace`: the frames the analysis needs, :func:`frames_for`);
  2. *assign* (:func:`tracekit.analyzers.iterations.assign`): the iteration ranges, every op to the
     iteration that launched it;
  3. *gaps* (:func:`tracekit.analyzers.iterations.measure_gaps`): windows, busy time, idle gaps, launches,
     the warm-up dropped; meanwhile the attribution's setup on a second thread
     (:func:`tracekit.analyzers.iterations.gaps_and_setup`);
  4. *attribute* (:func:`tracekit.analyzers.iterations.attribute`): every idle nanosecond by cause;
  5. *summarize* (:func:`tracekit.analyzers.iterations.summarize_stages`): per-iteration columns, statistics,
     verdict (or why there is none), the longest gaps; one row per GPU of a multi-GPU trace; the
     configuration with its evidence (:meth:`tracekit.inputs.TraceConfig.resolve`);
  6. *project* (:func:`tracekit.analyzers.attribution.projection`): the CUDA-graph projection.

- :func:`for_each_input`: one step applied to many inputs with the one bad-input policy of every command: a
  bad input among several is left out with a one-line warning, a bad input alone is the error (exit 2), and
  when every input fails the error lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tracekit.analyzers.sweep import FRAMEWORK_BOUND_UTILIZATION
from tracekit.errors import LEFT_OUT, TracekitError
from tracekit.inputs import (  # noqa: F401 (re-exported: the configuration and its notes)
    FROM_RUN,
    FROM_SIDECAR,
    FROM_TRACE_META,
    INFERABLE,
    INFERRED_NOTE,
    TraceConfig,
    TraceInput,
    inference_notes,
    resolve_input,
)

if TYPE_CHECKING:
    import polars as pl

    from tracekit.analysis import Analysis
    from tracekit.model import FrameSpec, Trace

T = TypeVar("T")
X = TypeVar("X")


#: how :meth:`AnalysisOptions.check` names each option: on the command line and in the Python API
CLI_NAMES = {"range": "--range", "skip": "--skip", "threshold": "--bound-threshold", "split": "--split-idle"}
API_NAMES = {"range": "range", "skip": "skip", "threshold": "bound_threshold", "split": "split_idle"}


@dataclass(frozen=True)
class AnalysisOptions:
    """How iterations are chosen and judged: every default of the command line and the API, once.

    ``range_name``: the range that delimits an iteration (a name, a glob, ``re:REGEX``; None: the default rules
    of :mod:`tracekit.analyzers.ranges`); ``skip``: leading iterations to drop (None, the default: the run's
    warm-up when the trace records it as iterations, else none); ``bound_threshold``: framework-bound below
    this median utilization (:data:`tracekit.analyzers.sweep.FRAMEWORK_BOUND_UTILIZATION`);
    ``split_idle_ms``: cut the device timeline into iterations at idle gaps longer than this many ms instead of
    using ranges (None: off)."""

    range_name: str | None = None
    skip: int | None = None
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION
    split_idle_ms: float | None = None

    def check(self, names: Mapping[str, str] = API_NAMES) -> AnalysisOptions:
        """These options, or TracekitError (one line, the option spelled as ``names`` says) for an out-of-range
        value: the one check behind the command line and the API."""
        if self.skip is not None and self.skip < 0:
            raise TracekitError(f"{names['skip']} must be >= 0")
        if self.split_idle_ms is not None:
            from tracekit.analyzers.ranges import check_split_idle

            check_split_idle(self.split_idle_ms, option=names["split"])
        if self.split_idle_ms is not None and self.range_name is not None:
            raise TracekitError(f"{names['range']} and {names['split']} exclude each other: use one of them")
        if not 0 < self.bound_threshold <= 1:
            raise TracekitError(f"{names['threshold']} must be in (0, 1]")
        return self

    @classmethod
    def from_args(cls, args: Any) -> AnalysisOptions:
        """The options of a parsed command line (:func:`tracekit.commands.options.add_iteration_options`),
        checked; an option the command does not have takes its default."""
        threshold = getattr(args, "bound_threshold", None)
        return cls(
            args.range_name,
            args.skip,
            FRAMEWORK_BOUND_UTILIZATION if threshold is None else threshold,
            getattr(args, "split_idle", None),
        ).check(CLI_NAMES)

    @classmethod
    def from_kwargs(
        cls,
        range: str | None = None,
        skip: int | None = None,
        bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
        split_idle: float | None = None,
    ) -> AnalysisOptions:
        """The options of the Python API's keywords, checked."""
        return cls(range, skip, bound_threshold, split_idle).check(API_NAMES)


#: Read everything (a ``frames`` value for :func:`analyze_input`): for outputs that show the trace itself.
EVERYTHING: FrameSpec = None


def frames_for(item: TraceInput) -> dict[str, tuple[str, ...] | None]:
    """What the analysis reads of ``item``'s trace (:data:`tracekit.model.FrameSpec`): what the metrics need
    (:data:`tracekit.analyzers.iterations.FRAMES_NEEDED`), and what identifying the trace needs
    (:data:`tracekit.analyzers.identify.FRAMES_READ`) unless the run states everything it would infer. The
    same for every caller, so that the same input always gets the same answer."""
    from tracekit.analyzers.iterations import FRAMES_NEEDED

    if item.states_identity:
        return dict(FRAMES_NEEDED)
    from tracekit.analyzers.identify import FRAMES_READ

    out: dict[str, tuple[str, ...] | None] = dict(FRAMES_NEEDED)
    for frame, columns in FRAMES_READ.items():
        have = out.get(frame, ())
        out[frame] = (
            None
            if columns is None or (frame in out and have is None)
            else tuple(dict.fromkeys([*have, *columns]))
        )
    return out


def analyze_input(
    item: TraceInput | str | Path,
    options: AnalysisOptions | None = None,
    frames: FrameSpec | str = "needed",
    cache_dir: str | Path | None = None,
    device_causes: bool = False,
) -> Analysis:
    """Read and analyze one input (a path: :func:`tracekit.inputs.resolve_input`). ``frames``: what to read
    of the trace: "needed" (the default, :func:`frames_for`), or a :data:`tracekit.model.FrameSpec`
    (:data:`EVERYTHING` for outputs that show the trace itself). ``cache_dir``: read through the Parquet
    cache there (:func:`tracekit.fleet.cache.cached_read`; a file only, not a pipe).

    Raises TracekitError (one line naming the file) when the input cannot be read or analyzed."""
    from tracekit.readers import read_trace

    if isinstance(item, (str, Path)):
        item = resolve_input(item)
    spec = frames_for(item) if frames == "needed" else frames
    if cache_dir is not None:
        from tracekit.fleet.cache import cached_read
        from tracekit.io import is_stream

        if is_stream(item.path):
            raise TracekitError("--cache needs a trace file, not a pipe or standard input", item.path)
        trace = cached_read(item.path, cache_dir, spec, fmt=item.format, sidecar=item.sidecar)
    else:
        trace = read_trace(item.path, frames=spec, fmt=item.format, sidecar=item.sidecar)  # stage: read
    return analyze_trace(trace, item, options, device_causes)


def analyze_trace(
    trace: Trace,
    item: TraceInput | None = None,
    options: AnalysisOptions | None = None,
    device_causes: bool = False,
) -> Analysis:
    """Analyze a trace already read (``item``: its input, for the configuration; None: the trace's meta): the
    stages of the module docstring after *read*. ``device_causes``: a multi-GPU trace's per-device analyses
    (kept on :attr:`Analysis.source`) split their idle time by cause too, for a many-trace run's per-GPU rows
    (:func:`tracekit.fleet.compact.per_gpu`), which then need not analyze the devices again."""
    from tracekit import progress
    from tracekit.analysis import Analysis, Source, TraceInfo
    from tracekit.analyzers import iterations as it
    from tracekit.analyzers.attribution import idle_summary, projection
    from tracekit.analyzers.devices import (
        analyze_devices,
        gpu_models_warning,
        independent_devices_doubt,
        per_device_rows,
    )

    options = options or AnalysisOptions()
    if item is None:
        item = TraceInput(path=Path(trace.meta.get("path") or "trace"))
    name = Path(trace.meta.get("path") or "trace").name
    with progress.task(f"analyzing {name}"):
        trace = it.without_iteration_operators(trace, options.range_name, options.split_idle_ms)
        assigned = it.assign(trace, options.range_name, options.split_idle_ms)
        measured, prepared = it.gaps_and_setup(  # gaps (+ attribution's setup)
            trace, assigned, options.skip, bound_threshold=options.bound_threshold
        )
        causes = it.attribute(trace, assigned, measured, prepared)
        result = it.summarize_stages(trace, assigned, measured, causes, options.bound_threshold)
        utilization = result.summary.fields.get("gpu_utilization")
        devices = analyze_devices(
            trace,
            options.range_name,
            options.skip,
            options.bound_threshold,
            options.split_idle_ms,
            attribute=device_causes,
        )
        per_device = per_device_rows(
            trace,
            options.range_name,
            options.skip,
            options.bound_threshold,
            options.split_idle_ms,
            (result.summary.bound, utilization.p50 if utilization is not None else None),
            devices,
        )
    summary = result.summary
    doubt = independent_devices_doubt(trace, summary.bound, utilization, per_device)
    if doubt and not summary.verdict_uncertain:
        summary = replace(summary, verdict_uncertain=doubt)
    if per_device is not None and result.no_verdict is not None:
        per_device = [
            {**row, "bound": None, "verdict_uncertain": None} if "bound" in row else row for row in per_device
        ]
    config = TraceConfig.resolve(item, trace.meta, result.device, trace)
    # (only over the run's own iterations: another --range, or --split-idle windows, are not what was timed)
    own_iterations = options.split_idle_ms is None and options.range_name in (None, trace.meta.get("range"))
    cost_warnings, cost_notes, cost_doubt = (
        _profiler_cost(summary, result.iterations, config, options.bound_threshold, item.stated_by)
        if own_iterations
        else ([], [], None)
    )
    if cost_doubt and not summary.verdict_uncertain:
        summary = replace(summary, verdict_uncertain=cost_doubt)
    attribution = result.attribution
    frame = result.iterations
    steps = [c for c in it.STEP_COLUMNS if c in frame.columns]
    fields = [c for c in _numeric_fields() if c in frame.columns]
    meta = trace.meta
    return Analysis(
        trace=TraceInfo(
            path=meta.get("path"),
            format=meta.get("format"),
            format_version=meta.get("format_version"),
            device=result.device,
            gpu=meta.get("gpu"),
            synthetic=bool(meta.get("synthetic", False)),
        ),
        config=config,
        range_name=result.range_name,
        range_choice=result.range_choice,
        skipped=result.skipped,
        iterations=frame.select(
            "index", "start_ns", "end_ns", "window_start_ns", "window_end_ns", *fields, "synchronized", *steps
        ),
        summary=summary,
        longest_gaps=result.longest_gaps(),
        unassigned_ops=result.unassigned,
        notes=(*result.notes, *cost_notes),
        step_classes=None if result.step_classes is None else tuple(result.step_classes),
        per_device=None if per_device is None else tuple(per_device),
        attribution=None if attribution is None else idle_summary(frame, attribution),
        projection=None
        if attribution is None
        else projection(
            frame, attribution, result.device, result.setup_caveat, result.capture_refusal
        ),  # stage: project
        warnings=(
            *result.warnings,
            *filter(None, [gpu_models_warning(trace)]),
            *cost_warnings,
            *inference_notes(config),
            *config.inference_warnings,
        ),
        no_verdict=result.no_verdict,
        session_setup=tuple(meta.get("session_setup") or ()),
        source=Source(trace, item, result, None if devices is None else tuple(devices)),
    )


#: The profilers' names in the words about their cost.
PROFILER_WORDS = {
    "nsys": "Nsight Systems",
    "torch": "torch.profiler",
    "ort": "ONNX Runtime's profiler",
    "ncu": "Nsight Compute",
}


def _profiler_cost(
    summary: Any,
    frame: pl.DataFrame,
    config: TraceConfig,
    bound_threshold: float,
    stated_by: str | None = None,
) -> tuple[list[str], list[str], str | None]:
    """(warnings, notes, doubt) about what the profiler cost this run, against the configuration's untraced
    latency (:func:`tracekit.analyzers.profiler_cost.findings`): the traced latency is the
    :func:`tracekit.analyzers.stability.measure` of the analyzed iterations (``frame``), after the stability
    rules as the untraced median is, so analyze says what report says (report's ``traced_median_ms``).
    ``stated_by``: what recorded the untraced latency (:data:`tracekit.inputs.FROM_RUN` or the sidecar)."""
    from tracekit.analyzers.profiler_cost import findings
    from tracekit.analyzers.stability import measure

    busy = summary.fields.get("gpu_busy_ms")
    overhead = summary.fields.get("framework_overhead_ms")
    traced = measure(frame.get_column("latency_ms").to_list()) if "latency_ms" in frame.columns else None
    return findings(
        traced,
        None if busy is None else busy.p50,
        summary.bound,
        bound_threshold,
        config,  # its untraced latency by report's one rule (profiler_cost.untraced_of)
        PROFILER_WORDS.get(config.profiler or "", config.profiler),
        device=config.device,
        overhead_ms=None if overhead is None else overhead.p50,
        source="its sidecar .meta.json" if stated_by == FROM_SIDECAR else "run.json",
    )


def _numeric_fields() -> list[str]:
    from tracekit.fields import NUMERIC_FIELDS

    return NUMERIC_FIELDS


def for_each_input(items: Sequence[X], step: Callable[[X], T]) -> tuple[list[T], list[str]]:
    """``step`` applied to each item in turn (one at a time, so one large trace is freed before the next is
    read): (results, warnings). The one bad-input policy: a TracekitError on one of several items leaves it
    out with a ``left out: FILE: problem`` warning; on a single item, or on every item, it is raised."""
    results: list[T] = []
    left_out: list[str] = []
    for item in items:
        try:
            results.append(step(item))
        except TracekitError as exc:
            if len(items) == 1:
                raise
            left_out.append(f"{LEFT_OUT}{exc}")
    if items and not results:  # (one line: each input's reason names its file)
        reasons = "; ".join(line.removeprefix(LEFT_OUT) for line in left_out)
        raise TracekitError(f"none of the {len(items)} inputs could be analyzed: {reasons}")
    return results, left_out
