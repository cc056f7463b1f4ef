"""Write a simulated run as an Nsight Systems-schema SQLite file, streamed chunk by chunk.

The tables and columns are those of a real recent export (``CUPTI_ACTIVITY_KIND_KERNEL`` as in Nsight Systems
2026.2 / schema 3.25, which has ``graphId``; ``TARGET_INFO_GPU`` as in 2024.6; ``GPU_METRICS`` and
``TARGET_INFO_GPU_METRICS`` with the 2024+ columns ``rawTimestamp, timestamp, typeId, metricId, value`` and
``typeId, sourceId, typeName, metricId, metricName``). Names are ids into ``StringIds``; API names carry
version suffixes; NVTX push/pop ranges are eventType 59 with inline ``text``; ``globalTid`` is encoded as
nsys does: ``(1 << 48) | (pid << 24) | tid``.

The file says it is synthetic: ``EXPORT_PRODUCT_NAME`` names tracekit, ``META_DATA_EXPORT`` holds
``TRACEKIT_SYNTHETIC = 1``, the simulation parameters and the ground-truth summary and per-iteration truth.

GPU-metrics samples: every ``interval_ns`` one sample per metric, timestamped at the start of its interval,
holding the interval's average (integer percent, as real exports store them) of: ``GR Active`` (time with a
kernel running), ``SMs Active`` (kernel time × the kernel's SM fill) and ``Compute Warps in Flight``
(× its warp occupancy), derived from the simulated kernels.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from tracekit.simulate.mechanism import (
    API_NAMES,
    CONTEXT_ID,
    DEVICE_ID,
    GRAPH_ID,
    KERNEL_KINDS,
    PID,
    STREAM_ID,
    T0_NS,
    TID,
    Chunk,
    Simulation,
)

#: Column definitions copied from real exports (types and NOT NULL constraints kept, comments dropped).
TABLES: dict[str, tuple[str, ...]] = {
    "StringIds": ("id INTEGER NOT NULL PRIMARY KEY", "value TEXT NOT NULL"),
    "CUPTI_ACTIVITY_KIND_KERNEL": (
        "start INTEGER NOT NULL",
        "end INTEGER NOT NULL",
        "deviceId INTEGER NOT NULL",
        "contextId INTEGER NOT NULL",
        "greenContextId INTEGER",
        "streamId INTEGER NOT NULL",
        "correlationId INTEGER",
        "globalPid INTEGER",
        "demangledName INTEGER NOT NULL",
        "shortName INTEGER NOT NULL",
        "mangledName INTEGER",
        "launchType INTEGER",
        "cacheConfig INTEGER",
        "registersPerThread INTEGER NOT NULL",
        "gridX INTEGER NOT NULL",
        "gridY INTEGER NOT NULL",
        "gridZ INTEGER NOT NULL",
        "blockX INTEGER NOT NULL",
        "blockY INTEGER NOT NULL",
        "blockZ INTEGER NOT NULL",
        "staticSharedMemory INTEGER NOT NULL",
        "dynamicSharedMemory INTEGER NOT NULL",
        "localMemoryPerThread INTEGER NOT NULL",
        "localMemoryTotal INTEGER NOT NULL",
        "gridId INTEGER NOT NULL",
        "sharedMemoryExecuted INTEGER",
        "graphNodeId INTEGER",
        "sharedMemoryLimitConfig INTEGER",
        "qmdBulkReleaseDone INTEGER",
        "qmdPreexitDone INTEGER",
        "qmdLastCtaDone INTEGER",
        "graphId INTEGER",
        "clusterX INTEGER",
        "clusterY INTEGER",
        "clusterZ INTEGER",
        "clusterSchedulingPolicy INTEGER",
        "maxPotentialClusterSize INTEGER",
        "maxActiveClusters INTEGER",
        "sharedMemoryRequestedPercentage INTEGER",
        "tensorSizeMinusOneElements TEXT NOT NULL",
    ),
    "CUPTI_ACTIVITY_KIND_RUNTIME": (
        "start INTEGER NOT NULL",
        "end INTEGER NOT NULL",
        "eventClass INTEGER NOT NULL",
        "globalTid INTEGER",
        "correlationId INTEGER",
        "nameId INTEGER NOT NULL",
        "returnValue INTEGER NOT NULL",
        "callchainId INTEGER",
    ),
    "NVTX_EVENTS": (
        "start INTEGER NOT NULL",
        "end INTEGER",
        "eventType INTEGER NOT NULL",
        "rangeId INTEGER",
        "category INTEGER",
        "color INTEGER",
        "text TEXT",
        "globalTid INTEGER",
        "endGlobalTid INTEGER",
        "textId INTEGER",
        "domainId INTEGER",
        "uint64Value INTEGER",
        "int64Value INTEGER",
        "doubleValue REAL",
        "uint32Value INTEGER",
        "int32Value INTEGER",
        "floatValue REAL",
        "jsonTextId INTEGER",
        "jsonText TEXT",
        "binaryData TEXT",
    ),
    "META_DATA_EXPORT": ("name TEXT NOT NULL", "value TEXT"),
    "PROCESSES": ("globalPid INTEGER", "pid INTEGER", "name TEXT"),
    "ThreadNames": ("nameId INTEGER NOT NULL", "priority INTEGER", "globalTid INTEGER"),
    "TARGET_INFO_SESSION_START_TIME": (
        "utcEpochNs INTEGER",
        "utcTime TEXT",
        "localTime TEXT",
        "systemClockNs INTEGER",
    ),
    "ENUM_NSYS_EVENT_TYPE": ("id INTEGER NOT NULL PRIMARY KEY", "name TEXT", "label TEXT"),
    "ENUM_NSYS_EVENT_CLASS": ("id INTEGER NOT NULL PRIMARY KEY", "name TEXT", "label TEXT"),
    "TARGET_INFO_GPU": (
        "vmId INTEGER NOT NULL",
        "id INTEGER NOT NULL",
        "name TEXT",
        "busLocation TEXT",
        "isDiscrete INTEGER",
        "l2CacheSize INTEGER",
        "totalMemory INTEGER",
        "memoryBandwidth INTEGER",
        "clockRate INTEGER",
        "smCount INTEGER",
        "pwGpuId INTEGER",
        "uuid TEXT",
        "luid INTEGER",
        "chipName TEXT",
        "cuDevice INTEGER",
        "ctxswDevPath TEXT",
        "ctrlDevPath TEXT",
        "revision INTEGER",
        "nodeMask INTEGER",
        "constantMemory INTEGER",
        "maxIPC INTEGER",
        "maxRegistersPerBlock INTEGER",
        "maxShmemPerBlock INTEGER",
        "maxShmemPerBlockOptin INTEGER",
        "maxShmemPerSm INTEGER",
        "maxRegistersPerSm INTEGER",
        "threadsPerWarp INTEGER",
        "asyncEngines INTEGER",
        "maxWarpsPerSm INTEGER",
        "maxBlocksPerSm INTEGER",
        "maxThreadsPerBlock INTEGER",
        "maxBlockDimX INTEGER",
        "maxBlockDimY INTEGER",
        "maxBlockDimZ INTEGER",
        "maxGridDimX INTEGER",
        "maxGridDimY INTEGER",
        "maxGridDimZ INTEGER",
        "computeMajor INTEGER",
        "computeMinor INTEGER",
        "smMajor INTEGER",
        "smMinor INTEGER",
    ),
    "TARGET_INFO_GPU_METRICS": (
        "typeId INTEGER NOT NULL",
        "sourceId INTEGER NOT NULL",
        "typeName TEXT NOT NULL",
        "metricId INTEGER NOT NULL",
        "metricName TEXT NOT NULL",
    ),
    "GPU_METRICS": (
        "rawTimestamp INTEGER NOT NULL",
        "timestamp INTEGER NOT NULL",
        "typeId INTEGER NOT NULL",
        "metricId INTEGER NOT NULL",
        "value INTEGER NOT NULL",
    ),
}

#: Serialized GlobalId as Nsight Systems writes it (the high part is the VM/hardware id).
GLOBAL_ID_BASE = 1 << 48
GLOBAL_PID = GLOBAL_ID_BASE | (PID << 24)
GLOBAL_TID = GLOBAL_PID | TID
GPU_NAME = "Simulated GPU"
GPU_VM_ID = GLOBAL_ID_BASE
#: GPU-metrics event type of the GPU: ``0x1000100000000 | pwGpuId`` as recent exports write it (the low byte
#: is the PerfWorks GPU id, which TARGET_INFO_GPU maps to the CUDA device).
PW_GPU_ID = 0
METRICS_TYPE_ID = 0x1000100000000 | PW_GPU_ID
METRICS_SOURCE_ID = GPU_VM_ID + ((DEVICE_ID + 1) << 32)
METRICS: tuple[tuple[int, str], ...] = (
    (0, "GR Active [Throughput %]"),
    (1, "SMs Active [Throughput %]"),
    (2, "Compute Warps in Flight [Throughput %]"),
)
SM_COUNT = 72
NVTX_PUSH_POP = 59
#: The model's schema reference (what real export the columns follow).
SCHEMA_MODELLED_ON = "NVIDIA Nsight Systems 2026.2 export schema 3.25.0 (TARGET_INFO_GPU as in 2024.6)"


def _create_sql(table: str) -> str:
    return f"CREATE TABLE {table} (\n    " + ",\n    ".join(TABLES[table]) + "\n)"


class MetricsSampler:
    """Turns kernel intervals into fixed-interval GPU-metrics samples, exactly, across chunk boundaries.

    Sample j covers ``[origin + j*I, origin + (j+1)*I)`` and is stamped at its start, as nsys stamps them
    (a real 2025.3 export: GR Active tracks the kernels of the period a timestamp opens). Each chunk adds its
    kernels' overlap with the samples they touch; samples before the current chunk's first kernel are final
    and are emitted (idle samples are emitted as zeros, as a real sampler would).
    """

    def __init__(self, origin_ns: int, interval_ns: int) -> None:
        self.origin = origin_ns
        self.interval = interval_ns
        self.emitted = 0  # index of the next sample to emit
        self.acc = np.zeros((0, len(METRICS)))  # pending samples [emitted, emitted + len(acc))

    def _integrals(
        self, t: np.ndarray, starts: np.ndarray, ends: np.ndarray, weights: np.ndarray
    ) -> np.ndarray:
        """∫ from -inf to t of Σ_k weight_k · 1[start_k <= u < end_k] du, for non-overlapping sorted kernels."""
        dur = ends - starts
        csum = np.concatenate([[0.0], np.cumsum(dur * weights)])
        k = np.searchsorted(starts, t, side="right") - 1
        kk = np.clip(k, 0, len(starts) - 1)
        partial = np.where(k >= 0, np.minimum(np.maximum(t - starts[kk], 0), dur[kk]) * weights[kk], 0.0)
        return csum[np.clip(k, 0, None)] * (k >= 0) + partial

    def add(self, chunk: Chunk) -> list[tuple[int, int, int, int, int]]:
        """Account for ``chunk``'s kernels; return the rows of the samples that became final."""
        starts, ends = chunk.k_start, chunk.k_end
        first = (int(starts.min()) - self.origin) // self.interval
        last = -(-(int(ends.max()) - self.origin) // self.interval)
        rows = self._emit_until(first)
        needed = last - self.emitted
        if needed > len(self.acc):
            self.acc = np.concatenate([self.acc, np.zeros((needed - len(self.acc), len(METRICS)))])
        edges = self.origin + np.arange(first, last + 1, dtype=np.int64) * self.interval
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], ends[order]
        fill, occ = chunk.k_fill[order], chunk.k_occ[order]
        ones = np.ones(len(s))
        lo = first - self.emitted
        for col, weights in enumerate((ones, fill, fill * occ)):
            integral = self._integrals(edges, s, e, weights)
            self.acc[lo : lo + (last - first), col] += np.diff(integral)
        return rows

    def _emit_until(self, index: int) -> list[tuple[int, int, int, int, int]]:
        if index <= self.emitted:
            return []
        count = index - self.emitted
        values = np.zeros((count, len(METRICS)))
        have = min(count, len(self.acc))
        values[:have] = self.acc[:have]
        self.acc = self.acc[have:]
        stamps = self.origin + (self.emitted + np.arange(count, dtype=np.int64)) * self.interval
        self.emitted = index
        # Quantize the integrals (to 1/1000 ns) before rounding half up, so float summation order (chunking)
        # cannot flip a sample that sits exactly on a .5 boundary.
        busy_pct = np.round(values, 3) * 100.0 / self.interval
        pct = np.clip(np.floor(np.round(busy_pct, 6) + 0.5), 0, 100).astype(np.int64)
        rows: list[tuple[int, int, int, int, int]] = []
        for metric_id, _ in METRICS:
            rows.extend(
                zip(
                    stamps.tolist(),
                    stamps.tolist(),
                    itertools.repeat(METRICS_TYPE_ID),
                    itertools.repeat(metric_id),
                    pct[:, metric_id].tolist(),
                    strict=False,
                )
            )
        rows.sort(key=lambda r: (r[1], r[3]))
        return rows

    def finish(self, end_ns: int) -> list[tuple[int, int, int, int, int]]:
        """Emit every sample up to the one containing ``end_ns``."""
        return self._emit_until(-(-(end_ns - self.origin) // self.interval))


class NsysWriter:
    """Writes one config's simulated events into a new SQLite file at ``path`` (a temporary path)."""

    def __init__(self, path: Path, sim: Simulation, meta: dict[str, Any], metrics_interval_ns: int) -> None:
        self.sim = sim
        self.con = sqlite3.connect(str(path), isolation_level=None)
        self.con.execute("PRAGMA journal_mode=OFF")
        self.con.execute("PRAGMA synchronous=OFF")
        self.con.execute("BEGIN")
        for table in TABLES:
            self.con.execute(_create_sql(table))
        self.strings: dict[str, int] = {}
        kinds = [KERNEL_KINDS[k] for k in sim.ops.kinds]
        self.k_short = np.array([self._sid(k.short) for k in kinds], dtype=np.int64)
        self.k_demangled = np.array([self._sid(k.demangled) for k in kinds], dtype=np.int64)
        self.k_mangled = np.array([self._sid(_mangle(k.short)) for k in kinds], dtype=np.int64)
        self.api_name = {kind: self._sid(name) for kind, name in API_NAMES.items()}
        thread_name = self._sid("python3")
        self.meta = meta
        self.sampler = MetricsSampler(T0_NS, metrics_interval_ns) if metrics_interval_ns > 0 else None
        ex = self.con.executemany
        ex(
            "INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (?,?,?)",
            [
                (34, "NvtxMark", "NvtxMark"),
                (59, "NvtxPushPopRange", "NvtxPushPopRange"),
                (60, "NvtxStartEndRange", "NvtxStartEndRange"),
            ],
        )
        ex(
            "INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (?,?,?)",
            [
                (0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"),
                (1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"),
            ],
        )
        self.con.execute("INSERT INTO PROCESSES VALUES (?,?,?)", (GLOBAL_PID, PID, "python3 (simulated)"))
        self.con.execute("INSERT INTO ThreadNames VALUES (?,?,?)", (thread_name, 20, GLOBAL_TID))
        self.con.execute(
            "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?,?,?,?)",
            (0, "1970-01-01T00:00:00 (synthetic)", "1970-01-01T00:00:00 (synthetic)", 0),
        )
        self.con.execute(
            "INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, isDiscrete, l2CacheSize, totalMemory, "
            "memoryBandwidth, clockRate, smCount, pwGpuId, uuid, luid, chipName, cuDevice, revision, nodeMask, "
            "constantMemory, maxIPC, maxRegistersPerBlock, maxShmemPerBlock, maxShmemPerBlockOptin, maxShmemPerSm, "
            "maxRegistersPerSm, threadsPerWarp, asyncEngines, maxWarpsPerSm, maxBlocksPerSm, maxThreadsPerBlock, "
            "maxBlockDimX, maxBlockDimY, maxBlockDimZ, maxGridDimX, maxGridDimY, maxGridDimZ, computeMajor, "
            "computeMinor, smMajor, smMinor) VALUES (" + ",".join("?" * 39) + ")",
            (
                GPU_VM_ID,
                DEVICE_ID,
                GPU_NAME,
                "0000:00:00.0",
                1,
                6291456,
                48 * 1024**3,
                672_000_000_000,
                1_770_000_000,
                SM_COUNT,
                PW_GPU_ID,
                "00000000-0000-0000-0000-000000000000",
                0,
                "SIMULATED",
                DEVICE_ID,
                161,
                0,
                65536,
                4,
                65536,
                49152,
                65536,
                65536,
                65536,
                32,
                3,
                32,
                16,
                1024,
                1024,
                1024,
                64,
                2147483647,
                65535,
                65535,
                7,
                5,
                7,
                5,
            ),
        )
        ex(
            "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?,?,?,?,?)",
            [
                (METRICS_TYPE_ID, METRICS_SOURCE_ID, f"GPU Metrics ({GPU_NAME})", mid, name)
                for mid, name in METRICS
            ],
        )

    def _sid(self, value: str) -> int:
        if value not in self.strings:
            self.strings[value] = len(self.strings) + 1
        return self.strings[value]

    def write_chunk(self, chunk: Chunk) -> None:
        """Insert one chunk's NVTX ranges, runtime calls, kernels and the GPU-metrics samples now final."""
        n_k = len(chunk.k_start)
        rep = itertools.repeat
        graph = chunk.k_node >= 0
        node_ids = np.where(graph, (GRAPH_ID << 32) + chunk.k_node, -1)
        self.con.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, greenContextId, streamId, "
            "correlationId, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, "
            "registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
            "localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, "
            "sharedMemoryLimitConfig, graphId, clusterX, clusterY, clusterZ, clusterSchedulingPolicy, "
            "maxPotentialClusterSize, maxActiveClusters, tensorSizeMinusOneElements) VALUES ("
            + ",".join("?" * 36)
            + ")",
            zip(
                chunk.k_start.tolist(),
                chunk.k_end.tolist(),
                rep(DEVICE_ID, n_k),
                rep(CONTEXT_ID, n_k),
                rep(0, n_k),
                rep(STREAM_ID, n_k),
                chunk.k_corr.tolist(),
                rep(GLOBAL_PID, n_k),
                self.k_demangled[chunk.k_op].tolist(),
                self.k_short[chunk.k_op].tolist(),
                self.k_mangled[chunk.k_op].tolist(),
                rep(0, n_k),
                rep(0, n_k),
                chunk.k_regs.tolist(),
                chunk.k_grid.tolist(),
                rep(1, n_k),
                rep(1, n_k),
                chunk.k_block.tolist(),
                rep(1, n_k),
                rep(1, n_k),
                rep(0, n_k),
                rep(0, n_k),
                rep(0, n_k),
                rep(0, n_k),
                chunk.k_grid_id.tolist(),
                rep(0, n_k),
                [None if v < 0 else v for v in node_ids.tolist()],
                rep(0, n_k),
                [GRAPH_ID if g else None for g in graph.tolist()],
                rep(0, n_k),
                rep(0, n_k),
                rep(0, n_k),
                rep(0, n_k),
                rep(0, n_k),
                rep(0, n_k),
                rep("[]", n_k),
                strict=False,
            ),
        )
        n_a = len(chunk.api_start)
        names = np.array([self.api_name[k] for k in sorted(self.api_name)], dtype=np.int64)
        self.con.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, "
            "returnValue) VALUES (?,?,?,?,?,?,?)",
            zip(
                chunk.api_start.tolist(),
                chunk.api_end.tolist(),
                rep(0, n_a),
                rep(GLOBAL_TID, n_a),
                chunk.api_corr.tolist(),
                names[chunk.api_kind.astype(np.int64)].tolist(),
                rep(0, n_a),
                strict=False,
            ),
        )
        n_r = chunk.n_iter
        self.con.executemany(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?,?,?,?,?,?)",
            zip(
                chunk.range_start.tolist(),
                chunk.range_end.tolist(),
                rep(NVTX_PUSH_POP, n_r),
                rep("iteration", n_r),
                rep(GLOBAL_TID, n_r),
                rep(0, n_r),
                strict=False,
            ),
        )
        if self.sampler is not None:
            self._write_metrics(self.sampler.add(chunk))
        self.last_end = int(chunk.range_end[-1])

    def _write_metrics(self, rows: list[tuple[int, int, int, int, int]]) -> None:
        if rows:
            self.con.executemany("INSERT INTO GPU_METRICS VALUES (?,?,?,?,?)", rows)

    def finish(self, truth_summary: dict[str, Any], truth_iterations: list[dict[str, Any]]) -> None:
        """Write the metadata rows (synthetic marker, parameters, truth), commit and close."""
        if self.sampler is not None:
            self._write_metrics(self.sampler.finish(getattr(self, "last_end", 0)))
        self.con.executemany("INSERT INTO StringIds VALUES (?,?)", [(i, s) for s, i in self.strings.items()])
        rows = [
            (
                "EXPORT_PRODUCT_NAME",
                "tracekit simulate (SYNTHETIC trace in the NVIDIA Nsight Systems export schema)",
            ),
            ("EXPORT_PRODUCT_VERSION", "2026.2.1.210"),
            ("EXPORT_SCHEMA_VERSION", "3.25.0"),
            ("EXPORT_SCHEMA_VERSION_MAJOR", "3"),
            ("EXPORT_SCHEMA_VERSION_MINOR", "25"),
            ("EXPORT_SCHEMA_VERSION_MICRO", "0"),
            ("EXPORT_PLATFORM", "linux-desktop"),
            ("EXPORT_ARCH", "x64"),
            ("TRACEKIT_SYNTHETIC", "1"),
            ("TRACEKIT_MADE_BY", "tracekit simulate"),
            ("TRACEKIT_SCHEMA_MODELLED_ON", SCHEMA_MODELLED_ON),
            ("TRACEKIT_META", json.dumps(self.meta, sort_keys=True)),
            ("TRACEKIT_TRUTH_SUMMARY", json.dumps(truth_summary, sort_keys=True)),
            ("TRACEKIT_TRUTH_ITERATIONS", json.dumps(_compact_truth(truth_iterations))),
        ]
        self.con.executemany("INSERT INTO META_DATA_EXPORT VALUES (?,?)", rows)
        self.con.execute("COMMIT")
        self.con.close()

    def abort(self) -> None:
        try:
            self.con.close()
        except sqlite3.Error:
            pass


def _compact_truth(records: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per-iteration truth as parallel integer lists (ns and counts): compact enough for long runs."""
    keys = ("start_ns", "end_ns", "latency_ns", "gpu_busy_ns", "idle_ns", "idle_gaps", "kernels", "launches")
    return {k: [r[k] for r in records] for k in keys}


def _mangle(name: str) -> str:
    """A plausible Itanium-mangled name for a kernel's base name (cosmetic)."""
    return f"_Z{len(name)}{name}v"
