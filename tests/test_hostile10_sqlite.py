"""Hostile write-ahead logs beside an SQLite export (round 10).

Every export here is SYNTHETIC: built with :class:`tests.nsys_builder.NsysBuilder` (via
``tests.test_fuzz9_nsys._wal_export``: 3 kernels of 10 µs in the file, 2 more in its ``-wal`` log) in pytest's
temporary folder and named ``*.synthetic.sqlite``; the logs are then cut, replaced or moved by hand.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from tests.test_fuzz9_nsys import _wal_export
from tracekit.errors import TraceFormatError
from tracekit.readers import sqlite_engine
from tracekit.readers.nsys_sqlite import read

US = 1_000


def _snapshot(folder: Path) -> dict[str, str | None]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else None
        for p in folder.iterdir()
    }


def _export_with_log(tmp_path: Path, log: bytes | None) -> Path:
    """The synthetic WAL-mode export with ``log`` as its ``-wal`` (the real log when None)."""
    path = _wal_export(tmp_path)
    if log is not None:
        Path(f"{path}-wal").write_bytes(log)
    return path


def _log_warnings(trace) -> list[str]:
    return [w for w in trace.meta["warnings"] if "write-ahead log" in w]


def test_the_whole_log_is_read_and_said(tmp_path: Path) -> None:
    """Control: the log's 2 kernels are read (5 of 5, 50 µs busy), one warning, the folder unchanged."""
    path = _export_with_log(tmp_path, None)
    before = _snapshot(tmp_path)
    trace = read(path)
    assert trace.ops.height == 5
    assert int((trace.ops["end"] - trace.ops["start"]).sum()) == 50 * US
    [warning] = _log_warnings(trace)
    assert "read together" in warning
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "cut",
    [
        pytest.param(lambda log: log[:-10], id="last-frame-cut"),
        pytest.param(lambda log: log[:20], id="header-cut"),
        pytest.param(lambda log: os.urandom(len(log)), id="random-bytes"),
        pytest.param(lambda log: b"\0" * len(log), id="zeros"),
    ],
)
def test_a_log_sqlite_cannot_apply_is_not_said_to_have_been_read(tmp_path: Path, cut) -> None:
    """A ``-wal`` log cut short (a copy interrupted; the frame that commits the 2 kernels lost), or garbage:
    SQLite applies no write of it, so 3 kernels (30 µs) are read, as SQLite itself reads the file. Before,
    the warning said the log 'holds writes not yet checkpointed ... the two were read together': a claim
    that the 3 kernels were the whole export. Now the warning says the log held no write SQLite could apply
    and that the latest writes may be missing."""
    (tmp_path / "real").mkdir()
    real = Path(f"{_wal_export(tmp_path / 'real')}-wal").read_bytes()
    tmp_path = tmp_path / "cut"
    tmp_path.mkdir()
    path = _export_with_log(tmp_path, cut(real))
    before = _snapshot(tmp_path)
    trace = read(path)
    assert trace.ops.height == 3
    assert int((trace.ops["end"] - trace.ops["start"]).sum()) == 30 * US
    [warning] = _log_warnings(trace)
    assert "read together" not in warning
    assert "no complete write" in warning
    assert "may be missing" in warning
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("kind", ["directory", "dangling-link", "link-to-dev-zero", "empty"])
def test_a_log_that_is_no_file_or_empty_is_ignored_silently(tmp_path: Path, kind: str) -> None:
    """A ``-wal`` that is a folder, a dangling link, a link to a device, or empty holds no write: the
    file is read alone (3 kernels), without a write-ahead-log warning and without an error."""
    path = _wal_export(tmp_path)
    wal = Path(f"{path}-wal")
    wal.unlink()
    if kind == "directory":
        wal.mkdir()
    elif kind == "dangling-link":
        wal.symlink_to(tmp_path / "nowhere")
    elif kind == "link-to-dev-zero":
        wal.symlink_to("/dev/zero")
    else:
        wal.write_bytes(b"")
    trace = read(path)
    assert trace.ops.height == 3
    assert _log_warnings(trace) == []


def test_a_log_reached_by_a_link_is_read_and_left_alone(tmp_path: Path) -> None:
    """A ``-wal`` that is a link to the log elsewhere: read through the link (5 kernels); the link and its
    target unchanged."""
    path = _wal_export(tmp_path)
    wal = Path(f"{path}-wal")
    target = tmp_path / "elsewhere" / "log"
    target.parent.mkdir()
    shutil.move(wal, target)
    wal.symlink_to(target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    trace = read(path)
    assert trace.ops.height == 5
    assert wal.is_symlink() and hashlib.sha256(target.read_bytes()).hexdigest() == digest


def test_a_read_only_folder_is_read_and_left_alone(tmp_path: Path) -> None:
    """The export and its log in a folder no one may write: the merged copy is made in the temporary folder
    (5 kernels read), nothing is written beside the input (no -shm, no journal)."""
    (tmp_path / "ro").mkdir()
    path = _wal_export(tmp_path / "ro")
    before = _snapshot(path.parent)
    os.chmod(path.parent, 0o555)
    try:
        trace = read(path)
    finally:
        os.chmod(path.parent, 0o755)
    assert trace.ops.height == 5
    assert _snapshot(path.parent) == before


def test_no_room_for_the_merged_copy_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary folder cannot be made (a full or read-only temporary disk): one line naming the export
    and the problem, not an OSError's traceback."""
    path = _wal_export(tmp_path)

    def refused(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sqlite_engine.tempfile, "mkdtemp", refused)
    with pytest.raises(TraceFormatError) as caught:
        read(path)
    message = str(caught.value)
    assert str(path) in message and "No space left on device" in message


def test_no_room_for_an_inflated_copy_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for a gzipped export's inflated copy."""
    import gzip

    path = _wal_export(tmp_path)
    gz = tmp_path / "x.synthetic.sqlite.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))

    def refused(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sqlite_engine.tempfile, "mkstemp", refused)
    with pytest.raises(TraceFormatError) as caught:
        read(gz)
    assert str(gz) in str(caught.value) and "No space left on device" in str(caught.value)


def test_a_log_beside_a_gzipped_export_is_not_applied(tmp_path: Path) -> None:
    """A ``-wal`` beside ``x.sqlite.gz``: a log belongs to the file SQLite wrote, not to a compressed copy of
    it; the inflated export is read alone (3 kernels), the log is not applied to it."""
    import gzip

    path = _wal_export(tmp_path)
    gz = tmp_path / "x.synthetic.sqlite.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    shutil.copyfile(f"{path}-wal", f"{gz}-wal")
    trace = read(gz)
    assert trace.ops.height == 3


def test_a_log_of_another_file_is_named_in_the_error(tmp_path: Path) -> None:
    """A ``-wal`` beside the export that is another SQLite file's log (copied by mistake): SQLite checks no
    link between a file and its log, so its pages replace the export's and the merged copy is no Nsight
    Systems export. Before, the line said only that the file was no export ("no StringIds/NVTX_EVENTS/CUPTI
    tables"), though the file alone is one; now the line says it was read with the log, and to move it away."""
    import sqlite3

    path = _wal_export(tmp_path)
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA wal_autocheckpoint=0")
        con.execute("CREATE TABLE t (a)")
        con.execute("INSERT INTO t VALUES (1)")
        con.commit()
        shutil.copyfile(f"{other}-wal", f"{path}-wal")
    finally:
        con.close()
    before = _snapshot(tmp_path)
    with pytest.raises(TraceFormatError) as caught:
        read(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert (
        f"write-ahead log {path.name}-wal beside it: if that log is not this file's, move it away" in message
    )
    assert "\n" not in message
    assert _snapshot(tmp_path) == before
