"""The sequencer's counting semaphores (their bounds: `hwgen.semaphores`)."""
from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hwgen.isa import SEMAPHORES
from hwgen.sequencer_layouts import QUEUES

PER_QUEUE = data.ArrayLayout(SEMAPHORES, len(QUEUES))
"""A bit per queue and semaphore (`[queue index][semaphore]`)."""


class SemaphoreBank(wiring.Component):
    """`SEMAPHORES` counters of `bits` bits, each changed by at most one WAIT and one SIGNAL per
    queue and cycle.

    - `waits`: a queue's head WAITs on the semaphore.
    - `signals`: a queue's head SIGNALs the semaphore (incrementing it this cycle).
    - `granted`: per queue, its WAIT passes this cycle (decrementing the semaphore): the
      semaphore is nonzero and no earlier queue waits on it.
    - `clear`: a run starts (zeroes the semaphores).
    """

    def __init__(self, bits: int):
        self.bits = bits
        super().__init__({
            "waits": In(PER_QUEUE), "signals": In(PER_QUEUE), "granted": Out(len(QUEUES)), "clear": In(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        sems = [Signal(self.bits, name=f"sem{i}") for i in range(SEMAPHORES)]
        nonzero = [Signal(name=f"sem{i}_nonzero") for i in range(SEMAPHORES)]
        m.d.comb += [nonzero[i].eq(sems[i].any()) for i in range(SEMAPHORES)]
        waits, queues = self.waits, range(len(QUEUES))
        for index in queues:  # a WAIT passes on a nonzero semaphore unless an earlier queue waits on it too
            m.d.comb += self.granted[index].eq(Cat(
                waits[index][s] & nonzero[s] & ~Cat(waits[p][s] for p in range(index)).any()
                for s in range(SEMAPHORES)).any())
        for s in range(SEMAPHORES):
            self._update_semaphore(m, sems[s], [self.signals[q][s] for q in queues],
                                   nonzero[s] & Cat(waits[q][s] for q in queues).any())
        with m.If(self.clear):
            m.d.sync += [sem.eq(0) for sem in sems]
        return m

    @staticmethod
    def _update_semaphore(m: Module, sem: Signal, increments: list, decrement) -> None:
        """Adds this cycle's increments (one-bit each) and subtracts its decrement with a single
        adder: the queues' net change as one small signed number. At most one queue's WAIT passes
        on a semaphore in a cycle (the first queue waiting on it while it is nonzero; a later
        one is blocked), so the decrement is one bit."""
        delta = Signal(range(-1, len(increments) + 1), name=f"{sem.name}_delta")
        m.d.comb += delta.eq(sum(increments[1:], increments[0]) - decrement)
        m.d.sync += sem.eq(sem + delta)
