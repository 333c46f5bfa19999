"""Pointer steps of a CONVCFG word, in input-bank pixels, derived once per CONVCFG.

The engines move their input pointers by products of CONVCFG fields: `row` = stride *
in_row_pitch (all phases of one input row), `oh` = stride * row (the input rows of one output
row), `plane` = in_rows * row (one input channel group) and `flat_plane` = in_rows *
in_row_pitch (one channel group at stride 1). They are computed modulo `2**bits` (the pixel
address width: only in-bank positions matter) in `LATENCY` register stages of one multiplier
each, so no path chains two multipliers; the compute unit holds the next command back until
they are ready (`hwgen.compute_unit.CONVCFG_CYCLES`).
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hwgen.isa import INSTRUCTION_LAYOUT

LATENCY = 2
NAMES = ("row", "oh", "plane", "flat_plane")


def steps_layout(bits: int) -> data.StructLayout:
    """The four steps, `bits` wide each."""
    return data.StructLayout({name: unsigned(bits) for name in NAMES})


def pointer_steps(convcfg: dict, bits: int) -> dict[str, int]:
    """The steps of a CONVCFG's fields, as `ConvSteps` outputs them (for testbenches that drive
    an engine directly)."""
    mask = (1 << bits) - 1
    row = convcfg["stride"] * convcfg["in_row_pitch"]
    return {"row": row & mask, "oh": convcfg["stride"] * row & mask, "plane": convcfg["in_rows"] * row & mask,
            "flat_plane": convcfg["in_rows"] * convcfg["in_row_pitch"] & mask}


class ConvSteps(wiring.Component):
    """`steps` of the CONVCFG word on `convcfg`, `LATENCY` cycles after it appears."""

    def __init__(self, bits: int) -> None:
        self.bits = bits
        super().__init__({"convcfg": In(INSTRUCTION_LAYOUT), "steps": Out(steps_layout(bits))})

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self.convcfg.payload.convcfg

        def stage(value: Value, name: str) -> Signal:
            reg = Signal(unsigned(self.bits), name=name, reset_less=True)
            m.d.sync += reg.eq(value)
            return reg

        row, pitch = stage(cfg.stride * cfg.in_row_pitch, "row"), stage(cfg.in_row_pitch, "pitch")
        stride_squared = stage(cfg.stride * cfg.stride, "stride_squared")
        rows_stride = stage(cfg.in_rows * cfg.stride, "rows_stride")
        flat_plane = stage(cfg.in_rows * cfg.in_row_pitch, "flat_plane_product")
        out = self.steps
        m.d.sync += [out.row.eq(row), out.oh.eq(stride_squared * pitch), out.plane.eq(rows_stride * pitch),
                     out.flat_plane.eq(flat_plane)]
        return m
