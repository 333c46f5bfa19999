"""The DMA walkers: walk a descriptor's loops and split each run into segments.

Two walkers, chosen by `DmaParams.walker`: `levels` (`Walker`, here) keeps each quantity's (DRAM
address, buffer address, y, x) value at the start of every loop level and adds the
descriptor's strides, an adder per level and quantity, and splits runs at the image bounds;
`pointer` (`hwgen.dma.pointer_walker.PointerWalker`) keeps one pointer per quantity and a counter
per level, and adds to each address the step of the level that advances (precomputed by
`hwgen.dma.descriptor.pointer_dims`), to each coordinate its stride or rewind (it moves with one
loop): one adder per quantity behind a selection; its runs are never split (`run_dx` 0). Both
visit the runs in the same order, cycle for cycle.
"""
from __future__ import annotations

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


def base_fields(desc: data.View) -> tuple:
    """The descriptor's base fields, in the order of `QUANTITIES`."""
    return tuple(getattr(desc, name) for name in BASES)


def quantity_shapes(p: DmaParams) -> tuple:
    """The shapes of the quantities, in the order of `QUANTITIES`."""
    return p.addr_width, p.buf_addr_width, signed(p.coord_width), signed(p.coord_width)


def levels_loop(m: Module, p: DmaParams, desc: data.View, start, take) -> tuple[tuple, Signal]:
    """The `levels` loop stage: the current run's (dram, buf, y, x) and whether it is the last."""
    dims = desc.dims
    idx = [Signal(p.count_width, name=f"idx{d}") for d in range(p.outer_dims)]
    levels = [[Signal(shape, name=f"{q}{d}") for d in range(p.outer_dims)]
              for q, shape in zip(QUANTITIES, quantity_shapes(p))]
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
        m.d.sync += [level.eq(base) for levels_of, base in zip(levels, base_fields(desc)) for level in levels_of]
    return tuple(level[0] for level in levels), Cat(*last).all()


class SplitStage(wiring.Component):
    """The `levels` walker's split stage: takes the loop stage's runs into a run register and emits
    each run's segments one per cycle: fill prefix, data, fill suffix (those `present`), or spends
    one cycle on a run without any. It takes the next run in the cycle it finishes one (from a
    spare register where the loop stage left the run while the split stage was busy; the loop
    stage stops meanwhile), so the loop levels' enables do not depend on the split stage.

    - `start`: the loop stage starts walking (a cycle before its first run);
    - `fresh`: the loop stage's run: addresses, in-bounds range `[lo, hi)` and its present segments;
    - `final`: that run is the descriptor's last; `advance`: the loop stage moves on;
    - `run_bytes`: the descriptor's run;
    - `seg`: the segments; `busy`: runs are left.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        super().__init__({
            "start": In(1),
            "fresh": In(run_layout(params)),
            "final": In(1),
            "advance": Out(1),
            "run_bytes": In(params.count_width),
            "seg": Out(stream.Signature(params.segment_layout())),
            "busy": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p, n, fresh, advance = self.params, self.run_bytes, self.fresh, self.advance
        walking = Signal()  # the loop stage has runs left
        spare_full = Signal()  # `spare` holds a run the split stage has not taken
        m.d.comb += advance.eq(walking & ~spare_full)  # the loop stage moves on
        spare, run = Signal(run_layout(p)), Signal(run_layout(p))
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

        # The split stage takes the spare run, else the loop stage's.
        with m.If(~spare_full):
            m.d.sync += spare.eq(fresh)
        with m.If((~held | finish) & (spare_full | walking)):
            m.d.sync += [held.eq(1), run.eq(Mux(spare_full, spare, fresh)), spare_full.eq(0)]
        with m.Elif(advance):
            m.d.sync += spare_full.eq(1)
        with m.If(advance & self.final):
            m.d.sync += walking.eq(0)
        with m.If(self.start):
            m.d.sync += [walking.eq(1), held.eq(0), seg_state.eq(0), spare_full.eq(0)]
        m.d.comb += self.busy.eq(walking | held | spare_full)
        return m


def run_layout(p: DmaParams) -> data.StructLayout:
    """A run in the `levels` walker's split stage: its addresses, in-bounds range `[lo, hi)` and
    which of its three segments are present."""
    return data.StructLayout({"dram": p.addr_width, "buf": p.buf_addr_width, "lo": p.count_width,
                              "hi": p.count_width, "present": 3})


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
        m.submodules.split = split = SplitStage(p)
        (a, b, y, x), final = levels_loop(m, p, desc, self.start, split.advance)

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
        fresh = split.fresh
        m.d.comb += [fresh.dram.eq(a), fresh.buf.eq(b), fresh.lo.eq(lo), fresh.hi.eq(hi),
                     fresh.present.eq(Cat(*((lengths[k] != 0) & (desc.load | (k == 1)) for k in range(3)))),
                     split.final.eq(final), split.start.eq(self.start), split.run_bytes.eq(n), self.busy.eq(split.busy)]
        wiring.connect(m, wiring.flipped(self.seg), split.seg)
        return m
