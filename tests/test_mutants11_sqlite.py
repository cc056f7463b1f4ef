"""Exact text of the SQLite reader's warning for a file read with its -wal log (``sqlite_engine._log_note``),
each branch: the tests that kill the mutants the round-11 mutation run of ``wal_beside`` / ``_log_note`` left
(every one a changed word or a lost size). The logs and databases are SYNTHETIC (bytes written here, or a
WAL-mode file made with Python's sqlite3, its log copied while the writer still holds it)."""

from __future__ import annotations

from pathlib import Path

from tests.test_mutants10_sqlite import _wal_db
from tracekit.readers.sqlite_engine import _log_note, open_database

APPLIED = (
    "the file is in WAL mode, and its write-ahead log {name} beside it holds writes not yet checkpointed into "
    "it ({size}): the two were read together, from a temporary copy (the file alone misses them)"
)
IGNORED = (
    "the file is in WAL mode, and its write-ahead log {name} beside it ({size}) holds no complete write SQLite "
    "can apply (cut short, damaged, or no log): the file was read alone, as SQLite reads it; the writes made "
    "last may be missing"
)


def test_log_note_applied_frames_names_the_log_and_its_size(tmp_path: Path) -> None:
    wal = tmp_path / "x.sqlite-wal"
    wal.write_bytes(b"x" * 100)
    assert _log_note(wal, 2) == APPLIED.format(name="x.sqlite-wal", size="100 B")
    assert _log_note(wal, 1) == APPLIED.format(name="x.sqlite-wal", size="100 B")


def test_log_note_no_frame_applied_says_the_file_was_read_alone(tmp_path: Path) -> None:
    wal = tmp_path / "x.sqlite-wal"
    wal.write_bytes(b"x" * 4152)
    assert _log_note(wal, 0) == IGNORED.format(name="x.sqlite-wal", size="4.05 KiB")
    assert _log_note(wal, -1) == IGNORED.format(name="x.sqlite-wal", size="4.05 KiB")


def test_log_note_a_log_gone_since_says_size_unknown(tmp_path: Path) -> None:
    wal = tmp_path / "gone.sqlite-wal"
    assert _log_note(wal, 0) == IGNORED.format(name="gone.sqlite-wal", size="size unknown")
    assert _log_note(wal, 3) == APPLIED.format(name="gone.sqlite-wal", size="size unknown")


def test_open_database_notes_the_applied_log_word_for_word(tmp_path: Path) -> None:
    from tracekit.limits import format_size

    path, wal, _ = _wal_db(tmp_path)
    size = format_size(wal.stat().st_size)
    with open_database(path, "a test file") as database:
        rows = database.con.execute("SELECT v FROM t ORDER BY v").fetchall()
        assert [v for (v,) in rows] == [1, 2, 3, 4, 5]
        assert database.notes == [APPLIED.format(name="t.sqlite-wal", size=size)]


def test_open_database_notes_an_ignored_log_word_for_word(tmp_path: Path) -> None:
    path, wal, _ = _wal_db(tmp_path)
    wal.write_bytes(b"not a log" * 100)
    with open_database(path, "a test file") as database:
        rows = database.con.execute("SELECT v FROM t ORDER BY v").fetchall()
        assert [v for (v,) in rows] == [1, 2, 3]
        assert database.notes == [IGNORED.format(name="t.sqlite-wal", size="900 B")]
