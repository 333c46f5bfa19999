"""The SPI flash's pins on the iCEBreaker: `SpiFlashPhy` connects the reader's `SPI_FLASH_PINS`
to amaranth-boards' "spi_flash_4x" resource (requested with `dir="-"`: cs inverted by the
resource, clk, dq 4 lines) through plain `amaranth.lib.io` buffers, one per IO line since each
has its own output enable.

No register in the pads: the reader drives every pin from its own registers and captures `io_i`
at the edge where it raises CLK, a system cycle after it lowered it, so the round trip (CLK out,
the chip's tCLQV, 6 ns, the data back) has the whole 37 ns cycle at 27 MHz. nextpnr does not
time that pin-to-pin path; a capture a cycle off shows as wrong results, not as a timing report
(not tried on a board).
"""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import io, wiring
from amaranth.lib.wiring import In

from sim.spiflash.adapter import SPI_FLASH_PINS

IO_LINES = 4


class SpiFlashPhy(wiring.Component):
    """Connects `pins` (the reader's side) to `resource`, the platform's "spi_flash_4x"."""

    def __init__(self, resource):
        self.resource = resource
        super().__init__({"pins": In(SPI_FLASH_PINS)})

    def elaborate(self, platform) -> Module:
        m = Module()
        pins, resource = self.pins, self.resource
        m.submodules.cs = cs = io.Buffer("o", resource.cs)
        m.submodules.clk = clk = io.Buffer("o", resource.clk)
        m.d.comb += [cs.o.eq(~pins.cs_n), clk.o.eq(pins.clk)]
        for line in range(IO_LINES):
            m.submodules[f"io{line}"] = buffer = io.Buffer("io", resource.dq[line])
            m.d.comb += [buffer.o.eq(pins.io_o[line]), buffer.oe.eq(pins.io_oe[line]), pins.io_i[line].eq(buffer.i)]
        return m
