"""The Parquet cache (``--cache DIR``) against a bad folder, a damaged memo and a failed write: one line and
exit 2 before any trace is read, a hash computed afresh, the analysis going on without the entry."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import REPO
from tracekit.errors import TracekitError
from tracekit.fleet import cache

TRACE = REPO / "sample_traces/synthetic/table3_torchscript/torchscript_b1_s128.synthetic.json.gz"


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from tracekit.cli import main

    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("many", [False, True])
def test_a_cache_path_that_is_a_file_ends_the_run_in_one_line(
    many: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracekit.readers

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("a trace was read")

    monkeypatch.setattr(tracekit.readers, "read_trace", no_reading)
    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    traces = [str(TRACE), str(TRACE)] if many else [str(TRACE)]
    for where, said in ((blocker, "exists and is not a folder"), (blocker / "sub", "cannot create")):
        rc, out, err = _cli(
            ["analyze", *traces, "--cache", str(where), "--jobs", "1", "--no-progress"], capsys
        )
        assert rc == 2 and out == ""
        assert err.startswith(f"tracekit: {where}: ") and said in err and err.count("\n") == 1


def test_a_cache_folder_that_cannot_be_written_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (as root every folder is writable: the permission test is the one os.access answers, asked for
    # writing and entering the folder)
    monkeypatch.setattr(cache.os, "access", lambda path, mode: mode != cache.os.W_OK | cache.os.X_OK)
    with pytest.raises(TracekitError) as error:
        cache.cache_folder(tmp_path / "cache")
    assert (
        str(error.value)
        == f"{tmp_path / 'cache'}: cannot write in the cache folder (--cache): permission denied"
    )


def test_a_damaged_memo_is_not_trusted(tmp_path: Path) -> None:
    # hashes.json is the cache's own file; if it is not a memo of hashes (cut short, rewritten, another
    # file's JSON), the file is hashed again: never an entry chosen by a value that is not a hash.
    folder = tmp_path / "cache"
    folder.mkdir()
    want = cache.content_hash(TRACE)
    key = cache._stat_key(TRACE)
    damaged = ('"' + key + want + '"', "[1, 2]", json.dumps({key: "../../elsewhere"}), '{"a": 1', "null")
    for text in (*damaged, json.dumps({key: "X" * 32})):
        (folder / "hashes.json").write_text(text)
        assert not cache.has_entry(TRACE, folder)
        assert cache.file_hash(TRACE, folder) == want
        assert json.loads((folder / "hashes.json").read_text()) == {key: want}  # a memo again


def test_an_entry_that_cannot_be_stored_leaves_the_analysis_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracekit.session import analyze_input

    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    plain = analyze_input(str(TRACE))
    monkeypatch.setattr(cache, "_store", full_disk)
    analyzed = analyze_input(str(TRACE), cache_dir=tmp_path / "cache")
    said = [w for w in analyzed.warnings if "not stored in the cache" in w]
    assert said == [f"not stored in the cache {tmp_path / 'cache'}: No space left on device"]
    assert analyzed.iterations.equals(plain.iterations)
    assert not cache.has_entry(TRACE, tmp_path / "cache")

    def unnamed(*args: object) -> None:
        raise PermissionError  # no errno, no text: the exception's name says what happened

    monkeypatch.setattr(cache, "_store", unnamed)
    trace = cache.cached_read(TRACE, tmp_path / "cache")
    assert trace.meta["warnings"][-1] == f"not stored in the cache {tmp_path / 'cache'}: PermissionError"


SQLITE = REPO / "sample_traces/synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite"


def test_an_unchanged_file_is_hashed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo answers for a file whose stat has not changed: its bytes are read once, not at every analysis."""
    hashed: list[Path] = []
    real = cache.content_hash
    monkeypatch.setattr(cache, "content_hash", lambda path: hashed.append(path) or real(path))
    folder = cache.cache_folder(tmp_path / "cache")
    first = cache.file_hash(TRACE, folder)
    assert cache.file_hash(TRACE, folder) == first and hashed == [TRACE]


def test_has_entry_needs_this_files_entry_with_its_meta(tmp_path: Path) -> None:
    """An entry counts only when it is this file's (its hash, this reader version) and complete (meta.json
    written last); another file's entry, a half-written one or a trace that is gone does not."""
    folder = cache.cache_folder(tmp_path / "cache")
    digest = cache.file_hash(TRACE, folder)  # remembered, but nothing stored yet
    assert not cache.has_entry(TRACE, folder)
    other = folder / f"{cache.READER_VERSION}-{'0' * 32}"
    other.mkdir()
    (other / "meta.json").write_text("{}")
    assert not cache.has_entry(TRACE, folder)  # another file's entry
    mine = folder / f"{cache.READER_VERSION}-{digest}-abc123"
    mine.mkdir()
    assert not cache.has_entry(TRACE, folder)  # no meta.json yet: not complete
    (mine / "meta.json").write_text("{}")
    assert cache.has_entry(TRACE, folder)
    assert not cache.has_entry(tmp_path / "gone.json.gz", folder)


def test_a_read_of_some_columns_never_answers_a_read_of_all(tmp_path: Path) -> None:
    """The SQLite reader reads only the columns asked for: that entry is its own, and a later read of
    everything reads the trace again instead of answering with the nulls of the partial one."""
    from tracekit.readers import read_trace

    folder = tmp_path / "cache"
    part = cache.cached_read(SQLITE, folder, frames={"ops": ("start", "end")})
    assert part.ops.get_column("name").null_count() == part.ops.height
    whole = cache.cached_read(SQLITE, folder)
    assert whole.ops.equals(read_trace(SQLITE).ops) and whole.ops.get_column("name").null_count() == 0


def test_a_copy_of_a_cached_file_is_named_by_its_own_path(tmp_path: Path) -> None:
    """Two files with the same bytes share an entry; each trace read from it carries the path it was read by."""
    folder = tmp_path / "cache"
    copy = tmp_path / TRACE.name
    copy.write_bytes(TRACE.read_bytes())
    cache.cached_read(TRACE, folder)
    assert cache.cached_read(copy, folder).meta["path"] == str(copy)
    assert len([p for p in folder.iterdir() if p.is_dir()]) == 1


def test_an_entry_is_renamed_into_place_from_inside_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry is written into a temporary folder inside the cache (the same file system, so the rename is
    atomic) and renamed into place; when another worker stored the entry first, theirs is kept and the
    temporary folder is removed."""
    folder = cache.cache_folder(tmp_path / "cache")
    renames: list[tuple[Path, Path]] = []
    real = cache.os.rename
    monkeypatch.setattr(cache.os, "rename", lambda a, b: renames.append((Path(a), Path(b))) or real(a, b))
    trace = cache.cached_read(TRACE, folder)
    [(source, entry)] = renames
    assert source.parent == folder and source.name.startswith(".entry-") and entry.parent == folder
    (entry / "kept").write_text("theirs")
    cache._store(trace, entry, folder)  # another worker's entry is there already: the rename fails, quietly
    assert (entry / "kept").read_text() == "theirs"
    assert [p.name for p in folder.iterdir() if p.name.startswith(".entry-")] == []


def test_a_memo_that_cannot_be_written_still_gives_the_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    folder = cache.cache_folder(tmp_path / "cache")
    monkeypatch.setattr(cache.tempfile, "mkstemp", full_disk)
    assert cache.file_hash(TRACE, folder) == cache.content_hash(TRACE)
    assert list(folder.iterdir()) == []


def test_the_cache_folder_is_made_with_its_parents_and_says_why_it_cannot_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nested = tmp_path / "a" / "b" / "cache"
    assert cache.cache_folder(nested) == nested and nested.is_dir()
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(TracekitError) as error:
        cache.cache_folder(blocker)
    assert str(error.value) == f"{blocker}: the cache folder (--cache) exists and is not a folder"
    with pytest.raises(TracekitError) as error:
        cache.cache_folder(blocker / "sub")
    assert str(error.value) == f"{blocker / 'sub'}: cannot create the cache folder (--cache): Not a directory"

    def refused(*args: object, **kwargs: object) -> None:
        raise OSError  # no errno, no text: the exception's name says what happened

    monkeypatch.setattr(Path, "mkdir", refused)
    with pytest.raises(TracekitError, match=r"cannot create the cache folder \(--cache\): OSError$"):
        cache.cache_folder(tmp_path / "new")


def test_the_memo_is_replaced_from_inside_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hashes.json is written beside itself and renamed over (atomic on one file system, and then a reader
    never sees half a memo); a cache folder that cannot be listed has no entry."""
    folder = cache.cache_folder(tmp_path / "cache")
    replaced: list[tuple[Path, Path]] = []
    real = cache.os.replace
    monkeypatch.setattr(cache.os, "replace", lambda a, b: replaced.append((Path(a), Path(b))) or real(a, b))
    cache.file_hash(TRACE, folder)
    [(source, target)] = replaced
    assert source.parent == folder and target == folder / "hashes.json"
    cache.cached_read(TRACE, folder)
    assert cache.has_entry(TRACE, folder)

    def unreadable(path: object) -> list[str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache.os, "listdir", unreadable)
    assert not cache.has_entry(TRACE, folder)


def test_the_sidecar_given_is_the_one_merged(tmp_path: Path) -> None:
    """What the caller says the run stated (its sidecar, read once by the input) is merged, not the file
    beside the trace read again; and a meta value that is not JSON is kept as its text."""
    folder = tmp_path / "cache"
    stated = cache.cached_read(TRACE, folder, sidecar={"batch_size": 64})
    assert stated.meta["batch_size"] == 64
    assert cache.cached_read(TRACE, folder).meta["batch_size"] == 1  # the sidecar beside it
    trace = cache.cached_read(TRACE, folder)
    trace.meta["source"] = tmp_path / "somewhere"
    entry = folder / "entry"
    cache._store(trace, entry, folder)
    assert json.loads((entry / "meta.json").read_text())["source"] == str(tmp_path / "somewhere")


def test_the_python_api_analyzes_through_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tracekit.analyze(path, cache=DIR)``, a notebook's re-analysis with other options: the first call reads
    the trace and stores its frames, the second, with another ``skip``, reads the frames only, and both give
    what the uncached analysis gives; a folder that cannot be used is one TracekitError, before any reading."""
    import tracekit
    import tracekit.readers

    folder = tmp_path / "cache"
    first = tracekit.analyze(TRACE, cache=folder)
    assert first.iterations.equals(tracekit.analyze(TRACE).iterations)
    assert cache.has_entry(TRACE, folder)

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("the trace was read again")

    monkeypatch.setattr(tracekit.readers, "read_trace", no_reading)
    again = tracekit.analyze(TRACE, skip=1, cache=folder)
    monkeypatch.undo()
    assert again.iterations.equals(tracekit.analyze(TRACE, skip=1).iterations)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setattr(tracekit.readers, "read_trace", no_reading)
    with pytest.raises(TracekitError, match="exists and is not a folder"):
        tracekit.analyze(TRACE, cache=blocker)


def test_a_file_rewritten_in_place_with_its_old_mtime_is_read_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same size and modification time (put back as touch -r, cp -p and rsync --times do): the memo used
    # to answer with the old content's hash, and the analysis came from the old frames.
    import gzip
    import os

    text = gzip.decompress(TRACE.read_bytes())
    trace = tmp_path / "t.json"
    trace.write_bytes(text)
    before = trace.stat()
    folder = tmp_path / "cache"
    rc, first, _ = _cli(["analyze", str(trace), "--cache", str(folder), "--format", "json", "-q"], capsys)
    assert rc == 0 and json.loads(first)["summary"]["bound"] == "framework"
    changed = text.replace(b'"cat": "kernel"', b'"cat": "kernxl"')  # the same length: no kernel left
    assert len(changed) == len(text) and changed != text
    trace.write_bytes(changed)
    os.utime(trace, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (trace.stat().st_size, trace.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    rc, second, _ = _cli(["analyze", str(trace), "--cache", str(folder), "--format", "json", "-q"], capsys)
    assert rc == 0 and json.loads(second)["summary"]["bound"] is None  # no kernels: no verdict


def test_the_reader_version_changes_with_any_reader_source(tmp_path: Path) -> None:
    # A reader fixed without a CACHE_FORMAT bump (two such fixes went unbumped) must not answer from the
    # frames the older reader wrote: the key holds a digest of the reader modules' source.
    import shutil

    import tracekit

    package = Path(tracekit.__file__).resolve().parent
    copy = tmp_path / "tracekit"
    for name in cache.READER_SOURCES:
        source = package / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            copy.mkdir(exist_ok=True)
            shutil.copy(source, copy / name)
    digest = cache.reader_source_digest(copy)
    assert cache.READER_VERSION.endswith("+" + digest)
    reader = copy / "readers" / "kineto.py"
    reader.write_text(reader.read_text() + "\n# a fix\n")
    assert cache.reader_source_digest(copy) != digest
    (copy / "model.py").write_text((copy / "model.py").read_text().replace("cudaLaunchKernel", "cudaLaunchX"))
    reader.write_text(reader.read_text().removesuffix("\n# a fix\n"))
    assert cache.reader_source_digest(copy) != digest
    assert cache.reader_source_digest(tmp_path / "empty") == "nosource"


# ------------------------------------------------------------------------------------------- eviction


def _entry(folder: Path, name: str, size: int, used: float) -> Path:
    """A fake cache entry of ``size`` bytes last used at ``used`` (seconds since the epoch)."""
    entry = folder / name
    entry.mkdir()
    (entry / "ops.parquet").write_bytes(b"x" * size)
    (entry / "meta.json").write_text("{}")
    os.utime(entry / "meta.json", (used, used))
    return entry


def test_eviction_removes_other_reader_versions_first_then_the_least_recently_used(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    now = 1_800_000_000.0
    current = cache.READER_VERSION
    old = _entry(folder, f"0.0.1+cache1+x-{'a' * 32}", 1000, now)  # another version, used just now
    lru = _entry(folder, f"{current}-{'b' * 32}", 1000, now - 300)
    recent = _entry(folder, f"{current}-{'c' * 32}", 1000, now - 100)
    fresh = _entry(folder, f"{current}-{'d' * 32}", 1000, now - 500)  # just stored: never removed
    meta_bytes = 2  # each entry's meta.json ("{}")
    removed = cache.evict(folder, 2 * (1000 + meta_bytes), keep=fresh)
    assert removed == [old.name, lru.name]
    assert sorted(p.name for p in folder.iterdir()) == sorted([recent.name, fresh.name])
    assert cache.evict(folder, 2 * (1000 + meta_bytes), keep=fresh) == []  # within the bound: nothing


def test_the_entry_just_stored_stays_even_when_it_alone_passes_the_bound(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    only = _entry(folder, f"{cache.READER_VERSION}-{'e' * 32}", 5000, 1_800_000_000.0)
    assert cache.evict(folder, 100, keep=only) == [] and only.is_dir()


def test_left_over_temporary_folders_go_after_an_hour(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    stale, young = folder / ".entry-abc", folder / ".evict-def-1"
    for d in (stale, young):
        d.mkdir()
    os.utime(stale, (1.0, 1.0))
    cache.evict(folder, 1 << 30)
    assert not stale.exists() and young.is_dir()


def test_a_hit_renews_the_entry_and_a_bounded_cache_keeps_the_last_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two traces through a cache bounded below their two entries: the first is evicted when the second is
    stored, its remembered hash forgotten; reading the first again reads the trace and stores it anew."""
    from tests.conftest import SAMPLE_TRACES

    other = SAMPLE_TRACES / "synthetic" / "table3_onnx" / "onnx_b1_s128.synthetic.sqlite"
    folder = tmp_path / "cache"
    cache.cached_read(TRACE, folder)
    [first] = [p for p in folder.iterdir() if p.is_dir()]
    size = cache._entry_size(first)
    monkeypatch.setenv(cache.CACHE_MAX_ENV, str(size + 10))
    before = (first / "meta.json").stat().st_mtime_ns
    os.utime(first / "meta.json", ns=(before - 10**9, before - 10**9))
    cache.cached_read(TRACE, folder)  # a hit: its use renewed
    assert (first / "meta.json").stat().st_mtime_ns > before - 10**9
    cache.cached_read(other, folder)  # stored, then the first entry evicted
    names = [p.name for p in folder.iterdir() if p.is_dir()]
    assert len(names) == 1 and names[0] != first.name
    assert not cache.has_entry(TRACE, folder) and cache.has_entry(other, folder)
    assert cache.content_hash(TRACE) not in json.loads((folder / "hashes.json").read_text()).values()


def test_a_cache_bound_that_is_not_a_size_ends_the_run_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracekit.errors import TracekitError

    monkeypatch.setenv(cache.CACHE_MAX_ENV, "lots")
    with pytest.raises(TracekitError) as info:
        cache.cache_folder(tmp_path / "cache")
    assert str(info.value) == "TRACEKIT_CACHE_MAX: not a size: 'lots' (e.g. 512M, 4G, 1.5GiB)"


def test_an_entry_evicted_while_being_read_is_read_from_the_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    first = cache.cached_read(TRACE, folder)
    real = cache._load_frames

    def evicted_meanwhile(entry: Path, frames: object) -> dict:
        import shutil

        shutil.rmtree(entry)
        return real(entry, frames)

    monkeypatch.setattr(cache, "_load_frames", evicted_meanwhile)
    again = cache.cached_read(TRACE, folder)
    assert again.ops.equals(first.ops) and again.meta["format"] == first.meta["format"]


def test_a_temporary_folder_exactly_an_hour_old_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    young = folder / ".entry-abc"
    young.mkdir()
    os.utime(young, (1_000.0, 1_000.0))
    monkeypatch.setattr(cache.time, "time", lambda: 1_000.0 + cache.STALE_TEMPORARY_S)
    cache.evict(folder, 1 << 30)
    assert young.is_dir()  # (older than the hour only: a writer may still be filling it)


def test_a_folder_that_cannot_be_removed_does_not_stop_the_eviction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process removing the same folder, or a file it still holds: rmtree's error is ignored, and the
    eviction goes on (the entry is renamed away first, so it is gone for every reader either way)."""
    import shutil

    folder = tmp_path / "cache"
    folder.mkdir()
    now = 1_800_000_000.0
    old = _entry(folder, f"{cache.READER_VERSION}-{'a' * 32}", 1000, now - 100)
    keep = _entry(folder, f"{cache.READER_VERSION}-{'b' * 32}", 1000, now)
    stale = folder / ".evict-x-1"
    stale.mkdir()
    os.utime(stale, (1.0, 1.0))
    real = shutil.rmtree

    def failing(path, ignore_errors=False, **kwargs):
        if not ignore_errors:
            raise OSError(16, "Device or resource busy")
        return None

    monkeypatch.setattr(cache.shutil, "rmtree", failing)
    assert cache.evict(folder, 1100, keep=keep) == [old.name]
    monkeypatch.setattr(cache.shutil, "rmtree", real)


def test_a_write_ahead_log_written_beside_an_unchanged_export_is_read_again(tmp_path: Path) -> None:
    """An nsys export in WAL mode is read with its ``-wal`` log beside it (the reader merges them). A log that
    grew while the export itself stayed as it was had left the file's stat and content hash as they were:
    the cache answered with the frames of the file without the log's kernels."""
    import shutil

    from tests.test_fuzz9_nsys import _wal_export

    made = tmp_path / "made"
    made.mkdir()
    export = _wal_export(made)  # 3 kernels in the file, 2 more in its log
    path = tmp_path / "x.synthetic.sqlite"
    shutil.copyfile(export, path)  # the file alone first: 3 kernels
    folder = tmp_path / "cache"
    first = cache.cached_read(path, folder)
    assert first.ops.height == 3
    digest = cache.file_hash(path, cache.cache_folder(folder))
    shutil.copyfile(f"{export}-wal", f"{path}-wal")  # the log appears; the file is unchanged
    assert cache.file_hash(path, cache.cache_folder(folder)) != digest
    assert cache.cached_read(path, folder).ops.height == 5


def test_a_read_that_asks_for_launch_dimensions_gets_them_from_the_cache_too(tmp_path: Path) -> None:
    """``launches`` is read on request only (the Nsight Compute join's launch check): an entry made by such a
    read holds it, and the cached read gives back the same frame (before: an entry never stored it, so the
    cached read came back with no launch dimensions and the join's launch check had nothing to check)."""
    from tracekit.readers import read_trace

    trace = REPO / "sample_traces/h200_bert_fp16/cuda-graphs/cuda-graphs_b1_s128.torch.json.gz"
    spec = {"ops": None, "launches": None}
    direct = read_trace(trace, frames=spec, sidecar={}).launches
    assert direct.height > 0
    first = cache.cached_read(trace, tmp_path, spec).launches
    again = cache.cached_read(trace, tmp_path, spec).launches
    assert first.equals(direct) and again.equals(direct)
    assert (
        cache.cached_read(trace, tmp_path).launches.height == 0
    )  # "everything" leaves it out, as a read does
