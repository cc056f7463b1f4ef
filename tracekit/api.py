"""The public Python API: the same analyses as the command line (which is a thin layer over these functions:
argument parsing and output only), returning typed results and polars frames.

Example (a notebook)::

    import tracekit

    a = tracekit.analyze("trace.sqlite")       # the CLI's defaults: range rules, the recorded warm-up dropped
    a.iterations          # polars DataFrame, one row per iteration (latency_ms, gpu_busy_ms, ...)
    a.summary.frame()     # per-field statistics (mean, p50, p90, p99, min, max)
    a.summary.mean("latency_ms")
    a.idle_gaps           # every idle gap, with offset_ms from its iteration's start and its cause
    a.verdict             # "framework", "compute" or None (a.no_verdict says why, when for want of a timeline)
    a.config.runtime, a.config.sources["runtime"]   # what produced the trace, and how that is known
    a.to_json()           # == `tracekit analyze --format json`; tracekit.load("analysis.json") == a

    t = tracekit.read_trace("trace.sqlite")     # the normalized trace: t.ops, t.api, t.ranges, ...
    tracekit.table(["runs/pytorch", "runs/onnx"])   # the utilization table, one row per configuration
    tracekit.report(["runs/pytorch"]).sweeps        # plateau, transition, headroom per sweep
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit.analyzers.sweep import FRAMEWORK_BOUND_UTILIZATION, PLATEAU_TOLERANCE
from tracekit.errors import TracekitError
from tracekit.session import EVERYTHING, AnalysisOptions, analyze_input, for_each_input

if TYPE_CHECKING:
    import polars as pl

    from tracekit.analysis import Analysis
    from tracekit.inputs import TraceInput
    from tracekit.model import Trace

PathLike = str | Path
#: The options object of every analysis (:class:`tracekit.session.AnalysisOptions`).
Options = AnalysisOptions

__all__ = [
    "EVERYTHING",
    "Options",
    "Report",
    "analyze",
    "analyze_input",
    "analyze_many",
    "compare",
    "load",
    "read_trace",
    "report",
    "report_data",
    "resolve_input",
    "resolve_inputs",
    "table",
    "table_document",
]


def resolve_input(path: PathLike, begin: bool = False) -> TraceInput:
    """One trace file as an input (:func:`tracekit.inputs.resolve_input`)."""
    from tracekit.inputs import resolve_input as _resolve

    return _resolve(path, begin)


def cache_folder(cache_dir: PathLike) -> Path:
    """The ``--cache`` folder, created if needed; TracekitError, one line naming it, when it cannot be used
    (:func:`tracekit.fleet.cache.cache_folder`)."""
    from tracekit.fleet.cache import cache_folder as _folder

    return _folder(cache_dir)


def in_cache(path: PathLike, cache_dir: PathLike) -> bool:
    """Whether the cache folder already holds the trace ``path`` (:func:`tracekit.fleet.cache.has_entry`)."""
    from tracekit.fleet.cache import has_entry

    return has_entry(path, cache_dir)


def holds_no_trace(path: PathLike) -> bool:
    """Whether ``path`` is plainly a JSON document that is not a trace (:func:`tracekit.readers.holds_no_trace`):
    what a folder of runs holds beside its traces."""
    from tracekit.readers import holds_no_trace as _no_trace

    return _no_trace(path)


def resolve_inputs(paths: Sequence[PathLike], ncu: Sequence[PathLike] = ()) -> list[TraceInput]:
    """Run directories and trace files as inputs (:func:`tracekit.inputs.resolve_inputs`)."""
    from tracekit.inputs import resolve_inputs as _resolve

    return _resolve(paths, ncu)


def read_trace(path: PathLike) -> Trace:
    """Read a trace (Nsight Systems SQLite, Kineto JSON(.gz), ONNX Runtime profile, ncu CSV/report) into
    the normalized model: polars frames ``ops``, ``api``, ``ranges``, ``gpu_metrics``, ``kernel_metrics``
    and ``meta``.

    >>> t = tracekit.read_trace("sample_traces/synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite")
    >>> t.ops.columns[:3]
    ['start', 'end', 'device']
    """
    from tracekit.readers import read_trace as _read

    return _read(path)


def analyze(
    path: PathLike,
    range: str | None = None,
    skip: int | None = None,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
    split_idle: float | None = None,
    cache: PathLike | None = None,
) -> Analysis:
    """Per-iteration framework-tax metrics of one trace: exactly what ``tracekit analyze`` prints, with the
    same defaults (:class:`tracekit.session.AnalysisOptions`).

    ``range``: the range that delimits an iteration: a name, a glob (``"execute_*"``) or ``"re:REGEX"``
    (default: "iteration", else torch.profiler steps, else serving-engine steps, else the most frequent
    top-level range; a trace without ranges is one window); ``split_idle``: instead of ranges, cut the
    device timeline at idle gaps longer than this many ms; ``skip``: leading (warm-up) iterations to drop (None:
    the run's warm-up when the trace records it, as the command line does); ``bound_threshold``:
    framework-bound below this median utilization; ``cache``: a folder for the trace's normalized frames
    (``--cache DIR``: Parquet keyed by the file's content hash and the reader's version), so that analyzing
    it again, with these or other options, reads them instead of the trace (TracekitError, one line, when
    the folder cannot be used).

    >>> a = tracekit.analyze("sample_traces/synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite")
    >>> a.iterations.shape
    (10, 23)
    >>> a.verdict
    'framework'
    >>> round(a.summary.mean("gpu_utilization"), 3)
    0.156
    """
    options = AnalysisOptions.from_kwargs(range, skip, bound_threshold, split_idle)
    if Path(path).is_dir():
        raise TracekitError(_folder_given(Path(path)), path)
    if cache is not None:
        cache = cache_folder(cache)
    return analyze_input(Path(path), options, cache_dir=cache)


def _folder_given(folder: Path) -> str:
    """What :func:`analyze` says of a folder (one trace is what it takes): the calls that take a folder (a run
    folder, with run.json: ``analyze_many``, ``table``, ``report``; any other: ``analyze_many``, as
    ``tracekit analyze FOLDER`` takes it), and the first traces it holds."""
    from tracekit.commands.analyze_many import expand

    run = True
    try:
        names = [item.path.name for item in resolve_inputs([folder])]
    except TracekitError:
        run = False
        try:
            names = [Path(p).name for p in expand([str(folder)])[0]]
        except TracekitError:
            names = []
    if not names:
        return "is a directory holding no trace tracekit reads: tracekit.analyze takes one trace file"
    calls = (
        "tracekit.analyze_many([folder]) (the cross-trace summary), tracekit.table([folder]) or "
        "tracekit.report([folder])"
        if run
        else "tracekit.analyze_many([folder]) (the cross-trace summary)"
    )
    return (
        f"is a directory: tracekit.analyze takes one trace; for every trace of the folder call {calls}; its "
        f"traces: {', '.join(names[:3])}{', ...' if len(names) > 3 else ''} (tracekit.analyze(one of them))"
    )


def load(path: PathLike) -> Analysis:
    """The Analysis saved as a ``tracekit analyze --format json`` document (:func:`tracekit.analysis.load`):
    equal to the one that wrote it."""
    from tracekit.analysis import load as _load

    return _load(path)


# ------------------------------------------------------------------------------------------- table


def table_document(
    inputs: Sequence[PathLike],
    options: AnalysisOptions | None = None,
    ncu: Sequence[PathLike] = (),
    paper: bool = False,
) -> dict[str, Any]:
    """The ``tracekit table --format json`` document: one row per configuration of the inputs (run directories
    or trace files; ``ncu``: Nsight Compute traces to join to them), the warnings (an input that cannot be
    analyzed among several is left out with one), and with ``paper`` the study's published table beside."""
    from tracekit.analyzers.table import build_table, table_row
    from tracekit.errors import TracekitError

    options = options or AnalysisOptions()
    items = resolve_inputs(inputs, ncu)
    if not items:
        raise TracekitError("no successful configurations with a trace in the inputs")
    rows, left_out = for_each_input(items, lambda item: table_row(item, options))
    return build_table(rows, left_out, paper)


def table(
    inputs: Sequence[PathLike], range: str | None = None, skip: int | None = None, paper: bool = False
) -> pl.DataFrame:
    """The utilization table (``tracekit table``): one row per configuration of the inputs (run directories
    or trace files). An input that cannot be analyzed among several is left out (with a warning, see
    :func:`warnings.warn`); alone, it raises TracekitError.

    Columns (:mod:`tracekit.analyzers.table` defines each; None: not known, or not measured). Units are in
    the names (``*_ms`` milliseconds) except where said here:

    - ``row`` (1-based); what ran: ``runtime``, ``model``, ``batch_size``, ``seq_len``, ``precision`` (each
      with ``<key>_source``: run.json, sidecar or inferred; ``evidence``, ``runtime_evidence``, ``uncertain``),
      ``device`` ("gpu" or "cpu"), ``gpu``, ``profiler``, ``graph_compilation``, ``kernel_serialization``,
      ``synthetic``, ``trace``, ``ncu_trace``;
    - ``iterations``: how many were analyzed (a count); ``latency_ms``, ``gpu_busy_ms``,
      ``framework_overhead_ms``: means over them, traced (``latency_source``); ``gpu_utilization``: the mean
      of each iteration's busy / latency, a fraction (0..1);
    - ``untraced_latency_ms``: the latency timed without a profiler (run.json or sidecar), its median, with
      ``untraced_ci_low`` / ``untraced_ci_high`` its 95% interval in ms;
    - ``sms_active``, ``warp_occupancy``: wall-time means over the iterations, in percent (0..100), with
      ``*_source`` and ``*_metric``; ``sms_active_kernel_time``, ``warp_occupancy_kernel_time``: averages
      over kernel time only (Nsight Compute, else the profiler's estimate), in percent, from
      ``kernel_time_source``; ``empty_because``: why the timeline columns are empty (an ncu report alone).

    >>> tracekit.table(["sample_traces/synthetic/table3_pytorch"]).select("runtime", "latency_ms").row(0)
    ('pytorch', 10.30...)
    """
    import warnings

    import polars as pl

    from tracekit.analyzers.table import ROW_KEYS

    doc = table_document(inputs, AnalysisOptions.from_kwargs(range, skip), paper=paper)
    for w in doc["warnings"]:
        warnings.warn(w, stacklevel=2)
    frame = pl.DataFrame(doc["rows"], schema_overrides={"trace": pl.String}, infer_schema_length=None)
    return frame.select([k for k in ROW_KEYS if k in frame.columns])


# ------------------------------------------------------------------------------------------- compare


def _pair_label(item: TraceInput) -> str:
    parts = []
    if item.batch_size is not None:
        parts.append(f"batch {item.batch_size}")
    if item.seq_len is not None:
        parts.append(f"seq {item.seq_len}")
    return ", ".join(parts) or item.path.name


def _config_key(item: TraceInput) -> tuple[int | None, int | None]:
    return (item.batch_size, item.seq_len)


def _config_text(key: tuple[int | None, int | None]) -> str:
    batch, seq = key
    return f"batch {'?' if batch is None else batch}, seq {'?' if seq is None else seq}"


def pair_inputs(
    a: list[TraceInput], b: list[TraceInput]
) -> tuple[list[tuple[str, TraceInput, TraceInput]], list[str]]:
    """(label, input A, input B) pairs -- the two traces, or configurations matched on (batch size, seq
    len) -- and one note per input left unpaired: a configuration on one side only, or one that several inputs
    of a side share (traces without a stated configuration, all "batch ?, seq ?"), which cannot be matched
    to one partner and is not compared rather than compared with an arbitrary one."""
    from tracekit.errors import TracekitError

    if len(a) == 1 and len(b) == 1:
        la, lb = _pair_label(a[0]), _pair_label(b[0])
        return [(f"{la} vs {lb}" if la != lb else la, a[0], b[0])], []

    def by_key(side: list[TraceInput]) -> dict[tuple[int | None, int | None], list[TraceInput]]:
        out: dict[tuple[int | None, int | None], list[TraceInput]] = {}
        for x in side:
            out.setdefault(_config_key(x), []).append(x)
        return out

    keys_a, keys_b = by_key(a), by_key(b)
    pairs: list[tuple[str, TraceInput, TraceInput]] = []
    notes: list[str] = []
    for key, xs in keys_a.items():
        ys = keys_b.get(key, [])
        if len(xs) == 1 and len(ys) == 1:
            pairs.append((_pair_label(xs[0]), xs[0], ys[0]))
        elif len(xs) > 1 or len(ys) > 1:
            names = (
                ", ".join(x.path.name for x in xs)
                + " against "
                + (", ".join(y.path.name for y in ys) or "none")
            )
            notes.append(
                f"not compared: {_config_text(key)}: {len(xs)} input(s) of A and {len(ys)} of B share this "
                f"configuration ({names}), so none can be matched to one partner; give each trace its "
                "configuration (run.json or a .meta.json sidecar) or compare the files two at a time"
            )
        else:
            notes.append(
                f"not compared: {_config_text(key)} is only in A ({xs[0].path.name}): B has no configuration like it"
            )
    for key, ys in keys_b.items():
        if key not in keys_a:
            notes.append(
                f"not compared: {_config_text(key)} is only in B ({', '.join(y.path.name for y in ys)}): A has "
                "no configuration like it"
            )
    if not pairs:
        have_a = sorted(keys_a, key=str)
        have_b = sorted(keys_b, key=str)
        raise TracekitError(
            f"no configuration (batch size, seq len) in both A {have_a} and B {have_b} that pairs one trace "
            "with one"
        )
    return pairs, notes


def compare(
    a: PathLike, b: PathLike, options: AnalysisOptions | None = None, top: int = 15
) -> dict[str, Any]:
    """The ``tracekit compare A B --format json`` document: two traces, or two run directories configuration
    by configuration (matched on batch size and sequence length), side by side with per-kernel deltas
    (:func:`tracekit.analyzers.compare.compare`; deltas are B - A); ``top`` kernel names are shown (0: all).
    A pair that cannot be analyzed among several is left out with a warning, and so is each input that no
    input of the other side pairs with (:func:`pair_inputs`)."""
    from tracekit.analyzers.compare import compare as compare_pair
    from tracekit.errors import TracekitError

    if top < 0:
        raise TracekitError("--top must be >= 0")
    options = options or AnalysisOptions()
    inputs_a, inputs_b = resolve_inputs([a]), resolve_inputs([b])
    if not inputs_a or not inputs_b:
        raise TracekitError("no traces in " + str(a if not inputs_a else b))

    def step(pair: tuple[str, TraceInput, TraceInput]) -> dict[str, Any]:
        label, xa, xb = pair
        return compare_pair(
            analyze_input(xa, options, EVERYTHING), analyze_input(xb, options, EVERYTHING), label
        )

    pairs, unpaired = pair_inputs(inputs_a, inputs_b)
    results, left_out = for_each_input(pairs, step)
    return {"a": str(a), "b": str(b), "top": top, "comparisons": results, "warnings": [*unpaired, *left_out]}


# ------------------------------------------------------------------------------------------- report


@dataclass
class Report:
    """``tracekit report``'s data: ``configs`` (one row per configuration), ``sweeps`` (plateau, transition,
    headroom per runtime and sequence length), ``recommendations`` (kind, text, numbers) and ``warnings``.

    :mod:`tracekit.analyzers.report` defines every column. Units are in the names (``*_ms`` milliseconds,
    ``*_us`` microseconds, ``throughput_per_s`` samples per second); the others:

    - ``configs``: ``iterations`` analyzed, ``skipped_iterations`` (warm-up), ``latency_iterations`` /
      ``latency_dropped`` / ``traced_kept_iterations`` kept and dropped by the stability rules (counts);
      ``latency_ms`` is a median (untraced when the run timed it, ``latency_source``), ``latency_ci_low`` /
      ``latency_ci_high`` its 95% interval (ms), ``latency_cv`` its coefficient of variation (a fraction);
      ``profiler_ratio``: traced / untraced median latency (a ratio); ``gpu_busy_ms``,
      ``framework_overhead_ms``, the idle causes and ``gpu_utilization`` (a fraction, 0..1) are means over
      the kept traced iterations, ``framework_overhead_fraction`` = framework_overhead_ms / traced_latency_ms
      (0..1); ``kernels``, ``launches``, ``idle_gaps``: mean counts per iteration; ``latency_vs_smallest``
      (with ``_low`` / ``_high``): latency_ms over the smallest batch size's (a ratio);
      ``throughput_per_s``: batch size / latency;
    - ``sweeps`` (lists follow ``batch_sizes``): ``latency_ms`` and ``latency_ci_low`` / ``_high`` (ms),
      ``plateau``, ``transition_batch_size`` with ``transition_latency_ratio`` (its latency over the smallest
      batch's), ``headroom_batch_size`` with ``headroom_latency_ratio`` and ``headroom_throughput_gain`` (its
      throughput over the smallest batch's): ratios, each with ``_low`` / ``_high``."""

    configs: pl.DataFrame
    sweeps: pl.DataFrame
    recommendations: list[dict[str, Any]]
    warnings: list[str]


def _pick_timeline(inputs: list[TraceInput], wanted: tuple[str, int, int | None] | None) -> int | None:
    """Index of the input drawn in the timeline: ``wanted`` (runtime, batch, seq or None), else the smallest
    batch of the first runtime."""
    from tracekit.errors import TracekitError

    known = [(i, x) for i, x in enumerate(inputs) if x.runtime is not None and x.batch_size is not None]
    if wanted is None:
        if not known:
            return 0 if inputs else None
        first = known[0][1].runtime
        same = [(x.batch_size, x.seq_len or 0, i) for i, x in known if x.runtime == first]
        return min(same)[2]
    runtime, batch, seq = wanted
    for i, x in known:
        if x.runtime == runtime and x.batch_size == batch and (seq is None or x.seq_len == seq):
            return i
    choices = ", ".join(sorted({f"{x.runtime}:{x.batch_size}:{x.seq_len}" for _, x in known}))
    raise TracekitError(f"--timeline-config {runtime}:{batch}: no such configuration (have {choices})")


def report_data(
    inputs: Sequence[PathLike],
    options: AnalysisOptions | None = None,
    plateau_tolerance: float = PLATEAU_TOLERANCE,
    timeline: tuple[str, int, int | None] | None = None,
    timeline_iterations: int = 3,
    figures: bool = True,
) -> tuple[Any, Any, list[str]]:
    """Every input analyzed into the sweep report: (:class:`tracekit.analyzers.report.SweepReport`, the
    :class:`tracekit.analyzers.report.Timeline` of one configuration or None, the inputs-left-out warnings).
    ``timeline``: the configuration drawn (runtime, batch size, sequence length or None; default: the smallest
    batch of the first runtime), over ``timeline_iterations`` iterations; ``figures`` False: no timeline."""
    from tracekit.analyzers.report import build_report, build_timeline, config_row
    from tracekit.errors import TracekitError

    options = options or AnalysisOptions()
    if not 0 <= plateau_tolerance <= 1:  # NaN too; the command line refuses it before (commands/report.py)
        percent = ", not a percent" if 1 < plateau_tolerance < float("inf") else ""
        raise TracekitError(
            f"plateau_tolerance: a fraction (0.10 = 10%){percent}: must be between 0 and 1, not {plateau_tolerance}"
        )
    items = resolve_inputs(inputs)
    if not items:
        raise TracekitError("no traces in the inputs (run directories with no successful configuration?)")
    timeline_index = _pick_timeline(items, timeline)
    timelines: list[Any] = []

    def step(numbered: tuple[int, TraceInput]) -> dict[str, Any]:
        i, item = numbered
        analyzed = analyze_input(item, options, EVERYTHING)
        row = config_row(analyzed)
        measured = analyzed.trace.format not in ("ncu-csv", "ncu-rep")  # ncu lays kernels back to back itself
        if i == timeline_index and figures and analyzed.iterations.height and measured:
            where = ", ".join(
                [str(row["runtime"] or "unknown runtime")]
                + [
                    f"{word} {row[key]}"
                    for word, key in (("batch", "batch_size"), ("seq", "seq_len"))
                    if row[key] is not None
                ]
            )
            synthetic = " (synthetic)" if row["synthetic"] else ""
            count = max(1, timeline_iterations)
            timelines.append(build_timeline(analyzed, count, title=f"Timeline of {where}{synthetic}"))
        return row

    rows, left_out = for_each_input(list(enumerate(items)), step)
    skip_setting = options.skip if options.skip is not None else "auto (the run's warm-up iterations)"
    settings = {"range": options.range_name, "skip": skip_setting, "inputs": [str(p) for p in inputs]}
    built = build_report(rows, plateau_tolerance, options.bound_threshold, settings)
    built.warnings[:0] = left_out
    return built, (timelines[0] if timelines else None), left_out


def report(
    inputs: Sequence[PathLike],
    range: str | None = None,
    skip: int | None = None,
    bound_threshold: float = FRAMEWORK_BOUND_UTILIZATION,
    plateau_tolerance: float = PLATEAU_TOLERANCE,
) -> Report:
    """The sweep report (``tracekit report``) without its files and figures.

    >>> r = tracekit.report(["sample_traces/synthetic/sweep_pytorch"])
    >>> r.sweeps.select("runtime", "transition_batch_size").row(0)
    ('pytorch', 32)
    """
    import polars as pl

    from tracekit.analyzers.report import CONFIG_COLUMNS
    from tracekit.renderers.recommendations import describe

    options = AnalysisOptions.from_kwargs(range, skip, bound_threshold)
    built, _, _ = report_data(inputs, options, plateau_tolerance, figures=False)
    doc = built.to_json(describe)
    configs = pl.DataFrame(doc["configs"], infer_schema_length=None).select(CONFIG_COLUMNS)
    return Report(
        configs,
        pl.DataFrame(doc["sweeps"], infer_schema_length=None),
        doc["recommendations"],
        list(built.warnings),
    )


# ------------------------------------------------------------------------------------------- many traces


def analyze_many(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    options: AnalysisOptions | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    on_done: Callable[[Any], None] | None = None,
    *,
    range: str | None = None,
    skip: int | None = None,
    bound_threshold: float | None = None,
    split_idle: float | None = None,
) -> dict[str, Any]:
    """One analysis per trace (files or fsspec URLs; serially, in ``jobs`` worker processes, or on the Dask
    cluster at ``scheduler``: :func:`tracekit.fleet.run.analyze_many`), then the cross-trace document
    (:func:`tracekit.analyzers.ranks.summarize`): what ``tracekit analyze A B ... --format json`` writes, as
    plain Python values (no numpy scalars). ``paths``: one path or several; folders and globs are expanded as
    the command line does (:func:`tracekit.commands.analyze_many.expand`: the trace files in a folder,
    recursively). The options are :func:`analyze`'s keywords (``range``, ``skip``, ``bound_threshold``,
    ``split_idle``), or ``options`` (an :data:`Options`), not both; ``cache_dir``: ``--cache DIR``.
    ``on_done`` is called with each trace's outcome as it finishes. TracekitError when no trace is given, or
    none could be analyzed (with the first one's error).

    The document (units in the names: ``*_ms`` milliseconds, ``*_us`` microseconds, ``*_ns`` nanoseconds;
    docs/design.md, "Many traces", defines each figure). A figure that cannot be given is absent or carries
    ``why`` instead, and a warning says so:

    - ``rows``: one per trace (``gpu_rows``: one per GPU of a multi-GPU trace, with ``of_trace`` and
      ``device_id``): ``trace`` (its label: ``rank N``, else the file name), ``file``, ``rank``, ``gpu``,
      ``device``, ``range``, ``iterations`` (analyzed), ``median_latency_ms``; the means over the iterations
      whose value is known of ``mean_latency_ms``, ``mean_gpu_busy_ms``, ``mean_framework_overhead_ms``,
      ``mean_gpu_utilization`` (a fraction, 0..1), the idle time by cause (``mean_dispatch_ms``,
      ``mean_launch_ms``, ``mean_sync_ms``, ``mean_other_api_ms``, ``mean_in_flight_ms``),
      ``mean_comm_ms`` / ``mean_exposed_comm_ms`` (communication kernels, and the part of them no
      computation overlaps; None: no communication kernel in the trace); ``verdict`` and
      ``verdict_uncertain`` (a bool: the why is among the warnings), ``synthetic``;
    - ``traces``: how many rows; ``failed``: ``path`` and one-line ``error`` of each trace not analyzed;
      ``warnings``: each trace's measurement warnings (named) and what was not compared, and why;
    - ``spread``: ``slowest`` / ``fastest`` trace by median latency, ``slowest_median_latency_ms`` /
      ``fastest_median_latency_ms``, and ``ratio`` (slowest / fastest); where the traces hold other steps,
      over the ``steps`` numbered alike (``on_steps``);
    - ``clocks``: ``aligned``, ``offsets_ns`` (each trace's clock minus the reference's, ns), ``residual_us``
      (the largest disagreement left, µs), ``matched`` (collectives), ``method``, ``reference``, ``why``;
    - ``straggler`` (only with aligned clocks): the trace that arrives last at the most collectives,
      ``arrives_last`` of ``collectives``, ``median_wait_ms`` / ``total_wait_ms`` (what the others wait for it),
      ``arrives_last_by_trace``;
    - ``skew`` (only with aligned clocks): ``median_start_skew_ms`` / ``max_start_skew_ms`` of the step starts
      over ``steps`` common steps;
    - ``slowest_by_step``: the trace with the longest iteration most often (``slowest``, ``slowest_steps`` of
      ``steps``; durations only, no clock needed).
    """
    from tracekit.analyzers.ranks import summarize
    from tracekit.commands.analyze_many import expand
    from tracekit.errors import TracekitError
    from tracekit.fleet.run import analyze_many as run_all

    keywords = {"range": range, "skip": skip, "bound_threshold": bound_threshold, "split_idle": split_idle}
    given = {k: v for k, v in keywords.items() if v is not None}
    if options is not None and not isinstance(options, AnalysisOptions):
        raise TracekitError(
            f"options: an Options (tracekit.api.Options), not {type(options).__name__}; or pass "
            "range=, skip=, bound_threshold=, split_idle= as keywords"
        )
    if options is not None and given:
        raise TracekitError(f"give either options or the keywords ({', '.join(given)}), not both")
    if options is None:
        threshold = FRAMEWORK_BOUND_UTILIZATION if bound_threshold is None else bound_threshold
        options = AnalysisOptions.from_kwargs(range, skip, threshold, split_idle)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]  # one path, not its characters
    if not paths:
        raise TracekitError("no traces to analyze: give analyze_many one path or several")
    paths, _ = expand([os.fspath(p) for p in paths])

    outcomes = run_all(
        paths,
        options,
        jobs=jobs,
        scheduler=scheduler,
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
        on_done=on_done,
    )
    results = [o.result for o in outcomes if o.ok and o.result is not None]
    if not results:
        first = next((o for o in outcomes if not o.ok), None)
        why = f" (the first: {first.error})" if first is not None else ""  # (the error names its file)
        raise TracekitError(f"none of the {len(paths)} traces could be analyzed{why}")
    doc = summarize(results)
    doc["failed"] = [{"path": o.path, "error": o.error} for o in outcomes if not o.ok]
    return _plain(doc)


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars as the Python numbers they hold (a notebook shows ``0.006``, not
    ``np.float64(0.006)``; ``type(x) is float`` holds), in dicts and lists; anything else as it is."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    item = getattr(value, "item", None)
    if item is not None and type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        return item()
    return value
