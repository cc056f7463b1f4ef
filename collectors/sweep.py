"""The sweep: for every (batch size, sequence length), an untraced timing run plus one run per profiler,
written into one run directory (layout: :mod:`tracekit.runs`).

Files appear only when complete: profilers write into a hidden temporary folder inside the run directory and
finished traces are renamed into place; ``run.json`` and ``latency.csv`` are rewritten atomically after every
configuration. Ctrl-C or a crash therefore leaves the completed configurations intact and no half-written file.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tracekit.collectors.environment import check_device
from tracekit.collectors.profilers import PROFILERS
from tracekit.collectors.runtimes import (
    CUDA_ONLY,
    GRAPH_RUNTIMES,
    MIN_WARMUP,
    ONNX_RUNTIMES,
    RUNTIMES,
    check_runtime_name,
)
from tracekit.collectors.runtimes.onnx import ORT_CONV_ALGO_SEARCH
from tracekit.collectors.zoo import (
    IMAGE_SIZE,
    MODELS,
    check_hidden,
    check_seq_lens,
    model_kind,
    unknown_model,
)
from tracekit.errors import RunFailure, TracekitError
from tracekit.io import write_text_atomic
from tracekit.quantiles import quantile
from tracekit.runs import LATENCY_FILE, config_stem, prepare_run_dir, write_run_json

#: The folder that holds the ``tracekit`` package: worker processes get it on PYTHONPATH. (Not this file's
#: grandparent: in a regular install that is ``site-packages/tracekit``, whose modules would then shadow
#: top-level names.)
PACKAGE_ROOT = Path(__import__("tracekit").__file__).resolve().parents[1]
LATENCY_COLUMNS = (
    "runtime",
    "model",
    "device",
    "precision",
    "batch_size",
    "seq_len",
    "iteration",
    "latency_ms",
    "cpu_ms",
    "dropped",
    "set",
)
#: File names of each profiler's trace, relative to the run directory, from the config stem.
TRACE_NAMES: dict[str, str] = {
    "nsys": "{stem}.nsys.sqlite",
    "torch": "{stem}.torch.json.gz",
    "ort": "{stem}.ort.json.gz",
    "ncu": "{stem}.ncu.csv.gz",
}


@dataclass
class SweepOptions:
    """What ``tracekit collect`` was asked to do (validated by :func:`validate`)."""

    runtime: str = "pytorch"
    model: str = "bert-base"
    layers: int | None = None
    hidden: int | None = None
    gen_tokens: int = 8
    device: str = "auto"
    precision: str = "fp32"
    batch_sizes: list[int] = field(default_factory=lambda: [1])
    seq_lens: list[int] | None = None
    warmup: int = 10
    iters: int = 100
    profilers: list[str] | None = None
    out_dir: Path | None = None
    opset: int = 17
    seed: int = 0
    overwrite: bool = False
    command: list[str] = field(default_factory=list)
    progress: bool = True
    #: No progress bar and no per-configuration lines (warnings still printed).
    quiet: bool = False
    #: Run untraced/torch/ort timings in this process (fast, for tests) instead of a fresh worker each.
    in_process: bool = False
    #: TF32 for fp32 matmuls/convolutions in torch *and* ONNX Runtime (off by default for both).
    tf32: bool = False
    #: Adaptive untraced timing (``--min-time``/``--max-time``, seconds; :class:`~tracekit.collectors.harness.
    #: TimingBudget`): past ``iters``, time until the median's 95% interval is within 2% or the budget ends.
    min_time_s: float = 1.0
    max_time_s: float = 30.0


def default_profilers(runtime: str, device: str) -> list[str]:
    """The profilers of a run given none: nsys when installed, unless the run is on the CPU (nsys records no
    operators of a CPU run, so its trace has no verdict); else ort for the ONNX runtimes and torch for the
    others. ``device`` as resolved (``cpu`` or ``cuda:N``): :meth:`Sweep._prepare` resolves it once and chooses
    after. A caller passing ``auto`` has it resolved here (importing torch)."""
    from tracekit.collectors.profilers.nsys import find_nsys

    if device == "auto" and find_nsys():
        from tracekit.collectors import environment

        device = environment.resolve_device(device, runtime, runtime in CUDA_ONLY)
    if device != "cpu" and find_nsys():
        return ["nsys"]
    return ["ort"] if runtime in ONNX_RUNTIMES else ["torch"]


def validate(opts: SweepOptions) -> None:
    """Check names and numbers before anything heavy is imported (TracekitError, exit 2, one line)."""
    check_runtime_name(opts.runtime)
    if opts.model not in MODELS:
        raise unknown_model(opts.model)
    check_device(opts.device)
    if opts.precision not in ("fp32", "fp16"):
        raise TracekitError(f"unknown precision '{opts.precision}'; choose from: fp32, fp16")
    if not opts.batch_sizes or any(b < 1 for b in opts.batch_sizes):
        raise TracekitError(f"--batch-sizes must be positive integers{_got(opts.batch_sizes)}")
    if opts.seq_lens is not None and (not opts.seq_lens or any(s < 1 for s in opts.seq_lens)):
        raise TracekitError(f"--seq-lens must be positive integers{_got(opts.seq_lens)}")
    if opts.model == "vit-base" and opts.seq_lens and any(s != IMAGE_SIZE for s in opts.seq_lens):
        # ViTConfig(image_size=224): its position embeddings fit 224x224 images only; any other side failed in
        # every configuration after the model was built ("Input image size (32*32) doesn't match model")
        raise TracekitError(
            f"model vit-base takes {IMAGE_SIZE}x{IMAGE_SIZE} images (--seq-lens is the image side for image "
            f"models; its position embeddings are built for {IMAGE_SIZE}): use --seq-lens {IMAGE_SIZE}"
        )
    from tracekit.runs import MAX_DIMENSION

    for option, values in (("--batch-sizes", opts.batch_sizes), ("--seq-lens", opts.seq_lens or [])):
        # run.json takes no larger one (tracekit.runs.check_run); 10^20 had failed in the worker, after torch
        # was imported ("Overflow when unpacking long long")
        big = [v for v in values if v > MAX_DIMENSION]
        if big:
            raise TracekitError(f"{option} must be at most {MAX_DIMENSION} (got {', '.join(map(str, big))})")
    check_seq_lens(opts.model, opts.seq_lens, max(opts.gen_tokens, 1))
    if opts.warmup < 0 or opts.iters < 1:
        bad = f"--warmup {opts.warmup}" if opts.warmup < 0 else f"--iters {opts.iters}"
        raise TracekitError(f"--warmup must be >= 0 and --iters >= 1 (got {bad})")
    if not (opts.min_time_s >= 0 and opts.max_time_s >= 0):
        raise TracekitError("--min-time and --max-time must be >= 0 (seconds)")
    if not (math.isfinite(opts.min_time_s) and math.isfinite(opts.max_time_s)):
        # an infinite --max-time times the untraced set until its interval is within 2%, which a loaded
        # machine may never reach
        raise TracekitError("--min-time and --max-time must be finite (seconds)")
    if opts.max_time_s and opts.min_time_s > opts.max_time_s:
        raise TracekitError("--min-time must not exceed --max-time")
    least = MIN_WARMUP.get(opts.runtime, 0)
    if opts.warmup < least:
        why = (
            "its first runs capture or record the CUDA graph"
            if opts.runtime in GRAPH_RUNTIMES
            else "its profiling executor optimizes the graph only after its first runs"
        )
        raise TracekitError(
            f"runtime '{opts.runtime}' needs --warmup >= {least}: {why}, which must not land in timed iterations"
        )
    for layers_or_hidden in (opts.layers, opts.hidden):
        if layers_or_hidden is not None and layers_or_hidden < 1:
            raise TracekitError("--layers and --hidden must be >= 1")
    check_hidden(opts.model, opts.hidden)
    if opts.gen_tokens < 1:
        raise TracekitError("--gen-tokens must be >= 1")
    profilers = opts.profilers or []
    for prof in profilers:
        if prof not in PROFILERS:
            raise TracekitError(f"unknown profiler '{prof}'; choose from: {', '.join(PROFILERS)}")
    if "ort" in profilers and opts.runtime not in ONNX_RUNTIMES:
        raise TracekitError(
            f"--profiler ort profiles ONNX Runtime; runtime '{opts.runtime}' does not use it "
            f"(use torch or nsys)"
        )
    if opts.runtime in CUDA_ONLY and opts.device == "cpu":
        raise TracekitError(f"runtime '{opts.runtime}' needs a CUDA device; it cannot run with --device cpu")
    if "ncu" in profilers and opts.device == "cpu":
        raise TracekitError("--profiler ncu profiles GPU kernels; it needs --device cuda")
    check_out_dir(opts.out_dir, opts.overwrite)


def _got(values: list[int]) -> str:
    """' (got 0, -2)': the values a list option was refused for, or ' (got none)' for an empty list."""
    bad = [v for v in values if v < 1]
    return f" (got {', '.join(map(str, bad))})" if bad else " (got none)"


def check_out_dir(out_dir: Path | str | None, overwrite: bool) -> None:
    """Refuse an ``-o`` the run could not be written into, before torch is imported (one line, exit 2, nothing
    created): a file, a folder under a file or under a missing folder, an unwritable folder, or a folder that
    holds a run without ``--overwrite``. (:func:`tracekit.runs.prepare_run_dir` makes the folder later.)"""
    if out_dir is None:
        return
    from tracekit.io import check_output_dir
    from tracekit.runs import RUN_FILE

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise TracekitError("exists and is not a folder", out)
    if (out / RUN_FILE).exists() and not overwrite:
        raise TracekitError("already holds a run (run.json); choose another -o or pass --overwrite", out)
    if not out.parent.is_dir():
        above = next((p for p in out.parents if p.exists()), None)
        why = (
            f"{above} is a file, not a folder"
            if above is not None and not above.is_dir()
            else f"{out.parent} does not exist"
        )
        raise TracekitError(f"cannot create the output folder: {why}", out)
    check_output_dir(out)


def latency_stats(values: list[float]) -> dict[str, float | None]:
    """mean, p50, p90, p99, min, max (ms) and count of a latency list (linear-interpolated percentiles; p90
    and p99 None over too few values to give them, :mod:`tracekit.quantiles`: 20 timed iterations give no p99)."""
    import numpy as np

    arr = np.asarray(values, dtype=float)
    return {
        "mean": float(arr.mean()),
        "p50": quantile(values, 0.5),
        "p90": quantile(values, 0.9),
        "p99": quantile(values, 0.99),
        "min": float(arr.min()),
        "max": float(arr.max()),
        "count": int(arr.size),
    }


def _latency_words(stats: dict[str, Any]) -> str:
    """'12.345 ms median [12.2-12.5], 240 iterations' (the interval when there is one; and saying so when the
    set is unstable)."""
    median = stats.get("median", stats.get("p50"))
    low, high = stats.get("ci_low"), stats.get("ci_high")
    interval = f" [{low:.3f}-{high:.3f}]" if low is not None and high is not None else ""
    dropped = len(stats.get("dropped_warmup") or []) + len(stats.get("dropped_outliers") or [])
    kept = f" ({dropped} dropped: latency.csv says which, by rule)" if dropped else ""
    # a set the stability rules call unstable says so here too: its warning came before, and this line is the
    # one a reader of the run takes the median from
    unstable = "; unstable (see its warning): not a median to rely on" if stats.get("unstable") else ""
    return f"{median:.3f} ms median{interval}, {stats.get('count')} iterations{kept}{unstable}"


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, TracekitError):
        return exc.message
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def _refuse_unrunnable(variable: str, tool: str, otherwise: str | None = None) -> None:
    """One line (exit 2) when ``variable`` (TRACEKIT_NSYS, TRACEKIT_NCU) names a profiler that cannot run,
    before the run folder is made: before, TRACEKIT_NSYS=/nonexistent/nsys timed every configuration
    untraced, then failed each traced run with FileNotFoundError (exit 1), and a TRACEKIT_NCU that could not
    run dropped ncu with the note "ncu probe failed: FileNotFoundError"."""
    from tracekit.collectors.profilers import tool_problem

    problem = tool_problem(variable, tool) or otherwise
    if problem:
        raise TracekitError(problem)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _now() -> str:
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")


class Sweep:
    """One ``tracekit collect`` run (see the module docstring)."""

    def __init__(self, opts: SweepOptions) -> None:
        validate(opts)
        self.opts = opts
        self.kind = model_kind(opts.model)
        if opts.seq_lens is None:
            opts.seq_lens = [IMAGE_SIZE] if self.kind == "image" else [128]
        # The profilers asked for; without --profiler the default depends on the device as resolved, which
        # _prepare does once (torch is imported there) and then chooses (_choose_profilers).
        self.profilers: list[str] = self._asked_profilers(opts.profilers or [])
        # A batch size or sequence length given twice would run twice and write its files over the first run's.
        opts.batch_sizes = list(dict.fromkeys(opts.batch_sizes))
        opts.seq_lens = list(dict.fromkeys(opts.seq_lens))
        self.nsys = self.ncu = None

    @staticmethod
    def _asked_profilers(names: list[str]) -> list[str]:
        return list(dict.fromkeys(p for p in names if p != "none"))

    def _choose_profilers(self) -> None:
        """Without --profiler: the default for the device just resolved (:func:`default_profilers`)."""
        if not self.opts.profilers:
            self.profilers = self._asked_profilers(default_profilers(self.opts.runtime, self.device))

    def _find_profilers(self) -> None:
        """Find nsys and ncu (one line naming how to install a missing one), after the device is known: a
        machine without CUDA is told that first, not that a GPU profiler is missing."""
        if "nsys" in self.profilers:
            from tracekit.collectors.profilers.nsys import nsys_version, require_nsys

            self.nsys = require_nsys()
            if nsys_version(self.nsys) is None:
                _refuse_unrunnable("TRACEKIT_NSYS", "nsys")
        if "ncu" in self.profilers:
            from tracekit.collectors.profilers.ncu import require_ncu

            self.ncu = require_ncu()

    # -- set-up ---------------------------------------------------------------------------------------------
    def _prepare(self) -> None:
        from tracekit.collectors.environment import cpu_model, resolve_device, versions

        opts = self.opts
        self.device = resolve_device(opts.device, opts.runtime, opts.runtime in CUDA_ONLY)
        self._choose_profilers()
        if opts.runtime in ONNX_RUNTIMES and self.device.startswith("cuda"):
            import onnxruntime as ort

            from tracekit.collectors.runtimes.onnx import cuda_provider_problem

            available = list(ort.get_available_providers())
            if "CUDAExecutionProvider" not in available:
                raise TracekitError(cuda_provider_problem(ort, available, session=False))
        if "ncu" in self.profilers and not self.device.startswith("cuda"):
            raise TracekitError("--profiler ncu profiles GPU kernels; it needs --device cuda")
        if opts.runtime == "compile" and self.device == "cpu":
            from tracekit.collectors.runtimes.compile import require_cxx_compiler

            require_cxx_compiler()
        self._find_profilers()
        self.notes: list[str] = []
        self.gpu_metrics, self.ncu_counters = self._probe_profilers()
        self._make_out_dir()
        self.run: dict[str, Any] = {
            "tracekit_version": versions().get("tracekit"),
            "kind": "collect",
            "synthetic": False,
            "command": opts.command,
            "started": _now(),
            "finished": None,
            # "running" until the sweep ends: "complete", or "interrupted" (Ctrl-C, SIGTERM) with the
            # configurations it did not run listed as "skipped". A run.json still saying "running" belongs to a
            # sweep that is going on or was killed outright (SIGKILL, power loss).
            "status": "running",
            "runtime": opts.runtime,
            "model": opts.model,
            "model_overrides": {"layers": opts.layers, "hidden": opts.hidden},
            "device": self.device,
            "precision": opts.precision,
            "tf32": {
                "enabled": opts.tf32,
                "applies_to": "torch (cuBLAS matmul, cuDNN) and ONNX Runtime (use_tf32)",
            },
            "conv_algorithms": {
                "torch_cudnn_benchmark": False,
                "onnxruntime_cudnn_conv_algo_search": ORT_CONV_ALGO_SEARCH,
                "rule": "heuristics in both (no timing of candidate algorithms)",
            },
            "attention": self._attention(),
            "gpu": self.gpu,
            "device_map": self.device_map,
            "gpu_metrics": self.gpu_metrics,
            "ncu_counters": self.ncu_counters,
            "notes": self.notes,
            "cpu": cpu_model(),
            "versions": versions(self.nsys, self.ncu),
            "warmup": opts.warmup,
            "iters": opts.iters,
            "timing": {
                "min_time_s": opts.min_time_s,
                "max_time_s": opts.max_time_s,
                "rule": "untraced: at least --iters iterations, then until the median's 95% interval is "
                "within 2% of it (after --min-time) or --max-time; traced: exactly --iters",
            },
            "profilers": self.profilers,
            "configs": [],
        }
        if self.kind == "generate":
            self.run["gen_tokens"] = opts.gen_tokens
        if self.kind == "image":
            self.run["seq_len_means"] = "image side in pixels"
        self.latency_rows: list[tuple[Any, ...]] = []
        write_run_json(self.out, self.run)
        for note in self.notes:  # said once, before the sweep
            print(f"tracekit collect: note: {note}", file=sys.stderr)

    def _attention(self) -> str:
        from tracekit.collectors.zoo import attention_path

        return attention_path(self.opts.model)

    def _make_out_dir(self) -> None:
        opts = self.opts
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        dev = "cpu" if self.device == "cpu" else self.device.replace(":", "")
        self.out = (
            Path(opts.out_dir)
            if opts.out_dir
            else Path("runs") / f"{opts.model}-{opts.runtime}-{dev}-{stamp}"
        )
        if not opts.out_dir:  # the default ./runs/ folder; a user's -o is never created deep
            from tracekit.io import output_dir

            try:
                output_dir(self.out.parent)
            except TracekitError as exc:
                raise TracekitError(
                    f"{exc.message} (the default output folder; or pass -o)", exc.path
                ) from None
        # The same rule as simulate: refuse an existing run unless --overwrite, which removes the old run's files.
        prepare_run_dir(self.out, opts.overwrite)
        for stale in self.out.glob(".tmp-*"):  # left by a run killed with SIGKILL
            shutil.rmtree(stale, ignore_errors=True)

    def _probe_profilers(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """Map the CUDA device to NVML/nsys by UUID and probe GPU-metrics and ncu-counter permissions.

        A refused GPU-metrics probe: nsys runs without metrics. A refused ncu probe: the ncu profiler is
        dropped. Either way the sweep goes on and ``self.notes`` says why, once (output and run.json)."""
        from tracekit.collectors.environment import gpu_for

        self.gpu_metrics_device: int | None = None
        self.metrics_option = "--gpu-metrics-device"
        cuda = self.device.startswith("cuda")
        listing: dict[str, int] | None = None
        metrics: dict[str, Any] | None = None
        if self.nsys and cuda:
            from tracekit.collectors import gpu as gpu_mod
            from tracekit.collectors.profilers.nsys import nsys_version

            probe = gpu_mod.probe_nsys_gpu_metrics(self.nsys, nsys_version(self.nsys))
            listing = probe.devices
            metrics = probe.to_json()
            if probe.option:
                self.metrics_option = probe.option
            if not probe.permitted:
                self.notes.append(f"nsys runs without GPU metrics: {probe.reason}")
        self.gpu = gpu_for(self.device, listing)
        self.device_map = (self.gpu or {}).get("device_map")
        if metrics is not None and metrics["permitted"]:
            self.gpu_metrics_device = (self.gpu or {}).get("nsys_gpu_id")
            if self.gpu_metrics_device is None:
                metrics.update(
                    permitted=False, reason="the CUDA device could not be mapped to an nsys GPU id"
                )
                self.notes.append("nsys runs without GPU metrics: " + metrics["reason"])
            metrics["device"] = self.gpu_metrics_device
        counters: dict[str, Any] | None = None
        if self.ncu:
            from tracekit.collectors.gpu import probe_ncu_counters

            ncu_probe = probe_ncu_counters(self.ncu)
            if ncu_probe.unrunnable:  # not a refusal of counters: there is no ncu to run
                _refuse_unrunnable("TRACEKIT_NCU", "ncu", f"{self.ncu}: cannot be run ({ncu_probe.reason})")
            counters = ncu_probe.to_json()
            if not ncu_probe.permitted:
                self.profilers = [p for p in self.profilers if p != "ncu"]
                self.notes.append(f"ncu profiler skipped: {ncu_probe.reason}")
        return metrics, counters

    def _cfg(self, batch: int, seq: int, profiler: str, trace_out: str | None = None) -> dict[str, Any]:
        o = self.opts
        cfg = {
            "model": o.model,
            "layers": o.layers,
            "hidden": o.hidden,
            "gen_tokens": o.gen_tokens,
            "runtime": o.runtime,
            "device": self.device,
            "precision": o.precision,
            "batch_size": batch,
            "seq_len": seq,
            "warmup": o.warmup,
            "iters": o.iters,
            "profiler": profiler,
            "trace_out": trace_out,
            "opset": o.opset,
            "seed": o.seed,
            "op_ranges": profiler == "nsys" and RUNTIMES[o.runtime].startswith("pytorch:"),
            "tf32": o.tf32,
        }
        if profiler == "none":  # the untraced set is timed adaptively (the worker's TimingBudget)
            from tracekit.analyzers.stability import TARGET_RELATIVE_CI

            cfg["budget"] = {
                "min_time_s": o.min_time_s,
                "max_time_s": o.max_time_s,
                "target": TARGET_RELATIVE_CI,
            }
        if profiler == "ncu":  # ncu replays every kernel per metric pass: a few timed iterations suffice
            from tracekit.collectors.profilers.ncu import NCU_ITERATIONS

            cfg["iters"] = min(o.iters, NCU_ITERATIONS)
            cfg["nvtx"] = "plain"  # nvtxRangePushA: ncu's --nvtx-include matches its plain ASCII message
        return cfg

    # -- one configuration --------------------------------------------------------------------------------
    def _worker(self, cfg: dict[str, Any], tmp: Path, wrap: list[str] | None = None) -> dict[str, Any]:
        """Run one configuration: in this process (``in_process``), else in a fresh worker process, optionally
        under a wrapping profiler command line (``wrap`` = nsys/ncu argv up to the child). Every timing of a
        sweep runs in the same conditions (a fresh process per run), so traced/untraced ratios compare like
        with like. RunFailure with the worker's error in one line."""
        if wrap is None and self.opts.in_process:
            from tracekit.collectors import worker

            return worker.run_config(cfg)
        result_file = tmp / f"result-{cfg['profiler']}.json"
        child = [
            sys.executable,
            "-m",
            "tracekit.collectors.worker",
            "--config",
            json.dumps(cfg),
            "--result",
            str(result_file),
        ]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH")) if p)
        log = tmp / f"worker-{cfg['profiler']}.log"
        with open(log, "wb") as fh:
            proc = subprocess.run([*(wrap or []), *child], stdout=fh, stderr=subprocess.STDOUT, env=env)
        result = json.loads(result_file.read_text()) if result_file.is_file() else {}
        if result.get("error"):
            raise (TracekitError if result.get("usage") else RunFailure)(result["error"])
        if not result:
            from tracekit.collectors.gpu import first_error_line

            text = log.read_text(errors="replace")
            lines = [ln for ln in text.splitlines() if ln.strip()]
            what = cfg["profiler"] if cfg["profiler"] != "none" else "untraced"
            why = (first_error_line(text) if wrap else None) or (lines[-1] if lines else "no output")
            raise RunFailure(f"{what} run failed (exit {proc.returncode}): {why}")
        return result

    def _untraced(self, batch: int, seq: int, tmp: Path) -> dict[str, Any]:
        return self._worker(self._cfg(batch, seq, "none"), tmp)

    def _stats(self, result: dict[str, Any]) -> dict[str, Any]:
        """A timed set's statistics: :func:`latency_stats` (mean, percentiles, count) and the stability rules'
        (:func:`tracekit.analyzers.stability.measure`: median, 95% interval, CV, dropped iterations, cause)."""
        from tracekit.analyzers.stability import measure

        latencies = result["latencies_ms"]
        cpu = result.get("cpu_ms") or None
        preempted = result.get("preempted") or None
        stats = latency_stats(latencies)
        device = "cpu" if self.device == "cpu" else "gpu"
        stats.update(measure(latencies, cpu, device=device, preempted=preempted).to_json())
        stats["count"] = len(latencies)
        if cpu:
            stats["cpu_ms_mean"] = sum(cpu) / len(cpu)
        if result.get("stopped_by"):
            stats["stopped_by"] = result["stopped_by"]
        return stats

    def _latency_rows(
        self, batch: int, seq: int, which: str, result: dict[str, Any], stats: dict[str, Any]
    ) -> list[tuple[Any, ...]]:
        """latency.csv rows of one timed set (``set``: "untraced" or the profiler): every iteration's latency,
        process CPU time and the stability rule that dropped it, if any."""
        o = self.opts
        latencies = result["latencies_ms"]
        cpu = result.get("cpu_ms") or [None] * len(latencies)
        dropped = {i: "warmup" for i in stats.get("dropped_warmup") or []}
        dropped.update({i: "outlier" for i in stats.get("dropped_outliers") or []})
        return [
            (
                o.runtime,
                o.model,
                self.device,
                o.precision,
                batch,
                seq,
                i,
                round(v, 6),
                None if c is None else round(c, 6),
                dropped.get(i, ""),
                which,
            )
            for i, (v, c) in enumerate(zip(latencies, cpu, strict=False))
        ]

    def _say(self, entry: dict[str, Any], batch: int, seq: int, what: str, warnings: list[str]) -> None:
        for warning in warnings:
            entry.setdefault("warnings", []).append(f"{what}: {warning}")
            print(f"tracekit collect: warning: b{batch} s{seq} {what}: {warning}", file=sys.stderr)

    def _traced(
        self, batch: int, seq: int, profiler: str, tmp: Path
    ) -> tuple[dict[str, Any], dict[str, Path]]:
        """Run one profiler; returns (worker result, {final name: finished file in tmp})."""
        stem = config_stem(self.opts.runtime, batch, seq)
        final = TRACE_NAMES[profiler].format(stem=stem)
        if profiler in ("torch", "ort"):
            result = self._worker(self._cfg(batch, seq, profiler, str(tmp / final)), tmp)
            if not result.get("trace") or not Path(result["trace"]).is_file():
                raise RunFailure(f"{profiler} profiler wrote no trace")
            return result, {final: Path(result["trace"])}
        base = tmp / f"{stem}.{profiler}"
        if profiler == "nsys":
            from tracekit.collectors.profilers import nsys as nsys_mod

            wrap = nsys_mod.build_profile_argv(
                self.nsys,
                base,
                [],
                self.device.startswith("cuda"),
                self.gpu_metrics_device,
                self.metrics_option,
            )
        else:
            from tracekit.collectors.profilers import ncu as ncu_mod

            wrap = ncu_mod.build_profile_argv(self.ncu, base, [])
        result = self._worker(self._cfg(batch, seq, profiler), tmp, wrap)
        if profiler == "nsys":
            from tracekit.collectors.profilers.nsys import finalize

            report, sqlite = finalize(self.nsys, base)
            self._verify_gpu_metrics(sqlite)
            return result, {final: sqlite, f"{stem}.nsys{report.suffix}": report}
        from tracekit.collectors.profilers.ncu import export_csv, no_report_reason

        report = base.with_name(base.name + ".ncu-rep")
        if not report.is_file():
            log = tmp / "worker-ncu.log"
            raise RunFailure(no_report_reason(log.read_text(errors="replace") if log.is_file() else ""))
        export_csv(self.ncu, report, tmp / final)
        return result, {final: tmp / final, f"{stem}.ncu.ncu-rep": report}

    def _verify_gpu_metrics(self, sqlite: Path) -> None:
        """Check the probe's "permitted" on the first nsys trace (run.json ``gpu_metrics.verified``: True,
        False with a note, or None = unverified); a False stops asking for metrics in later configurations."""
        metrics = self.gpu_metrics
        if not metrics or not metrics.get("permitted") or "verified" in metrics:
            return
        from tracekit.collectors.profilers.nsys import verify_gpu_metrics

        verified, detail = verify_gpu_metrics(sqlite, int(self.gpu_metrics_device or 0))
        metrics.update(verified=verified, verification=detail)
        if verified is False:
            self.gpu_metrics_device = None
            metrics["permitted"] = False
            note = f"nsys GPU metrics turned off after the first trace: {detail}"
            self.notes.append(note)
            print(f"tracekit collect: note: {note}", file=sys.stderr)

    def _meta(
        self,
        profiler: str,
        batch: int,
        seq: int,
        untraced: dict[str, float],
        result: dict[str, Any],
        traced: dict[str, float],
    ) -> dict[str, Any]:
        in_trace = profiler == "ort" or "runs_before_timed" in result
        meta = {
            "synthetic": False,
            "made_by": "tracekit collect",
            "profiler": profiler,
            "runtime": self.opts.runtime,
            "model": self.opts.model,
            "batch_size": batch,
            "seq_len": seq,
            "precision": self.opts.precision,
            "device": "gpu" if self.device.startswith("cuda") else "cpu",
            "device_name": self.device,
            "gpu": (self.gpu or {}).get("name"),
            "cpu": self.run["cpu"],
            "measurement": "real",
            # the ranges that are the timed iterations: ORT's profile records each InferenceSession.run, the
            # call the untraced loop timed, as a 'model_run' (the collector's NVTX 'iteration' is not in it)
            "range": "model_run" if profiler == "ort" else "iteration",
            "iterations": len(result.get("latencies_ms") or []) or self.opts.iters,  # ncu runs fewer
            # Runs the trace holds before the timed ones (ORT profiles record from session creation: shape
            # probes, warm-up and ORT's CUDA-graph capture run; nsys on CUDA: the profiler warm-up step after
            # the capture opened); analyze skips that many by default.
            "warmup_iterations": result.get("runs_before_timed", self.opts.warmup)
            if in_trace
            else self.opts.warmup,
            "warmup_runs": self.opts.warmup,
            "warmup_in_trace": in_trace,
            # torch.profiler: runs traced and discarded by its schedule before the timed ones (not in the
            # trace); nsys on CUDA: the same runs, in the trace (warmup_iterations)
            **(
                {"profiler_warmup_steps": result["profiler_warmup_steps"]}
                if "profiler_warmup_steps" in result
                else {}
            ),
            "tf32": self.opts.tf32,
            "attention": result.get("attention"),
            "warnings": result.get("warnings") or [],
            "untraced_latency_ms": untraced,
            "traced_latency_ms": traced,
            "nvtx": result.get("nvtx"),
            "operator_ranges": result.get("op_ranges", False),
            "runtime_details": result.get("describe"),
            "versions": {
                k: self.run["versions"].get(k)
                for k in ("torch", "onnxruntime", "transformers", "nsys", "ncu", "cuda", "driver", "python")
                if self.run["versions"].get(k)
            },
        }
        if self.opts.layers or self.opts.hidden:
            meta["model_overrides"] = {"layers": self.opts.layers, "hidden": self.opts.hidden}
        return meta

    def _write_latency(self) -> None:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(LATENCY_COLUMNS)
        writer.writerows(self.latency_rows)
        write_text_atomic(self.out / LATENCY_FILE, buf.getvalue())

    def _config(self, batch: int, seq: int, advance: Any) -> dict[str, Any]:
        opts = self.opts
        stem = config_stem(opts.runtime, batch, seq)
        entry: dict[str, Any] = {
            "batch_size": batch,
            "seq_len": seq,
            "status": "ok",
            "error": None,
            "untraced_latency_ms": None,
            "traces": {},
            "traced_latency_ms": {},
            "perturbation": {},
        }
        finished: list[tuple[Path, Path]] = []  # (tmp file, final path), renamed only when the config is done
        metas: dict[str, dict[str, Any]] = {}
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{stem}-", dir=self.out))
        try:
            untraced_run = self._untraced(batch, seq, tmp)
            untraced = self._stats(untraced_run)
            entry["untraced_latency_ms"] = untraced
            self._say(entry, batch, seq, "untraced", untraced["warnings"])
            rows = self._latency_rows(batch, seq, "untraced", untraced_run, untraced)
            advance()
            for prof in self.profilers:
                sub = tmp / prof
                sub.mkdir()
                result, files = self._traced(batch, seq, prof, sub)
                traced = self._stats(result)
                rows += self._latency_rows(batch, seq, prof, result, traced)
                entry["traced_latency_ms"][prof] = traced["mean"]
                entry.setdefault("traced_stats", {})[prof] = traced
                self._say(entry, batch, seq, f"{prof} (traced)", traced["warnings"])
                # traced/untraced medians (as report's profiler_ratio): a mean carries the iterations the
                # stability rules drop (a 180 ms first run among 11 ms ones had read 0.68, tracing "faster")
                entry["perturbation"][prof] = (
                    traced["median"] / untraced["median"] if untraced.get("median") else None
                )
                entry["traces"][prof] = TRACE_NAMES[prof].format(stem=stem)
                entry.setdefault("runtime_details", result.get("describe"))
                for warning in result.get("warnings") or []:
                    entry.setdefault("warnings", []).append(f"{prof}: {warning}")
                    print(f"tracekit collect: warning: b{batch} s{seq} {prof}: {warning}", file=sys.stderr)
                for name, path in files.items():
                    finished.append((path, self.out / name))
                metas[f"{stem}.{prof}.meta.json"] = self._meta(prof, batch, seq, untraced, result, traced)
                advance()
            for src, dst in finished:
                os.replace(src, dst)
            for name, meta in metas.items():
                write_text_atomic(self.out / name, json.dumps(meta, indent=2, default=str) + "\n")
            self.latency_rows.extend(rows)
        except RunFailure as exc:
            entry.update(status="failed", error=exc.message, traces={}, traced_latency_ms={}, perturbation={})
            entry["logs"] = self._keep_logs(tmp, stem)
        except TracekitError:  # a usage problem (exit 2): the whole sweep stops
            self._keep_logs(tmp, stem)
            raise
        except Exception as exc:  # a runtime or profiler crash: recorded, the sweep goes on
            entry.update(
                status="failed", error=_one_line(exc), traces={}, traced_latency_ms={}, perturbation={}
            )
            entry["logs"] = self._keep_logs(tmp, stem)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return entry

    def _keep_logs(self, tmp: Path, stem: str) -> list[str]:
        """Move the worker/profiler logs of a failed configuration to ``logs/`` (they hold the reason)."""
        kept: list[str] = []
        logs = [p for p in sorted(tmp.rglob("*.log")) if p.stat().st_size]
        if not logs:
            return kept
        (self.out / "logs").mkdir(exist_ok=True)
        for log in logs:
            name = f"logs/{stem}.{log.stem}.log"
            os.replace(log, self.out / name)
            kept.append(name)
        return kept

    # -- the sweep ----------------------------------------------------------------------------------------
    def execute(self) -> dict[str, Any]:
        """Run every configuration; returns run.json's content. RunFailure (exit 1) when any config failed."""
        import signal

        def _terminate(signum: int, frame: Any) -> None:  # SIGTERM cleans up like Ctrl-C
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGTERM, _terminate) if _main_thread() else None
        try:
            return self._execute()
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    def _execute(self) -> dict[str, Any]:
        self._prepare()
        opts = self.opts
        grid = [(b, s) for s in (opts.seq_lens or []) for b in opts.batch_sizes]
        steps = len(grid) * (1 + len(self.profilers))
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        show = opts.progress and not opts.quiet and console.is_terminal
        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not show,
            transient=False,
        )
        with progress:
            task = progress.add_task(f"{opts.model} {opts.runtime} {self.device}", total=steps)
            try:
                self._sweep(grid, progress, task, show)
            except KeyboardInterrupt:
                self._stopped(grid, "interrupted", "the sweep was interrupted")
                raise
            except Exception as exc:  # a usage problem found mid-sweep (TracekitError): the sweep stops
                self._stopped(grid, "stopped", f"the sweep stopped: {_one_line(exc)}")
                raise
        self.run["finished"] = _now()
        self.run["status"] = "complete"
        write_run_json(self.out, self.run)
        failed = [c for c in self.run["configs"] if c["status"] != "ok"]
        if failed:
            raise RunFailure(
                f"{len(failed)} of {len(grid)} configurations failed; first: {failed[0]['error']} "
                f"(completed ones are in {self.out})"
            )
        return self.run

    def _stopped(self, grid: list[tuple[int, int]], status: str, why: str) -> None:
        """Mark run.json ``status`` ("interrupted": Ctrl-C or SIGTERM; "stopped": an error that ends the sweep):
        the configurations not run are listed as "skipped", so the partial run is not taken for a complete one
        (the finished configurations' files stay as they are)."""
        done = len(self.run["configs"])
        for batch, seq in grid[done:]:
            self.run["configs"].append(
                {
                    "batch_size": batch,
                    "seq_len": seq,
                    "status": "skipped",
                    "error": f"not run: {why}",
                    "untraced_latency_ms": None,
                    "traces": {},
                    "traced_latency_ms": {},
                    "perturbation": {},
                }
            )
        self.run["status"] = status
        write_run_json(self.out, self.run)
        print(
            f"tracekit collect: {status}: {done} of {len(grid)} configurations done in {self.out}; "
            f"run.json says status '{status}' and lists the others as skipped",
            file=sys.stderr,
        )

    def _sweep(self, grid: list[tuple[int, int]], progress: Any, task: Any, show: bool) -> None:
        opts = self.opts
        for batch, seq in grid:
            progress.update(task, description=f"{opts.model} {opts.runtime} b{batch} s{seq}")
            t0 = time.perf_counter()
            entry = self._config(batch, seq, lambda: progress.advance(task))
            self.run["configs"].append(entry)
            details = entry.get("runtime_details") or {}
            if details.get("provider_used") and "onnxruntime_provider" not in self.run:
                self.run["onnxruntime_provider"] = details["provider_used"]
            if entry["status"] == "ok":
                self._write_latency()
            write_run_json(self.out, self.run)
            if not show and not opts.quiet:
                lat = entry["untraced_latency_ms"]
                what = _latency_words(lat) if lat and entry["status"] == "ok" else entry["error"]
                print(
                    f"tracekit collect: b{batch} s{seq}: {entry['status']} ({what}; "
                    f"{time.perf_counter() - t0:.1f} s)",
                    file=sys.stderr,
                )
