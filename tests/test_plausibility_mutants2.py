"""Mutants of ``analyzers/plausibility.py``'s ``untimed_rows`` and ``lost_graph_replays`` (bc77584, e7bec74)
that the module's tests let live: hand-built traces (SYNTHETIC: ten cudaGraphLaunch calls 100 us apart on one
thread, each replay's work one op of its correlation unless left out), exact doubts."""

from __future__ import annotations

from tests.builders import make_trace
from tracekit.analyzers.plausibility import lost_graph_replays, untimed_rows

US = 1000
HEAD = (
    "verdict uncertain: {lost} of {n} CUDA-graph launches have no kernel or graph execution in the trace, "
    "although later launches of their thread (or, for a thread that launches graphs only, of their process) "
    "have theirs: the device ran those replays, but "
)
NOT_RECORDED = "the profiler recorded none of their work (graph nodes not traced, or their records dropped)"
SHORT_BOTH = ", so the busy time and kernel counts are short by whole graphs"
SHORT_BUSY = ", so the busy time is short by whole graphs"


def _replays(lost: tuple[int, ...], untimed: object = None, n: int = 10, thread_of=None, extra=()):
    """``n`` graph launches (correlation i + 1, thread ``thread_of(i)``, default 1), each with its op unless
    in ``lost``; ``extra`` api rows (start, end, correlation, name, thread)."""
    api, ops = [], []
    for i in range(n):
        s = i * 100 * US
        api.append((s, s + 2 * US, i + 1, "cudaGraphLaunch", thread_of(i) if thread_of else 1))
        if i not in lost:
            ops.append((s + 5 * US, s + 40 * US, i + 1, 7))
    meta: dict[str, object] = {"path": "hand-built"}
    if untimed is not None:
        meta["untimed_rows"] = untimed
    return make_trace(
        api=api + list(extra),
        ops=ops,
        meta=meta,
        api_fields=("start", "end", "correlation", "name", "thread"),
    )


def test_untimed_rows_reads_the_readers_counts_as_str_to_int() -> None:
    assert untimed_rows(_replays((), {"graph": 2.0, 3: "4"})) == {"graph": 2, "3": 4}
    assert untimed_rows(_replays((), ["graph"])) == {}
    assert untimed_rows(_replays(())) == {}
    counts = untimed_rows(_replays((), {"kernel": 1.0}))
    assert [type(v) for v in counts.values()] == [int]


def test_lost_replays_without_untimed_rows_were_not_recorded() -> None:
    assert lost_graph_replays(_replays((3, 6))) == HEAD.format(lost=2, n=10) + NOT_RECORDED + SHORT_BOTH
    # rows of other kinds untimed are no graph's work
    untimed = {"graph": 0, "memcpy": 4}
    assert (
        lost_graph_replays(_replays((3, 6), untimed)) == HEAD.format(lost=2, n=10) + NOT_RECORDED + SHORT_BOTH
    )


def test_as_many_untimed_whole_graph_rows_as_lost_replays_are_their_cause() -> None:
    cause = (
        "their whole-graph rows are in the export without timestamps (2 whole-graph rows with start and end 0: "
        "CUPTI could not time them), which the reader leaves out"
    )
    assert (
        lost_graph_replays(_replays((3, 6), {"graph": 2})) == HEAD.format(lost=2, n=10) + cause + SHORT_BUSY
    )
    more = lost_graph_replays(_replays((3, 6), {"graph": 3}))
    assert more == HEAD.format(lost=2, n=10) + cause.replace("(2 whole", "(3 whole") + SHORT_BUSY


def test_fewer_untimed_rows_than_lost_replays_give_both_causes() -> None:
    some = (
        "the export holds 1 whole-graph row and 3 kernel rows without timestamps (start and end 0: CUPTI could "
        "not time them), which the reader leaves out: the work of some of those replays; for the others, graph "
        "nodes not traced, or their records dropped"
    )
    doubt = lost_graph_replays(_replays((3, 6), {"graph": 1, "kernel": 3}))
    assert doubt == HEAD.format(lost=2, n=10) + some + SHORT_BOTH
    one_kernel = lost_graph_replays(_replays((3, 6), {"kernel": 1}))
    assert (
        one_kernel
        == HEAD.format(lost=2, n=10)
        + (
            "the export holds 1 kernel row without timestamps (start and end 0: CUPTI could not time them), which "
            "the reader leaves out: the work of some of those replays; for the others, graph nodes not traced, or "
            "their records dropped"
        )
        + SHORT_BOTH
    )
    two_graphs = lost_graph_replays(_replays((3, 6, 7), {"graph": 2}))
    assert two_graphs is not None and "the export holds 2 whole-graph rows without timestamps" in two_graphs


def test_the_share_of_lost_replays_at_exactly_a_tenth_counts() -> None:
    assert lost_graph_replays(_replays((3,))) == HEAD.format(lost=1, n=10) + NOT_RECORDED + SHORT_BOTH
    assert lost_graph_replays(_replays((3,), n=11)) is None  # 1 of 11: under a tenth


def test_the_last_launches_of_a_thread_are_not_counted() -> None:
    # the last replay may not have run before the capture ended
    assert lost_graph_replays(_replays((9,))) is None
    assert lost_graph_replays(_replays((8, 9))) is None
    assert lost_graph_replays(_replays(())) is None


def test_a_thread_that_launches_graphs_only_is_judged_by_its_process() -> None:
    # the graph launches of thread 2 lose their work; thread 1's kernel launch after them has its op
    def thread_of(i: int) -> int:
        return 2 if i in (3, 6) else 1

    last = (2_000 * US, 2_002 * US, 99, "cudaLaunchKernel", 1)
    trace = _replays((3, 6), thread_of=thread_of, extra=[last])
    trace = make_trace(
        api=trace.api.select("start", "end", "correlation", "name", "thread").rows(),
        ops=[
            *trace.ops.select("start", "end", "correlation", "stream").rows(),
            (2_005 * US, 2_010 * US, 99, 7),
        ],
        api_fields=("start", "end", "correlation", "name", "thread"),
    )
    assert lost_graph_replays(trace) == HEAD.format(lost=2, n=10) + NOT_RECORDED + SHORT_BOTH


def test_a_threads_last_launches_are_not_counted_though_another_thread_launches_later() -> None:
    # thread 1's last two replays lost; thread 2 launches a kernel (with its op) after them: thread 1's own
    # last linked launch is the limit, not its process's
    base = _replays((8, 9))
    trace = make_trace(
        api=[
            *base.api.select("start", "end", "correlation", "name", "thread").rows(),
            (2_000 * US, 2_001 * US, 99, "cudaLaunchKernel", 2),
        ],
        ops=[
            *base.ops.select("start", "end", "correlation", "stream").rows(),
            (2_005 * US, 2_010 * US, 99, 7),
        ],
        api_fields=("start", "end", "correlation", "name", "thread"),
    )
    assert lost_graph_replays(trace) is None
