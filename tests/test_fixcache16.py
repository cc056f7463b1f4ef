"""fixcache16: the --cache key and its damaged entries, SQLite beside a hot rollback journal, and
analyze_many's jobs.

The tests copied from tests/test_hostile16.py (where they are strict xfails) keep their names and bodies; the
others pin exact numbers of hand-built SYNTHETIC traces (file names say "synthetic"): an ORT CPU profile of
3 runs of 1000 µs, each with a MatMul node of 300 µs and an Add node of 100 µs (latency 1.0 ms, operator busy
0.4 ms per run), and the committed synthetic Nsight Systems sample (10 iterations of 160 kernels, GPU busy
0.9134527 ms).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import NSYS_BUSY_MS, NSYS_KERNELS, NSYS_SAMPLE, interrupted_pool, small_trace_events
from tests.hostile import analyze_json as _json
from tests.hostile import ort_cpu_events as _ort_cpu
from tests.hostile import write_json as _write_json
from tracekit.fleet import cache


def _one_line(err: str, path: str | Path) -> str:
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tracekit: ") and str(path) in lines[0], err
    return lines[0]


def _state(*paths: Path) -> list[tuple[str, int, int, bytes]]:
    return [(p.name, p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes()) for p in paths]


def _cached_entry(cache_dir: Path) -> Path:
    (entry,) = [p for p in cache_dir.iterdir() if p.is_dir()]
    return entry


def _entries(cache_dir: Path) -> list[str]:
    return sorted(p.name for p in cache_dir.iterdir() if p.is_dir())


def _latency_and_busy(doc: dict) -> list[tuple[float, float]]:
    return [(round(it["latency_ms"], 9), round(it["gpu_busy_ms"], 9)) for it in doc["iterations"]]


# ------------------------------------------------------------------------ copied from test_hostile16 (xfail there)


# ------------------------------------------------------------------------------------- cache: exact numbers


def test_a_damaged_entry_is_replaced_with_a_whole_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ORT profile's numbers (3 runs: latency 1.0 ms, operator busy 0.4 ms) from a cut entry, and the
    entry stored anew: the third analysis reads it (it holds a whole ops.parquet again) with the same numbers."""
    ort = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    cache_dir = tmp_path / "cache"
    code, first, err = _json(capsys, str(ort), "--cache", str(cache_dir), "-q")
    assert code == 0, err
    assert _latency_and_busy(first) == [(1.0, 0.4)] * 3
    entry = _cached_entry(cache_dir)
    whole = (entry / "ops.parquet").read_bytes()
    (entry / "ops.parquet").write_bytes(whole[:100])
    code, again, err = _json(capsys, str(ort), "--cache", str(cache_dir), "-q")
    assert code == 0, err
    assert _latency_and_busy(again) == [(1.0, 0.4)] * 3
    assert _entries(cache_dir) == [entry.name]  # the damaged one replaced, nothing left beside it
    assert (entry / "ops.parquet").read_bytes() == whole
    assert not [p for p in cache_dir.iterdir() if p.name.startswith((".entry-", ".evict-"))]
    spec = None
    trace = cache._load_entry(entry, ort, spec)
    assert trace is not None and trace.ops.height == 6  # 3 runs x 2 nodes


@pytest.mark.parametrize(
    "damage",
    [
        "empty meta.json",
        "meta.json a list",
        "meta.json zeros",
        "ops.parquet empty",
        "ops.parquet zeros",
        "no ops",
    ],
)
def test_every_kind_of_damage_is_a_miss(tmp_path: Path, damage: str) -> None:
    """_load_entry: None (read the trace again) for an entry whose files a crash could leave damaged, and the
    entry removed; the read after it gives the 6 nodes again."""
    ort = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    cache_dir = tmp_path / "cache"
    assert cache.cached_read(ort, cache_dir).ops.height == 6
    entry = _cached_entry(cache_dir)
    meta, ops = entry / "meta.json", entry / "ops.parquet"
    if damage == "empty meta.json":
        meta.write_text("")
    elif damage == "meta.json a list":
        meta.write_text("[]")
    elif damage == "meta.json zeros":
        meta.write_bytes(b"\0" * meta.stat().st_size)
    elif damage == "ops.parquet empty":
        ops.write_bytes(b"")
    elif damage == "ops.parquet zeros":
        ops.write_bytes(b"\0" * ops.stat().st_size)
    else:
        ops.unlink()
    assert cache._load_entry(entry, ort, None) is None
    assert not entry.exists()
    assert cache.cached_read(ort, cache_dir).ops.height == 6
    assert cache._load_entry(entry, ort, None).ops.height == 6


def test_the_key_holds_the_name_s_synthetic_mark_and_the_string_limit(tmp_path: Path) -> None:
    """Two names without "synthetic" share an entry (the content decides); a "synthetic" name and another
    --max-string are entries of their own."""
    from tracekit import limits

    a = _write_json(tmp_path / "a.ort.json", _ort_cpu())
    b = tmp_path / "b.ort.json"
    s = tmp_path / "a.SYNTHETIC.ort.json"
    shutil.copy(a, b)
    shutil.copy(a, s)
    folder = cache.cache_folder(tmp_path / "cache")
    assert cache.entry_dir(a, folder) == cache.entry_dir(b, folder)
    assert cache.entry_dir(a, folder).name == cache._entry_name(cache.content_hash(a))
    assert cache.entry_dir(s, folder) != cache.entry_dir(a, folder)
    saved = limits.current
    try:
        limits.current = saved._replace(max_string=100)
        cut = cache.entry_dir(a, folder)
        limits.current = saved._replace(max_string=limits.MAX_STRING_BYTES)
        assert cache.entry_dir(a, folder) != cut
    finally:
        limits.current = saved
    assert cache.cached_read(b, folder).meta["synthetic"] is False
    assert cache.cached_read(s, folder).meta["synthetic"] is True
    assert cache.cached_read(a, folder).meta["synthetic"] is False  # b's entry, a's path
    assert cache.cached_read(a, folder).meta["path"] == str(a)
    assert len(_entries(folder)) == 2


def test_the_cut_names_are_kept_apart_in_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Names of 5000 + len(name) bytes: 100 B with --max-string 100 (12 names cut: 4 iterations x 3 kernels),
    whole without it, whatever the cache held first."""
    events = small_trace_events()
    for event in events:
        if event["cat"] == "kernel":
            event["name"] = "k" * 5000 + event["name"]
    path = _write_json(tmp_path / "long-names.synthetic.json", {"traceEvents": events})
    cache_dir = tmp_path / "cache"
    for _ in range(2):  # store, then hit
        code, whole, err = _json(capsys, str(path), "--cache", str(cache_dir), "-q")
        assert code == 0, err
        assert not [w for w in whole["warnings"] if "cut to" in w]
        code, cut, err = _json(capsys, str(path), "--cache", str(cache_dir), "-q", "--max-string", "100")
        assert code == 0, err
        (said,) = [w for w in cut["warnings"] if "cut to" in w]
        assert said.startswith(
            "12 event name(s) longer than 100 B cut to 100 B (--max-string SIZE keeps more)"
        )
    assert len(_entries(cache_dir)) == 2


def test_a_changed_sidecar_is_seen_through_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The entry holds the trace only: the sidecar as it is now is merged on every read (batch 4, then 16)."""
    ort = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    sidecar = tmp_path / "cpu.synthetic.ort.meta.json"
    cache_dir = tmp_path / "cache"
    for batch in (4, 16):
        _write_json(sidecar, {"batch_size": batch})
        code, doc, err = _json(capsys, str(ort), "--cache", str(cache_dir), "-q")
        assert code == 0, err
        assert doc["config"]["batch_size"] == batch
        assert _latency_and_busy(doc) == [(1.0, 0.4)] * 3
    assert len(_entries(cache_dir)) == 1


# ------------------------------------------------------------------------------- SQLite beside a rollback journal


def _leave_hot_journal(path: Path) -> None:
    """In a child process: delete every second kernel row in a transaction big enough to spill into the file
    (cache_size=1), then die without committing or rolling back, as a killed exporter or writer does: the
    file is half written and its ``-journal`` beside it is hot (SQLite rolls it back on the next write
    open)."""
    code = (
        "import os, sqlite3\n"
        f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "c.execute('PRAGMA cache_size=1')\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        "c.execute('DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0')\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def _kernels_and_busy(doc: dict) -> tuple[float, float]:
    return doc["summary"]["kernels"]["mean"], round(doc["summary"]["gpu_busy_ms"]["mean"], 7)


def test_the_journal_is_rolled_back_on_a_copy_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every iteration as committed (160 kernels, 0.9134527 ms), the warning naming the journal; the file alone
    (what the immutable open read before) holds part of the 800 deletes (every second rowid) begun."""
    path = tmp_path / "torn.synthetic.sqlite"
    shutil.copy(NSYS_SAMPLE, path)
    _leave_hot_journal(path)
    journal = path.with_name(path.name + "-journal")
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert _kernels_and_busy(doc) == (NSYS_KERNELS, NSYS_BUSY_MS)
    (said,) = [w for w in doc["warnings"] if "journal" in w]
    assert said.startswith(
        f"its rollback journal {journal.name} beside it is hot: a writer ended in the middle of a transaction"
    ), said
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True) as con:
        (alone,) = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    assert (
        800 <= alone < 1600
    )  # part of the 800 deletes in the file (823 with SQLite 3.4x: 82.3 per iteration)


def test_a_journal_that_is_not_hot_is_not_applied(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A committed delete in journal_mode=PERSIST leaves a journal whose header is zeroed (not hot): the file
    is what was committed, 800 of the 1600 kernels, 80 per iteration; nothing said of the journal."""
    path = tmp_path / "persist.synthetic.sqlite"
    shutil.copy(NSYS_SAMPLE, path)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=PERSIST")
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0")
    con.close()
    journal = path.with_name(path.name + "-journal")
    assert journal.stat().st_size > 0 and journal.read_bytes()[:1] == b"\0"
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert doc["summary"]["kernels"]["mean"] == 80.0
    assert not [w for w in doc["warnings"] if "journal" in w]


def test_a_file_whose_writer_still_holds_its_lock_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A writer still in its transaction (its pages spilled into the file, its lock held): refused in one line
    naming the journal; once it dies, the rollback reads 160 kernels per iteration."""
    path = tmp_path / "writing.synthetic.sqlite"
    shutil.copy(NSYS_SAMPLE, path)
    code = (
        "import os, sqlite3, sys\n"
        f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "c.execute('PRAGMA cache_size=1')\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        "c.execute('DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0')\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
        "os._exit(0)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        code_, _, err = _json(capsys, str(path))
        assert code_ == 2
        assert _one_line(err, path) == (
            f"tracekit: {path}: is being written: a process holds its write lock, and its rollback journal "
            f"{path.name}-journal holds the writes it has begun; analyze it once the writer has ended"
        )
    finally:
        writer.communicate("", timeout=60)
    code_, doc, err = _json(capsys, str(path), "-q")
    assert code_ == 0, err
    assert _kernels_and_busy(doc) == (NSYS_KERNELS, NSYS_BUSY_MS)


def test_the_cache_keys_the_journal_beside_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same file bytes with its hot journal (160 kernels per iteration, rolled back) and without it (the
    file alone: what SQLite reads of it then): through the cache as without it."""
    path = tmp_path / "torn.synthetic.sqlite"
    shutil.copy(NSYS_SAMPLE, path)
    _leave_hot_journal(path)
    journal = path.with_name(path.name + "-journal")
    cache_dir = tmp_path / "cache"
    code, doc, err = _json(capsys, str(path), "-q", "--cache", str(cache_dir))
    assert code == 0, err
    assert _kernels_and_busy(doc) == (NSYS_KERNELS, NSYS_BUSY_MS)
    journal.rename(tmp_path / "elsewhere")
    code, alone, err = _json(capsys, str(path), "-q")
    assert code == 0, err
    assert alone["summary"]["kernels"]["mean"] != NSYS_KERNELS
    code, cached, err = _json(capsys, str(path), "-q", "--cache", str(cache_dir))
    assert code == 0, err
    assert _kernels_and_busy(cached) == _kernels_and_busy(alone)


# ------------------------------------------------------------------------------------------- analyze_many jobs


@pytest.mark.parametrize("jobs", [0, -1, -8, 1.5, "2", True])
def test_jobs_that_are_not_a_positive_integer_are_refused_before_any_read(tmp_path: Path, jobs: Any) -> None:
    """The API and fleet.run.analyze_many refuse as the CLI does, naming the value, before any trace is read
    (the trace named does not exist: it would fail otherwise as 'cannot read')."""
    import tracekit
    from tracekit.errors import TracekitError
    from tracekit.fleet import run
    from tracekit.session import AnalysisOptions

    missing = str(tmp_path / "missing.synthetic.ort.json")
    with pytest.raises(TracekitError) as refused:
        run.analyze_many([missing, missing], AnalysisOptions(), jobs=jobs)
    assert str(refused.value) == f"jobs: must be a positive integer, not {jobs!r}"
    path = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    with pytest.raises(TracekitError) as refused:
        tracekit.analyze_many([str(path)], jobs=jobs)
    assert str(refused.value) == f"jobs: must be a positive integer, not {jobs!r}"


@pytest.mark.parametrize("jobs", [None, 1, 3])
def test_jobs_none_or_positive_analyze_every_trace(tmp_path: Path, jobs: int | None) -> None:
    """The ORT profile of 3 runs and of 4 (latency 1.0 ms, busy 0.4 ms each): both outcomes, in input order."""
    from tracekit.fleet import run
    from tracekit.session import AnalysisOptions

    a = _write_json(tmp_path / "a.synthetic.ort.json", _ort_cpu())
    b = _write_json(tmp_path / "b.synthetic.ort.json", _ort_cpu(runs=4))
    outcomes = run.analyze_many([str(a), str(b)], AnalysisOptions(), jobs=jobs)
    assert [(o.path, o.ok) for o in outcomes] == [(str(a), True), (str(b), True)]
    assert [o.result["iterations"]["latency_ms"].tolist() for o in outcomes] == [[1.0] * 3, [1.0] * 4]
    busy = [[round(v, 12) for v in o.result["iterations"]["gpu_busy_ms"].tolist()] for o in outcomes]
    assert busy == [[0.4] * 3, [0.4] * 4]


# ----------------------------------------------------------------------------- Ctrl-C while the pool starts


@pytest.mark.parametrize("group", [False, True])
def test_an_interrupted_pool_leaves_no_process(tmp_path: Path, group: bool) -> None:
    """Ctrl-C to the command alone or to its process group (a terminal's, once the workers exist): exit 130,
    one line, and no worker, fork server or resource tracker of it left running."""
    code, err, left = interrupted_pool(tmp_path, group)
    if code == 0:
        pytest.skip("the analysis ended before the signal (a fast machine)")
    assert (code, err.strip(), left) == (130, "tracekit: interrupted", [])


def test_sigint_while_the_workers_start_is_held_until_they_have_started() -> None:
    """_interrupt_after: a SIGINT inside the block raises nothing there, and KeyboardInterrupt at its end; the
    handler in force before is back after."""
    import signal

    from tracekit.fleet import run

    before = signal.getsignal(signal.SIGINT)
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with run._interrupt_after():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # (Python runs a handler between bytecodes: it has run by now)
                pass
            reached.append(True)
    assert reached == [True]
    assert signal.getsignal(signal.SIGINT) is before
    with run._interrupt_after():  # nothing held: nothing raised
        pass
    assert signal.getsignal(signal.SIGINT) is before


# ------------------------------------------------------------------------ found here, in files not mine


def test_an_nsys_report_named_synthetic_is_labelled_synthetic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    export = (
        tmp_path / "export.sqlite"
    )  # the sample without its TRACEKIT_SYNTHETIC row: the name alone says so
    shutil.copy(NSYS_SAMPLE, export)
    with sqlite3.connect(export) as con:
        con.execute("DELETE FROM META_DATA_EXPORT WHERE name = 'TRACEKIT_SYNTHETIC'")
    con.close()
    nsys = tmp_path / "fake-nsys"  # `nsys export ... -o OUT REPORT`: copies the export to OUT
    nsys.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "NVIDIA Nsight Systems version 2024.1.1"; exit 0; fi\n'
        'while [ "$#" -gt 0 ]; do if [ "$1" = -o ]; then out="$2"; fi; shift; done\n'
        f'cp "{export}" "$out"\n'
    )
    nsys.chmod(0o755)
    monkeypatch.setenv("TRACEKIT_NSYS", str(nsys))
    report = tmp_path / "run.synthetic.nsys-rep"
    report.write_bytes(b"\x00not a format tracekit reads by content\x00" * 4)
    named = tmp_path / "run.synthetic.sqlite"
    shutil.copy(export, named)
    code, doc, err = _json(capsys, str(named), "-q")
    assert code == 0, err
    assert (doc["trace"]["synthetic"], doc["summary"]["kernels"]["mean"]) == (True, NSYS_KERNELS)
    code, doc, err = _json(capsys, str(report), "-q")
    assert code == 0, err
    assert doc["summary"]["kernels"]["mean"] == NSYS_KERNELS
    assert doc["trace"]["synthetic"] is True
