"""Small file helpers: opening inputs (pipes read once), atomic writes that never replace an input, and output
folders.

Every file a command reads as input is registered here (:func:`register_input`; the readers and the run-directory
loader do it), and every write goes through :func:`atomic_path`, which refuses a target that is one of those
inputs: the same path, the same file through a symbolic link, or the same inode through a hard link. So no
command can write over a trace it read, whatever ``-o`` says and whatever a command writes inside an output
folder.

Inputs are opened through :func:`open_input` / :func:`peek_input`. A regular file is opened afresh each time
(format detection, then the reader, then perhaps a second pass or decoding workers). Anything else (a named
pipe, ``<(zcat t.json.gz)``, a character device) can be read only once: it is opened once per process, the
bytes format detection sniffs are kept, and the reader gets them again followed by the rest of the stream;
a second open, or a format that needs random access, is refused at once with one line, never a hang. A
named pipe that no one writes to is refused after :data:`STREAM_WAIT_S` seconds.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import select
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from tracekit.errors import TraceFormatError, TracekitError

#: (device, inode) and resolved path of every input file read in this process.
_INPUT_INODES: set[tuple[int, int]] = set()
_INPUT_PATHS: set[Path] = set()


def register_input(path: str | Path) -> None:
    """Remember ``path`` as an input of this process: :func:`atomic_path` will refuse to write over it."""
    path = Path(path)
    _INPUT_PATHS.add(_resolved(path))
    with contextlib.suppress(OSError):
        st = path.stat()
        _INPUT_INODES.add((st.st_dev, st.st_ino))


def forget_inputs() -> None:
    """Clear the input registry (for long-lived processes and tests that run several commands), and close
    the streams opened once (:func:`open_input`)."""
    _INPUT_INODES.clear()
    _INPUT_PATHS.clear()
    for stream in _STREAMS.values():
        with contextlib.suppress(OSError):
            stream.raw.close()
    _STREAMS.clear()


def _resolved(path: Path) -> Path:
    """``path.resolve()``, or its absolute path where its symbolic links form a loop (Python 3.11's
    ``resolve`` raises RuntimeError there, later ones OSError or nothing)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return path.absolute()


def is_link_loop(path: str | Path) -> bool:
    """Whether ``path``'s symbolic links lead back to themselves (ELOOP), so it names no file to write."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def is_input(path: str | Path) -> bool:
    """Whether writing ``path`` would replace a registered input (same resolved path or same inode)."""
    path = Path(path)
    if _resolved(path) in _INPUT_PATHS or path.absolute() in _INPUT_PATHS:
        return True
    try:
        st = path.stat()
    except OSError:
        return False
    return (st.st_dev, st.st_ino) in _INPUT_INODES


def check_outputs(outputs: Iterable[str | Path], inputs: Iterable[str | Path], option: str = "-o") -> None:
    """Refuse (exit 2, one line) before any work when an output file is one of ``inputs``; ``option`` is the
    option that named the outputs (``-o``, ``--gaps``, ``--timeline``), which the line tells to change.

    Commands call this with their ``-o`` file and their input files so that the refusal comes first; the
    registry check inside :func:`atomic_path` is the safety net for every other write.
    """
    for path in inputs:
        if Path(path).is_file():
            register_input(path)
    for out in outputs:
        if is_link_loop(out):
            raise TracekitError(
                f"a symbolic link loop (its links lead back to themselves): choose another {option}", out
            )
        if is_input(out):
            raise TracekitError(f"refusing to write over an input file (choose another {option})", out)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether the paths ``a`` and ``b`` name one file: the same resolved path, or (both existing) the same
    file by another name (a hard link, a symbolic link to it)."""
    a, b = Path(a), Path(b)
    if _resolved(a) == _resolved(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


#: how :class:`Recordings` found a file again
SAME_FILE, BYTE_COPY = "the same file twice or a link to it", "a byte-identical copy"
#: A copy whose bytes are the same once gzip is inflated (t.json and t.json.gz, or two compressions of them).
CONTENT_COPY = "the same bytes once inflated (gzip)"
GZIP_MAGIC = b"\x1f\x8b"


class Recordings:
    """The files seen so far, to tell one recording given twice: the same file (another spelling of its path, a
    link to it: one device and inode), a byte-identical copy, or a copy that is the same once gzip is inflated
    (SHA-256 of the inflated bytes). The whole digest is asked only of files whose first
    :data:`PREFIX_BYTES` bytes, inflated, are the same (and, both plain, whose sizes are equal): a gzip file's
    trailer gives the inflated size of its last member only (a file of several members, ``cat a.gz b.gz``, is
    read as their concatenation), so no size read from the file selects the candidates. Only regular files are
    compared by content (a pipe cannot be read again). Each file seen is remembered with a value (the row it
    gave)."""

    #: bytes of content (inflated) whose digest selects the candidates for the whole digest
    PREFIX_BYTES = 1 << 16

    def __init__(self) -> None:
        self._by_inode: dict[tuple[int, int], object] = {}
        self._by_prefix: dict[str, list[tuple[str, object]]] = {}
        self._digests: dict[str, str | None] = {}
        self._prefixes: dict[str, str | None] = {}

    @staticmethod
    def identity(path: str | Path | None) -> tuple[int, int, int] | None:
        """(device, inode, size) of the file ``path`` is, or None (no path, or it cannot be read)."""
        if not path:
            return None
        try:
            st = os.stat(path)
        except (OSError, TypeError, ValueError):
            return None
        return (st.st_dev, st.st_ino, st.st_size)

    @staticmethod
    def _regular(path: str) -> bool:
        try:
            return stat.S_ISREG(os.stat(path).st_mode)
        except (OSError, TypeError, ValueError):
            return False

    @staticmethod
    def _gzipped(path: str) -> bool:
        try:
            with open(path, "rb") as fh:
                return fh.read(2) == GZIP_MAGIC
        except OSError:
            return False

    def _content(self, path: str) -> BinaryIO:
        """The file's content, inflated where it is gzipped (every member, one after the other)."""
        import gzip

        return gzip.open(path, "rb") if self._gzipped(path) else open(path, "rb")  # type: ignore[return-value]

    def _prefix(self, path: str) -> str | None:
        """SHA-256 of the first :data:`PREFIX_BYTES` bytes of the content (None: not a regular file, or it
        cannot be read or inflated)."""
        import hashlib
        import zlib

        if path not in self._prefixes:
            self._prefixes[path] = None
            if self._regular(path):
                with contextlib.suppress(OSError, EOFError, zlib.error), self._content(path) as fh:
                    head = b""
                    while len(head) < self.PREFIX_BYTES:
                        block = fh.read(self.PREFIX_BYTES - len(head))
                        if not block:
                            break
                        head += block
                    self._prefixes[path] = hashlib.sha256(head).hexdigest()
        return self._prefixes[path]

    def _digest(self, path: str) -> str | None:
        """SHA-256 of the file's bytes, inflated where it is gzipped (None: it cannot be read or inflated)."""
        if path not in self._digests:
            import hashlib
            import zlib

            digest = hashlib.sha256()
            try:
                with self._content(path) as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
                self._digests[path] = digest.hexdigest()
            except (OSError, EOFError, zlib.error):
                self._digests[path] = None
        return self._digests[path]

    def find(self, path: str | Path | None) -> tuple[object | None, str]:
        """(the value remembered with the first file of ``path``'s recording, how it is the same:
        :data:`SAME_FILE`, :data:`BYTE_COPY` or :data:`CONTENT_COPY`), or (None, "") for a recording not seen."""
        key = self.identity(path)
        if key is None:
            return None, ""
        if key[:2] in self._by_inode:
            return self._by_inode[key[:2]], SAME_FILE
        prefix = self._prefix(str(path)) if self._by_prefix else None
        candidates = self._by_prefix.get(prefix, []) if prefix is not None else []
        import filecmp

        plain = not self._gzipped(str(path)) if candidates else True
        for other, value in candidates:
            both_plain = plain and not self._gzipped(other)
            if both_plain and os.path.getsize(other) != key[2]:
                continue
            mine = self._digest(str(path))
            if mine is not None and self._digest(other) == mine:
                same_bytes = both_plain or filecmp.cmp(str(path), other, shallow=False)
                return value, BYTE_COPY if same_bytes else CONTENT_COPY
        return None, ""

    def add(self, path: str | Path | None, value: object) -> None:
        """Remember the file ``path`` with ``value`` (nothing for a path that cannot be read)."""
        key = self.identity(path)
        if key is not None:
            self._by_inode.setdefault(key[:2], value)
            prefix = self._prefix(str(path))
            if prefix is not None:
                self._by_prefix.setdefault(prefix, []).append((str(path), value))


def _unwritable(folder: Path) -> str | None:
    """Why this user cannot create files in the existing ``folder`` (None: it can): a read-only file system,
    or the folder's permissions."""
    if os.access(folder, os.W_OK | os.X_OK):
        return None
    with contextlib.suppress(OSError, AttributeError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "read-only file system"
    return "permission denied"


def check_writable(target: str | Path) -> None:
    """TracekitError (exit 2, one line) when the file ``target`` could not be written atomically: its folder,
    where :func:`atomic_path` makes its temporary file, does not let this user create files. Commands call it
    with their output files before the work, so that a long analysis does not end in a write that fails. A
    target that exists and is no regular file (``/dev/null``, a pipe) is written through and not checked;
    a missing folder is the caller's own one-line refusal."""
    target = Path(target)
    if target.exists() and not target.is_file() and not target.is_dir():
        return
    folder = Path(os.path.realpath(target)).parent if target.is_symlink() else target.parent
    if folder.is_dir():
        reason = _unwritable(folder)
        if reason is not None:
            raise TracekitError(f"cannot write: the folder {folder} is not writable ({reason})", target)


def _no_folder(folder: Path) -> str:
    """Why ``folder`` (not a folder) cannot hold an output: it, or the nearest of its parents that exists, is a
    file (``-o notes.txt/out.json``), else it does not exist."""
    for level in (folder, *folder.parents):
        if level.exists() or level.is_symlink():
            if not level.is_dir():
                return f"{level} is a file, not a folder"
            break
    return f"{folder} does not exist"


def check_file_target(target: Path, option: str = "-o") -> None:
    """TracekitError (exit 2, one line) when the output file ``target`` named by ``option`` is a folder, lies
    in a folder that does not exist, or could not be written (:func:`check_writable`): the checks every
    command makes of its output files before the work."""
    if target.is_dir():
        raise TracekitError(f"is a folder; {option} takes a file name", target)
    if not target.parent.is_dir():
        reason = _no_folder(target.parent)
        if reason.endswith(" does not exist"):
            reason = f"the folder {reason}"
        raise TracekitError(f"cannot write: {reason}", target)
    check_writable(target)


#: Extensions that name a format of their own (an image, a page, a table, text): an output file of one format
#: (``--timeline``'s JSON, ``--gaps``' CSV) named with one of these is refused (:func:`check_named_for`).
OTHER_FORMATS = frozenset(
    {".png", ".svg", ".pdf", ".jpg", ".jpeg", ".gif", ".webp", ".html", ".htm", ".md", ".txt", ".csv", ".tsv",
     ".json", ".xlsx", ".xls", ".parquet", ".sqlite"}
)  # fmt: skip


#: Extensions of compressed files and archives: a tracekit output is written uncompressed (``--timeline``
#: gzips a ``.gz`` name), so a file named with one of these would not be what its name says.
COMPRESSED_SUFFIXES = frozenset(
    {".gz", ".tgz", ".xz", ".txz", ".lzma", ".bz2", ".tbz", ".tbz2", ".zst", ".zstd", ".tzst", ".zip", ".lz4",
     ".lz", ".7z", ".br", ".z", ".rar"}
)  # fmt: skip


def compressed_suffix(target: str | Path) -> str | None:
    """The extension of ``target`` (lower case) when it names a compression or an archive
    (:data:`COMPRESSED_SUFFIXES`), else None."""
    suffix = Path(target).suffix.lower()
    return suffix if suffix in COMPRESSED_SUFFIXES else None


def check_named_for(
    target: Path, option: str, writes: str, fits: Iterable[str], hint: str, gzip: bool = False
) -> None:
    """TracekitError (exit 2, one line) when ``option``'s output file ``target``, which is always written as
    ``writes`` (words), is named for another format (its extension in :data:`OTHER_FORMATS` and not in
    ``fits``), or for a compression or an archive (:data:`COMPRESSED_SUFFIXES`: ``.gz`` too unless the writer
    compresses such a name, ``gzip``, which then looks at the extension before it): ``hint`` says what to name
    it. Other and no extensions are taken as they are."""
    name = target.name.lower()
    if gzip:
        name = name.removesuffix(".gz")
    suffix = Path(name).suffix
    if (suffix in OTHER_FORMATS or suffix in COMPRESSED_SUFFIXES) and suffix not in set(fits):
        raise TracekitError(f"{option} writes {writes}, not a {suffix} file: {hint}", target)


def check_output_dir(path: str | Path) -> None:
    """TracekitError (exit 2, one line) when the output folder ``path`` (``report -o DIR``) could not be
    created or written into (or is a symbolic link loop): called before the work, as :func:`check_writable`
    is for files."""
    path = Path(path)
    if is_link_loop(path):
        raise TracekitError(
            "a symbolic link loop (its links lead back to themselves): choose another output folder", path
        )
    folder = path if path.is_dir() else path.parent
    if folder.is_dir():
        reason = _unwritable(folder)
        if reason is not None:
            what = (
                "the output folder is" if folder == path else f"cannot create the output folder: {folder} is"
            )
            raise TracekitError(f"{what} not writable ({reason})", path)


def output_dir(path: str | Path) -> Path:
    """Create the output folder ``path`` if needed, but only its last level: its parent must exist. One line
    (TracekitError) when it cannot be created or written into."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise TracekitError("exists and is not a folder", path)
    if not path.parent.is_dir():
        raise TracekitError(f"cannot create the output folder: {_no_folder(path.parent)}", path)
    check_output_dir(path)
    try:
        path.mkdir(exist_ok=True)
    except OSError as exc:
        raise TracekitError(f"cannot create the output folder: {exc.strerror or exc}", path) from None
    return path


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` only if the block succeeds.

    A crash or Ctrl-C leaves ``target`` untouched (either absent or its previous content). The target's folder
    must exist (nothing is created silently), and the target must not be an input of this process.

    A symbolic link is followed: the file it points to is replaced, not the link. A target that exists and is
    no regular file (``/dev/null``, ``/dev/stdout``, a named pipe) is written through, as a plain ``open``
    would, once the block succeeds (from a temporary file in the system's temporary folder): never replaced
    by a file (a named pipe with no reader within :data:`STREAM_WAIT_S` is one line, not a wait forever). A target that cannot be written is one line (TracekitError), not a traceback."""
    target = Path(target)
    if is_input(target):
        raise TracekitError("refusing to write over an input file", target)
    # (exists, is_file, is_dir follow links: /dev/stdout is a link to a pipe or a terminal)
    special = target.exists() and not target.is_file() and not target.is_dir()
    if target.is_symlink() and not special:
        target = Path(os.path.realpath(target))
        if is_input(target):
            raise TracekitError("refusing to write over an input file (through a symbolic link)", target)
    if not special and not target.parent.is_dir():
        reason = _no_folder(target.parent)
        if reason.endswith(" does not exist"):
            reason = f"the folder {reason}"
        raise TracekitError(f"cannot write: {reason}", target)
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=None if special else target.parent
        )
    except OSError as exc:
        raise TracekitError(f"cannot write: {exc.strerror or exc}", target) from None
    os.close(fd)
    tmp_path = Path(tmp)
    # mkstemp makes the file 0600; give it the permissions a plain open() would (0666 less the umask).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_path, 0o666 & ~umask)
    deferred = False
    try:
        yield tmp_path
        if _PENDING is not None:  # inside outputs_together: put in place with the others, at its end
            _PENDING.append((tmp_path, target, special))
            deferred = True
        else:
            _put_in_place(tmp_path, target, special)
    finally:
        if not deferred and tmp_path.exists():
            tmp_path.unlink()


def _put_in_place(tmp_path: Path, target: Path, special: bool) -> None:
    """The last step of :func:`atomic_path`: ``tmp_path`` renamed onto ``target`` (copied into it, ``special``:
    a device or a pipe); a failure is one line (TracekitError) naming the target."""
    try:
        if special:
            with open(tmp_path, "rb") as src, _open_special(target) as out:
                shutil.copyfileobj(src, out)
        else:
            os.replace(tmp_path, target)
    except OSError as exc:
        raise TracekitError(f"cannot write: {exc.strerror or exc}", target) from None


def _open_special(target: Path) -> BinaryIO:
    """``target`` (a device, a pipe) opened for writing. A named pipe is opened without blocking: with no reader
    within :data:`STREAM_WAIT_S` (the wait of a silent input pipe), TracekitError (one line); a plain open had
    waited for a reader forever."""
    try:
        fifo = stat.S_ISFIFO(os.stat(target).st_mode)
    except OSError:
        fifo = False
    if not fifo:
        return open(target, "wb")
    import time

    deadline = time.monotonic() + STREAM_WAIT_S
    while True:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # (ENXIO: no reader yet)
                raise
            if time.monotonic() >= deadline:
                raise TracekitError(
                    f"cannot write: no reader opened this named pipe in {STREAM_WAIT_S:g} s (start its reader "
                    "first)",
                    target,
                ) from None
            time.sleep(0.05)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "wb")


#: Inside :func:`outputs_together`: the (temporary file, target, special) of every write not yet in place.
_PENDING: list[tuple[Path, Path, bool]] | None = None


@contextlib.contextmanager
def outputs_together() -> Iterator[None]:
    """Every :func:`atomic_path` write inside the block is put in place only when the block ends without an
    error, all together: first the special targets (a device such as ``/dev/full``, a pipe), whose writes can
    fail, then the renames. A failure leaves every output of the block as it was (analyze's ``-o``, ``--gaps``
    and ``--timeline``: a full disk under ``-o`` had left ``--gaps`` and ``--timeline`` already replaced).
    Nested blocks are the outer block's."""
    global _PENDING
    if _PENDING is not None:
        yield
        return
    pending: list[tuple[Path, Path, bool]] = []
    _PENDING = pending
    try:
        yield
        _PENDING = None
        for tmp_path, target, special in sorted(pending, key=lambda item: not item[2]):  # specials first
            _put_in_place(tmp_path, target, special)
    finally:
        _PENDING = None
        for tmp_path, _, _ in pending:
            if tmp_path.exists():
                tmp_path.unlink()


def write_text_atomic(target: str | Path, text: str) -> None:
    """Write ``text`` to ``target`` atomically, in UTF-8. A lone surrogate (a file name that is not UTF-8, which
    Python holds as ``caf\\udce9``, or a JSON escape of one read back) is written as its backslash escape:
    strict UTF-8 had stopped every output that named such a file with an internal error."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8", errors="backslashreplace")


def write_bytes_atomic(target: str | Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


# ------------------------------------------------------------------------------------------ inputs

#: how long a named pipe may stay silent (no writer, no byte) before it is refused
STREAM_WAIT_S = 10.0


def write_ahead_log(path: str | Path) -> Path | None:
    """The SQLite write-ahead log ``<path>-wal`` beside ``path`` when it exists and holds anything, else None.
    Whether it is read with the file is the SQLite reader's question (the file's header must say WAL mode:
    :func:`tracekit.readers.sqlite_engine.wal_beside`); the Parquet cache counts it in the file's content."""
    wal = Path(f"{path}-wal")
    try:
        return wal if wal.is_file() and wal.stat().st_size > 0 else None
    except OSError:
        return None


def is_stream(path: str | Path) -> bool:
    """Whether ``path`` is an input that can be read only once (a pipe, a socket, a character device), as
    opposed to a regular file (or a folder, or nothing)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


class _Stream:
    """One input that can be read once: its head, read by :meth:`peek`, is kept for the reader."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.head = b""
        self.taken = False
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a named pipe's open waits for a writer
        except OSError as exc:
            raise TraceFormatError(f"cannot read ({exc.strerror})", path) from exc
        try:
            ready, _, _ = select.select([fd], [], [], STREAM_WAIT_S)
            os.set_blocking(fd, True)
        except (OSError, ValueError) as exc:
            os.close(fd)
            raise TraceFormatError(f"cannot read ({exc})", path) from exc
        if not ready:
            os.close(fd)
            raise TraceFormatError(f"nothing to read: the pipe stayed silent for {STREAM_WAIT_S:.0f} s", path)
        self.raw = io.FileIO(fd, "rb", closefd=True)

    def peek(self, n: int) -> bytes:
        """The first ``n`` bytes (fewer at the end of the stream)."""
        if self.taken:
            raise TraceFormatError(ONCE, self.path)
        while len(self.head) < n:
            block = self.raw.read(n - len(self.head))
            if not block:
                break
            self.head += block
        return self.head[:n]

    def take(self) -> BinaryIO:
        """The stream from its first byte (the kept head, then the rest); refused the second time."""
        if self.taken:
            raise TraceFormatError(ONCE, self.path)
        self.taken = True
        return io.BufferedReader(_Replay(self.head, self.raw), buffer_size=1 << 16)  # type: ignore[return-value]


#: the error for a second read of a stream
ONCE = (
    "a pipe can be read only once, and reading this trace needs a second pass or random access: save it to a "
    "file first (e.g. zcat t.json.gz > t.json)"
)


class _Replay(io.RawIOBase):
    """``head`` then the rest of ``raw``."""

    def __init__(self, head: bytes, raw: io.FileIO) -> None:
        self.head = memoryview(head)
        self.raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        return self.raw.readinto(buffer)

    def close(self) -> None:
        self.raw.close()
        super().close()


_STREAMS: dict[str, _Stream] = {}


def _stream(path: Path) -> _Stream:
    key = str(path)
    if key not in _STREAMS:
        _STREAMS[key] = _Stream(path)
    return _STREAMS[key]


def peek_input(path: str | Path, n: int) -> bytes:
    """The first ``n`` bytes of an input (fewer when it is shorter), without using it up: a stream's head is
    kept for :func:`open_input`. TraceFormatError when it cannot be read."""
    path = Path(path)
    if is_stream(path):
        return _stream(path).peek(n)
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError as exc:
        raise TraceFormatError(f"cannot read ({exc.strerror})", path) from exc


def open_input(path: str | Path) -> BinaryIO:
    """An input opened for reading from its first byte: a regular file afresh each time, a stream (pipe)
    once (its head, kept by :func:`peek_input`, comes first; a second open is refused). TraceFormatError
    when it cannot be read."""
    path = Path(path)
    if is_stream(path):
        return _stream(path).take()
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except OSError as exc:
        raise TraceFormatError(f"cannot read ({exc.strerror})", path) from exc


def input_size(path: str | Path) -> int | None:
    """The size of a regular file in bytes; None for a stream (or when unknown)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


GZIP_MAGIC = b"\x1f\x8b"
#: compressed bytes read per step by :func:`read_inflated`, and the most text one step may inflate to
_READ_BYTES, _STEP_TEXT = 1 << 16, 4 << 20


_WS = b" \t\r\n"


def collapse_padding(piece: bytes) -> bytes:
    """``piece``, or one space when it is all JSON whitespace (a run of it: outside strings it means
    nothing; inside one, the string is far longer than any string limit)."""
    if piece[:1] in (b" ", b"\t", b"\r", b"\n") and piece[-1:] in (b" ", b"\t", b"\r", b"\n"):
        if not piece.translate(None, _WS):
            return b" "
    return piece


def read_inflated(path: str | Path, json_text: bool = False) -> bytes:
    """All of an input's bytes, inflated when gzipped (concatenated members too), read once: the inflated
    size is watched as it streams (:class:`tracekit.limits.InflateGuard`; a stream's plain bytes too).
    ``json_text``: a piece of the text (up to 4 MiB) that is all whitespace is kept as one space, so that
    padding costs time, not memory. TraceFormatError when it cannot be read or the gzip stream is damaged;
    LimitError past the limit."""
    from tracekit import limits

    inflate, errors = _inflater()
    keep = collapse_padding if json_text else bytes

    path = Path(path)
    on_disk = input_size(path)
    with open_input(path) as fh:
        try:
            first = fh.read(_READ_BYTES)
            if not first.startswith(GZIP_MAGIC):
                guard = limits.InflateGuard(path, on_disk, compressed=False) if on_disk is None else None
                if guard is None and not json_text:
                    return first + fh.read()
                parts, block = [keep(first)], first
                while block:
                    if guard is not None:
                        guard.add(len(block))
                    block = fh.read(_READ_BYTES)
                    parts.append(keep(block))
                return b"".join(parts)
            out = [keep(piece) for piece in _gzip_pieces(path, fh, first, on_disk, inflate)]
        except OSError as exc:
            raise TraceFormatError(f"cannot read ({exc.strerror or exc})", path) from exc
        except errors as exc:
            raise TraceFormatError(f"damaged gzip file ({exc})", path) from exc
    return b"".join(out)


def _inflater() -> tuple[object, tuple[type[BaseException], ...]]:
    """The inflate module (ISA-L's, ~2x faster than zlib, else zlib) and the errors it raises."""
    import zlib

    try:  # ISA-L is a dependency; the standard library is the fallback
        from isal import isal_zlib

        return isal_zlib, (zlib.error, isal_zlib.error)
    except ImportError:  # pragma: no cover - depends on the environment
        return zlib, (zlib.error,)


def _gzip_pieces(
    path: Path, fh: BinaryIO, first: bytes, on_disk: int | None, inflate: object
) -> Iterator[bytes]:
    """The inflated pieces (at most 4 MiB each) of the gzipped input open as ``fh``, whose first bytes,
    ``first``, were read already: concatenated members too, the inflated size watched as it streams
    (:class:`tracekit.limits.InflateGuard`). Zero bytes after the last member are ignored, as gzip -d and
    Python's gzip module ignore them (block padding); any other bytes there are a TraceFormatError naming
    them, as is a stream that ends before its end marker; the inflate module's error for damaged data (the
    caller names it)."""
    from tracekit import limits

    guard = limits.InflateGuard(path, on_disk)
    inflater = inflate.decompressobj(wbits=31)  # type: ignore[attr-defined]
    block, read = first, len(first)
    trailing: int | None = None  # where the bytes after the last member begin (zeros so far)
    while block:
        if trailing is not None:
            _only_zeros(block, read - len(block), trailing, path)
        data = block if trailing is None else b""
        while data:
            piece = inflater.decompress(data, _STEP_TEXT)
            guard.add(len(piece), read)
            yield piece
            data = inflater.unconsumed_tail
            if inflater.eof and inflater.unused_data and not data:
                rest = inflater.unused_data
                if rest[:1] != b"\0" and GZIP_MAGIC.startswith(rest[:2]):  # the next gzip member
                    data = rest
                    inflater = inflate.decompressobj(wbits=31)  # type: ignore[attr-defined]
                else:
                    trailing = read - len(rest)
                    _only_zeros(rest, trailing, trailing, path)
        block = fh.read(_READ_BYTES)
        read += len(block)
    if not inflater.eof:
        raise TraceFormatError(
            "damaged gzip file (Compressed file ended before the end-of-stream marker was reached)", path
        )


def _only_zeros(data: bytes, at: int, trailing: int, path: Path) -> None:
    """TraceFormatError unless ``data`` (at byte ``at`` of the input, after the last gzip member, whose end is
    at byte ``trailing``) is all zero bytes: gzip -d warns "trailing garbage ignored" of anything else, which
    was appended to the file."""
    shown = data.lstrip(b"\0")
    if shown:
        raise TraceFormatError(
            f"damaged gzip file: bytes that are not gzip data follow its compressed data (from byte {trailing:,}: "
            f"{shown[:16]!r}; gzip -d would say 'trailing garbage ignored'): something was appended to it; "
            "recompress it (gzip -dc FILE | gzip > NEW)",
            path,
        )


def inflate_into(path: str | Path, sink: BinaryIO) -> int:
    """Write the inflated bytes of the gzipped input ``path`` to ``sink`` (concatenated members too, the
    inflated size watched as :func:`read_inflated` watches it); the bytes written. For formats read with
    random access (a gzipped SQLite export): the caller gives a temporary file. TraceFormatError when the
    input cannot be read, is not gzipped, or its gzip stream is damaged; LimitError past the limit."""
    path = Path(path)
    inflate, errors = _inflater()
    written = 0
    with open_input(path) as fh:
        try:
            first = fh.read(_READ_BYTES)
            if not first.startswith(GZIP_MAGIC):
                raise TraceFormatError("not a gzip file", path)
            for piece in _gzip_pieces(path, fh, first, input_size(path), inflate):
                try:
                    sink.write(piece)
                except OSError as exc:
                    raise TracekitError(
                        f"cannot write its inflated copy ({exc.strerror or exc}); set TMPDIR to a folder "
                        "with room for it",
                        path,
                    ) from exc
                written += len(piece)
        except OSError as exc:
            raise TraceFormatError(f"cannot read ({exc.strerror or exc})", path) from exc
        except errors as exc:
            raise TraceFormatError(f"damaged gzip file ({exc})", path) from exc
    return written
