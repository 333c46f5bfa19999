"""What the vector unit's parts are built for, and what travels down its pipeline."""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Shape, signed, unsigned
from amaranth.lib import data

from hwgen.config import MULTIPLIER_BITS
from hwgen.isa import Opcode, VecOp
from hwgen.isa_layout import PAYLOADS

LOOPS = ("oh", "ow", "group", "kh", "kw", "operand")
"""The read loops, outermost first."""
PARAM_RECORD = data.StructLayout({"bias": signed(32), "multiplier": unsigned(MULTIPLIER_BITS),
                                  "shift": unsigned(8), "spare": unsigned(8)})
"""One parameter-bank record (`hwgen.layout`, little-endian)."""
CONTROL = data.StructLayout({"valid": 1, "first": 1, "last": 1, "final": 1, "operand": 1,
                             "group": unsigned(8), "slice": unsigned(8), "odd": 1})
"""What travels with a read through the pipeline: window first/last, last of the command,
operand (ADD's second), channel group, pixel within the input word, odd word."""
DIFF = signed(9)
"""A lane's value less its zero point (int8 minus int8)."""


@dataclass(frozen=True)
class VectorParams:
    """The vector unit's shape: `simd` lanes (`2**log_simd`), `2**log_cols` pixels per input word,
    `2**log_groups` channel groups per parameter word, pixel addresses of `pixel_bits`, the
    operations `ops` (`hwgen.vector_ops.vector_ops`) with accumulators of `acc_shape`,
    `shift_add` coefficient products (`template.vector_products: serial`), output windows at
    least `interval` cycles apart, the read address in a register (`address_register`) and the
    post-processing's `post_latency`."""

    simd: int
    log_simd: int
    log_cols: int
    log_groups: int
    pixel_bits: int
    ops: frozenset[VecOp]
    acc_shape: Shape
    shift_add: bool
    interval: int
    address_register: bool
    post_latency: int

    @property
    def windows(self) -> bool:
        """Ops over a kernel window, coefficient 1 (MAX, SUM)."""
        return bool(self.ops & {VecOp.MAX, VecOp.SUM})

    @property
    def scaled(self) -> bool:
        """Ops with a coefficient (ADD, COPY)."""
        return bool(self.ops & {VecOp.ADD, VecOp.COPY})

    @property
    def max_only(self) -> bool:
        """MAX alone: the zero point is subtracted as the pixel is selected; no product stage."""
        return self.ops == {VecOp.MAX}

    @property
    def serial_products(self) -> bool:
        """COPY and ADD take `DIGITS` cycles a product (shift-add)."""
        return self.shift_add and self.scaled

    @property
    def loops(self) -> tuple[str, ...]:
        """The read loops the ops run, outermost first: without ADD no operand loop, without MAX
        and SUM no kernel-window loops."""
        return tuple(name for name in LOOPS if (self.windows or name not in ("kh", "kw"))
                     and (VecOp.ADD in self.ops or name != "operand"))

    @property
    def bounds(self) -> dict[str, int]:
        """The bits of each loop's count. `ow` steps a pixel per iteration: a VEC reading inside
        the bank has at most as many columns as the bank has pixels."""
        window = PAYLOADS[Opcode.CONVCFG]["kernel_h"].shape.width
        return {"oh": 10, "ow": min(12, self.pixel_bits), "group": 8, "kh": window, "kw": window, "operand": 1}

    def last_layout(self) -> data.StructLayout:
        """Per loop but the outermost (which counts down to 0), the count of its last iteration."""
        return data.StructLayout({name: self.bounds[name] for name in self.loops[1:]})

    @property
    def copies_steps(self) -> bool:
        """With both kinds of op a command's pointer steps are copied as it is accepted (chosen by
        its op); with one kind, those from CONVCFG alone are used as they are."""
        return self.windows and self.scaled

    def terms_layout(self) -> data.StructLayout:
        """The terms of a read's pixel pointer, in the order they are summed: each loop's offset
        (`ow`'s: its count), `kw`'s column and the operand's offset."""
        widths = {name: self.bounds["ow"] if name == "ow" else self.pixel_bits
                  for name in self.loops if name != "operand"}
        if self.windows:
            widths["column"] = self.bounds["kw"]
        if "operand" in self.loops:
            widths["operand"] = self.pixel_bits
        return data.StructLayout(widths)

    def step_layout(self) -> data.StructLayout:
        """Per loop, its pointer step in pixels (`kw`'s, CONVCFG's row pitch, at that width unless
        copied)."""
        widths = {name: self.pixel_bits for name in self.loops}
        if "kw" in widths and not self.copies_steps:
            widths["kw"] = min(self.pixel_bits, PAYLOADS[Opcode.CONVCFG]["in_row_pitch"].shape.width)
        return data.StructLayout(widths)
