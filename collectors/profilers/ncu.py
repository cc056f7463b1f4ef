"""Nsight Compute: profile only the kernels inside the timed ``iteration`` NVTX ranges, with only the metrics
tracekit uses, then export the raw page to CSV beside the report."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tracekit.errors import RunFailure, TracekitError

#: The metrics collected (docs/design.md): SM activity and warp occupancy per kernel, plus what weights them.
NCU_METRICS: tuple[str, ...] = (
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__cycles_active.avg",
    "sm__cycles_elapsed.avg",
    "gpu__time_duration.sum",
)

INSTALL_HINT = (
    "ncu (Nsight Compute) not found on PATH; install it with the CUDA toolkit (package nsight-compute) or from "
    "https://developer.nvidia.com/nsight-compute, and make sure it can access the GPU's performance counters"
)


def find_ncu() -> str | None:
    return os.environ.get("TRACEKIT_NCU") or shutil.which("ncu")


def require_ncu() -> str:
    ncu = find_ncu()
    if not ncu:
        raise TracekitError(INSTALL_HINT)
    return ncu


#: Timed iterations run under ncu (every kernel is replayed once per metric pass: seconds per kernel).
NCU_ITERATIONS = 3


def build_profile_argv(
    ncu: str,
    output_base: str | Path,
    child: list[str],
    range_name: str = "iteration",
    max_kernels: int | None = None,
) -> list[str]:
    """``ncu`` restricted to kernels inside push/pop NVTX ranges named ``range_name`` (``NAME/`` syntax).

    The worker runs only :data:`NCU_ITERATIONS` timed iterations under ncu, so the NVTX filter alone bounds
    the kernels to those iterations' (every one of them: a fixed ``--launch-count`` cut off the third
    iteration of a model launching more than a third of it per iteration, such as GPT-2 generation's ~1.4k).
    ``max_kernels`` (``--launch-count``, counted after the filter) is added only when given."""
    limit = ["--launch-count", str(max_kernels)] if max_kernels else []
    return [
        ncu,
        "--nvtx",
        "--nvtx-include",
        f"{range_name}/",
        *limit,
        # The GPU's own clocks, as in the untraced and timeline runs (ncu's default locks base clocks).
        "--clock-control",
        "none",
        "--metrics",
        ",".join(NCU_METRICS),
        "--target-processes",
        "all",
        "--force-overwrite",
        "-o",
        str(output_base),
        *child,
    ]


def build_csv_argv(ncu: str, report: str | Path) -> list[str]:
    """``ncu --import REPORT --csv --page raw`` (written to stdout)."""
    return [ncu, "--import", str(report), "--csv", "--page", "raw"]


def no_report_reason(log_text: str) -> str:
    """One line for "ncu wrote no report": ncu's first error line from its log, else a generic line."""
    from tracekit.collectors.gpu import first_error_line

    err = first_error_line(log_text)
    return f"ncu wrote no report: {err}" if err else "ncu wrote no report (no ==ERROR== line in its log)"


def export_csv(ncu: str, report: Path, csv_path: Path) -> None:
    proc = subprocess.run(build_csv_argv(ncu, report), capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RunFailure(f"ncu --import failed on {report.name}: {last}")
    import gzip

    with gzip.open(csv_path, "wt", encoding="utf-8", compresslevel=9) as fh:  # ~15x smaller
        fh.write(proc.stdout)
