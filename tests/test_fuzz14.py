"""Hostile and unfamiliar inputs for input dispatch, the ONNX Runtime profile reader and the ncu reader (fuzz14).

The standard: a damaged or foreign input is one line on standard error naming the file (exit 2), never a
traceback or an internal error; where an analysis succeeds (exit 0) its numbers hold together (GPU busy within
the latency, the idle causes summing to the idle time, no negative count, no NaN). Inputs are opened read-only
and never changed.

The harness damages copies of the committed sample traces of each format in pytest's temporary folder (cut,
bytes changed, gzip cut, JSON values of the wrong type, empty files, folders, links, pipes, names), plus a
bounded hypothesis search over the same damages. The defect tests after it build their inputs by hand (every
file name says "synthetic"); their expected numbers follow from the events written.

Sources for the ORT cases (the code corpus, microsoft/onnxruntime and its forks):
- ``cuda_profiler.cc`` of ORT 1.8-1.13 (``CudaProfiler::StopProfiling`` / ``EndProfiling``): each Kernel
  event is written with ``ts = DUR(profiling_start, stat.stop_)`` -- CUPTI's *end* time -- and ``dur = stop -
  start``; its args carry ``correlation_id`` (1.8-1.10) or ``op_name`` without ``parent_name`` (1.11-1.13);
  when CUPTI could not start, one Kernel event ``not_available_due_to_cupti_error`` with ts 0 and dur 0.
- ``gpu_profiler_common.h`` / ``cupti_manager.cc`` (1.14+): kernels at CUPTI's start, ``parent_name`` and
  ``op_name`` copied from their node when found.
- ``rocm_profiler.cc`` (before 1.14): Kernel events at roctracer's *begin*, ``op_name`` without
  ``parent_name``, the stream a pointer ("0x...").
"""

from __future__ import annotations

import copy
import csv
import gzip
import io
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import SAMPLE_TRACES
from tracekit.cli import main

ORT_SAMPLE = SAMPLE_TRACES / "cpu_onnx_bert_ort/onnx_b1_s128.ort.json.gz"
NCU_SAMPLE = SAMPLE_TRACES / "h200_bert_fp16/pytorch-ncu/pytorch_b1_s128.ncu.csv.gz"
KINETO_SAMPLE = SAMPLE_TRACES / "synthetic/ranks4/rank0.synthetic.json.gz"
NSYS_SAMPLE = SAMPLE_TRACES / "synthetic/table3_onnx-cuda-graphs/onnx-cuda-graphs_b1_s128.synthetic.sqlite"
RUN_JSON = SAMPLE_TRACES / "cpu_onnx_bert_ort/run.json"

#: the per-iteration idle causes, which sum to the idle time
CAUSES = ("dispatch_ms", "launch_ms", "sync_ms", "other_api_ms", "in_flight_ms")


# ----------------------------------------------------------------------------------------------- harness


def _analyze(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> tuple[int, dict | None, str]:
    """``tracekit analyze PATH --format json`` in this process: (exit code, the document or None, stderr)."""
    code = main(["analyze", str(path), "--format", "json", "--no-progress", *extra])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err


def _holds(code: int, doc: dict | None, err: str, path: Path) -> None:
    """The standard: exit 0, 1 or 2; no traceback or internal error; a refusal is one line naming the file;
    a success's numbers hold together."""
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if code != 0:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("tracekit: ") and str(path) in lines[0], err
        return
    assert doc is not None
    for it in doc["iterations"]:
        for key, value in it.items():
            if isinstance(value, float):
                assert math.isfinite(value), (key, value)
            if key.endswith("_ms") and isinstance(value, (int, float)):
                assert value >= -1e-9, (key, value)
        for key in ("kernels", "idle_gaps", "launches"):
            assert it.get(key) is None or it[key] >= 0, (key, it[key])
        latency, busy = it.get("latency_ms"), it.get("gpu_busy_ms")
        if latency is not None and busy is not None:
            assert busy <= latency + 1e-6, (busy, latency)
        causes = [it.get(k) for k in CAUSES]
        if it.get("idle_ms") is not None and None not in causes:
            assert math.isclose(sum(causes), it["idle_ms"], rel_tol=1e-9, abs_tol=1e-6), (
                causes,
                it["idle_ms"],
            )
        utilization = it.get("gpu_utilization")
        if utilization is not None:
            assert -1e-9 <= utilization <= 1 + 1e-9, utilization


def _ort_events() -> list[dict[str, Any]]:
    """The ORT sample's events up to the end of its second ``model_run``, with every tenth of its Node events
    (set-up, two runs, 130 nodes: small enough to analyze hundreds of damaged copies)."""
    events = json.loads(gzip.decompress(ORT_SAMPLE.read_bytes()))
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
    cut = runs[1]["ts"] + runs[1]["dur"]
    kept = [e for e in events if e["ts"] <= cut]
    return [e for i, e in enumerate(kept) if e["cat"] != "Node" or i % 10 == 0]


def _ncu_rows() -> list[list[str]]:
    """The ncu sample's header, units row and first 6 kernel rows."""
    return list(csv.reader(io.StringIO(gzip.decompress(NCU_SAMPLE.read_bytes()).decode())))[:8]


def _csv_text(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return out.getvalue()


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The bytes of each format's base input (from the committed samples): ORT and Kineto JSON text, ncu CSV
    text, nsys SQLite."""
    return {
        "ort": json.dumps(_ort_events()).encode(),
        "kineto": gzip.decompress(KINETO_SAMPLE.read_bytes()),
        "ncu": _csv_text(_ncu_rows()).encode(),
        "nsys": NSYS_SAMPLE.read_bytes(),
    }


SUFFIX = {"ort": ".ort.json", "kineto": ".json", "ncu": ".ncu.csv", "nsys": ".sqlite"}


def _damaged(tmp_path: Path, kind: str, data: bytes, tag: str, gz: bool = False) -> Path:
    path = tmp_path / f"damaged-{tag}.synthetic{SUFFIX[kind]}{'.gz' if gz else ''}"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("kind", ["ort", "kineto", "ncu", "nsys"])
def test_each_base_reads_and_holds_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bases: dict[str, bytes], kind: str
) -> None:
    """The undamaged bases analyze (exit 0) and satisfy the invariants: the harness can fail on them."""
    path = _damaged(tmp_path, kind, bases[kind], "none")
    code, doc, err = _analyze(capsys, path)
    assert code == 0, err
    _holds(code, doc, err, path)
    assert doc["iterations"] and doc["iterations"][0]["kernels"] > 0


@pytest.mark.parametrize("kind", ["ort", "kineto", "ncu", "nsys"])
@pytest.mark.parametrize("fraction", [0.0001, 0.13, 0.5, 0.87, 0.9999])
def test_cut_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bases: dict[str, bytes], kind: str, fraction: float
) -> None:
    data = bases[kind]
    path = _damaged(tmp_path, kind, data[: max(1, int(len(data) * fraction))], f"cut{fraction}")
    _holds(*_analyze(capsys, path), path)


@pytest.mark.parametrize("kind", ["ort", "kineto", "ncu", "nsys"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bytes_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bases: dict[str, bytes], kind: str, seed: int
) -> None:
    rng = random.Random(seed)
    data = bytearray(bases[kind])
    for _ in range(rng.choice([1, 8, 64])):
        data[rng.randrange(len(data))] = rng.randrange(256)
    path = _damaged(tmp_path, kind, bytes(data), f"flip{seed}")
    _holds(*_analyze(capsys, path), path)


@pytest.mark.parametrize("kind", ["ort", "kineto", "ncu", "nsys"])
def test_gzip_cut_or_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bases: dict[str, bytes], kind: str
) -> None:
    packed = gzip.compress(bases[kind], mtime=0)
    cut = _damaged(tmp_path, kind, packed[: len(packed) // 2], "gzcut", gz=True)
    code, doc, err = _analyze(capsys, cut)
    _holds(code, doc, err, cut)
    assert code == 2 and "damaged gzip file" in err
    changed = bytearray(packed)
    changed[len(changed) // 3] ^= 0x10
    bad = _damaged(tmp_path, kind, bytes(changed), "gzflip", gz=True)
    _holds(*_analyze(capsys, bad), bad)
    header = _damaged(tmp_path, kind, packed[:2], "gzmagic", gz=True)
    _holds(*_analyze(capsys, header), header)


#: JSON values of the wrong type or range for a number field
HOSTILE_VALUES: list[Any] = [
    "12",
    "abc",
    None,
    -5,
    float("nan"),
    float("inf"),
    1e308,
    -1e308,
    2**70,
    [1, 2],
    {"a": 1},
    True,
    "",
]


def _json_with(events: list[dict[str, Any]], index: int, field: str, value: Any) -> list[dict[str, Any]]:
    changed = copy.deepcopy(events)
    changed[index][field] = value
    return changed


@pytest.mark.parametrize("field", ["ts", "dur", "pid", "tid", "name", "cat", "args", "ph"])
def test_ort_fields_of_the_wrong_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bases: dict[str, bytes], field: str
) -> None:
    """Each hostile value in a node, a ``model_run`` and the first event."""
    events = json.loads(bases["ort"])
    run = next(i for i, e in enumerate(events) if e.get("name") == "model_run")
    node = next(i for i, e in enumerate(events) if e.get("cat") == "Node" and e["dur"] > 100)
    for k, value in enumerate(HOSTILE_VALUES):
        path = tmp_path / "typed.synthetic.ort.json"
        path.write_text(json.dumps(_json_with(events, (0, run, node)[k % 3], field, value)))
        _holds(*_analyze(capsys, path), path)


@pytest.mark.parametrize("field", ["op_name", "provider", "input_type_shape", "output_type_shape", "stream"])
def test_ort_args_of_the_wrong_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bases: dict[str, bytes], field: str
) -> None:
    events = json.loads(bases["ort"])
    for value in [None, 5, {"x": 1}, [[1]], [{"float": [None, "a", 1e308]}], [{}]]:
        changed = copy.deepcopy(events)
        for e in changed[::7]:
            if isinstance(e.get("args"), dict):
                e["args"][field] = value
        path = tmp_path / "args.synthetic.ort.json"
        path.write_text(json.dumps(changed))
        _holds(*_analyze(capsys, path), path)


@pytest.mark.parametrize("field", ["ts", "dur", "cat", "ph", "args"])
def test_kineto_fields_of_the_wrong_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bases: dict[str, bytes], field: str
) -> None:
    doc = json.loads(bases["kineto"])
    events = doc["traceEvents"]
    picks = [i for i, e in enumerate(events) if e.get("cat") in ("kernel", "user_annotation", "cuda_runtime")]
    for k, value in enumerate(HOSTILE_VALUES):
        index = picks[0] if k % 2 else picks[-1]
        path = tmp_path / "typed.synthetic.json"
        path.write_text(json.dumps({**doc, "traceEvents": _json_with(events, index, field, value)}))
        _holds(*_analyze(capsys, path), path)


@pytest.mark.parametrize("column", ["ID", "Kernel Name", "gpu__time_duration.sum", "Process ID"])
def test_ncu_cells_of_the_wrong_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str) -> None:
    rows = _ncu_rows()
    col = rows[0].index(column)
    for value in ["n/a", "", "-5", "nan", "inf", "1e308", "1,0.5", "abc", "0x10", "\u0661\u0662", '"', "\n"]:
        changed = [list(r) for r in rows]
        changed[3][col] = value
        path = tmp_path / "cell.synthetic.ncu.csv"
        path.write_text(_csv_text(changed))
        _holds(*_analyze(capsys, path), path)


# ------------------------------------------------------------------------------ files that are no traces


def test_empty_files_folders_and_links(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.synthetic.ort.json"
    empty.write_bytes(b"")
    folder = tmp_path / "folder.synthetic.ort.json"
    folder.mkdir()
    loop = tmp_path / "loop.synthetic.json"
    os.symlink(tmp_path / "loop2.synthetic.json", loop)
    os.symlink(loop, tmp_path / "loop2.synthetic.json")
    dangling = tmp_path / "dangling.synthetic.json"
    os.symlink(tmp_path / "gone.synthetic.json", dangling)
    for path in (empty, folder, loop, dangling):
        code, doc, err = _analyze(capsys, path)
        _holds(code, doc, err, path)
        assert code == 2
    assert "empty file" in _analyze(capsys, empty)[2]


def test_a_symbolic_link_loop_is_called_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A link loop had read "no such file or directory", which a user then looks for in vain."""
    loop = tmp_path / "loop.synthetic.json"
    os.symlink(tmp_path / "loop2.synthetic.json", loop)
    os.symlink(loop, tmp_path / "loop2.synthetic.json")
    code, _, err = _analyze(capsys, loop)
    assert code == 2
    assert err.strip() == f"tracekit: {loop}: a symbolic link loop (the link leads back to itself)"
    dangling = tmp_path / "dangling.synthetic.json"
    os.symlink(tmp_path / "gone.synthetic.json", dangling)
    code, _, err = _analyze(capsys, dangling)
    assert code == 2
    assert err.strip() == (
        f"tracekit: {dangling}: a symbolic link to {tmp_path / 'gone.synthetic.json'}, which does not exist"
    )


def test_a_named_pipe_that_no_one_writes_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracekit.io as tio

    monkeypatch.setattr(tio, "STREAM_WAIT_S", 0.2)
    fifo = tmp_path / "pipe.synthetic.json"
    os.mkfifo(fifo)
    code, doc, err = _analyze(capsys, fifo)
    _holds(code, doc, err, fifo)
    assert code == 2 and "the pipe stayed silent" in err


def test_a_file_without_read_permission_is_one_line() -> None:
    """Run as another user (root reads every file): the CLI says it cannot read the file."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to run the CLI as another user")
    folder = Path(tempfile.mkdtemp(prefix="fuzz14-"))
    try:
        folder.chmod(0o755)
        path = folder / "locked.synthetic.json.gz"
        shutil.copy(KINETO_SAMPLE, path)
        path.chmod(0)
        done = subprocess.run(
            [
                setpriv,
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-m",
                "tracekit.cli",
            ]
            + ["analyze", str(path), "--no-progress"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=folder,
            env={**os.environ, "HOME": str(folder)},
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == f"tracekit: {path}: cannot read (Permission denied)"
    finally:
        shutil.rmtree(folder)


def test_names_with_spaces_and_other_scripts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "тrace ü 空 x synthetic.json.gz"
    shutil.copy(KINETO_SAMPLE, path)
    code, doc, err = _analyze(capsys, path)
    assert code == 0, err
    _holds(code, doc, err, path)
    assert doc["trace"]["path"] == str(path)


@pytest.mark.parametrize(
    ("sample", "name"),
    [
        (KINETO_SAMPLE, "kineto.synthetic.sqlite"),
        (NSYS_SAMPLE, "nsys.synthetic.json"),
        (NSYS_SAMPLE, "nsys.synthetic.json.gz"),
        (NCU_SAMPLE, "ncu.synthetic.json"),
        (ORT_SAMPLE, "ort.synthetic.csv"),
    ],
)
def test_the_wrong_extension_reads_by_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sample: Path, name: str
) -> None:
    path = tmp_path / name
    shutil.copy(sample, path)
    plain = tmp_path / f"plain.synthetic{''.join(sample.suffixes[-2:])}"  # no sidecar beside it
    shutil.copy(sample, plain)
    reference = _analyze(capsys, plain)
    code, doc, err = _analyze(capsys, path)
    assert code == 0, err
    _holds(code, doc, err, path)
    assert doc["iterations"] == reference[1]["iterations"]


@pytest.mark.parametrize("suffix", [".ncu-rep", ".nsys-rep"])
def test_a_report_suffix_on_another_format_reads_by_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    """An ORT profile or a Kineto trace named .ncu-rep / .nsys-rep had gone to Nsight's report readers by its
    suffix: "Nsight Compute report holds no profiled kernels", or nsys's "Version tag does not contain a
    delimiter". The content says what it is."""
    for sample in (KINETO_SAMPLE, ORT_SAMPLE):
        path = tmp_path / f"renamed.synthetic{suffix}"
        shutil.copy(sample, path)
        plain = tmp_path / f"plain.synthetic{''.join(sample.suffixes[-2:])}"  # no sidecar beside it
        shutil.copy(sample, plain)
        reference = _analyze(capsys, plain)
        code, doc, err = _analyze(capsys, path)
        assert code == 0, err
        assert doc["iterations"] == reference[1]["iterations"]


def test_a_report_suffix_on_unknown_bytes_still_goes_to_its_reader() -> None:
    """What is not recognizably another format stays with the reader its suffix names (fake reports in
    tests, reports of versions whose head is unknown)."""
    from tracekit.readers import detect_format

    folder = Path(tempfile.mkdtemp(prefix="fuzz14-"))
    try:
        for suffix, fmt in ((".nsys-rep", "nsys-rep"), (".ncu-rep", "ncu-rep"), (".qdrep", "nsys-rep")):
            path = folder / f"fake.synthetic{suffix}"
            path.write_bytes(b"report\x00\x01")
            assert detect_format(path) == fmt
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("packed", [False, True])
def test_a_run_json_given_as_a_trace_says_pass_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], packed: bool
) -> None:
    """run.json had read "not a Kineto trace: no traceEvents"."""
    folder = tmp_path / "run-synthetic"
    folder.mkdir()
    path = folder / ("run.json.gz" if packed else "run.json")
    path.write_bytes(gzip.compress(RUN_JSON.read_bytes()) if packed else RUN_JSON.read_bytes())
    code, _, err = _analyze(capsys, path)
    assert code == 2
    assert err.strip() == (
        f"tracekit: {path}: a tracekit run.json (settings), not a trace: pass the folder (tracekit analyze "
        f"{folder})"
    )


def test_a_sidecar_or_truth_file_given_as_a_trace_names_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sidecar = tmp_path / "onnx_b1_s128.ort.meta.json"
    shutil.copy(SAMPLE_TRACES / "cpu_onnx_bert_ort/onnx_b1_s128.ort.meta.json", sidecar)
    code, _, err = _analyze(capsys, sidecar)
    assert code == 2
    assert err.strip() == (
        f"tracekit: {sidecar}: a tracekit sidecar .meta.json (what the run states of the trace beside it), "
        "not a trace: pass the trace"
    )
    truth = tmp_path / "onnx_b1_s128.synthetic.truth.json"
    shutil.copy(SAMPLE_TRACES / "synthetic/table3_onnx/onnx_b1_s128.synthetic.truth.json", truth)
    code, _, err = _analyze(capsys, truth)
    assert code == 2
    assert err.strip() == (
        f"tracekit: {truth}: the ground truth of a synthetic trace (tracekit simulate's .truth.json), not a "
        "trace: pass the trace beside it"
    )


def test_json_settings_that_are_not_tracekit_s_still_name_the_missing_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.synthetic.json"
    path.write_text(json.dumps({"configs": "x", "lr": 0.1}))
    code, _, err = _analyze(capsys, path)
    assert code == 2
    assert err.strip() == f"tracekit: {path}: not a Kineto trace: no traceEvents"


def test_inputs_are_never_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bases: dict[str, bytes]
) -> None:
    for kind in ("ort", "kineto", "ncu", "nsys"):
        path = _damaged(tmp_path, kind, bases[kind], "readonly")
        path.chmod(0o444)
        before = (path.read_bytes(), path.stat().st_mtime_ns)
        _analyze(capsys, path)
        assert (path.read_bytes(), path.stat().st_mtime_ns) == before
        assert sorted(p.name for p in tmp_path.iterdir() if "readonly" in p.name) == [path.name]
        path.chmod(0o644)
        path.unlink()


# ------------------------------------------------------------------------------------- hypothesis search


@st.composite
def _damage(draw: st.DrawFn) -> tuple[str, str, Any]:
    kind = draw(st.sampled_from(["ort", "kineto", "ncu"]))
    how = draw(st.sampled_from(["cut", "flip", "value"]))
    if how == "cut":
        return kind, how, draw(st.floats(0.0, 1.0))
    if how == "flip":
        return (
            kind,
            how,
            draw(st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 255)), min_size=1, max_size=6)),
        )
    value = draw(
        st.one_of(
            st.sampled_from(HOSTILE_VALUES),
            st.integers(-(2**63), 2**63),
            st.floats(allow_nan=True, allow_infinity=True),
            st.text(max_size=6),
        )
    )
    return kind, how, (draw(st.floats(0.0, 1.0)), draw(st.integers(0, 7)), value)


_ORT_FIELDS = ["ts", "dur", "cat", "name", "ph", "pid", "tid", "args"]
_KINETO_FIELDS = ["ts", "dur", "cat", "name", "ph", "pid", "tid", "args"]


def _apply(kind: str, how: str, what: Any, base: bytes) -> bytes:
    if how == "cut":
        return base[: int(len(base) * what)]
    if how == "flip":
        data = bytearray(base)
        for where, byte in what:
            data[min(len(data) - 1, int(len(data) * where))] = byte
        return bytes(data)
    where, field, value = what
    if kind == "ncu":
        rows = list(csv.reader(io.StringIO(base.decode())))
        row = 2 + min(len(rows) - 3, int((len(rows) - 2) * where))
        col = [
            0,
            6,
            1,
            rows[0].index("gpu__time_duration.sum"),
            rows[0].index("sm__warps_active.avg.pct_of_peak_sustained_active"),
        ][field % 5]
        rows[row][col] = value if isinstance(value, str) else json.dumps(value)
        return _csv_text(rows).encode()
    doc = json.loads(base)
    events = doc if kind == "ort" else doc["traceEvents"]
    index = min(len(events) - 1, int(len(events) * where))
    events[index][(_ORT_FIELDS if kind == "ort" else _KINETO_FIELDS)[field]] = value
    return json.dumps(doc).encode()


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(damage=_damage())
def test_hypothesis_damages(
    tmp_path_factory: pytest.TempPathFactory, bases: dict[str, bytes], damage: tuple
) -> None:
    import tracekit.io as tio

    kind, how, what = damage
    folder = tmp_path_factory.mktemp("hyp")
    path = _damaged(folder, kind, _apply(kind, how, what, bases[kind]), how)
    tio.forget_inputs()
    out, err = io.StringIO(), io.StringIO()
    from contextlib import redirect_stderr, redirect_stdout

    with redirect_stdout(out), redirect_stderr(err):
        code = main(["analyze", str(path), "--format", "json", "--no-progress"])
    _holds(code, json.loads(out.getvalue()) if code == 0 else None, err.getvalue(), path)
    shutil.rmtree(folder)


# ------------------------------------------------------------------------------------------ ncu defects

NCU_HEAD = ['"ID","Process ID","Kernel Name","gpu__time_duration.sum"', '"","","","usecond"']


def _ncu_file(
    tmp_path: Path, rows: list[str], name: str = "k.synthetic.ncu.csv", head: list[str] = NCU_HEAD
) -> Path:
    path = tmp_path / name
    path.write_text("\n".join([*head, *rows]) + "\n")
    return path


FIVE = [f'"{i}","7","k{i}","{10 * (i + 1)}"' for i in range(5)]  # durations 10, 20, 30, 40, 50 us


def test_ncu_reference_of_five_kernels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = _analyze(capsys, _ncu_file(tmp_path, FIVE))
    assert code == 0, err
    assert doc["iterations"][0]["kernels"] == 5
    assert doc["iterations"][0]["gpu_busy_ms"] == pytest.approx(0.150)


def test_ncu_quote_that_never_closes_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CSV cut inside a quoted field had printed polars' 17-line advice on its own options."""
    path = _ncu_file(tmp_path, [*FIVE[:3], '"3","7","k3","4'])
    code, _, err = _analyze(capsys, path)
    assert code == 2
    assert err.strip() == (
        f"tracekit: {path}: damaged ncu CSV (row 6 of the CSV table: unexpected end of data: a quoted field does "
        "not close (the file cut short, or a quote inside a field not doubled))"
    )


@pytest.mark.parametrize("bad_id", ["", "x", "3a"])
def test_ncu_kernel_rows_without_a_readable_id_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad_id: str
) -> None:
    """A kernel row whose ID does not read was left out without a word: GPU busy 0.120 ms of 4 kernels,
    where the file holds 5 kernels and 0.150 ms."""
    rows = list(FIVE)
    rows[2] = f'"{bad_id}","7","k2","30"'
    code, doc, err = _analyze(capsys, _ncu_file(tmp_path, rows))
    assert code == 0, err
    assert doc["iterations"][0]["kernels"] == 4
    assert doc["iterations"][0]["gpu_busy_ms"] == pytest.approx(0.120)
    assert (
        f"1 row(s) of the CSV table name a kernel but have no readable ID (first: {bad_id!r}, kernel 'k2'): ncu "
        "writes every kernel's ID, so the row is damaged and is left out: GPU busy time and the kernel count "
        "miss it"
    ) in doc["warnings"]


@pytest.mark.parametrize("sep", [";", "\t"])
@pytest.mark.parametrize("quoted", [True, False])
def test_ncu_csv_of_another_separator_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sep: str, quoted: bool
) -> None:
    """A spreadsheet's re-save in a locale with decimal commas separates fields by ';' (or a tab): it had read
    "no 'Kernel Name' column", or (unquoted) "not a trace tracekit can read"."""

    def line(cells: list[str]) -> str:
        return sep.join(f'"{c}"' if quoted else c for c in cells)

    head = [
        line(["ID", "Process ID", "Kernel Name", "gpu__time_duration.sum"]),
        line(["", "", "", "usecond"]),
    ]
    path = _ncu_file(tmp_path, [line([str(i), "7", f"k{i}", f"{i},5"]) for i in range(3)], head=head)
    code, _, err = _analyze(capsys, path)
    assert code == 2
    shown = "a tab" if sep == "\t" else "';'"
    assert err.strip() == (
        f"tracekit: {path}: an ncu CSV whose fields are separated by {shown}, not ',' (re-saved by a "
        "spreadsheet, perhaps in a locale that writes decimal commas): export it again with ncu --csv"
    )


# ------------------------------------------------------------------------------------------ ORT defects


def _ev(cat: str, name: str, ts: int, dur: int, pid: int = 1, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"cat": cat, "pid": pid, "tid": tid, "dur": dur, "ts": ts, "ph": "X", "name": name, "args": args}


def _cuda_profile(stamp: str) -> list[dict[str, Any]]:
    """Three runs of a CUDA session (SYNTHETIC): 4 MatMul nodes of 10 µs on the host, each launching one 200 µs
    kernel, back to back on stream 7 from the run's start + 7 µs; a copy node waits for the GPU; each run
    lasts 820 µs, of which the GPU is busy 800 µs. ``stamp`` says how the Kernel events are written:

    - "end-1.11": ORT 1.11-1.13's CudaProfiler: ts = the kernel's end, args op_name (no parent_name), pid/tid -1;
    - "end-1.8": ORT 1.8-1.10's: ts = the kernel's end, args correlation_id;
    - "rocm": ORT's RocmProfiler before 1.14: ts = the kernel's begin, op_name without parent_name, the stream
      a pointer;
    - "start-1.14": GPUProfilerBase (1.14+): ts = the kernel's start, op_name and parent_name;
    - "cupti-error": CUPTI could not start: one Kernel event "not_available_due_to_cupti_error", ts 0, dur 0.
    """
    events = [_ev("Session", "model_loading_uri", 0, 50), _ev("Session", "session_initialization", 60, 40)]
    kernels: list[dict[str, Any]] = []
    t = 200
    for _ in range(3):
        run: list[dict[str, Any]] = []
        for k in range(4):
            node_ts, start = t + 5 + 12 * k, t + 7 + 200 * k
            node = f"/layer{k}/MatMul_kernel_time"
            run.append(_ev("Node", node, node_ts, 10, op_name="MatMul", provider="CUDAExecutionProvider"))
            grid = {
                "grid_x": "64",
                "grid_y": "1",
                "grid_z": "1",
                "block_x": "128",
                "block_y": "1",
                "block_z": "1",
            }
            name = f"sm80_gemm_{k}"
            if stamp == "end-1.11":
                kernels.append(
                    _ev("Kernel", name, start + 200, 200, -1, -1, op_name="MatMul", stream="7", **grid)
                )
            elif stamp == "end-1.8":
                kernels.append(
                    _ev("Kernel", name, start + 200, 200, -1, -1, stream="7", correlation_id=str(k), **grid)
                )
            elif stamp == "rocm":
                run.append(
                    _ev("Kernel", name, start, 200, 0, 1, op_name="MatMul", stream="0x7f3a1c000b10", **grid)
                )
            elif stamp == "start-1.14":
                run.append(
                    _ev(
                        "Kernel",
                        name,
                        start,
                        200,
                        -1,
                        -1,
                        op_name="MatMul",
                        parent_name=node,
                        stream="7",
                        **grid,
                    )
                )
        copy_ts = t + 5 + 48
        run.append(
            _ev(
                "Node",
                "/out/MemcpyToHost_kernel_time",
                copy_ts,
                t + 810 - copy_ts,
                op_name="MemcpyToHost",
                provider="CUDAExecutionProvider",
            )
        )
        events += [_ev("Session", "model_run", t, 820), *run]
        t += 1000
    if stamp == "cupti-error":
        events.append(_ev("Kernel", "not_available_due_to_cupti_error", 0, 0))
    return events + kernels


def _ort_file(tmp_path: Path, stamp: str) -> Path:
    path = tmp_path / f"cuda-{stamp}.synthetic.ort.json"
    path.write_text(json.dumps(_cuda_profile(stamp)))
    return path


@pytest.mark.parametrize("stamp", ["start-1.14", "rocm"])
def test_ort_kernels_written_at_their_start_keep_their_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stamp: str
) -> None:
    code, doc, err = _analyze(capsys, _ort_file(tmp_path, stamp))
    assert code == 0, err
    assert [
        (round(i["latency_ms"], 6), round(i["gpu_busy_ms"], 6), i["kernels"]) for i in doc["iterations"]
    ] == [(0.82, 0.8, 4)] * 3
    assert all(i["synchronized"] for i in doc["iterations"])
    assert not any("stamps each kernel at its end" in w for w in doc["warnings"])


@pytest.mark.parametrize("stamp", ["end-1.11", "end-1.8"])
def test_ort_kernels_written_at_their_end_are_read_from_their_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stamp: str
) -> None:
    """ORT 1.8-1.13 write each Kernel event's ts at the kernel's end (``DUR(profiling_start, stat.stop_)``):
    read as a start, every kernel sat 200 µs late, the last past its run's end, and each iteration was called
    unsynchronized with a steady-state latency of 1.007 / 0.867 ms for runs of 0.820 ms."""
    code, doc, err = _analyze(capsys, _ort_file(tmp_path, stamp))
    assert code == 0, err
    assert [
        (round(i["latency_ms"], 6), round(i["gpu_busy_ms"], 6), i["kernels"]) for i in doc["iterations"]
    ] == [(0.82, 0.8, 4)] * 3
    assert all(i["synchronized"] for i in doc["iterations"])
    assert (
        "12 of 12 GPU ops (Kernel events) carry the args of ORT's CUDA profiler before 1.14 (correlation_id, or "
        "op_name without parent_name), which stamps each kernel at its end (ts = CUPTI's end time): each is read "
        "from ts - dur"
    ) in doc["warnings"]


def test_ort_cupti_error_event_is_no_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ORT 1.8-1.10 write one Kernel event "not_available_due_to_cupti_error" (ts 0, dur 0) when CUPTI could
    not start. It had made the profile a GPU one with one 0 µs kernel before every run: GPU busy 0.000 ms and
    0 kernels in each 0.820 ms iteration. It is no kernel: the profile is read as one without Kernel events
    (Node events, timed on the host: no verdict), and said."""
    code, doc, err = _analyze(capsys, _ort_file(tmp_path, "cupti-error"))
    assert code == 0, err
    reference = _analyze(capsys, _ort_file(tmp_path, "none"))[1]
    assert doc["iterations"] == reference["iterations"]
    assert [i["kernels"] for i in doc["iterations"]] == [5, 5, 5]
    assert doc["no_verdict"] == reference["no_verdict"]
    assert doc["no_verdict"].startswith(
        "no framework-/compute-bound verdict: 15 of 15 operator events ran on a GPU"
    )
    assert (
        "the profile holds ORT's 'not_available_due_to_cupti_error' Kernel event: its CUDA profiler could not "
        "start CUPTI (another profiler attached, or no permission to the GPU's performance counters), so it "
        "recorded no GPU kernel; the Node events are host times"
    ) in doc["warnings"]


# ------------------------------------------------------------ others' files (fixed by the lead, 2026-11-28)


def test_sqlite_cut_short_by_a_few_bytes_shows_two_different_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = NSYS_SAMPLE.read_bytes()
    path = tmp_path / "cut.synthetic.sqlite"
    path.write_bytes(data[:-100])
    code, _, err = _analyze(capsys, path)
    assert code == 2
    import re

    sizes = re.search(r"declares .* \((.+?)\) but the file holds (.+?); refused", err)
    assert sizes is not None, err
    assert sizes.group(1) != sizes.group(2), err


def _cpu_runs(dur_of_second: Any) -> list[dict[str, Any]]:
    """Three runs of a CPU session (SYNTHETIC), each 3 nodes of 100 µs from its start + 10 µs, 400 µs long;
    the second run's dur is ``dur_of_second``."""
    events = [_ev("Session", "session_initialization", 0, 50)]
    for r in range(3):
        t = 100 + 1000 * r
        events.append(_ev("Session", "model_run", t, 400 if r != 1 else dur_of_second))
        events += [
            _ev(
                "Node",
                f"/n{k}/MatMul_kernel_time",
                t + 10 + 110 * k,
                100,
                op_name="MatMul",
                provider="CPUExecutionProvider",
            )
            for k in range(3)
        ]
    return events


@pytest.mark.parametrize("dur", [None, "NaN", 1e308, "x"])
def test_ort_model_run_without_a_readable_dur_is_said_not_called_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dur: Any
) -> None:
    """A ``model_run`` whose dur does not read had become a 0 µs run holding none of its nodes, called a run
    that "ran only a prefix of the nodes another run ran ... failed at a node": its length is unknown, not its
    failure. It is skipped with a warning; its 3 nodes (0.3 ms) are outside every iteration."""
    path = tmp_path / "nodur.synthetic.ort.json"
    path.write_text(json.dumps(_cpu_runs(dur), allow_nan=True))
    code, doc, err = _analyze(capsys, path)
    assert code == 0, err
    assert [(round(i["latency_ms"], 6), round(i["gpu_busy_ms"], 6)) for i in doc["iterations"]] == [
        (0.4, 0.3)
    ] * 2
    assert (
        "1 'model_run' event(s) without a readable dur (null, missing, NaN, Infinity or not a number) were "
        "skipped: how long those runs lasted is not known, so their nodes count in no iteration"
    ) in doc["warnings"]
    assert not any("ran only a prefix" in w or "did not complete" in w for w in doc["warnings"])


def _ort_text(name: str) -> str:
    """A profile as ORT's Profiler::EndProfiling writes it (SYNTHETIC): each field by hand, ``name`` as it is,
    with no JSON escaping (``profile_stream_ << R"("name" :")" << rec.name``)."""
    line = '{{"cat" : "{cat}","pid" :1,"tid" :1,"dur" :{dur},"ts" :{ts},"ph" : "X","name" :"{name}","args" : {{{args}}}}}'
    return (
        "[\n"
        + line.format(cat="Session", dur=400, ts=100, name="model_run", args="")
        + ",\n"
        + line.format(cat="Node", dur=100, ts=110, name=name, args='"op_name" : "MatMul"')
        + "\n]\n"
    )


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("C:\\model\\n0_kernel_time", "Invalid \\escape: line 3 column 78 (char 182)"),
        ('say "hi"_kernel_time', "Expecting ',' delimiter: line 3 column 81 (char 185)"),
    ],
)
def test_ort_node_name_that_breaks_its_json_is_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, where: str
) -> None:
    """ORT writes names without escaping (profiler.cc, every version): a node named with a backslash or a quote
    makes the file invalid JSON, which had read as a bare "truncated or invalid JSON" error."""
    assert (
        '"name" :"' in _ort_text("x")
        and json.loads(_ort_text("n0_kernel_time"))[1]["name"] == "n0_kernel_time"
    )
    path = tmp_path / "raw-name.synthetic.ort.json"
    path.write_text(_ort_text(name))
    code, _, err = _analyze(capsys, path)
    assert code == 2
    assert err.strip() == (
        f"tracekit: {path}: truncated or invalid JSON: {where}; ONNX Runtime writes event names as they are, "
        f"without JSON escaping, so a name holding a backslash or a double quote breaks its profile (here "
        f"{name!r}): rename the node, or escape the name in the file"
    )


def test_ort_events_wrapped_in_a_trace_events_object_read_as_ort(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ORT reader takes ``{"traceEvents": [...]}`` (a tool's wrapping of the array), but detection sent
    every JSON object to the Kineto reader: "no ranges and no device activity: nothing to analyze"."""
    events = _cpu_runs(400)
    plain = tmp_path / "plain.synthetic.ort.json"
    plain.write_text(json.dumps(events))
    wrapped = tmp_path / "wrapped.synthetic.json"
    wrapped.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}))
    code, doc, err = _analyze(capsys, wrapped)
    assert code == 0, err
    assert doc["range"] == "model_run"
    assert [(round(i["latency_ms"], 6), round(i["gpu_busy_ms"], 6)) for i in doc["iterations"]] == [
        (0.4, 0.3)
    ] * 3
    assert doc["iterations"] == _analyze(capsys, plain)[1]["iterations"]


def test_a_kineto_trace_with_a_model_run_annotation_stays_kineto(tmp_path: Path) -> None:
    from tracekit.readers import detect_format

    doc = json.loads(gzip.decompress(KINETO_SAMPLE.read_bytes()))
    doc["traceEvents"].insert(
        0, {"ph": "X", "cat": "user_annotation", "name": "model_run", "pid": 1, "tid": 1, "ts": 1, "dur": 1}
    )
    path = tmp_path / "annotated.synthetic.json"
    path.write_text(json.dumps(doc))
    assert detect_format(path) == "kineto"


def test_ort_kernel_events_of_an_npu_provider_are_not_called_cuda_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The VitisAI EP's profiler (vitisai_profiler.cc) writes its NPU kernels as Kernel events too (and its API
    calls as Api events): they were said to "come from ORT's own CUDA profiling". The device busy time stays
    the Kernel events' (one 300 µs kernel in each 400 µs run)."""
    events = [_ev("Session", "session_initialization", 0, 50)]
    for r in range(3):
        t = 100 + 1000 * r
        events += [
            _ev("Session", "model_run", t, 400),
            _ev(
                "Node",
                "VitisAI_0_kernel_time",
                t + 10,
                380,
                op_name="VitisAI",
                provider="VitisAIExecutionProvider",
            ),
            _ev("Kernel", "npu_subgraph_0", t + 50, 300, pid=7, tid=8),
        ]
    path = tmp_path / "vitisai.synthetic.ort.json"
    path.write_text(json.dumps(events))
    code, doc, err = _analyze(capsys, path)
    assert code == 0, err
    assert [(round(i["latency_ms"], 6), round(i["gpu_busy_ms"], 6)) for i in doc["iterations"]] == [
        (0.4, 0.3)
    ] * 3
    assert not any("ORT's own CUDA profiling" in w for w in doc["warnings"])
    assert (
        "device times come from the Kernel events of the VitisAIExecutionProvider's own profiler, not CUPTI: "
        "microsecond resolution, on a clock tracekit cannot check against the CPU's, and no correlation ids, so "
        "kernels are assigned to iterations by time"
    ) in doc["warnings"]


def test_a_run_json_read_from_a_pipe_names_no_folder_of_the_pipe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cat run.json | tracekit analyze -`` had said "pass the folder (tracekit analyze /dev)"."""
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as out:
            out.write(RUN_JSON.read_bytes())

    writer = threading.Thread(target=write)
    writer.start()
    code, _, err = _analyze(capsys, fifo)
    writer.join(timeout=10)
    assert code == 2
    assert err.strip() == (
        f"tracekit: {fifo}: a tracekit run.json (settings), not a trace: pass the folder that holds it "
        "(tracekit analyze DIR)"
    )


@pytest.mark.parametrize(
    "sample", [ORT_SAMPLE, NCU_SAMPLE, SAMPLE_TRACES / "cpu_onnx_bert_nsys/onnx_b1_s128.nsys.sqlite.gz"]
)
def test_gzip_padded_with_zero_bytes_reads_as_gzip_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sample: Path
) -> None:
    """gzip -d and Python's gzip module ignore zero bytes after the last member (block padding of tapes and
    some copy tools); tracekit's own inflater had called the file damaged ("Invalid gzip/zlib wrapper")."""
    plain = tmp_path / f"plain.synthetic{''.join(sample.suffixes[-3:])}"
    shutil.copy(sample, plain)
    padded = tmp_path / f"padded.synthetic{''.join(sample.suffixes[-3:])}"
    padded.write_bytes(sample.read_bytes() + b"\0" * 70_000)  # past one 64 KiB read
    assert gzip.decompress(padded.read_bytes()) == gzip.decompress(sample.read_bytes())
    code, doc, err = _analyze(capsys, padded)
    assert code == 0, err
    assert doc["iterations"] == _analyze(capsys, plain)[1]["iterations"]


@pytest.mark.parametrize("tail", [b"garbage\n", b"\0\0\0junk", b"\0" * 70_000 + b"x"])
def test_gzip_followed_by_other_bytes_is_named_not_called_cut_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tail: bytes
) -> None:
    """Bytes that are not gzip after the last member had read "Compressed file ended before the end-of-stream
    marker was reached": the compressed data was whole."""
    path = tmp_path / "appended.synthetic.ort.json.gz"
    path.write_bytes(ORT_SAMPLE.read_bytes() + tail)
    code, _, err = _analyze(capsys, path)
    assert code == 2
    shown = tail.lstrip(b"\0")[:16]
    assert err.strip() == (
        f"tracekit: {path}: damaged gzip file: bytes that are not gzip data follow its compressed data "
        f"(from byte {ORT_SAMPLE.stat().st_size:,}: {shown!r}; gzip -d would say 'trailing "
        "garbage ignored'): something was appended to it; recompress it (gzip -dc FILE | gzip > NEW)"
    )


# ------------------------------------------------------------------------------------------ sidecars

SIDECAR_CASES = [
    ("batch_size", "abc", 'batch_size is "abc", not a positive integer (1 to 2147483647) or null'),
    ("batch_size", [1], "batch_size is [1], not a positive integer (1 to 2147483647) or null"),
    ("seq_len", 1.5, "seq_len is 1.5, not a positive integer (1 to 2147483647) or null"),
    ("seq_len", True, "seq_len is true, not a positive integer (1 to 2147483647) or null"),
    ("batch_size", -1, "batch_size is -1, not a positive integer (1 to 2147483647) or null"),
    ("batch_size", float("nan"), "batch_size is NaN, not a positive integer (1 to 2147483647) or null"),
    ("warmup_iterations", -2, "warmup_iterations is -2, not a non-negative integer or null"),
    ("runtime", 5, "runtime is 5, not text or null"),
    ("synthetic", "yes", 'synthetic is "yes", not true, false or null'),
    ("warmup_in_trace", 1, "warmup_in_trace is 1, not true, false or null"),
    (
        "untraced_latency_ms",
        {"mean": "fast"},
        'untraced_latency_ms.mean is "fast", not a positive number (ms) or null',
    ),
    ("untraced_latency_ms", 3, "untraced_latency_ms is 3, not an object of latency statistics (ms) or null"),
]


@pytest.mark.parametrize(("key", "value", "problem"), SIDECAR_CASES)
def test_a_sidecar_value_of_the_wrong_type_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: Any, problem: str
) -> None:
    """A sidecar's values were taken on trust: "abc", [1] or NaN as a batch size ended in an internal error
    (ValueError/TypeError from int()), 1.5 read as batch 1, true as 1, -1 as batch -1. run.json is checked
    whole when read; its sidecar now is too."""
    trace = tmp_path / "t.synthetic.json.gz"
    shutil.copy(KINETO_SAMPLE, trace)
    sidecar = tmp_path / "t.synthetic.meta.json"
    sidecar.write_text(json.dumps({"profiler": "torch", "batch_size": 1, "seq_len": 128, key: value}))
    code, _, err = _analyze(capsys, trace)
    assert code == 2
    assert err.strip() == f"tracekit: {sidecar}: damaged sidecar .meta.json of {trace.name}: {problem}"


def test_every_committed_sidecar_passes_the_check() -> None:
    from tracekit.inputs import check_sidecar

    sidecars = sorted(SAMPLE_TRACES.rglob("*.meta.json"))
    assert len(sidecars) > 40
    for path in sidecars:
        assert check_sidecar(json.loads(path.read_text())) is None, path


NVPROF_LOG = (
    "==4242== NVPROF is profiling process 4242, command: python infer.py\n"
    "==4242== Profiling application: python infer.py\n"
    "==4242== Profiling result:\n"
    '"Type","Time(%)","Time","Calls","Avg","Min","Max","Name"\n'
    ",%,ms,,us,us,us,\n"
    '"GPU activities",61.5,12.3,100,123.0,120.0,130.0,"volta_sgemm_128x64_nn"\n'
)


@pytest.mark.parametrize(
    "text",
    [
        NVPROF_LOG,
        NVPROF_LOG.split("\n", 3)[3],
        '"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Name"\nms,us,,,,,,,\n0.1,12.5,1,1,1,128,1,1,"k"\n',
    ],
)
def test_nvprof_output_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    """nvprof's CSV (its ==PID== log lines, its summary or GPU-trace header) had read "not a trace tracekit can
    read", where nvprof's SQLite (.nvvp) is named by the nsys reader."""
    path = tmp_path / "nvprof.synthetic.csv"
    path.write_text(text)
    code, _, err = _analyze(capsys, path)
    assert code == 2
    assert err.strip() == (
        f"tracekit: {path}: an nvprof CSV (its ==PID== lines or its summary / GPU-trace header), not an Nsight "
        "Compute CSV: tracekit does not read nvprof's output; profile with nsys (nsys profile -t cuda,nvtx, then "
        "nsys export --type sqlite), or ncu --csv for per-kernel metrics"
    )


def test_sqlite_table_name_that_is_not_utf8_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = bytearray(NSYS_SAMPLE.read_bytes())
    at = data.find(b"StringIds")  # the table's name in sqlite_master
    data[at + 2] = 0xF2
    path = tmp_path / "name.synthetic.sqlite"
    path.write_bytes(bytes(data))
    code, doc, err = _analyze(capsys, path)
    _holds(code, doc, err, path)


def test_sqlite_damaged_schema_text_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(NSYS_SAMPLE.read_bytes())
    at = data.find(b"totalMemory", data.find(b"CREATE TABLE TARGET_INFO_GPU"))
    data[at - 3] = ord("'")
    path = tmp_path / "schema.synthetic.sqlite"
    path.write_bytes(bytes(data))
    code, doc, err = _analyze(capsys, path)
    assert code == 2
    _holds(code, doc, err, path)


def test_kineto_device_past_int32_is_no_internal_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(gzip.decompress(KINETO_SAMPLE.read_bytes()))
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    kernel["args"]["device"] = 2**31
    path = tmp_path / "device.synthetic.json"
    path.write_text(json.dumps(doc))
    _holds(*_analyze(capsys, path), path)


def test_ncu_and_ort_devices_past_int32_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same damage in the readers of this file: an ORT Kernel event's args.device past int32 reads as
    unknown (null); an ncu Device column too."""
    events = _cuda_profile("start-1.14")
    next(e for e in events if e["cat"] == "Kernel")["args"]["device"] = str(2**31)
    path = tmp_path / "device.synthetic.ort.json"
    path.write_text(json.dumps(events))
    code, doc, err = _analyze(capsys, path)
    assert code == 0, err
    _holds(code, doc, err, path)
    head = ['"ID","Process ID","Kernel Name","Device","gpu__time_duration.sum"', '"","","","","usecond"']
    rows = [f'"{i}","7","k{i}","{2**31 if i == 1 else 0}","{10 * (i + 1)}"' for i in range(3)]
    code, doc, err = _analyze(capsys, _ncu_file(tmp_path, rows, head=head))
    _holds(code, doc, err, tmp_path / "k.synthetic.ncu.csv")
    assert code == 0, err
