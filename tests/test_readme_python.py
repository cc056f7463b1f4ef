"""The README's Python snippet runs as written, from the repository folder, on the committed samples."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO


def test_readme_python_snippet_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / "README.md").read_text()
    block = re.search(r"## Python API\n.*?```python\n(.*?)```", text, re.S)
    assert block, "the README has a Python block"
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {}
    exec(compile(block.group(1), "README.md (Python API)", "exec"), namespace)
    a, r, m = namespace["a"], namespace["r"], namespace["m"]
    assert a.verdict == "compute" and a.iterations.height == 20  # type: ignore[attr-defined]
    assert r.configs.height == 8 and r.recommendations  # type: ignore[attr-defined]
    assert m.median == pytest.approx(a.iterations["latency_ms"].median(), rel=0.05)  # type: ignore[attr-defined]
    assert m.ci_low <= m.median <= m.ci_high  # type: ignore[attr-defined]
