"""Shared test fixtures: where the real traces live (skipped when absent) and the sample traces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_TRACES = REPO / "sample_traces"
REAL_TRACES = Path(os.environ.get("TRACEKIT_REAL_TRACES", REPO.parent / "shared" / "real_traces"))


@pytest.fixture
def real_traces() -> Path:
    """../shared/real_traces beside the checkout; the test is skipped when it is absent."""
    if not REAL_TRACES.is_dir():
        pytest.skip("../shared/real_traces is absent")
    return REAL_TRACES


def real_trace(*parts: str) -> Path:
    """Path of one real trace; skips the calling test when it is absent."""
    path = REAL_TRACES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path
