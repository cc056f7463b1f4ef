"""The memory ceiling (``--max-memory``) in a many-trace run: each pool worker holds at most its share, and a
trace that passes it fails alone, in one line saying the limit, while the others go on."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_TRACES
from tracekit import limits
from tracekit.fleet import run

SYN = SAMPLE_TRACES / "synthetic"
TRACES = [
    SYN / "table3_onnx" / "onnx_b1_s128.synthetic.json.gz",
    SYN / "table3_pytorch" / "pytorch_b1_s128.synthetic.json.gz",
]


def test_each_worker_gets_its_share_of_the_ceiling_after_the_commands_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "current", limits.current._replace(max_memory=1000 << 20))
    monkeypatch.setattr(limits, "rss", lambda pid="self": 100 << 20)
    two = run.worker_ceiling(2, str(tmp_path))
    assert two is not None and two.limit == 450 << 20
    assert two.share == "a worker's share of the 1000 MiB ceiling with 2 traces at a time"
    alone = run.worker_ceiling(1, str(tmp_path))
    assert alone is not None and alone.limit == 900 << 20
    assert alone.share == "what the 1000 MiB ceiling leaves a worker beside the command's 100 MiB"
    monkeypatch.setattr(limits, "current", limits.current._replace(max_memory=None))
    assert run.worker_ceiling(2, str(tmp_path)) is None  # the API sets no ceiling


def test_a_worker_past_its_ceiling_leaves_its_line_for_the_command_and_ends(tmp_path: Path) -> None:
    note = tmp_path / "note"
    code = (
        "import time; from tracekit import limits; "
        f"limits.start_memory_ceiling(1, note={str(note)!r}, share='a test share'); time.sleep(10)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 2 and done.stderr == b""
    text = note.read_text()
    assert re.fullmatch(
        r"memory use passed 1 B, a test share \(\d+(\.\d+)? MiB in use\); pass --max-memory SIZE to allow more",
        text,
    ), text
    assert run.death_note(str(tmp_path), "x") is None  # (notes are found by the trace's path)


def test_traces_past_the_workers_ceiling_fail_alone_in_one_line_each(tmp_path: Path) -> None:
    """A ceiling above what the command holds (~60 MB resident) but below what a worker holds once it has
    imported the analysis (~90 MB): both traces fail, each in one line saying the limit and whose share it
    is (their alone retry: the whole ceiling after the command's memory); no traceback, exit 2 (none could
    be analyzed)."""
    done = subprocess.run(
        [sys.executable, "-m", "tracekit.cli", "analyze", *map(str, TRACES), "--jobs", "2"]
        + ["--max-memory", "100M", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 3 and "Traceback" not in done.stderr
    for trace, line in zip(TRACES, lines[:2], strict=True):
        assert re.fullmatch(
            rf"tracekit: {re.escape(str(trace))}: memory use passed [\d.]+ MiB, what the 100 MiB ceiling leaves a "
            r"worker beside the command's [\d.]+ MiB \([\d.]+ MiB in use\); pass --max-memory SIZE to allow more",
            line,
        ), line
    assert lines[2].startswith("tracekit: none of the 2 traces could be analyzed")


def test_a_ceiling_with_room_gives_the_answer_of_none(tmp_path: Path) -> None:
    import json

    def table(*extra: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-m", "tracekit.cli", "analyze", *map(str, TRACES), "--jobs", "2"]
            + ["--format", "json", "--no-progress", *extra],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert table("--max-memory", "8G")["rows"] == table()["rows"]


def test_the_commands_own_ceiling_ends_its_pool_workers_with_it(tmp_path: Path) -> None:
    """Past the command's own ceiling the program ends at once; the processes it started through
    multiprocessing (a pool's workers, forked by the fork server) end with it. Before, they outlived it,
    holding its standard error open: a caller reading it (this test, a pipeline) waited for ever."""
    code = (
        "import multiprocessing, time\n"
        "from tracekit import limits\n"
        "if __name__ == '__main__':\n"
        "    worker = multiprocessing.get_context('forkserver').Process(target=time.sleep, args=(120,))\n"
        "    worker.start()\n"
        "    print(worker.pid, flush=True)\n"
        "    limits.start_memory_ceiling(1)\n"
        "    time.sleep(120)\n"
    )
    script = tmp_path / "ceiling.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "memory use passed 1 B" in done.stderr
    pid = int(done.stdout.split()[0])
    import os
    import time

    for _ in range(50):  # (SIGKILL is immediate; the zombie's reaping by init may take a moment)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"pool process {pid} outlived the program")
