"""Build small hand-made Nsight Systems SQLite exports for tests.

Tables, column names, types and NOT NULL constraints follow real ``nsys export --type sqlite`` output
(copied from exports by nsys 2022.4.2, 2024.6.2 and 2026.2.1, and the 2025/2026 schema reference for
``GPU_METRICS`` / ``TARGET_INFO_GPU_METRICS``). Only the tables a test asks for are written, so a test can
also leave tables out. Conventions of the real exports that the builder reproduces:

- ``globalPid = pid << 24`` and ``globalTid = (pid << 24) | tid`` (nsys's serialized GlobalId, vm id 0).
- Names are ids into ``StringIds`` (kernels' ``demangledName``/``shortName``, API ``nameId``, NVTX ``textId``).
- CUDA runtime and driver calls both go to ``CUPTI_ACTIVITY_KIND_RUNTIME`` (``eventClass`` 0 = runtime,
  1 = driver, 67 = the "CUDA backtrace" duplicate that nsys 2022.4 writes); runtime names carry ``_vNNNN``.
- NVTX: eventType 59 push/pop, 60 start/end, 34 mark, 39 thread name, 75 domain create.
- GPU metrics, nsys 2024+: ``GPU_METRICS(rawTimestamp, timestamp, typeId, metricId, value)`` with names in
  ``TARGET_INFO_GPU_METRICS(typeId, sourceId, typeName, metricId, metricName)``; ``typeId`` is
  ``0x1000100000000 | pwGpuId``. nsys 2022.x/2023.x: one ``GENERIC_EVENTS`` row per sample, ``data`` a JSON
  object {metric name: value as a string}, its ``typeId`` described in ``GENERIC_EVENT_TYPES`` whose source in
  ``GENERIC_EVENT_SOURCES`` is named "GpuMetrics" (2022.4 leaves ``timestamp`` null; ``rawTimestamp`` holds
  session nanoseconds).

Usage::

    b = NsysBuilder()
    b.gpu(0, "NVIDIA H100")
    b.runtime(100, 150, "cudaLaunchKernel_v7000", correlation=1)
    b.kernel(160, 200, "gemm", correlation=1)
    b.nvtx_range(90, 300, "iteration")
    path = b.write(tmp_path / "t.sqlite")
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

GPU_METRICS_TYPE_BASE = 0x1000100000000

#: ENUM_CUDA_MEM_KIND of the real exports (nsys 2022.4 to 2026.2): id -> label
MEM_KINDS: dict[int, str] = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
    6: "Managed Static",
    7: "Unknown",
}

# (column, SQL type, NOT NULL) in the order real exports use.
_Col = tuple[str, str, bool]

#: The columns every CUPTI activity table (kernel, memcpy, memset, graph trace) begins with.
_ACTIVITY_COLUMNS: list[_Col] = [
    ("start", "INTEGER", True),
    ("end", "INTEGER", True),
    ("deviceId", "INTEGER", True),
    ("contextId", "INTEGER", True),
    ("greenContextId", "INTEGER", False),
    ("streamId", "INTEGER", True),
    ("correlationId", "INTEGER", False),
    ("globalPid", "INTEGER", False),
]

TABLES: dict[str, list[_Col]] = {
    "StringIds": [("id", "INTEGER", True), ("value", "TEXT", True)],
    "CUPTI_ACTIVITY_KIND_KERNEL": [
        *_ACTIVITY_COLUMNS,
        ("demangledName", "INTEGER", True),
        ("shortName", "INTEGER", True),
        ("mangledName", "INTEGER", False),
        ("launchType", "INTEGER", False),
        ("cacheConfig", "INTEGER", False),
        ("registersPerThread", "INTEGER", True),
        ("gridX", "INTEGER", True),
        ("gridY", "INTEGER", True),
        ("gridZ", "INTEGER", True),
        ("blockX", "INTEGER", True),
        ("blockY", "INTEGER", True),
        ("blockZ", "INTEGER", True),
        ("staticSharedMemory", "INTEGER", True),
        ("dynamicSharedMemory", "INTEGER", True),
        ("localMemoryPerThread", "INTEGER", True),
        ("localMemoryTotal", "INTEGER", True),
        ("gridId", "INTEGER", True),
        ("sharedMemoryExecuted", "INTEGER", False),
        ("graphNodeId", "INTEGER", False),
        ("sharedMemoryLimitConfig", "INTEGER", False),
        ("graphId", "INTEGER", False),
    ],
    "CUPTI_ACTIVITY_KIND_MEMCPY": [
        *_ACTIVITY_COLUMNS,
        ("bytes", "INTEGER", True),
        ("copyKind", "INTEGER", True),
        ("deprecatedSrcId", "INTEGER", False),
        ("srcKind", "INTEGER", False),
        ("dstKind", "INTEGER", False),
        ("srcDeviceId", "INTEGER", False),
        ("srcContextId", "INTEGER", False),
        ("dstDeviceId", "INTEGER", False),
        ("dstContextId", "INTEGER", False),
        ("migrationCause", "INTEGER", False),
        ("graphNodeId", "INTEGER", False),
        ("virtualAddress", "INTEGER", False),
    ],
    "CUPTI_ACTIVITY_KIND_MEMSET": [
        *_ACTIVITY_COLUMNS,
        ("value", "INTEGER", True),
        ("bytes", "INTEGER", True),
        ("graphNodeId", "INTEGER", False),
        ("memKind", "INTEGER", False),
    ],
    # --cuda-graph-trace=graph (nsys's default with CUDA 11.7+): one row per graph execution; the columns of a
    # real nsys 2024.3 export
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE": [
        *_ACTIVITY_COLUMNS,
        ("graphId", "INTEGER", False),
        ("graphExecId", "INTEGER", False),
    ],
    # graphs launched from the device (CUPTI 12.x ``CUpti_ActivityDeviceGraphTrace``); no export seen holds
    # it: the columns are the graph-trace table's, to test what a table the reader does not read does
    "CUPTI_ACTIVITY_KIND_DEVICE_GRAPH_TRACE": [
        *_ACTIVITY_COLUMNS,
        ("graphId", "INTEGER", False),
    ],
    "CUPTI_ACTIVITY_KIND_RUNTIME": [
        ("start", "INTEGER", True),
        ("end", "INTEGER", True),
        ("eventClass", "INTEGER", True),
        ("globalTid", "INTEGER", False),
        ("correlationId", "INTEGER", False),
        ("nameId", "INTEGER", True),
        ("returnValue", "INTEGER", True),
        ("callchainId", "INTEGER", False),
    ],
    "NVTX_EVENTS": [
        ("start", "INTEGER", True),
        ("end", "INTEGER", False),
        ("eventType", "INTEGER", True),
        ("rangeId", "INTEGER", False),
        ("category", "INTEGER", False),
        ("color", "INTEGER", False),
        ("text", "TEXT", False),
        ("globalTid", "INTEGER", False),
        ("endGlobalTid", "INTEGER", False),
        ("textId", "INTEGER", False),
        ("domainId", "INTEGER", False),
        ("uint64Value", "INTEGER", False),
        ("int64Value", "INTEGER", False),
        ("doubleValue", "REAL", False),
        ("uint32Value", "INTEGER", False),
        ("int32Value", "INTEGER", False),
        ("floatValue", "REAL", False),
        ("jsonTextId", "INTEGER", False),
        ("jsonText", "TEXT", False),
        ("binaryData", "TEXT", False),
    ],
    "TARGET_INFO_GPU": [
        ("vmId", "INTEGER", True),
        ("id", "INTEGER", True),
        ("name", "TEXT", False),
        ("busLocation", "TEXT", False),
        ("isDiscrete", "INTEGER", False),
        ("smCount", "INTEGER", False),
        ("pwGpuId", "INTEGER", False),
        ("uuid", "TEXT", False),
        ("chipName", "TEXT", False),
        ("cuDevice", "INTEGER", False),
    ],
    "TARGET_INFO_SYSTEM_ENV": [
        ("globalVid", "INTEGER", False),
        ("devStateName", "TEXT", True),
        ("name", "TEXT", True),
        ("nameEnum", "INTEGER", True),
        ("value", "TEXT", True),
    ],
    # which GPU (TARGET_INFO_GPU.id) each process had as which CUDA device (nsys 2023+)
    "TARGET_INFO_CUDA_DEVICE": [
        ("gpuId", "INTEGER", False),
        ("cudaId", "INTEGER", True),
        ("pid", "INTEGER", True),
    ],
    "ANALYSIS_DETAILS": [
        ("globalVid", "INTEGER", True),
        ("duration", "INTEGER", True),
        ("startTime", "INTEGER", True),
        ("stopTime", "INTEGER", True),
    ],
    "ENUM_NSYS_EVENT_TYPE": [("id", "INTEGER", True), ("name", "TEXT", False), ("label", "TEXT", False)],
    "ENUM_NSYS_EVENT_CLASS": [("id", "INTEGER", True), ("name", "TEXT", False), ("label", "TEXT", False)],
    "ENUM_CUDA_MEM_KIND": [("id", "INTEGER", True), ("name", "TEXT", False), ("label", "TEXT", False)],
    # nsys's own time on the application's threads (the columns of the real 2024.6 and 2025.1 exports)
    "PROFILER_OVERHEAD": [
        ("start", "INTEGER", True),
        ("end", "INTEGER", True),
        ("globalTid", "INTEGER", False),
        ("nameId", "INTEGER", True),
        ("returnValue", "INTEGER", True),
    ],
    "META_DATA_EXPORT": [("name", "TEXT", True), ("value", "TEXT", False)],
    # what the capture traced (CAPTURE_EVENT_TYPE rows: "NvtxEvents", "Cuda", ...; nsys 2024.6 to 2026.2)
    "META_DATA_CAPTURE": [("name", "TEXT", True), ("value", "TEXT", False)],
    "EXPORT_META_DATA": [("name", "TEXT", True), ("value", "TEXT", False)],
    "TARGET_INFO_GPU_METRICS": [
        ("typeId", "INTEGER", True),
        ("sourceId", "INTEGER", True),
        ("typeName", "TEXT", True),
        ("metricId", "INTEGER", True),
        ("metricName", "TEXT", True),
    ],
    "GPU_METRICS": [
        ("rawTimestamp", "INTEGER", True),
        ("timestamp", "INTEGER", True),
        ("typeId", "INTEGER", True),
        ("metricId", "INTEGER", True),
        ("value", "INTEGER", True),
    ],
    "GENERIC_EVENT_SOURCES": [("sourceId", "INTEGER", True), ("data", "TEXT", True)],
    "GENERIC_EVENT_TYPES": [
        ("typeId", "INTEGER", True),
        ("sourceId", "INTEGER", True),
        ("data", "TEXT", True),
    ],
    "GENERIC_EVENTS": [
        ("rawTimestamp", "INTEGER", True),
        ("timestamp", "INTEGER", False),
        ("typeId", "INTEGER", True),
        ("data", "TEXT", True),
    ],
    # nsys 2021.1 and before: the GPUs by CUDA device id (TARGET_INFO_GPU's predecessor; the columns NVIDIA's
    # 2021.1 report scripts and other readers of such exports use)
    "TARGET_INFO_CUDA_GPU": [
        ("deviceId", "INTEGER", True),
        ("name", "TEXT", False),
        ("numMultiprocessors", "INTEGER", False),
        ("computeCapabilityMajor", "INTEGER", False),
    ],
}

#: Columns a real export fills that tests rarely care about.
_DEFAULTS: dict[str, Any] = {
    "contextId": 1,
    "registersPerThread": 32,
    "gridX": 1,
    "gridY": 1,
    "gridZ": 1,
    "blockX": 128,
    "blockY": 1,
    "blockZ": 1,
    "returnValue": 0,
    "bytes": 0,
}


def _column_ddl(table: str, name: str, sql_type: str, not_null: bool) -> str:
    key = " PRIMARY KEY" if (table, name) == ("StringIds", "id") else ""
    return f'"{name}" {sql_type}{" NOT NULL" if not_null else ""}{key}'


def global_tid(pid: int, tid: int) -> int:
    """nsys serialized GlobalId of a thread (vm id 0)."""
    return (pid << 24) | tid


def global_pid(pid: int) -> int:
    """nsys serialized GlobalId of a process (vm id 0)."""
    return pid << 24


class NsysBuilder:
    """Collects rows, then writes them as an nsys-schema SQLite file.

    ``version`` goes to EXPORT_PRODUCT_VERSION; ``meta_table`` is "META_DATA_EXPORT" (2023+) or
    "EXPORT_META_DATA" (2022.x), or None for no metadata table. ``drop_columns`` removes columns from tables
    (e.g. {"CUPTI_ACTIVITY_KIND_KERNEL": ["graphId"]} for a pre-2024 kernel table).
    """

    def __init__(
        self,
        version: str = "2024.6.2.25",
        meta_table: str | None = "META_DATA_EXPORT",
        drop_columns: dict[str, list[str]] | None = None,
    ) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self.strings: dict[str, int] = {}
        self.meta_table = meta_table
        self.drop_columns = drop_columns or {}
        self.force_tables: set[str] = set()
        if meta_table:
            self.meta("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems")
            self.meta("EXPORT_PRODUCT_VERSION", version)

    # --- basics
    def add(self, table: str, **values: Any) -> None:
        self.rows.setdefault(table, []).append(values)

    def table(self, name: str) -> None:
        """Write table ``name`` even when it gets no rows."""
        self.force_tables.add(name)

    def string(self, value: str) -> int:
        """Id of ``value`` in StringIds (added on first use)."""
        if value not in self.strings:
            self.strings[value] = len(self.strings) + 1
        return self.strings[value]

    def meta(self, name: str, value: str) -> None:
        if self.meta_table:
            self.add(self.meta_table, name=name, value=value)

    def env(self, name: str, value: str) -> None:
        self.add("TARGET_INFO_SYSTEM_ENV", globalVid=0, devStateName="", name=name, nameEnum=0, value=value)

    # --- GPU work
    def _activity(
        self,
        table: str,
        start: int,
        end: int,
        device: int,
        stream: int,
        correlation: int | None,
        pid: int,
        **values: Any,
    ) -> None:
        """A row of a CUPTI activity table: the columns every one of them has, and ``values``."""
        self.add(
            table,
            start=start,
            end=end,
            deviceId=device,
            streamId=stream,
            correlationId=correlation,
            globalPid=global_pid(pid),
            **values,
        )

    def kernel(
        self,
        start: int,
        end: int,
        name: str,
        *,
        device: int = 0,
        stream: int = 7,
        correlation: int | None = None,
        pid: int = 100,
        graph: int | None = None,
        short_name: str | None = None,
    ) -> None:
        short = self.string(
            short_name if short_name is not None else name.split("(")[0].split("<")[0].split()[-1]
        )
        self._activity(
            "CUPTI_ACTIVITY_KIND_KERNEL",
            start,
            end,
            device,
            stream,
            correlation,
            pid,
            demangledName=self.string(name),
            shortName=short,
            gridId=len(self.rows.get("CUPTI_ACTIVITY_KIND_KERNEL", [])) + 1,
            graphId=graph,
            staticSharedMemory=0,
            dynamicSharedMemory=0,
            localMemoryPerThread=0,
            localMemoryTotal=0,
        )

    def graph_execution(
        self,
        start: int,
        end: int,
        *,
        graph: int,
        correlation: int | None = None,
        device: int = 0,
        stream: int = 7,
        pid: int = 100,
    ) -> None:
        """One whole-graph execution (``--cuda-graph-trace=graph``), launched by the call of ``correlation``."""
        self._activity(
            "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", start, end, device, stream, correlation, pid, graphId=graph,
            graphExecId=graph,
        )  # fmt: skip

    def memcpy(
        self,
        start: int,
        end: int,
        *,
        copy_kind: int = 1,
        size: int = 4096,
        device: int = 0,
        stream: int = 7,
        correlation: int | None = None,
        pid: int = 100,
        src_kind: int | None = None,
        dst_kind: int | None = None,
    ) -> None:
        """A copy; ``src_kind`` / ``dst_kind``: the memory kinds (ENUM_CUDA_MEM_KIND ids, :data:`MEM_KINDS`:
        0 pageable, 1 pinned, 2 device), null when not given."""
        self._activity(
            "CUPTI_ACTIVITY_KIND_MEMCPY", start, end, device, stream, correlation, pid, bytes=size,
            copyKind=copy_kind, srcKind=src_kind, dstKind=dst_kind,
        )  # fmt: skip

    def profiler_overhead(self, start: int, end: int, name: str, *, pid: int = 100, tid: int = 100) -> None:
        """A row of PROFILER_OVERHEAD: nsys's own work (``name``, e.g. "CUPTI Buffer flush") on a thread."""
        self.add(
            "PROFILER_OVERHEAD",
            start=start,
            end=end,
            globalTid=global_tid(pid, tid),
            nameId=self.string(name),
        )

    def mem_kinds(self, kinds: dict[int, str] | None = None) -> None:
        """The ENUM_CUDA_MEM_KIND table (``kinds``: id -> label; default :data:`MEM_KINDS`, as nsys 2022.4 to
        2026.2 write it)."""
        for id_, label in (kinds or MEM_KINDS).items():
            name = "CUDA_MEMOPR_MEMORY_KIND_" + label.upper().replace(" ", "_")
            self.add("ENUM_CUDA_MEM_KIND", id=id_, name=name, label=label)

    def memset(
        self,
        start: int,
        end: int,
        *,
        device: int = 0,
        stream: int = 7,
        correlation: int | None = None,
        pid: int = 100,
        size: int = 4096,
    ) -> None:
        self._activity(
            "CUPTI_ACTIVITY_KIND_MEMSET", start, end, device, stream, correlation, pid, value=0, bytes=size
        )

    # --- host API
    def runtime(
        self,
        start: int,
        end: int,
        name: str,
        *,
        correlation: int | None,
        pid: int = 100,
        tid: int = 100,
        event_class: int = 0,
    ) -> None:
        self.add(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            start=start,
            end=end,
            eventClass=event_class,
            globalTid=global_tid(pid, tid),
            correlationId=correlation,
            nameId=self.string(name),
        )

    def driver(
        self, start: int, end: int, name: str, *, correlation: int | None, pid: int = 100, tid: int = 100
    ) -> None:
        self.runtime(start, end, name, correlation=correlation, pid=pid, tid=tid, event_class=1)

    # --- NVTX
    def nvtx_range(
        self,
        start: int,
        end: int | None,
        text: str | None = None,
        *,
        registered: str | None = None,
        pid: int = 100,
        tid: int = 100,
        domain: int = 0,
        start_end: bool = False,
        end_tid: int | None = None,
    ) -> None:
        """A push/pop range (eventType 59), or a start/end range (60) with ``start_end=True``. ``registered``
        puts the name in StringIds (``textId``) instead of ``text``."""
        self.add(
            "NVTX_EVENTS",
            start=start,
            end=end,
            eventType=60 if start_end else 59,
            text=text,
            textId=self.string(registered) if registered is not None else None,
            globalTid=global_tid(pid, tid),
            domainId=domain,
            endGlobalTid=global_tid(pid, end_tid) if end_tid is not None else None,
            rangeId=len(self.rows.get("NVTX_EVENTS", [])) + 1 if start_end else None,
        )

    def nvtx_mark(self, t: int, text: str, *, pid: int = 100, tid: int = 100) -> None:
        self.add(
            "NVTX_EVENTS",
            start=t,
            end=None,
            eventType=34,
            text=text,
            globalTid=global_tid(pid, tid),
            domainId=0,
        )

    def nvtx_thread_name(self, t: int, name: str, *, pid: int = 100, tid: int = 100) -> None:
        self.add(
            "NVTX_EVENTS",
            start=t,
            end=None,
            eventType=39,
            text=name,
            globalTid=global_tid(pid, tid),
            domainId=0,
        )

    def nvtx_domain(self, t: int, domain: int, name: str, *, pid: int = 100, tid: int = 100) -> None:
        self.add(
            "NVTX_EVENTS",
            start=t,
            end=None,
            eventType=75,
            text=name,
            globalTid=global_tid(pid, tid),
            domainId=domain,
        )

    # --- GPUs and metrics
    def gpu(
        self, gpu_id: int, name: str, *, pw_gpu_id: int | None = None, cu_device: int | None = None
    ) -> None:
        self.add(
            "TARGET_INFO_GPU",
            vmId=0,
            id=gpu_id,
            name=name,
            pwGpuId=gpu_id if pw_gpu_id is None else pw_gpu_id,
            cuDevice=gpu_id if cu_device is None else cu_device,
            busLocation=f"0000:{gpu_id:02x}:00.0",
            isDiscrete=1,
        )

    def cuda_device(self, gpu_id: int | None, cuda_id: int, pid: int = 100) -> None:
        """TARGET_INFO_CUDA_DEVICE: process ``pid`` had GPU ``gpu_id`` (TARGET_INFO_GPU.id) as CUDA device
        ``cuda_id`` (its kernels' ``deviceId``)."""
        self.add("TARGET_INFO_CUDA_DEVICE", gpuId=gpu_id, cudaId=cuda_id, pid=pid)

    def capture(self, duration: int, start_time: int = 1000) -> None:
        """ANALYSIS_DETAILS: the capture's ``duration`` (ns) and its start/stop (``stopTime`` =
        ``start_time`` + ``duration``), one row as nsys writes it."""
        self.add(
            "ANALYSIS_DETAILS",
            globalVid=1 << 48,
            duration=duration,
            startTime=start_time,
            stopTime=start_time + duration,
        )

    def gpu_metric(
        self, timestamp: int, metric: str, value: float, *, pw_gpu_id: int = 0, metric_id: int | None = None
    ) -> None:
        """One 2024+-style GPU_METRICS sample; the metric is registered in TARGET_INFO_GPU_METRICS."""
        type_id = GPU_METRICS_TYPE_BASE | pw_gpu_id
        known = {
            (r["typeId"], r["metricName"]): r["metricId"]
            for r in self.rows.get("TARGET_INFO_GPU_METRICS", [])
        }
        if (type_id, metric) not in known:
            if metric_id is None:
                metric_id = len({r["metricName"] for r in self.rows.get("TARGET_INFO_GPU_METRICS", [])})
            self.add(
                "TARGET_INFO_GPU_METRICS",
                typeId=type_id,
                sourceId=GPU_METRICS_TYPE_BASE,
                typeName=f"GPU {pw_gpu_id}",
                metricId=metric_id,
                metricName=metric,
            )
            known[(type_id, metric)] = metric_id
        self.add(
            "GPU_METRICS",
            rawTimestamp=timestamp,
            timestamp=timestamp,
            typeId=type_id,
            metricId=known[(type_id, metric)],
            value=value,
        )

    def generic_gpu_metrics(
        self,
        raw_timestamp: int,
        values: dict[str, float | int],
        *,
        pw_gpu_id: int = 0,
        timestamp: int | None = None,
    ) -> None:
        """One 2022.x-style GENERIC_EVENTS GPU-metrics sample (values written as JSON strings, like nsys)."""
        source_id = GPU_METRICS_TYPE_BASE
        type_id = GPU_METRICS_TYPE_BASE | pw_gpu_id
        if not any(r["sourceId"] == source_id for r in self.rows.get("GENERIC_EVENT_SOURCES", [])):
            self.add(
                "GENERIC_EVENT_SOURCES",
                sourceId=source_id,
                data=json.dumps(
                    {"Name": "GpuMetrics", "TimeSource": "SessionNs", "SourceGroup": "Unknown"}, indent=4
                ),
            )
        if not any(r["typeId"] == type_id for r in self.rows.get("GENERIC_EVENT_TYPES", [])):
            self.add(
                "GENERIC_EVENT_TYPES",
                typeId=type_id,
                sourceId=source_id,
                data=json.dumps({"Name": "", "Fields": [{"Name": n} for n in values]}, indent=4),
            )
        data = json.dumps({k: str(v) for k, v in values.items()}, indent=4).replace("/", "\\/")
        self.add("GENERIC_EVENTS", rawTimestamp=raw_timestamp, timestamp=timestamp, typeId=type_id, data=data)

    # --- output
    def write(self, path: str | Path) -> Path:
        """Write the collected tables to ``path`` (replacing it) and return the path."""
        path = Path(path)
        if path.exists():
            path.unlink()
        rows = dict(self.rows)
        if self.strings:
            rows["StringIds"] = [{"id": i, "value": v} for v, i in self.strings.items()]
        con = sqlite3.connect(path)
        try:
            for table in sorted(set(rows) | self.force_tables):
                drop = set(self.drop_columns.get(table, []))
                cols = [c for c in TABLES[table] if c[0] not in drop]
                ddl = ", ".join(_column_ddl(table, n, t, nn) for n, t, nn in cols)
                con.execute(f'CREATE TABLE "{table}" ({ddl})')
                names = [c[0] for c in cols]
                values = [
                    tuple(r.get(n, _DEFAULTS.get(n, 0) if nn else None) for n, _, nn in cols)
                    for r in rows.get(table, [])
                ]
                if values:
                    marks = ", ".join("?" for _ in names)
                    quoted = ", ".join(f'"{n}"' for n in names)
                    con.executemany(f'INSERT INTO "{table}" ({quoted}) VALUES ({marks})', values)
            con.commit()
        finally:
            con.close()
        return path
