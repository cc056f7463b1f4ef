"""Analyze many traces: one after another, in a local process pool, or on a Dask cluster, with one code path.

:func:`analyze_one` is the unit of work everywhere: it reads and analyzes one trace where it runs and returns
an :class:`Outcome` holding the compact result (:mod:`tracekit.fleet.compact`) or a one-line error, never
the frames, so the memory of a many-trace run is that of the traces in flight, not of all of them.

- ``jobs == 1`` (no scheduler): in this process, in input order.
- ``jobs > 1``: a ``ProcessPoolExecutor`` of ``jobs`` processes, forked from this process where it is
  safe (:func:`start_method`: the ``tracekit`` program, polars not loaded and no other thread), else started
  by a fork server (fresh interpreters that share tracekit's imported pages); polars' threads are never
  forked. Each worker decodes
  its trace on its own (``TRACEKIT_DECODE_WORKER=0``): the parallelism is across traces. A trace that kills
  its worker fails alone (:func:`_in_pool`).
- ``scheduler``: the address of a Dask distributed scheduler (``tcp://host:8786``); the traces are read by
  the workers (a shared file system, or any URL fsspec opens), only outcomes come back.

Outcomes are reported as they finish (``on_done``) and returned in input order, so the result does not
depend on the executor.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: environment of pool workers: one decoding process per trace (see the module docstring)
WORKER_ENV = {"TRACEKIT_DECODE_WORKER": "0"}


@dataclass
class Outcome:
    """One trace's result: ``result`` (the compact dict) or ``error`` (one line), and its seconds."""

    path: str
    result: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def _options_tuple(options: Any) -> tuple[Any, ...]:
    return (options.range_name, options.skip, options.bound_threshold, options.split_idle_ms)


def analyze_one(
    path: str,
    options: tuple[Any, ...],
    cache_dir: str | None = None,
    reading: tuple[int | None, int, int] | None = None,
    ceiling: WorkerCeiling | None = None,
) -> Outcome:
    """Read, analyze and compact one trace (``options``: range, skip, threshold, split-idle; ``reading``: the
    reading limits of the process that sent the work, :func:`tracekit.limits.reading_limits`, so that a
    worker reads as it would: ``--max-string`` and the like; None: those in force here; ``ceiling``: a pool
    worker's memory ceiling while it holds this trace, None: none of its own)."""
    from tracekit import limits

    if ceiling is None:
        return _analyze_one(path, options, cache_dir, reading)
    limits.reading(path)
    limits.start_memory_ceiling(ceiling.limit, note=ceiling.note(path), share=ceiling.share)
    try:
        return _analyze_one(path, options, cache_dir, reading)
    finally:
        limits.stop_memory_ceiling()


@dataclass(frozen=True)
class WorkerCeiling:
    """The memory a pool worker may hold while it analyzes one trace: ``limit`` bytes (its share of
    ``--max-memory``), past which it ends at once, leaving its line in ``notes`` (a folder), where the
    process that sent the trace finds it (:func:`death_note`) and reports it as that trace's failure;
    ``share``: what the limit is a share of, said in the line."""

    limit: int
    notes: str
    share: str | None = None

    def note(self, path: str) -> str:
        """The file that receives ``path``'s line."""
        return os.path.join(self.notes, _note_name(path))


def _note_name(path: str) -> str:
    import hashlib

    return hashlib.blake2b(os.fsencode(path), digest_size=8).hexdigest()  # (a name that is not UTF-8 too)


def death_note(notes: str, path: str) -> str | None:
    """The line a worker left when it ended past its memory ceiling while analyzing ``path``, or None."""
    try:
        with open(os.path.join(notes, _note_name(path))) as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _forget_note(notes: str, path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(notes, _note_name(path)))


def worker_ceiling(jobs: int, notes: str) -> WorkerCeiling | None:
    """Each of ``jobs`` workers' share of the memory ceiling in force (``--max-memory``; None without one),
    after what this process holds: ``jobs`` traces in flight at once stay within it together (each worker's
    resident memory counts the pages it shares with the others in full, so the sum errs on the safe side)."""
    from tracekit import limits

    total = limits.current.max_memory
    if total is None:
        return None
    own = limits.rss()
    limit = max(1, (total - own) // jobs)
    if jobs > 1:
        share = f"a worker's share of the {limits.format_size(total)} ceiling with {jobs} traces at a time"
    else:
        share = f"what the {limits.format_size(total)} ceiling leaves a worker beside the command's {limits.format_size(own)}"
    return WorkerCeiling(limit, notes, share)


def _analyze_one(
    path: str,
    options: tuple[Any, ...],
    cache_dir: str | None,
    reading: tuple[int | None, int, int] | None,
) -> Outcome:
    from tracekit.errors import TracekitError
    from tracekit.fleet.compact import compact
    from tracekit.inputs import resolve_input
    from tracekit.limits import reading_limits_applied
    from tracekit.session import AnalysisOptions, analyze_input

    start = time.perf_counter()
    try:
        with reading_limits_applied(reading), _local(path) as local:
            item = resolve_input(local)
            chosen = AnalysisOptions(*options)
            analyzed = analyze_input(
                item, chosen, frames(item), cache_dir=cache_dir or None, device_causes=True
            )
            result = compact(analyzed, chosen)
            result["path"] = path
        return Outcome(path, result=result, seconds=time.perf_counter() - start)
    except TracekitError as exc:
        return Outcome(path, error=str(exc), seconds=time.perf_counter() - start)
    except Exception as exc:  # a bug on one trace must not lose the others: one line, counted as failed
        text = str(exc).strip().splitlines()
        return Outcome(
            path,
            error=f"{path}: internal error: {type(exc).__name__}: {text[0] if text else ''}".rstrip(": "),
            seconds=time.perf_counter() - start,
        )


def frames(item: Any) -> dict[str, tuple[str, ...] | None]:
    """What the analysis reads (:func:`tracekit.session.frames_for`) plus the ops' names, which the compact
    result needs to find the collectives: the columns a many-trace run reads, no more."""
    from tracekit.session import frames_for

    spec = frames_for(item)
    ops = spec.get("ops", ())
    if ops is not None:
        spec["ops"] = tuple(dict.fromkeys([*ops, "name"]))
    return spec


class _local:
    """A local path for ``path``: itself, or (a URL with a scheme fsspec knows) a temporary copy."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.tmp: str | None = None

    def __enter__(self) -> str:
        if "://" not in self.path or self.path.startswith("file://"):
            return self.path.removeprefix("file://")
        import shutil
        import tempfile

        import fsspec  # only needed for URLs

        suffix = "".join(os.path.basename(self.path).partition(".")[1:])
        fd, self.tmp = tempfile.mkstemp(suffix="." + suffix if suffix else "")
        with os.fdopen(fd, "wb") as out, fsspec.open(self.path, "rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
        return self.tmp

    def __exit__(self, *exc: object) -> None:
        if self.tmp:
            os.unlink(self.tmp)


class _server_threads:
    """While the pool starts: ``POLARS_MAX_THREADS`` = the usable cores shared among ``jobs`` workers, in the
    environment the workers (or the fork server) inherit (polars sizes its thread pool when imported, which a
    forked worker does after the fork, the fork server before forking workers). ``jobs`` workers of two threads each on two cores contend and hold a thread
    pool's memory each (about 20 MB more per worker at 10^5 kernels); a value the user set is kept."""

    NAME = "POLARS_MAX_THREADS"

    def __init__(self, jobs: int) -> None:
        self.value = str(max(1, usable_cores() // jobs))
        self.set = False

    def __enter__(self) -> None:
        if self.NAME not in os.environ:
            os.environ[self.NAME] = self.value
            self.set = True

    def __exit__(self, *exc: object) -> None:
        if self.set:
            os.environ.pop(self.NAME, None)


class _main_not_reimported:
    """While the fork server and the workers start: the main module's file and spec hidden from
    multiprocessing, which would otherwise run the main script again in each of them (as ``__mp_main__``) to
    find functions defined there. The work here is :func:`analyze_one`, a tracekit function, so nothing of
    the main script is needed; and a script that calls ``analyze_many(..., jobs=2)`` at top level, without
    an ``if __name__ == "__main__":`` guard, would otherwise start the analysis again in every worker and
    fail there ("An attempt has been made to start a new process before ... bootstrapping")."""

    def __enter__(self) -> None:
        self.main = sys.modules.get("__main__")
        self.saved = {
            k: self.main.__dict__[k] for k in ("__file__", "__spec__") if k in vars(self.main or {})
        }
        for key in self.saved:
            if key == "__spec__":
                self.main.__spec__ = None  # type: ignore[union-attr]
            else:
                del self.main.__dict__[key]  # type: ignore[union-attr]

    def __exit__(self, *exc: object) -> None:
        if self.main is not None:
            self.main.__dict__.update(self.saved)


def _init_worker() -> None:
    os.environ.update(WORKER_ENV)


def _init_pool_worker() -> None:
    """:func:`_init_worker` in a pool worker, which also ignores SIGINT: a terminal's Ctrl-C reaches every
    process of the group, and the process that started the pool handles it (it ends its workers:
    :func:`_stop_workers`) rather than each worker printing its own KeyboardInterrupt."""
    import signal

    _init_worker()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _init_dask_worker(dask_worker: Any = None) -> None:
    """:func:`_init_worker` on a Dask worker (``client.run`` passes the worker as ``dask_worker``), and, when
    polars is not yet loaded there, the ``tracekit`` program's settings: its allocator setting
    (:func:`tracekit.readers.memory.program_allocator`) and ``POLARS_MAX_THREADS`` = the worker's task
    threads unless the user set it: W workers of T threads on a machine are sized for W x T cores, and polars
    would otherwise start a thread per core in each of them."""
    _init_worker()
    if "polars" in sys.modules:
        return
    from tracekit.readers import program_allocator

    program_allocator()
    threads = getattr(getattr(dask_worker, "state", None), "nthreads", None)
    if "POLARS_MAX_THREADS" not in os.environ and isinstance(threads, int):
        os.environ["POLARS_MAX_THREADS"] = str(max(1, threads))


def check_jobs(jobs: Any) -> None:
    """TracekitError, one line naming the value, unless ``jobs`` is None or a positive integer (not a bool):
    0 had been taken as "the usable cores" and -1 as 1."""
    if jobs is None or (isinstance(jobs, int) and not isinstance(jobs, bool) and jobs >= 1):
        return
    from tracekit.errors import TracekitError

    raise TracekitError(f"jobs: must be a positive integer, not {jobs!r}")


def analyze_many(
    paths: Sequence[str],
    options: Any,
    jobs: int | None = None,
    scheduler: str | None = None,
    cache_dir: str | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Every path's :class:`Outcome`, in input order (see the module docstring). ``jobs`` None: the usable
    cores (a positive integer, else TracekitError before any trace is read, as ``--jobs`` refuses 0 and -1);
    ``on_done`` is called as each trace finishes."""
    check_jobs(jobs)
    opts = _options_tuple(options)
    done = on_done or (lambda outcome: None)
    if scheduler is not None and not scheduler.strip():  # (an unset variable: not "run here")
        from tracekit.errors import TracekitError

        raise TracekitError(
            "--scheduler: no address given (empty: an unset variable?); give the scheduler's tcp://HOST:PORT, "
            "or leave --scheduler out to analyze here"
        )
    if scheduler:
        return _on_dask(list(paths), opts, scheduler, cache_dir, done)
    jobs = max(1, min(jobs or usable_cores(), len(paths) or 1))
    if jobs == 1:
        outcomes = []
        for path in paths:
            outcome = analyze_one(path, opts, cache_dir)
            done(outcome)
            outcomes.append(outcome)
        return outcomes
    return _in_pool(list(paths), opts, jobs, cache_dir, done)


#: The one line of a trace whose worker process died while analyzing it, alone (after the pool broke).
WORKER_DIED = "the worker process analyzing it died (killed: out of memory, or a crash in native code)"


def _in_pool(
    paths: list[str],
    opts: tuple[Any, ...],
    jobs: int,
    cache_dir: str | None,
    done: Callable[[Outcome], None],
    work: Callable[..., Outcome] = analyze_one,
) -> list[Outcome]:
    """``work`` (:func:`analyze_one`) on every path in pools of ``jobs`` fork-server workers, at most ``jobs``
    traces in flight, so that the traces a dead worker may have held are known. A worker that dies (the OOM
    killer, a crash in native code) breaks its pool and every trace in flight in it: those are analyzed
    again one at a time, each in a pool of its own, and only a trace whose own worker dies fails (one line,
    :data:`WORKER_DIED`); the rest go on in a fresh pool."""
    import multiprocessing
    import tempfile

    context = multiprocessing.get_context(start_method())
    if context.get_start_method() == "forkserver":
        context.set_forkserver_preload(["tracekit.fleet.run", "tracekit.session", "polars"])
    by_path: dict[int, Outcome] = {}
    queue = deque(range(len(paths)))
    with _server_threads(jobs), tempfile.TemporaryDirectory(prefix="tracekit-notes-") as notes:
        while queue:
            suspects = _pool_round(context, paths, queue, opts, jobs, cache_dir, work, by_path, done, notes)
            for i in suspects:  # each alone: whether it kills its worker by itself
                _forget_note(notes, paths[i])  # (a note from the shared round would say another limit)
                if _pool_round(context, paths, deque([i]), opts, 1, cache_dir, work, by_path, done, notes):
                    why = death_note(notes, paths[i]) or WORKER_DIED
                    by_path[i] = Outcome(paths[i], error=f"{paths[i]}: {why}")
                    done(by_path[i])
    return [by_path[i] for i in range(len(paths))]


def start_method() -> str:
    """How the pool's workers start: ``"fork"`` (forked from this process) where that is safe
    (:func:`tracekit.limits.can_fork`: polars not loaded here, no thread but the memory watchdog, paused while
    the workers are forked: :func:`_workers_forked`), else ``"forkserver"`` (a notebook, whose kernel runs
    threads and has polars loaded). The ``tracekit`` program is such a process (it loads polars only in the
    analysis, which ``--jobs N`` leaves to the workers): forked workers save the fork server and
    multiprocessing's resource tracker (~30 MB of a run's peak, and the tracker's "leaked semaphore"
    warnings), and a Ctrl-C while the pool starts finds no server to interrupt halfway."""
    from tracekit import limits

    return "fork" if limits.can_fork() else "forkserver"


def _workers_forked(context: Any) -> contextlib.AbstractContextManager[None]:
    """Around the submit that starts the pool's workers: with ``"fork"``, the memory watchdog paused (a
    process is forked with one thread; a fork while the watchdog held its lock would leave a worker's own
    watchdog waiting on it for ever)."""
    from tracekit import limits

    if context.get_start_method() == "fork":
        return limits.watchdog_paused()
    return contextlib.nullcontext()


def _pool_round(
    context: Any,
    paths: list[str],
    queue: deque[int],
    opts: tuple[Any, ...],
    jobs: int,
    cache_dir: str | None,
    work: Callable[..., Outcome],
    by_path: dict[int, Outcome],
    done: Callable[[Outcome], None],
    notes: str,
) -> list[int]:
    """Take traces from the front of ``queue`` (indices into ``paths``) into one pool of ``jobs`` workers, at
    most ``jobs`` at a time, recording each outcome; returns the traces in flight when the pool broke (a
    worker died), none when every trace taken got its outcome. ``queue`` keeps what was never taken."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    from tracekit.limits import reading_limits

    reading = reading_limits()
    ceiling = worker_ceiling(jobs, notes)

    in_flight: dict[Any, int] = {}
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_init_pool_worker) as pool:

        def fill() -> None:
            # the workers (and the fork server) start on these submits: not interrupted halfway (_interrupt_after)
            with _main_not_reimported(), _interrupt_after():
                while queue and len(in_flight) < jobs:
                    i = queue.popleft()
                    in_flight[pool.submit(work, paths[i], opts, cache_dir, reading, ceiling)] = i

        try:
            with _workers_forked(context):  # the first submit starts them all (with fork: before any thread)
                fill()
            while in_flight:
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in finished:
                    try:
                        outcome = future.result()
                    except BrokenProcessPool:  # a worker died: which trace killed it is not known yet
                        return sorted(in_flight.values())
                    except Exception as exc:  # the result could not come back (not picklable, ...)
                        i = in_flight[future]
                        outcome = Outcome(
                            paths[i], error=f"{paths[i]}: worker failed: {type(exc).__name__}: {exc}"
                        )
                    by_path[in_flight.pop(future)] = outcome
                    done(outcome)
                fill()
        except BaseException:  # Ctrl-C (KeyboardInterrupt), or an error here: the workers end with the run
            _stop_workers(pool)
            raise
    return []


class _interrupt_after:
    """Ctrl-C (SIGINT) while the pool starts its fork server and workers is held back until they have started,
    then delivered (to the handler in force before: KeyboardInterrupt), so that it never interrupts a start
    halfway: a worker the fork server had forked for a parent that then let go of the pool found the pool's
    semaphores gone ('SemLock._rebuild ... FileNotFoundError', a traceback on standard error), and the pool
    could wait for it for ever. Only in the main thread (where Python runs signal handlers)."""

    def __enter__(self) -> None:
        import signal
        import threading

        self.caught = False
        self.previous: Any = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._hold)

    def _hold(self, signum: int, frame: Any) -> None:
        self.caught = True

    def __exit__(self, *exc: object) -> None:
        import signal

        if self.previous is None:
            return
        signal.signal(signal.SIGINT, self.previous)
        if self.caught:
            signal.raise_signal(signal.SIGINT)


def _stop_workers(pool: Any) -> None:
    """End ``pool``'s worker processes at once (SIGTERM: a worker still starting, or in a trace, ends without
    a word) and let the pool go without waiting for its work: what an interrupted run does before it exits."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):
            process.terminate()
    with contextlib.suppress(Exception):
        pool.shutdown(wait=False, cancel_futures=True)


def _connect(client_class: Any, address: str) -> Any:
    """A Dask ``Client`` of the scheduler at ``address``, or TracekitError (one line) when it cannot be made.

    Built with the cyclic garbage collector paused, after a collection, and a Client left half-built by a
    failure is collected at once: Dask's ``LoopRunner`` holds a class-wide lock while it starts a Client's loop,
    and a garbage collection run there finalized an earlier failed Client, whose ``close`` takes that lock
    again: the process hung (seen in CI after ``--scheduler`` tests of bad addresses)."""
    from tracekit.errors import TracekitError

    # (the collector paused here, not with readers.kineto.gc_paused: no module outside the readers imports
    # their internals, tests/test_import_graph.py)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        return client_class(address, timeout="10s")
    except ValueError as exc:  # (an address Dask does not read: no port, the dashboard's http://)
        message = f"--scheduler {address}: not a Dask scheduler address ({exc})"
    except TypeError as exc:  # (tls:// without Dask's TLS configuration, ucx:// without UCX installed)
        message = f"--scheduler {address}: Dask cannot open a connection of this kind here ({exc})"
    except (OSError, TimeoutError) as exc:
        message = f"cannot reach the Dask scheduler at {address} ({exc})"
    finally:
        if enabled:
            gc.enable()
    gc.collect()  # (the failed Client, now unreferenced, finalized here: no Dask lock is held)
    raise TracekitError(message)


def _on_dask(
    paths: list[str],
    opts: tuple[Any, ...],
    address: str,
    cache_dir: str | None,
    done: Callable[[Outcome], None],
) -> list[Outcome]:
    from tracekit.errors import TracekitError
    from tracekit.limits import reading_limits

    try:
        from distributed import Client, as_completed
    except ImportError as exc:
        raise TracekitError("--scheduler needs Dask distributed: pip install 'tracekit[cluster]'") from exc
    client = _connect(Client, address)
    by_path: dict[int, Outcome] = {}
    try:
        client.run(_init_dask_worker)
        reading = reading_limits()
        futures = [client.submit(analyze_one, p, opts, cache_dir, reading, pure=False) for p in paths]
        index = {f.key: i for i, f in enumerate(futures)}
        for future in as_completed(futures):
            i = index[future.key]
            try:
                outcome = future.result()
            except Exception as exc:  # the task failed on the worker (killed, lost)
                outcome = Outcome(
                    paths[i], error=f"{paths[i]}: Dask task failed: {type(exc).__name__}: {exc}"
                )
            by_path[i] = outcome
            done(outcome)
    finally:
        client.close()
    return [by_path[i] for i in range(len(paths))]
