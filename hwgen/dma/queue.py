"""A first-in first-out queue in block RAM whose entries may be stored before they are due."""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2


class BlockRamQueue(wiring.Component):
    """A first-in first-out queue of `depth` entries in block RAM, with the interface and the
    cycles of `amaranth.lib.fifo.SyncFIFOBuffered` (`depth - 1` entries in the memory, one in
    its read register, an entry written into an empty queue readable two cycles later), but for
    one more input, `w_commit`: `w_en` writes `w_data` into the word of the next entry, which
    becomes an entry when `w_commit` is high (in that cycle or a later one: the writer writes
    no other entry meanwhile), so an entry may be stored before it is known to be due. The
    memory has a power-of-two number of words, so its pointers wrap by themselves; the read
    register has no reset (Yosys would emulate one in logic around the block RAM) and the
    memory carries `no_rw_check` (the queue never reads the word it writes) and `ram_style:
    block` (Yosys would put a queue this shallow in flip-flops)."""

    def __init__(self, width: int, depth: int):
        assert depth >= 2
        self.width, self.depth = width, depth
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_commit": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        stored = self.depth - 1  # entries in the memory at most
        words = 1 << ceil_log2(stored)
        m.submodules.storage = storage = Memory(shape=self.width, depth=words, init=[],
                                                attrs={"no_rw_check": 1, "ram_style": "block"})
        write, read = storage.write_port(), storage.read_port(domain="comb")
        produce, consume = Signal(range(words)), Signal(range(words))
        inside = Signal(range(stored + 1))  # entries in the memory
        data_out = Signal(self.width, reset_less=True)
        do_write = self.w_commit & self.w_rdy
        do_read = (inside != 0) & (~self.r_rdy | self.r_en)  # into the read register
        m.d.comb += [self.w_rdy.eq(inside != stored), write.addr.eq(produce), write.data.eq(self.w_data),
                     write.en.eq(self.w_en & self.w_rdy), read.addr.eq(consume), self.r_data.eq(data_out),
                     self.level.eq(inside + self.r_rdy)]
        with m.If(do_write):
            m.d.sync += produce.eq(produce + 1)
        with m.If(do_read):
            m.d.sync += [consume.eq(consume + 1), data_out.eq(read.data), self.r_rdy.eq(1)]
        with m.Elif(self.r_en):
            m.d.sync += self.r_rdy.eq(0)
        with m.If(do_write & ~do_read):
            m.d.sync += inside.eq(inside + 1)
        with m.If(do_read & ~do_write):
            m.d.sync += inside.eq(inside - 1)
        return m
