"""The sequencer: program ROM, fetch stage (loops, registers) and three dispatch queues
synchronised by counting semaphores. Semantics: `docs/isa.md`.

Unit contract: a unit accepts one command at a time on its stream; its `idle` input must be
low from the cycle after it accepts a command until that command has finished.
"""
from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hwgen.isa import INSTRUCTION_BITS, INSTRUCTION_LAYOUT, REGISTERS, SEMAPHORES, Opcode, Queue

LOOP_DEPTH = 4
SEMAPHORE_BITS = 8
COUNTER_BITS = 32
QUEUES = tuple(q.name.lower() for q in Queue)

QUEUE_COUNTERS = data.StructLayout({"active": unsigned(COUNTER_BITS), "waiting": unsigned(COUNTER_BITS)})
COUNTERS_LAYOUT = data.StructLayout({"cycles": unsigned(COUNTER_BITS), **{q: QUEUE_COUNTERS for q in QUEUES}})
"""Performance counters: total cycles of the run; per queue the cycles its unit was busy
(`active`) and the cycles its head waited on a semaphore (`waiting`)."""


def program_write_signature(depth: int) -> wiring.Signature:
    """Host writes into a writable program memory."""
    return wiring.Signature({
        "addr": Out(range(depth)), "data": Out(INSTRUCTION_BITS), "en": Out(1),
    })


class Sequencer(wiring.Component):
    """Runs `program` (instruction words) when `start` pulses; `done` rises when it has finished.

    With `writable_depth`, the program lives in a RAM the host fills through `program_write`
    instead of a ROM initialised at elaboration.
    """

    def __init__(self, program: list[int], *, queue_depth: int = 4, writable_depth: int | None = None):
        self.program = list(program)
        self.depth = writable_depth or max(len(self.program), 1)
        if len(self.program) > self.depth:
            raise ValueError(f"program of {len(self.program)} instructions does not fit {self.depth} words")
        self.queue_depth = queue_depth
        members = {
            "start": In(1), "done": Out(1), "busy": Out(1),
            "counters": Out(COUNTERS_LAYOUT),
            **{q: Out(stream.Signature(INSTRUCTION_LAYOUT)) for q in QUEUES},
            **{f"{q}_idle": In(1) for q in QUEUES},
        }
        if writable_depth:
            members["program_write"] = In(program_write_signature(self.depth))
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.rom = rom = Memory(shape=INSTRUCTION_BITS, depth=self.depth, init=self.program)
        read = rom.read_port()
        if "program_write" in self.signature.members:
            write = rom.write_port()
            m.d.comb += [write.addr.eq(self.program_write.addr), write.data.eq(self.program_write.data),
                         write.en.eq(self.program_write.en)]

        pc = Signal(range(self.depth + 1))
        regs = Array(Signal(32, name=f"r{i}") for i in range(REGISTERS))
        sems = Array(Signal(SEMAPHORE_BITS, name=f"sem{i}") for i in range(SEMAPHORES))
        loop_start = Array(Signal.like(pc, name=f"loop_start{i}") for i in range(LOOP_DEPTH))
        loop_end = Array(Signal.like(pc, name=f"loop_end{i}") for i in range(LOOP_DEPTH))
        loop_left = Array(Signal(16, name=f"loop_left{i}") for i in range(LOOP_DEPTH))
        loop_sp = Signal(range(LOOP_DEPTH + 1))

        fifos = {q: fifo.SyncFIFOBuffered(width=INSTRUCTION_BITS, depth=self.queue_depth) for q in QUEUES}
        for q, queue_fifo in fifos.items():
            m.submodules[f"{q}_fifo"] = queue_fifo

        # The ROM reads at the pc's next value, so its output is the word at `pc`; a register
        # of that output gives the execute stage its instruction straight from flip-flops
        # (block RAM outputs are slow) in the same cycle as reading the ROM at `pc` would.
        pc_next = Signal.like(pc)
        m.d.comb += [pc_next.eq(pc), read.addr.eq(pc_next)]
        m.d.sync += pc.eq(pc_next)
        instr = Signal(INSTRUCTION_LAYOUT)
        m.d.sync += instr.eq(read.data)

        # Fetch-stage results: the instruction with its register operands resolved.
        resolved = Signal(INSTRUCTION_LAYOUT)
        m.d.comb += resolved.eq(instr)
        with m.Switch(instr.opcode):
            with m.Case(Opcode.LOAD):
                load = instr.payload.load
                m.d.comb += [
                    resolved.payload.load.dram_offset.eq(regs[load.dram_reg] + load.dram_offset),
                    resolved.payload.load.y_offset.eq(regs[load.y_reg] + load.y_offset),
                    resolved.payload.load.x_offset.eq(regs[load.x_reg] + load.x_offset),
                    resolved.payload.load.dram_reg.eq(0), resolved.payload.load.y_reg.eq(0),
                    resolved.payload.load.x_reg.eq(0),
                ]
            with m.Case(Opcode.STORE):
                store = instr.payload.store
                m.d.comb += [resolved.payload.store.dram_offset.eq(regs[store.dram_reg] + store.dram_offset),
                             resolved.payload.store.dram_reg.eq(0)]

        target = Signal(range(len(QUEUES) + 1))  # len(QUEUES): executed in the fetch stage
        m.d.comb += target.eq(len(QUEUES))
        with m.Switch(instr.opcode):
            with m.Case(Opcode.WAIT, Opcode.SIGNAL):
                m.d.comb += target.eq(instr.payload.wait.queue)
            with m.Case(Opcode.LOAD):
                m.d.comb += target.eq(Queue.LOAD)
            with m.Case(Opcode.STORE):
                m.d.comb += target.eq(Queue.STORE)
            with m.Case(Opcode.CONVCFG, Opcode.CONV, Opcode.VEC):
                m.d.comb += target.eq(Queue.COMPUTE)

        advance = Signal()
        top = loop_sp - 1
        at_loop_end = (loop_sp != 0) & (loop_end[top] == pc)
        with m.If(advance):
            with m.If(at_loop_end & (loop_left[top] != 0)):
                m.d.comb += pc_next.eq(loop_start[top])
                m.d.sync += loop_left[top].eq(loop_left[top] - 1)
            with m.Else():
                m.d.comb += pc_next.eq(pc + 1)
                with m.If(at_loop_end):
                    m.d.sync += loop_sp.eq(loop_sp - 1)

        # ---- semaphores: per queue one increment (SIGNAL) or one decrement (WAIT) per cycle
        heads = {q: data.View(INSTRUCTION_LAYOUT, fifos[q].r_data) for q in QUEUES}
        increments = {q: Signal(name=f"{q}_signal") for q in QUEUES}
        decrements = {q: Signal(name=f"{q}_wait_granted") for q in QUEUES}
        waiting = {q: Signal(name=f"{q}_waiting") for q in QUEUES}
        issued = {q: Signal(name=f"{q}_issued") for q in QUEUES}
        for index, q in enumerate(QUEUES):
            head = heads[q]
            sem = head.payload.wait.sem
            out = getattr(self, q)
            idle = getattr(self, f"{q}_idle") & ~issued[q] & ~out.valid
            m.d.sync += issued[q].eq(out.valid & out.ready)
            earlier_same_wait = [
                fifos[p].r_rdy & (heads[p].opcode == Opcode.WAIT) & (heads[p].payload.wait.sem == sem)
                for p in QUEUES[:index]
            ]
            with m.If(fifos[q].r_rdy):
                with m.Switch(head.opcode):
                    with m.Case(Opcode.WAIT):
                        blocked = (sems[sem] == 0)
                        for other in earlier_same_wait:
                            blocked |= other
                        m.d.comb += [waiting[q].eq(blocked), decrements[q].eq(~blocked), fifos[q].r_en.eq(~blocked)]
                    with m.Case(Opcode.SIGNAL):
                        m.d.comb += [increments[q].eq(idle), fifos[q].r_en.eq(idle)]
                    with m.Default():
                        m.d.comb += [out.valid.eq(1), out.payload.eq(head), fifos[q].r_en.eq(out.ready)]
        for s in range(SEMAPHORES):
            change = []
            for q in QUEUES:
                hits = heads[q].payload.wait.sem == s
                change.append(Mux(increments[q] & hits, 1, 0) - Mux(decrements[q] & hits, 1, 0))
            m.d.sync += sems[s].eq(sems[s] + sum(change[1:], change[0]))

        # ---- fetch FSM (a ROM program ends at END or when the pc runs past its last word)
        ran_off = Const(0) if "program_write" in self.signature.members else pc >= len(self.program)
        all_idle = Signal()
        m.d.comb += all_idle.eq(Cat(
            *[~fifos[q].r_rdy & getattr(self, f"{q}_idle") & ~issued[q] & ~getattr(self, q).valid for q in QUEUES]
        ).all())
        with m.FSM():
            with m.State("IDLE"):
                # The ROM reads word 0 all the while: `start` (from the host side) need not
                # reach the ROM's address in the cycle it rises.
                m.d.comb += pc_next.eq(0)
                with m.If(self.start):
                    m.d.sync += [loop_sp.eq(0), self.done.eq(0), self.counters.eq(0)]
                    m.d.sync += [reg.eq(0) for reg in regs]
                    m.d.sync += [sem.eq(0) for sem in sems]
                    m.next = "FETCH"
            with m.State("FETCH"):
                m.d.comb += self.busy.eq(1)
                m.next = "EXECUTE"
            with m.State("EXECUTE"):
                m.d.comb += self.busy.eq(1)
                with m.If(ran_off):
                    m.next = "DRAIN"
                with m.Elif(target != len(QUEUES)):
                    for index, q in enumerate(QUEUES):
                        with m.If(target == index):
                            m.d.comb += [fifos[q].w_data.eq(resolved), fifos[q].w_en.eq(1)]
                            with m.If(fifos[q].w_rdy):
                                m.d.comb += advance.eq(1)
                                m.next = "FETCH"
                with m.Else():
                    m.next = "FETCH"
                    with m.Switch(instr.opcode):
                        with m.Case(Opcode.END):
                            m.next = "DRAIN"
                        with m.Case(Opcode.LOOP):
                            loop = instr.payload.loop
                            with m.If((loop.count == 0) | (loop.body == 0)):
                                m.d.comb += pc_next.eq(pc + 1 + loop.body)
                            with m.Else():
                                m.d.sync += [loop_start[loop_sp].eq(pc + 1), loop_end[loop_sp].eq(pc + loop.body),
                                             loop_left[loop_sp].eq(loop.count - 1), loop_sp.eq(loop_sp + 1)]
                                m.d.comb += pc_next.eq(pc + 1)
                        with m.Case(Opcode.SETR, Opcode.ADDR):
                            setr = instr.payload.setr
                            value = Mux(instr.opcode == Opcode.SETR, setr.imm, regs[setr.rd] + setr.imm)
                            with m.If(setr.rd != 0):
                                m.d.sync += regs[setr.rd].eq(value)
                            m.d.comb += advance.eq(1)
                        with m.Default():
                            m.d.comb += advance.eq(1)
            with m.State("DRAIN"):
                m.d.comb += self.busy.eq(1)
                with m.If(all_idle):
                    m.d.sync += self.done.eq(1)
                    m.next = "IDLE"

        with m.If(self.busy):
            m.d.sync += self.counters.cycles.eq(self.counters.cycles + 1)
            for q in QUEUES:
                counters = getattr(self.counters, q)
                active = ~getattr(self, f"{q}_idle") | getattr(self, q).valid
                m.d.sync += counters.active.eq(counters.active + active)
                m.d.sync += counters.waiting.eq(counters.waiting + waiting[q])
        return m
