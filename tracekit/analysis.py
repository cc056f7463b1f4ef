"""The one result of analyzing one trace: :class:`Analysis`, frozen and typed, whatever asked for it (the
``tracekit analyze`` command, the Python API, ``table``, ``report``, ``compare``, the many-trace runs).

It is built once, by :func:`tracekit.session.analyze_trace` in named stages (read -> assign -> gaps ->
attribute -> summarize -> project), and never changed afterwards. Renderers and the JSON document only read
it: :meth:`Analysis.to_json` is the ``tracekit analyze --format json`` document, and
:meth:`Analysis.from_json` / :func:`load` give an equal Analysis back from that document (as pyinstrument's
``Session.to_json`` / ``Session.load`` do for a profile)::

    a = tracekit.analyze("trace.sqlite")
    Path("analysis.json").write_text(json.dumps(a.to_json()))
    assert tracekit.load("analysis.json") == a

An Analysis made in this process also keeps what it was computed from (the trace, every idle gap, the
chosen ranges: :attr:`Analysis.source`), for the outputs that draw or list them (``--timeline``, ``--gaps``,
per-kernel comparisons); that part is neither serialized nor compared, and a loaded Analysis has none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.analyzers.attribution import IdleSummary, Projection
from tracekit.analyzers.iterations import GAP_POSITION, STEP_COLUMNS
from tracekit.analyzers.stats import Stats, Summary
from tracekit.errors import TracekitError
from tracekit.fields import FIELDS, NUMERIC_FIELDS
from tracekit.inputs import TraceConfig

if TYPE_CHECKING:
    from tracekit.analyzers.devices import DeviceAnalysis
    from tracekit.analyzers.iterations import IterationAnalysis
    from tracekit.inputs import TraceInput
    from tracekit.model import Trace


@dataclass(frozen=True)
class TraceInfo:
    """What was analyzed: ``path``, ``format`` (``nsys-sqlite``, ``kineto``, ``ort``, ``ncu-csv``, ``ncu-rep``),
    ``format_version``, ``device`` ("gpu" or "cpu": what the ops measured), ``gpu`` (the GPU that ran the most
    kernels), ``synthetic`` (a simulated trace, not a measurement)."""

    path: str | None
    format: str | None
    format_version: str | None
    device: str
    gpu: str | None
    synthetic: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "format_version": self.format_version,
            "device": self.device,
            "gpu": self.gpu,
            "synthetic": self.synthetic,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TraceInfo:
        return cls(
            doc.get("path"),
            doc.get("format"),
            doc.get("format_version"),
            doc["device"],
            doc.get("gpu"),
            bool(doc.get("synthetic", False)),
        )


@dataclass(frozen=True)
class Source:
    """What an Analysis was computed from (not part of the answer): the trace as read, its input, the
    iteration analysis with every idle gap and the chosen ranges, and (a multi-GPU trace) each device's
    analysis (:func:`tracekit.analyzers.devices.analyze_devices`; None for one device)."""

    trace: Trace
    input: TraceInput | None
    iterations: IterationAnalysis
    devices: tuple[DeviceAnalysis, ...] | None = None


#: Columns of :attr:`Analysis.iterations` besides the fields, in the document's order.
ITERATION_HEAD = ("index", "start_ns", "end_ns", "window_start_ns", "window_end_ns")
#: dtypes of the per-iteration columns (what :meth:`Analysis.from_json` restores).
ITERATION_DTYPES: dict[str, pl.DataType] = {
    **dict.fromkeys(ITERATION_HEAD, pl.Int64()),
    **{name: pl.Int64() if FIELDS[name].kind == "count" else pl.Float64() for name in NUMERIC_FIELDS},
    "synchronized": pl.Boolean(),
    "step_engine": pl.String(),
    "context_requests": pl.Int64(),
    "generation_requests": pl.Int64(),
}
#: Columns of :attr:`Analysis.longest_gaps`, in the document's order, with their dtypes.
LONGEST_GAP_DTYPES: dict[str, pl.DataType] = {
    "iteration": pl.Int64(),
    "start_ns": pl.Int64(),
    "end_ns": pl.Int64(),
    "position": GAP_POSITION,
    "duration_ns": pl.Int64(),
    "cpu_context": pl.String(),
    "cause": pl.String(),  # Enums: see _gap_cause_dtypes
    "host_state": pl.String(),
    "offset_ms": pl.Float64(),
    "duration_us": pl.Float64(),
}


def _step_class_dtype() -> pl.DataType:
    from tracekit.analyzers.steps import STEP_CLASS

    return STEP_CLASS


def _gap_cause_dtypes() -> dict[str, pl.DataType]:
    from tracekit.analyzers.attribution import GAP_CAUSE, HOST_STATE

    return {"cause": GAP_CAUSE, "host_state": HOST_STATE}


@dataclass(frozen=True, eq=False)
class Analysis:
    """One trace's analysis (module docstring). Units are in the names: ``*_ns`` integer nanoseconds, ``*_ms``
    milliseconds, ``*_us`` microseconds, utilization a fraction; except the frames of :attr:`ops` and
    :attr:`ranges`, whose time columns (``start``, ``end``, ``call_start``, ``call_end``; ``range_start``,
    ``range_end``, ``gpu_start``, ``gpu_end``) carry no unit in their names and are integer nanoseconds too.

    ``trace``: what was analyzed (:class:`TraceInfo`); ``config``: its configuration with the source and
    evidence of each value (:class:`tracekit.inputs.TraceConfig`); ``range_name`` / ``range_choice``: the
    iteration ranges and why they were chosen; ``skipped``: leading iterations dropped as warm-up;
    ``iterations``: one row per analyzed iteration (its range ``start_ns``/``end_ns``, its window
    ``window_start_ns``/``window_end_ns``, every field of :data:`tracekit.fields.ITERATION_FIELDS`,
    ``synchronized``, the serving-step columns of engine traces); ``summary``: statistics per field and the
    verdict; ``longest_gaps``: the longest idle gaps with their causes; ``unassigned_ops``: the device ops that
    count in no iteration (None: none); ``notes``: what some figures need said; ``step_classes``: the framework
    tax per serving-step class; ``per_device``: one summary row per GPU of a multi-GPU trace;
    ``attribution``: the idle time by cause (None without it); ``projection``: the CUDA-graph projection;
    ``no_verdict``: why there is no framework-/compute-bound verdict for want of evidence; ``session_setup``:
    set-up outside every iteration (ONNX Runtime); ``warnings``."""

    trace: TraceInfo
    config: TraceConfig
    range_name: str
    range_choice: str
    skipped: int
    iterations: pl.DataFrame
    summary: Summary
    longest_gaps: pl.DataFrame
    unassigned_ops: Mapping[str, Any] | None
    notes: tuple[str, ...]
    step_classes: tuple[Mapping[str, Any], ...] | None
    per_device: tuple[Mapping[str, Any], ...] | None
    attribution: IdleSummary | None
    projection: Projection | None
    warnings: tuple[str, ...]
    no_verdict: str | None = None
    session_setup: tuple[Mapping[str, Any], ...] = ()
    #: What the analysis was computed from (None for a loaded one): not serialized, not compared.
    source: Source | None = field(default=None, repr=False)

    # ------------------------------------------------------------------------------------------- reading

    @property
    def verdict(self) -> str | None:
        """ "framework" (framework-bound), "compute" or None: no device or operator activity, or no measured
        timeline (an Nsight Compute report alone); :attr:`no_verdict` says why."""
        return self.summary.bound

    @property
    def verdict_uncertain(self) -> str | None:
        """Why the verdict may be wrong (a "verdict uncertain: ..." text: clocks that disagree, setup calls,
        whole-microsecond rounding, exposed communication, device-side waits), or None when nothing is
        known against it."""
        return self.summary.verdict_uncertain

    @property
    def device(self) -> str:
        """ "gpu" or "cpu" (a CPU-only trace: the ops are CPU operators)."""
        return self.trace.device

    def _source(self, what: str) -> Source:
        if self.source is None:
            raise TracekitError(
                f"{what} needs the trace itself: this analysis was loaded from its JSON document; analyze the "
                "trace again (tracekit.analyze) for it",
                self.trace.path,
            )
        return self.source

    @property
    def measurement_warnings(self) -> tuple[str, ...]:
        """The warnings about the measurement itself (the reader's and the iteration analysis'), without those
        about identifying the run (runtime, precision: :func:`tracekit.inputs.inference_notes`); this
        process' analyses only."""
        return tuple(self._source("the measurement warnings").iterations.warnings)

    @property
    def trace_data(self) -> Trace:
        """The trace as read (this process' analyses only)."""
        return self._source("the trace").trace

    @property
    def ranges(self) -> pl.DataFrame:
        """Every chosen iteration range (``iteration``, ``range_start``, ``range_end``, ``thread``, ``pid``,
        ``name``, ``device``, ``gpu_start``, ``gpu_end``), warm-up included (this process' analyses only).
        ``range_start``, ``range_end``, ``gpu_start`` and ``gpu_end`` are integer nanoseconds on the trace's
        clock, as ``iterations``' ``start_ns`` / ``end_ns`` (a range's ``range_start`` / ``range_end`` are its
        iteration's ``start_ns`` / ``end_ns``)."""
        ranges = self._source("the ranges").iterations.ranges
        assert ranges is not None
        return ranges

    @property
    def gaps(self) -> pl.DataFrame:
        """Every idle gap of the analyzed iterations (``iteration``, ``start_ns``, ``end_ns``, ``position``,
        ``duration_ns``, ``cpu_context``; this process' analyses only)."""
        return self._source("every idle gap").iterations.gaps

    @cached_property
    def idle_gaps(self) -> pl.DataFrame:
        """Every idle gap with ``offset_ms`` (its start in ms after its iteration's window start) and, when the
        idle time was attributed, its causes (``cause``, ``host_state``, ``thread``, the ns of every cause:
        :meth:`~tracekit.analyzers.iterations.IterationAnalysis.gap_causes`; computed on first use; this
        process' analyses only)."""
        from tracekit.analyzers.iterations import with_gap_offsets

        source = self._source("every idle gap")
        gaps = source.iterations.gaps
        if source.iterations.attribution is not None:
            gaps = source.iterations.gap_causes(source.trace)
        return with_gap_offsets(gaps, self.iterations)

    @cached_property
    def ops(self) -> pl.DataFrame:
        """The trace's ops of the analyzed iterations with an ``iteration`` column and their launching call's
        ``call_start``/``call_end`` (:func:`tracekit.analyzers.iterations.assign_ops`; computed on first use;
        this process' analyses only). ``start``, ``end``, ``call_start`` and ``call_end`` are integer
        nanoseconds on the trace's clock, as ``iterations``' ``start_ns`` / ``end_ns``."""
        from tracekit.analyzers.iterations import assign_ops

        source = self._source("the ops")
        analyzed = self.iterations.get_column("index").implode()
        return assign_ops(source.trace, self.ranges).filter(pl.col("iteration").is_in(analyzed))

    # ------------------------------------------------------------------------------------------- document

    def to_json(self) -> dict[str, Any]:
        """The ``tracekit analyze --format json`` document (JSON-ready: numbers, strings, lists, dicts)."""
        idle = None
        if self.attribution is not None:
            idle = {"idle_attribution": self.attribution.to_json(self.projection)}
        return {
            "trace": self.trace.to_json(),
            "config": self.config.to_json(),
            "range": self.range_name,
            "range_choice": self.range_choice,
            "skipped": self.skipped,
            "iterations": self.iterations.to_dicts(),
            "summary": self.summary.to_json(),
            "longest_gaps": self.longest_gaps.with_columns(
                pl.col(pl.Enum, pl.Categorical).cast(pl.String)
            ).to_dicts(),
            "unassigned_ops": None if self.unassigned_ops is None else _plain(self.unassigned_ops),
            "notes": list(self.notes),
            **({"step_classes": _plain(self.step_classes)} if self.step_classes is not None else {}),
            **({"per_device": _plain(self.per_device)} if self.per_device is not None else {}),
            **(idle or {}),
            "warnings": list(self.warnings),
            **({"no_verdict": self.no_verdict} if self.no_verdict is not None else {}),
            **({"session_setup": _plain(self.session_setup)} if self.session_setup else {}),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Analysis:
        """The Analysis of a ``tracekit analyze --format json`` document (:meth:`to_json`'s inverse)."""
        try:
            idle = doc.get("idle_attribution")
            trace = TraceInfo.from_json(doc["trace"])
            return cls(
                trace=trace,
                config=TraceConfig.from_json(doc["config"], trace.path or ""),
                range_name=doc["range"],
                range_choice=doc["range_choice"],
                skipped=int(doc.get("skipped", 0)),
                iterations=_frame(doc["iterations"], _iteration_dtypes()),
                summary=_summary(doc["summary"]),
                longest_gaps=_frame(doc["longest_gaps"], {**LONGEST_GAP_DTYPES, **_gap_cause_dtypes()}),
                unassigned_ops=doc.get("unassigned_ops"),
                notes=tuple(doc.get("notes") or ()),
                step_classes=None if doc.get("step_classes") is None else tuple(doc["step_classes"]),
                per_device=None if doc.get("per_device") is None else tuple(doc["per_device"]),
                attribution=None if idle is None else IdleSummary.from_json(idle),
                projection=(
                    None
                    if idle is None or idle.get("cuda_graph_projection") is None
                    else Projection.from_json(idle["cuda_graph_projection"])
                ),
                warnings=tuple(doc.get("warnings") or ()),
                no_verdict=doc.get("no_verdict"),
                session_setup=tuple(doc.get("session_setup") or ()),
            )
        except (KeyError, TypeError, ValueError, AttributeError, pl.exceptions.PolarsError) as exc:
            # (a wrongly typed value: polars' error is several lines, the first says what)
            said = (str(exc).strip().splitlines() or [""])[0]
            raise TracekitError(f"not a tracekit analysis document ({type(exc).__name__}: {said})") from exc

    def __eq__(self, other: object) -> bool:
        """Field by field (frames by value, dtypes included); what the analysis was computed from
        (:attr:`source`) is not compared."""
        if not isinstance(other, Analysis):
            return NotImplemented
        for f in fields(self):
            if f.name == "source":
                continue
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, pl.DataFrame) or isinstance(theirs, pl.DataFrame):
                if not (
                    isinstance(mine, pl.DataFrame)
                    and isinstance(theirs, pl.DataFrame)
                    and mine.equals(theirs, null_equal=True)
                ):
                    return False
            elif not _same(_plain(mine), _plain(theirs)):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]


def load(path: str | Path) -> Analysis:
    """The Analysis saved in ``path`` (a ``tracekit analyze --format json`` document; gzipped when the file
    is). TracekitError (one line, naming the file) when it is not one."""
    import gzip

    path = Path(path)
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw)
    except OSError as exc:
        raise TracekitError(f"cannot read ({exc.strerror or exc})", path) from exc
    except ValueError as exc:
        raise TracekitError(f"not JSON ({exc})", path) from exc
    if not isinstance(doc, dict):
        raise TracekitError("not a tracekit analysis document (expected a JSON object)", path)
    try:
        return Analysis.from_json(doc)
    except TracekitError as exc:
        raise TracekitError(exc.message, path) from exc


def _iteration_dtypes() -> dict[str, pl.DataType]:
    return {**ITERATION_DTYPES, "step_class": _step_class_dtype()}


def _frame(rows: list[dict[str, Any]], dtypes: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Rows of a document as a frame with the known ``dtypes`` (columns in the rows' order)."""
    if not rows:
        return pl.DataFrame(schema=dict(dtypes))
    columns = list(rows[0])
    schema = {c: dtypes.get(c) for c in columns}
    frame = pl.DataFrame(
        rows,
        schema={c: (t if t is not None and not isinstance(t, pl.Enum) else None) for c, t in schema.items()},
        infer_schema_length=None,
    )
    enums = [pl.col(c).cast(t) for c, t in schema.items() if isinstance(t, pl.Enum)]
    return frame.with_columns(enums) if enums else frame


def _summary(doc: Mapping[str, Any]) -> Summary:
    """The inverse of :meth:`tracekit.analyzers.stats.Summary.to_json`."""
    skip = {"iterations", "bound", "bound_threshold", "synchronized", "verdict_uncertain"}
    return Summary(
        iterations=int(doc["iterations"]),
        fields={k: Stats(**v) for k, v in doc.items() if k not in skip},
        bound=doc.get("bound"),
        bound_threshold=float(doc["bound_threshold"]),
        synchronized=bool(doc.get("synchronized", True)),
        verdict_uncertain=doc.get("verdict_uncertain"),
    )


def _same(a: Any, b: Any) -> bool:
    """Equal plain values (:func:`_plain`), NaN equal to NaN (a NaN read back from JSON is the same value)."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and isinstance(a, bool) == isinstance(b, bool)


def _plain(value: Any) -> Any:
    """``value`` with mappings as dicts, tuples as lists and dataclasses as their fields (for comparison and
    JSON)."""
    from dataclasses import asdict, is_dataclass

    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


#: The step columns of engine traces, in the document's order (re-exported for the renderers).
__all__ = ["Analysis", "ITERATION_HEAD", "STEP_COLUMNS", "Source", "TraceInfo", "load"]
