"""Co-simulation of the emitted Verilog: a compiled network on the accelerator in Icarus or
Verilator, driven by cocotb (`sim.cosim.testbench`), with the DRAM of `dram_model.sv` (the
Verilog twin of `sim.memory_model.MemoryModel`, same seeded stalls).

Designs are emitted once per process and built once (`sim.cosim.builds`, cached on disk);
`run_cosim_batch` runs many inputs back to back in one simulation.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import numpy as np

from hwgen.accelerator import Accelerator
from hwgen.verilog import TOP, emit
from hwgen.sequencer_layouts import COUNTERS_LAYOUT
from planner.compile.network import CompiledNetwork
from common.errors import HwgenError
from common.files import staged_file
from sim.cosim.builds import Build, cached_build
from sim.cosim.harness import DRAM_MODEL, HARNESS_TOP, STALL_DRAWS, harness_verilog, unpack
from sim.cosim.job import (DUMP_FILE, IMAGE_FILE, JOB_ENV, OUTCOMES_FILE, STALLS_FILE, Job, Outcome, read_progress,
                           stalls_hex)
from sim.cosim.simulators import SIMULATORS, unsupported
from sim.rtl_sim import RtlRun

TESTBENCH = "sim.cosim.testbench"
PROGRESS_EVERY = 20_000
"""Simulated cycles between the testbench's progress reports (when a `progress` callback is given)."""
PROGRESS_POLL_SECONDS = 0.25


class CosimError(HwgenError):
    """The simulation cannot run or failed (a DRAM protocol error, a timeout, a simulator error)."""


@dataclass
class CosimRun(RtlRun):
    """`RtlRun` plus the cycles the testbench counted and the waveform file, if any."""

    testbench_cycles: int
    waves: Path | None


_designs: dict[str, dict[str, str]] = {}  # config and program: the sources of the co-simulation


def design_sources(compiled: CompiledNetwork) -> dict[str, str]:
    """The Verilog files of the co-simulation (file name to text): the accelerator exactly as
    `hwgen generate` writes it (`hwgen.verilog`), the DRAM model and the top level."""
    key = json.dumps({"config": compiled.config.to_dict(), "program": compiled.program.to_dict(),
                      "dram_bytes": len(compiled.image)}, sort_keys=True)
    if key not in _designs:
        accelerator = Accelerator(compiled.config, compiled.program)
        _designs[key] = {f"{TOP}.v": emit(accelerator)[0], DRAM_MODEL.name: DRAM_MODEL.read_text(),
                         f"{HARNESS_TOP}.v": harness_verilog(accelerator, len(compiled.image))}
    return _designs[key]


def check_simulator(simulator: str) -> None:
    """Raise `CosimError` unless `simulator` is one of `SIMULATORS` and can run here."""
    if simulator not in SIMULATORS:
        raise CosimError(f"simulator {simulator!r}: expected one of {', '.join(SIMULATORS)}")
    if reason := unsupported(simulator):
        raise CosimError(reason)


def build_design(compiled: CompiledNetwork, simulator: str, trace: str | None = None) -> Build:
    """The simulator's build of the co-simulation, from the cache or made now; `trace` is the
    waveform format a Verilator build records (None: no waveforms)."""
    check_simulator(simulator)
    return cached_build(design_sources(compiled), HARNESS_TOP, simulator, trace if simulator == "verilator" else None)


def wave_format(waves: str | Path) -> str:
    """The waveform format of a file name: FST for a `.fst` file, else VCD."""
    return "fst" if Path(waves).suffix.lower() == ".fst" else "vcd"


def _failures(folder: Path) -> str:
    """Why a simulation ended without outcomes: the DRAM model's errors, else cocotb's."""
    log = folder / "sim.log"
    errors = [line.strip() for line in log.read_text(errors="replace").splitlines()
              if "hwgen_dram: error" in line] if log.is_file() else []
    if errors:
        return "; ".join(errors)
    results = folder / "results.xml"
    if not results.is_file():
        return "the simulator ended without writing its results"
    root = ElementTree.parse(results).getroot()
    return "; ".join(element.get("message", "") for tag in ("failure", "error") for element in root.iter(tag))


@contextmanager
def job_folder() -> Iterator[Path]:
    """A fresh folder for one simulation's files, removed when the block ends normally; kept
    (with the simulator's log) when it raises."""
    folder = Path(tempfile.mkdtemp(prefix="hwgen-cosim-"))
    yield folder
    shutil.rmtree(folder)


def run_test(build: Build, test_module: str, folder: Path, result: str, *, plusargs: tuple[str, ...] = (),
             test_args: tuple[str, ...] = (), waves: bool = False, waves_as: str = "vcd") -> None:
    """Run the cocotb test module `test_module` on `build`, its job files in `folder` (named by
    `JOB_ENV`); raises `CosimError` with the simulation's errors unless it wrote `folder/result`."""
    try:
        build.runner(waves_as).test(
            test_module=test_module, hdl_toplevel=build.top, hdl_toplevel_lang="verilog", build_dir=build.build_dir,
            test_dir=folder, results_xml=str(folder / "results.xml"), extra_env={JOB_ENV: str(folder)},
            plusargs=list(plusargs), test_args=list(test_args), waves=waves, log_file=folder / "sim.log")
    except (RuntimeError, SystemExit):  # cocotb exits when a test fails under pytest
        pass
    if not (folder / result).is_file():
        raise CosimError(f"{build.simulator}: {_failures(folder)}; see {folder / 'sim.log'}")


@contextmanager
def polling(poll: Callable[[], None], seconds: float = PROGRESS_POLL_SECONDS) -> Iterator[None]:
    """While the block runs, call `poll` every `seconds` from a thread, and once more after the
    block (so what a short simulation reported is seen too)."""
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(seconds):
            poll()

    watcher = threading.Thread(target=watch, name="cosim-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
        poll()


@contextmanager
def _watching(folder: Path, progress: Callable[[int], None] | None) -> Iterator[None]:
    """While the block runs, call `progress` with each new cycle count the testbench reports."""
    if progress is None:
        yield
        return
    last = None

    def poll() -> None:
        nonlocal last
        cycles = read_progress(folder)
        if cycles is not None and cycles != last:
            progress(cycles)
            last = cycles

    with polling(poll):
        yield


def _simulate(build: Build, job: Job, stall: float, seed: int, waves: Path | None, waves_as: str,
              progress: Callable[[int], None] | None = None) -> list[Outcome]:
    """Run the job in a fresh folder, calling `progress` with the cycles reported; the folder is
    removed unless the simulation fails (its log stays)."""
    with job_folder() as folder:
        job.save(folder)
        draws = 0
        if stall > 0:
            draws = STALL_DRAWS
            (folder / STALLS_FILE).write_bytes(stalls_hex(np.random.default_rng(seed).random(draws) < stall))
        plusargs = (f"+hwgen_dram_image={folder / IMAGE_FILE}", f"+hwgen_dram_dump={folder / DUMP_FILE}",
                    f"+hwgen_dram_stalls={folder / STALLS_FILE}", f"+hwgen_dram_draws={draws}")
        test_args: tuple[str, ...] = ()
        if waves is not None:
            if build.simulator == "icarus":
                plusargs += (f"+dumpfile_path={waves}",)
            else:
                test_args = ("--trace-file", str(waves))
        with _watching(folder, progress):
            run_test(build, TESTBENCH, folder, OUTCOMES_FILE, plusargs=plusargs, test_args=test_args,
                     waves=waves is not None, waves_as=waves_as)
        return Outcome.load_all(folder)


def run_cosim_batch(compiled: CompiledNetwork, xs: np.ndarray, simulator: str = "icarus", waves: str | None = None, *,
                    max_cycles: int = 5_000_000, stall: float = 0.0, seed: int = 0,
                    progress: Callable[[int], None] | None = None,
                    progress_every: int = PROGRESS_EVERY) -> list[CosimRun]:
    """Run each int8 `(C, H, W)` input of `xs` through the Verilog in `simulator`, back to back in one
    simulation, each like `sim.rtl_sim.run_rtl` (from the reset state, with the same seeded stalls);
    `waves` names a waveform file to write (FST if it ends in `.fst`, else VCD); `progress` is
    called with the running input's cycles so far, every `progress_every` simulated cycles (as
    often as the simulator gets there: polled a few times a second). Raises `CosimError` if the
    simulation fails."""
    if len(xs) == 0:
        raise CosimError("no inputs to simulate")
    wave_file = None if waves is None else Path(waves).resolve()
    trace = None if waves is None else wave_format(waves)
    build = build_design(compiled, simulator, trace)
    job = Job(np.stack([compiled.dram_with_input(x) for x in xs]), compiled.config.dram.bus_width_bits // 8, max_cycles,
              progress_every if progress is not None else 0)
    with staged_file(wave_file) as staged:
        outcomes = _simulate(build, job, stall, seed, staged, trace or "vcd", progress)
    runs = []
    for outcome in outcomes:
        counters = unpack(COUNTERS_LAYOUT, outcome.counters)
        cycles = counters.pop("cycles")
        outputs = {name: compiled.read_output(outcome.dram, name) for name in compiled.network.outputs}
        runs.append(CosimRun(outputs, cycles, outcome.traffic, counters, outcome.testbench_cycles, wave_file))
    return runs


def run_cosim(compiled: CompiledNetwork, x: np.ndarray, simulator: str = "icarus", waves: str | None = None, *,
              max_cycles: int = 5_000_000, stall: float = 0.0, seed: int = 0,
              progress: Callable[[int], None] | None = None, progress_every: int = PROGRESS_EVERY) -> CosimRun:
    """Run the int8 `(C, H, W)` input through the Verilog in `simulator`, like `sim.rtl_sim.run_rtl`;
    `waves` and `progress` as in `run_cosim_batch`. Raises `CosimError` if the simulation fails."""
    return run_cosim_batch(compiled, x[None], simulator, waves, max_cycles=max_cycles, stall=stall, seed=seed,
                           progress=progress, progress_every=progress_every)[0]
