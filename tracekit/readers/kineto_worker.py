"""Decode a Kineto file in a second process while this one builds the frames (and, from the command line,
while it is still importing polars).

Decoding JSON into Python objects holds the interpreter lock, so it cannot share a core with the frame
building in threads; a worker process (``python -m tracekit.readers.kineto_worker FILE ...``, which
imports msgspec and ISA-L only, no polars) inflates, decodes and encodes the file chunk by chunk
(:func:`tracekit.readers.kineto_wire.wire_chunks`) and writes each :data:`~tracekit.readers.kineto_wire.WireChunk`
to its standard output (pickle, protocol 5); a thread here reads them into a bounded queue. The worker is
a fresh interpreter, not a fork, so it is safe whatever threads this process runs.

The file is shared by :func:`worker_count` workers, each decoding one part of the events array
(``stream_events(..., part=(k, n))``): each inflates the file up to its part's end (inflating is the cheap
step) and decodes only its part. Messages: ``("read",)`` once the document's head is read,
``("chunk", wire, fraction)`` per chunk, ``("done", header)`` at the end, ``("error", message)`` for a
damaged or foreign file, ``("lost", why)`` when the cut between two parts falls inside an event. An error,
a lost or dead worker, or one that cannot start raises :class:`WorkerLost`; the reader then decodes the file
in its own process instead, which gives the one error message a damaged file has (a part that starts after
a bad cut fails too, with a message of its own, and a part's error would not say where in the file it is).

``TRACEKIT_DECODE_WORKER``: ``0`` never uses a worker, ``1`` always does; unset, files whose JSON text is
(estimated) at least :data:`WORKER_MIN_JSON_BYTES` do: 8 MB where workers are forked, 40 MB where they
start afresh. :func:`prefetch` starts the worker for a file before the reader
asks for it (the ``analyze`` command calls it first thing); :func:`take` hands it over.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from tracekit import limits
from tracekit.errors import TracekitError
from tracekit.io import is_stream, peek_input

#: estimated JSON text (a gzip file: :data:`GZIP_RATIO` times its size) from which workers pay off: forked
#: ones (started before polars loads: :func:`tracekit.readers.begin_reading`) and fresh interpreters (each
#: pays an interpreter's start-up); the thresholds and their measurements: benchmarks/README.md
WORKER_MIN_JSON_BYTES: dict[str, int] = {"fork": 8 << 20, "spawn": 40 << 20}
#: how much a Kineto trace inflates, roughly (10-15x on the traces here)
GZIP_RATIO = 10
#: the environment switch (see module doc)
ENV = "TRACEKIT_DECODE_WORKER"
#: wire chunks per worker read ahead of the frame building (bounds the memory they take)
QUEUE_CHUNKS = 16
#: at most this many worker processes share one file (each inflates the file up to its part's end). More
#: do not shorten a run: the analyzing process builds frames about three times as fast as one worker
#: decodes, so with three it is the bound, and each worker more costs memory (interpreter pages and its own
#: chunks) and CPU (inflating the file up to its part); measurements: benchmarks/README.md
MAX_WORKERS = 3
#: JSON text (estimated, :func:`json_bytes`) from which a third worker is started: below it two keep
#: ahead of the analyzing process, whose imports come on top of its frame building
THIRD_WORKER_JSON_BYTES = 256 << 20


class WorkerLost(Exception):
    """The worker could not start or ended without finishing (the caller decodes in-process instead)."""


def wanted(path: Path) -> bool:
    """Whether ``path`` is to be decoded in a worker (see module doc)."""
    setting = os.environ.get(ENV, "").strip()
    if setting == "0" or is_stream(path):  # a pipe can be read once only: by the reader itself
        return False
    if setting == "1":
        return True
    try:
        size = json_bytes(path)
    except (OSError, TracekitError):
        return False
    return size >= WORKER_MIN_JSON_BYTES["fork" if _can_fork() else "spawn"]


def json_bytes(path: Path) -> int:
    """The size of ``path``'s JSON text, estimated: its size, or :data:`GZIP_RATIO` times it when gzipped."""
    gzipped = peek_input(path, 2) == b"\x1f\x8b"
    return path.stat().st_size * (GZIP_RATIO if gzipped else 1)


class Workers:
    """The worker processes decoding one file (one part each, :func:`tracekit.readers.kineto_stream.stream_events`)
    and the threads that read their messages into one queue."""

    def __init__(self, path: Path, chunk_bytes: int, read_bytes: int, parts: int) -> None:
        self.path = path
        self.key = _key(path)
        self.parts = parts
        self.messages: queue.Queue[tuple[int, tuple[Any, ...]]] = queue.Queue(maxsize=QUEUE_CHUNKS * parts)
        self.procs: list[Any] = []  # subprocess.Popen, or _Forked where forking is safe
        try:
            with limits.watchdog_paused():  # a fork needs a process of one thread
                fork = _can_fork()
                for index in range(parts):
                    argv = [str(path), str(chunk_bytes), str(read_bytes), str(index), str(parts)]
                    argv += limits.to_argv()
                    if fork:
                        self.procs.append(_Forked(argv))
                    else:
                        self.procs.append(
                            subprocess.Popen(
                                [sys.executable, "-m", __name__, *argv],
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL,
                            )
                        )
                    limits.watch_process(self.procs[-1].pid)  # its memory counts against the ceiling
        except OSError as exc:
            self.close()
            raise WorkerLost(f"cannot start ({exc})") from exc
        for index, proc in enumerate(self.procs):
            threading.Thread(
                target=self._pump, args=(index, proc), name=f"kineto-decode-{index}", daemon=True
            ).start()

    def _pump(self, index: int, proc: Any) -> None:
        """Read one worker's messages into the queue until its last one (or its end)."""
        stream = proc.stdout
        assert stream is not None
        try:
            while True:
                message = pickle.load(stream)
                self.messages.put((index, message))
                if message[0] in ("done", "error", "lost", "limit"):
                    return
        except Exception as exc:  # EOF, a broken pipe, a damaged message: the worker is lost
            self.messages.put((index, ("lost", f"{type(exc).__name__}: {exc}")))
        finally:
            stream.close()

    def chunks(
        self, progress: Callable[[str, float], None] | None, header: dict[str, Any] | None
    ) -> Iterator[tuple[int, Any]]:
        """(part, wire chunk) as the workers send them: each part's chunks in file order, parts interleaved;
        ``header`` receives the document's top-level values once every part is done."""
        headers: dict[int, dict[str, Any]] = {}
        done = [0.0] * self.parts
        read = False
        while len(headers) < self.parts:
            index, message = self.messages.get()
            kind = message[0]
            if kind == "chunk":
                done[index] = message[2]
                if progress:
                    progress("decode", min(1.0, sum(done) / self.parts))
                yield index, message[1]
            elif kind == "read":
                if progress and not read:
                    progress("read", 1.0)
                read = True
            elif kind == "done":
                headers[index] = message[1]
            elif kind == "limit":  # the file passed a limit: decoding it here would pass it again
                raise limits.LimitError(message[1], self.path)
            else:  # "error" or "lost": the reader decodes the file itself, and raises its own error if any
                raise WorkerLost(message[1])
        if header is not None:
            for index in range(self.parts):
                header.update(headers[index])

    def close(self) -> None:
        """Stop the workers (those still running) and wait for them."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs:
            with contextlib.suppress(Exception):
                proc.wait(timeout=10)
            limits.unwatch_process(proc.pid)
        with contextlib.suppress(queue.Empty):  # unblock the reading threads, which then see the end
            while True:
                self.messages.get_nowait()


def worker_count(json_size: int | None = None) -> int:
    """How many worker processes share a file of ``json_size`` bytes of JSON text (None: a large one): the
    usable cores, at most two below :data:`THIRD_WORKER_JSON_BYTES` and at most :data:`MAX_WORKERS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    useful = 2 if json_size is not None and json_size < THIRD_WORKER_JSON_BYTES else MAX_WORKERS
    return max(1, min(useful, cores))


_PREFETCHED: dict[tuple[str, int, int], Workers] = {}


def _key(path: Path) -> tuple[str, int, int]:
    """The file's identity: resolved path, size and modification time."""
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


def start(path: Path) -> Workers:
    """Workers for ``path`` (:func:`worker_count` parts) with this process's chunk sizes (WorkerLost when
    one cannot start)."""
    from tracekit.readers import kineto_json, kineto_stream

    return Workers(path, kineto_json.CHUNK_BYTES, kineto_stream.READ_BYTES, worker_count(json_bytes(path)))


def prefetch(path: str | Path, fmt: str | None = None) -> bool:
    """Start decoding ``path`` now when it is a Kineto file the reader would decode in a worker (True when
    workers were started); never raises (the reader reports any problem with the file when it reads it).
    ``fmt``: the file's format when already detected (not sniffed again)."""
    try:
        from tracekit.readers import detect_format

        path = Path(path)
        limits.reading(path)
        if wanted(path) and (fmt or detect_format(path)) == "kineto":
            worker = start(path)
            _PREFETCHED[worker.key] = worker
            return True
    except (TracekitError, WorkerLost, OSError):
        pass
    return False


def take(path: Path) -> Workers | None:
    """The prefetched worker of ``path`` (None when there is none, or the file changed since)."""
    try:
        return _PREFETCHED.pop(_key(path), None)
    except OSError:
        return None


@atexit.register
def _close_prefetched() -> None:
    for worker in _PREFETCHED.values():
        worker.close()
    _PREFETCHED.clear()


def _can_fork() -> bool:
    """Whether a worker may be forked from this process rather than started afresh (saving its ~0.15 s
    start-up): :func:`tracekit.limits.can_fork` (the ``analyze`` command's prefetch, before its imports, is
    such a process); anywhere else a fresh interpreter is started."""
    return limits.can_fork()


class _Forked:
    """A worker forked from this process, with the ``subprocess.Popen`` methods :class:`Workers` uses."""

    def __init__(self, argv: list[str]) -> None:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: decode, write, and leave without running any of the parent's code
            status = 1
            try:
                os.close(read_end)
                import gc

                gc.disable()
                with os.fdopen(write_end, "wb") as out:
                    status = decode_part(argv, out)
            except BaseException:  # noqa: BLE001 - interrupted, or the reader stopped listening
                pass
            finally:
                os._exit(status)
        os.close(write_end)
        self.pid = pid
        self.stdout = os.fdopen(read_end, "rb")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int | None:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


#: glibc ``mallopt`` parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: a worker keeps up to this much freed memory in its heap rather than handing it back to the system
KEEP_FREED_BYTES = 256 << 20
#: blocks from this size up get their own mapping (glibc's largest allowed value; the default starts at
#: 128 KiB and grows only as such blocks are freed)
OWN_MAPPING_BYTES = 32 << 20


def keep_freed_memory() -> None:
    """Have glibc's malloc reuse freed memory in this process instead of returning it to the system.

    A worker allocates and frees the same few megabytes chunk after chunk (the inflated text, the decoded
    events, the joined columns); by default glibc unmaps each large block when it is freed and trims the
    heap top, so the next chunk faults the same memory in again, page by page (the measured effect:
    benchmarks/README.md). A no-op where malloc is not glibc's."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only: the parameter numbers are glibc's
        libc.mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES)
        libc.mallopt(_M_MMAP_THRESHOLD, OWN_MAPPING_BYTES)
    except (OSError, AttributeError):
        return


def decode_part(argv: list[str], out: BinaryIO) -> int:
    """A worker's work: decode part ``index`` of ``parts`` of ``path`` (``argv = [path, chunk_bytes,
    read_bytes, index, parts]``) and write its messages to ``out``."""
    keep_freed_memory()
    from tracekit.readers import kineto_json, kineto_stream
    from tracekit.readers.kineto_wire import wire_chunks

    path, chunk_bytes, read_bytes, index, parts = Path(argv[0]), *map(int, argv[1:5])
    if len(argv) > 5:
        limits.from_argv(argv[5:])
    kineto_json.CHUNK_BYTES, kineto_stream.READ_BYTES = chunk_bytes, read_bytes
    done = [0.0]

    def progress(phase: str, fraction: float) -> None:
        if phase == "read":
            pickle.dump(("read",), out, protocol=5)
        else:
            done[0] = fraction

    header: dict[str, Any] = {}
    try:
        for wire in wire_chunks(path, progress, header=header, part=(index, parts)):
            pickle.dump(("chunk", wire, done[0]), out, protocol=5)
        pickle.dump(("done", header), out, protocol=5)
    except limits.LimitError as exc:
        pickle.dump(("limit", exc.message), out, protocol=5)
    except TracekitError as exc:
        pickle.dump(("error", exc.message), out, protocol=5)
    except kineto_stream.PartBoundaryError as exc:
        pickle.dump(("lost", str(exc)), out, protocol=5)
    out.flush()
    return 0


if __name__ == "__main__":
    import gc

    gc.disable()  # chunks of small acyclic objects: the cyclic GC would rescan them all, to no purpose
    try:
        sys.exit(decode_part(sys.argv[1:], sys.stdout.buffer))
    except BrokenPipeError:  # the reader stopped listening (it failed or was interrupted)
        os._exit(0)
