"""perf17: the analysis made faster without changing an answer. Each faster path is checked here against the
plain computation it replaces, on small hand-built (synthetic) frames whose answers are known exactly."""

from __future__ import annotations

import gc

import polars as pl
import pytest

from tracekit.analyzers import attribution, iterations, plausibility
from tracekit.model import (
    _NAME_MASKS,
    GRAPH_LAUNCH_NAMES,
    LAUNCH_API_NAMES,
    calls_named,
    names_mask,
)

# A synthetic API frame: suffixed names (stripped for calls_named, not for an exact match), a null name.
NAMES = [
    "cudaLaunchKernel",
    None,
    "cudaLaunchKernel_v7000",
    "cudaGraphLaunch",
    "cudaStreamSynchronize",
    "cudaMemcpyAsync",
    "cudaGraphLaunch_v10000",
    "cudaLaunchKernel",
]


def _api() -> pl.DataFrame:
    n = len(NAMES)
    return pl.DataFrame(
        {
            "start": list(range(0, 10 * n, 10)),
            "end": list(range(5, 10 * n + 5, 10)),
            "pid": [1] * n,
            "thread": [7] * n,
            "correlation": list(range(1, n + 1)),
            "name": NAMES,
        }
    )


def test_names_mask_is_the_is_in_it_replaces_nulls_included() -> None:
    api = _api()
    # exact names: the suffixed launch is no launch, the null name stays null
    assert names_mask(api, LAUNCH_API_NAMES, strip=False).to_list() == [
        True,
        None,
        False,
        True,
        False,
        False,
        False,
        True,
    ]
    assert (
        names_mask(api, LAUNCH_API_NAMES, strip=False).to_list()
        == api.select(pl.col("name").is_in(LAUNCH_API_NAMES)).to_series().to_list()
    )
    # stripped: cudaLaunchKernel_v7000 and cuGraphLaunch_ptsz count
    assert calls_named(api, LAUNCH_API_NAMES).get_column("correlation").to_list() == [1, 3, 4, 7, 8]
    assert calls_named(api, GRAPH_LAUNCH_NAMES).get_column("correlation").to_list() == [4, 7]


def test_names_mask_is_kept_per_frame_and_forgotten_with_it() -> None:
    api = _api()
    first = names_mask(api, GRAPH_LAUNCH_NAMES)
    assert names_mask(api, GRAPH_LAUNCH_NAMES) is first  # asked again: the kept answer
    # another frame of other names is asked anew, never given the first frame's answer
    other = api.with_columns(pl.lit("cudaGraphLaunch").alias("name"))
    assert names_mask(other, GRAPH_LAUNCH_NAMES).to_list() == [True] * len(NAMES)
    assert names_mask(api, GRAPH_LAUNCH_NAMES).to_list() == [
        False,
        None,
        False,
        True,
        False,
        False,
        True,
        False,
    ]
    key = id(api)
    assert key in _NAME_MASKS
    del api, first
    gc.collect()
    assert key not in _NAME_MASKS


def _classify_by_replace(api: pl.DataFrame) -> tuple[list[int], int]:
    """The classification as it was before perf17 (a replace per row), the reference."""
    names = api.get_column("name")
    distinct = pl.DataFrame({"name": names.unique().drop_nulls()})
    coded = distinct.with_columns(
        attribution.api_cause(pl.col("name")).alias("code"),
        pl.col("name")
        .str.replace(attribution.API_NAME_SUFFIX, "")
        .is_in(list(GRAPH_LAUNCH_NAMES))
        .alias("graph"),
    )
    codes = names.replace_strict(
        coded.get_column("name"), coded.get_column("code"), default=3, return_dtype=pl.Int8
    ).fill_null(3)
    graph = coded.filter("graph").get_column("name")
    return codes.to_list(), int(names.is_in(graph.implode()).sum())


def test_classify_gives_every_call_its_code_and_counts_graph_launches() -> None:
    api = _api()
    codes, graphs = attribution._classify(api)
    # launch 1, sync 2, other 3 (a null name and a memcpy are other); two graph launches
    assert codes.tolist() == [1, 3, 1, 1, 2, 3, 1, 1]
    assert str(codes.dtype) == "int8"
    assert graphs == 2
    assert (codes.tolist(), graphs) == _classify_by_replace(api)


def _ops(pids: list[int | None], devices: list[int | None], streams: list[int | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {"pid": pids, "device": devices, "stream": streams},
        schema={"pid": pl.Int64, "device": pl.Int32, "stream": pl.Int64},
    )


def _by_hash(ops: pl.DataFrame) -> list[tuple[int, bool, bool]]:
    """The per-process answer as it was before perf17 (every row hashed), the reference."""
    return sorted(
        ops.select("pid", "device", "stream")
        .unique()
        .drop_nulls("pid")
        .group_by("pid")
        .agg((pl.col("device").n_unique() == 1).alias("one_device"), (pl.len() == 1).alias("one_stream"))
        .rows()
    )


@pytest.mark.parametrize(
    ("devices", "streams", "expected"),
    [
        ([0, 0, 0], [7, 7, 7], (True, True)),
        ([0, 0, 0], [7, 8, 7], (True, False)),
        ([0, 1, 0], [7, 7, 7], (False, False)),
        ([0, None, 0], [7, 7, 7], (False, False)),  # a null device is a device of its own, as unique() says
        ([0, 0, 0], [None, None, None], (True, True)),
    ],
)
def test_one_process_devices_and_streams_as_the_hash_says(
    devices: list[int | None], streams: list[int | None], expected: tuple[bool, bool]
) -> None:
    ops = _ops([5, 5, 5], devices, streams)
    got = plausibility._devices_and_streams(ops)
    assert got.schema["pid"] == pl.Int64
    assert got.rows() == [(5, *expected)]
    assert sorted(got.rows()) == _by_hash(ops)


def test_several_processes_devices_and_streams_as_the_hash_says() -> None:
    ops = _ops([5, 5, 6, None], [0, 0, 1, 3], [7, 8, 9, 9])
    assert sorted(plausibility._devices_and_streams(ops).rows()) == [(5, True, False), (6, True, True)]
    assert sorted(plausibility._devices_and_streams(ops).rows()) == _by_hash(ops)


def _gaps() -> pl.DataFrame:
    # 13 gaps, two iterations; durations with ties at the 10th longest (earlier rows first among equals)
    durations = [5, 9, 9, 1, 7, 9, 3, 9, 2, 8, 9, 6, 4]
    starts = [100 * i for i in range(len(durations))]
    return pl.DataFrame(
        {
            "iteration": [0] * 6 + [1] * 7,
            "start_ns": starts,
            "end_ns": [s + d for s, d in zip(starts, durations, strict=True)],
            "duration_ns": durations,
            "position": ["inner"] * len(durations),
        }
    )


def test_longest_gaps_from_rows_found_once_equal_those_found_again() -> None:
    gaps = _gaps()
    longest = iterations._longest(gaps, iterations.LONGEST_GAPS)
    assert longest.get_column("_row").to_list() == [1, 2, 5, 7, 10, 9, 4, 11, 0, 12]
    frame = pl.DataFrame({"index": [0, 1], "window_start_ns": [0, 600]})
    again = iterations.longest_gaps(gaps, frame, None)
    once = iterations.longest_gaps(gaps, frame, None, rows=longest.get_column("_row"))
    assert once.equals(again)
    assert once.get_column("duration_ns").to_list() == [9] * 5 + [8, 7, 6, 5, 4]
    assert once.get_column("start_ns").to_list()[:3] == [100, 200, 500]


def test_cpu_context_returns_the_longest_rows_it_used() -> None:
    from tracekit.model import Trace

    gaps = _gaps()
    ranges = pl.DataFrame(
        {
            "iteration": [0, 1],
            "range_start": [0, 600],
            "range_end": [600, 1300],
            "pid": [1, 1],
            "thread": [7, 7],
        }
    )
    with_context, rows = iterations._with_cpu_context(Trace(api=_api()), gaps, ranges)
    assert rows is not None
    assert rows.to_list() == iterations._longest(gaps, iterations.LONGEST_GAPS).get_column("_row").to_list()
    assert with_context.height == gaps.height and "cpu_context" in with_context.columns
    empty, none = iterations._with_cpu_context(Trace(api=_api()), gaps.clear(), ranges)
    assert none is None and empty.columns[-1] == "cpu_context"


def test_sort_frame_gives_what_a_sort_gives_on_every_small_frame() -> None:
    import itertools

    from tracekit.model import sort_frame

    # every 3-row frame of two keys in {0, 1, 2} (ties on the first key, on both, none), each order asked
    values = list(itertools.product(range(3), repeat=2))
    checked = 0
    for rows in itertools.product(values, repeat=3):
        frame = pl.DataFrame({"a": [r[0] for r in rows], "b": [r[1] for r in rows], "row": [0, 1, 2]})
        for descending in ([False, False], [False, True], [True, False]):
            want = frame.sort(["a", "b"], descending=descending, maintain_order=True)
            assert sort_frame(frame, ["a", "b"], descending).equals(want)
            checked += 1
        assert sort_frame(frame, ["a"], [False]).equals(frame.sort("a", maintain_order=True))
    assert checked == 729 * 3


def test_time_unit_answers_as_resolution_does() -> None:
    from tracekit.analyzers import resolution

    whole = [1000 * i for i in range(30)]
    cases = {
        "whole microseconds": (whole, [t + 1000 for t in whole], 1000),
        "one ns start first": ([1, *whole[1:]], [t + 1000 for t in whole], None),
        "one ns end last": (whole, [*(t + 1000 for t in whole[:-1]), 29_001], None),
        "too few ops": (whole[:19], [t + 1000 for t in whole[:19]], None),
        "nulls left out": ([None, *whole], [7, *(t + 1000 for t in whole)], 1000),
    }
    for name, (start, end, unit) in cases.items():
        ops = pl.DataFrame({"start": start, "end": end}, schema={"start": pl.Int64, "end": pl.Int64})
        assert iterations._time_unit_ns(ops) == unit, name
        assert resolution.time_unit_ns(ops) == unit, name


def test_near_keeps_every_row_that_overlaps_a_bound() -> None:
    import itertools

    from tracekit.analyzers.gap_context import _near

    # rows sorted by start, one long row reaching over later ones, a null end, a zero-length row
    frame = pl.DataFrame(
        {
            "start": [0, 5, 10, 12, 20, 30, 31, 40],
            "end": [3, 45, 11, None, 25, 30, 35, 50],
            "name": list("abcdefgh"),
        }
    )
    overlap = pl.col("end") > pl.col("start")

    def brute(bounds: list[tuple[int, int]]) -> list[str]:
        hit = pl.any_horizontal([(pl.col("start") < e) & (pl.col("end") > s) for s, e in bounds])
        return frame.filter(overlap & hit).get_column("name").to_list()

    points = [-1, 0, 3, 4, 10, 11, 12, 21, 30, 31, 36, 45, 50, 60]
    pairs = [(s, e) for s, e in itertools.product(points, repeat=2) if s < e]
    for bound in pairs:
        near = _near(frame, [bound])
        got = near.filter(overlap & (pl.col("start") < bound[1]) & (pl.col("end") > bound[0]))
        assert got.get_column("name").to_list() == brute([bound]), bound
    # two bounds: the union, in the frame's order
    both = _near(frame, [(21, 22), (1, 2)])
    hit = pl.any_horizontal([(pl.col("start") < e) & (pl.col("end") > s) for s, e in [(21, 22), (1, 2)]])
    assert both.filter(overlap & hit).get_column("name").to_list() == ["a", "b", "e"]
    assert brute([(21, 22), (1, 2)]) == ["a", "b", "e"]
    # (1, 2): 'a' [0, 3) alone is near; (21, 22): rows from 'b' (whose end, 45, is the first reach past 21)
    # to 'e' (the last starting before 22); 'c' and 'd' are near but overlap nothing
    assert _near(frame, [(1, 2)]).get_column("name").to_list() == ["a"]
    assert both.get_column("name").to_list() == ["a", "b", "c", "d", "e"]
    unsorted = frame.reverse()
    assert _near(unsorted, [(21, 22)]) is unsorted  # not sorted by start: every row, for the caller's test


def test_linked_calls_the_same_whichever_side_is_looked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    # ops of (pid, correlation) 1..12 in process 1 and one op of pid 2; calls of pid 1: 3 and 11 have an op,
    # 40 has none, a null correlation has no key (linked null)
    ops = pl.DataFrame(
        {"pid": [1] * 12 + [2], "correlation": [*range(1, 13), 40]},
        schema={"pid": pl.Int64, "correlation": pl.Int64},
    )
    calls = pl.DataFrame(
        {
            "pid": [1, 1, 1, 1],
            "thread": [7, 7, 7, 7],
            "start": [10, 20, 30, 40],
            "correlation": [3, 40, None, 11],
        },
        schema={"pid": pl.Int64, "thread": pl.Int64, "start": pl.Int64, "correlation": pl.Int64},
    )
    few, few_keys = plausibility._linked_calls(calls, ops)  # 4 calls x 8 >= 13 ops: the ops' keys are the set
    monkeypatch.setattr(plausibility, "LINK_PROBE_RATIO", 1)  # 4 < 13: the calls' keys are the set
    probed, probed_keys = plausibility._linked_calls(calls, ops)
    assert few.get_column("linked").to_list() == [True, False, None, True]
    assert probed.equals(few)
    assert probed_keys.equals(few_keys) and few_keys.len() == 13


def test_op_threads_of_an_enum_kind_as_of_its_strings() -> None:
    kinds = pl.Enum(["kernel", "memcpy", "memset", "operator", "graph"])
    ops = pl.DataFrame(
        {"kind": pl.Series(["kernel", None, "operator", "memcpy"], dtype=kinds), "stream": [1, 2, 3, 4]}
    )
    assert iterations._op_threads(ops).to_list() == [None, None, 3, None]
    as_strings = ops.with_columns(pl.col("kind").cast(pl.String))
    assert iterations._op_threads(as_strings).to_list() == [None, None, 3, None]
    no_operator = pl.DataFrame(
        {
            "kind": pl.Series(["kernel", None, "memcpy", "memcpy"], dtype=pl.Enum(["kernel", "memcpy"])),
            "stream": [1, 2, 3, 4],
        }
    )
    got = iterations._op_threads(no_operator)
    assert got.to_list() == [None] * 4 and got.dtype == pl.Int64 and got.name == "thread"


def test_names_mask_of_none_or_every_name_of_the_frame_as_is_in_says() -> None:
    api = pl.DataFrame({"name": ["cudaLaunchKernel", None, "cudaLaunchKernel"]})
    every = names_mask(api, LAUNCH_API_NAMES)
    none = names_mask(api, ["cudaStreamBeginCapture"])
    assert every.to_list() == [True, None, True] and every.dtype == pl.Boolean
    assert none.to_list() == [False, None, False] and none.dtype == pl.Boolean
    assert every.to_list() == api.select(pl.col("name").is_in(["cudaLaunchKernel"])).to_series().to_list()
    nulls = pl.DataFrame({"name": [None, None]}, schema={"name": pl.String})
    assert names_mask(nulls, LAUNCH_API_NAMES).to_list() == [None, None]
    assert calls_named(nulls, LAUNCH_API_NAMES).is_empty() and calls_named(api, LAUNCH_API_NAMES).height == 2
