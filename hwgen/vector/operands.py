"""The vector unit's operand reads: each read pixel's lanes less their zero point."""
from __future__ import annotations

from amaranth.hdl import Module, Mux, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import ReadPort
from amaranth.lib.wiring import In, Out

from hwgen.isa import VecOp
from hwgen.pe import register
from hwgen.vector.params import CONTROL, DIFF, VectorParams


class VecOperands(wiring.Component):
    """Reads the input bank, then selects the pixel in the word and picks the zero point (a
    register right after the block RAM's output and the word selection), then subtracts it. MAX
    alone subtracts the zero point as it selects the pixel. With serial products the values stay
    while their products take their digits.

    - `issue`, `address`: the read (its control and its input bank address);
    - `input_even`, `input_odd`: the input bank's even / odd words (`C * S` bytes);
    - `zero_point`: CONVCFG's input zero point; `second_zero_point`: the VEC's `in2_zero_point`
      (ADD's second operand's);
    - `read`: the control of the read whose data the input bank returns;
    - `diffs`, `control`: the lanes less their zero point, and their read's control.
    """

    def __init__(self, params: VectorParams, input_port: ReadPort.Signature):
        self.params = params
        super().__init__({
            "issue": In(CONTROL),
            "address": In(params.pixel_bits - params.log_cols - 1),
            "input_even": In(input_port),
            "input_odd": In(input_port),
            "zero_point": In(signed(8)),
            "second_zero_point": In(signed(8)),
            "read": Out(CONTROL),
            "diffs": Out(data.ArrayLayout(DIFF, params.simd)),
            "control": Out(CONTROL),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        S, issue = p.simd, self.issue
        for port, odd in ((self.input_even, 0), (self.input_odd, 1)):
            m.d.comb += [port.addr.eq(self.address), port.en.eq(issue.valid & (issue.odd == odd))]
        read, control = self.read, self.control  # registers: `control` is a cycle behind `read`
        m.d.sync += [read.eq(issue), control.eq(read)]
        words = Mux(read.odd, self.input_odd.data, self.input_even.data)
        lanes = data.ArrayLayout(signed(8), S)
        pixels = lanes(words.word_select(read.slice[:p.log_cols], lanes.size))
        if p.max_only:  # no coefficient, no product stage
            diffs = [register(m, pixels[lane] - self.zero_point, f"diff_{lane}") for lane in range(S)]
        else:
            x = register(m, pixels, "pixel")
            second = self.second_zero_point if VecOp.ADD in p.ops else self.zero_point
            zero_point = register(m, Mux(read.operand, second, self.zero_point), "zero_point")
            held = control.valid if p.serial_products else 1  # serial: the operands stay for the digits
            diffs = [register(m, x[lane] - zero_point, f"diff_{lane}", held) for lane in range(S)]
        m.d.comb += [self.diffs[lane].eq(diff) for lane, diff in enumerate(diffs)]
        return m
