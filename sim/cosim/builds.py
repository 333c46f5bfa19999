"""Simulator builds of co-simulation designs, cached on disk under `rtl_out/cosim/` by the hash
of everything they are built from (the Verilog sources, the simulator, its version and cocotb's,
the build options, among them the waveform format compiled in), so a design is compiled once
however often it runs.

A build is made in a temporary folder beside the cache entry and renamed into place when it is
complete: an entry that exists is whole, and a failed or interrupted build leaves no entry.
Processes wanting the same build take turns (a lock file per entry, removed once the entry is
there), so it is made once.
Verilator's intermediate C++ and object files are removed; the executable is kept.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cocotb_tools.runner import Runner

from common.errors import HwgenError
from sim.cosim.simulators import build_options, identity, make_runner

CACHE_ROOT = Path("rtl_out") / "cosim"


class BuildError(HwgenError):
    """The simulator could not build the design."""


@dataclass(frozen=True)
class Build:
    """A built design: `folder/build` holds what the simulator runs, `folder/src` its sources."""

    folder: Path
    simulator: str
    top: str

    @property
    def build_dir(self) -> Path:
        return self.folder / "build"

    def runner(self, wave_format: str = "fst") -> Runner:
        """A cocotb runner ready to `test()` this build."""
        return make_runner(self.simulator, wave_format)


def build_key(sources: dict[str, str], simulator: str, trace: str | None) -> str:
    """The cache key: a hash of the sources (file name to text) and of what else the build depends on."""
    text = json.dumps({"sources": sources, "simulator": simulator, "tools": identity(simulator),
                       "options": build_options(simulator, trace)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _prune(build_dir: Path, keep: str) -> None:
    for path in build_dir.iterdir():
        if path.is_dir():
            shutil.rmtree(path)
        elif path.name != keep and path.suffix != ".log":
            path.unlink()


def _make(sources: dict[str, str], top: str, simulator: str, trace: str | None, folder: Path) -> None:
    """Build into a staging folder beside `folder`, then rename it into place."""
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        (staging / "src").mkdir()
        paths = [staging / "src" / name for name in sources]
        for path, text in zip(paths, sources.values()):
            path.write_text(text)
        build_dir = staging / "build"
        build_dir.mkdir()
        try:
            make_runner(simulator).build(sources=paths, hdl_toplevel=top, build_dir=build_dir, timescale=("1ns", "1ps"),
                                         log_file=build_dir / "build.log", **build_options(simulator, trace))
        except (RuntimeError, SystemExit) as error:
            log = (build_dir / "build.log").read_text(errors="replace").strip().splitlines()[-20:]
            raise BuildError(f"{simulator} could not build {top} ({error}):\n" + "\n".join(log)) from None
        if simulator == "verilator":
            _prune(build_dir, top)
        try:
            os.rename(staging, folder)
        except OSError:  # another process has just made the same build
            if not folder.is_dir():
                raise
            shutil.rmtree(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def cached_build(sources: dict[str, str], top: str, simulator: str, trace: str | None = None,
                 root: Path = CACHE_ROOT) -> Build:
    """The build of `sources` (file name to Verilog text) with top level `top`, made if not cached.
    Processes building the same design wait for each other (a lock file per cache key)."""
    folder = root / build_key(sources, simulator, trace)
    if not folder.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        lock_path = root / f".{folder.name}.lock"
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not folder.is_dir():
                _make(sources, top, simulator, trace, folder)
                lock_path.unlink(missing_ok=True)  # whoever comes later finds the entry
    return Build(folder, simulator, top)
