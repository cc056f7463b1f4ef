"""The real Nsight Systems probe exports (sample_traces/h200_nsys_probe, benchmarks/nsys_probe.py on an H200):
what nsys 2025.3.1 records around cudaProfilerStop and for CUDA graphs, and how tracekit reads it."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest

import tracekit

PROBE = Path(__file__).resolve().parents[1] / "sample_traces" / "h200_nsys_probe"


def _sql(tmp_path: Path, name: str) -> sqlite3.Connection:
    db = tmp_path / name.removesuffix(".gz")
    with gzip.open(PROBE / name) as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def test_nothing_after_cuda_profiler_stop_is_recorded(tmp_path: Path) -> None:
    """Under --capture-range-end=stop the 'after-stop' ranges, their kernels and waits are absent, and the range
    open at the stop ends at the capture's end (ANALYSIS_DETAILS.duration), not at its pop 20 ms later."""
    con = _sql(tmp_path, "probe-stop-node.nsys.sqlite.gz")
    duration = con.execute("SELECT duration FROM ANALYSIS_DETAILS").fetchone()[0]
    assert duration == 14_957_197
    texts = [r[0] for r in con.execute("SELECT text FROM NVTX_EVENTS ORDER BY start")]
    assert texts == ["iteration", "iteration", "iteration", "open-at-stop"]
    open_range = con.execute("SELECT start, end FROM NVTX_EVENTS WHERE text = 'open-at-stop'").fetchone()
    assert open_range == (12_280_069, duration)
    last = max(
        con.execute(f"SELECT max(end) FROM {t}").fetchone()[0]
        for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "OSRT_API")
    )
    assert last < duration
    stopped = con.execute("SELECT timestamp FROM DIAGNOSTIC_EVENT WHERE text = 'Profiling has stopped.'")
    assert stopped.fetchone()[0] == duration


def test_tracekit_reads_the_range_open_at_the_stop_as_never_closed() -> None:
    trace = tracekit.read_trace(PROBE / "probe-stop-node.nsys.sqlite.gz")
    assert trace.ranges.select("name", "end").rows() == [
        ("iteration", 12_047_705),
        ("iteration", 12_176_528),
        ("iteration", 12_278_436),
        ("open-at-stop", None),
    ]
    assert any(
        "never closed (the capture ended inside them, at 14957197 ns)" in w for w in trace.meta["warnings"]
    )
    a = tracekit.analyze(PROBE / "probe-stop-node.nsys.sqlite.gz")
    # 2 eager products and the graph's 3 per iteration; the open range's one kernel is in no iteration
    assert a.iterations["kernels"].to_list() == [5, 5, 5]
    assert a.iterations["launches"].to_list() == [3, 3, 3]


def test_graph_node_ids_carry_the_instantiated_graph(tmp_path: Path) -> None:
    """nsys 2025.3 writes KERNEL.graphNodeId and no graphId: the upper 32 bits are the graph the node belongs
    to (2, the instantiation, whose nodes CUDA_GRAPH_NODE_EVENTS shows cloned from graph 1's), the lower the
    node; eager kernels have none. Under --cuda-graph-trace=graph the same replays are whole-graph rows with
    graphId 1 and graphExecId 2."""
    con = _sql(tmp_path, "probe-stop-node.nsys.sqlite.gz")
    columns = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    assert "graphNodeId" in columns and "graphId" not in columns
    nodes = sorted({r[0] for r in con.execute("SELECT graphNodeId FROM CUPTI_ACTIVITY_KIND_KERNEL")}, key=str)
    assert nodes == [(2 << 32) + 0, (2 << 32) + 1, (2 << 32) + 2, None]
    clones = con.execute(
        "SELECT graphNodeId, originalGraphNodeId FROM CUDA_GRAPH_NODE_EVENTS WHERE originalGraphNodeId IS NOT NULL"
    ).fetchall()
    assert sorted(clones) == [((2 << 32) + n, (1 << 32) + n) for n in range(3)]
    con = _sql(tmp_path, "probe-stop-graph.nsys.sqlite.gz")
    assert con.execute(
        "SELECT DISTINCT graphId, graphExecId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
    ).fetchall() == [(1, 2)]
    assert con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()[0] == 3


def test_whole_graph_replays_count_as_device_work() -> None:
    """--cuda-graph-trace=graph: each replay is one 'graph' op, so every iteration has its 2 eager kernels and
    the replay; busy includes the replay's ~10 µs."""
    trace = tracekit.read_trace(PROBE / "probe-stop-graph.nsys.sqlite.gz")
    kinds = dict(trace.ops.group_by("kind").len().rows())
    assert kinds == {"kernel": 7, "graph": 3}
    a = tracekit.analyze(PROBE / "probe-stop-graph.nsys.sqlite.gz")
    assert a.iterations["gpu_busy_ms"].min() > 0.015


@pytest.mark.parametrize("name", ["probe-stop-node-quiet.nsys.sqlite.gz", "probe-stop-node.nsys.sqlite.gz"])
def test_nsys_says_events_may_be_lost_whenever_a_stop_ends_the_capture(tmp_path: Path, name: str) -> None:
    """With nothing traced after the stop but a range's pop and a sleep, nsys writes the same 'Not all ...
    might have been collected.' lines, after 'Profiling has stopped.'."""
    con = _sql(tmp_path, name)
    rows = con.execute("SELECT timestamp, text FROM DIAGNOSTIC_EVENT WHERE text LIKE 'Not all %'").fetchall()
    stopped = con.execute("SELECT timestamp FROM DIAGNOSTIC_EVENT WHERE text = 'Profiling has stopped.'")
    stop = stopped.fetchone()[0]
    assert sorted(t for _, t in rows) == [
        "Not all CUDA events might have been collected.",
        "Not all NVTX events might have been collected.",
        "Not all OS runtime libraries events might have been collected.",
    ]
    assert all(ts > stop for ts, _ in rows)


def test_the_probe_runs_what_collect_runs_and_what_the_committed_exports_were_made_with() -> None:
    """benchmarks/nsys_probe.py builds each variant from collect's own command (build_profile_argv): its
    'stop-node' variant is that command unchanged, 'stop-graph' differs in the graph trace mode alone, and each
    committed variant's recorded command (the -o path aside) is what the probe builds today."""
    import json
    import sys

    sys.path.insert(0, str(PROBE.parents[1] / "benchmarks"))
    from nsys_probe import variant_argv

    from tracekit.collectors.profilers.nsys import build_profile_argv

    child = ["python", "child.py"]
    collect = build_profile_argv("nsys", "out/base", child, cuda=True)
    assert variant_argv("nsys", "out/base", child, "stop-node") == collect
    graph = variant_argv("nsys", "out/base", child, "stop-graph")
    assert [a for a in graph if a not in collect] == ["--cuda-graph-trace=graph"]
    whole = variant_argv("nsys", "out/base", child, "whole-node")
    assert [a for a in collect if a not in whole] == [
        "--capture-range=cudaProfilerApi",
        "--capture-range-end=stop",
    ]
    recorded = json.loads((PROBE / "nsys_probe.json").read_text())["variants"]
    assert set(recorded) == {"stop-node", "stop-node-quiet", "stop-node-nvtx"}
    for name, variant in recorded.items():
        built = variant_argv("nsys", "BASE", child, name)[1:-2]
        assert [a for a in variant["argv"] if "/" not in a] == [a for a in built if a != "BASE"], name
