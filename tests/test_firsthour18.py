"""firsthour18: a new user's first hour (README top to bottom, the notebook API, docs against the code, --help,
error messages). Inputs are hand-built (synthetic) or the committed samples."""

from __future__ import annotations

import fnmatch
import shlex

from tests.test_tour import tour_commands

# ------------------------------------------------------------------------ the README's tour


def test_the_tours_table_runs_after_the_runs_it_compares_are_collected():
    """The tour's ``tracekit table runs/bert-* --paper`` ("compare runtimes like the study's Table 3") ran
    before the second runtime was collected: its glob found runs/bert-onnx only, and a new user following the
    tour saw a one-row table. Every run folder its glob can match is collected before it."""
    commands = [shlex.split(line, comments=True) for line in tour_commands()]
    collected: list[str] = []
    tables = 0
    for argv in commands:
        if argv[:2] == ["tracekit", "collect"]:
            collected.append(argv[argv.index("-o") + 1])
        elif argv[:2] == ["tracekit", "table"]:
            tables += 1
            patterns = [word for word in argv[2:] if not word.startswith("-")]
            matched = [run for run in collected if any(fnmatch.fnmatch(run, p) for p in patterns)]
            all_runs = ["runs/bert-onnx", "runs/bert-pt"]
            assert matched == all_runs, (argv, collected)
    assert tables == 1
