"""The vector unit's arithmetic: each lane's product with the coefficient, accumulated over a
window (maximum or sum)."""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hwgen.isa import Opcode, VecOp
from hwgen.isa_layout import PAYLOADS
from hwgen.pe import register
from hwgen.timing import DIGIT_BITS, DIGITS
from hwgen.shift_add import shift_add
from hwgen.vector.params import CONTROL, DIFF, VectorParams


class VecArithmetic(wiring.Component):
    """Multiplies each lane by the coefficient (1 for window ops; the VEC's `multiplier_a`, or
    `multiplier_b` for ADD's second operand), then accumulates the products of a window (MAX:
    their maximum, else their sum). The product registers keep a reset (the ice40_dsp workaround
    of `hwgen.pe`). Without COPY and ADD the product stage only delays; MAX alone has none.

    - `vec`: the command's VEC payload; `window`: it is a window op;
    - `read`: the control of the read whose data the operand stage selects (its operand picks the
      coefficient);
    - `diffs`, `control`: the operand stage's values and their control;
    - `summing`: the control of the products being accumulated;
    - `total`, `done`: the accumulated window (valid at its `last`) and its control.
    """

    def __init__(self, params: VectorParams):
        self.params = params
        super().__init__({
            "vec": In(PAYLOADS[Opcode.VEC]),
            "window": In(1),
            "read": In(CONTROL),
            "diffs": In(data.ArrayLayout(DIFF, params.simd)),
            "control": In(CONTROL),
            "summing": Out(CONTROL),
            "total": Out(data.ArrayLayout(params.acc_shape, params.simd)),
            "done": Out(CONTROL),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p, vec, window, control = self.params, self.vec, self.window, self.control
        diffs = [self.diffs[lane] for lane in range(p.simd)]
        held = control.valid if p.serial_products else 1  # serial: the operands stay for the digits
        if p.scaled:
            coefficient = register(m, Mux(window, 1, Mux(self.read.operand, vec.multiplier_b, vec.multiplier_a)),
                                   "coefficient_select")
            coefficient = register(m, coefficient, "coefficient", held)
        if not p.max_only:
            control = register(m, control, "control_diff", reset_less=False)
        if p.max_only:  # no subtraction, no product: the maximum of the selected pixels
            products = diffs
        elif p.serial_products:
            products, control = self._serial_products(m, diffs, coefficient, control)
        else:
            products = [register(m, diff * coefficient if p.scaled else diff, f"product_{lane}", reset_less=False)
                        for lane, diff in enumerate(diffs)]
        if p.max_only or p.serial_products:
            m.d.comb += self.summing.eq(control)
        else:  # the control follows the products through their registers
            m.d.sync += self.summing.eq(control)
        control = self.summing
        total = Signal(data.ArrayLayout(p.acc_shape, p.simd), reset_less=True)
        for lane, product in enumerate(products):
            larger = Mux(product > total[lane], product, total[lane])
            if p.max_only:
                combined = larger
            elif VecOp.MAX in p.ops:
                combined = Mux(vec.op == VecOp.MAX, larger, total[lane] + product)
            else:
                combined = total[lane] + product
            with m.If(control.valid):
                m.d.sync += total[lane].eq(Mux(control.first, product, combined))
        m.d.sync += self.done.eq(control)
        m.d.comb += self.total.eq(total)
        return m

    def _serial_products(self, m: Module, diffs: list, coefficient: Signal,
                         control: data.View) -> tuple[list[Value], data.View]:
        """The products of held `diffs` and `coefficient` over `DIGITS` cycles (top digit
        first, shift-add) from the cycle `control` is valid, with the control delayed to match;
        a window op's coefficient is 1: its `diffs` pass on the next cycle."""
        window = self.window
        step = Signal(range(DIGITS))
        now = Mux(control.valid, 0, step)
        m.d.sync += step.eq(Mux(now == DIGITS - 1, now, now + 1))
        digit = coefficient.word_select((DIGITS - 1 - now).as_unsigned(), DIGIT_BITS)
        products = []
        for lane, diff in enumerate(diffs):
            total = Signal((diff * coefficient).shape(), name=f"product_{lane}", reset_less=True)
            m.d.sync += total.eq(Mux(control.valid, 0, total << DIGIT_BITS) + shift_add(diff, digit))
            products.append(Mux(window, register(m, diff, f"window_value_{lane}"), total))
        passed = register(m, control, "control_product", reset_less=False)
        delayed = control
        for stage in range(DIGITS):
            delayed = register(m, delayed, f"control_digit_{stage}", reset_less=False)
        return products, CONTROL(Mux(window, passed.as_value(), delayed.as_value()))
