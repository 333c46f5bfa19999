"""The DMA's segment queues: the walker's segments on their way to the source side and to the
realigner, and what each side's entries hold."""
from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Shape, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hwgen.dma.descriptor import DmaParams
from hwgen.dma.queue import BlockRamQueue
from hwgen.dma.realign import realign_command_layout
from hwgen.config import SegmentFifos


def source_layout(params: DmaParams) -> data.StructLayout:
    """A segment as the source side takes it: its first source byte address and its bytes."""
    return data.StructLayout({"addr": params.dst_width, "n": params.count_width})


def segment_queue_layouts(params: DmaParams) -> tuple[data.StructLayout, data.StructLayout]:
    """The entries of the walker's two segment queues (source side, realigner side): with
    `narrow_queues` (source address, n) and the realigner's command, without `n` behind the
    `pointer` walker (every segment is a whole run: `n` is the descriptor's `run_bytes`);
    otherwise whole segments."""
    if params.narrow_queues:
        source = dict(source_layout(params).members)
        realign = dict(realign_command_layout(params).members)
        if params.walker == "pointer":
            del source["n"], realign["n"]
        return data.StructLayout(source), data.StructLayout(realign)
    return params.segment_layout(), params.segment_layout()


def segment_queue_memories(params: DmaParams) -> list[tuple[int, int]]:
    """(bits, words) of the memory behind each of the DMA's segment queues in `memory`
    (`SyncFIFOBuffered` keeps all but one entry in its memory, `BlockRamQueue` in a power-of-two
    number of words); the `pointer` DMA has only the realigner's queue."""
    source, realign = segment_queue_layouts(params)
    if params.walker == "pointer":
        return [(Shape.cast(realign).width, 1 << ceil_log2(params.queue_depth - 1))]
    return [(Shape.cast(layout).width, params.queue_depth - 1) for layout in (source, realign)]


class RunSkid(wiring.Component):
    """A register between the `pointer` walker and the DMA's source side, so that the walker's
    advance waits for no handshake of the source side (nor of the memory port behind it): the
    walker offers a run while the register is empty and the realign queue has room; the source
    side takes a data run straight if it takes its next run, else the register keeps the run's
    source entry and the walker holds until the source side takes it from there. The queue
    stores every run's entry as the walker offers it, but a data run's becomes an entry as the
    source side takes the run (`BlockRamQueue.w_commit`): every run moves in the cycle it would
    without the register.

    - `offer`: the walker's runs;
    - `entry`: the offered run's source-side entry;
    - `full`: the register holds a run (the walker holds);
    - `room`, `store`, `commit`: the realign queue's `w_rdy`, `w_en` and `w_commit`;
    - `source`: the run the source side sees; `ready`: it takes its next run.
    """

    def __init__(self, params: DmaParams):
        entry, _ = segment_queue_layouts(params)
        super().__init__({
            "offer": In(stream.Signature(params.segment_layout())),
            "entry": In(entry),
            "full": Out(1),
            "room": In(1), "store": Out(1), "commit": Out(1),
            "source": Out(stream.Signature(entry)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        offer, full, has_run, src_take = self.offer, self.full, self.source.valid, self.source.ready
        offered = offer.valid & offer.ready  # never while `full`: the walker holds
        kept = Signal.like(self.entry, name="skid")
        m.d.comb += [offer.ready.eq(self.room), has_run.eq(full | (offered & ~offer.payload.fill)),
                     self.store.eq(offered), self.commit.eq((has_run & src_take) | (offered & offer.payload.fill)),
                     self.source.payload.eq(Mux(full, kept, self.entry))]
        with m.If(~full):
            m.d.sync += kept.eq(self.entry)
        m.d.sync += full.eq(has_run & ~src_take)
        return m


class SegmentQueues(wiring.Component):
    """The walker's segments to the source side and to the realigner. Every segment becomes a
    realigner command through the realign queue; a data segment goes to the source side through
    the source queue, or behind the `pointer` walker straight, taken as the source side takes its
    next (through a `RunSkid` with the block-RAM realign queue). With `narrow_queues` each queue
    holds only what its side reads (`segment_queue_layouts`).

    - `segments`: the walker's segments;
    - `hold`: the `pointer` walker holds (its run waits in the skid register);
    - `load`: the descriptor is a load; `run_bytes`: its run (every `pointer` segment's bytes);
    - `source`: the source side's segments; `ready`: it takes its next one;
    - `commands`: the realigner's commands;
    - `queued`: a segment waits in a queue or in the skid register.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        super().__init__({
            "segments": In(stream.Signature(params.segment_layout())),
            "hold": Out(1),
            "load": In(1),
            "run_bytes": In(params.count_width),
            "source": Out(stream.Signature(source_layout(params))),
            "commands": Out(stream.Signature(realign_command_layout(params))),
            "queued": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        lb, load = p.lb, self.load
        pointer = p.walker == "pointer"
        entry_layout, command_layout = segment_queue_layouts(p)
        # A FIFO read asynchronously cannot map to block RAM, so `registers` puts it in flip-flops
        # (and lets a segment through a cycle earlier).
        registers = p.segment_fifos == SegmentFifos.REGISTERS
        queue = fifo.SyncFIFO if registers else BlockRamQueue if pointer else fifo.SyncFIFOBuffered
        if not pointer:  # the `pointer` walker's runs go straight to the source side
            m.submodules.to_source = to_source = queue(width=entry_layout.size, depth=p.queue_depth)
        m.submodules.to_realign = to_realign = queue(width=command_layout.size, depth=p.queue_depth)

        walker, seg, src_take = self.segments, self.segments.payload, self.source.ready
        data_seg = ~seg.fill
        if p.narrow_queues:
            source_entry, realign_entry = Signal(entry_layout), Signal(command_layout)
            m.d.comb += [source_entry.addr.eq(Mux(load, seg.dram, seg.buf)),
                         realign_entry.src_off.eq(Mux(load, seg.dram, seg.buf)[:lb]),
                         realign_entry.dst.eq(Mux(load, seg.buf, seg.dram)), realign_entry.fill.eq(seg.fill)]
            if not pointer:
                m.d.comb += [source_entry.n.eq(seg.n), realign_entry.n.eq(seg.n)]
        else:
            source_entry = realign_entry = seg
        m.d.comb += to_realign.w_data.eq(realign_entry)
        skid_full = Const(0)
        if pointer and queue is BlockRamQueue:
            m.submodules.skid = skid = RunSkid(p)
            wiring.connect(m, wiring.flipped(walker), skid.offer)
            m.d.comb += [skid.entry.eq(source_entry), skid.room.eq(to_realign.w_rdy), skid.source.ready.eq(src_take),
                         to_realign.w_en.eq(skid.store), to_realign.w_commit.eq(skid.commit), self.hold.eq(skid.full)]
            src_seg, src_valid, skid_full = skid.source.payload, skid.source.valid, skid.full
        elif pointer:
            m.d.comb += [walker.ready.eq(to_realign.w_rdy & (src_take | ~data_seg)),
                         to_realign.w_en.eq(walker.valid & walker.ready)]
            src_seg, src_valid = source_entry, walker.valid & data_seg & to_realign.w_rdy
        else:
            m.d.comb += [to_realign.w_en.eq(walker.valid & walker.ready),
                         walker.ready.eq(to_realign.w_rdy & (to_source.w_rdy | ~data_seg)),
                         to_source.w_data.eq(source_entry),
                         to_source.w_en.eq(walker.valid & walker.ready & data_seg),
                         to_source.r_en.eq(src_take)]
            src_seg, src_valid = entry_layout(to_source.r_data), to_source.r_rdy
        src_first = src_seg.addr if p.narrow_queues else Mux(load, src_seg.dram, src_seg.buf)
        m.d.comb += [self.source.valid.eq(src_valid), self.source.payload.addr.eq(src_first),
                     self.source.payload.n.eq(self.run_bytes if pointer else src_seg.n)]

        rel_seg = command_layout(to_realign.r_data)
        cmd = self.commands
        m.d.comb += [cmd.valid.eq(to_realign.r_rdy), to_realign.r_en.eq(cmd.ready)]
        if p.narrow_queues:
            m.d.comb += [cmd.payload.src_off.eq(rel_seg.src_off), cmd.payload.dst.eq(rel_seg.dst),
                         cmd.payload.n.eq(self.run_bytes if pointer else rel_seg.n), cmd.payload.fill.eq(rel_seg.fill)]
        else:
            m.d.comb += [cmd.payload.src_off.eq(Mux(load, rel_seg.dram, rel_seg.buf)[:lb]),
                         cmd.payload.dst.eq(Mux(load, rel_seg.buf, rel_seg.dram)),
                         cmd.payload.n.eq(rel_seg.n), cmd.payload.fill.eq(rel_seg.fill)]
        m.d.comb += self.queued.eq((to_realign.level != 0) | (skid_full if pointer else to_source.level != 0))
        return m
