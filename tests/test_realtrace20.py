"""Round 20's real-trace fidelity: range-choice lines, labels and warnings checked against the real traces of
../shared/real_traces (skipped when absent) and an independent computation; each defect reproduced on a
hand-built synthetic trace with exact expected values."""

from __future__ import annotations

import pytest

from tests.builders import make_trace
from tracekit.analyzers import ranges as R

from .conftest import real_trace

# ------------------------------------------------------------------ SGLang steps written in vLLM's format

SGLANG_OUTER = "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)"


def test_vllm_format_steps_around_sglang_steps_are_said_to_be_sglang_steps() -> None:
    """SGLang's scheduler opens each step in vLLM's detailed format around its own ``step[...]`` (the real
    TraceLens SGLang traces): the choice line said "vLLM serving-engine steps", while the steps' own
    ``step_engine`` says SGLang (round 19)."""
    trace = make_trace(
        ranges=[
            (0, 1000, SGLANG_OUTER),
            (100, 900, "step[DECODE bs=32]", 1),
            (2000, 3000, SGLANG_OUTER),
            (2100, 2900, "step[DECODE bs=32]", 1),
        ],
        api=[(10, 20, 1, "cudaLaunchKernel"), (2010, 2020, 2, "cudaLaunchKernel")],
        ops=[(30, 40, 1, 7), (2030, 2040, 2, 7)],
    )
    frame, name, how = R.choose_ranges(trace, None)
    assert frame["name"].to_list() == [SGLANG_OUTER, SGLANG_OUTER] and name.startswith("re:^execute_")
    assert how == (
        "SGLang serving-engine steps in vLLM's format (2 ranges of 1 names), each around its SGLang step "
        "range: 2 nested inside them ('step[DECODE bs=32]'); choose another with --range"
    )


def test_vllm_steps_of_which_only_some_hold_an_sglang_step_stay_vllm_steps() -> None:
    """One of two vLLM-format steps holds an SGLang ``step[...]``: not every step is SGLang's, so the line
    keeps naming the format's engine and the nested range as seen."""
    trace = make_trace(
        ranges=[(0, 1000, SGLANG_OUTER), (100, 900, "step[DECODE bs=32]", 1), (2000, 3000, SGLANG_OUTER)],
        api=[(10, 20, 1, "cudaLaunchKernel"), (2010, 2020, 2, "cudaLaunchKernel")],
        ops=[(30, 40, 1, 7), (2030, 2040, 2, 7)],
    )
    _, _, how = R.choose_ranges(trace, None)
    assert how == (
        "vLLM serving-engine steps (2 ranges of 1 names); also seen: 1 SGLang step range nested inside them "
        "('step[DECODE bs=32]'); choose another with --range"
    )


@pytest.mark.real_traces
@pytest.mark.parametrize(
    ("name", "inner"),
    [
        ("sglang_qwen3-8b_decode.json.gz", "step[DECODE bs=32]"),
        ("sglang_qwen3-8b_prefilldecode.json.gz", "step[EXTEND bs=15 toks=15360]"),
    ],
)
def test_real_sglang_traces_choice_line_says_sglang(name: str, inner: str) -> None:
    from tracekit.readers import read_trace

    _, _, how = R.choose_ranges(read_trace(real_trace("tracelens", name)), None)
    assert how.startswith("SGLang serving-engine steps in vLLM's format (1 ranges of 1 names)")
    assert f"1 nested inside them ({inner!r})" in how and "vLLM serving-engine" not in how
