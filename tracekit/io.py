"""Small file helpers: atomic writes that never replace an input, and output folders.

Every file a command reads as input is registered here (:func:`register_input`; the readers and the run-directory
loader do it), and every write goes through :func:`atomic_path`, which refuses a target that is one of those
inputs: the same path, the same file through a symbolic link, or the same inode through a hard link. So no
command can write over a trace it read, whatever ``-o`` says and whatever a command writes inside an output
folder.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from tracekit.errors import TracekitError

#: (device, inode) and resolved path of every input file read in this process.
_INPUT_INODES: set[tuple[int, int]] = set()
_INPUT_PATHS: set[Path] = set()


def register_input(path: str | Path) -> None:
    """Remember ``path`` as an input of this process: :func:`atomic_path` will refuse to write over it."""
    path = Path(path)
    _INPUT_PATHS.add(path.resolve())
    with contextlib.suppress(OSError):
        st = path.stat()
        _INPUT_INODES.add((st.st_dev, st.st_ino))


def forget_inputs() -> None:
    """Clear the input registry (for long-lived processes and tests that run several commands)."""
    _INPUT_INODES.clear()
    _INPUT_PATHS.clear()


def is_input(path: str | Path) -> bool:
    """Whether writing ``path`` would replace a registered input (same resolved path or same inode)."""
    path = Path(path)
    if path.resolve() in _INPUT_PATHS or path.absolute() in _INPUT_PATHS:
        return True
    try:
        st = path.stat()
    except OSError:
        return False
    return (st.st_dev, st.st_ino) in _INPUT_INODES


def check_outputs(outputs: Iterable[str | Path], inputs: Iterable[str | Path]) -> None:
    """Refuse (exit 2, one line) before any work when an output file is one of ``inputs``.

    Commands call this with their ``-o`` file and their input files so that the refusal comes first; the
    registry check inside :func:`atomic_path` is the safety net for every other write.
    """
    for path in inputs:
        if Path(path).is_file():
            register_input(path)
    for out in outputs:
        if is_input(out):
            raise TracekitError("refusing to write over an input file (choose another -o)", out)


def output_dir(path: str | Path) -> Path:
    """Create the output folder ``path`` if needed, but only its last level: its parent must exist."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise TracekitError("exists and is not a folder", path)
    if not path.parent.is_dir():
        raise TracekitError(f"cannot create the output folder: {path.parent} does not exist", path)
    path.mkdir(exist_ok=True)
    return path


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` only if the block succeeds.

    A crash or Ctrl-C leaves ``target`` untouched (either absent or its previous content). The target's folder
    must exist (nothing is created silently), and the target must not be an input of this process.
    """
    target = Path(target)
    if is_input(target):
        raise TracekitError("refusing to write over an input file", target)
    if not target.parent.is_dir():
        raise TracekitError(f"cannot write: the folder {target.parent} does not exist", target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    # mkstemp makes the file 0600; give it the permissions a plain open() would (0666 less the umask).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_path, 0o666 & ~umask)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text_atomic(target: str | Path, text: str) -> None:
    """Write ``text`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text)


def write_bytes_atomic(target: str | Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
