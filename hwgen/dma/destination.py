"""The DMA's destination side: the realigner's words into the buffer bank (loads) or out as the
memory port's write beats (stores)."""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.memory import WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from hwgen.dma.descriptor import DmaParams
from hwgen.dma.realign import realigned_layout
from hwgen.memory_port import MemoryPort
from hwgen.pe import register


def buffer_write_signature(params: DmaParams) -> WritePort.Signature:
    """The write port, with byte enables, of a buffer bank of `params.buf_depth` words of
    `params.buf_word_bytes` bytes."""
    return WritePort.Signature(addr_width=ceil_log2(params.buf_depth), shape=unsigned(8 * params.buf_word_bytes),
                               granularity=8)


class Destination(wiring.Component):
    """Buffer writes (loads, never stalled; with `timing_registers` through a register, so that no
    realigner logic lies before the banks' ports) or DRAM write beats (stores), which leave
    through a register (the data comes from a buffer's block RAM through the realigner): it takes
    a beat whenever it is empty or its beat is accepted.

    - `load`: the descriptor is a load;
    - `words`: the realigner's destination words;
    - `buf_wr`: the buffer bank's write port (byte enables);
    - `wr`: the memory port's write beats;
    - `free`: the write-beat register takes a beat this cycle.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        port = MemoryPort(params.bus_bytes, params.burst_beats, params.addr_width)
        super().__init__({
            "load": In(1),
            "words": In(stream.Signature(realigned_layout(params))),
            "buf_wr": In(buffer_write_signature(params)),
            "wr": port.members["wr"],
            "free": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        B, lb, load = p.bus_bytes, p.lb, self.load
        lw = exact_log2(p.buf_word_bytes)
        out, wr, beat_free = self.words, self.wr, self.free
        out_lane = (out.payload.addr >> lb)[:lw - lb]
        block_end = (out.payload.addr >> lb)[:exact_log2(p.burst_beats)] == p.burst_beats - 1
        m.d.comb += [beat_free.eq(~wr.valid | wr.ready), out.ready.eq(load | beat_free)]
        write_addr, write_data = out.payload.addr >> lw, out.payload.data
        write_en = Mux(load & out.valid, out.payload.mask << (out_lane * B), 0)
        if p.timing_registers:  # a cycle later, so no realigner logic lies before the banks' ports
            write_addr, write_data = register(m, write_addr, "write_addr"), register(m, write_data, "write_data")
            write_en = register(m, write_en, "write_en", reset_less=False)
        m.d.comb += [self.buf_wr.addr.eq(write_addr), self.buf_wr.en.eq(write_en),
                     self.buf_wr.data.eq(Cat(*[write_data] * (p.buf_word_bytes // B)))]
        with m.If(beat_free):
            m.d.sync += [
                wr.valid.eq(~load & out.valid),
                wr.payload.addr.eq(out.payload.addr), wr.payload.data.eq(out.payload.data),
                wr.payload.mask.eq(out.payload.mask), wr.payload.last.eq(out.payload.last | block_end),
            ]
        return m
