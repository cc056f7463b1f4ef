"""An opt-in cache of normalized traces (``--cache DIR``): re-analysis with other options reads Parquet columns
instead of the trace.

Key: the file's content hash (BLAKE2b-128 of its bytes) and the reader version (:data:`READER_VERSION`,
tracekit's version plus a format number bumped whenever a reader's output changes): a changed file or a new
tracekit misses. What else a reader's output depends on is in the key too (:func:`entry_dir`): the frames
read, whether the file's NAME says "synthetic" (the readers label such a file synthetic: a copy under
another name must not get the first name's label), and the one read limit that changes what is read rather
than refusing it (``--max-string``: names cut shorter). A damaged entry (a file cut short or unreadable, as
a crash can leave one) is a miss: it is removed and the trace read and stored anew. ``DIR/<key>/`` holds one Parquet file per frame and ``meta.json``; it is written to a
temporary folder and renamed into place, so concurrent workers never see half an entry. An entry holds what
the reader gave, without the trace's sidecar (merged on every read, as it is then), and is read back as the
analysis asks (its frame spec: only those frames and columns). Hashing a file
costs ~1 s per GB; ``DIR/hashes.json`` remembers the hash of a (path, size, mtime, inode) it has seen, so an
unchanged file is not hashed again (a changed one has another size or mtime and is hashed anew).

The cache is bounded (:func:`evict`): after each entry is stored, while the entries hold more than
``TRACEKIT_CACHE_MAX`` (:data:`CACHE_MAX_ENV`; default :data:`DEFAULT_CACHE_MAX`), entries are removed,
first those of other reader versions (which this tracekit never reads), then the least recently used (an
entry's ``meta.json`` modification time, renewed on every hit); the entry just stored is never removed, even
when it alone is larger. An entry is renamed away before it is deleted, so a worker reading it at the time
either finished opening its files (Linux keeps them readable) or finds no entry and reads the trace.
Temporary folders left by a killed writer (``.entry-*``, ``.evict-*``) are removed after an hour.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tracekit import __version__

#: bumped when the entries' layout changes (invalidates every entry); 2: an entry's meta holds nothing of
#: the trace's sidecar; 3: an Nsight Systems range never closed keeps a null end (was: the trace end), and
#: an ONNX Runtime profile's meta counts its kernels that start before their node (``ops_before_parent``);
#: 4: an entry stores the ``launches`` frame too (a read that asked for it had been answered without it);
#: 5: the key holds the name's "synthetic" mark and a --max-string other than the default; files are synced
#: to disk before an entry is renamed into place; 6: an entry's meta names the file it was read from by marks
#: (:func:`_named`), so that a byte-identical file's read names its own write-ahead log, not the first one's
CACHE_FORMAT = 6
#: the modules whose code decides what a reader gives (relative to the ``tracekit`` package): any change to
#: them changes :data:`READER_VERSION`, so a reader fixed without a version bump never answers from frames
#: an older reader wrote
READER_SOURCES = ("readers", "model.py", "io.py", "limits.py", "inputs.py", "calls.py", "errors.py")


def reader_source_digest(root: Path | None = None) -> str:
    """BLAKE2b-64 of the reader modules' source (:data:`READER_SOURCES` under ``root``, default: this
    ``tracekit`` package), in path order; "nosource" where the package ships no ``.py`` files (the version
    alone then keys the entries)."""
    root = root or Path(__file__).resolve().parent.parent
    files = sorted(
        f
        for name in READER_SOURCES
        for f in ((root / name).glob("*.py") if (root / name).is_dir() else [root / name])
        if f.is_file()
    )
    if not files:
        return "nosource"
    digest = hashlib.blake2b(digest_size=8)
    for f in files:
        digest.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()


READER_VERSION = f"{__version__}+cache{CACHE_FORMAT}+{reader_source_digest()}"
#: ``TRACEKIT_CACHE_MAX``: the most the cache's entries may hold (a size as ``--max-memory`` takes it: 2G, 500M)
CACHE_MAX_ENV = "TRACEKIT_CACHE_MAX"
#: the bound without ``TRACEKIT_CACHE_MAX``: ~10 entries of a 10^7-kernel trace, ~1,000 of 10^5 kernels
DEFAULT_CACHE_MAX = 10 << 30
#: a temporary folder of a writer (``.entry-*``) or of an eviction (``.evict-*``) older than this is left over
STALE_TEMPORARY_S = 3600
#: every frame of a :class:`tracekit.model.Trace` (its ``SCHEMAS``), as an entry stores them; ``launches`` is
#: empty unless the read that made the entry asked for it (its frame spec is then part of the entry's name)
FRAMES = ("ops", "api", "ranges", "gpu_metrics", "kernel_metrics", "cpu_ops", "launches")


def cache_folder(cache_dir: str | Path) -> Path:
    """The cache folder ``cache_dir``, created with its parents if needed (a tool-managed folder, like
    ``~/.cache``). TracekitError, one line naming it, when it is not a folder, cannot be created, or cannot
    be written (or ``TRACEKIT_CACHE_MAX`` is not a size): checked before any trace is read, so that a bad
    ``--cache`` ends the run at once (exit 2)."""
    from tracekit.errors import TracekitError
    from tracekit.io import is_link_loop

    path = Path(cache_dir)
    if is_link_loop(path):  # (mkdir would say 'File exists')
        raise TracekitError(
            "the cache folder (--cache) is a symbolic link loop (its links lead back to themselves): choose "
            "another folder",
            path,
        )
    if path.is_symlink() and not path.exists():
        raise TracekitError(
            f"the cache folder (--cache) is a symbolic link to {os.readlink(path)}, which does not exist",
            path,
        )
    if path.exists() and not path.is_dir():
        raise TracekitError("the cache folder (--cache) exists and is not a folder", path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise TracekitError(f"cannot create the cache folder (--cache): {reason}", path) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise TracekitError("cannot write in the cache folder (--cache): permission denied", path)
    cache_limit()  # a bound that is not a size ends the run here, before any trace is read
    return path


def _write_ahead_log(path: Path) -> Path | None:
    """The SQLite write-ahead log beside ``path`` (:func:`tracekit.io.write_ahead_log`): the reader reads the
    file with it (:func:`tracekit.readers.sqlite_engine.wal_beside`), so it is part of the content."""
    from tracekit.io import write_ahead_log

    return write_ahead_log(path)


def _rollback_journal(path: Path) -> Path | None:
    """The SQLite rollback journal ``<path>-journal`` beside ``path`` when it exists and holds anything: a
    hot one is rolled back on a copy before the read (:func:`tracekit.readers.sqlite_engine.hot_journal`),
    so it is part of the content (one that is not hot changes nothing read, and only the key)."""
    journal = Path(f"{path}-journal")
    try:
        return journal if journal.is_file() and journal.stat().st_size > 0 else None
    except OSError:
        return None


def _beside(path: Path) -> list[tuple[bytes, Path]]:
    """The files beside ``path`` that its read takes in (:func:`_write_ahead_log`, :func:`_rollback_journal`),
    each with its tag in the key."""
    found = [(b"-wal", _write_ahead_log(path)), (b"-journal", _rollback_journal(path))]
    return [(tag, part) for tag, part in found if part is not None]


def content_hash(path: Path) -> str:
    """BLAKE2b-128 of the file's bytes, and of its SQLite write-ahead log's and rollback journal's after them
    when there are any (:func:`_beside`), hex."""
    digest = hashlib.blake2b(digest_size=16)
    for tag, part in [(b"", path), *_beside(path)]:
        if tag:
            digest.update(b"\0" + tag + b"\0")
        with open(part, "rb") as fh:
            while chunk := fh.read(1 << 22):
                digest.update(chunk)
    return digest.hexdigest()


def _stat_key(path: Path) -> str:
    """What says that a file's content may have changed since it was hashed: its path, size, modification
    time, inode and device, and its change time (``st_ctime_ns``: set by the system on every write and on
    every change of the modification time, so a file rewritten in place with its old mtime put back, by
    ``touch -r``, ``cp -p`` or ``rsync --times``, is hashed again); and the same of its SQLite write-ahead
    log and rollback journal when there are any (:func:`_beside`)."""
    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_dev}|{st.st_ctime_ns}"
    for tag, part in _beside(
        path
    ):  # a log or journal written while the file stays as it was changes the read
        ws = part.stat()
        key += f"|{tag.decode()[1:]}|{ws.st_size}|{ws.st_mtime_ns}|{ws.st_ino}|{ws.st_ctime_ns}"
    return key


def _memo(cache: Path) -> dict[str, Any]:
    """``cache/hashes.json`` (stat key -> content hash); empty when absent, unreadable or not such a memo."""
    try:
        memo = json.loads((cache / "hashes.json").read_text())
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) else {}


def _is_digest(value: Any) -> bool:
    """Whether ``value`` is a hash as :func:`content_hash` gives it (32 lower-case hex digits)."""
    return isinstance(value, str) and len(value) == 32 and all(c in "0123456789abcdef" for c in value)


def file_hash(path: Path, cache: Path) -> str:
    """The content hash of ``path``, remembered by its stat in ``cache/hashes.json``."""
    key = _stat_key(path)
    memo = _memo(cache)
    known = memo.get(key)
    if _is_digest(known):
        return known
    value = content_hash(path)
    memo[key] = value
    _write_memo(cache, memo)
    return value


def _write_memo(cache: Path, memo: dict[str, Any]) -> None:
    """Replace ``cache/hashes.json`` with ``memo`` atomically; not written (a full disk): the files are
    hashed again next time."""
    with contextlib.suppress(OSError):
        fd, tmp = tempfile.mkstemp(dir=cache, prefix=".hashes.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(memo, fh)
            os.replace(tmp, cache / "hashes.json")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def has_entry(path: str | Path, cache_dir: str | Path) -> bool:
    """Whether ``cache_dir`` already holds an entry of ``path`` for this reader version, for any frame spec,
    without hashing the file: only a hash remembered in ``hashes.json`` for the file's current stat is
    looked up (a file never hashed there has no entry made through it). A guess for whether a read can be
    skipped, never a substitute for :func:`cached_read`'s own lookup."""
    path, cache = Path(path), Path(cache_dir)
    try:
        digest = _memo(cache).get(_stat_key(path))
    except OSError:  # the trace is gone: its reader says so
        return False
    if not _is_digest(digest):
        return False
    prefix = _entry_name(digest)
    try:
        names = os.listdir(cache)
    except OSError:
        return False
    return any(
        (name == prefix or name.startswith(prefix + "-")) and (cache / name / "meta.json").is_file()
        for name in names
    )


def _entry_name(digest: str) -> str:
    """The name of a file's entries (``<reader version>-<content hash>``), before any frame spec's suffix."""
    return f"{READER_VERSION}-{digest}"


def read_inputs(path: Path, frames: Any = None) -> dict[str, Any]:
    """What a read of ``path`` depends on besides the file's content and the reader version, where it is not
    the default (an empty dict: a plain read): ``frames`` (a :data:`tracekit.model.FrameSpec`: a read of some
    columns only); ``name``: "synthetic" when the file's name says so (the ORT, Kineto and Nsight Systems
    readers set ``meta["synthetic"]`` from it); ``max_string``: the ``--max-string`` in force when it is not
    the default (:data:`tracekit.limits.MAX_STRING_BYTES`: longer names are cut to it). The other read limits
    only refuse a file (an error is never stored), so they are not part of it."""
    from tracekit import limits

    inputs: dict[str, Any] = {}
    if frames is not None:
        inputs["frames"] = frames
    if "synthetic" in path.name.lower():
        inputs["name"] = "synthetic"
    if limits.current.max_string != limits.MAX_STRING_BYTES:
        inputs["max_string"] = limits.current.max_string
    return inputs


def entry_dir(path: Path, cache: Path, frames: Any = None) -> Path:
    """``cache/<reader version>-<content hash>[-<what else was read>]``: a read whose :func:`read_inputs` are
    not the default (some columns only, a "synthetic" name, another ``--max-string``) is its own entry."""
    key = _entry_name(file_hash(path, cache))
    inputs = read_inputs(path, frames)
    if inputs:
        spec = json.dumps(inputs, sort_keys=True, default=list)
        key += "-" + hashlib.blake2b(spec.encode(), digest_size=6).hexdigest()
    return cache / key


def _load_frames(entry: Path, frames: Any) -> dict[str, Any]:
    """The frames of a cache entry, as ``frames`` (a :data:`tracekit.model.FrameSpec`) asks for them: only the
    frames and columns asked for are read (the others stay empty or null, as a reader may leave them)."""
    import polars as pl

    from tracekit.model import wanted_frames

    wanted = wanted_frames(frames)
    return {
        name: pl.read_parquet(
            entry / f"{name}.parquet", columns=None if wanted[name] is None else sorted(wanted[name])
        )
        for name in FRAMES
        if name in wanted
    }


def cached_read(
    path: str | Path,
    cache_dir: str | Path,
    frames: Any = None,
    sidecar: Mapping[str, Any] | None = None,
    **read_args: Any,
) -> Any:
    """The normalized trace of ``path`` as :func:`tracekit.readers.read_trace` reads it (``frames``,
    ``sidecar`` and ``read_args`` passed on): from the cache when present, else read and stored.

    An entry holds what the trace file says, and nothing of its sidecar (``.meta.json``, which the key does
    not cover): what the run states is merged in on every read, as it is now (``sidecar``; None: read it
    beside the file), so that a corrected or removed stated value is never answered from an old entry."""
    from tracekit.inputs import load_sidecar_meta, merge_meta
    from tracekit.io import register_input
    from tracekit.readers import read_trace

    path, cache = Path(path), cache_folder(cache_dir)
    register_input(path)
    entry = entry_dir(path, cache, frames)
    trace = _load_entry(entry, path, frames)
    if trace is None:
        trace = read_trace(path, frames=frames, sidecar={}, **read_args)
        try:
            _store(trace, entry, cache, path)
        except OSError as exc:  # the analysis goes on without the entry (a full disk, a folder removed)
            trace.meta["warnings"].append(
                f"not stored in the cache {cache}: {exc.strerror or type(exc).__name__}"
            )
        else:
            with contextlib.suppress(OSError):  # a bound not kept this time is kept on the next store
                evict(cache, cache_limit(), keep=entry)
    merge_meta(trace.meta, load_sidecar_meta(path) if sidecar is None else sidecar)
    return trace


def _load_entry(entry: Path, path: Path, frames: Any) -> Any:
    """The trace held by ``entry``, its use recorded (:func:`evict` removes the least recently used), or None
    when there is no such entry, it went away while being read (evicted by another process), or it is
    damaged (a file cut short, emptied or zeroed, as a crash can leave one; any error reading it): a damaged
    entry is removed (:func:`_discard`), so that the read that follows stores a whole one in its place."""
    from tracekit.errors import TracekitError
    from tracekit.model import Trace

    try:
        meta = json.loads((entry / "meta.json").read_text())
        if not isinstance(meta, dict) or not isinstance(meta.get("warnings", []), list):
            raise ValueError("meta.json is not a trace's meta")
        meta = _named(meta, path, back=True)  # the file read now, wherever the entry was made from
        trace = Trace(**_load_frames(entry, frames), meta=meta)
    except (FileNotFoundError, NotADirectoryError):
        if entry.is_dir():  # a file of it missing: damaged (an entry is renamed into place whole)
            _discard(entry, entry.parent)
        elif entry.is_file() or entry.is_symlink():  # not a folder where the entry goes: no entry could ever
            with contextlib.suppress(OSError):  # be renamed into place (the trace was never stored again)
                entry.unlink()
        return None
    except (TracekitError, MemoryError):  # a limit passed (the memory ceiling): not the entry's fault
        raise
    except Exception:  # a damaged entry (polars' ComputeError, a JSONDecodeError, an OSError): read the trace
        _discard(entry, entry.parent)
        return None
    meta["path"] = str(path)
    with contextlib.suppress(OSError):
        os.utime(entry / "meta.json")
    return trace


def cache_limit() -> int:
    """The most the cache's entries may hold, in bytes: ``TRACEKIT_CACHE_MAX`` (:data:`CACHE_MAX_ENV`), else
    :data:`DEFAULT_CACHE_MAX`. TracekitError, one line, for a value that is not a size."""
    from tracekit.errors import TracekitError
    from tracekit.limits import parse_size

    text = os.environ.get(CACHE_MAX_ENV, "").strip()
    if not text:
        return DEFAULT_CACHE_MAX
    try:
        return parse_size(text)
    except ValueError as exc:
        raise TracekitError(f"{CACHE_MAX_ENV}: {exc}") from None


def _entry_size(entry: Path) -> int:
    """Bytes held by the files of one entry (a flat folder)."""
    return sum(f.stat().st_size for f in entry.iterdir())


def evict(cache: Path, limit: int, keep: Path | None = None) -> list[str]:
    """Remove entries of ``cache`` until those left hold at most ``limit`` bytes: first the entries of other
    reader versions, then the least recently used; never ``keep`` (the entry just stored). Also removes
    writers' and evictions' temporary folders older than :data:`STALE_TEMPORARY_S`, and the remembered hashes
    of files none of whose entries is left. Returns the names of the entries removed."""
    now = time.time()
    entries: list[tuple[bool, float, int, Path]] = []
    for child in cache.iterdir():
        with contextlib.suppress(OSError):  # gone meanwhile (another process evicted it)
            if not child.is_dir():
                continue
            if child.name.startswith((".entry-", ".evict-")):
                if now - child.stat().st_mtime > STALE_TEMPORARY_S:
                    shutil.rmtree(child, ignore_errors=True)
                continue
            current = child.name.startswith(READER_VERSION + "-")
            entries.append((current, (child / "meta.json").stat().st_mtime, _entry_size(child), child))
    total = sum(size for _, _, size, _ in entries)
    removed: list[str] = []
    for _, _, size, entry in sorted(entries, key=lambda e: (e[0], e[1])):
        if total <= limit:
            break
        if keep is not None and entry == keep:
            continue
        gone = cache / f".evict-{entry.name}-{os.getpid()}"
        try:
            os.rename(entry, gone)
        except OSError:  # another process took it first
            continue
        shutil.rmtree(gone, ignore_errors=True)
        total -= size
        removed.append(entry.name)
    if removed:
        _forget_hashes(cache)
    return removed


def _forget_hashes(cache: Path) -> None:
    """Drop from ``hashes.json`` the files none of whose entries is left (hashed again if read again)."""
    memo = _memo(cache)
    names = [n for n in os.listdir(cache) if not n.startswith(".")]
    kept = {k: v for k, v in memo.items() if _is_digest(v) and any(_entry_name(v) in n for n in names)}
    if len(kept) < len(memo):
        _write_memo(cache, kept)


def _discard(entry: Path, cache: Path) -> None:
    """Remove the (damaged) entry ``entry``: renamed away first, as :func:`evict` does, so that another process
    never reads it half removed; nothing when it is already gone or cannot be moved."""
    gone = cache / f".evict-{entry.name}-{os.getpid()}"
    try:
        os.rename(entry, gone)
    except OSError:
        return
    shutil.rmtree(gone, ignore_errors=True)


def _synced(path: Path) -> None:
    """``path``'s bytes on disk (fsync): an entry renamed into place after a crash holds whole files."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: What an entry's meta holds in place of the path and the name of the file it was read from
#: (:func:`_named`): an entry answers for every byte-identical file, whose reads name that file.
PATH_MARK, NAME_MARK = "\x00tracekit-path\x00", "\x00tracekit-name\x00"


def _named(value: Any, path: Path, back: bool = False) -> Any:
    """``value`` (a trace's meta, its warnings) with ``path`` and its file name replaced by
    :data:`PATH_MARK` / :data:`NAME_MARK` (``back``: the marks by ``path`` and its name): the reader's
    warnings name the file it read and what lies beside it ('its write-ahead log a.sqlite-wal beside it'),
    and an entry made from one file answers for a byte-identical one, whose -wal the warning must name. A
    name is replaced only where it stands alone (not inside a longer name: 'a.sqlite' in 'data.sqlite')."""
    import re

    if isinstance(value, str):
        if back:
            return value.replace(PATH_MARK, str(path)).replace(NAME_MARK, path.name)
        if str(path) != path.name:
            value = value.replace(str(path), PATH_MARK)
        return re.sub(rf"(?<![\w.\-]){re.escape(path.name)}(?!\w)", NAME_MARK, value)
    if isinstance(value, list):
        return [_named(v, path, back) for v in value]
    if isinstance(value, dict):
        return {k: _named(v, path, back) for k, v in value.items()}
    return value


def _store(trace: Any, entry: Path, cache: Path, path: Path | None = None) -> None:
    """``trace`` written as the entry ``entry`` of ``cache``: into a temporary folder, its files synced to
    disk, renamed into place (a power loss after the rename cannot leave files cut short under the name).
    ``path``: the file it was read from, which its meta names by marks (:func:`_named`)."""
    tmp = Path(tempfile.mkdtemp(dir=cache, prefix=".entry-"))
    meta = trace.meta if path is None else _named(trace.meta, path)
    try:
        for name in FRAMES:
            getattr(trace, name).write_parquet(tmp / f"{name}.parquet")
            _synced(tmp / f"{name}.parquet")
        (tmp / "meta.json").write_text(json.dumps(meta, default=str))
        _synced(tmp / "meta.json")
        with contextlib.suppress(OSError):  # another worker stored it first: keep theirs
            os.rename(tmp, entry)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
