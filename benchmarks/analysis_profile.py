"""Where one analysis spends its time (issue 29: cached re-analysis of a 10^6-kernel trace), in one process.

    python benchmarks/analysis_profile.py [TRACE] [--kernels 1e6] [--repeat 3] [--lines 25] [--serial]

TRACE: a trace file; without one, benchmarks/run.py's simulated nsys SQLite of ``--kernels`` kernels (made
once, cached under ``benchmarks/.cache/``; ``--kineto`` for its Kineto JSON). It prints, as medians of
``--repeat`` calls of ``tracekit.analyze`` (imports done before timing):

- the first analysis (no cache) and the re-analysis from a warm Parquet cache with another ``skip`` (the
  cache filled by an untimed call between them): wall seconds and CPU seconds of the process (every thread);
- the stages of the cached re-analysis (:mod:`tracekit.session`'s read, assign, gaps and setup, attribute,
  summarize, devices), and the polars operations that took longest, by the line of tracekit that asked
  for them (every eager polars call is one ``collect``).

``--serial`` builds the attribution's setup after the gaps instead of beside them (one thread of tracekit's
own: each stage's time is its own). The machine's load is printed with the figures: on a shared host the CPU
seconds move far less than the wall seconds.
"""

from __future__ import annotations

import argparse
import collections
import functools
import linecache
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: the stages timed: (module, function)
STAGES = (
    ("tracekit.fleet.cache", "cached_read"),
    ("tracekit.analyzers.iterations", "assign"),
    ("tracekit.analyzers.iterations", "gaps_and_setup"),
    ("tracekit.analyzers.iterations", "measure_gaps"),
    ("tracekit.analyzers.iterations", "attribution_setup"),
    ("tracekit.analyzers.iterations", "attribute"),
    ("tracekit.analyzers.iterations", "summarize_stages"),
    ("tracekit.analyzers.plausibility", "findings"),
    ("tracekit.analyzers.devices", "analyze_devices"),
)


def simulated(kernels: int, kineto: bool) -> Path:
    """benchmarks/run.py's simulated trace of ``kernels`` kernels (nsys SQLite, or its Kineto JSON)."""
    sys.path.insert(0, str(HERE))
    import run as bench  # benchmarks/run.py

    files = bench.ensure_trace(HERE / ".cache", kernels, kineto=kineto, log=print)
    return files["kineto" if kineto else "nsys"]


def timed(call: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of ``repeat`` calls."""
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        call()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def wrap_stages(spent: dict[str, float]) -> None:
    """Each stage of :data:`STAGES` adds its wall seconds to ``spent`` (its name the key)."""
    import importlib

    for module_name, name in STAGES:
        module = importlib.import_module(module_name)
        original = getattr(module, name)

        @functools.wraps(original)
        def stage(*args: Any, _f: Any = original, _k: str = name, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return _f(*args, **kwargs)
            finally:
                spent[_k] += time.perf_counter() - start

        setattr(module, name, stage)


def wrap_collect(
    spent: collections.Counter[tuple[str, int]], calls: collections.Counter[tuple[str, int]]
) -> None:
    """Every polars ``collect`` adds its seconds to the line outside polars that asked for it."""
    import polars.lazyframe.engine as engine

    original = engine._LocalEngine.collect

    def collect(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            frame = sys._getframe(1)
            while frame is not None and f"{os.sep}polars{os.sep}" in frame.f_code.co_filename:
                frame = frame.f_back
            key = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("?", 0)
            spent[key] += time.perf_counter() - start
            calls[key] += 1

    engine._LocalEngine.collect = collect  # type: ignore[method-assign]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", nargs="?", help="a trace file (default: the simulated one of --kernels)")
    p.add_argument("--kernels", type=float, default=1e6, help="kernels of the simulated trace")
    p.add_argument("--kineto", action="store_true", help="the simulated Kineto JSON, not the nsys SQLite")
    p.add_argument("--repeat", type=int, default=3, help="calls timed of each (median)")
    p.add_argument("--lines", type=int, default=25, help="polars operations shown, longest first")
    p.add_argument("--serial", action="store_true", help="the attribution's setup after the gaps, not beside")
    args = p.parse_args()

    import tracekit  # noqa: F401 (imported before timing)
    from tracekit.analyzers import attribution, iterations  # noqa: F401 (imports, not timed)

    if args.serial:
        iterations.OVERLAP_MAX_OPS = 0
    trace = Path(args.trace) if args.trace else simulated(int(args.kernels), args.kineto)
    folder = tempfile.mkdtemp(prefix="tk-profile-")
    try:
        profile(trace, folder, args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def profile(trace: Path, folder: str, args: argparse.Namespace) -> None:
    """The figures of the module docstring, the cache in ``folder``."""
    import tracekit

    print(f"{trace} ({os.getloadavg()[0]:.2f} load average, {os.cpu_count()} CPUs)")
    first = timed(lambda: tracekit.analyze(trace), args.repeat)
    tracekit.analyze(trace, cache=folder)  # fills the cache
    cached = timed(lambda: tracekit.analyze(trace, skip=1, cache=folder), args.repeat)
    print(f"first analysis    {first[0]:.3f} s wall, {first[1]:.3f} s CPU (median of {args.repeat})")
    print(
        f"cached, --skip 1  {cached[0]:.3f} s wall, {cached[1]:.3f} s CPU: {first[0] / cached[0]:.2f}x wall"
    )

    stages: dict[str, float] = collections.defaultdict(float)
    lines: collections.Counter[tuple[str, int]] = collections.Counter()
    calls: collections.Counter[tuple[str, int]] = collections.Counter()
    wrap_stages(stages)
    wrap_collect(lines, calls)
    for _ in range(args.repeat):
        tracekit.analyze(trace, skip=1, cache=folder)
    n = args.repeat
    print(
        "\nstages of the cached re-analysis (mean wall ms; gaps_and_setup holds measure_gaps and the setup):"
    )
    for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds / n * 1e3:8.1f}  {name}")
    total = sum(lines.values())
    print(
        f"\npolars operations: {total / n * 1e3:.1f} ms in {sum(calls.values()) // n} calls a run; longest:"
    )
    for (path, line), seconds in lines.most_common(args.lines):
        where = os.path.relpath(path, ROOT) if path.startswith(str(ROOT)) else path
        text = linecache.getline(path, line).strip()[:70]
        print(f"  {seconds / n * 1e3:8.1f} x{calls[(path, line)] // n:<3d} {where}:{line}  {text}")


if __name__ == "__main__":
    main()
