"""The sequencer's performance counters (`COUNTERS_LAYOUT`)."""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hwgen.sequencer_layouts import COUNTERS_LAYOUT, QUEUES


class PerformanceCounters(wiring.Component):
    """The cycles of a run and, with `per_queue`, each queue's active and waiting cycles (else
    those read 0).

    - `clear`: a run starts (zeroes the counters).
    - `busy`: the run goes on (counted).
    - `active`: per queue, its unit is busy or offered a command.
    - `waiting`: per queue, its head waits on a semaphore.
    - `counters`: the counts.
    """

    def __init__(self, per_queue: bool):
        self.per_queue = per_queue
        super().__init__({
            "clear": In(1), "busy": In(1), "active": In(len(QUEUES)), "waiting": In(len(QUEUES)),
            "counters": Out(COUNTERS_LAYOUT),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        with m.If(self.clear):
            m.d.sync += (self.counters if self.per_queue else self.counters.cycles).eq(0)
        # A queue's waiting cycles are counted a cycle late, from a register (the semaphore
        # decision is a long path): the count is still exact, since no head waits in the first
        # cycle of a run (the queues are empty) nor in its last (DRAIN ends with them empty).
        waited = {q: Signal(name=f"{q}_waited") for q in QUEUES}
        m.d.sync += [waited[q].eq(self.waiting[index]) for index, q in enumerate(QUEUES)]
        with m.If(self.busy):
            m.d.sync += self.counters.cycles.eq(self.counters.cycles + 1)
            for index, q in enumerate(QUEUES if self.per_queue else ()):
                counters = getattr(self.counters, q)
                m.d.sync += counters.active.eq(counters.active + self.active[index])
                m.d.sync += counters.waiting.eq(counters.waiting + waited[q])
        return m
