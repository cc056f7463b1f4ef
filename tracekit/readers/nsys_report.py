"""Reader for Nsight Systems reports (``.nsys-rep``, and the older ``.qdrep``): exported to SQLite by the
installed ``nsys`` (``nsys export --type sqlite``, as ``nsys stats`` does for itself), then read by
:mod:`tracekit.readers.nsys_sqlite`.

The export goes to a temporary folder that is removed after the read: nothing is written beside the
report, and the report is read, never changed (nsys is given a link to it inside the temporary folder, so
that whatever it might write beside its input lands there too). ``meta["path"]`` is the report's path and
every error names the report. ``meta["format_version"]`` is the Nsight Systems version that exported it
(what the export records).

Without ``nsys`` (``TRACEKIT_NSYS``, else ``PATH``) the read fails with one line that says how to export the
report by hand. A report that the installed nsys cannot export (a newer report version, a damaged file) fails
with the last line nsys printed. With ``--cache`` the exported frames are kept like any trace's (keyed by the
report's content), so a second analysis exports nothing.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from tracekit import progress
from tracekit.errors import TraceFormatError, TracekitError
from tracekit.model import FrameSpec, Trace

#: Seconds an export may take before it is given up (an export of 10^7 kernels takes minutes, not hours).
EXPORT_TIMEOUT_S = 3600


def find_nsys() -> str | None:
    """The nsys executable that exports reports (``TRACEKIT_NSYS`` overrides PATH), or None; the same one
    ``tracekit collect`` runs."""
    from tracekit.collectors.profilers.nsys import find_nsys as find

    return find()


def export_hint(path: Path) -> str:
    """The command that exports ``path`` by hand."""
    return f"nsys export --type sqlite -o {path.stem}.sqlite {path.name}"


def export(report: Path, folder: Path) -> Path:
    """``report`` exported to SQLite inside ``folder`` (which the caller removes); raises TraceFormatError
    (naming the report) when nsys is missing or fails."""
    nsys = find_nsys()
    if not nsys:
        raise TraceFormatError(
            "an Nsight Systems report, and nsys (Nsight Systems) is not installed to export it: install it "
            f"(or set TRACEKIT_NSYS), or export it where nsys is: {export_hint(report)}",
            report,
        )
    link = folder / ("report" + (report.suffix or ".nsys-rep"))
    link.symlink_to(report.resolve())
    out = folder / "report.sqlite"
    command = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(out), str(link)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, errors="replace", timeout=EXPORT_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TraceFormatError(f"could not run {nsys} export: {exc}", report) from exc
    if done.returncode != 0 or not out.is_file():
        raise TraceFormatError(
            f"{os.path.basename(nsys)} export could not export this report: {_last_line(done)}", report
        )
    return out


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    """The last meaningful line nsys printed (its progress bars, carriage returns, are dropped)."""
    lines = [
        line.strip()
        for text in (done.stderr, done.stdout)
        for line in text.replace("\r", "\n").splitlines()
        if line.strip() and not line.lstrip().startswith("Exporting")
    ]
    return lines[-1] if lines else f"exit status {done.returncode}, no message"


def read(path: Path, frames: FrameSpec = None) -> Trace:
    """Export the report at ``path`` to a temporary SQLite file and read that (see the module docstring);
    ``frames`` as for :func:`tracekit.readers.nsys_sqlite.read`."""
    from tracekit.readers import nsys_sqlite

    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="tracekit-nsys-export-") as tmp:
        with progress.task(f"exporting {path.name} with nsys"):
            sqlite = export(path, Path(tmp))
        try:
            trace = nsys_sqlite.read(sqlite, frames=frames)
        except TracekitError as exc:  # name the report, not the temporary export
            message = exc.message.replace(str(sqlite), path.name)
            raise type(exc)(f"{message} (in its SQLite export)", path) from exc
    trace.meta["path"] = str(path)
    return trace
