"""The DMA walkers: walk a descriptor's loops and split each run into segments.

Two walkers, chosen by `DmaParams.walker`: `levels` (`Walker`) keeps each quantity's (DRAM
address, buffer address, y, x) value at the start of every loop level and adds the
descriptor's strides, an adder per level and quantity, and splits runs at the image bounds;
`pointer` (`PointerWalker`) keeps one pointer per quantity and a counter per level, and adds
to each address the step of the level that advances (precomputed by
`hwgen.dma_descriptor.pointer_dims`), to each coordinate its stride or rewind (it moves with one
loop): one adder per quantity behind a selection; its runs are never split (`run_dx` 0). Both
visit the runs in the same order, cycle for cycle.
"""
from __future__ import annotations

import operator
from functools import reduce

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hwgen.dma.descriptor import COORDINATES, STEPPED, DmaParams

QUANTITIES = ("dram", "buf", "y", "x")
"""What the loops advance, in the order of `STEPPED` then `COORDINATES` and of the descriptor's base
fields."""


BASES = ("dram_addr", "buf_addr", "y0", "x0")
"""The descriptor's base fields, one per quantity: the `pointer` walker takes them a cycle
before it starts (`PointerWalker.bases`)."""


def _bases(desc: data.View) -> tuple:
    return tuple(getattr(desc, name) for name in BASES)


def bases_layout(p: DmaParams) -> data.StructLayout:
    """The `pointer` walker's `bases` input: the descriptor's base fields."""
    layout = p.descriptor_layout()
    return data.StructLayout({name: layout[name].shape for name in BASES})


def _shapes(p: DmaParams) -> tuple:
    return p.addr_width, p.buf_addr_width, signed(p.coord_width), signed(p.coord_width)


def levels_loop(m: Module, p: DmaParams, desc: data.View, start, take) -> tuple[tuple, Signal]:
    """The `levels` loop stage: the current run's (dram, buf, y, x) and whether it is the last."""
    dims = desc.dims
    idx = [Signal(p.count_width, name=f"idx{d}") for d in range(p.outer_dims)]
    levels = [[Signal(shape, name=f"{q}{d}") for d in range(p.outer_dims)] for q, shape in zip(QUANTITIES, _shapes(p))]
    strides = [stride for stride, _ in STEPPED] + [stride for _, stride in COORDINATES]
    # `last[d]` (idx[d] is the level's last iteration) is a register updated with idx[d], so
    # that no count comparison lies before the level registers' enables
    last = [Signal(name=f"last{d}") for d in range(p.outer_dims)]
    with m.If(take):
        for j in range(p.outer_dims):
            with m.If(~last[j] & Cat(*last[:j]).all()):
                m.d.sync += [idx[j].eq(idx[j] + 1), last[j].eq(idx[j] + 2 >= dims[j].count)]
                m.d.sync += [idx[k].eq(0) for k in range(j)]
                m.d.sync += [last[k].eq(dims[k].count <= 1) for k in range(j)]
                for level, stride in zip(levels, strides):
                    m.d.sync += [level[k].eq(level[j] + dims[j][stride]) for k in range(j + 1)]
    with m.If(start):
        m.d.sync += [i.eq(0) for i in idx]
        m.d.sync += [last[d].eq(dims[d].count <= 1) for d in range(p.outer_dims)]
        m.d.sync += [level.eq(base) for levels_of, base in zip(levels, _bases(desc)) for level in levels_of]
    return tuple(level[0] for level in levels), Cat(*last).all()


def pointer_loop(m: Module, p: DmaParams, desc: data.View, start, take, walking, bases: tuple,
                 load_bases) -> tuple[tuple, tuple, Signal]:
    """The `pointer` loop stage: one pointer per quantity; an address adds the advancing
    level's step, a coordinate its stride if its loop advances, its rewind if an outer one does
    (`hwgen.dma_descriptor.pointer_coordinates`). The pointers take `bases` when `load_bases`
    pulses (the cycle before `start`), so the DMA need not hold the descriptor's base fields.
    Each level counts its advances up from 0 (`start` clears them) to its `repeats`; whether it
    has reached them is a register (`last`) updated with the count, so no count comparison lies
    before the pointers' adders. Returns the pointers, their values after the next `take` (the
    pointers themselves while not `walking`), and whether the run at the pointers is the last."""
    dims = desc.dims
    idx = [Signal(p.count_width, name=f"idx{d}") for d in range(p.outer_dims)]  # advances so far per level
    pointers = [Signal(shape, name=q) for q, shape in zip(QUANTITIES, _shapes(p))]
    following = [Signal(shape, name=f"{q}_next") for q, shape in zip(QUANTITIES, _shapes(p))]
    last = [Signal(name=f"last{d}") for d in range(p.outer_dims)]  # idx[d] == dims[d].repeats
    restart = [last[d].eq(dims[d].repeats == 0) for d in range(p.outer_dims)]  # with idx[d] cleared
    # one-hot: the level that advances (none while not walking)
    advance = [walking & ~last[j] & Cat(*last[:j]).all() for j in range(p.outer_dims)]
    moving = Cat(*advance)
    for pointer, after, (_, step) in zip(pointers, following, STEPPED):
        selected = [Mux(advance[j], dims[j][step], 0) for j in range(p.outer_dims)]
        m.d.comb += after.eq(pointer + reduce(operator.or_, selected))
    for pointer, after, (name, _) in zip(pointers[len(STEPPED):], following[len(STEPPED):], COORDINATES):
        level = desc[f"{name}_level"]
        own, outer = moving.bit_select(level, 1), (moving >> level >> 1).any()  # its loop, or one outside
        m.d.comb += after.eq(pointer + Mux(own, desc[f"{name}_step"], Mux(outer, desc[f"{name}_rewind"], 0)))
    with m.If(take):
        for j in range(p.outer_dims):
            with m.If(advance[j]):
                m.d.sync += [idx[j].eq(idx[j] + 1), last[j].eq(idx[j] + 1 == dims[j].repeats)]
                m.d.sync += [idx[k].eq(0) for k in range(j)] + restart[:j]
        m.d.sync += [pointer.eq(after) for pointer, after in zip(pointers, following)]
    with m.If(start):
        m.d.sync += [i.eq(0) for i in idx] + restart
    with m.If(load_bases):
        m.d.sync += [pointer.eq(base) for pointer, base in zip(pointers, bases)]
    return tuple(pointers), tuple(following), Cat(*last).all()


class Walker(wiring.Component):
    """The `levels` walker: walks a descriptor's loops and splits each run into up to three segments.

    Two stages: the loop stage takes the next run's addresses and in-bounds range `[lo, hi)`
    into a run register; the split stage emits that run's segments one per cycle: fill prefix,
    data, fill suffix (empty ones skipped; for stores fill segments are skipped too), or spends
    one cycle on a run without any. The loop stage refills the register in the cycle the split
    stage finishes (from a spare register where the loop stage left the run when the split
    stage was busy), so runs follow each other without a gap; the first segment leaves two
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
        walking = Signal()  # the loop stage has runs left
        spare_full = Signal()  # `spare` holds a run the split stage has not taken
        advance = walking & ~spare_full  # the loop stage moves on
        (a, b, y, x), final = levels_loop(m, p, desc, self.start, advance)

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

        # ---- spare and run registers, split stage
        run_layout = data.StructLayout({"dram": p.addr_width, "buf": p.buf_addr_width, "lo": p.count_width,
                                        "hi": p.count_width, "present": 3})
        fresh, spare, run = Signal(run_layout), Signal(run_layout), Signal(run_layout)
        m.d.comb += [fresh.dram.eq(a), fresh.buf.eq(b), fresh.lo.eq(lo), fresh.hi.eq(hi),
                     fresh.present.eq(Cat(*((lengths[k] != 0) & (desc.load | (k == 1)) for k in range(3))))]
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

        # The split stage takes the spare run, else the loop stage's; a run the loop stage
        # offers while the split stage is busy waits in `spare` (the loop stage stops meanwhile),
        # so the loop levels' enables do not depend on the split stage.
        with m.If(~spare_full):
            m.d.sync += spare.eq(fresh)
        with m.If((~held | finish) & (spare_full | walking)):
            m.d.sync += [held.eq(1), run.eq(Mux(spare_full, spare, fresh)), spare_full.eq(0)]
        with m.Elif(advance):
            m.d.sync += spare_full.eq(1)
        with m.If(advance & final):
            m.d.sync += walking.eq(0)
        with m.If(self.start):
            m.d.sync += [walking.eq(1), held.eq(0), seg_state.eq(0), spare_full.eq(0)]
        m.d.comb += self.busy.eq(walking | held | spare_full)
        return m


class PointerWalker(wiring.Component):
    """The `pointer` walker: walks a descriptor's loops (`pointer_loop`) and emits each run as one
    segment, all fill or all data: its descriptors have `run_dx` 0 (`DmaParams.encode`), so a
    run's bytes share its (y, x), inside `[0, height) x [0, width)` or not (stores skip the runs
    outside, spending a cycle on each). The pointers take the base fields from `bases` when
    `load_bases` pulses, the cycle before `start`; the first run is offered two cycles after
    `start` and runs follow one per cycle (the cycles of the `levels` walker with `run_dx` 0).
    While `hold` is high the walker neither offers nor skips a run. `busy_next` is `busy`'s value
    in the next cycle.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        super().__init__({
            "bases": In(bases_layout(params)),
            "load_bases": In(1),
            "desc": In(params.descriptor_layout()),
            "start": In(1),
            "hold": In(1),
            "seg": Out(stream.Signature(params.segment_layout())),
            "busy": Out(1),
            "busy_next": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p, desc = self.params, self.desc
        take = Signal()
        starting, walking = Signal(), Signal()  # the cycle after `start`; runs are left
        (a, b, _, _), (_, _, y, x), final = pointer_loop(m, p, desc, self.start, take, walking,
                                                         _bases(self.bases), self.load_bases)
        m.d.sync += starting.eq(self.start)
        # whether the run at the pointers lies in the image, a register decided with the pointers'
        # next values (so no comparison lies before `take`); a negative coordinate, read unsigned,
        # lies beyond every bound
        inside = Signal()
        with m.If(take | ~walking):
            m.d.sync += inside.eq((y.as_unsigned() < desc.height) & (x.as_unsigned() < desc.width))
        emits = desc.load | inside
        moving = walking & ~self.hold  # offers or skips the run at the pointers
        seg = self.seg.payload
        m.d.comb += [self.seg.valid.eq(moving & emits), seg.fill.eq(~inside), seg.dram.eq(a), seg.buf.eq(b),
                     seg.n.eq(desc.run_bytes), take.eq(moving & (self.seg.ready | ~emits)),
                     self.busy.eq(starting | walking),
                     self.busy_next.eq(self.start | starting | (walking & ~(take & final)))]
        with m.If(take & final):
            m.d.sync += walking.eq(0)
        with m.If(starting):
            m.d.sync += walking.eq(1)
        return m
