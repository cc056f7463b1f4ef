"""Sampled GPU metrics of an Nsight Systems SQLite export (``nsys --gpu-metrics-device``), as the
``gpu_metrics`` frame (:data:`tracekit.model.GPU_METRICS_SCHEMA`).

Where the samples are (``GPU_METRICS`` in nsys 2024+, JSON rows of ``GENERIC_EVENTS`` in 2022.x/2023.x),
how their device and unit are found: see :mod:`tracekit.readers.nsys_sqlite`.
"""

from __future__ import annotations

import json
import sqlite3

import polars as pl

from tracekit.model import GPU_METRICS_SCHEMA, empty_frame
from tracekit.readers.sqlite_engine import Database, fetch_frame, quote


def read_gpu_metrics(
    export: Database, pw_to_cuda: dict[int, int | None], warnings: list[str]
) -> pl.DataFrame:
    """The export's GPU-metric samples (empty when it has none). ``pw_to_cuda`` maps a PerfWorks GPU id to
    the CUDA device id (:func:`tracekit.readers.nsys_meta.gpu_table`; None: a GPU no traced process used, whose
    samples get a null device); problems are appended to ``warnings``."""
    if export.has("GPU_METRICS"):
        return _read_metrics_table(export, pw_to_cuda, warnings)
    if export.has("GENERIC_EVENTS"):
        return _read_generic_events(export, pw_to_cuda, warnings)
    return empty_frame(GPU_METRICS_SCHEMA)


def sampling_period_ns(export: Database, samples: pl.DataFrame) -> int | None:
    """The sampling period of the GPU metrics, in ns: the median interval between a GPU's consecutive samples
    (all metrics of a sample share its timestamp; the largest of the GPUs' medians), else the period of the
    frequency the capture states (``META_DATA_CAPTURE`` ``GPU_METRICS_OPTIONS:SAMPLING_FREQUENCY``, Hz); None
    when neither is known (fewer than two samples and no stated frequency)."""
    if samples.height:
        medians = (
            samples.select("device", "timestamp")
            .drop_nulls("timestamp")
            .unique()
            .sort("device", "timestamp")
            .group_by("device")
            .agg(pl.col("timestamp").diff().median().alias("period"))
            .drop_nulls("period")
            .filter(pl.col("period") > 0)
        )
        if medians.height:
            return int(round(medians["period"].max()))
    stated = export.key_values("META_DATA_CAPTURE").get("GPU_METRICS_OPTIONS:SAMPLING_FREQUENCY", "")
    try:
        hz = float(stated)
    except ValueError:
        return None
    return int(round(1e9 / hz)) if hz > 0 else None


def metric_unit(name: pl.Expr) -> pl.Expr:
    """Unit of a metric from its nsys name (see the module docstring)."""
    bracket = name.str.extract(r"\[([^\]]*)\]\s*$", 1).str.strip_chars()
    return (
        pl.when(bracket.is_not_null() & bracket.str.ends_with("%"))
        .then(pl.lit("%"))
        .when(bracket.is_not_null() & (bracket != ""))
        .then(bracket)
        .when(name.str.contains(r"(?i)frequency"))
        .then(pl.lit("Hz"))
        .when(name.str.contains(r"(?i)started|requests"))
        .then(pl.lit("count"))
        .otherwise(pl.lit("%"))
    )


#: A clock named "... [MHz]" whose samples (their median above 0) reach this many is in cycles per second: no
#: GPU clock runs at 1 THz, nor at 1 MHz.
HZ_FLOOR = 1e6


def _finish_metrics(frame: pl.DataFrame, pw_to_cuda: dict[int, int | None]) -> pl.DataFrame:
    pw = pl.col("type_id") & 0xFF
    device = pw.replace_strict(pw_to_cuda, default=pw, return_dtype=pl.Int64) if pw_to_cuda else pw
    unit = metric_unit(pl.col("metric"))
    # nsys 2024+ names its clocks "GPC Clock Frequency [MHz]" / "SYS Clock Frequency [MHz]" but stores their
    # PerfWorks metrics, ``gpc__cycles_elapsed.avg.per_second`` (NVIDIA's GpuMetrics.config): cycles per second
    # (a real 2025.3.2 export of an H200: 1.98e9), as nsys 2022.4 stores the same counters, read as "Hz".
    median = pl.col("value").filter(pl.col("value") > 0).median().over("metric")
    unit = pl.when((unit == "MHz") & (median >= HZ_FLOOR)).then(pl.lit("Hz")).otherwise(unit)
    return frame.with_columns(device=device.cast(pl.Int32), unit=unit).select(list(GPU_METRICS_SCHEMA))


def _read_metrics_table(
    export: Database, pw_to_cuda: dict[int, int | None], warnings: list[str]
) -> pl.DataFrame:
    """GPU metrics of nsys 2024+: ``GPU_METRICS`` rows named through ``TARGET_INFO_GPU_METRICS``."""
    t = "GPU_METRICS"
    cols = export.columns(t)
    if not {"metricId", "value"} <= cols:
        warnings.append("GPU_METRICS lacks metricId/value columns; GPU metrics skipped")
        return empty_frame(GPU_METRICS_SCHEMA)
    ts_cols = [c for c in ("timestamp", "rawTimestamp") if c in cols]
    if not ts_cols:
        warnings.append("GPU_METRICS has no timestamp column; GPU metrics skipped")
        return empty_frame(GPU_METRICS_SCHEMA)
    ts_sql = f"COALESCE({', '.join(quote(c) for c in ts_cols)})" if len(ts_cols) > 1 else quote(ts_cols[0])
    exprs = {
        "timestamp": ts_sql,
        "type_id": export.col(t, "typeId", default="0"),
        "metric_id": '"metricId"',
        "value": '"value"',
    }
    schema = {"timestamp": pl.Int64, "type_id": pl.Int64, "metric_id": pl.Int64, "value": pl.Float64}
    # columnar (ADBC where available): sampling at nsys's default 10 kHz writes ~20 metrics per sample
    frame = export.numeric_frame(t, exprs, schema)
    names = empty_frame({"metric_id": pl.Int64, "metric": pl.String})
    join_on = ["metric_id"]
    info = "TARGET_INFO_GPU_METRICS"
    if export.has(info) and {"metricId", "metricName"} <= export.columns(info):
        if "typeId" in export.columns(info) and "typeId" in cols:
            names = fetch_frame(
                export.con,
                f'SELECT DISTINCT "typeId", "metricId", "metricName" FROM {quote(info)}',
                {"type_id": pl.Int64, "metric_id": pl.Int64, "metric": pl.String},
            )
            names = names.unique(subset=["type_id", "metric_id"], keep="first")
            join_on = ["type_id", "metric_id"]
        else:
            names = fetch_frame(
                export.con,
                f'SELECT "metricId", MIN("metricName") FROM {quote(info)} GROUP BY "metricId"',
                {"metric_id": pl.Int64, "metric": pl.String},
            )
    frame = frame.join(names, on=join_on, how="left")
    unnamed = frame.filter(pl.col("metric").is_null()).height
    if unnamed:
        warnings.append(
            f"{unnamed} GPU_METRICS samples have no name in TARGET_INFO_GPU_METRICS; named 'metric <id>'"
        )
        frame = frame.with_columns(
            metric=pl.coalesce(
                "metric", pl.concat_str(pl.lit("metric "), pl.col("metric_id").cast(pl.String))
            )
        )
    return _finish_metrics(frame, pw_to_cuda)


def _read_generic_events(
    export: Database, pw_to_cuda: dict[int, int | None], warnings: list[str]
) -> pl.DataFrame:
    """GPU metrics stored as JSON rows in GENERIC_EVENTS (nsys 2022.x / 2023.x)."""
    if not (export.has("GENERIC_EVENT_SOURCES") and export.has("GENERIC_EVENT_TYPES")):
        warnings.append(
            "GENERIC_EVENTS without GENERIC_EVENT_SOURCES/TYPES; cannot tell GPU metrics apart, skipped"
        )
        return empty_frame(GPU_METRICS_SCHEMA)
    sources = export.con.execute('SELECT "sourceId", "data" FROM GENERIC_EVENT_SOURCES').fetchall()
    metric_sources: list[int] = []
    for source_id, data in sources:
        try:
            desc = json.loads(data)
        except (TypeError, ValueError):
            continue
        if isinstance(desc, dict) and desc.get("Name") == "GpuMetrics":
            metric_sources.append(int(source_id))
            if desc.get("TimeSource") not in (None, "SessionNs"):
                warnings.append(f"GPU metrics time source is {desc.get('TimeSource')!r}, not session ns")
    if not metric_sources:
        return empty_frame(GPU_METRICS_SCHEMA)
    cols = export.columns("GENERIC_EVENTS")
    ts_cols = [c for c in ("timestamp", "rawTimestamp") if c in cols]
    if not ts_cols or not {"typeId", "data"} <= cols:
        warnings.append("GENERIC_EVENTS lacks timestamp/typeId/data columns; GPU metrics skipped")
        return empty_frame(GPU_METRICS_SCHEMA)
    ts_sql = f"COALESCE({', '.join('g.' + quote(c) for c in ts_cols)})"
    ids = ", ".join(str(s) for s in metric_sources)
    where = f'g."typeId" IN (SELECT "typeId" FROM GENERIC_EVENT_TYPES WHERE "sourceId" IN ({ids}))'
    schema = {"timestamp": pl.Int64, "type_id": pl.Int64, "metric": pl.String, "raw": pl.String}
    try:
        frame = fetch_frame(
            export.con,
            f'SELECT {ts_sql}, g."typeId", j.key, CAST(j.value AS TEXT) FROM GENERIC_EVENTS g, json_each(g."data") j '
            f"WHERE {where}",
            schema,
        )
    except sqlite3.OperationalError:  # SQLite built without JSON1: decode in polars instead
        rows = fetch_frame(
            export.con,
            f'SELECT {ts_sql}, g."typeId", g."data" FROM GENERIC_EVENTS g WHERE {where}',
            {"timestamp": pl.Int64, "type_id": pl.Int64, "data": pl.String},
        )
        if rows.height == 0:
            return empty_frame(GPU_METRICS_SCHEMA)
        decoded = rows.with_columns(pl.col("data").str.json_decode(infer_schema_length=None)).unnest("data")
        value_cols = [c for c in decoded.columns if c not in ("timestamp", "type_id")]
        frame = decoded.with_columns(pl.col(value_cols).cast(pl.String)).unpivot(
            index=["timestamp", "type_id"], on=value_cols, variable_name="metric", value_name="raw"
        )
    frame = frame.with_columns(value=pl.col("raw").cast(pl.Float64, strict=False))
    bad = frame.filter(pl.col("value").is_null() & pl.col("raw").is_not_null()).height
    if bad:
        warnings.append(f"{bad} GENERIC_EVENTS GPU-metric values are not numbers; dropped")
    frame = frame.filter(pl.col("value").is_not_null())
    return _finish_metrics(frame, pw_to_cuda)
