"""A compiled network on the accelerator with SDRAM main memory in Verilator (or Icarus), driven
by cocotb: the Verilog of `Accelerator` + `SdramMainMemory`, and the chip the same Python
datasheet model (`sim.sdram.device.SdramDevice`) that `boards.sdram.simulation.run_on_sdram`
uses, clocked once per edge by the testbench (`boards.sdram.cosim_testbench`). Runs what the
Amaranth simulation runs, with the same cycles, a few hundred times faster:

    run = run_cosim_on_sdram(compiled, x)   # RtlRun: outputs, cycles, traffic, counters

Builds are cached (`sim.cosim.builds`). A command the datasheet forbids raises
`SdramViolation`, as in the Amaranth simulation; progress goes to stderr every 100,000 cycles.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from boards.sdram.controller import initialization_cycles
from boards.sdram.cosim_job import OUTCOME_FILE, PIN_NAMES, PROGRESS_FILE, STATUS_LAYOUT, SdramJob, SdramOutcome
from boards.sdram.memory import SdramMainMemory
from boards.sdram.simulation import DRAIN_CYCLES
from hwgen.accelerator import Accelerator
from hwgen.memory_port import MemoryPort
from hwgen.sequencer_layouts import COUNTERS_LAYOUT
from hwgen.verilog import emit
from planner.compile.network import CompiledNetwork
from sim.cosim.builds import Build, cached_build
from sim.cosim.harness import public_top, unpack
from sim.cosim.job import STATS
from sim.cosim.runner import CosimError, check_simulator, job_folder, polling, run_test
from sim.memory_model import MemoryStats
from sim.rtl_sim import RtlRun, SimulationTimeout
from sim.sdram.chips import IS42S16160G_7, SdramChip
from sim.sdram.device import SdramViolation

TOP, INNER = "hwgen_sdram_cosim", "accelerator_on_sdram"
TESTBENCH = "boards.sdram.cosim_testbench"
PROGRESS_EVERY = 100_000

Progress = Callable[[int, float], None]
"""Called with the cycles run since `start` and the simulated cycles per second so far (from a
thread watching the simulation)."""


def print_progress(cycles: int, rate: float) -> None:
    """The default `Progress`: a line on stderr."""
    print(f"sdram cosim: {cycles:,} cycles, {rate:,.0f} cycles/s", file=sys.stderr, flush=True)


class AcceleratorOnSdram(wiring.Component):
    """The accelerator with `SdramMainMemory` (`chip` at `clock_mhz`, all of it) as main memory;
    `status` carries the chip's pins and `done`, `dq_i` is the chip's read data, and the
    traffic counters, named like `MemoryStats` fields, count the accelerator's port as
    `boards.sdram.simulation.count_traffic` does."""

    def __init__(self, compiled: CompiledNetwork, chip: SdramChip, clock_mhz: float):
        config = compiled.config
        self.accelerator = Accelerator(config, compiled.program)
        if "program_write" in self.accelerator.signature.members:
            raise CosimError("the SDRAM co-simulation needs the program in ROM (template.program_memory), "
                             "it does not write an SPRAM program memory")
        self.memory = SdramMainMemory(MemoryPort.from_config(config.dram), chip.bytes, chip, clock_mhz)
        super().__init__({"start": In(1), "status": Out(STATUS_LAYOUT), "dq_i": In(16),
                          "counters": Out(COUNTERS_LAYOUT), **{name: Out(64) for name in STATS}})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.accelerator, m.submodules.memory = accelerator, memory = self.accelerator, self.memory
        wiring.connect(m, accelerator.port, memory.port)
        m.d.comb += [accelerator.start.eq(self.start), self.counters.eq(accelerator.counters),
                     self.status.done.eq(accelerator.done), memory.sdram.dq_i.eq(self.dq_i),
                     *(self.status[name].eq(getattr(memory.sdram, name)) for name in PIN_NAMES)]
        port = accelerator.port
        counts: dict[str, Signal] = {name: getattr(self, name) for name in STATS}
        with m.If(port.rd_req.valid & port.rd_req.ready):
            m.d.sync += counts["read_requests"].eq(counts["read_requests"] + 1)
        with m.If(port.rd_data.valid & port.rd_data.ready):
            m.d.sync += [counts["read_beats"].eq(counts["read_beats"] + 1),
                         counts["bytes_read"].eq(counts["bytes_read"] + len(port.rd_data.payload.data) // 8)]
        with m.If(port.wr.valid & port.wr.ready):
            mask = port.wr.payload.mask
            m.d.sync += [counts["write_beats"].eq(counts["write_beats"] + 1),
                         counts["bytes_written"].eq(counts["bytes_written"] + sum(mask[i] for i in range(len(mask))))]
        return m


_designs: dict[str, dict[str, str]] = {}


def sdram_design_sources(compiled: CompiledNetwork, chip: SdramChip, clock_mhz: float) -> dict[str, str]:
    """The Verilog files (name to text) of the accelerator on `chip` and its public top level."""
    key = json.dumps({"config": compiled.config.to_dict(), "program": compiled.program.to_dict(),
                      "chip": repr(chip), "clock_mhz": clock_mhz}, sort_keys=True)
    if key not in _designs:
        design = AcceleratorOnSdram(compiled, chip, clock_mhz)
        _designs[key] = {f"{INNER}.v": emit(design, INNER)[0], f"{TOP}.v": public_top(design, INNER, TOP)}
    return _designs[key]


def build_sdram_design(compiled: CompiledNetwork, simulator: str = "verilator", *, chip: SdramChip = IS42S16160G_7,
                       clock_mhz: float | None = None) -> Build:
    """The simulator's build of the accelerator on `chip`, from the cache or made now."""
    check_simulator(simulator)
    return cached_build(sdram_design_sources(compiled, chip, clock_mhz or compiled.config.clock_mhz), TOP, simulator)


@contextmanager
def _watching(path: Path, progress: Progress | None) -> Iterator[None]:
    """Pass the progress lines the testbench appends to `path` to `progress` while the block runs."""
    if progress is None:
        yield
        return
    seen = 0

    def poll() -> None:
        nonlocal seen
        lines = path.read_text().splitlines() if path.is_file() else []
        for line in lines[seen:]:
            cycles, seconds = line.split()
            progress(int(cycles), int(cycles) / max(float(seconds), 1e-9))
        seen = len(lines)

    with polling(poll, 0.5):
        yield


def run_cosim_on_sdram(compiled: CompiledNetwork, x: np.ndarray, *, simulator: str = "verilator",
                       chip: SdramChip = IS42S16160G_7, model_chip: SdramChip | None = None,
                       clock_mhz: float | None = None, max_cycles: int = 5_000_000,
                       progress: Progress | None = print_progress, progress_every: int = PROGRESS_EVERY) -> RtlRun:
    """Run the int8 `(C, H, W)` input through the Verilog of the accelerator on SDRAM (`chip`,
    at `clock_mhz`, the configuration's clock by default) in `simulator`, like
    `boards.sdram.simulation.run_on_sdram`; `model_chip` is the chip the model checks the
    controller against (`chip` by default). `progress` is called every `progress_every` cycles
    (None: never). Raises `SdramViolation` on any command the
    datasheet forbids, `SimulationTimeout` without `done` after `max_cycles`, and
    `sim.cosim.runner.CosimError` if the simulator fails."""
    clock_mhz = clock_mhz or compiled.config.clock_mhz
    build = build_sdram_design(compiled, simulator, chip=chip, clock_mhz=clock_mhz)
    image = compiled.dram_with_input(x)
    job = SdramJob(image, model_chip or chip, clock_mhz, initialization_cycles(chip, clock_mhz), DRAIN_CYCLES,
                   max_cycles, progress_every)
    with job_folder() as folder:
        job.save(folder)
        with _watching(folder / PROGRESS_FILE, progress):
            run_test(build, TESTBENCH, folder, OUTCOME_FILE)
        outcome = SdramOutcome.load(folder)
    if outcome.violation is not None:
        raise SdramViolation(outcome.violation)
    if outcome.timed_out:
        raise SimulationTimeout(f"no `done` after {max_cycles} cycles")
    counters = unpack(COUNTERS_LAYOUT, outcome.counters)
    cycles = counters.pop("cycles")
    outputs = {name: compiled.read_output(outcome.dram, name) for name in compiled.network.outputs}
    return RtlRun(outputs, cycles, outcome.traffic or MemoryStats(), counters)
