"""Small file helpers: atomic writes and read-only opening."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` only if the block succeeds.

    A crash or Ctrl-C leaves ``target`` untouched (either absent or its previous content).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
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
