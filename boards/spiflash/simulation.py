"""A compiled network on the accelerator with its constants in the SPI flash, in the Amaranth
simulator: the accelerator's memory port on `FlashMainMemory`, whose flash pins drive the
datasheet model of the chip (`sim.spiflash`, preloaded at `FLASH_OFFSET` as `hwgen build` writes
the flash image), which checks every command. The SPRAM part starts with the rest of the image
and the input, as the host would leave it (on a board it writes them over the serial link); the
outputs are read back through the memory's host port."""
from __future__ import annotations

import numpy as np
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from boards.main_memory import word_bytes
from boards.sdram.simulation import count_traffic
from boards.spiflash.memory import FLASH_OFFSET, FlashMainMemory
from hwgen.accelerator import Accelerator
from planner.compile.memory_map import tensor_bytes
from planner.compile.network import CompiledNetwork
from sim.memory_model import MemoryStats
from sim.rtl_sim import RtlRun, start_and_wait, write_program
from sim.spiflash.adapter import spiflash_testbench
from sim.spiflash.chips import W25Q128JV_IM, SpiFlashChip
from sim.spiflash.device import SpiFlashDevice


def run_on_flash(compiled: CompiledNetwork, x: np.ndarray, *, chip: SpiFlashChip = W25Q128JV_IM,
                 clock_mhz: float | None = None, max_cycles: int = 5_000_000) -> tuple[RtlRun, SpiFlashDevice]:
    """Run the int8 `(C, H, W)` input through the RTL with the constants in `chip` at `clock_mhz`
    (the configuration's clock by default) and the rest of the image in on-chip memory; the run
    and the flash model (its `history` of instructions). The chip is as after the board's first
    boot (QE set: the reader's first boot writes it, 15 ms); the accelerator starts once its
    program is written, the reader's initialization done by then. Raises `sim.spiflash.SpiFlashViolation`
    on anything the datasheet forbids."""
    config, memory_map = compiled.config, compiled.memory
    clock_mhz = clock_mhz or config.clock_mhz
    image = compiled.dram_with_input(x)
    base = memory_map.constant_bytes
    accelerator = Accelerator(config, compiled.program)
    port = accelerator.port.signature
    word = word_bytes(port)
    spram_bytes = -(-(memory_map.size - base) // word) * word
    memory = FlashMainMemory(port, spram_bytes, base, chip, clock_mhz, spram_init=image[base:].tobytes())
    top = Module()
    top.submodules.accelerator, top.submodules.memory = accelerator, memory
    wiring.connect(top, accelerator.port, memory.port)
    device = SpiFlashDevice(chip, clock_mhz, quad_enabled=True)  # QE is non-volatile: set at the first boot
    device.preload(FLASH_OFFSET, image[:base].tobytes())
    shapes, simd = compiled.network.tensor_shapes(), config.pe.simd
    outputs, result = {}, {}

    async def read_byte(ctx, address: int) -> int:
        host = memory.host
        ctx.set(host.req.valid, 1)
        ctx.set(host.req.payload, {"addr": address, "data": 0, "write": 0})
        while not ctx.get(host.req.ready):
            await ctx.tick()
        await ctx.tick()
        ctx.set(host.req.valid, 0)
        while not ctx.get(host.rd_valid):
            await ctx.tick()
        return ctx.get(host.rd_data) >> 8 * (address % word) & 0xFF

    async def bench(ctx) -> None:
        await write_program(ctx, accelerator, compiled)
        result["cycles"] = await start_and_wait(ctx, accelerator, max_cycles)
        for name in compiled.network.outputs:
            start = memory_map.tensors[name] - base
            data = [await read_byte(ctx, start + k) for k in range(tensor_bytes(shapes[name], simd))]
            outputs[name] = np.array(data, dtype=np.uint8)

    sim = Simulator(top)
    sim.add_clock(1e-6 / clock_mhz)
    sim.add_testbench(spiflash_testbench(device, memory.flash), background=True)
    traffic = MemoryStats()
    sim.add_process(count_traffic(accelerator.port, traffic))
    sim.add_testbench(bench)
    sim.run()
    final = image.copy()
    for name, data in outputs.items():
        final[memory_map.tensors[name]:memory_map.tensors[name] + len(data)] = data
    return RtlRun({name: compiled.read_output(final, name) for name in outputs}, result["cycles"], traffic, {}), device
