"""The layers stay apart (issue 27), read from the source's import statements (every import, at module level
or inside a function):

- no module outside ``tracekit/readers/`` imports a reader's internals: only the package's public functions
  (``read_trace``, ``detect_format``, ``begin_reading``, ``program_allocator``), so that the speed work of a
  reader (decode workers, huge pages, prefetch, memory release) stays behind ``read_trace``;
- the readers know formats, not metrics: nothing under ``tracekit/readers/`` imports the analyzers, the
  analysis session or its result;
- ``tracekit/commands/`` holds argument parsing and output only: a command imports the API (the functions
  the Python API exposes), renderers, output helpers and, for the verbs that are not analyses, their
  collector or simulator; never the readers, the analyzers, the session, the trace model, polars or numpy.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Source folders and the package name each is installed as (analyzers/ and collectors/ sit at the top).
PACKAGES = {
    ROOT / "tracekit": "tracekit",
    ROOT / "analyzers": "tracekit.analyzers",
    ROOT / "collectors": "tracekit.collectors",
}
#: What ``tracekit.readers`` offers the rest of the code.
READERS_PUBLIC = {
    "read_trace",
    "detect_format",
    "holds_no_trace",
    "begin_reading",
    "program_allocator",
    "READERS",
}
#: What a command may import from tracekit (a prefix matches the module and its submodules).
COMMAND_ALLOWED = (
    "tracekit.api",
    "tracekit.commands",
    "tracekit.renderers",
    "tracekit.errors",
    "tracekit.io",
    "tracekit.progress",
    "tracekit.limits",  # the size option's parser
    "tracekit.collectors",  # collect, doctor: the collector is their API
    "tracekit.simulate",  # simulate: the simulator is its API
)
COMMAND_FORBIDDEN_LIBRARIES = ("polars", "numpy")


def _modules() -> list[tuple[str, Path]]:
    out = []
    for folder, package in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out.append((".".join([package, *parts]), path))
    return out


def _imports(module: str, path: Path) -> list[tuple[str, tuple[str, ...], int]]:
    """(imported module, names taken from it, line) of every import statement in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, (), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".") if is_package else module.split(".")[:-1]
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            names = tuple(alias.name for alias in node.names)
            out.append((base, names, node.lineno))
            # ``from tracekit.readers import kineto_worker`` imports a submodule
            out += [(f"{base}.{n}", (), node.lineno) for n in names if _is_module(f"{base}.{n}")]
    return out


_ALL = {name for name, _ in _modules()}


def _is_module(name: str) -> bool:
    return name in _ALL


MODULES = _modules()


def test_the_source_is_found() -> None:
    names = {m for m, _ in MODULES}
    assert {"tracekit.readers", "tracekit.readers.nsys_sqlite", "tracekit.analyzers.iterations"} <= names
    assert {"tracekit.commands.analyze", "tracekit.api", "tracekit.session"} <= names


@pytest.mark.parametrize("module, path", MODULES, ids=[m for m, _ in MODULES])
def test_no_module_outside_the_readers_imports_their_internals(module: str, path: Path) -> None:
    if module == "tracekit.readers" or module.startswith("tracekit.readers."):
        return
    bad = []
    for name, names, line in _imports(module, path):
        if name.startswith("tracekit.readers."):
            bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
        elif name == "tracekit.readers" and set(names) - READERS_PUBLIC:
            bad.append(
                f"{path.relative_to(ROOT)}:{line} imports {sorted(set(names) - READERS_PUBLIC)} from it"
            )
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "module, path", [(m, p) for m, p in MODULES if m.startswith("tracekit.readers")], ids=lambda x: str(x)
)
def test_readers_know_formats_not_metrics(module: str, path: Path) -> None:
    forbidden = ("tracekit.analyzers", "tracekit.session", "tracekit.analysis", "tracekit.api")
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for name, _, line in _imports(module, path)
        if name.startswith(forbidden)
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "module, path", [(m, p) for m, p in MODULES if m.startswith("tracekit.commands.")], ids=lambda x: str(x)
)
def test_commands_hold_argument_parsing_and_output_only(module: str, path: Path) -> None:
    bad = []
    for name, _, line in _imports(module, path):
        top = name.split(".")[0]
        if top in COMMAND_FORBIDDEN_LIBRARIES:
            bad.append(
                f"{path.relative_to(ROOT)}:{line} imports {name} (analysis belongs behind tracekit.api)"
            )
        elif top == "tracekit" and name != "tracekit" and not name.startswith(COMMAND_ALLOWED):
            bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The rules can fail: a command importing an analyzer, and an analyzer importing a reader's module."""
    fake = tmp_path / "cmd.py"
    fake.write_text("def run():\n    from tracekit.analyzers.iterations import analyze_iterations\n")
    assert [n for n, _, _ in _imports("tracekit.commands.cmd", fake)] == ["tracekit.analyzers.iterations"]
    fake.write_text("from tracekit.readers import kineto_worker\n")
    found = [n for n, _, _ in _imports("tracekit.analyzers.x", fake)]
    assert "tracekit.readers.kineto_worker" in found


def test_resolving_an_input_loads_no_polars() -> None:
    """The command line resolves its input (and lets a reader begin: Kineto workers are forked before polars
    loads) before the analysis modules load: the API module, the options and the input resolution stay free
    of polars."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import tracekit.api, tracekit.inputs, tracekit.session, tracekit.commands.analyze\n"
        "from tracekit.api import Options\n"
        "tracekit.api.resolve_input('sample_traces/synthetic/table3_pytorch/pytorch_b1_s128.synthetic.sqlite')\n"
        "print('polars' in sys.modules, 'numpy' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "False"]


def test_a_many_trace_run_collects_its_results_without_polars() -> None:
    """The process that sends traces to a pool's workers and collects their compact results holds no polars
    until the pool is done (its memory counts beside the workers'): the many-trace command, the fleet runner,
    the cross-trace summary and its renderer load without it (a polars import in analyzers/ranks.py had added
    ~20 MB to the command during a --jobs 2 run: 1.89x one trace's peak instead of ~1.7x)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import tracekit.commands.analyze_many, tracekit.fleet.run, tracekit.analyzers.ranks\n"
        "import tracekit.renderers.ranks\n"
        "print('polars' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False"]
