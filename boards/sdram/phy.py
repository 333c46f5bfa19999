"""The SDRAM's pins on an FPGA board: `SdramPhy` connects the controller's `SDRAM_PINS` to the
platform's "sdram" resource (amaranth-boards' `SDRAMResource`, requested with `dir="-"`) through
`amaranth.lib.io` buffers: CKE, CS#, RAS#, CAS#, WE#, BA, A and DQM as plain outputs, DQ
bidirectional (`dq_oe` its output enable). The controller drives them all from registers
(`boards.sdram.controller.PIN_LATENCY`), so they change just after each rising edge of `sync`.

Clock phase: a DDR output buffer sends (0, 1), `sync` inverted, so the chip's rising edge comes
with `sync`'s falling edge. Clock and commands leave through like output pads, so the chip
samples each command about half a period after it changes (6.7 ns at 75 MHz, against the chip's
1.5 ns setup and 0.8 ns hold in ISSI's -7 tables) whatever the pads' delay. In phase, (1, 0),
the chip's edge would come about when the commands change.

Read data (not verified on a board): with a READ on the pins in cycle n, the chip takes it at
the falling edge of cycle n plus the clock's output delay d, and drives the word from tAC after
its edge CL - 1 later (6 ns at CL 2) to tOH after its edge CL later (2.5 ns). The controller
captures DQ at the rising edge that ends cycle n + CL (`read_latency` = 1 + CL + 1 cycles from
the cycle it took the READ): half a period less d after the chip's last edge for the word. The
capture is right when the round trip R (d, the board's traces, DQ's input delay to the capture
register) is within T/2 - tOH + hold < R < 3T/2 - tAC - setup: about 4.2 to 14 ns at 75 MHz.
An ECP5 output pad's delay alone is of that order, but nextpnr does not time these pin-to-pin
paths, so the margin is unknown; a capture a cycle off shows as a CRC-32 mismatch when the host
checks the image it loaded (`boards.runtime.Runtime.load`).
"""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import io, wiring
from amaranth.lib.wiring import In

from sim.sdram.adapter import SDRAM_PINS

CLOCK_PHASES = (0, 1)
"""The SDRAM clock's level in the first and second half of each `sync` cycle: `sync` inverted."""


class SdramPhy(wiring.Component):
    """Connects `pins` (the controller's side) to `resource`, the platform's "sdram" resource
    requested with `dir="-"` (subsignals clk, clk_en, cs, we, ras, cas, ba, a, dq, dqm; the
    active-low ones are inverted by the resource)."""

    def __init__(self, resource):
        self.resource = resource
        super().__init__({"pins": In(SDRAM_PINS)})

    def elaborate(self, platform) -> Module:
        m = Module()
        pins, resource = self.pins, self.resource
        m.submodules.clk = clock = io.DDRBuffer("o", resource.clk)
        m.d.comb += [clock.o[0].eq(CLOCK_PHASES[0]), clock.o[1].eq(CLOCK_PHASES[1])]
        outputs = {"clk_en": pins.cke, "cs": ~pins.cs_n, "we": ~pins.we_n, "ras": ~pins.ras_n, "cas": ~pins.cas_n,
                   "ba": pins.ba, "a": pins.a, "dqm": pins.dqm}
        for name, value in outputs.items():
            m.submodules[name] = buffer = io.Buffer("o", getattr(resource, name))
            m.d.comb += buffer.o.eq(value)
        m.submodules.dq = dq = io.Buffer("io", resource.dq)
        m.d.comb += [dq.o.eq(pins.dq_o), dq.oe.eq(pins.dq_oe), pins.dq_i.eq(dq.i)]
        return m
