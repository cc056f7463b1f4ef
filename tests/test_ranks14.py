"""Round 14 of the cross-trace summary (ranks, fleet): communication of a trace of several GPUs, exposure
across step boundaries, renumbered steps, truncated process groups. Every trace here is SYNTHETIC: hand-built
Kineto files in tmp folders (names say "synthetic", metadata ``tracekit_synthetic``) or hand-built compact
results, with known truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import EPOCH, comm_ops
from tracekit.analyzers.communication import comm_per_iteration
from tracekit.analyzers.ranks import summarize
from tracekit.fleet.run import analyze_many
from tracekit.renderers.ranks import render_ranks
from tracekit.session import AnalysisOptions

GEMM = "sm90_xmma_gemm_f16f16_synthetic"
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
STEPS = 4


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _event(cat: str, name: str, pid: int, tid: int, ts_ns: int, dur_ns: int, **args: Any) -> str:
    """One Kineto complete event as JSON text, ``ts``/``dur`` as exact decimal µs."""
    head = json.dumps(
        {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, **({"args": args} if args else {})}
    )
    return head[:-1] + f', "ts": {_us(ts_ns)}, "dur": {_us(dur_ns)}}}'


def _kineto(path: Path, step_us: int, kernels: list[tuple[Any, ...]], gpus: int) -> str:
    """A SYNTHETIC Kineto trace: one process (pid 100) running :data:`STEPS` ``ProfilerStep#N`` of
    ``step_us`` µs back to back; in each, per ``kernels`` entry ``(device, stream, call, start, end, name)``
    (µs after the step's start; the kernel may run past the step's end) one kernel launched by a 1-µs
    ``cudaLaunchKernel`` at ``call``, then a ``cudaDeviceSynchronize`` from 30 µs until 40 µs before the step
    ends. ``gpus``: how many devices ``deviceProperties`` lists."""
    lines, corr = [], 1
    for step in range(STEPS):
        s0 = EPOCH + step * step_us * 1000
        lines.append(_event("user_annotation", f"ProfilerStep#{step}", 100, 100, s0, step_us * 1000))
        for device, stream, call, start, end, name in kernels:
            lines.append(
                _event("cuda_runtime", "cudaLaunchKernel", 100, 100, s0 + call * 1000, 1000, correlation=corr)
            )
            lines.append(
                _event(
                    "kernel", name, device, stream, s0 + start * 1000, (end - start) * 1000,
                    device=device, stream=stream, correlation=corr,
                )
            )  # fmt: skip
            corr += 1
        sync = (step_us - 70) * 1000
        lines.append(
            _event("cuda_runtime", "cudaDeviceSynchronize", 100, 100, s0 + 30_000, sync, correlation=corr)
        )
        corr += 1
    header = json.dumps(
        {
            "schemaVersion": 1,
            "tracekit_synthetic": True,
            "deviceProperties": [{"id": i, "name": f"Synthetic GPU {i}", "numSms": 132} for i in range(gpus)],
        }
    )
    path.write_text(header[:-1] + ', "traceEvents": [\n' + ",\n".join(lines) + "\n]}\n")
    return str(path)


def _doc(paths: list[str]) -> dict[str, Any]:
    outcomes = analyze_many(paths, AnalysisOptions(), jobs=1)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return summarize([o.result for o in outcomes])


# --- 1. a trace of several GPUs: its row's communication is their union, as its GPU busy is ----------------


def _eight_gpus() -> list[tuple[Any, ...]]:
    """Per step: every GPU computes [50, 400) µs; GPU 0's all-reduce runs [300, 900) (100 µs of it under its
    own compute), GPUs 1-7's [450, 950)."""
    kernels: list[tuple[Any, ...]] = []
    for d in range(8):
        kernels.append((d, 7, 10 + d, 50, 400, GEMM))
        kernels.append((d, 20, 18 + d, 300 if d == 0 else 450, 900 if d == 0 else 950, ALL_REDUCE))
    return kernels


def test_a_trace_of_eight_gpus_counts_its_communication_over_them_as_its_busy_time(tmp_path: Path) -> None:
    path = _kineto(tmp_path / "eight_gpus_nccl.synthetic.json", 1000, _eight_gpus(), 8)
    doc = _doc([path])
    (row,) = doc["rows"]
    # GPU busy: the union of the GPUs' work, [50, 950) µs of each 1-ms step
    assert row["mean_latency_ms"] == pytest.approx(1.0, abs=1e-12)
    assert row["mean_gpu_busy_ms"] == pytest.approx(0.9, abs=1e-12)
    # communication over the GPUs as their busy time is: the union, [300, 950) = 0.65 ms, and exposed where
    # some GPU communicates beside none of its own compute, [400, 950) = 0.55 ms. Summed over the GPUs it had
    # read 4.1 and 4.0 ms: four times the step
    assert [row["mean_comm_ms"], row["mean_exposed_comm_ms"]] == pytest.approx([0.65, 0.55], abs=1e-12)
    assert row["mean_comm_ms"] <= row["mean_gpu_busy_ms"] <= row["mean_latency_ms"]
    # each GPU's own row is its own
    got = [(g["mean_comm_ms"], g["mean_exposed_comm_ms"]) for g in doc["gpu_rows"]]
    assert got == [pytest.approx((0.6, 0.5), abs=1e-12)] + [pytest.approx((0.5, 0.5), abs=1e-12)] * 7
    # and the document says how the trace's row counts it
    assert doc["comm_note"].startswith(
        "eight_gpus_nccl.synthetic.json: the trace's mean comm is the union over"
    )
    text = render_ranks(doc, "table")
    assert "mean comm is the union over its GPUs" in text


# --- 2. a collective of step k hidden by step k+1's computation is hidden ----------------------------------


def test_a_collective_running_into_the_next_step_is_hidden_by_that_steps_compute(tmp_path: Path) -> None:
    """Per 1-ms step: compute [50, 600) µs on stream 7 and an all-reduce launched at 12 µs running [700, 1300)
    on stream 20, into the next step, whose compute [1050, 1600) hides its last 250 µs. Exposed: 350 µs in
    steps 0-2, all 600 µs in step 3 (no step after it): mean 0.4125 ms. Swept per step, step k+1's compute
    had hidden nothing of step k's collective: 0.6 ms."""
    kernels = [(0, 7, 10, 50, 600, GEMM), (0, 20, 12, 700, 1300, ALL_REDUCE)]
    path = _kineto(tmp_path / "spill_nccl.synthetic.json", 1000, kernels, 1)
    (row,) = _doc([path])["rows"]
    assert row["mean_comm_ms"] == pytest.approx(0.6, abs=1e-12)
    assert row["mean_exposed_comm_ms"] == pytest.approx(0.4125, abs=1e-12)


def _counted(rows: list[tuple[Any, ...]]) -> dict[int, tuple[int, int]]:
    """Per iteration: (communication ns, exposed ns), counting nanoseconds one by one: the nanoseconds some
    device runs a collective of the iteration, and those some device runs one with no computation of its
    own (of any iteration, or none) beside it."""
    out: dict[int, tuple[int, int]] = {}
    for it in {r[0] for r in rows if r[4] and r[0] is not None}:
        comm: set[int] = set()
        exposed: set[int] = set()
        for dev in {r[1] for r in rows if r[4] and r[0] == it}:
            mine = {t for r in rows if r[4] and r[:2] == (it, dev) for t in range(r[2], r[3])}
            other = {t for r in rows if not r[4] and r[1] == dev for t in range(r[2], r[3])}
            comm |= mine
            exposed |= mine - other
        out[it] = (len(comm), len(exposed))
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(0, 2)),
            st.integers(0, 2),
            st.integers(0, 60),
            st.integers(0, 25),
            st.booleans(),
        ),
        max_size=25,
    )
)
def test_communication_over_devices_and_steps_matches_counting_nanoseconds(
    raw: list[tuple[Any, ...]],
) -> None:
    rows = [(it, dev, start, start + length, is_comm) for it, dev, start, length, is_comm in raw]
    ops = comm_ops([(it, dev, s, e, "ncclKernel" if c else "gemm") for it, dev, s, e, c in rows])
    got = comm_per_iteration(ops)
    want = _counted(rows)
    # (an iteration whose collectives all last 0 ns has 0 of each)
    assert got["iteration"].to_list() == sorted(want)
    assert got["comm_ms"].to_list() == pytest.approx([want[i][0] / 1e6 for i in sorted(want)], abs=1e-15)
    assert got["exposed_comm_ms"].to_list() == pytest.approx(
        [want[i][1] / 1e6 for i in sorted(want)], abs=1e-15
    )


def test_communication_hidden_by_its_own_devices_compute_of_any_step() -> None:
    """The example of tests/test_fleet.py's per-(iteration, device) sweep under this round's definition."""
    ops = comm_ops(
        [
            # iteration 0, device 0: collectives [0,10) and [5,20): union 20 ns; its gemm hides [8,12), and
            # iteration 1's gemm on the same device [0,20) all of it (it runs beside it)
            (0, 0, 0, 10, "ncclKernel_AllReduce"),
            (0, 0, 5, 20, "ncclDevKernel_Broadcast"),
            (0, 0, 8, 12, "sm90_gemm"),
            (0, 1, 0, 20, "sm90_gemm"),  # another device: hides nothing of device 0's
            (1, 0, 0, 20, "sm90_gemm"),
            # iteration 1: device 0's [100,130) hidden over [90,125); device 1's [50,60) beside nothing
            (1, 0, 100, 130, "rcclKernel"),
            (1, 0, 90, 110, "elementwise"),
            (1, 0, 105, 125, "elementwise"),
            (1, 1, 50, 60, "NCCL_Reduce"),
            (2, 0, 0, 50, "sm90_gemm"),  # no collective in iteration 2: no row
            (None, 0, 0, 1000, "ncclKernel_AllReduce"),  # a collective in no iteration: left out
            (3, 0, None, 10, "ncclKernel_AllReduce"),  # no start: left out
        ]
    )
    got = comm_per_iteration(ops)
    assert got["iteration"].to_list() == [0, 1]
    assert got["comm_ms"].to_list() == pytest.approx([20e-6, 40e-6], abs=1e-15)
    assert got["exposed_comm_ms"].to_list() == pytest.approx([0.0, 15e-6], abs=1e-15)
    # two devices communicating at once count once: [0, 10) on both, device 1's hidden by its own gemm
    both = comm_ops([(0, 0, 0, 10, "ncclKernel"), (0, 1, 0, 10, "ncclKernel"), (0, 1, 0, 4, "gemm")])
    assert comm_per_iteration(both).row(0) == (
        0,
        pytest.approx(10e-6, abs=1e-15),
        pytest.approx(10e-6, abs=1e-15),
    )
    device_one_hidden = comm_ops(
        [(0, 0, 0, 10, "ncclKernel"), (0, 0, 0, 4, "gemm"), (0, 1, 2, 6, "ncclKernel")]
    )
    # device 0 exposed [4, 10), device 1 [2, 6): union [2, 10) = 8 ns of 10
    assert comm_per_iteration(device_one_hidden).row(0) == (
        0,
        pytest.approx(10e-6, abs=1e-15),
        pytest.approx(8e-6, abs=1e-15),
    )


# --- 3. one rank's steps numbered one off (its profiler counted from another start) ---------------------------

#: ms: the five steps' durations (one job: the same on every rank), unequal, as real steps are
DURATIONS = (10.0, 11.3, 9.6, 12.1, 10.4)


def _rank(
    rank: int,
    first_step: int,
    offset_ns: int,
    late_ns: int,
    steps: range | None = None,
    durations: tuple[float, ...] = DURATIONS,
) -> dict[str, Any]:
    """A hand-built compact result of one rank of a 2-rank job: the steps of ``durations`` (those of
    ``steps``, positions), numbered from ``first_step``, on a clock ``offset_ns`` ahead; per step two
    all-reduces ending together on every rank at 30% and 90% of the step, 0.5 ms long, the rank arriving
    ``late_ns`` later than that (its kernel shorter by it)."""

    keep = steps if steps is not None else range(len(durations))
    starts, t = [], EPOCH
    for d in durations:
        starts.append(t)
        t += round(d * 1e6)
    its = {"index": [], "start_ns": [], "end_ns": [], "latency_ms": [], "step": []}
    c_start, c_end, c_it = [], [], []
    for k, i in enumerate(keep):
        s, d = starts[i], round(durations[i] * 1e6)
        its["index"].append(k)
        its["start_ns"].append(s + offset_ns)
        its["end_ns"].append(s + d + offset_ns)
        its["latency_ms"].append(d / 1e6)
        its["step"].append(first_step + k)
        for frac in (0.3, 0.9):
            end = s + round(frac * d) + offset_ns
            c_end.append(end)
            c_start.append(end - 500_000 + late_ns)
            c_it.append(k)
    return {
        "path": f"/runs/rank{rank}.synthetic.json",
        "name": f"rank{rank}.synthetic.json",
        "rank": rank,
        "synthetic": True,
        "range": "ProfilerStep#*",
        "world_size": 2,
        "iterations": {
            "index": np.asarray(its["index"]),
            "start_ns": np.asarray(its["start_ns"], dtype=np.int64),
            "end_ns": np.asarray(its["end_ns"], dtype=np.int64),
            "latency_ms": np.asarray(its["latency_ms"]),
            "step": its["step"],
        },
        "collective_starts_ns": np.asarray(c_start, dtype=np.int64),
        "collective_ends_ns": np.asarray(c_end, dtype=np.int64),
        "collective_kinds": ["allreduce"] * len(c_end),
        "collective_iterations": c_it,
        "verdict": "compute",
        "warnings": [],
    }


def test_steps_numbered_one_off_are_aligned_by_their_collectives_and_said_so() -> None:
    # rank 1's profiler numbered the same five steps #6-#10 where rank 0's say #5-#9; its clock is 12.345678 ms
    # ahead, and it arrives 200 µs late at every all-reduce
    doc = summarize([_rank(0, 5, 0, 0), _rank(1, 6, 12_345_678, 200_000)])
    clocks = doc["clocks"]
    assert clocks["aligned"] is True
    assert clocks["offsets_ns"] == [0, 12_345_678]
    assert clocks["matched"] == 10 and clocks["residual_us"] == 0.0
    straggler = doc["straggler"]
    assert (straggler["straggler"], straggler["arrives_last"], straggler["collectives"]) == ("rank 1", 10, 10)
    assert straggler["median_wait_ms"] == pytest.approx(0.2, abs=1e-12)
    assert doc["skew"]["steps"] == 5
    said = " ".join(doc["warnings"])
    assert "rank 1's steps #6-#10 are rank 0's #5-#9" in said


def test_a_capture_that_began_a_step_later_is_still_matched_by_its_numbers() -> None:
    # the converse, numbers right: rank 1 captured steps 1-4 (#6-#9) and rank 0 steps 0-3 (#5-#8); by number
    # the 3 common steps #6-#8 align exactly, by position they would not
    doc = summarize([_rank(0, 5, 0, 0, range(0, 4)), _rank(1, 6, 12_345_678, 200_000, range(1, 5))])
    assert doc["clocks"]["aligned"] is True
    assert doc["clocks"]["offsets_ns"] == [0, 12_345_678] and doc["clocks"]["residual_us"] == 0.0
    assert doc["straggler"]["arrives_last"] == 6
    assert not any("are rank 0's" in w for w in doc["warnings"])


def test_numbers_that_fit_worse_than_a_shift_but_not_clearly_are_doubted() -> None:
    # as above, but rank 1's odd collectives end 300 µs late: with its numbers -1 they disagree by 150 µs (the
    # median offset sits between), as they are by 1,120 µs: under ten times as much, so the numbers are kept
    # and doubted
    one = _rank(1, 6, 12_345_678, 200_000)
    one["collective_ends_ns"] = one["collective_ends_ns"] + np.asarray([0, 300_000] * 5, dtype=np.int64)
    doc = summarize([_rank(0, 5, 0, 0), one])
    assert doc["clocks"]["residual_us"] == 1120.0
    (said,) = [w for w in doc["warnings"] if w.startswith("the traces hold other steps")]
    assert said.endswith(
        "; rank 1's collectives end together to 150.000 µs with its step numbers -1, to 1120.000 µs as they "
        "are: the step numbers may differ between the traces (a profiler that counted steps from another start)"
    )


def test_steps_numbered_one_off_in_a_shorter_capture_are_aligned_too() -> None:
    # rank 1 captured the first four steps and numbered them #6-#9 (rank 0: five, #5-#9)
    doc = summarize([_rank(0, 5, 0, 0), _rank(1, 6, 12_345_678, 200_000, range(0, 4))])
    assert doc["clocks"]["offsets_ns"] == [0, 12_345_678] and doc["clocks"]["residual_us"] == 0.0
    assert (doc["straggler"]["straggler"], doc["straggler"]["arrives_last"]) == ("rank 1", 8)
    assert doc["spread"]["on_steps"] == "#5-#8" and doc["spread"]["ratio"] == 1.0
    assert "rank 1's steps #6-#9 are rank 0's #5-#8" in " ".join(doc["warnings"])


def test_periodic_steps_numbered_one_off_keep_their_numbers() -> None:
    # steps all alike fit every shift: nothing tells a renumbering from a capture that began a step later
    alike = (10.0,) * 5
    doc = summarize([_rank(0, 5, 0, 0, durations=alike), _rank(1, 6, 12_345_678, 200_000, durations=alike)])
    assert doc["clocks"]["offsets_ns"] == [0, 2_345_678]  # (by number: a step off, as the numbers say)
    assert not any("numbered from another start" in w or "may differ" in w for w in doc["warnings"])


# --- 4. Process Group Ranks of groups over 30 ranks, which Kineto cuts ----------------------------------------


def test_process_group_ranks_cut_by_kineto_leave_the_members_unknown_not_wrong(tmp_path: Path) -> None:
    """libkineto writes a list of over 30 ranks (``kTruncatLength``) as its first 30 and ``...``: ``"[0, 1,
    ..., 29, ...]"``. Every group's list in the SYNTHETIC 4-rank tensor + data parallel traces is rewritten so:
    the members are not known, the groups still are (by name), and the alignment is the one the full lists
    give (rank 3's clock 2.5 ms ahead), its note naming the group without members."""
    import gzip
    import re

    from tests.builders import tp_dp_kineto

    cut = '"Process Group Ranks": "[' + ", ".join(str(i) for i in range(30)) + ', ...]"'
    paths = []
    for path in tp_dp_kineto(tmp_path / "tp_dp", all_to_all=True):
        text = re.sub(
            r'"Process Group Ranks": "\[[0-9, ]*\]"', cut, gzip.decompress(Path(path).read_bytes()).decode()
        )
        assert text.count("...]") >= 6
        out = Path(path.replace(".synthetic", "_cut.synthetic"))
        out.write_bytes(gzip.compress(text.encode()))
        paths.append(str(out))
    outcomes = analyze_many(paths, AnalysisOptions(), jobs=1)
    assert [o.result["group_ranks"] for o in outcomes] == [None] * 4
    doc = summarize([o.result for o in outcomes])
    assert doc["clocks"]["aligned"] is True and doc["clocks"]["offsets_ns"] == [0, 0, 0, 2_500_000]
    assert doc["clocks"]["matched"] == 6 and doc["clocks"]["residual_us"] == 0.0
    assert (
        "the traces' collectives belong to several process groups: clocks and stragglers are matched on process "
        "group 0's collectives, which every trace holds, in their order"
    ) in doc["warnings"]


# --- 5. a capture --split-idle did not cut: one window over it, as without ranges --------------------------


def _gpu_lane(device: int, start: int, end: int) -> dict[str, Any]:
    return {
        "device": device,
        "gpu": None,
        "iterations": 1,
        "median_latency_ms": (end - start) / 1e6,
        "lane": {
            "iterations": {
                "index": np.asarray([0]),
                "start_ns": np.asarray([start], dtype=np.int64),
                "end_ns": np.asarray([end], dtype=np.int64),
                "latency_ms": np.asarray([(end - start) / 1e6]),
                "step": [None],
            }
        },
    }


@pytest.mark.parametrize("cut", ["window", "idle>5ms"])
def test_one_window_over_a_capture_is_no_step_whether_or_not_split_idle_was_asked(cut: str) -> None:
    """A SYNTHETIC capture of two GPUs (one process each, no collectives), each one window over the 1-s cut:
    GPU 1's first op 77 µs after GPU 0's and its last 266 µs earlier (the real 2-GPU nsys-ai export's shape).
    ``--split-idle 5`` found no gap of 5 ms: its one window is the capture still, no step; the start skew
    (0.077 ms) and 'slowest GPU 0' had been given for it."""
    result = {
        "name": "two_gpus.synthetic.sqlite",
        "path": "/runs/two_gpus.synthetic.sqlite",
        "rank": None,
        "range": cut,
        "iterations": {
            "index": np.asarray([0]),
            "start_ns": np.asarray([EPOCH], dtype=np.int64),
            "end_ns": np.asarray([EPOCH + 969_448_000], dtype=np.int64),
            "latency_ms": np.asarray([969.448]),
        },
        "collective_starts_ns": np.zeros(0, dtype=np.int64),
        "collective_ends_ns": np.zeros(0, dtype=np.int64),
        "collective_kinds": [],
        "per_gpu": [
            _gpu_lane(0, EPOCH, EPOCH + 969_448_000),
            _gpu_lane(1, EPOCH + 77_000, EPOCH + 969_336_000),
        ],
        "verdict": "compute",
        "warnings": [],
    }
    (within,) = summarize([result])["gpu_within"]
    assert within["skew"]["steps"] == 0 and "no step" in within["skew"]["why"]
    assert "no step" in within["slowest_by_step"]["why"]


def test_a_capture_split_idle_left_uncut_is_not_compared_with_anothers_windows() -> None:
    # two traces cut at 5-ms idle gaps: one into two 1-ms windows, the other left one 969.448-ms window (no gap
    # that long): the spread had compared that capture's length with the other's windows (969x)
    def one(name: str, spans: list[tuple[int, int]]) -> dict[str, Any]:
        return {
            "name": name,
            "path": f"/runs/{name}",
            "rank": None,
            "range": "idle>5ms",
            "iterations": {
                "index": np.arange(len(spans)),
                "start_ns": np.asarray([a for a, _ in spans], dtype=np.int64),
                "end_ns": np.asarray([b for _, b in spans], dtype=np.int64),
                "latency_ms": np.asarray([(b - a) / 1e6 for a, b in spans]),
            },
            "collective_starts_ns": np.zeros(0, dtype=np.int64),
            "collective_ends_ns": np.zeros(0, dtype=np.int64),
            "collective_kinds": [],
            "verdict": "compute",
            "warnings": [],
        }

    doc = summarize(
        [
            one("a.synthetic.json", [(EPOCH, EPOCH + 1_000_000), (EPOCH + 7_000_000, EPOCH + 8_000_000)]),
            one("b.synthetic.json", [(EPOCH, EPOCH + 969_448_000)]),
        ]
    )
    assert doc["spread"] == {
        "why": "b.synthetic.json: it is one window over its whole capture (no iteration ranges, or no idle gap "
        "long enough to cut it): its latency is how long the capture ran, not a step; cut steps with "
        "--split-idle MS or --range NAME"
    }
    assert "why" in doc["slowest_by_step"]
