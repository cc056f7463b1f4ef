"""The Parquet cache (``--cache DIR``) against a bad folder, a damaged memo and a failed write: one line and
exit 2 before any trace is read, a hash computed afresh, the analysis going on without the entry."""

from __future__ import annotations

import json
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
    # (as root every folder is writable: the permission test is the one os.access answers)
    monkeypatch.setattr(cache.os, "access", lambda path, mode: False)
    with pytest.raises(TracekitError, match="cannot write in the cache folder"):
        cache.cache_folder(tmp_path / "cache")


def test_a_damaged_memo_is_not_trusted(tmp_path: Path) -> None:
    # hashes.json is the cache's own file; if it is not a memo of hashes (cut short, rewritten, another
    # file's JSON), the file is hashed again: never an entry chosen by a value that is not a hash.
    folder = tmp_path / "cache"
    folder.mkdir()
    want = cache.content_hash(TRACE)
    key = cache._stat_key(TRACE)
    for text in ('"' + key + want + '"', "[1, 2]", json.dumps({key: "../../elsewhere"}), '{"a": 1', "null"):
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
