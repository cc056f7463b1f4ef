"""Shared test fixtures: where the real traces live (skipped when absent) and the sample traces."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]

# Tests write only inside pytest's temporary folders: no hypothesis example database in the checkout.
settings.register_profile("tracekit", database=None, deadline=None)
settings.load_profile("tracekit")


def pytest_configure(config: pytest.Config) -> None:
    """Point every cache a test could fill (ONNX exports, matplotlib) into pytest's temporary folder.

    Done at configure time, before test modules import matplotlib. Without this, the end-to-end collection
    writes a 435 MB ONNX export into ~/.cache/tracekit.
    """
    # A run started in the background of a non-interactive shell (`bash .ci/run &`, nohup, cron) inherits
    # SIGINT ignored, and Python then installs no KeyboardInterrupt handler: the Ctrl-C tests (in this process
    # and in the tracekit processes they start, which inherit the disposition) would see nothing happen.
    # Give SIGINT its usual handler, as an interactive shell would.
    import signal
    import threading

    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    ):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    factory = pytest.TempPathFactory.from_config(config, _ispytest=True)
    root = factory.getbasetemp() / "caches"
    root.mkdir(exist_ok=True)
    os.environ["TRACEKIT_CACHE"] = str(root / "tracekit")
    os.environ["MPLCONFIGDIR"] = str(root / "matplotlib")


@pytest.fixture(autouse=True)
def _fresh_input_registry() -> None:
    """Each test starts with no registered inputs (tracekit.io refuses to write over inputs of the process)."""
    from tracekit.io import forget_inputs

    forget_inputs()


#: what a Dask nanny sets in the process that runs it (its ``pre-spawn-environ``, for the worker processes it
#: starts) and leaves set: a test with a LocalCluster would hand them to every later test of the process
NANNY_ENVIRON = ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@pytest.fixture(autouse=True)
def _no_nanny_environ_left() -> Iterator[None]:
    """Each test leaves the nanny's variables as it found them, whatever LocalCluster it started."""
    before = {name: os.environ.get(name) for name in NANNY_ENVIRON}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


SAMPLE_TRACES = REPO / "sample_traces"
REAL_TRACES = Path(os.environ.get("TRACEKIT_REAL_TRACES", REPO.parent / "shared" / "real_traces"))


def pytest_report_header(config: pytest.Config) -> str:
    """Say whether the real-trace tests run: without ../shared/real_traces they are skipped, and a green run
    says nothing of them."""
    if REAL_TRACES.is_dir():
        return f"real traces: {REAL_TRACES}"
    return (
        f"real traces: {REAL_TRACES} is absent: the real-trace tests are skipped (TRACEKIT_REAL_TRACES=DIR)"
    )


@pytest.fixture
def real_traces() -> Path:
    """../shared/real_traces beside the checkout; the test is skipped when it is absent."""
    if not REAL_TRACES.is_dir():
        pytest.skip("../shared/real_traces is absent")
    return REAL_TRACES


def real_trace(*parts: str) -> Path:
    """Path of one real trace; skips the calling test when it is absent."""
    path = REAL_TRACES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path


_INFLATED: dict[Path, Path] = {}


def inflated(path: Path) -> Path:
    """A plain copy of the gzipped sample export ``path`` (``x.sqlite.gz``), for tests that hand the SQLite
    file itself to sqlite3 or to a fake nsys: made once per test session in a temporary folder (removed at
    exit), never in the checkout."""
    import atexit
    import gzip
    import shutil
    import tempfile

    if path not in _INFLATED:
        folder = Path(tempfile.mkdtemp(prefix="tracekit-tests-"))
        atexit.register(shutil.rmtree, folder, True)
        plain = folder / path.name.removesuffix(".gz")
        with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        _INFLATED[path] = plain
    return _INFLATED[path]


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of the test's own for what tracekit writes to the system's temporary folder (an
    export of a report, an inflated copy of a gzipped export), to see that it is removed."""
    import tempfile

    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder
