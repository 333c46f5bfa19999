"""Atomic file output: a failure never leaves a half-written file behind."""
from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from common.errors import OutputError


def check_output_file(path: str | Path, label: str) -> Path:
    """`path` if a file can be written there (run before the work that makes it): not a folder,
    not under a file; missing folders are created on writing."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{label} {path}: is a folder; give a file name")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{label} {path}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise OutputError(f"{label} {path}: folder {parent} is not writable")
            break
    return path


def check_output_folder(path: str | Path, label: str) -> Path:
    """`path` if a folder can be made or written there: not a file, not under a file."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{label} {path}: is a file, not a folder")
    check_output_file(path / "_", label)
    return path


def _usual_mode(name: str) -> None:
    """mkstemp creates 0600; give the file the mode a plain `open` would."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(name, 0o666 & ~umask)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to a temporary file next to `path`, then rename it into place."""
    with staged_file(Path(path)) as staged:
        staged.write_bytes(data)
    return Path(path)


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


def atomic_save_npy(path: str | Path, array: np.ndarray) -> Path:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return atomic_write_bytes(path, buffer.getvalue())


@contextmanager
def staged_file(path: Path | None) -> Iterator[Path | None]:
    """A temporary file beside `path` that becomes `path` when the block succeeds (None for
    None): a writer interrupted half-way (an error, Ctrl-C) leaves no truncated file."""
    if path is None:
        yield None
        return
    path = check_output_file(path, "output")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise OutputError(f"output {path}: cannot write ({error.strerror})") from None
    os.close(handle)
    try:
        _usual_mode(name)
        yield Path(name)
        os.replace(name, path)
    except OSError as error:
        raise OutputError(f"output {path}: cannot write ({error.strerror or error})") from None
    finally:
        Path(name).unlink(missing_ok=True)
