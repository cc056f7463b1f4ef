"""Mutation testing of tracekit's core modules with mutmut (issue 33): one module at a time, on a private copy.

    pip install 'mutmut==3.8.1'                                  # or: pip install -e '.[mutation]'
    python benchmarks/mutation.py utilization                   # score one module (see --list)
    python benchmarks/mutation.py utilization gpu_metrics       # several, one after the other
    python benchmarks/mutation.py --list                        # the modules and the tests each one runs
    python benchmarks/mutation.py utilization --report-only     # the last run's score and survivors again
    python benchmarks/mutation.py iterations --sample 300       # 300 mutants drawn at random: an estimate
    python benchmarks/mutation.py session --try tests/test_new.py   # which survivors a new test kills
    python benchmarks/mutation.py session --equivalent NAME --reason "why no output can change"

Not in CI: a module takes minutes to an hour on two cores. Each run copies the committed tree (``--rev``,
default HEAD; ``--overlay PATH...`` adds working-tree files over it, e.g. a test not yet committed) to
``--workdir`` (default ``/tmp/tracekit-mutation/MODULE``) in the installed layout (``analyzers/`` and
``collectors/`` inside ``tracekit/``, as ``pip install`` lays them out), regenerates the copy's goldens from
its own code (the baseline a mutant must change; a golden a commit forgot to update would fail the
unmutated run), writes mutmut's configuration there from ``[tool.mutmut]`` in pyproject.toml plus the module
and its tests (:data:`MODULES`), and runs ``nice -n 19 mutmut run`` there with ``--max-children`` (default
1): nothing is written into the checkout, which others share. mutmut records which of the selected tests
call each mutated function and runs only those for each mutant, stopping at the first failure.

The score counts every mutant: killed / (all - equivalent). A surviving mutant is either killed by a new
test or written down in ``benchmarks/mutation_equivalent/MODULE.json`` (module, function, the mutant's diff with its
context lines, why no output can change); "no tests" counts as a survivor, a timeout as killed (the tests did not pass: the
mutant made them hang, e.g. an endless loop; mutmut counts it so too). The report lists every survivor with
mutmut's diff and is written to WORKDIR/report.md; ``benchmarks/README.md`` keeps the scores and dates.

``--sample N`` tests N mutants drawn uniformly at random (``--seed``, default 33) from all the module's
mutants instead of all of them: for modules whose thousands of mutants would take hours. The report then
says it is a sample, and gives the score of the sample with its Wilson 95% interval as the estimate of the
module's score (the untested mutants count nowhere). Survivors of a sample are handled like any others.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]
#: one file per module: ``benchmarks/mutation_equivalent/MODULE.json``
EQUIVALENT = REPO / "benchmarks" / "mutation_equivalent"
REAL = Path(os.environ.get("TRACEKIT_REAL_TRACES", REPO.parent / "shared" / "real_traces"))

#: module short name -> (its file in the installed layout, the test files that may exercise it). mutmut
#: narrows these further, per mutated function, to the tests that call it.
MODULES: dict[str, tuple[str, list[str]]] = {
    "utilization": (
        "tracekit/analyzers/utilization.py",
        [
            "tests/test_utilization.py",
            "tests/test_table.py",
            "tests/test_gpu_metrics.py",
            "tests/test_fuzz6_metrics.py",
            "tests/test_utilization_mutants2.py",
            "tests/test_golden.py",
            "tests/test_fuzz9_ncu_utilization.py",
            "tests/test_hostile10_ncu.py",
            # the concurrent-kernel rule (0f08dc2), the unit in a metric's name (4797526): mutation18
            "tests/test_hostile13_analysis_occupancy.py",
            "tests/test_fixncu16.py",
            "tests/test_fuzz9_ncu.py",
            "tests/test_mutation18.py",
        ],
    ),
    "kernel_metrics": (
        "tracekit/analyzers/kernel_metrics.py",
        [
            "tests/test_kernel_metrics.py",
            "tests/test_table.py",
            "tests/test_gpu_metrics.py",
            "tests/test_reader_ncu.py",
            "tests/test_golden.py",
            "tests/test_launch_dims.py",
            "tests/test_fuzz9_ncu.py",
            "tests/test_fuzz9_ncu_utilization.py",
        ],
    ),
    "gpu_metrics": (
        "tracekit/analyzers/gpu_metrics.py",
        [
            "tests/test_gpu_metrics_rules.py",
            "tests/test_gpu_metrics.py",
            "tests/test_fuzz6_metrics.py",
            "tests/test_gpu_metrics_mutants2.py",
            "tests/test_table.py",
            "tests/test_golden.py",
            "tests/test_fuzz9_ncu_gpu_metrics.py",
        ],
    ),
    "nsys_sqlite": (
        "tracekit/readers/nsys_sqlite.py",
        [
            "tests/test_reader_nsys.py",
            "tests/test_reader_engines.py",
            "tests/test_api_calls.py",
            "tests/test_nsys_mutants.py",
            "tests/test_golden.py",
            "tests/test_fuzz9_nsys.py",
            "tests/test_hostile10_sqlite.py",
        ],
    ),
    "kineto": (
        "tracekit/readers/kineto.py",
        [
            "tests/test_reader_kineto.py",
            "tests/test_kineto_decode.py",
            "tests/test_kineto_mutants.py",
            "tests/test_golden.py",
            "tests/test_launch_dims.py",
        ],
    ),
    # the per-device analyses of a multi-GPU trace (moved out of iterations.py, 2026-11-27)
    "devices": (
        "tracekit/analyzers/devices.py",
        [
            "tests/test_devices.py",
            "tests/test_per_device_turns.py",
            "tests/test_iterations_mutants.py",
            "tests/test_session_mutants.py",
            "tests/test_fleet_per_gpu.py",
            "tests/test_compact_mutants2.py",
        ],
    ),
    # rewritten during issue 33 (issues 25, 27, 30); with the test files that import them
    "iterations": (
        "tracekit/analyzers/iterations.py",
        [
            "tests/test_analyze_metrics.py",
            "tests/test_launch_assignment.py",
            "tests/test_window_rules.py",
            "tests/test_ranges.py",
            "tests/test_api_calls.py",
            "tests/test_steps.py",
            "tests/test_cli_analyze.py",
            "tests/test_iterations_mutants.py",
            "tests/test_plausibility.py",
            "tests/test_implausible.py",
            "tests/test_profiler_stub.py",
            "tests/test_per_device_turns.py",
            "tests/test_stability.py",
            "tests/test_iterations_mutants2.py",
            "tests/test_golden.py",
            "tests/test_hostile10_ort.py",
            "tests/test_fuzz9_ort.py",
            "tests/test_fuzz9_kineto_serving.py",
            "tests/test_fuzz9_ncu.py",
            "tests/test_fuzz9_ncu_utilization.py",
            "tests/test_mutants10_iterations.py",
            "tests/test_mutants11_iterations.py",
            # a call and its op more than an hour apart, untimed ops and iterations (edff3a5, 26fdee9, a1bf69a,
            # 9c3d6e6): mutation19
            "tests/test_hostile18b.py",
            "tests/test_hostile18c.py",
            "tests/test_fixfar18.py",
            "tests/test_lead18.py",
            "tests/test_review18.py",
            "tests/test_mutation19.py",
            "tests/test_mutation20.py",  # the sidecar's warm-up line, the unsynchronized line
        ],
    ),
    "ranges": (
        "tracekit/analyzers/ranges.py",
        [
            "tests/test_ranges.py",
            "tests/test_ranges_edges.py",
            "tests/test_ranges_mutants.py",
            "tests/test_window_rules.py",
            "tests/test_launch_assignment.py",
            "tests/test_steps.py",
            "tests/test_golden.py",
        ],
    ),
    "attribution": (
        "tracekit/analyzers/attribution.py",
        [
            "tests/test_attribution.py",
            "tests/test_attribution_edges.py",
            "tests/test_launch_assignment.py",
            "tests/test_window_rules.py",
            "tests/test_projection.py",
            "tests/test_cli_attribution.py",
            "tests/test_golden.py",
            "tests/test_perf17.py",  # _classify by names_mask (4b182a9)
            "tests/test_mutation19.py",
            "tests/test_mutation20.py",  # _iteration_sums: an index not contiguous, chunks of 2 gaps
        ],
    ),
    "identify": (
        "tracekit/analyzers/identify.py",
        [
            "tests/test_identify.py",
            "tests/test_table.py",
            "tests/test_identify_mutants.py",
            "tests/test_golden.py",
        ],
    ),
    "session": (
        "tracekit/session.py",
        [
            "tests/test_api.py",
            "tests/test_cli_analyze.py",
            "tests/test_session_mutants.py",
            "tests/test_golden.py",
        ],
    ),
    "ranks": (
        "tracekit/analyzers/ranks.py",
        [
            "tests/test_fleet.py",
            "tests/test_fleet_mutants.py",
            "tests/test_fleet_per_gpu.py",
            "tests/test_ranks_mutants2.py",
            "tests/test_golden.py",
            "tests/test_hostile10_ranks.py",
            "tests/test_fuzz9_kineto_comm.py",
            "tests/test_mutants10_ranks.py",
        ],
    ),
    "compact": (
        "tracekit/fleet/compact.py",
        [
            "tests/test_fleet.py",
            "tests/test_fleet_mutants.py",
            "tests/test_fleet_per_gpu.py",
            "tests/test_compact_mutants2.py",
            "tests/test_golden.py",
            "tests/test_hostile10_ranks.py",
            "tests/test_hostile10_comm.py",
            "tests/test_fuzz9_kineto_comm.py",
            "tests/test_mutants10_compact.py",
            # a stated rank / world size (0fb188f, 6c16654): mutation18
            "tests/test_followups17.py",
            "tests/test_mutation18.py",
        ],
    ),
    "cache": (
        "tracekit/fleet/cache.py",
        ["tests/test_fleet.py", "tests/test_fleet_cache.py"],
    ),
    "setup_calls": (
        "tracekit/analyzers/setup_calls.py",
        ["tests/test_setup_calls.py"],
    ),
    "resolution": (
        "tracekit/analyzers/resolution.py",
        ["tests/test_resolution.py"],
    ),
    "communication": (
        "tracekit/analyzers/communication.py",
        [
            "tests/test_communication.py",
            "tests/test_fleet.py",
            "tests/test_fleet_mutants.py",
            "tests/test_hostile10_comm.py",
            "tests/test_fuzz9_kineto_serving.py",
            "tests/test_fuzz9_kineto_comm.py",
            "tests/test_mutants10_comm.py",
            "tests/test_mutants11_comm.py",
        ],
    ),
    "ort": (
        "tracekit/readers/ort.py",
        [
            "tests/test_reader_ort.py",
            "tests/test_ort_ncu_defaults.py",
            "tests/test_golden.py",
            "tests/test_fuzz9_ort.py",
        ],
    ),
    "nsys_report": ("tracekit/readers/nsys_report.py", ["tests/test_nsys_report.py"]),
    "plausibility": (
        "tracekit/analyzers/plausibility.py",
        [
            "tests/test_implausible.py",
            "tests/test_plausibility.py",
            "tests/test_profiler_stub.py",
            "tests/test_fuzz5_serving.py",
            "tests/test_reader_nsys.py",
            "tests/test_review6.py",
            "tests/test_plausibility_mutants2.py",
        ],
    ),
    # added 2026-11-27 evening (today's commits): the profiler's one spelling, the GPU check's nsys summary,
    # the table's withheld Kineto occupancy estimate
    "inputs": (
        "tracekit/inputs.py",
        ["tests/test_metadata_evidence.py", "tests/test_inputs_mutants2.py"],
    ),
    "nsys_check": (
        "tracekit/collectors/nsys_check.py",
        ["tests/test_gpu_check.py", "tests/test_nsys_check_mutants2.py"],
    ),
    "table": (
        "tracekit/analyzers/table.py",
        [
            "tests/test_table.py",
            "tests/test_fuzz6_metrics.py",
            "tests/test_run_json.py",
        ],
    ),
    # added 2026-11-28 (the hostile-input round): the SQLite opening shared by the nsys reader and the
    # engines' exports (-wal logs), and the Nsight Compute CSV reader
    "sqlite_engine": (
        "tracekit/readers/sqlite_engine.py",
        [
            "tests/test_hostile10_sqlite.py",
            "tests/test_reader_engines.py",
            "tests/test_hostile_inputs.py",
            "tests/test_fuzz_errors.py",
            "tests/test_mutants10_sqlite.py",
            "tests/test_mutants11_sqlite.py",
        ],
    ),
    "ncu": (
        "tracekit/readers/ncu.py",
        [
            "tests/test_reader_ncu.py",
            "tests/test_hostile10_ncu.py",
            "tests/test_fuzz9_ncu.py",
            "tests/test_launch_dims.py",
        ],
    ),
    # added 2026-11-28 evening (mutation16's and mutation17's rounds; notes/mutation16.md, notes/mutation17.md):
    # modules scored by hand-run samples before they had an entry. quantiles has none, and stability runs without
    # tests/test_stats15.py: that file imports `collectors.sweep`, which the copy's installed layout lacks.
    "gap_context": (
        "tracekit/analyzers/gap_context.py",
        [
            "tests/test_gap_context.py",
            "tests/test_iterations_mutants.py",
            "tests/test_mutation16.py",
            "tests/test_perf17.py",  # _near's candidate search (9f2f973)
            "tests/test_mutation18.py",
        ],
    ),
    "steps": (
        "tracekit/analyzers/steps.py",
        ["tests/test_steps.py", "tests/test_mutants14_analysis.py", "tests/test_mutation16.py"],
    ),
    "profiler_cost": (
        "tracekit/analyzers/profiler_cost.py",
        ["tests/test_profiler_cost.py", "tests/test_run_json.py", "tests/test_mutation17.py"],
    ),
    "stability": (
        "tracekit/analyzers/stability.py",
        [
            "tests/test_stability.py",
            "tests/test_stability14.py",
            "tests/test_mutants14_analysis.py",
            "tests/test_noise.py",
            "tests/test_mutation17.py",
            "tests/test_mutation20.py",
        ],
    ),
    # test_report.py's slowest cases (presets, figures, the CLI: ~60 s together) are not marked slow; they
    # exercise recommend() only through the same rules
    "recommendations": (
        "tracekit/analyzers/recommendations.py",
        ["tests/test_report.py", "tests/test_fuzz5_predict.py", "tests/test_mutation17.py"],
    ),
    # added 2026-11-29 (mutation19): far timestamps, and the ops whose launch calls were left out as far
    "timestamps": (
        "tracekit/readers/timestamps.py",
        [
            "tests/test_fixfar18.py",
            "tests/test_fixread17.py",
            "tests/test_hostile17b.py",
            "tests/test_hostile18b.py",
            "tests/test_hostile18c.py",
            "tests/test_implausible.py",
            "tests/test_review17.py",
            "tests/test_review18.py",
            "tests/test_mutation19.py",
            # mutation20: far_events and _clusters (the anchors' count, three kinds of starts, the 2^63 example)
            "tests/test_hostile19.py",
            "tests/test_review19.py",
            "tests/test_mutation20.py",
        ],
    ),
    # added 2026-11-29 (mutation20): the Trace's own mending (device ops and calls that end before they start,
    # calls of no name, repeated rows); score it with --functions (the schemas and the rest are read by all)
    "model": (
        "tracekit/model.py",
        [
            "tests/test_kineto16.py",
            "tests/test_lead19.py",
            "tests/test_review19.py",
            "tests/test_analyze_metrics.py",
            "tests/test_nsys_mutants.py",
            "tests/test_kineto_decode.py",
            "tests/test_mutation20.py",
        ],
    ),
    # added 2026-11-28 night (mutation18): the plateau, transition and framework-bound rules of the report
    "sweep": (
        "tracekit/analyzers/sweep.py",
        [
            "tests/test_mutants14_analysis.py",
            "tests/test_stability14.py",
            "tests/test_hostile13_analysis.py",
            "tests/test_simulate.py",
            "tests/test_fuzz5_predict.py",
            "tests/test_noise.py",
            "tests/test_mutation17.py",
            "tests/test_mutation18.py",
        ],
    ),
}

#: what the copy needs besides the package: the tests, the samples they read, golden.py and the goldens, and
#: docs/ (a test loads docs/dask-workers.yaml)
COPIED = (
    "tracekit",
    "analyzers",
    "collectors",
    "tests",
    "sample_traces",
    "benchmarks",
    "docs",
    "pyproject.toml",
)

STATUS = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    36: "timeout",
}
STATUS.update({-24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", 37: "caught by type check"})


def _env(pythonpath: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a run in a copy: the real traces found, no progress rows, ``PYTHONPATH`` only when
    given (the copy's own tree), plus ``extra``."""
    env = dict(os.environ, TRACEKIT_REAL_TRACES=str(REAL), TRACEKIT_NO_PROGRESS="1", **extra)
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def _overlay_files(paths: list[str]) -> list[str]:
    """Files of the working tree under ``paths`` (tracked or untracked, not ignored)."""
    if not paths:
        return []
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *paths],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [f for f in out.split("\0") if f and (REPO / f).is_file()]


def _installed(rel: str) -> str:
    for folder in ("analyzers", "collectors"):
        if rel == folder or rel.startswith(folder + "/"):
            return "tracekit/" + rel
    return rel


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(value)


def mutmut_config(module: str, workdir: Path) -> dict[str, object]:
    """``[tool.mutmut]`` of pyproject.toml with the module to mutate and its tests (those in the copy)."""
    base = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"].get("mutmut", {})
    path, tests = MODULES[module]
    config = dict(base)
    config["only_mutate"] = [path]
    config["pytest_add_cli_args_test_selection"] = [t for t in tests if (workdir / t).exists()]
    return config


def prepare(module: str, workdir: Path, rev: str, overlay: list[str], goldens: bool = True) -> None:
    """A fresh copy of commit ``rev`` (the goldens and the code they pin agree there; the shared working tree
    holds others' unfinished edits), with the working tree's ``overlay`` paths over it (your new tests), in
    the installed layout, with mutmut's configuration for ``module``; ``goldens`` False: the copy's goldens
    are not regenerated (minutes: only for runs whose tests leave test_golden.py out, e.g. ``--try``)."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", rev, "--", *COPIED], cwd=REPO, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(workdir)], input=archive.stdout, check=True)
    for folder in ("analyzers", "collectors"):
        if (workdir / folder).is_dir():
            (workdir / folder).rename(workdir / "tracekit" / folder)
    for rel in _overlay_files(overlay):
        target = workdir / _installed(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    if goldens:
        refresh_goldens(workdir)
    write_config(module, workdir)


#: Imports the modules named on its command line (from the folder given first), forks, and runs a polars
#: sort in the child: exit 0 when the child finishes, non-zero when it hangs (killed by its alarm) or fails.
#: Prints the tracekit modules and libraries then loaded, one a line (what a fork server may preload).
FORK_PROBE = r"""
import importlib, os, signal, sys
sys.path.insert(0, sys.argv[1])
for name in sys.argv[2:]:
    importlib.import_module(name)
import polars as pl
print("\n".join(sorted(m for m in sys.modules if m.split(".")[0] in {"tracekit", "polars", "numpy",
    "hypothesis", "pytest", "_pytest"})))
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    signal.alarm(20)
    pl.DataFrame({"a": range(100_000)}).sort("a", descending=True).select(pl.col("a").sum()).item()
    os._exit(0)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def _fork_probe(workdir: Path, modules: list[str]) -> tuple[bool, list[str]]:
    """Whether polars still works in a child forked after importing ``modules`` (with the copy's code), and
    the modules that were then loaded."""
    done = subprocess.run(
        [sys.executable, "-c", FORK_PROBE, str(workdir), *modules],
        cwd=workdir,
        env=_env(),
        capture_output=True,
        text=True,
    )
    return done.returncode == 0, done.stdout.split()


def fork_warmup(module: str, workdir: Path) -> dict[str, object]:
    """mutmut's fork-server warm-up for ``module``'s tests: collecting them in the server (mutmut's default,
    fastest) unless a test file runs polars while it is imported (a frame built at module level, e.g.
    tests/test_ranges.py): polars' thread pool then starts in the server, and every mutant forked from it
    hangs until its timeout, which would count as killed. Such files are found by :data:`FORK_PROBE`;
    then the server only imports the libraries and tracekit modules the fork-safe test files load (checked
    by the same probe) and each mutant collects its tests itself (slower, but every verdict is real)."""
    tests = mutmut_config(module, workdir)["pytest_add_cli_args_test_selection"]
    names = [t.removesuffix(".py").replace("/", ".") for t in tests]  # type: ignore[union-attr]
    unsafe = [n for n in names if not _fork_probe(workdir, [n])[0]]
    if not unsafe:
        return {}
    ok, preload = _fork_probe(workdir, [n for n in names if n not in unsafe])
    if not ok:
        preload = []
    elif not _fork_probe(workdir, preload)[0]:
        preload = []
    print(
        f"note: {', '.join(unsafe)} run polars while imported: a fork server that collected them would hang "
        f"every mutant; the server preloads {len(preload)} modules instead and each mutant collects its tests"
    )
    path = workdir / "mutmut-preload.txt"
    path.write_text("".join(m + "\n" for m in preload))
    return {"forkserver_warmup": "import", "preload_modules_file": str(path)}


def write_config(module: str, workdir: Path) -> None:
    """The copy's pyproject.toml with mutmut's configuration for ``module`` (its tests present in the copy)."""
    text = (workdir / "pyproject.toml").read_text()
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", text)  # replaced by the module's own
    config = mutmut_config(module, workdir) | fork_warmup(module, workdir)
    lines = [f"{k} = {_toml_value(v)}" for k, v in config.items()]
    (workdir / "pyproject.toml").write_text(text.rstrip() + "\n\n[tool.mutmut]\n" + "\n".join(lines) + "\n")


def refresh_goldens(workdir: Path) -> None:
    """Rewrite the copy's goldens from the copy's own (unmutated) code: the baseline a mutant must change.
    Goldens that a commit forgot to update would otherwise fail every test run, the unmutated one first."""
    done = subprocess.run(
        [sys.executable, "benchmarks/golden.py", "--update", "--limit", "1"],
        cwd=workdir,
        env=_env(workdir),
        capture_output=True,
        text=True,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-300:]
    if done.returncode != 0 or " 0 rewritten" not in summary:
        print(f"note: the copy's goldens were out of date and were regenerated from its code: {summary}")


#: Generates the copy's mutants (mutmut's first step, without its test runs) so that their names are known.
GENERATE = r"""
from pathlib import Path
from mutmut.__main__ import create_mutants
from mutmut.mutation.trampoline import set_mutant_under_test
from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths
set_mutant_under_test("mutant_generation")
Path("mutants").mkdir(exist_ok=True)
copy_src_dir()
copy_also_copy_files()
setup_source_paths()
create_mutants(1)
"""

SAMPLE_FILE = "sample.json"


def generate(module: str, workdir: Path) -> list[str]:
    """Generate the copy's mutants (no test run); their names, sorted."""
    subprocess.run(
        [sys.executable, "-c", GENERATE], cwd=workdir, env=_env(), check=True, capture_output=True, text=True
    )
    return sorted(results(workdir, module))


def draw_sample(
    module: str, workdir: Path, size: int | None, seed: int, functions: list[str] | None = None
) -> list[str]:
    """Generate the copy's mutants and draw ``size`` of their names uniformly at random (``seed``), among the
    mutants of ``functions`` only when given (``size`` None: all of those); the draw is written to
    WORKDIR/sample.json for the report."""
    names = generate(module, workdir)
    if functions:
        names = [name for name in names if _function(name) in functions]
        if not names:
            raise SystemExit(f"no mutant in the functions {', '.join(functions)} of {module}")
    chosen = names if size is None else sorted(random.Random(seed).sample(names, min(size, len(names))))
    draw = {
        "seed": seed if size is not None else None,
        "size": len(chosen),
        "of": len(names),
        "mutants": chosen,
    }
    if functions:
        draw["functions"] = sorted(functions)
    (workdir / SAMPLE_FILE).write_text(json.dumps(draw, indent=1) + "\n")
    return chosen


def sampled(workdir: Path) -> dict[str, object] | None:
    """The draw of a ``--sample`` run in ``workdir``, or None when the run tested every mutant."""
    path = workdir / SAMPLE_FILE
    return json.loads(path.read_text()) if path.exists() else None


def wilson_interval(successes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score 95% interval of a proportion (fractions in [0, 1]): the estimate of the module's score
    from a random sample of its mutants."""
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def rerun_survivors(module: str, workdir: Path, overlay: list[str], max_children: int) -> int:
    """Run again only the mutants that survived the last run, with the working tree's ``overlay`` files (new
    tests) copied into the copy; mutmut collects which tests call what again (its stats file removed)."""
    for rel in _overlay_files(overlay):
        for root in (workdir, workdir / "mutants"):
            target = root / _installed(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, target)
    write_config(module, workdir)
    (workdir / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    draw = sampled(workdir)
    names = [
        name
        for name, state in results(workdir, module).items()
        if state not in ("killed", "skipped", "timeout")
        and not (draw is not None and state == "not checked")  # a sample's untested mutants stay untested
    ]
    if not names:
        return 0
    return run_mutmut(workdir, max_children, names)


def try_tests(module: str, workdir: Path, tests: list[str], names: list[str]) -> int:
    """Run the working tree's test files ``tests`` against each mutant in ``names`` (default: the last run's
    survivors not written down as equivalent) in the copy's mutated tree, first unmutated (they must pass
    there); print ``killed`` or ``SURVIVES`` per mutant. Quicker than a mutmut re-run while writing tests;
    the score is still mutmut's (``--rerun-survivors``)."""
    root = workdir / "mutants"
    for rel in tests:
        shutil.copy2(REPO / rel, root / rel)
    names = [full_name(module, n) for n in names]
    unknown = sorted(set(names) - set(results(workdir, module)))
    if unknown:  # a name that switches no mutant on would print SURVIVES for a test that kills it
        print(
            f"no such mutant in {workdir}: {', '.join(unknown)} (names as mutmut writes them: x_func__mutmut_3)"
        )
        return 2
    if not names:  # (a copy made with --prepare-only: its mutants, or its draw's, are all "not checked")
        alive = survivors(module, workdir)[1]
        states = ("survived", "no tests", "suspicious", "not checked")
        names = [name for name, state, *_ in alive if state in states]
    env = _env(root)
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    clean = subprocess.run(
        command, cwd=root, env=env | {"MUTANT_UNDER_TEST": ""}, capture_output=True, text=True
    )
    if clean.returncode != 0:
        print(f"the tests fail on the unmutated code:\n{clean.stdout[-2000:]}")
        return 1
    survived = 0
    for name in names:
        done = subprocess.run(command, cwd=root, env=env | {"MUTANT_UNDER_TEST": name}, capture_output=True)
        survived += done.returncode == 0
        print(f"{'SURVIVES' if done.returncode == 0 else 'killed  '} {name}", flush=True)
    print(f"{len(names) - survived} of {len(names)} killed")
    return 0


def full_name(module: str, name: str) -> str:
    """mutmut's full name of a mutant of ``module`` given as ``x_func__mutmut_3`` or in full."""
    return name if name.startswith("tracekit.") else f"{MODULES[module][0][:-3].replace('/', '.')}.{name}"


def write_equivalent(module: str, workdir: Path, name: str, reason: str) -> int:
    """Write mutant ``name`` of the last run down as equivalent in ``benchmarks/mutation_equivalent/MODULE.json``
    (function, its diff with context, ``reason``); a mutant already there is replaced."""
    if not reason.strip():
        print("--equivalent needs --reason: why no output can change")
        return 2
    name = full_name(module, name)
    entry = {
        "module": module,
        "function": _function(name),
        "diff": _key(mutant_diff(workdir, name)),
        "reason": reason,
    }
    if not entry["diff"]:
        print(f"no mutant {name} in {workdir}")
        return 2
    path = EQUIVALENT / f"{module}.json"
    entries = [
        e for e in load_equivalent(module) if (e["function"], e["diff"]) != (entry["function"], entry["diff"])
    ]
    EQUIVALENT.mkdir(exist_ok=True)
    path.write_text(json.dumps([*entries, entry], indent=1, ensure_ascii=False) + "\n")
    print(f"{name}: written down as equivalent in {path.relative_to(REPO)}")
    return 0


def run_mutmut(workdir: Path, max_children: int, names: list[str] | None = None) -> int:
    env = _env(PYTHONDONTWRITEBYTECODE="1")
    mutmut = shutil.which("mutmut") or str(Path(sys.executable).with_name("mutmut"))
    command = ["nice", "-n", "19", mutmut, "run", "--max-children", str(max_children), *(names or [])]
    with open(workdir / "mutmut.log", "a" if names else "w") as log:
        return subprocess.run(command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT).returncode


def results(workdir: Path, module: str) -> dict[str, str]:
    """mutant name -> status, from mutmut's .meta file of the module."""
    meta = workdir / "mutants" / (MODULES[module][0] + ".meta")
    data = json.loads(meta.read_text())
    return {
        name: STATUS.get(code, "suspicious" if code is not None else "not checked")
        for name, code in data["exit_code_by_key"].items()
    }


def mutant_diff(workdir: Path, name: str) -> str:
    """mutmut's diff of one mutant: the changed lines with their context (no file or hunk headers)."""
    mutmut = shutil.which("mutmut") or str(Path(sys.executable).with_name("mutmut"))
    out = subprocess.run([mutmut, "show", name], cwd=workdir, capture_output=True, text=True).stdout
    lines = out.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if line.startswith("@@")), len(lines))
    return "\n".join(line.rstrip() for line in lines[start:])


def _function(name: str) -> str:
    """``x_func__mutmut_3`` / ``xǁClassǁmethod__mutmut_3`` -> ``func`` / ``Class.method``."""
    short = name.rsplit(".", 1)[-1]
    short = re.sub(r"__mutmut_\d+$", "", short)
    short = short[2:] if short.startswith("x_") else short
    return short.replace("xǁ", "").replace("ǁ", ".").strip(".")


def _key(diff: str) -> list[str]:
    """The mutant's diff without indentation: what an equivalence entry is matched on (the changed line and
    its neighbours tell apart one mutation of a line that occurs several times in a function)."""
    return [line[:1] + line[1:].strip() for line in diff.splitlines() if line.strip()]


def load_equivalent(module: str) -> list[dict[str, str]]:
    """The mutants of ``module`` written down as equivalent (``benchmarks/mutation_equivalent/MODULE.json``)."""
    path = EQUIVALENT / f"{module}.json"
    return [e for e in json.loads(path.read_text()) if e["module"] == module] if path.exists() else []


#: one surviving mutant: (name, status, mutmut's diff, its equivalence entry or None)
Survivor = tuple[str, str, str, dict[str, str] | None]


def survivors(module: str, workdir: Path) -> tuple[dict[str, str], list[Survivor], list[Survivor]]:
    """The last run's mutants (name -> status; a sample's only), its survivors not written down as
    equivalent, and those that are, in mutant-number order."""
    draw = sampled(workdir)
    status = results(workdir, module)
    if draw is not None:
        drawn = set(draw["mutants"])
        status = {name: state for name, state in status.items() if name in drawn}
    equivalents = load_equivalent(module)
    alive: list[Survivor] = []
    equivalent: list[Survivor] = []
    for name, state in sorted(status.items(), key=lambda kv: int(re.search(r"(\d+)$", kv[0]).group(1))):
        if state in ("killed", "caught by type check", "skipped", "timeout"):
            continue
        diff = mutant_diff(workdir, name)
        match = next(
            (e for e in equivalents if e["function"] == _function(name) and e["diff"] == _key(diff)), None
        )
        (equivalent if match else alive).append((name, state, diff, match))
    return status, alive, equivalent


def report(module: str, workdir: Path) -> tuple[str, dict[str, int]]:
    draw = sampled(workdir)
    status, alive, equivalent = survivors(module, workdir)
    counts = {
        "mutants": len(status),
        "killed": sum(s in ("killed", "caught by type check", "timeout") for s in status.values()),
        "equivalent": len(equivalent),
        "survived": len(alive),
        "skipped": sum(s == "skipped" for s in status.values()),
    }
    counted = counts["mutants"] - counts["equivalent"] - counts["skipped"]
    score = counts["killed"] / counted if counted else 1.0
    counts["score_pct"] = round(100 * score, 1)
    lines = [
        f"# Mutation score of {MODULES[module][0]} ({dt.date.today().isoformat()})",
        "",
        f"{counts['killed']} of {counted} non-equivalent mutants killed: **{100 * score:.1f}%** "
        f"({counts['mutants']} mutants, {counts['equivalent']} equivalent, {counts['survived']} survived, "
        f"{counts['skipped']} skipped).",
        "",
    ]
    if draw is not None and draw.get("functions") and draw["seed"] is None:
        counts |= {"functions": draw["functions"]}
        lines[2:2] = [f"Every mutant of the functions {', '.join(draw['functions'])}: {draw['size']}.", ""]
    elif draw is not None:
        low, high = wilson_interval(counts["killed"], counted)
        counts |= {"sample_of": draw["of"], "seed": draw["seed"]}
        counts |= {"interval_pct": [round(100 * low, 1), round(100 * high, 1)]}
        whose = (
            f"the {draw['of']} mutants of the functions {', '.join(draw['functions'])}"
            if draw.get("functions")
            else f"the module's {draw['of']} mutants"
        )
        what = "those functions'" if draw.get("functions") else "the module's"
        lines[2:2] = [
            f"A random sample of {draw['size']} of {whose} (seed {draw['seed']}): {what} score is estimated "
            f"at {100 * score:.1f}%, 95% interval {100 * low:.1f}-{100 * high:.1f}% (Wilson).",
            "",
        ]
    for title, rows in (("Surviving", alive), ("Equivalent", equivalent)):
        if rows:
            lines += [f"## {title}", ""]
        for name, state, diff, match in rows:
            lines += [f"### {name} ({state})", "", "```diff", diff, "```", ""]
            if match:
                lines += [f"Equivalent: {match['reason']}", ""]
    return "\n".join(lines), counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"modules to score: {', '.join(MODULES)}")
    parser.add_argument("--list", action="store_true", help="list the modules and their tests")
    parser.add_argument(
        "--workdir", type=Path, default=Path("/tmp/tracekit-mutation"), help="parent of the copies"
    )
    parser.add_argument("--max-children", type=int, default=1, help="mutants tested at once (default 1)")
    parser.add_argument("--report-only", action="store_true", help="report the last run again, run nothing")
    parser.add_argument(
        "--rerun-survivors",
        action="store_true",
        help="in the last run's copy, test again only its survivors, with --overlay files (new tests) added",
    )
    parser.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="test N mutants drawn at random instead of all: the report gives an estimate with its interval",
    )
    parser.add_argument("--seed", type=int, default=33, help="the --sample draw's seed (default 33)")
    parser.add_argument(
        "--functions",
        nargs="+",
        metavar="NAME",
        help="only the mutants of these functions (Class.method for a method): all of them, or --sample N",
    )
    parser.add_argument(
        "--try",
        dest="try_tests",
        nargs="+",
        metavar="TEST",
        help="run these working-tree test files against the last run's survivors (or --mutants) in its copy",
    )
    parser.add_argument("--mutants", nargs="+", default=[], metavar="NAME", help="the mutants for --try")
    parser.add_argument(
        "--equivalent", metavar="NAME", help="write this mutant of the last run down as equivalent"
    )
    parser.add_argument("--reason", default="", help="with --equivalent: why no output can change")
    parser.add_argument("--rev", default="HEAD", help="commit to copy (default HEAD)")
    parser.add_argument(
        "--prepare-only",
        action="store_true",
        help="make the copy and its mutants (and the --sample/--functions draw) but run none: for --try",
    )
    parser.add_argument(
        "--no-goldens",
        action="store_true",
        help="do not regenerate the copy's goldens (minutes; only for tests without test_golden.py, e.g. --try)",
    )
    parser.add_argument(
        "--overlay",
        nargs="+",
        default=[],
        metavar="PATH",
        help="working-tree files or folders copied over the commit (e.g. a new test file not yet committed)",
    )
    args = parser.parse_args(argv)
    if args.list or not args.modules:
        for name, (path, tests) in MODULES.items():
            print(f"{name}: {path} <- {' '.join(tests)}")
        return 0
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {unknown}; known: {', '.join(MODULES)}")
    if shutil.which("mutmut") is None and not Path(sys.executable).with_name("mutmut").exists():
        parser.error("mutmut is not installed: pip install 'mutmut==3.8.1'")
    worst = 0
    for module in args.modules:
        workdir = args.workdir / module
        if args.equivalent:
            worst = max(worst, write_equivalent(module, workdir, args.equivalent, args.reason))
            continue
        if args.try_tests:
            worst = max(worst, try_tests(module, workdir, args.try_tests, args.mutants))
            continue
        if args.rerun_survivors:
            started = dt.datetime.now()
            code = rerun_survivors(module, workdir, args.overlay, args.max_children)
        elif not args.report_only:
            prepare(module, workdir, args.rev, args.overlay, goldens=not args.no_goldens)
            chosen = (
                draw_sample(module, workdir, args.sample, args.seed, args.functions)
                if args.sample or args.functions
                else None
            )
            if args.prepare_only:
                count = len(chosen) if chosen is not None else len(generate(module, workdir))
                print(
                    f"{module}: {count} mutants made in {workdir}, none run; test files against them: "
                    f"python benchmarks/mutation.py {module} --workdir {args.workdir} --try TEST... "
                    "[--mutants NAME...]"
                )
                continue
            started = dt.datetime.now()
            code = run_mutmut(workdir, args.max_children, chosen)
        if args.rerun_survivors or not args.report_only:
            took = (dt.datetime.now() - started).total_seconds()
            if code != 0:
                print(f"{module}: mutmut exited {code} after {took:.0f} s; see {workdir / 'mutmut.log'}")
                worst = max(worst, 1)
                continue
        text, counts = report(module, workdir)
        (workdir / "report.md").write_text(text + "\n")
        print(f"{module}: {counts['score_pct']}% ({counts}); report: {workdir / 'report.md'}")
    return worst


if __name__ == "__main__":
    sys.exit(main())
