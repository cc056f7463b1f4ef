"""Golden outputs (issue 33): the full JSON of ``analyze`` on every sample and real trace, and of ``table`` and
``compare`` on the sample runs, equals its committed golden in tests/golden/ (numbers to a relative 1e-9,
everything else exactly). A failure prints every moved field; when the change is intended, regenerate with
``python benchmarks/golden.py --update NAME`` and say in the commit why each number moved
(benchmarks/README.md, "Golden outputs")."""

from __future__ import annotations

import copy
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_golden_module():
    spec = importlib.util.spec_from_file_location("tracekit_golden", ROOT / "benchmarks" / "golden.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


golden = _load_golden_module()
SAMPLE_CASES = golden.sample_cases()
REAL_CASES = golden.real_cases()


def _check(case) -> None:
    why = case.available()
    if why:
        pytest.skip(why)
    expected = golden.load_golden(case)
    if expected is None:
        pytest.fail(f"{case.name}: no golden; write it with python benchmarks/golden.py --update {case.name}")
    lines = golden.diff(expected, golden.run_case(case))
    if lines:
        pytest.fail(
            golden.format_diff(case.name, lines, limit=40)
            + f"\nIf intended: python benchmarks/golden.py --update {case.name} and say in the commit why each"
            " number moved.",
            pytrace=False,
        )


@pytest.mark.parametrize("case", SAMPLE_CASES, ids=lambda c: c.name)
def test_sample_output_equals_its_golden(case) -> None:
    _check(case)


@pytest.mark.real_traces
@pytest.mark.parametrize("case", REAL_CASES, ids=lambda c: c.name)
def test_real_trace_output_equals_its_golden(case) -> None:
    _check(case)


# --- every trace is pinned, nothing is left over ---------------------------------------------------------


def test_every_sample_trace_has_an_analyze_golden() -> None:
    files = golden.sample_trace_files()
    # the committed samples as of issue 33: 4 CPU files (3 runs, one .nsys-rep beside its export), 18 H200
    # Kineto traces and 1 H200 ncu CSV, 18 synthetic traces (8 SQLite sweep, 5 presets x SQLite + Kineto)
    assert len(files) >= 41
    names = {c.name for c in SAMPLE_CASES}
    missing = [p for p in files if f"analyze/{p.relative_to(ROOT).as_posix()}" not in names]
    assert not missing
    absent = [c.name for c in SAMPLE_CASES if golden.load_golden(c) is None]
    assert not absent, f"no golden for {absent}: python benchmarks/golden.py --update"


@pytest.mark.real_traces
def test_every_real_trace_has_an_analyze_golden(real_traces: Path) -> None:
    files = golden.real_trace_files()
    assert len(files) >= 25
    absent = [
        p
        for p in files
        if not (golden.GOLDEN / "analyze" / "real_traces" / f"{p.relative_to(real_traces)}.json").exists()
        and not (golden.GOLDEN / "analyze" / "real_traces" / f"{p.relative_to(real_traces)}.json.gz").exists()
    ]
    assert not absent, f"no golden for {absent}: python benchmarks/golden.py --update real_traces"


def test_no_golden_is_left_without_its_case() -> None:
    assert golden.stale_goldens(golden.all_cases()) == []


def test_goldens_stay_small() -> None:
    total = sum(p.stat().st_size for p in golden.GOLDEN.rglob("*") if p.is_file())
    assert total <= 3 * 1024 * 1024, f"tests/golden holds {total / 1e6:.2f} MB"


# --- the comparison catches every one-field change, and only real changes ---------------------------------


def _leaves(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    else:
        yield path, value


def _set(doc: Any, path: tuple, value: Any) -> Any:
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def _changed(value: Any) -> Any:
    """A plausible one-line bug's effect on one output value."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * (1 + 1e-6) if value else 1e-9
    if isinstance(value, str):
        return value + "x" if value else "x"
    return 0  # null -> a number


@pytest.mark.parametrize(
    "name",
    [
        "analyze/sample_traces/h200_bert_fp16/cuda-graphs/cuda-graphs_b1_s128.torch.json.gz",
        "analyze/sample_traces/cpu_onnx_bert_ort/onnx_b1_s128.ort.json.gz",
        "table/h200_runtimes_ncu_paper",
        "compare/synthetic_pytorch_vs_cuda-graphs",
    ],
)
def test_any_one_field_changed_is_a_difference_at_that_field(name: str) -> None:
    (case,) = [c for c in SAMPLE_CASES if c.name == name]
    doc = golden.load_golden(case)
    leaves = list(_leaves(doc))
    assert len(leaves) > 150
    for path, value in leaves:
        lines = golden.diff(doc, _set(doc, path, _changed(value)))
        where = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")
        assert len(lines) == 1 and lines[0].startswith(where + ":"), (path, lines)


def test_lists_and_keys_that_change_shape_are_differences() -> None:
    doc = {"longest_gaps": [{"a": 1}, {"a": 2}], "warnings": [], "x": {"b": 1, "c": 2}}
    assert golden.diff(doc, {**doc, "longest_gaps": [{"a": 1}]}) == [
        "longest_gaps: 2 items -> 1",
        'longest_gaps[1]: removed {"a": 2}',
    ]
    assert golden.diff(doc, {**doc, "warnings": ["new"]}) == [
        "warnings: 0 items -> 1",
        'warnings[0]: added "new"',
    ]
    assert golden.diff(doc, {**doc, "x": {"c": 2, "b": 1}}) == ["x: key order ['b', 'c'] -> ['c', 'b']"]
    assert golden.diff(doc, {**doc, "x": {"b": 1}}) == ["x.c: removed (was 2)"]
    assert golden.diff(doc, {**doc, "y": None}) == ["y: added null"]
    assert golden.diff({"n": 202}, {"n": 202.0}) == ["n: 202 -> 202.0 (type int -> float)"]
    assert golden.diff({"n": None}, {"n": 0}) == ["n: null -> 0"]
    assert golden.diff({"s": True}, {"s": 1}) == ["s: true -> 1"]


def test_numbers_within_the_tolerance_are_equal_and_beyond_it_are_not() -> None:
    assert golden.REL_TOL == 1e-9
    assert golden.diff({"v": 8.076351249999998}, {"v": 8.076351249999998 * (1 + 5e-10)}) == []
    assert golden.diff({"v": 0.0}, {"v": 1e-13}) == []
    (line,) = golden.diff({"v": 5.712173877064879}, {"v": 1 / 5.712173877064879})
    assert line.startswith("v: 5.712173877064879 -> 0.17506") and "-96.9" in line
    assert golden.diff({"v": 10.0}, {"v": 10.0 * (1 + 2e-9)}) != []


def test_machine_folders_become_placeholders(monkeypatch: pytest.MonkeyPatch) -> None:
    text = f"left out: {golden.REAL}/nsys/x.sqlite and {golden.REPO}/sample_traces/y.sqlite"
    assert golden.normalize({"w": [text]}) == {
        "w": ["left out: $REAL_TRACES/nsys/x.sqlite and sample_traces/y.sqlite"]
    }


def test_update_writes_only_what_moved_and_gzips_large_goldens(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(golden, "GOLDEN", tmp_path)
    case = golden.Case("analyze/x", ("analyze", "x"))
    small = {"argv": ["analyze", "x"], "exit_code": 0, "stderr": [], "output": {"rows": [{"a": 1.5}]}}
    path = golden.write_golden(case, small)
    assert path == tmp_path / "analyze" / "x.json" and golden.load_golden(case) == small
    assert '   {"a": 1.5}' in path.read_text().splitlines()  # one row, one line
    big = {**small, "output": {"rows": [{"a": float(i)} for i in range(40000)]}}
    path = golden.write_golden(case, big)
    assert path.name == "x.json.gz" and not (tmp_path / "analyze" / "x.json").exists()
    assert golden.load_golden(case) == big and golden.golden_path(case) == path


def test_one_moved_number_is_one_changed_line_in_the_file() -> None:
    (case,) = [
        c for c in SAMPLE_CASES if c.name.endswith("h200_bert_fp16/pytorch/pytorch_b1_s128.torch.json.gz")
    ]
    doc = golden.load_golden(case)
    moved = _set(doc, ("output", "iterations", 3, "gpu_busy_ms"), 1.0)
    before, after = golden.dumps(doc).splitlines(), golden.dumps(moved).splitlines()
    assert len(before) == len(after) and sum(a != b for a, b in zip(before, after, strict=True)) == 1


def test_an_internal_error_is_never_a_golden() -> None:
    assert golden.internal_error(
        {
            "exit_code": 1,
            "stderr": ["tracekit: internal error on x: KeyError: 'a' (set TRACEKIT_DEBUG=1 ...)"],
        }
    )
    assert not golden.internal_error(
        {"exit_code": 2, "stderr": ["tracekit: x: not a trace tracekit can read"]}
    )
