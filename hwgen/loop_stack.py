"""The sequencer's loop stack: the LOOPs the fetch stage (`hwgen.fetch_stage`) is inside."""
from __future__ import annotations

from amaranth import Array, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hwgen.isa import Opcode
from hwgen.isa_layout import PAYLOADS

LOOP_DEPTH = 4


class LoopStack(wiring.Component):
    """Up to `LOOP_DEPTH` nested loops over a program of `depth` instructions: each with its
    first and last instruction and the iterations left.

    - `pc`: the instruction the fetch stage is at.
    - `clear`: a run starts (empties the stack).
    - `enter`, `loop`: the LOOP at `pc` (with a body and iterations) starts a loop.
    - `advance`: the fetch stage moves on from `pc` (to `back_to` with `loop_back`).
    - `loop_back`: `pc` ends the innermost loop with iterations left; `back_to` its first
      instruction.
    - `loop_exit`: `pc` ends the innermost loop with none left (advancing leaves it).
    """

    def __init__(self, depth: int):
        super().__init__({
            "pc": In(range(depth + 1)), "clear": In(1), "enter": In(1), "loop": In(PAYLOADS[Opcode.LOOP]),
            "advance": In(1), "loop_back": Out(1), "loop_exit": Out(1), "back_to": Out(range(depth + 1)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        pc, loop = self.pc, self.loop
        loop_start = Array(Signal.like(pc, name=f"loop_start{i}") for i in range(LOOP_DEPTH))
        loop_end = Array(Signal.like(pc, name=f"loop_end{i}") for i in range(LOOP_DEPTH))
        loop_left = Array(Signal(16, name=f"loop_left{i}") for i in range(LOOP_DEPTH))
        loop_sp = Signal(range(LOOP_DEPTH + 1))
        top = loop_sp - 1
        left_after = self._loop_end(m, loop_sp, loop_start, loop_end, loop_left)
        with m.If(self.advance & self.loop_back):
            m.d.sync += loop_left[top].eq(left_after)
        with m.If(self.advance & self.loop_exit):
            m.d.sync += loop_sp.eq(loop_sp - 1)
        with m.If(self.clear):
            m.d.sync += loop_sp.eq(0)
        with m.If(self.enter):
            m.d.sync += [loop_start[loop_sp].eq(pc + 1), loop_end[loop_sp].eq(pc + loop.body),
                         loop_left[loop_sp].eq(loop.count - 1), loop_sp.eq(loop_sp + 1)]
        return m

    def _loop_end(self, m: Module, loop_sp, loop_start, loop_end, loop_left) -> Signal:
        """Whether the instruction at `pc` ends the innermost loop with iterations left (`loop_back`:
        advancing jumps to the loop's start, `back_to`, and leaves the `left_after` iterations
        returned) or with none (`loop_exit`: advancing pops the loop), all registered from this
        cycle's pc and loop stack. Both change only when the pc advances, and FETCH (at least a
        cycle) precedes every EXECUTE, so in EXECUTE these are those of `pc` and the stack, with
        no mux of the stack between them and the program memory's address."""
        top = loop_sp - 1
        at_loop_end = (loop_sp != 0) & (loop_end[top] == self.pc)
        left_after = Signal.like(loop_left[0], name="left_after")
        m.d.sync += [self.loop_back.eq(at_loop_end & (loop_left[top] != 0)),
                     self.loop_exit.eq(at_loop_end & (loop_left[top] == 0)),
                     self.back_to.eq(loop_start[top]), left_after.eq(loop_left[top] - 1)]
        return left_after
