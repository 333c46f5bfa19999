"""The `pointer` DMA walker (`template.dma: shared`): one pointer per quantity and a counter per
loop level; it adds to each address the step of the level that advances (precomputed by
`hwgen.dma.descriptor.pointer_dims`), to each coordinate its stride or rewind (it moves with one
loop): one adder per quantity behind a selection. Its runs are never split (`run_dx` 0); it
visits them in the order and at the cycles of the `levels` walker (`hwgen.dma.walker`).
"""
from __future__ import annotations

import operator
from functools import reduce

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hwgen.dma.descriptor import COORDINATES, STEPPED, DmaParams
from hwgen.dma.walker import BASES, QUANTITIES, base_fields, quantity_shapes


def bases_layout(p: DmaParams) -> data.StructLayout:
    """The `pointer` walker's `bases` input: the descriptor's base fields."""
    layout = p.descriptor_layout()
    return data.StructLayout({name: layout[name].shape for name in BASES})


def pointer_loop(m: Module, p: DmaParams, desc: data.View, start, take, walking, bases: tuple,
                 load_bases) -> tuple[tuple, tuple, Signal]:
    """The `pointer` loop stage: one pointer per quantity; an address adds the advancing
    level's step, a coordinate its stride if its loop advances, its rewind if an outer one does
    (`hwgen.dma.descriptor.pointer_coordinates`). The pointers take `bases` when `load_bases`
    pulses (the cycle before `start`), so the DMA need not hold the descriptor's base fields.
    Each level counts its advances up from 0 (`start` clears them) to its `repeats`; whether it
    has reached them is a register (`last`) updated with the count, so no count comparison lies
    before the pointers' adders. Returns the pointers, their values after the next `take` (the
    pointers themselves while not `walking`), and whether the run at the pointers is the last."""
    dims = desc.dims
    idx = [Signal(p.count_width, name=f"idx{d}") for d in range(p.outer_dims)]  # advances so far per level
    pointers = [Signal(shape, name=q) for q, shape in zip(QUANTITIES, quantity_shapes(p))]
    following = [Signal(shape, name=f"{q}_next") for q, shape in zip(QUANTITIES, quantity_shapes(p))]
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
                                                         base_fields(self.bases), self.load_bases)
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
