"""Round 20's real-trace fidelity: range-choice lines, labels and warnings checked against the real traces of
../shared/real_traces (skipped when absent) and an independent computation; each defect reproduced on a
hand-built synthetic trace with exact expected values."""

from __future__ import annotations

from pathlib import Path

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


# ------------------------------------------------------------------ Nsight Compute's NVTX ranges

NVTX = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
#: ``ncu --csv --page raw --nvtx`` of three kernels, two inside push/pop range 'Non-fused-GEMM', one inside
#: 'Fused-GEMM' (the real CUTLASS report's shape; values hand-made)
NCU_NVTX_CSV = f"""\
"ID","Process ID","Process Name","Host Name","{NVTX}","Kernel Name","Context","Stream","Block Size","Grid Size",\
"Device","CC","device__attribute_display_name","gpu__time_duration.sum"
"","","","","","","","","","","","","","nsecond"
"0","1","gemm","h","1  ""<default domain>:Non-fused-GEMM:none:none:none:none:none:none"" ","gemm_a","1","7",\
"(128, 1, 1)","(64, 1, 1)","0","8.0","NVIDIA A100 80GB PCIe","1000"
"1","1","gemm","h","1  ""<default domain>:Non-fused-GEMM:none:none:none:none:none:none"" ","gemm_b","1","7",\
"(128, 1, 1)","(64, 1, 1)","0","8.0","NVIDIA A100 80GB PCIe","2000"
"2","1","gemm","h","1  ""<default domain>:Fused-GEMM:none:none:none:none:none:none"" ","gemm_c","1","7",\
"(128, 1, 1)","(64, 1, 1)","0","8.0","NVIDIA A100 80GB PCIe","3000"
"""


def _ncu_csv(tmp_path: Path) -> Path:
    path = tmp_path / "synthetic_nvtx.ncu.csv"
    path.write_text(NCU_NVTX_CSV)
    return path


def test_ncu_reader_names_the_nvtx_ranges_its_kernels_ran_in(tmp_path: Path) -> None:
    from tracekit.readers import read_trace

    trace = read_trace(_ncu_csv(tmp_path))
    assert trace.ops["end"].to_list() == [1000, 3000, 6000]
    assert trace.meta["nvtx_ranges"] == ["Non-fused-GEMM", "Fused-GEMM"]


def test_ncu_window_line_does_not_say_the_report_holds_no_ranges(tmp_path: Path) -> None:
    """The real CUTLASS report (ncu --nvtx, push/pop ranges around its GEMMs) read "no ranges in the trace"."""
    from tracekit.readers import read_trace

    choice = R.select_ranges(read_trace(_ncu_csv(tmp_path)), None)
    assert choice.how == (
        "no timed ranges in the trace (Nsight Compute records NVTX ranges only as the push/pop ranges open at "
        "each kernel's launch, with no start or end: 'Non-fused-GEMM', 'Fused-GEMM'): one window over the "
        "whole trace (device 0, first op launch to last op end)"
    )


def test_ncu_range_by_name_says_why_no_range_is_an_iteration(tmp_path: Path) -> None:
    """``--range Non-fused-GEMM`` on that report said "the trace holds no NVTX ranges or profiler annotations"."""
    from tracekit.errors import NoActivityError
    from tracekit.readers import read_trace

    with pytest.raises(NoActivityError) as err:
        R.select_ranges(read_trace(_ncu_csv(tmp_path)), "Non-fused-GEMM")
    assert (
        "no range named 'Non-fused-GEMM': Nsight Compute records NVTX ranges only as the push/pop ranges "
        "open at each kernel's launch, with no start or end ('Non-fused-GEMM', 'Fused-GEMM'), so none is an "
        "iteration; leave out --range to analyze the report as one window" in str(err.value)
    )


@pytest.mark.real_traces
def test_real_cutlass_report_names_its_nvtx_ranges() -> None:
    from tracekit.readers import read_trace

    trace = read_trace(real_trace("ncu", "cutlass_a100_3kernels.ncu-rep"))
    assert trace.meta["nvtx_ranges"] == ["Non-fused-GEMM", "Fused-GEMM"]
    assert R.select_ranges(trace, None).how.startswith("no timed ranges in the trace (Nsight Compute")


# ------------------------------------------------------------------------------ others' files: strict xfails


def test_backward_work_of_the_autograd_thread_is_no_gpu_annotation_disagreement() -> None:
    """SYNTHETIC (the real MI250 ROCm trace's shape: 6 of its 7 'outside' ops are backward kernels launched by
    thread pt_autograd_0, 1 is the optimizer's, under a nested annotation). Step [0, 1000) on thread 1
    launches a forward kernel (corr 1, at 10; runs [150, 300)); the autograd thread 2, which holds no range,
    launches a backward kernel (corr 2, at 500; runs [600, 700)). Kineto's GPU-side copy of the step spans
    the forward kernel only, [150, 300). Both kernels are the step's by launch time (tracekit: 2), and the
    GPU-side copy holds every op it could hold: nothing disagrees."""
    from tracekit.analyzers.iterations import analyze_iterations

    trace = make_trace(
        ranges=[
            (0, 1000, "ProfilerStep#1", 0, None, 1, 1),
            (150, 300, "ProfilerStep#1", 0, "gpu", None, None),
        ],
        api=[(10, 20, 1, "cudaLaunchKernel", 1, 1), (500, 510, 2, "cudaLaunchKernel", 1, 2)],
        ops=[(150, 300, 1, 7, "kernel", 0, 1), (600, 700, 2, 7, "kernel", 0, 1)],
        range_fields=("start", "end", "name", "depth", "domain", "pid", "thread"),
        api_fields=("start", "end", "correlation", "name", "pid", "thread"),
        op_fields=("start", "end", "correlation", "stream", "kind", "device", "pid"),
    )
    result = analyze_iterations(trace)
    assert result.iterations["kernels"].to_list() == [2]
    assert not [w for w in result.warnings if "GPU-side annotations" in w]
