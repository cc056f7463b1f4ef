"""What PyTorch writes on each NCCL kernel (``Collective name``, ``Process Group Name``, ``Process Group
Ranks``), carried from the Kineto reader through the compact result into the ranks' summary (fuzz round 9):
collectives matched per process group, point-to-point named by the operation. Every multi-rank trace here
is SYNTHETIC (tests/builders.py, tmp folders); the real traces (../shared/real_traces) are read where
present, never copied into the repo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders import TP_DP_GROUPS, compact_result, kineto_event, kineto_file, tp_dp_kineto
from tracekit.analyzers.ranks import by_group, collectives_only, summarize
from tracekit.fleet.run import analyze_many
from tracekit.model import collective_args_frame
from tracekit.readers import kineto, kineto_worker
from tracekit.session import AnalysisOptions

ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
SEND_RECV_213 = "ncclKernel_SendRecv_RING_SIMPLE_Sum_float(ncclWorkElem)"  # NCCL 2.13 named every kernel so


def _results(paths: list[str]) -> list[dict[str, Any]]:
    outcomes = analyze_many(paths, AnalysisOptions(), jobs=1)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return [o.result for o in outcomes]


def _comm_kernel(ts: str, op: str, group: str, ranks: str, name: str = ALL_REDUCE, **extra: Any) -> dict:
    args = {
        "device": 0,
        "stream": 13,
        "correlation": extra.pop("correlation", 1),
        "Collective name": op,
        "Process Group Name": group,
        "Process Group Ranks": ranks,
        **extra,
    }
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 13, "ts": ts, "dur": 5, "args": args}


# ---------------------------------------------------------------------------------------------------------
# The reader


def test_the_reader_keeps_the_args_of_communication_kernels_only(tmp_path: Path) -> None:
    events = [
        kineto_event("cuda_runtime", "cudaLaunchKernel", 99, 1, pid=7, tid=7, correlation=1),
        _comm_kernel("100.250", "allreduce", "3", "[0, 1, 2, 3]"),
        kineto_event("kernel", "gemm", 110, 5, pid=0, tid=7, device=0, stream=7, correlation=2),
        # a CPU op with the same args (record_param_comms): not a GPU op, not kept
        kineto_event("cpu_op", "record_param_comms", 98, 3, pid=7, tid=7, **{"Collective_name": "allreduce"}),
        _comm_kernel("120", "send", "3", "[0, 1, 2, 3]", correlation=3),
        _comm_kernel("130", "_allgather_base", "5", "not a list", correlation=4),
        # PyTorch cuts a list past 30 ranks ("[0, 1, ..., 29, ...]"): members not known, left out
        _comm_kernel("140", "allreduce", "6", "[" + ", ".join(map(str, range(30))) + ", ...]", correlation=5),
    ]
    trace = kineto.read(kineto_file(tmp_path, events, "comm.synthetic.json"))
    args = trace.meta["collective_args"]
    assert args["groups"] == {"3": [0, 1, 2, 3]}  # (group 5's ranks do not read as a list: left out)
    assert _args(args) == [
        (0, 13, 100_250, "allreduce", "3"),
        (0, 13, 120_000, "send", "3"),
        (0, 13, 130_000, "_allgather_base", "5"),
        (0, 13, 140_000, "allreduce", "6"),
    ]


def _args(args: dict[str, Any]) -> list[tuple[Any, ...]]:
    return collective_args_frame(args).rows()


def test_a_trace_without_them_has_none(tmp_path: Path) -> None:
    events = [kineto_event("kernel", ALL_REDUCE, 100, 5, pid=0, tid=13, device=0, stream=13, correlation=1)]
    assert "collective_args" not in kineto.read(kineto_file(tmp_path, events, "plain.synthetic.json")).meta


def test_a_lenient_chunk_gives_the_same(tmp_path: Path) -> None:
    # A float pid (not an int or a string) makes the decoder take the chunk the slow way, every event as text
    # (positions then count every event of the chunk, flows and metadata included).
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
        {"ph": "s", "cat": "ac2g", "id": 1, "pid": 7.0, "tid": 7, "ts": 99},
        kineto_event("cuda_runtime", "cudaLaunchKernel", 99, 1, pid=7.0, tid=7, correlation=1),
        _comm_kernel("100", "allreduce", "0", "[0, 1]"),
        _comm_kernel("110", "recv", "0", [0, 1], correlation=2),  # (ranks as a JSON array: read too)
    ]
    meta = kineto.read(kineto_file(tmp_path, events, "lenient.synthetic.json")).meta
    assert _args(meta["collective_args"]) == [
        (0, 13, 100_000, "allreduce", "0"),
        (0, 13, 110_000, "recv", "0"),
    ]
    assert meta["collective_args"]["groups"] == {"0": [0, 1]}


def _many_events(n: int) -> list[dict[str, Any]]:
    """``n`` kernels (and their launches), every 997th a labelled all-reduce: enough events for the decoder
    to merge several chunks into a batch, and for the labelled ones to fall in several chunks."""
    events = []
    for i in range(n):
        events.append(
            kineto_event("cuda_runtime", "cudaLaunchKernel", 10 * i, 1, pid=7, tid=7, correlation=i)
        )
        if i % 997 == 0:
            events.append(_comm_kernel(str(10 * i + 2), "allreduce", "0", "[0, 1]", correlation=i))
        else:
            events.append(
                kineto_event("kernel", "gemm", 10 * i + 2, 5, pid=0, tid=7, device=0, stream=7, correlation=i)
            )
    return events


@pytest.mark.parametrize("worker", ["0", "1"])
def test_positions_hold_across_merged_chunks_and_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker: str
) -> None:
    monkeypatch.setenv(kineto_worker.ENV, worker)
    path = kineto_file(tmp_path, _many_events(60_000), "many.synthetic.json")
    meta = kineto.read(path).meta
    expected = [(10 * i + 2) * 1000 for i in range(0, 60_000, 997)]
    frame = collective_args_frame(meta["collective_args"])
    assert frame["start"].to_list() == expected
    assert set(frame["stream"]) == {13}


# ---------------------------------------------------------------------------------------------------------
# The compact result and the summary


def test_real_ddp_trace_labels_every_collective() -> None:
    path = Path(__file__).parents[2] / "shared/real_traces/kineto/hta_a100_ddp_nccl_rank0.json.gz"
    if not path.exists():
        pytest.skip("real traces not present")
    (r,) = _results([str(path)])
    assert len(r["collective_ops"]) == 21
    assert r["collective_ops"][:3] == ["broadcast", "broadcast", "allreduce"]
    assert set(r["collective_groups"]) == {"0"}
    assert r["group_ranks"] == {"0": [0, 1]}


@pytest.fixture(scope="module")
def ranks_0_2(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, list[dict[str, Any]]]:
    """Ranks 0 and 2 of the TP+DP job (tests/builders.tp_dp_kineto: both groups on stream 13), with and
    without PyTorch's args on the kernels. They share only the data-parallel group {0, 2}."""
    return {
        args: _results(tp_dp_kineto(tmp_path_factory.mktemp(f"args{args}"), ranks=(0, 2), comm_args=args))
        for args in (False, True)
    }


def test_without_the_args_two_groups_on_one_stream_read_as_a_clock_off_by_a_wait(
    ranks_0_2: dict[bool, list[dict[str, Any]]],
) -> None:
    doc = summarize(ranks_0_2[False])
    # (the known limitation, pinned: the tensor-parallel all-reduces of {0, 1} and {2, 3} matched k-th to
    # k-th; truth [0, 0] and rank 2 the straggler at every data-parallel all-reduce)
    assert doc["clocks"]["offsets_ns"] == [0, 150_000]
    assert doc["straggler"]["straggler"] is None


def test_with_the_args_collectives_are_matched_in_the_group_both_hold(
    ranks_0_2: dict[bool, list[dict[str, Any]]],
) -> None:
    results = ranks_0_2[True]
    assert results[0]["collective_groups"][:3] == ["1", "1", "3"]
    assert results[1]["collective_groups"][:3] == ["2", "2", "3"]
    doc = summarize(results)
    assert doc["clocks"] == {
        "aligned": True,
        "method": "collective ends",
        "matched": 6,
        "offsets_ns": [0, 0],
        "residual_us": 0.0,
        "reference": "rank 0",
    }
    straggler = doc["straggler"]
    assert (straggler["straggler"], straggler["arrives_last"], straggler["collectives"]) == ("rank 2", 6, 6)
    assert straggler["median_wait_ms"] == pytest.approx(0.15, abs=1e-12)
    assert straggler["total_wait_ms"] == pytest.approx(0.9, abs=1e-12)
    assert doc["skew"]["max_start_skew_ms"] == 0.0
    assert (
        "the traces' collectives belong to several process groups: clocks and stragglers are matched on "
        "process group 3 (ranks 0, 2)'s collectives, which every trace holds, in their order"
    ) in doc["warnings"]


NO_COMMON = (
    "no process group's collectives are in every trace (rank 0: group 1 (ranks 0, 1), group 3 (ranks 0, 2); "
    "rank 1: group 1 (ranks 0, 1), group 4 (ranks 1, 3); rank 2: group 2 (ranks 2, 3), group 3 (ranks 0, 2); "
    "rank 3: group 2 (ranks 2, 3), group 4 (ranks 1, 3), by the kernels' Process Group Name): which "
    "collective matches which across ranks is not known"
)


def test_four_ranks_without_a_group_in_common_are_not_aligned(tmp_path: Path) -> None:
    doc = summarize(_results(tp_dp_kineto(tmp_path)))
    # (before: aligned at [0, 0, 150 µs, 2.650 ms] with residual 150 µs; truth [0, 0, 0, 2.5 ms])
    assert doc["clocks"] == {"aligned": False, "why": NO_COMMON, "offsets_ns": None, "matched": 0}
    assert "straggler" not in doc and "skew" not in doc


def test_a_default_group_in_common_aligns_all_four_to_the_truth(tmp_path: Path) -> None:
    # An all-to-all of the default group {0, 1, 2, 3} ends each step; NCCL names its kernel SendRecv, which
    # alone reads as point-to-point (left out: nothing to align on); the op PyTorch names keeps it.
    results = _results(tp_dp_kineto(tmp_path, all_to_all=True))
    assert results[0]["collective_ops"][3] == "all_to_all" and results[0]["collective_kinds"][3] == "sendrecv"
    doc = summarize(results)
    assert doc["clocks"]["offsets_ns"] == [0, 0, 0, 2_500_000]
    assert doc["clocks"]["residual_us"] == 0.0 and doc["clocks"]["matched"] == 6
    # every rank waits for rank 2 at the {0, 2} and {2, 3} all-reduces: at the all-to-all all arrive together
    assert doc["straggler"]["straggler"] is None


def test_nccl_2_13_kernel_names_with_the_args_are_collectives(tmp_path: Path) -> None:
    # NCCL 2.13 named every kernel SendRecv: by name alone nothing is left to align on; PyTorch's operation
    # on the kernel says all-reduce.
    plain = summarize(
        _results(tp_dp_kineto(tmp_path / "a", ranks=(0, 1), comm_args=False, kernel=SEND_RECV_213))
    )
    assert plain["clocks"]["aligned"] is False and "only point-to-point" in plain["clocks"]["why"]
    said = summarize(_results(tp_dp_kineto(tmp_path / "b", ranks=(0, 1), kernel=SEND_RECV_213)))
    assert said["clocks"]["aligned"] is True
    assert (said["clocks"]["offsets_ns"], said["clocks"]["matched"]) == ([0, 0], 12)


def _labelled(
    name: str, rank: int, ops: list[str], groups: list[str], kinds: list[str] | None = None
) -> dict:
    ends = [1_000_000 * (i + 1) for i in range(len(ops))]
    r = compact_result(name, rank, ends=ends, kinds=kinds or ["generic"] * len(ops))
    return {**r, "collective_ops": ops, "collective_groups": groups, "group_ranks": {"0": [0, 1]}}


def test_send_and_recv_are_named_by_the_operation() -> None:
    # RCCL's Generic kernels say no operation; PyTorch's args say send/recv: point-to-point, left out.
    r = _labelled("a", 0, ["allreduce", "send", "recv", "allreduce"], ["0"] * 4)
    kept = collectives_only(r)
    assert kept["point_to_point"] == 2
    assert kept["collective_ops"] == ["allreduce", "allreduce"]
    assert kept["collective_ends_ns"].tolist() == [1_000_000, 4_000_000]
    # an operation not known (a newer name) leaves the kernel's name to decide
    odd = _labelled("b", 0, ["coalesced"], ["0"], kinds=["sendrecv"])
    assert collectives_only(odd)["point_to_point"] == 1


def test_the_operations_pytorch_names_must_agree_too() -> None:
    a = _labelled("a", 0, ["allreduce", "broadcast"], ["0", "0"])
    b = _labelled("b", 1, ["allreduce", "_allgather_base"], ["0", "0"])
    doc = summarize([a, b])
    assert doc["clocks"]["aligned"] is False
    assert doc["clocks"]["why"].startswith(
        "the collectives differ: rank 1's collective 2 in launch order is _allgather_base, rank 0's is broadcast"
    )


def test_a_trace_without_labels_keeps_the_old_matching() -> None:
    a = _labelled("a", 0, ["allreduce", "allreduce"], ["0", "0"])
    b = {**compact_result("b", 1, ends=[1_000_000, 2_000_000]), "collective_ops": ["", ""]}
    b["collective_groups"] = ["", ""]
    out, why, note = by_group([a, b])
    assert (why, note) == (None, None) and out == [a, b]
    # groups not given one per collective (a result of another layout): not used either
    short = {**_labelled("b", 1, ["allreduce", "allreduce"], ["0", "0"]), "collective_groups": ["0"]}
    assert by_group([a, short])[1:] == (None, None)


def test_the_group_with_most_collectives_in_every_trace_is_taken() -> None:
    # groups 0 and 1 both hold both ranks (vLLM's world, TP and its own NCCL group); 1 has more in each
    groups = ["0", "1", "1", "0", "1"]
    a = {**_labelled("a", 0, ["allreduce"] * 5, groups), "group_ranks": {"0": [0, 1], "1": [0, 1]}}
    b = {**_labelled("b", 1, ["allreduce"] * 5, groups), "group_ranks": {"0": [0, 1], "1": [0, 1]}}
    out, why, note = by_group([a, b])
    assert why is None and [r["matched_group"] for r in out] == ["1", "1"]
    assert out[0]["collective_ends_ns"].tolist() == [2_000_000, 3_000_000, 5_000_000]
    assert note is not None and "process group 1 (ranks 0, 1)" in note


def test_a_group_whose_ranks_leave_out_a_trace_is_not_matched() -> None:
    # both traces say group 7, but its ranks are {0, 1}: rank 2's group 7 is another one (names reused
    # across jobs) -- not matched
    a = {**_labelled("a", 0, ["allreduce"], ["7"]), "group_ranks": {"7": [0, 1]}}
    b = {**_labelled("b", 2, ["allreduce"], ["7"]), "group_ranks": {"7": [2, 3]}}
    out, why, _ = by_group([a, b])
    assert why is not None and why.startswith("no process group's collectives are in every trace")


def test_collective_args_survive_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # meta goes through JSON in the fleet cache: the args are plain lists and a dict
    paths = tp_dp_kineto(tmp_path, ranks=(0, 2))
    meta = kineto.read(Path(paths[0])).meta["collective_args"]
    assert json.loads(json.dumps(meta)) == meta
    assert meta["groups"] == {"1": TP_DP_GROUPS["1"], "3": TP_DP_GROUPS["3"]}
    assert collective_args_frame(json.loads(json.dumps(meta))).height == 18
    # a value it does not read (a cache entry of another layout) is no args, not a crash
    assert collective_args_frame({"kernels": 2, "start": "1"}).is_empty()
    assert collective_args_frame("[]").is_empty()  # type: ignore[arg-type]


def test_bad_comm_args_are_no_traceback(tmp_path: Path) -> None:
    # args of odd types (numbers, objects, nulls) on a kernel: read as text or left out, never a crash
    events = [
        kineto_event("cuda_runtime", "cudaLaunchKernel", 99, 1, pid=7, tid=7, correlation=1),
        _comm_kernel("100", 5, {"a": 1}, None),
        _comm_kernel("110", None, "0", "[0, 1", correlation=2),
    ]
    meta = kineto.read(kineto_file(tmp_path, events, "odd.synthetic.json")).meta
    frame = collective_args_frame(meta["collective_args"])
    assert frame["op"].to_list() == ["5", None]
    assert frame["group"].to_list() == ['{"a": 1}', "0"]  # (JSON text as written)
    assert meta["collective_args"]["groups"] == {}


@pytest.mark.parametrize("seed", range(6))
def test_random_traces_keep_exactly_the_labelled_kernels(tmp_path: Path, seed: int) -> None:
    # Random mixes of event kinds, labelled kernels anywhere, some chunks decoded the slow way (a float pid),
    # a few kernels without a ts: the reader's args are exactly those of the labelled kernels read.
    import random

    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    truth = []
    for i in range(rng.randint(200, 3000)):
        t = 10 * i
        roll = rng.random()
        pid: Any = 7.0 if rng.random() < 0.01 else 7
        if roll < 0.3:
            events.append(kineto_event("cpu_op", "aten::mm", t, 3, pid=pid, tid=7, Collective_name="x"))
        elif roll < 0.5:
            events.append(
                kineto_event("cuda_runtime", "cudaLaunchKernel", t, 1, pid=pid, tid=7, correlation=i)
            )
        elif roll < 0.6:
            events.append({"ph": "f", "cat": "ac2g", "id": i, "pid": 0, "tid": 7, "ts": t, "bp": "e"})
        elif roll < 0.8:
            stream, group = rng.choice([(13, "0"), (14, "1")])
            op = rng.choice(["allreduce", "send", "_allgather_base"])
            kernel = _comm_kernel(str(t), op, group, "[0, 1]", correlation=i)
            kernel["tid"] = kernel["args"]["stream"] = stream
            if rng.random() < 0.05:
                del kernel["ts"]  # (skipped, with a warning: not in the args either)
            else:
                truth.append((0, stream, t * 1000, op, group))
            events.append(kernel)
        else:
            events.append(
                kineto_event("kernel", "gemm", t, 5, pid=0, tid=7, device=0, stream=7, correlation=i)
            )
    trace = kineto.read(kineto_file(tmp_path, events, "random.synthetic.json"))
    got = _args(trace.meta["collective_args"]) if truth else []
    assert sorted(got) == sorted(truth)
