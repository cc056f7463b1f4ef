"""The Nsight Compute join, fuzz 8: what it could still show wrongly, or withhold where the data allows a figure.

- demangling: ``ncu --print-kernel-base mangled`` names are demangled by the C++ runtime (``cxxfilt``), with
  tracekit's own parser as the fallback (no cxxfilt, no libstdc++, or a name the runtime refuses: real CUTLASS
  kernels are such);
- launch order: ncu numbers kernels by launch; on two streams the start order differs, and the join paired
  each ncu kernel with the wrong timeline kernel;
- a partial profile (``--launch-count`` cut it inside an iteration): its kernel-time average was shown as the
  iteration's;
- launch dimensions (grid, block) are compared where both sides have them, as names are;
- a shifted profile is realigned only where one offset, and one alone, makes every name match.

Hand-built (synthetic) traces and CSVs, exact values; real names read from the committed H200 nsys export and,
when present, from ../shared/real_traces (skipped without it).
"""

from __future__ import annotations

import dataclasses
import gzip
import shutil
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tests.builders import make_trace
from tests.test_table import SM_ACTIVE_PCT, WARPS_ACTIVE_PCT, ncu_trace, timeline
from tracekit.analyzers import kernel_metrics as km
from tracekit.analyzers.iterations import analyze_iterations
from tracekit.analyzers.kernel_metrics import LAUNCH_METRICS, analyze_kernel_metrics, base_name
from tracekit.model import Trace
from tracekit.readers import read_trace

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces" / "h200_bert_fp16"
NSYS = SAMPLES / "nsys-pytorch" / "pytorch_b1_s128.nsys.sqlite.gz"
REAL_NCU = Path(__file__).resolve().parent.parent.parent / "shared" / "real_traces" / "ncu"


@pytest.fixture(params=["cxxfilt", "fallback"])
def demangler(request, monkeypatch):
    """Each test run twice: with the C++ runtime's demangler, and with tracekit's own parser alone (what a
    machine without cxxfilt or libstdc++ gets)."""
    if request.param == "cxxfilt":
        pytest.importorskip("cxxfilt")
        monkeypatch.setattr(km, "_DEMANGLER", None)
    else:
        monkeypatch.setattr(km, "_DEMANGLER", False)
    return request.param


# ------------------------------------------------------------------------------------------- demangling

#: a real CUTLASS kernel name (A100 ncu report, cutlass_a100_3kernels.ncu-rep, its first kernel) that
#: libstdc++ 12's __cxa_demangle and c++filt refuse; only the fallback reads it
CUTLASS = (
    "_ZN7cutlass6KernelINS_4gemm6kernel4GemmINS1_11threadblock13MmaMultistageINS1_9GemmShapeILi128ELi96ELi64EEENS_9"
    "transform11threadblock28PredicatedTileAccessIteratorINS_11MatrixShapeILi128ELi64EEEaNS_6layout22ColumnMajor"
    "InterleavedILi32EEELi1ENS8_29PitchLinearWarpRakedThreadMapINS_16PitchLinearShapeILi4096ELi2EEELi128ENSH_ILi32E"
    "Li1EEELi16EEENS_5ArrayIaLi16ELb0EEELb0ENSD_9NoPermuteEEENS9_25RegularTileAccessIteratorISC_aNSD_37RowMajorTen"
    "sorOpMultiplicandCrosswiseILi8ELi32EEELi0ENS8_29TransposePitchLinearThreadMapISK_NSH_ILi2ELi16EEEEELi16EEELNS_4"
    "arch14CacheOperation4KindE1ENSA_INSB_ILi64ELi96EEEaNSD_19RowMajorInterleavedILi32EEELi0ENSG_INSH_ILi3072ELi2EE"
    "ELi128ESJ_Li16EEESM_Lb0ESN_EENSP_ISZ_aNSD_40ColumnMajorTensorOpMultiplicandCrosswiseILi8ELi32EEELi1ENSS_IS13_ST"
    "_EELi16EEELSY_1EiNSD_8RowMajorENS4_9MmaPolicyINS1_4warp11MmaTensorOpINS6_ILi32ELi96ELi64EEEaSR_aS16_iSF_NS1B_17"
    "MmaTensorOpPolicyINSW_3MmaINS6_ILi16ELi8ELi32EEELi32EaS19_aNSD_11ColumnMajorEiS19_NSW_21OpMultiplyAddSaturateEE"
    "ENSB_ILi1ELi1EEEEELi1ELb1EbEENSB_ILi0ELi0EEES1N_Li1EEELi3ELNS1_23SharedMemoryClearOptionE0EbEENS_8epilogue11thr"
    "eadblock19InterleavedEpilogueIS7_S1M_Li1ENS1S_33InterleavedPredicatedTileIteratorINS1S_30InterleavedOutputTileT"
    "hreadMapINSH_ILi4ELi1EEENSH_ILi4ELi3EEELi128ELi8ELi8EEEaLi32EEENS1R_4warp24FragmentIteratorTensorOpIS1D_S1G_iNS"
    "L_IiLi4ELb1EEESF_EENS1R_6thread21LinearCombinationReluIaLi8EifLNS24_9ScaleType4KindE5ELNS_15FloatRoundStyleE2EE"
    "ELi32EEENS4_30GemmIdentityThreadblockSwizzleILi1EEELb0EEEEEvNT_6ParamsE"
)

#: (mangled, bare name): names nvcc 13.0 writes (host stubs keep the internal-linkage "L" inside a nested name,
#: which the fallback parser had read as the end of the name: "inner"), an ABI tag, CUTLASS
HAND_MANGLED = [
    (
        "_ZN2ns5innerL5applyILi4E17__nv_dl_wrapper_tI11__nv_dl_tagIPFvvEXadL_Z4hostvEELj1EEJEEEEvT0_Pf",
        "apply",
    ),
    ("_ZN2ns5innerL10withnestedIfEEvNS0_1S1WIT_EEPS4_", "withnested"),
    ("_ZN36_GLOBAL__N__a9e95d7b_4_k_cu_005ea7baL6anon_tIdEEvPT_", "anon_t"),
    ("_ZN2ns5inner5applyILi4EZ4hostvEUlfE_EEvT0_Pf", "apply"),
    ("_ZN3tag6taggedB5cxx11EPi", "tagged"),
    ("_Z8variadicIJifPfEEvDpT_", "variadic"),
    ("_Z3litILb1ELln3EEvPi", "lit"),
    (CUTLASS, "Kernel"),
]


@pytest.mark.parametrize(("mangled", "bare"), HAND_MANGLED)
def test_mangled_names_reduce_alike_with_either_demangler(mangled: str, bare: str, demangler: str) -> None:
    assert base_name(mangled) == bare


def test_the_c_runtime_refuses_the_cutlass_name_and_the_fallback_reads_it() -> None:
    pytest.importorskip("cxxfilt")
    assert km._demangled(CUTLASS) is None
    assert km._demangled("_ZN3tag6taggedB5cxx11EPi") == "tag::tagged[abi:cxx11](int*)"
    assert base_name("tag::tagged[abi:cxx11](int*)") == "tagged"


def test_a_demangler_that_fails_to_load_leaves_the_fallback(monkeypatch) -> None:
    class Broken:
        @staticmethod
        def demangle(name: str) -> str:
            raise OSError("libstdc++.so.6: cannot open shared object file")

    monkeypatch.setattr(km, "_DEMANGLER", Broken)
    assert base_name("_ZN2at6native13reduce_kernelILi512ELi1EEEvv") == "reduce_kernel"


def _nsys_pairs(tmp_path: Path) -> list[tuple[str, str]]:
    db = tmp_path / "pytorch_b1_s128.nsys.sqlite"
    with gzip.open(NSYS, "rb") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with sqlite3.connect(db) as con:
        return con.execute(
            "SELECT DISTINCT m.value, d.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds m ON m.id = k.mangledName JOIN StringIds d ON d.id = k.demangledName"
        ).fetchall()


def test_the_real_h200_kernels_mangled_reduce_to_their_demangled_bare_names(
    tmp_path: Path, demangler
) -> None:
    """The 15 kernels of the committed H200 BERT nsys export (the configuration of the committed ncu sample),
    mangled as the driver knows them and demangled by nsys: the same bare name either way."""
    pairs = _nsys_pairs(tmp_path)
    assert len(pairs) == 15 and sum(m.startswith("_Z") for m, _ in pairs) == 10  # cuBLAS/cuDNN: extern "C"
    for mangled, demangled in pairs:
        assert base_name(mangled) == base_name(demangled), mangled


@pytest.mark.skipif(not REAL_NCU.is_dir(), reason="../shared/real_traces absent")
def test_the_real_ncu_reports_mangled_names_reduce_to_their_demangled_ones(demangler) -> None:
    ncu_report = pytest.importorskip("ncu_report")
    seen = 0
    for path in sorted(REAL_NCU.glob("*.ncu-rep")):
        context = ncu_report.load_report(str(path))
        for r in range(context.num_ranges()):
            rng = context.range_by_idx(r)
            for a in range(rng.num_actions()):
                action = rng.action_by_idx(a)
                mangled = action.name(ncu_report.IAction.NameBase_MANGLED)
                demangled = action.name(ncu_report.IAction.NameBase_DEMANGLED)
                assert base_name(mangled) == base_name(demangled), mangled
                seen += 1
    assert seen == 8


# ---------------------------------------------------------------------------------------------- launch order


def _two_streams(api: bool = True, correlation: bool = True) -> Trace:
    """Two iterations of 1000 ns. In each, A is launched first (onto stream 7, behind other work: it starts
    late, 300 ns long) and B second (stream 8, idle: starts first, 100 ns long)."""
    calls = [(10, 20, 1, "cudaLaunchKernel"), (30, 40, 2, "cudaLaunchKernel")]
    calls += [(1010, 1020, 3, "cudaLaunchKernel"), (1030, 1040, 4, "cudaLaunchKernel")]
    ops = [
        (500, 800, 1, 7, "A(float*)"),
        (100, 200, 2, 8, "void ns::B<int>(int*)"),
        (1500, 1800, 3, 7, "A(float*)"),
        (1100, 1200, 4, 8, "void ns::B<int>(int*)"),
    ]
    if not correlation:
        ops = [(s, e, None, st, n) for s, e, _, st, n in ops]
    return make_trace(
        ranges=[(0, 1000, "iteration"), (1000, 2000, "iteration")],
        api=calls if api else [],
        ops=ops,
        op_fields=("start", "end", "correlation", "stream", "name"),
    )


#: ncu's profile of one iteration: by launch, A then B
NCU_AB = [
    ("A(float*)", "iteration", 290, {SM_ACTIVE_PCT: 10.0, WARPS_ACTIVE_PCT: 1.0}),
    ("void ns::B<int>(int*)", "iteration", 95, {SM_ACTIVE_PCT: 40.0, WARPS_ACTIVE_PCT: 4.0}),
]


@pytest.mark.parametrize("api", [True, False], ids=["by launch call", "by correlation id"])
def test_two_streams_join_in_launch_order_not_start_order(api: bool) -> None:
    """Before: positions by start put B first, so ncu's A (first launched) met the timeline's B: every name
    differed and no value was given. By launch: A 300 ns × 10 % + B 100 ns × 40 % = 7 % of each 1000 ns
    iteration, 17.5 % of the kernel time."""
    tl = _two_streams(api=api)
    result = analyze_kernel_metrics(ncu_trace(NCU_AB), tl, analyze_iterations(tl))
    assert result.warnings == []
    first = result.kernels.filter(pl.col("iteration") == 0).sort("position")
    assert first.select("timeline_name", "timeline_ns", "sms_active").rows() == [
        ("A(float*)", 300, 10.0),
        ("void ns::B<int>(int*)", 100, 40.0),
    ]
    assert result.iterations["sms_active"].to_list() == pytest.approx([7.0, 7.0])
    assert result.value("sms_active", wall_time=False) == pytest.approx(17.5)
    assert result.value("warp_occupancy") == pytest.approx(0.7)


def test_without_launch_calls_or_ids_the_start_order_is_all_there_is() -> None:
    """No launching call and no correlation id: positions by start, B first. ncu's A B matches every name at
    offset 1 alone, but holds no whole iteration from there (B A would be a swap as much as a shift), so it is
    not realigned: every name differs at offset 0 and no value is given, never the swapped ones."""
    tl = _two_streams(api=False, correlation=False)
    result = analyze_kernel_metrics(ncu_trace(NCU_AB), tl, analyze_iterations(tl))
    first = result.kernels.filter(pl.col("iteration") == 0).sort("position")
    assert first["timeline_name"].to_list() == ["void ns::B<int>(int*)", "A(float*)"]
    assert result.value("sms_active") is None and result.value("sms_active", wall_time=False) is None
    assert result.warnings[0] == (
        "the Nsight Compute kernel names match the timeline's only from position 1 on, but the profile holds no "
        "whole iteration from there (a reordered profile could match so too): it is not realigned"
    )
    assert any("so none of its values is used" in w for w in result.warnings)


# ----------------------------------------------------------------------------------------- partial profile

ABCD = ["void ns::A<float>(float*)", "B(int*)", "C(int*)", "D(int*)"]


def _abcd_timeline(durations=(100, 200, 300, 400)) -> Trace:
    """Two iterations of 2000 ns; kernels A B C D of ``durations`` ns, back to back from 100 ns in."""
    kernels = []
    for it in range(2):
        t = it * 2000 + 100
        for name, d in zip(ABCD, durations, strict=True):
            kernels.append((t, t + d, name))
            t += d
    return timeline(kernels=kernels, ranges=((0, 2000), (2000, 4000)))


def _ncu(order: list[int]) -> Trace:
    return ncu_trace(
        [
            (ABCD[p], "iteration", 100, {SM_ACTIVE_PCT: 10.0 * (p + 1), WARPS_ACTIVE_PCT: p + 1.0})
            for p in order
        ]
    )


def test_a_whole_profile_gives_both_figures() -> None:
    tl = _abcd_timeline()
    result = analyze_kernel_metrics(_ncu([0, 1, 2, 3]), tl, analyze_iterations(tl))
    assert result.warnings == []
    # (100*10 + 200*20 + 300*30 + 400*40) / 2000 = 15 %; / 1000 ns of kernel time = 30 %
    assert result.value("sms_active") == pytest.approx(15.0)
    assert result.value("sms_active", wall_time=False) == pytest.approx(30.0)


def test_a_profile_cut_inside_the_iteration_gives_no_kernel_time_average() -> None:
    """--launch-count 3: A, B and C only. Before: SMs active 'kernel-time' 23.3 % (A B C's own mix) was shown
    as the iteration's, where D, the longest, reads 40 %: the whole iteration's is 30 %."""
    tl = _abcd_timeline()
    result = analyze_kernel_metrics(_ncu([0, 1, 2]), tl, analyze_iterations(tl))
    assert result.value("sms_active") is None and result.value("warp_occupancy") is None
    assert result.value("sms_active", wall_time=False) is None
    assert result.value("warp_occupancy", wall_time=False) is None
    entry = result.summary["sms_active"]
    assert entry["kernel_time_profiled"] == pytest.approx(1400 / 60)  # (100*10 + 200*20 + 300*30) / 600
    assert entry["kernels"] == 0
    assert result.warnings == [
        "Nsight Compute profiled no analyzed iteration wholly (3 of the 4 kernels of iteration 0: a profile cut "
        "short, --launch-count?): no wall-time figure and no kernel-time average is given, the kernels profiled "
        "not being the iteration's mix (their own average is kept as kernel_time_profiled)"
    ]


def test_varying_counts_average_over_the_wholly_profiled_iterations_only() -> None:
    """Iteration 0: A B C (600 ns), iteration 1: A B C D; ncu profiled A B C, then A B of iteration 1 (cut
    short). Before: the kernel-time average took iteration 1's A and B too."""
    kernels = [(100, 200, ABCD[0]), (200, 400, ABCD[1]), (400, 700, ABCD[2])]
    kernels += [(2100, 2200, ABCD[0]), (2200, 2400, ABCD[1]), (2400, 2700, ABCD[2]), (2700, 3100, ABCD[3])]
    tl = timeline(kernels=kernels, ranges=((0, 2000), (2000, 4000)))
    ncu = ncu_trace(
        [
            (ABCD[p], "iteration", 100, {SM_ACTIVE_PCT: v, WARPS_ACTIVE_PCT: 1.0})
            for p, v in [(0, 10.0), (1, 20.0), (2, 30.0), (0, 50.0), (1, 60.0)]
        ]
    )
    result = analyze_kernel_metrics(ncu, tl, analyze_iterations(tl))
    assert result.iterations["sms_active"].to_list() == pytest.approx([7.0, None])  # 14000 / 2000
    assert result.value("sms_active", wall_time=False) == pytest.approx(14000 / 600)
    assert result.summary["sms_active"]["kernels"] == 3
    assert "kernel_time_profiled" not in result.summary["sms_active"]
    assert (
        len(result.warnings) == 1
        and "the kernel-time averages cover the wholly matched ones" in (result.warnings[0])
    )


# -------------------------------------------------------------------------------------- launch dimensions


def _launch_rows(dims: list[tuple[int, int, int, int, int, int]]) -> pl.DataFrame:
    """kernel_metrics rows of the six launch metrics, kernel i -> dims[i]."""
    return pl.DataFrame(
        [
            {
                "kernel": i,
                "name": None,
                "range": None,
                "duration_ns": None,
                "metric": m,
                "unit": "",
                "value": v,
            }
            for i, d in enumerate(dims)
            for m, v in zip(LAUNCH_METRICS, d, strict=True)
        ],
        schema={
            "kernel": pl.Int64,
            "name": pl.String,
            "range": pl.String,
            "duration_ns": pl.Int64,
            "metric": pl.String,
            "unit": pl.String,
            "value": pl.Float64,
        },
    )


def _with_launch(trace: Trace, dims: list[tuple[int, int, int, int, int, int]]) -> Trace:
    rows = _launch_rows(dims)
    if not trace.kernel_metrics.is_empty():
        rows = pl.concat([trace.kernel_metrics, rows.cast(dict(trace.kernel_metrics.schema))])
    return dataclasses.replace(trace, kernel_metrics=rows)


GRIDS = [(1, 1, 1, 128, 1, 1), (64, 1, 1, 256, 1, 1), (8, 12, 1, 32, 16, 1), (128, 1, 1, 96, 1, 1)]


def test_launch_dimensions_that_agree_change_nothing() -> None:
    tl = _with_launch(_abcd_timeline(), GRIDS * 2)  # the timeline's 8 kernels, in start order
    result = analyze_kernel_metrics(_with_launch(_ncu([0, 1, 2, 3]), GRIDS), tl, analyze_iterations(tl))
    assert result.warnings == []
    assert result.kernels["launch_match"].to_list() == [True] * 8
    assert result.kernels["launch"][2] == "grid (8, 12, 1) block (32, 16, 1)"
    assert result.value("sms_active") == pytest.approx(15.0)


def test_a_kernel_launched_otherwise_keeps_no_value() -> None:
    """Same names, but ncu's C ran a (16, 12, 1) grid where the timeline's ran (8, 12, 1): another launch of
    C (another shape) was profiled. Its value is not used: no wall-time figure, and the kernel-time average
    leaves C out: (100*10 + 200*20 + 400*40) / 700 = 30 %."""
    tl = _with_launch(_abcd_timeline(), GRIDS * 2)
    other = [*GRIDS[:2], (16, 12, 1, 32, 16, 1), GRIDS[3]]
    result = analyze_kernel_metrics(_with_launch(_ncu([0, 1, 2, 3]), other), tl, analyze_iterations(tl))
    assert result.value("sms_active") is None
    assert result.value("sms_active", wall_time=False) == pytest.approx(21000 / 700)
    assert result.warnings == [
        "2 of 8 matched kernels differ in launch dimensions (first: iteration 0 position 2: Nsight Compute grid "
        "(16, 12, 1) block (32, 16, 1) vs timeline grid (8, 12, 1) block (32, 16, 1)): the join by order may be "
        "wrong",
        "the Nsight Compute values of the 2 kernels whose launch dimensions differ are not used (they are "
        "another kernel's): 2 of 2 iterations get no wall-time value, and the kernel-time averages leave those "
        "kernels out",
    ]


def test_most_launches_differing_withhold_the_whole_profile() -> None:
    """Another batch size's profile with the same kernel names: every grid differs. Before: its values were
    joined (names alone matched) and shown."""
    tl = _with_launch(_abcd_timeline(), GRIDS * 2)
    bigger = [(g[0] * 8, *g[1:]) for g in GRIDS]
    result = analyze_kernel_metrics(_with_launch(_ncu([0, 1, 2, 3]), bigger), tl, analyze_iterations(tl))
    assert result.value("sms_active") is None and result.value("sms_active", wall_time=False) is None
    assert any("the launch dimensions of 8 of 8 matched kernels differ" in w for w in result.warnings)


def test_launch_dimensions_on_one_side_only_are_not_compared() -> None:
    tl = _abcd_timeline()  # no launch rows: what tracekit's timeline readers give today
    result = analyze_kernel_metrics(_with_launch(_ncu([0, 1, 2, 3]), GRIDS), tl, analyze_iterations(tl))
    assert result.warnings == [] and result.kernels["launch_match"].null_count() == 8
    assert result.value("sms_active") == pytest.approx(15.0)


IDS = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size"'


def test_the_csv_reader_reads_launch_dimensions_from_block_and_grid_size(tmp_path: Path) -> None:
    """A CSV collected with --metrics (no launch__* metric): the dimensions come from the Block/Grid Size
    columns, thousands separators included; a cell that does not read gives none."""
    text = "\n".join(
        [
            f'{IDS},"gpu__time_duration.sum"',
            '"","","","","","","","","","usecond"',
            '"0","1","app","h","k(int*)","1","7","(256, 1, 1)","(1,024, 2, 1)","3.0"',
            '"1","1","app","h","k(int*)","1","7","(256, 1, 1)","(1,024,2,1)","3.0"',
        ]
    )
    path = tmp_path / "synthetic_launch.ncu.csv"
    path.write_text(text + "\n")
    trace = read_trace(path)
    assert km.launch_dims(trace.kernel_metrics).rows() == [(0, "grid (1024, 2, 1) block (256, 1, 1)")]


def test_launch_metrics_collected_by_ncu_are_not_read_twice(tmp_path: Path) -> None:
    text = "\n".join(
        [
            f'{IDS},"gpu__time_duration.sum","launch__grid_dim_x"',
            '"","","","","","","","","","usecond",""',
            '"0","1","app","h","k(int*)","1","7","(256, 1, 1)","(4, 2, 1)","3.0","4"',
        ]
    )
    path = tmp_path / "synthetic_launch_metric.ncu.csv"
    path.write_text(text + "\n")
    rows = read_trace(path).kernel_metrics.filter(pl.col("metric").str.starts_with("launch__"))
    assert rows.height == 6 and rows.filter(pl.col("metric") == "launch__grid_dim_x")["value"].to_list() == [
        4.0
    ]


# -------------------------------------------------------------------------------------------- realignment


def test_a_shifted_profile_is_realigned_at_its_one_matching_offset() -> None:
    """ncu --launch-skip 2: C D A B C D A B. Every name matches at offset 2 and only there: joined from there,
    the whole profile's figures (15 % and 30 %)."""
    tl = _abcd_timeline()
    result = analyze_kernel_metrics(_ncu([2, 3, 0, 1, 2, 3, 0, 1]), tl, analyze_iterations(tl))
    assert result.value("sms_active") == pytest.approx(15.0)
    assert result.value("sms_active", wall_time=False) == pytest.approx(30.0)
    assert result.warnings == [
        "the Nsight Compute profile starts at position 2 of the iteration's 4 kernels, not at its first "
        "(--launch-skip, or a profile cut elsewhere): all 8 of its kernel names match the timeline there and "
        "at no other offset, so it is joined from there"
    ]


def test_a_shifted_profile_that_matches_at_two_offsets_stays_withheld() -> None:
    """The iteration repeats itself (A B A B: two layers), the profile starts at B: offsets 1 and 3 both match
    every name, and A's value at offset 1 is not A's at offset 3. Not realigned: no value."""
    names = [ABCD[0], ABCD[1], ABCD[0], ABCD[1]]
    kernels = [
        (it * 2000 + 100 + 200 * p, it * 2000 + 200 + 200 * p, names[p]) for it in range(2) for p in range(4)
    ]
    tl = timeline(kernels=kernels, ranges=((0, 2000), (2000, 4000)))
    ncu = ncu_trace(
        [
            (names[(p + 1) % 4], "iteration", 100, {SM_ACTIVE_PCT: 10.0 * (p + 1), WARPS_ACTIVE_PCT: 1.0})
            for p in range(4)
        ]
    )
    result = analyze_kernel_metrics(ncu, tl, analyze_iterations(tl))
    assert result.value("sms_active") is None and result.value("sms_active", wall_time=False) is None
    assert result.warnings[0] == (
        "the Nsight Compute kernel names do not all match the timeline's from its start, and match at 2 other "
        "offsets (1, 3): the profile cannot be realigned unambiguously, so it is not"
    )
    assert any("so none of its values is used" in w for w in result.warnings)


def test_a_profile_with_one_wrong_name_is_not_realigned() -> None:
    """C D A X: no offset matches every name (X is in no iteration): not realigned, and at offset 0 most names
    differ: no value."""
    tl = _abcd_timeline()
    ncu = _ncu([2, 3, 0, 1])
    ncu = dataclasses.replace(
        ncu,
        kernel_metrics=ncu.kernel_metrics.with_columns(
            pl.when(pl.col("kernel") == 3).then(pl.lit("X(int*)")).otherwise(pl.col("name")).alias("name")
        ),
    )
    result = analyze_kernel_metrics(ncu, tl, analyze_iterations(tl))
    assert result.value("sms_active") is None and result.value("sms_active", wall_time=False) is None
    assert not any("starts at position" in w for w in result.warnings)


def test_varying_counts_realign_in_the_kernel_sequence() -> None:
    """Iteration 0: A B C, iteration 1: A B C D; ncu skipped the first kernel: B C A B C D. Offset 1 is the
    only one at which every name matches. Iteration 0 is not wholly profiled (its A is not): no figure for it,
    and the kernel-time average is iteration 1's."""
    kernels = [(100, 200, ABCD[0]), (200, 400, ABCD[1]), (400, 700, ABCD[2])]
    kernels += [(2100, 2200, ABCD[0]), (2200, 2400, ABCD[1]), (2400, 2700, ABCD[2]), (2700, 3100, ABCD[3])]
    tl = timeline(kernels=kernels, ranges=((0, 2000), (2000, 4000)))
    result = analyze_kernel_metrics(_ncu([1, 2, 0, 1, 2, 3]), tl, analyze_iterations(tl))
    assert result.iterations["sms_active"].to_list() == pytest.approx([None, 15.0])
    assert result.value("sms_active", wall_time=False) == pytest.approx(30.0)
    assert result.warnings[0].startswith(
        "the Nsight Compute profile starts at kernel 1 of the analyzed iterations' 7, not at its first"
    )


def test_too_repetitive_a_timeline_is_not_realigned(monkeypatch) -> None:
    """More candidate offsets than MAX_OFFSETS (here 1): not searched, said so, and the shifted profile stays
    withheld."""
    monkeypatch.setattr(km, "MAX_OFFSETS", 1)
    names = [ABCD[0], ABCD[1], ABCD[0], ABCD[1]]
    kernels = [
        (it * 2000 + 100 + 200 * p, it * 2000 + 200 + 200 * p, names[p]) for it in range(2) for p in range(4)
    ]
    tl = timeline(kernels=kernels, ranges=((0, 2000), (2000, 4000)))
    ncu = ncu_trace([(names[(p + 1) % 4], "iteration", 100, {SM_ACTIVE_PCT: 10.0}) for p in range(4)])
    result = analyze_kernel_metrics(ncu, tl, analyze_iterations(tl))
    assert result.value("sms_active") is None and result.value("sms_active", wall_time=False) is None
    assert "recurs there more than 1 times" in result.warnings[0]


# ------------------------------------------------------------------------------- the real H200 configuration

KINETO = SAMPLES / "pytorch" / "pytorch_b1_s128.torch.json.gz"
NCU_CSV = SAMPLES / "pytorch-ncu" / "pytorch_b1_s128.ncu.csv.gz"


def _kineto_launches() -> list[tuple[int, int, int, int, int, int]]:
    """The grid and block of each kernel of the real Kineto trace, in start order (as the ops frame holds
    them): torch.profiler writes them as the kernel events' ``grid`` and ``block`` args, which tracekit's
    Kineto reader does not keep."""
    import json

    events = json.load(gzip.open(KINETO))["traceEvents"]
    kernels = sorted(
        (e for e in events if e.get("cat") == "kernel"), key=lambda e: (float(e["ts"]), float(e["dur"]))
    )
    return [(*e["args"]["grid"], *e["args"]["block"]) for e in kernels]


def test_the_real_profile_agrees_with_its_timeline_in_every_launch() -> None:
    """The committed H200 ncu profile against the Kineto trace of the same configuration, the trace's launch
    dimensions added: all 4,040 joined kernels agree (names and grids), and the figures are the same."""
    tl = read_trace(KINETO)
    dims = _kineto_launches()
    assert len(dims) == tl.ops.filter(pl.col("kind") == "kernel").height == 4040
    with_dims = _with_launch(tl, dims)
    analysis = analyze_iterations(with_dims)
    result = analyze_kernel_metrics(read_trace(NCU_CSV), with_dims, analysis)
    assert result.warnings == []
    assert result.kernels["launch_match"].to_list() == [True] * 4040
    assert result.value("sms_active") == pytest.approx(3.0936, abs=1e-3)
    assert result.value("warp_occupancy") == pytest.approx(0.9756, abs=1e-3)


def test_the_real_profile_cut_short_gives_no_kernel_time_average(tmp_path: Path) -> None:
    """The committed H200 profile's first 150 kernels (of 202 per iteration: what --launch-count 150 records),
    copied into tmp_path: before, 41.88 % SMs active and 13.15 % warp occupancy were shown as kernel-time
    averages (the whole profile's: 41.63 and 13.13), a count warning alone said the profile was short."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(gzip.open(NCU_CSV, "rt").read())))
    head, units, body = rows[0], rows[1], rows[2:]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([head, units, *body[:150]])
    path = tmp_path / "synthetic_count150.ncu.csv"
    path.write_text(out.getvalue())
    tl = read_trace(KINETO)
    result = analyze_kernel_metrics(read_trace(path), tl, analyze_iterations(tl))
    for column in ("sms_active", "warp_occupancy"):
        assert result.value(column) is None and result.value(column, wall_time=False) is None
    assert result.summary["sms_active"]["kernel_time_profiled"] == pytest.approx(41.844, abs=1e-3)
    assert result.warnings == [
        "Nsight Compute profiled no analyzed iteration wholly (150 of the 202 kernels of iteration 0: a profile "
        "cut short, --launch-count?): no wall-time figure and no kernel-time average is given, the kernels "
        "profiled not being the iteration's mix (their own average is kept as kernel_time_profiled)"
    ]


def test_a_shift_without_a_whole_iteration_in_the_profile_is_not_realigned() -> None:
    """C D A: every name matches at offset 2 alone, but no whole iteration A B C D lies in the profile from
    there: not realigned (and it would be partial anyway)."""
    tl = _abcd_timeline()
    result = analyze_kernel_metrics(_ncu([2, 3, 0]), tl, analyze_iterations(tl))
    assert result.value("sms_active") is None and result.value("sms_active", wall_time=False) is None
    assert "only from position 2 on" in result.warnings[0]


def test_in_varying_counts_a_shift_needs_a_whole_iteration_too() -> None:
    """Iteration 0: A B C, iteration 1: A B C D; ncu: B C A B C (kernel 1 on): iteration 1's D is not in it,
    so no iteration lies wholly in the profile: not realigned."""
    kernels = [(100, 200, ABCD[0]), (200, 400, ABCD[1]), (400, 700, ABCD[2])]
    kernels += [(2100, 2200, ABCD[0]), (2200, 2400, ABCD[1]), (2400, 2700, ABCD[2]), (2700, 3100, ABCD[3])]
    tl = timeline(kernels=kernels, ranges=((0, 2000), (2000, 4000)))
    result = analyze_kernel_metrics(_ncu([1, 2, 0, 1, 2]), tl, analyze_iterations(tl))
    assert "only from kernel 1 on" in result.warnings[0]
    assert result.value("sms_active", wall_time=False) is None
