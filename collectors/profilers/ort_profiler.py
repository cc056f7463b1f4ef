"""ONNX Runtime profiler: the session is created with ``enable_profiling`` and the worker gzips the JSON that
``end_profiling()`` writes to ``{stem}.ort.json.gz``. ORT profiles from session creation on, so the profile also
holds the warm-up runs: the sidecar records ``warmup_iterations`` (the first that many ``model_run`` events
are warm-up; ``tracekit analyze --skip N`` drops them)."""

from __future__ import annotations
