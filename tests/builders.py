"""One builder of hand-made (synthetic) traces for the tests, on the trace model's own schemas.

Rows are given as tuples, times in integer ns; every frame is conformed to :data:`tracekit.model.SCHEMAS`
(missing columns null, dtypes cast), so a builder can never drift from the model.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tracekit.model import API_SCHEMA, OP_KIND, OPS_SCHEMA, RANGES_SCHEMA, Trace, conform

#: ns: profilers' clocks read epoch time, as Kineto and nsys write it
EPOCH = 1_700_000_000_000_000_000

#: Default tuple layouts (later fields optional).
RANGE_FIELDS = ("start", "end", "name", "depth", "domain")
API_FIELDS = ("start", "end", "correlation", "name")
OP_FIELDS = ("start", "end", "correlation", "stream", "kind", "device")
#: Values of fields a tuple leaves out: one process (pid 1) and thread (1), device 0, kernels, depth 0.
DEFAULTS: dict[str, Any] = {
    "pid": 1,
    "thread": 1,
    "depth": 0,
    "domain": "user",
    "kind": "kernel",
    "device": 0,
}


def _frame(
    rows: Iterable[Sequence[Any]],
    fields: Sequence[str],
    schema: dict[str, pl.DataType],
    extra: dict[str, Any],
) -> pl.DataFrame:
    records = []
    for i, row in enumerate(rows):
        record = {k: v for k, v in DEFAULTS.items() if k in schema}
        record.update(extra)
        record.update(zip(fields, row, strict=False))
        if "name" in schema and "name" not in record:
            record["name"] = f"k{i}"
        records.append(record)
    if not records:
        return conform(None, schema)
    frame = pl.DataFrame(records, schema_overrides={k: v for k, v in schema.items() if k != "kind"})
    return conform(frame, schema)


def make_trace(
    ranges: Iterable[Sequence[Any]] = (),
    api: Iterable[Sequence[Any]] = (),
    ops: Iterable[Sequence[Any]] = (),
    meta: dict[str, Any] | None = None,
    *,
    range_fields: Sequence[str] = RANGE_FIELDS,
    api_fields: Sequence[str] = API_FIELDS,
    op_fields: Sequence[str] = OP_FIELDS,
) -> Trace:
    """A Trace from tuples: ranges ``(start, end, name[, depth[, domain]])``, API calls ``(start, end,
    correlation, name)`` (kind "runtime"), ops ``(start, end, correlation, stream[, kind[, device]])`` named
    ``k0, k1, ...``; other layouts through ``*_fields``. ``meta`` defaults to ``{"path": "hand-built"}``."""
    return Trace(
        ops=_frame(ops, op_fields, OPS_SCHEMA, {}),
        api=_frame(api, api_fields, API_SCHEMA, {"kind": "runtime"}),
        ranges=_frame(ranges, range_fields, RANGES_SCHEMA, {}),
        meta=meta or {"path": "hand-built"},
    )


#: the non-finite number spellings profilers write: C/C++ formatting (inf, nan) and Python's json (NaN,
#: Infinity); the Kineto reader reads each as a missing value
NON_FINITE_SPELLINGS: tuple[str, ...] = ("inf", "-inf", "nan", "-nan", "NaN", "Infinity", "-Infinity")


#: ops ``(start, end, correlation, stream[, device])``: the layout of the range-selection tests
DEVICE_OP_FIELDS = ("start", "end", "correlation", "stream", "device")


def device_trace(
    ranges: Iterable[Sequence[Any]] = (),
    api: Iterable[Sequence[Any]] = (),
    ops: Iterable[Sequence[Any]] = (),
    meta: dict[str, Any] | None = None,
    **fields: Any,
) -> Trace:
    """:func:`make_trace` with ops laid out as :data:`DEVICE_OP_FIELDS` unless ``op_fields`` says otherwise:
    ranges ``(start, end, name[, depth[, domain]])``, api ``(start, end, corr, name)``, ops ``(start, end,
    corr, stream[, device])``; times in ns, one process (pid 1) and thread (1) unless the fields say so."""
    fields.setdefault("op_fields", DEVICE_OP_FIELDS)
    return make_trace(ranges, api, ops, meta, **fields)


def kernels_trace(spans: list[tuple[str, int]]) -> Trace:
    """A SYNTHETIC trace of kernels back to back on one stream, each (name, duration ns): for the kernel-name
    rules (precision from kernel names, weighted by kernel time)."""
    starts, t = [], 0
    for _, d in spans:
        starts.append(t)
        t += d
    ops = pl.DataFrame(
        {
            "start": starts,
            "end": [s + d for s, (_, d) in zip(starts, spans, strict=True)],
            "kind": ["kernel"] * len(spans),
            "name": [n for n, _ in spans],
        }
    )
    return Trace(ops=ops, meta={"synthetic": True})


def spans(frame: pl.DataFrame) -> list[tuple[int, int]]:
    """The ``(range_start, range_end)`` pairs of a range choice's frame."""
    return list(zip(frame["range_start"].to_list(), frame["range_end"].to_list(), strict=True))


def write_file(tmp_path: Path, name: str, text: str | bytes, gz: bool = False) -> Path:
    """Write ``text`` (UTF-8 when a str; bytes as they are) to ``tmp_path / name`` (gzip-compressed when
    ``gz``) and return the path."""
    data = text.encode() if isinstance(text, str) else text
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def kineto_event(
    cat: str, name: str, ts: Any, dur: Any, pid: Any = 1, tid: Any = 1, **args: Any
) -> dict[str, Any]:
    """One Kineto complete (``ph`` X) event; ``args`` keys written with " " for "_" (``est_achieved_...``)."""
    event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        event["args"] = {k.replace("_", " "): v for k, v in args.items()}
    return event


def kineto_file(tmp_path: Path, events: list[dict[str, Any]], name: str) -> Path:
    """``events`` written as a Kineto JSON document (schema 1) to ``tmp_path / name``."""
    return write_file(tmp_path, name, json.dumps({"schemaVersion": 1, "traceEvents": events}))


def two_gpu_launches(starts: Iterable[int]) -> Trace:
    """Two GPUs, one process each (GPU 0: pid 1, GPU 1: pid 2), no ranges: at each of ``starts`` (ns) each
    GPU runs a 100 us kernel on stream 7, launched by a 1 us ``cudaLaunchKernel`` that begins 5 us before the
    kernel starts (synthetic, named ``two_gpus.synthetic.json``)."""
    starts = list(starts)
    api, ops, corr = [], [], 0
    for device, pid in ((0, 1), (1, 2)):
        for start in starts:
            corr += 1
            api.append((start - 5_000, start - 4_000, corr, "cudaLaunchKernel", pid, pid))
            ops.append((start, start + 100_000, corr, 7, "kernel", device, pid))
    return make_trace(
        api=api,
        ops=ops,
        meta={"path": "two_gpus.synthetic.json"},
        api_fields=("start", "end", "correlation", "name", "pid", "thread"),
        op_fields=("start", "end", "correlation", "stream", "kind", "device", "pid"),
    )


def compact_result(
    name: str,
    rank: int | None = None,
    ends: list[int] | None = None,
    starts: list[int] | None = None,
    steps: list[tuple[int, int]] | None = None,
    path: str | None = "",
    kinds: list[str] | None = None,
) -> dict[str, Any]:
    """A hand-built compact result (:mod:`tracekit.fleet.compact`, what :mod:`tracekit.analyzers.ranks`
    summarizes): iterations ``steps`` as (start, end) ns (default two of 1 ms at :data:`EPOCH`), collectives
    ``starts`` and ``ends`` (ns; starts default to 100 ns before the ends) and their ``kinds`` (default: all
    "allreduce"); ``path`` None: none, "" (the default): ``/runs/NAME``."""
    steps = steps or [(EPOCH, EPOCH + 1_000_000), (EPOCH + 2_000_000, EPOCH + 3_000_000)]
    ends = ends or []
    starts = starts if starts is not None else [e - 100 for e in ends]
    return {
        "path": f"/runs/{name}" if path == "" else path,
        "name": name,
        "rank": rank,
        "iterations": {
            "index": np.arange(len(steps)),
            "start_ns": np.array([s for s, _ in steps], dtype=np.int64),
            "end_ns": np.array([e for _, e in steps], dtype=np.int64),
            "latency_ms": np.array([(e - s) / 1e6 for s, e in steps]),
        },
        "collective_starts_ns": np.array(starts, dtype=np.int64),
        "collective_ends_ns": np.array(ends, dtype=np.int64),
        "collective_kinds": kinds if kinds is not None else ["allreduce"] * len(ends),
        "verdict": "compute",
        "warnings": [],
    }


def comm_ops(rows: list[tuple[Any, ...]]) -> pl.DataFrame:
    """(iteration, device, start, end, name[, kind]) rows as the ops frame
    :func:`tracekit.fleet.compact.comm_per_iteration` takes (kind "kernel" where not given)."""
    schema = {
        "iteration": pl.Int64,
        "device": pl.Int64,
        "start": pl.Int64,
        "end": pl.Int64,
        "name": pl.String,
        "kind": OP_KIND,
    }
    full = [row if len(row) == 6 else (*row, "kernel") for row in rows]
    return pl.DataFrame(full, schema=schema, orient="row")


#: the process groups of :func:`tp_dp_kineto`'s job (name: member ranks), as PyTorch names them ("0" the
#: default group of every rank; one tensor-parallel group per pair, one data-parallel group per column)
TP_DP_GROUPS: dict[str, list[int]] = {"0": [0, 1, 2, 3], "1": [0, 1], "2": [2, 3], "3": [0, 2], "4": [1, 3]}


def tp_dp_kineto(
    out: Path,
    ranks: Sequence[int] = (0, 1, 2, 3),
    tp_stream: int = 13,
    dp_stream: int = 13,
    comm_args: bool = True,
    kernel: str = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    offsets: Sequence[int] = (0, 0, 0, 2_500_000),
    all_to_all: bool = False,
) -> list[str]:
    """SYNTHETIC Kineto traces (``rank{r}.synthetic.json.gz`` in ``out``, for ``ranks``) of four ranks of
    tensor + data parallelism, as tests/test_fleet_communicators.py builds them: per step (six), compute, an
    all-reduce in the tensor-parallel groups {0, 1} and {2, 3} (``tp_stream``), compute, another, compute, an
    all-reduce in the data-parallel groups {0, 2} and {1, 3} (``dp_stream``; both on stream 13 by default, as
    vLLM's pynccl serializes them). Rank 2's first compute of each step takes 450 µs, the others' 300 µs, so
    the {2, 3} all-reduces end 150 µs after the {0, 1} ones and rank 2 arrives 150 µs after rank 0 at their
    data-parallel one. Each rank's clock is ``offsets[rank]`` ahead (rank 3's by 2.5 ms). ``comm_args``:
    every communication kernel carries PyTorch's ``Collective name``, ``Process Group Name`` and ``Process
    Group Ranks`` (:data:`TP_DP_GROUPS`), and the header its ``pg_config``. ``kernel``: the all-reduces'
    kernel name. ``all_to_all``: each step ends with an all-to-all of the default group (every rank, 30 µs
    once the last arrives) on stream 15, whose kernel NCCL names ``SendRecv``."""
    send_recv = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
    tp, dp = [[0, 1], [2, 3]], [[0, 2], [1, 3]]
    name_of = {tuple(v): k for k, v in TP_DP_GROUPS.items()}
    # per rank: (name, stream, start, end, step, collective name, group)
    events: dict[int, list[tuple[str, int, int, int, int, str, str]]] = {r: [] for r in range(4)}
    steps: dict[int, list[tuple[int, int]]] = {r: [] for r in range(4)}
    t = EPOCH
    gemm = "sm90_xmma_gemm_f16f16_synthetic"
    for step in range(6):
        ready = {r: t + 10_000 for r in range(4)}
        for phase, (durations, groups, took, stream) in enumerate(
            [
                ([300_000, 300_000, 450_000, 300_000], tp, 50_000, tp_stream),
                ([200_000] * 4, tp, 50_000, tp_stream),
                ([100_000] * 4, dp, 80_000, dp_stream),
                ([20_000] * 4, [[0, 1, 2, 3]] if all_to_all else [], 30_000, 15),
            ]
        ):
            if phase == 3 and not all_to_all:
                break
            for r in range(4):
                events[r].append((gemm, 7, ready[r], ready[r] + durations[r], step, "", ""))
                ready[r] += durations[r]
            for group in groups:
                end = max(ready[r] for r in group) + took
                op, name = ("all_to_all", send_recv) if phase == 3 else ("allreduce", kernel)
                for r in group:
                    events[r].append((name, stream, ready[r], end, step, op, name_of[tuple(group)]))
                    ready[r] = end
        end = max(ready.values()) + 20_000
        for r in range(4):
            steps[r].append((t, end))
        t = end + 50_000
    paths = []
    out.mkdir(parents=True, exist_ok=True)
    for rank in ranks:
        off, pid = offsets[rank], 4000 + rank
        trace: list[dict[str, Any]] = []
        corr = 1
        for step, (s0, s1) in enumerate(steps[rank]):
            trace.append(
                kineto_event("user_annotation", f"ProfilerStep#{step}", _us(s0 + off), _us(s1 - s0), pid, pid)
            )
            kernels = sorted((k for k in events[rank] if k[4] == step), key=lambda k: k[2])
            for j, (name, stream, start, end, _, op, group) in enumerate(kernels):
                call = s0 + 1_000 + j * 200
                trace.append(
                    kineto_event(
                        "cuda_runtime",
                        "cudaLaunchKernel",
                        _us(call + off),
                        "1.000",
                        pid,
                        pid,
                        correlation=corr,
                    )
                )
                args: dict[str, Any] = {"device": rank, "stream": stream, "correlation": corr}
                if comm_args and op:
                    args.update(
                        {
                            "Collective name": op,
                            "Process Group Name": group,
                            "Process Group Description": "undefined",
                            "Process Group Ranks": str(TP_DP_GROUPS[group]),
                        }
                    )
                event = {"ph": "X", "cat": "kernel", "name": name, "pid": rank, "tid": stream}
                trace.append({**event, "ts": _us(start + off), "dur": _us(end - start), "args": args})
                corr += 1
            sync = s0 + 1_000 + len(kernels) * 200 + 1_000
            trace.append(
                kineto_event(
                    "cuda_runtime",
                    "cudaDeviceSynchronize",
                    _us(sync + off),
                    _us(s1 - 500 - sync),
                    pid,
                    pid,
                    correlation=corr,
                )
            )
            corr += 1
        info: dict[str, Any] = {"backend": "nccl", "rank": rank, "world_size": 4}
        if comm_args:
            info["pg_config"] = [
                {
                    "pg_name": k,
                    "pg_desc": "undefined",
                    "backend_config": "cuda:nccl",
                    "pg_size": len(v),
                    "ranks": v,
                }
                for k, v in TP_DP_GROUPS.items()
                if rank in v
            ]
        header = {
            "schemaVersion": 1,
            "tracekit_synthetic": True,
            "distributedInfo": info,
            "deviceProperties": [{"id": rank, "name": "Simulated GPU", "numSms": 132}],
            "traceName": f"SYNTHETIC tensor + data parallel rank {rank}",
            "traceEvents": trace,
        }
        path = out / f"rank{rank}.synthetic.json.gz"
        # (ts and dur as JSON numbers with three decimals, as Kineto writes them)
        text = json.dumps(header)
        for value in {e["ts"] for e in trace} | {e["dur"] for e in trace}:
            text = text.replace(f'"{value}"', value)
        path.write_bytes(gzip.compress(text.encode()))
        paths.append(str(path))
    return paths


def _us(ns: int) -> str:
    """ns as Kineto's µs text with three decimals (exact)."""
    return f"{ns // 1000}.{ns % 1000:03d}"
