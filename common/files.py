"""Atomic file output: a failure never leaves a half-written file behind."""
from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import numpy as np


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to a temporary file next to `path`, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


def atomic_save_npy(path: str | Path, array: np.ndarray) -> Path:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return atomic_write_bytes(path, buffer.getvalue())
