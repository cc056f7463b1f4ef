"""``tracekit simulate --ranks`` gives its NCCL kernels the process-group args PyTorch's ProcessGroupNCCL
writes (``Collective name``, ``Process Group Name``, ``Process Group Ranks``), so that simulated rank traces
reach the per-group matching (:func:`tracekit.analyzers.ranks.by_group`) as real ones do. SYNTHETIC traces."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tracekit.analyzers.ranks import by_group
from tracekit.fleet.run import analyze_many
from tracekit.session import AnalysisOptions
from tracekit.simulate.ranks import NCCL_KERNEL, RankSimulation, write_ranks

SIM = RankSimulation(ranks=3, steps=4, kernels=5, straggler=1)


def test_simulated_collective_kernels_carry_pytorchs_process_group_args(tmp_path: Path) -> None:
    path = write_ranks(SIM, tmp_path)[1]
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    nccl = [e for e in events if e["name"] == NCCL_KERNEL]
    others = [e for e in events if e.get("cat") == "kernel" and e["name"] != NCCL_KERNEL]
    assert len(nccl) == SIM.steps and others
    for e in nccl:
        args = e["args"]
        assert args["Collective name"] == "allreduce"
        assert args["Process Group Name"] == "0"
        assert args["Process Group Ranks"] == "[0, 1, 2]"  # text holding a JSON list, as PyTorch writes it
        assert args["Group size"] == 3
    assert not any("Process Group Name" in e["args"] for e in others)


def test_simulated_ranks_are_matched_on_their_process_group(tmp_path: Path) -> None:
    outcomes = analyze_many([str(p) for p in write_ranks(SIM, tmp_path)], AnalysisOptions(), jobs=1)
    results = [o.result for o in outcomes]
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    for r in results:
        assert list(r["collective_groups"]) == ["0"] * SIM.steps
        assert list(r["collective_ops"]) == ["allreduce"] * SIM.steps
        assert r["group_ranks"] == {"0": [0, 1, 2]}
    matched, why, note = by_group(results)
    assert why is None and note is None  # one group holding every rank: nothing to say
    assert [m["matched_group"] for m in matched] == ["0", "0", "0"]
    assert [len(m["collective_ends_ns"]) for m in matched] == [SIM.steps] * 3
