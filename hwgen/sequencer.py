"""The sequencer: program memory, fetch stage (loops, registers) and three dispatch queues
synchronised by counting semaphores. Semantics: `docs/isa.md`.

`Sequencer` wires its parts: a program memory (`hwgen.program_memory`), the fetch stage
(`hwgen.fetch_stage`) with its loop stack and register file (`hwgen.loop_stack`,
`hwgen.register_file`), the dispatch queues and semaphores (`hwgen.dispatch`,
`hwgen.semaphore_bank`) and the performance counters (`hwgen.performance_counters`). This
module says what the queues hold and how deep they are.

Generation-time options (`hwgen.config.Template`): the register file and loop stack can be left
out, the queues can carry only the instruction bits their unit reads, the program can live
in a single-ported 16-bit memory (SPRAM) that the host writes, fetched a halfword per cycle, and
the semaphores can be narrower (`semaphore_bits`; programs that could overflow one are refused
before they run, `hwgen.semaphores`).

Unit contract: a unit accepts one command at a time on its stream; its `idle` input must be
low from the cycle after it accepts a command until that command has finished. A unit that
runs its queue's head in place (`runs_in_place`) accepts it (pops it) only in the cycle it
finishes.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from hwgen.config import Counters, ProgramMemory, QueueFields, QueueKinds, Template
from hwgen.dispatch import Dispatcher, QueueFormat
from hwgen.fetch_stage import FetchStage
from hwgen.isa import INSTRUCTION_BITS, OPCODE_BITS, Opcode
from hwgen.isa_layout import INSTRUCTION_LAYOUT, PAYLOADS
from hwgen.loop_stack import LoopStack
from hwgen.performance_counters import PerformanceCounters
from hwgen.program_memory import SpramProgramMemory, WordProgramMemory
from hwgen.register_file import RegisterFile
from hwgen.sequencer_layouts import (COUNTERS_LAYOUT, MEMORY_READ_SIGNATURE, QUEUE_OPCODES, QUEUES, command_opcodes,
                                     program_write_signature, queue_opcodes)
from hwgen.spram_size import SPRAM_BITS, SPRAM_WORDS
from hwgen.conv_step_fields import unread_fields
from hwgen.timing import HALFWORDS
from hwgen.queue_options import queue_depth, runs_in_place

SPRAM_INSTRUCTIONS = 1536
"""Instructions an SPRAM program memory holds (three quarters of it); the DMA descriptor table
fills the last quarter, from halfword `DESCRIPTOR_BASE`, a multiple of that quarter's size."""
DESCRIPTOR_BASE = SPRAM_INSTRUCTIONS * HALFWORDS

REGISTER_FIELDS = ("dram_reg", "y_reg", "x_reg")  # resolved (zero) once dispatched


def registered_kinds(template: Template) -> bool:
    """Whether the queues keep each entry's `Kind` beside it (`template.queue_kinds`)."""
    return template.queue_kinds == QueueKinds.REGISTERED


def opcode_constants(queue: str, template: Template = Template()) -> dict[int, int]:
    """The opcode bits that are the same in all of a queue's opcodes, with their values: a queue
    of `used` fields does not carry them (its head has them as constants). With
    `registered_kinds` only the command opcodes count (a WAIT or SIGNAL head is told by its
    kind, and its opcode is not read)."""
    told = command_opcodes(queue, template) if registered_kinds(template) else queue_opcodes(queue, template)
    return {bit: int(told[0]) >> bit & 1 for bit in range(OPCODE_BITS)
            if len({int(opcode) >> bit & 1 for opcode in told}) == 1}


def used_bits(queue: str, template: Template = Template(),
              field_bits: Mapping[str, int] = MappingProxyType({})) -> list[tuple[int, int]]:
    """The instruction bit ranges `[start, stop)` a queue's entries need: the opcode bits that
    tell its opcodes apart (`opcode_constants`: the rest) and the fields its opcodes' unit and
    head logic read (WAIT/SIGNAL: the semaphore only; CONVCFG: the fields `template`'s pointer
    steps read, `hwgen.conv_step_fields.unread_fields`; CONV: `pool` only with `template.max_fused_pool`; a LOAD or STORE field named in `field_bits`: only
    its low bits, all its unit reads)."""
    bits = set(range(OPCODE_BITS)) - set(opcode_constants(queue, template))
    for opcode in queue_opcodes(queue, template):
        skipped = {Opcode.CONVCFG: unread_fields(template),
                   Opcode.CONV: frozenset() if template.max_fused_pool > 1 else frozenset({"pool"})}.get(opcode, frozenset())
        narrowed = field_bits if opcode in (Opcode.LOAD, Opcode.STORE) else {}
        for name, member in PAYLOADS[opcode]:
            if name in REGISTER_FIELDS or name == "queue" or name in skipped:
                continue
            bits.update(_field_bits(member, narrowed.get(name)))
    return _ranges(bits)


def resolved_bits(queue: str) -> list[tuple[int, int]]:
    """The instruction bit ranges a queue's entries need when the fetch stage resolves register
    operands (`template.loops_and_registers`) and the queue keeps all fields: all but its LOAD's
    or STORE's register fields, which read 0 once resolved (a WAIT or SIGNAL's fields lie below
    them)."""
    constant = {bit for opcode in QUEUE_OPCODES[queue] for name, member in PAYLOADS[opcode]
                if name in REGISTER_FIELDS for bit in _field_bits(member)}
    return _ranges(set(range(INSTRUCTION_BITS)) - constant)


def _field_bits(member, width: int | None = None) -> range:
    """The instruction bits of a payload field (`member` of `PAYLOADS[opcode]`), its low `width`
    alone if given."""
    start = OPCODE_BITS + member.offset
    return range(start, start + min(member.shape.width, width or member.shape.width))


def _ranges(bits: set[int]) -> list[tuple[int, int]]:
    """`bits` as sorted ranges `[start, stop)` of consecutive bits."""
    ranges: list[tuple[int, int]] = []
    for bit in sorted(bits):
        if ranges and ranges[-1][1] == bit:
            ranges[-1] = (ranges[-1][0], bit + 1)
        else:
            ranges.append((bit, bit + 1))
    return ranges


class Sequencer(wiring.Component):
    """Runs `program` (instruction words) when `start` pulses; `done` rises when it has finished.

    With `writable_depth`, the program lives in a RAM the host fills through `program_write`
    instead of a ROM initialised at elaboration. With `template.program_memory == "spram"`, it
    lives in one single-ported memory of `SPRAM_WORDS` halfwords the host fills through
    `program_write` (16 bits at a time) while the sequencer is idle; `program` is then ignored,
    and `memory_read` lets the descriptor reader read it (taking the port from the fetch). With
    `template.queue_fields == "used"`, the LOAD / STORE fields in `field_bits` are queued with
    only that many low bits (`used_bits`).
    """

    def __init__(self, program: list[int], *, writable_depth: int | None = None,
                 template: Template = Template(), field_bits: Mapping[str, int] = MappingProxyType({})):
        self.template = template
        self.field_bits = field_bits
        self.spram = template.program_memory == ProgramMemory.SPRAM
        self.program = [] if self.spram else list(program)
        self.depth = SPRAM_INSTRUCTIONS if self.spram else writable_depth or max(len(self.program), 1)
        if len(self.program) > self.depth:
            raise ValueError(f"program of {len(self.program)} instructions does not fit {self.depth} words")
        members = {
            "start": In(1), "done": Out(1), "busy": Out(1),
            "counters": Out(COUNTERS_LAYOUT),
            **{q: Out(stream.Signature(INSTRUCTION_LAYOUT)) for q in QUEUES},
            **{f"{q}_idle": In(1) for q in QUEUES},
        }
        if self.spram:
            members["program_write"] = In(program_write_signature(SPRAM_WORDS, SPRAM_BITS))
            members["memory_read"] = In(MEMORY_READ_SIGNATURE)
        elif writable_depth:
            members["program_write"] = In(program_write_signature(self.depth))
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        m = Module()
        loops, writable = self.template.loops_and_registers, "program_write" in self.signature.members
        m.submodules.fetch_stage = stage = FetchStage(self.depth, None if writable else len(self.program), loops)
        m.d.comb += [stage.start.eq(self.start), self.done.eq(stage.done), self.busy.eq(stage.busy)]
        if self.spram:
            m.submodules.program_memory = memory = SpramProgramMemory(self.depth, HALFWORDS, self.template)
            m.d.comb += memory.busy.eq(stage.busy)
            wiring.connect(m, wiring.flipped(self.memory_read), memory.memory_read)
        else:
            m.submodules.program_memory = memory = WordProgramMemory(self.program, self.depth, writable, self.template)
        if writable:
            wiring.connect(m, wiring.flipped(self.program_write), memory.program_write)
        wiring.connect(m, stage.fetch, memory.fetch)

        instr = stage.fetch.instr
        entries = {q: instr for q in QUEUES}  # per queue the instruction it takes
        if loops:
            m.submodules.loop_stack = loop_stack = LoopStack(self.depth)
            m.d.comb += [loop_stack.pc.eq(stage.fetch.pc), loop_stack.clear.eq(stage.clear),
                         loop_stack.enter.eq(stage.enter_loop), loop_stack.loop.eq(instr.payload.loop),
                         loop_stack.advance.eq(stage.advance), stage.loop_back.eq(loop_stack.loop_back),
                         stage.loop_exit.eq(loop_stack.loop_exit), stage.back_to.eq(loop_stack.back_to)]
            m.submodules.register_file = registers = RegisterFile()
            m.d.comb += [registers.instr.eq(instr), registers.clear.eq(stage.clear),
                         registers.write.eq(stage.write_register)]
            entries.update(load=registers.load, store=registers.store)

        m.submodules.dispatcher = dispatcher = Dispatcher(self._queue_formats(), registered_kinds(self.template),
                                                          self.template.semaphore_bits)
        wiring.connect(m, stage.queues, dispatcher.queues)
        m.d.comb += [dispatcher.entries[index].eq(entries[q]) for index, q in enumerate(QUEUES)]
        m.d.comb += [dispatcher.clear.eq(stage.clear), stage.idle.eq(dispatcher.idle)]
        for q in QUEUES:
            wiring.connect(m, getattr(dispatcher, q), wiring.flipped(getattr(self, q)))
            m.d.comb += getattr(dispatcher, f"{q}_idle").eq(getattr(self, f"{q}_idle"))

        m.submodules.counters = counters = PerformanceCounters(self.template.counters == Counters.ALL)
        m.d.comb += [counters.clear.eq(stage.clear), counters.busy.eq(stage.busy),
                     counters.waiting.eq(dispatcher.waiting), self.counters.eq(counters.counters)]
        m.d.comb += [counters.active[index].eq(~getattr(self, f"{q}_idle") | getattr(self, q).valid)
                     for index, q in enumerate(QUEUES)]
        return m

    def _queue_formats(self) -> dict[str, QueueFormat]:
        """Per queue how `template` builds it: with `queue_fields: used` only the bits its unit
        reads (`used_bits`), its head's constant opcode bits filled in; else all bits but, with
        registers, the register fields (`resolved_bits`)."""
        template = self.template
        used = template.queue_fields == QueueFields.USED
        return {q: QueueFormat(
            fields=tuple(used_bits(q, template, self.field_bits) if used
                         else resolved_bits(q) if template.loops_and_registers else [(0, INSTRUCTION_BITS)]),
            opcode_constants=opcode_constants(q, template) if used else {},
            depth=queue_depth(template, q), in_place=runs_in_place(template, q)) for q in QUEUES}
