"""The instruction set: defined once (`FIELDS`), used by the assembler, the disassembler, the
ISA simulator, the planner and, as `amaranth.lib.data` layouts built from it
(`hwgen.isa_layout`), the RTL decoder. No HDL import: planning reads field widths from here.

Every instruction is `INSTRUCTION_BITS` wide: a 5-bit opcode in the low bits, then the
operation's fields (a union member named after the opcode). Field-by-field documentation:
`docs/isa.md`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType
from typing import NamedTuple

from common.errors import HwgenError

INSTRUCTION_BITS = 128
REGISTERS = 16
SEMAPHORES = 8


class AssemblyError(HwgenError):
    """An instruction field is missing, unknown or out of range, or the text cannot be parsed."""


class Opcode(IntEnum):
    NOP = 0
    END = 1
    LOOP = 2
    SETR = 3
    ADDR = 4
    WAIT = 5
    SIGNAL = 6
    LOAD = 7
    STORE = 8
    CONVCFG = 9
    CONV = 10
    VEC = 11


class Queue(IntEnum):
    """The unit a WAIT or SIGNAL is dispatched to."""

    LOAD = 0
    COMPUTE = 1
    STORE = 2


class Buffer(IntEnum):
    """On-chip buffers a LOAD can fill."""

    INPUT = 0
    WEIGHT = 1
    PARAM = 2
    ACC = 3


class VecOp(IntEnum):
    """Operations of the pooling / element-wise unit."""

    MAX = 0
    SUM = 1
    ADD = 2
    COPY = 3


OPCODE_BITS = 5


class FieldShape(NamedTuple):
    """A field's width in bits and whether it is two's complement."""

    width: int
    signed: bool


def unsigned(width: int) -> FieldShape:
    return FieldShape(width, False)


def signed(width: int) -> FieldShape:
    return FieldShape(width, True)


@dataclass(frozen=True)
class Field:
    """One payload field: `offset` is its lowest bit in the payload (the instruction's bit
    `OPCODE_BITS + offset`); fields follow each other in their listed order."""

    name: str
    width: int
    signed: bool
    offset: int

    @property
    def range(self) -> tuple[int, int]:
        """The least and greatest value the field holds."""
        if self.signed:
            return -(1 << (self.width - 1)), (1 << (self.width - 1)) - 1
        return 0, (1 << self.width) - 1


_SHAPES: dict[Opcode, dict[str, FieldShape]] = {
    Opcode.NOP: {},
    Opcode.END: {},
    Opcode.LOOP: {"count": unsigned(16), "body": unsigned(12)},
    Opcode.SETR: {"rd": unsigned(4), "imm": signed(32)},
    Opcode.ADDR: {"rd": unsigned(4), "imm": signed(32)},
    Opcode.WAIT: {"queue": unsigned(2), "sem": unsigned(3)},
    Opcode.SIGNAL: {"queue": unsigned(2), "sem": unsigned(3)},
    Opcode.LOAD: {
        "buffer": unsigned(2), "bank": unsigned(1), "desc": unsigned(10),
        "dram_reg": unsigned(4), "dram_offset": signed(32), "buf_addr": unsigned(16),
        "y_reg": unsigned(4), "y_offset": signed(12), "x_reg": unsigned(4), "x_offset": signed(12),
    },
    Opcode.STORE: {
        "bank": unsigned(1), "desc": unsigned(10), "dram_reg": unsigned(4), "dram_offset": signed(32),
        "buf_addr": unsigned(16),
    },
    Opcode.CONVCFG: {
        "in_zero_point": signed(8), "out_zero_point": signed(8), "act_min": signed(8), "act_max": signed(8),
        "kernel_h": unsigned(7), "kernel_w": unsigned(7), "stride": unsigned(3),
        "in_rows": unsigned(10), "in_row_pitch": unsigned(12),
        "plane_step": unsigned(16), "flat_plane_step": unsigned(16),
    },
    Opcode.CONV: {
        "in_bank": unsigned(1), "weight_bank": unsigned(1), "out_bank": unsigned(1),
        "oc_groups": unsigned(8), "out_rows": unsigned(10), "ow_groups": unsigned(8),
        "last_group_cols": unsigned(8), "ic_groups": unsigned(8), "depthwise": unsigned(1),
        "init_from_acc": unsigned(1), "requantize": unsigned(1), "pool": unsigned(3),
    },
    Opcode.VEC: {
        "op": unsigned(2), "in_bank": unsigned(1), "out_bank": unsigned(1), "in2_addr": unsigned(16),
        "in2_zero_point": signed(8), "channel_groups": unsigned(8), "out_rows": unsigned(10),
        "out_cols": unsigned(12), "multiplier_a": unsigned(16), "multiplier_b": unsigned(16),
        "param_bank": unsigned(1),
    },
}


def _packed(shapes: dict[str, FieldShape]) -> tuple[Field, ...]:
    offsets = [0]
    for shape in shapes.values():
        offsets.append(offsets[-1] + shape.width)
    return tuple(Field(name, shape.width, shape.signed, offset)
                 for (name, shape), offset in zip(shapes.items(), offsets))


FIELDS: dict[Opcode, tuple[Field, ...]] = {opcode: _packed(shapes) for opcode, shapes in _SHAPES.items()}
"""Each opcode's payload fields, least significant first."""
PAYLOAD_BITS = max(sum(f.width for f in fields) for fields in FIELDS.values())
"""The widest payload: the payload union's width."""
assert OPCODE_BITS + PAYLOAD_BITS <= INSTRUCTION_BITS


def payload_field(opcode: Opcode, name: str) -> Field:
    """The field `name` of `opcode`'s payload."""
    return next(f for f in FIELDS[opcode] if f.name == name)


def field_limit(opcode: Opcode, name: str) -> int:
    """The largest value a field can hold."""
    return payload_field(opcode, name).range[1]


ENUM_FIELDS: dict[str, type[IntEnum]] = {"queue": Queue, "buffer": Buffer, "op": VecOp}
"""Fields whose values have names in the assembly text."""


@dataclass(frozen=True)
class Instruction:
    """One instruction: an opcode and all of its fields (missing fields default to 0)."""

    opcode: Opcode
    fields: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def make(cls, opcode: Opcode, **values: int) -> "Instruction":
        names = [f.name for f in FIELDS[opcode]]
        unknown = set(values) - set(names)
        if unknown:
            raise AssemblyError(f"{opcode.name}: unknown field {sorted(unknown)[0]!r}; fields: {', '.join(names) or 'none'}")
        complete = {}
        for f in FIELDS[opcode]:
            name, value = f.name, int(values.get(f.name, 0))
            low, high = f.range
            if not low <= value <= high:
                raise AssemblyError(f"{opcode.name}.{name}: {value} is out of range [{low}, {high}]")
            enum = ENUM_FIELDS.get(name)
            if enum is not None and value not in enum._value2member_map_:
                names = ", ".join(f"{m.name.lower()}={m.value}" for m in enum)
                raise AssemblyError(f"{opcode.name}.{name}: {value} is not one of {names}")
            complete[name] = value
        return cls(opcode, MappingProxyType(complete))

    def __getitem__(self, name: str) -> int:
        return self.fields[name]

    @property
    def queue(self) -> Queue | None:
        """The unit queue this instruction is dispatched to (None: executed by the fetch stage)."""
        if self.opcode in (Opcode.WAIT, Opcode.SIGNAL):
            return Queue(self.fields["queue"])
        return {Opcode.LOAD: Queue.LOAD, Opcode.STORE: Queue.STORE, Opcode.CONVCFG: Queue.COMPUTE,
                Opcode.CONV: Queue.COMPUTE, Opcode.VEC: Queue.COMPUTE}.get(self.opcode)

    def encode(self) -> int:
        word = int(self.opcode)
        for f in FIELDS[self.opcode]:
            word |= (self.fields[f.name] & ((1 << f.width) - 1)) << (OPCODE_BITS + f.offset)
        return word

    @classmethod
    def decode(cls, word: int) -> "Instruction":
        try:
            opcode = Opcode(word & ((1 << OPCODE_BITS) - 1))
        except ValueError:
            raise AssemblyError(f"word {word:#x}: unknown opcode {word & ((1 << OPCODE_BITS) - 1)}") from None
        values = {}
        for f in FIELDS[opcode]:
            raw = (word >> (OPCODE_BITS + f.offset)) & ((1 << f.width) - 1)
            if f.signed and raw >> (f.width - 1):
                raw -= 1 << f.width
            values[f.name] = raw
        return cls.make(opcode, **values)

    def __str__(self) -> str:
        parts = [self.opcode.name]
        for name, value in self.fields.items():
            enum = ENUM_FIELDS.get(name)
            parts.append(f"{name}={enum(value).name.lower() if enum else value}")
        return " ".join(parts)

    @classmethod
    def parse(cls, text: str) -> "Instruction":
        """Inverse of `str()`: ``"LOAD buffer=input bank=1 desc=3 ..."``."""
        tokens = text.split()
        if not tokens or tokens[0].upper() not in Opcode.__members__:
            raise AssemblyError(f"{text!r}: expected an opcode ({', '.join(Opcode.__members__)})")
        values = {}
        for token in tokens[1:]:
            match = re.fullmatch(r"(\w+)=(-?\w+)", token)
            if not match:
                raise AssemblyError(f"{text!r}: {token!r} is not name=value")
            name, raw = match.groups()
            enum = ENUM_FIELDS.get(name)
            try:
                values[name] = enum[raw.upper()] if enum and not raw.lstrip("-").isdigit() else int(raw, 0)
            except (KeyError, ValueError):
                allowed = ", ".join(m.lower() for m in enum.__members__) if enum else "an integer"
                raise AssemblyError(f"{text!r}: {name}={raw} is not valid; expected {allowed}") from None
        return cls.make(Opcode[tokens[0].upper()], **values)


def assemble(lines: list[str]) -> list[int]:
    """Assembly text (one instruction per line, `#` comments) to instruction words."""
    words = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            words.append(Instruction.parse(text).encode())
        except AssemblyError as error:
            raise AssemblyError(f"line {number}: {error}") from None
    return words


def disassemble(words: list[int]) -> list[str]:
    """Instruction words to assembly text (parseable again by `assemble`)."""
    return [str(Instruction.decode(word)) for word in words]
