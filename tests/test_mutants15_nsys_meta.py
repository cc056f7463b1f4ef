"""Mutation round 15 (helper mutation15): tests that kill surviving mutants of the nsys reader's round-14 GPU
naming (:mod:`tracekit.readers.nsys_meta`): the ``CUDA_VISIBLE_DEVICES`` of the launched process
(:func:`_visible_devices`, :func:`gpu_table`) and the unused GPU whose guessed CUDA id is a used one's
(:func:`export_meta`).

Every export is SYNTHETIC, hand-built with :class:`tests.nsys_builder.NsysBuilder` in pytest's temporary folder
and named ``*.synthetic.sqlite``; the expected ids and names are exact, from the rows written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nsys_builder import NsysBuilder
from tracekit.readers.nsys_meta import gpu_table
from tracekit.readers.nsys_sqlite import read
from tracekit.readers.sqlite_engine import open_database

US = 1_000
NAMES = ("NVIDIA A100-SXM4-80GB", "Tesla T4", "NVIDIA H100 80GB HBM3")
UUIDS = ("GPU-1111-aaaa", "GPU-2222-bbbb", "GPU-2233-cccc")


def _box(
    envs: list[tuple[str, object]], gpus: int = 3, cu: tuple[int | None, ...] = (0, 1, 2)
) -> NsysBuilder:
    """A box of ``gpus`` GPUs (nsys ids 0.., names :data:`NAMES`, uuids :data:`UUIDS`, cuDevice ``cu``) and the
    META_DATA_CAPTURE rows ``envs`` (name, value)."""
    b = NsysBuilder()
    for i in range(gpus):
        b.gpu(i, NAMES[i], cu_device=0)
        b.rows["TARGET_INFO_GPU"][i]["cuDevice"] = cu[i]
        b.rows["TARGET_INFO_GPU"][i]["uuid"] = UUIDS[i]
    for name, value in envs:
        b.add("META_DATA_CAPTURE", name=name, value=value)
    return b


def _table(tmp_path: Path, b: NsysBuilder) -> list[tuple[int, str, bool]]:
    path = b.write(tmp_path / "gpus.synthetic.sqlite")
    with open_database(path, "an Nsight Systems SQLite export") as export:
        return [(g["id"], g["name"], g["used"]) for g in gpu_table(export, {})]


def _visible(value: object) -> list[tuple[str, object]]:
    return [("PROCESS_0:ENVIRONMENT_VARIABLE", f"CUDA_VISIBLE_DEVICES={value}")]


A100, T4, H100 = NAMES
#: CUDA_VISIBLE_DEVICES=2,0: GPU 2 is CUDA device 0, GPU 0 device 1; GPU 1 unused (its guess: cuDevice 1)
MAPPED = [(1, A100, True), (1, T4, False), (0, H100, True)]
#: no mapping: every GPU its cuDevice, all used
AS_IS = [(0, A100, True), (1, T4, True), (2, H100, True)]


@pytest.mark.parametrize(
    "value",
    ["2,0", '"2,0"', '" 2 , 0 "', "GPU-2233,GPU-1111", "gpu-2233-CCCC,GPU-1111-aaaa", '"GPU-2233, 0"'],
)
def test_visible_devices_map_the_process_s_cuda_ids(tmp_path: Path, value: str) -> None:
    assert _table(tmp_path, _box(_visible(value))) == MAPPED


@pytest.mark.parametrize(
    "value",
    [
        "2,",  # an empty entry
        ",2",
        "",
        "2,2",  # one GPU twice
        "GPU-22,0",  # a prefix of two GPUs' uuids
        "GPU-9999",  # no GPU's
        "MIG-1234,0",  # a MIG instance
        "3",  # no GPU of that cuDevice
        "x1",
        "2,0X",  # a damaged entry (not stripped as if it were a quote)
    ],
)
def test_visible_devices_that_name_no_single_gpu_leave_the_ids_as_they_were(
    tmp_path: Path, value: str
) -> None:
    assert _table(tmp_path, _box(_visible(value))) == AS_IS


def test_two_launches_of_the_same_devices_are_one_mapping(tmp_path: Path) -> None:
    envs = [
        ("PROCESS_0:ENVIRONMENT_VARIABLE", "CUDA_VISIBLE_DEVICES=2,0"),
        ("PROCESS_1:ENVIRONMENT_VARIABLE", "CUDA_VISIBLE_DEVICES=2,0"),
        ("PROCESS_1:ENVIRONMENT_VARIABLE", "PATH=/usr/bin"),
    ]
    assert _table(tmp_path, _box(envs)) == MAPPED


def test_two_launches_of_different_devices_leave_the_ids_as_they_were(tmp_path: Path) -> None:
    envs = [
        ("PROCESS_0:ENVIRONMENT_VARIABLE", "CUDA_VISIBLE_DEVICES=2,0"),
        ("PROCESS_1:ENVIRONMENT_VARIABLE", "CUDA_VISIBLE_DEVICES=1"),
    ]
    assert _table(tmp_path, _box(envs)) == AS_IS


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PROCESS_0:SOMETHING_ELSE", "CUDA_VISIBLE_DEVICES=2,0"),  # not a launch environment row
        ("PROCESS_0:ENVIRONMENT_VARIABLE", "CUDA_VISIBLE_DEVICES_X=2,0"),  # another variable
        ("PROCESS_0:ENVIRONMENT_VARIABLE", "XCUDA_VISIBLE_DEVICES=2,0"),
    ],
)
def test_other_rows_are_not_the_launch_s_visible_devices(tmp_path: Path, name: str, value: str) -> None:
    assert _table(tmp_path, _box([(name, value)])) == AS_IS


def test_numbers_name_no_gpu_where_cudevices_are_not_distinct(tmp_path: Path) -> None:
    """cuDevice 0, 0, 2: an index cannot name one GPU, so the ids stay (the nsys ids, cuDevice not being
    distinct); a uuid still names one."""
    assert _table(tmp_path, _box(_visible("2,0"), cu=(0, 0, 2))) == [
        (0, A100, True),
        (1, T4, True),
        (2, H100, True),
    ]
    assert _table(tmp_path, _box(_visible("GPU-2233,GPU-1111"), cu=(0, 0, 2))) == MAPPED


def test_a_cuda_device_table_wins_over_the_launch_environment(tmp_path: Path) -> None:
    b = _box(_visible("2,0"))
    b.cuda_device(1, 0)
    assert _table(tmp_path, b) == [(0, A100, False), (0, T4, True), (2, H100, False)]


def test_two_gpus_are_mapped_too(tmp_path: Path) -> None:
    assert _table(tmp_path, _box(_visible("1"), gpus=2)) == [(0, A100, False), (0, T4, True)]


def test_an_unused_gpu_whose_guess_is_no_used_id_is_listed(tmp_path: Path) -> None:
    """CUDA_VISIBLE_DEVICES=2 on the 3-GPU box: GPU 2 is CUDA device 0 and runs the kernels; GPU 0's guess (0)
    is that id, so it is not listed; GPU 1's (1) is no used id, so it is, after it."""
    b = _box(_visible("2"))
    b.nvtx_range(100 * US, 140 * US, "iteration")
    b.runtime(101 * US, 105 * US, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(106 * US, 126 * US, "gemm", correlation=1, device=0)
    trace = read(b.write(tmp_path / "listed.synthetic.sqlite"))
    assert trace.meta["gpu"] == H100
    assert trace.meta["gpus"] == [{"id": 1, "name": T4}, {"id": 0, "name": H100}]


def test_a_lower_case_variable_is_not_cuda_visible_devices(tmp_path: Path) -> None:
    """Linux environment variables are case-sensitive and CUDA reads CUDA_VISIBLE_DEVICES only: a launch that
    set 'cuda_visible_devices=2,0' saw every GPU as its cuDevice. Read as the mapping, GPU 2 (the H100) became
    CUDA device 0 and the A100 device 1, so kernels on device 0 (the A100) are named 'NVIDIA H100 80GB HBM3'."""
    envs = [("PROCESS_0:ENVIRONMENT_VARIABLE", "cuda_visible_devices=2,0")]
    assert _table(tmp_path, _box(envs)) == AS_IS
