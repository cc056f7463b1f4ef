"""What a freshly written Nsight Systems SQLite export holds per timed iteration, without polars.

The nsys counterpart of :mod:`tracekit.collectors.kineto_check`, for the same air-gapped GPU box (torch, no
analysis stack): standard library ``sqlite3`` only, the trace opened read-only. A check of the collection, not
an analysis: ``tracekit analyze`` stays the measurement.

Per ``iteration`` NVTX range (the harness's ranges; ``text`` or a registered string), the CUDA runtime/driver
calls that start inside it are the iteration's launches, and the kernels whose ``correlationId`` matches one
of them the iteration's kernels, wherever they ran on the GPU. Kernels whose launch lies in no iteration are
counted apart: with the warm-up kept out of the capture range there are none. Graph launches are the
``cudaGraphLaunch``/``cuGraphLaunch`` calls (nsys may append a version suffix such as ``_v10000``).
"""

from __future__ import annotations

import gzip
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit.collectors.kineto_check import GRAPH_LAUNCH_PREFIXES

#: The harness's iteration range name.
RANGE_NAME = "iteration"


@dataclass
class NsysSummary:
    """Per-iteration kernel and graph-launch counts of one nsys export, and the trace-wide facts."""

    path: str
    kernels_per_iteration: list[int] = field(default_factory=list)
    graph_launches_per_iteration: list[int] = field(default_factory=list)
    kernels_total: int = 0
    gpu_metric_samples: int | None = None  # None: no GPU_METRICS table

    @property
    def kernels_outside(self) -> int:
        """Kernels launched by a call in no iteration range (the warm-up, when it is in the capture)."""
        return self.kernels_total - sum(self.kernels_per_iteration)

    def to_json(self) -> dict[str, Any]:
        per = self.kernels_per_iteration
        return {
            "path": self.path,
            "iterations": len(per),
            "kernels_per_iteration": {"min": min(per), "max": max(per)} if per else None,
            "graph_launches_per_iteration": sorted(set(self.graph_launches_per_iteration)),
            "kernels_total": self.kernels_total,
            "kernels_outside": self.kernels_outside,
            "gpu_metric_samples": self.gpu_metric_samples,
        }


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def summarize(path: str | Path) -> NsysSummary:
    """Count what each ``iteration`` range of the nsys SQLite export ``path`` launched (a gzipped export,
    ``x.sqlite.gz``, is inflated to a temporary file first and read there)."""
    with open(path, "rb") as fh:
        gzipped = fh.read(2) == b"\x1f\x8b"
    if not gzipped:
        return _summarize(Path(path), str(path))
    with tempfile.TemporaryDirectory(prefix="tracekit-nsys-check-") as folder:
        plain = Path(folder) / "export.sqlite"
        with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        return _summarize(plain, str(path))


def _summarize(path: Path, name: str) -> NsysSummary:
    out = NsysSummary(path=name)
    con = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
    try:
        tables = _tables(con)
        if "NVTX_EVENTS" not in tables:
            return out
        has_text_ids = "StringIds" in tables
        name = "coalesce(n.text, s.value)" if has_text_ids else "n.text"
        join = "LEFT JOIN StringIds s ON n.textId = s.id" if has_text_ids else ""
        ranges = con.execute(
            f"SELECT n.start, n.end FROM NVTX_EVENTS n {join} "
            f"WHERE {name} = ? AND n.end IS NOT NULL ORDER BY n.start",
            (RANGE_NAME,),
        ).fetchall()
        kernels = "CUPTI_ACTIVITY_KIND_KERNEL" in tables
        runtime = "CUPTI_ACTIVITY_KIND_RUNTIME" in tables  # (graph launches also need the call names)
        if kernels:
            out.kernels_total = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        if "GPU_METRICS" in tables:
            out.gpu_metric_samples = con.execute("SELECT count(*) FROM GPU_METRICS").fetchone()[0]
        graph = " OR ".join("s.value LIKE ?" for _ in GRAPH_LAUNCH_PREFIXES)
        for start, end in ranges:
            n_kernels = n_graphs = 0
            if runtime and kernels:
                n_kernels = con.execute(
                    "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE k.correlationId IN ("
                    "SELECT r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.start BETWEEN ? AND ?)",
                    (start, end),
                ).fetchone()[0]
            if runtime and has_text_ids:
                n_graphs = con.execute(
                    "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON r.nameId = s.id "
                    f"WHERE r.start BETWEEN ? AND ? AND ({graph})",
                    (start, end, *(p + "%" for p in GRAPH_LAUNCH_PREFIXES)),
                ).fetchone()[0]
            out.kernels_per_iteration.append(n_kernels)
            out.graph_launches_per_iteration.append(n_graphs)
    finally:
        con.close()
    return out
