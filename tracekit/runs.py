"""The layout of a run directory, as written by ``tracekit collect`` and ``tracekit simulate``.

A run directory holds one runtime's sweep::

    RUN/run.json                        what ran, on what, with which versions, and one entry per config
    RUN/latency.csv                     untraced latency of every timed iteration (collect only)
    RUN/<stem>.sqlite | .kineto.json.gz | .ort.json | .ncu.csv(.gz)   the traces
    RUN/<stem>.meta.json (one per trace stem) sidecar metadata (tracekit.inputs: read once per input)

``run.json``::

    {"tracekit_version", "kind": "collect"|"simulate", "synthetic": bool, "command": [...],
     "started", "finished", "runtime", "model", "device", "precision", "gpu": {...}|null, "cpu": str,
     "versions": {...},
     "configs": [{"batch_size", "seq_len", "status": "ok"|"failed"|"skipped", "error": str|null,
                  "untraced_latency_ms": {"mean", "p50", "p90", "p99", "min", "max", "count"}|null,
                  "traces": {"nsys"|"torch"|"ort"|"ncu"|"kineto": "relative/path"},
                  "traced_latency_ms": {"nsys": mean, ...}}]}

Stems are ``{runtime}_b{batch}_s{seq}`` plus a profiler suffix (``.nsys``, ``.torch``, ``.ort``, ``.ncu``) and,
for simulated traces, ``.synthetic``. What to analyze in a run directory: :func:`tracekit.inputs.resolve_inputs`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tracekit.errors import TracekitError
from tracekit.io import output_dir, register_input, write_text_atomic

RUN_FILE = "run.json"
LATENCY_FILE = "latency.csv"


def config_stem(runtime: str, batch_size: int, seq_len: int) -> str:
    """The file stem shared by one configuration's traces."""
    return f"{runtime}_b{batch_size}_s{seq_len}"


def write_run_json(run_dir: str | Path, data: dict[str, Any]) -> None:
    """Write ``run.json`` atomically (called after every completed config, so a crash leaves it valid)."""
    write_text_atomic(Path(run_dir) / RUN_FILE, json.dumps(data, indent=2, default=str) + "\n")


def load_run(run_dir: str | Path) -> dict[str, Any]:
    """Read a run directory's ``run.json``, checked whole (:func:`check_run`); TracekitError (one line naming
    the file, and the field where one is wrong) when absent, damaged or wrongly typed."""
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        raise TracekitError("not a tracekit run directory (no run.json)", run_dir)
    register_input(path)
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise TracekitError(f"damaged run.json ({exc})", path) from exc
    if not isinstance(data, dict) or not isinstance(data.get("configs"), list):
        raise TracekitError("run.json has no 'configs' list", path)
    problem = check_run(data)
    if problem is not None:
        raise TracekitError(problem, path)
    return data


# ------------------------------------------------------------------------------------------- run.json checks

#: The statuses of a configuration (absent: "ok"). Only "ok" configurations are analyzed.
STATUSES = ("ok", "failed", "skipped")
#: The largest batch size or sequence length taken (no real one comes near it; a larger one is a damaged or
#: hand-edited run.json, and would not fit the 32-bit integers some outputs use).
MAX_DIMENSION = 2**31 - 1
#: Run-level values that are text when given (absent or null: not stated).
RUN_TEXT_FIELDS = ("runtime", "model", "precision", "device")
#: Untraced latency statistics that are latencies (ms): a positive finite number or null.
LATENCY_STATS = ("mean", "median", "p50", "p90", "p99", "min", "max", "ci_low", "ci_high", "mean_kept")
#: Untraced statistics that are non-negative finite numbers or null (spread, CPU time).
SPREAD_STATS = ("stdev", "cv", "cpu_per_wall", "cpu_ms_mean")
#: Untraced statistics that are counts: a non-negative integer or null.
COUNT_STATS = ("count", "kept")
#: Untraced statistics that are lists of iteration indexes (non-negative integers) or null.
INDEX_LIST_STATS = ("dropped_warmup", "dropped_outliers")
#: Untraced statistics that are lists of text or null.
TEXT_LIST_STATS = ("warnings", "notes")
#: Untraced statistics that are text or null.
TEXT_STATS = ("trend", "cause")


def _shown(value: Any) -> str:
    """``value`` as run.json spells it (JSON), shortened: for the one line that names a wrong field."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value: Any) -> bool:
    """An integer, not a boolean (JSON ``true`` is no batch size)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """A finite number, not a boolean."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _wrong(where: str, value: Any, expected: str) -> str:
    return f"{where} is {_shown(value)}, not {expected}"


def _check_untraced(where: str, stats: Any) -> str | None:
    """What is wrong with a configuration's ``untraced_latency_ms`` (None: nothing). Only the keys tracekit
    reads are checked; others are kept as they are."""
    if stats is None:
        return None
    if not isinstance(stats, dict):
        return _wrong(where, stats, "an object of latency statistics (ms) or null")
    for key in LATENCY_STATS:
        value = stats.get(key)
        if value is not None and not (_is_number(value) and value > 0):
            return _wrong(f"{where}.{key}", value, "a positive number (ms) or null")
    for key in SPREAD_STATS:
        value = stats.get(key)
        if value is not None and not (_is_number(value) and value >= 0):
            return _wrong(f"{where}.{key}", value, "a non-negative number or null")
    for key in COUNT_STATS:
        value = stats.get(key)
        if value is not None and not (_is_int(value) and value >= 0):
            return _wrong(f"{where}.{key}", value, "a non-negative integer or null")
    for key in INDEX_LIST_STATS:
        value = stats.get(key)
        if value is not None and not (isinstance(value, list) and all(_is_int(i) and i >= 0 for i in value)):
            return _wrong(f"{where}.{key}", value, "a list of iteration numbers or null")
    for key in TEXT_LIST_STATS:
        value = stats.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(w, str) for w in value)):
            return _wrong(f"{where}.{key}", value, "a list of text or null")
    for key in TEXT_STATS:
        value = stats.get(key)
        if value is not None and not isinstance(value, str):
            return _wrong(f"{where}.{key}", value, "text or null")
    if stats.get("unstable") is not None and not isinstance(stats["unstable"], bool):
        return _wrong(f"{where}.unstable", stats["unstable"], "true, false or null")
    for low, high in (("ci_low", "ci_high"), ("min", "max")):
        if stats.get(low) is not None and stats.get(high) is not None and stats[low] > stats[high]:
            return f"{where}.{low} ({_shown(stats[low])}) is above {where}.{high} ({_shown(stats[high])})"
    return _contradiction(where, stats)


def _contradiction(where: str, stats: dict[str, Any]) -> str | None:
    """What in ``stats`` (each value already checked alone) contradicts the rest, or None. The median is of the
    kept iterations and its interval's bounds are order statistics of those same iterations, so it lies in
    its interval; no more iterations are kept than timed. A median of 10 ms recorded with the interval
    [0.9, 1.1] had been used as the untraced latency (profiler ratio 0.09). (Medians against min/max are not
    checked: tests and older runs hand-set a median beside the recorded min/max.)"""
    median, low, high = stats.get("median"), stats.get("ci_low"), stats.get("ci_high")
    if median is not None and low is not None and high is not None and not low <= median <= high:
        return (
            f"{where}.median ({_shown(median)}) lies outside its own interval {where}.ci_low/ci_high "
            f"[{_shown(low)}, {_shown(high)}]: statistics that contradict each other"
        )
    kept, count = stats.get("kept"), stats.get("count")
    if kept is not None and count is not None and kept > count:
        return (
            f"{where}.kept ({kept}) is above {where}.count ({count}): statistics that contradict each other"
        )
    return None


def _check_config(where: str, config: Any) -> str | None:
    """What is wrong with one entry of ``configs`` (None: nothing); every entry is checked the same way,
    whatever its status."""
    if not isinstance(config, dict):
        return _wrong(where, config, "an object")
    status = config.get("status", "ok")
    if status not in STATUSES:
        return _wrong(f"{where}.status", status, '"ok", "failed" or "skipped"')
    for key in ("batch_size", "seq_len"):
        if key not in config:
            return f"{where} has no {key} (a positive integer)"
        value = config[key]
        if not (_is_int(value) and 1 <= value <= MAX_DIMENSION):
            return _wrong(f"{where}.{key}", value, f"a positive integer (1 to {MAX_DIMENSION})")
    if "traces" not in config:
        return f"{where} has no traces (an object naming each profiler's trace file; {{}} for none)"
    traces = config["traces"]
    if not isinstance(traces, dict):
        return _wrong(f"{where}.traces", traces, "an object naming each profiler's trace file")
    for profiler, name in traces.items():
        if not (isinstance(name, str) and name.strip()):
            return _wrong(f"{where}.traces.{profiler}", name, "a file name")
    return _check_untraced(f"{where}.untraced_latency_ms", config.get("untraced_latency_ms"))


def check_run(run: dict[str, Any]) -> str | None:
    """What is wrong with a ``run.json`` document (None: nothing), the first problem found, naming the field:
    ``configs[1].batch_size is "two", not a positive integer (1 to 2147483647)``.

    Checked: the run-level values a command reads (``runtime``, ``model``, ``precision``, ``device``: text or
    null; ``synthetic``: true, false or null) and every configuration: an object; ``status`` one of
    :data:`STATUSES`; ``batch_size`` and ``seq_len`` integers from 1 to :data:`MAX_DIMENSION` (not
    booleans); ``traces`` an object of file names (``{}``: none, as for a configuration timed untraced only); ``untraced_latency_ms`` null or statistics whose latencies
    are positive finite numbers. Any problem ends the command (exit 2): run.json is written by tracekit, so a
    wrong value means a damaged or hand-edited file, and no configuration of it is taken on trust."""
    for key in RUN_TEXT_FIELDS:
        value = run.get(key)
        if value is not None and not (isinstance(value, str) and value.strip()):
            return _wrong(key, value, "text or null")
    if run.get("synthetic") is not None and not isinstance(run["synthetic"], bool):
        return _wrong("synthetic", run["synthetic"], "true, false or null")
    for i, config in enumerate(run["configs"]):
        problem = _check_config(f"configs[{i}]", config)
        if problem is not None:
            return problem
    return None


def _run_files(run_dir: Path, run: dict[str, Any]) -> set[Path]:
    """The files a run directory's run.json accounts for: traces, sidecars, truth files, per-config files.

    Per-config files are those whose name starts with a config stem of the run (``{runtime}_b{B}_s{S}.``),
    which catches what a profiler leaves beside its trace (``.nsys-rep``, logs). Nothing else is touched.
    """
    from tracekit.inputs import sidecar_meta_path

    files = {run_dir / RUN_FILE, run_dir / LATENCY_FILE}
    runtime = run.get("runtime")
    for config in run.get("configs") or []:
        if not isinstance(config, dict):
            continue
        for rel in (config.get("traces") or {}).values():
            files.add(run_dir / rel)
            files.add(sidecar_meta_path(run_dir / rel))
        if config.get("truth"):
            files.add(run_dir / config["truth"])
        if runtime and config.get("batch_size") is not None and config.get("seq_len") is not None:
            stem = config_stem(runtime, config["batch_size"], config["seq_len"])
            files.update(run_dir.glob(f"{stem}.*"))
    return {f for f in files if f.parent == run_dir}


def prepare_run_dir(run_dir: str | Path, overwrite: bool) -> Path:
    """Make ``run_dir`` ready for a new run (``collect`` and ``simulate`` share this rule).

    A folder that already holds a run (``run.json``) is refused unless ``overwrite``; with ``overwrite`` the old
    run's own files are removed first (see :func:`_run_files`), so runs are never mixed and nothing else in
    the folder is touched. Only the last level of ``run_dir`` is created.
    """
    run_dir = Path(run_dir)
    if (run_dir / RUN_FILE).exists():
        if not overwrite:
            raise TracekitError(
                "already holds a run (run.json); choose another -o or pass --overwrite", run_dir
            )
        try:
            old = json.loads((run_dir / RUN_FILE).read_text())
        except (OSError, ValueError) as exc:
            raise TracekitError(
                f"--overwrite: cannot tell the old run's files apart, its run.json is damaged ({exc}); "
                "remove the folder yourself",
                run_dir,
            ) from exc
        for path in _run_files(run_dir, old if isinstance(old, dict) else {}):
            if path.is_file() or path.is_symlink():
                path.unlink()
    return output_dir(run_dir)
