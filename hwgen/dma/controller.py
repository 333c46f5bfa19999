"""The DMA controller: moves one descriptor's bytes between the memory port and a buffer bank.

A descriptor describes `dims` nested loops (up to 4 outer dimensions, innermost first) around a
*run* of `run_bytes` bytes that is contiguous in DRAM and in the buffer. Outer dimension `d`
advances the DRAM address by `dram_stride`, the buffer address by `buf_stride` (both bytes,
modulo the address width, so two's complement gives negative strides) and the virtual image
coordinates by `(dy, dx)`. Inside a run, `x` advances by `run_dx` (0 or 1) per byte, `y` stays.
A byte whose `(y, x)` lies outside `[0, height) x [0, width)` is padding: a load writes the fill
byte to the buffer and does not read DRAM; a store skips it.

Pipeline: the walker splits each run into segments (fill prefix, data, fill suffix); the
segments go to two queues: one drives the source (DRAM read requests, or buffer reads), the
other the realigner, which shifts source words (aligned in the source) into destination words
(aligned in the destination) with byte masks; DRAM write beats leave through a register. Each
moves up to one bus word per cycle. The `pointer` walker (`template.dma: shared`) emits whole
runs (its descriptors have `run_dx` 0) and hands the data runs straight to the source side,
which takes the next as it finishes one (a run it does not take at once waits in a skid
register, `run_skid`, with `segment_fifos: memory`): only the realigner's queue remains, its entries
without the run length (the descriptor's `run_bytes`), in a `BlockRamQueue`.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Shape, Signal, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import Memory, ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from hwgen.dma.descriptor import OUTER_DIMS, Descriptor, DescriptorError, Dim, DmaParams
from hwgen.dma.walker import BASES, PointerWalker, Walker
from hwgen.memory_port import MemoryPort
from hwgen.pe import register

__all__ = ["OUTER_DIMS", "BlockRamQueue", "Descriptor", "DescriptorError", "Dim", "DmaParams", "Dma", "PointerWalker",
           "Realigner", "Walker"]

def realign_command_layout(params: DmaParams) -> data.StructLayout:
    """A realigner command: `n` bytes from byte `src_off` of the first source word to `dst`."""
    return data.StructLayout({"src_off": params.lb, "dst": params.dst_width, "n": params.count_width, "fill": 1})


def segment_queue_layouts(params: DmaParams) -> tuple[data.StructLayout, data.StructLayout]:
    """The entries of the walker's two segment queues (source side, realigner side): with
    `narrow_queues` (source address, n) and the realigner's command, without `n` behind the
    `pointer` walker (every segment is a whole run: `n` is the descriptor's `run_bytes`);
    otherwise whole segments."""
    if params.narrow_queues:
        source = {"addr": params.dst_width, "n": params.count_width}
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


def run_skid(m: Module, walker: PointerWalker, queue: BlockRamQueue, source_entry, src_take) -> tuple:
    """A register between the `pointer` walker and the DMA's source side, so that the walker's
    advance waits for no handshake of the source side (nor of the memory port behind it): the
    walker offers a run while the register is empty and the realign `queue` has room; the
    source side takes a data run straight if it takes its next run (`src_take`), else the
    register keeps the run's `source_entry` and the walker holds until the source side takes it
    from there. The queue stores every run's entry as the walker offers it, but a data run's
    becomes an entry as the source side takes the run (`BlockRamQueue.w_commit`): every run
    moves in the cycle it would without the register. Returns the source entry the source side
    sees, whether it has one and whether the register is full."""
    offer = walker.seg
    offered = offer.valid & offer.ready  # never while `full`: the walker holds
    full = Signal(name="skid_full")
    kept = Signal.like(source_entry, name="skid")
    has_run = Signal()
    m.d.comb += [walker.hold.eq(full), offer.ready.eq(queue.w_rdy), has_run.eq(full | (offered & ~offer.payload.fill)),
                 queue.w_en.eq(offered), queue.w_commit.eq((has_run & src_take) | (offered & offer.payload.fill))]
    with m.If(~full):
        m.d.sync += kept.eq(source_entry)
    m.d.sync += full.eq(has_run & ~src_take)
    return Mux(full, kept, source_entry), has_run, full


class Realigner(wiring.Component):
    """Shifts a byte range from source-aligned words to destination-aligned words with masks.

    A command moves `n` bytes starting at byte `src_off` of the first source word to destination
    byte address `dst`; it consumes `ceil((src_off + n) / B)` source words (none for a fill
    command, whose bytes are `fill_byte`) and emits `ceil((dst % B + n) / B)` destination words,
    `last` on the final one. Up to one word per cycle in each direction. On a one-byte bus
    every source word pairs with a destination word, whose one byte is always enabled, so the
    source count and the masks' state are left out.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        B = params.bus_bytes
        super().__init__({
            "cmd": In(stream.Signature(realign_command_layout(params))),
            "src": In(stream.Signature(8 * B)),
            "dst": Out(stream.Signature(data.StructLayout({
                "addr": params.dst_width, "data": 8 * B, "mask": B, "last": 1}))),
            "fill_byte": In(8),
            "busy": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        B, lb = p.bus_bytes, p.lb
        words = p.count_width + 1
        in_left, out_left = Signal(words, name="in_left"), Signal(words, name="out_left")
        in_next, out_next = Signal(words), Signal(words)  # their values in the next cycle
        m.d.comb += [in_next.eq(in_left), out_next.eq(out_left)]
        m.d.sync += [in_left.eq(in_next), out_left.eq(out_next)]
        in_any, out_last = in_left != 0, out_left == 1
        if p.timing_registers:  # the tests in flip-flops, no wide comparison before the handshakes
            in_any, out_last = (register(m, test, name, reset_less=False)
                                for test, name in ((in_next != 0, "in_any"), (out_next == 1, "out_last")))
        skip = Signal()  # the first source word completes no destination word
        shift = Signal(lb)  # (dst - src) mod B: destination lane of source lane 0
        fill = Signal()
        first = Signal()
        start = Signal(lb)  # first enabled lane of the first destination word
        remaining = Signal(words + lb)  # dst % B + n - (emitted words) * B
        addr = Signal(p.dst_width)
        prev = Signal(8 * B)

        bytewise = B == 1
        need_in = ~fill if bytewise else in_any
        emit = ~skip
        src_ok = ~need_in | self.src.valid
        dst_ok = ~emit | self.dst.ready
        step = self.busy & src_ok & dst_ok
        final = step & emit & out_last
        m.d.comb += [
            self.src.ready.eq(self.busy & need_in & dst_ok),
            self.dst.valid.eq(self.busy & emit & src_ok),
            self.dst.payload.addr.eq(addr),
            self.dst.payload.last.eq(out_last),
            self.cmd.ready.eq(~self.busy | final),
        ]
        window = (Cat(prev, self.src.payload) << (shift * 8))[8 * B:16 * B]
        m.d.comb += self.dst.payload.data.eq(Mux(fill, Cat(*[self.fill_byte] * B), window))
        for lane in range(B):
            m.d.comb += self.dst.payload.mask[lane].eq(1 if bytewise else (~first | (lane >= start)) & (lane < remaining))

        with m.If(step):
            if not bytewise:
                with m.If(need_in):
                    m.d.comb += in_next.eq(in_left - 1)
                    m.d.sync += prev.eq(self.src.payload)
            with m.If(emit):
                m.d.comb += out_next.eq(out_left - 1)
                m.d.sync += addr.eq(addr + B)
                if not bytewise:
                    m.d.sync += [remaining.eq(remaining - B), first.eq(0)]
            with m.Else():
                m.d.sync += skip.eq(0)
        with m.If(final):
            m.d.sync += self.busy.eq(0)
        cmd = self.cmd.payload
        with m.If(self.cmd.valid & self.cmd.ready):
            dst_off = cmd.dst[:lb]
            m.d.comb += out_next.eq((dst_off + cmd.n + B - 1) >> lb)
            m.d.sync += [
                self.busy.eq(1),
                fill.eq(cmd.fill),
                skip.eq(~cmd.fill & (cmd.src_off > dst_off)),
                shift.eq(dst_off - cmd.src_off),
                addr.eq(cmd.dst >> lb << lb),
            ]
            if not bytewise:
                m.d.comb += in_next.eq(Mux(cmd.fill, 0, (cmd.src_off + cmd.n + B - 1) >> lb))
                m.d.sync += [first.eq(1), start.eq(dst_off), remaining.eq(dst_off + cmd.n)]
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
        word_addr = ceil_log2(params.buf_depth)
        word = unsigned(8 * params.buf_word_bytes)
        super().__init__({
            "desc": In(stream.Signature(params.descriptor_layout())),
            "port": Out(MemoryPort(params.bus_bytes, params.burst_beats, params.addr_width)),
            "buf_wr": In(WritePort.Signature(addr_width=word_addr, shape=word, granularity=8)),
            "buf_rd": In(ReadPort.Signature(addr_width=word_addr, shape=word)),
            "busy": Out(1),
            "done": Out(1),
            "busy_cycles": Out(32),
            "stall_cycles": Out(32),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        B, lb = p.bus_bytes, p.lb
        lw = exact_log2(p.buf_word_bytes)
        pointer = p.walker == "pointer"
        m.submodules.walker = walker = PointerWalker(p) if pointer else Walker(p)
        m.submodules.realigner = realigner = Realigner(p)
        source_layout, realign_layout = segment_queue_layouts(p)
        # A FIFO read asynchronously cannot map to block RAM, so `registers` puts it in flip-flops
        # (and lets a segment through a cycle earlier).
        queue = fifo.SyncFIFO if p.segment_fifos == "registers" else BlockRamQueue if pointer else fifo.SyncFIFOBuffered
        if not pointer:  # the `pointer` walker's runs go straight to the source side
            m.submodules.to_source = to_source = queue(width=source_layout.size, depth=p.queue_depth)
        m.submodules.to_realign = to_realign = queue(width=realign_layout.size, depth=p.queue_depth)

        desc = Signal(p.descriptor_layout())
        load = desc.load
        accept = self.desc.valid & ~self.busy
        started = Signal()
        m.d.sync += started.eq(accept)
        m.d.comb += [self.desc.ready.eq(~self.busy), walker.desc.eq(desc), walker.start.eq(started),
                     realigner.fill_byte.eq(desc.fill)]
        if pointer:  # the walker's pointers take the base fields: `desc` holds none of them
            m.d.comb += [getattr(walker.bases, name).eq(getattr(self.desc.payload, name)) for name in BASES]
            m.d.comb += walker.load_bases.eq(accept)
        if p.entry_held:  # the source holds the other fields until `done`: `desc` reads them through
            held_load = Signal()
            m.d.comb += [desc.eq(self.desc.payload), desc.load.eq(held_load)]
            held = [(held_load, self.desc.payload.load)]
        else:
            held = [(getattr(desc, name), getattr(self.desc.payload, name)) for name, _ in desc.shape()
                    if not pointer or name not in BASES]
        with m.If(accept):
            m.d.sync += [target.eq(source) for target, source in held]
            m.d.sync += [self.busy.eq(1), self.busy_cycles.eq(0), self.stall_cycles.eq(0)]

        # Walker -> the realign queue, and its data segments to the source side: through the
        # source queue, or (`pointer`) straight, each taken as the source side takes its next
        # (through a skid register, `run_skid`, with the block-RAM realign queue).
        seg = walker.seg.payload
        data_seg = ~seg.fill
        src_take = Signal()  # the source side takes its next segment (if there is one)
        if p.narrow_queues:
            source_entry, realign_entry = Signal(source_layout), Signal(realign_layout)
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
            src_seg, src_valid, skid_full = run_skid(m, walker, to_realign, source_entry, src_take)
            src_seg, src_n = source_layout(src_seg), desc.run_bytes
        elif pointer:
            m.d.comb += [walker.seg.ready.eq(to_realign.w_rdy & (src_take | ~data_seg)),
                         to_realign.w_en.eq(walker.seg.valid & walker.seg.ready)]
            src_seg, src_valid = source_entry, walker.seg.valid & data_seg & to_realign.w_rdy
            src_n = desc.run_bytes
        else:
            m.d.comb += [to_realign.w_en.eq(walker.seg.valid & walker.seg.ready),
                         walker.seg.ready.eq(to_realign.w_rdy & (to_source.w_rdy | ~data_seg)),
                         to_source.w_data.eq(source_entry),
                         to_source.w_en.eq(walker.seg.valid & walker.seg.ready & data_seg),
                         to_source.r_en.eq(src_take)]
            src_seg, src_valid = source_layout(to_source.r_data), to_source.r_rdy
            src_n = src_seg.n

        # Source side: one segment at a time, the next one taken as the current one finishes.
        # Each move takes `src_beats` words: loads read requests in bursts that stay inside a
        # burst block, stores one word. `src_beats` and the flags are registers, set up with
        # the words left, so that no count comparison lies on the handshakes with the port
        # and the walker.
        src_addr = Signal(p.dst_width)  # bus-aligned DRAM address (loads) or buffer chunk address (stores)
        src_left = Signal(p.count_width + 1)  # bus words left in the segment
        src_beats = Signal(range(p.burst_beats + 1))  # words of the next move: min(src_left, its block's)
        src_some = Signal()  # src_left != 0
        src_final = Signal()  # src_some and src_left == src_beats: the next move ends the segment
        src_first = src_seg.addr if p.narrow_queues else Mux(load, src_seg.dram, src_seg.buf)

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

        req = self.port.rd_req
        m.d.comb += [req.valid.eq(self.busy & load & src_some), req.payload.addr.eq(src_addr),
                     req.payload.beats.eq(src_beats)]

        # Stores: buffer reads through two stages: the read port's output (held by its enable),
        # then a register of the whole word, so the block RAM's output reaches no lane selection.
        read_valid, word_valid = Signal(), Signal()
        read_lane, word_lane = Signal(range(p.buf_word_bytes // B)), Signal(range(p.buf_word_bytes // B))
        word = Signal.like(self.buf_rd.data)
        lane_of = (src_addr >> lb)[:lw - lb]
        word_free = ~word_valid | realigner.src.ready
        stage_free = ~read_valid | word_free
        m.d.comb += [self.buf_rd.addr.eq(src_addr >> lw), self.buf_rd.en.eq(stage_free)]
        with m.If(stage_free):
            m.d.sync += [read_valid.eq(self.busy & ~load & src_some), read_lane.eq(lane_of)]
        with m.If(word_free):
            m.d.sync += [word_valid.eq(read_valid), word.eq(self.buf_rd.data), word_lane.eq(read_lane)]

        # The source side's handshake (`go`: its move goes ahead) selects last among the updates,
        # each decided from registers; `src_final` implies `src_some` and `busy`.
        go = Mux(load, req.ready, stage_free)
        m.d.comb += src_take.eq(~src_some | (src_final & go))
        with m.If(go):
            with m.If(src_valid & (~src_some | src_final)):
                m.d.sync += take
            with m.Elif(self.busy & src_some):
                m.d.sync += step
        with m.Elif(src_valid & ~src_some):
            m.d.sync += take

        # Realigner: commands from the realign queue, data from DRAM (loads) or the buffer (stores).
        rel_seg = realign_layout(to_realign.r_data)
        cmd = realigner.cmd
        m.d.comb += [cmd.valid.eq(to_realign.r_rdy), to_realign.r_en.eq(cmd.ready)]
        if p.narrow_queues:
            m.d.comb += [cmd.payload.src_off.eq(rel_seg.src_off), cmd.payload.dst.eq(rel_seg.dst),
                         cmd.payload.n.eq(desc.run_bytes if pointer else rel_seg.n), cmd.payload.fill.eq(rel_seg.fill)]
        else:
            m.d.comb += [cmd.payload.src_off.eq(Mux(load, rel_seg.dram, rel_seg.buf)[:lb]),
                         cmd.payload.dst.eq(Mux(load, rel_seg.buf, rel_seg.dram)),
                         cmd.payload.n.eq(rel_seg.n), cmd.payload.fill.eq(rel_seg.fill)]
        rd_data = self.port.rd_data
        buffer_chunk = word.word_select(word_lane, 8 * B) if lw > lb else word
        m.d.comb += [
            realigner.src.valid.eq(Mux(load, rd_data.valid, word_valid)),
            realigner.src.payload.eq(Mux(load, rd_data.payload.data, buffer_chunk)),
            rd_data.ready.eq(load & realigner.src.ready),
        ]

        # Destination: buffer writes (loads, never stalled) or DRAM write beats (stores), which
        # leave through a register (the data comes from a buffer's block RAM through the
        # realigner): it takes a beat whenever it is empty or its beat is accepted.
        out, wr = realigner.dst, self.port.wr
        out_lane = (out.payload.addr >> lb)[:lw - lb]
        block_end = (out.payload.addr >> lb)[:exact_log2(p.burst_beats)] == p.burst_beats - 1
        beat_free = ~wr.valid | wr.ready
        m.d.comb += out.ready.eq(load | beat_free)
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

        # Completion and counters.
        queued = (to_realign.level != 0) | (skid_full if pointer else to_source.level != 0)
        working = (started | walker.busy | queued | src_some
                   | read_valid | word_valid | realigner.busy | wr.valid)
        waiting = (rd_data.ready & ~rd_data.valid) | (wr.valid & ~wr.ready)
        if pointer:  # `done` a register: set as the work ends (no stage works in the next cycle)
            offered = walker.seg.valid & walker.seg.ready
            wr_next = Mux(beat_free, ~load & out.valid, wr.valid)
            # the flags read now each imply work in the next cycle (a run waiting or queued, source
            # words the realigner still needs); with nothing queued the realigner takes no command
            ends = (~walker.busy_next & ~queued & ~offered & ~src_some & ~read_valid & ~word_valid & ~wr_next
                    & realigner.cmd.ready)
            m.d.sync += self.done.eq(self.busy & working & ends)
        else:
            m.d.comb += self.done.eq(self.busy & ~working)
        with m.If(self.busy):
            m.d.sync += [self.busy_cycles.eq(self.busy_cycles + 1), self.stall_cycles.eq(self.stall_cycles + waiting)]
        with m.If(self.done):
            m.d.sync += self.busy.eq(0)
        return m
