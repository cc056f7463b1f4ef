"""Hostile inputs, round 20 (hostile20), from the outside (the CLI in this process, tests.hostile.run_cli): what
earlier rounds did not build: Kineto events of other phases ('i', 'C', 'M', lower-case 'x', no 'ph') beside
complete ones, keys written twice, bare event arrays; Nsight Systems kernels of CUDA graphs (graphId set, one
correlation for several kernels), NVTX start/end ranges ended on another thread, ranges of one name in two
domains, GPUs of two models in one export; correlation ids near and past 2^63; kernel names with '|', commas,
quotes, newlines and non-ASCII characters through CSV and Markdown; --range patterns matching nothing or
everything; --skip past the iterations; several traces at once (table, compare, analyze --jobs) and the --cache.

Every trace is hand-built (SYNTHETIC: file names hold 'synthetic', Kineto metadata says so):
- Kineto: tests.hostile.small_trace_events: per iteration one 'iteration' annotation of 900 µs, 3 launches
  (5 µs) 10 + 100 k µs in, each kernel 20 µs after its call, dur 10 µs: latency 0.9 ms, GPU busy 0.03 ms,
  3 kernels, 3 launches per iteration (4 iterations), correlation ids 1..12.
- nsys: tests.hostile.three_iteration_nsys: 3 NVTX 'iteration' ranges of 1 ms, two kernels each (0.2 + 0.1 ms),
  launch calls of 10 µs 50 µs before each kernel: latency 1.0, busy 0.3, 2 kernels, 2 launches.
- ORT: tests.hostile.ort_cpu_events: 3 model_run of 1.0 ms, nodes of 0.3 + 0.1 ms: busy 0.4.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import analyze_json, run_cli, small_trace_events, three_iteration_nsys

KINETO_ROWS = [(0.9, 0.03, 3, 3)] * 4
NSYS_ROWS = [(1.0, 0.3, 2, 2)] * 3


def _kineto(tmp_path: Path, name: str, events: list[dict[str, Any]], **top: Any) -> Path:
    doc = {"schemaVersion": 1, "traceEvents": events, "metadata": {"synthetic": True}, **top}
    path = tmp_path / f"{name}.synthetic.json"
    path.write_text(json.dumps(doc))
    return path


def _analyze(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> dict[str, Any]:
    code, doc, err = analyze_json(capsys, str(path), *args)
    assert code == 0 and doc is not None, err
    return doc


def _rows(doc: dict[str, Any]) -> list[tuple[float, float | None, int, int | None]]:
    return [(it["latency_ms"], it["gpu_busy_ms"], it["kernels"], it["launches"]) for it in doc["iterations"]]


# ------------------------------------------------------------------------- several inputs, none analyzable


@pytest.mark.xfail(
    strict=True,
    reason="tracekit/session.py for_each_input: when no input of several can be analyzed it raises 'no input "
    "could be analyzed:\\n  left out: ...' joined by newlines, which the CLI's one_line (tracekit/errors.py) "
    "prints as a literal backslash-n: 'tracekit: no input could be analyzed:\\n  left out: a...\\n  left out: "
    "b...' (analyze's many-trace path says it on one line: 'none of the 2 traces could be analyzed (the "
    "first: ...)')",
)
@pytest.mark.parametrize("inputs", [2, 3])
def test_no_input_analyzable_is_one_line_without_escaped_newlines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], inputs: int
) -> None:
    """`table K N [K3] --range nomatch` (Kineto traces and an nsys export, none holding a range 'nomatch'): exit
    2 and one readable line naming both files, without the two characters backslash, 'n' that one_line writes
    for a newline inside the message."""
    kineto = _kineto(tmp_path, "k", small_trace_events())
    nsys = three_iteration_nsys(tmp_path / "n.synthetic.sqlite")
    third = _kineto(tmp_path, "k3", small_trace_events(iterations=3))
    args = ["table", str(kineto), str(nsys), str(third)][: inputs + 1]
    code, _, err = run_cli(capsys, *args, "--range", "nomatch")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "k.synthetic.json" in lines[0] and "n.synthetic.sqlite" in lines[0]
    assert "\\n" not in lines[0], lines[0]
