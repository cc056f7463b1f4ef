"""Many-trace summaries when collectives come from several communicators (process groups, point-to-point
pairs), and the world size a Kineto trace says. The multi-rank traces here are SYNTHETIC, built in tmp
folders; the real traces (../shared/real_traces) are read where present, never copied into the repo."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.builders import EPOCH, compact_result
from tracekit.analyzers.ranks import several_communicators, summarize
from tracekit.fleet.run import analyze_many
from tracekit.session import AnalysisOptions
from tracekit.simulate.ranks import RankSimulation, write_ranks

ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GEMM = "sm90_xmma_gemm_f16f16_synthetic"
#: Each rank's true clock offset (ns): rank 3's clock is 2.5 ms ahead.
OFFSETS = [0, 0, 0, 2_500_000]
TP_STREAM, DP_STREAM, COMPUTE_STREAM = 13, 14, 7


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _tp_dp_traces(out: Path, dp_stream: int = DP_STREAM) -> list[str]:
    """Four SYNTHETIC Kineto rank traces of tensor + data parallelism: per step, compute, an all-reduce in
    the tensor-parallel groups {0, 1} and {2, 3} (stream 13, as ProcessGroupNCCL gives each group its own
    stream), compute, another, compute, an all-reduce in the data-parallel groups {0, 2} and {1, 3}
    (``dp_stream``). Rank 2's first compute of each step takes 450 µs, the others' 300 µs, so the {2, 3}
    all-reduces end 150 µs after the {0, 1} ones. Every all-reduce ends together within its group; rank 3's
    clock is 2.5 ms ahead (:data:`OFFSETS`)."""
    tp, dp = [[0, 1], [2, 3]], [[0, 2], [1, 3]]
    events: dict[int, list[tuple[str, int, int, int, int]]] = {
        r: [] for r in range(4)
    }  # name, stream, s, e, step
    steps: dict[int, list[tuple[int, int]]] = {r: [] for r in range(4)}
    t = EPOCH
    for step in range(6):
        ready = {r: t + 10_000 for r in range(4)}

        def compute(durations: list[int], step: int = step, ready: dict[int, int] = ready) -> None:
            for r in range(4):
                events[r].append((GEMM, COMPUTE_STREAM, ready[r], ready[r] + durations[r], step))
                ready[r] += durations[r]

        def all_reduce(
            groups: list[list[int]], took: int, stream: int, step: int = step, ready: dict[int, int] = ready
        ) -> None:
            for group in groups:
                end = max(ready[r] for r in group) + took
                for r in group:
                    events[r].append((ALL_REDUCE, stream, ready[r], end, step))
                    ready[r] = end

        compute([300_000, 300_000, 450_000, 300_000])
        all_reduce(tp, 50_000, TP_STREAM)
        compute([200_000] * 4)
        all_reduce(tp, 50_000, TP_STREAM)
        compute([100_000] * 4)
        all_reduce(dp, 80_000, dp_stream)
        end = max(ready.values()) + 20_000
        for r in range(4):
            steps[r].append((t, end))
        t = end + 50_000
    paths = []
    for rank in range(4):
        off, pid = OFFSETS[rank], 4000 + rank
        lines, corr = [], 1
        for step, (s0, s1) in enumerate(steps[rank]):
            lines.append(
                f'{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":{pid},"tid":{pid},'
                f'"ts":{_us(s0 + off)},"dur":{_us(s1 - s0)}}}'
            )
            kernels = sorted((k for k in events[rank] if k[4] == step), key=lambda k: k[2])
            for j, (name, stream, start, end, _) in enumerate(kernels):
                call = s0 + 1_000 + j * 200
                lines.append(
                    f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":{pid},"tid":{pid},'
                    f'"ts":{_us(call + off)},"dur":1.000,"args":{{"correlation":{corr}}}}}'
                )
                lines.append(
                    f'{{"ph":"X","cat":"kernel","name":"{name}","pid":{rank},"tid":{stream},'
                    f'"ts":{_us(start + off)},"dur":{_us(end - start)},"args":{{"device":{rank},'
                    f'"stream":{stream},"correlation":{corr}}}}}'
                )
                corr += 1
            sync = s0 + 1_000 + len(kernels) * 200 + 1_000
            lines.append(
                f'{{"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":{pid},"tid":{pid},'
                f'"ts":{_us(sync + off)},"dur":{_us(s1 - 500 - sync)},"args":{{"correlation":{corr}}}}}'
            )
            corr += 1
        header = {
            "schemaVersion": 1,
            "tracekit_synthetic": True,
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 4},
            "deviceProperties": [{"id": rank, "name": "Simulated GPU", "numSms": 132}],
            "traceName": f"SYNTHETIC tensor + data parallel rank {rank}",
        }
        path = out / f"rank{rank}.synthetic.json.gz"
        head = json.dumps(header)
        path.write_bytes(
            gzip.compress((head[:-1] + ', "traceEvents": [\n' + ",\n".join(lines) + "\n]}\n").encode())
        )
        paths.append(str(path))
    return paths


def _results(paths: list[str], jobs: int = 1) -> list[dict]:
    outcomes = analyze_many(paths, AnalysisOptions(), jobs=jobs)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return [o.result for o in outcomes]


SEVERAL = (
    "rank 0 runs collectives on 2 streams of device 0; rank 1, rank 2, rank 3 on several streams too: several "
    "communicators (process groups or point-to-point): which collective matches which across ranks is not known"
)


@pytest.fixture(scope="module")
def tp_dp(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return _tp_dp_traces(tmp_path_factory.mktemp("tp_dp"))


def test_several_communicators_leave_the_clocks_not_aligned(tp_dp: list[str]) -> None:
    # Matched k-th to k-th, rank 2's tensor-parallel all-reduces ({2, 3}) met rank 0's ({0, 1}), which end
    # 150 µs earlier: the clocks were "aligned" with offsets [0, 0, 0.150, 2.650] ms (truth [0, 0, 0, 2.5]),
    # residual 150 µs, under half the spacing.
    doc = summarize(_results(tp_dp))
    assert doc["clocks"] == {"aligned": False, "why": SEVERAL, "offsets_ns": None, "matched": 0}
    assert "straggler" not in doc and "skew" not in doc
    assert doc["slowest_by_step"] == {"steps": 6}  # clock-free, kept (every step's latency ties)
    assert (
        f"clocks not aligned ({SEVERAL}): straggler by arrival, start skew and ends-last are not computed; "
        "'slowest by step' compares durations only"
    ) in doc["warnings"]


def test_the_compact_result_counts_the_streams_of_collectives(tp_dp: list[str]) -> None:
    results = _results(tp_dp)
    assert [r["collective_streams"] for r in results] == [{0: 2}, {1: 2}, {2: 2}, {3: 2}]
    assert [r["world_size"] for r in results] == [4, 4, 4, 4]  # distributedInfo, no sidecar


def test_the_pool_gives_the_same_answer(tp_dp: list[str]) -> None:
    assert summarize(_results(tp_dp, jobs=2)) == summarize(_results(tp_dp, jobs=1))


def test_one_stream_per_device_is_still_aligned(tmp_path: Path) -> None:
    # One communicator (the simulated DDP job): one stream of collectives per rank, offsets as they were.
    sim = RankSimulation(ranks=3, steps=4, kernels=4, clock_offset_ns=[0, 400_000, -1_000_000])
    results = _results([str(p) for p in write_ranks(sim, tmp_path)])
    assert [r["collective_streams"] for r in results] == [{0: 1}, {1: 1}, {2: 1}]
    clocks = summarize(results)["clocks"]
    assert clocks["aligned"] and clocks["offsets_ns"] == [0, 400_000, -1_000_000]


def _streams(name: str, rank: int, streams: dict | None) -> dict:
    r = compact_result(name, rank, [EPOCH + 500_000, EPOCH + 1_500_000])
    if streams is not None:
        r["collective_streams"] = streams
    return r


def test_several_communicators_name_the_trace_and_device() -> None:
    one = _streams("a", 0, {0: 1})
    assert (
        several_communicators([one, _streams("b", 1, {1: 1, 2: 1})]) is None
    )  # two devices, one stream each
    assert several_communicators([one, _streams("b", 1, None)]) is None  # not known (an older compact result)
    assert several_communicators([one, _streams("b", 1, {1: 1, 5: 3})]) == (
        "rank 1 runs collectives on 3 streams of device 5: several communicators (process groups or "
        "point-to-point): which collective matches which across ranks is not known"
    )
    doc = summarize([one, _streams("b", 1, {None: 2})])
    assert doc["clocks"]["why"].startswith("rank 1 runs collectives on 2 streams of a device not named:")


def _drop_sidecars(paths: list[Path]) -> list[str]:
    for p in paths:
        p.with_name(p.name.replace(".json.gz", ".meta.json")).unlink()
    return [str(p) for p in paths]


def test_world_size_from_distributed_info_without_sidecars(tmp_path: Path) -> None:
    # The Kineto reader kept distributedInfo's rank only: without a sidecar no world size was known, so a
    # missing rank went unsaid and other world sizes were aligned as one job.
    sim = RankSimulation(ranks=4, steps=3, kernels=4)
    paths = _drop_sidecars(write_ranks(sim, tmp_path / "job"))
    doc = summarize(_results([paths[0], paths[1], paths[3]]))
    assert (
        "3 of the 4 ranks the traces say their job has are here (missing: rank 2): the straggler, the skew and "
        "the spread are among these ranks only"
    ) in doc["warnings"]
    other = tmp_path / "other" / "rank5.synthetic.json.gz"
    other.parent.mkdir()
    trace = json.loads(gzip.decompress(Path(paths[3]).read_bytes()))
    trace["distributedInfo"].update(rank=5, world_size=8)
    other.write_bytes(gzip.compress(json.dumps(trace).encode()))
    doc = summarize(_results([paths[0], paths[1], str(other)]))
    assert doc["clocks"]["why"] == (
        "the traces say different world sizes (4 in rank 0, rank 1; 8 in rank 5): they are not the ranks of one job"
    )


@pytest.mark.real_traces
def test_real_traces_streams_of_collectives(real_traces: Path, tmp_path: Path) -> None:
    # HTA's DDP trace (one process group, all-reduce and broadcast on stream 40) and its recsys trace
    # (all-to-all on streams 84, 285 and 363 of device 0: three communicators).
    ddp = real_traces / "kineto" / "hta_a100_ddp_nccl_rank0.json.gz"
    recsys = real_traces / "kineto" / "hta_a100sxm80_recsys_rank0.json.gz"
    ddp_result, recsys_result = _results([str(ddp), str(recsys)])
    assert ddp_result["collective_streams"] == {0: 1} and ddp_result["world_size"] == 2
    assert recsys_result["collective_streams"] == {0: 3} and recsys_result["world_size"] == 16
    # The DDP trace beside a copy of itself claiming rank 1 (tmp folder only): one communicator, aligned.
    copy = tmp_path / "rank1.json.gz"
    trace = json.loads(gzip.decompress(ddp.read_bytes()))
    trace["distributedInfo"]["rank"] = 1
    copy.write_bytes(gzip.compress(json.dumps(trace).encode()))
    (copy_result,) = _results([str(copy)])
    clocks = summarize([ddp_result, copy_result])["clocks"]
    assert clocks["aligned"] and clocks["offsets_ns"] == [0, 0]
    # The recsys trace beside itself as rank 1 (the same compact result, other rank and path): not aligned
    other = {**recsys_result, "rank": 1, "name": "rank1", "path": "/nowhere/rank1"}
    assert summarize([recsys_result, other])["clocks"]["why"] == (
        "rank 0 runs collectives on 3 streams of device 0; rank 1 on several streams too: several communicators "
        "(process groups or point-to-point): which collective matches which across ranks is not known"
    )
