"""Multiplication by adders: `value * factor` as shifted copies of `value`, one per bit of the
unsigned `factor`, summed in a balanced tree. Yosys sees no `$mul` cell, so nothing is mapped to
a DSP: for narrow factors (digit-serial multipliers, small loop bounds) a few LUT adders are
cheaper than a hard multiplier the PE array needs."""
from __future__ import annotations

from amaranth.hdl import Mux, Value


def shift_add(value: Value, factor: Value) -> Value:
    """`value * factor` (`factor` unsigned) without a multiplier cell."""
    terms = [Mux(factor[bit], value, 0) << bit for bit in range(len(factor))]
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]
