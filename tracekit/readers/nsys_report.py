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

import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tracekit import progress
from tracekit.collectors.profilers.nsys import find_nsys  # (the nsys tracekit collect runs)
from tracekit.errors import TraceFormatError, TracekitError
from tracekit.model import FrameSpec, Trace

#: Seconds an export may take before it is given up (an export of 10^7 kernels takes minutes, not hours).
EXPORT_TIMEOUT_S = 3600
#: Seconds between looks at the export's size while nsys writes it.
POLL_S = 0.1


def export_hint(path: Path) -> str:
    """The command that exports ``path`` by hand, each name quoted for a POSIX shell where it must be (a name
    with a space, a quote...: as given, nsys got its words as separate inputs)."""
    return f"nsys export --type sqlite -o {shlex.quote(path.stem + '.sqlite')} {shlex.quote(path.name)}"


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
    # (named as nsys names its reports, whatever the file's own name: the format was told by its content)
    link = folder / ("report.qdrep" if report.suffix == ".qdrep" else "report.nsys-rep")
    link.symlink_to(report.resolve())
    out = folder / "report.sqlite"
    command = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(out), str(link)]
    log = folder / "nsys.log"
    with open(log, "w+", errors="replace") as text:
        try:
            process = subprocess.Popen(
                command,
                stdout=text,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: stopped whole (:func:`_wait`)
            )
        except OSError as exc:
            raise TraceFormatError(f"could not run {nsys} export: {exc}", report) from exc
        code = _wait(process, out, report)
        text.seek(0)
        said = text.read()
    if code != 0 or not out.is_file():
        raise TraceFormatError(
            f"{os.path.basename(nsys)} export could not export this report: {_last_line(said, code)}"
            f"{_not_a_report(report)}",
            report,
        )
    return out


def _not_a_report(report: Path) -> str:
    """What a failed export means when ``report`` does not begin as an Nsight Systems report does (it came
    here by its name alone): a damaged file, or another file so named; "" when it does."""
    from tracekit.readers import NSYS_REPORT_MAGIC

    try:
        with open(report, "rb") as fh:
            head = fh.read(len(NSYS_REPORT_MAGIC))
    except OSError:
        return ""
    if head == NSYS_REPORT_MAGIC:
        return ""
    return (
        f" (the file does not begin as an Nsight Systems report does: damaged, or not a {report.suffix} report; "
        "profile again, or give the report's SQLite export)"
    )


def _wait(process: subprocess.Popen[bytes], out: Path, report: Path) -> int:
    """``process``'s exit status once it ends; the export (``out``) is held to the reading limits as it grows
    (:class:`tracekit.limits.InflateGuard`, against the report's size: a report is compressed) and nsys'
    memory counts in the memory ceiling's; past a limit, or :data:`EXPORT_TIMEOUT_S`, nsys is stopped."""
    from tracekit import limits

    guard = limits.InflateGuard(report, report.stat().st_size)
    limits.watch_process(process.pid)
    deadline = time.monotonic() + EXPORT_TIMEOUT_S
    try:
        while True:
            try:
                return process.wait(POLL_S)
            except subprocess.TimeoutExpired:
                pass
            grown = out.stat().st_size if out.exists() else 0
            guard.add(grown - guard.total)
            if time.monotonic() > deadline:
                raise TraceFormatError(f"nsys export took over {EXPORT_TIMEOUT_S} s; stopped", report)
    finally:
        limits.unwatch_process(process.pid)
        if process.poll() is None:  # nsys and anything it started
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _last_line(said: str, code: int) -> str:
    """The last meaningful line nsys printed (``said``, read in text mode: its progress bar's carriage
    returns end lines too), its progress lines dropped, each line cut where its printable text ends: for a
    damaged file nsys quotes the bytes it could not read ('Version number is invalid: <binary>'), and a line
    of those bytes alone, or of punctuation, says nothing."""
    lines = [_printable_part(line) for line in said.splitlines()]
    lines = [
        line for line in lines if sum(c.isalpha() for c in line) >= 3 and not line.startswith("Exporting")
    ]
    return lines[-1] if lines else f"exit status {code}, no message"


def _printable_part(line: str) -> str:
    """``line`` up to its first character that is not printable ASCII (tabs aside), stripped, without a
    trailing colon left by the cut."""
    for i, c in enumerate(line):
        if not (" " <= c <= "~" or c == "\t"):
            line = line[:i]
            break
    return line.strip().rstrip(":").rstrip()


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
            raise type(exc)(f"{exc.message} (in its SQLite export)", path) from exc
    trace.meta["path"] = str(path)
    if "synthetic" in path.name.lower():  # (the export's temporary name cannot say it: the report's does)
        trace.meta["synthetic"] = True
    return trace
