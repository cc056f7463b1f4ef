"""fixcache16: the --cache key and its damaged entries, SQLite beside a hot rollback journal, and
analyze_many's jobs.

The tests copied from tests/test_hostile16.py (where they are strict xfails) keep their names and bodies; the
others pin exact numbers of hand-built SYNTHETIC traces (file names say "synthetic"): an ORT CPU profile of
3 runs of 1000 µs, each with a MatMul node of 300 µs and an Add node of 100 µs (latency 1.0 ms, operator busy
0.4 ms per run), and the committed synthetic Nsight Systems sample (10 iterations of 160 kernels, GPU busy
0.9134527 ms).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE_TRACES
from tests.hostile import small_trace_events
from tracekit.cli import main
from tracekit.fleet import cache

NSYS_SAMPLE = SAMPLE_TRACES / "synthetic/table3_onnx-cuda-graphs/onnx-cuda-graphs_b1_s128.synthetic.sqlite"
#: what the clean NSYS_SAMPLE reads: 10 iterations of 160 kernels, mean GPU busy 0.9134527 ms
NSYS_KERNELS, NSYS_BUSY_MS = 160.0, 0.9134527


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([*args, "--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict | None, str]:
    code, out, err = _run(capsys, "analyze", *args, "--format", "json")
    return code, json.loads(out) if code == 0 else None, err


def _one_line(err: str, path: str | Path) -> str:
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tracekit: ") and str(path) in lines[0], err
    return lines[0]


def _ev(cat: str, name: str, ts: int, dur: int, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": 1, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _ort_cpu(runs: int = 3) -> list[dict[str, Any]]:
    """ORT CPU profile (SYNTHETIC): ``runs`` model_run of 1000 µs, each with MatMul 300 µs and Add 100 µs."""
    events = [_ev("Session", "model_loading_uri", 0, 50), _ev("Session", "session_initialization", 60, 40)]
    t = 200
    for _ in range(runs):
        events += [
            _ev("Session", "model_run", t, 1000),
            _ev(
                "Node",
                "/a/MatMul_kernel_time",
                t + 10,
                300,
                op_name="MatMul",
                provider="CPUExecutionProvider",
            ),
            _ev("Node", "/b/Add_kernel_time", t + 320, 100, op_name="Add", provider="CPUExecutionProvider"),
        ]
        t += 2000
    return events


def _write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def _state(*paths: Path) -> list[tuple[str, int, int, bytes]]:
    return [(p.name, p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes()) for p in paths]


def _cached_entry(cache_dir: Path) -> Path:
    (entry,) = [p for p in cache_dir.iterdir() if p.is_dir()]
    return entry


def _entries(cache_dir: Path) -> list[str]:
    return sorted(p.name for p in cache_dir.iterdir() if p.is_dir())


def _latency_and_busy(doc: dict) -> list[tuple[float, float]]:
    return [(round(it["latency_ms"], 9), round(it["gpu_busy_ms"], 9)) for it in doc["iterations"]]


# ------------------------------------------------------------------------ copied from test_hostile16 (xfail there)


@pytest.mark.parametrize("damage", ["parquet cut", "meta.json broken"])
def test_a_damaged_cache_entry_is_read_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    ort = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    cache_dir = tmp_path / "cache"
    code, first, err = _json(capsys, str(ort), "--cache", str(cache_dir), "-q")
    assert code == 0, err
    entry = _cached_entry(cache_dir)
    if damage == "parquet cut":
        ops = entry / "ops.parquet"
        ops.write_bytes(ops.read_bytes()[:100])
    else:
        (entry / "meta.json").write_text("{")
    code, again, err = _json(capsys, str(ort), "--cache", str(cache_dir), "-q")
    assert "internal error" not in err, err
    assert code == 0, err
    assert again["iterations"] == first["iterations"]


def test_the_cache_does_not_give_a_copy_the_first_name_s_synthetic_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    synthetic = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    plain = tmp_path / "cpu.ort.json"
    shutil.copy(synthetic, plain)
    labels = {}
    for path in (synthetic, plain):
        code, doc, err = _json(capsys, str(path), "-q")
        assert code == 0, err
        labels[path.name] = doc["trace"]["synthetic"]
    assert labels == {synthetic.name: True, plain.name: False}  # by name, without the cache
    cache_dir = tmp_path / "cache"
    for path in (synthetic, plain):
        code, doc, err = _json(capsys, str(path), "--cache", str(cache_dir), "-q")
        assert code == 0, err
        assert doc["trace"]["synthetic"] is labels[path.name], path.name


def test_the_cache_does_not_keep_a_max_string_cut_for_a_run_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = small_trace_events()
    for event in events:
        if event["cat"] == "kernel":
            event["name"] = "k" * 5000 + event["name"]
    path = _write_json(tmp_path / "long-names.synthetic.json", {"traceEvents": events})
    cache_dir = tmp_path / "cache"
    code, _, err = _json(capsys, str(path), "--cache", str(cache_dir), "--max-string", "100")
    assert code == 0 and "cut to 100 B" in err, err
    code, plain, err = _json(capsys, str(path))
    assert code == 0 and "cut to 100 B" not in err, err
    code, cached, err = _json(capsys, str(path), "--cache", str(cache_dir))
    assert code == 0, err
    assert cached["warnings"] == plain["warnings"]


# ------------------------------------------------------------------------------------- cache: exact numbers


def test_a_damaged_entry_is_replaced_with_a_whole_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ORT profile's numbers (3 runs: latency 1.0 ms, operator busy 0.4 ms) from a cut entry, and the
    entry stored anew: the third analysis reads it (it holds a whole ops.parquet again) with the same numbers."""
    ort = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    cache_dir = tmp_path / "cache"
    code, first, err = _json(capsys, str(ort), "--cache", str(cache_dir), "-q")
    assert code == 0, err
    assert _latency_and_busy(first) == [(1.0, 0.4)] * 3
    entry = _cached_entry(cache_dir)
    whole = (entry / "ops.parquet").read_bytes()
    (entry / "ops.parquet").write_bytes(whole[:100])
    code, again, err = _json(capsys, str(ort), "--cache", str(cache_dir), "-q")
    assert code == 0, err
    assert _latency_and_busy(again) == [(1.0, 0.4)] * 3
    assert _entries(cache_dir) == [entry.name]  # the damaged one replaced, nothing left beside it
    assert (entry / "ops.parquet").read_bytes() == whole
    assert not [p for p in cache_dir.iterdir() if p.name.startswith((".entry-", ".evict-"))]
    spec = None
    trace = cache._load_entry(entry, ort, spec)
    assert trace is not None and trace.ops.height == 6  # 3 runs x 2 nodes


@pytest.mark.parametrize(
    "damage",
    [
        "empty meta.json",
        "meta.json a list",
        "meta.json zeros",
        "ops.parquet empty",
        "ops.parquet zeros",
        "no ops",
    ],
)
def test_every_kind_of_damage_is_a_miss(tmp_path: Path, damage: str) -> None:
    """_load_entry: None (read the trace again) for an entry whose files a crash could leave damaged, and the
    entry removed; the read after it gives the 6 nodes again."""
    ort = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    cache_dir = tmp_path / "cache"
    assert cache.cached_read(ort, cache_dir).ops.height == 6
    entry = _cached_entry(cache_dir)
    meta, ops = entry / "meta.json", entry / "ops.parquet"
    if damage == "empty meta.json":
        meta.write_text("")
    elif damage == "meta.json a list":
        meta.write_text("[]")
    elif damage == "meta.json zeros":
        meta.write_bytes(b"\0" * meta.stat().st_size)
    elif damage == "ops.parquet empty":
        ops.write_bytes(b"")
    elif damage == "ops.parquet zeros":
        ops.write_bytes(b"\0" * ops.stat().st_size)
    else:
        ops.unlink()
    assert cache._load_entry(entry, ort, None) is None
    assert not entry.exists()
    assert cache.cached_read(ort, cache_dir).ops.height == 6
    assert cache._load_entry(entry, ort, None).ops.height == 6


def test_the_key_holds_the_name_s_synthetic_mark_and_the_string_limit(tmp_path: Path) -> None:
    """Two names without "synthetic" share an entry (the content decides); a "synthetic" name and another
    --max-string are entries of their own."""
    from tracekit import limits

    a = _write_json(tmp_path / "a.ort.json", _ort_cpu())
    b = tmp_path / "b.ort.json"
    s = tmp_path / "a.SYNTHETIC.ort.json"
    shutil.copy(a, b)
    shutil.copy(a, s)
    folder = cache.cache_folder(tmp_path / "cache")
    assert cache.entry_dir(a, folder) == cache.entry_dir(b, folder)
    assert cache.entry_dir(a, folder).name == cache._entry_name(cache.content_hash(a))
    assert cache.entry_dir(s, folder) != cache.entry_dir(a, folder)
    saved = limits.current
    try:
        limits.current = saved._replace(max_string=100)
        cut = cache.entry_dir(a, folder)
        limits.current = saved._replace(max_string=limits.MAX_STRING_BYTES)
        assert cache.entry_dir(a, folder) != cut
    finally:
        limits.current = saved
    assert cache.cached_read(b, folder).meta["synthetic"] is False
    assert cache.cached_read(s, folder).meta["synthetic"] is True
    assert cache.cached_read(a, folder).meta["synthetic"] is False  # b's entry, a's path
    assert cache.cached_read(a, folder).meta["path"] == str(a)
    assert len(_entries(folder)) == 2


def test_the_cut_names_are_kept_apart_in_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Names of 5000 + len(name) bytes: 100 B with --max-string 100 (12 names cut: 4 iterations x 3 kernels),
    whole without it, whatever the cache held first."""
    events = small_trace_events()
    for event in events:
        if event["cat"] == "kernel":
            event["name"] = "k" * 5000 + event["name"]
    path = _write_json(tmp_path / "long-names.synthetic.json", {"traceEvents": events})
    cache_dir = tmp_path / "cache"
    for _ in range(2):  # store, then hit
        code, whole, err = _json(capsys, str(path), "--cache", str(cache_dir), "-q")
        assert code == 0, err
        assert not [w for w in whole["warnings"] if "cut to" in w]
        code, cut, err = _json(capsys, str(path), "--cache", str(cache_dir), "-q", "--max-string", "100")
        assert code == 0, err
        (said,) = [w for w in cut["warnings"] if "cut to" in w]
        assert said.startswith(
            "12 event name(s) longer than 100 B cut to 100 B (--max-string SIZE keeps more)"
        )
    assert len(_entries(cache_dir)) == 2


def test_a_changed_sidecar_is_seen_through_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The entry holds the trace only: the sidecar as it is now is merged on every read (batch 4, then 16)."""
    ort = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    sidecar = tmp_path / "cpu.synthetic.ort.meta.json"
    cache_dir = tmp_path / "cache"
    for batch in (4, 16):
        _write_json(sidecar, {"batch_size": batch})
        code, doc, err = _json(capsys, str(ort), "--cache", str(cache_dir), "-q")
        assert code == 0, err
        assert doc["config"]["batch_size"] == batch
        assert _latency_and_busy(doc) == [(1.0, 0.4)] * 3
    assert len(_entries(cache_dir)) == 1
