"""Post-processing: `y = clamp(round_shift((acc + bias) * m, s) + zy, lo, hi)` on `R` lanes.

A beat is one pixel's `R` output channels: each lane has its channel's parameters (`bias`,
`m`, `s`); all lanes share the layer's (`zy`, `lo`, `hi`, `raw`). `raw` selects the
pass-through mode for partial-sum spills: the output is `acc + bias` truncated to `raw_shape`
(int32), computed by the same datapath with `m = 1`, `s = 0` and no clamp. Rounding is half to
even (guard, sticky and the result's lowest bit). Pipeline, one register per stage, all stalled
together while the output is not accepted (`hwgen.timing.POSTPROCESS_LATENCY` stages): the input
beat (its parameters come straight from block RAM) → `acc + bias`, `m` (multiplier inputs) → two
partial products (the low `LOW_BITS` bits of `acc + bias`, unsigned, and the signed rest, each
times `m`: one 18x18 DSP multiplier each) → product (their sum) → shift and rounding bit → add
`zy`, clamp.
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Shape, Signal, Value, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hwgen.pe import register
from hwgen.config import MULTIPLIER_BITS

SHIFT_BITS = 6
LOW_BITS = 17
"""Bits of `acc + bias` in the low partial product: unsigned, within an 18-bit signed DSP input."""
NARROW_BITS = 9
"""Bits of the quotient the clamp adds and compares in (short carry chains): a quotient beyond
them (>= 256 or < -256) stays beyond the 8-bit bounds whatever the zero point (int8) and the
rounding add."""

LAYER = data.StructLayout({"zero_point": signed(8), "low": signed(8), "high": signed(8), "raw": 1})


def postprocess_signature(lanes: int, acc_shape: Shape, raw_shape: Shape) -> wiring.Signature:
    """A requantizer's ports: the input beat stream `i` (per lane `acc`, `bias`, `multiplier`,
    `shift`; the shared `layer`) and the result stream `o` (`raw_shape` per lane)."""
    return wiring.Signature({
        "i": In(stream.Signature(data.StructLayout({
            "acc": data.ArrayLayout(acc_shape, lanes), "bias": data.ArrayLayout(signed(32), lanes),
            "multiplier": data.ArrayLayout(unsigned(MULTIPLIER_BITS), lanes),
            "shift": data.ArrayLayout(unsigned(SHIFT_BITS), lanes), "layer": LAYER}))),
        "o": Out(stream.Signature(data.ArrayLayout(raw_shape, lanes))),
    })


def clamp(narrow: Value, up: Value, fits: Value, negative: Value, layer: data.View) -> Value:
    """`clamp(quotient + up + zero_point, low, high)` from the quotient's low `NARROW_BITS` bits
    (`narrow`), whether the quotient `fits` them as a signed number and its sign: a quotient
    beyond them is beyond any 8-bit bound whatever `up` and the zero point add, so it clamps by
    its sign alone. The result is int8: a value between the bounds fits their 8 bits."""
    value = narrow.as_signed() + up + layer.zero_point
    below = Mux(fits, value < layer.low, negative)
    above = Mux(fits, value > layer.high, ~negative)
    return Mux(below, layer.low, Mux(above, layer.high, value[:8].as_signed()))


class PostProcess(wiring.Component):
    """`lanes` requantizers with per-lane channel parameters; `i` and `o` are streams."""

    def __init__(self, lanes: int, acc_shape: Shape, raw_shape: Shape = signed(32)) -> None:
        self.lanes = lanes
        self.raw_shape = raw_shape
        super().__init__(postprocess_signature(lanes, acc_shape, raw_shape))

    def elaborate(self, platform) -> Module:
        m = Module()
        advance = ~self.o.valid | self.o.ready
        m.d.comb += self.i.ready.eq(advance)

        def stage(value: Value | data.View, name: str, reset_less: bool = True) -> Signal | data.View:
            return register(m, value, name, advance, reset_less)

        p = stage(self.i.payload, "beat_in")  # the parameters come straight from block RAM
        valid, layer = stage(self.i.valid, "valid_in", reset_less=False), p.layer

        valid, layer = stage(valid, "valid_sum", reset_less=False), stage(layer, "layer_sum")
        sums = [stage(p.acc[lane] + p.bias[lane], f"sum_{lane}") for lane in range(self.lanes)]
        multipliers = [stage(Mux(p.layer.raw, 1, p.multiplier[lane]), f"multiplier_{lane}") for lane in range(self.lanes)]
        shifts = [stage(Mux(p.layer.raw, 0, p.shift[lane]), f"shift_{lane}") for lane in range(self.lanes)]

        valid, layer = stage(valid, "valid_partial", reset_less=False), stage(layer, "layer_partial")
        shifts = [stage(shift, f"shift_partial_{lane}") for lane, shift in enumerate(shifts)]
        partials = [(stage(total[:LOW_BITS] * multiplier, f"low_product_{lane}"),
                     stage(total[LOW_BITS:].as_signed() * multiplier, f"high_product_{lane}"))
                    for lane, (total, multiplier) in enumerate(zip(sums, multipliers))]

        valid, layer = stage(valid, "valid_product", reset_less=False), stage(layer, "layer_product")
        shifts = [stage(shift, f"shift_product_{lane}") for lane, shift in enumerate(shifts)]
        products = []
        for lane, ((low, high), total, multiplier) in enumerate(zip(partials, sums, multipliers)):
            product = Signal((total * multiplier).shape(), name=f"product_sum_{lane}")
            m.d.comb += product.eq((high << LOW_BITS) + low)
            products.append(stage(product, f"product_{lane}"))

        valid, layer = stage(valid, "valid_round", reset_less=False), stage(layer, "layer_round")
        rounded = []
        for lane, (product, shift) in enumerate(zip(products, shifts)):
            dropped = Signal(unsigned(product.shape().width), name=f"dropped_mask_{lane}")  # the s bits shifted out
            m.d.comb += dropped.eq((1 << shift) - 1)
            quotient = product >> shift
            guard = (product.as_unsigned() & dropped & ~(dropped >> 1)).any()
            sticky = (product.as_unsigned() & (dropped >> 1)).any()
            round_up = guard & (sticky | quotient[0])  # above half, or exactly half and odd
            rounded.append((stage(quotient, f"quotient_{lane}"), stage(round_up, f"round_{lane}")))

        m.d.comb += self.o.valid.eq(stage(valid, "valid_out", reset_less=False))
        for lane, (quotient, up) in enumerate(rounded):
            top = quotient[NARROW_BITS - 1:]
            clamped = clamp(quotient[:NARROW_BITS], up, top.all() | ~top.any(), quotient[-1], layer)
            result = Mux(layer.raw, quotient, clamped)[:self.raw_shape.width]
            m.d.comb += self.o.payload[lane].eq(stage(result, f"out_{lane}"))
        return m
