"""The flash model in an Amaranth 0.5 simulation: the pin signature and a testbench that runs it.

`SPI_FLASH_PINS` is a controller's view of the chip's pins (amaranth-boards' `spi_flash_4x`
resource): /CS and CLK out, the four IO lines split as at an FPGA's I/O buffer into `io_o`,
`io_oe` (out) and `io_i` (in). A controller declares `"flash": Out(SPI_FLASH_PINS)`; a
testbench connects the model with

    device = SpiFlashDevice(W25Q128JV_IM, clock_mhz=27)
    sim.add_testbench(spiflash_testbench(device, dut.flash), background=True)

After each rising edge of `domain` it reads the pins as the controller's registers now drive
them and sets `io_i` at once: the chip answers a falling CLK within that cycle (tCLQV, 6 ns, is
well inside a system cycle), so the controller's input register captures the data at the next
edge. It runs as a testbench, not a process, because a testbench sees the values after the edge.
A line nobody drives reads 1 (a pull-up).
"""
from __future__ import annotations

from amaranth.hdl import Cat
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sim.spiflash.device import SpiFlashDevice

SPI_FLASH_PINS = wiring.Signature({
    "cs_n": Out(1, init=1),
    "clk": Out(1),
    "io_o": Out(4),
    "io_oe": Out(4),
    "io_i": In(4),
})


def resolve(chip_io: int, chip_oe: int, io_o: int, io_oe: int) -> int:
    """What the four lines carry: the chip's bits, the controller's, else the pull-up's 1."""
    return (chip_io & chip_oe) | (io_o & io_oe) | (0b1111 & ~(chip_oe | io_oe))


def spiflash_testbench(device: SpiFlashDevice, pins, domain: str = "sync"):
    """An async testbench for `Simulator.add_testbench(..., background=True)` applying `device` to
    `pins` (any object with the `SPI_FLASH_PINS` members) every cycle of `domain`."""
    driven = Cat(pins.cs_n, pins.clk, pins.io_o, pins.io_oe)

    async def testbench(ctx) -> None:
        lines = 0b1111
        ctx.set(pins.io_i, lines)
        while True:
            await ctx.tick(domain)
            value = ctx.get(driven)  # one read of the four pins (a simulation step each otherwise)
            io_o, io_oe = value >> 2 & 0b1111, value >> 6 & 0b1111
            io, oe = device.clock(value & 1, value >> 1 & 1, io_o, io_oe)
            if (resolved := resolve(io, oe, io_o, io_oe)) != lines:  # a write only on a change
                lines = resolved
                ctx.set(pins.io_i, lines)

    return testbench
