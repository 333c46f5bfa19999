"""The sequencer's dispatch queues: first in, first out, timed exactly like
`amaranth.lib.fifo.SyncFIFOBuffered` (an entry written into an empty queue is at the head two
cycles later, one cycle later in a one-entry queue), with a one-hot `kind` carried next to each
entry's data. The head's kind comes from flip-flops and reads all zeros while the queue is
empty, so the logic that decides whether to pop the head (a WAIT's semaphore, a SIGNAL, a
command's handshake) needs neither the head's opcode decoded nor `r_rdy`: a LUT level less on
the queues' pop paths.
"""
from __future__ import annotations

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out


def _next(pointer: Signal, entries: int):
    """The pointer's next position in a ring of `entries`."""
    return Mux(pointer == entries - 1, 0, pointer + 1)


class DispatchQueue(wiring.Component):
    """`depth` entries of `width` data bits and a `kinds`-bit one-hot kind (`w_kind`, `r_kind`).

    Writes (`w_en` while `w_rdy`) and reads (`r_en` while `r_rdy`) as `SyncFIFOBuffered`'s,
    cycle for cycle: beyond the head, entries wait in a memory of `depth - 1` words with a
    registered read, their kinds in flip-flops. `r_kind` is the head's kind while `r_rdy`,
    else 0.
    """

    def __init__(self, *, width: int, depth: int, kinds: int):
        assert depth >= 1
        self.width, self.depth, self.kinds = width, depth, kinds
        super().__init__({
            "w_data": In(width), "w_kind": In(kinds), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_kind": Out(kinds), "r_en": In(1), "r_rdy": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        write = self.w_en & self.w_rdy
        if self.depth == 1:  # the head register alone
            m.d.comb += self.w_rdy.eq(~self.r_rdy)
            with m.If(write):
                m.d.sync += [self.r_data.eq(self.w_data), self.r_kind.eq(self.w_kind), self.r_rdy.eq(1)]
            with m.If(self.r_en & self.r_rdy):
                m.d.sync += [self.r_kind.eq(0), self.r_rdy.eq(0)]
            return m

        waiting = self.depth - 1  # entries behind the head
        level = Signal(range(waiting + 1))
        refill = Signal()  # the head takes the oldest waiting entry
        m.d.comb += [self.w_rdy.eq(level != waiting), refill.eq((level != 0) & (~self.r_rdy | self.r_en))]
        m.submodules.storage = storage = Memory(shape=self.width, depth=waiting, init=[])
        kinds = Array(Signal(self.kinds, name=f"kind{i}") for i in range(waiting))
        produce, consume = Signal(range(waiting)), Signal(range(waiting))
        write_port, read_port = storage.write_port(), storage.read_port(domain="sync")
        m.d.comb += [write_port.addr.eq(produce), write_port.data.eq(self.w_data), write_port.en.eq(write),
                     read_port.addr.eq(consume), read_port.en.eq(refill), self.r_data.eq(read_port.data)]
        with m.If(write):
            m.d.sync += [kinds[produce].eq(self.w_kind), produce.eq(_next(produce, waiting))]
        with m.If(refill):
            m.d.sync += [self.r_kind.eq(kinds[consume]), self.r_rdy.eq(1), consume.eq(_next(consume, waiting))]
        with m.Elif(self.r_en):
            m.d.sync += [self.r_kind.eq(0), self.r_rdy.eq(0)]
        m.d.sync += level.eq(level + write - refill)
        return m
