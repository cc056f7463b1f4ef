"""Exact outputs of ``ranks.by_group`` and its helpers (``_members``, ``_group_text``, ``_kept``): the tests
that kill the mutants the round-10 mutation run left (benchmarks/mutation.py ranks --functions by_group
_members _group_text _kept). Compact results are hand-built (labelled synthetic: tests/builders)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.builders import compact_result
from tracekit.analyzers.ranks import _kept, _members, by_group


def _labelled(name: str, rank: int | None, groups: list[Any], group_ranks: Any = None) -> dict[str, Any]:
    ends = [1_000_000 * (i + 1) for i in range(len(groups))]
    r = compact_result(name, rank, ends=ends)
    return {
        **r,
        "collective_kinds": [f"k{i}" for i in range(len(groups))],
        "collective_ops": [f"op{i}" for i in range(len(groups))],
        "collective_iterations": list(range(len(groups))),
        "collective_groups": groups,
        "group_ranks": group_ranks,
    }


def test_the_group_with_most_collectives_is_kept_in_every_list_and_said() -> None:
    """Groups dp (3 collectives) and tp (2) on both ranks: dp is matched; each per-collective list keeps
    dp's entries, in order; the inputs are not changed; the note names dp and its members."""
    groups = ["tp", "dp", "tp", "dp", "dp"]
    members = {"tp": [0, 1], "dp": [1, 0]}
    a = _labelled("a", 0, list(groups), members)
    b = _labelled("b", 1, list(groups), members)
    out, why, note = by_group([a, b])
    assert why is None
    assert note == (
        "the traces' collectives belong to several process groups: clocks and stragglers are matched on "
        "process group dp (ranks 0, 1)'s collectives, which every trace holds, in their order"
    )
    for r in out:
        assert r["matched_group"] == "dp"
        assert isinstance(r["collective_ends_ns"], np.ndarray)
        assert isinstance(r["collective_starts_ns"], np.ndarray)
        assert r["collective_ends_ns"].tolist() == [2_000_000, 4_000_000, 5_000_000]
        assert r["collective_starts_ns"].tolist() == [1_999_900, 3_999_900, 4_999_900]
        assert r["collective_kinds"] == ["k1", "k3", "k4"]
        assert r["collective_ops"] == ["op1", "op3", "op4"]
        assert r["collective_iterations"] == [1, 3, 4]
        assert r["collective_groups"] == ["dp", "dp", "dp"]
    assert a["collective_groups"] == groups and len(a["collective_ends_ns"]) == 5
    assert "matched_group" not in a


def test_the_count_is_the_least_over_the_traces_and_ties_go_by_name() -> None:
    """Rank 0 holds tp 3 times and dp twice, rank 1 tp once and dp twice: dp has 2 in every trace, tp 1.
    With 2 and 2, the first name (b before c) is taken."""
    a = _labelled("a", 0, ["tp", "tp", "tp", "dp", "dp"])
    b = _labelled("b", 1, ["tp", "dp", "dp"])
    out, _, _ = by_group([a, b])
    assert [r["matched_group"] for r in out] == ["dp", "dp"]
    assert [r["collective_ends_ns"].tolist() for r in out] == [[4_000_000, 5_000_000], [2_000_000, 3_000_000]]
    a = _labelled("a", 0, ["c", "b", "c", "b"])
    b = _labelled("b", 1, ["b", "c", "b", "c"])
    out, _, _ = by_group([a, b])
    assert [r["matched_group"] for r in out] == ["b", "b"]


def test_a_group_that_leaves_out_a_rank_is_not_matched() -> None:
    """Ranks 0 and 2; tp's members (0, 1) leave out rank 2, dp's (0, 2) do not: dp is matched though tp has
    more collectives. Members said by one trace only are enough to rule tp out."""
    a = _labelled("a", 0, ["tp", "tp", "tp", "dp"], {"tp": [0, 1], "dp": [0, 2]})
    b = _labelled("b", 2, ["tp", "tp", "tp", "dp"], None)
    out, why, note = by_group([a, b])
    assert why is None and [r["matched_group"] for r in out] == ["dp", "dp"]
    assert note is not None and "process group dp (ranks 0, 2)'s" in note
    # members as a tuple of numpy integers are members too
    a = _labelled("a", 0, ["tp", "tp", "dp"], {"tp": (np.int64(0), np.int64(1))})
    out, _, _ = by_group([a, b])
    assert [r["matched_group"] for r in out] == ["dp", "dp"]


def test_no_common_group_says_why_with_each_traces_groups() -> None:
    a = _labelled("a", 0, ["x", "w"], {"x": [0, 1], "w": []})
    b = _labelled("b", 1, ["y"])
    results = [a, b]
    out, why, note = by_group(results)
    assert out is results and note is None
    assert why == (
        "no process group's collectives are in every trace (rank 0: group w, group x (ranks 0, 1); "
        "rank 1: group y, by the kernels' Process Group Name): which collective matches which across ranks "
        "is not known"
    )


def test_unusable_groups_leave_the_traces_as_they_are() -> None:
    one = [_labelled("a", 0, ["0"])]
    assert by_group(one) == (one, None, None)
    # a trace naming no group for any collective
    results = [_labelled("a", 0, ["0", "0"]), _labelled("b", 1, [None, ""])]
    out, why, note = by_group(results)
    assert out is results and why is None and note is None
    # groups not given one per collective
    b = _labelled("b", 1, ["0", "0"])
    b["collective_ends_ns"] = np.array([5], dtype=np.int64)
    results = [_labelled("a", 0, ["0", "0"]), b]
    out, why, note = by_group(results)
    assert out is results and why is None and note is None
    # no groups at all, and no ends: 0 == 0 but nothing said
    c = _labelled("c", 0, [])
    c.pop("collective_groups")
    c.pop("collective_ends_ns")
    results = [c, _labelled("d", 1, ["0"])]
    assert by_group(results)[0] is results


def test_one_group_alone_gives_no_note() -> None:
    a = _labelled("a", 0, ["0", "0"], {"0": [0, 1]})
    b = _labelled("b", 1, ["0", "0"])
    out, why, note = by_group([a, b])
    assert why is None and note is None
    assert [r["collective_ends_ns"].tolist() for r in out] == [[1_000_000, 2_000_000]] * 2


def test_collectives_naming_no_group_are_counted_in_the_note() -> None:
    """Members are taken from the first trace that says them (rank 1 here)."""
    a = _labelled("a", 0, ["0", None, "0", ""])
    b = _labelled("b", 1, ["0", "0", ""], {"0": [2, 1, 0]})
    c = _labelled("c", 2, ["0", "0"])
    out, why, note = by_group([a, b, c])
    assert why is None
    assert note == (
        "the traces' collectives name a process group only in part: clocks and stragglers are matched on "
        "process group 0 (ranks 0, 1, 2)'s collectives, which every trace holds, in their order; collectives "
        "that name no process group are left out (rank 0: 2, rank 1: 1): were some of them group 0's, its "
        "collectives would be matched one off after them"
    )
    assert [r["collective_ends_ns"].tolist() for r in out] == [
        [1_000_000, 3_000_000],
        [1_000_000, 2_000_000],
        [1_000_000, 2_000_000],
    ]
    # without members anywhere: no ranks in the note
    a = _labelled("a", 0, ["0", None, "0"])
    b = _labelled("b", 1, ["0", "0"], {"0": "not a list"})
    _, _, note = by_group([a, b])
    assert note is not None and "on process group 0's collectives" in note


def test_members_of_each_layout() -> None:
    assert _members({"group_ranks": {"g": [2, np.int32(1)]}}, "g") == {1, 2}
    assert _members({"group_ranks": {"g": (3,)}}, "g") == {3}
    assert _members({"group_ranks": {"g": []}}, "g") == set()
    assert _members({"group_ranks": {"g": [1, True]}}, "g") is None
    assert _members({"group_ranks": {"g": [1, 2.0]}}, "g") is None
    assert _members({"group_ranks": {"h": [1]}}, "g") is None
    assert _members({"group_ranks": [["g", [1]]]}, "g") is None
    assert _members({}, "g") is None


def test_kept_keeps_each_list_of_one_entry_per_collective() -> None:
    keep = np.array([True, False, True])
    r = {
        "collective_starts_ns": np.array([1, 2, 3], dtype=np.int64),
        "collective_ends_ns": [4, 5, 6],
        "collective_kinds": np.array(["a", "b", "c"], dtype=object),
        "collective_iterations": [0, 1],  # not one per collective: left as it is
        "collective_ops": None,
        "other": [7, 8, 9],
    }
    out = _kept(r, keep)
    assert isinstance(out["collective_starts_ns"], np.ndarray)
    assert out["collective_starts_ns"].tolist() == [1, 3]
    assert out["collective_ends_ns"] == [4, 6]
    assert out["collective_kinds"] == ["a", "c"] and isinstance(out["collective_kinds"], list)
    assert out["collective_iterations"] == [0, 1]
    assert out["collective_ops"] is None and "collective_groups" not in out
    assert out["other"] == [7, 8, 9]
    assert r["collective_ends_ns"] == [4, 5, 6]
