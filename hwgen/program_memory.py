"""The sequencer's program memories: each holds the instruction at the pc in a register, with
the queue it goes to decoded beside it (`dispatch_target`), for the fetch stage
(`hwgen.fetch_stage`). A word-wide ROM (or host-written RAM) reads a whole instruction in a
cycle; a single-ported SPRAM that the host fills reads it a halfword a cycle."""
from __future__ import annotations

from amaranth import Cat, Const, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hwgen.config import Template
from hwgen.isa import INSTRUCTION_BITS, OPCODE_BITS, Opcode
from hwgen.isa_layout import INSTRUCTION_LAYOUT, PAYLOADS
from hwgen.sequencer_layouts import MEMORY_READ_SIGNATURE, QUEUES, command_opcodes, program_write_signature
from hwgen.spram import SinglePortBank
from hwgen.spram_size import SPRAM_BITS, SPRAM_WORDS


def dispatch_target(word: Value, template: Template) -> Value:
    """One-hot (bit `i`: `QUEUES[i]`) the queue an instruction goes to, from its low bits (opcode
    and a WAIT / SIGNAL's queue); none for one the fetch stage executes (or, without a vector
    unit, passes over: VEC, `hwgen.sequencer_layouts.queue_opcodes`). The fetch stage keeps
    it in a register next to the instruction, so dispatching needs no opcode decoding."""
    opcode = word[:OPCODE_BITS]
    queue_field = PAYLOADS[Opcode.WAIT]["queue"]
    queue = word[OPCODE_BITS + queue_field.offset:][:queue_field.shape.width]
    queued = (opcode == Opcode.WAIT) | (opcode == Opcode.SIGNAL)
    return Cat((queued & (queue == index)) | Cat(opcode == own for own in command_opcodes(q, template)).any()
               for index, q in enumerate(QUEUES))


def fetch_signature(depth: int) -> wiring.Signature:
    """The fetch stage's side of a program memory of `depth` instructions: the `pc` and the
    value it takes next (`pc_next`); `fetching` while the instruction at `pc` is being read,
    `fetched` in the cycle its last part arrives; from then on it is in `instr`, its queue
    (one-hot, `dispatch_target`) in `target`."""
    return wiring.Signature({
        "pc": Out(range(depth + 1)), "pc_next": Out(range(depth + 1)),
        "fetching": Out(1), "fetched": In(1),
        "instr": In(INSTRUCTION_LAYOUT), "target": In(len(QUEUES)),
    })


class WordProgramMemory(wiring.Component):
    """`program` in a word-wide ROM of `depth` instructions, or with `writable` in a RAM the
    host fills through `program_write`.

    - `fetch`: the fetch stage's port (`fetch_signature`); an instruction arrives a cycle after
      its FETCH began.
    - `program_write`: host writes (`writable` only).
    """

    def __init__(self, program: list[int], depth: int, writable: bool, template: Template):
        self.program, self.depth, self.template = program, depth, template
        members = {"fetch": In(fetch_signature(depth))}
        if writable:
            members["program_write"] = In(program_write_signature(depth))
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        """A read at the pc's next value, so the memory's output is the word at `pc`; a register
        of that output gives the execute stage its instruction straight from flip-flops (block
        RAM outputs are slow) in the same cycle as reading at `pc` would."""
        m = Module()
        fetch = self.fetch
        m.d.comb += fetch.fetched.eq(fetch.fetching)
        m.submodules.rom = rom = Memory(shape=INSTRUCTION_BITS, depth=self.depth, init=self.program)
        read = rom.read_port()
        if "program_write" in self.signature.members:
            write = rom.write_port()
            m.d.comb += [write.addr.eq(self.program_write.addr), write.data.eq(self.program_write.data),
                         write.en.eq(self.program_write.en)]
        m.d.comb += read.addr.eq(fetch.pc_next)
        m.d.sync += [fetch.instr.eq(read.data), fetch.target.eq(dispatch_target(read.data, self.template))]
        return m


class SpramProgramMemory(wiring.Component):
    """The program in one single-ported memory of `SPRAM_WORDS` halfwords, `depth` instructions
    of `halfwords` halfwords (instruction `i` at halfwords `halfwords * i` on, least significant
    first).

    - `fetch`: the fetch stage's port (`fetch_signature`).
    - `busy`: the sequencer is running (host writes wait).
    - `program_write`: host writes, a halfword at a time, while the sequencer is idle.
    - `memory_read`: a client's reads (the descriptor reader's), before the fetch's.
    """

    def __init__(self, depth: int, halfwords: int, template: Template):
        self.halfwords, self.template = halfwords, template
        super().__init__({
            "fetch": In(fetch_signature(depth)), "busy": In(1),
            "program_write": In(program_write_signature(SPRAM_WORDS, SPRAM_BITS)),
            "memory_read": In(MEMORY_READ_SIGNATURE),
        })

    def elaborate(self, platform) -> Module:
        """Halfword 0 of the next instruction is read in the cycle that decides it (at
        `pc_next`), halfwords 1..7 in the first seven FETCH cycles; each arrives a cycle later
        and is written into its place in `instr` (bits no queue carries are never read, so
        synthesis drops them), so FETCH lasts `halfwords` cycles unless `memory_read` takes the
        port (a cycle per read). While the sequencer is idle, host writes take the port."""
        m = Module()
        halfwords, part_bits = self.halfwords, exact_log2(self.halfwords)
        fetch = self.fetch
        m.submodules.program_memory = memory = SinglePortBank(SPRAM_BITS // 8, SPRAM_WORDS)
        part = Signal(range(halfwords + 1))  # halfwords of the instruction at `pc` requested
        issued = Signal()  # a fetch read was issued last cycle: its halfword is on `rd_data`
        client, write = self.memory_read, self.program_write
        m.d.sync += issued.eq(0)
        m.d.comb += [client.data.eq(memory.rd_data), fetch.fetched.eq(fetch.fetching & issued & (part == halfwords))]
        with m.If(fetch.fetching & issued):  # the halfword read when `part` was one less
            with m.Switch(part):
                for index in range(halfwords):
                    with m.Case(index + 1):
                        m.d.sync += fetch.instr.as_value().word_select(index, SPRAM_BITS).eq(memory.rd_data)
                        if index == 0:
                            m.d.sync += fetch.target.eq(dispatch_target(memory.rd_data, self.template))
        with m.If(client.req):
            m.d.comb += [memory.addr.eq(client.addr), memory.rd_en.eq(1), client.grant.eq(1)]
            with m.If(~fetch.fetching):
                m.d.sync += part.eq(0)
        with m.Elif(fetch.fetching):
            with m.If(part != halfwords):
                m.d.comb += [memory.addr.eq(Cat(part[:part_bits], fetch.pc)), memory.rd_en.eq(1)]
                m.d.sync += [part.eq(part + 1), issued.eq(1)]
        with m.Else():
            m.d.comb += [memory.addr.eq(Cat(Const(0, part_bits), fetch.pc_next)), memory.rd_en.eq(1)]
            m.d.sync += [part.eq(1), issued.eq(1)]
            with m.If(~self.busy & write.en):
                m.d.comb += [memory.addr.eq(write.addr), memory.wr_data.eq(write.data), memory.wr_en.eq(0b11)]
        return m
