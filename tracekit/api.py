"""The public Python API: the same analysis as the command line, returning polars frames.

Example (a notebook)::

    import tracekit

    a = tracekit.analyze("trace.sqlite", range="iteration", skip=2)
    a.iterations          # polars DataFrame, one row per iteration (latency_ms, gpu_busy_ms, ...)
    a.summary.frame()     # per-field statistics (mean, p50, p90, p99, min, max)
    a.summary.mean("latency_ms")
    a.idle_gaps           # every idle gap, with offset_ms from its iteration's start
    a.verdict             # "framework", "compute" or None (a.no_verdict says why, when for want of a timeline)
    a.session_setup       # ONNX Runtime: model load / session initialization (ms), outside every iteration

    t = tracekit.read_trace("trace.sqlite")     # the normalized trace: t.ops, t.api, t.ranges, ...
    tracekit.table(["runs/pytorch", "runs/onnx"])   # the utilization table, one row per configuration
    tracekit.report(["runs/pytorch"]).sweeps        # plateau, transition, headroom per sweep
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from tracekit.model import Trace
    from tracekit.session import AnalyzedTrace

PathLike = str | Path


def _options(
    range: str | None, skip: int | None, bound_threshold: float, split_idle: float | None = None
) -> Any:
    from tracekit.commands.options import API_NAMES, check_option_values
    from tracekit.session import AnalysisOptions

    check_option_values(range, skip, bound_threshold, split_idle, API_NAMES)
    return AnalysisOptions(range, skip, bound_threshold, split_idle)


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
    skip: int | None = 0,
    bound_threshold: float = 0.5,
    split_idle: float | None = None,
) -> AnalyzedTrace:
    """Per-iteration framework-tax metrics of one trace (what ``tracekit analyze`` prints).

    ``range``: the range that delimits an iteration: a name, a glob (``"execute_*"``) or ``"re:REGEX"``
    (default: "iteration", else torch.profiler steps, else serving-engine steps, else the most frequent
    top-level range; a trace without ranges is one window); ``split_idle``: instead of ranges, cut the
    device timeline at idle gaps longer than this many ms; ``skip``: leading (warm-up) iterations to drop (None: the run's
    warm-up when the trace records it); ``bound_threshold``: framework-bound below this median utilization.

    >>> a = tracekit.analyze("sample_traces/synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite")
    >>> a.iterations.shape
    (10, 23)
    >>> a.verdict
    'framework'
    >>> round(a.summary.mean("gpu_utilization"), 3)
    0.156
    """
    from tracekit.session import analyze_input

    return analyze_input(Path(path), _options(range, skip, bound_threshold, split_idle))


def table(
    inputs: Sequence[PathLike], range: str | None = None, skip: int | None = None, paper: bool = False
) -> pl.DataFrame:
    """The utilization table (``tracekit table``): one row per configuration of the inputs (run directories
    or trace files). An input that cannot be analyzed among several is left out (with a warning, see
    :func:`warnings.warn`); alone, it raises TracekitError.

    >>> tracekit.table(["sample_traces/synthetic/table3_pytorch"]).select("runtime", "latency_ms").row(0)
    ('pytorch', 10.30...)
    """
    import warnings

    import polars as pl

    from tracekit.analyzers.table import ROW_KEYS, build_table, table_row
    from tracekit.commands.table import collect_inputs
    from tracekit.session import for_each_input

    options = _options(range, skip, 0.5)
    rows, left_out = for_each_input(
        collect_inputs([str(p) for p in inputs], []), lambda i: table_row(i, options)
    )
    doc = build_table(rows, left_out, paper)
    for w in doc["warnings"]:
        warnings.warn(w, stacklevel=2)
    frame = pl.DataFrame(doc["rows"], schema_overrides={"trace": pl.String}, infer_schema_length=None)
    return frame.select([k for k in ROW_KEYS if k in frame.columns])


@dataclass
class Report:
    """``tracekit report``'s data: ``configs`` (one row per configuration), ``sweeps`` (plateau, transition,
    headroom per runtime and sequence length), ``recommendations`` (kind, text, numbers) and ``warnings``."""

    configs: pl.DataFrame
    sweeps: pl.DataFrame
    recommendations: list[dict[str, Any]]
    warnings: list[str]


def report(
    inputs: Sequence[PathLike],
    range: str | None = None,
    skip: int | None = None,
    bound_threshold: float = 0.5,
    plateau_tolerance: float = 0.10,
) -> Report:
    """The sweep report (``tracekit report``) without its files and figures.

    >>> r = tracekit.report(["sample_traces/synthetic/sweep_pytorch"])
    >>> r.sweeps.select("runtime", "transition_batch_size").row(0)
    ('pytorch', 32)
    """
    import polars as pl

    from tracekit.analyzers.report import CONFIG_COLUMNS, build_report, config_row
    from tracekit.renderers.recommendations import describe
    from tracekit.runs import expand_inputs
    from tracekit.session import analyze_input, for_each_input

    options = _options(range, skip, bound_threshold)
    items = expand_inputs([Path(p) for p in inputs])
    rows, left_out = for_each_input(items, lambda item: config_row(analyze_input(item, options)))
    built = build_report(rows, plateau_tolerance, bound_threshold)
    doc = built.to_json(describe)
    configs = pl.DataFrame(doc["configs"], infer_schema_length=None).select(CONFIG_COLUMNS)
    return Report(
        configs,
        pl.DataFrame(doc["sweeps"], infer_schema_length=None),
        doc["recommendations"],
        left_out + built.warnings,
    )
