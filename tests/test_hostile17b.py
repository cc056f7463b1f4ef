"""Hostile inputs against round 17's additions (hostile17b): the far-timestamp rule (tracekit/readers/timestamps.py),
run.json vs sidecar disputes, compare's ncu name key, analyze_many with jobs=2 beside a thread, ORT ranges and
tracekit's own outputs fed back. Every trace is hand-built here (SYNTHETIC: file names say so).

Bases: tests.hostile.small_trace_events (Kineto: per iteration an 'iteration' annotation of 900 µs and 3 kernels of
10 µs: latency 0.9, GPU busy 0.03 ms) and :func:`_nsys` below (NVTX iterations of 1 ms with 2 kernels, 0.3 ms busy).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import analyze_json as _json
from tests.hostile import ort_cpu_events, small_trace_events, write_json
from tests.hostile import run_cli as _run
from tests.nsys_builder import NsysBuilder

#: Kineto's epoch-µs clock (2023-11)
T0_US = 1_700_000_000_000_000
HOUR_US = 3_600 * 10**6
S_NS = 10**9


def _kineto_clusters(path: Path, counts: list[int], gap_us: int) -> Path:
    """Kineto trace of ``len(counts)`` clusters of small_trace_events (counts[i] iterations each), cluster i
    starting ``gap_us`` after the last event start of cluster i-1 (epoch µs); correlation ids kept apart."""
    events: list[dict[str, Any]] = []
    for i, count in enumerate(counts):
        part = small_trace_events(count, t0=0)
        first = min(e["ts"] for e in part)
        base = T0_US if not events else max(e["ts"] for e in events) + gap_us
        for e in part:
            e["ts"] += base - first
            if "correlation" in e.get("args", {}):
                e["args"]["correlation"] += 1000 * i
        events += part
    path.write_text(json.dumps({"traceEvents": events, "traceName": "synthetic"}))
    return path


def _nsys(
    path: Path, starts: list[int], capture_ns: int | None = None, api_shift: dict[int, int] | None = None
) -> Path:
    """nsys export (SYNTHETIC): an NVTX 'iteration' of 1 ms at each of ``starts`` (ns), each launching kernels at
    100-300 and 400-500 µs into it (calls 50-40 µs before): latency 1.0, GPU busy 0.3 ms, 2 kernels.
    ``api_shift``: correlation id -> ns added to that launch call's times; ``capture_ns``: ANALYSIS_DETAILS."""
    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    corr = 1
    for t0 in starts:
        b.nvtx_range(t0, t0 + 1_000_000, "iteration")
        for start, end in ((100, 300), (400, 500)):
            shift = (api_shift or {}).get(corr, 0)
            b.runtime(t0 + start * 1000 - 50_000 + shift, t0 + start * 1000 - 40_000 + shift,
                      "cudaLaunchKernel_v7000", correlation=corr)  # fmt: skip
            b.kernel(t0 + start * 1000, t0 + end * 1000, f"k{start}", correlation=corr)
            corr += 1
    if capture_ns is not None:
        b.capture(capture_ns, start_time=0)
    return b.write(path)


NEAR = [10_000_000, 12_000_000, 14_000_000]


def _rows(doc: dict[str, Any]) -> list[tuple[float, float, int]]:
    return [(it["latency_ms"], it["gpu_busy_ms"], it["kernels"]) for it in doc["iterations"]]


# ------------------------------------------------------------------------------------- far timestamps


def test_a_profiler_pause_of_two_hours_does_not_empty_the_later_iterations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _kineto_clusters(tmp_path / "pause.synthetic.json", [5, 3], 2 * HOUR_US)
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    # either every iteration keeps its work, or the far iterations go with their work: never an emptied one
    assert doc["iterations"] and all(row == (0.9, 0.03, 3) for row in _rows(doc)), _rows(doc)


def test_a_damaged_capture_record_does_not_empty_iterations_it_does_not_cover(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _nsys(tmp_path / "damcap.synthetic.sqlite", [*NEAR, 70 * S_NS, 70 * S_NS + 2_000_000], 20_000_000)
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert doc["iterations"] and all(row == (1.0, 0.3, 2) for row in _rows(doc)), _rows(doc)


def test_an_nvtx_range_hours_outside_the_capture_is_not_an_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _nsys(tmp_path / "farrange.synthetic.sqlite", NEAR, 20_000_000)
    con = sqlite3.connect(path)
    con.execute(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT 18000000000000, "
        "18000001000000, eventType, text, globalTid FROM NVTX_EVENTS LIMIT 1"
    )
    con.commit()
    con.close()
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert _rows(doc) == [(1.0, 0.3, 2)] * 3
    assert any("capture" in w for w in doc["warnings"]), doc["warnings"]


def test_a_kernel_whose_call_was_left_out_as_far_is_not_said_launched_before_the_capture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _nsys(tmp_path / "farapi.synthetic.sqlite", NEAR, 20_000_000, api_shift={1: 3 * 3_600 * S_NS})
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert _rows(doc)[1:] == [(1.0, 0.3, 2)] * 2
    assert any("1 API calls stamped outside the capture" in w for w in doc["warnings"]), doc["warnings"]
    assert not any("before the capture began" in w for w in doc["warnings"]), doc["warnings"]


def test_an_event_exactly_one_hour_after_the_rest_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: a 5th iteration starting exactly 3600 s after the last start is kept; so is one 1 µs later, now as a
    phase of its own (its annotation beside its kernels and calls: tracekit.readers.timestamps._clusters), where
    its work had been left out as far."""
    code, doc, err = _json(capsys, str(_kineto_clusters(tmp_path / "h.synthetic.json", [4, 1], HOUR_US)))
    assert code == 0, err
    assert _rows(doc) == [(0.9, 0.03, 3)] * 5 and doc["warnings"] == []
    path = _kineto_clusters(tmp_path / "h1.synthetic.json", [4, 1], HOUR_US + 1)
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert _rows(doc) == [(0.9, 0.03, 3)] * 5 and doc["warnings"] == []


def test_exactly_half_far_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Pin: 2 + 2 iterations 2 h apart (no group holds more than half): all kept, no far warning."""
    path = _kineto_clusters(tmp_path / "even.synthetic.json", [2, 2], 2 * HOUR_US)
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert _rows(doc) == [(0.9, 0.03, 3)] * 4
    assert not any("hour" in w for w in doc["warnings"]), doc["warnings"]


@pytest.mark.parametrize("capture", [0, -5])
def test_a_capture_record_of_zero_or_negative_length_is_not_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], capture: int
) -> None:
    """Pin: ANALYSIS_DETAILS.duration 0 or -5 is no capture (events at 10-14 ms all read, nothing said)."""
    code, doc, err = _json(capsys, str(_nsys(tmp_path / "cap.synthetic.sqlite", NEAR, capture)))
    assert code == 0, err
    assert _rows(doc) == [(1.0, 0.3, 2)] * 3 and doc["warnings"] == []


# ------------------------------------------------------------------------------ run.json vs sidecar


def _sim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict[str, Any]]:
    run = tmp_path / "sim"
    code, _, err = _run(capsys, "simulate", "--runtime", "pytorch", "--iters", "3", "--batch-sizes", "1,2",
                        "-o", str(run), "-q")  # fmt: skip
    assert code == 0, err
    return run, json.loads((run / "run.json").read_text())


def test_run_json_and_sidecar_disagreeing_on_seq_len_is_said_and_withheld(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, doc = _sim(tmp_path, capsys)
    doc["configs"][1]["seq_len"] = 512
    (run / "run.json").write_text(json.dumps(doc))
    code, _, err = _run(capsys, "report", str(run), "-o", str(tmp_path / "out"), "--no-figures", "-q",
                        "--format", "csv")  # fmt: skip
    assert code == 0, err
    assert "seq len uncertain, sources disagree: 512 from run.json vs 128 from sidecar" in err, err
    rows = (tmp_path / "out" / "report.csv").read_text().splitlines()
    b2 = next(r for r in rows if "pytorch_b2_s128" in r)
    assert b2.split(",")[2] == "", b2  # seq_len withheld


@pytest.mark.parametrize("how", ["symlink", "dotted"])
def test_one_trace_named_twice_through_another_path_is_analyzed_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    run, doc = _sim(tmp_path, capsys)
    kind, name = next(iter(doc["configs"][0]["traces"].items()))
    if how == "symlink":
        os.symlink(name, run / f"link_{name}")
        other = f"link_{name}"
    else:
        (run / "sub").mkdir()
        other = f"./sub/../{name}"
    doc["configs"][1]["traces"] = {kind: other}
    (run / "run.json").write_text(json.dumps(doc))
    code, _, err = _run(capsys, "report", str(run), "-o", str(tmp_path / "out"), "--no-figures", "-q",
                        "--format", "csv")  # fmt: skip
    assert code == 0, err
    assert "names the same trace as configs[0]" in err, err
    rows = (tmp_path / "out" / "report.csv").read_text().splitlines()[1:]
    assert len(rows) == 1 and rows[0].split(",")[3] == "", rows  # one row, batch withheld


def test_a_sidecar_with_a_bom_and_a_trailing_comma_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write_json(tmp_path / "t.synthetic.json", {"traceEvents": small_trace_events()})
    (tmp_path / "t.synthetic.meta.json").write_bytes(
        b'\xef\xbb\xbf{"warmup_iterations": 2, "warmup_in_trace": true, "iterations": 2, "batch_size": 4,}'
    )
    code, doc, err = _json(capsys, str(trace))
    assert code == 0, err
    assert len(doc["iterations"]) == 4
    assert any("sidecar t.synthetic.meta.json not used" in w for w in doc["warnings"]), doc["warnings"]


# ------------------------------------------------------------------------------------- compare names


def test_ncu_name_key_keeps_template_arguments_and_pairs_spellings() -> None:
    from tracekit.analyzers.compare import kernel_name_key as key

    kineto = "void at::native::(anonymous namespace)::k<float, true, 3ul>(float*, int)"
    assert key(kineto) == key("void k<float, 1, 3>(const T1 *, int)")
    assert key(kineto) != key(
        "void at::native::(anonymous namespace)::k<c10::Half, true, 3ul>(c10::Half*, int)"
    )
    assert key(kineto) != key("k<float, 0, 3>(T1 *, int)")
    assert key("void f<{lambda(int)#2}>(int)") == key("f<[lambda(int) (instance 2)]>(int)")
    assert key("void f<{lambda(int)#2}>(int)") != key("f<[lambda(int) (instance 1)]>(int)")


# ------------------------------------------------------------------------------------------- jobs


def test_analyze_many_with_two_jobs_beside_a_thread_answers_as_one_job(tmp_path: Path) -> None:
    import tracekit

    paths = [
        str(_kineto_clusters(tmp_path / "a.synthetic.json", [4], 0)),
        str(_nsys(tmp_path / "b.synthetic.sqlite", NEAR, 20_000_000)),
    ]
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        one = tracekit.analyze_many(paths, jobs=1)
        two = tracekit.analyze_many(paths, jobs=2)
    finally:
        stop.set()
        thread.join()
    assert one["failed"] == two["failed"] == []
    assert json.dumps(one, sort_keys=True, default=str) == json.dumps(two, sort_keys=True, default=str)


def test_cli_jobs_two_answers_as_jobs_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = str(_kineto_clusters(tmp_path / "a.synthetic.json", [4], 0))
    b = str(_nsys(tmp_path / "b.synthetic.sqlite", NEAR, 20_000_000))
    far = str(_kineto_clusters(tmp_path / "far.synthetic.json", [5, 3], 2 * HOUR_US))  # two phases, 2 h apart
    outs = []
    for jobs in ("1", "2"):
        code, out, err = _run(capsys, "analyze", a, b, far, "--jobs", jobs, "--format", "json")
        assert code == 0, err
        outs.append(json.loads(out))
    assert outs[0] == outs[1]
    assert [row["iterations"] for row in outs[1]["rows"]] == [4, 3, 8], outs[1]["rows"]


# ------------------------------------------------------------------------------ ORT and own outputs


@pytest.mark.parametrize(
    ("extra", "rows"),
    [
        ([], [(1.0, 0.4)] * 3),
        (["--range", "model_run"], [(1.0, 0.4)] * 3),
        (["--split-idle", "0.05"], [(0.41, 0.4)] * 3),
    ],
)
def test_ort_ranges_and_split_idle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], rows: list[tuple[float, float]]
) -> None:
    path = write_json(tmp_path / "ort.synthetic.json", ort_cpu_events(3))
    code, doc, err = _json(capsys, str(path), *extra)
    assert code == 0, err
    assert [(it["latency_ms"], it["gpu_busy_ms"]) for it in doc["iterations"]] == rows


def test_own_outputs_fed_back_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(_nsys(tmp_path / "t.synthetic.sqlite", NEAR, 20_000_000))
    out = {n: tmp_path / n for n in ("an.json", "tl.json", "gaps.csv")}
    code, _, err = _run(capsys, "analyze", trace, "--format", "json", "-o", str(out["an.json"]), "-q")
    assert code == 0, err
    code, _, err = _run(capsys, "analyze", trace, "--timeline", str(out["tl.json"]), "--gaps", str(out["gaps.csv"]),
                        "-q")  # fmt: skip
    assert code == 0, err
    for name, words in (
        ("an.json", "tracekit analyze --format json"),
        ("tl.json", "tracekit's own --timeline output"),
        ("gaps.csv", "not a trace tracekit can read"),
    ):
        code, _, err = _run(capsys, "analyze", str(out[name]))
        assert code == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and str(out[name]) in lines[0] and words in lines[0], err
        assert "Traceback" not in err


def test_a_later_cpu_only_phase_does_not_cast_doubt_on_the_iterations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = small_trace_events(4, t0=T0_US)
    later = T0_US + 2 * HOUR_US
    events += [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::copy_",
            "pid": 1,
            "tid": 1,
            "ts": later + 10 * i,
            "dur": 5,
        }
        for i in range(40)
    ]
    code, doc, err = _json(
        capsys, str(write_json(tmp_path / "cpuphase.synthetic.json", {"traceEvents": events}))
    )
    assert code == 0, err
    assert _rows(doc) == [(0.9, 0.03, 3)] * 4
    assert not any("not real" in w for w in doc["warnings"]), doc["warnings"]


def test_compare_pairs_ncu_spellings_but_not_template_twins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kineto: k<float, true>, k<c10::Half, true>, a lambda kernel (1 each per iteration, 10 µs); ncu (3
    iterations, sidecar): k<float, 1>, k<float, 0> (a template twin Kineto lacks), the lambda, 12 µs each. Pairs
    float/true and the lambda; Half stays A's only, k<float, 0> B's only."""
    names = [
        "void at::native::(anonymous namespace)::k<float, true>(float*, int)",
        "void at::native::(anonymous namespace)::k<c10::Half, true>(c10::Half*, int)",
        "void at::native::vectorized_elementwise_kernel<4, {lambda(int)#1}>(int)",
    ]
    events = small_trace_events(3)
    for e in events:
        if e["cat"] == "kernel":
            e["name"] = names[int(e["name"][-1])]
    a = write_json(tmp_path / "k.synthetic.json", {"traceEvents": events})
    ncu = [
        "k<float, 1>(T1 *, int)",
        "k<float, 0>(T1 *, int)",
        "vectorized_elementwise_kernel<4, [lambda(int) (instance 1)]>(int)",
    ]
    rows = ['"ID","Process ID","Kernel Name","gpu__time_duration.sum"', '"","","","usecond"']
    rows += [f'"{i}","7","{ncu[i % 3]}","12"' for i in range(9)]
    b = tmp_path / "k.synthetic.ncu.csv"
    b.write_text("\n".join(rows) + "\n")
    write_json(tmp_path / "k.synthetic.ncu.meta.json", {"iterations": 3})
    code, out, err = _run(capsys, "compare", str(a), str(b), "--format", "json")
    assert code == 0, err
    c = json.loads(out)["comparisons"][0]
    got = {k["name"]: (k["count_a"], k["count_b"], k["time_a_us"], k["time_b_us"]) for k in c["kernels"]}
    assert got == {
        names[0]: (1.0, 1.0, 10.0, 12.0),
        names[1]: (1.0, None, 10.0, None),
        names[2]: (1.0, 1.0, 10.0, 12.0),
        ncu[1]: (None, 1.0, None, 12.0),
    }
    assert any(w.startswith("2 kernel names of B (Nsight Compute) paired") for w in c["warnings"]), c[
        "warnings"
    ]


@pytest.mark.parametrize(
    ("field", "where", "value"), [("precision", "run", "fp32"), ("runtime", "sidecar", "onnx")]
)
def test_run_json_and_sidecar_disagreeing_on_precision_or_runtime_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, where: str, value: str
) -> None:
    run, doc = _sim(tmp_path, capsys)
    if where == "run":
        doc[field] = value
        (run / "run.json").write_text(json.dumps(doc))
    else:
        side = run / "pytorch_b2_s128.synthetic.meta.json"
        meta = json.loads(side.read_text())
        meta[field] = value
        side.write_text(json.dumps(meta))
    code, out, err = _run(capsys, "table", str(run))
    assert code == 0, err
    blocks = re.findall(r"warning:.*(?:\n   .*)*", out + err)  # a warning with its wrapped lines
    assert any(field in block and value in block for block in blocks), out + err


def test_an_nsys_iteration_two_hours_later_keeps_its_kernels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _nsys(tmp_path / "late.synthetic.sqlite", [*NEAR, 2 * 3_600 * S_NS])
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert doc["iterations"] and all(row == (1.0, 0.3, 2) for row in _rows(doc)), _rows(doc)


def test_a_device_op_just_inside_the_capture_slack_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: 60 s is the slack, 'more than' it is outside: a 4th iteration whose first launch call ends
    exactly 60 s after a 20 ms capture's end (and starts 10 µs before) keeps that call; its two kernels (40 and
    340 µs later) and its second call (290 µs later) are left out, said. (Holds whether the rule looks at starts
    only or at ends too.)"""
    start = 20_000_000 + 60 * S_NS - 60_000  # its first call ends at the capture's end + 60 s exactly
    path = _nsys(tmp_path / "slack.synthetic.sqlite", [*NEAR, start], 20_000_000)
    code, doc, err = _json(capsys, str(path))
    assert code == 0, err
    assert "2 device ops and 1 API calls stamped outside the capture" in doc["warnings"][0], doc["warnings"]


def test_a_kineto_annotation_hours_from_the_rest_is_not_an_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = small_trace_events(4, t0=T0_US)
    events.append(dict(events[0], ts=T0_US + 5 * HOUR_US))
    code, doc, err = _json(capsys, str(write_json(tmp_path / "kfar.synthetic.json", {"traceEvents": events})))
    assert code == 0, err
    assert _rows(doc) == [(0.9, 0.03, 3)] * 4
    assert any("hour" in w for w in doc["warnings"]), doc["warnings"]


def test_a_kineto_kernel_whose_call_was_left_out_as_far_is_not_said_launched_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = small_trace_events(4, t0=T0_US)
    next(e for e in events if e["cat"] == "cuda_runtime")["ts"] += 3 * HOUR_US
    code, doc, err = _json(capsys, str(write_json(tmp_path / "kapi.synthetic.json", {"traceEvents": events})))
    assert code == 0, err
    assert _rows(doc)[1:] == [(0.9, 0.03, 3)] * 3
    assert "1 API calls stamped more than an hour" in doc["warnings"][0]
    assert not any("launched before the capture" in w for w in doc["warnings"]), doc["warnings"]


def test_analyze_many_with_two_jobs_from_a_thread_that_is_not_main(tmp_path: Path) -> None:
    """Pin: the pool started from a worker thread (no signal handlers there) answers as jobs=1 from it."""
    import tracekit

    paths = [
        str(_kineto_clusters(tmp_path / "a.synthetic.json", [4], 0)),
        str(_nsys(tmp_path / "b.synthetic.sqlite", NEAR, 20_000_000)),
    ]
    got: dict[int, Any] = {}

    def work(jobs: int) -> None:
        try:
            got[jobs] = tracekit.analyze_many(paths, jobs=jobs)
        except BaseException as exc:  # (shown by the assertion below)
            got[jobs] = repr(exc)

    for jobs in (1, 2):
        thread = threading.Thread(target=work, args=(jobs,))
        thread.start()
        thread.join(60)
    assert isinstance(got[1], dict) and isinstance(got[2], dict), got
    assert json.dumps(got[1], sort_keys=True, default=str) == json.dumps(got[2], sort_keys=True, default=str)
    assert [r["iterations"] for r in got[2]["rows"]] == [4, 3]


def test_compare_of_a_trace_and_a_link_to_it_says_they_are_one_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _nsys(tmp_path / "t.synthetic.sqlite", NEAR, 20_000_000)
    link = tmp_path / "link.synthetic.sqlite"
    os.symlink(trace.name, link)
    code, _, err = _run(capsys, "compare", str(trace), str(link))
    assert code == 0, err
    assert "A and B are the same file" in err, err


def test_compare_pairs_no_overloads_that_differ_only_in_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: Kineto k(int*) and k(float*), ncu k(int *) and k(float *) (one key 'k' for two names on each side):
    nothing paired (4 names, each one side's), said."""
    names = ["void k(int*)", "void k(float*)"]
    events = small_trace_events(3, kernels=2)
    for e in events:
        if e["cat"] == "kernel":
            e["name"] = names[int(e["name"][-1])]
    a = write_json(tmp_path / "o.synthetic.json", {"traceEvents": events})
    ncu = ["k(int *)", "k(float *)"]
    rows = ['"ID","Process ID","Kernel Name","gpu__time_duration.sum"', '"","","","usecond"']
    rows += [f'"{i}","7","{ncu[i % 2]}","12"' for i in range(6)]
    b = tmp_path / "o.synthetic.ncu.csv"
    b.write_text("\n".join(rows) + "\n")
    write_json(tmp_path / "o.synthetic.ncu.meta.json", {"iterations": 3})
    code, out, err = _run(capsys, "compare", str(a), str(b), "--format", "json")
    assert code == 0, err
    c = json.loads(out)["comparisons"][0]
    got = {k["name"]: (k["count_a"], k["count_b"]) for k in c["kernels"]}
    assert got == {names[0]: (1.0, None), names[1]: (1.0, None), ncu[0]: (None, 1.0), ncu[1]: (None, 1.0)}
    assert any(w.startswith("not paired: 2 kernel names of B and 2 of A") for w in c["warnings"]), c[
        "warnings"
    ]
