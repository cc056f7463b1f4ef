"""Labels and messages of the presentation layer that misled a reader (labels14, from firsthour13 §9 and §11):
each pinned on a hand-built, labelled-synthetic trace whose numbers are known exactly.

The GPU trace (:func:`gpu_run`): two 100 µs ``iteration`` ranges; in each, three ``cudaLaunchKernel`` calls of
0.5 µs whose 2 µs kernels start 1, 2, 9 µs (iteration 0) and 3, 4, 5 µs (iteration 1) after their call began,
and one ``cudaMemsetAsync`` whose 1 µs memset starts 1 µs after its call. So per iteration: 3 kernels, 4 device
ops, 5 idle gaps (leading, 3 between the 4 ops, trailing); launch latency medians 2 and 4 µs (mean of the
medians 3 µs; the mean over all six launches would be 4 µs); queue time medians 1.5 and 3.5 µs (mean 2.5).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.builders import kineto_event, write_file
from tracekit.cli import main

#: (latencies of iteration 0's launches, of iteration 1's), µs from call start to kernel start
#: What the summary says under its table of the launch rows
LAUNCH_LEGEND = (
    "launch latency: op start - call start; queue time: max(0, op start - call end); each iteration's value "
    "is the median over its launches, and mean/p50/... are over those medians"
)
LATENCIES = ((1, 2, 9), (3, 4, 5))


def _kineto(tmp_path: Path, events: list[dict[str, Any]], name: str) -> Path:
    """``events`` as a Kineto document that says it is synthetic (name and header)."""
    assert "synthetic" in name
    doc = {"schemaVersion": 1, "tracekit_synthetic": True, "traceEvents": events}
    return write_file(tmp_path, name, json.dumps(doc))


def gpu_events(
    graph: bool = False, prefix: str = "k", repeat: int = 1, range_name: str = "iteration"
) -> list[dict[str, Any]]:
    """The module docstring's GPU trace; ``graph``: the launches are ``cudaGraphLaunch`` calls instead;
    ``repeat``: its two iterations that many times over (6 iterations give each median a 95% interval)."""
    events: list[dict[str, Any]] = []
    corr = 0
    launch = "cudaGraphLaunch" if graph else "cudaLaunchKernel"
    for i, latencies in enumerate(LATENCIES * repeat):
        t0 = 1000 + 200 * i
        events.append(kineto_event("user_annotation", range_name, t0, 100, 10, 10))
        for j, latency in enumerate(latencies):
            corr += 1
            start = t0 + 10 + 20 * j
            events.append(kineto_event("cuda_runtime", launch, start, 0.5, 10, 10, correlation=corr))
            events.append(
                kineto_event(
                    "kernel", f"{prefix}{j}", start + latency, 2, 0, 7, correlation=corr, device=0, stream=7
                )
            )
        corr += 1
        start = t0 + 80
        events.append(kineto_event("cuda_runtime", "cudaMemsetAsync", start, 0.5, 10, 10, correlation=corr))
        events.append(
            kineto_event(
                "gpu_memset", "Memset (Device)", start + 1, 1, 0, 7, correlation=corr, device=0, stream=7
            )
        )
    return events


def gpu_run(tmp_path: Path, name: str = "eager.synthetic.json", **kwargs: Any) -> Path:
    return _kineto(tmp_path, gpu_events(**kwargs), name)


def cpu_run(
    tmp_path: Path,
    ops: tuple[str, ...] = ("aten::linear", "aten::add"),
    iterations: int = 2,
    name: str = "cpu.synthetic.json",
) -> Path:
    """A CPU-only torch.profiler trace: ``iterations`` 100 µs iterations, each with one 30 µs leaf operator per
    name of ``ops``, 10 µs apart from the range start and each other."""
    events: list[dict[str, Any]] = []
    for i in range(iterations):
        t0 = 1000 + 200 * i
        events.append(kineto_event("user_annotation", "iteration", t0, 100, 10, 10))
        for j, op in enumerate(ops):
            events.append(kineto_event("cpu_op", op, t0 + 10 + 40 * j, 30, 10, 10))
    return _kineto(tmp_path, events, name)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([*args, "--no-progress"])
    out = capsys.readouterr()
    return code, out.out, out.err


def summary_row(text: str, label: str) -> list[str]:
    """The cells after ``label`` in a rich table row of ``text`` (the row must exist, once)."""
    rows = [line for line in text.splitlines() if line.startswith(f"│ {label} ")]
    assert len(rows) == 1, [line for line in text.splitlines() if line.startswith("│")]
    return [cell.strip() for cell in rows[0].strip("│").split("│")][1:]


# --- 1. launch latency and queue time are medians per iteration ------------------------------------------


def test_launch_latency_and_queue_rows_say_median_per_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary's mean launch latency is 3 µs, the mean of the iterations' medians (2, 4), not the mean
    over launches (4 µs): the label says each iteration's value is its launches' median."""
    code, out, _ = run_cli(["analyze", str(gpu_run(tmp_path))], capsys)
    assert code == 0
    latency = summary_row(out, "launch latency (median per iteration)")
    assert latency == ["µs", "3.000", "3.000", "—", "—", "2.000", "4.000"]  # p90/p99: 2 iterations
    queue = summary_row(out, "queue time (median per iteration)")
    assert queue == ["µs", "2.500", "2.500", "—", "—", "1.500", "3.500"]
    assert "launch latency (op start" not in out and "queue time (op start" not in out
    assert LAUNCH_LEGEND in " ".join(line.strip() for line in out.splitlines())


def test_summary_labels_fit_the_table_on_a_real_trace(capsys: pytest.CaptureFixture[str]) -> None:
    """The H200 eager sample's 8 columns of up to 8 digits leave the metric column 42 characters at the
    table's 120: no relabelled row wraps onto a second line."""
    from tests.conftest import SAMPLE_TRACES

    trace = SAMPLE_TRACES / "h200_bert_fp16" / "pytorch" / "pytorch_b1_s128.torch.json.gz"
    code, out, _ = run_cli(["analyze", str(trace)], capsys)
    assert code == 0
    assert summary_row(out, "launch latency (median per iteration)")[:3] == ["µs", "7.599", "7.651"]
    assert summary_row(out, "queue time (median per iteration)")[:3] == ["µs", "2.185", "2.186"]
    assert summary_row(out, "kernels (copies, memsets not counted)")[:3] == ["count", "202", "202"]
    assert summary_row(out, "idle gaps between kernels/copies/memsets")[:3] == ["count", "213.9", "215"]
    summary = out[out.index("per-iteration summary") : out.index("└")]
    rows = [
        [c.strip() for c in line.strip("│").split("│")] for line in summary.splitlines() if line[:1] == "│"
    ]
    assert len(rows) == 12 and all(row[2] for row in rows)  # a wrapped label's second line has no mean


def test_markdown_rows_carry_the_same_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["analyze", str(gpu_run(tmp_path)), "--format", "markdown"], capsys)
    assert code == 0
    assert "| launch latency (median per iteration) | µs | 3.000 | 3.000 |" in out
    assert "| queue time (median per iteration) | µs | 2.500 | 2.500 |" in out
    assert f"\n{LAUNCH_LEGEND}.\n" in out


def test_json_keys_and_csv_columns_are_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["analyze", str(gpu_run(tmp_path)), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["summary"]["launch_latency_us"]["mean"] == pytest.approx(3.0)
    assert [it["launch_latency_us"] for it in doc["iterations"]] == pytest.approx([2.0, 4.0])
    assert [it["queue_us"] for it in doc["iterations"]] == pytest.approx([1.5, 3.5])
    code, out, _ = run_cli(["analyze", str(gpu_run(tmp_path)), "--format", "csv"], capsys)
    header = out.splitlines()[0].split(",")
    assert "launch_latency_us" in header and "queue_us" in header and "kernels" in header


# --- 2. the kernel count says what it counts ---------------------------------------------------------------


def test_gpu_kernel_row_says_copies_and_memsets_are_not_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """3 kernels and 1 memset an iteration: the row counts 3 and says the memset is not in it; the idle gaps
    (5) are between all 4 device ops."""
    code, out, _ = run_cli(["analyze", str(gpu_run(tmp_path))], capsys)
    assert code == 0
    assert summary_row(out, "kernels (copies, memsets not counted)") == [
        "count",
        "3",
        "3",
        "—",
        "—",
        "3",
        "3",
    ]
    assert summary_row(out, "idle gaps between kernels/copies/memsets") == [
        "count",
        "5",
        "5",
        "—",
        "—",
        "5",
        "5",
    ]
    assert "kernels / ops" not in out


def test_cpu_kernel_row_is_named_operators(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CPU-only trace: its 'device work' is 2 operators an iteration, 3 gaps around them."""
    code, out, _ = run_cli(["analyze", str(cpu_run(tmp_path))], capsys)
    assert code == 0
    assert summary_row(out, "operators") == ["count", "2", "2", "—", "—", "2", "2"]
    assert summary_row(out, "idle gaps (between operators)") == ["count", "3", "3", "—", "—", "3", "3"]


# --- 3. compare: equal counts, no names in common, what the rows count, which latency ------------------------


def compare_rows(text: str) -> dict[str, list[str]]:
    """The summary table of ``tracekit compare``'s text: metric -> its cells (A, B, B − A, B / A)."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("│ ") and line.count("│") == 6:
            cells = [cell.strip() for cell in line.strip("│").split("│")]
            rows[cells[0]] = cells[1:]
    return rows


def test_compare_says_equal_counts_are_equal_not_within_noise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same 6 iterations on both sides: every count is equal (3 kernels, 1 launch... per iteration), and
    every interval overlaps; '0 (within noise)' read as 'a small difference, hidden by the noise'."""
    a = gpu_run(tmp_path, "a.synthetic.json", repeat=3)
    b = gpu_run(tmp_path, "b.synthetic.json", repeat=3)
    code, out, _ = run_cli(["compare", str(a), str(b)], capsys)
    assert code == 0
    rows = compare_rows(out)
    assert rows["kernels / iteration (copies, memsets not counted)"] == ["3", "3", "0", "1.000"]
    assert rows["launches / iteration"] == ["3", "3", "0", "1.000"]
    assert rows["idle gaps / iteration"] == ["5", "5", "0", "1.000"]
    assert rows["traced latency (ms)"] == ["0.1", "0.1", "0", "1.000"]
    assert "within noise)" not in out.split("Medians over iterations")[0]


def test_compare_within_noise_still_said_of_a_real_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """B's iterations alternate 100 and 101 µs (A's are all 100 µs): medians 0.1005 and 0.1 ms, whose 95%
    intervals ([0.1, 0.101] and [0.1, 0.1]) overlap: a nonzero difference inside the noise keeps its
    '(within noise)'."""
    a = gpu_run(tmp_path, "a.synthetic.json", repeat=3)
    events = gpu_events(repeat=3)
    for k, event in enumerate(e for e in events if e["cat"] == "user_annotation"):
        event["dur"] += k % 2
    b = _kineto(tmp_path, events, "b.synthetic.json")
    code, out, _ = run_cli(["compare", str(a), str(b)], capsys)
    assert code == 0
    rows = compare_rows(out)
    assert rows["traced latency (ms)"] == ["0.1", "0.1005 [0.1–0.101]", "+0.0005 (within noise)", "1.005"]
    assert rows["kernels / iteration (copies, memsets not counted)"] == ["3", "3", "0", "1.000"]


def test_compare_of_traces_without_a_common_op_name_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A: a PyTorch CPU trace (aten::linear, aten::add); B: the same work under names of another runtime
    (MatMul, Add): no name in both, so every Δ is '—'; the compare says why, and its count row counts
    operators, not kernels."""
    a = cpu_run(tmp_path, iterations=6, name="pt.synthetic.json")
    b = cpu_run(tmp_path, ("MatMul", "Add"), iterations=6, name="ort.synthetic.json")
    code, out, _ = run_cli(["compare", str(a), str(b)], capsys)
    assert code == 0
    assert "A and B have no op name in common (4 names, each on one side only): no Δ per name" in out
    rows = compare_rows(out)
    assert rows["operators / iteration"] == ["2", "2", "0", "1.000"]
    assert not any(label.startswith("kernels") for label in rows)
    code, out, _ = run_cli(["compare", str(a), str(a)], capsys)
    assert "no op name in common" not in out


def test_compare_names_its_latency_traced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """compare's latency is the traced iterations' (report's sweep latency is the untraced latency.csv): the
    row and the legend say so; the JSON keeps its metric key."""
    a = gpu_run(tmp_path, "a.synthetic.json")
    code, out, _ = run_cli(["compare", str(a), str(a)], capsys)
    assert code == 0
    assert "traced latency (ms)" in compare_rows(out)
    assert "Latency: the traced iterations' (the profiler on), not the untraced latency.csv of a run" in out
    code, out, _ = run_cli(["compare", str(a), str(a), "--format", "json"], capsys)
    (row,) = [r for r in json.loads(out)["comparisons"][0]["summary"] if r["metric"] == "latency_ms"]
    assert row["name"] == "traced latency (ms)" and row["a"] == pytest.approx(0.1)


# --- 4. the queue-time note names graph launches only where the trace has them -------------------------------

#: The note's clause on graph launches (analyzers/iterations.py launch_notes)
GRAPH_CLAUSE = "; a graph launch call returns after its first kernels ran"


def _early_start_doc(tmp_path: Path, capsys: pytest.CaptureFixture[str], graph: bool) -> dict[str, Any]:
    """The GPU trace with iteration 0's first kernel starting 0.25 µs after its call began, inside the 0.5 µs
    call: 1 of the 6 launches has its op start before its call returned."""
    events = gpu_events(graph=graph)
    first = next(e for e in events if e["cat"] == "kernel")
    first["ts"] = 1000 + 10 + 0.25
    path = _kineto(tmp_path, events, f"early_{'graph' if graph else 'eager'}.synthetic.json")
    code, out, _ = run_cli(["analyze", str(path), "--format", "json"], capsys)
    assert code == 0
    return json.loads(out)


def test_queue_note_on_graph_launches_keeps_its_graph_clause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _early_start_doc(tmp_path, capsys, graph=True)
    (note,) = [n for n in doc["notes"] if n.startswith("queue time:")]
    assert note.startswith(
        "queue time: in 1 of 6 launches the first op started before its launch call returned"
    )
    assert GRAPH_CLAUSE in note


def test_queue_note_on_an_eager_trace_says_nothing_of_graph_launches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _early_start_doc(tmp_path, capsys, graph=False)
    (note,) = [n for n in doc["notes"] if n.startswith("queue time:")]
    assert note == (
        "queue time: in 1 of 6 launches the first op started before its launch call returned (the device took "
        "the work while the call was still submitting): their queue time is 0, not negative"
    )


# --- 5. the latency figure's legend names a transition only where one is drawn -------------------------------


def _legend(series: list[dict[str, Any]]) -> list[str]:
    import matplotlib.pyplot as plt

    from tracekit.renderers.plots import latency_figure

    fig = latency_figure(series)
    try:
        return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    finally:
        plt.close(fig)


def _series(label: str, transition: int | None) -> dict[str, Any]:
    return {
        "label": label,
        "batch_sizes": [1, 2, 4],
        "latency_ms": [1.0, 1.02, 1.5],
        "transition": transition,
    }


def test_latency_legend_without_a_transition_has_no_transition_entry() -> None:
    assert _legend([_series("pytorch (synthetic)", None)]) == ["pytorch (synthetic)"]
    # a transition outside the drawn batch sizes draws no circle either
    assert _legend([_series("pytorch (synthetic)", 8)]) == ["pytorch (synthetic)"]


def test_latency_legend_with_a_transition_names_it() -> None:
    legend = _legend([_series("pytorch (synthetic)", 4), _series("onnx (synthetic)", None)])
    assert legend == ["pytorch (synthetic)", "onnx (synthetic)", "transition batch size"]


def test_report_markdown_says_circles_only_where_a_transition_is_drawn() -> None:
    from tracekit.renderers.report_markdown import latency_figure_text

    none = {"sweeps": [{"transition_batch_size": None}, {"transition_batch_size": None}]}
    one = {"sweeps": [{"transition_batch_size": None}, {"transition_batch_size": 8}]}
    assert latency_figure_text(none) == (
        "Log-log, medians with their 95% intervals as error bars; no sweep has a transition batch size (first "
        "batch size past the plateau)."
    )
    assert latency_figure_text(one) == (
        "Log-log, medians with their 95% intervals as error bars; circles mark the transition batch size "
        "(first batch size past the plateau)."
    )


# --- 6. a report into an earlier report's folder leaves no figure it did not draw ----------------------------

FIGURE_FILES = [
    f"fig_{name}.{ext}" for name in ("breakdown", "latency", "timeline") for ext in ("png", "svg")
]


def _sweep(tmp_path: Path) -> Path:
    """A one-configuration synthetic sweep: the CPU trace with its sidecar (pytorch, batch 1, seq 32)."""
    folder = tmp_path / "synthetic_sweep"
    folder.mkdir()
    trace = cpu_run(folder, name="pytorch_b1_s32.synthetic.json")
    meta = {"runtime": "pytorch", "batch_size": 1, "seq_len": 32, "device": "cpu", "synthetic": True}
    (folder / "pytorch_b1_s32.synthetic.meta.json").write_text(json.dumps(meta))
    return trace


def test_report_without_figures_removes_an_earlier_reports_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "report"
    out_dir.mkdir()
    for name in [*FIGURE_FILES, "fig_mine.png", "notes.txt"]:
        (out_dir / name).write_text("an earlier report's file")
    trace = _sweep(tmp_path)
    code, _, err = run_cli(["report", str(trace), "-o", str(out_dir), "--no-figures"], capsys)
    assert code == 0
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "fig_mine.png",
        "notes.txt",
        "report.csv",
        "report.json",
        "report.md",
    ]
    assert (
        "removed 6 figure files of an earlier report that this one did not draw: fig_breakdown.png, "
        "fig_breakdown.svg, fig_latency.png, fig_latency.svg, fig_timeline.png, fig_timeline.svg"
    ) in err
    assert "![" not in (out_dir / "report.md").read_text()


def test_report_with_figures_into_a_new_folder_says_nothing_of_removal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "report"
    trace = _sweep(tmp_path)
    code, _, err = run_cli(["report", str(trace), "-o", str(out_dir)], capsys)
    assert code == 0
    assert sorted(p.name for p in out_dir.glob("fig_*")) == FIGURE_FILES
    assert "removed" not in err


# --- 7. --range PATTERN is echoed as typed ---------------------------------------------------------------------


def _step_trace(tmp_path: Path) -> Path:
    return _kineto(tmp_path, gpu_events(range_name="step[DECODE bs=32]"), "steps.synthetic.json")


def test_range_pattern_is_echoed_as_typed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r"""--range 're:^step\[' matched the 2 'step[DECODE bs=32]' ranges: the headline showed the pattern's repr,
    're:^step\\[' (a doubled backslash the user did not type), as a range's name."""
    code, out, _ = run_cli(["analyze", str(_step_trace(tmp_path)), "--range", r"re:^step\["], capsys)
    assert code == 0
    (line,) = [line for line in out.splitlines() if line.startswith("iterations:")]
    assert line.startswith(r"iterations: 2 ranges matching 're:^step\[' (requested with --range (regex: ")
    assert "\\\\" not in out
    code, out, _ = run_cli(
        ["analyze", str(_step_trace(tmp_path)), "--range", r"re:^step\[", "--format", "markdown"], capsys
    )
    assert r"- iterations: 2 ranges matching 're:^step\[' (" in out


def test_exact_range_name_is_still_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["analyze", str(_step_trace(tmp_path)), "--range", "step[DECODE bs=32]"], capsys)
    assert code == 0
    assert "iterations: 2 ranges named 'step[DECODE bs=32]' (requested with --range)" in out


def test_range_pattern_names_the_ranges_it_matched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        ["analyze", str(_step_trace(tmp_path)), "--range", r"re:^step\[", "--format", "json"], capsys
    )
    assert code == 0
    assert "step[DECODE bs=32]" in json.loads(out)["range_choice"]


# --- 8. the README tour's outputs are ignored by git ----------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]


def readme_outputs() -> list[str]:
    """Every path a README command line writes (``-o``/``--output``/``--timeline``/``--gaps`` values, ``> file``
    redirections), except the GPU check's ``$OUT``."""
    found = []
    for line in (REPO / "README.md").read_text().splitlines():
        command = line.split("#")[0]
        if "tracekit " not in command:
            continue
        # report, collect and simulate write a folder (git matches "report/" patterns only on folders)
        folder = "/" if re.search(r"tracekit (report|collect|simulate) ", command) else ""
        found += [p + folder for p in re.findall(r"(?:\s-o|--output)\s+(\S+)", command)]
        found += re.findall(r"(?:--timeline|--gaps)\s+(\S+)", command)
        found += re.findall(r"\s>\s*([^\s&|]+)", command)
    return [path.strip("'\"") for path in found if "$" not in path]


def test_every_readme_output_is_ignored_by_git() -> None:
    import shutil
    import subprocess

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    outputs = readme_outputs()
    tour = {"runs/bert-onnx/", "timeline.json", "onnx.json", "report/", "sim-noisy/", "report-noisy/"}
    assert tour <= set(outputs)
    not_ignored = [
        path
        for path in outputs
        if subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=REPO).returncode != 0
    ]
    assert not_ignored == []


# --- 9. an Nsight Compute report alone: analyze's "GPU busy" is the replayed kernels' sum ----------------------

NCU_IDS = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC"'
)


def ncu_csv(tmp_path: Path) -> Path:
    """``ncu --csv --page raw --metrics gpu__time_duration.sum``: two kernels of 10 and 30 µs (synthetic)."""
    lines = [
        NCU_IDS + ',"gpu__time_duration.sum"',
        '"","","","","","","","","","",""' + ',"usecond"',
        *(
            f'"{k}","4242","app","127.0.0.1","k{k}(int*)","1","7","(128, 1, 1)","(8, 1, 1)","0","9.0","{us}"'
            for k, us in ((0, 10), (1, 30))
        ),
    ]
    path = tmp_path / "kernels.synthetic.ncu.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_ncu_busy_row_says_it_is_the_replayed_kernels_sum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """analyze printed 'GPU busy 0.040 ms' in a per-iteration summary for the one window of an ncu report:
    the sum of kernel durations measured under ncu's replay (each kernel alone, by default with clocks locked
    to base and caches flushed), not a run's busy time (the committed H200 ncu report: 2.628 ms for its 3
    iterations' 606 kernels, 0.876 ms an iteration, where torch.profiler measured 0.606 ms); table withholds
    it. The row says what it is."""
    path = ncu_csv(tmp_path)
    code, out, _ = run_cli(["analyze", str(path)], capsys)
    assert code == 0
    label = "GPU busy (Σ kernel durations, ncu replay)"
    assert summary_row(out, label) == ["ms", "0.040", "0.040", "—", "—", "0.040", "0.040"]
    assert "│ GPU busy  " not in out
    code, out, _ = run_cli(["table", str(path), "--format", "json"], capsys)
    (row,) = json.loads(out)["rows"]
    assert row["gpu_busy_ms"] is None and "busy" in row["empty_because"]


def test_busy_row_of_a_timeline_trace_keeps_its_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["analyze", str(gpu_run(tmp_path))], capsys)
    assert summary_row(out, "GPU busy") == ["ms", "0.007", "0.007", "—", "—", "0.007", "0.007"]


# --- firsthour13 §10: the longest gaps' "cause" is the largest share, "launcher was" its state at the start ----


def test_longest_gaps_table_says_what_cause_and_launcher_state_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One 100 µs iteration: kernel A [10, 12) µs; the host then syncs [5, 14), runs framework code until it
    launches B in [40, 41), B runs [42, 44). The gap [12, 42) is 2 µs sync, 26 µs dispatch, 1 µs launch, 1
    µs in flight: its main cause is dispatch (26 of 30 µs) and the launching thread was in the sync call at
    the gap's start."""
    events = [
        kineto_event("user_annotation", "iteration", 0, 100, 10, 10),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 1, 1, 10, 10, correlation=1),
        kineto_event("kernel", "A", 10, 2, 0, 7, correlation=1, device=0, stream=7),
        kineto_event("cuda_runtime", "cudaStreamSynchronize", 5, 9, 10, 10, correlation=2),
        kineto_event("cuda_runtime", "cudaLaunchKernel", 40, 1, 10, 10, correlation=3),
        kineto_event("kernel", "B", 42, 2, 0, 7, correlation=3, device=0, stream=7),
    ]
    path = _kineto(tmp_path, events, "gap.synthetic.json")
    code, out, _ = run_cli(["analyze", str(path), "--gaps", str(tmp_path / "gaps.json")], capsys)
    assert code == 0
    gaps = json.loads((tmp_path / "gaps.json").read_text())
    (inner,) = [g for g in gaps if g["position"] == "inner"]
    assert (inner["sync_ns"], inner["dispatch_ns"], inner["launch_ns"], inner["in_flight_ns"]) == (
        2000,
        26000,
        1000,
        1000,
    )
    assert (inner["cause"], inner["host_state"]) == ("dispatch", "sync")
    legend = (
        "cause: the one holding most of the gap (its time by cause: --gaps FILE); launcher was: the launching "
        "thread's state when the gap began"
    )
    assert legend in " ".join(line.strip() for line in out.splitlines())
    (row,) = [line for line in out.splitlines() if line.startswith("│ ") and "│ inner " in line]
    assert [c.strip() for c in row.strip("│").split("│")][:6] == [
        "0",
        "inner",
        "30.0",
        "0.012",
        "dispatch",
        "sync",
    ]


# --- firsthour13 §11: -o FILE with an extension that names no format ---------------------------------------------


def test_output_with_an_unknown_extension_says_what_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-o x.xlsx`` wrote the terminal table into a file named as a spreadsheet without a word."""
    target = tmp_path / "result.synthetic.xlsx"
    code, out, err = run_cli(["analyze", str(gpu_run(tmp_path)), "-o", str(target)], capsys)
    assert code == 0 and out == ""
    assert target.read_text().startswith("trace: ")
    assert (
        "tracekit: note: -o result.synthetic.xlsx: the extension '.xlsx' names no format, so the table is written "
        "as text (.json, .csv, .md or .txt choose the format; or --format)"
    ) in err
    for name, fmt in (("r.synthetic.txt", None), ("r.synthetic.xlsx", "table"), ("r_synthetic", None)):
        extra = ["--format", fmt] if fmt else []
        code, _, err = run_cli(
            ["analyze", str(gpu_run(tmp_path)), "-o", str(tmp_path / name), *extra], capsys
        )
        assert code == 0 and "names no format" not in err, name
