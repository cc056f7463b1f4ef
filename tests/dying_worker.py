"""A unit of many-trace work (:func:`tracekit.fleet.run.analyze_one`'s signature) whose worker process dies
on a trace named ``*dies*``, as one killed by the OOM killer or a crash in native code does: for the pool
tests (a module, so that the fork server's workers can import it)."""

from __future__ import annotations

import os
import signal
from typing import Any

from tracekit.fleet.run import Outcome, analyze_one


def work(path: str, options: tuple[Any, ...], *args: Any) -> Outcome:
    if "dies" in os.path.basename(path):
        os.kill(os.getpid(), signal.SIGKILL)
    return analyze_one(path, options, *args)
