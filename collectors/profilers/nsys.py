"""Nsight Systems: build the ``nsys profile`` command line, import a left-over ``.qdstrm``, export SQLite.

``nsys profile`` traces the worker process with ``-t nvtx,osrt`` (plus ``cuda`` on a GPU, with CUDA-graph
node tracing and GPU-metrics sampling on the physical GPU that runs the model). CPU sampling and context
switches are off (``--sample=none --cpuctxsw=none``): tracekit reads no samples, and they make reports large.
Some installs (e.g. Debian's nsight-systems 2022.4) cannot find their importer and leave only a ``.qdstrm``;
:func:`finalize` then runs ``QdstrmImporter`` itself before ``nsys export --type sqlite``.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from tracekit.errors import RunFailure, TracekitError

INSTALL_HINT = (
    "nsys (Nsight Systems) not found on PATH; install it: on Debian add the non-free component and run "
    "'apt-get install nsight-systems' (see docs/design.md), or get it from https://developer.nvidia.com/nsight-systems"
)


def find_nsys() -> str | None:
    """The nsys executable (``TRACEKIT_NSYS`` overrides PATH), or None."""
    return os.environ.get("TRACEKIT_NSYS") or shutil.which("nsys")


def require_nsys() -> str:
    nsys = find_nsys()
    if not nsys:
        raise TracekitError(INSTALL_HINT)
    return nsys


def nsys_version(nsys: str) -> str | None:
    """``2022.4.2.1`` from ``nsys --version`` (None when it cannot be run)."""
    try:
        out = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d{4}\.\d+(?:\.\d+)*)", out)
    return match.group(1) if match else None


def build_profile_argv(
    nsys: str,
    output_base: str | Path,
    child: list[str],
    cuda: bool,
    gpu_metrics_device: int | None = None,
    metrics_option: str = "--gpu-metrics-device",
) -> list[str]:
    """The ``nsys profile`` command line that traces ``child`` into ``output_base`` (.nsys-rep added by nsys).

    ``cuda``: also trace CUDA (``-t cuda,nvtx,osrt``) with ``--cuda-graph-trace=node`` so every kernel of a
    graph launch is recorded. ``gpu_metrics_device``: the nsys GPU id to sample GPU metrics on (nsys numbers
    GPUs by PCI bus, like NVML: see :func:`tracekit.collectors.gpu.cuda_device_map`), None = no sampling.
    ``metrics_option``: the spelling the installed nsys accepts (``--gpu-metrics-devices`` from 2023.4 on,
    see :func:`tracekit.collectors.gpu.gpu_metrics_option`).
    """
    argv = [
        nsys,
        "profile",
        "-t",
        "cuda,nvtx,osrt" if cuda else "nvtx,osrt",
        "--sample=none",
        "--cpuctxsw=none",
        "--force-overwrite=true",
        "-o",
        str(output_base),
    ]
    if cuda:
        argv.append("--cuda-graph-trace=node")
        # Record from the worker's cudaProfilerStart (after model build, export, compile and graph capture,
        # before the warm-up) to the end of the process: set-up work stays out of the trace.
        argv += ["--capture-range=cudaProfilerApi", "--capture-range-end=stop"]
        if gpu_metrics_device is not None:
            argv.append(f"{metrics_option}={gpu_metrics_device}")
    return argv + list(child)


def verify_gpu_metrics(sqlite: str | Path, nsys_gpu_id: int) -> tuple[bool | None, str]:
    """Did an exported trace really get GPU-metric samples from GPU ``nsys_gpu_id``?

    ``--gpu-metrics-devices=help`` lists GPUs that cannot be sampled in the same form as those that can, and
    may not show a permission refusal, so the probe's yes is checked on the first real trace: (True, detail)
    when the ``GPU_METRICS`` table holds samples of that GPU (its id is the low byte of ``typeId``), (False,
    why) when it holds none or only other GPUs', (None, why) when the export has no such table (nsys before
    2024 keeps samples in ``GENERIC_EVENTS``: unverified). Read with the standard library, read-only."""
    import sqlite3

    uri = f"file:{Path(sqlite).resolve()}?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        return None, f"unverified: cannot open {Path(sqlite).name} ({exc})"
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "GPU_METRICS" not in tables:
            return None, "unverified: this nsys export keeps no GPU_METRICS table"
        counts = dict(con.execute("SELECT typeId & 255, COUNT(*) FROM GPU_METRICS GROUP BY typeId & 255"))
    except sqlite3.Error as exc:
        return None, f"unverified: {exc}"
    finally:
        con.close()
    if not counts:
        return (
            False,
            "nsys was asked for GPU metrics but the trace holds no sample (not permitted or not supported)",
        )
    if nsys_gpu_id not in counts:
        return False, f"the trace holds GPU-metric samples of GPU {sorted(counts)}, not of GPU {nsys_gpu_id}"
    return True, f"{counts[nsys_gpu_id]} samples from GPU {nsys_gpu_id}"


#: Install roots of distribution packages of Nsight Systems (Debian, RPM).
SYSTEM_ROOTS = ("/usr/lib/nsight-systems", "/usr/lib64/nsight-systems")


def importer_candidates(nsys: str) -> list[Path]:
    """Places QdstrmImporter may live, relative to the nsys install first, then known install roots."""
    real = Path(os.path.realpath(nsys))
    found = [root / "host-linux-x64" / "QdstrmImporter" for root in (real.parent.parent, real.parent)]
    # Nsight Compute's bundled nsys (``.../nsight-compute/<v>/host/target-linux-x64/nsys``, the only nsys of
    # some GPU images) has its importer in a sibling host folder: ``linux-desktop-glibc_2_11_3-x64``
    found.extend(sorted(real.parent.parent.glob("*-x64/QdstrmImporter")))
    found += [Path(root) / "host-linux-x64" / "QdstrmImporter" for root in SYSTEM_ROOTS]
    for pattern in (
        "/opt/nvidia/nsight-systems/*/host-linux-x64/QdstrmImporter",
        "/usr/local/cuda*/nsight-systems*/host-linux-x64/QdstrmImporter",
        "/opt/nvidia/nsight-systems-cli/*/host-linux-x64/QdstrmImporter",
    ):
        found.extend(Path(p) for p in sorted(glob.glob(pattern), reverse=True))
    return found


#: What to do when the importer cannot load a library: Nsight Compute's bundled nsys (an H200 image's only
#: nsys) needed elfutils' libdw.so.1, which that image lacks.
IMPORTER_LIBRARY_HINT = (
    "install the missing library (libdw.so.1: Debian/Ubuntu package libdw1) or put a folder holding it on "
    "LD_LIBRARY_PATH"
)


def find_importer(nsys: str) -> Path | None:
    return next((p for p in importer_candidates(nsys) if p.is_file() and os.access(p, os.X_OK)), None)


def _tail(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "%" not in ln]
    return lines[-1] if lines else "no output"


def finalize(nsys: str, output_base: str | Path) -> tuple[Path, Path]:
    """Make sure ``output_base`` has a report (importing a ``.qdstrm`` when that is all nsys left) and export
    it to SQLite. Returns (report, sqlite). RunFailure when neither a report nor a ``.qdstrm`` exists."""
    base = Path(output_base)
    reports = [base.with_name(base.name + ext) for ext in (".nsys-rep", ".qdrep")]
    report = next((r for r in reports if r.is_file()), None)
    qdstrm = base.with_name(base.name + ".qdstrm")
    if report is None and qdstrm.is_file():
        importer = find_importer(nsys)
        if importer is None:
            raise RunFailure(f"nsys left {qdstrm.name} and no QdstrmImporter was found beside {nsys}")
        proc = subprocess.run([str(importer), "-i", str(qdstrm)], capture_output=True, text=True)
        report = next((r for r in reports if r.is_file()), None)
        if report is None:
            said = proc.stdout + proc.stderr
            raise RunFailure(
                f"QdstrmImporter failed on {qdstrm.name}: {_tail(said)}"
                + (f" ({IMPORTER_LIBRARY_HINT})" if "error while loading shared libraries" in said else "")
            )
    if report is None:
        raise RunFailure(f"nsys wrote no report for {base.name}")
    qdstrm.unlink(missing_ok=True)
    sqlite = base.with_name(base.name + ".sqlite")
    proc = subprocess.run(
        [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(sqlite), str(report)],
        capture_output=True,
        text=True,
    )
    if not sqlite.is_file():
        raise RunFailure(f"nsys export failed on {report.name}: {_tail(proc.stdout + proc.stderr)}")
    return report, sqlite
