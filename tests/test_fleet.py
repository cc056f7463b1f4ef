"""Many traces at once: the cross-rank truth of simulated rank traces recovered exactly, and the same answers
serially, in a local process pool and on a Dask cluster."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from tests.builders import comm_ops, compact_result
from tests.conftest import SAMPLE_TRACES
from tracekit.analyzers.ranks import summarize
from tracekit.fleet.compact import comm_per_iteration
from tracekit.fleet.run import analyze_many
from tracekit.readers.memory import ALLOCATOR_CONF
from tracekit.session import AnalysisOptions
from tracekit.simulate.ranks import RankSimulation, truth, write_ranks

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fleet as fleet_benchmark  # noqa: E402  (benchmarks/fleet.py: how its clusters load the settings)

SIM = RankSimulation(ranks=4, steps=6, kernels=12, straggler=2, clock_offset_ns=[0, -700_000, 0, 3_000_000])


@pytest.fixture(scope="module")
def rank_traces(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return [str(p) for p in write_ranks(SIM, tmp_path_factory.mktemp("ranks"))]


def _plain(outcomes: list) -> list:
    """The outcomes' results with every iteration column as a list (NaN as None), so that == compares them
    field by field and value by value."""
    out = []
    for o in outcomes:
        assert o.ok, o.error
        its = {k: [None if v != v else v for v in list(c)] for k, c in o.result["iterations"].items()}
        arrays = {k: v.tolist() for k, v in o.result.items() if isinstance(v, np.ndarray)}
        out.append({**o.result, **arrays, "iterations": its})
    return out


def _doc(outcomes: list) -> dict:
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return summarize([o.result for o in outcomes])


def test_simulated_rank_truth_recovered_exactly(rank_traces: list[str]) -> None:
    doc = _doc(analyze_many(rank_traces, AnalysisOptions(), jobs=1))
    want = truth(SIM)
    assert [r["trace"] for r in doc["rows"]] == ["rank 0", "rank 1", "rank 2", "rank 3"]
    clocks = doc["clocks"]
    assert clocks["aligned"] and clocks["residual_us"] == 0.0 and clocks["matched"] == SIM.steps
    assert (
        [o / 1e6 for o in clocks["offsets_ns"]] == want["clock_offset_ms_vs_rank0"] == [0.0, -0.7, 0.0, 3.0]
    )
    straggler = doc["straggler"]
    assert straggler["straggler"] == f"rank {want['straggler_rank']}"
    assert straggler["arrives_last"] == want["straggler_arrives_last"] == SIM.steps
    assert straggler["median_wait_ms"] == pytest.approx(want["straggler_wait_ms_per_step"][0], abs=1e-9)
    assert doc["skew"]["median_start_skew_ms"] == pytest.approx(want["step_start_skew_ms"][0], abs=1e-9)
    assert [r["mean_comm_ms"] for r in doc["rows"]] == pytest.approx(want["comm_ms_per_rank"], abs=1e-9)
    assert [r["mean_exposed_comm_ms"] for r in doc["rows"]] == pytest.approx(
        want["exposed_comm_ms_per_rank"], abs=1e-9
    )


@pytest.mark.parametrize("dropped", ["first", "last"])
def test_a_rank_missing_two_collectives_is_aligned_where_the_steps_line_up(
    rank_traces: list[str], tmp_path: Path, dropped: str
) -> None:
    # Rank 1's capture lacks its first (or last) two collectives: matched by position from the first, its
    # clock was given an offset of two steps with residual 0, and the straggler was found from mismatched
    # collectives. Both ways fit the periodic steps; only the right one lines the steps up.
    paths = list(rank_traces)
    doc = json.loads(gzip.decompress(Path(paths[1]).read_bytes()))
    nccl = [i for i, e in enumerate(doc["traceEvents"]) if "nccl" in str(e.get("name", "")).lower()]
    cut = set(nccl[:2] if dropped == "first" else nccl[-2:])
    doc["traceEvents"] = [e for i, e in enumerate(doc["traceEvents"]) if i not in cut]
    paths[1] = str(tmp_path / "rank1.synthetic.json.gz")
    Path(paths[1]).write_bytes(gzip.compress(json.dumps(doc).encode()))
    result = _doc(analyze_many(paths, AnalysisOptions(), jobs=1))
    want = truth(SIM)
    clocks = result["clocks"]
    assert [o / 1e6 for o in clocks["offsets_ns"]] == want["clock_offset_ms_vs_rank0"]
    matched = "last" if dropped == "first" else "first"  # (the others' collectives that rank 1 still has)
    assert clocks["matched"] == SIM.steps - 2 and clocks["matched_from"] == matched
    assert clocks["why"] == (
        f"traces hold {SIM.steps - 2} to {SIM.steps} collectives; the {matched} {SIM.steps - 2} were matched "
        "(the only way the steps line up)"
    )
    assert result["straggler"]["straggler"] == f"rank {want['straggler_rank']}"
    assert result["straggler"]["arrives_last"] == SIM.steps - 2


def test_pool_gives_the_serial_answer_field_by_field(rank_traces: list[str]) -> None:
    serial = analyze_many(rank_traces, AnalysisOptions(), jobs=1)
    pooled = analyze_many(rank_traces, AnalysisOptions(), jobs=2)
    assert [o.path for o in pooled] == rank_traces  # input order, whatever finished first
    assert _plain(pooled) == _plain(serial)


def test_a_script_without_a_main_guard_runs_in_a_pool(rank_traces: list[str], tmp_path: Path) -> None:
    # multiprocessing runs the main script again in each worker unless told otherwise: a top-level call
    # would then start the analysis again there and fail; the pool hides the main module while it starts
    script = tmp_path / "many.py"
    script.write_text(
        "import tracekit\n"
        f"doc = tracekit.analyze_many({rank_traces!r}, jobs=2)\n"
        "print('traces', doc['traces'], 'failed', len(doc['failed']), doc['straggler']['straggler'])\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["traces", "4", "failed", "0", "rank", "2"]
    assert "bootstrapping" not in done.stderr


def test_dask_local_cluster_gives_the_serial_answer(rank_traces: list[str]) -> None:
    distributed = pytest.importorskip("distributed")
    serial = analyze_many(rank_traces, AnalysisOptions(), jobs=1)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:
        on_dask = analyze_many(rank_traces, AnalysisOptions(), scheduler=c.scheduler_address)
        with distributed.Client(c.scheduler_address) as client:
            settings = client.run(_worker_settings)
    assert _plain(on_dask) == _plain(serial)
    # each worker runs one task at a time, so polars was started with one thread there (unless the user set it)
    threads = os.environ.get("POLARS_MAX_THREADS", "1")
    assert sorted(settings.values()) == [("0", threads, int(threads))] * 2


def _worker_settings() -> tuple[str | None, str | None, int]:
    """(TRACEKIT_DECODE_WORKER, POLARS_MAX_THREADS, polars' thread pool size) where it runs."""
    import polars

    return (
        os.environ.get("TRACEKIT_DECODE_WORKER"),
        os.environ.get("POLARS_MAX_THREADS"),
        polars.thread_pool_size(),
    )


@pytest.fixture(autouse=True)
def _environ_kept() -> Iterator[None]:
    """Each test leaves the environment as it found it: a LocalCluster's nannies set their pre-spawn variables
    (``MALLOC_TRIM_THRESHOLD_``, ``OMP_NUM_THREADS``...) in the test process, where later tests' subprocesses
    would inherit them."""
    with fleet_benchmark.environ_restored():
        yield


def test_the_documented_worker_settings_reach_the_workers() -> None:
    """docs/dask-workers.yaml, loaded as ``DASK_CONFIG`` would load it: a worker started under it has no
    statistical profiler and no ``MALLOC_TRIM_THRESHOLD_`` from the nanny; without it, both are there."""
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    yaml_file = Path(__file__).resolve().parents[1] / "docs" / "dask-workers.yaml"
    settings = dask.config.collect([str(yaml_file)], env={})

    def seen(dask_worker: object) -> tuple[str | None, bool]:
        return os.environ.get("MALLOC_TRIM_THRESHOLD_"), "profile" in dask_worker.periodic_callbacks  # type: ignore[attr-defined]

    answers = []
    for config in ({}, fleet_benchmark.dotted(settings)):
        with (
            fleet_benchmark.environ_restored(),  # a nanny sets its pre-spawn variables in the process that runs it
            dask.config.set(config),
            distributed.LocalCluster(
                n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster.scheduler_address) as client,
        ):
            answers.append(list(client.run(seen).values()))
    assert answers == [[("65536", True)], [(None, False)]]


def test_a_dask_worker_gets_the_program_settings_before_polars_loads() -> None:
    """``client.run`` hands the worker over as ``dask_worker``: its task threads size polars' pool, and polars'
    allocator gets the program's setting, as in ``tracekit`` itself; nothing is set over a user's value."""
    code = (
        "import os, types\n"
        "from tracekit.fleet.run import _init_dask_worker\n"
        "_init_dask_worker(types.SimpleNamespace(state=types.SimpleNamespace(nthreads=3)))\n"
        "print(os.environ['POLARS_MAX_THREADS'], os.environ['_RJEM_MALLOC_CONF'], os.environ['TRACEKIT_DECODE_WORKER'])\n"
        "import polars\n"
        "print(polars.thread_pool_size())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("POLARS_MAX_THREADS", "_RJEM_MALLOC_CONF")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["3", ALLOCATOR_CONF, "0", "3"]
    env.update(POLARS_MAX_THREADS="2", _RJEM_MALLOC_CONF="narenas:2")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2", "narenas:2", "0", "2"]


def test_a_bad_trace_is_one_line_and_the_others_go_on(rank_traces: list[str], tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [')
    seen: list[str] = []
    outcomes = analyze_many(
        [rank_traces[0], str(bad), rank_traces[1]],
        AnalysisOptions(),
        jobs=2,
        on_done=lambda o: seen.append(o.path),
    )
    assert [o.ok for o in outcomes] == [True, False, True]
    assert "\n" not in outcomes[1].error and str(bad) in outcomes[1].error
    assert sorted(seen) == sorted([rank_traces[0], str(bad), rank_traces[1]])


def test_without_collectives_clocks_are_not_aligned_and_said_so(tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[1] / "sample_traces" / "h200_bert_fp16"
    paths = [
        str(sample / "pytorch" / "pytorch_b1_s128.torch.json.gz"),
        str(sample / "cuda-graphs" / "cuda-graphs_b1_s128.torch.json.gz"),
    ]
    doc = _doc(analyze_many(paths, AnalysisOptions(), jobs=1))
    assert doc["clocks"]["aligned"] is False and "no collective kernels" in doc["clocks"]["why"]
    assert "straggler" not in doc and "skew" not in doc
    assert doc["spread"]["slowest"] == "pytorch_b1_s128.torch.json.gz"
    # two runs of one session, 190 s apart on the wall clock (their baseTimeNanoseconds): said first
    assert doc["warnings"][0].startswith(
        "steps not compared across traces (pytorch_b1_s128.torch.json.gz's step 1 starts 190.604 s after "
        "cuda-graphs_b1_s128.torch.json.gz's"
    )


def test_cache_reanalysis_equals_first_and_misses_on_change(rank_traces: list[str], tmp_path: Path) -> None:
    from tracekit.fleet import cache

    cache_dir = tmp_path / "cache"
    first = analyze_many(rank_traces[:1], AnalysisOptions(), jobs=1, cache_dir=str(cache_dir))
    entries = [p for p in cache_dir.iterdir() if p.is_dir()]
    assert len(entries) == 1 and entries[0].name.startswith(cache.READER_VERSION)
    again = analyze_many(
        rank_traces[:1], AnalysisOptions(range_name="ProfilerStep#*"), jobs=1, cache_dir=str(cache_dir)
    )
    assert _plain(again) == _plain(first)
    copy = tmp_path / "copy.json.gz"
    copy.write_bytes(Path(rank_traces[1]).read_bytes())
    analyze_many([str(copy)], AnalysisOptions(), jobs=1, cache_dir=str(cache_dir))
    assert len([p for p in cache_dir.iterdir() if p.is_dir()]) == 2


_ops = comm_ops


def test_communication_hidden_only_by_computation_of_its_own_device() -> None:
    ops = _ops(
        [
            # iteration 0, device 0: collectives [0,10) and [5,20) overlap: union 20 ns; gemm hides [8,12)
            (0, 0, 0, 10, "ncclKernel_AllReduce"),
            (0, 0, 5, 20, "ncclDevKernel_Broadcast"),
            (0, 0, 8, 12, "sm90_gemm"),
            (0, 1, 0, 20, "sm90_gemm"),  # another device: hides nothing
            (1, 0, 0, 20, "sm90_gemm"),  # another iteration, same device: hides [0,20) of iteration 0
            # iteration 1, device 0: a collective [100,130) hidden by two overlapping ops over [90,125)
            (1, 0, 100, 130, "rcclKernel"),
            (1, 0, 90, 110, "elementwise"),
            (1, 0, 105, 125, "elementwise"),
            # iteration 1, device 1: a collective [50,60) with nothing beside it
            (1, 1, 50, 60, "NCCL_Reduce"),
            (2, 0, 0, 50, "sm90_gemm"),  # no collective in iteration 2: no row
            (None, 0, 0, 1000, "ncclKernel_AllReduce"),  # in no iteration: left out
            (3, 0, None, 10, "ncclKernel_AllReduce"),  # no start: left out
        ]
    )
    got = comm_per_iteration(ops)
    assert got["iteration"].to_list() == [0, 1]
    assert got["comm_ms"].to_list() == pytest.approx([20e-6, 40e-6], rel=1e-12)
    # iteration 0 is wholly hidden by iteration 1's gemm on its device (a collective running beside another
    # step's compute is hidden: tests/test_ranks14.py); swept per iteration it had read 16 ns exposed
    assert got["exposed_comm_ms"].to_list() == pytest.approx([0.0, 15e-6], abs=1e-15)
    assert comm_per_iteration(ops.filter(~pl.col("name").str.contains("(?i)nccl|rccl"))).is_empty()


def test_a_copy_beside_a_collective_hides_none_of_it_and_a_graph_does() -> None:
    # communication hidden by computation only (kernels, CUDA graph executions), as HTA counts it: a memcpy or
    # memset running beside a collective is data movement, so the collective stays exposed
    ops = _ops(
        [
            (0, 0, 0, 10, "ncclKernel_AllReduce"),
            (0, 0, 0, 10, "Memcpy DtoH (Device -> Pinned)", "memcpy"),
            (0, 0, 2, 4, "Memset (Device)", "memset"),
            # iteration 1 later, so that none of its ops runs beside iteration 0's collective
            (1, 0, 100, 110, "ncclKernel_AllReduce"),
            (1, 0, 100, 106, "CUDA graph 1", "graph"),
            (1, 0, 106, 108, "sm90_gemm"),
            (1, 0, 108, 110, "unknown kind", None),  # nothing says it computes: it hides nothing
        ]
    )
    got = comm_per_iteration(ops)
    assert got["iteration"].to_list() == [0, 1]
    assert got["comm_ms"].to_list() == pytest.approx([10e-6, 10e-6], rel=1e-12)
    assert got["exposed_comm_ms"].to_list() == pytest.approx([10e-6, 2e-6], rel=1e-12)


# (the ns-counting property test of comm_per_iteration: tests/test_ranks14.py, over devices and steps)


def test_truth_file_written_beside_the_traces(rank_traces: list[str]) -> None:
    data = json.loads((Path(rank_traces[0]).parent / "ranks.synthetic.truth.json").read_text())
    assert data["synthetic"] is True and data["straggler_rank"] == 2


# -- the command line ---------------------------------------------------------------------------------------------
def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from tracekit.cli import main

    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_many_traces_prints_the_rank_table_and_the_straggler(
    rank_traces: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = str(Path(rank_traces[0]).parent)
    rc, out, _ = _cli(["analyze", folder, "--jobs", "2", "--no-progress"], capsys)
    assert rc == 0
    assert [line.split()[1] for line in out.splitlines()[2:6]] == ["0", "1", "2", "3"]  # "rank N" rows
    assert "straggler: rank 2 arrives last at 6 of 6 collectives" in out
    assert "SYNTHETIC traces (simulated, not measurements): rank 0, rank 1, rank 2, rank 3" in out
    assert "offsets vs rank 0: rank 0 +0.000 ms, rank 1 -0.700 ms, rank 2 +0.000 ms, rank 3 +3.000 ms" in out


def test_the_table_gives_the_mean_latency_that_busy_and_overhead_add_up_to(
    rank_traces: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # the row's other columns are means, so its latency is given as a mean too (a median beside them need not
    # be their sum); in every format that shows the table
    rc, out, _ = _cli(["analyze", *rank_traces, "--jobs", "1", "--format", "csv", "--no-progress"], capsys)
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 4
    for row in rows:
        busy, overhead = float(row["mean_gpu_busy_ms"]), float(row["mean_framework_overhead_ms"])
        assert float(row["mean_latency_ms"]) == pytest.approx(busy + overhead, abs=1e-9)
    for fmt in ("table", "markdown"):
        rc, out, _ = _cli(["analyze", *rank_traces, "--jobs", "1", "--format", fmt, "--no-progress"], capsys)
        assert rc == 0
        header = out.splitlines()[0]
        assert (
            header.index("median latency ms")
            < header.index("mean latency ms")
            < header.index("mean GPU busy")
        )


def test_cli_json_is_the_same_with_one_job_two_jobs_and_a_dask_cluster(
    rank_traces: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["analyze", *rank_traces, "--format", "json", "--no-progress"]
    docs = []
    for extra in (["--jobs", "1"], ["--jobs", "2"]):
        rc, out, _ = _cli(base + extra, capsys)
        assert rc == 0
        docs.append(json.loads(out))
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:
        rc, out, _ = _cli(base + ["--scheduler", c.scheduler_address], capsys)
    assert rc == 0
    docs.append(json.loads(out))
    assert docs[0] == docs[1] == docs[2]


def test_cli_a_bad_file_among_several_is_one_line_and_exit_1(
    rank_traces: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"\x1f\x8b not really gzip")
    rc, out, err = _cli(["analyze", rank_traces[0], str(bad), "--jobs", "1", "--no-progress"], capsys)
    assert rc == 1
    assert [line for line in err.splitlines() if str(bad) in line] == [
        next(line for line in err.splitlines() if line.startswith(f"tracekit: {bad}"))
    ]
    assert "rank 0" in out


def test_a_folder_names_its_reports_not_exported_and_passes_over_exported_ones(
    rank_traces: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # rank 0's trace, an exported report (X.nsys-rep beside X.sqlite: the export is read, the report is not
    # named), a report never exported (read through nsys; here without nsys: one line saying how to export
    # it, exit 1) and a note (ignored)
    monkeypatch.delenv("TRACEKIT_NSYS", raising=False)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))  # no nsys on it
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "rank0.json.gz").write_bytes(Path(rank_traces[0]).read_bytes())
    (folder / "fresh.nsys-rep").write_bytes(b"report")
    (folder / "notes.txt").write_text("x")
    rc, out, err = _cli(["analyze", str(folder), "--jobs", "1", "--no-progress"], capsys)
    assert rc == 1 and "rank 0" in out
    assert [line for line in err.splitlines() if "nsys-rep" in line] == [
        f"tracekit: {folder / 'fresh.nsys-rep'}: an Nsight Systems report, and nsys (Nsight Systems) is not "
        "installed to export it: install it (or set TRACEKIT_NSYS), or export it where nsys is: "
        "nsys export --type sqlite -o fresh.sqlite fresh.nsys-rep"
    ]
    (folder / "rank0.json.gz").unlink()
    rc, _, err = _cli(["analyze", str(folder), "--no-progress"], capsys)
    assert rc == 2 and "export it where nsys is" in err  # only the report: none could be analyzed
    (folder / "fresh.sqlite.gz").write_bytes(  # a gzipped export beside the report
        (SAMPLE_TRACES / "cpu_onnx_bert_nsys" / "onnx_b1_s128.nsys.sqlite.gz").read_bytes()
    )
    rc, out, err = _cli(["analyze", str(folder), "--jobs", "1", "--no-progress"], capsys)
    assert rc == 0 and "nsys-rep" not in err and "fresh.sqlite" in out


def test_a_folder_passes_over_json_files_that_hold_no_trace_but_not_a_damaged_trace(
    rank_traces: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # beside a trace: a run's settings and a tool's results (JSON, no trace: passed over and named), and a
    # truncated trace (a trace that is damaged: analyzed, and its failure said in one line, exit 1)
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "rank0.json.gz").write_bytes(Path(rank_traces[0]).read_bytes())
    (folder / "config.json").write_text(json.dumps({"model": "bert", "batch": [1, 8]}))
    (folder / "results.json.gz").write_bytes(gzip.compress(b"[1, 2, 3]"))
    (folder / "cut.json").write_text('{"traceEvents": [{"ph": "X", "name": "k", "ts": 1')
    rc, out, err = _cli(["analyze", str(folder), "--jobs", "1", "--no-progress"], capsys)
    assert rc == 1 and "rank 0" in out
    assert (
        f"tracekit: passed over 2 JSON file(s) in the folders that hold no trace: {folder / 'config.json'}, "
        f"{folder / 'results.json.gz'}"
    ) in err.splitlines()
    assert any(line.startswith(f"tracekit: {folder / 'cut.json'}: ") for line in err.splitlines())
    # named on the command line, a file is always analyzed: its reader says what is wrong with it
    rc, _, err = _cli(["analyze", str(folder / "config.json"), "--no-progress"], capsys)
    assert rc == 2 and "traceEvents" in err
    # a folder with nothing but such files holds no trace
    for name in ("rank0.json.gz", "cut.json"):
        (folder / name).unlink()
    rc, _, err = _cli(["analyze", str(folder), "--no-progress"], capsys)
    assert rc == 2
    assert err.strip() == (
        f"tracekit: {folder}: a directory with no trace files in it (only JSON files that hold none)"
    )


@pytest.mark.parametrize(
    ("content", "no_trace"),
    [
        (b'{"model": "bert"}', True),  # settings
        (b"[1, 2, 3]", True),  # results
        (b'"text"', True),  # a bare value
        (b'[{"name": "x"}]', True),  # objects, but no events
        (b'{"traceEvents": []}', False),  # a Kineto trace with no events: its reader says so
        (b'[{"cat": "Session", "name": "model_run", "ph": "X"}]', False),  # an ORT profile
        (b'[{"ph": "X", "name": "k"}]', False),  # a bare Kineto event array
        (b"[]", False),  # a profile that recorded nothing: its reader says so
        (b'{"traceEvents": [{"ph": "X"', False),  # truncated: a damaged trace, not "no trace"
        (b'{"model": ', False),  # truncated settings: not plainly anything
    ],
)
def test_holds_no_trace_judges_only_documents_it_reads_whole(
    tmp_path: Path, content: bytes, no_trace: bool
) -> None:
    from tracekit.readers import holds_no_trace

    plain, packed = tmp_path / "a.json", tmp_path / "b.json.gz"
    plain.write_bytes(content)
    packed.write_bytes(gzip.compress(content))
    assert holds_no_trace(plain) is no_trace
    assert holds_no_trace(packed) is no_trace


def test_holds_no_trace_does_not_judge_what_it_cannot_read_whole(tmp_path: Path) -> None:
    from tracekit.readers import SNIFF_BYTES, SNIFF_TEXT, holds_no_trace

    settings = {"pad": "x" * SNIFF_BYTES}
    large = tmp_path / "large.json"  # over SNIFF_BYTES on disk
    large.write_text(json.dumps(settings))
    packed = tmp_path / "packed.json.gz"  # small on disk, inflates past SNIFF_TEXT
    packed.write_bytes(gzip.compress(json.dumps({"pad": "x" * SNIFF_TEXT}).encode()))
    assert packed.stat().st_size <= SNIFF_BYTES
    assert holds_no_trace(large) is False and holds_no_trace(packed) is False
    small = tmp_path / "small.json.gz"
    small.write_bytes(gzip.compress(json.dumps({"pad": "x" * (SNIFF_TEXT - 20)}).encode()))
    assert holds_no_trace(small) is True


def test_cli_refuses_per_trace_outputs_with_several(
    rank_traces: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = _cli(["analyze", *rank_traces[:2], "--gaps", "g.csv"], capsys)
    assert rc == 2 and err.strip() == "tracekit: --gaps writes one trace's gaps; give one trace file with it"


def test_cli_simulate_ranks_writes_traces_and_truth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ranks"
    rc, _, _ = _cli(["simulate", "--ranks", "3", "--iters", "4", "--ops", "5", "-q", "-o", str(out)], capsys)
    assert rc == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "rank0.synthetic.json.gz",
        "rank0.synthetic.meta.json",
        "rank1.synthetic.json.gz",
        "rank1.synthetic.meta.json",
        "rank2.synthetic.json.gz",
        "rank2.synthetic.meta.json",
        "ranks.synthetic.truth.json",
    ]
    assert json.loads((out / "ranks.synthetic.truth.json").read_text())["straggler_rank"] == 1
    # each trace's sidecar says it is synthetic, what made it and which rank of how many it is
    meta = json.loads((out / "rank2.synthetic.meta.json").read_text())
    assert meta["synthetic"] is True and meta["made_by"] == "tracekit simulate --ranks"
    assert (meta["rank"], meta["world_size"], meta["iterations"]) == (2, 3, 4)
    # replaced by two ranks: rank 2's trace and sidecar both go
    argv = ["simulate", "--ranks", "2", "--iters", "4", "--ops", "5", "-q", "-o", str(out), "--overwrite"]
    assert _cli(argv, capsys)[0] == 0
    assert not list(out.glob("rank2.*"))


# -- real multi-GPU exports ---------------------------------------------------------------------------------------
REAL = Path(__file__).resolve().parents[2] / "shared" / "real_traces"


@pytest.mark.real_traces
def test_real_distributed_traces_run_through_the_pool() -> None:
    paths = [
        REAL / "kineto" / "hta_a100_ddp_nccl_rank0.json.gz",
        REAL / "nsys" / "nsysai_h100_2gpu_1s_fastvideo_2026.2.sqlite",
    ]
    if not all(p.is_file() for p in paths):
        pytest.skip("../shared/real_traces absent")
    outcomes = analyze_many([str(p) for p in paths], AnalysisOptions(), jobs=2)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    ddp = outcomes[0].result
    assert ddp["rank"] == 0
    comm = ddp["iterations"]["comm_ms"].tolist()
    exposed = ddp["iterations"]["exposed_comm_ms"].tolist()
    assert comm and all(c > 0 for c in comm)  # DDP's NCCL all-reduce in every step (NaN compares false)
    assert all(0 <= x <= c for x, c in zip(exposed, comm, strict=True))
    doc = summarize([o.result for o in outcomes])
    assert doc["clocks"]["aligned"] is False  # the nsys slice has no collectives to align on


def test_one_trace_analyzed_through_the_cache_gives_the_same_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import REPO

    trace = str(REPO / "sample_traces/synthetic/table3_torchscript/torchscript_b1_s128.synthetic.json.gz")
    cache = str(tmp_path / "cache")
    rc, plain, _ = _cli(["analyze", trace, "--format", "json", "--no-progress"], capsys)
    assert rc == 0
    rc, filled, _ = _cli(["analyze", trace, "--format", "json", "--no-progress", "--cache", cache], capsys)
    assert rc == 0 and filled == plain
    assert len([p for p in Path(cache).iterdir() if p.is_dir()]) == 1

    import tracekit.readers

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("the trace was read again")

    monkeypatch.setattr(tracekit.readers, "read_trace", no_reading)
    rc, again, _ = _cli(["analyze", trace, "--format", "json", "--no-progress", "--cache", cache], capsys)
    assert rc == 0 and again == plain
    rc, skipped, _ = _cli(
        ["analyze", trace, "--format", "json", "--no-progress", "--cache", cache, "--skip", "3"], capsys
    )
    assert rc == 0 and json.loads(skipped)["skipped"] == 3 != json.loads(plain)["skipped"]


def test_a_worker_that_dies_fails_its_trace_only(rank_traces: list[str], tmp_path: Path) -> None:
    # A worker killed mid-trace (the OOM killer, a crash in native code) breaks its process pool and every
    # trace in flight in it. Only the trace whose worker dies when analyzed alone fails, in one line; the
    # traces in flight beside it and those still queued get the same results as in a pool that never broke
    # (before: every trace not finished when the worker died failed, with "BrokenProcessPool").
    from tests import dying_worker
    from tracekit.fleet.run import WORKER_DIED, _in_pool, _options_tuple

    dies = tmp_path / "rank9.dies.json.gz"
    dies.write_bytes(Path(rank_traces[0]).read_bytes())
    paths = [rank_traces[0], str(dies), *rank_traces[1:], *rank_traces]
    seen: list[str] = []
    opts = _options_tuple(AnalysisOptions())
    outcomes = _in_pool(paths, opts, 2, None, lambda o: seen.append(o.path), work=dying_worker.work)
    assert [o.ok for o in outcomes] == [True, False] + [True] * 7
    assert outcomes[1].error == f"{dies}: {WORKER_DIED}"
    assert sorted(seen) == sorted(paths)  # each reported once, as it finished
    healthy = [o for o in outcomes if o.ok]
    assert _plain(healthy) == _plain(
        analyze_many([p for p in paths if p != str(dies)], AnalysisOptions(), jobs=1)
    )


@pytest.mark.parametrize("jobs", [1, 2, "dask"])
def test_workers_read_with_the_limits_of_the_run(
    jobs: int | str, rank_traces: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kernel named with 100 kB of text: cut to 64 KiB under the default --max-string, kept whole under
    # --max-string 1M, in the worker processes as in this one (before: the workers, fresh interpreters, read
    # with the defaults whatever the command line said, and --jobs 2 cut the name that --jobs 1 kept).
    import gzip

    from tracekit import limits

    doc = json.loads(gzip.decompress(Path(rank_traces[0]).read_bytes()))
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    kernel["name"] = "k" * 100_000
    long_name = tmp_path / "rank0.long.json.gz"
    long_name.write_bytes(gzip.compress(json.dumps(doc).encode()))
    paths = [str(long_name), rank_traces[1]]

    def cut(**where: Any) -> list[bool]:
        outcomes = analyze_many(paths, AnalysisOptions(), **where)
        return [any("cut to 64 KiB" in w for w in o.result["warnings"]) for o in outcomes]

    def both(**where: Any) -> tuple[list[bool], list[bool]]:
        default = cut(**where)
        with monkeypatch.context() as m:
            m.setattr(limits, "current", limits.current._replace(max_string=1 << 20))
            wider = cut(**where)
            assert limits.current.max_string == 1 << 20  # the run's own limits, as they were
        return default, wider

    if jobs == "dask":
        distributed = pytest.importorskip("distributed")
        with distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as c:
            answer = both(scheduler=c.scheduler_address)
    else:
        answer = both(jobs=jobs)
    assert answer == ([True, False], [False, False])


def test_reading_limits_apply_for_the_block_only() -> None:
    # what a worker applies: the sender's reading limits, max_inflated None included (the default ratio, not
    # "keep"), never the memory ceiling; the limits in force before come back, after an error too
    from tracekit import limits

    before = limits.current
    sent = (None, 1 << 20, 32 << 20)
    with pytest.raises(RuntimeError), limits.reading_limits_applied(sent):
        assert limits.reading_limits() == sent and limits.current.max_memory == before.max_memory
        raise RuntimeError
    assert limits.current is before
    with limits.reading_limits_applied(None):
        assert limits.current is before


def test_a_trace_in_the_cache_does_not_start_its_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `analyze` lets a trace's reader begin while the analysis loads (a large Kineto file: decoding workers
    # on every core). Not when the cache holds the trace: the workers would decode a file nobody reads, on
    # the cores the cached analysis needs (a 10^6-kernel Kineto trace's re-analysis took 1.0-1.5 s, 0.6 s
    # without them). A changed file is no longer known to the cache and begins again.
    import os

    import tracekit.readers
    from tests.conftest import REPO
    from tracekit.fleet.cache import has_entry

    source = REPO / "sample_traces/synthetic/table3_torchscript/torchscript_b1_s128.synthetic.json.gz"
    trace = tmp_path / source.name
    trace.write_bytes(source.read_bytes())
    cache = tmp_path / "cache"
    begun: list[str] = []
    real = tracekit.readers.begin_reading
    monkeypatch.setattr(
        tracekit.readers, "begin_reading", lambda path, fmt=None: begun.append(str(path)) or real(path, fmt)
    )
    argv = ["analyze", str(trace), "--format", "json", "--no-progress", "--cache", str(cache)]
    assert not has_entry(trace, cache)  # no cache folder yet
    rc, first, _ = _cli(argv, capsys)
    assert rc == 0 and begun == [str(trace)] and has_entry(trace, cache)
    rc, again, _ = _cli([*argv, "--skip", "1"], capsys)
    assert rc == 0 and begun == [str(trace)]  # read from the cache: nothing begun
    assert json.loads(again)["skipped"] == 1
    os.utime(trace, ns=(1_000_000_000, 1_000_000_000))  # another mtime: unknown to the cache
    assert not has_entry(trace, cache)
    rc, third, _ = _cli(argv, capsys)
    assert rc == 0 and begun == [str(trace)] * 2 and third == first
    (cache / "hashes.json").write_text("[1, 2]")  # not the cache's memo: no entry known
    assert not has_entry(trace, cache)


def test_a_changed_sidecar_is_read_as_it_is_now_through_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The cache's key is the trace file's content, not its sidecar: an entry must not answer with what the
    # sidecar said when it was made. This ONNX Runtime profile holds its 10 warm-up runs, which its sidecar
    # states (`warmup_in_trace`) and the analysis drops by default; with that key removed, none is dropped,
    # through the cache as without it (an entry that kept the merged meta still dropped 10 of the 30).
    from tests.conftest import REPO

    source = REPO / "sample_traces/cpu_onnx_bert_ort"
    for name in ("onnx_b1_s128.ort.json.gz", "onnx_b1_s128.ort.meta.json"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    trace, sidecar = tmp_path / "onnx_b1_s128.ort.json.gz", tmp_path / "onnx_b1_s128.ort.meta.json"
    argv = ["analyze", str(trace), "--format", "json", "--no-progress"]
    cache = ["--cache", str(tmp_path / "cache")]
    rc, filled, _ = _cli([*argv, *cache], capsys)
    assert rc == 0 and json.loads(filled)["skipped"] == 10
    stated = json.loads(sidecar.read_text())
    del stated["warmup_in_trace"]
    sidecar.write_text(json.dumps(stated))
    rc, plain, _ = _cli(argv, capsys)
    rc2, cached, _ = _cli([*argv, *cache], capsys)
    assert rc == rc2 == 0 and json.loads(plain)["skipped"] == 0
    assert cached == plain and len(json.loads(cached)["iterations"]) == 30


def test_the_cache_gives_back_what_the_analysis_asks_for(tmp_path: Path) -> None:
    # A real Kineto trace with kernel metrics and CPU operators: stored whole, read back as asked. With every
    # frame asked for, the frames equal a fresh read; with a frame spec, only its frames and columns are read
    # (the others empty or null, as a reader may leave them), and the analysis is the same either way.
    from tracekit.fleet.cache import cached_read
    from tracekit.inputs import resolve_input
    from tracekit.readers import read_trace
    from tracekit.session import frames_for

    trace = str(SAMPLE_TRACES / "h200_bert_fp16/pytorch/pytorch_b1_s128.torch.json.gz")
    fresh = read_trace(trace)
    cache = tmp_path / "cache"
    cached_read(trace, cache)  # fills the entry of the whole trace
    whole = cached_read(trace, cache)
    for name in ("ops", "api", "ranges", "kernel_metrics", "cpu_ops"):
        assert getattr(whole, name).equals(getattr(fresh, name)), name
    assert fresh.kernel_metrics.height == 4040 and fresh.cpu_ops.height == 5620
    spec = {"ops": ("start", "end", "name"), "ranges": None}
    cached_read(trace, cache, frames=spec)
    part = cached_read(trace, cache, frames=spec)
    assert part.kernel_metrics.is_empty() and part.cpu_ops.is_empty() and part.api.is_empty()
    assert part.ops.height == fresh.ops.height and part.ops["device"].null_count() == part.ops.height
    assert part.ops.select("start", "end", "name").equals(fresh.ops.select("start", "end", "name"))
    assert part.ranges.equals(fresh.ranges)
    many = analyze_many([trace], AnalysisOptions(), jobs=1)
    analyze_many([trace], AnalysisOptions(), jobs=1, cache_dir=str(cache))  # stores the spec's entry
    from_cache = analyze_many([trace], AnalysisOptions(), jobs=1, cache_dir=str(cache))
    assert frames_for(resolve_input(trace))["ops"] is not None  # the analysis reads some columns only
    assert _plain(from_cache) == _plain(many)


def _result(name: str, rank: int | None, ends: list[int], path: str | None = None) -> dict:
    """A hand-built compact result: two iterations of 0.9 ms, collectives ending at ``ends`` (ns)."""
    steps = [(0, 900_000), (1_000_000, 1_900_000)]
    return compact_result(name, rank, ends, steps=steps, path=path or f"/runs/{name}")


def test_traces_claiming_the_same_rank_are_named_by_file_and_never_aligned() -> None:
    # two separate single-GPU runs, each its own rank 0, plus a trace without a rank: collectives end at
    # different times in each, and matching them would invent a clock offset and a straggler
    doc = summarize(
        [
            _result("serve_a.json.gz", 0, [5_000, 9_000]),
            _result("serve_b.json.gz", 0, [7_000, 8_000]),
            _result("nsys.sqlite", None, [1_000, 2_000]),
        ]
    )
    assert [r["trace"] for r in doc["rows"]] == ["serve_a.json.gz", "serve_b.json.gz", "nsys.sqlite"]
    assert doc["clocks"] == {
        "aligned": False,
        "why": "rank 0 is claimed by 2 traces: they are not the ranks of one job",
        "offsets_ns": None,
        "matched": 0,
    }
    assert "straggler" not in doc and "skew" not in doc


def test_labels_stay_unique_when_file_names_repeat() -> None:
    doc = summarize(
        [
            _result("trace.json.gz", None, [], path="/runs/a/trace.json.gz"),
            _result("trace.json.gz", None, [], path="/runs/b/trace.json.gz"),
            _result("rank3.json.gz", 3, []),
        ]
    )
    assert [r["trace"] for r in doc["rows"]] == ["rank 3", "/runs/a/trace.json.gz", "/runs/b/trace.json.gz"]


def test_distinct_ranks_are_aligned_on_their_collective_ends() -> None:
    doc = summarize([_result("r1.json.gz", 1, [7_000, 11_000]), _result("r0.json.gz", 0, [5_000, 9_000])])
    assert [r["trace"] for r in doc["rows"]] == ["rank 0", "rank 1"]
    assert doc["clocks"]["aligned"] is True and doc["clocks"]["offsets_ns"] == [0, 2_000]
