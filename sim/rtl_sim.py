"""Amaranth-simulator harness: a compiled network on the generated accelerator, its DRAM served
by `sim.memory_model.MemoryModel` (latency and bandwidth of the configuration)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from amaranth.sim import Simulator

from hwgen.accelerator import Accelerator, program_regions
from planner.compile.network import CompiledNetwork
from common.errors import HwgenError
from common.files import staged_file
from sim.memory_model import MemoryModel, MemoryStats


class SimulationTimeout(HwgenError):
    """The accelerator did not raise `done` within the cycle budget."""


@dataclass
class RtlRun:
    """Outputs and measurements of one run."""

    outputs: dict[str, np.ndarray]
    cycles: int
    traffic: MemoryStats
    counters: dict


async def write_program(ctx, dut: Accelerator, compiled: CompiledNetwork) -> None:
    """Write the program into `dut`'s SPRAM program memory, a halfword per cycle (the host's job
    on a board); nothing for a program ROM."""
    if "program_write" not in dut.signature.members:
        return
    ctx.set(dut.program_write.en, 1)
    for start, halfwords in program_regions(compiled.program, compiled.config):
        for address, halfword in enumerate(halfwords, start):
            ctx.set(dut.program_write.addr, address)
            ctx.set(dut.program_write.data, halfword)
            await ctx.tick()
    ctx.set(dut.program_write.en, 0)


PROGRESS_EVERY = 1000
"""Cycles between calls of a `start_and_wait` progress callback."""


async def start_and_wait(ctx, dut: Accelerator, max_cycles: int, progress: Callable[[int], None] | None = None) -> int:
    """Pulse `dut`'s `start`, then tick until `done` (`SimulationTimeout` after `max_cycles`),
    calling `progress` with the cycles so far every `PROGRESS_EVERY` cycles; the accelerator's
    cycle counter then."""
    ctx.set(dut.start, 1)
    await ctx.tick()
    ctx.set(dut.start, 0)
    for cycle in range(1, max_cycles + 1):
        if ctx.get(dut.done):
            return ctx.get(dut.counters.cycles)
        await ctx.tick()
        if progress is not None and cycle % PROGRESS_EVERY == 0:
            progress(cycle)
    raise SimulationTimeout(f"no `done` after {max_cycles} cycles")


def run_rtl(compiled: CompiledNetwork, x: np.ndarray, *, max_cycles: int = 5_000_000, stall: float = 0.0,
            seed: int = 0, vcd: str | None = None, progress: Callable[[int], None] | None = None) -> RtlRun:
    """Run the int8 `(C, H, W)` input through the RTL; `vcd` writes a waveform file; `progress` is
    called with the cycles run every `PROGRESS_EVERY` cycles."""
    dram = compiled.dram_with_input(x)
    dut = Accelerator(compiled.config, compiled.program)
    memory = MemoryModel.from_config(dut.port, dram, compiled.config.dram, stall=stall, seed=seed)
    result: dict = {}

    async def bench(ctx):
        await write_program(ctx, dut, compiled)
        result["cycles"] = await start_and_wait(ctx, dut, max_cycles, progress)
        result["counters"] = {q: {k: ctx.get(getattr(getattr(dut.counters, q), k)) for k in ("active", "waiting")}
                              for q in ("load", "compute", "store")}

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_process(memory.process)
    sim.add_testbench(bench)
    if vcd:
        with staged_file(Path(vcd)) as staged, sim.write_vcd(str(staged)):
            sim.run()
    else:
        sim.run()
    outputs = {name: compiled.read_output(dram, name) for name in compiled.network.outputs}
    return RtlRun(outputs, result["cycles"], memory.stats, result["counters"])
