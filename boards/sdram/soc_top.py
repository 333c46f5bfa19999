"""The SoC of an SDRAM board (`boards.soc.SocCore`, exactly as `hwgen build` makes it) as a
Verilog top level for cocotb: its UART pins and LEDs, the chip's pins gathered in `status`
(`boards.sdram.cosim_job.STATUS_LAYOUT`, `done` the LED), the chip's read data `dq_i`, and
`active`, high while the pins the chip samples at the next edge carry more than a NOP: a
command, write data or CKE low (the testbench clocks the chip model in bulk while it is low).
"""
from __future__ import annotations

import json

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from boards.sdram.cosim_job import PIN_NAMES, STATUS_LAYOUT
from boards.soc import SocCore
from hwgen.verilog import emit
from sim.cosim.builds import Build, cached_build
from sim.cosim.harness import public_top
from sim.cosim.runner import check_simulator

TOP, INNER = "hwgen_soc_cosim", "soc_on_sdram"


class SocTop(wiring.Component):
    """`soc` (with an `sdram` port) with plain ports for the testbench."""

    def __init__(self, soc: SocCore):
        if "sdram" not in soc.signature.members:
            raise ValueError("SocTop needs a SoC whose main memory is an SDRAM chip")
        self.soc = soc
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1), "leds": Out(4), "status": Out(STATUS_LAYOUT),
                          "dq_i": In(16), "active": Out(1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.soc = soc = self.soc
        pins = soc.sdram
        command = ~pins.cs_n & ~(pins.ras_n & pins.cas_n & pins.we_n)
        m.d.comb += [soc.rx.eq(self.rx), self.tx.eq(soc.tx), self.leds.eq(soc.leds), pins.dq_i.eq(self.dq_i),
                     *(self.status[name].eq(getattr(pins, name)) for name in PIN_NAMES),
                     self.status.done.eq(soc.leds[1]), self.active.eq(command | pins.dq_oe | ~pins.cke)]
        return m


_designs: dict[str, dict[str, str]] = {}


def soc_design_sources(soc: SocCore) -> dict[str, str]:
    """The Verilog files (name to text) of `soc` and its public top level."""
    key = json.dumps({"config": soc.config.to_dict(), "program": soc.compiled.program.to_dict(),
                      "chip": repr(soc.sdram_chip), "memory_bytes": soc.memory_bytes, "clk_hz": soc.clk_hz,
                      "baud": soc.baud}, sort_keys=True)
    if key not in _designs:
        design = SocTop(soc)
        _designs[key] = {f"{INNER}.v": emit(design, INNER)[0], f"{TOP}.v": public_top(design, INNER, TOP)}
    return _designs[key]


def build_soc_design(soc: SocCore, simulator: str = "verilator") -> Build:
    """The simulator's build of `soc`, from the cache (`sim.cosim.builds`) or made now."""
    check_simulator(simulator)
    return cached_build(soc_design_sources(soc), TOP, simulator)
