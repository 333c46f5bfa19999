"""The reads that feed the convolution engine's PE array."""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux
from amaranth.lib import wiring
from amaranth.lib.memory import ReadPort
from amaranth.lib.wiring import In
from amaranth.utils import exact_log2

from hwgen.conv.params import ConvParams
from hwgen.pe import register


class ConvFeed(wiring.Component):
    """Stage 0: the input reads, of a window of `C` pixels from pixel `p`: words `w = p // C` and
    `w + 1` (even address `(w + 1) // 2`, odd `w // 2`); stage 1: the funnel shift of the two
    words into the PE array and the weight read, whose data enters the array a cycle after the
    pixels (`hwgen.pe_array`).

    - `issue`: a step enters (stage 0); `pixel_ptr`: its first pixel; `weight_row`, `kw`: its
      weight word's kernel row and column; `at_first`, `last_step`: it is its group's first, last;
    - `input_even`, `input_odd`, `weight`: the input bank's halves and the weight bank;
    - `pixels`, `weights`, `valid`, `first`, `last`: the PE array's inputs.
    """

    def __init__(self, params: ConvParams, input_port: ReadPort.Signature, weight_port: ReadPort.Signature,
                 array: wiring.Signature):
        self.params = params
        super().__init__({
            "issue": In(1),
            "pixel_ptr": In(params.pixel_bits),
            "weight_row": In(params.weight_bits),
            "kw": In(4),
            "at_first": In(1),
            "last_step": In(1),
            "input_even": In(input_port),
            "input_odd": In(input_port),
            "weight": In(weight_port),
            **{name: array.members[name].flip() for name in ("pixels", "weights", "valid", "first", "last")},
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p, issue, valid = self.params, self.issue, self.valid
        log_c = exact_log2(p.cols)
        word = self.pixel_ptr >> log_c
        m.d.sync += valid.eq(issue)
        m.d.comb += [
            self.input_even.addr.eq((word + 1) >> 1), self.input_odd.addr.eq(word >> 1),
            self.input_even.en.eq(issue), self.input_odd.en.eq(issue),
            self.weight.addr.eq(register(m, self.weight_row + self.kw, "step_weight")), self.weight.en.eq(valid),
        ]
        shift = register(m, self.pixel_ptr[:log_c], "step_shift")
        odd = register(m, word[0], "step_odd")
        low = Mux(odd, self.input_odd.data, self.input_even.data)
        high = Mux(odd, self.input_even.data, self.input_odd.data)
        m.d.comb += [
            self.pixels.eq(Cat(low, high).bit_select(shift * (8 * p.simd), 8 * p.cols * p.simd)),
            self.weights.eq(self.weight.data),
            self.first.eq(register(m, self.at_first, "step_first")),
            self.last.eq(register(m, self.last_step, "step_last")),
        ]
        return m
