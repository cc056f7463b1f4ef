"""firsthour15: what a new user met in an hour with the README (tour, --help, API, typical mistakes), each
pinned on a hand-built input whose numbers are known. Defects in files firsthour15 does not own are strict
xfails here (named in its report)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracekit.analyzers.recommendations import Recommendation
from tracekit.renderers.recommendations import describe

README = Path(__file__).resolve().parents[1] / "README.md"
UNSTABLE = "the latency set of batch 1 and 4 is unstable (see its warning)"


def _withheld_transition(
    last_plateau: int, edge: list[int], ratios: list[tuple[float, float]]
) -> Recommendation:
    """A sweep of batch 1, 4 (or 1, 2, 4) with no transition, whose plateau claim is withheld (an unstable
    latency set): the report's 'transition' recommendation with batch_size None."""
    return Recommendation(
        kind="transition",
        runtime="pytorch",
        seq_len=32,
        batch_size=None,
        numbers={"largest_batch_size": 4, "within_noise_batch_sizes": edge},
        device="cpu",
        facts={
            "tolerance": 0.1,
            "smallest_batch_size": 1,
            "last_plateau": last_plateau,
            "edge": edge,
            "not_compared": [],
            "edge_ratios": ratios,
            "withheld": UNSTABLE,
        },
    )


def test_a_withheld_plateau_does_not_say_within_10_percent_of_a_batch_only_within_noise_of_the_line() -> None:
    """The tour's CPU sweep (step 4, a loaded 2-core box): batch 4 measured 1.19x batch 1 (150.4 vs 126.2 ms,
    interval 0.25-3.68x: 141.2 / 560.9 to 411.4 / 111.9), within noise of the 10% line but not within 10%. The report read 'latency measured
    within 10% of batch 1 up to batch 4, but no plateau is claimed': 1.19x is not within 10%."""
    text = describe(_withheld_transition(1, [4], [(0.252, 3.677)]))
    assert "measured within 10% of batch 1 up to batch 4" not in text
    assert text == (
        "pytorch (seq 32): batch 4 (0.25–3.68x) is within noise of the 10% line (measured up to batch 4), "
        f"but no plateau is claimed: {UNSTABLE}."
    )


def test_a_withheld_plateau_names_how_far_it_was_measured_within_the_tolerance() -> None:
    # batch 2 measured within 10% (on the plateau), batch 4 within noise of the line
    text = describe(_withheld_transition(2, [4], [(1.02, 1.31)]))
    assert text == (
        "pytorch (seq 32): latency measured within 10% of batch 1 up to batch 2; batch 4 (1.02–1.31x) is "
        f"within noise of the 10% line (measured up to batch 4), but no plateau is claimed: {UNSTABLE}."
    )


def test_a_withheld_plateau_over_the_whole_range_keeps_its_sentence() -> None:
    # every batch size within 10%: the sentence was right, and stays
    assert describe(_withheld_transition(4, [], [])) == (
        f"pytorch (seq 32): latency measured within 10% of batch 1 up to batch 4, but no plateau is claimed: "
        f"{UNSTABLE}."
    )


def _cpu_row(batch: int, **more: object) -> dict[str, object]:
    return {"batch_size": batch, "device": "cpu", **more}


def test_no_tracing_inflation_is_claimed_from_an_unstable_latency_set() -> None:
    """The README tour's step 4 on a loaded 2-core box: batch 4 untraced 150.4 ms median (CV 97%, 'more than 25%
    of the iterations are outliers (no single mode)', the process not running for part of them), traced 4186 ms
    (CV 37%, the same cause). The report said 'tracing inflated latency up to 27.84x (95% interval
    5.26-45.54x)': the contention, not the profiler, is what the sets show."""
    from tracekit.analyzers.recommendations import SweepView, profiler_perturbation

    b1 = _cpu_row(1, profiler_ratio=0.79, latency_unstable=True, _perturbation=None)
    b4 = _cpu_row(
        4,
        profiler_ratio=27.84,
        latency_unstable=True,
        _perturbation=None,
        traced_median_ms=4186.0,
        traced_latency_ms=4283.816,
        untraced_latency_ms=150.387,
    )
    sweep = {"runtime": "pytorch", "seq_len": 32}
    view = SweepView(sweep, [b1, b4], {}, tolerance=0.1, bound_threshold=0.5)
    rec = profiler_perturbation(view)
    assert rec is None or rec.facts.get("withheld")


def test_collect_line_of_an_unstable_set_says_unstable() -> None:
    """README tour step 4 on a loaded box: 'warning: b1 s32 untraced: unstable: coefficient of variation
    86.0% ...' then 'b1 s32: ok (126.241 ms median [111.883-560.926], 16 iterations (2 dropped ...))': a reader
    of the last line takes the median as measured; the run.json stats say unstable."""
    from tracekit.collectors.sweep import _latency_words

    stats = {
        "median": 126.240669,
        "ci_low": 111.883149,
        "ci_high": 560.925653,
        "count": 16,
        "dropped_warmup": [0, 1],
        "dropped_outliers": [],
        "unstable": True,
        "cv": 0.8599210991813305,
    }
    words = _latency_words(stats)
    assert words.startswith("126.241 ms median [111.883-560.926], 16 iterations")
    assert "unstable" in words


@pytest.fixture(scope="module")
def warmup_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic Kineto trace (tracekit simulate, seed 0) of 10 iterations whose first 3 are a slow start
    (1.191, 1.050, 0.909 ms against a median of 0.742 ms)."""
    from tracekit.cli import main

    folder = tmp_path_factory.mktemp("synthetic") / "synthetic_warmup"
    args = ["simulate", "--runtime", "pytorch", "--iters", "10", "--ops", "8", "--traces", "kineto"]
    assert main([*args, "--noise-warmup", "3", "--metrics-interval-us", "0", "-q", "-o", str(folder)]) == 0
    (trace,) = folder.glob("*.synthetic.json.gz")
    return trace


def test_readme_says_analyze_ends_its_table_with_the_warnings_also_into_a_file(
    warmup_trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tracekit analyze T > out.txt`: the warnings are in out.txt, none on standard error (the README had
    said so only of 'the terminal's standard output'). The slow start of the synthetic trace is one
    warning."""
    from tracekit.cli import main

    trace = warmup_trace
    capsys.readouterr()
    assert main(["analyze", str(trace)]) == 0
    out, err = capsys.readouterr()
    assert "\nwarning: the first 3 of 10 'iteration' iterations are a slow start" in out
    assert "warning" not in err
    text = " ".join(README.read_text().split())
    assert "the terminal's standard output" not in text
    assert (
        "except that `analyze` (of one trace) and `table`, printing their table (`--format table`) on standard output, end it "
        "with them there and not on standard error, also when standard output is a file or a pipe" in text
    )


def test_readme_share_outside_gpu_work_is_the_samples() -> None:
    """README: 'eager PyTorch spends N% of a batch-1 iteration outside GPU work (busy 0.61 of 8.08 ms traced)'.
    The sample's means: busy 0.6061 ms of 8.0764 ms, 92.5% outside (92% at whole percents); it said 93%."""
    import tracekit
    from tests.conftest import SAMPLE_TRACES

    a = tracekit.analyze(SAMPLE_TRACES / "h200_bert_fp16" / "pytorch" / "pytorch_b1_s128.torch.json.gz")
    busy, latency = a.summary.mean("gpu_busy_ms"), a.summary.mean("latency_ms")
    assert (round(busy, 2), round(latency, 2)) == (0.61, 8.08)
    share = round(100 * (1 - busy / latency))
    assert share == 92
    text = " ".join(README.read_text().split())
    assert f"spends {share}% of a batch-1 iteration outside GPU work (busy 0.61 of 8.08 ms traced)" in text


def test_readme_tour_compare_says_pytorch_and_ort_share_no_operator_name() -> None:
    """The tour compares a PyTorch run with an ORT run and promised 'per-operator deltas': the two name their
    operators differently (aten::linear, MatMul:/model/...), so compare prints 'A and B have no op name in
    common (633 names, each on one side only): no Δ per name' and every Δ is '—'."""
    from tracekit.renderers.compare import _no_common_name_note

    kernels = [
        {"name": "aten::linear", "count_a": 72, "count_b": None},
        {"name": "MatMul:/model/encoder/layer.1/output/dense/MatMul", "count_a": None, "count_b": 1},
    ]
    assert _no_common_name_note({"kernels": kernels}) == (
        "A and B have no op name in common (2 names, each on one side only): no Δ per name"
    )
    (line,) = [x for x in README.read_text().splitlines() if x.startswith("tracekit compare runs/bert-pt")]
    assert line.split("#", 1)[1].strip() == (
        "medians with intervals; per-operator deltas where both ran an op of that name (none here: PyTorch's "
        "aten:: ops against ORT's nodes)"
    )


def _report_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line of a report command refused before any input is read (exit 2)."""
    from tracekit.cli import main

    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's refusal of an option value
        code = exc.code
    assert code == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.strip().splitlines()
    return line


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("5", "--plateau-tolerance: a fraction (0.05 = 5%), not a percent: must be between 0 and 1, not 5"),
        (
            "10",
            "--plateau-tolerance: a fraction (0.10 = 10%), not a percent: must be between 0 and 1, not 10",
        ),
        ("inf", "--plateau-tolerance: a fraction (0.10 = 10%): must be between 0 and 1, not inf"),
        ("nan", "--plateau-tolerance: a fraction (0.10 = 10%): must be between 0 and 1, not nan"),
        ("-0.1", "--plateau-tolerance: a fraction (0.10 = 10%): must be between 0 and 1, not -0.1"),
    ],
)
def test_report_refuses_a_plateau_tolerance_given_as_a_percent(
    value: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tracekit report RUNS --plateau-tolerance 5` (meaning 5%) ran with 500%: every batch size within 6x of
    batch 1 was 'on the plateau'. A tolerance is a fraction; over 1 it is refused in one line, exit 2, before
    any input is read (the input here does not exist)."""
    line = _report_error(
        ["report", str(tmp_path / "no_such_run"), f"--plateau-tolerance={value}", "-o", str(tmp_path / "r")],
        capsys,
    )
    assert line == f"tracekit report: error: argument {said} (see tracekit report --help)"


@pytest.mark.parametrize("value", ["0", "-1"])
def test_report_refuses_a_timeline_of_no_iterations(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --timeline-iterations 0 (or -1) had drawn one iteration, silently
    line = _report_error(
        [
            "report",
            str(tmp_path / "no_such_run"),
            f"--timeline-iterations={value}",
            "-o",
            str(tmp_path / "r"),
        ],
        capsys,
    )
    assert line == (
        f"tracekit report: error: argument --timeline-iterations: must be a positive integer, not {value} "
        "(see tracekit report --help)"
    )


def test_report_keeps_a_plateau_tolerance_of_0_to_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 0 and 1 pass the option check: the error is then the missing input's
    for value in ("0", "0.1", "1"):
        line = _report_error(
            [
                "report",
                str(tmp_path / "no_such_run"),
                f"--plateau-tolerance={value}",
                "-o",
                str(tmp_path / "r"),
            ],
            capsys,
        )
        assert "no such file or directory" in line and "--plateau-tolerance" not in line


def test_headline_does_not_call_the_default_serving_step_pattern_a_name() -> None:
    from tracekit.renderers.analysis import _range_words

    pattern = r"re:^execute_(?:new_\d+_cached_\d+|(?:\d+_)?context_\d+\([^)]*\)_generation_\d+\([^)]*\))$"
    doc = {
        "range": pattern,
        "range_choice": "vLLM serving-engine steps (1 ranges of 1 names); also seen: 1 SGLang step range nested "
        "inside them ('step[DECODE bs=32]'); choose another with --range",
    }
    assert _range_words(doc) == f"matching '{pattern}'"


@pytest.mark.parametrize("value", [5.0, float("inf")])
def test_api_report_refuses_a_plateau_tolerance_over_1(value: float, tmp_path: Path) -> None:
    import tracekit
    from tracekit.errors import TracekitError

    with pytest.raises(TracekitError, match="^plateau_tolerance"):
        tracekit.report([str(tmp_path / "no_such_run")], plateau_tolerance=value)


def _sweep_doc(unstable: bool) -> dict[str, object]:
    """report.json of the tour's pytorch sweep (batch 1 and 4, seq 32, CPU): batch 1's untraced median
    126.2 ms [111.9-560.9], CV 86%."""
    sweep = {
        "runtime": "pytorch",
        "seq_len": 32,
        "model": "bert-base",
        "device": "cpu",
        "precision": "fp32",
        "unidentified": None,
        "label": "pytorch",
        "batch_sizes": [1, 4],
        "plateau": [1],
        "plateau_edge": [4],
        "smallest_batch_size": 1,
        "smallest_latency_ms": 126.240669,
        "latency_ci_low": [111.883149, 141.246787],
        "latency_ci_high": [560.925653, 411.449485],
        "headroom_batch_size": 1,
        "headroom_latency_ratio": 1.0,
        "transition_batch_size": None,
    }
    # a configuration as report.json has it: no precision or unidentified key (the sweep's label says them)
    base = {k: sweep[k] for k in ("runtime", "seq_len", "model", "device")}
    configs = [
        {**base, "batch_size": 1, "latency_unstable": unstable},
        {**base, "batch_size": 4, "latency_unstable": True},
    ]
    return {"sweeps": [sweep], "configs": configs}


def test_sweeps_table_marks_the_smallest_batch_median_of_an_unstable_set() -> None:
    """report's Sweeps table (report.md and the terminal) showed batch 1's '126.2 [111.9–560.9]' bare where the
    Configurations table beside it says '126.2 [111.9–560.9] unstable' (CV 86%, no single mode). (42c4aae's
    first fix matched the configurations by the sweep's whole key, precision included, which report.json's
    configurations do not carry: on the real report the mark never showed.)"""
    from tracekit.renderers.report_markdown import sweep_rows

    (row,) = sweep_rows(_sweep_doc(unstable=True))
    assert row["smallest_latency_shown"] == "126.2 [111.9–560.9] unstable"
    (row,) = sweep_rows(_sweep_doc(unstable=False))
    assert row["smallest_latency_shown"] == "126.2 [111.9–560.9]"


def test_collect_default_profiler_on_a_cpu_only_machine_gives_a_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`tracekit collect --model tiny --runtime onnx ...` (no --device, no --profiler) on this CPU-only box
    with nsys installed wrote onnx_b1_s8.nsys.sqlite, whose analysis says 'no framework-/compute-bound
    verdict: the trace holds ranges but no GPU or operator activity'. --help says the default is nsys only
    'when the device is not cpu'; auto resolved to the CPU here."""
    from tracekit.collectors import environment, sweep
    from tracekit.collectors.profilers import nsys

    monkeypatch.setattr(nsys, "find_nsys", lambda: "/usr/bin/nsys")
    monkeypatch.setattr(environment, "resolve_device", lambda requested, runtime, cuda_only: "cpu")
    assert sweep.default_profilers("onnx", "cpu") == ["ort"]
    assert sweep.default_profilers("onnx", "auto") == ["ort"]


def _ranks_doc(*devices: str) -> dict[str, object]:
    """A cross-trace document of one row per device given (2 iterations, 10 ms latency, 6 ms busy)."""
    rows = [
        {
            "trace": f"t{i}.json.gz",
            "device": device,
            "iterations": 2,
            "median_latency_ms": 10.0,
            "mean_latency_ms": 10.0,
            "mean_gpu_busy_ms": 6.0,
            "mean_framework_overhead_ms": 4.0,
            "verdict": "compute",
        }
        for i, device in enumerate(devices)
    ]
    return {"rows": rows, "traces": len(rows), "warnings": []}


@pytest.mark.parametrize(
    ("devices", "header"),
    [
        (("cpu", "cpu"), "mean operator busy ms"),
        (("gpu", "gpu"), "mean GPU busy ms"),
        (("cpu", "gpu"), "mean device busy ms"),
    ],
)
def test_many_trace_table_names_busy_time_by_device(devices: tuple[str, ...], header: str) -> None:
    """`tracekit analyze runs/bert-pt runs/bert-onnx` (CPU runs of the tour) headed its column 'mean GPU busy
    ms' over CPU operator time, where analyze of one of them says 'operator busy'."""
    from tracekit.renderers.ranks import render_ranks

    doc = _ranks_doc(*devices)
    text = render_ranks(doc, "table")
    assert f"  {header}  " in text.splitlines()[0]
    assert f"| {header} |" in render_ranks(doc, "markdown")
    others = {"mean operator busy ms", "mean GPU busy ms", "mean device busy ms"} - {header}
    assert not any(o in text or o in render_ranks(doc, "markdown") for o in others)
    # CSV and JSON keys stay as they are (mean_gpu_busy_ms)
    assert "mean_gpu_busy_ms" in render_ranks(doc, "csv").splitlines()[0]


def test_timeline_writes_its_figures_as_the_json_writers_do(warmup_trace: Path, tmp_path: Path) -> None:
    """--timeline's iteration events carried float noise ('gpu_busy_ms': 0.6303449999999999, 'idle_ms':
    0.41969599999999996 for iteration 1 of the synthetic trace: 630,345 ns busy, 419,696 ns idle) where analyze's
    JSON writes 0.630345 (12 significant digits, renderers.tabular.round_float)."""
    import json

    from tracekit.cli import main

    out = tmp_path / "timeline.json"
    assert (
        main(["analyze", str(warmup_trace), "--timeline", str(out), "-q", "-o", str(tmp_path / "a.json")])
        == 0
    )
    text = out.read_text()
    assert '"gpu_busy_ms":0.630345,' in text and '"idle_ms":0.419696,' in text
    events = json.loads(text)["traceEvents"]
    (one,) = [e for e in events if e.get("cat") == "iteration" and e["args"]["iteration"] == 1]
    assert (one["args"]["latency_ms"], one["args"]["gpu_busy_ms"], one["args"]["idle_ms"]) == (
        1.050041,
        0.630345,
        0.419696,
    )


def test_readme_api_load_of_the_json_equals_the_analysis(tmp_path: Path) -> None:
    """README: 'doc = a.to_json()  # == `tracekit analyze PATH --format json`; tracekit.load("that.json") == a',
    on the committed ORT CPU sample (20 untraced iterations in run.json)."""
    import json

    import tracekit
    from tests.conftest import SAMPLE_TRACES

    a = tracekit.analyze(SAMPLE_TRACES / "cpu_onnx_bert_ort" / "onnx_b1_s128.ort.json.gz")
    (tmp_path / "that.json").write_text(json.dumps(a.to_json()))
    assert tracekit.load(tmp_path / "that.json") == a


def test_compare_of_a_trace_with_itself_says_so(
    warmup_trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tracekit compare T T` (the same file twice, a tab completion away) printed every delta 0 and 'within
    noise' without a word that A and B are one file."""
    from tracekit.cli import main

    capsys.readouterr()
    assert main(["compare", str(warmup_trace), str(warmup_trace)]) == 0
    out, err = capsys.readouterr()
    assert "| +0 " in out or " 0 " in out  # every delta is 0
    assert (
        f"warning: A and B are the same file ({warmup_trace}): every difference below is 0 by construction"
        in err.splitlines()
    )


@pytest.mark.parametrize("value", ["0", "1"])
def test_simulate_ranks_says_one_minimum(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`simulate --ranks 0` said 'must be >= 1' and `--ranks 1` then said '--ranks needs at least 2 ranks': two
    minimums for one option. Both now name the one that holds (a straggler needs a second rank)."""
    line = _report_error(["simulate", "--ranks", value, "-o", str(tmp_path / "r")], capsys)
    assert line == (
        "tracekit simulate: error: argument --ranks: must be >= 2 (one rank has no straggler, clock offset or "
        "collective to wait at) (see tracekit simulate --help)"
    )


def test_no_activity_warning_does_not_call_the_range_length_cpu_time() -> None:
    """The committed CPU ORT run under nsys (ranges, no operators): analyze's warning read 'the trace holds
    ranges but no GPU or operator activity, so it gives latency and CPU time per iteration', beside a table row
    named 'range length on host'."""
    import tracekit
    from tests.conftest import SAMPLE_TRACES

    a = tracekit.analyze(SAMPLE_TRACES / "cpu_onnx_bert_nsys" / "onnx_b1_s128.nsys.sqlite.gz")
    said = " ".join([*a.warnings, a.no_verdict or ""])
    assert "holds ranges but no GPU or operator activity" in said
    assert "CPU time" not in said


def test_report_md_speaks_of_operators_not_a_device_on_a_cpu_sweep() -> None:
    """report.md on the tour's CPU runs: 'pytorch: at batch 1 the device idles 10.942 ms an iteration, 100% of it
    host-side (dispatch, launch, sync, other API)': a CPU run has no device, and no launch or sync call; the
    time is the gaps between operators, all of it dispatch. A GPU sweep keeps its sentence."""
    from tracekit.renderers.report_markdown import CAUSE_TEXT, cause_text, headroom_lines

    def doc(device: str) -> dict:
        sweep = {
            "runtime": "pytorch",
            "device": device,
            "batch_sizes": [1, 4],
            "gpu_busy_ms": [88.537, 4220.048],
            "headroom_batch_size": 4,
            "idle_by_cause_ms": {"dispatch": [10.942, 63.768], "in_flight": [0.0, 0.0]},
        }
        return {"sweeps": [sweep]}

    assert headroom_lines(doc("cpu")) == [
        "pytorch: at batch 1 no operator runs for 10.942 ms an iteration, 100% of it host-side (dispatch, launch, "
        "sync, other API); up to batch 4 (the free headroom) operator busy grows 88.537 -> 4220.048 ms while the "
        "idle time goes 10.942 -> 63.768 ms: the idle time does not shrink, so the added operator work does not "
        "fill it."
    ]
    [gpu] = headroom_lines(doc("gpu"))
    assert gpu.startswith("pytorch: at batch 1 the device idles 10.942 ms an iteration")
    assert gpu.endswith("so the added device work does not fill it.")
    assert cause_text("operator") == CAUSE_TEXT.format(word="operator") + (
        " On CPU-only traces there is no device and no launch or synchronization call: the time between "
        "operators is all dispatch."
    )
    assert cause_text("GPU") == CAUSE_TEXT.format(word="GPU")


def test_perturbation_sentence_has_one_parenthesis() -> None:
    """The H200 eager sample's report read 'tracing inflated latency up to 1.78x (95% interval 1.74–1.81x)
    (batch 1: 7.94 ms traced vs 4.45 ms untraced, medians)': two parentheses in a row."""

    def rec(low: float | None, high: float | None) -> Recommendation:
        return Recommendation(
            kind="profiler_perturbation",
            runtime="pytorch",
            seq_len=128,
            batch_size=1,
            numbers={"profiler_ratio": 1.7806, "profiler_ratio_low": low, "profiler_ratio_high": high},
            facts={"traced_latency_ms": 7.944, "untraced_latency_ms": 4.4614},
        )

    tail = "the busy/overhead breakdown is from the traced runs, the sweep uses the untraced latency."
    assert describe(rec(1.7412, 1.8107)) == (
        "pytorch (seq 128): tracing inflated latency up to 1.78x (95% interval 1.74–1.81x; batch 1: 7.94 ms "
        f"traced vs 4.46 ms untraced, medians); {tail}"
    )
    assert describe(rec(None, None)) == (
        "pytorch (seq 128): tracing inflated latency up to 1.78x (batch 1: 7.94 ms traced vs 4.46 ms untraced, "
        f"medians); {tail}"
    )
