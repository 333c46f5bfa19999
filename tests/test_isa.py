"""Instruction format: assemble -> encode -> decode -> disassemble round trips, range errors,
and the Amaranth layout the RTL decoder uses reading the same fields."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwgen.isa import ENUM_FIELDS, FIELDS, INSTRUCTION_BITS, AssemblyError, Instruction, Opcode, assemble, disassemble
from hwgen.isa_layout import INSTRUCTION_LAYOUT, PAYLOADS


@st.composite
def instructions(draw) -> Instruction:
    opcode = draw(st.sampled_from(list(Opcode)))
    values = {}
    for name, member in PAYLOADS[opcode]:
        width, is_signed = member.shape.width, member.shape.signed
        low, high = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if is_signed else (0, (1 << width) - 1)
        enum = ENUM_FIELDS.get(name)
        values[name] = draw(st.sampled_from([int(m) for m in enum]) if enum else st.integers(low, high))
    return Instruction.make(opcode, **values)


@settings(max_examples=300)
@given(instructions())
def test_encode_decode_and_text_round_trip(instruction):
    word = instruction.encode()
    assert 0 <= word < 1 << INSTRUCTION_BITS
    assert Instruction.decode(word) == instruction
    assert Instruction.parse(str(instruction)) == instruction
    assert assemble(disassemble([word])) == [word]


@settings(max_examples=100)
@given(instructions())
def test_rtl_layout_reads_the_same_fields(instruction):
    view = INSTRUCTION_LAYOUT.from_bits(instruction.encode())
    assert view.opcode == instruction.opcode
    payload = getattr(view.payload, instruction.opcode.name.lower())
    for name, value in instruction.fields.items():
        assert getattr(payload, name) == value


def test_fields_do_not_overlap_and_fit():
    for opcode, layout in PAYLOADS.items():
        spans = sorted((member.offset, member.offset + member.width) for _, member in layout)
        assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:])), opcode
    assert INSTRUCTION_LAYOUT.size == INSTRUCTION_BITS


def test_rtl_layouts_place_every_field_where_the_isa_says():
    for opcode, fields in FIELDS.items():
        assert [(f.name, f.offset, f.width, f.signed) for f in fields] == [
            (name, member.offset, member.shape.width, member.shape.signed) for name, member in PAYLOADS[opcode]]


def test_errors_name_the_field_and_range():
    with pytest.raises(AssemblyError, match=r"LOOP.count: 70000 is out of range \[0, 65535\]"):
        Instruction.make(Opcode.LOOP, count=70000)
    with pytest.raises(AssemblyError, match="unknown field 'banks'"):
        Instruction.make(Opcode.STORE, banks=1)
    with pytest.raises(AssemblyError, match="line 2"):
        assemble(["NOP", "LOAD buffer=nowhere"])
    with pytest.raises(AssemblyError, match="WAIT.queue: 3 is not one of load=0, compute=1, store=2"):
        Instruction.make(Opcode.WAIT, queue=3)
    with pytest.raises(AssemblyError, match="unknown opcode"):
        Instruction.decode(31)


def test_assembly_text_with_names_and_comments():
    words = assemble(["# a tiny program", "SIGNAL queue=load sem=0", "LOAD buffer=input bank=1 desc=2  # tile 0", "END"])
    assert [Instruction.decode(w).opcode for w in words] == [Opcode.SIGNAL, Opcode.LOAD, Opcode.END]
    assert Instruction.decode(words[1])["bank"] == 1
