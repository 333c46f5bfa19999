"""The DMA controller: moves one descriptor's bytes between the memory port and a buffer bank.

A descriptor describes `dims` nested loops (up to 4 outer dimensions, innermost first) around a
*run* of `run_bytes` bytes that is contiguous in DRAM and in the buffer. Outer dimension `d`
advances the DRAM address by `dram_stride`, the buffer address by `buf_stride` (both bytes,
modulo the address width, so two's complement gives negative strides) and the virtual image
coordinates by `(dy, dx)`. Inside a run, `x` advances by `run_dx` (0 or 1) per byte, `y` stays.
A byte whose `(y, x)` lies outside `[0, height) x [0, width)` is padding: a load writes the fill
byte to the buffer and does not read DRAM; a store skips it.

Pipeline: the walker (`hwgen.dma.walker`) splits each run into segments (fill prefix, data, fill
suffix); the segments go to two queues (`hwgen.dma.segments`): one drives the source side
(`hwgen.dma.source`: DRAM read requests, or buffer reads), the other the realigner
(`hwgen.dma.realign`), which shifts source words (aligned in the source) into destination words
(aligned in the destination) with byte masks; DRAM write beats leave through a register
(`hwgen.dma.destination`). Each moves up to one bus word per cycle. The `pointer` walker
(`template.dma: shared`) emits whole runs (its descriptors have `run_dx` 0) and hands the data
runs straight to the source side, which takes the next as it finishes one (a run it does not take
at once waits in a skid register, `RunSkid`, with `segment_fifos: memory`): only the realigner's
queue remains, its entries without the run length (the descriptor's `run_bytes`), in a
`BlockRamQueue`.
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from hwgen.dma.descriptor import DmaParams
from hwgen.dma.destination import Destination, buffer_write_signature
from hwgen.dma.realign import Realigner
from hwgen.dma.segments import SegmentQueues
from hwgen.dma.source import BufferReader, Source, buffer_read_signature
from hwgen.dma.pointer_walker import PointerWalker
from hwgen.dma.walker import BASES, Walker
from hwgen.memory_port import MemoryPort


class DescriptorRegister(wiring.Component):
    """The descriptor the DMA runs, taken from `offer` when `take` is high. Behind the `pointer`
    walker it holds no base fields (the walker's pointers take them); with `entry_held` it holds
    only `load` and passes `offer`'s other fields through (their source holds them until `done`).

    - `offer`: the offered descriptor; `take`: the DMA takes it;
    - `desc`: the descriptor being run.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        super().__init__({
            "offer": In(params.descriptor_layout()),
            "take": In(1),
            "desc": Out(params.descriptor_layout()),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p, desc, offer = self.params, self.desc, self.offer
        if p.entry_held:  # the source holds the other fields until `done`: `desc` reads them through
            held_load = Signal()
            m.d.comb += [desc.eq(offer), desc.load.eq(held_load)]
            held = [(held_load, offer.load)]
        else:
            held = [(getattr(desc, name), getattr(offer, name)) for name, _ in desc.shape()
                    if p.walker != "pointer" or name not in BASES]
        with m.If(self.take):
            m.d.sync += [target.eq(source) for target, source in held]
        return m


class Dma(wiring.Component):
    """Executes one descriptor at a time between `port` and a buffer bank.

    Loads write the bank through `buf_wr` (byte enables; with `timing_registers` through a
    register, so the last write may come in `done`'s cycle), stores read it through `buf_rd`
    (synchronous, one cycle latency). `desc.ready` is high while idle; `done` pulses for one cycle
    when a descriptor has finished (for stores: all write beats accepted by the port); behind the
    `pointer` walker it is a register, set in the cycle before. With
    `entry_held` the DMA keeps only `load` of the descriptor it takes (and the walker's
    pointers); `desc.payload`'s other fields must stay unchanged until `done`.
    `busy_cycles` and `stall_cycles` count the cycles of the current or last descriptor; a stall is
    a cycle in which the data path waits for the port (read data not there, write beat not taken).
    """

    def __init__(self, params: DmaParams):
        self.params = params
        super().__init__({
            "desc": In(stream.Signature(params.descriptor_layout())),
            "port": Out(MemoryPort(params.bus_bytes, params.burst_beats, params.addr_width)),
            "buf_wr": In(buffer_write_signature(params)),
            "buf_rd": In(buffer_read_signature(params)),
            "busy": Out(1),
            "done": Out(1),
            "busy_cycles": Out(32),
            "stall_cycles": Out(32),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        pointer = p.walker == "pointer"
        m.submodules.descriptor = register = DescriptorRegister(p)
        m.submodules.walker = walker = PointerWalker(p) if pointer else Walker(p)
        m.submodules.segments = segments = SegmentQueues(p)
        m.submodules.source = source = Source(p)
        m.submodules.buffer_reader = reader = BufferReader(p)
        m.submodules.realigner = realigner = Realigner(p)
        m.submodules.destination = destination = Destination(p)

        desc, load = register.desc, register.desc.load
        accept = self.desc.valid & ~self.busy
        started = Signal()
        m.d.sync += started.eq(accept)
        m.d.comb += [self.desc.ready.eq(~self.busy), register.offer.eq(self.desc.payload), register.take.eq(accept),
                     walker.desc.eq(desc), walker.start.eq(started), realigner.fill_byte.eq(desc.fill),
                     segments.load.eq(load), segments.run_bytes.eq(desc.run_bytes), source.load.eq(load),
                     source.busy.eq(self.busy), destination.load.eq(load)]
        if pointer:  # the walker's pointers take the base fields: the register holds none of them
            m.d.comb += [getattr(walker.bases, name).eq(getattr(self.desc.payload, name)) for name in BASES]
            m.d.comb += [walker.load_bases.eq(accept), walker.hold.eq(segments.hold)]
        with m.If(accept):
            m.d.sync += [self.busy.eq(1), self.busy_cycles.eq(0), self.stall_cycles.eq(0)]

        port, rd_data, wr = self.port, self.port.rd_data, self.port.wr
        for sender, receiver in ((walker.seg, segments.segments), (segments.source, source.segment),
                                 (segments.commands, realigner.cmd), (source.buf_req, reader.req),
                                 (reader.chunks, source.chunks), (source.words, realigner.src),
                                 (realigner.dst, destination.words), (wiring.flipped(port.rd_req), source.rd_req),
                                 (wiring.flipped(rd_data), source.rd_data), (wiring.flipped(wr), destination.wr),
                                 (wiring.flipped(self.buf_rd), reader.buf_rd),
                                 (wiring.flipped(self.buf_wr), destination.buf_wr)):
            wiring.connect(m, sender, receiver)

        # Completion and counters.
        queued = segments.queued
        working = (started | walker.busy | queued | source.some
                   | reader.reading | reader.chunks.valid | realigner.busy | wr.valid)
        waiting = (rd_data.ready & ~rd_data.valid) | (wr.valid & ~wr.ready)
        if pointer:  # `done` a register: set as the work ends (no stage works in the next cycle)
            offered = walker.seg.valid & walker.seg.ready
            wr_next = Mux(destination.free, ~load & realigner.dst.valid, wr.valid)
            # the flags read now each imply work in the next cycle (a run waiting or queued, source
            # words the realigner still needs); with nothing queued the realigner takes no command
            ends = (~walker.busy_next & ~queued & ~offered & ~source.some & ~reader.reading & ~reader.chunks.valid
                    & ~wr_next & realigner.cmd.ready)
            m.d.sync += self.done.eq(self.busy & working & ends)
        else:
            m.d.comb += self.done.eq(self.busy & ~working)
        with m.If(self.busy):
            m.d.sync += [self.busy_cycles.eq(self.busy_cycles + 1), self.stall_cycles.eq(self.stall_cycles + waiting)]
        with m.If(self.done):
            m.d.sync += self.busy.eq(0)
        return m
