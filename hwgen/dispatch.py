"""The sequencer's dispatch: three queues between the fetch stage (`hwgen.fetch_stage`) and the
units, whose heads WAIT on and SIGNAL the semaphores (`hwgen.semaphore_bank`) or go to their
unit as commands."""
from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from amaranth import Cat, Module, Signal, Value
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from hwgen.dispatch_queue import DispatchQueue
from hwgen.isa import SEMAPHORES, Opcode
from hwgen.isa_layout import INSTRUCTION_LAYOUT
from hwgen.semaphore_bank import SemaphoreBank
from hwgen.sequencer_layouts import QUEUE_WRITE, QUEUES, Kind


def instruction_kind(opcode: Value) -> Value:
    """The one-hot `Kind` of a queued instruction with `opcode`."""
    wait, signal = opcode == Opcode.WAIT, opcode == Opcode.SIGNAL
    return Cat(wait, signal, ~(wait | signal))


@dataclass(frozen=True)
class QueueFormat:
    """How a dispatch queue is built: the instruction bit ranges `[start, stop)` its entries keep
    (`fields`), the opcode bits its head has as constants instead (bit: value), its `depth`,
    and whether its unit runs the head in place, popping it when done (`in_place`)."""
    fields: tuple[tuple[int, int], ...]
    opcode_constants: Mapping[int, int]
    depth: int
    in_place: bool


class Dispatcher(wiring.Component):
    """A queue per unit (`formats`: per queue in `QUEUES` order), its entries' kinds decoded
    from their opcodes as they arrive (`registered`, `DispatchQueue`) or at the head, and
    `SEMAPHORES` semaphores of `semaphore_bits` bits.

    - `queues`: the fetch stage's writes (`QUEUE_WRITE`) of the `entries` (per queue the
      fetched instruction, its register operands resolved).
    - `load`, `compute`, `store`: commands to the units; `{queue}_idle`: the unit contract's
      idle (see `hwgen.sequencer`).
    - `clear`: a run starts (zeroes the semaphores).
    - `idle`: the queues are empty and their units idle.
    - `waiting`: per queue, its head WAITs on a semaphore that is not granted.
    """

    def __init__(self, formats: Mapping[str, QueueFormat], registered: bool, semaphore_bits: int):
        self.formats, self.registered, self.semaphore_bits = formats, registered, semaphore_bits
        super().__init__({
            "queues": In(QUEUE_WRITE), "entries": In(data.ArrayLayout(INSTRUCTION_LAYOUT, len(QUEUES))),
            **{q: Out(stream.Signature(INSTRUCTION_LAYOUT)) for q in QUEUES},
            **{f"{q}_idle": In(1) for q in QUEUES},
            "clear": In(1), "idle": Out(1), "waiting": Out(len(QUEUES)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.semaphores = semaphores = SemaphoreBank(self.semaphore_bits)
        m.d.comb += semaphores.clear.eq(self.clear)
        queue_class = functools.partial(DispatchQueue, kinds=len(Kind)) if self.registered else fifo.SyncFIFOBuffered
        idle = []
        for index, q in enumerate(QUEUES):
            fields = self.formats[q].fields
            m.submodules[f"{q}_fifo"] = queue = queue_class(width=sum(stop - start for start, stop in fields),
                                                            depth=self.formats[q].depth)
            entry = self.entries[index]
            m.d.comb += [queue.w_data.eq(Cat(entry.as_value()[start:stop] for start, stop in fields)),
                         queue.w_en.eq(self.queues.push[index]), self.queues.room[index].eq(queue.w_rdy)]
            if self.registered:
                m.d.comb += queue.w_kind.eq(instruction_kind(entry.opcode))
            issued = self._dispatch_head(m, index, queue, semaphores)
            out = getattr(self, q)
            idle.append(~queue.r_rdy & getattr(self, f"{q}_idle") & ~issued & ~out.valid)
        m.d.comb += self.idle.eq(Cat(*idle).all())
        return m

    def _dispatch_head(self, m: Module, index: int, queue, semaphores: SemaphoreBank) -> Signal:
        """Queue `index`'s head: a WAIT pops when granted, a SIGNAL when the unit is idle, a
        command when the unit takes it. Returns `issued`: the unit took a command last cycle
        (its `idle` may not have fallen yet)."""
        q, formats = QUEUES[index], self.formats[QUEUES[index]]
        head = Signal(INSTRUCTION_LAYOUT, name=f"{q}_head")
        m.d.comb += Cat(head.as_value()[start:stop] for start, stop in formats.fields).eq(queue.r_data)
        m.d.comb += [head.opcode[bit].eq(value) for bit, value in formats.opcode_constants.items()]
        sem = head.payload.wait.sem
        out = getattr(self, q)
        issued = Signal(name=f"{q}_issued")
        unit_idle = getattr(self, f"{q}_idle") & ~issued  # `out` is not valid at a SIGNAL
        if not formats.in_place:  # else popped when done
            m.d.sync += issued.eq(out.valid & out.ready)
        kind = queue.r_kind if self.registered else (  # one-hot, 0 while the queue is empty
            instruction_kind(head.opcode) & queue.r_rdy.replicate(len(Kind)))
        for s in range(SEMAPHORES):
            m.d.comb += [semaphores.waits[index][s].eq(kind[Kind.WAIT] & (sem == s)),
                         semaphores.signals[index][s].eq(kind[Kind.SIGNAL] & (sem == s) & unit_idle)]
        granted = semaphores.granted[index]
        m.d.comb += [self.waiting[index].eq(kind[Kind.WAIT] & ~granted), out.valid.eq(kind[Kind.COMMAND]),
                     queue.r_en.eq(granted | (kind[Kind.SIGNAL] & unit_idle) | (kind[Kind.COMMAND] & out.ready))]
        m.d.comb += out.payload.eq(head)  # meaningful only while `valid`
        return issued
