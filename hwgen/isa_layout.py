"""The instruction format as `amaranth.lib.data` layouts for the RTL, built from `hwgen.isa.FIELDS`
(the one definition): a payload struct per opcode and the whole instruction word."""
from __future__ import annotations

from amaranth import signed, unsigned
from amaranth.lib import data

from hwgen.isa import FIELDS, INSTRUCTION_BITS, OPCODE_BITS, PAYLOAD_BITS, Opcode

PAYLOADS: dict[Opcode, data.StructLayout] = {
    opcode: data.StructLayout({f.name: (signed if f.signed else unsigned)(f.width) for f in fields})
    for opcode, fields in FIELDS.items()
}
_PAYLOAD_UNION = data.UnionLayout({opcode.name.lower(): layout for opcode, layout in PAYLOADS.items()})
assert _PAYLOAD_UNION.size == PAYLOAD_BITS
INSTRUCTION_LAYOUT = data.StructLayout({
    "opcode": unsigned(OPCODE_BITS),
    "payload": _PAYLOAD_UNION,
    "reserved": unsigned(INSTRUCTION_BITS - OPCODE_BITS - PAYLOAD_BITS),
})
