"""``-`` names standard input: a pipe (read once, as it comes) or a file redirected to it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import SAMPLE_TRACES

REPO = Path(__file__).resolve().parents[1]
KINETO = SAMPLE_TRACES / "cpu_pytorch_bert_torch" / "pytorch_b1_s128.torch.json.gz"
SQLITE = SAMPLE_TRACES / "cpu_onnx_bert_nsys" / "onnx_b1_s128.nsys.sqlite.gz"


def _analyze(arg: str, **stdin: Any) -> tuple[int, str, str]:
    """``tracekit analyze ARG --format json`` in a subprocess; ``stdin``: subprocess.run's ``input`` (bytes,
    through a pipe) or ``stdin`` (a file)."""
    run = subprocess.run(
        [sys.executable, "-m", "tracekit.cli", "analyze", arg, "--format", "json", "--no-progress"],
        capture_output=True,
        cwd=REPO,
        timeout=120,
        **stdin,
    )
    return run.returncode, run.stdout.decode(), run.stderr.decode()


def _numbers(out: str) -> dict[str, Any]:
    doc = json.loads(out)
    return {"iterations": doc["iterations"], "summary": doc["summary"]}


def test_a_trace_piped_to_standard_input_gives_the_files_answer() -> None:
    rc, out, err = _analyze("-", input=KINETO.read_bytes())
    assert rc == 0, err
    assert json.loads(out)["trace"]["path"] == "/dev/stdin"
    assert _numbers(out) == _numbers(_analyze(str(KINETO))[1])


def test_a_file_redirected_to_standard_input_may_be_sqlite() -> None:
    with open(SQLITE, "rb") as stdin:
        rc, out, err = _analyze("-", stdin=stdin)
    assert rc == 0, err
    assert _numbers(out) == _numbers(_analyze(str(SQLITE))[1])


def test_sqlite_piped_to_standard_input_is_refused_in_one_line() -> None:
    rc, out, err = _analyze("-", input=SQLITE.read_bytes())
    assert (rc, out) == (2, "")
    assert err == (
        "tracekit: /dev/stdin: an SQLite file needs random access, which a pipe cannot give: "
        "save it to a file first\n"
    )
