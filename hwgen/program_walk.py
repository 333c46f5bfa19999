"""The sequencer's fetch stage in Python: program order with loops and registers resolved.

`dispatched(program)` yields every instruction the fetch stage hands to a queue (WAIT, SIGNAL,
LOAD, STORE, CONVCFG, CONV, VEC) in the order it dispatches them; LOOP, SETR, ADDR, NOP and END
are executed here. `transfer(program, instruction)` is the complete descriptor of a dispatched
LOAD or STORE (table entry plus the addresses and origin the instruction carries). The
instruction-level simulator and the program timing model both walk programs through it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from hwgen.config import AcceleratorConfig, DmaSharing, PartialSums, ProgramMemory
from hwgen.conv.kernel_size import KERNEL_LIMIT
from hwgen.dma import Descriptor, DescriptorError
from hwgen.dma.table import descriptor_capacity
from hwgen.dma.units import descriptor_table_params
from hwgen.isa import REGISTERS, Buffer, Instruction, Opcode
from hwgen.program import Program
from hwgen.semaphores import queue_events, semaphore_overflows
from hwgen.sequencer import SPRAM_INSTRUCTIONS
from common.errors import HwgenError


class ProgramError(HwgenError):
    """The program is invalid (it would block in program order, loops badly, or reads outside a buffer)."""


class ProgramDoesNotFit(ProgramError):
    """The program is valid but exceeds the configuration's program memory or descriptor layout."""


@dataclass(frozen=True)
class Dispatched:
    """One dispatched instruction; LOAD/STORE register operands are already resolved into `desc`."""

    pc: int
    instruction: Instruction
    desc: Descriptor | None = None


REGISTER_OPCODES = (Opcode.LOOP, Opcode.SETR, Opcode.ADDR)
REGISTER_OPERANDS = ("dram_reg", "y_reg", "x_reg")


def check_program(program: Program, config: AcceleratorConfig) -> None:
    """The program must suit `config`'s sequencer: without `template.loops_and_registers` it
    may use neither LOOP, SETR, ADDR nor a register operand; an SPRAM program memory holds
    `SPRAM_INSTRUCTIONS` instructions and `descriptor_capacity` descriptors; with
    `template.dma: shared` every descriptor must fit the table's compact layout
    (`hwgen.dma.DmaParams.encode_entry`); no semaphore may exceed `2**template.semaphore_bits - 1`
    in any order of the queues (`hwgen.semaphores`); with `template.partial_sums: none` it may not use partial sums
    (`check_no_partial_sums`); a CONV's fused pool and kernel must suit the engine
    (`check_fused_pools`, `check_conv_kernels`)."""
    if config.template.partial_sums == PartialSums.NONE:
        check_no_partial_sums(program, config)
    check_fused_pools(program, config)
    check_conv_kernels(program)
    if config.template.dma == DmaSharing.SHARED:  # the compact descriptor layout bounds counts and coordinates
        table = descriptor_table_params(config)
        for index, desc in enumerate(program.descriptors):
            try:
                table.encode_entry(desc)
            except DescriptorError as error:
                raise ProgramDoesNotFit(f"descriptor {index} does not fit the DMA of configuration {config.name!r}: "
                                        f"{error}") from None
    if config.template.program_memory == ProgramMemory.SPRAM:
        capacity = descriptor_capacity(descriptor_table_params(config))
        for what, count, limit in (("instructions", len(program.instructions), SPRAM_INSTRUCTIONS),
                                   ("descriptors", len(program.descriptors), capacity)):
            if count > limit:
                raise ProgramDoesNotFit(f"the program has {count} {what}; the SPRAM program memory of configuration "
                                        f"{config.name!r} holds {limit}")
    if not config.template.loops_and_registers:
        _check_no_registers(program, config)
    _check_semaphores(program, config)


def _check_semaphores(program: Program, config: AcceleratorConfig) -> None:
    bits = config.template.semaphore_bits
    steps = dispatched(program, transfers=False)
    overflows = semaphore_overflows(queue_events(step.instruction for step in steps), (1 << bits) - 1)
    if overflows:
        sem, bound = next(iter(overflows.items()))
        raise ProgramDoesNotFit(f"semaphore {sem} may hold {bound} tokens in some order of the queues; the "
                                f"{bits}-bit semaphores of configuration {config.name!r} hold at most {(1 << bits) - 1} "
                                f"(template.semaphore_bits)")


def _check_no_registers(program: Program, config: AcceleratorConfig) -> None:
    for pc, word in enumerate(program.instructions):
        ins = Instruction.decode(word)
        used = [name for name in REGISTER_OPERANDS if ins.fields.get(name)]
        if ins.opcode in REGISTER_OPCODES or used:
            what = ins.opcode.name if ins.opcode in REGISTER_OPCODES else f"register operand {used[0]}"
            raise ProgramError(f"instruction {pc} ({ins}): {what} needs the sequencer's registers and loops, which "
                               f"configuration {config.name!r} leaves out (template.loops_and_registers: false); "
                               f"allowed opcodes: {', '.join(op.name for op in Opcode if op not in REGISTER_OPCODES)} "
                               f"with register operands 0")


def check_no_partial_sums(program: Program, config: AcceleratorConfig) -> None:
    """Without partial sums every CONV covers its whole reduction and requantizes (no
    `init_from_acc`, no raw `requantize = 0` results to spill) and no LOAD fills the
    accumulator buffer."""
    for pc, word in enumerate(program.instructions):
        ins = Instruction.decode(word)
        if ins.opcode == Opcode.CONV and (ins["init_from_acc"] or not ins["requantize"]):
            culprit = "init_from_acc=1" if ins["init_from_acc"] else "requantize=0"
        elif ins.opcode == Opcode.LOAD and ins["buffer"] == Buffer.ACC:
            culprit = "a LOAD into the accumulator buffer"
        else:
            continue
        raise ProgramError(f"instruction {pc} ({ins}): {culprit} needs partial sums, which configuration "
                           f"{config.name!r} leaves out (template.partial_sums: none); allowed: CONV with "
                           f"init_from_acc=0 and requantize=1, LOADs into the input, weight and param buffers")


def check_fused_pools(program: Program, config: AcceleratorConfig) -> None:
    """A CONV with `pool` k > 1 needs k a power of two up to `template.max_fused_pool`, whole
    windows (`out_rows` and `last_group_cols` multiples of k) and its whole reduction
    (`init_from_acc=0`, `requantize=1`)."""
    limit = config.template.max_fused_pool
    for pc, word in enumerate(program.instructions):
        ins = Instruction.decode(word)
        if ins.opcode != Opcode.CONV or ins["pool"] <= 1:
            continue
        k = ins["pool"]
        if k > limit or k & (k - 1):
            culprit = f"pool={k}: configuration {config.name!r} pools k x k / k for k a power of two up to {limit} " \
                      f"(template.max_fused_pool)"
        elif ins["out_rows"] % k or ins["last_group_cols"] % k:
            culprit = f"pool={k} needs out_rows and last_group_cols multiples of {k} (whole windows)"
        elif ins["init_from_acc"] or not ins["requantize"]:
            culprit = f"pool={k} needs the whole reduction in the CONV (init_from_acc=0, requantize=1)"
        else:
            continue
        raise ProgramError(f"instruction {pc} ({ins}): {culprit}")


def check_conv_kernels(program: Program) -> None:
    """A CONV runs kernels up to `KERNEL_LIMIT` (the engine's counters; CONVCFG's kernel fields
    are wider for the vector unit's windows): the CONVCFG before a CONV in the program text must
    hold no larger kernel."""
    kernel = (0, 0)
    for pc, word in enumerate(program.instructions):
        ins = Instruction.decode(word)
        if ins.opcode == Opcode.CONVCFG:
            kernel = (ins["kernel_h"], ins["kernel_w"])
        elif ins.opcode == Opcode.CONV and max(kernel) > KERNEL_LIMIT:
            raise ProgramError(f"instruction {pc} ({ins}): a CONV under a CONVCFG of kernel {kernel[0]}x{kernel[1]}; "
                               f"the convolution engine runs kernels up to {KERNEL_LIMIT}x{KERNEL_LIMIT} (larger "
                               f"windows are the vector unit's)")


def wrap(value: int, bits: int, signed: bool = False) -> int:
    """`value` modulo 2**bits, as a two's-complement number when `signed`."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if signed and value >> (bits - 1) else value


def _transfer(program: Program, ins: Instruction, regs: list[int]) -> Descriptor:
    shape = program.descriptors[ins["desc"]]
    load = ins.opcode == Opcode.LOAD
    origin = {}
    if load:
        origin = {"y0": wrap(regs[ins["y_reg"]] + ins["y_offset"], 12, signed=True),
                  "x0": wrap(regs[ins["x_reg"]] + ins["x_offset"], 12, signed=True)}
    return dataclasses.replace(shape, load=load, dram_addr=wrap(regs[ins["dram_reg"]] + ins["dram_offset"], 32),
                               buf_addr=ins["buf_addr"], **origin)


def dispatched(program: Program, max_instructions: int = 10**8, transfers: bool = True) -> Iterator[Dispatched]:
    """Walk `program` as the fetch stage does (register 0 reads as 0); with `transfers` False,
    LOADs and STOREs come without their descriptors (which need not exist)."""
    pc, stack, words = 0, [], program.instructions
    regs = [0] * REGISTERS
    executed = 0
    while pc < len(words):
        ins = Instruction.decode(words[pc])
        executed += 1
        if executed > max_instructions:
            raise ProgramError(f"more than {max_instructions} instructions executed (endless loop?)")
        next_pc = pc + 1
        if ins.opcode == Opcode.END:
            return
        if ins.opcode == Opcode.LOOP:
            if ins["count"] and ins["body"]:
                stack.append([pc + 1, pc + ins["body"], ins["count"] - 1])
            else:
                next_pc = pc + 1 + ins["body"]
        else:
            if ins.opcode in (Opcode.SETR, Opcode.ADDR):
                if ins["rd"]:
                    regs[ins["rd"]] = wrap(ins["imm"] if ins.opcode == Opcode.SETR else regs[ins["rd"]] + ins["imm"], 32)
            elif ins.opcode in (Opcode.LOAD, Opcode.STORE):
                yield Dispatched(pc, ins, _transfer(program, ins, regs) if transfers else None)
            elif ins.opcode != Opcode.NOP:
                yield Dispatched(pc, ins)
            if stack and stack[-1][1] == pc:
                if stack[-1][2]:
                    stack[-1][2] -= 1
                    next_pc = stack[-1][0]
                else:
                    stack.pop()
                    if stack and stack[-1][1] == pc:
                        raise ProgramError(f"instruction {pc}: two loops end on the same instruction")
        pc = next_pc
