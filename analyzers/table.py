"""The study's utilization table (its Table 3) across runtimes: one row per configuration.

Latency, busy and framework overhead are the **mean over iterations** of :mod:`tracekit.analyzers.iterations`
(after ``--skip``) and are *traced* latencies (measured with the profiler on; ``latency_source`` says so): every
analyzed iteration, as ``tracekit analyze``'s summary, where the report's traced mean leaves out the iterations
its stability rules drop (:mod:`tracekit.analyzers.stability`); a row's warning says so where that moves the mean
by more than 5%, or where the iterations are unstable (:func:`tracekit.analyzers.stability.spread_warning`).
``untraced_latency_ms`` is the latency of the same configuration timed without a profiler (run.json or the
sidecar; None when the trace has neither): the median after the stability rules with its 95% interval
(``untraced_ci_low``/``_high``) by report's and analyze's one rule
(:func:`tracekit.analyzers.profiler_cost.untraced_of`: recorded, else measured from the run's latency.csv,
else the recorded median/p50/mean without an interval): the number a published latency compares with.
SMs active and warp occupancy come from :mod:`tracekit.analyzers.utilization` with their source.
Runtime, batch size, sequence length and precision come from :class:`tracekit.inputs.TraceConfig`: run.json /
sidecar metadata, else inferred (:mod:`tracekit.analyzers.identify`); ``<key>_source`` says which and
``evidence`` what in the trace or its name says so; ``uncertain`` the inferred values that are not sure, with
their candidates (``{"batch_size": [32, 16]}``: two sources disagree and the value is None; ``[1, 32]`` with
source "varies by serving step": the lowest and highest; ``[32]``: the value's evidence may not mean it).
``empty_because``: why latency, busy, framework overhead and the wall-time SMs active / warp occupancy are
empty (an Nsight Compute report alone has no timeline). ``row``: the row's number (1-based, in the table's
order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracekit.analyzers.identify import INFERRED_SOURCES
from tracekit.analyzers.paper import (
    PAPER_CITATION,
    PAPER_SETUP,
    RUNTIME_ORDER,
    align_with_paper,
    paper_rows,
    runtime_traits,
)
from tracekit.errors import LEFT_OUT, TracekitError

if TYPE_CHECKING:
    from tracekit.analysis import Analysis
    from tracekit.inputs import TraceConfig, TraceInput
    from tracekit.session import AnalysisOptions

NCU_FORMATS = ("ncu-csv", "ncu-rep")
#: The profiler that wrote a trace, by the reader's format (a row's ``profiler``): two traces of one
#: configuration, e.g. under nsys and torch.profiler, give two rows that differ by it alone.
PROFILERS = {
    "nsys-sqlite": "nsys",
    "kineto": "torch.profiler",
    "ort": "ORT profiler",
    "ncu-csv": "ncu",
    "ncu-rep": "ncu",
}
#: Why an Nsight Compute report alone leaves latency, busy, overhead and the wall-time columns empty.
NCU_ALONE = (
    "Nsight Compute alone: no timeline (ncu replays each kernel by itself and records no start times), so no "
    "latency, busy, framework overhead or wall-time SMs active / warp occupancy; kernel-time averages only "
    "(--wide)"
)
#: What to add to fill them.
NCU_ALONE_FIX = (
    "add a timeline trace of the same configuration (nsys or torch.profiler: tracekit collect --profiler nsys "
    "--profiler ncu, or tracekit table TIMELINE --ncu REPORT)"
)
#: Start of :func:`tracekit.analyzers.utilization.kernel_time_only`'s own warning, replaced by the two above.
KERNEL_TIME_ONLY_WARNING = "Nsight Compute report without a timeline trace"

#: JSON/CSV row keys, in order.
ROW_KEYS = [
    "row",
    "runtime",
    "runtime_source",
    "runtime_evidence",
    "model",
    "batch_size",
    "batch_size_source",
    "seq_len",
    "seq_len_source",
    "precision",
    "precision_source",
    "device",
    "gpu",
    "profiler",
    "graph_compilation",
    "kernel_serialization",
    "iterations",
    "latency_ms",
    "latency_source",
    "untraced_latency_ms",
    "untraced_ci_low",
    "untraced_ci_high",
    "gpu_busy_ms",
    "framework_overhead_ms",
    "gpu_utilization",
    "sms_active",
    "sms_active_source",
    "sms_active_metric",
    "warp_occupancy",
    "warp_occupancy_source",
    "warp_occupancy_metric",
    "sms_active_kernel_time",
    "warp_occupancy_kernel_time",
    "kernel_time_source",
    "synthetic",
    "trace",
    "ncu_trace",
    "evidence",
    "uncertain",
    "empty_because",
]

#: Keys whose value may be inferred; the row says each one's source (``<key>_source``).
IDENTITY_KEYS = ("runtime", "batch_size", "seq_len", "precision")

#: Means over iterations copied from the typed summary into the row.
MEAN_FIELDS = ("latency_ms", "gpu_busy_ms", "framework_overhead_ms", "gpu_utilization")


def _untraced_center(stats: dict[str, Any] | None) -> float | None:
    """The untraced median of recorded statistics alone (a mapping: no latency.csv to fall back on), by the
    same rule as :func:`_untraced`: the stability rules' median where recorded, else the recorded
    median/p50/mean."""
    from tracekit.analyzers.profiler_cost import untraced_median_ms

    return untraced_median_ms(stats or None)


def _untraced(config: TraceConfig) -> Any:
    """The untraced latency a row shows (a :class:`tracekit.analyzers.stability.Measurement`, or None): report's
    and analyze's one rule, :func:`tracekit.analyzers.profiler_cost.untraced_of` (the median after the stability
    rules with its 95% interval, from the recorded statistics, else from the run's latency.csv, else the
    recorded median/p50/mean). Before round 17 a run recorded without the statistics showed its recorded mean
    (H200 eager b1: 4.464 ms, where analyze and report say 4.453)."""
    from tracekit.analyzers.profiler_cost import untraced_of

    return untraced_of(config, "cpu" if config.device == "cpu" else "gpu")


def _base_row(
    item: TraceInput, config: TraceConfig, meta: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    compilation, serialization = runtime_traits(config.runtime)
    untraced = _untraced(config)
    row: dict[str, Any] = dict.fromkeys(ROW_KEYS)
    row.update(
        runtime=config.runtime,
        model=config.model,
        batch_size=config.batch_size,
        seq_len=config.seq_len,
        precision=config.precision,
        device=config.device,
        gpu=meta.get("gpu") if config.device == "gpu" else None,
        profiler=PROFILERS.get(meta.get("format") or ""),
        graph_compilation=compilation,
        kernel_serialization=serialization,
        synthetic=config.synthetic,
        trace=str(item.path),
        ncu_trace=str(item.ncu) if item.ncu else None,
        untraced_latency_ms=None if untraced is None else untraced.median,
        # the 95% interval of the untraced median, where the rules give one (analyzers/stability.py)
        untraced_ci_low=None if untraced is None else untraced.ci_low,
        untraced_ci_high=None if untraced is None else untraced.ci_high,
        runtime_evidence=config.evidence.get("runtime"),
        evidence=dict(config.evidence),
        uncertain={k: list(v) for k, v in config.uncertain.items()} or None,
    )
    row.update({f"{key}_source": config.sources.get(key) for key in IDENTITY_KEYS})
    # what the rules say of the untraced median shown (an unstable set, its cause), as report says it
    warnings: list[str] = [
        f"untraced latency: {w}"
        for w in (() if untraced is None else untraced.warnings)
        if isinstance(w, str)
    ]
    if config.runtime is None and config.evidence.get("runtime"):
        # (the content names a runtime that none of tracekit's is: nvFuser's JIT)
        warnings.append(f"runtime unknown: {config.sources.get('runtime')} ({config.evidence['runtime']})")
    elif config.runtime is None:
        warnings.append(
            "runtime unknown: no run.json or sidecar metadata, and neither the trace content nor the file name "
            "says it"
        )
    elif compilation is None:
        warnings.append(
            f"unknown runtime {config.runtime!r}: graph compilation / kernel serialization not known"
        )
    return row, warnings


def table_row(item: TraceInput, options: AnalysisOptions) -> tuple[dict[str, Any], list[str]]:
    """One table row and its warnings (see the module docstring for what each value means); ``item.ncu``: an
    Nsight Compute trace of the same configuration, joined to the timeline."""
    from tracekit.analyzers.utilization import kernel_time_only
    from tracekit.inputs import TraceConfig
    from tracekit.model import ALL_FRAMES
    from tracekit.readers import read_trace
    from tracekit.session import analyze_trace

    # The Nsight Compute join checks each kernel's launch dimensions: the timeline's are read for it only.
    frames = ALL_FRAMES if item.ncu is not None else None
    trace = read_trace(item.path, frames=frames, fmt=item.format, sidecar=item.sidecar)
    if trace.meta.get("format") in NCU_FORMATS:
        # Nsight Compute alone: no timeline, so no latency and no wall-time figure.
        config = TraceConfig.resolve(item, trace.meta, trace.meta.get("device"), trace)
        row, warnings = _base_row(item, config, trace.meta)
        warnings += config.inference_warnings
        result = kernel_time_only(trace)
        row.update({k: v for k, v in result.fields().items() if "kernel_time" in k})
        row["empty_because"] = NCU_ALONE
        said = [w for w in result.warnings if not w.startswith(KERNEL_TIME_ONLY_WARNING)]
        if item.ncu is not None:  # (named, it had been ignored without a word)
            said.append(
                f"{item.ncu}: not joined: {item.path.name} is itself an Nsight Compute report, with no kernel "
                "timeline to join another to"
            )
        return row, [*warnings, *ncu_reader_warnings(trace), *said, f"{NCU_ALONE}; {NCU_ALONE_FIX}"]
    analyzed = analyze_trace(trace, item, options)
    ncu, failed = _read_ncu(item)
    if ncu is not None and (differ := ncu_mismatch(analyzed.config, trace.meta, ncu.meta)):
        # Per-kernel values of another configuration joined by position would be shown as this row's.
        ncu, failed = (
            None,
            TracekitError(
                f"{item.ncu}: its Nsight Compute report is of another configuration than the timeline "
                f"({'; '.join(differ)}), so its per-kernel values are not this run's"
            ),
        )
    row, warnings = analyzed_row(analyzed, item, ncu)
    if ncu is not None and not trace.ops.get_column("kind").eq("kernel").any():
        # (named, it had been ignored without a word)
        warnings.append(
            f"{item.ncu}: not joined: {item.path.name} holds no GPU kernel timeline (a CPU run), so its "
            "per-kernel values have no kernels to go to"
        )
    if failed is not None:
        # The timeline row stands without the join: its figures from the other sources, and the ncu file
        # left out like any input that cannot be read (a failure of the command: exit 1).
        row["ncu_trace"] = None
        shown = [
            f"{name} from {row[f'{column}_source']}" if row[f"{column}_source"] else f"no {name}"
            for column, name in (("sms_active", "SMs active"), ("warp_occupancy", "warp occupancy"))
        ]
        warnings.append(
            f"{LEFT_OUT}{failed}; the row of {item.path.name} is kept without it ({', '.join(shown)})"
        )
    return row, warnings + (ncu_reader_warnings(ncu, name=item.ncu.name) if ncu is not None else [])


#: What an Nsight Compute report and the timeline it is joined to must agree on, where both state it.
NCU_MATCH_KEYS = ("runtime", "model", "batch_size", "seq_len", "precision")


def ncu_mismatch(config: TraceConfig, timeline_meta: dict[str, Any], ncu_meta: dict[str, Any]) -> list[str]:
    """How an Nsight Compute report's stated configuration (its sidecar / run.json, and the GPU it ran on)
    differs from its timeline's: ``batch_size 1 (the timeline: 8)`` per key known on both sides."""
    pairs = [
        (key, getattr(config, key), ncu_meta.get(key))
        for key in NCU_MATCH_KEYS
        if config.sources.get(key) not in INFERRED_SOURCES  # a guess of the timeline's is no contradiction
    ]
    pairs.append(("gpu", timeline_meta.get("gpu"), ncu_meta.get("gpu")))
    return [
        f"{key.replace('_', ' ')} {theirs} (the timeline: {ours})"
        for key, ours, theirs in pairs
        if ours is not None and theirs is not None and str(ours).lower() != str(theirs).lower()
    ]


#: What ``--ncu FILE`` is when it is no Nsight Compute report (its detected format), as the refusal says it.
NOT_NCU_KINDS = {
    "kineto": "a Kineto trace",
    "nsys-sqlite": "an Nsight Systems SQLite export",
    "nsys-rep": "an Nsight Systems report",
    "ort": "an ONNX Runtime profile",
}


def _read_ncu(item: TraceInput) -> tuple[Any, TracekitError | None]:
    """(the Nsight Compute trace joined to ``item``'s timeline or None, why it could not be read or None). A file
    of another format (a timeline given to ``--ncu``) is no report: it had been joined, and said to hold no
    SM-activity or warp-occupancy metric."""
    from tracekit.readers import detect_format, read_trace

    if item.ncu is None:
        return None, None
    try:
        fmt = detect_format(item.ncu)
        if not fmt.startswith("ncu"):
            kind = NOT_NCU_KINDS.get(fmt, f"a {fmt} trace")
            raise TracekitError(
                f"not an Nsight Compute report ({kind}): --ncu takes an Nsight Compute CSV (ncu --csv --page "
                "raw) or .ncu-rep",
                item.ncu,
            )
        return read_trace(item.ncu), None
    except TracekitError as exc:
        return None, exc


#: The Nsight Compute reader's warning that its timeline is made up (the row says it as ``NCU_ALONE``).
NCU_TIMELINE_WARNING = "Nsight Compute records no kernel start times"


def ncu_reader_warnings(trace: Any, name: str | None = None) -> list[str]:
    """What the Nsight Compute reader said of ``trace`` (values it could not read or trust: durations,
    percentages out of range), but its timeline warning, which the row says otherwise; ``name``: the file,
    named when the report is joined to another trace's row."""
    said = [w for w in trace.meta.get("warnings", []) if not w.startswith(NCU_TIMELINE_WARNING)]
    return [f"{name}: {w}" for w in said] if name else said


def analyzed_row(analyzed: Analysis, item: TraceInput, ncu: Any = None) -> tuple[dict[str, Any], list[str]]:
    """The row of an analyzed timeline trace (``ncu``: its Nsight Compute trace, if any)."""
    from tracekit.analyzers.utilization import utilization
    from tracekit.inputs import INFERRED_NOTE

    row, warnings = _base_row(item, analyzed.config, analyzed.trace_data.meta)
    row["_range"] = analyzed.range_name  # (for the table's different-ranges warning; not a column)
    # The inferred values are in the row (and the table's legend), not repeated as a warning.
    warnings += [w for w in analyzed.warnings if not w.startswith(INFERRED_NOTE)]
    summary = analyzed.summary
    row["iterations"] = summary.iterations
    row.update({key: summary.mean(key) for key in MEAN_FIELDS})
    row["latency_source"] = "traced"
    result = utilization(analyzed, ncu)
    row.update(result.fields())
    return row, warnings + _latency_spread(analyzed) + result.warnings


def _latency_spread(analyzed: Analysis) -> list[str]:
    """The row's latency is the mean of every analyzed iteration (as analyze's): where the iterations the
    stability rules drop move it by more than 5%, or the set is unstable, one warning says so with the mean
    without them, the traced mean ``tracekit report`` shows (:func:`tracekit.analyzers.stability.spread_warning`);
    a slow start the analysis already names is left to its warning."""
    from tracekit.analyzers.iterations import SLOW_START_MARK
    from tracekit.analyzers.stability import slow_start, spread_warning

    frame = analyzed.iterations
    if frame.is_empty() or "latency_ms" not in frame.columns:
        return []
    latency = frame.get_column("latency_ms").to_list()
    said = slow_start(latency) if any(SLOW_START_MARK in w for w in analyzed.warnings) else 0
    text = spread_warning(latency, said=said, indices=frame.get_column("index").to_list())
    return [] if text is None else [text]


def row_label(row: dict[str, Any]) -> str:
    """``runtime b1 s128`` of a row (``onnx (inferred) b16``; the run directory and file when the runtime is
    unknown): :func:`tracekit.inputs.config_label`, the one label of a configuration."""
    from pathlib import Path

    from tracekit.analyzers.identify import FROM_CONTENT, FROM_NAME
    from tracekit.inputs import config_label

    runtime = row["runtime"]
    if runtime is not None:
        runtime += {FROM_CONTENT: " (inferred)", FROM_NAME: " (file name)"}.get(
            row.get("runtime_source") or "", ""
        )
    return config_label(runtime, row["batch_size"], row["seq_len"], Path(row["trace"]))


def _without_repeats(
    results: list[tuple[dict[str, Any], list[str]]],
) -> tuple[list[tuple[dict[str, Any], list[str]]], list[str]]:
    """``results`` with each trace file's first row only, and a warning for each repeat: the same file (by
    two paths, a link) or a byte-identical copy labelled the same configuration (its --ncu file, when another
    one, is said not to be joined). A copy labelled another configuration (run.json or sidecars saying two
    things of one recording) keeps both rows, with a warning."""
    from tracekit.io import BYTE_COPY, CONTENT_COPY, Recordings

    seen = Recordings()
    kept, warnings = [], []
    for row, row_warnings in results:
        first, how = seen.find(row.get("trace"))
        if (
            isinstance(first, dict)
            and how in (BYTE_COPY, CONTENT_COPY)
            and not all(first.get(k) == row.get(k) for k in IDENTITY_KEYS)
        ):
            warnings.append(
                f"{row['trace']} is "
                + (
                    "a byte-identical copy of"
                    if how == BYTE_COPY
                    else "the same recording, once inflated, as"
                )
                + f" {first['trace']} but labelled another "
                f"configuration ({row_label(row)}, not {row_label(first)}): one recording in two rows"
            )
            first = None
        if first is None:
            seen.add(row.get("trace"), row)
            kept.append((row, row_warnings))
            continue
        assert isinstance(first, dict)
        text = f"{row['trace']} is the same recording as {first['trace']} ({how}): counted once"
        if row.get("ncu_trace") and row.get("ncu_trace") != first.get("ncu_trace"):
            text += f"; its Nsight Compute trace {row['ncu_trace']} is not joined"
        warnings.append(text)
    return kept, warnings


def _range_warning(rows: list[dict[str, Any]], labels: list[str]) -> list[str]:
    """The warning when the rows' iterations are cut by different ranges ('iteration' against
    'ProfilerStep#*', or ONNX Runtime's 'model_run', which leaves out the Python call around ``Run()`` that a
    harness's 'iteration' holds): one row's iteration may be other work than another's, as ``analyze A B``,
    ``compare`` and report's sweeps say it (:func:`tracekit.analyzers.ranks.range_warning`). Rows of one
    window over a whole trace or of ``--split-idle`` windows are left out of it. Pops each row's ``_range``."""
    from tracekit.analyzers.ranks import IDLE_WINDOWS, WHOLE_WINDOW, range_warning

    cut = []
    for row, label in zip(rows, labels, strict=True):
        name = row.pop("_range", None)
        if name and name != WHOLE_WINDOW and not IDLE_WINDOWS.match(str(name)):
            cut.append({"range": name, "label": label})
    return range_warning(cut)


def build_table(
    results: list[tuple[dict[str, Any], list[str]]], left_out: list[str], paper: bool = False
) -> dict[str, Any]:
    """The ``tracekit table --format json`` document: {"rows", "warnings", "notes", ["paper"]}. A trace given
    more than once (the same path twice, a link to it, globs that overlap) is one row, with a warning naming
    each repeat: two identical rows would pass one measurement off as two."""
    rows: list[dict[str, Any]] = []
    results, repeats = _without_repeats(results)
    warnings: list[str] = [*left_out, *repeats]
    said: list[str] = []
    labels = [row_label(row) for row, _ in results]
    profilers: dict[str, set[str | None]] = {}
    for (row, _), label in zip(results, labels, strict=True):
        profilers.setdefault(label, set()).add(row.get("profiler"))
    shown: list[str] = []
    for (row, row_warnings), label in zip(results, labels, strict=True):
        rows.append(row)
        if len(profilers[label]) > 1 and row.get("profiler"):  # one label, several profilers: name each
            label += f" ({row['profiler']})"
        shown.append(label)
        for w in dict.fromkeys(row_warnings):
            if w.startswith(LEFT_OUT):
                warnings.append(w)  # an input of the row left out (its --ncu file): with the others
            else:
                said.append(f"{label}: {w}")
    warnings += said
    warnings += _range_warning(rows, shown)
    order = {name: i for i, name in enumerate(RUNTIME_ORDER)}
    rows.sort(
        key=lambda r: (
            order.get(r["runtime"] or "", len(order)),
            r["runtime"] or "",
            r["batch_size"] if r["batch_size"] is not None else -1,
            r["seq_len"] if r["seq_len"] is not None else -1,
        )
    )
    doc: dict[str, Any] = {
        "rows": rows,
        "warnings": warnings,
        "notes": [
            "latency_ms, gpu_busy_ms, framework_overhead_ms, gpu_utilization: mean over every analyzed traced "
            "iteration, as analyze's summary (traced latency: measured with the profiler on); report's traced "
            "mean leaves out the iterations its stability rules drop (warm-up drift, outliers), and a warning "
            "says so where that moves the mean by more than 5%",
            "sms_active, warp_occupancy: wall-time % (idle time counts), mean over iterations; "
            "*_kernel_time: Σ(kernel time × value) / Σ kernel time",
        ],
    }
    for i, row in enumerate(rows, start=1):
        row["row"] = i
    if any(r["synthetic"] for r in rows):
        doc["notes"].append("rows marked synthetic come from simulated traces, not measurements")
    if any(r.get(f"{k}_source") in INFERRED_SOURCES for r in rows for k in IDENTITY_KEYS):
        doc["notes"].append(
            "runtime / batch size / sequence length / precision without run.json or sidecar metadata are "
            "inferred from the trace content, else from hints in the file name (weaker); *_source says which "
            "and 'evidence' what says so"
        )
    if paper:
        published = [{**r, "device": "gpu", "latency_source": "published"} for r in paper_rows()]
        doc["paper"] = {
            "citation": PAPER_CITATION,
            "setup": PAPER_SETUP,
            "rows": published,
            "aligned": align_with_paper(rows),
        }
    return doc
