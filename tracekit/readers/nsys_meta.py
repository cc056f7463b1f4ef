"""What an Nsight Systems SQLite export says about itself and its target: export version, driver and CUDA
versions, the GPUs (CUDA device id, name, PerfWorks id) and whether the file is synthetic. See
:mod:`tracekit.readers.nsys_sqlite` for the ``meta`` keys.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.model import busiest_gpu_name
from tracekit.readers.sqlite_engine import Database, quote


def per_process_numbering(export: Database) -> dict[tuple[int, int], int] | None:
    """(pid, CUDA device id) -> nsys GPU id (``TARGET_INFO_GPU.id``) from ``TARGET_INFO_CUDA_DEVICE``, when
    the traced processes number their GPUs differently: one CUDA id stands for two GPUs, or one GPU has two
    CUDA ids (each rank started with its own ``CUDA_VISIBLE_DEVICES``, so every rank's kernels say device 0).
    None when one numbering serves every process (or the export does not say): CUDA ids are then the
    devices."""
    t = "TARGET_INFO_CUDA_DEVICE"
    if not export.has(t) or not {"gpuId", "cudaId", "pid"} <= export.columns(t):
        return None
    rows = export.con.execute(
        f'SELECT DISTINCT "pid", "cudaId", "gpuId" FROM {quote(t)} '
        'WHERE "gpuId" IS NOT NULL AND "cudaId" IS NOT NULL AND "pid" IS NOT NULL'
    ).fetchall()
    # the OS pid (a serialized globalPid, as the activity tables write it, is read as its pid bits)
    rows = [
        (pid if pid <= 0xFFFFFF else (pid >> 24) & 0xFFFFFF, cuda, gpu)
        for pid, cuda, gpu in rows
        if all(isinstance(v, int) for v in (pid, cuda, gpu))
    ]
    gpus_of: dict[int, set[int]] = {}
    cudas_of: dict[int, set[int]] = {}
    for _, cuda, gpu in rows:
        gpus_of.setdefault(cuda, set()).add(gpu)
        cudas_of.setdefault(gpu, set()).add(cuda)
    if all(len(v) == 1 for v in gpus_of.values()) and all(len(v) == 1 for v in cudas_of.values()):
        return None
    by_key: dict[tuple[int, int], set[int]] = {}
    for pid, cuda, gpu in rows:
        by_key.setdefault((pid, cuda), set()).add(gpu)
    # a (pid, CUDA id) said to be two GPUs (pid reuse within the capture) tells nothing: left out
    return {k: next(iter(v)) for k, v in by_key.items() if len(v) == 1}


def _as_int(value: Any) -> int | None:
    """``value`` as an int (an integer, or a string of one), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def _as_name(value: Any) -> str | None:
    """A GPU name as text: a str as it is; bytes (a BLOB in a damaged export's TEXT column) decoded as UTF-8,
    undecodable bytes replaced; anything else (a number in GpuInfo's JSON) None: no name. Kept as bytes or an
    int, it had failed analyze's headline and its JSON output (an internal error)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace").rstrip("\x00") or None
    return None


#: The GPU table of nsys 2021.1 and before (``deviceId``, ``name``, ...), TARGET_INFO_GPU's predecessor (NVIDIA's
#: own 2021.1 report scripts join it to the kernels ``USING(deviceId)``).
EARLY_GPU_TABLE = "TARGET_INFO_CUDA_GPU"


def gpu_table(
    export: Database, env: dict[str, str], numbering: dict[tuple[int, int], int] | None = None
) -> list[dict[str, Any]]:
    """GPUs of the target: [{id (CUDA device id), name, pw (PerfWorks id), used}]. ``used`` is False for a GPU
    that no traced process had as a CUDA device where the export says which it had (TARGET_INFO_CUDA_DEVICE):
    its ``id`` is then a guess (``cuDevice``, else its nsys id) that may be a used GPU's CUDA id, so samples of
    it must not be read as that GPU's (:func:`tracekit.readers.nsys_sqlite` maps them to no device).
    With ``numbering`` (:func:`per_process_numbering`: the processes number their GPUs differently) every
    ``id`` is the nsys GPU id instead, the id the reader then gives the ops, and ``used`` says whether a
    process had the GPU."""
    rows: list[dict[str, Any]] = []
    if export.has("TARGET_INFO_GPU") and "id" in export.columns("TARGET_INFO_GPU"):
        t = "TARGET_INFO_GPU"
        sql = (
            f'SELECT "id", {export.col(t, "name")}, {export.col(t, "pwGpuId")}, {export.col(t, "cuDevice")}, '
            f'{export.col(t, "uuid")} FROM {quote(t)} ORDER BY "id"'
        )
        rows = [
            {"gid": r[0], "name": r[1], "pw": r[2], "cu": r[3], "uuid": r[4]}
            for r in export.con.execute(sql).fetchall()
        ]
    elif export.has(EARLY_GPU_TABLE) and {"deviceId", "name"} <= export.columns(EARLY_GPU_TABLE):
        # nsys 2021.1 and before: one row per CUDA device, keyed by the kernels' deviceId
        t = EARLY_GPU_TABLE
        sql = f'SELECT DISTINCT "deviceId", "name" FROM {quote(t)} ORDER BY "deviceId"'
        rows = [
            {"gid": r[0], "name": r[1], "pw": None, "cu": r[0]} for r in export.con.execute(sql).fetchall()
        ]
    elif env.get("GpuInfo"):
        try:
            info = json.loads(env["GpuInfo"])
        except ValueError:
            info = {}
        gpus = info.get("Gpus", []) if isinstance(info, dict) else []
        rows = [
            {"gid": g.get("Id"), "name": g.get("Name"), "pw": g.get("PwGpuId"), "cu": g.get("CuDevice")}
            for g in gpus
            if isinstance(g, dict) and g.get("Id") is not None
        ]
    # ids as integers (a JSON GpuInfo may spell them as strings); a GPU whose id is no integer is left out,
    # a PerfWorks id or cuDevice that is none is unknown (one line of a damaged table had stopped the read)
    rows = [
        {
            **r,
            "gid": _as_int(r["gid"]),
            "name": _as_name(r["name"]),
            "pw": _as_int(r["pw"]),
            "cu": _as_int(r["cu"]),
        }
        for r in rows
        if _as_int(r["gid"]) is not None
    ]
    if not rows:
        return []
    if numbering is not None:
        used = set(numbering.values())
        return [
            {
                "id": int(r["gid"]),
                "name": r["name"],
                "pw": r["pw"] if r["pw"] is not None else r["gid"],
                "used": r["gid"] in used,
            }
            for r in rows
        ]
    cuda_of: dict[Any, Any] = {}
    if export.has("TARGET_INFO_CUDA_DEVICE") and {"gpuId", "cudaId"} <= export.columns(
        "TARGET_INFO_CUDA_DEVICE"
    ):
        pairs = set(
            export.con.execute('SELECT DISTINCT "gpuId", "cudaId" FROM TARGET_INFO_CUDA_DEVICE').fetchall()
        )
        by_gpu: dict[Any, set[Any]] = {}
        for gpu_id, cuda_id in pairs:
            by_gpu.setdefault(gpu_id, set()).add(cuda_id)
        if all(len(v) == 1 for v in by_gpu.values()) and len({next(iter(v)) for v in by_gpu.values()}) == len(
            by_gpu
        ):
            cuda_of = {k: next(iter(v)) for k, v in by_gpu.items()}
    cus = [r["cu"] for r in rows]
    cu_distinct = None not in cus and len(set(cus)) == len(cus)
    if not cuda_of and len(rows) > 1:
        cuda_of = _visible_devices(export, rows, cu_distinct)
    out = []
    for r in rows:
        cuda = _as_int(cuda_of.get(r["gid"], r["cu"] if cu_distinct else r["gid"]))
        if cuda is None:
            cuda = r["gid"]
        out.append(
            {
                "id": int(cuda),
                "name": r["name"],
                "pw": r["pw"] if r["pw"] is not None else r["gid"],
                "used": not cuda_of or r["gid"] in cuda_of,
            }
        )
    return out


#: ``META_DATA_CAPTURE`` rows holding the launched processes' environment (``PROCESS_0:ENVIRONMENT_VARIABLE``,
#: value ``NAME="value"``; the real 2024.6 to 2026.2 exports).
LAUNCH_ENV_ROW = "PROCESS_%:ENVIRONMENT_VARIABLE"


def _visible_devices(export: Database, rows: list[dict[str, Any]], cu_distinct: bool) -> dict[Any, int]:
    """{nsys GPU id: the launched process's CUDA id} from the ``CUDA_VISIBLE_DEVICES`` its launch set
    (META_DATA_CAPTURE, :data:`LAUNCH_ENV_ROW`), for an export that does not say which GPU each process had
    (no TARGET_INFO_CUDA_DEVICE, as in the real 2024.6 export): the process's CUDA device i is the i-th GPU
    listed, by ``cuDevice`` (an index) or ``uuid`` (a "GPU-..." UUID or a unique prefix of one). Without it the
    process's device 0 was read as the box's GPU 0 (another GPU's name, and its metric samples: SMs active 5% of
    an idle GPU for 80%). {} when no launch sets it, launches set it differently, or an entry names no single
    GPU of the table (a MIG instance's "MIG-..." UUID among them): the ids stay as they were."""
    t = "META_DATA_CAPTURE"
    if not export.has(t) or not {"name", "value"} <= export.columns(t):
        return {}
    values = {
        str(v[0]).split("=", 1)[1].strip().strip('"').strip()
        for v in export.con.execute(
            # GLOB, not LIKE, for the variable: LIKE ignores case, and CUDA reads CUDA_VISIBLE_DEVICES only
            f'SELECT DISTINCT "value" FROM {quote(t)} WHERE "name" LIKE ? AND "value" GLOB ?',
            (LAUNCH_ENV_ROW, "CUDA_VISIBLE_DEVICES=*"),
        ).fetchall()
        if isinstance(v[0], str)
    }
    if len(values) != 1:
        return {}
    tokens = [x.strip() for x in next(iter(values)).split(",")]
    if not tokens or not all(tokens):
        return {}
    found: dict[Any, int] = {}
    for index, token in enumerate(tokens):
        if re.fullmatch(r"\d+", token):
            match = [r for r in rows if cu_distinct and r["cu"] == int(token)]
        elif token.upper().startswith("GPU-"):
            match = [
                r
                for r in rows
                if isinstance(r.get("uuid"), str) and r["uuid"].lower().startswith(token.lower())
            ]
        else:
            return {}
        if len(match) != 1 or match[0]["gid"] in found:
            return {}
        found[match[0]["gid"]] = index
    return found


def export_meta(
    export: Database,
    path: Path,
    env: dict[str, str],
    gpus: list[dict[str, Any]],
    gpu_ops: pl.DataFrame | None,
) -> dict[str, Any]:
    """``meta`` of the trace (see :mod:`tracekit.readers.nsys_sqlite`) but ``device`` and ``warnings``:
    format and version, synthetic flag, driver versions, GPUs, and the name of the GPU that ran most of
    ``gpu_ops`` (None: a CPU-only trace, no GPU named)."""
    info = {**export.key_values("EXPORT_META_DATA"), **export.key_values("META_DATA_EXPORT")}
    meta: dict[str, Any] = {"path": str(path), "format": "nsys-sqlite"}
    if info.get("EXPORT_PRODUCT_VERSION"):
        meta["format_version"] = info["EXPORT_PRODUCT_VERSION"]
    if info.get("EXPORT_SCHEMA_VERSION"):
        meta["export_schema_version"] = info["EXPORT_SCHEMA_VERSION"]
    synthetic = info.get("TRACEKIT_SYNTHETIC") == "1" or "synthetic" in path.name.lower()
    meta["synthetic"] = synthetic
    driver = env.get("NvDriverVersion", "")
    if re.fullmatch(r"\d{8}", driver):  # nsys 2022.4 writes 470.161.03 as "47016103"
        driver = f"{driver[:3]}.{int(driver[3:6])}.{driver[6:]}"
    if driver and driver != "0":
        meta["driver"] = driver
    cuda = env.get("CudaDriverVersion", "")
    if re.fullmatch(r"\d{4,6}", cuda) and int(cuda) > 0:
        meta["cuda_driver"] = f"{int(cuda) // 1000}.{int(cuda) % 1000 // 10}"
    if gpus:
        # An unused GPU whose guessed CUDA id (:func:`gpu_table`) is a used GPU's is not that GPU: listed after
        # it, its name had replaced the used one's (CUDA_VISIBLE_DEVICES=2,0 on a box with a T4 as GPU 1: the
        # A100 that ran the kernels as CUDA device 1 was named 'Tesla T4').
        used = {g["id"] for g in gpus if g.get("used", True)}
        listed = [g for g in gpus if g.get("used", True) or g["id"] not in used]
        meta["gpus"] = [{"id": g["id"], "name": g["name"]} for g in listed]
        names = {g["id"]: g["name"] for g in listed}
        gpu_name = None
        if gpu_ops is not None:
            gpu_name = busiest_gpu_name(gpu_ops, names)
        if gpu_name is None and gpu_ops is not None and len(set(names.values())) == 1:
            gpu_name = next(iter(names.values()))
        if gpu_name:
            meta["gpu"] = gpu_name
    base = session_start_epoch_ns(export)
    if base is not None:
        meta["wall_clock_base_ns"] = base
    return meta


#: A session start before this (2001-09-09, 10^18 ns since the epoch) is no wall-clock time (a zeroed field).
EPOCH_NS_MIN = 10**18


def session_start_epoch_ns(export: Database) -> int | None:
    """The wall-clock time (ns since the Unix epoch, UTC) of the export's timestamp 0: nsys writes every
    timestamp as ns since the session's start and the start itself as ``TARGET_INFO_SESSION_START_TIME.
    utcEpochNs``; None without that table or with a value that is no plausible wall-clock time. What lets
    traces of other captures be told apart from one capture's ranks (:func:`tracekit.analyzers.ranks.
    captured_apart`): good to the host clock's accuracy, far finer than the seconds it is used at."""
    table = "TARGET_INFO_SESSION_START_TIME"
    if not export.has(table) or "utcEpochNs" not in export.columns(table):
        return None
    rows = export.con.execute(f'SELECT DISTINCT "utcEpochNs" FROM {table}').fetchall()
    values = {_as_int(r[0]) for r in rows}
    if len(values) != 1:
        return None
    (value,) = values
    return value if value is not None and value >= EPOCH_NS_MIN else None
