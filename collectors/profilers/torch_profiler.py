"""torch.profiler (Kineto): the worker profiles only the timed iterations (warm-up runs before the profiler
starts), each inside ``record_function("iteration")``, and writes the chrome trace gzipped as
``{stem}.torch.json.gz``. See :func:`tracekit.collectors.worker.run_config`."""

from __future__ import annotations
