"""What one input may cost: the limits that keep a trace from a stranger from taking the machine down.

Traces are shared in bug reports and forums, so opening one must be as safe as opening an image: memory is
bounded by the work (the events kept), never by the bytes, and every limit ends in one line and exit 2 (or,
for a string, a cut and a warning). The limits, their defaults and the option that lifts each (the README's
limits list says the same):

============================================  ==========================================  =====================
limit                                         default                                     lifted by
============================================  ==========================================  =====================
text inflated from one compressed input       200x its size on disk (at least 256 MiB),   ``--max-inflated``
(or read from a pipe)                         at most 64 GiB; a pipe: 64 GiB
one string value of a JSON event (names,      64 KiB: longer ones are cut, with a warning  ``--max-string``
ids, input shapes)                            naming the event (Kineto names)
one JSON event (its strings cut), and one     16 MiB: refused                             ``--max-event``
value of an SQLite file
memory of the process and its decoding        3/4 of the machine's memory (or of its      ``--max-memory``
workers (the safety net)                      cgroup's limit)
============================================  ==========================================  =====================

An SQLite file whose header declares more pages than the file holds is refused before any query (it is
truncated or forged; nothing lifts that). Inputs that are not regular files (a pipe, ``<(zcat t.json.gz)``)
are opened once and sniffed from their buffered head (:mod:`tracekit.io`).

This module imports nothing heavy (the Kineto decoding workers import it: no ``dataclasses``, which loads
``inspect``). :data:`current` holds the limits
in force; the command line sets them (:func:`configure`) and the workers receive them
(:func:`to_argv` / :func:`from_argv`).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from tracekit.errors import TracekitError

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

#: the inflated text of a compressed input may be this many times its size on disk ...
INFLATE_RATIO = 200
#: ... but never less than this (a small file's ratio says little: a 1 MB trace may well inflate to 30 MB)
INFLATE_FLOOR_BYTES = 256 * MIB
#: ... nor more than this (also the most text read from a pipe, whose size on disk is unknown)
MAX_INFLATED_BYTES = 64 * GIB
#: a JSON string value longer than this (in UTF-8 bytes) is cut to this length, with a warning
MAX_STRING_BYTES = 64 * KIB
#: a JSON event whose text, with its long strings cut and its whitespace runs collapsed, is longer than this
#: is refused; also the longest value an SQLite query may return (SQLite's SQLITE_LIMIT_LENGTH)
MAX_EVENT_BYTES = 16 * MIB
#: the default memory ceiling: this share of the machine's memory (or of the cgroup's limit, if lower)
MEMORY_SHARE = 0.75
#: how often the memory watchdog looks (seconds)
WATCH_INTERVAL_S = 0.05


class LimitError(TracekitError):
    """An input passed one of the limits (one line, exit 2); the message says which option lifts it."""


class Limits(NamedTuple):
    """The limits in force. ``max_inflated`` None: :data:`INFLATE_RATIO` x the file's size, at least
    :data:`INFLATE_FLOOR_BYTES`, at most :data:`MAX_INFLATED_BYTES`; a number replaces all three.
    ``max_memory`` None: no ceiling (the Python API); the command line sets one (:func:`default_memory`)."""

    max_inflated: int | None = None
    max_string: int = MAX_STRING_BYTES
    max_event: int = MAX_EVENT_BYTES
    max_memory: int | None = None


#: the limits in force in this process
current = Limits()


def configure(**changes: int | None) -> Limits:
    """Set the limits in force (keyword names as :class:`Limits`; a None value keeps the current one)."""
    global current
    current = current._replace(**{k: v for k, v in changes.items() if v is not None})
    return current


def reading_limits() -> tuple[int | None, int, int]:
    """The reading limits in force (``max_inflated``, ``max_string``, ``max_event``): what a worker process
    of a many-trace run applies (:func:`reading_limits_applied`) to read a trace as this process would."""
    return (current.max_inflated, current.max_string, current.max_event)


@contextlib.contextmanager
def reading_limits_applied(values: tuple[int | None, int, int] | None) -> Iterator[None]:
    """The reading limits ``values`` (:func:`reading_limits` of the process that sent the work; None: those
    in force) for the block, then those in force before. The memory ceiling is not one of them."""
    global current
    if values is None:
        yield
        return
    saved = current
    current = current._replace(max_inflated=values[0], max_string=values[1], max_event=values[2])
    try:
        yield
    finally:
        current = saved


# -------------------------------------------------------------------------------------------- sizes

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": KIB, "m": MIB, "g": GIB, "t": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes of a size as a user writes it: ``1500``, ``64K``, ``64KiB``, ``1.5G``, ``2GB`` (K, M, G, T are
    powers of 1024). ValueError for anything else, or for a size below 1 byte."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (e.g. 512M, 4G, 1.5GiB)")
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value < 1:
        raise ValueError(f"a size must be at least 1 byte: {text!r}")
    return value


def format_size(n: float) -> str:
    """A byte count for people, to three digits: ``512 B``, ``64 KiB``, ``3.1 MiB``, ``620 MiB``, ``1.95 GiB``."""
    for unit, size in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value >= 100 else f"{value:.3g} {unit}"
    return f"{int(n)} B"


# ---------------------------------------------------------------------------------------- inflating


class InflateGuard:
    """Watches the text inflated from one compressed input (or read from a pipe) as it streams, and stops
    it past the limit (:class:`Limits`): :meth:`add` raises :class:`LimitError` naming the size and the
    option that lifts it. ``on_disk``: the input's size on disk (None for a pipe: the ratio then applies to
    the compressed bytes read so far)."""

    def __init__(self, path: str | Path, on_disk: int | None, compressed: bool = True) -> None:
        self.path = path
        self.compressed = compressed
        self.total = 0
        self.fixed = current.max_inflated
        if self.fixed is not None:
            self.limit = self.fixed
        elif compressed and on_disk is not None:
            self.limit = min(MAX_INFLATED_BYTES, max(INFLATE_FLOOR_BYTES, INFLATE_RATIO * on_disk))
        else:  # a pipe: the absolute limit, and the ratio to what was read (in add)
            self.limit = MAX_INFLATED_BYTES
        self.ratio_on_read = self.fixed is None and compressed and on_disk is None
        self.on_disk = on_disk

    def add(self, inflated: int, read: int = 0) -> None:
        """Count ``inflated`` more bytes of text; ``read``: the compressed bytes read so far (pipes)."""
        self.total += inflated
        if self.total > self.limit:
            self._refuse(self.limit)
        if (
            self.ratio_on_read
            and self.total > INFLATE_FLOOR_BYTES
            and self.total > INFLATE_RATIO * max(read, 1)
        ):
            self._refuse(self.total, f"{INFLATE_RATIO}x the {format_size(read)} read from the pipe")

    def _refuse(self, limit: int, why: str | None = None) -> None:
        if why is None:
            if self.fixed is not None:
                why = "--max-inflated"
            elif self.compressed and self.on_disk is not None and limit == INFLATE_RATIO * self.on_disk:
                why = f"{INFLATE_RATIO}x its {format_size(self.on_disk)} on disk"
            elif self.compressed and self.on_disk is not None and limit == INFLATE_FLOOR_BYTES:
                why = f"{self.total / max(self.on_disk, 1):.0f}x its {format_size(self.on_disk)} on disk, past both"
                why += f" {INFLATE_RATIO}x and the {format_size(INFLATE_FLOOR_BYTES)} any file may inflate to"
            else:
                why = f"the {format_size(MAX_INFLATED_BYTES)} limit"
        verb = "inflates" if self.compressed else "holds"
        raise LimitError(
            f"{verb} past {format_size(limit)} of text ({why}); pass --max-inflated SIZE to allow it",
            self.path,
        )


# ------------------------------------------------------------------------------------------- workers


def to_argv() -> list[str]:
    """The limits in force as arguments for a decoding worker started afresh (:func:`from_argv`)."""
    return [str(current.max_inflated or 0), str(current.max_string), str(current.max_event)]


def from_argv(argv: list[str]) -> None:
    """Set the limits a worker was started with (:func:`to_argv`)."""
    inflated, string, event = map(int, argv[:3])
    configure(max_inflated=inflated or None, max_string=string, max_event=event)


# -------------------------------------------------------------------------------------------- memory


def total_memory() -> int | None:
    """This machine's memory in bytes, or its cgroup's limit when lower (None when unknown)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = None
    for name in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        with contextlib.suppress(OSError, ValueError):
            text = Path(name).read_text().strip()
            if text.isdigit() and (total is None or int(text) < total):
                total = int(text)
    return total


def default_memory() -> int | None:
    """The default ceiling: :data:`MEMORY_SHARE` of :func:`total_memory` (None when that is unknown)."""
    total = total_memory()
    return None if total is None else int(total * MEMORY_SHARE)


#: the input being read (named by the watchdog's message), and the processes whose memory counts with ours
_state: dict[str, object] = {"input": None}
_children: set[int] = set()
_lock = threading.Lock()


def reading(path: str | Path) -> None:
    """Name ``path`` as the input being read (for the memory ceiling's message)."""
    _state["input"] = str(path)


def watch_process(pid: int) -> None:
    """Count ``pid``'s memory with this process' (a decoding worker) until :func:`unwatch_process`."""
    with _lock:
        _children.add(pid)


def unwatch_process(pid: int) -> None:
    with _lock:
        _children.discard(pid)


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss(pid: int | str = "self") -> int:
    """Resident memory of a process in bytes (0 when it is gone or unknown)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


class _Watchdog:
    """A thread that sums the resident memory of this process and its watched workers every
    :data:`WATCH_INTERVAL_S` and ends the program past the ceiling: one line on stderr, the workers killed,
    exit 2. A thread, not ``setrlimit``: the address space of a polars process is several times its
    resident memory (reserved, never touched: ~3.5 GB for 150 MB resident on an SQLite export), so a limit on
    it would refuse good traces, and an allocation failure inside polars aborts without a word."""

    def __init__(self, limit: int, note: str | Path | None = None, share: str | None = None) -> None:
        self.limit = limit
        self.note = note
        self.share = share
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.stop.clear()
        self.thread = threading.Thread(target=self._run, name="tracekit-memory-ceiling", daemon=True)
        self.thread.start()

    def halt(self) -> None:
        self.stop.set()
        # (a thread made but not yet started -- a Ctrl-C between the two in start() -- is not joined: join()
        # raises then, and the interrupted command had ended in a traceback, exit 1; seen in CI)
        if self.thread is not None and self.thread.ident is not None:
            self.thread.join()
        self.thread = None

    def _run(self) -> None:
        while not self.stop.wait(WATCH_INTERVAL_S):
            with _lock:
                children = list(_children)
            used = rss() + sum(map(rss, children))
            if used > self.limit:
                self._end(used, children)

    def _end(self, used: int, children: list[int]) -> None:
        for pid in children + _pool_children():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        share = f", {self.share}" if self.share else ""
        what = (
            f"memory use passed {format_size(self.limit)}{share} ({format_size(used)} in use"
            f"{', decoding workers included' if children else ''}); pass --max-memory SIZE to allow more"
        )
        if self.note is not None:  # a many-trace worker: its trace's one line, for the process that sent it
            with contextlib.suppress(OSError), open(self.note, "w") as fh:
                fh.write(what)
        else:
            where = f"{_state['input']}: " if _state["input"] else ""
            with contextlib.suppress(OSError):
                # (a file name that is not UTF-8 is written as its backslash escape, as every output is)
                os.write(2, f"tracekit: {where}{what}\n".encode(errors="backslashreplace"))
        os._exit(LimitError.exit_code)


_watchdog: _Watchdog | None = None


def _pool_children() -> list[int]:
    """The processes this one started through multiprocessing that are still running (a many-trace run's pool
    workers, wherever the fork server forked them): ended with the program, or they would outlive it, holding
    its standard output and error open (a caller reading them waits for ever) and their memory."""
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return []
    try:
        return [p.pid for p in mp.active_children() if p.pid is not None]
    except Exception:  # (from the watchdog's thread, while the pool changes)
        return []


def start_memory_ceiling(limit: int | None, note: str | Path | None = None, share: str | None = None) -> None:
    """End the program (one line, exit 2) when this process and its decoding workers hold more than
    ``limit`` bytes (None: no ceiling). Linux only (it reads /proc); elsewhere a no-op.

    ``note``: a file that receives the line (without the program's name and the input) instead of standard
    error: a worker of a many-trace run (:mod:`tracekit.fleet.run`), whose line the process that sent the
    trace reports as that trace's failure; ``share``: what the limit is a share of, said in the line."""
    global _watchdog
    stop_memory_ceiling()
    if limit is None or not sys.platform.startswith("linux") or not rss():
        return
    _watchdog = _Watchdog(limit, note, share)
    _watchdog.start()


def stop_memory_ceiling() -> None:
    global _watchdog
    if _watchdog is not None:
        _watchdog.halt()
        _watchdog = None


def can_fork() -> bool:
    """Whether a worker may be forked from this process: on Linux, with polars not loaded (its threads do not
    survive a fork) and no thread but the main one and the memory watchdog (which the caller pauses while it
    forks: :func:`watchdog_paused`), counted in ``/proc/self/task`` so that a native library's threads count
    too. The ``tracekit`` program before its analysis is such a process; a notebook is not."""
    if not sys.platform.startswith("linux") or "polars" in sys.modules:
        return False
    others = watchdog_threads()
    if threading.active_count() - others != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) - others == 1
    except OSError:
        return False


def watchdog_threads() -> int:
    """How many threads of this process are the memory watchdog's (0 or 1)."""
    thread = _watchdog.thread if _watchdog is not None else None
    return 1 if thread is not None and thread.is_alive() else 0


@contextlib.contextmanager
def watchdog_paused() -> Iterator[None]:
    """The watchdog thread stopped for the block (forking a worker needs a process of one thread), then
    started again."""
    watchdog = _watchdog
    if watchdog is None or watchdog.thread is None:
        yield
        return
    watchdog.halt()
    try:
        yield
    finally:
        watchdog.start()
