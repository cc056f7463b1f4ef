"""Round 20, helper fix20a: pins of the fixes of strict xfails in tracekit/readers/ort.py, analyzers/steps.py,
compare.py, report.py, ranks.py and tracekit/analysis.py, beside the tests that pinned them (test_hostile20,
test_api20).

Every trace is hand-built (SYNTHETIC: file names hold 'synthetic'):
- ORT: tests.hostile.ort_cpu_events: 3 model_run of 1000 µs at 200, 2200, 4200 µs, each with a MatMul node of
  300 µs and an Add node of 100 µs: latency 1.0 ms, operator busy 0.4 ms, 2 operators per run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import analyze_json, ort_cpu_events, ort_cpu_run, ort_event

# ------------------------------------------------------------------------- ORT: a run recorded twice


def _ort(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"{name}.synthetic.json"
    path.write_text(json.dumps(events))
    return path


def _ort_rows(doc: dict[str, Any]) -> list[tuple[float, float, int]]:
    return [(it["latency_ms"], it["gpu_busy_ms"], it["kernels"]) for it in doc["iterations"]]


def test_a_run_written_twice_keeps_a_node_its_body_ran_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run 1 (at 2200 µs) holds, beside MatMul and Add, a 0 µs Identity node run twice in one microsecond (a
    loop's body: two events equal in every field), and the whole run (model_run, 4 nodes) is written a second
    time: the run counts once with its 4 operators (busy 0.4 ms), not 2 (each repeat dropped) nor 6; 5 events
    are left out, and a warning says so."""
    run = ort_cpu_run(2200)
    loop = ort_event(
        "Node", "/loop/Identity_kernel_time", 2700, 0, op_name="Identity", provider="CPUExecutionProvider"
    )
    run += [loop, dict(loop)]
    events = ort_cpu_events()
    events = events[:5] + run + events[8:] + run
    code, doc, err = analyze_json(capsys, str(_ort(tmp_path, "loop_twice", events)))
    assert code == 0 and doc is not None, err
    assert _ort_rows(doc) == [(1.0, 0.4, 2), (1.0, 0.4, 4), (1.0, 0.4, 2)]
    (said,) = [w for w in doc["warnings"] if "recorded twice" in w]
    assert said.startswith("1 'model_run' event recorded twice") and "(5 repeated events left out)" in said


def test_a_run_written_three_times_counts_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run 1 written three times (3 x 3 events): 3 runs of (1.0, 0.4, 2); 6 events left out."""
    events = ort_cpu_events() + ort_cpu_run(2200) + ort_cpu_run(2200)
    code, doc, err = analyze_json(capsys, str(_ort(tmp_path, "thrice", events)))
    assert code == 0 and doc is not None, err
    assert _ort_rows(doc) == [(1.0, 0.4, 2)] * 3
    assert any("(6 repeated events left out)" in w for w in doc["warnings"]), doc["warnings"]


def test_a_profile_written_twice_is_not_read_as_merged_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole profile written twice (set-up and runs): the 3 runs of (1.0, 0.4, 2), the set-up once, and no
    warning that several sessions' profiles were merged (before: '2 'session_initialization' events in one
    process: ... profiles of several sessions ... were merged into this file'); a second session_initialization
    at another time (a session re-created) is still said."""
    code, doc, err = analyze_json(capsys, str(_ort(tmp_path, "whole_twice", ort_cpu_events() * 2)))
    assert code == 0 and doc is not None, err
    assert _ort_rows(doc) == [(1.0, 0.4, 2)] * 3
    assert doc["session_setup"] == [
        {"name": "model_loading_uri", "ms": 0.05},
        {"name": "session_initialization", "ms": 0.04},
    ]
    assert not any("merged into this file" in w for w in doc["warnings"]), doc["warnings"]
    assert any(
        w.startswith("2 set-up events ('model_loading_uri', 'session_initialization') recorded twice")
        for w in doc["warnings"]
    )
    again = ort_cpu_events() + [ort_event("Session", "session_initialization", 7000, 40)] + ort_cpu_run(7200)
    code, doc, err = analyze_json(capsys, str(_ort(tmp_path, "recreated", again)))
    assert code == 0 and doc is not None, err
    assert any(w.startswith("2 'session_initialization' events in one process") for w in doc["warnings"])


def test_runs_that_overlap_without_being_equal_are_still_merged_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run at 2500 µs (another session's, 300 µs into run 1 on the same thread): not a repeat, so the
    profile is refused as several sessions merged, as before."""
    events = ort_cpu_events() + ort_cpu_run(2500)
    code, _, err = analyze_json(capsys, str(_ort(tmp_path, "merged", events)))
    assert code == 2
    assert "1 'model_run' event overlaps an earlier one on the same thread" in err


# ----------------------------------------------------------------------- serving steps of unreadable counts


@pytest.mark.parametrize(
    ("name", "counts"),
    [
        ("execute_context_3(30)_generation_99999999999999999999(0)", (3, None)),  # was 'prefill'
        ("execute_new_2_cached_99999999999999999999", (2, None)),  # was 'prefill'
        ("step[DECODE bs=99999999999999999999]", (0, None)),  # was 'idle'
        ("execute_context_0(0)_generation_99999999999999999999(0)", (0, None)),  # was 'idle'
    ],
)
def test_a_step_with_one_count_unreadable_is_not_classified(name: str, counts: tuple[Any, Any]) -> None:
    """A count past int64 is read as null: the step's work is not known (a prefill step may be mixed, a step of
    0 context requests may be decoding), so it is unclassified (null), not 'prefill' or 'idle' by the count
    that was read."""
    import polars as pl

    from tracekit.analyzers.steps import classify_names

    row = classify_names(pl.Series([name])).row(0, named=True)
    assert (row["context_requests"], row["generation_requests"], row["step_class"]) == (*counts, None)


def test_steps_whose_counts_read_are_still_classified() -> None:
    """The control: counts read give the classes of the module docstring; SGLang MIXED without counts is mixed."""
    import polars as pl

    from tracekit.analyzers.steps import classify_names

    names = [
        "execute_context_0(0)_generation_0(0)",
        "execute_context_2(9)_generation_5(5)",
        "step[MIXED bs=4]",
    ]
    assert classify_names(pl.Series(names))["step_class"].to_list() == ["idle", "mixed", "mixed"]


def test_an_iteration_holding_a_step_of_unknown_work_takes_no_class_from_its_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """4 ProfilerStep#k ranges (the small Kineto trace's 'iteration' ranges renamed), each holding two vLLM
    steps: a decode step of 4 requests after a step of an unreadable (past int64) context count in #0 and #2,
    of 1 context request in #1 and #3. #1 and #3 are mixed (1, 4); #0 and #2 hold a step of unknown work: no
    class and no counts (before: 'decode', 0 context requests, 4 generation), engine vLLM still said."""
    from tests.hostile import small_trace_events

    events = []
    for e in small_trace_events():
        if e["cat"] != "user_annotation":
            events.append(e)
            continue
        k = len([x for x in events if x["name"].startswith("ProfilerStep#")])
        first = "execute_context_99999999999999999999999(1)" if k % 2 == 0 else "execute_context_1(5)"
        events += [
            {**e, "name": f"ProfilerStep#{k}"},
            {**e, "name": f"{first}_generation_0(0)", "ts": e["ts"] + 1, "dur": 400},
            {**e, "name": "execute_context_0(0)_generation_4(4)", "ts": e["ts"] + 450, "dur": 400},
        ]
    path = tmp_path / "steps_inner.synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, "metadata": {"synthetic": True}}))
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0 and doc is not None, err
    assert doc["range"] == "ProfilerStep#*"
    rows = [
        (it["step_engine"], it["step_class"], it["context_requests"], it["generation_requests"])
        for it in doc["iterations"]
    ]
    assert rows == [("vLLM", None, None, None), ("vLLM", "mixed", 1, 4)] * 2
    assert [(c["step_class"], c["steps"]) for c in doc["step_classes"]] == [("mixed", 2), ("unclassified", 2)]


# --------------------------------------------------------- compare and report: iterations cut by different ranges

RANGES_APART = "iterations are cut by different ranges ({}): a step of one trace may be other work than a step of another"


def _kineto(tmp_path: Path, name: str, steps: bool = False, iterations: int = 4) -> Path:
    """tests.hostile.small_trace_events (``iterations`` 'iteration' ranges of 0.9 ms, 3 kernels each); ``steps``:
    the 4 ranges renamed ProfilerStep#0, #1, each two iterations long (1.9 ms, 6 kernels)."""
    from tests.hostile import small_trace_events

    events = small_trace_events(iterations=iterations)
    if steps:
        events = [e for e in events if e["cat"] != "user_annotation"]
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1}
            | {"ts": 1_000_000 + 2000 * k, "dur": 1900}
            for k in range(2)
        ]
    path = tmp_path / f"{name}.synthetic.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, "metadata": {"synthetic": True}}))
    return path


def _compare_warnings(capsys: pytest.CaptureFixture[str], a: Path, b: Path) -> list[str]:
    from tests.hostile import run_cli

    code, out, err = run_cli(capsys, "compare", str(a), str(b), "--format", "json")
    assert code == 0, err
    (pair,) = json.loads(out)["comparisons"]
    return pair["warnings"]


def test_compare_names_both_range_choices_and_says_nothing_when_they_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'iteration' against ProfilerStep#*: the first warning names both, as `analyze A B` does (ranks.py);
    two 'iteration' traces, or two ORT profiles ('model_run'): none; an ORT profile against an 'iteration'
    trace: 'model_run' named (ORT's run leaves out the Python call that a harness' range holds)."""
    iteration, steps = _kineto(tmp_path, "iter"), _kineto(tmp_path, "steps", steps=True)
    said = _compare_warnings(capsys, iteration, steps)
    assert said[0] == RANGES_APART.format("'iteration' in A; 'ProfilerStep#*' in B")
    assert not any(
        "different ranges" in w for w in _compare_warnings(capsys, iteration, _kineto(tmp_path, "i2"))
    )
    ort = _ort(tmp_path, "ort_a", ort_cpu_events())
    assert not any(
        "different ranges" in w
        for w in _compare_warnings(capsys, ort, _ort(tmp_path, "ort_b", ort_cpu_events()))
    )
    apart = [w for w in _compare_warnings(capsys, ort, iteration) if "different ranges" in w]
    assert apart == [RANGES_APART.format("'model_run' in A; 'iteration' in B")]


def test_a_report_sweep_names_its_batches_by_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sweep of batch 1, 2, 4 whose batch 2 alone is cut by ProfilerStep#*: one warning, the batches grouped
    by their ranges; a sweep of one range choice: none. (Batch 4 holds 3 iterations: no byte copy of batch 1,
    which the report would count once.)"""
    from tests.hostile import run_cli

    for batch in (1, 2, 4):
        _kineto(tmp_path, f"m_b{batch}", steps=batch == 2, iterations=3 if batch == 4 else 4)
        meta = {"synthetic": True, "runtime": "pytorch", "batch_size": batch, "seq_len": 128, "device": "gpu"}
        (tmp_path / f"m_b{batch}.synthetic.meta.json").write_text(json.dumps(meta))

    def warnings(batches: tuple[int, ...]) -> list[str]:
        out = tmp_path / f"rep{len(batches)}"
        traces = [str(tmp_path / f"m_b{b}.synthetic.json") for b in batches]
        code, _, err = run_cli(capsys, "report", *traces, "-o", str(out), "--no-figures", "-q")
        assert code == 0, err
        return [
            w for w in json.loads((out / "report.json").read_text())["warnings"] if "different ranges" in w
        ]

    assert warnings((1, 2, 4)) == [
        "pytorch (seq 128): "
        + RANGES_APART.format("'iteration' in batch 1, batch 4; 'ProfilerStep#*' in batch 2")
    ]
    assert warnings((1, 4)) == []


# --------------------------------------------------------------- clocks: collectives past the compact result's cap


def _two_ranks(tmp_path: Path, later: int, numbered: bool) -> list[Path]:
    """Two simulated ranks of 12 steps (one all-reduce each), rank 1's clock 2.5 ms ahead; rank 1's capture
    begun ``later`` steps later; ``numbered``: ProfilerStep#N kept, else renamed 'iteration'."""
    import gzip

    from tracekit.simulate.ranks import RankSimulation, write_ranks

    paths = write_ranks(
        RankSimulation(ranks=2, steps=12, kernels=2, clock_offset_ns=[0, 2_500_000]), tmp_path / "cap"
    )
    for k, path in enumerate(paths):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        events = doc["traceEvents"]
        if k == 1 and later:
            starts = [float(e["ts"]) for e in events if e["name"].startswith("ProfilerStep#")]
            events = [e for e in events if float(e["ts"]) >= starts[later]]
        for e in events:
            if not numbered and e["name"].startswith("ProfilerStep#"):
                e["name"] = "iteration"
        doc["traceEvents"] = events
        path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return paths


@pytest.mark.parametrize(
    ("later", "numbered", "cap", "offsets", "why"),
    [
        # rank 0 alone cut (10 of 12 kept, rank 1's 10 whole): the lists hold 10 and 10, which had been matched
        # by position, 'aligned' at 3.098 ms (2.5 + 2 steps of 0.299), residual 0
        (
            2,
            False,
            10,
            None,
            "traces hold 10 to 12 collectives, and only the first of some are kept (rank 0: 10 of 12): whether "
            "they match from the first or from the last cannot be checked on the collectives kept, so which "
            "collective matches which is not known",
        ),
        # numbered steps: restricted to #2-#11, both lists begin at #2: matched from the first (6), exact
        (
            2,
            True,
            8,
            [0, 2_500_000],
            "traces hold 6 to 8 collectives; the first 6 were matched (only the first collectives of some traces "
            "are kept (rank 0: 8 of 12; rank 1: 8 of 10), and every list begins at the same numbered step)",
        ),
        # as many in all (12 and 12), both cut to 8: matched by position, exact
        (0, False, 8, [0, 2_500_000], None),
    ],
)
def test_clock_alignment_on_lists_cut_at_the_cap(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    later: int,
    numbered: bool,
    cap: int,
    offsets: list[int] | None,
    why: str | None,
) -> None:
    import tracekit
    from tracekit.fleet import compact

    paths = _two_ranks(tmp_path, later, numbered)
    monkeypatch.setattr(compact, "MAX_COLLECTIVES", cap)
    clocks = tracekit.analyze_many(paths, jobs=1)["clocks"]
    assert (clocks["aligned"], clocks["offsets_ns"], clocks.get("why")) == (offsets is not None, offsets, why)
