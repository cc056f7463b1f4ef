"""fixcli16: fixes of defects other helpers pinned as strict xfails in the CLI's files (tracekit/cli.py,
tracekit/errors.py, tracekit/io.py, tracekit/commands/*, analyzers/table.py, tracekit/renderers/analysis.py and
plots.py). The first tests are hostile16's (tests/test_hostile16.py), copied here without their xfail marker.

Every trace is built in pytest's temporary folder (names say "synthetic"); the expected numbers follow from the
events written.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.hostile import cli_process as _cli
from tests.hostile import ort_cpu_events as _ort_cpu
from tests.hostile import run_cli as _run
from tests.hostile import write_json as _write_json
from tracekit.errors import TracekitError

# ------------------------------------------------------- hostile16's tests (its strict xfails), made to pass


def test_table_keeps_one_row_of_a_trace_given_twice_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a (3 runs of 1.0 ms, 0.4 ms busy) given as itself, a link and itself again, beside b (2 runs): 2 rows,
    # a's latency 1.0 ms once; each repeat named in a warning (exit 0: nothing failed)
    a = _write_json(tmp_path / "a.synthetic.ort.json", _ort_cpu())
    b = _write_json(tmp_path / "b.synthetic.ort.json", _ort_cpu(runs=2))
    link = tmp_path / "link.synthetic.ort.json"
    link.symlink_to(a.name)
    code, out, err = _run(capsys, "table", str(a), str(link), str(b), str(a), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [Path(r["trace"]).name for r in doc["rows"]] == ["a.synthetic.ort.json", "b.synthetic.ort.json"]
    assert [r["latency_ms"] for r in doc["rows"]] == pytest.approx([1.0, 1.0])
    repeats = [w for w in doc["warnings"] if "same recording" in w]
    assert repeats == [
        f"{link} is the same recording as {a} (the same file twice or a link to it): counted once",
        f"{a} is the same recording as {a} (the same file twice or a link to it): counted once",
    ]
    assert sum("same recording" in line for line in err.splitlines()) == 2


# ------------------------------------------------------------------ io: a parent that is a file is named so


def test_output_file_under_a_file_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # -o notes.synthetic.txt/out.json: the folder is a file, not missing; a missing one still says so
    ort = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    afile = tmp_path / "notes.synthetic.txt"
    afile.write_text("x")
    code, _, err = _run(capsys, "analyze", str(ort), "-o", str(afile / "out.json"))
    assert code == 2
    assert err == f"tracekit: {afile / 'out.json'}: cannot write: {afile} is a file, not a folder\n"
    code, _, err = _run(capsys, "analyze", str(ort), "-o", str(tmp_path / "no" / "out.json"))
    assert code == 2
    assert (
        err
        == f"tracekit: {tmp_path / 'no' / 'out.json'}: cannot write: the folder {tmp_path / 'no'} does not exist\n"
    )


def test_output_folder_under_a_file_two_levels_down_names_the_file(tmp_path: Path) -> None:
    from tracekit.errors import TracekitError
    from tracekit.io import output_dir

    afile = tmp_path / "afile.synthetic.txt"
    afile.write_text("x")
    with pytest.raises(TracekitError) as info:
        output_dir(afile / "sub" / "deeper")
    assert info.value.message == f"cannot create the output folder: {afile} is a file, not a folder"
    with pytest.raises(TracekitError) as info:
        output_dir(tmp_path / "missing" / "sub")
    assert info.value.message == f"cannot create the output folder: {tmp_path / 'missing'} does not exist"


# ----------------------------------------------------------------- plots: the timeline's iteration titles


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2133.646, "2134"),
        (565.3, "565"),
        (12.34, "12.3"),
        (0.4, "0.400"),
        (1.234e-5, "0.0000123"),
        (0.0, "0"),
    ],
)
def test_milliseconds_are_written_without_an_exponent(value: float, text: str) -> None:
    from tracekit.renderers.plots import ms_text

    assert ms_text(value) == text


def _timeline(latencies: list[float]):  # type: ignore[no-untyped-def]
    import polars as pl

    from tracekit.renderers.plots import timeline_figure

    ends = [sum(latencies[: i + 1]) for i in range(len(latencies))]
    iterations = pl.DataFrame(
        {
            "index": list(range(len(latencies))),
            "start_ms": [0.0, *ends[:-1]],
            "end_ms": ends,
            "latency_ms": latencies,
            "gpu_busy_ms": [x / 2 for x in latencies],
        }
    )
    bars = pl.DataFrame(
        {"lane": ["GPU stream 7"], "category": ["kernel"], "start_ms": [0.0], "duration_ms": [1.0]}
    )
    gaps = pl.DataFrame(schema={"start_ms": pl.Float64, "duration_ms": pl.Float64})
    return timeline_figure(["GPU stream 7"], bars, gaps, iterations, "synthetic")


def test_narrow_iterations_get_a_shorter_title_or_none_and_the_axis_counts_them() -> None:
    # one iteration of 1000 ms, then 40 of 1 ms: the first keeps its full title, none of the 40 has room for
    # one (each is 1/1040 of the axis), and the x axis says how many went without
    import matplotlib.pyplot as plt

    fig = _timeline([1000.0] + [1.0] * 40)
    try:
        ax = fig.axes[0]
        titles = [t.get_text() for t in ax.texts]
        assert titles[0] == "iteration 0: 1000 ms, GPU busy 500 ms (50%)"
        assert titles[1:] == [""] * 40
        assert ax.get_xlabel() == "time (ms); 40 iterations too narrow for a title"
    finally:
        plt.close(fig)


def test_a_title_that_does_not_fit_is_shortened_to_fit_its_iteration() -> None:
    # 3 of 1000 ms then 1 of 60 ms (1/51 of the axis, ~25 px at 100 dpi: no room even for 'iteration 3')
    import matplotlib.pyplot as plt

    fig = _timeline([1000.0, 1000.0, 1000.0, 60.0])
    try:
        ax = fig.axes[0]
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        texts = ax.texts
        assert [t.get_text() for t in texts][:3] == [
            f"iteration {i}: 1000 ms, GPU busy 500 ms (50%)" for i in range(3)
        ]
        assert texts[3].get_text() == ""
        assert ax.get_xlabel() == "time (ms); 1 iteration too narrow for a title"
        boxes = [t.get_window_extent(renderer) for t in texts[:3]]
        assert not [(i, j) for i in range(3) for j in range(i + 1, 3) if boxes[i].overlaps(boxes[j])]
    finally:
        plt.close(fig)


def test_the_tours_last_iteration_keeps_its_latency_in_a_shorter_title() -> None:
    # the README tour's CPU run: 2133.646, 1145.024, 565.3 ms; the last is 15% of the axis: its full title
    # would run into iteration 1's, 'iteration 2: 565 ms' fits
    import matplotlib.pyplot as plt

    fig = _timeline([2133.646, 1145.024, 565.3])
    try:
        assert [t.get_text() for t in fig.axes[0].texts] == [
            "iteration 0: 2134 ms, GPU busy 1067 ms (50%)",
            "iteration 1: 1145 ms, GPU busy 573 ms (50%)",
            "iteration 2: 565 ms",
        ]
        assert fig.axes[0].get_xlabel() == "time (ms)"
    finally:
        plt.close(fig)


def test_several_traces_name_a_bad_one_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # analyze GOOD BAD: the bad one's name holds a newline and ESC; its 'left out' lines stay one line each
    good = _write_json(tmp_path / "good.synthetic.ort.json", _ort_cpu())
    bad = tmp_path / "two\nlines\x1b[31m.synthetic.json"
    bad.write_bytes(b"garbage")
    code, out, err = _run(capsys, "analyze", str(good), str(bad), "--format", "json", "-q")
    assert code == 1, err
    assert "\x1b" not in err
    assert [line for line in err.splitlines() if "lines" in line] == [
        line for line in err.splitlines() if "two\\nlines\\x1b[31m.synthetic.json" in line
    ]
    assert all(line.startswith(("tracekit: ", "warning: ")) for line in err.splitlines()), err


def test_table_keeps_one_row_of_a_byte_identical_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a and its copy (another name, another folder; same bytes), b of 2 runs with other timings: 2 rows
    a = _write_json(tmp_path / "a.synthetic.ort.json", _ort_cpu())
    (tmp_path / "copy").mkdir()
    copy = tmp_path / "copy" / "a.synthetic.ort.json"
    copy.write_bytes(a.read_bytes())
    b = _write_json(tmp_path / "b.synthetic.ort.json", _ort_cpu(runs=2))
    code, out, err = _run(capsys, "table", str(a), str(b), str(copy), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [r["trace"] for r in doc["rows"]] == [str(a), str(b)]
    assert [w for w in doc["warnings"] if "same recording" in w] == [
        f"{copy} is the same recording as {a} (a byte-identical copy): counted once"
    ]


def test_table_says_when_one_recording_is_labelled_two_configurations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the same bytes named batch 1 and batch 2: both rows stay (which is right is not known), with a warning
    a = _write_json(tmp_path / "cpu_b1.synthetic.ort.json", _ort_cpu())
    b = tmp_path / "cpu_b2.synthetic.ort.json"
    b.write_bytes(a.read_bytes())
    for path, batch in ((a, 1), (b, 2)):  # their sidecars say batch 1 and batch 2
        _write_json(path.with_name(path.name.removesuffix(".json") + ".meta.json"), {"batch_size": batch})
    code, out, err = _run(capsys, "table", str(a), str(b), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [r["batch_size"] for r in doc["rows"]] == [1, 2]
    (warning,) = [w for w in doc["warnings"] if "byte-identical" in w]
    assert warning.startswith(f"{b} is a byte-identical copy of {a} but labelled another configuration (")
    assert warning.endswith("): one recording in two rows")


@pytest.mark.parametrize("args", [["--version"], ["analyze", "--help"]])
def test_help_and_version_on_a_full_device_are_not_a_silent_success(tmp_path: Path, args: list[str]) -> None:
    # argparse prints them and exits before main's own flush: the program's last flush says it (exit 2)
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        done = _cli(args, tmp_path, stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "tracekit: standard output: cannot write: No space left on device\n"


def test_an_api_error_names_an_unprintable_path_escaped(tmp_path: Path) -> None:
    # tracekit.analyze on garbage named 'two\nlines\x1b[0m...': str(error) is one line, .path the name itself
    import tracekit

    path = tmp_path / "two\nlines\x1b[0m.synthetic.json"
    path.write_bytes(b"garbage")
    with pytest.raises(TracekitError) as info:
        tracekit.analyze(path)
    assert info.value.path == str(path)
    assert str(info.value).startswith(f"{tmp_path}/two\\nlines\\x1b[0m.synthetic.json: ")
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value)


# ------------------------------------------------------------------------------ strict xfails, others' files


def test_report_timeline_title_does_not_say_batch_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracekit.renderers import plots

    titles: dict[str, str] = {}
    save_figure = plots.save_figure

    def spy(fig, base, dpi: int = 120):  # type: ignore[no-untyped-def]
        titles[Path(base).name] = fig._suptitle.get_text() if fig._suptitle else ""
        return save_figure(fig, base, dpi)

    monkeypatch.setattr(plots, "save_figure", spy)
    ort = _write_json(tmp_path / "cpu.synthetic.ort.json", _ort_cpu())
    code, _, err = _run(capsys, "report", str(ort), "-o", str(tmp_path / "rep"), "-q")
    assert code == 0, err
    assert titles["fig_timeline"].startswith("Timeline of onnx")
    assert "None" not in titles["fig_timeline"], titles
