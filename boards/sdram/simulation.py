"""A compiled network on the accelerator with SDRAM main memory, in the Amaranth simulator: the
accelerator's memory port on `SdramMainMemory`, whose pins drive the datasheet model of the chip
(`sim.sdram`), which checks every command. The memory image is placed in the model directly
(on a board the host loads it over the serial link)."""
from __future__ import annotations

import numpy as np
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from boards.sdram.controller import initialization_cycles
from boards.sdram.memory import SdramMainMemory
from hwgen.accelerator import Accelerator
from hwgen.memory_port import MemoryPort
from planner.compile.network import CompiledNetwork
from sim.memory_model import MemoryStats
from sim.rtl_sim import RtlRun, start_and_wait, write_program
from sim.sdram.adapter import sdram_process
from sim.sdram.chips import IS42S16160G_7, SdramChip
from sim.sdram.device import SdramDevice


DRAIN_CYCLES = 100
"""Cycles after `done` that the memory's queued write beats take at most to reach the chip (a
refresh and a row change included): the host reads the outputs no sooner."""


def run_on_sdram(compiled: CompiledNetwork, x: np.ndarray, *, chip: SdramChip = IS42S16160G_7,
                 clock_mhz: float | None = None, max_cycles: int = 5_000_000) -> RtlRun:
    """Run the int8 `(C, H, W)` input through the RTL with `chip` as main memory at `clock_mhz`
    (the configuration's clock by default). The run starts once the chip is initialized; its
    cycles are the accelerator's cycle counter. Raises `sim.sdram.SdramViolation` on any
    command the datasheet forbids, and on refreshes owed at the end."""
    config = compiled.config
    clock_mhz = clock_mhz or config.clock_mhz
    image = compiled.dram_with_input(x)
    accelerator = Accelerator(config, compiled.program)
    memory = SdramMainMemory(MemoryPort.from_config(config.dram), chip.bytes, chip, clock_mhz)
    top = Module()
    top.submodules.accelerator, top.submodules.memory = accelerator, memory
    wiring.connect(top, accelerator.port, memory.port)
    device = SdramDevice(chip, clock_mhz)
    device.memory.preload(0, image)
    result: dict = {}

    async def bench(ctx) -> None:
        await write_program(ctx, accelerator, compiled)
        for _ in range(initialization_cycles(chip, clock_mhz)):
            await ctx.tick()
        result["cycles"] = await start_and_wait(ctx, accelerator, max_cycles)
        for _ in range(DRAIN_CYCLES):  # the last write beats leave the memory's write queue
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-6 / clock_mhz)
    sim.add_process(sdram_process(device, memory.sdram))
    traffic = MemoryStats()
    sim.add_process(count_traffic(accelerator.port, traffic))
    sim.add_testbench(bench)
    sim.run()
    device.finish()
    final = device.memory.read_back(0, len(image))
    outputs = {name: compiled.read_output(final, name) for name in compiled.network.outputs}
    return RtlRun(outputs, result["cycles"], traffic, {})


def count_traffic(port, traffic: MemoryStats):
    """A process counting the beats and bytes that pass `port` (an accelerator's memory port)
    into `traffic`, as `sim.memory_model.MemoryModel` counts them."""
    bus_bytes = len(port.rd_data.payload.data) // 8

    async def process(ctx) -> None:
        sampled = (port.rd_req.valid, port.rd_req.ready, port.rd_data.valid, port.rd_data.ready,
                   port.wr.valid, port.wr.ready, port.wr.payload.mask)
        async for _, _, req_valid, req_ready, rd_valid, rd_ready, wr_valid, wr_ready, mask in ctx.tick().sample(*sampled):
            traffic.read_requests += req_valid & req_ready
            if rd_valid & rd_ready:
                traffic.read_beats += 1
                traffic.bytes_read += bus_bytes
            if wr_valid & wr_ready:
                traffic.write_beats += 1
                traffic.bytes_written += mask.bit_count()

    return process
