"""benchmarks/mutation.py's own arithmetic and parsing (the mutation run itself is not in CI: it takes hours).

The Wilson interval is checked against published values (statsmodels' ``proportion_confint(method="wilson")``
gives the same to 4 decimals): 95 of 100 -> [0.8882, 0.9785], 0 of 10 -> [0, 0.2775], 100 of 100 -> [0.9630, 1].
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import mutation  # noqa: E402


@pytest.mark.parametrize(
    ("killed", "tested", "low", "high"),
    [(95, 100, 0.8882, 0.9785), (0, 10, 0.0, 0.2775), (100, 100, 0.9630, 1.0), (50, 100, 0.4038, 0.5962)],
)
def test_wilson_interval_matches_published_values(killed, tested, low, high):
    got = mutation.wilson_interval(killed, tested)
    assert got == pytest.approx((low, high), abs=5e-5)


def test_wilson_interval_of_nothing_tested_is_everything():
    assert mutation.wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("name", "function"),
    [
        ("tracekit.session.x_analyze_input__mutmut_13", "analyze_input"),
        ("tracekit.session.xǁAnalysisOptionsǁfrom_args__mutmut_25", "AnalysisOptions.from_args"),
        ("x_frames_for__mutmut_2", "frames_for"),
    ],
)
def test_function_of_a_mutant_name(name, function):
    assert mutation._function(name) == function


def test_key_drops_indentation_and_blank_lines_but_keeps_each_line_mark():
    diff = "     a = 1\n-    if x == 1:\n+    if x != 1:\n\n         raise\n"
    assert mutation._key(diff) == [" a = 1", "-if x == 1:", "+if x != 1:", " raise"]


def test_a_sampled_run_is_known_by_its_draw(tmp_path):
    assert mutation.sampled(tmp_path) is None
    draw = {"seed": 33, "size": 2, "of": 5, "mutants": ["a", "b"]}
    (tmp_path / mutation.SAMPLE_FILE).write_text(json.dumps(draw))
    assert mutation.sampled(tmp_path) == draw


def test_every_module_names_an_existing_file_and_its_tests_exist_or_are_slots():
    root = Path(mutation.REPO)
    for name, (path, tests) in mutation.MODULES.items():
        # the tool's copy has analyzers/ and collectors/ inside tracekit/, as pip lays them out
        installed = path.startswith(("tracekit/analyzers/", "tracekit/collectors/"))
        source = root / path.removeprefix("tracekit/") if installed else root / path
        assert source.is_file(), (name, path)
        present = [t for t in tests if (root / t).is_file()]
        assert present, name  # at least the module's own tests
        assert all(t.endswith("_mutants.py") for t in tests if t not in present), name


def test_a_short_mutant_name_gets_its_module_path():
    """--try and --equivalent take mutmut's short names too (a short name alone would switch no mutant on)."""
    assert (
        mutation.full_name("kineto", "x_load_json__mutmut_14")
        == "tracekit.readers.kineto.x_load_json__mutmut_14"
    )
    assert mutation.full_name("iterations", "x_f__mutmut_1") == "tracekit.analyzers.iterations.x_f__mutmut_1"
    assert mutation.full_name("session", "tracekit.session.x_f__mutmut_1") == "tracekit.session.x_f__mutmut_1"


def _killed_run(workdir: Path, names: list[str], draw: dict) -> None:
    """A finished run in ``workdir`` whose mutants ``names`` were all killed, drawn as ``draw``."""
    meta = workdir / "mutants" / (mutation.MODULES["ranges"][0] + ".meta")
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": dict.fromkeys(names, 1)}))
    (workdir / mutation.SAMPLE_FILE).write_text(json.dumps(draw))


def test_a_run_of_every_mutant_of_some_functions_is_reported_as_such(tmp_path):
    names = [f"tracekit.analyzers.ranges.x_operator_ranges__mutmut_{i}" for i in (1, 2, 3)]
    _killed_run(
        tmp_path,
        names,
        {"seed": None, "size": 3, "of": 3, "mutants": names, "functions": ["operator_ranges"]},
    )
    text, counts = mutation.report("ranges", tmp_path)
    assert "Every mutant of the functions operator_ranges: 3." in text
    assert "estimated" not in text  # no claim about the module
    assert (counts["killed"], counts["score_pct"], counts["functions"]) == (3, 100.0, ["operator_ranges"])


def test_a_sample_of_some_functions_claims_those_functions_only(tmp_path):
    names = [f"tracekit.analyzers.ranges.x__frequent_choice__mutmut_{i}" for i in (4, 9)]
    draw = {"seed": 36, "size": 2, "of": 300, "mutants": names, "functions": ["_frequent_choice"]}
    _killed_run(tmp_path, names, draw)
    text, counts = mutation.report("ranges", tmp_path)
    assert (
        "A random sample of 2 of the 300 mutants of the functions _frequent_choice (seed 36): those functions' "
        "score is estimated at 100.0%, 95% interval 34.2-100.0% (Wilson)." in text
    )
    assert counts["sample_of"] == 300
