"""A shell that lets the accelerator alone go through place and route on a bare device.

The accelerator's memory port and counters are far more bits than a package has pins, and
unconnected they would be optimized away. The shell keeps every bit alive with a handful of
pins: a linear-feedback shift register, stirred by the `din` pins, feeds a shift register
that drives every accelerator input (read data, stream handshakes, `start`), and every accelerator output is
registered, their XOR registered again is the one `dout` pin (so the XOR tree adds no delay to
the accelerator's own paths).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hwgen.accelerator import Accelerator
from hwgen.pipeline import Pipeline

LFSR_BITS = 32
LFSR_TAPS = (31, 21, 1, 0)  # x^32 + x^22 + x^2 + x + 1, a maximal-length polynomial


class AcceleratorShell(wiring.Component):
    """`accelerator` (or pipelined instances) wrapped so that `din_bits` input pins and one output
    pin keep it whole."""

    def __init__(self, accelerator: Accelerator | Pipeline, din_bits: int):
        self.accelerator = accelerator
        super().__init__({"din": In(din_bits), "dout": Out(1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.accelerator = acc = self.accelerator
        port = acc.port
        pipelined = isinstance(acc, Pipeline)
        inputs = Cat(port.rd_req.ready, port.rd_data.valid, port.rd_data.payload, port.wr.ready, acc.start,
                     *((acc.images,) if pipelined else ()))
        outputs = Cat(port.rd_req.valid, port.rd_req.payload, port.rd_data.ready, port.wr.valid, port.wr.payload,
                      acc.done, acc.busy, acc.running if pipelined else acc.counters)

        lfsr = Signal(LFSR_BITS, init=1)
        feedback = Cat(*(lfsr[tap] for tap in LFSR_TAPS)).xor() ^ self.din.xor()
        m.d.sync += lfsr.eq(Cat(feedback, lfsr[:-1]))
        stimulus = Signal(len(inputs))  # a shift register fed by the LFSR: no two bits alike
        m.d.sync += stimulus.eq(Cat(lfsr[-1], stimulus[:-1]))
        m.d.comb += inputs.eq(stimulus)
        captured = Signal(len(outputs))  # registered first, so no accelerator path runs into the XOR
        m.d.sync += [captured.eq(outputs), self.dout.eq(captured.xor())]
        return m
