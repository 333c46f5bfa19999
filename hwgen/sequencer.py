"""The sequencer: program memory, fetch stage (loops, registers) and three dispatch queues
synchronised by counting semaphores. Semantics: `docs/isa.md`.

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

import functools
from collections.abc import Mapping
from enum import IntEnum
from types import MappingProxyType

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hwgen.config import Command, Counters, ProgramMemory, QueueFields, QueueKinds, Template
from hwgen.dispatch_queue import DispatchQueue
from hwgen.isa import INSTRUCTION_BITS, INSTRUCTION_LAYOUT, OPCODE_BITS, PAYLOADS, REGISTERS, SEMAPHORES, Opcode, Queue
from hwgen.spram import SPRAM_BITS, SPRAM_WORDS, SinglePortBank
from hwgen.conv_steps import unread_fields
from hwgen.timing import HALFWORDS

LOOP_DEPTH = 4
COUNTER_BITS = 32
QUEUES = tuple(q.name.lower() for q in Queue)

QUEUE_COUNTERS = data.StructLayout({"active": unsigned(COUNTER_BITS), "waiting": unsigned(COUNTER_BITS)})
COUNTERS_LAYOUT = data.StructLayout({"cycles": unsigned(COUNTER_BITS), **{q: QUEUE_COUNTERS for q in QUEUES}})
"""Performance counters: total cycles of the run; per queue the cycles its unit was busy
(`active`) and the cycles its head waited on a semaphore (`waiting`). With `template.counters ==
"cycles"` the per-queue counters are left out and read 0."""


SPRAM_INSTRUCTIONS = 1024
"""Instructions an SPRAM program memory holds; the DMA descriptor table fills the rest, from
halfword `DESCRIPTOR_BASE`."""
DESCRIPTOR_BASE = SPRAM_INSTRUCTIONS * HALFWORDS

MEMORY_READ_SIGNATURE = wiring.Signature({
    "req": Out(1), "addr": Out(range(SPRAM_WORDS)), "grant": In(1), "data": In(SPRAM_BITS),
})
"""A client's reads of the SPRAM program memory: `req` with `addr`; `grant` says the read was
issued this cycle, and its halfword is on `data` the next cycle. Clients come before the fetch."""

QUEUE_OPCODES = {
    "load": (Opcode.WAIT, Opcode.SIGNAL, Opcode.LOAD),
    "compute": (Opcode.WAIT, Opcode.SIGNAL, Opcode.CONVCFG, Opcode.CONV, Opcode.VEC),
    "store": (Opcode.WAIT, Opcode.SIGNAL, Opcode.STORE),
}
REGISTER_FIELDS = ("dram_reg", "y_reg", "x_reg")  # resolved (zero) once dispatched


def queue_depth(template: Template, queue: str) -> int:
    """Entries of one dispatch queue: `template.queue_depth`, or for the compute (store) queue
    `template.compute_queue_depth` (`store_queue_depth`) when set."""
    own = {"compute": template.compute_queue_depth, "store": template.store_queue_depth}.get(queue, 0)
    return own or template.queue_depth


def runs_in_place(template: Template, queue: str) -> bool:
    """Whether a queue's unit runs the command at the queue's head in place, popping it when done
    (`template.load_command` / `template.store_command: queue`), instead of keeping a copy."""
    return {"load": template.load_command, "store": template.store_command}.get(queue) == Command.QUEUE


def program_write_signature(depth: int, width: int = INSTRUCTION_BITS) -> wiring.Signature:
    """Host writes into a writable program memory of `depth` words of `width` bits."""
    return wiring.Signature({
        "addr": Out(range(depth)), "data": Out(width), "en": Out(1),
    })


def command_opcodes(queue: str) -> tuple[Opcode, ...]:
    """The opcodes a queue hands to its unit (all but WAIT and SIGNAL, which its `Kind` tells)."""
    return tuple(opcode for opcode in QUEUE_OPCODES[queue] if opcode not in (Opcode.WAIT, Opcode.SIGNAL))


def registered_kinds(template: Template) -> bool:
    """Whether the queues keep each entry's `Kind` beside it (`template.queue_kinds`)."""
    return template.queue_kinds == QueueKinds.REGISTERED


def opcode_constants(queue: str, template: Template = Template()) -> dict[int, int]:
    """The opcode bits that are the same in all of a queue's opcodes, with their values: a queue
    of `used` fields does not carry them (its head has them as constants). With
    `registered_kinds` only the command opcodes count (a WAIT or SIGNAL head is told by its
    kind, and its opcode is not read)."""
    told = command_opcodes(queue) if registered_kinds(template) else QUEUE_OPCODES[queue]
    return {bit: int(told[0]) >> bit & 1 for bit in range(OPCODE_BITS)
            if len({int(opcode) >> bit & 1 for opcode in told}) == 1}


def used_bits(queue: str, template: Template = Template(),
              field_bits: Mapping[str, int] = MappingProxyType({})) -> list[tuple[int, int]]:
    """The instruction bit ranges `[start, stop)` a queue's entries need: the opcode bits that
    tell its opcodes apart (`opcode_constants`: the rest) and the fields its opcodes' unit and
    head logic read (WAIT/SIGNAL: the semaphore only; CONVCFG: the fields `template`'s pointer
    steps read, `hwgen.conv_steps.unread_fields`; a LOAD or STORE field named in `field_bits`: only
    its low bits, all its unit reads)."""
    bits = set(range(OPCODE_BITS)) - set(opcode_constants(queue, template))
    for opcode in QUEUE_OPCODES[queue]:
        skipped = unread_fields(template) if opcode == Opcode.CONVCFG else frozenset()
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


class Kind(IntEnum):
    """What the sequencer does with a queue's head (one-hot bits; with `registered_kinds` the
    `DispatchQueue`'s kinds)."""
    WAIT = 0      # pops it when its semaphore is granted
    SIGNAL = 1    # pops it when the unit is idle, incrementing its semaphore
    COMMAND = 2   # offers it to the unit


def instruction_kind(opcode: Value) -> Value:
    """The one-hot `Kind` of a queued instruction with `opcode`."""
    wait, signal = opcode == Opcode.WAIT, opcode == Opcode.SIGNAL
    return Cat(wait, signal, ~(wait | signal))


def dispatch_target(word: Value) -> Value:
    """One-hot (bit `i`: `QUEUES[i]`) the queue an instruction goes to, from its low bits (opcode
    and a WAIT / SIGNAL's queue); none for one the fetch stage executes. The fetch stage keeps
    it in a register next to the instruction, so dispatching needs no opcode decoding."""
    opcode = word[:OPCODE_BITS]
    queue_field = PAYLOADS[Opcode.WAIT]["queue"]
    queue = word[OPCODE_BITS + queue_field.offset:][:queue_field.shape.width]
    queued = (opcode == Opcode.WAIT) | (opcode == Opcode.SIGNAL)
    return Cat((queued & (queue == index)) | Cat(opcode == own for own in command_opcodes(q)).any()
               for index, q in enumerate(QUEUES))


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
        loops = self.template.loops_and_registers
        registered = registered_kinds(self.template)
        pc = Signal(range(self.depth + 1))
        pc_next = Signal.like(pc)
        m.d.comb += pc_next.eq(pc)
        m.d.sync += pc.eq(pc_next)
        instr = Signal(INSTRUCTION_LAYOUT)
        target = Signal(len(QUEUES))  # one-hot: the queue `instr` goes to; none: executed in the fetch stage
        fetching = Signal()  # the FETCH state: the instruction at `pc` is being read
        fetched = Signal()   # its last part arrives in this cycle (EXECUTE follows)
        if self.spram:
            self._spram_fetch(m, pc, pc_next, instr, target, fetching, fetched)
        else:
            self._rom_fetch(m, pc_next, instr, target)
            m.d.comb += fetched.eq(fetching)

        sems = Array(Signal(self.template.semaphore_bits, name=f"sem{i}") for i in range(SEMAPHORES))
        if loops:
            regs = Array(Signal(32, name=f"r{i}") for i in range(REGISTERS))
            loop_start = Array(Signal.like(pc, name=f"loop_start{i}") for i in range(LOOP_DEPTH))
            loop_end = Array(Signal.like(pc, name=f"loop_end{i}") for i in range(LOOP_DEPTH))
            loop_left = Array(Signal(16, name=f"loop_left{i}") for i in range(LOOP_DEPTH))
            loop_sp = Signal(range(LOOP_DEPTH + 1))

        fields = {q: used_bits(q, self.template, self.field_bits) if self.template.queue_fields == QueueFields.USED
                  else resolved_bits(q) if loops else [(0, INSTRUCTION_BITS)] for q in QUEUES}
        queue_class = functools.partial(DispatchQueue, kinds=len(Kind)) if registered else fifo.SyncFIFOBuffered
        fifos = {q: queue_class(width=sum(stop - start for start, stop in fields[q]),
                                depth=queue_depth(self.template, q)) for q in QUEUES}
        for q, queue_fifo in fifos.items():
            m.submodules[f"{q}_fifo"] = queue_fifo

        # Fetch-stage results: per queue the instruction with the register operands of the queue's
        # LOAD / STORE resolved, whatever its opcode (no opcode mux between the adders and the
        # queue): the fields resolved lie beyond a WAIT / SIGNAL's, the queue's only other opcodes.
        # The register fields read 0: the queues do not store them (`resolved_bits`).
        resolved = {q: Signal(INSTRUCTION_LAYOUT, name=f"{q}_resolved") for q in QUEUES}
        m.d.comb += [resolved[q].eq(instr) for q in QUEUES]
        if loops:
            load, store = instr.payload.load, instr.payload.store
            m.d.comb += [
                resolved["load"].payload.load.dram_offset.eq(regs[load.dram_reg] + load.dram_offset),
                resolved["load"].payload.load.y_offset.eq(regs[load.y_reg] + load.y_offset),
                resolved["load"].payload.load.x_offset.eq(regs[load.x_reg] + load.x_offset),
                resolved["store"].payload.store.dram_offset.eq(regs[store.dram_reg] + store.dram_offset),
            ]

        advance = Signal()
        with m.If(advance):
            m.d.comb += pc_next.eq(pc + 1)
        if loops:
            top = loop_sp - 1
            loop_back, loop_exit, back_to, left_after = self._loop_end(m, pc, loop_sp, loop_start, loop_end, loop_left)
            with m.If(advance & loop_back):
                m.d.comb += pc_next.eq(back_to)
                m.d.sync += loop_left[top].eq(left_after)
            with m.If(advance & loop_exit):
                m.d.sync += loop_sp.eq(loop_sp - 1)
            reg_write, reg_base, reg_imm = self._pending_register_write(m, regs)

        # ---- semaphores: per queue one increment (SIGNAL) or one decrement (WAIT) per cycle
        heads = {q: Signal(INSTRUCTION_LAYOUT, name=f"{q}_head") for q in QUEUES}
        for q in QUEUES:
            m.d.comb += Cat(heads[q].as_value()[start:stop] for start, stop in fields[q]).eq(fifos[q].r_data)
            if self.template.queue_fields == QueueFields.USED:
                m.d.comb += [heads[q].opcode[bit].eq(value)
                             for bit, value in opcode_constants(q, self.template).items()]
        waiting = {q: Signal(name=f"{q}_waiting") for q in QUEUES}
        issued = {q: Signal(name=f"{q}_issued") for q in QUEUES}
        nonzero = [Signal(name=f"sem{i}_nonzero") for i in range(SEMAPHORES)]
        m.d.comb += [nonzero[i].eq(sems[i].any()) for i in range(SEMAPHORES)]
        # Per queue and semaphore: its head WAITs on / SIGNALs the semaphore (decoded from the
        # head's register, without going through a semaphore-indexed mux).
        waits_on = {q: [Signal(name=f"{q}_waits_on{s}") for s in range(SEMAPHORES)] for q in QUEUES}
        signals = {q: [Signal(name=f"{q}_signals{s}") for s in range(SEMAPHORES)] for q in QUEUES}
        for index, q in enumerate(QUEUES):
            head = heads[q]
            sem = head.payload.wait.sem
            out = getattr(self, q)
            unit_idle = getattr(self, f"{q}_idle") & ~issued[q]  # `out` is not valid at a SIGNAL
            if not runs_in_place(self.template, q):  # else popped when done
                m.d.sync += issued[q].eq(out.valid & out.ready)
            kind = fifos[q].r_kind if registered else (  # one-hot, 0 while the queue is empty
                instruction_kind(head.opcode) & fifos[q].r_rdy.replicate(len(Kind)))
            for s in range(SEMAPHORES):
                m.d.comb += [waits_on[q][s].eq(kind[Kind.WAIT] & (sem == s)),
                             signals[q][s].eq(kind[Kind.SIGNAL] & (sem == s) & unit_idle)]
            # a WAIT passes on a nonzero semaphore unless an earlier queue waits on it too
            granted = Cat(waits_on[q][s] & nonzero[s] & ~Cat(waits_on[p][s] for p in QUEUES[:index]).any()
                          for s in range(SEMAPHORES)).any()
            m.d.comb += [waiting[q].eq(kind[Kind.WAIT] & ~granted), out.valid.eq(kind[Kind.COMMAND]),
                         fifos[q].r_en.eq(granted | (kind[Kind.SIGNAL] & unit_idle) | (kind[Kind.COMMAND] & out.ready))]
            m.d.comb += out.payload.eq(head)  # meaningful only while `valid`
        for s in range(SEMAPHORES):
            self._update_semaphore(m, sems[s], [signals[q][s] for q in QUEUES],
                                   nonzero[s] & Cat(waits_on[q][s] for q in QUEUES).any())

        # ---- fetch FSM (a ROM program ends at END or when the pc runs past its last word)
        ran_off = Signal()  # registered like the loop flags (`_loop_end`): valid in EXECUTE
        if "program_write" not in self.signature.members:
            m.d.sync += ran_off.eq(pc >= len(self.program))
        packed = {q: Cat(resolved[q].as_value()[start:stop] for start, stop in fields[q]) for q in QUEUES}
        all_idle = Signal()
        m.d.comb += all_idle.eq(Cat(
            *[~fifos[q].r_rdy & getattr(self, f"{q}_idle") & ~issued[q] & ~getattr(self, q).valid for q in QUEUES]
        ).all())
        all_counters = self.template.counters == Counters.ALL
        kept_counters = self.counters if all_counters else self.counters.cycles
        m.d.comb += [fifos[q].w_data.eq(packed[q]) for q in QUEUES]  # written only with `w_en`
        m.d.comb += [fifos[q].w_kind.eq(instruction_kind(instr.opcode)) for q in QUEUES if registered]
        with m.FSM():
            with m.State("IDLE"):
                # The ROM reads word 0 all the while: `start` (from the host side) need not
                # reach the ROM's address in the cycle it rises.
                m.d.comb += pc_next.eq(0)
                with m.If(self.start):
                    m.d.sync += [self.done.eq(0), kept_counters.eq(0)]
                    if loops:
                        m.d.sync += [loop_sp.eq(0), *[reg.eq(0) for reg in regs]]
                    m.d.sync += [sem.eq(0) for sem in sems]
                    m.next = "FETCH"
            with m.State("FETCH"):
                m.d.comb += [self.busy.eq(1), fetching.eq(1)]
                with m.If(fetched):
                    m.next = "EXECUTE"
            with m.State("EXECUTE"):
                m.d.comb += self.busy.eq(1)
                with m.If(ran_off):
                    m.next = "DRAIN"
                with m.Elif(target.any()):
                    for index, q in enumerate(QUEUES):
                        with m.If(target[index]):
                            m.d.comb += fifos[q].w_en.eq(1)
                            with m.If(fifos[q].w_rdy):
                                m.d.comb += advance.eq(1)
                                m.next = "FETCH"
                with m.Else():
                    m.next = "FETCH"
                    with m.Switch(instr.opcode):
                        with m.Case(Opcode.END):
                            m.next = "DRAIN"
                        if loops:
                            with m.Case(Opcode.LOOP):
                                loop = instr.payload.loop
                                with m.If((loop.count == 0) | (loop.body == 0)):
                                    m.d.comb += pc_next.eq(pc + 1 + loop.body)
                                with m.Else():
                                    m.d.sync += [loop_start[loop_sp].eq(pc + 1),
                                                 loop_end[loop_sp].eq(pc + loop.body),
                                                 loop_left[loop_sp].eq(loop.count - 1), loop_sp.eq(loop_sp + 1)]
                                    m.d.comb += pc_next.eq(pc + 1)
                            with m.Case(Opcode.SETR, Opcode.ADDR):
                                setr = instr.payload.setr
                                base = Mux(instr.opcode == Opcode.SETR, 0, regs[setr.rd])
                                writes = Cat(Const(0, 1), *(setr.rd == i for i in range(1, REGISTERS)))  # not R0
                                m.d.sync += [reg_write.eq(writes), reg_base.eq(base), reg_imm.eq(setr.imm)]
                                m.d.comb += advance.eq(1)
                        with m.Default():  # NOP, and without registers LOOP, SETR and ADDR
                            m.d.comb += advance.eq(1)
            with m.State("DRAIN"):
                m.d.comb += self.busy.eq(1)
                with m.If(all_idle):
                    m.d.sync += self.done.eq(1)
                    m.next = "IDLE"

        # A queue's waiting cycles are counted a cycle late, from a register (the semaphore
        # decision is a long path): the count is still exact, since no head waits in the first
        # cycle of a run (the queues are empty) nor in its last (DRAIN ends with them empty).
        waited = {q: Signal(name=f"{q}_waited") for q in QUEUES}
        m.d.sync += [waited[q].eq(waiting[q]) for q in QUEUES]
        with m.If(self.busy):
            m.d.sync += self.counters.cycles.eq(self.counters.cycles + 1)
            for q in QUEUES if all_counters else ():
                counters = getattr(self.counters, q)
                active = ~getattr(self, f"{q}_idle") | getattr(self, q).valid
                m.d.sync += counters.active.eq(counters.active + active)
                m.d.sync += counters.waiting.eq(counters.waiting + waited[q])
        return m

    @staticmethod
    def _loop_end(m: Module, pc, loop_sp, loop_start, loop_end, loop_left) -> tuple[Signal, Signal, Signal, Signal]:
        """Whether the instruction at `pc` ends the innermost loop with iterations left (`loop_back`:
        advancing jumps to the loop's start, `back_to`, and leaves `left_after` iterations) or
        with none (`loop_exit`: advancing pops the loop), all registered from this cycle's pc and
        loop stack. Both change only when the pc advances, and FETCH (at least a cycle) precedes
        every EXECUTE, so in EXECUTE these are those of `pc` and the stack, with no mux of the
        stack between them and the program memory's address."""
        top = loop_sp - 1
        at_loop_end = (loop_sp != 0) & (loop_end[top] == pc)
        loop_back, loop_exit = Signal(), Signal()
        back_to, left_after = Signal.like(pc, name="back_to"), Signal.like(loop_left[0], name="left_after")
        m.d.sync += [loop_back.eq(at_loop_end & (loop_left[top] != 0)),
                     loop_exit.eq(at_loop_end & (loop_left[top] == 0)),
                     back_to.eq(loop_start[top]), left_after.eq(loop_left[top] - 1)]
        return loop_back, loop_exit, back_to, left_after

    @staticmethod
    def _pending_register_write(m: Module, regs) -> tuple[Signal, Signal, Signal]:
        """A SETR / ADDR writes its register a cycle late: EXECUTE sets `reg_write` (one-hot; R0
        is never written), `reg_base` (0 or the register) and `reg_imm`, and the next cycle,
        always a FETCH, adds them and writes the sum, so the next EXECUTE reads the new value
        while neither the register read nor the decode lies before the adder or the enables."""
        reg_write = Signal(len(regs), name="reg_write")
        reg_base, reg_imm = Signal(32, name="reg_base"), Signal(32, name="reg_imm")
        m.d.sync += reg_write.eq(0)
        for index, reg in enumerate(regs):
            with m.If(reg_write[index]):
                m.d.sync += reg.eq(reg_base + reg_imm)
        return reg_write, reg_base, reg_imm

    @staticmethod
    def _update_semaphore(m: Module, sem: Signal, increments: list, decrement) -> None:
        """Adds this cycle's increments (one-bit each) and subtracts its decrement with a single
        adder: the queues' net change as one small signed number. At most one queue's WAIT passes
        on a semaphore in a cycle (the first queue waiting on it while it is nonzero; a later
        one is blocked), so the decrement is one bit."""
        delta = Signal(range(-1, len(increments) + 1), name=f"{sem.name}_delta")
        m.d.comb += delta.eq(sum(increments[1:], increments[0]) - decrement)
        m.d.sync += sem.eq(sem + delta)

    def _rom_fetch(self, m: Module, pc_next, instr, target) -> None:
        """A word-wide ROM (or RAM) read at the pc's next value, so its output is the word at
        `pc`; a register of that output gives the execute stage its instruction straight from
        flip-flops (block RAM outputs are slow) in the same cycle as reading at `pc` would."""
        m.submodules.rom = rom = Memory(shape=INSTRUCTION_BITS, depth=self.depth, init=self.program)
        read = rom.read_port()
        if "program_write" in self.signature.members:
            write = rom.write_port()
            m.d.comb += [write.addr.eq(self.program_write.addr), write.data.eq(self.program_write.data),
                         write.en.eq(self.program_write.en)]
        m.d.comb += read.addr.eq(pc_next)
        m.d.sync += [instr.eq(read.data), target.eq(dispatch_target(read.data))]

    def _spram_fetch(self, m: Module, pc, pc_next, instr, target, fetching, fetched) -> None:
        """Halfword 0 of the next instruction is read in the cycle that decides it (at
        `pc_next`), halfwords 1..7 in the first seven FETCH cycles; each arrives a cycle later
        and is written into its place in `instr` (bits no queue carries are never read, so
        synthesis drops them), so FETCH lasts `HALFWORDS` cycles unless
        `memory_read` takes the port (a cycle per read). While the sequencer is idle, host
        writes take the port."""
        m.submodules.program_memory = memory = SinglePortBank(SPRAM_BITS // 8, SPRAM_WORDS)
        part = Signal(range(HALFWORDS + 1))  # halfwords of the instruction at `pc` requested
        issued = Signal()  # a fetch read was issued last cycle: its halfword is on `rd_data`
        client, write = self.memory_read, self.program_write
        m.d.sync += issued.eq(0)
        m.d.comb += [client.data.eq(memory.rd_data), fetched.eq(fetching & issued & (part == HALFWORDS))]
        with m.If(fetching & issued):  # the halfword read when `part` was one less
            with m.Switch(part):
                for index in range(HALFWORDS):
                    with m.Case(index + 1):
                        m.d.sync += instr.as_value().word_select(index, SPRAM_BITS).eq(memory.rd_data)
                        if index == 0:
                            m.d.sync += target.eq(dispatch_target(memory.rd_data))
        with m.If(client.req):
            m.d.comb += [memory.addr.eq(client.addr), memory.rd_en.eq(1), client.grant.eq(1)]
            with m.If(~fetching):
                m.d.sync += part.eq(0)
        with m.Elif(fetching):
            with m.If(part != HALFWORDS):
                m.d.comb += [memory.addr.eq(Cat(part[:3], pc)), memory.rd_en.eq(1)]
                m.d.sync += [part.eq(part + 1), issued.eq(1)]
        with m.Else():
            m.d.comb += [memory.addr.eq(Cat(Const(0, 3), pc_next)), memory.rd_en.eq(1)]
            m.d.sync += [part.eq(1), issued.eq(1)]
            with m.If(~self.busy & write.en):
                m.d.comb += [memory.addr.eq(write.addr), memory.wr_data.eq(write.data), memory.wr_en.eq(0b11)]
