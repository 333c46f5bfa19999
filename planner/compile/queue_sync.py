"""Emits instructions with the synchronisation protocol between the load, compute and store
queues: counting semaphores for double-buffered banks and for data passed through DRAM.

Protocol (docs/isa.md): each double-buffered buffer has a FULL and a FREE semaphore; the load
queue waits FREE, loads a bank, signals FULL; the compute queue waits FULL before first use of
a bank and signals FREE when it moves on. Output tiles: compute waits ACC_FREE (or ACC_LOADED
after a partial-sum reload), signals ACC_READY when a tile's results are complete; the store
queue waits ACC_READY, stores, signals ACC_FREE. A load of data that earlier stores wrote is
preceded by one SIGNAL STORED in the store queue (after every store so far, so it passes once
they have all finished) and a WAIT STORED in the load queue: one token at a time, so every
semaphore holds at most two tokens (`hwgen.semaphores` proves it per program).

`event_instructions` counts what the emitter emits per event, for the cost model.
"""
from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

from hwgen.dma import Descriptor
from hwgen.isa import Buffer, Instruction, Opcode, Queue
from hwgen.program import Program


class Sem(IntEnum):
    INPUT_FULL = 0
    INPUT_FREE = 1
    WEIGHT_FULL = 2
    WEIGHT_FREE = 3
    ACC_READY = 4
    ACC_FREE = 5
    ACC_LOADED = 6
    STORED = 7


class Emitter:
    """Builds a Program; tracks banks and outstanding semaphore tokens."""

    def __init__(self) -> None:
        self.program = Program()
        self.next_bank = {"input": 0, "weight": 0, "acc": 0}
        self.holding = {"input": False, "weight": False}  # compute holds a FULL bank
        self.stored_outstanding = 0
        for sem, queue in ((Sem.INPUT_FREE, Queue.LOAD), (Sem.WEIGHT_FREE, Queue.LOAD), (Sem.ACC_FREE, Queue.STORE)):
            self.signal(queue, sem)
            self.signal(queue, sem)

    def emit(self, opcode: Opcode, **fields: int) -> None:
        self.program.emit(Instruction.make(opcode, **fields))

    def signal(self, queue: Queue, sem: Sem) -> None:
        self.emit(Opcode.SIGNAL, queue=queue, sem=sem)

    def wait(self, queue: Queue, sem: Sem) -> None:
        self.emit(Opcode.WAIT, queue=queue, sem=sem)

    def descriptor(self, descriptor: Descriptor) -> int:
        return self.program.descriptor(descriptor)

    # ------------------------------------------------------------------ loads
    def await_stores(self) -> None:
        """Make the load queue wait until every store emitted so far has completed."""
        if self.stored_outstanding:
            self.signal(Queue.STORE, Sem.STORED)
            self.wait(Queue.LOAD, Sem.STORED)
        self.stored_outstanding = 0

    def load(self, kind: str, loads: list[dict]) -> int:
        """Fill the next bank of `kind` ('input' or 'weight'; weights carry their parameters)
        with LOAD instructions (field dicts without `bank`); returns the bank."""
        bank = self.next_bank[kind]
        self.next_bank[kind] ^= 1
        free, full = (Sem.INPUT_FREE, Sem.INPUT_FULL) if kind == "input" else (Sem.WEIGHT_FREE, Sem.WEIGHT_FULL)
        self.wait(Queue.LOAD, free)
        for fields in loads:
            self.emit(Opcode.LOAD, bank=bank, **fields)
        self.signal(Queue.LOAD, full)
        return bank

    def use(self, kind: str) -> None:
        """Compute switches to the bank loaded last for `kind`: release the old one, wait for the new."""
        free, full = (Sem.INPUT_FREE, Sem.INPUT_FULL) if kind == "input" else (Sem.WEIGHT_FREE, Sem.WEIGHT_FULL)
        if self.holding[kind]:
            self.signal(Queue.COMPUTE, free)
        self.wait(Queue.COMPUTE, full)
        self.holding[kind] = True

    def release_all(self) -> None:
        """Compute gives back the banks it holds (end of a layer)."""
        for kind, free in (("input", Sem.INPUT_FREE), ("weight", Sem.WEIGHT_FREE)):
            if self.holding[kind]:
                self.signal(Queue.COMPUTE, free)
                self.holding[kind] = False

    # --------------------------------------------------------------- outputs
    def reserve_output(self, reload: list[dict] | None = None) -> tuple[int, bool]:
        """Take the next accumulator bank for an output tile and, with `reload`, refill it with
        partial sums from the load queue; returns the bank and whether it was reloaded. The
        compute side enters it with `enter_output`."""
        bank = self.next_bank["acc"]
        self.next_bank["acc"] ^= 1
        if reload:
            self.wait(Queue.LOAD, Sem.ACC_FREE)
            self.await_stores()
            for fields in reload:
                self.emit(Opcode.LOAD, buffer=Buffer.ACC, bank=bank, **fields)
            self.signal(Queue.LOAD, Sem.ACC_LOADED)
        return bank, bool(reload)

    def enter_output(self, reloaded: bool) -> None:
        """Compute waits until the output bank reserved last is free (or reloaded)."""
        self.wait(Queue.COMPUTE, Sem.ACC_LOADED if reloaded else Sem.ACC_FREE)

    def open_output(self, reload: list[dict] | None = None) -> int:
        """Reserve and enter an output tile's bank at once."""
        bank, reloaded = self.reserve_output(reload)
        self.enter_output(reloaded)
        return bank

    def close_output(self, bank: int, stores: list[dict]) -> None:
        """The tile in `bank` is complete: store it and free the bank."""
        self.signal(Queue.COMPUTE, Sem.ACC_READY)
        self.wait(Queue.STORE, Sem.ACC_READY)
        for fields in stores:
            self.emit(Opcode.STORE, bank=bank, **fields)
        self.signal(Queue.STORE, Sem.ACC_FREE)
        self.stored_outstanding += 1

    def finish(self) -> Program:
        self.release_all()
        self.emit(Opcode.END)
        return self.program


@dataclass(frozen=True)
class EventInstructions:
    """Instructions `Emitter` emits per event in a layer's steady state (compute holds a bank of
    each kind, stores are outstanding), each of which the fetch stage dispatches."""

    initial: int
    """`Emitter()`: the SIGNALs of the initial semaphore tokens."""
    bank_fill: int
    """`load`: the load queue's WAIT FREE and SIGNAL FULL around a bank's LOADs."""
    bank_switch: int
    """`use`: compute's SIGNAL FREE of the old bank and WAIT FULL of the new one."""
    output_entry: int
    """`enter_output`: compute's WAIT for the output bank (ACC_FREE, or ACC_LOADED after a reload)."""
    reload: int
    """`reserve_output` with a partial-sum reload of one LOAD: WAIT ACC_FREE, SIGNAL and WAIT
    STORED, the LOAD, SIGNAL ACC_LOADED."""
    result_ready: int
    """`close_output`: compute's part, SIGNAL ACC_READY."""
    store: int
    """`close_output` with one STORE: the store queue's part, WAIT ACC_READY, the STORE, SIGNAL
    ACC_FREE."""


@functools.cache
def event_instructions() -> EventInstructions:
    """Count the instructions of each event by emitting it once on a fresh emitter."""
    em = Emitter()
    initial = len(em.program.instructions)
    em.holding = {"input": True, "weight": True}
    em.stored_outstanding = 1

    def emitted(event: Callable[[], object]) -> Counter[Queue]:
        """The instructions `event` emits, per queue."""
        start = len(em.program.instructions)
        event()
        return Counter(Instruction.decode(word).queue for word in em.program.instructions[start:])

    close = emitted(lambda: em.close_output(0, [{}]))
    return EventInstructions(
        initial=initial,
        bank_fill=emitted(lambda: em.load("input", [])).total(),
        bank_switch=emitted(lambda: em.use("input")).total(),
        output_entry=emitted(lambda: em.enter_output(False)).total(),
        reload=emitted(lambda: em.reserve_output([{}])).total(),
        result_ready=close[Queue.COMPUTE],
        store=close[Queue.STORE],
    )
