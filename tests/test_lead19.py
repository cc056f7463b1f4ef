"""The lead's round-19 fixes that no helper's file pins (hand-built frames, exact answers)."""

from __future__ import annotations

import polars as pl

from tracekit.model import API_NAMES_READ, API_SCHEMA, OPS_SCHEMA, Trace, conform, name_unnamed_launches


def _frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Four calls of process 1 without a name: one launched a kernel (id 1), one a whole graph (id 2), one a
    copy (id 3), one nothing (id 4); a named call (id 5) of a kernel; a call of process 2 with id 1, no name,
    whose id is process 1's kernel's only (no op of process 2)."""
    api = conform(
        pl.DataFrame(
            {
                "start": [0, 10, 20, 30, 40, 50],
                "end": [5, 15, 25, 35, 45, 55],
                "pid": [1, 1, 1, 1, 1, 2],
                "correlation": [1, 2, 3, 4, 5, 1],
                "name": [None, None, None, None, "cuLaunchKernel", None],
            }
        ),
        API_SCHEMA,
    )
    ops = conform(
        pl.DataFrame(
            {
                "start": [100, 200, 300, 400],
                "end": [110, 210, 310, 410],
                "pid": [1, 1, 1, 1],
                "correlation": [1, 2, 3, 5],
                "kind": ["kernel", "graph", "memcpy", "kernel"],
            }
        ),
        OPS_SCHEMA,
    )
    return api, ops


def test_calls_of_no_name_that_launched_kernels_or_graphs_are_named_so() -> None:
    api, ops = _frames()
    named, count, unnamed = name_unnamed_launches(api, ops)
    assert named["name"].to_list() == [
        "cudaLaunchKernel",
        "cudaGraphLaunch",
        None,
        None,
        "cuLaunchKernel",
        None,
    ]
    assert (count, unnamed) == (2, 5)
    assert named.columns == api.columns


def test_a_trace_names_them_and_says_so() -> None:
    """Where the reader read the names (``meta[API_NAMES_READ]``); not where it was asked for none (the
    calls' names all null by request: nothing named, nothing said)."""
    api, ops = _frames()
    assert Trace(ops=ops, api=api).api["name"].null_count() == 5
    assert Trace(ops=ops, api=api).warnings == []
    trace = Trace(ops=ops, api=api, meta={API_NAMES_READ: True})
    assert trace.api.sort("start")["name"].to_list()[:2] == ["cudaLaunchKernel", "cudaGraphLaunch"]
    assert trace.warnings == [
        "5 API calls have no name (a name id missing from the export's strings, or none written): the 2 of them "
        "that launched kernels or CUDA graphs (by correlation id) are named cudaLaunchKernel or cudaGraphLaunch, "
        "so that they count as launches; the others stay unnamed (their time counts as other API time)"
    ]


def test_a_trace_made_again_from_its_frames_and_meta_names_and_says_nothing_twice() -> None:
    """A --cache hit builds the Trace again from the stored frames and meta: the calls of no name left (ids 3,
    4 and process 2's) are not said a second time, and the flag is not kept in meta."""
    api, ops = _frames()
    trace = Trace(ops=ops, api=api, meta={API_NAMES_READ: True})
    again = Trace(ops=trace.ops, api=trace.api, meta=dict(trace.meta, warnings=list(trace.warnings)))
    assert len(again.warnings) == 1 and API_NAMES_READ not in again.meta
    assert again.api["name"].to_list() == trace.api["name"].to_list()
