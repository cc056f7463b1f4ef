"""The API and the command line give one answer (issue 27): every sample trace (sample_traces/**) and every real
trace (../shared/real_traces, skipped when absent) analyzed by ``tracekit.analyze(path)`` and by
``tracekit analyze PATH --format json -o FILE`` gives the same document, field for field, with the same
defaults (the recorded warm-up dropped by both), and the saved document loads back (``tracekit.load``) into an
Analysis equal to the API's, every typed field compared. A trace one of them refuses, both refuse with the
same one-line message."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

import tracekit
from tracekit.analysis import Analysis
from tracekit.cli import main
from tracekit.errors import TracekitError
from tracekit.renderers.tabular import rounded

ROOT = Path(__file__).resolve().parents[1]


def _golden_module() -> Any:
    spec = importlib.util.spec_from_file_location("tracekit_golden_files", ROOT / "benchmarks" / "golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_golden = _golden_module()
SAMPLES = _golden.sample_trace_files()
REAL = _golden.real_trace_files()


def same(a: Any, b: Any, where: str = "") -> list[str]:
    """Where ``a`` and ``b`` (JSON values) differ: exactly, int and float told apart, NaN equal to NaN."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{where}: keys {list(a)} != {list(b)}"]
        return [d for k in a for d in same(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in same(x, y, f"{where}[{i}]")]
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return []
    if type(a) is not type(b) or a != b:
        return [f"{where}: {a!r} != {b!r}"]
    return []


def _cli(path: Path, out: Path) -> tuple[int, str]:
    """``tracekit analyze PATH --format json -o OUT`` in this process: (exit code, stderr)."""
    from tracekit.io import forget_inputs

    forget_inputs()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["analyze", str(path), "--format", "json", "-o", str(out), "--quiet"])
    forget_inputs()
    return code, err.getvalue()


def _check(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if path.suffix == ".ncu-rep" and importlib.util.find_spec("ncu_report") is None:
        pytest.skip("the ncu_report package is not installed")
    monkeypatch.setenv("TRACEKIT_NO_PROGRESS", "1")
    out = tmp_path / "analysis.json"
    code, stderr = _cli(path, out)
    try:
        api = tracekit.analyze(path)
    except TracekitError as exc:
        # refused by both, with the same one line
        assert code == 2 and stderr.strip().splitlines()[-1] == f"tracekit: {exc}", (code, stderr)
        return
    assert code == 0, stderr
    doc = json.loads(out.read_text())
    # the program writes every float rounded to 12 significant digits (renderers.tabular.rounded): the API's
    # document as the writer writes it is the program's, value for value
    expected = json.loads(json.dumps(rounded(api.to_json())))
    differences = same(expected, doc, "document")
    assert not differences, "\n".join(differences[:20])
    # every typed field of the API's Analysis, as written, equals the one read back from the program's file
    loaded = tracekit.load(out)
    assert loaded == Analysis.from_json(expected) and Analysis.from_json(doc) == loaded
    for name in ("iterations", "longest_gaps"):
        assert getattr(loaded, name).schema == getattr(api, name).schema, name
    assert not same(json.loads(json.dumps(loaded.to_json())), doc, "loaded")


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(ROOT / "sample_traces")))
def test_sample_trace_api_equals_cli(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(path, tmp_path, monkeypatch)


@pytest.mark.real_traces
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_trace_api_equals_cli(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(path, tmp_path, monkeypatch)


def test_there_are_traces_to_compare() -> None:
    assert len(SAMPLES) >= 40  # the committed samples (the real ones are optional)


def test_api_and_cli_drop_the_same_recorded_warm_up(tmp_path: Path) -> None:
    """The default that used to differ: the ORT sample records 10 warm-up runs as iterations; both drop them
    (skip=None is the default of both), and skip=0 / --skip 0 keep them in both."""
    ort = ROOT / "sample_traces/cpu_onnx_bert_ort/onnx_b1_s128.ort.json.gz"
    assert tracekit.analyze(ort).iterations.height == 20
    assert tracekit.analyze(ort, skip=0).iterations.height == 30
    out = tmp_path / "kept.json"
    assert main(["analyze", str(ort), "--skip", "0", "--format", "json", "-o", str(out), "--quiet"]) == 0
    assert len(json.loads(out.read_text())["iterations"]) == 30


def test_load_refuses_what_is_not_an_analysis(tmp_path: Path) -> None:
    bad = tmp_path / "table.json"
    bad.write_text(json.dumps({"rows": []}))
    with pytest.raises(TracekitError, match=r"table\.json: not a tracekit analysis document"):
        tracekit.load(bad)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(TracekitError, match=r"broken\.json: not JSON"):
        tracekit.load(broken)


def test_a_loaded_analysis_says_what_needs_the_trace(tmp_path: Path) -> None:
    sample = ROOT / "sample_traces/synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite"
    a = tracekit.analyze(sample)
    saved = tmp_path / "a.json"
    saved.write_text(json.dumps(a.to_json()))
    loaded = tracekit.load(saved)
    assert loaded == a and loaded.source is None
    assert loaded.longest_gaps.height == 10 and loaded.projection == a.projection
    with pytest.raises(TracekitError, match="needs the trace itself"):
        loaded.idle_gaps  # noqa: B018
    # a changed field is a different analysis
    doc = a.to_json()
    doc["iterations"][3]["gpu_busy_ms"] += 1e-9
    assert Analysis.from_json(doc) != a
