#!/usr/bin/env python
"""Benchmark of many-trace analysis (issue 29): jobs, a Dask cluster, and the Parquet cache.

    python benchmarks/fleet.py [--ranks 16] [--kernels 1e5] [--cache-kernels 1e6] [--repeat 3]
                               [--only jobs|dask|cache] [--write-results]

On **synthetic** traces (``tracekit simulate --ranks N --kernels K``: N rank traces of K kernels each, cached
under ``benchmarks/.cache/``) it measures, each command in a fresh process (best wall time of ``--repeat``):

- ``tracekit analyze DIR --jobs 1`` and ``--jobs 2``, timed alternately: the speed-up of two worker
  processes on two cores;
- ``tracekit analyze DIR --scheduler ADDR`` against a local Dask cluster (2 worker processes, 1 thread each,
  started before timing: what a user with a running cluster pays), twice: with Dask's default settings, and
  with ``docs/dask-workers.yaml`` (the worker profiler off, the nanny's ``MALLOC_TRIM_THRESHOLD_`` left
  unset), each against ``--jobs 2`` timed alternately with it; with each, and with ``--jobs 2``, the mean time of one trace's task where it ran
  (:attr:`tracekit.fleet.run.Outcome.seconds`, one more run through :func:`tracekit.fleet.run.analyze_many`,
  after the timed ones); and one rank trace analyzed alone with and without the environment a Dask nanny
  gives its workers (``MALLOC_TRIM_THRESHOLD_=65536``), timed alternately;
- peak memory as the largest **sum of PSS** (proportional set size, ``/proc/PID/smaps_rollup``) over the command
  and its descendants, sampled every 20 ms in one extra run (timed runs are not sampled: the sampler takes a
  good part of a core): pages the workers share with the command (or the fork server) are counted once, not
  once per process as an RSS sum would. Against one rank trace analyzed alone, measured the same way; and the
  same pair on the four tiny committed rank traces (``sample_traces/synthetic/ranks4``, 84 kernels each): what
  the pool's processes (the command and the two workers it forks) cost with almost no trace data;
- the cache (``--cache-kernels``, the simulated nsys SQLite and Kineto JSON of benchmarks/run.py's cache): the
  first analysis without a cache against a re-analysis from a warm cache with other options (``--skip 1``),
  both through :func:`tracekit.fleet.run.analyze_many` with ``jobs=1`` in a fresh process (interpreter
  start-up and imports included, as a user pays them); and the same through the ``tracekit`` program
  (``analyze TRACE --format json`` against ``analyze TRACE --cache DIR --skip 1 --format json``, timed
  alternately), which begins a large Kineto file's decoding while it loads the analysis (not for a trace the
  cache holds) and skips the interpreter's teardown at exit; and in one Python process, as a notebook calls
  ``tracekit.analyze(TRACE)`` and then ``tracekit.analyze(TRACE, skip=1, cache=DIR)`` (imports done before
  timing; best of ``--repeat`` calls each, the cache filled by an untimed call between them).

Targets (issue 29): ``--jobs 2`` >= 1.7x faster than ``--jobs 1``; peak of the whole run <= 1.5x a single
trace's; the Dask cluster within 1.2x of ``--jobs 2``; cached re-analysis >= 5x faster than the first.
``--write-results`` appends the numbers, machine and date to benchmarks/results.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"


def pss_mb(pid: int) -> float:
    """PSS (MB) of ``pid`` and all its descendants (0 for processes gone meanwhile)."""
    return sum(mb for _, mb in pss_tree(pid))


def pss_tree(pid: int, role: str = "the command") -> list[tuple[str, float]]:
    """(role, PSS MB) of ``pid`` and each of its descendants: the command and its workers, or (a fork server
    started them) multiprocessing's resource tracker, the fork server and its workers (told by their command
    lines and parents)."""
    out: list[tuple[str, float]] = []
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            mb = next((int(line.split()[1]) / 1024.0 for line in fh if line.startswith("Pss:")), 0.0)
        out.append((role, mb))
        children: list[int] = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                children += [int(c) for c in fh.read().split()]
    except (OSError, ValueError):
        return out
    for child in children:
        try:
            with open(f"/proc/{child}/cmdline", "rb") as fh:
                line = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        kind = (
            "a worker"
            if role == "the fork server"
            else "the resource tracker"
            if "resource_tracker" in line
            else "the fork server"
            if "forkserver" in line
            else "a worker"  # forked from the command (tracekit.fleet.run.start_method)
            if role == "the command"
            else "a child"
        )
        out += pss_tree(child, kind)
    return out


def peak_breakdown(cmd: list[str], env: dict[str, str] | None = None) -> list[tuple[str, float]]:
    """One run of ``cmd``, sampled every 20 ms: the (role, PSS MB) of each of its processes at the sample
    whose sum is the largest (:func:`pss_tree`)."""
    best: list[tuple[str, float]] = []
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    while proc.poll() is None:
        now = pss_tree(proc.pid)
        if sum(mb for _, mb in now) > sum(mb for _, mb in best):
            best = now
        time.sleep(0.02)
    return best


def run_measured(
    cmd: list[str], env: dict[str, str] | None = None, sample: bool = True
) -> tuple[float, float]:
    """(wall seconds, peak PSS MB of the command's process tree) of one run; raises on a non-zero exit.
    ``sample`` False: no memory sampling (peak 0), so the sampler's own CPU (reading smaps_rollup of every
    process every 20 ms costs a good part of a core) does not slow the run it times."""
    peak = 0.0
    done = threading.Event()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)

    def watch() -> None:
        nonlocal peak
        while not done.wait(0.02):
            peak = max(peak, pss_mb(proc.pid))

    thread = threading.Thread(target=watch, daemon=True)
    if sample:
        thread.start()
    _, err = proc.communicate()
    seconds = time.perf_counter() - start
    done.set()
    if sample:
        thread.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}...: exit {proc.returncode}: {err.decode()[-500:]}")
    return seconds, peak


def best_of(
    cmd: list[str], repeat: int, env: dict[str, str] | None = None, memory: bool = True
) -> tuple[float, float]:
    """Best wall time of ``repeat`` unsampled runs, and (``memory``) the peak PSS of one more, sampled, run."""
    seconds = min(run_measured(cmd, env, sample=False)[0] for _ in range(repeat))
    return seconds, run_measured(cmd, env)[1] if memory else 0.0


def alternately(
    cmds: list[list[str]], repeat: int, env: dict[str, str], envs: list[dict[str, str]] | None = None
) -> list[float]:
    """Best wall seconds of each command over ``repeat`` rounds that run each once, in turn (unsampled): a
    drift of the machine's speed (a shared host) then falls on all of them alike. ``envs``: each command's
    environment (default ``env`` for all)."""
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(repeat):
        for cmd, cmd_env, seen in zip(cmds, envs or [env] * len(cmds), times, strict=True):
            seen.append(run_measured(cmd, cmd_env, sample=False)[0])
    return [min(seen) for seen in times]


def tracekit(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracekit.cli", *args]


def rank_traces(ranks: int, kernels: int) -> Path:
    out = CACHE / f"ranks{ranks}-k{kernels}"
    if not (out / "ranks.synthetic.truth.json").is_file():
        CACHE.mkdir(exist_ok=True)
        subprocess.run(
            tracekit(
                "simulate",
                "--ranks",
                str(ranks),
                "--kernels",
                str(kernels),
                "-q",
                "--overwrite",
                "-o",
                str(out),
            ),
            check=True,
        )
    return out


def cache_traces(kernels: int) -> dict[str, Path]:
    """benchmarks/run.py's simulated traces of ``kernels`` kernels: nsys SQLite and Kineto JSON."""
    sys.path.insert(0, str(HERE))
    import run as bench  # benchmarks/run.py: its simulated traces

    return bench.ensure_trace(CACHE, kernels, kineto=True)


CACHE_CHILD = (
    "import sys, time\n"
    "from tracekit.fleet.run import analyze_many\n"
    "from tracekit.session import AnalysisOptions\n"
    "t = time.perf_counter()\n"
    "o = analyze_many([sys.argv[1]], AnalysisOptions(skip=int(sys.argv[3])), jobs=1, cache_dir=sys.argv[2] or None)\n"
    "assert o[0].ok, o[0].error\n"
)


#: One Python process, as a notebook runs it (imports done before timing): the first analysis without a cache,
#: the call that fills the cache (untimed), then the re-analysis with another ``skip`` from it, best of
#: ``repeat`` each; prints "first warm" seconds.
NOTEBOOK_CHILD = (
    "import sys, time\n"
    "import tracekit\n"
    "from tracekit.analyzers import attribution, iterations  # noqa: F401 (imports, not timed)\n"
    "trace, folder, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
    "def best(**kw):\n"
    "    times = []\n"
    "    for _ in range(repeat):\n"
    "        t = time.perf_counter(); tracekit.analyze(trace, **kw); times.append(time.perf_counter() - t)\n"
    "    return min(times)\n"
    "first = best()\n"
    "tracekit.analyze(trace, cache=folder)\n"
    "print(first, best(skip=1, cache=folder))\n"
)

#: the committed synthetic rank traces: tiny (84 kernels each), so that a run on them measures what its
#: processes cost by themselves
TINY_RANKS = HERE.parent / "sample_traces" / "synthetic" / "ranks4"
TINY_KERNELS = 84

#: the Dask settings the README recommends for workers that analyze traces
DASK_WORKERS = HERE.parent / "docs" / "dask-workers.yaml"

TASK_CHILD = (
    "import glob, sys\n"
    "from tracekit.fleet.run import analyze_many\n"
    "from tracekit.session import AnalysisOptions\n"
    "paths = sorted(glob.glob(sys.argv[1] + '/*.json.gz'))\n"
    "target = sys.argv[2]\n"
    "o = analyze_many(paths, AnalysisOptions(), jobs=2, scheduler=None if target == '2' else target)\n"
    "assert all(x.ok for x in o)\n"
    "print(sum(x.seconds for x in o) / len(o))\n"
)


def task_seconds(folder: Path, env: dict[str, str], target: str) -> float:
    """The mean seconds of one trace's task where it ran (``target``: "2" for ``--jobs 2``, or a scheduler
    address), from one run of :func:`tracekit.fleet.run.analyze_many` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", TASK_CHILD, str(folder), target],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(done.stdout.split()[-1])


def dotted(tree: dict[str, object], prefix: str = "") -> dict[str, object]:
    """A nested config as dotted keys (``dask.config.set`` replaces a whole subtree given as a dict)."""
    out: dict[str, object] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(dotted(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def on_local_cluster(
    folder: Path, env: dict[str, str], repeat: int, settings: Path | None
) -> tuple[float, float, float]:
    """(best wall seconds of ``analyze DIR --scheduler``, best of ``--jobs 2`` timed alternately with it, mean
    seconds of one trace's task on the cluster) on a local Dask cluster of 2 worker processes of 1 thread,
    started before timing, with Dask's defaults or with the settings of the YAML file ``settings``. The two
    commands alternate so that a drift of the machine's speed (a shared host) does not fall on one of them."""
    import dask

    extra = {} if settings is None else dotted(dask.config.collect([str(settings)], env={}))
    with environ_restored():  # a nanny sets its pre-spawn variables (MALLOC_TRIM_THRESHOLD_) in this process
        return _timed_on_cluster(folder, env, repeat, extra)


@contextlib.contextmanager
def environ_restored() -> Iterator[None]:
    """The process environment as it was before, whatever the block set (a LocalCluster's nannies set their
    pre-spawn variables in the process that runs them, for its later subprocesses to inherit)."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _timed_on_cluster(
    folder: Path, env: dict[str, str], repeat: int, extra: dict[str, object]
) -> tuple[float, float, float]:
    import dask
    from distributed import LocalCluster

    with (
        dask.config.set(extra),
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
    ):
        address = cluster.scheduler_address
        on_dask = tracekit("analyze", str(folder), "--scheduler", address, "--format", "json")
        in_pool = tracekit("analyze", str(folder), "--jobs", "2", "--format", "json")
        run_measured(on_dask, env, sample=False)  # the workers import tracekit (not timed)
        dask_s, pool_s = alternately([on_dask, in_pool], repeat, env)
        return dask_s, pool_s, task_seconds(folder, env, address)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--kernels", type=float, default=1e5, help="kernels per rank trace (default 1e5)")
    p.add_argument("--cache-kernels", type=float, default=1e6, help="kernels of the cache benchmark's trace")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--skip-dask", action="store_true")
    p.add_argument(
        "--only",
        choices=("jobs", "dask", "cache"),
        help="run one part only: jobs (one trace, --jobs 1/2, memory), dask (both clusters), cache",
    )
    p.add_argument("--write-results", action="store_true")
    args = p.parse_args(argv)
    env = dict(os.environ, TRACEKIT_NO_PROGRESS="1")
    folder = rank_traces(args.ranks, int(args.kernels))
    one = sorted(folder.glob("rank*.synthetic.json.gz"))[0]
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    if args.only in (None, "jobs"):
        single_s, single_mb = best_of(tracekit("analyze", str(one), "--format", "json"), args.repeat, env)
        say(f"one rank trace alone: {single_s:.2f} s, peak PSS {single_mb:.0f} MB")
        jobs1 = tracekit("analyze", str(folder), "--jobs", "1", "--format", "json")
        jobs2 = tracekit("analyze", str(folder), "--jobs", "2", "--format", "json")
        j1_s, j2_s = alternately([jobs1, jobs2], args.repeat, env)
        j1_mb, j2_mb = run_measured(jobs1, env)[1], run_measured(jobs2, env)[1]
        say(f"{args.ranks} traces, --jobs 1: {j1_s:.2f} s, peak PSS {j1_mb:.0f} MB")
        say(
            f"{args.ranks} traces, --jobs 2: {j2_s:.2f} s, peak PSS {j2_mb:.0f} MB: {j1_s / j2_s:.2f}x faster "
            f"(target >= 1.7x); peak {j2_mb / single_mb:.2f}x one trace's (target <= 1.5x)"
        )
        parts = peak_breakdown(jobs2, env)
        workers = [mb for role, mb in parts if role == "a worker"]
        others = ", ".join(f"{role} {mb:.0f} MB" for role, mb in parts if role != "a worker")
        say(
            f"--jobs 2 at its peak ({sum(mb for _, mb in parts):.0f} MB, one more run): {others}, "
            f"{len(workers)} workers {' + '.join(f'{mb:.0f}' for mb in workers)} MB; the workers alone "
            f"{sum(workers) / single_mb:.2f}x one trace's peak"
        )
        # the same comparison with almost no trace data: what the processes of a pool cost by themselves
        tiny = [str(p) for p in sorted(TINY_RANKS.glob("rank*.synthetic.json.gz"))]
        tiny_one = run_measured(tracekit("analyze", tiny[0], "--format", "json"), env)[1]
        tiny_pool = run_measured(tracekit("analyze", *tiny, "--jobs", "2", "--format", "json"), env)[1]
        say(
            f"{len(tiny)} tiny rank traces ({TINY_RANKS.relative_to(HERE.parent)}, {TINY_KERNELS} kernels each), "
            f"--jobs 2: peak PSS {tiny_pool:.0f} MB against {tiny_one:.0f} MB for one of them alone: "
            f"{tiny_pool / tiny_one:.2f}x with almost no trace data (the interpreters and libraries of the "
            "pool's processes)"
        )
    if args.only in (None, "dask") and not args.skip_dask:
        say(f"one trace's task in a --jobs 2 worker: {task_seconds(folder, env, '2'):.3f} s (mean)")
        alone = tracekit("analyze", str(one), "--format", "json")
        worker_env = dict(env, TRACEKIT_DECODE_WORKER="0", POLARS_MAX_THREADS="1")  # as a worker runs it
        plain_s, trimmed_s = alternately(
            [alone, alone], args.repeat, env, [worker_env, dict(worker_env, MALLOC_TRIM_THRESHOLD_="65536")]
        )
        say(
            f"one rank trace alone as a worker reads it (one process, one polars thread), with "
            f"MALLOC_TRIM_THRESHOLD_=65536 (as a Dask nanny starts workers): {trimmed_s:.2f} s against "
            f"{plain_s:.2f} s without, timed alternately: {trimmed_s / plain_s:.2f}x"
        )
        for label, settings in (("default settings", None), ("docs/dask-workers.yaml", DASK_WORKERS)):
            d_s, pool_s, task_s = on_local_cluster(folder, env, args.repeat, settings)
            say(
                f"{args.ranks} traces on a local Dask cluster (2 workers, {label}): {d_s:.2f} s against "
                f"--jobs 2 timed alternately {pool_s:.2f} s: {d_s / pool_s:.2f}x (target <= 1.2x); "
                f"one trace's task {task_s:.3f} s (mean)"
            )
    for fmt, trace in cache_traces(int(args.cache_kernels)).items() if args.only in (None, "cache") else ():
        cache_dir = Path(tempfile.mkdtemp(prefix="tk-cache-"))
        child = [sys.executable, "-c", CACHE_CHILD, str(trace)]
        try:
            first_s, _ = best_of([*child, "", "0"], args.repeat, env, memory=False)
            run_measured([*child, str(cache_dir), "0"], env, sample=False)  # fill it
            warm_s, _ = best_of([*child, str(cache_dir), "1"], args.repeat, env, memory=False)
            say(
                f"cache, {fmt} trace of {int(args.cache_kernels):,} kernels, through the Python API: first "
                f"analysis {first_s:.2f} s, re-analysis from the cache (other --skip) {warm_s:.2f} s: "
                f"{first_s / warm_s:.2f}x (target >= 5x)"
            )
            notebook_dir = Path(tempfile.mkdtemp(prefix="tk-cache-nb-"))
            try:
                done = subprocess.run(
                    [sys.executable, "-c", NOTEBOOK_CHILD, str(trace), str(notebook_dir), str(args.repeat)],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                )
            finally:
                shutil.rmtree(notebook_dir, ignore_errors=True)
            first_s, warm_s = (float(x) for x in done.stdout.split()[-2:])
            say(
                f"cache, {fmt} trace of {int(args.cache_kernels):,} kernels, in one Python process (a notebook: "
                f"`tracekit.analyze`, imports done): first analysis {first_s:.2f} s, re-analysis from the cache "
                f"(`skip=1, cache=DIR`) {warm_s:.2f} s: {first_s / warm_s:.2f}x (target >= 5x)"
            )
            plain = tracekit("analyze", str(trace), "--format", "json")
            cached = [*plain, "--cache", str(cache_dir), "--skip", "1"]
            first_s, warm_s = alternately([plain, cached], args.repeat, env)
            say(
                f"cache, {fmt} trace of {int(args.cache_kernels):,} kernels, the tracekit program "
                f"(`analyze --format json`, timed alternately): first analysis {first_s:.2f} s, re-analysis "
                f"from the cache (`--cache DIR --skip 1`) {warm_s:.2f} s: {first_s / warm_s:.2f}x (target >= 5x)"
            )
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
    if args.write_results:
        when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        cpu = platform.processor() or platform.machine()
        with open(HERE / "results.md", "a") as fh:
            fh.write(
                f"\n## Many traces ({when}, {os.cpu_count()} cores, {cpu}, load {os.getloadavg()[0]:.1f})\n\n"
                + "".join(f"- {line}\n" for line in lines)
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
