"""The SoC of an SDRAM board (`boards.soc.SocCore`, exactly as `hwgen build` makes it) as a
Verilog top level for cocotb: the host's UART transmitter on its `rx` pin (`HostLine`, so the
testbench hands it bytes in chunks instead of setting each bit), its `tx` pin and LEDs, the
chip's pins gathered in `status` (`boards.sdram.cosim_job.STATUS_LAYOUT`, `done` the LED), the
chip's read data `dq_i`, and `active`, high while the pins the chip samples at the next edge
carry more than a NOP: a command, write data or CKE low (the testbench clocks the chip model
in bulk while it is low).
"""
from __future__ import annotations

import json

from amaranth.hdl import C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from boards.sdram.cosim_job import PIN_NAMES, STATUS_LAYOUT
from boards.sdram.soc_link import HOST_CHUNK
from boards.soc import SocCore
from hwgen.verilog import emit
from sim.cosim.builds import Build, cached_build
from sim.cosim.harness import public_top
from sim.cosim.runner import check_simulator
from sim.cosim.sources import emitted_sources

TOP, INNER = "hwgen_soc_cosim", "soc_on_sdram"


class HostLine(wiring.Component):
    """The host's end of the UART, sending: each time `load` toggles it takes `count` bytes of
    `data` (byte 0 in the low bits) and sends them on `tx` back to back, 8N1 at `divisor`
    cycles per bit (start bit, bits 0 to 7, stop bit); `idle` once the last stop bit is out."""

    def __init__(self, divisor: int, chunk: int = HOST_CHUNK):
        self.divisor, self.chunk = divisor, chunk
        super().__init__({"data": In(8 * chunk), "count": In(range(chunk + 1)), "load": In(1), "idle": Out(1),
                          "tx": Out(1, init=1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        data, count = Signal(8 * self.chunk), Signal(range(self.chunk + 1))
        index, bit, timer, seen = Signal(range(self.chunk + 1)), Signal(range(10)), Signal(range(self.divisor)), Signal()
        frame = Cat(C(0, 1), data.word_select(index, 8), C(1, 1))
        m.d.comb += [self.idle.eq(index == count), self.tx.eq(Mux(index == count, 1, frame.bit_select(bit, 1)))]
        with m.If(self.load != seen):
            m.d.sync += [seen.eq(self.load), data.eq(self.data), count.eq(self.count), index.eq(0), bit.eq(0),
                         timer.eq(0)]
        with m.Elif(index != count):
            m.d.sync += timer.eq(Mux(timer == self.divisor - 1, 0, timer + 1))
            with m.If(timer == self.divisor - 1):
                m.d.sync += bit.eq(Mux(bit == 9, 0, bit + 1))
                with m.If(bit == 9):
                    m.d.sync += index.eq(index + 1)
        return m


class SocTop(wiring.Component):
    """`soc` (with an `sdram` port) with plain ports for the testbench: the host's bytes go in
    through a `HostLine` on the SoC's `rx` (`host_data`, `host_count`, `host_load`,
    `host_idle`); the SoC's `tx` and LEDs come out as they are."""

    def __init__(self, soc: SocCore):
        if "sdram" not in soc.signature.members:
            raise ValueError("SocTop needs a SoC whose main memory is an SDRAM chip")
        self.soc = soc
        self.line = HostLine(soc.divisor)
        super().__init__({"host_data": In(8 * HOST_CHUNK), "host_count": In(range(HOST_CHUNK + 1)),
                          "host_load": In(1), "host_idle": Out(1), "tx": Out(1, init=1), "leds": Out(4),
                          "status": Out(STATUS_LAYOUT), "dq_i": In(16), "active": Out(1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.soc, m.submodules.line = soc, line = self.soc, self.line
        pins = soc.sdram
        command = ~pins.cs_n & ~(pins.ras_n & pins.cas_n & pins.we_n)
        m.d.comb += [line.data.eq(self.host_data), line.count.eq(self.host_count), line.load.eq(self.host_load),
                     self.host_idle.eq(line.idle), soc.rx.eq(line.tx),
                     self.tx.eq(soc.tx), self.leds.eq(soc.leds), pins.dq_i.eq(self.dq_i),
                     *(self.status[name].eq(getattr(pins, name)) for name in PIN_NAMES),
                     self.status.done.eq(soc.leds[1]), self.active.eq(command | pins.dq_oe | ~pins.cke)]
        return m


def soc_design_sources(soc: SocCore) -> dict[str, str]:
    """The Verilog files (name to text) of `soc` and its public top level (`sim.cosim.sources`
    keeps them on disk)."""
    description = json.dumps({"design": TOP, "config": soc.config.to_dict(), "program": soc.compiled.program.to_dict(),
                              "chip": repr(soc.sdram_chip), "memory_bytes": soc.memory_bytes, "clk_hz": soc.clk_hz,
                              "baud": soc.baud}, sort_keys=True)

    def make() -> dict[str, str]:
        design = SocTop(soc)
        return {f"{INNER}.v": emit(design, INNER)[0], f"{TOP}.v": public_top(design, INNER, TOP)}

    sources = emitted_sources(description, make)
    soc._MustUse__silence = True  # read from the disk, not elaborated: no "created but never used"
    return sources


def build_soc_design(soc: SocCore, simulator: str = "verilator") -> Build:
    """The simulator's build of `soc`, from the cache (`sim.cosim.builds`) or made now."""
    check_simulator(simulator)
    return cached_build(soc_design_sources(soc), TOP, simulator)
