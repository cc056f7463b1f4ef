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
from dataclasses import dataclass, field
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
    content"``, ``"from file name"``); ``evidence``: for the inferred ones, what in the trace or name says so;
    ``inference_warnings``: file-name hints that disagree with the content.
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
        warnings: tuple[str, ...] = ()
        if trace is not None and any(key not in values for key in INFERABLE):
            from tracekit.analyzers.identify import identify

            identity = identify(trace, meta.get("path") or item.path)
            for key in INFERABLE:
                found = getattr(identity, key)
                if key not in values and found is not None:
                    values[key], sources[key], evidence[key] = found.value, found.source, found.evidence
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
            inference_warnings=warnings,
        )

    def inferred(self, key: str) -> bool:
        """Whether ``key`` (runtime, batch_size, seq_len, precision) was inferred (content or file name)."""
        from tracekit.analyzers.identify import FROM_CONTENT, FROM_NAME

        return self.sources.get(key) in (FROM_CONTENT, FROM_NAME)

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

    @property
    def iterations(self) -> pl.DataFrame:
        return self.analysis.iterations

    @property
    def gaps(self) -> pl.DataFrame:
        return self.analysis.gaps

    @property
    def idle_gaps(self) -> pl.DataFrame:
        """Idle gaps with ``offset_ms``: the gap's start in ms after its iteration's window start."""
        from tracekit.analyzers.iterations import with_gap_offsets

        return with_gap_offsets(self.analysis.gaps, self.analysis.iterations)

    @property
    def summary(self) -> Summary:
        return self.analysis.summary

    @property
    def verdict(self) -> str | None:
        """ "framework" (framework-bound), "compute" or None (no device activity)."""
        return self.analysis.summary.bound

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
        """The ``tracekit analyze --format json`` document."""
        return self.analysis.to_json(self.trace)


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
    config = TraceConfig.resolve(item, trace.meta, analysis.device, trace)
    analysis.warnings += [*inference_notes(config), *config.inference_warnings]
    return AnalyzedTrace(trace, config, analysis)


#: Start of the note that says which configuration values were inferred (the table shows them in its legend).
INFERRED_NOTE = "not stated by run.json or sidecar metadata, inferred: "


def inference_notes(config: TraceConfig) -> list[str]:
    """One line naming the inferred values, their source and evidence (none when nothing was inferred): so
    that ``report``, ``compare`` and ``analyze`` say it where they list a trace's warnings."""
    said = [
        f"{key.replace('_', ' ')} {getattr(config, key)} {config.sources[key]} ({config.evidence[key]})"
        for key in INFERABLE
        if config.inferred(key) and key in config.evidence
    ]
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
