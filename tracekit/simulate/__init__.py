"""``tracekit simulate``: synthetic nsys-schema SQLite and Kineto traces with exactly known ground truth.

A discrete-event model of the framework tax (:mod:`tracekit.simulate.mechanism`) runs one runtime preset
(:mod:`tracekit.simulate.presets`) over a batch-size sweep; each config's events are streamed, chunk by chunk,
into an Nsight Systems-schema SQLite file and a gzip Kineto JSON, while the truth
(:mod:`tracekit.simulate.truth`) is computed from the same event arrays. Output, per batch size B and
sequence length S, in the run directory::

    {runtime}_b{B}_s{S}.synthetic.sqlite       Nsight Systems export schema, GPU-metrics samples included
    {runtime}_b{B}_s{S}.synthetic.json.gz      Kineto (torch.profiler) chrome trace
    {runtime}_b{B}_s{S}.synthetic.truth.json   per-iteration truth and the sweep's transition batch size
    {runtime}_b{B}_s{S}.synthetic.meta.json    sidecar metadata ("synthetic": true)
    run.json                                   tracekit run layout (kind "simulate", synthetic true)

Every file is written atomically (temporary file, then rename). Nothing here is a measurement.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit import __version__, progress
from tracekit.io import atomic_path, write_text_atomic
from tracekit.runs import config_stem, prepare_run_dir, write_run_json
from tracekit.simulate.kineto_writer import KinetoWriter
from tracekit.simulate.mechanism import CHUNK_KERNELS, Noise, Simulation
from tracekit.simulate.nsys_writer import GPU_NAME, NsysWriter
from tracekit.simulate.presets import RUNTIMES, RuntimeParams, preset
from tracekit.simulate.truth import PLATEAU_TOLERANCE, TruthAccumulator, plateau_and_transition

__all__ = ["RUNTIMES", "Noise", "SimulatedConfig", "preset", "simulate_sweep", "synthetic_stem"]

MODEL = "simulated-bert-base"
PRECISION = "fp16"
FORMATS = ("nsys", "kineto", "both")


def synthetic_stem(runtime: str, batch_size: int, seq_len: int) -> str:
    """``{runtime}_b{B}_s{S}.synthetic``: the shared stem of one simulated config's files."""
    return config_stem(runtime, batch_size, seq_len) + ".synthetic"


@dataclass
class SimulatedConfig:
    """What one simulated config produced."""

    batch_size: int
    seq_len: int
    files: dict[str, Path]
    iterations: list[dict[str, Any]]
    summary: dict[str, Any]
    traces: dict[str, str] = field(default_factory=dict)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def simulate_config(
    out_dir: Path,
    params: RuntimeParams,
    batch_size: int,
    seq_len: int,
    iterations: int,
    seed: int,
    fmt: str = "both",
    metrics_interval_ns: int = 100_000,
    chunk_kernels: int = CHUNK_KERNELS,
    noise: Noise | None = None,
) -> SimulatedConfig:
    """Simulate one config and write its trace files and sidecar (not its truth file: see simulate_sweep)."""
    stem = synthetic_stem(params.runtime, batch_size, seq_len)
    sim = Simulation(params, batch_size, seq_len, iterations, seed, chunk_kernels, noise)
    meta = config_meta(params, batch_size, seq_len, seed, iterations, metrics_interval_ns)
    if sim.noise is not None:
        meta["noise"] = sim.noise.as_dict()
    meta["trace_name"] = stem
    files: dict[str, Path] = {}
    traces: dict[str, str] = {}
    truth = TruthAccumulator()
    with contextlib.ExitStack() as stack:
        nsys = kineto = None
        if fmt in ("nsys", "both"):
            files["nsys"] = out_dir / f"{stem}.sqlite"
            nsys = NsysWriter(stack.enter_context(atomic_path(files["nsys"])), sim, meta, metrics_interval_ns)
            stack.callback(nsys.abort)
            traces["nsys"] = files["nsys"].name
        if fmt in ("kineto", "both"):
            files["kineto"] = out_dir / f"{stem}.json.gz"
            kineto = KinetoWriter(stack.enter_context(atomic_path(files["kineto"])), sim, meta)
            stack.callback(kineto.abort)
            traces["kineto"] = files["kineto"].name
        with progress.task(f"simulating {stem}", total=iterations) as shown:
            for chunk in sim.chunks():
                truth.add(chunk)
                if nsys is not None:
                    nsys.write_chunk(chunk)
                if kineto is not None:
                    kineto.write_chunk(chunk)
                shown.advance(chunk.n_iter)
            shown("writing")
        records = truth.iterations()
        summary = truth.summary()
        # Close the writers before atomic_path renames their temporary files (ExitStack unwinds in reverse).
        if kineto is not None:
            kineto.finish(summary, records)
        if nsys is not None:
            nsys.finish(summary, records)
    sidecar = dict(meta)
    sidecar.pop("trace_name", None)
    sidecar["truth"] = f"{stem}.truth.json"
    files["meta"] = out_dir / f"{stem}.meta.json"
    write_text_atomic(files["meta"], json.dumps(sidecar, indent=2) + "\n")
    # The idle attribution goes to .truth.json only (the traces' embedded truth keeps its fields).
    summary = {**summary, **truth.attribution_summary()}
    return SimulatedConfig(batch_size, seq_len, files, records, summary, traces)


def config_meta(
    params: RuntimeParams, batch_size: int, seq_len: int, seed: int, iterations: int, metrics_interval_ns: int
) -> dict[str, Any]:
    """The sidecar/metadata dict of one simulated config."""
    return {
        "synthetic": True,
        "made_by": "tracekit simulate",
        "note": "SYNTHETIC trace from tracekit's discrete-event model; not a measurement",
        "runtime": params.runtime,
        "model": MODEL,
        "batch_size": batch_size,
        "seq_len": seq_len,
        "precision": PRECISION,
        "device": "gpu",
        "gpu": GPU_NAME,
        "iterations": iterations,
        "parameters": params.as_dict(),
        "gpu_metrics_interval_ns": metrics_interval_ns,
        "seed": seed,
        "tracekit_version": __version__,
    }


def _write_truth(
    out: Path, params: RuntimeParams, seed: int, result: SimulatedConfig, sweep: dict[str, Any] | None
) -> None:
    """Write ``result``'s ``.truth.json``: its exact per-iteration metrics and, once the sweep has finished,
    the sweep's (``sweep``; before that, null: ``transition_batch_size`` is the whole sweep's)."""
    truth_doc = {
        "synthetic": True,
        "made_by": "tracekit simulate",
        "runtime": params.runtime,
        "model": MODEL,
        "batch_size": result.batch_size,
        "seq_len": result.seq_len,
        "seed": seed,
        "definitions": "see tracekit/simulate/truth.py; ms values are exact ns / 1e6",
        "summary": result.summary,
        "iterations": result.iterations,
        "transition_batch_size": None if sweep is None else sweep["transition_batch_size"],
        "sweep": sweep,
    }
    if sweep is None:
        truth_doc["sweep_note"] = "the sweep had not finished when this was written: no transition batch size"
    path = out / f"{synthetic_stem(params.runtime, result.batch_size, result.seq_len)}.truth.json"
    write_text_atomic(path, json.dumps(truth_doc, indent=1) + "\n")
    result.files["truth"] = path


def simulate_sweep(
    out_dir: str | Path,
    params: RuntimeParams,
    batch_sizes: list[int],
    seq_len: int,
    iterations: int | None,
    seed: int,
    fmt: str = "both",
    kernels: int | None = None,
    metrics_interval_ns: int = 100_000,
    command: list[str] | None = None,
    progress: Any = None,
    overwrite: bool = False,
    noise: Noise | None = None,
) -> dict[str, Any]:
    """Simulate every batch size, write traces, truth files and run.json; return the run.json dict.

    ``kernels`` (target kernels per config) overrides ``iterations``. ``noise``: per-iteration host noise
    (:class:`~tracekit.simulate.mechanism.Noise`); the sweep's truth then uses the noise-free latencies. A folder that already holds a run is
    refused unless ``overwrite``, which first removes the old run's files (:func:`tracekit.runs.prepare_run_dir`).
    """
    out = prepare_run_dir(out_dir, overwrite)
    if kernels is not None:
        iterations = max(1, -(-kernels // params.ops))
    assert iterations is not None
    run: dict[str, Any] = {
        "tracekit_version": __version__,
        "kind": "simulate",
        "synthetic": True,
        "note": "SYNTHETIC traces from tracekit's discrete-event model; not measurements",
        "command": command if command is not None else ["tracekit", *sys.argv[1:]],
        "started": _now(),
        "finished": None,
        "runtime": params.runtime,
        "model": MODEL,
        "device": "gpu",
        "precision": PRECISION,
        "gpu": {"name": GPU_NAME, "simulated": True},
        "cpu": "simulated",
        "versions": {"tracekit": __version__, "python": platform.python_version()},
        "parameters": params.as_dict(),
        "seed": seed,
        "configs": [],
    }
    noisy = noise is not None and noise.active
    if noisy:
        assert noise is not None
        noise.validate()
        run["noise"] = noise.as_dict()
    results: list[SimulatedConfig] = []
    for batch in batch_sizes:
        result = simulate_config(
            out, params, batch, seq_len, iterations, seed, fmt, metrics_interval_ns, noise=noise
        )
        results.append(result)
        # its truth now (the sweep's part still null), so that an interrupted sweep leaves no trace without one
        _write_truth(out, params, seed, result, None)
        mean = result.summary.get("latency_ms_mean")
        run["configs"].append(
            {
                "batch_size": batch,
                "seq_len": seq_len,
                "status": "ok",
                "error": None,
                "untraced_latency_ms": None,
                "traces": dict(result.traces),
                "traced_latency_ms": {name: mean for name in result.traces},
                "truth": f"{synthetic_stem(params.runtime, batch, seq_len)}.truth.json",
            }
        )
        write_run_json(out, run)
        if progress is not None:
            progress(result)
    key = "latency_ms_noise_free_mean" if noisy else "latency_ms_mean"
    latency = {r.batch_size: r.summary[key] for r in results}
    plateau, transition = plateau_and_transition(latency)
    sweep = {
        "batch_sizes": sorted(latency),
        "latency_ms_mean": {str(b): latency[b] for b in sorted(latency)},
        "plateau_tolerance": PLATEAU_TOLERANCE,
        "plateau": plateau,
        "transition_batch_size": transition,
        "latency_used": "mean of the true per-iteration latencies of each batch size"
        if not noisy
        else "mean of the noise-free per-iteration latencies of each batch size (the noise taken out)",
    }
    for r in results:
        _write_truth(out, params, seed, r, sweep)
    run["finished"] = _now()
    run["sweep"] = sweep
    write_run_json(out, run)
    return run
