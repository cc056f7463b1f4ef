"""The nsys reader's two SQLite engines (ADBC columnar, stdlib sqlite3) and partial reads agree exactly."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from analyzers.iterations import FRAMES_NEEDED, analyze_iterations
from tests.conftest import REAL_TRACES, SAMPLE_TRACES
from tests.nsys_builder import NsysBuilder
from tracekit.model import SCHEMAS
from tracekit.readers import read_trace

HAS_ADBC = importlib.util.find_spec("adbc_driver_sqlite") is not None

SIM = SAMPLE_TRACES / "synthetic" / "table3_cuda-graphs" / "cuda-graphs_b1_s128.synthetic.sqlite"


def _files() -> list[Path]:
    files = [SIM, SAMPLE_TRACES / "cpu_onnx_bert_nsys" / "onnx_b1_s128.nsys.sqlite"]
    if REAL_TRACES.is_dir():
        files += sorted(REAL_TRACES.glob("nsys/*.sqlite")) + sorted(REAL_TRACES.glob("paper/*.sqlite"))
    return files


@pytest.mark.skipif(not HAS_ADBC, reason="adbc-driver-sqlite is not installed")
@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_adbc_and_sqlite3_read_the_same_frames_and_leave_the_file_unchanged(path, monkeypatch):
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", "adbc")
    a = read_trace(path)
    monkeypatch.setenv("TRACEKIT_SQLITE_ENGINE", "sqlite3")
    b = read_trace(path)
    for name in SCHEMAS:
        assert getattr(a, name).equals(getattr(b, name)), name
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert not list(path.parent.glob(path.name + "-*"))  # no -journal / -wal / -shm left beside it


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_partial_read_gives_the_same_analysis_as_a_full_read(path):
    full = read_trace(path)
    part = read_trace(path, frames=FRAMES_NEEDED)
    assert part.gpu_metrics.is_empty()
    doc_full = analyze_iterations(full).to_json(full)
    doc_part = analyze_iterations(part).to_json(part)
    doc_full["warnings"] = [w for w in doc_full["warnings"] if "GPU_METRICS" not in w]
    assert json.dumps(doc_part, sort_keys=True) == json.dumps(doc_full, sort_keys=True)


def test_unclosed_range_gets_the_same_trace_end_in_a_partial_read(tmp_path):
    b = NsysBuilder()
    b.nvtx_range(0, 100, "iteration")
    b.nvtx_range(200, None, "iteration")  # never popped: closed at the trace's last timestamp
    b.kernel(10, 50, "k", correlation=1)
    b.runtime(5, 9, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(210, 900, "k", correlation=2)
    b.runtime(205, 209, "cudaLaunchKernel_v7000", correlation=2)
    path = b.write(tmp_path / "unclosed.sqlite")
    full, part = read_trace(path), read_trace(path, frames=FRAMES_NEEDED)
    assert full.ranges["end"].to_list() == part.ranges["end"].to_list() == [100, 900]
