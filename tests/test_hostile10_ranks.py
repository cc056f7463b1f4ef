"""Process groups by kernel (``collective_groups``, ``group_ranks``) against odd values (round 10). The
compact results are hand-built (labelled synthetic: tests/builders.compact_result)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import compact_result
from tracekit.analyzers.ranks import by_group, summarize


def _labelled(name: str, rank: int, groups: list[Any], group_ranks: Any = None) -> dict[str, Any]:
    ends = [1_000_000 * (i + 1) for i in range(len(groups))]
    r = compact_result(name, rank, ends=ends)
    return {
        **r,
        "collective_ops": ["allreduce"] * len(groups),
        "collective_groups": groups,
        "group_ranks": group_ranks,
    }


def test_member_ranks_that_are_no_list_of_integers_are_not_known() -> None:
    """``group_ranks`` values that are not lists of integers (a cache entry of another layout: text, a
    number, a list of text or booleans): before, ``int(':')`` stopped the ranks' summary with a ValueError.
    Now the group's members are not known, and it is matched as a group whose members were not said."""
    for odd in (":", 5, ["a", "b"], [True, False], {"0": 1}, [0.5]):
        a = _labelled("a", 0, ["0", "0"], {"0": odd})
        b = _labelled("b", 1, ["0", "0"], {"0": [0, 1]})
        out, why, _ = by_group([a, b])
        assert why is None and [r["matched_group"] for r in out] == ["0", "0"], odd
        assert summarize([a, b])["clocks"]["offsets_ns"] == [0, 0]


def test_negative_and_repeated_member_ranks_do_not_misplace_a_rank() -> None:
    """Members [-1, 0, 0] (a negative rank, a repeat): rank 1 is not among them, so group 0 is not matched."""
    a = _labelled("a", 0, ["0"], {"0": [-1, 0, 0]})
    b = _labelled("b", 1, ["0"], {"0": [-1, 0, 0]})
    _, why, _ = by_group([a, b])
    assert why is not None and "no process group's collectives are in every trace" in why
    assert "group 0 (ranks -1, 0)" in why


def test_group_names_given_as_numbers_match_their_text() -> None:
    """One trace's group names as numbers (0), the other's as text ("0"): the same group. Before, a group
    named 0 read as no group (falsy), so the groups were not used at all."""
    a = _labelled("a", 0, [0, 0, 0])
    b = _labelled("b", 1, ["0", "0", "0"])
    out, why, _ = by_group([a, b])
    assert why is None and [r.get("matched_group") for r in out] == ["0", "0"]
    assert [len(r["collective_ends_ns"]) for r in out] == [3, 3]


def test_collectives_without_a_group_are_said_to_be_left_out() -> None:
    """Rank 1's third collective names no process group (its args lost, or launched outside the group): it
    is left out of the matching, as before, and now the note says so (were it group 0's, the collectives
    after it are matched one off)."""
    a = _labelled("a", 0, ["0"] * 4, {"0": [0, 1]})
    b = _labelled("b", 1, ["0", "0", "", "0"], {"0": [0, 1]})
    out, why, note = by_group([a, b])
    assert why is None and [len(r["collective_ends_ns"]) for r in out] == [4, 3]
    assert note == (
        "the traces' collectives name a process group only in part: clocks and stragglers are matched on "
        "process group 0 (ranks 0, 1)'s collectives, which every trace holds, in their order; collectives that "
        "name no process group are left out (rank 1: 1): were some of them group 0's, its collectives would be "
        "matched one off after them"
    )


GROUP = st.one_of(st.sampled_from(["0", "1", "2", ""]), st.none(), st.integers(0, 2))
MEMBERS = st.one_of(
    st.none(), st.lists(st.integers(-2, 5), max_size=6), st.text(max_size=3), st.integers(), st.booleans()
)


@st.composite
def _result(draw, rank: int) -> dict[str, Any]:
    n = draw(st.integers(0, 6))
    r = _labelled(f"r{rank}", rank, draw(st.lists(GROUP, min_size=n, max_size=n)))
    r["rank"] = draw(st.sampled_from([rank, rank, None]))
    if draw(st.booleans()):  # groups not one per collective
        r["collective_groups"] = r["collective_groups"][: max(n - 1, 0)]
    r["group_ranks"] = draw(
        st.one_of(
            st.none(), st.dictionaries(st.sampled_from(["0", "1", "2"]), MEMBERS, max_size=3), st.text()
        )
    )
    return r


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(2, 4).flatmap(lambda k: st.tuples(*[_result(i) for i in range(k)])))
def test_by_group_never_raises_and_keeps_each_trace_whole(results: tuple[dict[str, Any], ...]) -> None:
    """Property: on any labels and member lists, by_group and the summary raise nothing; each restricted
    trace keeps one entry per collective in every per-collective list, all of the chosen group."""
    out, why, _ = by_group(list(results))
    summarize(list(results))
    for r in out:
        n = len(r["collective_ends_ns"])
        assert len(r["collective_starts_ns"]) == n
        if "matched_group" in r:
            assert len(r["collective_groups"]) == n and len(r["collective_ops"]) == n
            assert all(("" if g is None else str(g)) == r["matched_group"] for g in r["collective_groups"])
    if why is not None:
        assert out == list(results)


# ------------------------------------------------------------- what the Kineto reader's meta may hold

_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=8,
)
_CODES = st.lists(st.integers(-3, 2**64), max_size=4).map(lambda v: ",".join(map(str, v)))
_ARGS = st.dictionaries(
    st.sampled_from(["kernels", "device", "stream", "start", "op", "group", "ops", "group_names", "groups"]),
    _VALUE | _CODES,
    max_size=9,
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(_ARGS)
def test_collective_args_never_raise_and_label_each_collective(args: dict[str, Any]) -> None:
    """Property: ``collective_args_frame`` (tracekit/model.py) and ``collective_labels`` (the compact result)
    raise nothing on any meta value (a cache entry of another layout, hand-edited JSON), and give one label
    per collective, text."""
    import polars as pl

    from tracekit.fleet.compact import collective_labels
    from tracekit.model import collective_args_frame

    frame = collective_args_frame(args)
    assert frame.columns == ["device", "stream", "start", "op", "group"]
    ordered = pl.DataFrame({"device": [0, 0], "stream": [13, 13], "start": [1, 2]})
    ops, groups = collective_labels(ordered, args)
    assert len(ops) == len(groups) == 2
    assert all(isinstance(v, str) for v in ops + groups)
