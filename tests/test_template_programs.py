"""Programs on a configuration without the sequencer's registers and loops: the compiler's
programs pass, a program using LOOP, SETR, ADDR or a register operand is one clear error from
the ISA simulator, the timing model and hardware generation; an SPRAM program memory's size
limit."""
from __future__ import annotations

import numpy as np
import pytest

from hwgen.accelerator import Accelerator, program_regions
from hwgen.config import config_from_dict, load_config
from hwgen.dma import Descriptor, Dim
from hwgen.dma.units import descriptor_table_params
from hwgen.program_walk import ProgramError, check_program
from hwgen.isa import Instruction, Opcode, assemble
from hwgen.program import Program
from hwgen.sequencer import SPRAM_INSTRUCTIONS
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.program_model import predict
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs
from sim.isa_sim import IsaSimulator
from hw_configs import data_config

ICEBREAKER = load_config("icebreaker")
COPYING = config_from_dict({**ICEBREAKER.to_dict(), "template": {**ICEBREAKER.to_dict()["template"],
                                                                 "dma_descriptor": "copy", "dma_loops": 4}})
"""The iCEBreaker configuration with a four-loop DMA that keeps a copy of its descriptor (whole
entries)."""


def assert_refused_on_icebreaker(program: Program, message: str) -> None:
    """The ISA simulator, the timing model and hardware generation each refuse `program` on the
    icebreaker configuration with one `ProgramError` matching `message`."""
    for run in (lambda: IsaSimulator(ICEBREAKER, program, np.zeros(64, np.uint8)).run(),
                lambda: predict(program, ICEBREAKER), lambda: Accelerator(ICEBREAKER, program)):
        with pytest.raises(ProgramError, match=message):
            run()


@pytest.mark.parametrize("text, culprit", [
    ("LOOP count=2 body=1", "LOOP"),
    ("SETR rd=1 imm=5", "SETR"),
    ("ADDR rd=2 imm=-1", "ADDR"),
    ("LOAD buffer=input dram_reg=3", "register operand dram_reg"),
    ("LOAD buffer=weight x_reg=1", "register operand x_reg"),
    ("STORE dram_reg=15", "register operand dram_reg"),
])
def test_register_instructions_are_refused_without_registers(text, culprit):
    program = Program(assemble(["SIGNAL queue=load sem=0", text, "END"]))
    message = (rf"instruction 1 \({text.split()[0]} .*\): {culprit} needs the sequencer's registers and loops, "
               r"which configuration 'icebreaker' leaves out \(template\.loops_and_registers: false\); "
               r"allowed opcodes: NOP, END, WAIT, SIGNAL, LOAD, STORE, CONVCFG, CONV, VEC with register operands 0")
    assert_refused_on_icebreaker(program, message)
    check_program(program, data_config("ice40up5k"))  # the full template runs it


@pytest.mark.parametrize("text, culprit", [
    ("CONV init_from_acc=1 requantize=1", "init_from_acc=1"),
    ("CONV requantize=0", "requantize=0"),
    ("LOAD buffer=acc", "a LOAD into the accumulator buffer"),
])
def test_partial_sum_instructions_are_refused_without_partial_sums(text, culprit):
    """`template.partial_sums: none`: a CONV continuing or leaving partial sums, or a LOAD into the
    accumulator buffer, is one clear error from the ISA simulator, the timing model and hardware
    generation; the full template runs it."""
    program = Program(assemble(["SIGNAL queue=load sem=0", text, "END"]))
    assert ICEBREAKER.template.partial_sums == "none"
    message = (rf"instruction 1 \({text.split()[0]} .*\): {culprit} needs partial sums, which configuration "
               r"'icebreaker' leaves out \(template\.partial_sums: none\); allowed: CONV with init_from_acc=0 and "
               r"requantize=1, LOADs into the input, weight and param buffers")
    assert_refused_on_icebreaker(program, message)
    check_program(program, data_config("ice40up5k"))


def test_a_conv_beyond_the_engines_kernels_is_refused():
    """CONVCFG's kernel fields hold the vector unit's windows to 127; a CONV under one above 15 is
    one clear error from the ISA simulator, the timing model and hardware generation, and a VEC
    under it runs."""
    config = "CONVCFG kernel_h={} kernel_w=3 in_rows=16 in_row_pitch=16"
    program = Program(assemble([config.format(16), "CONV oc_groups=1 out_rows=1 ow_groups=1 last_group_cols=1 "
                                "ic_groups=1 requantize=1", "END"]))
    assert_refused_on_icebreaker(program, r"instruction 1 \(CONV .*\): a CONV under a CONVCFG of kernel 16x3; the "
                                          r"convolution engine runs kernels up to 15x15")
    check_program(Program(assemble([config.format(15), "CONV requantize=1", "END"])), ICEBREAKER)
    check_program(Program(assemble([config.format(127), "VEC op=sum", "END"])), ICEBREAKER)


def test_digits_on_icebreaker_has_no_partial_sums():
    """The compiled digits CNN on the iCEBreaker, read from its program text: every CONV starts
    from its bias and requantizes (no `init_from_acc`, no raw `requantize = 0` results, so no
    partial-sum spill among its STOREs), no LOAD fills the accumulator buffer, and it fits the
    SPRAM program memory."""
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    text = [str(Instruction.decode(word)) for word in plan_and_compile(net, ICEBREAKER).compiled.program.instructions]
    convs = [line for line in text if line.startswith("CONV ")]
    assert convs and all("init_from_acc=0" in line and "requantize=1" in line for line in convs)
    assert not [line for line in text if line.startswith("LOAD buffer=acc")]
    assert len(text) <= SPRAM_INSTRUCTIONS


def test_spram_program_memory_layout_and_limits():
    """Instructions from halfword 0, eight each, least significant first; descriptor-table
    entries of 21 halfwords from halfword 12288 (the 328-bit `pointer` layout of the shared DMA
    with `dma_descriptor: copy`: load 1, DRAM address 18, buffer address 11, run 12, four
    dimensions of count - 1 (12), DRAM step 18 and buffer step 11, per coordinate its loop (2),
    stride and rewind (14 each), origin 2 x 14, bounds 2 x 13, fill 8); 1536 instructions and
    195 descriptors fit the 16 K halfwords of one SB_SPRAM256KA."""
    words = [Instruction.make(Opcode.STORE, dram_offset=-1 - i, buf_addr=i).encode() for i in range(3)]
    descriptors = [Descriptor(load=True, dram_addr=0, buf_addr=0, run_bytes=5 + i, dims=(Dim(3, 7, 9, 1, -2),))
                   for i in range(2)]
    (start, halfwords), (table_start, table) = program_regions(Program(words, descriptors), COPYING)
    assert (start, len(halfwords), table_start, len(table)) == (0, 24, 12288, 2 * 21)
    for i, word in enumerate(words):
        assert sum(h << (16 * k) for k, h in enumerate(halfwords[8 * i:8 * i + 8])) == word
    params = descriptor_table_params(COPYING)
    layout = params.descriptor_layout()
    assert layout.size == 1 + 18 + 11 + 12 + 4 * (12 + 18 + 11) + 2 * (2 + 14 + 14) + 2 * 14 + 2 * 13 + 8 == 328
    for i, desc in enumerate(descriptors):
        bits = sum(h << (16 * k) for k, h in enumerate(table[21 * i:21 * i + 21]))
        entry = layout.const(params.encode(desc))
        assert bits == entry.as_bits() and entry.run_bytes == 5 + i and (entry.x_step, entry.x_rewind) == (-2, 4)
    nop = Instruction.make(Opcode.NOP).encode()
    with pytest.raises(ProgramError, match=r"1537 instructions; the SPRAM program memory of configuration "
                                           r"'icebreaker' holds 1536"):
        check_program(Program([nop] * 1537), COPYING)
    many = [Descriptor(load=False, dram_addr=0, buf_addr=0, run_bytes=1 + i) for i in range(196)]
    with pytest.raises(ProgramError, match=r"196 descriptors; the SPRAM program memory of configuration "
                                           r"'icebreaker' holds 195"):
        check_program(Program([nop], many), COPYING)
    assert 16384 * 16 == 256 * 1024 and 8192 + 390 * 21 <= 16384 < 8192 + 391 * 21  # one SB_SPRAM256KA: 256 Kbit


def test_spram_descriptor_entries_without_the_filled_fields():
    """With `dma_descriptor: reader` and `dma_loops: 3` (the iCEBreaker's) an entry leaves out
    what the LOAD or STORE fills in (load, DRAM and buffer address, origin) and the fourth loop:
    229 bits (run 12, three dimensions of 41 with 18-bit DRAM steps, two coordinates of 30,
    bounds 2 x 13, fill 8),
    15 halfwords, 273 entries after halfword 12288; a descriptor with an origin (a STORE's would be lost) or a
    fourth loop is refused."""
    desc = Descriptor(load=True, dram_addr=99, buf_addr=7, run_bytes=5, dims=(Dim(3, 7, 9, 1, -2), Dim(1), Dim(2, 1)),
                      height=6, width=300, fill=0xA5)
    _, (table_start, table) = program_regions(Program([], [desc, desc]), ICEBREAKER)
    assert (table_start, len(table), table[:15]) == (12288, 30, table[15:])
    bits = sum(h << (16 * k) for k, h in enumerate(table[:15]))
    fields = {"run_bytes": (0, 12), "repeats0": (12, 12), "dram_step0": (24, 18), "buf_step0": (42, 11),
              "repeats1": (53, 12), "repeats2": (94, 12), "dram_step2": (106, 18), "y_level": (135, 2),
              "y_step": (137, 14), "y_rewind": (151, 14), "x_level": (165, 2), "x_step": (167, 14),
              "x_rewind": (181, 14), "height": (195, 13), "width": (208, 13), "fill": (221, 8)}
    got = {name: bits >> offset & ((1 << width) - 1) for name, (offset, width) in fields.items()}
    assert got == {"run_bytes": 5, "repeats0": 2, "dram_step0": 7, "buf_step0": 9, "repeats1": 0, "repeats2": 1,
                   "dram_step2": (1 << 18) + 1 - 2 * 7, "y_level": 0, "y_step": 1, "y_rewind": (1 << 14) - 2,
                   "x_level": 0, "x_step": (1 << 14) - 2, "x_rewind": 4, "height": 6, "width": 300, "fill": 0xA5}
    assert bits >> 229 == 0 and 12288 + 273 * 15 <= 16384 < 12288 + 274 * 15
    nop = Instruction.make(Opcode.NOP).encode()
    for culprit, refused in ((r"origin \(0, 3\); .*allowed: \(0, 0\)",
                              Descriptor(load=False, dram_addr=0, buf_addr=0, run_bytes=1, x0=3)),
                             (r"dims\[3\]\.count 2 > 1 beyond the DMA's 3 loops",
                              Descriptor(load=True, dram_addr=0, buf_addr=0, run_bytes=1, dims=(*desc.dims, Dim(2))))):
        with pytest.raises(ProgramError, match=r"descriptor 0 does not fit the DMA of configuration 'icebreaker': .*"
                                               + culprit):
            check_program(Program([nop], [refused]), ICEBREAKER)
        check_program(Program([nop], [refused]), COPYING)
