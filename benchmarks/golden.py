"""Golden outputs: the full JSON of ``tracekit analyze`` on every sample and real trace, and of ``table`` and
``compare`` on the sample runs, pinned in ``tests/golden/`` (issue 33).

    python benchmarks/golden.py --check               # run every case, print what moved; exit 1 if anything did
    python benchmarks/golden.py --update              # rewrite the goldens that moved, print the same diff
    python benchmarks/golden.py --update h200 table/  # only the cases whose name contains one of the words
    python benchmarks/golden.py --list                # the cases and their command lines

A golden file holds the command line (paths relative to the repository, real traces as ``$REAL_TRACES/...``),
the exit code, every line on stderr and the parsed JSON on stdout. Floats compare to a relative tolerance of
:data:`REL_TOL` (absolute :data:`ABS_TOL` near zero), since float sums may differ in their last bits between
machines and polars versions (1e-9 of a 10 ms latency is 10 ps; a 1 ns change shows from values below 1 s);
integers (counts, nanosecond timestamps), an int that becomes a float, every string (warnings, sources,
labels, verdicts), every ``null``, every key and the order of keys and list items compare exactly. ``--update`` leaves a golden
whose output is equal within the tolerance untouched (no churn from float noise) and refuses to record an
internal error (exit code 1 with ``internal error`` on stderr: that is a bug, never a golden).

Cases run in this process through ``tracekit.cli.main`` (about 0.1-1.5 s each, ~12 s for all 93 here); the real
traces come from ``../shared/real_traces`` (``TRACEKIT_REAL_TRACES`` overrides it) and are left out, with their
goldens kept, when it is absent. ``tests/test_golden.py`` runs the same cases under pytest.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import math
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_traces"
GOLDEN = REPO / "tests" / "golden"
REAL = Path(os.environ.get("TRACEKIT_REAL_TRACES", REPO.parent / "shared" / "real_traces"))

#: numbers: |a - b| <= max(REL_TOL * max(|a|, |b|), ABS_TOL)
REL_TOL = 1e-9
ABS_TOL = 1e-12

#: a golden file larger than this (bytes) is stored gzipped
GZIP_ABOVE = 256 * 1024

#: file names that are traces (everything else in the trace folders is a sidecar, a table or a README)
TRACE_SUFFIXES = (
    ".sqlite",
    ".sqlite.gz",
    ".json.gz",
    ".pt.trace.json",
    ".csv.gz",
    ".ncu-rep",
    ".nsys-rep",
    ".qdrep",
)

#: placeholders written into goldens instead of machine-specific folders
REAL_TOKEN = "$REAL_TRACES"

H200 = "sample_traces/h200_bert_fp16"
SYN = "sample_traces/synthetic"


@dataclass(frozen=True)
class Case:
    """One command whose output is pinned: ``name`` is its golden's path under tests/golden without suffix."""

    name: str
    argv: tuple[str, ...]  # paths as "sample_traces/..." or "$REAL_TRACES/..."
    real: bool = False
    needs: str | None = None  # a module, or "program:NAME", the output depends on (skipped where missing)

    def resolved_argv(self) -> list[str]:
        return [_resolve(a) for a in self.argv]

    def available(self) -> str | None:
        """None when the case can run here, else why not."""
        if self.real and not REAL.is_dir():
            return f"{REAL} is absent"
        for arg in self.resolved_argv():
            if (arg.startswith(str(REAL)) or arg.startswith(str(REPO))) and not Path(arg).exists():
                return f"{arg} is absent"
        if self.needs and self.needs.startswith("program:"):
            import shutil

            program = self.needs.removeprefix("program:")
            if shutil.which(program) is None:
                return f"{program} is not installed"
        elif self.needs:
            import importlib.util

            if importlib.util.find_spec(self.needs) is None:
                return f"the {self.needs} package is not installed"
        return None


def needs_of(argv: tuple[str, ...] | list[str]) -> str | None:
    """What a case's output depends on besides tracekit: ``ncu_report`` to read a ``.ncu-rep``, nsys to
    export an Nsight Systems report."""
    if any(a.endswith(".ncu-rep") for a in argv):
        return "ncu_report"
    if any(a.endswith((".nsys-rep", ".qdrep")) for a in argv):
        return "program:nsys"
    return None


def _resolve(arg: str) -> str:
    if arg.startswith(REAL_TOKEN + "/"):
        return str(REAL / arg[len(REAL_TOKEN) + 1 :])
    if arg.startswith("sample_traces/"):
        return str(REPO / arg)
    return arg


def is_trace(path: Path) -> bool:
    """Whether ``path`` is a trace file (by name) rather than a sidecar, table or README."""
    name = path.name
    if name.endswith((".meta.json", ".truth.json")) or name in ("run.json",):
        return False
    if name.endswith(".csv.gz") and ".ncu." not in name:
        return False
    return name.endswith(TRACE_SUFFIXES)


def sample_trace_files() -> list[Path]:
    return sorted(p for p in SAMPLES.rglob("*") if p.is_file() and is_trace(p))


def real_trace_files() -> list[Path]:
    if not REAL.is_dir():
        return []
    return sorted(
        p
        for p in REAL.rglob("*")
        if p.is_file() and is_trace(p) and "reference" not in p.relative_to(REAL).parts
    )


def _analyze(rel: str, *options: str, real: bool = False, tag: str = "") -> Case:
    needs = needs_of([rel])
    name = f"analyze/{rel.replace(REAL_TOKEN, 'real_traces')}{tag}"
    return Case(name, ("analyze", rel, *options, "--format", "json"), real=real, needs=needs)


def sample_cases() -> list[Case]:
    """Every command pinned on the committed samples (no real trace needed)."""
    cases = [_analyze(p.relative_to(REPO).as_posix()) for p in sample_trace_files()]
    # options that change how iterations are cut: --split-idle windows, --skip, a --range pattern
    cases += [
        _analyze(
            f"{SYN}/table3_pytorch/pytorch_b1_s128.synthetic.sqlite", "--split-idle", "0.1", tag=".split-idle"
        ),
        _analyze(f"{H200}/pytorch/pytorch_b1_s128.torch.json.gz", "--split-idle", "0.1", tag=".split-idle"),
        _analyze(
            f"{H200}/cuda-graphs/cuda-graphs_b1_s128.torch.json.gz", "--split-idle", "0.05", tag=".split-idle"
        ),
        _analyze(f"{SYN}/table3_onnx/onnx_b1_s128.synthetic.json.gz", "--skip", "3", tag=".skip3"),
        _analyze(
            "sample_traces/cpu_pytorch_bert_torch/pytorch_b1_s128.torch.json.gz",
            "--range",
            "iterat*",
            "--bound-threshold",
            "0.9",
            tag=".range-glob",
        ),
    ]
    h200_runs = [
        f"{H200}/{r}" for r in ("pytorch", "torchscript", "cuda-graphs", "compile", "compile-cudagraphs")
    ]
    tables = {
        "synthetic_table3_paper": [
            *sorted(f"{SYN}/{p.name}" for p in (SAMPLES / "synthetic").glob("table3_*")),
            "--paper",
        ],
        "synthetic_sweep_pytorch": [f"{SYN}/sweep_pytorch"],
        "h200_runtimes_ncu_paper": [
            *h200_runs,
            "--ncu",
            f"{H200}/pytorch-ncu/pytorch_b1_s128.ncu.csv.gz",
            "--paper",
        ],
        "h200_pytorch_ncu_only": [f"{H200}/pytorch-ncu"],
        "h200_sweep_cuda_graphs": [f"{H200}/sweep-cuda-graphs"],
        # nsys GPU-metric samples (SMs active, warp occupancy) beside ncu's counters on the same model
        "h200_nsys_metrics_and_ncu": [
            f"{H200}/nsys-pytorch",
            f"{H200}/nsys-cuda-graphs",
            "--ncu",
            f"{H200}/pytorch-ncu/pytorch_b1_s128.ncu.csv.gz",
        ],
        "cpu_runs": [
            "sample_traces/cpu_onnx_bert_nsys",
            "sample_traces/cpu_onnx_bert_ort",
            "sample_traces/cpu_pytorch_bert_torch",
        ],
    }
    cases += [Case(f"table/{name}", ("table", *args, "--format", "json")) for name, args in tables.items()]
    compares = {
        "synthetic_pytorch_vs_onnx": (f"{SYN}/table3_pytorch", f"{SYN}/table3_onnx"),
        "synthetic_pytorch_vs_torchscript": (f"{SYN}/table3_pytorch", f"{SYN}/table3_torchscript"),
        "synthetic_pytorch_vs_cuda-graphs": (f"{SYN}/table3_pytorch", f"{SYN}/table3_cuda-graphs"),
        "synthetic_onnx_vs_onnx-cuda-graphs": (f"{SYN}/table3_onnx", f"{SYN}/table3_onnx-cuda-graphs"),
        "synthetic_sqlite_vs_kineto": (
            f"{SYN}/table3_pytorch/pytorch_b1_s128.synthetic.sqlite",
            f"{SYN}/table3_pytorch/pytorch_b1_s128.synthetic.json.gz",
        ),
        "h200_pytorch_vs_torchscript": (f"{H200}/pytorch", f"{H200}/torchscript"),
        "h200_pytorch_vs_cuda-graphs": (f"{H200}/pytorch", f"{H200}/cuda-graphs"),
        "h200_pytorch_vs_compile": (f"{H200}/pytorch", f"{H200}/compile"),
        "h200_compile_vs_compile-cudagraphs": (f"{H200}/compile", f"{H200}/compile-cudagraphs"),
        "h200_cuda-graphs_vs_sweep": (f"{H200}/cuda-graphs", f"{H200}/sweep-cuda-graphs"),
        "cpu_torch_vs_ort": ("sample_traces/cpu_pytorch_bert_torch", "sample_traces/cpu_onnx_bert_ort"),
        "cpu_nsys_vs_ort": ("sample_traces/cpu_onnx_bert_nsys", "sample_traces/cpu_onnx_bert_ort"),
    }
    cases += [
        Case(f"compare/{name}", ("compare", a, b, "--top", "0", "--format", "json"))
        for name, (a, b) in compares.items()
    ]
    # several traces: the cross-trace document (rows, spread, clocks, straggler, skew, warnings)
    ranks = f"{SYN}/ranks4"
    many = {
        # four ranks of one job: aligned on their all-reduces, a straggler, skew, communication
        "synthetic_ranks4": [ranks],
        # ranks 1 and 3 only, in reverse order: ordered by rank, rank 1 the reference
        "synthetic_ranks_3_1": [f"{ranks}/rank3.synthetic.json.gz", f"{ranks}/rank1.synthetic.json.gz"],
        # a rank trace beside runs without collectives or ranks: clocks not aligned (said why), iteration
        # counts that differ, labels from file names
        "mixed_without_collectives": [
            f"{ranks}/rank0.synthetic.json.gz",
            f"{SYN}/table3_onnx/onnx_b1_s128.synthetic.json.gz",
            "sample_traces/cpu_pytorch_bert_torch/pytorch_b1_s128.torch.json.gz",
        ],
    }
    cases += [
        Case(f"many/{name}", ("analyze", *args, "--jobs", "1", "--format", "json"))
        for name, args in many.items()
    ]
    return cases


def real_cases() -> list[Case]:
    """Every real trace under ../shared/real_traces; where it is absent, the cases its goldens record (so that
    pytest lists them as skipped rather than forgetting them)."""
    if REAL.is_dir():
        rels = [f"{REAL_TOKEN}/{p.relative_to(REAL).as_posix()}" for p in real_trace_files()]
        cases = [_analyze(rel, real=True) for rel in rels]
        groups = {
            "real_nsys": [r for r in rels if r.endswith(".sqlite")],
            "real_kineto": [r for r in rels if r.endswith((".json.gz", ".pt.trace.json"))],
        }
        cases += [
            Case(f"table/{name}", ("table", *files, "--format", "json"), real=True)
            for name, files in groups.items()
            if files
        ]
        # several real traces: a 2-GPU nsys capture (one row per GPU under its trace's) beside a DDP rank
        pair = [f"{REAL_TOKEN}/nsys/nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite"]
        pair += [f"{REAL_TOKEN}/kineto/hta_a100_ddp_nccl_rank0.json.gz"]
        if all(_resolve(r) and Path(_resolve(r)).is_file() for r in pair):
            argv = ("analyze", *pair, "--jobs", "1", "--format", "json")
            cases.append(Case("many/real_2gpu_nsys_and_ddp_rank", argv, real=True))
        return cases
    cases = []
    for path in (
        sorted((GOLDEN / "analyze" / "real_traces").rglob("*.json*"))
        + sorted((GOLDEN / "table").glob("real_*.json*"))
        + sorted((GOLDEN / "many").glob("real_*.json*"))
    ):
        doc = load_golden_file(path)
        argv = tuple(doc["argv"])
        needs = needs_of(argv)
        cases.append(Case(golden_name(path), argv, real=True, needs=needs))
    return cases


def all_cases() -> list[Case]:
    return sample_cases() + real_cases()


# --- running ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def normalize(value: Any) -> Any:
    """Machine-specific folders in every string replaced by placeholders (real traces first, then the
    repository, so that sample paths read ``sample_traces/...`` as in the README)."""
    if isinstance(value, str):
        return value.replace(str(REAL), REAL_TOKEN).replace(str(REPO) + os.sep, "")
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {normalize(k): normalize(v) for k, v in value.items()}
    return value


def run_case(case: Case) -> dict[str, Any]:
    """Run one case in this process; returns the document a golden holds."""
    from tracekit.cli import main
    from tracekit.io import forget_inputs

    forget_inputs()
    out, err = io.StringIO(), io.StringIO()
    with (
        _environment(TRACEKIT_NO_PROGRESS="1", COLUMNS="160"),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = main(case.resolved_argv())
        except SystemExit as exc:  # argparse usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    forget_inputs()
    text = out.getvalue()
    try:
        output: Any = json.loads(text) if text.strip() else None
    except ValueError:
        output = text.splitlines()
    return {
        "argv": list(case.argv),
        "exit_code": code,
        "stderr": normalize(err.getvalue().splitlines()),
        "output": normalize(output),
    }


# --- golden files ----------------------------------------------------------------------------------------


def golden_path(case: Case) -> Path:
    """The golden file of ``case`` as it exists (``.json`` or ``.json.gz``), else where ``.json`` would go."""
    plain = GOLDEN / f"{case.name}.json"
    packed = GOLDEN / f"{case.name}.json.gz"
    return packed if packed.exists() and not plain.exists() else plain


def golden_name(path: Path) -> str:
    rel = path.relative_to(GOLDEN).as_posix()
    return rel[: -len(".json.gz")] if rel.endswith(".json.gz") else rel[: -len(".json")]


def load_golden_file(path: Path) -> dict[str, Any]:
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    return json.loads(data)


def load_golden(case: Case) -> dict[str, Any] | None:
    path = golden_path(case)
    return load_golden_file(path) if path.exists() else None


def _is_row(value: Any) -> bool:
    return isinstance(value, dict) and all(not isinstance(v, (dict, list)) for v in value.values())


def dumps(value: Any, indent: int = 0) -> str:
    """JSON for review: nested objects indented one level per line, but a list of flat objects (per-iteration
    rows, gaps, kernels) one object per line and a list of scalars on one line, so that one moved number
    is one changed line in ``git diff``."""
    pad, inner = " " * indent, " " * (indent + 1)
    if isinstance(value, dict) and value and not _is_row(value):
        items = [f"{inner}{json.dumps(k)}: {dumps(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        items = [f"{inner}{dumps(v, indent + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def write_golden(case: Case, doc: dict[str, Any]) -> Path:
    text = dumps(doc) + "\n"
    data = text.encode()
    plain, packed = GOLDEN / f"{case.name}.json", GOLDEN / f"{case.name}.json.gz"
    target = packed if len(data) > GZIP_ABOVE else plain
    if target is packed:
        data = gzip.compress(data, compresslevel=9, mtime=0)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    for other in (plain, packed):
        if other != target and other.exists():
            other.unlink()
    return target


# --- comparison ------------------------------------------------------------------------------------------


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def numbers_close(a: float, b: float) -> bool:
    if isinstance(a, float) and isinstance(b, float) and (math.isnan(a) or math.isnan(b)):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= max(REL_TOL * max(abs(a), abs(b)), ABS_TOL)


def _short(v: Any, limit: int = 160) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _moved(a: float, b: float) -> str:
    delta = b - a
    rel = f", {delta / abs(a):+.3%}" if a else ""
    return f"{_short(a)} -> {_short(b)} ({delta:+.6g}{rel})"


def diff(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Every difference between a golden value and a fresh one, one line each: ``where: old -> new``.
    Numbers within the tolerance are equal; everything else must be exactly equal."""
    here = where or "(top)"
    if _number(expected) and _number(actual):
        if type(expected) is not type(actual):
            return [
                f"{here}: {_short(expected)} -> {_short(actual)} (type {type(expected).__name__} -> "
                f"{type(actual).__name__})"
            ]
        if isinstance(expected, int):  # counts and nanosecond timestamps: exact
            return [] if expected == actual else [f"{here}: {_moved(expected, actual)}"]
        return [] if numbers_close(expected, actual) else [f"{here}: {_moved(expected, actual)}"]
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines: list[str] = []
        for key in expected:
            sub = f"{where}.{key}" if where else key
            if key not in actual:
                lines.append(f"{sub}: removed (was {_short(expected[key])})")
            else:
                lines += diff(expected[key], actual[key], sub)
        for key in actual:
            if key not in expected:
                lines.append(f"{where + '.' if where else ''}{key}: added {_short(actual[key])}")
        common_e = [k for k in expected if k in actual]
        common_a = [k for k in actual if k in expected]
        if common_e != common_a:
            lines.append(f"{here}: key order {common_e} -> {common_a}")
        return lines
    if isinstance(expected, list) and isinstance(actual, list):
        lines = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            lines += diff(e, a, f"{where}[{i}]")
        if len(expected) != len(actual):
            lines.append(f"{here}: {len(expected)} items -> {len(actual)}")
            for i in range(len(actual), len(expected)):
                lines.append(f"{where}[{i}]: removed {_short(expected[i])}")
            for i in range(len(expected), len(actual)):
                lines.append(f"{where}[{i}]: added {_short(actual[i])}")
        return lines
    if expected == actual and type(expected) is type(actual):
        return []
    if isinstance(expected, str) and isinstance(actual, str):
        return [f"{here}: {_string_change(expected, actual)}"]
    return [f"{here}: {_short(expected)} -> {_short(actual)}"]


def _string_change(old: str, new: str, context: int = 40) -> str:
    """Two long strings shown around their first difference (a changed word deep in a warning is visible)."""
    if len(old) <= 150 and len(new) <= 150:
        return f"{_short(old)} -> {_short(new)}"
    start = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new))
    )
    cut = max(0, start - context)
    prefix = "..." if cut else ""
    return f"{prefix}{_short(old[cut:], 150)} -> {prefix}{_short(new[cut:], 150)} (strings differ from character {start})"


def format_diff(name: str, lines: list[str], limit: int | None = None) -> str:
    shown = lines if limit is None else lines[:limit]
    text = [f"--- {name}: {len(lines)} difference(s)"] + [f"    {line}" for line in shown]
    if len(shown) < len(lines):
        text.append(
            f"    ... and {len(lines) - len(shown)} more (python benchmarks/golden.py --check {name})"
        )
    return "\n".join(text)


def internal_error(doc: dict[str, Any]) -> bool:
    return doc["exit_code"] == 1 and any("internal error" in line for line in doc["stderr"])


# --- command line ----------------------------------------------------------------------------------------


def selected(cases: Iterable[Case], words: list[str]) -> list[Case]:
    return [c for c in cases if not words or any(w in c.name for w in words)]


def stale_goldens(cases: list[Case]) -> list[Path]:
    """Golden files that no case writes (their trace or case was removed); real ones only when the real
    traces are here to tell."""
    names = {c.name for c in cases}
    stale = []
    for path in sorted(GOLDEN.rglob("*.json*")):
        if not path.name.endswith((".json", ".json.gz")):
            continue
        name = golden_name(path)
        real = name.startswith(("analyze/real_traces/", "table/real_", "many/real_"))
        if name not in names and (not real or REAL.is_dir()):
            stale.append(path)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--check", action="store_true", help="compare every case with its golden; exit 1 on any change"
    )
    mode.add_argument("--update", action="store_true", help="rewrite the goldens whose output changed")
    mode.add_argument("--list", action="store_true", help="list the cases")
    parser.add_argument("words", nargs="*", help="only cases whose name contains one of these (default: all)")
    parser.add_argument(
        "--limit", type=int, default=60, help="difference lines shown per case (default 60; 0: all)"
    )
    args = parser.parse_args(argv)

    cases = selected(all_cases(), args.words)
    if args.list:
        for case in cases:
            why = case.available()
            print(f"{case.name}: tracekit {' '.join(case.argv)}" + (f"  [skipped: {why}]" if why else ""))
        return 0

    limit = args.limit or None
    changed = missing = same = skipped = refused = 0
    started = time.perf_counter()
    for case in cases:
        why = case.available()
        if why:
            skipped += 1
            continue
        doc = run_case(case)
        old = load_golden(case)
        if old is None:
            missing += 1
            print(f"--- {case.name}: no golden yet (exit code {doc['exit_code']})")
            lines = []
        else:
            lines = diff(old, doc)
            if not lines:
                same += 1
                continue
            changed += 1
            print(format_diff(case.name, lines, limit))
        if args.update:
            if internal_error(doc):
                refused += 1
                print(f"    NOT WRITTEN: internal error: {' '.join(doc['stderr'])}")
            else:
                write_golden(case, doc)
    stale = stale_goldens(all_cases()) if not args.words else []
    for path in stale:
        print(
            f"--- {path.relative_to(REPO)}: no case writes it any more"
            + (" (removed)" if args.update else "")
        )
        if args.update:
            path.unlink()
    verb = "rewritten" if args.update else "differ"
    print(
        f"golden: {same} equal, {changed} {verb}, {missing} new, {len(stale)} stale, {skipped} skipped"
        + (f" (no real traces at {REAL})" if not REAL.is_dir() else "")
        + (f", {refused} NOT written (internal errors)" if refused else "")
        + f" in {time.perf_counter() - started:.1f} s",
    )
    if args.update:
        return 1 if refused else 0
    return 1 if changed or missing or stale else 0


if __name__ == "__main__":
    sys.exit(main())
