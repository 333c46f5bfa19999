"""The DMA's source side: the words of each data segment, read from DRAM (loads) or from the
buffer bank (stores), for the realigner."""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.memory import ReadPort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from hwgen.dma.descriptor import DmaParams
from hwgen.dma.segments import source_layout
from hwgen.memory_port import MemoryPort


def buffer_read_signature(params: DmaParams) -> ReadPort.Signature:
    """The read port of a buffer bank of `params.buf_depth` words of `params.buf_word_bytes` bytes."""
    return ReadPort.Signature(addr_width=ceil_log2(params.buf_depth), shape=unsigned(8 * params.buf_word_bytes))


class Source(wiring.Component):
    """Moves one segment at a time, taking the next one as the current one finishes. Each move
    takes `src_beats` words: loads read requests in bursts that stay inside a burst block, stores
    one word. `src_beats` and the flags are registers, set up with the words left, so that no
    count comparison lies on the handshakes with the port and the walker.

    - `load`: the descriptor is a load; `busy`: the DMA runs one;
    - `segment`: the data segments (their first source byte and their bytes);
    - `rd_req`, `rd_data`: the memory port's read requests and data (loads);
    - `buf_req`: bus-aligned buffer byte addresses to read (stores); `chunks`: their words;
    - `words`: the source words, for the realigner;
    - `some`: the segment being moved has words left.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        port = MemoryPort(params.bus_bytes, params.burst_beats, params.addr_width)
        super().__init__({
            "load": In(1),
            "busy": In(1),
            "segment": In(stream.Signature(source_layout(params))),
            "rd_req": port.members["rd_req"],
            "rd_data": port.members["rd_data"],
            "buf_req": Out(stream.Signature(params.dst_width)),
            "chunks": In(stream.Signature(8 * params.bus_bytes)),
            "words": Out(stream.Signature(8 * params.bus_bytes)),
            "some": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        B, lb, load = p.bus_bytes, p.lb, self.load
        src_addr = Signal(p.dst_width)  # bus-aligned DRAM address (loads) or buffer chunk address (stores)
        src_left = Signal(p.count_width + 1)  # bus words left in the segment
        src_beats = Signal(range(p.burst_beats + 1))  # words of the next move: min(src_left, its block's)
        src_some = self.some  # src_left != 0
        src_final = Signal()  # src_some and src_left == src_beats: the next move ends the segment
        src_first, src_n = self.segment.payload.addr, self.segment.payload.n

        def set_source_left(left, block, some=1) -> list:
            """`src_left` and what follows from it, with `block` words up to the move's block end
            (`some`: whether the segment has words left)."""
            block = Mux(load, block, 1)
            return [src_left.eq(left), src_beats.eq(Mux(left < block, left, block)),
                    src_final.eq(some & (left <= block))]

        # a move: a load burst that is not the last ends at its block's end
        step = [src_addr.eq(src_addr + (src_beats << lb)), src_some.eq(~src_final),
                *set_source_left((src_left - src_beats)[:len(src_left)], p.burst_beats, ~src_final)]
        first_beat = (src_first >> lb)[:exact_log2(p.burst_beats)]
        take = [src_addr.eq(src_first >> lb << lb), src_some.eq(1),  # `Descriptor.run_bytes` >= 1
                *set_source_left((src_first[:lb] + src_n + B - 1) >> lb, p.burst_beats - first_beat)]

        req = self.rd_req
        m.d.comb += [req.valid.eq(self.busy & load & src_some), req.payload.addr.eq(src_addr),
                     req.payload.beats.eq(src_beats),
                     self.buf_req.valid.eq(self.busy & ~load & src_some), self.buf_req.payload.eq(src_addr)]

        # The handshake (`go`: the move goes ahead) selects last among the updates, each decided
        # from registers; `src_final` implies `src_some` and `busy`.
        go = Mux(load, req.ready, self.buf_req.ready)
        m.d.comb += self.segment.ready.eq(~src_some | (src_final & go))
        with m.If(go):
            with m.If(self.segment.valid & (~src_some | src_final)):
                m.d.sync += take
            with m.Elif(self.busy & src_some):
                m.d.sync += step
        with m.Elif(self.segment.valid & ~src_some):
            m.d.sync += take

        rd_data = self.rd_data
        m.d.comb += [
            self.words.valid.eq(Mux(load, rd_data.valid, self.chunks.valid)),
            self.words.payload.eq(Mux(load, rd_data.payload.data, self.chunks.payload)),
            rd_data.ready.eq(load & self.words.ready), self.chunks.ready.eq(self.words.ready),
        ]
        return m


class BufferReader(wiring.Component):
    """A store's buffer reads, through two stages: the read port's output (held by its enable),
    then a register of the whole word, so the block RAM's output reaches no lane selection.

    - `req`: bus-aligned byte addresses of the bus words to read;
    - `buf_rd`: the buffer bank's read port (synchronous, one cycle latency);
    - `chunks`: the bus words, in order;
    - `reading`: a read is in the first stage.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        super().__init__({
            "req": In(stream.Signature(params.dst_width)),
            "buf_rd": In(buffer_read_signature(params)),
            "chunks": Out(stream.Signature(8 * params.bus_bytes)),
            "reading": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        lb, lw = p.lb, exact_log2(p.buf_word_bytes)
        read_valid, word_valid = self.reading, self.chunks.valid
        lanes = p.buf_word_bytes // p.bus_bytes
        read_lane, word_lane = Signal(range(lanes)), Signal(range(lanes))
        word = Signal.like(self.buf_rd.data)
        lane_of = (self.req.payload >> lb)[:lw - lb]
        word_free = ~word_valid | self.chunks.ready
        stage_free = ~read_valid | word_free
        m.d.comb += [self.buf_rd.addr.eq(self.req.payload >> lw), self.buf_rd.en.eq(stage_free),
                     self.req.ready.eq(stage_free),
                     self.chunks.payload.eq(word.word_select(word_lane, 8 * p.bus_bytes) if lw > lb else word)]
        with m.If(stage_free):
            m.d.sync += [read_valid.eq(self.req.valid), read_lane.eq(lane_of)]
        with m.If(word_free):
            m.d.sync += [word_valid.eq(read_valid), word.eq(self.buf_rd.data), word_lane.eq(read_lane)]
        return m
