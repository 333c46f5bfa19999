"""The CONVCFG step fields the compiler writes (`template.address_steps: compiler`) and those the
hardware leaves unread, without HDL imports (the engines' step logic: `hwgen.conv_steps`)."""
from __future__ import annotations

from hwgen.config import AddressSteps, Template

FIELD_BITS = 16
"""Width of the CONVCFG step fields: pixel addresses up to 16 bits."""


def compiler_fields(template: Template, stride: int, in_rows: int, in_row_pitch: int) -> dict[str, int]:
    """The CONVCFG step fields the compiler emits: the products with `address_steps: compiler`,
    none (zero) otherwise."""
    if template.address_steps != AddressSteps.COMPILER:
        return {}
    mask = (1 << FIELD_BITS) - 1
    return {"plane_step": in_rows * stride * in_row_pitch & mask, "flat_plane_step": in_rows * in_row_pitch & mask}


def unread_fields(template: Template) -> frozenset[str]:
    """CONVCFG fields the hardware of `template` never reads."""
    compiler = template.address_steps == AddressSteps.COMPILER
    return frozenset({"in_rows"} if compiler else {"plane_step", "flat_plane_step"})
