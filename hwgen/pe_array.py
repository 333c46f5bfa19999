"""The `R x C` PE array with its drain register bank.

Row `r` computes output channel `oc0 + r`, column `c` output pixel `ow0 + c`: the `S`-byte weight
word of row `r` is broadcast along the row, the `S`-byte pixel of column `c` down the column, and
`valid`/`first`/`last`/`zx` are shared. The PEs' input registers are the array's, one per
broadcast operand (a column's pixel, the zero point, the controls), not one per PE; the weights
have none: a step's weight words are presented one cycle after its pixels and controls (straight
from a block RAM read the cycle before, whose output register is then the input register). There
is no systolic skew: all PEs finish together.

Costs: a group's sums reach the drain bank `latency` (= PE latency + 1) cycles after its `last`
input; the bank then streams them out column by column as `C` beats of `R` accumulators (the
`R` output channels of one pixel, column `ow0` first, `last` set on column `C - 1`), one per
cycle while `drain.ready` is high, while the next group computes. Column-major draining gives
the post-processing one pixel's channels per beat, which the output buffer stores contiguously
(HWC), matching the DRAM activation layout. The bank holds one group: the sums of a group must
not arrive before the previous group's last beat is accepted (the cycle it is accepted is
fine), i.e. successive `last` inputs at least `C` cycles apart with a consumer that never
stalls, or the issuer holds `last` back otherwise. `loaded` is high in the cycle a group's sums
enter the bank, `latency` cycles after its `last` input (the cycle before its first beat).
With `idle_zero`, the drain's `acc` is 0 from the cycle after the last beat on until the next
group's sums enter (a consumer shared with another unit adds to it: `hwgen.compute_unit`).
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hwgen.accumulator import accumulator_shape
from hwgen.config import AcceleratorConfig
from hwgen.pe import PE, register
from hwgen.timing import array_latency


class PEArray(wiring.Component):
    """`rows x cols` PEs of `simd` lanes, accumulators of `accumulator_shape(config)`; see the
    module docstring for `idle_zero`."""

    def __init__(self, config: AcceleratorConfig, idle_zero: bool = False) -> None:
        self.idle_zero = idle_zero
        self.rows, self.cols, self.simd = config.pe.rows, config.pe.cols, config.pe.simd
        self.acc_shape = accumulator_shape(config)
        act, weight = signed(config.widths.activation), signed(config.widths.weight)
        self._pes = [[PE(self.simd, self.acc_shape, act.width, weight.width, input_registers=False)
                      for _ in range(self.cols)] for _ in range(self.rows)]
        super().__init__({
            "weights": In(data.ArrayLayout(data.ArrayLayout(weight, self.simd), self.rows)),
            "pixels": In(data.ArrayLayout(data.ArrayLayout(act, self.simd), self.cols)),
            "zx": In(act),
            "valid": In(1),
            "first": In(1),
            "last": In(1),
            "drain": Out(stream.Signature(data.StructLayout({
                "acc": data.ArrayLayout(self.acc_shape, self.rows), "last": 1}))),
            "loaded": Out(1),
        })

    @property
    def latency(self) -> int:
        """Cycles from a group's `last` input to its first drain beat."""
        return array_latency(self.simd)

    def elaborate(self, platform) -> Module:
        m = Module()
        # the PEs' input registers, one per broadcast operand: a column's pixel (the weights
        # arrive a cycle later, already registered)
        pixels = [register(m, self.pixels[c], f"pixel_{c}") for c in range(self.cols)]
        zx, first, last = register(m, self.zx, "zx"), register(m, self.first, "first"), register(m, self.last, "last")
        valid = register(m, self.valid, "valid", reset_less=False)
        for r, row in enumerate(self._pes):
            for c, pe in enumerate(row):
                m.submodules[f"pe_{r}_{c}"] = pe
                m.d.comb += [pe.x.eq(pixels[c]), pe.w.eq(self.weights[r]), pe.zx.eq(zx),
                             pe.valid.eq(valid), pe.first.eq(first), pe.last.eq(last)]

        bank = [Signal(data.ArrayLayout(self.acc_shape, self.rows), name=f"bank_{c}", reset_less=True)
                for c in range(self.cols)]
        pending = Signal(range(self.cols + 1))
        m.d.comb += [
            self.loaded.eq(self._pes[0][0].out_valid),
            self.drain.valid.eq(pending != 0),
            self.drain.payload.acc.eq(bank[0]),
            self.drain.payload.last.eq(pending == 1),
        ]
        with m.If(self._pes[0][0].out_valid):
            m.d.sync += pending.eq(self.cols)
            m.d.sync += [bank[c][r].eq(pe.out) for r, row in enumerate(self._pes) for c, pe in enumerate(row)]
        with m.Elif(self.drain.valid & self.drain.ready):
            m.d.sync += pending.eq(pending - 1)
            m.d.sync += [bank[c].eq(bank[c + 1]) for c in range(self.cols - 1)]
        if self.idle_zero:
            with m.Elif(pending == 0):
                m.d.sync += bank[0].eq(0)
        return m
