#!/usr/bin/env python
"""Benchmark ``tracekit analyze`` against a bare SQLite scan, ``nsys stats`` and Holistic Trace Analysis.

Every trace is **synthetic**: written by ``tracekit simulate --runtime pytorch --kernels N`` (nsys-schema
SQLite, plus the Kineto ``.json.gz`` for the HTA comparison) and cached under ``benchmarks/.cache/`` keyed
by N and by a hash of the simulator's source, so reruns only measure.

For each size N every tool runs in a fresh child process (stdout discarded). Its wall time is measured
around the child in runs that nothing watches but a guard thread waking every 50 ms (timeout, memory
limit); its peak resident memory in one more run per tool, in which the RSS of the child and all its
descendants is summed every 2 ms (``tracekit analyze`` decodes large Kineto files in worker processes:
all of them count at once): the larger of that sum and every run's ``ru_maxrss``. Sampling /proc every
2 ms costs CPU that a command using both cores loses (measured: 5-6% of analyze's wall time on the 10^5
Kineto file) while a one-core command such as HTA does not (the sampler takes the idle core), so timing
and sampling are kept apart. Measured, per N:

``analyze``  ``python -m tracekit.cli analyze FILE.sqlite --format json`` (seconds, peak MB).
``floor``    the floor the issue asks for: ``SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL`` through
             Python's ``sqlite3`` with ``fetchall()`` in a fresh interpreter. ``analyze/floor`` uses this.
``floor+pl`` the same rows turned into a polars frame (what a reader must at least do); shown, not used
             in ratios.
``nsys``     ``nsys stats`` with the kernel and NVTX summaries (``gpukernsum`` + ``nvtxsum`` on 2022.x/2023.x,
             ``cuda_gpu_kern_sum`` + ``nvtx_sum`` on newer versions; picked from ``--help-reports``), CSV
             to a temporary directory, when ``nsys`` is on PATH.
``HTA``      HolisticTraceAnalysis ``TraceAnalysis`` on the Kineto file (copied as ``rank-0.json.gz`` into
             a temporary directory): parse + ``get_idle_time_breakdown`` + ``get_cuda_kernel_launch_stats``,
             when an interpreter with ``hta`` is found (``--hta-python``, this interpreter, or
             ``benchmarks/.cache/hta-venv``). Only up to ``--hta-max-kernels`` (default 10^6): the Kineto
             JSON of 10^7 kernels is several GB once parsed.
``analyze (Kineto)`` ``python -m tracekit.cli analyze FILE.json.gz --format json`` on the Kineto file HTA
             reads (measured where HTA runs): the same-file comparison with HTA, in wall time and in CPU
             time (user + system of each command and its descendants: HTA uses one core, analyze two
             decoding workers beside itself, so the CPU ratio is what one core would see, and load from
             other processes moves it far less than the wall-time ratio).
``startup``  ``python -c "import tracekit.cli, polars"``: the fixed start-up cost inside every analyze time,
             so that ratios at small N can be read.

Targets (issue 5): analyze/floor <= 2, nsys/analyze >= 5, HTA/analyze >= 10, analyze peak < 2048 MB
(stated for 10^7 kernels; checked at every size).

Usage: ``python benchmarks/run.py [--sizes 1e4,1e5,1e6,1e7] [--repeat R] [--skip-nsys] [--skip-hta]
[--write-results] [--json FILE]``. Times are the best of ``--repeat`` timed runs; peak memory is the largest
over those and the sampled run.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as _dt
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_CACHE = HERE / ".cache"
DEFAULT_SIZES = (10**4, 10**5, 10**6, 10**7)
RUNTIME = "pytorch"
STEM = f"{RUNTIME}_b1_s128.synthetic"

#: Targets of issue 5.
TARGET_FLOOR_RATIO = 2.0  # analyze / floor at most
TARGET_NSYS_RATIO = 5.0  # nsys stats / analyze at least
TARGET_HTA_RATIO = 10.0  # HTA / analyze at least
TARGET_PEAK_MB = 2048.0  # analyze peak RSS below, MB
#: Targets of issue 13, on the Kineto file HTA reads: HTA / analyze at least 10 (TARGET_HTA_RATIO), analyze
#: peak below HTA's and below this many times the uncompressed JSON size.
TARGET_KINETO_JSON_PEAK = 2.0

README_START = "<!-- ratios:start -->"
README_END = "<!-- ratios:end -->"

FLOOR_SCRIPT = r"""
import sqlite3, sys
con = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro&immutable=1", uri=True)
rows = con.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
if len(rows) == 0:
    sys.exit("no kernels")
"""

FLOOR_POLARS_SCRIPT = r"""
import sqlite3, sys
import polars as pl
con = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro&immutable=1", uri=True)
rows = con.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
frame = pl.DataFrame(rows, schema=[("start", pl.Int64), ("end", pl.Int64)], orient="row")
if frame.height == 0:
    sys.exit("no kernels")
"""

HTA_SCRIPT = r"""
import json, logging, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
t1 = time.perf_counter()
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
t2 = time.perf_counter()
analyzer.get_idle_time_breakdown(visualize=False)
t3 = time.perf_counter()
analyzer.get_cuda_kernel_launch_stats(visualize=False)
t4 = time.perf_counter()
import hta
version = getattr(hta, "__version__", None)
if version is None:
    try:
        from importlib.metadata import version as _v
        version = _v("HolisticTraceAnalysis")
    except Exception:
        version = "?"
with open(sys.argv[2], "w") as fh:
    json.dump({"import_s": t1 - t0, "parse_s": t2 - t1, "idle_s": t3 - t2, "launch_s": t4 - t3,
               "version": version}, fh)
"""


# --------------------------------------------------------------------------------------------- measuring


@dataclasses.dataclass
class Measurement:
    """One tool on one file: best wall time (s) and largest peak RSS (MB) over the repeats, or an error;
    ``cpu_seconds``: user + system CPU time of the run with that wall time, its descendants included
    (``tracekit analyze``'s decoding workers), so that a ratio of CPU times says what one core would see."""

    seconds: float | None = None
    peak_mb: float | None = None
    error: str | None = None
    cpu_seconds: float | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.seconds is not None


def _rss_mb(pid: int) -> float:
    """Current resident set size of ``pid`` and all its descendants in MB (0 when unknown)."""
    total = 0.0
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024.0
                    break
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            children = [int(c) for c in fh.read().split()]
    except (OSError, ValueError, IndexError):
        return total
    return total + sum(_rss_mb(child) for child in children)


def _tree_rss_mb(launcher: int) -> float:
    """Current RSS (MB) of the measured command and its descendants: the launcher's tree less the launcher."""
    try:
        with open(f"/proc/{launcher}/task/{launcher}/children") as fh:
            return sum(_rss_mb(int(child)) for child in fh.read().split())
    except (OSError, ValueError):
        return 0.0


#: A tiny launcher between us and the measured command. Linux's ru_maxrss of a child counts the memory of the
#: process it was forked from (the high-water mark of the pre-exec image), so forking the measured command
#: straight from a large parent (pytest, this script) would add the parent's size to the child's peak. The
#: launcher is a bare ``python -S`` (~10 MB): it spawns the command, then writes the command's ru_maxrss (KB)
#: to the file named by its first argument and exits with the command's status.
_LAUNCHER = (
    "import os, resource, sys\n"
    "rc = os.spawnvp(os.P_WAIT, sys.argv[2], sys.argv[2:])\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "open(sys.argv[1], 'w').write(f'{u.ru_maxrss} {u.ru_utime + u.ru_stime}')\n"
    "sys.exit(rc if rc >= 0 else 128 - rc)\n"
)


#: how often a sampled run sums the RSS of the command's processes, and how often the guard of a timed run
#: checks its timeout and memory limit (seconds)
SAMPLE_S = 0.002
GUARD_S = 0.05


class _Watch(threading.Thread):
    """Watches a running command beside the thread that waits for it: every ``interval`` seconds it checks
    the timeout and (every tenth look when sampling, else every look) the memory limit, killing the
    command's process group past either (``reason`` says why), and with ``sample`` it records the largest
    sum of RSS over the command's processes (``tree_peak``)."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        started: float,
        timeout: float | None,
        mem_limit_mb: float | None,
        sample: bool,
    ) -> None:
        super().__init__(name="bench-watch", daemon=True)
        self.proc, self.sample = proc, sample
        self.deadline = None if timeout is None else started + timeout
        self.timeout, self.mem_limit_mb = timeout, mem_limit_mb
        self.interval = SAMPLE_S if sample else GUARD_S
        self.tree_peak = 0.0
        self.reason: str | None = None
        self.done = threading.Event()
        self.started = started

    def run(self) -> None:
        looks = 0
        while not self.done.wait(self.interval):
            if self.sample:
                self.tree_peak = max(self.tree_peak, _tree_rss_mb(self.proc.pid))
            reason = None
            if self.deadline and time.perf_counter() > self.deadline:
                reason = f"timed out after {self.timeout:.0f} s"
            elif (
                self.mem_limit_mb
                and (not self.sample or looks % 10 == 0)
                and (rss := _rss_mb(self.proc.pid)) > self.mem_limit_mb
            ):
                reason = (
                    f"killed: RSS {rss:.0f} MB passed the --mem-limit-mb guard ({self.mem_limit_mb:.0f} MB)"
                )
            if reason:
                self.reason = f"{reason} after {time.perf_counter() - self.started:.1f} s"
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                return
            looks += 1


def measure_once(
    cmd: Sequence[str],
    timeout: float | None = None,
    mem_limit_mb: float | None = None,
    cwd: Path | None = None,
    sample: bool = True,
) -> Measurement:
    """Run ``cmd`` in a fresh child: wall seconds around it, its peak RSS (MB) and its CPU seconds (user +
    system, of the command and every descendant it waited for).

    The peak is the command's ``ru_maxrss`` (its largest process) and, with ``sample``, the largest sum of
    RSS over all its processes, read every :data:`SAMPLE_S` seconds (a command that starts helper
    processes, as ``tracekit analyze`` does for large Kineto files, is charged for all of them at once).
    Without ``sample`` nothing reads /proc while it runs but the guard, every :data:`GUARD_S` seconds:
    the run to time (see the module doc).

    The command runs under a small launcher (see ``_LAUNCHER``) so that its peak is its own. stdout is
    discarded; stderr is kept (last lines) for the error message when the exit status is not 0. The command
    is killed when it runs past ``timeout`` seconds or its RSS passes ``mem_limit_mb`` (a guard for shared
    machines, checked every few milliseconds, so the reported error is a lower bound).
    """
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r", suffix=".maxrss") as maxrss:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _LAUNCHER, maxrss.name, *cmd],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=cwd,
            start_new_session=True,
        )
        watch = _Watch(proc, started, timeout, mem_limit_mb, sample)
        watch.start()
        rc = proc.wait()  # blocking: the end is seen at once, not at the next look
        seconds = time.perf_counter() - started
        watch.done.set()
        watch.join()
        if watch.reason:
            return Measurement(error=watch.reason)
        if rc != 0:
            err.seek(0)
            text = err.read().decode("utf-8", "replace").strip().splitlines()
            tail = " | ".join(line.strip() for line in text[-3:]) or "(no stderr)"
            return Measurement(error=f"exit {rc}: {tail}")
        fields = maxrss.read().split()  # "maxrss_kb cpu_seconds", as the launcher writes them
        peak_mb = max(int(fields[0]) / 1024.0 if fields else 0.0, watch.tree_peak)  # Linux: kilobytes
        cpu = float(fields[1]) if len(fields) > 1 else None  # not measured: no ratio, rather than 0
    return Measurement(seconds=seconds, peak_mb=peak_mb, cpu_seconds=cpu)


def better(best: Measurement | None, m: Measurement) -> Measurement:
    """The combination of two runs of one tool: the faster run (with its ``extra``) and the larger peak; an
    error is kept."""
    if best is None or not best.ok:
        return best or m
    if not m.ok:
        return m
    assert best.seconds is not None and m.seconds is not None
    faster = m if m.seconds < best.seconds else best
    return dataclasses.replace(faster, peak_mb=max(best.peak_mb or 0.0, m.peak_mb or 0.0))


def with_peak(timed: Measurement, sampled: Measurement) -> Measurement:
    """The timed runs' result (:func:`better`) with the peak of the run that sampled memory where larger; the
    sampled run's error when it failed."""
    if not timed.ok:
        return timed
    if not sampled.ok:
        return sampled
    return dataclasses.replace(timed, peak_mb=max(timed.peak_mb or 0.0, sampled.peak_mb or 0.0))


#: one run of a tool; its argument says whether it is the run that samples memory (:func:`measure_once`)
Run = Callable[[bool], Measurement]


def alternate(first: Run, second: Run, repeat: int) -> tuple[Measurement, Measurement]:
    """Two tools measured in alternation (first, second, first, second, ...), each the :func:`better` of its
    ``repeat`` timed runs, then one run of each that samples memory (:func:`with_peak`): a change in the
    shared machine's load over the minutes the slower tool takes then falls on both alike, rather than on
    whichever ran during it (a tool that fails is not run again)."""
    a: Measurement | None = None
    b: Measurement | None = None
    for _ in range(max(1, repeat)):
        if a is None or a.ok:
            a = better(a, first(False))
        if b is None or b.ok:
            b = better(b, second(False))
    assert a is not None and b is not None
    if a.ok:
        a = with_peak(a, first(True))
    if b.ok:
        b = with_peak(b, second(True))
    return a, b


def measure(
    cmd: Sequence[str], repeat: int, timeout: float | None = None, mem_limit_mb: float | None = None
) -> Measurement:
    """Best wall time over ``repeat`` fresh timed runs (:func:`better`; the first error stops) and the
    largest peak RSS, including one more run that samples memory (:func:`with_peak`)."""
    best: Measurement | None = None
    for _ in range(max(1, repeat)):
        best = better(best, measure_once(cmd, timeout, mem_limit_mb, sample=False))
        if not best.ok:
            break
    assert best is not None
    if best.ok:
        best = with_peak(best, measure_once(cmd, timeout, mem_limit_mb, sample=True))
    return best


# ---------------------------------------------------------------------------------------------- traces


def simulator_hash() -> str:
    """Short hash of the simulator's source: cached traces are regenerated when it changes."""
    digest = hashlib.sha256()
    files = sorted((ROOT / "tracekit" / "simulate").glob("*.py")) + [ROOT / "tracekit/commands/simulate.py"]
    for f in files:
        if f.exists():
            digest.update(f.name.encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()[:10]


def trace_dir(cache: Path, n: int) -> Path:
    return cache / f"{RUNTIME}_n{n}_{simulator_hash()}"


def ensure_trace(cache: Path, n: int, kineto: bool, log: Any = None) -> dict[str, Path]:
    """Simulated traces of ``n`` kernels (generated once, cached): {"nsys": .sqlite, "kineto": .json.gz?}."""
    out = trace_dir(cache, n)
    sqlite_file = out / f"{STEM}.sqlite"
    kineto_file = out / f"{STEM}.json.gz"
    if not sqlite_file.exists() or (kineto and not kineto_file.exists()):
        cache.mkdir(parents=True, exist_ok=True)
        fmt = "both" if kineto else "nsys"
        # written into a private folder, renamed when complete: a concurrent run never sees half a trace
        partial = cache / f".partial-{out.name}-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        cmd = [sys.executable, "-m", "tracekit.cli", "simulate", "--runtime", RUNTIME, "--kernels", str(n),
               "--traces", fmt, "-q", "-o", str(partial)]  # fmt: skip
        if log:
            log(f"simulating {n:,} kernels ({fmt}) into {out} (cached for later runs) ...")
        started = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise SystemExit(f"tracekit simulate failed for N={n}: {done.stderr.strip()[-2000:]}")
        for stale in cache.glob(f"{RUNTIME}_n{n}_*"):  # older simulator versions or fewer formats
            shutil.rmtree(stale, ignore_errors=True)
        os.replace(partial, out)
        if log:
            log(f"  simulated in {time.perf_counter() - started:.1f} s")
    files = {"nsys": sqlite_file}
    if kineto_file.exists():
        files["kineto"] = kineto_file
    return files


def kernel_count(sqlite_file: Path) -> int:
    con = sqlite3.connect(f"file:{sqlite_file}?mode=ro&immutable=1", uri=True)
    try:
        return int(con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------- tools


def nsys_version(nsys: str) -> str | None:
    try:
        out = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"(\d{4}\.\d+(?:\.\d+)*)", out)
    return found.group(1) if found else out.strip() or None


def nsys_reports(nsys: str, version: str | None) -> list[str]:
    """Kernel and NVTX summary report names this nsys knows (renamed in 2023.x/2024.x)."""
    try:
        listing = subprocess.run(
            [nsys, "stats", "--help-reports"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        listing = ""
    if re.search(r"^\s*cuda_gpu_kern_sum\b", listing, re.M):
        return ["cuda_gpu_kern_sum", "nvtx_sum"]
    if re.search(r"^\s*gpukernsum\b", listing, re.M):
        return ["gpukernsum", "nvtxsum"]
    year = int(version.split(".")[0]) if version and version[:4].isdigit() else 2022
    return ["cuda_gpu_kern_sum", "nvtx_sum"] if year >= 2024 else ["gpukernsum", "nvtxsum"]


def run_nsys(
    nsys: str,
    reports: list[str],
    sqlite_file: Path,
    repeat: int,
    timeout: float,
    mem_limit_mb: float | None = None,
) -> Measurement:
    with tempfile.TemporaryDirectory(prefix="tracekit-bench-nsys-") as tmp:
        cmd = [nsys, "stats", "--format", "csv", "--force-overwrite", "true", "-o", str(Path(tmp) / "stats")]
        for r in reports:
            cmd += ["--report", r]
        cmd.append(str(sqlite_file))
        m = measure(cmd, repeat, timeout, mem_limit_mb)
        if m.ok:
            made = sorted(p.name for p in Path(tmp).glob("*.csv"))
            if len(made) < len(reports):
                m = Measurement(error=f"nsys stats wrote {made or 'no CSV'} for reports {reports}")
            else:
                m.extra["csv"] = made
    return m


def find_hta_python(explicit: str | None, cache: Path) -> str | None:
    """An interpreter that can ``import hta``: --hta-python, this one, or benchmarks/.cache/hta-venv."""
    candidates = [explicit] if explicit else [sys.executable, str(cache / "hta-venv" / "bin" / "python")]
    for c in candidates:
        if c and Path(c).exists():
            ok = subprocess.run([c, "-c", "import hta.trace_analysis"], capture_output=True, timeout=120)
            if ok.returncode == 0:
                return c
    return None


def run_hta(
    python: str, kineto_file: Path, timeout: float, mem_limit_mb: float | None = None, sample: bool = True
) -> Measurement:
    """One run of HTA on ``kineto_file`` (its phases' times and version in ``extra``; ``sample``: the run that
    samples memory, :func:`measure_once`); the repeats are :func:`alternate`'s, in turn with analyze."""
    with tempfile.TemporaryDirectory(prefix="tracekit-bench-hta-") as tmp:
        trace_dir_ = Path(tmp) / "traces"
        trace_dir_.mkdir()
        os.symlink(kineto_file, trace_dir_ / "rank-0.json.gz")
        phases = Path(tmp) / "phases.json"
        m = measure_once(
            [python, "-c", HTA_SCRIPT, str(trace_dir_), str(phases)], timeout, mem_limit_mb, sample=sample
        )
        if m.ok:
            m.extra = json.loads(phases.read_text()) if phases.exists() else {}
    return m


# ---------------------------------------------------------------------------------------------- results


@dataclasses.dataclass
class Row:
    """All measurements for one size N (seconds, MB) and the derived ratios."""

    n: int
    kernels: int
    sqlite_mb: float
    analyze: Measurement
    floor: Measurement
    floor_polars: Measurement
    nsys: Measurement | None
    hta: Measurement | None
    hta_note: str | None = None
    #: analyze on the Kineto JSON that HTA reads (the same file; measured where HTA runs)
    analyze_kineto: Measurement | None = None
    #: uncompressed size of that Kineto JSON, MB
    kineto_json_mb: float | None = None

    def ratio_floor(self) -> float | None:
        """analyze seconds / floor seconds (floor = sqlite3 fetchall of start, end)."""
        return _ratio(self.analyze, self.floor)

    def ratio_nsys(self) -> float | None:
        """nsys stats seconds / analyze seconds (how many times faster analyze is)."""
        return _ratio(self.nsys, self.analyze)

    def ratio_hta(self) -> float | None:
        """HTA seconds / analyze seconds (how many times faster analyze is)."""
        return _ratio(self.hta, self.analyze)

    def ratio_hta_kineto(self) -> float | None:
        """HTA seconds / analyze seconds on the same Kineto file."""
        return _ratio(self.hta, self.analyze_kineto)

    def ratio_hta_kineto_cpu(self) -> float | None:
        """HTA CPU seconds / analyze CPU seconds (its workers included) on the same Kineto file: the
        speed-up on one core, which other processes' load changes far less than the wall-time ratio."""
        return _ratio(self.hta, self.analyze_kineto, "cpu_seconds")

    def kineto_targets(self) -> dict[str, bool | None]:
        """Issue 13's targets on the Kineto file: >= 10x HTA, peak below HTA's, peak below 2x the JSON."""
        return evaluate_kineto_targets(
            self.ratio_hta_kineto(),
            _peak(self.analyze_kineto),
            _peak(self.hta),
            self.kineto_json_mb,
        )

    def targets(self) -> dict[str, bool | None]:
        """Each target: True met, False missed, None not measured."""
        return evaluate_targets(
            self.ratio_floor(),
            self.ratio_nsys(),
            self.ratio_hta(),
            self.analyze.peak_mb if self.analyze.ok else None,
        )

    def to_json(self) -> dict[str, Any]:
        def m(x: Measurement | None) -> dict[str, Any] | None:
            return None if x is None else dataclasses.asdict(x)

        return {
            "n": self.n,
            "kernels": self.kernels,
            "sqlite_mb": self.sqlite_mb,
            "analyze": m(self.analyze),
            "floor": m(self.floor),
            "floor_polars": m(self.floor_polars),
            "nsys": m(self.nsys),
            "hta": m(self.hta),
            "hta_note": self.hta_note,
            "analyze_kineto": m(self.analyze_kineto),
            "ratio_hta_kineto": self.ratio_hta_kineto(),
            "ratio_hta_kineto_cpu": self.ratio_hta_kineto_cpu(),
            "kineto_json_mb": self.kineto_json_mb,
            "kineto_targets": self.kineto_targets(),
            "ratio_floor": self.ratio_floor(),
            "ratio_nsys": self.ratio_nsys(),
            "ratio_hta": self.ratio_hta(),
            "targets": self.targets(),
        }


def _ratio(num: Measurement | None, den: Measurement | None, field: str = "seconds") -> float | None:
    """``num``'s ``field`` (wall ``seconds`` or ``cpu_seconds``) over ``den``'s; None when either was not
    measured."""
    if num is None or den is None or not num.ok or not den.ok:
        return None
    top, bottom = getattr(num, field), getattr(den, field)
    return None if top is None or not bottom else top / bottom


def _peak(m: Measurement | None) -> float | None:
    return m.peak_mb if m is not None and m.ok else None


def evaluate_kineto_targets(
    ratio: float | None, peak_mb: float | None, hta_peak_mb: float | None, json_mb: float | None
) -> dict[str, bool | None]:
    """Issue 13's targets for analyze on the Kineto file HTA reads: HTA/analyze >= 10, analyze peak below
    HTA's peak, analyze peak below 2x the uncompressed JSON size (None where not measured)."""
    return {
        "hta": None if ratio is None else ratio >= TARGET_HTA_RATIO,
        "below_hta": None if peak_mb is None or hta_peak_mb is None else peak_mb < hta_peak_mb,
        "below_2x_json": None
        if peak_mb is None or json_mb is None
        else peak_mb < TARGET_KINETO_JSON_PEAK * json_mb,
    }


def json_size_mb(kineto_file: Path) -> float:
    """Uncompressed size of a (gzipped) JSON file in MB, inflated in 16 MB blocks (cached beside it)."""
    cached = kineto_file.with_name(kineto_file.name + ".size")
    if cached.exists() and cached.stat().st_mtime >= kineto_file.stat().st_mtime:
        return int(cached.read_text()) / 2**20
    size = 0
    with open(kineto_file, "rb") as fh:
        if fh.read(2) == b"\x1f\x8b":
            fh.seek(0)
            inflater = zlib.decompressobj(wbits=47)
            while block := fh.read(16 * 2**20):
                size += len(inflater.decompress(block))
            size += len(inflater.flush())
        else:
            size = kineto_file.stat().st_size
    try:
        cached.write_text(str(size))
    except OSError:
        pass
    return size / 2**20


def evaluate_targets(
    ratio_floor: float | None, ratio_nsys: float | None, ratio_hta: float | None, peak_mb: float | None
) -> dict[str, bool | None]:
    """Issue 5's targets: analyze/floor <= 2, nsys/analyze >= 5, HTA/analyze >= 10, peak < 2048 MB."""
    return {
        "floor": None if ratio_floor is None else ratio_floor <= TARGET_FLOOR_RATIO,
        "nsys": None if ratio_nsys is None else ratio_nsys >= TARGET_NSYS_RATIO,
        "hta": None if ratio_hta is None else ratio_hta >= TARGET_HTA_RATIO,
        "memory": None if peak_mb is None else peak_mb < TARGET_PEAK_MB,
    }


def parse_sizes(text: str) -> list[int]:
    """'1e4,1e5,20000' -> [10000, 100000, 20000] (order kept, duplicates dropped)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        if not part:
            continue
        try:
            value = float(part) if re.fullmatch(r"\d+(\.\d+)?[eE]\d+", part) else int(part)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"not a size: {part!r}") from exc
        if value != int(value) or int(value) < 1:
            raise argparse.ArgumentTypeError(f"sizes must be whole numbers >= 1: {part!r}")
        if int(value) not in out:
            out.append(int(value))
    if not out:
        raise argparse.ArgumentTypeError("no sizes given")
    return out


def fmt_n(n: int) -> str:
    exp = len(str(n)) - 1
    return f"10^{exp}" if n == 10**exp else f"{n:,}"


def _s(m: Measurement | None) -> str:
    if m is None:
        return "skipped"
    if not m.ok:
        return "error"
    return f"{m.seconds:.3f}" if m.seconds < 10 else f"{m.seconds:.1f}"


def _x(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def _mb(m: Measurement | None) -> str:
    return "-" if m is None or not m.ok or m.peak_mb is None else f"{m.peak_mb:.0f}"


def _mark(v: bool | None) -> str:
    return "n/a" if v is None else ("yes" if v else "NO")


COLUMNS = [
    "N",
    "analyze s",
    "analyze peak MB",
    "floor s",
    "analyze/floor",
    "floor+polars s",
    "nsys stats s",
    "nsys/analyze",
    "HTA s",
    "HTA/analyze",
    "analyze (Kineto) s",
    "HTA/analyze (Kineto)",
    "HTA/analyze (Kineto) CPU",
    "Kineto JSON MB",
    "HTA peak MB",
    "analyze (Kineto) peak MB",
    "<=2x floor",
    ">=5x nsys",
    ">=10x HTA",
    "<2 GB",
    "Kineto: >=10x HTA",
    "Kineto: peak < HTA",
    "Kineto: peak < 2x JSON",
]


def table_rows(rows: list[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        t = r.targets()
        k = r.kineto_targets()
        hta = "n/a (> max N)" if r.hta is None and r.hta_note else _s(r.hta)
        out.append(
            [
                fmt_n(r.n),
                _s(r.analyze),
                "-" if not r.analyze.ok else f"{r.analyze.peak_mb:.0f}",
                _s(r.floor),
                _x(r.ratio_floor()),
                _s(r.floor_polars),
                _s(r.nsys),
                _x(r.ratio_nsys()),
                hta,
                _x(r.ratio_hta()),
                _s(r.analyze_kineto),
                _x(r.ratio_hta_kineto()),
                _x(r.ratio_hta_kineto_cpu()),
                "-" if r.kineto_json_mb is None else f"{r.kineto_json_mb:.0f}",
                _mb(r.hta),
                _mb(r.analyze_kineto),
                _mark(t["floor"]),
                _mark(t["nsys"]),
                _mark(t["hta"]),
                _mark(t["memory"]),
                _mark(k["hta"]),
                _mark(k["below_hta"]),
                _mark(k["below_2x_json"]),
            ]
        )
    return out


def errors_of(rows: list[Row]) -> list[str]:
    out = []
    for r in rows:
        for name, m in (
            ("analyze", r.analyze),
            ("floor", r.floor),
            ("floor+polars", r.floor_polars),
            ("nsys stats", r.nsys),
            ("HTA", r.hta),
            ("analyze (Kineto)", r.analyze_kineto),
        ):
            if m is not None and not m.ok:
                out.append(f"N={fmt_n(r.n)} {name}: {m.error}")
        if r.hta_note:
            out.append(f"N={fmt_n(r.n)} HTA: {r.hta_note}")
    return out


def machine_info(nsys_ver: str | None, hta_ver: str | None) -> dict[str, str]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    mem = "?"
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, AttributeError):
        pass
    try:
        import polars

        polars_ver = polars.__version__
    except ImportError:
        polars_ver = "?"
    try:
        from tracekit import __version__ as tk_ver
    except ImportError:
        tk_ver = "?"
    return {
        "CPU": cpu,
        "cores (usable)": str(usable),
        "memory": mem,
        "OS": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version(),
        "SQLite": sqlite3.sqlite_version,
        "polars": polars_ver,
        "tracekit": tk_ver,
        "nsys": nsys_ver or "not installed / skipped",
        "HolisticTraceAnalysis": hta_ver or "not installed / skipped",
    }


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def results_markdown(
    rows: list[Row],
    info: dict[str, str],
    startup: Measurement,
    args_line: str,
    notes: list[str],
    previous: str | None = None,
) -> str:
    """results.md of this run; rows (and detail lines) of sizes this run did not measure are kept from
    ``previous`` (the file's former text), marked with the date of their run."""
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rerun = {fmt_n(r.n) for r in rows}
    table = merge_kept_rows(COLUMNS, table_rows(rows), previous, rerun)
    parts = [
        "# Benchmark results (latest run)",
        "",
        f"Written by `python benchmarks/run.py --write-results` on {when}; command: `{args_line}`.",
        "All traces are **synthetic** (`tracekit simulate --runtime pytorch --kernels N`). Times are wall "
        "seconds of a fresh child process (best of the repeats); peak MB is the child's max RSS. "
        "`analyze/floor` uses the sqlite3 `fetchall` floor; `nsys/analyze` and `HTA/analyze` say how many "
        "times faster analyze is.",
        "",
        "## Machine",
        "",
        markdown_table(["", ""], [[k, v] for k, v in info.items()]),
        "",
        f'Start-up floor (`python -c "import tracekit.cli, polars"`): '
        f"{_s(startup)} s, {startup.peak_mb or 0:.0f} MB peak; it is inside every analyze time.",
        "",
        "## Results",
        "",
        markdown_table(COLUMNS, table),
        "",
        *(
            [
                "Rows whose N carries a date were not rerun by this command: they are kept from the run of "
                "that date (machine load may have differed; `-`: not measured then).",
                "",
            ]
            if len(table) > len(rows)
            else []
        ),
        "Targets (issue 5): analyze within 2x of the floor, at least 5x faster than `nsys stats`, at least "
        "10x faster than HTA, under 2 GB peak memory (at 10^7 kernels). Targets (issue 13), on the Kineto "
        "file HTA reads: analyze at least 10x faster than HTA, its peak memory below HTA's and below 2x the "
        "uncompressed JSON size (`Kineto JSON MB`).",
    ]
    details = []
    for r in rows:
        size = f"N={fmt_n(r.n)}: SQLite {r.sqlite_mb:.0f} MB, {r.kernels:,} kernels"
        if r.hta is not None and r.hta.ok and r.hta.extra:
            e = r.hta.extra
            size += (
                f"; HTA phases: import {e.get('import_s', 0):.2f} s, parse {e.get('parse_s', 0):.2f} s, "
                f"idle-time {e.get('idle_s', 0):.2f} s, launch stats {e.get('launch_s', 0):.2f} s, "
                f"peak {r.hta.peak_mb:.0f} MB"
            )
        if r.nsys is not None and r.nsys.ok:
            size += f"; nsys stats peak {r.nsys.peak_mb:.0f} MB"
        if r.analyze_kineto is not None and r.analyze_kineto.ok:
            size += f"; analyze on the Kineto JSON peak {r.analyze_kineto.peak_mb:.0f} MB"
            if r.analyze_kineto.cpu_seconds is not None:
                size += f", CPU time {r.analyze_kineto.cpu_seconds:.2f} s"
            if r.hta is not None and r.hta.ok and r.hta.cpu_seconds is not None:
                size += f" (HTA {r.hta.cpu_seconds:.2f} s)"
        details.append(f"- {size}")
    parts += ["", "## Details", "", *merge_kept_details(details, previous, rerun)]
    if notes:
        parts += ["", "## Notes and errors", "", *[f"- {n}" for n in notes]]
    return "\n".join(parts) + "\n"


def readme_block(rows: list[Row], startup: Measurement, when: str, previous: str | None = None) -> str:
    """The ratios-only block quoted in benchmarks/README.md (no absolute times); rows of sizes this run
    did not measure are kept from ``previous`` (the block's former text), marked with their date."""
    header = [
        "N",
        "analyze/floor",
        "nsys stats/analyze",
        "HTA/analyze",
        "HTA/analyze, same Kineto file",
        "same Kineto file, CPU time",
        "peak < 2 GB",
        "Kineto peak / HTA peak",
        "Kineto peak / JSON size",
    ]
    body = []
    for r in rows:
        t = r.targets()
        kineto_peak = _peak(r.analyze_kineto)
        hta_peak = _peak(r.hta)
        body.append(
            [
                fmt_n(r.n),
                _x(r.ratio_floor()),
                _x(r.ratio_nsys()),
                _x(r.ratio_hta()) if r.hta is not None else "not run",
                _x(r.ratio_hta_kineto()) if r.hta is not None else "not run",
                _x(r.ratio_hta_kineto_cpu()) if r.hta is not None else "not run",
                _mark(t["memory"]),
                _x(kineto_peak / hta_peak) if kineto_peak and hta_peak else "not run",
                _x(kineto_peak / r.kineto_json_mb) if kineto_peak and r.kineto_json_mb else "not run",
            ]
        )
    return "\n".join(
        [
            README_START,
            f"Latest ratios ({when}, see `results.md` for the machine and absolute numbers):",
            "",
            markdown_table(header, merge_kept_rows(header, body, previous, {fmt_n(r.n) for r in rows})),
            README_END,
        ]
    )


def readme_previous_block(readme: Path) -> str | None:
    """The marked ratios block of ``readme`` as it stands (None when absent)."""
    if not readme.exists():
        return None
    text = readme.read_text()
    i, j = text.find(README_START), text.find(README_END)
    return text[i:j] if 0 <= i < j else None


def update_readme(readme: Path, block: str) -> bool:
    """Replace the marked ratios block in ``readme``; False when the markers are absent."""
    if not readme.exists():
        return False
    text = readme.read_text()
    i, j = text.find(README_START), text.find(README_END)
    if i < 0 or j < i:
        return False
    readme.write_text(text[:i] + block + text[j + len(README_END) :])
    return True


#: "10^7" or "10^7 (2026-11-21)": a size, with the date of the run it was kept from
_N_CELL = re.compile(r"^(10\^\d+)(?: \((\d{4}-\d{2}-\d{2})\))?$")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _size_key(cell: str) -> str | None:
    match = _N_CELL.match(cell.strip())
    return match.group(1) if match else None


def _split_row(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
    return [c.strip().replace("\\|", "|") for c in cells]


def parse_size_table(text: str) -> tuple[list[str], list[list[str]], tuple[int, int]] | None:
    """(header, rows, (first line, end line)) of the first markdown table in ``text`` whose first column is
    "N" (rows keep their cells as text); None when there is none."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("| N |") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            return _split_row(line), [_split_row(x) for x in lines[i + 2 : j]], (i, j)
    return None


def merge_kept_rows(
    header: list[str], rows: list[list[str]], old_text: str | None, rerun: set[str]
) -> list[list[str]]:
    """``rows`` plus the rows of sizes not in ``rerun`` from the previous text's table (matched by column
    name; columns it lacks read "-"), their N cell marked with the date of the run they come from (their
    own mark, else the first date in ``old_text``), sorted by size."""
    if not old_text:
        return rows
    parsed = parse_size_table(old_text)
    if parsed is None:
        return rows
    old_header, old_rows, _ = parsed
    date = _DATE.search(old_text)
    kept = []
    for old in old_rows:
        match = _N_CELL.match(old[0])
        if match is None or match.group(1) in rerun:
            continue
        when = match.group(2) or (date.group(0) if date else "earlier run")
        by_name = dict(zip(old_header, old, strict=False))
        cells = [by_name.get(h, "-") for h in header]
        cells[0] = f"{match.group(1)} ({when})"
        kept.append(cells)
    merged = rows + kept
    return sorted(merged, key=lambda r: int(_size_key(r[0]).split("^")[1]) if _size_key(r[0]) else 99)


def merge_kept_details(details: list[str], old_text: str | None, rerun: set[str]) -> list[str]:
    """``details`` plus the previous text's "- N=10^k: ..." lines of sizes not rerun (marked "kept from
    DATE"), sorted by size."""
    if not old_text:
        return details
    date = _DATE.search(old_text)
    kept = []
    for line in old_text.split("\n"):
        match = re.match(r"^- N=(10\^\d+)(?: \((?:kept from )?(\d{4}-\d{2}-\d{2})\))?: (.*)$", line)
        if match and match.group(1) not in rerun:
            when = match.group(2) or (date.group(0) if date else "earlier run")
            kept.append(f"- N={match.group(1)} (kept from {when}): {match.group(3)}")
    return sorted(details + kept, key=lambda d: int(re.match(r"^- N=10\^(\d+)", d).group(1)))


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--sizes",
        type=parse_sizes,
        default=list(DEFAULT_SIZES),
        metavar="N1,N2,...",
        help="kernel counts (default 1e4,1e5,1e6,1e7)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=None,
        metavar="R",
        help="best of R runs per tool (default: 3 up to 10^6 kernels for the SQLite tools and 10^5 for HTA and the Kineto parse, 1 above)",
    )
    p.add_argument("--skip-nsys", action="store_true", help="do not run nsys stats")
    p.add_argument("--skip-hta", action="store_true", help="do not run Holistic Trace Analysis")
    p.add_argument(
        "--hta-max-kernels",
        type=parse_sizes,
        default=[10**6],
        metavar="N",
        help="run HTA only up to this many kernels (default 1e6)",
    )
    p.add_argument("--hta-python", metavar="PYTHON", help="interpreter with HolisticTraceAnalysis installed")
    p.add_argument("--nsys", default=None, metavar="PATH", help="nsys binary (default: nsys on PATH)")
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE,
        metavar="DIR",
        help="where simulated traces are cached (default benchmarks/.cache)",
    )
    p.add_argument(
        "--timeout", type=float, default=1800, metavar="S", help="per-command limit (default 1800 s)"
    )
    p.add_argument(
        "--mem-limit-mb",
        type=float,
        default=12288,
        metavar="MB",
        help="kill a measured child whose RSS passes MB (guard for shared machines; default 12288)",
    )
    p.add_argument(
        "--write-results",
        action="store_true",
        help="write benchmarks/results.md and update the ratios block of benchmarks/README.md",
    )
    p.add_argument("--results-file", type=Path, default=HERE / "results.md", help=argparse.SUPPRESS)
    p.add_argument(
        "--readme-file",
        type=Path,
        action="append",
        default=None,
        help=argparse.SUPPRESS,  # default: benchmarks/README.md and the project README.md
    )
    p.add_argument("--json", type=Path, metavar="FILE", help="also write all measurements as JSON")
    return p


@dataclasses.dataclass
class Tools:
    """The external tools found for this run (None: not run) and the notes that say so."""

    nsys: str | None
    nsys_ver: str | None
    reports: list[str]
    hta_python: str | None
    hta_max: int
    notes: list[str]


def find_tools(args: argparse.Namespace, cache: Path) -> Tools:
    """nsys and an HTA interpreter as the options allow, with a note for each one missing or limited."""
    nsys = None if args.skip_nsys else (args.nsys or shutil.which("nsys"))
    nsys_ver = nsys_version(nsys) if nsys else None
    reports = nsys_reports(nsys, nsys_ver) if nsys else []
    hta_python = None if args.skip_hta else find_hta_python(args.hta_python, cache)
    hta_max = args.hta_max_kernels[0]
    notes: list[str] = []
    if not args.skip_nsys and not nsys:
        notes.append("nsys not found on PATH: nsys stats not run")
    if nsys:
        notes.append(
            f"nsys {nsys_ver}: `nsys stats --report {' --report '.join(reports)} --format csv` on the .sqlite"
        )
    if not args.skip_hta and not hta_python:
        notes.append(
            "HolisticTraceAnalysis not importable (pip install --no-deps HolisticTraceAnalysis into "
            "benchmarks/.cache/hta-venv, see README): HTA not run"
        )
    if hta_python and any(n > hta_max for n in args.sizes):
        notes.append(
            f"HTA run only up to {fmt_n(hta_max)} kernels: the Kineto JSON of larger traces is too big "
            "to parse in memory on this machine (HTA's parse memory grows linearly with N)"
        )
    return Tools(nsys, nsys_ver, reports, hta_python, hta_max, notes)


#: tracekit's source folders (the installed ``tracekit``, ``tracekit.analyzers``, ``tracekit.collectors``)
SOURCE_DIRS: tuple[str, ...] = ("tracekit", "analyzers", "collectors")


def compile_bytecode(root: Path = ROOT) -> str | None:
    """Compile tracekit's modules to bytecode (``__pycache__``, as ``pip install`` does for an installed
    package and as the first run of an editable install does) before anything is timed, so that no run pays
    for compiling them: with ``PYTHONDONTWRITEBYTECODE`` set, an editable install would otherwise compile
    every module from source on every run (~0.1-0.2 s), while HTA, installed by pip, loads its bytecode.
    Returns a note when the compilation failed (the timings then include it)."""
    done = subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *SOURCE_DIRS], cwd=root, capture_output=True, text=True
    )
    if done.returncode != 0:
        return f"compileall failed (tracekit's timings include compiling its modules): {done.stderr.strip()[-300:]}"
    return None


def _analyze_cmd(path: Path) -> list[str]:
    return [sys.executable, "-m", "tracekit.cli", "analyze", str(path), "--format", "json"]


def measure_size(
    n: int, args: argparse.Namespace, tools: Tools, cache: Path, log: Callable[[str], None]
) -> tuple[Row, str | None]:
    """Every tool on the N-kernel trace (best of 3 where a run takes seconds: SQLite tools up to 10^6 kernels;
    HTA and the Kineto parse, which take minutes at 10^6, up to 10^5; one run above): the row and HTA's
    version when it ran."""
    repeat = args.repeat or (3 if n <= 10**6 else 1)
    repeat_slow = args.repeat or (3 if n <= 10**5 else 1)
    limits = (args.timeout, args.mem_limit_mb)
    files = ensure_trace(cache, n, tools.hta_python is not None and n <= tools.hta_max, log)
    db = files["nsys"]
    count = kernel_count(db)
    if count != n:
        tools.notes.append(f"N={fmt_n(n)}: the simulator wrote {count:,} kernels")
    log(f"N={fmt_n(n)}: analyze ...")
    analyze = measure(_analyze_cmd(db), repeat, *limits)
    log(f"N={fmt_n(n)}: floor ...")
    floor = measure([sys.executable, "-c", FLOOR_SCRIPT, str(db)], repeat, *limits)
    floor_pl = measure([sys.executable, "-c", FLOOR_POLARS_SCRIPT, str(db)], repeat, *limits)
    nsys_m = None
    if tools.nsys:
        log(f"N={fmt_n(n)}: nsys stats ...")
        nsys_m = run_nsys(tools.nsys, tools.reports, db, repeat, *limits)
    hta_m, hta_note, kineto_m, json_mb, hta_ver = None, None, None, None, None
    if tools.hta_python and n <= tools.hta_max:
        if "kineto" not in files:
            hta_note = "no Kineto file was written"
        else:
            log(f"N={fmt_n(n)}: HTA and analyze on the Kineto file, in alternation ...")
            kineto_file = files["kineto"]
            hta_m, kineto_m = alternate(
                lambda sample: run_hta(tools.hta_python, kineto_file, *limits, sample),  # type: ignore[arg-type]
                lambda sample: measure_once(_analyze_cmd(kineto_file), *limits, sample=sample),
                repeat_slow,
            )
            if hta_m.ok:
                hta_ver = hta_m.extra.get("version")
            json_mb = json_size_mb(files["kineto"])
    elif tools.hta_python:
        hta_note = f"not run above {fmt_n(tools.hta_max)} kernels"
    size_mb = db.stat().st_size / 2**20
    row = Row(n, count, size_mb, analyze, floor, floor_pl, nsys_m, hta_m, hta_note, kineto_m, json_mb)
    return row, hta_ver


def print_results(rows: list[Row], startup: Measurement, info: dict[str, Any], notes: list[str]) -> None:
    """The results table (rich on a terminal, 200 columns when piped; Markdown without rich) and the notes."""
    title = (
        f"tracekit analyze vs floor / nsys stats / HTA (synthetic traces; start-up floor "
        f"{_s(startup)} s, {startup.peak_mb or 0:.0f} MB)"
    )
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a project dependency
        print(title)
        print(markdown_table(COLUMNS, table_rows(rows)))
    else:
        console = Console(highlight=False)
        if not console.is_terminal:  # piped or captured: do not squeeze the table to 80 columns
            console = Console(highlight=False, width=200)
        table = Table(title=title)
        for c in COLUMNS:
            table.add_column(c, justify="left" if c == "N" else "right")
        for r in table_rows(rows):
            table.add_row(*[f"[red]{c}[/red]" if c == "NO" else c for c in r])
        console.print(table)
        console.print(
            f"machine: {info['CPU']}, {info['cores (usable)']} cores, {info['memory']}; "
            f"Python {info['Python']}, polars {info['polars']}, SQLite {info['SQLite']}, nsys "
            f"{info['nsys']}, HTA {info['HolisticTraceAnalysis']}"
        )
    for note in notes:
        print(f"note: {note}")


def write_results(
    args: argparse.Namespace,
    argv: Sequence[str] | None,
    rows: list[Row],
    startup: Measurement,
    info: dict[str, Any],
    notes: list[str],
) -> None:
    """``--json`` and ``--write-results``: results.md (rows of sizes not rerun kept) and the READMEs' blocks."""
    if args.json:
        doc = {
            "machine": info,
            "startup": dataclasses.asdict(startup),
            "rows": [r.to_json() for r in rows],
            "notes": notes,
        }
        args.json.write_text(json.dumps(doc, indent=2))
    if not args.write_results:
        return
    args_line = "python benchmarks/run.py " + " ".join(sys.argv[1:] if argv is None else argv)
    previous = args.results_file.read_text() if args.results_file.exists() else None
    _atomic_write(
        args.results_file, results_markdown(rows, info, startup, args_line.strip(), notes, previous)
    )
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")
    readmes = args.readme_file or [HERE / "README.md", HERE.parent / "README.md"]
    updated = [
        str(r)
        for r in readmes
        if update_readme(r, readme_block(rows, startup, when, readme_previous_block(r)))
    ]
    if updated:
        print(f"wrote {args.results_file} and the ratios block of {', '.join(updated)}")
    else:
        print(f"wrote {args.results_file} (no README has the ratios markers: none updated)")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    cache: Path = args.cache_dir.resolve()
    tools = find_tools(args, cache)
    note = compile_bytecode()
    if note:
        tools.notes.append(note)
    log("measuring start-up floor ...")
    startup = measure([sys.executable, "-c", "import tracekit.cli, polars"], max(3, args.repeat or 3))
    rows: list[Row] = []
    hta_ver = None
    for n in args.sizes:
        row, version = measure_size(n, args, tools, cache, log)
        rows.append(row)
        hta_ver = version or hta_ver
    hta_rows = [r for r in rows if r.hta is not None and r.hta.ok]
    if hta_rows and any(r.hta is None and r.hta_note for r in rows):
        last = hta_rows[-1]
        tools.notes.append(f"HTA peak memory at {fmt_n(last.n)} kernels: {last.hta.peak_mb:.0f} MB")
    info = machine_info(tools.nsys_ver, hta_ver)
    notes = tools.notes + errors_of(rows)
    print_results(rows, startup, info, notes)
    write_results(args, argv, rows, startup, info, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
