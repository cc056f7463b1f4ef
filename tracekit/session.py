"""The analysis session shared by the commands and the Python API.

- :class:`TraceConfig`: what is known about the configuration that produced a trace (runtime, model, batch
  size, sequence length, device, synthetic, untraced latency), resolved once from the run directory's
  ``run.json`` / the sidecar ``.meta.json`` and the trace's own metadata.
- :class:`AnalyzedTrace`: a trace with its chosen iterations, idle gaps, typed summary and (computed once,
  on first use) its ops assigned to the analyzed iterations.
- :func:`analyze_input` analyzes one input; :func:`for_each_input` applies one step to many inputs with the
  one bad-input policy of every command: a bad input among several is left out with a one-line warning,
  a bad input alone is the error (exit 2), and when every input fails the error lists them.

Every command is "parse args -> analyze inputs -> one analyzer -> renderer".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl

from tracekit.errors import TracekitError

if TYPE_CHECKING:
    from tracekit.analyzers.iterations import IterationAnalysis
    from tracekit.analyzers.stats import Summary
    from tracekit.model import FrameSpec, Trace
    from tracekit.runs import TraceInput

T = TypeVar("T")
X = TypeVar("X")


@dataclass(frozen=True)
class AnalysisOptions:
    """How iterations are chosen and judged (``--range``, ``--skip``, ``--bound-threshold``, ``--split-idle``).

    ``skip`` None: drop the run's warm-up iterations when the trace records them, else none.
    ``split_idle_ms``: cut the device timeline into iterations at idle gaps longer than this many ms
    (:func:`tracekit.analyzers.ranges.choose_ranges`) instead of using ranges."""

    range_name: str | None = None
    skip: int | None = None
    bound_threshold: float = 0.5
    split_idle_ms: float | None = None

    @classmethod
    def from_args(cls, args: Any) -> AnalysisOptions:
        """The options of a parsed command line (see :mod:`tracekit.commands.options`)."""
        return cls(
            args.range_name,
            args.skip,
            getattr(args, "bound_threshold", None) or 0.5,
            getattr(args, "split_idle", None),
        )


#: Where a TraceConfig value came from, besides :mod:`tracekit.analyzers.identify`'s two sources.
FROM_RUN = "from run.json"
FROM_SIDECAR = "from sidecar .meta.json"
FROM_TRACE_META = "from trace metadata"
#: The values :meth:`TraceConfig.resolve` infers from the trace when nothing else says them.
INFERABLE = ("runtime", "batch_size", "seq_len", "precision")


@dataclass(frozen=True)
class TraceConfig:
    """The configuration of one trace; the input's run/sidecar metadata first, then the trace's own, then
    what the trace's content (or, weaker, its file name) says (:mod:`tracekit.analyzers.identify`).

    ``sources``: for each of runtime, batch_size, seq_len, precision that is known, where it came from
    (``"from run.json"``, ``"from sidecar .meta.json"``, ``"from trace metadata"``, ``"inferred from trace
    content"``, ``"from file name"``, or, with the value None, ``"uncertain: sources disagree"`` / ``"varies
    by serving step"``); ``evidence``: for the inferred ones, what in the trace or name says so;
    ``uncertain``: the inferred values that are not sure, each with its candidate values (both disagreeing
    values; the lowest and highest of a varying batch; the value itself when its evidence may not mean it);
    ``inference_warnings``: why those are uncertain, and file-name hints the content overrides (runtime).
    ``untraced_latency_ms``: mean latency measured with the profiler off (None when not recorded);
    ``untraced_latency``: its statistics as recorded (mean, p50, ..., count)."""

    path: Path
    profiler: str | None = None
    runtime: str | None = None
    model: str | None = None
    batch_size: int | None = None
    seq_len: int | None = None
    precision: str | None = None
    device: str | None = None
    synthetic: bool = False
    untraced_latency: dict[str, float] | None = None
    sources: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, str] = field(default_factory=dict)
    uncertain: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    inference_warnings: tuple[str, ...] = ()

    @classmethod
    def resolve(
        cls, item: TraceInput, meta: dict[str, Any], device: str | None, trace: Trace | None = None
    ) -> TraceConfig:
        """Merge an input's configuration with the trace's metadata; ``device`` is the measured one.

        ``trace``: the trace itself, to infer what neither says (None: no inference)."""
        given = FROM_RUN if item.run else FROM_SIDECAR
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for key in INFERABLE:
            if getattr(item, key) is not None:
                values[key], sources[key] = getattr(item, key), given
            elif meta.get(key) is not None:
                values[key], sources[key] = meta[key], FROM_TRACE_META
        evidence: dict[str, str] = {}
        uncertain: dict[str, tuple[Any, ...]] = {}
        warnings: tuple[str, ...] = ()
        if trace is not None and any(key not in values for key in INFERABLE):
            from tracekit.analyzers.identify import identify

            identity = identify(trace, meta.get("path") or item.path)
            for key in INFERABLE:
                found = getattr(identity, key)
                if key not in values and found is not None:
                    values[key], sources[key], evidence[key] = found.value, found.source, found.evidence
                    if found.uncertain:
                        uncertain[key] = found.candidates or (found.value,)
            warnings = tuple(w for key, w in identity.warnings.items() if key in evidence)
        batch, seq = values.get("batch_size"), values.get("seq_len")
        untraced = item.untraced_latency_ms
        return cls(
            path=Path(item.path),
            profiler=item.profiler or meta.get("profiler") or meta.get("format"),
            runtime=values.get("runtime"),
            model=item.model or meta.get("model"),
            batch_size=None if batch is None else int(batch),
            seq_len=None if seq is None else int(seq),
            precision=values.get("precision"),
            device=device or item.device,
            synthetic=bool(item.synthetic or meta.get("synthetic", False)),
            untraced_latency=untraced if isinstance(untraced, dict) else None,
            sources=sources,
            evidence=evidence,
            uncertain=uncertain,
            inference_warnings=warnings,
        )

    def inferred(self, key: str) -> bool:
        """Whether ``key`` (runtime, batch_size, seq_len, precision) was inferred (content or file name, sure or
        not)."""
        from tracekit.analyzers.identify import INFERRED_SOURCES

        return self.sources.get(key) in INFERRED_SOURCES

    @property
    def runtime_label(self) -> str | None:
        """The runtime as shown: ``"onnx"``, ``"onnx (inferred)"`` (from the content), ``"onnx (file name)"``."""
        from tracekit.analyzers.identify import FROM_CONTENT, FROM_NAME

        if self.runtime is None:
            return None
        tag = {FROM_CONTENT: " (inferred)", FROM_NAME: " (file name)"}.get(
            self.sources.get("runtime", ""), ""
        )
        return self.runtime + tag

    @property
    def untraced_latency_ms(self) -> float | None:
        """Mean untraced latency (ms), or None."""
        mean = (self.untraced_latency or {}).get("mean")
        return None if mean is None else float(mean)

    @property
    def label(self) -> str:
        """``runtime b1 s128`` (the run directory and file name when the runtime is unknown)."""
        parts = [self.runtime_label or f"{self.path.parent.name}/{self.path.name}"]
        if self.batch_size is not None:
            parts.append(f"b{self.batch_size}")
        if self.seq_len is not None:
            parts.append(f"s{self.seq_len}")
        return " ".join(parts)


@dataclass
class AnalyzedTrace:
    """One analyzed trace: the trace, its configuration and its iteration analysis.

    ``iterations`` (polars, one row per analyzed iteration), ``gaps`` (every idle gap, absolute ns),
    ``idle_gaps`` (the same with ``offset_ms`` from the iteration's window start), ``summary`` (typed
    statistics, verdict, synchronized), ``attribution`` (the idle time of each iteration by cause, whose
    ``dispatch_ms`` ... ``in_flight_ms`` are columns of ``iterations``), ``ops`` (the trace's ops of the analyzed iterations with an
    ``iteration`` column and their launching call's ``call_start``/``call_end``; computed on first use)."""

    trace: Trace
    config: TraceConfig
    analysis: IterationAnalysis
    #: Why there is no framework-/compute-bound verdict (:func:`no_verdict_reason`); None when there is one
    #: or the device simply did nothing.
    no_verdict: str | None = None

    @property
    def iterations(self) -> pl.DataFrame:
        return self.analysis.iterations

    @property
    def gaps(self) -> pl.DataFrame:
        return self.analysis.gaps

    @cached_property
    def idle_gaps(self) -> pl.DataFrame:
        """Every idle gap with ``offset_ms`` (its start in ms after its iteration's window start) and, when
        the idle time was attributed, its causes (``cause``, ``host_state``, ``thread``, the ns of every cause:
        :meth:`~tracekit.analyzers.iterations.IterationAnalysis.gap_causes`; computed on first use)."""
        from tracekit.analyzers.iterations import with_gap_offsets

        gaps = self.analysis.gaps
        if self.analysis.attribution is not None:
            gaps = self.analysis.gap_causes(self.trace)
        return with_gap_offsets(gaps, self.analysis.iterations)

    @property
    def summary(self) -> Summary:
        return self.analysis.summary

    @property
    def verdict(self) -> str | None:
        """ "framework" (framework-bound), "compute" or None: no device or operator activity, or no measured
        timeline (an Nsight Compute report alone); :attr:`no_verdict` says why."""
        return self.analysis.summary.bound

    @property
    def session_setup(self) -> list[dict[str, Any]]:
        """Set-up before inference, outside every iteration (ONNX Runtime profiles: ``model_loading_uri``,
        ``session_initialization``), each ``{"name", "ms"}``; ``[]`` when the trace records none."""
        return list(self.trace.meta.get("session_setup") or [])

    @property
    def device(self) -> str:
        """ "gpu" or "cpu" (a CPU-only trace: the ops are CPU operators)."""
        return self.analysis.device

    @property
    def warnings(self) -> list[str]:
        return self.analysis.warnings

    @property
    def range_name(self) -> str:
        return self.analysis.range_name

    @property
    def attribution(self) -> Any:
        """The idle time by cause (:class:`tracekit.analyzers.attribution.Attribution`: per-iteration ns
        sums, summary, CUDA-graph projection parts; the ``*_ms`` columns are in :attr:`iterations` too)."""
        return self.analysis.attribution

    @cached_property
    def ops(self) -> pl.DataFrame:
        """Ops of the analyzed iterations (see :func:`tracekit.analyzers.iterations.assign_ops`)."""
        from tracekit.analyzers.iterations import assign_ops

        analyzed = self.iterations.get_column("index").implode()
        return assign_ops(self.trace, self.analysis.ranges).filter(pl.col("iteration").is_in(analyzed))

    def to_json(self) -> dict[str, Any]:
        """The ``tracekit analyze --format json`` document; with ``no_verdict`` (why ``summary.bound`` is null,
        when it is for want of evidence) and ``session_setup`` (set-up times outside every iteration, ms) where
        they apply."""
        doc = self.analysis.to_json(self.trace)
        if self.no_verdict is not None:
            doc["no_verdict"] = self.no_verdict
        if self.session_setup:
            doc["session_setup"] = self.session_setup
        return doc


def trace_input(path: str | Path) -> TraceInput:
    """The input of one trace file (its configuration from the sidecar ``.meta.json`` when present)."""
    from tracekit.runs import TraceInput, expand_inputs

    path = Path(path)
    if path.is_dir():  # the reader says what is wrong with it
        return TraceInput(path=path)
    return expand_inputs([path])[0]


def analyze_input(
    item: TraceInput | str | Path,
    options: AnalysisOptions | None = None,
    frames: FrameSpec | None = None,
) -> AnalyzedTrace:
    """Read and analyze one input. ``frames``: what to read of the trace (None: everything).

    Raises TracekitError (one line naming the file) when the input cannot be read or analyzed."""
    from tracekit.readers import read_trace

    if isinstance(item, (str, Path)):
        item = trace_input(item)
    _prefetch_numpy()
    return analyze_trace(read_trace(item.path, frames=frames), item, options)


#: the module :func:`_prefetch_numpy` imports (numpy with it): ``numpy.ma``, which polars loads the first
#: time it makes a series of a numpy array (~20 ms of module code, measured) and numpy itself leaves unloaded
PREFETCHED_NUMPY_MODULE = "numpy.ma"


def _prefetch_numpy() -> None:
    """Import numpy (which the idle-time attribution uses; ~0.2 s of Python module code) on a background
    thread while the trace is read, which spends its time in native code without the GIL. Nothing but numpy
    and its own modules is imported there, so no import lock can be taken out of order."""
    import sys
    import threading

    if PREFETCHED_NUMPY_MODULE not in sys.modules:
        threading.Thread(
            target=__import__, args=(PREFETCHED_NUMPY_MODULE,), name="prefetch-numpy", daemon=True
        ).start()


def analyze_trace(
    trace: Trace, item: TraceInput | None = None, options: AnalysisOptions | None = None
) -> AnalyzedTrace:
    """Analyze a trace already read (``item``: its input, for the configuration; None: the trace's meta)."""
    from tracekit import progress
    from tracekit.analyzers.iterations import analyze_iterations, per_device_rows
    from tracekit.runs import TraceInput

    options = options or AnalysisOptions()
    if item is None:
        item = TraceInput(path=Path(trace.meta.get("path") or "trace"))
    args = (options.range_name, options.skip, options.bound_threshold, options.split_idle_ms)
    name = Path(trace.meta.get("path") or "trace").name
    with progress.task(f"analyzing {name}"):
        analysis = analyze_iterations(trace, *args)
        analysis.per_device = per_device_rows(trace, *args)
    reason = no_verdict_reason(trace)
    if trace.meta.get("timeline") is False:
        _drop_timeline_fields(analysis)
    if reason is not None:
        analysis.summary = replace(analysis.summary, bound=None)
        for row in analysis.per_device or []:
            row["bound"] = None
        # the reason says it all: the analyzer's shorter "holds no GPU or operator activity" line would repeat it
        analysis.warnings[:] = [
            reason,
            *(w for w in analysis.warnings if not w.startswith(NO_ACTIVITY_WARNING)),
        ]
    config = TraceConfig.resolve(item, trace.meta, analysis.device, trace)
    analysis.warnings += [*inference_notes(config), *config.inference_warnings]
    return AnalyzedTrace(trace, config, analysis, reason)


#: Start of :func:`tracekit.analyzers.iterations.analyze_iterations`' warning for a trace without ops, which
#: :func:`no_verdict_reason` replaces.
NO_ACTIVITY_WARNING = "the trace holds no GPU or operator activity"

#: Per-iteration fields that need a measured timeline (when each op ran): without one (an Nsight Compute report
#: alone: kernels laid back to back by the reader) they are not shown. GPU busy (the summed kernel durations)
#: and the kernel count stay.
TIMELINE_FIELDS = ("latency_ms", "cpu_ms", "framework_overhead_ms", "gpu_utilization", "idle_gaps", "idle_ms")

#: What to collect for a verdict, by the format of a trace that cannot give one.
_COLLECT_HINTS: dict[str, str] = {
    "nsys-sqlite": (
        "nsys profile -t cuda,nvtx for a GPU run; for a CPU run a profiler that records operators "
        "(tracekit collect --profiler torch or ort)"
    ),
    "kineto": "torch.profiler with ProfilerActivity.CUDA for a GPU run (its CPU operators for a CPU run)",
    "ort": "ONNX Runtime's profiler with its Node events kept (the default), or nsys/torch.profiler on a GPU",
}


def no_verdict_reason(trace: Trace) -> str | None:
    """Why a trace gets no framework-/compute-bound verdict, in one line that says what the input can and
    cannot tell and what to collect for the verdict; None when it can have one.

    The verdict compares device (or operator) busy time with latency on one measured timeline. An Nsight
    Compute report has no timeline (``meta["timeline"]`` False: ncu replays each kernel alone and records no
    start times, so the reader lays the kernels back to back and any utilization would be 100% by
    construction); a trace of ranges without device or operator activity has latency but no busy time."""
    fmt = str(trace.meta.get("format") or "")
    if trace.meta.get("timeline") is False:
        return (
            "no framework-/compute-bound verdict: Nsight Compute replays each kernel alone and records no start "
            "times, so this input gives kernel durations (GPU busy = their sum) and per-kernel counters "
            "(kernel-time SMs active / warp occupancy: tracekit table --wide), not latency, idle time or "
            "utilization; for the verdict, collect a timeline of the same run too (tracekit collect --profiler "
            "nsys --profiler ncu; nsys profile -t cuda,nvtx; torch.profiler with CUDA activity; tracekit table "
            "TIMELINE --ncu REPORT joins them)"
        )
    if trace.ops.is_empty():
        hint = _COLLECT_HINTS.get(fmt, "a profiler that records device work or operators")
        return (
            "no framework-/compute-bound verdict: the trace holds ranges but no GPU or operator activity, so it "
            "gives latency and CPU time per iteration, not how much of it the device or operators were busy; "
            f"for the verdict, profile with device or operator activity ({hint})"
        )
    return None


def _drop_timeline_fields(analysis: IterationAnalysis) -> None:
    """Null the fields of ``analysis`` that need a measured timeline (:data:`TIMELINE_FIELDS`, the idle time
    by cause), drop its idle gaps and the attribution, and summarize again."""
    from tracekit.analyzers.attribution import CAUSE_MS
    from tracekit.analyzers.iterations import summarize

    frame = analysis.iterations
    blank = [c for c in (*TIMELINE_FIELDS, *CAUSE_MS) if c in frame.columns]
    analysis.iterations = frame.with_columns(pl.lit(None, dtype=frame.schema[c]).alias(c) for c in blank)
    analysis.gaps = analysis.gaps.clear()
    analysis.attribution = None
    analysis.summary = summarize(analysis.iterations, analysis.summary.bound_threshold)


#: Start of the note that says which configuration values were inferred (the table shows them in its legend).
INFERRED_NOTE = "not stated by run.json or sidecar metadata, inferred: "


def inference_notes(config: TraceConfig) -> list[str]:
    """One line naming the inferred values, their source and evidence (none when nothing was inferred): so
    that ``report``, ``compare`` and ``analyze`` say it where they list a trace's warnings."""
    said = []
    for key in INFERABLE:
        if not (config.inferred(key) and key in config.evidence):
            continue
        value = getattr(config, key)
        shown = config.sources[key] if value is None else f"{value} {config.sources[key]}"
        mark = " (uncertain)" if value is not None and key in config.uncertain else ""
        said.append(f"{key.replace('_', ' ')} {shown}{mark} ({config.evidence[key]})")
    return [INFERRED_NOTE + "; ".join(said)] if said else []


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
            left_out.append(f"left out: {exc}")
    if items and not results:
        raise TracekitError("no input could be analyzed:\n  " + "\n  ".join(left_out))
    return results, left_out
