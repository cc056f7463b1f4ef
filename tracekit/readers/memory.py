"""How the reading process uses memory and the CPU around a read, kept here so that no command or analyzer
has to know: polars' allocator settings (:func:`program_allocator`, :func:`use_huge_pages`) and the numpy
import the analysis needs, started on a thread while a trace is read (:func:`warm_numpy`).

Measurements behind these settings: benchmarks/README.md ("Where the time goes")."""

from __future__ import annotations

import os
import sys
import threading

#: polars' jemalloc settings for the ``tracekit`` program (unless ``_RJEM_MALLOC_CONF`` is set already):
#: freed pages go back to the system after 200 ms (polars' own default is 500 ms) and "muzzy" ones at once,
#: so that a short run's peak is closer to what it uses
ALLOCATOR_CONF = "dirty_decay_ms:200,muzzy_decay_ms:0"
#: what :func:`use_huge_pages` adds to :data:`ALLOCATOR_CONF`
HUGE_PAGES_CONF = ",thp:always"
#: the module :func:`warm_numpy` imports (numpy with it): ``numpy.ma``, which polars loads the first time it
#: makes a series of a numpy array and numpy itself leaves unloaded
WARMED_NUMPY_MODULE = "numpy.ma"


def program_allocator() -> None:
    """The ``tracekit`` program's allocator setting (:data:`ALLOCATOR_CONF`), unless the user set one: polars
    appends ``_RJEM_MALLOC_CONF`` to its own defaults, so the user's setting wins. Only before polars loads."""
    os.environ.setdefault("_RJEM_MALLOC_CONF", ALLOCATOR_CONF)


def use_huge_pages() -> None:
    """Have polars' allocator back its memory with transparent huge pages (where the system allows them on
    request, as its default ``madvise`` setting does): for a large Kineto file whose frames are built batch by
    batch while worker processes decode it, a page fault then maps 2 MB instead of 4 KB. Only before polars is
    loaded, and only over the program's own setting (a user's ``_RJEM_MALLOC_CONF`` stays as it is); not for
    SQLite exports (no gain there, and a higher peak)."""
    if "polars" not in sys.modules and os.environ.get("_RJEM_MALLOC_CONF") == ALLOCATOR_CONF:
        os.environ["_RJEM_MALLOC_CONF"] = ALLOCATOR_CONF + HUGE_PAGES_CONF


def warm_numpy() -> None:
    """Import numpy (which the analysis of a trace uses; ~0.2 s of Python module code) on a background thread
    while the trace is read, which spends its time in native code without the GIL. Nothing but numpy and its
    own modules is imported there, so no import lock can be taken out of order."""
    if WARMED_NUMPY_MODULE not in sys.modules:
        threading.Thread(
            target=__import__, args=(WARMED_NUMPY_MODULE,), name="prefetch-numpy", daemon=True
        ).start()
