"""What the profiler itself cost a traced run, from the same configuration timed without it.

``tracekit collect`` times every configuration twice: untraced (no profiler: run.json's
``untraced_latency_ms``) and traced (the trace analyzed here). A profiler slows the host (Nsight Systems'
OS-runtime and CUDA API tracing, torch.profiler's operator records), and that slowdown lands in the trace's
idle gaps: it reads as framework overhead, and can make a compute-bound run look framework-bound. On an H200,
TorchScript BERT-base at batch 1 ran in 2.106 ms untraced (median) and 7.347 ms under nsys: 5.2 ms of the
6.85 ms "framework overhead" the trace shows was the profiler's.

:func:`findings` compares the analyzed iterations' median latency with the untraced median:

- above :data:`tracekit.analyzers.recommendations.PERTURBATION_RATIO` (1.25x), a warning says by how much, and
  that the overhead includes the profiler's cost (about the difference of the medians, ms per iteration);
- a framework-bound verdict is then checked against the untraced latency: GPU busy (ms, median, from the
  trace: kernels keep their durations under a profiler) over the untraced median latency is the utilization
  the run would have without the profiler, at most. At or above the threshold the verdict may be the
  profiler's ("verdict uncertain"); below it the verdict holds untraced too, and a note says so with the
  number. A compute-bound verdict needs no check: without the profiler's host cost the GPU is busier still.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit.analyzers.recommendations import PERTURBATION_RATIO

if TYPE_CHECKING:
    from tracekit.analyzers.stability import Measurement


def untraced_measurement(
    recorded: Mapping[str, Any] | None,
    latency_csv: tuple[list[float], list[float] | None] | None = None,
    device: str | None = None,
) -> Measurement | None:
    """The one rule for a configuration's untraced latency, which ``analyze`` (:func:`findings`) and ``report``
    (:func:`tracekit.analyzers.report.untraced_measurement`) both use, so that they never disagree on it:

    1. the statistics ``tracekit collect`` recorded (run.json / sidecar: a median from the stability rules,
       with ``kept``);
    2. else measured (:func:`tracekit.analyzers.stability.measure`, the same rules) from ``latency_csv``: the
       run's ``latency.csv`` values of this configuration (:func:`latency_csv_values`) for runs collected
       before the statistics were recorded, whose run.json holds only mean/p50/p90;
    3. else the recorded ``median``, ``p50`` or ``mean``, in that order, without an interval.

    None when nothing is recorded, or the value found is not a positive number. ``device``: "cpu" names the
    cause of an unstable set as "another process"."""
    if not recorded or not isinstance(recorded, Mapping):
        return None
    from tracekit.analyzers.stability import Measurement, measure

    stats = Measurement.from_json(dict(recorded))
    if stats is not None:
        return stats if _positive(stats.median) else None
    said: tuple[str, ...] = ()
    if latency_csv:
        measured = measure(latency_csv[0], latency_csv[1], device="cpu" if device == "cpu" else "gpu")
        if measured.count:
            return measured if _positive(measured.median) else None
        # (no finite value in it: as if there were no latency.csv, its warning kept; all 'inf' had been None
        # without a word)
        said = (*measured.warnings, "latency.csv holds no finite latency of this configuration")
    for key in ("median", "p50", "mean"):
        if key in recorded and recorded[key] is not None:
            value = recorded[key]
            if not _positive(value):
                return None
            count = recorded.get("count")
            count = count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 0
            if said:
                said = (*said[:-1], f"{said[-1]}: the recorded {key} is used instead, without an interval")
            return Measurement(count=count, kept=count, median=float(value), warnings=said)
    return None


def _positive(value: Any) -> bool:
    """A positive finite number, not a boolean."""
    return (
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    )


def latency_csv_values(
    trace_path: str | Path, runtime: str | None, batch_size: int | None, seq_len: int | None
) -> tuple[list[float], list[float] | None] | None:
    """(latency_ms, cpu_ms or None) of one configuration's untraced iterations from the ``latency.csv``
    beside its trace, in iteration order; None when there is none, it does not hold the configuration, or a
    row of it is damaged. Read once per file and version (size, mtime) in a process: a run of many
    configurations reads it once."""
    path = Path(trace_path).parent / "latency.csv"
    if batch_size is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    if not path.is_file():
        return None
    rows = _latency_rows(str(path), st.st_size, st.st_mtime_ns)
    if rows is None:
        return None
    latency: list[float] = []
    cpu: list[float] = []
    for row in rows:
        if (
            row.get("set", "untraced") in ("untraced", "")
            and row.get("runtime") == runtime
            and row.get("batch_size") == str(batch_size)
            and (seq_len is None or row.get("seq_len") == str(seq_len))
        ):
            try:
                latency.append(float(row["latency_ms"]))
                if row.get("cpu_ms"):
                    cpu.append(float(row["cpu_ms"]))
            except (KeyError, TypeError, ValueError):
                return None
    if not latency:
        return None
    return latency, (cpu if len(cpu) == len(latency) else None)


@functools.lru_cache(maxsize=16)
def _latency_rows(path: str, size: int, mtime_ns: int) -> tuple[dict[str, str], ...] | None:
    """The rows of one ``latency.csv`` (``size``/``mtime_ns``: its version, the cache key)."""
    import csv

    try:
        with open(path, newline="") as fh:
            return tuple(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None


def untraced_of(config: Any, device: str | None = None) -> Measurement | None:
    """The untraced latency of a configuration (:class:`tracekit.inputs.TraceConfig`, or anything with its
    ``untraced_latency``, ``path``, ``runtime``, ``batch_size``, ``seq_len``, ``device``), by
    :func:`untraced_measurement`. latency.csv is read only when the recorded statistics lack a median from the
    stability rules (a run collected before they were recorded). ``device``: the measured one (default: the
    configuration's)."""
    recorded = getattr(config, "untraced_latency", None)
    if not recorded or not isinstance(recorded, Mapping):
        return None
    values = None
    if not _has_full_statistics(recorded):
        values = latency_csv_values(
            config.path, getattr(config, "runtime", None), config.batch_size, getattr(config, "seq_len", None)
        )
    return untraced_measurement(recorded, values, device or getattr(config, "device", None))


def _has_full_statistics(recorded: Mapping[str, Any]) -> bool:
    return recorded.get("median") is not None and "kept" in recorded


def untraced_median_ms(untraced: Any) -> float | None:
    """The untraced median latency (ms) by :func:`untraced_measurement`: ``untraced`` a configuration
    (:func:`untraced_of`: latency.csv too, for old runs) or run.json's statistics alone (a mapping); None
    without one, or when it is not a positive number."""
    if untraced is None:
        return None
    stats = untraced_measurement(untraced) if isinstance(untraced, Mapping) else untraced_of(untraced)
    return None if stats is None else stats.median


#: What the profiler-cost warning of :func:`findings` says after the profiler's name.
SLOWED_MARK = " slowed this run "


def findings(
    latency_ms: float | Measurement | None,
    busy_ms: float | None,
    bound: str | None,
    bound_threshold: float,
    untraced: Any,
    profiler: str | None = None,
    device: str | None = None,
    overhead_ms: float | None = None,
    source: str | None = None,
) -> tuple[list[str], list[str], str | None]:
    """(warnings, notes, doubt) about the profiler's cost. ``latency_ms``/``busy_ms``: the analyzed iterations'
    median latency and busy time (ms: GPU busy, or the CPU operators' busy time when ``device`` is "cpu").
    ``latency_ms`` as a
    :class:`tracekit.analyzers.stability.Measurement` of the traced iterations is the right one: its median is
    after the stability rules, like the untraced median it is set against (report's ``traced_median_ms`` and
    ``profiler_ratio``), and the warning says over how many iterations when the rules left some out; a bare
    number is taken as it is (the median of every analyzed iteration: 4.200 ms on the committed TorchScript b1
    run, where the rules' median is 4.189). ``bound``: the verdict ("framework", "compute" or None);
    ``untraced``: the configuration (:class:`tracekit.inputs.TraceConfig`: its untraced latency by
    :func:`untraced_of`, as report's) or its untraced latency statistics alone (run.json), None when not
    recorded;
    ``profiler``: its name, for the words; ``overhead_ms``: the median framework overhead shown (the profiler's
    cost is said to be in it only when it fits in it: a profiler that lengthened the traced work itself --
    torch.profiler's operators on the CPU -- put the rest in the busy time); ``source``: where the untraced
    latency was recorded, for the words (default "run.json"). ``doubt``: a "verdict uncertain: ..." text, or
    None: a framework-bound verdict whose busy time is at or above the threshold of the untraced latency, or,
    on a CPU trace, a compute-bound one whose operator busy time alone exceeds the whole untraced latency (the
    profiler lengthened the traced operators, so the verdict may be its; on a GPU trace kernels keep their
    durations, and such a record is said not comparable instead)."""
    over = ""
    if latency_ms is not None and not isinstance(latency_ms, (int, float)):
        stats = latency_ms
        latency_ms = stats.median
        if stats.kept < stats.count:
            over = (
                f" (over the {stats.kept} of {stats.count} iterations the stability rules keep, as the untraced "
                "median is)"
            )
    reference = untraced_median_ms(untraced)
    if reference is None or not _positive(latency_ms):
        return [], [], None
    assert latency_ms is not None
    ratio = latency_ms / reference
    if ratio <= PERTURBATION_RATIO:
        return [], [], None
    who = profiler or "the profiler"
    busy_noun = "operator busy time" if device == "cpu" else "GPU busy time"
    cost = latency_ms - reference
    if overhead_ms is not None and cost > overhead_ms and device == "cpu":
        where = (
            f"{who} cost about {cost:.3f} ms per iteration, more than the framework overhead shown "
            f"({overhead_ms:.3f} ms): it lengthened the traced work itself, so the {busy_noun} is inflated too "
            "and neither is the untraced run's"
        )
    elif overhead_ms is not None and cost > overhead_ms:
        # (kernels keep their durations under a profiler: GPU work longer than the whole untraced run says the
        # untraced record is not of a comparable run, not that the profiler lengthened the kernels; review20)
        where = (
            f"the difference, {cost:.3f} ms per iteration, is more than the framework overhead shown "
            f"({overhead_ms:.3f} ms): the {busy_noun} alone exceeds the untraced latency, and kernels keep their "
            "durations under a profiler, so the untraced record may not be of a comparable run"
        )
    else:
        where = f"the framework overhead shown includes {who}'s own cost, about {cost:.3f} ms per iteration"
    warnings = [
        f"{who}{SLOWED_MARK}{ratio:.2f}x: median latency {latency_ms:.3f} ms traced{over} against "
        f"{reference:.3f} ms untraced (the same configuration timed without a profiler, {source or 'run.json'}): "
        f"{where}"
    ]
    if busy_ms is None:
        return warnings, [], None
    said = (
        f"the {busy_noun} traced here ({busy_ms:.3f} ms, median) is {busy_ms / reference:.1%} "
        f"of the untraced median latency ({reference:.3f} ms)"
    )
    if bound == "compute" and busy_ms > reference and device == "cpu":
        doubt = (
            f"verdict uncertain: {said}: {who} lengthened the traced work itself, so the compute-bound verdict "
            f"may be {who}'s"
        )
        return [*warnings, doubt], [], doubt
    if bound != "framework":
        return warnings, [], None
    if busy_ms / reference >= bound_threshold:
        doubt = (
            f"verdict uncertain: without {who}, {said}, at or above the {bound_threshold:.0%} threshold: the run may be "
            f"compute-bound, and framework-bound only under {who}"
        )
        return [*warnings, doubt], [], doubt
    return (
        warnings,
        [f"framework-bound without {who} too: {said}, below the {bound_threshold:.0%} threshold"],
        None,
    )
