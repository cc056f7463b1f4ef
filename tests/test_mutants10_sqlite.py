"""Exact behaviour of ``sqlite_engine.wal_beside`` and ``merged_copy`` (the -wal log beside an SQLite
export): the tests that kill the mutants the round-10 mutation run left. The databases are SYNTHETIC (made
here with Python's sqlite3 in WAL mode, its log copied while the writer still holds it)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tracekit.errors import TraceFormatError
from tracekit.readers import sqlite_engine
from tracekit.readers.sqlite_engine import merged_copy, wal_beside

MAGIC = b"SQLite format 3\x00"


def _header(b18: int, b19: int, size: int = 100) -> bytes:
    return (MAGIC + b"\x10\x00" + bytes([b18, b19]) + bytes(100))[:size]


def test_wal_beside_reads_the_header_bytes_18_and_19(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    path.write_bytes(b"")
    wal = Path(f"{path}-wal")
    wal.write_bytes(b"x")  # one byte is a log to look at
    assert wal_beside(path, _header(2, 2)) == wal
    assert wal_beside(path, _header(2, 1)) == wal
    assert wal_beside(path, _header(1, 2)) == wal
    assert wal_beside(path, _header(1, 1)) is None
    assert wal_beside(path, _header(2, 2, size=20)) == wal
    assert wal_beside(path, _header(2, 2, size=19)) is None
    assert wal_beside(path, b"SQLite format 2\x00" + _header(2, 2)[16:]) is None
    assert wal_beside(path, b"") is None
    wal.write_bytes(b"")
    assert wal_beside(path, _header(2, 2)) is None
    wal.unlink()
    assert wal_beside(path, _header(2, 2)) is None
    wal.mkdir()
    assert wal_beside(path, _header(2, 2)) is None


def test_wal_beside_an_unreadable_log_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.sqlite"
    Path(f"{path}-wal").write_bytes(b"x")

    def refused(self, *args, **kwargs):
        raise PermissionError(13, "denied")

    monkeypatch.setattr(Path, "is_file", refused)
    assert wal_beside(path, _header(2, 2)) is None


def _wal_db(tmp_path: Path) -> tuple[Path, Path, int]:
    """A WAL-mode file with 3 rows in it and 2 more in its log: (the file, its log, the log's frames)."""
    src = tmp_path / "src"
    src.mkdir()
    db = src / "t.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE t (v INTEGER)")
    con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.executemany("INSERT INTO t VALUES (?)", [(4,), (5,)])
    con.commit()
    out = tmp_path / "out"
    out.mkdir()
    shutil.copyfile(db, out / "t.sqlite")
    shutil.copyfile(f"{db}-wal", out / "t.sqlite-wal")
    con.close()
    wal = out / "t.sqlite-wal"
    page = int.from_bytes((out / "t.sqlite").read_bytes()[16:18], "big")
    return out / "t.sqlite", wal, (wal.stat().st_size - 32) // (page + 24)


def test_merged_copy_applies_the_log_to_a_copy_that_reads_alone(tmp_path: Path) -> None:
    path, wal, committed = _wal_db(tmp_path)
    assert committed >= 1
    before = (path.read_bytes(), wal.read_bytes())
    frames: list[int] = []
    with merged_copy(path, wal, frames) as copy:
        assert copy.name == "export.sqlite" and copy.parent != path.parent
        assert frames == [committed]
        assert not Path(f"{copy}-wal").exists()
        assert copy.read_bytes()[18:20] == b"\x01\x01"  # rollback journal: reads alone
        con = sqlite3.connect(f"file:{copy}?immutable=1", uri=True)
        assert [v for (v,) in con.execute("SELECT v FROM t ORDER BY v")] == [1, 2, 3, 4, 5]
        con.close()
        folder = copy.parent
    assert not folder.exists()
    assert (path.read_bytes(), wal.read_bytes()) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["t.sqlite", "t.sqlite-wal"]
    # without a list for the frames
    with merged_copy(path, wal) as copy:
        assert copy.is_file()


def test_a_log_sqlite_ignores_applies_no_frame(tmp_path: Path) -> None:
    path, wal, _ = _wal_db(tmp_path)
    wal.write_bytes(b"not a log" * 100)
    frames: list[int] = []
    with merged_copy(path, wal, frames) as copy:
        con = sqlite3.connect(f"file:{copy}?immutable=1", uri=True)
        assert [v for (v,) in con.execute("SELECT v FROM t ORDER BY v")] == [1, 2, 3]
        con.close()
    assert frames == [0]


def test_merged_copy_failures_name_the_file_and_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, wal, _ = _wal_db(tmp_path)
    gone = tmp_path / "gone.sqlite"
    with pytest.raises(TraceFormatError) as caught, merged_copy(gone, wal):
        pass
    assert caught.value.path == str(gone)
    assert caught.value.message.startswith("cannot copy it with its write-ahead log t.sqlite-wal (")
    with pytest.raises(TraceFormatError) as caught, merged_copy(path, tmp_path / "none-wal"):
        pass
    assert caught.value.message.startswith("cannot copy it with its write-ahead log none-wal (")

    def refused(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sqlite_engine.tempfile, "mkdtemp", refused)
    with pytest.raises(TraceFormatError) as caught, merged_copy(path, wal):
        pass
    assert caught.value.path == str(path)
    assert caught.value.message == (
        "cannot make a temporary copy to read it with its write-ahead log t.sqlite-wal "
        "([Errno 28] No space left on device)"
    )


def test_a_file_sqlite_cannot_open_is_corrupt(tmp_path: Path) -> None:
    path, wal, _ = _wal_db(tmp_path)
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    with pytest.raises(TraceFormatError) as caught, merged_copy(path, wal):
        pass
    assert caught.value.path == str(path)
    assert caught.value.message.startswith("corrupt SQLite (its write-ahead log t.sqlite-wal: ")


def test_the_copy_is_removed_when_the_reader_fails(tmp_path: Path) -> None:
    path, wal, _ = _wal_db(tmp_path)
    with pytest.raises(RuntimeError), merged_copy(path, wal) as copy:
        folder = copy.parent
        raise RuntimeError
    assert not folder.exists()
