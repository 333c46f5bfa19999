"""The sequencer's fetch stage: steps through the program, executes END, LOOP, SETR, ADDR and NOP
itself and writes every other instruction into its dispatch queue (`hwgen.dispatch`)."""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hwgen.isa import Opcode
from hwgen.program_memory import fetch_signature
from hwgen.sequencer_layouts import QUEUE_WRITE, QUEUES


class FetchStage(wiring.Component):
    """The fetch stage's state machine (IDLE, then FETCH and EXECUTE per instruction, then DRAIN)
    and program counter, over a program memory of `depth` instructions. A ROM program of
    `rom_length` instructions also ends when the pc runs past its last one. With `loops`, LOOP,
    SETR and ADDR drive a `LoopStack` and a `RegisterFile` (else they are NOPs).

    - `start`: starts a run; `busy` until it is `done` (`done` stays high until the next start).
    - `clear`: a run starts (the other parts zero their state).
    - `fetch`: the program memory's port (`hwgen.program_memory.fetch_signature`).
    - `queues`: writes of the instruction at `pc` into its queue; `idle`: the queues are empty
      and their units idle.
    - `advance`: the pc moves on from the instruction executed.
    - `loop_back`, `loop_exit`, `back_to`: the loop stack's view of `pc` (`LoopStack`);
      `enter_loop`: the LOOP at `pc` starts a loop (`loops` only).
    - `write_register`: the SETR or ADDR at `pc` writes its register (`loops` only).
    """

    def __init__(self, depth: int, rom_length: int | None, loops: bool):
        self.rom_length, self.loops = rom_length, loops
        members = {
            "start": In(1), "done": Out(1), "busy": Out(1), "clear": Out(1),
            "fetch": Out(fetch_signature(depth)), "queues": Out(QUEUE_WRITE), "idle": In(1), "advance": Out(1),
        }
        if loops:
            members.update({"loop_back": In(1), "loop_exit": In(1), "back_to": In(range(depth + 1)),
                            "enter_loop": Out(1), "write_register": Out(1)})
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        m = Module()
        fetch, advance = self.fetch, self.advance
        pc, pc_next, target = fetch.pc, fetch.pc_next, fetch.target
        m.d.comb += pc_next.eq(pc)
        m.d.sync += pc.eq(pc_next)
        with m.If(advance):
            m.d.comb += pc_next.eq(pc + 1)
        if self.loops:
            with m.If(advance & self.loop_back):
                m.d.comb += pc_next.eq(self.back_to)
        ran_off = Signal()  # registered like the loop flags (`LoopStack`): valid in EXECUTE
        if self.rom_length is not None:
            m.d.sync += ran_off.eq(pc >= self.rom_length)
        with m.FSM():
            with m.State("IDLE"):
                # The ROM reads word 0 all the while: `start` (from the host side) need not
                # reach the ROM's address in the cycle it rises.
                m.d.comb += pc_next.eq(0)
                with m.If(self.start):
                    m.d.sync += self.done.eq(0)
                    m.d.comb += self.clear.eq(1)
                    m.next = "FETCH"
            with m.State("FETCH"):
                m.d.comb += [self.busy.eq(1), fetch.fetching.eq(1)]
                with m.If(fetch.fetched):
                    m.next = "EXECUTE"
            with m.State("EXECUTE"):
                m.d.comb += self.busy.eq(1)
                with m.If(ran_off):
                    m.next = "DRAIN"
                with m.Elif(target.any()):
                    for index in range(len(QUEUES)):
                        with m.If(target[index]):
                            m.d.comb += self.queues.push[index].eq(1)
                            with m.If(self.queues.room[index]):
                                m.d.comb += advance.eq(1)
                                m.next = "FETCH"
                with m.Else():
                    m.next = "FETCH"
                    self._execute(m)
            with m.State("DRAIN"):
                m.d.comb += self.busy.eq(1)
                with m.If(self.idle):
                    m.d.sync += self.done.eq(1)
                    m.next = "IDLE"
        return m

    def _execute(self, m: Module) -> None:
        """EXECUTE of an instruction no queue takes: END drains the queues; a LOOP without
        iterations or body skips its body, one with both enters the loop; SETR and ADDR write
        their register (all three NOPs without `loops`)."""
        pc, pc_next, instr = self.fetch.pc, self.fetch.pc_next, self.fetch.instr
        with m.Switch(instr.opcode):
            with m.Case(Opcode.END):
                m.next = "DRAIN"
            if self.loops:
                with m.Case(Opcode.LOOP):
                    loop = instr.payload.loop
                    with m.If((loop.count == 0) | (loop.body == 0)):
                        m.d.comb += pc_next.eq(pc + 1 + loop.body)
                    with m.Else():
                        m.d.comb += [self.enter_loop.eq(1), pc_next.eq(pc + 1)]
                with m.Case(Opcode.SETR, Opcode.ADDR):
                    m.d.comb += [self.write_register.eq(1), self.advance.eq(1)]
            with m.Default():  # NOP, and without registers LOOP, SETR and ADDR
                m.d.comb += self.advance.eq(1)
