"""Hostile inputs against round 18's last hour (hostile18c), from the outside (the CLI in this process): the
far launch-call rule (edff3a5, analyzers/iterations.py LAUNCH_DELAY_MAX_NS), the far-timestamp body (ad49cbb),
Kineto CPU runs (c9f1a9f), untimed iterations (26fdee9) and 'table RUN -o RUN/<file>' (d1cec4c).

Every trace is hand-built (SYNTHETIC: file names and metadata say so) with tests.test_hostile18b's builder:
one 'iteration' annotation of 900 µs per start (epoch µs), 3 launches 10 + 100 k µs in, each kernel 20 µs after
its call, dur 10 µs: latency 0.9 ms, GPU busy 0.03 ms per iteration.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import analyze_json
from tests.test_hostile18b import HOUR, T0, _kineto, _near

ROOT = Path(__file__).resolve().parents[1]


def _rows(doc: dict[str, Any]) -> list[tuple[float, float | None, int]]:
    return [(it["latency_ms"], it["gpu_busy_ms"], it["kernels"]) for it in doc["iterations"]]


def _analyze(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> dict[str, Any]:
    code, doc, err = analyze_json(capsys, str(path), *args)
    assert code == 0 and doc is not None, err
    return doc


def _shift_kernels(path: Path, ids: set[int], by: int) -> Path:
    """Add ``by`` µs to the ts of the kernels whose correlation id is in ``ids`` (their calls stay)."""
    doc = json.loads(path.read_text())
    for e in doc["traceEvents"]:
        if e["cat"] == "kernel" and e["args"]["correlation"] in ids:
            e["ts"] += by
    path.write_text(json.dumps(doc))
    return path


# ------------------------------------------------------------------ 1. a launch call an hour from its op (edff3a5)


def test_half_the_kernels_stamped_hours_after_their_calls_do_not_empty_their_iterations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The mirror of hostile18b's far calls: the kernels of iterations 0 and 1 (ids 1-6, 6 of 12) stamped 2 h
    later, their launch calls where they were made. No minority, so the reader keeps them ('too many to be
    damaged rows'). edff3a5 takes the call-to-op distance (> 1 h) as a damaged call and places each op by its
    own start, which is the damaged time here: got iterations 0-1 (0.9, 0.0, 0), '6 device ops (0.060 ms busy)
    were launched outside every iteration (6 between)' (their calls lie inside iterations 0-1), bound
    'framework', verdict_uncertain None. Before edff3a5 the call placed them, but their ends 2 h later stretched
    iteration 0 to 7,200,000.24 ms. Now: a call and op an hour apart go where the one lying in an iteration
    puts them (the call, here), and an op placed by its call has no known time within the iteration (its own
    is the damaged one): iterations 0-1 count their 3 kernels with busy withheld, named, and said why; the
    verdict is that of iterations 2-3, whose times are whole."""
    path = _shift_kernels(
        _kineto(tmp_path / "half_kernels_far.synthetic.json", _near(4)), set(range(1, 7)), 2 * HOUR
    )
    doc = _analyze(capsys, path)
    assert any(w.startswith("6 of 12 device ops are stamped more than an hour") for w in doc["warnings"])
    assert _rows(doc) == [(0.9, None, 3)] * 2 + [(0.9, 0.03, 3)] * 2
    assert any(w.startswith("6 device ops are stamped more than an hour from their launch calls (one of the")
               for w in doc["warnings"])  # fmt: skip
    assert any(
        w.startswith("2 of 4 iterations (index 0, 1) hold device ops none of which") for w in doc["warnings"]
    )
    assert doc["summary"]["bound"] == "framework"


def test_a_minority_of_kernels_stamped_hours_after_their_calls_are_left_out_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: the second kernel of each iteration (ids 2, 5, 8, 11: 4 of 12) stamped 2 h later: a minority, left
    out with a warning; each iteration reads (0.9, 0.02, 2)."""
    path = _shift_kernels(_kineto(tmp_path / "third_far.synthetic.json", _near(4)), {2, 5, 8, 11}, 2 * HOUR)
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(0.9, 0.02, 2)] * 4
    assert any(w.startswith("4 device ops stamped more than an hour") for w in doc["warnings"]), doc[
        "warnings"
    ]


# ------------------------------------------------------------------ 2. the body is the cluster of most work (ad49cbb)


def test_a_far_phase_holding_more_kernels_than_the_near_one_is_kept_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: 2 iterations of 3 kernels, then 5 h later one iteration of 8 kernels (ids 101-108) with its annotation
    and calls: the far cluster holds the most work (the body), the near one is a whole phase too: all 3 read,
    (0.9, 0.03, 3) x 2 and (0.9, 0.08, 8), nothing said far."""
    path = _kineto(tmp_path / "big_far.synthetic.json", _near(2))
    doc = json.loads(path.read_text())
    far = json.loads(_kineto(tmp_path / "far_part.synthetic.json", [T0 + 5 * HOUR], kernels=8).read_text())
    for e in far["traceEvents"]:
        if "args" in e:
            e["args"]["correlation"] += 100
    doc["traceEvents"] += far["traceEvents"]
    path.write_text(json.dumps(doc))
    got = _analyze(capsys, path)
    assert _rows(got) == [(0.9, 0.03, 3), (0.9, 0.03, 3), (0.9, 0.08, 8)]
    assert not any("stamped" in w for w in got["warnings"]), got["warnings"]


# ------------------------------------------------------------------ 3. Kineto CPU runs (c9f1a9f)


def test_a_cpu_run_with_a_whole_iteration_five_hours_later_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: a CPU run (aten::mm of 800 µs per iteration, no device op) of 4 iterations and a fifth, annotation and
    operator, 5 h later (a resumed profiler): all 5 read (0.9, 0.8, 1), none left out."""
    path = _kineto(tmp_path / "cpu_phase.synthetic.json", _near(4) + [T0 + 5 * HOUR], cpu=True)
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(0.9, 0.8, 1)] * 5
    assert not any("stamped" in w for w in doc["warnings"]), doc["warnings"]


def test_a_cpu_operator_ending_five_hours_later_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: the same CPU run of 4 iterations plus one aten::add beginning inside iteration 3 and lasting 5 h: left
    out with a warning, the 4 iterations read (0.9, 0.8, 1)."""
    add = {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::add",
        "pid": 1,
        "tid": 1,
        "ts": T0 + 3100,
        "dur": 5 * HOUR,
    }
    path = _kineto(tmp_path / "cpu_long.synthetic.json", _near(4), cpu=True, extra=[add])
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(0.9, 0.8, 1)] * 4
    assert any(w.startswith("1 CPU events stamped to end more than an hour") for w in doc["warnings"])


# ------------------------------------------------------------------ 5. untimed device ops (26fdee9)


@pytest.mark.parametrize(
    ("name", "kwargs", "untimed", "ops"),
    [
        ("untimed_kernels_timed_copy", {"dur": None, "copy_dur": 10}, 12, 16),
        ("two_of_three_untimed", {"dur": lambda i, k: None if k else 10}, 8, 12),
    ],
)
def test_iterations_mostly_untimed_doubt_the_verdict(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    kwargs: dict[str, Any],
    untimed: int,
    ops: int,
) -> None:
    """Pin: iterations whose device ops are mostly untimed but not all (a timed copy of 10 µs beside 3 untimed
    kernels; or 1 timed kernel of 3): each reads busy 0.01 ms of what it timed, and the verdict is doubted
    naming the untimed count."""
    path = _kineto(tmp_path / f"{name}.synthetic.json", _near(4), **kwargs)
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(0.9, 0.01, 3)] * 4
    assert doc["summary"]["verdict_uncertain"].startswith(
        f"verdict uncertain: {untimed} of {ops} device ops in"
    )


# ------------------------------------------------------------------ 7. table RUN -o RUN/<file> (d1cec4c)


@pytest.mark.parametrize("spelling", ["dot", "dotdot", "symlink", "sidecar", "latency", "trace"])
def test_table_refuses_a_run_folders_file_however_spelled_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    """Pin: RUN/./run.json, RUN/sub/../run.json, a link to run.json, the ORT sidecar, latency.csv and the trace are each
    refused in one line, exit 2, before any analysis, and left byte for byte."""
    from tracekit import api
    from tracekit.cli import main

    run = tmp_path / "run"
    shutil.copytree(ROOT / "sample_traces" / "cpu_onnx_bert_ort", run)
    target = {
        "dot": run / "run.json",
        "dotdot": run / "run.json",
        "symlink": run / "run.json",
        "sidecar": run / "onnx_b1_s128.ort.meta.json",
        "latency": run / "latency.csv",
        "trace": run / "onnx_b1_s128.ort.json.gz",
    }[spelling]
    out = {
        "dot": f"{run}/./run.json",
        "dotdot": f"{run}/sub/../run.json",
        "symlink": str(tmp_path / "link.json"),
        "sidecar": str(target),
        "latency": str(target),
        "trace": str(target),
    }[spelling]
    if spelling == "symlink":
        (tmp_path / "link.json").symlink_to(target)
    before = target.read_bytes()

    def analyzed(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the traces were analyzed")

    monkeypatch.setattr(api, "table_document", analyzed)
    assert main(["table", str(run), "-o", out]) == 2
    err = capsys.readouterr().err
    assert err == f"tracekit: {Path(out)}: refusing to write over an input file (choose another -o)\n"
    assert target.read_bytes() == before


# ------------------------------------------------------------------ 4. ORT session setup never far (d5a35eb)

HOUR_US = 3_600 * 10**6


def _ort_runs(t0: int, n: int) -> list[dict[str, Any]]:
    """``n`` ORT model_run of 1000 µs, 2000 µs apart from ``t0``, each a MatMul of 300 and an Add of 100 µs."""
    from tests.hostile import ort_cpu_run

    return [event for i in range(n) for event in ort_cpu_run(t0 + i * 2000)]


def _setup(t: int) -> list[dict[str, Any]]:
    from tests.hostile import ort_event

    return [
        ort_event("Session", "model_loading_uri", t, 50),
        ort_event("Session", "session_initialization", t + 60, 40),
    ]


@pytest.mark.parametrize(
    ("name", "events", "rows", "said"),
    [
        # a setup stamped at 9.2e15 µs: kept (never far by itself), the 3 runs read, nothing said far
        ("setup_damaged", _setup(9_200_000_000_000_000) + _ort_runs(200, 3), 3, None),
        # a server: setup at 0, runs 2 h later, one more whole run just after setup: all 4 kept
        ("run_near_setup", _setup(0) + _ort_runs(2 * HOUR_US, 3) + _ort_runs(120, 1), 4, None),
        # a lone model_run 5 h after the rest: left out as far
        (
            "far_empty_run",
            _setup(0) + _ort_runs(200, 3) + _ort_runs(5 * HOUR_US, 1)[:1],
            3,
            "1 Session events stamped",
        ),
    ],
)
def test_ort_setup_and_far_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    events: list[dict[str, Any]],
    rows: int,
    said: str | None,
) -> None:
    """Pin: ORT runs read (1.0, 0.4, 2) each, whatever the setup's time; a lone run far from the rest is left out
    and said."""
    path = tmp_path / f"{name}.synthetic.ort.json"
    path.write_text(json.dumps(events))
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(1.0, 0.4, 2)] * rows
    if said is None:
        assert not any("stamped" in w for w in doc["warnings"]), doc["warnings"]
    else:
        assert any(w.startswith(said) for w in doc["warnings"]), doc["warnings"]


# ------------------------------------------------------------------ 6. nsys kernels of no process, far calls (0c536fd)


def _nsys(path: Path, extra_call: tuple[int, int] | None = None) -> Path:
    """tests.hostile.three_iteration_nsys's trace (3 x 1.0 ms, busy 0.3, 2 kernels each; capture 0-20 ms), with
    ``extra_call`` (start ns, pid): one more cudaLaunchKernel of correlation id 1 from another process."""
    from tests.hostile import three_iteration_builder

    b = three_iteration_builder()
    if extra_call is not None:
        at, pid = extra_call
        b.runtime(at, at + 10_000, "cudaLaunchKernel_v7000", correlation=1, pid=pid, tid=pid)
    b.capture(20_000_000, start_time=0)
    return b.write(path)


def test_an_nsys_kernel_without_a_process_whose_id_two_far_calls_carry_keeps_its_iteration(
    tmp_path: Path,
) -> None:
    """0c536fd's case (the launch call of id 1, process 100, stamped 3 h later; that kernel's globalPid NULL) with a
    second process (200) whose one call, also of id 1, is stamped 3 h later too: both far calls are left out, and
    the kept calls all come from process 100. Whichever launched it, its call was far, so by 0c536fd's rule the
    kernel keeps iteration 0 by its own start. Got: '1 device ops (0.200 ms busy) have a correlation id but no
    launching call in the trace (launched before the capture began)', iteration 0 (1.0, 0.1, 1). Expected
    (1.0, 0.3, 2) x 3, nothing said 'before the capture'."""
    import tracekit
    from tests.hostile import run_sql

    hour = 3_600 * 10**9
    path = run_sql(
        _nsys(tmp_path / "two_far_calls_no_pid.synthetic.sqlite", extra_call=(3 * hour + 10_050_000, 200)),
        f'UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start + {3 * hour}, "end" = "end" + {3 * hour} '
        "WHERE correlationId = 1 AND start < 20000000",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL WHERE correlationId = 1",
    )
    analyzed = tracekit.analyze(path)
    assert any(w.startswith("2 API calls stamped outside the capture") for w in analyzed.warnings)
    frame = analyzed.iterations
    assert frame.get_column("kernels").to_list() == [2, 2, 2]
    assert frame.get_column("gpu_busy_ms").to_list() == pytest.approx([0.3] * 3, abs=1e-12)
    assert not any("before the capture" in w for w in analyzed.warnings), analyzed.warnings


def test_nsys_kernels_all_without_a_process_read_as_the_one_process(tmp_path: Path) -> None:
    """Pin: every kernel's globalPid NULL, all calls kept (process 100 only): read as launched by it, 3 x (1.0,
    0.3, 2), said once."""
    import tracekit
    from tests.hostile import run_sql

    path = run_sql(
        _nsys(tmp_path / "no_pid.synthetic.sqlite"), "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL"
    )
    analyzed = tracekit.analyze(path)
    rows = analyzed.iterations.select("latency_ms", "gpu_busy_ms", "kernels").rows()
    assert [(lat, round(busy, 12), k) for lat, busy, k in rows] == [(1.0, 0.3, 2)] * 3
    assert any(w.startswith("6 device ops have no process id (globalPid null)") for w in analyzed.warnings)


# ------------------------------------------------------------------ 1/5. ops with no start time (Kineto)


def _drop_field(path: Path, field: str, ids: set[int]) -> Path:
    doc = json.loads(path.read_text())
    for e in doc["traceEvents"]:
        if e["cat"] == "kernel" and e["args"]["correlation"] in ids:
            del e[field]
    path.write_text(json.dumps(doc))
    return path


def test_kernels_without_dur_doubt_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Pin (the twin of the next test): the second kernel of each iteration (ids 2, 5, 8, 11) without 'dur': counted
    (3 per iteration), busy 0.02 of what was timed, verdict doubted (4 of 12, 33%)."""
    path = _drop_field(_kineto(tmp_path / "no_dur.synthetic.json", _near(4)), "dur", {2, 5, 8, 11})
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(0.9, 0.02, 3)] * 4
    assert doc["summary"]["verdict_uncertain"].startswith(
        "verdict uncertain: 4 of 12 device ops in the iterations"
    )


def test_kernels_without_ts_are_not_dropped_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second kernel of each iteration (ids 2, 5, 8, 11: 4 of 12, their launch calls inside the iterations)
    without 'ts'. Got: (0.9, 0.02, 2) x 4, bound 'framework', verdict_uncertain None, and only '4 complete events
    without a readable ts were skipped'. A kernel with no start time has no busy time known, as one with no
    duration: expected 3 kernels per iteration (placed by their calls) or, at least, the doubted verdict the
    'dur' twin gets. Now both: the reader keeps GPU ops without a ts (untimed, placed by their calls) and says
    so in a line of its own (not 'no readable dur', which they have)."""
    path = _drop_field(_kineto(tmp_path / "no_ts.synthetic.json", _near(4)), "ts", {2, 5, 8, 11})
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(0.9, 0.02, 3)] * 4
    assert doc["summary"]["verdict_uncertain"].startswith(
        "verdict uncertain: 4 of 12 device ops in the iterations (33%) have no start or end time"
    )
    assert any(w.startswith("4 of 12 GPU ops (kernel, memcpy, memset events) have no readable ts (null, missing")
               for w in doc["warnings"])  # fmt: skip
    assert not any(
        "readable dur" in w or "complete events without a readable ts" in w for w in doc["warnings"]
    )


# ------------------------------------------------------------------ 5. --split-idle windows and untimed ops (26fdee9)


def _gapped(path: Path, untimed: set[int], windows: int = 5, per: int = 2) -> Path:
    """No annotation: ``windows`` bursts 10 ms apart of ``per`` launches 100 µs apart (ids 1, 2, ...), each
    kernel 20 µs after its call, dur 50 µs (``untimed``: ids without dur)."""
    events: list[dict[str, Any]] = []
    c = 1
    for w in range(windows):
        for k in range(per):
            launch = T0 + w * 10_000 + k * 100
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": launch, "dur": 5, "args": {"correlation": c}})  # fmt: skip
            kernel = {"ph": "X", "cat": "kernel", "name": f"k{k}", "pid": 0, "tid": 7, "ts": launch + 20,
                      "dur": 50, "args": {"correlation": c, "device": 0, "stream": 7}}  # fmt: skip
            if c in untimed:
                del kernel["dur"]
            events.append(kernel)
            c += 1
    path.write_text(json.dumps({"traceEvents": events, "traceName": "synthetic", "metadata": "synthetic"}))
    return path


def test_split_idle_with_a_tenth_of_ops_untimed_doubts_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: 5 bursts of 2 kernels of 50 µs, kernel 4 (burst 1's second) without dur: 1 of 10, exactly a tenth.
    --split-idle 1 cuts 5 windows, burst 1's reads (0.07, 0.05, 1), the others (0.17, 0.1, 2); the untimed op
    is said 'busy time unknown' outside every iteration, and the verdict doubted."""
    path = _gapped(tmp_path / "split_tenth.synthetic.json", {4})
    doc = _analyze(capsys, path, "--split-idle", "1")
    assert _rows(doc) == [(0.17, 0.1, 2), (0.07, 0.05, 1), (0.17, 0.1, 2), (0.17, 0.1, 2), (0.17, 0.1, 2)]
    assert any(w.startswith("1 device ops (busy time unknown: no start or end time) were launched outside")
               for w in doc["warnings"])  # fmt: skip
    assert doc["summary"]["verdict_uncertain"].startswith(
        "verdict uncertain: 1 of the trace's 10 device ops (10%)"
    )


def test_split_idle_with_a_whole_burst_untimed_is_one_window_fewer_and_doubted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: burst 1's both kernels (ids 3, 4) without dur: 4 windows of (0.17, 0.1, 2), the 2 ops said 'busy time
    unknown', the verdict doubted (2 of 10, 20%)."""
    path = _gapped(tmp_path / "split_burst.synthetic.json", {3, 4})
    doc = _analyze(capsys, path, "--split-idle", "1")
    assert _rows(doc) == [(0.17, 0.1, 2)] * 4
    assert any(
        w.startswith("2 device ops (busy time unknown: no start or end time)") for w in doc["warnings"]
    )
    assert doc["summary"]["verdict_uncertain"].startswith(
        "verdict uncertain: 2 of the trace's 10 device ops (20%)"
    )


# ------------------------------------------------------------------ 2. the body counts the events that place it (ad49cbb)


def test_far_cpu_operators_do_not_make_all_the_gpu_work_far(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """4 bursts 10 ms apart of 3 launches and kernels of 50 µs (no annotation), plus 30 aten::mm cpu_ops of 5 µs
    5 h later. --split-idle 1 reads 4 x (0.27, 0.15, 3), right; but the warning says every device op and call is
    the far one ('12 of 12 device ops and 12 of 12 API calls are stamped more than an hour from every other
    event ... 5 hours before them: ... latencies and launch delays between them and the rest are not real').
    With 10 such operators nothing is said. Expected: the same rows, and no warning naming the device ops as
    the far events (the far ones are the 30 CPU operators, which place nothing of the work)."""
    path = _gapped(tmp_path / "far_cpu_ops.synthetic.json", set(), windows=4, per=3)
    doc = json.loads(path.read_text())
    doc["traceEvents"] += [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::mm",
            "pid": 1,
            "tid": 1,
            "ts": T0 + 5 * HOUR + i * 10,
            "dur": 5,
        }
        for i in range(30)
    ]
    path.write_text(json.dumps(doc))
    got = _analyze(capsys, path, "--split-idle", "1")
    assert _rows(got) == [(0.27, 0.15, 3)] * 4
    assert not any("device ops" in w and "stamped more than an hour" in w for w in got["warnings"]), got[
        "warnings"
    ]


# ------------------------------------------------------------------ 2/3. two equal clusters hours apart, no ranges


def _two_phases(path: Path, kind: str) -> Path:
    """No annotation: 4 events 1 ms apart from T0 and 4 more 5 h later. ``cpu``: aten::mm cpu_ops of 800 µs (a
    CPU run); ``gpu``: one cudaLaunchKernel (5 µs) and its kernel (50 µs, 20 µs after it) each."""
    events: list[dict[str, Any]] = []
    for i in range(8):
        ts = T0 + (5 * HOUR if i >= 4 else 0) + (i % 4) * 1000
        if kind == "cpu":
            events.append(
                {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts, "dur": 800}
            )
            continue
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts,
                       "dur": 5, "args": {"correlation": i + 1}})  # fmt: skip
        events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts + 20, "dur": 50,
                       "args": {"correlation": i + 1, "device": 0, "stream": 7}})  # fmt: skip
    path.write_text(json.dumps({"traceEvents": events, "traceName": "synthetic", "metadata": "synthetic"}))
    return path


@pytest.mark.parametrize(
    ("kind", "latency", "busy"), [("cpu", 18_000_003.8, 6.4), ("gpu", 18_000_003.07, 0.4)]
)
def test_one_window_over_two_phases_hours_apart_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, latency: float, busy: float
) -> None:
    """4 events then 4 more 5 h later, no annotation (a CPU run of aten::mm, or launches and kernels): neither half
    is a minority, so the far rule keeps both, and the one window runs over the pause: got one iteration of
    18,000,003.8 ms busy 6.4 (CPU; 18,000,003.07 / 0.4 GPU), bound 'framework', sure of it, no warning about the
    5 h. The numbers can stand (the window is what was asked), but a window 99.99...% idle across a 5 h
    pause is no iteration: expected the verdict doubted, or a warning naming the pause (more than an hour).
    Now doubted, naming the gap; --split-idle cuts the two halves apart, and is not doubted."""
    path = _two_phases(tmp_path / f"two_phases_{kind}.synthetic.json", kind)
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(latency, busy, 8)]
    said = any("hour" in w for w in doc["warnings"])
    assert said or doc["summary"]["verdict_uncertain"], (_rows(doc), doc["summary"]["bound"], doc["warnings"])
    assert doc["summary"]["verdict_uncertain"].startswith(
        "verdict uncertain: 1 of the 1 windows cut from the trace's work (it has no ranges, or --split-idle cut "
        "them) hold idle time of more than an hour in one gap (the longest 5.0 hours)"
    )
    split = _analyze(capsys, path, "--split-idle", "100")
    assert len(split["iterations"]) == 2 and not split["summary"]["verdict_uncertain"], split["warnings"]


# ------------------------------------------------------------------ 5. an iteration mostly untimed (d211172)


def test_an_iteration_of_only_untimed_kernels_is_withheld(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin (the twin of the next test): 10 iterations, iteration 0's 3 kernels without dur: its busy withheld (None),
    named by index, the other 9 read (0.9, 0.03, 3)."""
    path = _kineto(
        tmp_path / "it0_untimed.synthetic.json", _near(10), dur=lambda i, k: None if i == 0 else 10
    )
    doc = _analyze(capsys, path)
    assert _rows(doc) == [(0.9, None, 3)] + [(0.9, 0.03, 3)] * 9
    assert any(
        w.startswith("1 of 10 iterations (index 0) hold device ops none of which") for w in doc["warnings"]
    )


def test_an_iteration_of_untimed_kernels_beside_one_timed_copy_is_not_shown_as_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """10 iterations of 3 kernels (10 µs) and a copy (10 µs, 520 µs in); iteration 0's 3 kernels without dur.
    Got: iteration 0 (0.9, 0.01, 3), gpu_utilization 0.0111, idle_ms 0.89, dispatch_ms 0.855, with only the
    reader's trace-wide '3 of 40 GPU ops ... have no readable dur'; verdict_uncertain None. 3 of its 4 device
    ops ran for an unknown time: expected its busy withheld (None) as when all are untimed, or iteration 0
    named in a warning. Now named: its busy (the copy's) is said to be a lower bound."""
    path = _kineto(
        tmp_path / "it0_untimed_copy.synthetic.json",
        _near(10),
        dur=lambda i, k: None if i == 0 else 10,
        copy_dur=10,
    )
    doc = _analyze(capsys, path)
    assert _rows(doc)[1:] == [(0.9, 0.04, 3)] * 9, _rows(doc)
    first = doc["iterations"][0]
    named = any("index 0" in w or "iteration 0" in w for w in doc["warnings"])
    assert first["gpu_busy_ms"] is None or named, (first["gpu_busy_ms"], doc["warnings"])
    assert "1 of 10 iterations (index 0) hold device ops half or more of which have no start or end time" in (
        " ".join(doc["warnings"])
    )


def test_nsys_half_the_kernels_stamped_hours_after_their_calls_do_not_empty_their_iterations(
    tmp_path: Path,
) -> None:
    """tests.hostile.three_iteration_nsys with 4 iterations (1.0 ms, busy 0.3, 2 kernels each; no capture row), the
    kernels of iterations 0-1 (ids 1-4, 4 of 8) stamped 2 h later, their calls where they were made: kept by the
    reader (no minority). Got (1.0, 0.0, 0) x 2 + (1.0, 0.3, 2) x 2, '4 device ops (0.600 ms busy) were launched
    outside every iteration', bound 'framework', verdict_uncertain None. Now (the Kineto twin above): placed by
    their calls, their busy withheld: (1.0, None, 2) x 2 + (1.0, 0.3, 2) x 2."""
    import tracekit
    from tests.hostile import run_sql, three_iteration_nsys

    hour = 3_600 * 10**9
    path = run_sql(
        three_iteration_nsys(tmp_path / "half_kernels_far.synthetic.sqlite", iterations=4),
        f'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + {2 * hour}, "end" = "end" + {2 * hour} '
        "WHERE correlationId <= 4",
    )
    analyzed = tracekit.analyze(path)
    assert any(w.startswith("4 of 8 device ops are stamped more than an hour") for w in analyzed.warnings)
    rows = [(lat, None if busy is None else round(busy, 12), k) for lat, busy, k in analyzed.iterations.select(
        "latency_ms", "gpu_busy_ms", "kernels").rows()]  # fmt: skip
    assert rows == [(1.0, None, 2)] * 2 + [(1.0, 0.3, 2)] * 2, rows
    assert any(w.startswith("4 device ops are stamped more than an hour from their launch calls")
               for w in analyzed.warnings)  # fmt: skip
