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
moves up to one bus word per cycle.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from hwgen.memory_port import MemoryPort

OUTER_DIMS = 4


@dataclass(frozen=True)
class Dim:
    """One outer loop of a descriptor."""

    count: int
    dram_stride: int = 0
    buf_stride: int = 0
    dy: int = 0
    dx: int = 0


@dataclass(frozen=True)
class Descriptor:
    """A DMA transfer (see the module docstring); `dims` innermost first, at most `OUTER_DIMS`
    (missing ones have count 1). Counts are >= 1. The default bounds make nothing padding.
    """

    load: bool
    dram_addr: int
    buf_addr: int
    run_bytes: int
    dims: tuple[Dim, ...] = ()
    run_dx: int = 0
    y0: int = 0
    x0: int = 0
    height: int = 1 << 16
    width: int = 1 << 16
    fill: int = 0

    def outer(self) -> tuple[Dim, ...]:
        """The outer dimensions padded to `OUTER_DIMS` with count-1 loops."""
        assert len(self.dims) <= OUTER_DIMS and self.run_dx in (0, 1) and self.run_bytes >= 1
        return (*self.dims, *[Dim(1)] * (OUTER_DIMS - len(self.dims)))


@dataclass(frozen=True)
class DmaParams:
    """Widths of a DMA: bus and buffer words in bytes (powers of two, `bus_bytes <= buf_word_bytes`)."""

    bus_bytes: int
    burst_beats: int
    buf_word_bytes: int
    buf_depth: int
    addr_width: int = 32
    count_width: int = 16
    coord_width: int = 20
    queue_depth: int = 8
    segment_fifos: str = "memory"  # `memory`: block RAM; `registers`: flip-flops (asynchronous read)

    def __post_init__(self) -> None:
        exact_log2(self.buf_word_bytes), exact_log2(self.burst_beats)  # raise unless powers of two
        assert self.bus_bytes <= self.buf_word_bytes

    @property
    def lb(self) -> int:
        """log2 of the bus width in bytes."""
        return exact_log2(self.bus_bytes)

    @property
    def buf_addr_width(self) -> int:
        """Bits of a buffer byte address."""
        return ceil_log2(self.buf_depth * self.buf_word_bytes)

    @property
    def dst_width(self) -> int:
        """Bits of a realigner destination address (DRAM or buffer)."""
        return max(self.addr_width, self.buf_addr_width)

    def descriptor_layout(self) -> data.StructLayout:
        """The descriptor: field widths from these parameters."""
        coord = signed(self.coord_width)
        dim = data.StructLayout({"count": self.count_width, "dram_stride": self.addr_width,
                                 "buf_stride": self.buf_addr_width, "dy": coord, "dx": coord})
        return data.StructLayout({
            "load": 1, "dram_addr": self.addr_width, "buf_addr": self.buf_addr_width,
            "run_bytes": self.count_width, "run_dx": 1, "dims": data.ArrayLayout(dim, OUTER_DIMS),
            "y0": coord, "x0": coord, "height": unsigned(self.coord_width - 1),
            "width": unsigned(self.coord_width - 1), "fill": 8,
        })

    def encode(self, desc: Descriptor) -> dict:
        """The value of a `descriptor_layout` signal (for `ctx.set`); addresses wrap to their widths."""
        dram, buf = (1 << self.addr_width) - 1, (1 << self.buf_addr_width) - 1
        dims = [{"count": d.count, "dram_stride": d.dram_stride & dram, "buf_stride": d.buf_stride & buf,
                 "dy": d.dy, "dx": d.dx} for d in desc.outer()]
        return {"load": int(desc.load), "dram_addr": desc.dram_addr & dram, "buf_addr": desc.buf_addr & buf,
                "run_bytes": desc.run_bytes, "run_dx": desc.run_dx, "dims": dims, "y0": desc.y0, "x0": desc.x0,
                "height": desc.height, "width": desc.width, "fill": desc.fill & 0xFF}

    def segment_layout(self) -> data.StructLayout:
        """A piece of a run: `n` bytes at `dram`/`buf`, data or fill."""
        return data.StructLayout({"fill": 1, "dram": self.addr_width, "buf": self.buf_addr_width, "n": self.count_width})


class Walker(wiring.Component):
    """Walks a descriptor's loops and splits each run into up to three segments.

    Two stages: the loop stage takes the next run's addresses and in-bounds range `[lo, hi)`
    into a run register; the split stage emits that run's segments one per cycle: fill prefix,
    data, fill suffix (empty ones skipped; for stores fill segments are skipped too), or spends
    one cycle on a run without any. The loop stage refills the register in the cycle the split
    stage finishes, so runs follow each other without a gap; the first segment leaves two
    cycles after `start` (one cycle) loads the loop state from `desc`.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        super().__init__({
            "desc": In(params.descriptor_layout()),
            "start": In(1),
            "seg": Out(stream.Signature(params.segment_layout())),
            "busy": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p, desc = self.params, self.desc
        dims = desc.dims
        idx = [Signal(p.count_width, name=f"idx{d}") for d in range(OUTER_DIMS)]
        # Pointer per level: the value at the start of the current iteration of that level.
        pointers = {
            "dram": ([Signal(p.addr_width, name=f"dram{d}") for d in range(OUTER_DIMS)], desc.dram_addr, "dram_stride"),
            "buf": ([Signal(p.buf_addr_width, name=f"buf{d}") for d in range(OUTER_DIMS)], desc.buf_addr, "buf_stride"),
            "y": ([Signal(signed(p.coord_width), name=f"y{d}") for d in range(OUTER_DIMS)], desc.y0, "dy"),
            "x": ([Signal(signed(p.coord_width), name=f"x{d}") for d in range(OUTER_DIMS)], desc.x0, "dx"),
        }
        a, b, y, x = (pointers[k][0][0] for k in ("dram", "buf", "y", "x"))
        walking = Signal()  # the loop stage has runs left

        # ---- loop stage: in-bounds bytes [lo, hi) of the run at the pointers
        n = desc.run_bytes
        lo, hi = Signal(p.count_width), Signal(p.count_width)
        y_in = (y >= 0) & (y < desc.height)
        x_in = (x >= 0) & (x < desc.width)

        def clamp(v):
            return Mux(v < 0, 0, Mux(v > n, n, v))

        with m.If(~y_in | (~desc.run_dx & ~x_in)):
            m.d.comb += [lo.eq(n), hi.eq(n)]
        with m.Elif(desc.run_dx):
            m.d.comb += [lo.eq(clamp(-x)), hi.eq(clamp(desc.width - x))]
        with m.Else():
            m.d.comb += [lo.eq(0), hi.eq(n)]
        lengths = [lo, hi - lo, n - hi]

        # ---- run register and split stage
        run = Signal(data.StructLayout({"dram": p.addr_width, "buf": p.buf_addr_width, "lo": p.count_width,
                                        "hi": p.count_width, "present": 3}))
        held = Signal()  # `run` holds a run whose segments are not all emitted
        seg_state = Signal(range(3))
        starts = [Const(0, p.count_width), run.lo, run.hi]
        run_lengths = [run.lo, run.hi - run.lo, n - run.hi]
        present = [run.present[k] & (seg_state <= k) for k in range(3)]
        finish = Signal()  # the split stage is done with `run` this cycle
        # Emit the first present segment; finish after the last present one.
        for k in range(3):
            first = present[k] & ~Cat(*present[:k]).any()
            later = Cat(*present[k + 1:]).any() if k < 2 else Const(0)
            with m.If(held & first):
                seg = self.seg.payload
                m.d.comb += [self.seg.valid.eq(1), seg.fill.eq(k != 1), seg.dram.eq(run.dram + starts[k]),
                             seg.buf.eq(run.buf + starts[k]), seg.n.eq(run_lengths[k])]
                with m.If(self.seg.ready):
                    m.d.sync += seg_state.eq(k + 1)
                    m.d.comb += finish.eq(~later)
        with m.If(held & ~Cat(*present).any()):
            m.d.comb += finish.eq(1)
        with m.If(finish):
            m.d.sync += [seg_state.eq(0), held.eq(0)]

        take = walking & (~held | finish)
        last = [idx[d] + 1 >= dims[d].count for d in range(OUTER_DIMS)]
        with m.If(take):
            m.d.sync += [held.eq(1), run.dram.eq(a), run.buf.eq(b), run.lo.eq(lo), run.hi.eq(hi),
                         run.present.eq(Cat(*((lengths[k] != 0) & (desc.load | (k == 1)) for k in range(3))))]
            for j in range(OUTER_DIMS):
                with m.If(~last[j] & Cat(*last[:j]).all()):
                    m.d.sync += idx[j].eq(idx[j] + 1)
                    m.d.sync += [idx[k].eq(0) for k in range(j)]
                    for levels, _, stride in pointers.values():
                        step = levels[j] + dims[j][stride]
                        m.d.sync += [levels[k].eq(step) for k in range(j + 1)]
            with m.If(Cat(*last).all()):
                m.d.sync += walking.eq(0)
        with m.If(self.start):
            m.d.sync += [walking.eq(1), held.eq(0), seg_state.eq(0), *[i.eq(0) for i in idx]]
            m.d.sync += [level.eq(base) for levels, base, _ in pointers.values() for level in levels]
        m.d.comb += self.busy.eq(walking | held)
        return m


class Realigner(wiring.Component):
    """Shifts a byte range from source-aligned words to destination-aligned words with masks.

    A command moves `n` bytes starting at byte `src_off` of the first source word to destination
    byte address `dst`; it consumes `ceil((src_off + n) / B)` source words (none for a fill
    command, whose bytes are `fill_byte`) and emits `ceil((dst % B + n) / B)` destination words,
    `last` on the final one. Up to one word per cycle in each direction.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        B, lb = params.bus_bytes, params.lb
        super().__init__({
            "cmd": In(stream.Signature(data.StructLayout({
                "src_off": lb, "dst": params.dst_width, "n": params.count_width, "fill": 1}))),
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
        in_left, out_left = Signal(words), Signal(words)
        skip = Signal()  # the first source word completes no destination word
        shift = Signal(lb)  # (dst - src) mod B: destination lane of source lane 0
        fill = Signal()
        first = Signal()
        start = Signal(lb)  # first enabled lane of the first destination word
        remaining = Signal(words + lb)  # dst % B + n - (emitted words) * B
        addr = Signal(p.dst_width)
        prev = Signal(8 * B)

        need_in = in_left != 0
        emit = ~skip
        src_ok = ~need_in | self.src.valid
        dst_ok = ~emit | self.dst.ready
        step = self.busy & src_ok & dst_ok
        final = step & emit & (out_left == 1)
        m.d.comb += [
            self.src.ready.eq(self.busy & need_in & dst_ok),
            self.dst.valid.eq(self.busy & emit & src_ok),
            self.dst.payload.addr.eq(addr),
            self.dst.payload.last.eq(out_left == 1),
            self.cmd.ready.eq(~self.busy | final),
        ]
        window = (Cat(prev, self.src.payload) << (shift * 8))[8 * B:16 * B]
        m.d.comb += self.dst.payload.data.eq(Mux(fill, Cat(*[self.fill_byte] * B), window))
        for lane in range(B):
            m.d.comb += self.dst.payload.mask[lane].eq((~first | (lane >= start)) & (lane < remaining))

        with m.If(step):
            with m.If(need_in):
                m.d.sync += [in_left.eq(in_left - 1), prev.eq(self.src.payload)]
            with m.If(emit):
                m.d.sync += [out_left.eq(out_left - 1), remaining.eq(remaining - B), addr.eq(addr + B), first.eq(0)]
            with m.Else():
                m.d.sync += skip.eq(0)
        with m.If(final):
            m.d.sync += self.busy.eq(0)
        cmd = self.cmd.payload
        with m.If(self.cmd.valid & self.cmd.ready):
            dst_off = cmd.dst[:lb]
            m.d.sync += [
                self.busy.eq(1),
                fill.eq(cmd.fill),
                in_left.eq(Mux(cmd.fill, 0, (cmd.src_off + cmd.n + B - 1) >> lb)),
                out_left.eq((dst_off + cmd.n + B - 1) >> lb),
                skip.eq(~cmd.fill & (cmd.src_off > dst_off)),
                shift.eq(dst_off - cmd.src_off),
                first.eq(1),
                start.eq(dst_off),
                remaining.eq(dst_off + cmd.n),
                addr.eq(cmd.dst >> lb << lb),
            ]
        return m


class Dma(wiring.Component):
    """Executes one descriptor at a time between `port` and a buffer bank.

    Loads write the bank through `buf_wr` (byte enables), stores read it through `buf_rd`
    (synchronous, one cycle latency). `desc.ready` is high while idle; `done` pulses for one cycle
    when a descriptor has finished (for stores: all write beats accepted by the port).
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
        m.submodules.walker = walker = Walker(p)
        m.submodules.realigner = realigner = Realigner(p)
        seg_layout = p.segment_layout()
        # A FIFO read asynchronously cannot map to block RAM, so `registers` puts it in flip-flops
        # (and lets a segment through a cycle earlier).
        queue = fifo.SyncFIFO if p.segment_fifos == "registers" else fifo.SyncFIFOBuffered
        m.submodules.to_source = to_source = queue(width=seg_layout.size, depth=p.queue_depth)
        m.submodules.to_realign = to_realign = queue(width=seg_layout.size, depth=p.queue_depth)

        desc = Signal(p.descriptor_layout())
        load = desc.load
        accept = self.desc.valid & ~self.busy
        started = Signal()
        m.d.sync += started.eq(accept)
        m.d.comb += [self.desc.ready.eq(~self.busy), walker.desc.eq(desc), walker.start.eq(started),
                     realigner.fill_byte.eq(desc.fill)]
        with m.If(accept):
            m.d.sync += [desc.eq(self.desc.payload), self.busy.eq(1), self.busy_cycles.eq(0), self.stall_cycles.eq(0)]

        # Walker -> both queues (the source queue gets data segments only).
        seg = walker.seg.payload
        to_source_needed = ~seg.fill
        m.d.comb += [
            walker.seg.ready.eq(to_realign.w_rdy & (to_source.w_rdy | ~to_source_needed)),
            to_realign.w_data.eq(seg), to_source.w_data.eq(seg),
            to_realign.w_en.eq(walker.seg.valid & walker.seg.ready),
            to_source.w_en.eq(walker.seg.valid & walker.seg.ready & to_source_needed),
        ]

        # Source side: one segment at a time, the next one taken as the current one finishes.
        src_seg = seg_layout(to_source.r_data)
        src_addr = Signal(p.dst_width)  # bus-aligned DRAM address (loads) or buffer chunk address (stores)
        src_left = Signal(p.count_width + 1)  # bus words left in the segment
        src_first = Mux(load, src_seg.dram, src_seg.buf)
        src_take = Signal()
        src_step = Signal()
        src_beats = Signal(range(p.burst_beats + 1))
        m.d.comb += to_source.r_en.eq(src_take)
        with m.If(src_step):
            m.d.sync += [src_addr.eq(src_addr + (src_beats << lb)), src_left.eq(src_left - src_beats)]
        with m.If(src_take & to_source.r_rdy):
            m.d.sync += [src_addr.eq(src_first >> lb << lb), src_left.eq((src_first[:lb] + src_seg.n + B - 1) >> lb)]

        # Loads: read requests in bursts that stay inside a burst block.
        req = self.port.rd_req
        to_block_end = p.burst_beats - (src_addr >> lb)[:exact_log2(p.burst_beats)]
        m.d.comb += src_beats.eq(Mux(load, Mux(src_left < to_block_end, src_left, to_block_end), 1))
        m.d.comb += [req.valid.eq(self.busy & load & (src_left != 0)), req.payload.addr.eq(src_addr),
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
            m.d.sync += [read_valid.eq(self.busy & ~load & (src_left != 0)), read_lane.eq(lane_of)]
        with m.If(word_free):
            m.d.sync += [word_valid.eq(read_valid), word.eq(self.buf_rd.data), word_lane.eq(read_lane)]

        source_moves = Mux(load, req.valid & req.ready, stage_free & self.busy & (src_left != 0))
        m.d.comb += [src_step.eq(source_moves),
                     src_take.eq((src_left == 0) | (source_moves & (src_left == src_beats)))]

        # Realigner: commands from the realign queue, data from DRAM (loads) or the buffer (stores).
        rel_seg = seg_layout(to_realign.r_data)
        cmd = realigner.cmd
        m.d.comb += [
            cmd.valid.eq(to_realign.r_rdy), to_realign.r_en.eq(cmd.ready),
            cmd.payload.src_off.eq(Mux(load, rel_seg.dram, rel_seg.buf)[:lb]),
            cmd.payload.dst.eq(Mux(load, rel_seg.buf, rel_seg.dram)),
            cmd.payload.n.eq(rel_seg.n), cmd.payload.fill.eq(rel_seg.fill),
        ]
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
        m.d.comb += [
            out.ready.eq(load | beat_free),
            self.buf_wr.addr.eq(out.payload.addr >> lw),
            self.buf_wr.data.eq(Cat(*[out.payload.data] * (p.buf_word_bytes // B))),
            self.buf_wr.en.eq(Mux(load & out.valid, out.payload.mask << (out_lane * B), 0)),
        ]
        with m.If(beat_free):
            m.d.sync += [
                wr.valid.eq(~load & out.valid),
                wr.payload.addr.eq(out.payload.addr), wr.payload.data.eq(out.payload.data),
                wr.payload.mask.eq(out.payload.mask), wr.payload.last.eq(out.payload.last | block_end),
            ]

        # Completion and counters.
        working = (started | walker.busy | (to_source.level != 0) | (to_realign.level != 0) | (src_left != 0)
                   | read_valid | word_valid | realigner.busy | wr.valid)
        waiting = (rd_data.ready & ~rd_data.valid) | (wr.valid & ~wr.ready)
        with m.If(self.busy):
            m.d.sync += [self.busy_cycles.eq(self.busy_cycles + 1), self.stall_cycles.eq(self.stall_cycles + waiting)]
            with m.If(~working):
                m.d.sync += self.busy.eq(0)
                m.d.comb += self.done.eq(1)
        return m
