"""review17: a review, with tests, of round 17's new code (git diff dff4a76 -- tracekit analyzers).

Each suspected defect is a strict xfail asserting the RIGHT behaviour on a hand-built synthetic input whose
answer is known exactly; the passing tests pin what was checked and found right. The nsys base export is
tests/test_fixread17.py's: 3 NVTX 'iteration' ranges of 1 ms, 2 ms apart from 10 ms, each launching kernels of
200 and 100 us (latency 1.000 ms, GPU busy 0.300 ms)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.hostile import analyze_json
from tests.hostile import three_iteration_nsys as _nsys
from tracekit.analyzers.compare import kernel_name_key, paired_spellings
from tracekit.analyzers.gap_context import _near
from tracekit.model import names_mask, sort_frame
from tracekit.readers.timestamps import FAR_NS, far_events, main_group


def _damaged_end(path: Path) -> Path:
    con = sqlite3.connect(path)
    try:  # iteration 0's first kernel: start as recorded (10.1 ms), end 2^63 - 1 ns
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807 WHERE rowid = 1")
        con.commit()
    finally:
        con.close()
    return path


# ------------------------------------------------------------------------------------------ defects


def test_nsys_kernel_with_an_end_past_the_capture_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _damaged_end(_nsys(tmp_path / "end_far.synthetic.sqlite", capture_ns=20_000_000))
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert [it["latency_ms"] for it in doc["iterations"]] == [1.0, 1.0, 1.0]
    assert [(it["gpu_busy_ms"], it["kernels"]) for it in doc["iterations"]] == [(0.1, 1), (0.3, 2), (0.3, 2)]


def test_overloads_differing_in_parameter_types_are_not_paired() -> None:
    renames, ambiguous = paired_spellings(["scale_kernel(__half*, int)"], ["scale_kernel(float*, int)"])
    assert renames == {}


def test_a_kernel_whose_call_was_left_out_as_far_still_counts_in_its_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _nsys(tmp_path / "call_far.synthetic.sqlite", capture_ns=20_000_000)
    con = sqlite3.connect(path)
    con.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 9223372036854774000, end = 9223372036854775000 "
        "WHERE rowid = 1"
    )
    con.commit()
    con.close()
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert [it["latency_ms"] for it in doc["iterations"]] == [1.0, 1.0, 1.0]
    assert [(it["gpu_busy_ms"], it["kernels"]) for it in doc["iterations"]] == [(0.3, 2), (0.3, 2), (0.3, 2)]


# ------------------------------------------------------------------------------- checked and right


def test_nsys_far_start_is_left_out_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The start rule itself (outside a 20 ms capture): 1.0 ms latencies, the far kernel left out, one warning."""
    path = _nsys(tmp_path / "start_far.synthetic.sqlite", capture_ns=20_000_000)
    con = sqlite3.connect(path)
    con.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 7200000000000, end = 7200000200000 WHERE rowid = 1"
    )
    con.commit()
    con.close()
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert [it["latency_ms"] for it in doc["iterations"]] == [1.0, 1.0, 1.0]
    assert [(it["gpu_busy_ms"], it["kernels"]) for it in doc["iterations"]] == [(0.1, 1), (0.3, 2), (0.3, 2)]
    assert sum("1 device ops stamped outside the capture" in w for w in doc["warnings"]) == 1


def _s(values: list[int | None]) -> pl.Series:
    return pl.Series(values, dtype=pl.Int64)


def test_main_group_and_minorities() -> None:
    hour = FAR_NS
    # two groups of 3 and 2 of 5: the larger wins; one of two far from each other: no group holds more than half
    assert main_group([_s([0, 1, 2]), _s([5 * hour, 5 * hour + 1])]) == (0.0, 2.0)
    assert main_group([_s([0, 3 * hour])]) is None
    # an event exactly FAR_NS from the group is not far (strict >), one ns more is
    far, warning = far_events({"API calls": _s([0, 1, 2, 3, 2 + hour])})
    assert far["API calls"].to_list() == [False] * 5 and warning is None
    far, warning = far_events({"API calls": _s([0, 1, 2, 3, 3 + hour + 1, None])})
    assert far["API calls"].to_list() == [False, False, False, False, True, False]
    assert warning is not None and warning.startswith("1 API calls stamped more than an hour")
    # half far: kept whole (not a minority), and said
    far, warning = far_events({"device ops": _s([0, 1, 4 * hour, 4 * hour + 1])}, anchors=[_s([2, 3])])
    assert far["device ops"].to_list() == [False] * 4
    assert warning is not None and "2 of 4 device ops are stamped" in warning


def test_paired_spellings_pairs_ncu_spelling_and_refuses_ambiguity() -> None:
    ncu = "void at::<unnamed>::vectorized_gather_kernel<16, long>(char *, char *, long, long, long, bool)"
    other = (
        "void at::native::(anonymous namespace)::vectorized_gather_kernel<16, long>(char*, char*, long, long, "
        "long, bool)"
    )
    assert kernel_name_key(ncu) == kernel_name_key(other) == "vectorized_gather_kernel<16,long>"
    assert paired_spellings([ncu], [other]) == ({ncu: other}, [])
    # the ncu name found as it is on the other side: nothing renamed
    assert paired_spellings([other], [other, "x"]) == ({}, [])
    # two names of one key on a side: not paired, said
    renames, ambiguous = paired_spellings(["k(int)"], ["a::k(int)", "b::k(float)"])
    assert renames == {} and ambiguous == [("k", ["k(int)"], ["a::k(int)", "b::k(float)"])]


def test_names_mask_cache_is_per_frame_and_per_question() -> None:
    a = pl.DataFrame({"name": ["cudaLaunchKernel_v7000", "cudaMemcpy", None]})
    assert names_mask(a, ["cudaLaunchKernel"]).to_list() == [True, False, None]
    assert names_mask(a, ["cudaLaunchKernel"], strip=False).to_list() == [False, False, None]
    # a new frame of other names (whatever id it gets once the first is freed) is answered afresh
    for _ in range(50):
        b = pl.DataFrame({"name": ["cudaMemcpy", "cudaLaunchKernel"]})
        assert names_mask(b, ["cudaLaunchKernel"]).to_list() == [False, True]
        del b
    # every name or none: the shortcut keeps nulls null
    assert names_mask(a, ["cudaLaunchKernel", "cudaMemcpy"]).to_list() == [True, True, None]
    assert names_mask(a, ["nothing"]).to_list() == [False, False, None]


def test_sort_frame_fast_path_equals_a_sort() -> None:
    rng = np.random.default_rng(17)
    for _ in range(200):
        n = int(rng.integers(0, 8))
        frame = pl.DataFrame(
            {"a": rng.integers(0, 3, n).tolist(), "b": rng.integers(0, 3, n).tolist(), "i": list(range(n))}
        )
        for desc in ([False, False], [True, False], [False, True]):
            for f in (frame, frame.sort("a", descending=desc[0], maintain_order=True)):
                want = f.sort(["a", "b"], descending=desc, maintain_order=True)
                assert sort_frame(f, ["a", "b"], desc).equals(want)


def test_gap_context_near_keeps_every_overlapping_row() -> None:
    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(2, 12))
        start = np.sort(rng.integers(0, 100, n))
        end = start + rng.integers(0, 60, n)
        frame = pl.DataFrame({"start": start, "end": end, "k": list(range(n))})
        bounds = [(int(s), int(s + rng.integers(1, 30))) for s in rng.integers(0, 120, 3)]
        near = set(_near(frame, bounds).get_column("k").to_list())
        overlapping = {
            k
            for k, (s0, e0) in enumerate(zip(start, end, strict=True))
            if e0 > s0 and any(s0 < e and e0 > s for s, e in bounds)
        }
        assert overlapping <= near


def test_devices_and_streams_fast_path_equals_the_grouping() -> None:
    from tracekit.analyzers.plausibility import _devices_and_streams

    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(1, 7))
        pids = [7] * n if rng.random() < 0.7 else rng.integers(1, 3, n).tolist()
        ops = pl.DataFrame(
            {
                "pid": pl.Series(pids, dtype=pl.Int64),
                "device": pl.Series(
                    [None if v == 2 else int(v) for v in rng.integers(0, 3, n)], dtype=pl.Int64
                ),
                "stream": pl.Series(
                    [None if v == 2 else int(v) for v in rng.integers(0, 3, n)], dtype=pl.Int64
                ),
            }
        )
        slow = (
            ops.select("pid", "device", "stream")
            .unique()
            .drop_nulls("pid")
            .group_by("pid")
            .agg((pl.col("device").n_unique() == 1).alias("one_device"), (pl.len() == 1).alias("one_stream"))
            .sort("pid")
        )
        assert _devices_and_streams(ops).sort("pid").equals(slow)


def test_no_fork_where_polars_is_loaded() -> None:
    """This process has polars loaded (imported above): the pool's workers come from the fork server."""
    from tracekit.fleet.run import start_method
    from tracekit.limits import can_fork

    assert can_fork() is False and start_method() == "forkserver"


def test_latency_csv_is_read_again_when_it_changes(tmp_path: Path) -> None:
    """profiler_cost.latency_csv_values' cache is keyed by (path, size, mtime_ns): a rewritten latency.csv of
    another size is read again; rows of another runtime, batch, sequence length or the traced set are not this
    configuration's."""
    import os

    from tracekit.analyzers.profiler_cost import latency_csv_values

    trace = tmp_path / "run.synthetic.json"
    csv = tmp_path / "latency.csv"
    header = "set,runtime,batch_size,seq_len,latency_ms,cpu_ms\n"
    csv.write_text(
        header + "untraced,eager,1,128,2.0,1.0\nuntraced,eager,1,128,4.0,2.0\ntraced,eager,1,128,9.0,9.0\n"
        "untraced,eager,2,128,7.0,7.0\nuntraced,onnx,1,128,8.0,8.0\nuntraced,eager,1,256,6.0,6.0\n"
    )
    assert latency_csv_values(trace, "eager", 1, 128) == ([2.0, 4.0], [1.0, 2.0])
    st = csv.stat()
    csv.write_text(header + "untraced,eager,1,128,3.5,\n")
    os.utime(csv, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime, another size
    assert latency_csv_values(trace, "eager", 1, 128) == ([3.5], None)


def test_a_trace_named_again_under_a_duplicate_key_is_still_disputed(tmp_path: Path) -> None:
    import json

    from tests.hostile import small_trace_events
    from tracekit.inputs import _run_inputs, stated_disagreements

    for name in ("a", "b"):
        (tmp_path / f"{name}.synthetic.json").write_text(json.dumps({"traceEvents": small_trace_events()}))

    def config(batch: int, trace: str) -> dict[str, object]:
        return {"batch_size": batch, "seq_len": 128, "status": "ok", "traces": {"torch": trace}}

    run = {
        "runtime": "pytorch",
        "synthetic": True,
        "configs": [
            config(1, "a.synthetic.json"),
            config(2, "b.synthetic.json"),
            config(2, "a.synthetic.json"),
        ],
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    items = {item.path.name: item for item in _run_inputs(tmp_path, ("torch",))}
    assert sorted(items) == ["a.synthetic.json", "b.synthetic.json"]
    assert stated_disagreements(items["b.synthetic.json"])[0] == {}
    assert stated_disagreements(items["a.synthetic.json"])[0] == {"batch_size": (1, 2)}


def test_kineto_kernel_ending_decades_later_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from tests.hostile import small_trace_events

    events = small_trace_events()
    kernel = next(e for e in events if e["cat"] == "kernel" and e["ts"] == 1000030)
    kernel["dur"] = 900_000_000_000_000
    path = tmp_path / "long_kernel.synthetic.json"
    path.write_text(json.dumps({"traceEvents": events}))
    code, doc, err = analyze_json(capsys, str(path))
    assert code == 0, err
    assert [it["latency_ms"] for it in doc["iterations"]] == [0.9] * 4
    assert [(it["gpu_busy_ms"], it["kernels"]) for it in doc["iterations"]] == [(0.02, 2)] + [(0.03, 3)] * 3
