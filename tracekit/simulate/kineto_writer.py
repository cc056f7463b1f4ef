"""Write a simulated run as a PyTorch profiler (Kineto) chrome trace, gzip-compressed, streamed chunk by chunk.

Events follow current Kineto spellings: ``user_annotation`` ranges named ``iteration`` (what
``torch.profiler.record_function("iteration")`` records), ``cuda_runtime`` calls with ``correlation`` and
``cbid``, ``kernel`` events on ``pid`` = device, ``tid`` = stream with ``device``/``stream``/``correlation``
args, and ``ac2g`` flow pairs (launch call → kernel). ``ts``/``dur`` are microseconds written with exactly three
decimals, so the nanosecond values survive a float parse (they stay small: µs since the simulated session
start). The top level says ``"tracekit_synthetic": true`` and carries the simulation metadata and the
ground truth; ``deviceProperties`` names the "Simulated GPU".
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tracekit.simulate.mechanism import (
    API_CBIDS,
    API_NAMES,
    CONTEXT_ID,
    DEVICE_ID,
    GRAPH_ID,
    KERNEL_KINDS,
    PID,
    STREAM_ID,
    TID,
    Chunk,
    Simulation,
)
from tracekit.simulate.nsys_writer import GPU_NAME, SM_COUNT
from tracekit.simulate.truth import INT_FIELDS


def _us(col: str) -> pl.Expr:
    """Integer ns column -> µs text with exactly three decimals (no float rounding)."""
    ns = pl.col(col)
    return pl.concat_str(
        [(ns // 1000).cast(pl.String), pl.lit("."), (ns % 1000).cast(pl.String).str.zfill(3)]
    )


def _s(x: Any) -> pl.Expr:
    return pl.lit(str(x))


class KinetoWriter:
    """Streams one config's events into a gzip-compressed Kineto JSON at ``path`` (a temporary path)."""

    def __init__(self, path: Path, sim: Simulation, meta: dict[str, Any], compresslevel: int = 3) -> None:
        self.sim = sim
        self.raw = open(path, "wb")  # noqa: SIM115 - closed in finish/abort
        self.gz = gzip.GzipFile(fileobj=self.raw, mode="wb", compresslevel=compresslevel, mtime=0)
        self.out = io.TextIOWrapper(self.gz, encoding="utf-8", newline="\n")
        self.kernel_names = [json.dumps(KERNEL_KINDS[k].demangled) for k in sim.ops.kinds]
        self.first = True
        header = {
            "schemaVersion": 1,
            "tracekit_synthetic": True,
            "tracekit_meta": meta,
            "deviceProperties": [
                {
                    "id": DEVICE_ID,
                    "name": GPU_NAME,
                    "totalGlobalMem": 48 * 1024**3,
                    "computeMajor": 7,
                    "computeMinor": 5,
                    "maxThreadsPerBlock": 1024,
                    "maxThreadsPerMultiprocessor": 1024,
                    "regsPerBlock": 65536,
                    "warpSize": 32,
                    "sharedMemPerBlock": 49152,
                    "numSms": SM_COUNT,
                    "sharedMemPerBlockOptin": 65536,
                }
            ],
            "traceName": meta.get("trace_name", "synthetic"),
            "displayTimeUnit": "ms",
        }
        head = json.dumps(header, indent=1)
        self.out.write(head[: head.rindex("}")].rstrip() + ',\n "traceEvents": [\n')

    def write_chunk(self, chunk: Chunk) -> None:
        """Append one chunk's annotations, runtime calls, kernels and flow events."""
        lines: list[pl.Series] = []
        ranges = pl.DataFrame({"s": chunk.range_start, "d": chunk.range_end - chunk.range_start})
        lines.append(
            ranges.select(
                pl.concat_str(
                    [
                        _s(
                            '{"ph": "X", "cat": "user_annotation", "name": "iteration", "pid": '
                            + f'{PID}, "tid": {TID}, "ts": '
                        ),
                        _us("s"),
                        _s(', "dur": '),
                        _us("d"),
                        _s("}"),
                    ]
                ).alias("line")
            ).to_series()
        )

        api_names = np.array([API_NAMES[k].split("_v")[0] for k in sorted(API_NAMES)])
        cbids = np.array([API_CBIDS[k] for k in sorted(API_CBIDS)])
        kinds = chunk.api_kind.astype(np.int64)
        api = pl.DataFrame(
            {
                "s": chunk.api_start,
                "d": chunk.api_end - chunk.api_start,
                "c": chunk.api_corr,
                "n": api_names[kinds],
                "b": cbids[kinds],
            }
        )
        lines.append(
            api.select(
                pl.concat_str(
                    [
                        _s('{"ph": "X", "cat": "cuda_runtime", "name": "'),
                        pl.col("n"),
                        _s(f'", "pid": {PID}, "tid": {TID}, "ts": '),
                        _us("s"),
                        _s(', "dur": '),
                        _us("d"),
                        _s(', "args": {"External id": '),
                        pl.col("c").cast(pl.String),
                        _s(', "cbid": '),
                        pl.col("b").cast(pl.String),
                        _s(', "correlation": '),
                        pl.col("c").cast(pl.String),
                        _s("}}"),
                    ]
                ).alias("line")
            ).to_series()
        )
        launches = api.filter(pl.col("n") != API_NAMES[2].split("_v")[0])
        lines.append(
            launches.select(
                pl.concat_str(
                    [
                        _s('{"ph": "s", "id": '),
                        pl.col("c").cast(pl.String),
                        _s(f', "pid": {PID}, "tid": {TID}, "ts": '),
                        _us("s"),
                        _s(', "cat": "ac2g", "name": "ac2g"}'),
                    ]
                ).alias("line")
            ).to_series()
        )

        names = np.array(self.kernel_names, dtype=object)[chunk.k_op]
        occ_pct = np.rint(chunk.k_occ * 100).astype(np.int64)
        warps = chunk.k_occ * 32.0
        graph_args = np.where(
            chunk.k_node >= 0,
            np.char.add(
                np.char.add(
                    ', "graph id": ' + str(GRAPH_ID) + ', "graph node id": ',
                    ((GRAPH_ID << 32) + chunk.k_node).astype(str),
                ),
                "",
            ),
            "",
        )
        kern = pl.DataFrame(
            {
                "s": chunk.k_start,
                "d": chunk.k_end - chunk.k_start,
                "c": chunk.k_corr,
                "n": names.tolist(),
                "r": chunk.k_regs,
                "gx": chunk.k_grid,
                "bx": chunk.k_block,
                "o": occ_pct,
                "w": np.round(warps, 6),
                "bl": np.round(chunk.k_grid / SM_COUNT, 6),
                "g": graph_args.tolist(),
            },
            schema_overrides={"n": pl.String, "g": pl.String},
        )
        lines.append(
            kern.select(
                pl.concat_str(
                    [
                        _s('{"ph": "X", "cat": "kernel", "name": '),
                        pl.col("n"),
                        _s(f', "pid": {DEVICE_ID}, "tid": {STREAM_ID}, "ts": '),
                        _us("s"),
                        _s(', "dur": '),
                        _us("d"),
                        _s(', "args": {"External id": '),
                        pl.col("c").cast(pl.String),
                        _s(
                            f', "queued": 0, "device": {DEVICE_ID}, "context": {CONTEXT_ID}, "stream": {STREAM_ID}, "correlation": '
                        ),
                        pl.col("c").cast(pl.String),
                        _s(', "registers per thread": '),
                        pl.col("r").cast(pl.String),
                        _s(', "shared memory": 0, "blocks per SM": '),
                        pl.col("bl").cast(pl.String),
                        _s(', "warps per SM": '),
                        pl.col("w").cast(pl.String),
                        _s(', "grid": ['),
                        pl.col("gx").cast(pl.String),
                        _s(', 1, 1], "block": ['),
                        pl.col("bx").cast(pl.String),
                        _s(', 1, 1], "est. achieved occupancy %": '),
                        pl.col("o").cast(pl.String),
                        pl.col("g"),
                        _s("}}"),
                    ]
                ).alias("line")
            ).to_series()
        )
        lines.append(
            kern.select(
                pl.concat_str(
                    [
                        _s('{"ph": "f", "id": '),
                        pl.col("c").cast(pl.String),
                        _s(f', "pid": {DEVICE_ID}, "tid": {STREAM_ID}, "ts": '),
                        _us("s"),
                        _s(', "cat": "ac2g", "name": "ac2g", "bp": "e"}'),
                    ]
                ).alias("line")
            ).to_series()
        )

        body = ",\n".join(",\n".join(series.to_list()) for series in lines if len(series))
        if not self.first:
            self.out.write(",\n")
        self.out.write(body)
        self.first = False

    def finish(self, truth_summary: dict[str, Any], truth_iterations: list[dict[str, Any]]) -> None:
        """Close the event list, append the ground truth, and close the file."""
        keys = [k for k in INT_FIELDS if k != "index"]
        truth = {"summary": truth_summary, "iterations": {k: [r[k] for r in truth_iterations] for k in keys}}
        self.out.write('\n ],\n "tracekit_truth": ' + json.dumps(truth) + "\n}\n")
        self.out.close()
        self.raw.close()

    def abort(self) -> None:
        try:
            self.out.close()
        finally:
            self.raw.close()
