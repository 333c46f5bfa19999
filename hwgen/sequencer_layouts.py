"""The sequencer's data layouts and port signatures, shared by its parts (`hwgen.sequencer`):
the queues and the opcodes each takes, the kinds of a queue's head, the performance counters,
and the program memory's host and client ports."""
from __future__ import annotations

from enum import IntEnum

from amaranth import unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hwgen.config import Template
from hwgen.isa import INSTRUCTION_BITS, Opcode, Queue
from hwgen.spram_size import SPRAM_BITS, SPRAM_WORDS

COUNTER_BITS = 32
QUEUES = tuple(q.name.lower() for q in Queue)

QUEUE_COUNTERS = data.StructLayout({"active": unsigned(COUNTER_BITS), "waiting": unsigned(COUNTER_BITS)})
COUNTERS_LAYOUT = data.StructLayout({"cycles": unsigned(COUNTER_BITS), **{q: QUEUE_COUNTERS for q in QUEUES}})
"""Performance counters: total cycles of the run; per queue the cycles its unit was busy
(`active`) and the cycles its head waited on a semaphore (`waiting`). With `template.counters ==
"cycles"` the per-queue counters are left out and read 0."""

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


def program_write_signature(depth: int, width: int = INSTRUCTION_BITS) -> wiring.Signature:
    """Host writes into a writable program memory of `depth` words of `width` bits."""
    return wiring.Signature({
        "addr": Out(range(depth)), "data": Out(width), "en": Out(1),
    })


def queue_opcodes(queue: str, template: Template = Template()) -> tuple[Opcode, ...]:
    """The opcodes a queue of `template` takes (`QUEUE_OPCODES`): without a vector unit
    (`Template.vector_unit`) no VEC, which the fetch stage then passes over as a no-op."""
    return tuple(opcode for opcode in QUEUE_OPCODES[queue] if template.vector_unit or opcode != Opcode.VEC)


def command_opcodes(queue: str, template: Template = Template()) -> tuple[Opcode, ...]:
    """The opcodes a queue hands to its unit (all but WAIT and SIGNAL, which its `Kind` tells)."""
    return tuple(opcode for opcode in queue_opcodes(queue, template) if opcode not in (Opcode.WAIT, Opcode.SIGNAL))


class Kind(IntEnum):
    """What the sequencer does with a queue's head (one-hot bits; with `registered_kinds` the
    `DispatchQueue`'s kinds)."""
    WAIT = 0      # pops it when its semaphore is granted
    SIGNAL = 1    # pops it when the unit is idle, incrementing its semaphore
    COMMAND = 2   # offers it to the unit


QUEUE_WRITE = wiring.Signature({"push": Out(len(QUEUES)), "room": In(len(QUEUES))})
"""The fetch stage's writes into the dispatch queues: `push` (one-hot) writes into a queue,
which takes the entry while it has `room`."""
