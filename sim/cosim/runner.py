"""Co-simulation of the emitted Verilog: a compiled network on the accelerator in Icarus or
Verilator, driven by cocotb (`sim.cosim.testbench`), with the DRAM of `sim.memory_model`.

Builds go to a temporary folder removed at exit; each (configuration, program, simulator,
waveform support) is built once per process.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
from cocotb_tools.runner import Icarus, Runner, get_runner
from cocotb_tools.sim_versions import VerilatorVersion

from hwgen.accelerator import Accelerator
from hwgen.emit import TOP, emit
from planner.compile.network import CompiledNetwork
from planner.errors import HwgenError
from sim.cosim.job import JOB_ENV, Job, Outcome
from sim.rtl_sim import RtlRun

SIMULATORS = ("icarus", "verilator")
VERILATOR_MIN = "5.036"
"""cocotb 2's Verilator main loop calls `VerilatedVpi::evalNeeded` and `doInertialPuts`, added in 5.036."""
TESTBENCH = "sim.cosim.testbench"


class CosimError(HwgenError):
    """The simulation failed (a protocol assertion, a timeout, a simulator error)."""


@dataclass
class CosimRun(RtlRun):
    """`RtlRun` plus the cycles the testbench counted and the waveform file, if any."""

    testbench_cycles: int
    waves: Path | None


def unsupported(simulator: str) -> str | None:
    """Why `simulator` cannot co-simulate here, or None."""
    if shutil.which("iverilog" if simulator == "icarus" else "verilator") is None:
        return f"{simulator} is not installed"
    if simulator == "verilator":
        version = subprocess.run(["verilator", "--version"], capture_output=True, text=True).stdout.strip()
        if VerilatorVersion.from_commandline(version) < VerilatorVersion(VERILATOR_MIN):
            return f"{version} is older than {VERILATOR_MIN}, the oldest Verilator cocotb 2 builds with"
    return None


class _IcarusVcd(Icarus):
    """cocotb's Icarus runner, dumping VCD rather than FST when waves are on."""

    def _test_command(self) -> list[list[str]]:
        return [["-vcd" if arg == "-fst" else arg for arg in command] for command in super()._test_command()]


def emit_verilog(compiled: CompiledNetwork) -> str:
    """The accelerator's Verilog exactly as `hwgen generate` writes it (`hwgen.emit`)."""
    return emit(Accelerator(compiled.config, compiled.program))[0]


_root: Path | None = None
_builds: dict[tuple[str, str, bool], Runner] = {}  # (design, simulator, traced): a built runner


def _work_folder() -> Path:
    global _root
    if _root is None:
        _root = Path(tempfile.mkdtemp(prefix="hwgen-cosim-"))
        atexit.register(shutil.rmtree, _root, ignore_errors=True)
    return _root


def _design_key(compiled: CompiledNetwork) -> str:
    text = json.dumps({"config": compiled.config.to_dict(), "program": compiled.program.to_dict()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _build(compiled: CompiledNetwork, simulator: str, waves: bool) -> Runner:
    """The runner of a built simulation of this design (built on first use). Icarus builds always
    include cocotb's waveform dumper (idle unless a run asks for waves); Verilator traces only in
    builds for waves."""
    traced = waves or simulator == "icarus"
    key = (_design_key(compiled), simulator, traced)
    if key not in _builds:
        design = _work_folder() / key[0]
        source = design / f"{TOP}.v"
        if not source.exists():
            design.mkdir()
            source.write_text(emit_verilog(compiled))
        runner = _IcarusVcd() if simulator == "icarus" else get_runner(simulator)
        build_dir = design / f"{simulator}{'-traced' if traced else ''}"
        build_dir.mkdir()
        args = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O3"] if simulator == "verilator" else []
        try:
            runner.build(sources=[source], hdl_toplevel=TOP, build_dir=build_dir, build_args=args,
                         timescale=("1ns", "1ps"), waves=traced, log_file=build_dir / "build.log")
        except RuntimeError as error:
            raise CosimError(f"{simulator} build failed ({error}); see {build_dir / 'build.log'}") from None
        _builds[key] = runner
    return _builds[key]


def _failures(results: Path) -> str:
    """The failure messages in a cocotb results file."""
    if not results.is_file():
        return "the simulator ended without writing its results"
    root = ElementTree.parse(results).getroot()
    return "; ".join(element.get("message", "") for tag in ("failure", "error") for element in root.iter(tag))


def run_cosim(compiled: CompiledNetwork, x: np.ndarray, simulator: str = "icarus", waves: str | None = None, *,
              max_cycles: int = 5_000_000, stall: float = 0.0, seed: int = 0) -> CosimRun:
    """Run the int8 `(C, H, W)` input through the Verilog in `simulator`, like `sim.rtl_sim.run_rtl`;
    `waves` names a VCD file to write. Raises `CosimError` if the simulation fails."""
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator {simulator!r}: expected one of {', '.join(SIMULATORS)}")
    if reason := unsupported(simulator):
        raise CosimError(reason)
    runner = _build(compiled, simulator, waves is not None)
    folder = Path(tempfile.mkdtemp(prefix="run-", dir=_work_folder()))
    Job(compiled.config, compiled.program, compiled.dram_with_input(x), stall, seed, max_cycles).save(folder)
    wave_file = None if waves is None else Path(waves).resolve()
    plusargs, test_args = [], []
    if wave_file is not None:
        wave_file.parent.mkdir(parents=True, exist_ok=True)
        if simulator == "icarus":
            plusargs = [f"+dumpfile_path={wave_file}"]
        else:
            test_args = ["--trace-file", str(wave_file)]
    results = folder / "results.xml"
    try:
        runner.test(test_module=TESTBENCH, hdl_toplevel=TOP, test_dir=folder, results_xml=str(results),
                    extra_env={JOB_ENV: str(folder)}, plusargs=plusargs, test_args=test_args,
                    waves=wave_file is not None, log_file=folder / "sim.log")
    except (RuntimeError, SystemExit):  # cocotb exits when a test fails under pytest
        pass
    if not (folder / "outcome.json").is_file():
        raise CosimError(f"{simulator}: {_failures(results)}; see {folder / 'sim.log'}")
    outcome = Outcome.load(folder)
    outputs = {name: compiled.read_output(outcome.dram, name) for name in compiled.network.outputs}
    shutil.rmtree(folder)
    return CosimRun(outputs, outcome.cycles, outcome.traffic, outcome.counters, outcome.testbench_cycles, wave_file)
