"""Pointer steps of a CONVCFG word, in input-bank pixels, derived once per CONVCFG.

The engines move their input pointers by products of CONVCFG fields: `row` = stride *
in_row_pitch (all phases of one input row), `oh` = stride * row (the input rows of one output
row), `plane` = in_rows * row (one input channel group) and `flat_plane` = in_rows *
in_row_pitch (one channel group at stride 1). They are computed modulo `2**bits` (the pixel
address width: only in-bank positions matter) in `hwgen.timing.STEPS_LATENCY` register stages
of one multiplier each, so no path chains two multipliers; the compute unit holds the next
command back until they are ready (`hwgen.timing.CONVCFG_CYCLES`).

With `template.address_steps: compiler` the compiler writes the two long products into the
CONVCFG word (`plane_step`, `flat_plane_step`, modulo `2**16`: `hwgen.conv_step_fields.compiler_fields`) and the
short ones, by the 3-bit stride, are shift-add (`hwgen.shift_add`): no multiplier at all.
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hwgen.isa_layout import INSTRUCTION_LAYOUT
from hwgen.shift_add import shift_add

NAMES = ("row", "oh", "plane", "flat_plane")


def steps_layout(bits: int) -> data.StructLayout:
    """The four steps, `bits` wide each."""
    return data.StructLayout({name: unsigned(bits) for name in NAMES})


def convcfg_steps(convcfg: dict, bits: int) -> dict[str, int]:
    """The steps of a CONVCFG's fields, as `ConvSteps` outputs them (for testbenches that drive
    an engine directly)."""
    mask = (1 << bits) - 1
    row = convcfg["stride"] * convcfg["in_row_pitch"]
    return {"row": row & mask, "oh": convcfg["stride"] * row & mask, "plane": convcfg["in_rows"] * row & mask,
            "flat_plane": convcfg["in_rows"] * convcfg["in_row_pitch"] & mask}


class ConvSteps(wiring.Component):
    """`steps` of the CONVCFG word on `convcfg`, `hwgen.timing.STEPS_LATENCY` cycles after it
    appears (the word must stay there while they are used); with `from_fields`, the long
    products come from its step fields, passed through."""

    def __init__(self, bits: int, from_fields: bool = False) -> None:
        self.bits = bits
        self.from_fields = from_fields
        super().__init__({"convcfg": In(INSTRUCTION_LAYOUT), "steps": Out(steps_layout(bits))})

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self.convcfg.payload.convcfg

        def stage(value: Value, name: str) -> Signal:
            reg = Signal(unsigned(self.bits), name=name, reset_less=True)
            m.d.sync += reg.eq(value)
            return reg

        out = self.steps
        if self.from_fields:  # the CONVCFG word is held: only the shift-add products are registers
            row = stage(shift_add(cfg.in_row_pitch, cfg.stride), "row")
            m.d.sync += out.oh.eq(shift_add(row, cfg.stride))
            m.d.comb += [out.row.eq(row), out.plane.eq(cfg.plane_step), out.flat_plane.eq(cfg.flat_plane_step)]
            return m
        row, pitch = stage(cfg.stride * cfg.in_row_pitch, "row"), stage(cfg.in_row_pitch, "pitch")
        stride_squared = stage(cfg.stride * cfg.stride, "stride_squared")
        rows_stride = stage(cfg.in_rows * cfg.stride, "rows_stride")
        flat_plane = stage(cfg.in_rows * cfg.in_row_pitch, "flat_plane_product")
        m.d.sync += [out.row.eq(row), out.oh.eq(stride_squared * pitch), out.plane.eq(rows_stride * pitch),
                     out.flat_plane.eq(flat_plane)]
        return m
