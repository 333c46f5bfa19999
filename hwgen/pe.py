"""The processing element: an `S`-lane dot product `sum_l (x_l - zx) * w_l` into an accumulator.

Pipeline (one register per stage, the controls travel with the data):
`x`, `zx` and `w` registers (so that nothing but the subtraction lies between a register and
the multipliers: `x` comes from block RAM through the window selection) → multiplier input
registers holding `x - zx` (9-bit signed) and `w` → per-lane product register (both
stages inside one DSP primitive per lane on iCE40 / ECP5: `hwgen.dsp.RegisteredMultiplier`) →
adder tree, one register per level (its first level, of lane pairs, in the first lane's DSP on
iCE40: `hwgen.dsp.RegisteredDotPair`) → accumulator. In the PE array the input registers are
the array's (`input_registers=False`), shared by the PEs of a row or column. `out` is the
accumulator and is valid for the one cycle `out_valid` is high.
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Shape, Signal, Value, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hwgen.dsp import RegisteredDotPair, RegisteredMultiplier
from hwgen.timing import PE_LATENCY

CONTROL = data.StructLayout({"valid": 1, "first": 1, "last": 1})


def register(m: Module, value: Value | data.View, name: str, enable: Value | int = 1,
             reset_less: bool = True) -> Signal | data.View:
    """A register of `value`'s shape, loaded with `value` on every cycle `enable` is high.

    Datapath registers have no reset, which lets Yosys pack them into the DSPs' registers;
    control registers (valid bits) pass `reset_less=False`."""
    reg = Signal(value.shape(), name=name, reset_less=reset_less)
    with m.If(enable):
        m.d.sync += reg.eq(value)
    return reg


class PE(wiring.Component):
    """`S`-lane dot-product PE with a signed accumulator of shape `acc_shape`.

    Per valid cycle the sum of the `S` lane products is added to the accumulator; `first` starts
    the sum from 0 instead (an initial value is added after the array, by the post-processing),
    `last` emits the finished sum on `out` (`out_valid`) after
    `latency` cycles. `first` and `last` may be set on the same cycle; invalid cycles are bubbles.
    """

    def __init__(self, simd: int, acc_shape: Shape, act_bits: int = 8, weight_bits: int = 8,
                 input_registers: bool = True) -> None:
        self.simd = simd
        self.acc_shape = acc_shape
        self.input_registers = input_registers
        super().__init__({
            "x": In(data.ArrayLayout(signed(act_bits), simd)),
            "zx": In(signed(act_bits)),
            "w": In(data.ArrayLayout(signed(weight_bits), simd)),
            "valid": In(1),
            "first": In(1),
            "last": In(1),
            "out_valid": Out(1),
            "out": Out(acc_shape),
        })

    @property
    def latency(self) -> int:
        """Cycles from presenting a `last` input to `out_valid`: input, multiplier input, product,
        log2(S) tree levels, accumulator (without `input_registers`: one less, the inputs are
        then the input registers of a caller that shares them between PEs)."""
        return PE_LATENCY + exact_log2(self.simd) - (0 if self.input_registers else 1)

    def elaborate(self, platform) -> Module:
        m = Module()
        control = Signal(CONTROL)
        m.d.comb += [control.valid.eq(self.valid), control.first.eq(self.first), control.last.eq(self.last)]
        x, zx, w = self.x, self.zx, self.w
        if self.input_registers:
            control = register(m, control, "control_in", reset_less=False)
            x, zx, w = register(m, x, "x_in"), register(m, zx, "zx_in"), register(m, w, "w_in")
        control = register(m, control, "control_operand", reset_less=False)
        operands = [(x[lane] - zx, w[lane]) for lane in range(self.simd)]
        widths = (len(x[0]) + 1, len(w[0]))
        depth = 0
        if self.simd == 1:  # input and product registers inside the DSP (hwgen.dsp)
            multiplier = m.submodules.multiplier_0 = RegisteredMultiplier(*widths)
            m.d.comb += [multiplier.a.eq(operands[0][0]), multiplier.b.eq(operands[0][1])]
            level = [multiplier.p]
        else:  # lane pairs: the first tree level too (in the DSP's adder on iCE40)
            level = []
            for i in range(self.simd // 2):
                pair = m.submodules[f"pair_{i}"] = RegisteredDotPair(*widths)
                (a0, b0), (a1, b1) = operands[2 * i], operands[2 * i + 1]
                m.d.comb += [pair.a0.eq(a0), pair.b0.eq(b0), pair.a1.eq(a1), pair.b1.eq(b1)]
                level.append(pair.p)
            depth = 1
        control = register(m, control, "control_product", reset_less=False)
        if depth:
            control = register(m, control, "control_tree1", reset_less=False)
        while len(level) > 1:
            depth += 1
            level = [register(m, a + b, f"tree{depth}_{i}") for i, (a, b) in enumerate(zip(level[::2], level[1::2]))]
            control = register(m, control, f"control_tree{depth}", reset_less=False)

        acc = Signal(self.acc_shape, reset_less=True)
        with m.If(control.valid):
            m.d.sync += acc.eq(Mux(control.first, 0, acc) + level[0])
        m.d.sync += self.out_valid.eq(control.valid & control.last)
        m.d.comb += self.out.eq(acc)
        return m
