"""Accumulator width of the PEs: wide enough that no layer the configuration admits overflows.

One PE sum covers one tile's reduction, `ic_tile x kh x kw` products `(x - zx) * w`, started
from 0: the initial value (bias or a spilled partial sum, `widths.accumulator` bits) is added
after the array, by the post-processing (`hwgen.postprocess`: `acc + bias` one bit wider than
the wider of the two, so exact). Products
on padding (zero weights of padding channels, `x = zx` outside the image) are 0, so at most
`max_terms` products are non-zero: the tile's weights (at least one output channel) fit one
weight bank and its distinct input elements fit one input bank.
"""
from __future__ import annotations

from amaranth.hdl import Shape

from hwgen.config import AcceleratorConfig


def max_terms(config: AcceleratorConfig) -> int:
    """Largest number of non-zero products in one PE sum."""
    widths, buffers = config.widths, config.buffers
    return min(buffers.weight_bank // widths.weight_bytes, buffers.input_bank // widths.activation_bytes)


def max_product(config: AcceleratorConfig) -> int:
    """Largest `|(x - zx) * w|`: `|x - zx| <= 2**a - 1`, `|w| <= 2**(w-1)`."""
    return (2**config.widths.activation - 1) * 2 ** (config.widths.weight - 1)


def max_magnitude(config: AcceleratorConfig) -> int:
    """Largest `|sum|` of one PE."""
    return max_terms(config) * max_product(config)


def accumulator_shape(config: AcceleratorConfig) -> Shape:
    """The smallest signed shape holding `[-max_magnitude, max_magnitude]`."""
    bound = max_magnitude(config)
    return Shape.cast(range(-bound, bound + 1))
