"""The installed namespace: only ``tracekit`` lands in site-packages, with every sub-package listed."""

from __future__ import annotations

import tomllib

from tests.conftest import REPO


def test_every_package_folder_is_installed_under_tracekit() -> None:
    """pyproject lists its packages by hand (package-dir maps analyzers/ and collectors/ under tracekit):
    a new sub-package missing from the list would be left out of a regular install."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config["package-dir"]
    found = set()
    for name, folder in mapping.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((name, *rel)))
    assert found == listed
    assert {p.split(".")[0] for p in listed} == {"tracekit"}
