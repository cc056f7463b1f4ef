"""Each alternative of ``communication.COMM_PATTERN`` pinned by a device-op name only it matches. mutmut
does not mutate module constants, so the round-11 mutation check dropped each alternative by hand and ran
the communication tests: dropping ``rccl``, ``custom_?all_?reduce`` or the ``one_shot`` of
``multimem_(?:all|one_shot|two_shot)`` failed no test. ``multimem_one_shot_reduce_kernel`` is PyTorch's
symmetric-memory one-shot reduce to a root (CUDASymmetricMemoryOps.cu: no "all_reduce" in its name); the
RCCL-only and custom-all-reduce names are SYNTHETIC (written by hand to hold only that word)."""

from __future__ import annotations

import re

import polars as pl
import pytest

from tracekit.analyzers import communication as C

#: (the alternative, a name only it matches)
ONLY = [
    ("rccl", "rcclAllReduceKernel_sum_f32"),
    (
        "multimem_(?:all|one_shot|two_shot)",
        "void c10d::symmetric_memory::multimem_one_shot_reduce_kernel<float, 16>(...)",
    ),
    ("custom_?all_?reduce", "void custom_allreduce_kernel<half, 8>(...)"),
]


def _alternatives() -> list[str]:
    """The top-level alternatives of COMM_PATTERN (the '|' outside parentheses)."""
    body, depth, parts, word = C.COMM_PATTERN.removeprefix("(?i)"), 0, [], ""
    for ch in body:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "|" and depth == 0:
            parts.append(word)
            word = ""
        else:
            word += ch
    return [*parts, word]


@pytest.mark.parametrize(("alternative", "name"), ONLY)
def test_each_alternative_has_a_name_only_it_matches(alternative: str, name: str) -> None:
    matching = [a for a in _alternatives() if re.search(a, name, re.IGNORECASE)]
    assert matching == [alternative]


@pytest.mark.parametrize(("alternative", "name"), ONLY)
def test_the_name_is_communication_time(alternative: str, name: str) -> None:
    # iteration 0, device 0: a GEMM over [0, 30) ns, the collective over [20, 50): 30 ns of communication,
    # 20 of it exposed (no computation over [30, 50))
    ops = pl.DataFrame(
        {
            "iteration": [0, 0],
            "device": [0, 0],
            "start": [0, 20],
            "end": [30, 50],
            "kind": ["kernel", "kernel"],
            "name": ["sm90_gemm", name],
        },
        schema_overrides={"device": pl.Int32},
    )
    assert C.has_collectives(ops)
    assert ops.select(C._communicates(ops.columns)).to_series().to_list() == [False, True]
    assert C.comm_per_iteration(ops).to_dicts() == [
        {"iteration": 0, "comm_ms": 30 / 1e6, "exposed_comm_ms": 20 / 1e6}
    ]
