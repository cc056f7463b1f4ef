"""firsthour16: what a new user met in a first hour with the README (tour, API, the documents it links), each
pinned on a hand-built input whose numbers are known, or on a committed sample where the README quotes it.
Defects in files firsthour16 does not own are strict xfails here (named in its report)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl

from tests.conftest import REPO, SAMPLE_TRACES

README = REPO / "README.md"
DESIGN = REPO / "docs" / "design.md"
H200 = SAMPLE_TRACES / "h200_bert_fp16"


def _flat(path: Path) -> str:
    return " ".join(path.read_text().split())


# ------------------------------------------------------------------------------------------------ README


def test_readme_python_block_fits_the_line_length_ruff_formats_to() -> None:
    """`ruff format --check .` reformatted the README's Python block (ruff formats Markdown code): two lines
    of code with their comment ran past the project's 110 columns (pyproject), so ruff split the calls over
    three lines each. The block stays as written only while every line fits."""
    text = README.read_text()
    block = re.search(r"## Python API\n.*?```python\n(.*?)```", text, re.S)
    assert block is not None
    long = [line for line in block.group(1).splitlines() if len(line) > 110]
    assert long == []


def test_readme_api_comment_says_load_takes_a_path() -> None:
    """The API block said 'json.dump it: tracekit.load(f) == a'; ``tracekit.load`` takes a path, and only the
    API's own document round-trips exactly (the program's JSON is rounded to 12 significant digits)."""
    import inspect

    import tracekit

    assert list(inspect.signature(tracekit.load).parameters) == ["path"]
    text = README.read_text()
    assert "tracekit.load(f)" not in text
    assert "tracekit.load(that_path) == a" in text


def test_readme_slow_start_counts_of_the_graph_rows_are_the_samples() -> None:
    """README: 'the traced means of the two CUDA-graph rows include their first two iterations, a slow start
    analyze names: 0.827 and 0.936 ms without them'. analyze names the first 2 of the CUDA-graph trace and
    the first 3 of the torch.compile (reduce-overhead) trace."""
    import tracekit

    found = []
    for runtime in ("cuda-graphs", "compile-cudagraphs"):
        a = tracekit.analyze(H200 / runtime / f"{runtime}_b1_s128.torch.json.gz")
        (warning,) = [w for w in a.warnings if "slow start" in w]
        count = int(re.search(r"the first (\d+) of 20", warning).group(1))  # type: ignore[union-attr]
        lat = a.iterations["latency_ms"].to_list()
        found.append((count, round(sum(lat[count:]) / len(lat[count:]), 3)))
    assert found == [(2, 0.827), (3, 0.936)]
    assert "include their first iterations (2 and 3), a slow start" in _flat(README)
    assert "0.827 and 0.936 ms without them" in _flat(README)


# ------------------------------------------------------------------------------------------------ design.md


def test_design_says_the_nsys_profiler_warm_up_step_ran_on_a_gpu() -> None:
    """design.md still said of nsys's profiler warm-up step 'Not yet run on a GPU with this step' after the
    2026-11-28 loan ran it (gpu_check.run7.json, run8.json: every nsys configuration 1 profiler warm-up + 20
    timed ranges, every check held)."""
    checks = []
    for run in ("run7", "run8"):
        doc = json.loads((H200 / f"gpu_check.{run}.json").read_text())
        checks += [c for c in doc["checks"] if c["check"] == "iterations"]
    assert len(checks) == 8 and all(c["ok"] for c in checks)
    assert all(c["detail"].endswith("21 ranges, 1 profiler warm-up + 20 timed") for c in checks)
    text = _flat(DESIGN)
    assert "Not yet run on a GPU with this step" not in text
    assert "`gpu_check.run7.json`" in text and "1 profiler warm-up + 20 timed" in text


def test_design_states_the_tie_rule_of_identical_ranges() -> None:
    """91715d3: of two identical chosen ranges, the one of the thread with the most of them holds the other
    (then the lowest thread id, then the name), never the first in input order; the rule is in
    ranges._held's docstring and now in design.md's range section."""
    from tracekit.analyzers.ranges import _held

    rows = pl.DataFrame(
        {
            "pid": [1, 1, 1],
            "thread": [9, 2, 2],  # thread 9's copy first in input order; thread 2 runs two instances
            "start": [0, 0, 100],
            "end": [50, 50, 150],
            "name": ["iteration"] * 3,
        }
    )
    assert _held(rows, ("pid",)).to_list() == [True, False, False]
    assert "the thread that runs the most of them holds the others" in _flat(DESIGN)
