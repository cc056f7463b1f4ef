"""Serving-step classification (tracekit.analyzers.steps) on hand-built names and traces (synthetic, not
measurements); names follow the engines' formats as found in their sources (tracekit.analyzers.ranges)."""

from __future__ import annotations

import polars as pl
import pytest

from tests.test_ranges import US, analyze_with, make_trace
from tracekit.analyzers import ranges as R
from tracekit.analyzers import steps as S

NAMES = [
    # vLLM V1, Worker.annotate_profile: context/generation (requests and tokens)
    ("execute_context_1(512)_generation_0(0)", "vLLM", 1, 0, "prefill"),
    ("execute_context_0(0)_generation_32(32)", "vLLM", 0, 32, "decode"),
    ("execute_context_2(700)_generation_30(30)", "vLLM", 2, 30, "mixed"),
    ("execute_context_0(0)_generation_0(0)", "vLLM", 0, 0, "idle"),
    # ... with detailed_trace_annotation
    ("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk4128sqsq32sqsk4128)", "vLLM", 0, 32, "decode"),
    ("execute_40_context_1(sq8sk8sqsq64sqsk64)_generation_32(sq32sk900sqsq32sqsk900)", "vLLM", 1, 32, "mixed"),
    # ... earlier V1: new/cached requests
    ("execute_new_2_cached_0", "vLLM", 2, 0, "prefill"),
    ("execute_new_0_cached_5", "vLLM", 0, 5, "decode"),
    ("execute_new_1_cached_5", "vLLM", 1, 5, "mixed"),
    # SGLang, build_step_span_name
    ("step[EXTEND bs=2 toks=300]", "SGLang", 2, 0, "prefill"),
    ("step[DECODE bs=32]", "SGLang", 0, 32, "decode"),
    ("step[TARGET_VERIFY bs=4]", "SGLang", 0, 4, "decode"),
    ("step[DRAFT_EXTEND bs=4]", "SGLang", 4, 0, "prefill"),
    ("step[MIXED bs=3]", "SGLang", None, None, "mixed"),
    ("step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]", "SGLang", 1, 1, "mixed"),
    ("step[MIXED bs=1 c=1 g=0 c_sq=3 c_sk=3 c_sqsq=9 c_sqsk=9 g_sq=0 g_sk=0 g_sqsq=0 g_sqsk=0]", "SGLang", 1, 0, "prefill"),
    ("step[DECODE bs=2 g_sq=2 g_sqsq=2 g_sqsk=30 g_sk=30]", "SGLang", 0, 2, "decode"),
    ("step[IDLE bs=0]", "SGLang", 0, 0, "idle"),
    ("step[DLLM_EXTEND bs=1]", "SGLang", None, None, None),
    # TensorRT-LLM, PyExecutor._forward_step
    ("[Executor] _forward_step 7: 0 ctx reqs, 16 gen reqs", "TensorRT-LLM", 0, 16, "decode"),
    ("[Executor] _forward_step 8: 2 ctx reqs, 14 gen reqs", "TensorRT-LLM", 2, 14, "mixed"),
    ("_forward_step: 3 ctx reqs, 0 gen reqs", "TensorRT-LLM", 3, 0, "prefill"),
    # not steps
    ("iteration", None, None, None, None),
    ("ProfilerStep#3", None, None, None, None),
    ("draft step[DECODE bs=32]", None, None, None, None),
    ("execute_model", None, None, None, None),
]  # fmt: skip


def test_classify_names_every_rule():
    got = S.classify_names(pl.Series([n[0] for n in NAMES]))
    rows = list(
        zip(
            got["name"].to_list(),
            got["step_engine"].to_list(),
            got["context_requests"].to_list(),
            got["generation_requests"].to_list(),
            got["step_class"].cast(pl.String).to_list(),
            strict=True,
        )
    )
    assert rows == NAMES


# vLLM's layout: profiler.step() (ProfilerStep#N) then the execute_... annotation inside it, one per step.
# Step i: ProfilerStep [s, s + length), annotation [s + 10, s + length - 10), a launch at s + 20, one kernel.
VLLM_STEPS = [
    # (name, start, length, kernel start, kernel end)   times in us
    ("execute_context_1(512)_generation_0(0)", 0, 1000, 100, 900),  # latency 1000, busy 800
    ("execute_context_0(0)_generation_1(1)", 1000, 500, 1200, 1300),  # 500, 100
    ("execute_context_0(0)_generation_1(1)", 1500, 500, 1600, 1800),  # 500, 200
    ("execute_context_1(64)_generation_1(1)", 2000, 1000, 2100, 2700),  # 1000, 600
]


def vllm_trace(profiler_steps: bool = True):
    ranges, api, ops = [], [], []
    for i, (name, s, length, ks, ke) in enumerate(VLLM_STEPS):
        if profiler_steps:
            ranges.append((s * US, (s + length) * US, f"ProfilerStep#{i + 3}", 0))
        ranges.append(((s + 10) * US, (s + length - 10) * US, name, 1 if profiler_steps else 0))
        api.append(((s + 20) * US, (s + 30) * US, i + 1, "cudaLaunchKernel"))
        ops.append((ks * US, ke * US, i + 1, 7))
    return make_trace(ranges=ranges, api=api, ops=ops)


def test_engine_steps_classified_by_their_own_names():
    trace = vllm_trace(profiler_steps=False)
    frame, _, how = R.choose_ranges(trace, None)
    assert how.startswith("vLLM serving-engine steps")
    classes = S.step_classes(frame)
    assert classes["step_class"].cast(pl.String).to_list() == ["prefill", "decode", "decode", "mixed"]
    assert classes["context_requests"].to_list() == [1, 0, 0, 1]
    assert classes["generation_requests"].to_list() == [0, 1, 1, 1]
    assert classes["step_engine"].to_list() == ["vLLM"] * 4


def test_profiler_steps_take_the_class_of_the_engine_step_inside():
    trace = vllm_trace()
    frame, name, _ = R.choose_ranges(trace, None)
    assert name == "ProfilerStep#*"
    assert S.step_classes(frame)["step_class"].to_list() == [None] * 4  # the names alone say nothing
    classes = S.step_classes(frame, trace)
    assert classes["step_class"].cast(pl.String).to_list() == ["prefill", "decode", "decode", "mixed"]
    assert classes["iteration"].to_list() == [0, 1, 2, 3]


def test_several_steps_in_one_iteration_make_it_mixed():
    # An 'iteration' range around an SGLang prefill step and a decode step; another around two decodes.
    trace = make_trace(
        ranges=[
            (0, 1000, "iteration"),
            (100, 400, "step[EXTEND bs=1 toks=50]", 1),
            (500, 900, "step[DECODE bs=1]", 1),
            (1000, 2000, "iteration"),
            (1100, 1400, "step[DECODE bs=2]", 1),
            (1500, 1900, "step[DECODE bs=3]", 1),
            (2000, 3000, "iteration"),
        ],
        ops=[(150, 300, None, 7), (1150, 1300, None, 7), (2100, 2200, None, 7)],
    )
    frame, name, _ = R.choose_ranges(trace, None)
    assert name == "iteration"
    classes = S.step_classes(frame, trace)
    assert classes["step_class"].cast(pl.String).to_list() == ["mixed", "decode", None]
    assert classes["context_requests"].to_list() == [1, 0, None]
    assert classes["generation_requests"].to_list() == [1, 5, None]


def test_per_class_framework_tax_end_to_end(monkeypatch):
    trace = vllm_trace()
    frame, _, _ = R.choose_ranges(trace, None)
    analysis = analyze_with(monkeypatch, trace)
    it = S.add_step_class(analysis.iterations, frame, trace)
    assert it["step_class"].cast(pl.String).to_list() == ["prefill", "decode", "decode", "mixed"]
    assert it["latency_ms"].to_list() == pytest.approx([1.0, 0.5, 0.5, 1.0])
    assert it["gpu_busy_ms"].to_list() == pytest.approx([0.8, 0.1, 0.2, 0.6])
    summary = S.class_summary(it)
    assert summary["step_class"].cast(pl.String).to_list() == ["prefill", "decode", "mixed"]
    assert summary["steps"].to_list() == [1, 2, 1]
    assert summary["latency_ms"].to_list() == pytest.approx([1.0, 0.5, 1.0])
    assert summary["gpu_busy_ms"].to_list() == pytest.approx([0.8, 0.15, 0.6])
    assert summary["framework_overhead_ms"].to_list() == pytest.approx([0.2, 0.35, 0.4])
    assert summary["gpu_utilization"].to_list() == pytest.approx([0.8, 0.3, 0.6])
    assert summary["p50_latency_ms"].to_list() == pytest.approx([1.0, 0.5, 1.0])
    assert summary["overhead_share"].to_list() == pytest.approx([0.2, 0.7, 0.4])
    assert summary["total_ms"].to_list() == pytest.approx([1.0, 1.0, 1.0])


def test_skipped_iterations_keep_their_class(monkeypatch):
    trace = vllm_trace()
    frame, _, _ = R.choose_ranges(trace, None)
    it = S.add_step_class(analyze_with(monkeypatch, trace, skip=2).iterations, frame, trace)
    assert it["index"].to_list() == [2, 3]
    assert it["step_class"].cast(pl.String).to_list() == ["decode", "mixed"]


def test_unclassified_iterations_are_summarized_last(monkeypatch):
    trace = make_trace(
        ranges=[(0, 1000, "iteration"), (100, 900, "step[DECODE bs=4]", 1), (1000, 2000, "iteration")],
        ops=[(200, 400, None, 7), (1200, 1300, None, 7)],
    )
    frame, _, _ = R.choose_ranges(trace, None)
    it = S.add_step_class(analyze_with(monkeypatch, trace).iterations, frame, trace)
    rows = S.class_summary_json(it)
    assert [r["step_class"] for r in rows] == ["decode", "unclassified"]
    assert [r["steps"] for r in rows] == [1, 1]
    assert rows[0]["gpu_busy_ms"] == pytest.approx(0.0002)
    assert rows[1]["gpu_busy_ms"] == pytest.approx(0.0001)


def test_synthetic_windows_are_unclassified():
    trace = make_trace(ops=[(0, 100 * US, None, 7), (5000 * US, 6000 * US, None, 7)])
    frame, _, _ = R.choose_ranges(trace, None, split_idle_ms=1.0)
    classes = S.step_classes(frame, trace)
    assert classes.height == 2 and classes["step_class"].null_count() == 2
