"""How a many-trace pool's workers start (tracekit.fleet.run.start_method): forked from the ``tracekit``
program, which has not loaded polars and runs no thread but the memory watchdog; a fork server anywhere else
(this test process has polars loaded; a notebook runs threads)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tracekit.fleet import run

ROOT = Path(__file__).resolve().parent.parent
RANKS4 = ROOT / "sample_traces" / "synthetic" / "ranks4"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _in_fresh_python(code: str) -> str:
    """Standard output of ``code`` run by a fresh interpreter (nothing of this test process loaded)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_process_with_polars_loaded_uses_the_fork_server() -> None:
    import polars  # noqa: F401  (loaded here already; said for the reader)

    assert run.start_method() == "forkserver"


def test_a_fresh_program_forks_and_a_thread_or_polars_makes_it_use_the_fork_server() -> None:
    out = _in_fresh_python(
        """
        import threading
        from tracekit import limits
        from tracekit.fleet.run import start_method
        seen = [start_method()]
        limits.start_memory_ceiling(1 << 40)  # the program's watchdog thread does not count
        seen.append(start_method())
        limits.stop_memory_ceiling()
        stop = threading.Event()
        thread = threading.Thread(target=stop.wait)
        thread.start()
        seen.append(start_method())  # any other thread does
        stop.set()
        thread.join()
        import os, time
        deadline = time.monotonic() + 5  # (a joined thread can stay in /proc/self/task a moment longer)
        while len(os.listdir("/proc/self/task")) > 1 and time.monotonic() < deadline:
            time.sleep(0.001)
        seen.append(start_method())
        import polars  # noqa: F401
        seen.append(start_method())
        print(" ".join(seen))
        """
    )
    assert out == "fork fork forkserver fork forkserver"


def test_forked_workers_are_the_programs_children_and_the_watchdog_runs_again_after() -> None:
    """Each trace's worker is a child of the process that started the pool (no fork server between), the
    watchdog is paused while they are forked and running again after, and the answers are those of --jobs 1."""
    out = _in_fresh_python(
        f"""
        import os
        from tracekit import limits
        from tracekit.fleet import run
        from tracekit.session import AnalysisOptions

        def parent_of_worker(path, opts, cache_dir, reading, ceiling):
            return run.Outcome(path, result={{"parent": os.getppid(), "threads": len(os.listdir("/proc/self/task"))}})

        limits.start_memory_ceiling(1 << 40)
        paths = sorted(str(p) for p in __import__("pathlib").Path({str(RANKS4)!r}).glob("rank*.json.gz"))
        seen = run._in_pool(paths, run._options_tuple(AnalysisOptions()), 2, None, lambda o: None, parent_of_worker)
        print(len(seen), {{o.result["parent"] == os.getpid() for o in seen}}, limits.watchdog_threads())
        one = run.analyze_many(paths, AnalysisOptions(), jobs=1)
        two = run.analyze_many(paths, AnalysisOptions(), jobs=2)
        same = [a.result["iterations"]["latency_ms"].tolist() == b.result["iterations"]["latency_ms"].tolist()
                for a, b in zip(one, two)]
        print(all(o.ok for o in one + two), same)
        """
    )
    assert out.splitlines() == ["4 {True} 1", "True [True, True, True, True]"]
