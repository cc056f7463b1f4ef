"""Smoke and unit tests of ``benchmarks/run.py`` (issue 5's benchmark), at 10^3 and 10^4 synthetic kernels only."""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN_PY = ROOT / "benchmarks" / "run.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("tracekit_benchmark_run", RUN_PY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_parse_sizes(bench) -> None:
    assert bench.parse_sizes("1e4,1e5, 20000,1e4") == [10_000, 100_000, 20_000]
    assert bench.parse_sizes("1_000") == [1000]
    for bad in ("0", "1.5e0", "abc", "", "-5"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench.parse_sizes(bad)


def test_targets_at_their_boundaries(bench) -> None:
    assert bench.evaluate_targets(2.0, 5.0, 10.0, 2047.9) == {
        "floor": True,
        "nsys": True,
        "hta": True,
        "memory": True,
    }
    assert bench.evaluate_targets(2.01, 4.99, 9.99, 2048.0) == {
        "floor": False,
        "nsys": False,
        "hta": False,
        "memory": False,
    }
    assert bench.evaluate_targets(None, None, None, None) == {
        "floor": None,
        "nsys": None,
        "hta": None,
        "memory": None,
    }


def test_row_ratios_from_hand_built_measurements(bench) -> None:
    M = bench.Measurement
    row = bench.Row(
        n=1000,
        kernels=1000,
        sqlite_mb=1.0,
        analyze=M(seconds=1.0, peak_mb=100.0),
        floor=M(seconds=0.25, peak_mb=20.0),
        floor_polars=M(seconds=0.5, peak_mb=40.0),
        nsys=M(seconds=6.0, peak_mb=30.0),
        hta=M(error="exit 1: boom"),
    )
    assert row.ratio_floor() == pytest.approx(4.0)
    assert row.ratio_nsys() == pytest.approx(6.0)
    assert row.ratio_hta() is None
    assert row.targets() == {"floor": False, "nsys": True, "hta": None, "memory": True}
    cells = bench.table_rows([row])[0]
    assert cells[:5] == ["10^3", "1.000", "100", "0.250", "4.00x"]
    assert cells[6:10] == ["6.000", "6.00x", "error", "-"]
    assert bench.errors_of([row]) == ["N=10^3 HTA: exit 1: boom"]


def test_same_file_kineto_ratio_uses_analyze_on_the_kineto_file(bench) -> None:
    M = bench.Measurement
    row = bench.Row(
        n=1000,
        kernels=1000,
        sqlite_mb=1.0,
        analyze=M(seconds=1.0, peak_mb=100.0),
        floor=M(seconds=0.5, peak_mb=20.0),
        floor_polars=M(seconds=0.5, peak_mb=40.0),
        nsys=None,
        hta=M(seconds=30.0, peak_mb=900.0, cpu_seconds=29.0),
        analyze_kineto=M(seconds=4.0, peak_mb=700.0, cpu_seconds=5.8),
    )
    assert row.ratio_hta() == pytest.approx(30.0)
    assert row.ratio_hta_kineto() == pytest.approx(7.5)
    assert row.ratio_hta_kineto_cpu() == pytest.approx(5.0)
    cells = bench.table_rows([row])[0]
    assert cells[bench.COLUMNS.index("analyze (Kineto) s")] == "4.000"
    assert cells[bench.COLUMNS.index("HTA/analyze (Kineto)")] == "7.50x"
    assert cells[bench.COLUMNS.index("HTA/analyze (Kineto) CPU")] == "5.00x"
    assert row.to_json()["ratio_hta_kineto"] == pytest.approx(7.5)
    assert row.to_json()["ratio_hta_kineto_cpu"] == pytest.approx(5.0)
    block = bench.readme_block([row], M(seconds=0.4, peak_mb=40.0), "today")
    header, rows, _ = bench.parse_size_table(block)
    assert dict(zip(header, rows[0], strict=True))["same Kineto file, CPU time"] == "5.00x"
    # without CPU times (a row kept from an older run, a failed tool): no ratio, not a wrong one
    no_cpu = bench.Row(**{**row.__dict__, "hta": M(seconds=30.0, peak_mb=900.0)})
    assert no_cpu.ratio_hta_kineto_cpu() is None
    assert bench.table_rows([no_cpu])[0][bench.COLUMNS.index("HTA/analyze (Kineto) CPU")] == "-"


def test_measure_once_counts_the_cpu_time_of_the_command_and_its_descendants(bench) -> None:
    # the command itself sleeps; its child (waited for) burns ~0.4 s of CPU: that is what is counted
    burn = "import time; t = time.process_time(); exec('while time.process_time() - t < 0.4: pass')"
    parent = (
        f"import subprocess, sys, time; time.sleep(0.2); subprocess.run([sys.executable, '-c', {burn!r}])"
    )
    m = bench.measure_once([sys.executable, "-c", parent])
    assert m.ok and m.cpu_seconds >= 0.4
    assert m.cpu_seconds < m.seconds  # the sleep took wall time, no CPU
    idle = bench.measure_once([sys.executable, "-c", "import time; time.sleep(0.3)"])
    assert idle.ok and idle.seconds >= 0.3 and idle.cpu_seconds < 0.2


def test_measure_once_reads_child_peak_memory_and_errors(bench) -> None:
    big = bench.measure_once(
        [sys.executable, "-c", "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096])"]
    )
    assert big.ok and big.peak_mb >= 200
    small = bench.measure_once([sys.executable, "-c", "pass"])
    assert small.ok and small.peak_mb < big.peak_mb - 150
    # Its own peak, not the (large) test process it was started from.
    assert small.peak_mb < 80
    failed = bench.measure_once([sys.executable, "-c", "import sys; sys.exit('bad input here')"])
    assert not failed.ok and "exit 1" in failed.error and "bad input here" in failed.error
    slow = bench.measure_once([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert not slow.ok and "timed out" in slow.error
    hog = bench.measure_once(
        [
            sys.executable,
            "-c",
            "import time; b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(30)",
        ],
        timeout=20,
        mem_limit_mb=100,
    )
    assert not hog.ok and "mem-limit-mb" in hog.error


def test_update_readme_replaces_only_the_marked_block(bench, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{bench.README_START}\nold\n{bench.README_END}\noutro\n")
    assert bench.update_readme(readme, f"{bench.README_START}\nnew\n{bench.README_END}")
    assert readme.read_text() == f"intro\n{bench.README_START}\nnew\n{bench.README_END}\noutro\n"
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert not bench.update_readme(plain, "x")
    assert plain.read_text() == "no markers\n"


def test_benchmark_runs_end_to_end_at_small_sizes(bench, tmp_path: Path) -> None:
    results = tmp_path / "results.md"
    readme = tmp_path / "README.md"
    readme.write_text(f"# b\n{bench.README_START}\n{bench.README_END}\n")
    out = tmp_path / "bench.json"
    code = bench.main(
        [
            "--sizes", "1e3,1e4", "--repeat", "1", "--skip-hta", "--cache-dir", str(tmp_path / "cache"),
            "--json", str(out), "--write-results", "--results-file", str(results), "--readme-file", str(readme),
        ]
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out.read_text())
    assert [r["n"] for r in doc["rows"]] == [1000, 10_000]
    for r in doc["rows"]:
        # --kernels is rounded up to whole iterations (400 kernels each in the pytorch preset)
        assert r["n"] <= r["kernels"] < r["n"] + 1000
        for tool in ("analyze", "floor", "floor_polars"):
            assert r[tool]["error"] is None, r[tool]["error"]
            assert r[tool]["seconds"] > 0 and r[tool]["peak_mb"] > 0
        assert r["ratio_floor"] == pytest.approx(r["analyze"]["seconds"] / r["floor"]["seconds"])
        assert r["hta"] is None and r["ratio_hta"] is None
        if shutil.which("nsys"):
            assert r["nsys"]["error"] is None, r["nsys"]["error"]
            assert r["ratio_nsys"] == pytest.approx(r["nsys"]["seconds"] / r["analyze"]["seconds"])
        else:
            assert r["nsys"] is None
    # the cache is keyed by N: a second run reuses the traces
    cached = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(cached) == 2 and all(name.startswith("pytorch_n") for name in cached)
    text = results.read_text()
    assert "synthetic" in text and "| N | analyze s |" in text and "| 10^3 |" in text and "| 10^4 |" in text
    block = readme.read_text()
    assert "| 10^3 |" in block and "analyze/floor" in block


def test_kineto_targets_and_json_size(bench, tmp_path: Path) -> None:
    """Issue 13's same-file targets: >= 10x HTA, peak below HTA's and below 2x the uncompressed JSON."""
    met = bench.evaluate_kineto_targets(10.0, 199.0, 200.0, 100.0)
    assert met == {"hta": True, "below_hta": True, "below_2x_json": True}
    missed = bench.evaluate_kineto_targets(9.99, 250.0, 200.0, 100.0)
    assert missed == {"hta": False, "below_hta": False, "below_2x_json": False}
    assert bench.evaluate_kineto_targets(None, None, 200.0, 100.0) == {
        "hta": None,
        "below_hta": None,
        "below_2x_json": None,
    }
    payload = b'{"traceEvents": []}' * 1000
    plain = tmp_path / "t.json"
    plain.write_bytes(payload)
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(payload))
    assert bench.json_size_mb(plain) == len(payload) / 2**20
    assert bench.json_size_mb(packed) == len(payload) / 2**20
    assert bench.json_size_mb(packed) == len(payload) / 2**20  # from the cached size


def test_rerun_of_some_sizes_keeps_the_other_rows_with_their_date(bench) -> None:
    """A run of some sizes keeps the rows of the sizes it did not run (matched by column name, marked with
    their run's date); the rows it ran replace the old ones."""
    old = (
        "Written by `python benchmarks/run.py --write-results` on 2026-11-21 07:15 UTC\n\n"
        "| N | analyze s | nsys stats s |\n|---|---|---|\n"
        "| 10^4 | 0.264 | 0.053 |\n| 10^6 (2026-11-02) | 0.933 | 1.642 |\n| 10^7 | 7.358 | 20.9 |\n\n"
        "- N=10^4: SQLite 1 MB\n- N=10^7: SQLite 1457 MB, 10,000,000 kernels; nsys stats peak 975 MB\n"
    )
    header = ["N", "analyze s", "HTA s", "nsys stats s"]
    merged = bench.merge_kept_rows(header, [["10^4", "0.5", "3.9", "0.1"]], old, {"10^4"})
    assert merged == [
        ["10^4", "0.5", "3.9", "0.1"],
        ["10^6 (2026-11-02)", "0.933", "-", "1.642"],
        ["10^7 (2026-11-21)", "7.358", "-", "20.9"],
    ]
    details = bench.merge_kept_details(["- N=10^4: SQLite 2 MB"], old, {"10^4"})
    assert details == [
        "- N=10^4: SQLite 2 MB",
        "- N=10^7 (kept from 2026-11-21): SQLite 1457 MB, 10,000,000 kernels; nsys stats peak 975 MB",
    ]
    # a kept row keeps its first date through later merges
    again = bench.merge_kept_rows(header, [], bench.markdown_table(header, merged), {"10^4"})
    assert [r[0] for r in again] == ["10^6 (2026-11-02)", "10^7 (2026-11-21)"]
    assert bench.merge_kept_rows(header, [["10^4", "1", "2", "3"]], None, {"10^4"}) == [
        ["10^4", "1", "2", "3"]
    ]


def test_alternate_interleaves_two_tools_and_keeps_the_best_of_each(bench) -> None:
    """HTA and analyze on the Kineto file run in alternation: each tool's best time (with that run's extra
    data) over its timed runs, then one run of each that samples memory, whose peak counts but whose time
    does not; a tool that fails keeps its error and is not run again, the other goes on."""
    M = bench.Measurement
    calls: list[tuple[str, bool]] = []
    slow = iter(
        [
            M(9.0, 500, extra={"run": 1}),
            M(8.0, 400, extra={"run": 2}),
            M(8.5, 600, extra={"run": 3}),
            M(7.0, 700, extra={"run": "sampled"}),  # sampled: its time is not a timed run's
        ]
    )
    fast = iter([M(1.0, 100), M(0.9, 120), M(1.2, 90), M(0.5, 150)])

    def first(sample: bool) -> object:
        calls.append(("slow", sample))
        return next(slow)

    def second(sample: bool) -> object:
        calls.append(("fast", sample))
        return next(fast)

    a, b = bench.alternate(first, second, 3)
    assert calls == [("slow", False), ("fast", False)] * 3 + [("slow", True), ("fast", True)]
    assert (a.seconds, a.peak_mb, a.extra) == (8.0, 700, {"run": 2})
    assert (b.seconds, b.peak_mb) == (0.9, 150)

    calls.clear()
    slow = iter([M(9.0, 500), M(error="exit 1: boom")])
    fast = iter([M(1.0, 100), M(0.8, 100), M(0.7, 100), M(0.6, 90)])
    a, b = bench.alternate(first, second, 3)
    assert calls == [
        ("slow", False),
        ("fast", False),
        ("slow", False),
        ("fast", False),
        ("fast", False),
        ("fast", True),
    ]
    assert a.error == "exit 1: boom" and (b.seconds, b.peak_mb) == (0.7, 100)

    # a sampled run that fails (the memory guard) is the tool's result
    calls.clear()
    slow = iter([M(9.0, 500), M(error="killed: RSS 13000 MB passed the --mem-limit-mb guard")])
    fast = iter([M(1.0, 100), M(0.9, 100)])
    a, b = bench.alternate(first, second, 1)
    assert "mem-limit-mb" in a.error and b.seconds == 1.0


def test_measure_times_unsampled_runs_and_takes_the_peak_of_one_sampled_run(bench, monkeypatch) -> None:
    M = bench.Measurement
    seen: list[bool] = []
    results = iter([M(2.0, 100, cpu_seconds=3.0), M(1.5, 110, cpu_seconds=2.5), M(1.0, 300, cpu_seconds=9.0)])

    def fake(cmd, timeout=None, mem_limit_mb=None, cwd=None, sample=True):
        seen.append(sample)
        return next(results)

    monkeypatch.setattr(bench, "measure_once", fake)
    m = bench.measure(["tool"], 2)
    assert seen == [False, False, True]
    # time and CPU of the best timed run; the sampled run's (faster) time is not used, its peak is
    assert (m.seconds, m.cpu_seconds, m.peak_mb) == (1.5, 2.5, 300)

    seen.clear()
    results = iter([M(error="exit 2: bad input")])
    assert bench.measure(["tool"], 3).error == "exit 2: bad input" and seen == [False]


def test_only_the_sampled_run_sums_the_memory_of_all_processes(bench, monkeypatch) -> None:
    """Two children holding ~150 MB each at once: the sampled run is charged for both (the sum), the timed
    run only for its largest process (ru_maxrss), and nothing reads /proc for it but the guard."""
    hold = "import time; b = bytearray(150 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(1.0)"
    both = (
        "import subprocess, sys; "
        f"ps = [subprocess.Popen([sys.executable, '-c', {hold!r}]) for _ in range(2)]; [p.wait() for p in ps]"
    )
    sampled = bench.measure_once([sys.executable, "-c", both], timeout=60)
    assert sampled.ok and sampled.peak_mb >= 290

    looks: list[int] = []
    real = bench._tree_rss_mb
    monkeypatch.setattr(bench, "_tree_rss_mb", lambda pid: looks.append(pid) or real(pid))
    timed = bench.measure_once([sys.executable, "-c", both], timeout=60, sample=False)
    assert timed.ok and 145 <= timed.peak_mb < 250 and timed.seconds >= 1.0
    assert looks == []
    # the guard still works in a timed run
    slow = bench.measure_once(
        [sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5, sample=False
    )
    assert not slow.ok and "timed out" in slow.error
    hog = bench.measure_once(
        [sys.executable, "-c", f"{hold.replace('1.0', '30')}"], timeout=20, mem_limit_mb=100, sample=False
    )
    assert not hog.ok and "mem-limit-mb" in hog.error
