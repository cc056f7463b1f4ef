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
    """Read a run directory's ``run.json``; TracekitError when absent or damaged."""
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
    return data


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
