"""Gzipped SQLite exports (``x.sqlite.gz``): read as the plain file would be, through a temporary copy that
is removed afterwards; damaged, truncated, oversized or foreign content gets one line naming the ``.gz`` file."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_TRACES

PLAIN = SAMPLE_TRACES / "synthetic" / "table3_cuda-graphs" / "cuda-graphs_b1_s128.synthetic.sqlite"


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from tracekit.cli import main

    rc = main([*argv, "--no-progress"])
    out, err = capsys.readouterr()
    return rc, out, err


def _gzipped(plain: bytes, target: Path) -> Path:
    target.write_bytes(gzip.compress(plain, mtime=0))
    return target


def _without_path(doc: dict) -> str:
    return json.dumps(doc, sort_keys=True).replace(".sqlite.gz", ".sqlite")


def test_a_gzipped_export_gives_the_plain_exports_answer_and_leaves_no_copy(
    tmp_path: Path, own_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / PLAIN.name
    plain.write_bytes(PLAIN.read_bytes())
    packed = _gzipped(PLAIN.read_bytes(), tmp_path / (PLAIN.name + ".gz"))
    digest = hashlib.sha256(packed.read_bytes()).hexdigest()
    rc, out_gz, err = _cli(["analyze", str(packed), "--format", "json"], capsys)
    assert rc == 0, err
    doc = json.loads(out_gz)
    assert doc["trace"]["format"] == "nsys-sqlite" and doc["trace"]["path"] == str(packed)
    rc, out_plain, _ = _cli(["analyze", str(plain), "--format", "json"], capsys)
    assert rc == 0
    assert _without_path(doc) == _without_path(json.loads(out_plain))
    assert list(own_tmp.iterdir()) == []  # the inflated copy is gone
    assert hashlib.sha256(packed.read_bytes()).hexdigest() == digest  # the input unchanged


def test_a_gzipped_exports_sidecar_is_found_under_its_stem(tmp_path: Path) -> None:
    from tracekit.inputs import sidecar_meta_path

    assert sidecar_meta_path(tmp_path / "x.nsys.sqlite.gz") == tmp_path / "x.nsys.meta.json"


def test_a_run_directory_names_its_gzipped_export(capsys: pytest.CaptureFixture[str]) -> None:
    """run.json names the ``.sqlite.gz``: the run directory resolves to it, with its stated configuration,
    and the many-trace table reads it."""
    from tracekit.inputs import resolve_inputs

    run = SAMPLE_TRACES / "cpu_onnx_bert_nsys"
    [stated] = resolve_inputs([run])
    assert stated.path == run / "onnx_b1_s128.nsys.sqlite.gz" and stated.format == "nsys-sqlite"
    assert (stated.runtime, stated.model, stated.stated_by) == ("onnx", "bert-base", "from run.json")
    rc, out, err = _cli(["analyze", str(run), "--format", "json"], capsys)
    assert rc == 0, err
    [row] = json.loads(out)["rows"]
    assert row["file"] == "onnx_b1_s128.nsys.sqlite.gz" and row["iterations"] == 20


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (lambda b: gzip.compress(b, mtime=0)[:-3000], "damaged gzip file (Compressed file ended before"),
        (lambda b: gzip.compress(b[:4096], mtime=0), "corrupt SQLite (truncated or forged)"),
        (lambda b: gzip.compress(b[:60], mtime=0), "corrupt SQLite (truncated: 60 bytes"),
    ],
    ids=["truncated gzip", "truncated database inside", "header cut inside"],
)
def test_a_damaged_gzipped_export_is_one_line_naming_the_gz_file(
    tmp_path: Path, own_tmp: Path, capsys: pytest.CaptureFixture[str], content, problem: str
) -> None:
    bad = tmp_path / "bad.sqlite.gz"
    bad.write_bytes(content(PLAIN.read_bytes()))
    rc, out, err = _cli(["analyze", str(bad)], capsys)
    assert rc == 2 and out == ""
    assert err.startswith(f"tracekit: {bad}: {problem}") and err.count("\n") == 1, err
    assert list(own_tmp.iterdir()) == []


def test_a_gzipped_file_that_is_no_database_is_not_read_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _gzipped(b"\x00" * 5000, tmp_path / "zeros.sqlite.gz")
    rc, _, err = _cli(["analyze", str(bad)], capsys)
    assert rc == 2 and err.startswith(f"tracekit: {bad}: not a trace tracekit can read")


def test_the_inflate_limit_applies_to_a_gzipped_export(
    tmp_path: Path, own_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed = _gzipped(PLAIN.read_bytes(), tmp_path / "t.sqlite.gz")
    rc, _, err = _cli(["analyze", str(packed), "--max-inflated", "64K"], capsys)
    assert rc == 2
    assert err.startswith(f"tracekit: {packed}: inflates past 64 KiB of text (--max-inflated)"), err
    assert list(own_tmp.iterdir()) == []


def test_a_full_temporary_folder_is_one_line_saying_where_to_inflate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracekit import io

    packed = _gzipped(PLAIN.read_bytes(), tmp_path / "t.sqlite.gz")

    class Full:
        def write(self, data: bytes) -> int:
            raise OSError(28, "No space left on device")

    calls: list[Path] = []
    real = io.inflate_into

    def into_full_disk(path, sink):
        calls.append(Path(path))
        return real(path, Full())

    monkeypatch.setattr(io, "inflate_into", into_full_disk)
    rc, _, err = _cli(["analyze", str(packed)], capsys)
    assert calls == [packed]
    assert rc == 2 and err == (
        f"tracekit: {packed}: cannot write its inflated copy (No space left on device); set TMPDIR to a folder "
        "with room for it\n"
    )


def test_a_folder_takes_gzipped_exports_and_leaves_out_a_report_exported_beside_itself(
    tmp_path: Path,
) -> None:
    from tracekit.commands.analyze_many import expand

    (tmp_path / "a.sqlite.gz").write_bytes(gzip.compress(PLAIN.read_bytes(), mtime=0))
    (tmp_path / "a.nsys-rep").write_bytes(b"report")
    (tmp_path / "b.nsys-rep").write_bytes(b"report")
    files, _ = expand([str(tmp_path)])
    assert [Path(f).name for f in files] == ["a.sqlite.gz", "b.nsys-rep"]


def test_nsys_check_reads_a_gzipped_export_as_the_plain_one(tmp_path: Path) -> None:
    from tracekit.collectors.nsys_check import summarize

    packed = _gzipped(PLAIN.read_bytes(), tmp_path / "t.sqlite.gz")
    a, b = summarize(PLAIN).to_json(), summarize(packed).to_json()
    assert a.pop("path") == str(PLAIN) and b.pop("path") == str(packed)
    assert a == b and a["kernels_total"] > 0
