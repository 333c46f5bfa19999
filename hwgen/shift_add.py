"""Multiplication by adders: `value * factor` as shifted copies of `value`, one per bit of
`factor`, summed in a balanced tree. Yosys sees no `$mul` cell, so nothing is mapped to
a DSP: for narrow factors (digit-serial multipliers, small loop bounds) a few LUT adders are
cheaper than a hard multiplier the PE array needs."""
from __future__ import annotations

from amaranth.hdl import Mux, Value


def shift_add(value: Value, factor: Value) -> Value:
    """`value * factor` without a multiplier cell (a signed factor's top bit weighs
    `-2**(width - 1)`)."""
    terms = [Mux(factor[bit], value, 0) << bit for bit in range(len(factor))]
    if factor.shape().signed:
        terms[-1] = -terms[-1]
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]
