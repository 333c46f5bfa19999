"""The SDRAM model in an Amaranth 0.5 simulation: the pin signature and a simulator process.

`SDRAM_PINS` is the controller's view of the chip's pins (outputs `Out`, the read data `dq_i`
`In`; the bidirectional DQ is split into `dq_o`/`dq_oe`/`dq_i` as on an FPGA's I/O buffer). A
controller declares `"sdram": Out(SDRAM_PINS)`; a testbench connects the model to it with

    device = SdramDevice(IS42S16160G_7, clock_mhz=75)
    sim.add_process(sdram_process(device, dut.sdram))

The process samples the pins at each rising edge of `domain` (`ctx.tick().sample`) and sets
`dq_i` after the edge, like a registered device, so the controller's input register captures
the chip's data at the next edge. The domain's reset does not stop the chip's clock. Call
`device.finish()` after the simulation to check the refresh debt.
"""
from __future__ import annotations

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sim.sdram.device import SdramDevice

SDRAM_PINS = wiring.Signature({
    "cke": Out(1),
    "cs_n": Out(1, init=1),
    "ras_n": Out(1, init=1),
    "cas_n": Out(1, init=1),
    "we_n": Out(1, init=1),
    "ba": Out(2),
    "a": Out(13),
    "dqm": Out(2, init=0b11),
    "dq_o": Out(16),
    "dq_oe": Out(1),
    "dq_i": In(16),
})


def sdram_process(device: SdramDevice, pins, domain: str = "sync"):
    """An async process for `Simulator.add_process` applying `device` to `pins` every clock edge.

    `pins` is any object with the `SDRAM_PINS` members (e.g. the controller's `sdram` port)."""
    sampled = (pins.cke, pins.cs_n, pins.ras_n, pins.cas_n, pins.we_n, pins.ba, pins.a, pins.dqm,
               pins.dq_o, pins.dq_oe)

    async def process(ctx) -> None:
        async for _, _, *values in ctx.tick(domain).sample(*sampled):
            dq, _ = device.clock(*values)
            ctx.set(pins.dq_i, dq)

    return process
