"""The cross-trace summary (:mod:`tracekit.analyzers.ranks`) against multi-rank forms seen in real jobs (round
13). Compact results are hand-built in memory (tests/builders.compact_result: synthetic, never written to
disk); the real forms they stand for were checked by transforming the real HTA A100 DDP rank-0 trace
(``hta_a100_ddp_nccl_rank0.json.gz``) into other ranks (notes/ranks13.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.builders import EPOCH, compact_result
from tracekit.analyzers.ranks import summarize
from tracekit.renderers.ranks import summary_lines

MS = 1_000_000


def _numbered(name: str, rank: int, steps: dict[int, float]) -> dict[str, Any]:
    """A trace of ``ProfilerStep#N`` steps (number: latency ms), one after the other from :data:`EPOCH`,
    without collectives (the clocks are then not aligned: only durations are compared)."""
    windows, t = [], EPOCH
    for latency in steps.values():
        windows.append((t, t + round(latency * MS)))
        t += round(latency * MS) + MS
    r = compact_result(name, rank, steps=windows)
    r["iterations"]["step"] = np.array(list(steps), dtype=np.int64)
    r["world_size"] = 2
    return r


def test_the_spread_compares_the_steps_numbered_alike_in_every_trace() -> None:
    """Rank 0's capture began two steps earlier (#3 and #4, slow 40 ms warm-up steps, then #5 and #6 of 10 and
    11 ms); rank 1 holds #5 and #6 (11.5 ms each). Over every step rank 0's median is 25.5 ms: the spread had
    named it the slowest, 2.217x. On the steps both hold rank 0's median is 10.5 ms: rank 1 is the slowest,
    1.095x, as the steps' comparison (slowest by step: rank 1 at both) says."""
    a = _numbered("a", 0, {3: 40.0, 4: 40.0, 5: 10.0, 6: 11.0})
    b = _numbered("b", 1, {5: 11.5, 6: 11.5})
    doc = summarize([a, b])
    assert [row["median_latency_ms"] for row in doc["rows"]] == [25.5, 11.5]  # (the rows: whole traces)
    spread = doc["spread"]
    assert (spread["slowest"], spread["fastest"]) == ("rank 1", "rank 0")
    assert (spread["slowest_median_latency_ms"], spread["fastest_median_latency_ms"]) == (11.5, 10.5)
    assert spread["ratio"] == 11.5 / 10.5
    assert spread["steps"] == 2 and spread["on_steps"] == "#5-#6"
    assert doc["slowest_by_step"] == {"steps": 2, "slowest": "rank 1", "slowest_steps": 2}
    assert (
        "spread on the 2 steps numbered alike in every trace (#5-#6): slowest rank 1 (11.500 ms median), "
        "fastest rank 0 (10.500 ms), 1.095x"
    ) in summary_lines(doc)


def test_no_step_number_in_common_no_spread() -> None:
    """Rank 0 holds #1-#2 (slow first steps), rank 1 #7-#8: no step is in both, so their latencies are of
    other steps; the spread had named rank 0 the slowest, 2.000x. Now it is withheld, with the why."""
    a = _numbered("a", 0, {1: 20.0, 2: 20.0})
    b = _numbered("b", 1, {7: 10.0, 8: 10.0})
    doc = summarize([a, b])
    assert doc["spread"] == {
        "why": "no step number is common to every trace (rank 0 #1-#2; rank 1 #7-#8): they recorded other steps"
    }
    assert summary_lines(doc)[0].startswith("spread: not computed (no step number is common")


def test_the_spread_of_traces_numbered_alike_is_over_every_step() -> None:
    """Both hold #5 and #6: the spread is the rows' medians, as before, and says no steps."""
    a = _numbered("a", 0, {5: 10.0, 6: 12.0})
    b = _numbered("b", 1, {5: 10.0, 6: 14.0})
    spread = summarize([a, b])["spread"]
    assert spread == {
        "slowest": "rank 1",
        "slowest_median_latency_ms": 12.0,
        "fastest": "rank 0",
        "fastest_median_latency_ms": 11.0,
        "ratio": 12.0 / 11.0,
    }


def test_a_scheduler_address_dask_cannot_read_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--scheduler bogus`` (no port) or an http:// address (the dashboard's, not the scheduler's): Dask's
    Client raises ValueError, which had ended the run as 'internal error: ValueError: missing port number in
    address' (exit 1). Now one line naming the address and what Dask said, exit 2, before any trace is read."""
    pytest.importorskip("distributed")
    from tracekit.cli import main

    for address, said in (
        ("bogus", "missing port number in address 'bogus'"),
        ("http://localhost:8787", "unknown address scheme 'http'"),
    ):
        rc = main(["analyze", "a.json", "b.json", "--scheduler", address, "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert "internal error" not in err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"tracekit: --scheduler {address}: not a Dask scheduler address ("
        )
        assert said in lines[0]
    # tls:// without Dask's TLS configuration: TypeError in Dask, had been 'internal error: TypeError'
    rc = main(["analyze", "a.json", "b.json", "--scheduler", "tls://127.0.0.1:1", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "internal error" not in err
    assert err.startswith(
        "tracekit: --scheduler tls://127.0.0.1:1: Dask cannot open a connection of this kind here (TLS expects"
    )


def test_a_rank_simulation_whose_straggler_does_not_arrive_last_is_refused() -> None:
    """The truth file names ``straggler`` as the rank that arrives last at every collective. Parameters under
    which it does not (a straggler_factor under 1: it computes faster; another rank's host delay longer than
    the straggler's lead) had written that truth anyway: straggler_factor 0.8 on 2 ranks gave a truth of
    'rank 1 arrives last at 4 of 4, waits -0.037 ms' where rank 0 arrives last. Now refused, naming why."""
    from tracekit.simulate.ranks import RankSimulation, truth

    with pytest.raises(ValueError, match=r"^rank 1 is not the last to arrive at step 0 \(rank 0 is\)"):
        RankSimulation(ranks=2, steps=4, kernels=4, straggler_factor=0.8)
    # 4 kernels of 50 µs, 1.25x on rank 1: it arrives 50 µs after the others; rank 2's host starts 60 µs late
    with pytest.raises(ValueError, match=r"^rank 1 is not the last to arrive at step 0 \(rank 2 is\)"):
        RankSimulation(ranks=3, steps=2, kernels=4, host_delay_ns=[0, 0, 60_000])
    with pytest.raises(ValueError, match=r"^rank 1 is not the last to arrive at step 0 \(ranks 1, 2 are\)"):
        RankSimulation(ranks=3, steps=2, kernels=4, host_delay_ns=[0, 0, 50_000])
    # a lead of 10 µs over rank 2's host delay: still the straggler, waited for 10 µs more than the median
    sim = RankSimulation(ranks=3, steps=2, kernels=4, host_delay_ns=[0, 0, 40_000])
    assert truth(sim)["straggler_wait_ms_per_step"] == [0.03, 0.03]


def test_simulate_ranks_does_not_ignore_set_without_a_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracekit.cli import main

    out = tmp_path / "ranks"
    rc = main(
        ["simulate", "--ranks", "2", "--iters", "2", "--set", "straggler_factor=2", "-o", str(out), "-q"]
    )
    capsys.readouterr()
    if rc == 0:  # applied, or refused (exit 2, one line): either is fine; ignored is not
        said = json.loads((out / "ranks.synthetic.truth.json").read_text())["parameters"]
        assert said["straggler_factor"] == 2.0
    else:
        assert rc == 2


def test_an_alignment_on_one_collective_says_nothing_checked_it() -> None:
    """A serving trace pair of one NCCL collective each (the B200 vLLM trace holds one all-gather beside 73
    symmetric-memory all-reduces, which are not matched): the offset is that collective's end alone, and the
    residual is 0 by construction. The clocks line had said 'largest residual 0.000 µs', an agreement nobody
    measured; now it says the one end gives the offset, unchecked."""
    a = compact_result("a", 0, ends=[EPOCH + 500_000], starts=[EPOCH + 400_000])
    b = compact_result("b", 1, ends=[EPOCH + 504_000], starts=[EPOCH + 402_000])
    doc = summarize([a, b])
    clocks = doc["clocks"]
    assert (clocks["aligned"], clocks["matched"], clocks["offsets_ns"], clocks["residual_us"]) == (
        True,
        1,
        [0, 4_000],
        0.0,
    )
    assert clocks["why"] == (
        "one collective matched: each offset is its end alone, which no other collective checks"
    )
    lines = summary_lines(doc)
    assert (
        "clocks: aligned on 1 collective end (one collective matched: each offset is its end alone, which no "
        "other collective checks); offsets vs rank 0: rank 0 +0.000 ms, rank 1 +0.004 ms"
    ) in lines
    assert not any("residual 0.000" in line for line in lines if line.startswith("clocks"))
    # (arrivals once aligned: rank 0 at 400 µs, rank 1 at 398 µs: rank 0 arrives last, by 2 µs)
    assert doc["straggler"]["straggler"] == "rank 0" and doc["straggler"]["median_wait_ms"] == 0.002


#: NCCL 2.13's name for every kernel (NVIDIA/nccl#739): the real HTA recsys trace's all-reduces,
#: reduce-scatters, all-gathers and all-to-alls all run under it
SENDRECV = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"


def _x(cat: str, name: str, pid: int, tid: int, ts_ns: int, dur_ns: int, **args: Any) -> dict[str, Any]:
    event = {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts_ns / 1e3,
        "dur": dur_ns / 1e3,
    }
    return event | ({"args": args} if args else {})


def _sendrecv_named_rank(
    path: Path, rank: int, clock_ns: int, arrive_ns: int, annotation: str | None = "nccl:all_reduce"
) -> str:
    """A SYNTHETIC Kineto trace of rank ``rank`` of 2 (its clock ``clock_ns`` ahead): 3 ``ProfilerStep#N`` of
    1 ms; in each, a compute kernel (stream 7, 100-400 µs) and one all-reduce whose kernel carries NCCL 2.13's
    ``SendRecv`` name and no ``Collective name`` (stream 13), launched at 300 µs inside PyTorch's
    ``annotation`` range (``nccl:all_reduce``, ProcessGroupNCCL's record_function; None: none), starting at
    ``arrive_ns`` and ending at 700 µs on both ranks."""
    events, corr = [], 1
    for step in range(3):
        t = EPOCH + clock_ns + step * 1_000_000
        events.append(_x("user_annotation", f"ProfilerStep#{step}", 100, 100, t, 1_000_000))
        for call, start, end, name, stream in (
            (50_000, 100_000, 400_000, "sm90_gemm_synthetic", 7),
            (300_000, arrive_ns, 700_000, SENDRECV, 13),
        ):
            if stream == 13 and annotation:
                events.append(_x("user_annotation", annotation, 100, 100, t + call - 5_000, 20_000))
            events.append(_x("cuda_runtime", "cudaLaunchKernel", 100, 100, t + call, 5_000, correlation=corr))
            events.append(
                _x(
                    "kernel",
                    name,
                    0,
                    stream,
                    t + start,
                    end - start,
                    device=0,
                    stream=stream,
                    correlation=corr,
                )
            )
            corr += 1
        events.append(
            _x("cuda_runtime", "cudaDeviceSynchronize", 100, 100, t + 320_000, 600_000, correlation=corr)
        )
        corr += 1
    doc = {
        "schemaVersion": 1,
        "tracekit_synthetic": True,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "deviceProperties": [{"id": 0, "name": "Synthetic GPU", "numSms": 132}],
        "traceEvents": events,
    }
    path.write_text(json.dumps(doc))
    return str(path)


def test_collectives_under_nccl_2_13s_sendrecv_name_are_told_by_pytorchs_range(tmp_path: Path) -> None:
    """NCCL 2.13 names every kernel ``SendRecv`` and PyTorch of that era writes no ``Collective name`` on it
    (the real HTA recsys trace: 80 SendRecv kernels under 55 ``nccl:all_to_all``, 10 ``nccl:all_reduce``, 10
    ``nccl:_reduce_scatter_base`` and 10 ``nccl:_all_gather_base`` ranges). Every such kernel had been taken
    for point-to-point: two ranks of one all-reduce per step were 'not aligned (no collective kernels to align
    on ... only point-to-point send/receive kernels)', with a warning that they pair two ranks. The range
    ProcessGroupNCCL opens around the launch (``nccl:all_reduce``) names the operation: the clocks align on
    the 3 ends (rank 1's clock 2.5 ms ahead) and rank 1, arriving 50 µs after rank 0 each step, is the
    straggler."""
    from tracekit.fleet.run import analyze_many
    from tracekit.session import AnalysisOptions

    paths = [
        _sendrecv_named_rank(tmp_path / "rank0.synthetic.json", 0, 0, 400_000),
        _sendrecv_named_rank(tmp_path / "rank1.synthetic.json", 1, 2_500_000, 450_000),
    ]
    outcomes = analyze_many(paths, AnalysisOptions(), jobs=1)
    results = [o.result for o in outcomes]
    assert [r["collective_ops"] for r in results] == [["all_reduce"] * 3] * 2
    doc = summarize(results)
    clocks = doc["clocks"]
    assert (clocks["aligned"], clocks["matched"], clocks["offsets_ns"]) == (True, 3, [0, 2_500_000])
    assert doc["straggler"]["straggler"] == "rank 1" and doc["straggler"]["arrives_last"] == 3
    assert doc["straggler"]["median_wait_ms"] == 0.05
    assert not any("point-to-point" in w for w in doc["warnings"])


def test_a_sendrecv_kernel_under_no_range_is_still_point_to_point(tmp_path: Path) -> None:
    """Without PyTorch's range (a SendRecv kernel launched outside ProcessGroupNCCL, or a trace without
    record_function ranges) the kernel's name decides, as before: point-to-point, nothing to align on."""
    from tracekit.fleet.run import analyze_many
    from tracekit.session import AnalysisOptions

    paths = [
        _sendrecv_named_rank(tmp_path / "rank0.synthetic.json", 0, 0, 400_000, None),
        _sendrecv_named_rank(tmp_path / "rank1.synthetic.json", 1, 2_500_000, 450_000, "nccl:send 1->0"),
    ]
    results = [o.result for o in analyze_many(paths, AnalysisOptions(), jobs=1)]
    assert [r["collective_ops"] for r in results] == [[""] * 3, ["send"] * 3]
    doc = summarize(results)
    assert not doc["clocks"]["aligned"]
    assert "only point-to-point send/receive kernels" in doc["clocks"]["why"]


def test_an_operation_spelled_as_pytorchs_range_spells_it_agrees_with_the_kernels_arg() -> None:
    """One kernel's operation from its ``Collective name`` arg (``allreduce``, ``_allgather_base``), the same
    collective's on another rank from ProcessGroupNCCL's range (``nccl:all_reduce``, ``nccl:_all_gather_base``,
    where the kernel carried no arg): one operation, two spellings. They had read as other operations ('the
    collectives differ'), and the clocks were not aligned; spelled without underscores they agree. Another
    operation still differs."""
    ends = [EPOCH + 1_000_000, EPOCH + 2_000_000]
    a = compact_result("a", 0, ends=ends) | {"collective_ops": ["allreduce", "_allgather_base"]}
    b = compact_result("b", 1, ends=[e + 7_000 for e in ends]) | {
        "collective_ops": ["all_reduce", "_all_gather_base"]
    }
    clocks = summarize([a, b])["clocks"]
    assert (clocks["aligned"], clocks["offsets_ns"]) == (True, [0, 7_000])
    c = b | {"collective_ops": ["all_reduce", "_reduce_scatter_base"]}
    clocks = summarize([a, c])["clocks"]
    assert not clocks["aligned"]
    assert clocks["why"].startswith(
        "the collectives differ: rank 1's collective 2 in launch order is _reduce_scatter_base, rank 0's is "
        "_allgather_base"
    )


WINDOW_WHY = (
    "rank 0, rank 1: each is one window over its whole capture (no iteration ranges): its latency is how long "
    "the capture ran, not a step; cut steps with --split-idle MS or --range NAME"
)


def test_whole_capture_windows_are_not_compared_as_steps() -> None:
    """Two ranks captured without iteration ranges (nsys of a script without NVTX, a Kineto trace without
    ProfilerStep): each trace is one window, first launch to last op end. Rank 0's capture ran 3 steps (660.6
    ms), rank 1's 2 (438.5 ms; the real HTA DDP trace so transformed): the spread had named rank 0 the slowest,
    1.506x, and 'slowest by step' rank 0 in 1 of 1 steps, of captures that only lasted longer. Now the spread,
    the start skew and the slowest by step are withheld, with the why; the straggler, by collectives, stays."""
    ends = [EPOCH + 100 * MS, EPOCH + 200 * MS]
    a = compact_result(
        "a", 0, ends=ends, starts=[e - 200_000 for e in ends], steps=[(EPOCH, EPOCH + round(660.579 * MS))]
    )
    b = compact_result(
        "b",
        1,
        ends=[e + 5 * MS for e in ends],
        starts=[e + 5 * MS - 50_000 for e in ends],
        steps=[(EPOCH + 5 * MS, EPOCH + 5 * MS + round(438.515 * MS))],
    )
    for r in (a, b):
        r["range"] = "window"
    doc = summarize([a, b])
    assert doc["spread"] == {"why": WINDOW_WHY}
    assert doc["slowest_by_step"] == {"why": WINDOW_WHY}
    assert doc["skew"] == {"steps": 0, "why": WINDOW_WHY}
    assert doc["clocks"]["offsets_ns"] == [0, 5 * MS]
    assert doc["straggler"]["straggler"] == "rank 1" and doc["straggler"]["median_wait_ms"] == 0.15
    lines = summary_lines(doc)
    assert f"spread: not computed ({WINDOW_WHY})" in lines
    assert f"slowest by step: not computed ({WINDOW_WHY})" in lines


def test_windows_cut_at_idle_gaps_are_still_compared() -> None:
    """Windows cut at idle gaps (``--split-idle``, range ``idle>5ms``) are the trace's steps as the device
    shows them: compared as before."""
    a = compact_result("a", 0)
    b = compact_result("b", 1, steps=[(EPOCH, EPOCH + 2 * MS), (EPOCH + 3 * MS, EPOCH + 4 * MS)])
    for r in (a, b):
        r["range"] = "idle>5ms"
    doc = summarize([a, b])
    assert doc["spread"]["slowest"] == "rank 1" and doc["spread"]["ratio"] == 1.5


def test_the_gpus_of_one_capture_without_ranges_are_not_compared_as_steps() -> None:
    """One capture of two processes (GPU 0, GPU 1) without iteration ranges: each GPU's window runs from its
    first launch to its last op. Their 'step start skew' (when each GPU's first op was launched) and 'slowest'
    (which GPU's work spans longer) had been given as a step's (the real FastVideo 2-GPU nsys export: 'step
    start skew: 0.077 ms', 'slowest GPU 0 in 1 of 1 steps'); now withheld, with the why."""
    from tracekit.analyzers.ranks import within_capture

    def lane(start: int, latency_ms: float) -> dict[str, Any]:
        return {
            "iterations": {
                "index": [0],
                "start_ns": [start],
                "end_ns": [start + round(latency_ms * MS)],
                "latency_ms": [latency_ms],
                "step": [None],
            }
        }

    result = {
        "name": "two_ranks.synthetic.sqlite",
        "rank": None,
        "range": "window",
        "per_gpu": [{"device": 0, "lane": lane(0, 969.448)}, {"device": 1, "lane": lane(77_000, 969.259)}],
    }
    why = (
        "two_ranks.synthetic.sqlite: each GPU's iteration is one window over the capture (no iteration ranges), "
        "its first launch to its last op: no step; cut steps with --split-idle MS or --range NAME"
    )
    within = within_capture(result)
    assert within["skew"] == {"steps": 0, "why": why} and within["slowest_by_step"] == {"why": why}
    assert within["straggler_why"] == "not every GPU has collectives"


def test_an_empty_scheduler_address_is_refused_not_run_here(capsys: pytest.CaptureFixture[str]) -> None:
    """``--scheduler "$DASK_SCHEDULER"`` with the variable unset: an empty address had run every trace in this
    process without a word, as if no cluster had been asked for. Now one line, exit 2."""
    from tracekit.cli import main

    for address in ("", "  "):
        rc = main(["analyze", "a.json", "b.json", "--scheduler", address, "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert err.strip() == (
            "tracekit: --scheduler: no address given (empty: an unset variable?); give the scheduler's "
            "tcp://HOST:PORT, or leave --scheduler out to analyze here"
        )


def test_step_numbers_with_a_gap_are_shown_with_it() -> None:
    """Rank 1's ProfilerStep#5 range is missing (its events dropped; its kernels then fall in no step): it
    holds #4 and #6. The note had said 'rank 0 #4-#6; rank 1 #4-#6' and 'the 2 steps numbered alike (#4-#6)',
    as if both held the same three; now the runs are written out."""
    a = _numbered("a", 0, {4: 10.0, 5: 10.0, 6: 10.0})
    b = _numbered("b", 1, {4: 10.0, 6: 10.0})
    doc = summarize([a, b])
    assert (
        "the traces hold other steps (rank 0 #4-#6; rank 1 #4, #6): steps and collectives are compared on the 2 "
        "steps numbered alike in every trace (#4, #6), not by position"
    ) in doc["warnings"]
    assert doc["spread"]["on_steps"] == "#4, #6"
    many = _numbered("c", 1, {n: 10.0 for n in (1, 2, 3, 5, 7, 8, 10, 12, 14, 15)})
    warnings = summarize([a, many])["warnings"]
    assert any("rank 1 #1-#3, #5, #7-#8, #10 and 2 more runs to #15" in w for w in warnings)


def _comm_ops(*ops: tuple[str, int, int]) -> Any:
    """One iteration's kernels on device 0, (name, start µs, end µs) each (SYNTHETIC times, real names)."""
    import polars as pl

    return pl.DataFrame(
        {
            "iteration": [0] * len(ops),
            "device": [0] * len(ops),
            "start": [s * 1_000 for _, s, _ in ops],
            "end": [e * 1_000 for _, _, e in ops],
            "kind": ["kernel"] * len(ops),
            "name": [n for n, _, _ in ops],
        }
    )


@pytest.mark.parametrize(
    "name",
    [
        # Transformer Engine's Userbuffers (Megatron's tp_comm_overlap): the tensor-parallel all-gather and
        # reduce-scatter as kernels of its own over NVLink, and its point-to-point ring
        "void userbuffers_fp16_sum_inplace_gpu_rw_ag<2>(int, int, int, int, int, int, int, void**, int, unsigned long)",
        "void userbuffers_fp16_sum_inplace_gpu_rr_rs<2>(int, int, int, int, int, int, int, void**, int, unsigned long)",
        "userbuffers_fp16_sum_inplace_gpu_rr_rs_oop_fp8",
        "kuserbuffers_pushsendrecv(int*, int*, int4*, int4*, const int, int*, int*, const int, const int, int)",
    ],
)
def test_transformer_engine_userbuffers_kernels_are_communication(name: str) -> None:
    """With TE's communication overlap the tensor-parallel collectives run as ``userbuffers_*`` kernels, no
    NCCL in their names: they had been computation (comm 0 of them), and hid the NCCL all-reduce they
    overlapped. Now a 40 µs Userbuffers reduce-scatter beside a 60 µs GEMM is 40 µs of communication, all
    exposed; beside an NCCL all-reduce [20, 80) it hides none of it: 80 µs of communication, 20 µs of it
    under the GEMM."""
    from tracekit.analyzers.communication import COMM_PATTERN, NCCL_PATTERN, comm_per_iteration

    assert comm_per_iteration(_comm_ops((name, 0, 40), ("sm90_gemm", 40, 100))).to_dicts() == [
        {"iteration": 0, "comm_ms": 0.04, "exposed_comm_ms": 0.04}
    ]
    frame = comm_per_iteration(
        _comm_ops((name, 0, 40), ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 20, 80), ("sm90_gemm", 60, 100))
    )
    assert frame.to_dicts() == [{"iteration": 0, "comm_ms": 0.08, "exposed_comm_ms": 0.06}]
    import re

    assert re.search(COMM_PATTERN, name) and not re.search(NCCL_PATTERN, name)  # (not matched across ranks)


def test_the_range_of_a_launch_is_read_on_its_own_thread_and_never_raises() -> None:
    """:func:`annotated_ops` on hand-built frames: the call of collective 0 (thread 1) lies in an
    ``nccl:all_reduce`` range of thread 1; collective 1's call (thread 2) lies in time inside thread 1's
    ``nccl:broadcast`` range but on another thread, and in no range of its own: none; collective 2's call
    outlasts its thread's range: none. Thread ids written as text that is no number: nothing, no error."""
    import polars as pl

    from tracekit.fleet.compact import annotated_ops

    ordered = pl.DataFrame(
        {"correlation": [1, 2, 3], "call_start": [100, 300, 500], "call_end": [110, 310, 560]}
    )

    class Frames:
        def __init__(self, thread: Any) -> None:
            self.api = pl.DataFrame({"pid": [7, 7, 7], "thread": thread, "correlation": [1, 2, 3]})
            self.ranges = pl.DataFrame(
                {
                    "start": [90, 250, 490],
                    "end": [120, 400, 550],
                    "pid": [7, 7, 7],
                    "thread": [1, 1, 1],
                    "domain": ["user", "user", "user"],
                    "name": ["nccl:all_reduce", "nccl:broadcast", "nccl:all_gather"],
                }
            )

    assert annotated_ops(ordered, Frames([1, 2, 1])) == ["all_reduce", "", ""]
    odd = Frames(["a", "b", "c"])
    odd.ranges = odd.ranges.with_columns(pl.col("thread").cast(pl.String))
    assert annotated_ops(ordered, odd) == ["", "", ""]


def test_a_longest_step_in_ranks_that_end_together_is_said_to_be_the_earliest_start() -> None:
    """The committed synthetic 4 ranks end each step together (a collective, then a sync); rank 1 arrives last
    at every collective (the truth's straggler), and rank 0, whose host starts each step first, has the
    longest steps: the spread and 'slowest by step' name rank 0 by duration, as measured, and say beside it
    that a longest step there is the earliest start, not a slow rank (ranks13, left item a)."""
    from tracekit.analyzers.ranks import ENDS_TOGETHER_NOTE

    sample = Path(__file__).resolve().parents[1] / "sample_traces" / "synthetic" / "ranks4"
    from tracekit.api import analyze_many

    doc = analyze_many(sorted(str(p) for p in sample.glob("rank*.json.gz")), jobs=1)
    assert doc["straggler"]["straggler"] == "rank 1"
    assert doc["spread"]["slowest"] == "rank 0" and doc["spread"]["note"] == ENDS_TOGETHER_NOTE
    assert (
        doc["slowest_by_step"]["slowest"] == "rank 0" and doc["slowest_by_step"]["note"] == ENDS_TOGETHER_NOTE
    )


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ("nosuch=1", "--set nosuch: not a parameter of simulate --ranks"),
        ("straggler_factor=fast", "--set straggler_factor=fast: expected float"),
        ("straggler=7", "simulate --ranks: straggler rank 7 is not one of the 2 ranks"),
    ],
)
def test_simulate_ranks_refuses_a_set_it_cannot_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], item: str, said: str
) -> None:
    from tracekit.cli import main

    rc = main(["simulate", "--ranks", "2", "--iters", "2", "--set", item, "-o", str(tmp_path / "r"), "-q"])
    assert rc == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize(
    ("straggler", "skew_found", "noted"),
    [
        ({"straggler": "rank 1"}, {"steps": 6, "median_start_skew_ms": 0.009}, True),
        (
            {"straggler": None, "tied": ["rank 1", "rank 2"]},
            {"steps": 6, "median_start_skew_ms": 0.009},
            True,
        ),
        ({"straggler": None}, {"steps": 6, "median_start_skew_ms": 0.009}, False),
        ({"straggler": "rank 1"}, {"steps": 6, "median_start_skew_ms": 0.009, "ends_last": "rank 1"}, False),
        (
            {"straggler": "rank 1"},
            {"steps": 6, "median_start_skew_ms": None, "why": "within the residual"},
            False,
        ),
        ({"straggler": "rank 1"}, {"steps": 0, "why": "one window over the capture"}, False),
    ],
)
def test_the_ends_together_note_needs_a_late_rank_steps_ending_together_and_starts_told_apart(
    straggler: dict[str, Any], skew_found: dict[str, Any], noted: bool
) -> None:
    from tracekit.analyzers.ranks import ENDS_TOGETHER_NOTE, ends_together_note

    assert ends_together_note(straggler, skew_found) == (ENDS_TOGETHER_NOTE if noted else None)


def test_a_batch_sweep_analyzed_together_is_not_compared_step_by_step() -> None:
    # The committed H200 eager traces at batch 1 and 8 (their sidecars state the batch sizes): a folder of them
    # is no set of ranks; 'slowest by step: b1 in 20 of 20 steps' compared step k of one batch with step k of
    # the other (firsthour13). The spread, of whole traces, stays.
    from tracekit.api import analyze_many

    sample = Path(__file__).resolve().parents[1] / "sample_traces" / "h200_bert_fp16" / "pytorch"
    doc = analyze_many(sorted(str(p) for p in sample.glob("*.torch.json.gz")), jobs=1)
    why = (
        "the traces are runs of different configurations (batch 1, 8), not ranks of one job: their steps are not "
        "compared step by step (tracekit report or table compares configurations)"
    )
    assert doc["slowest_by_step"] == {"why": why}
    assert why in doc["warnings"]
    assert doc["spread"]["slowest"] == "pytorch_b1_s128.torch.json.gz"
