"""The convolution engine's loop counters and their loop-end flags."""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hwgen.conv.params import WRAPS, ConvParams
from hwgen.conv.kernel_size import KERNEL_BITS
from hwgen.isa import Opcode
from hwgen.isa_layout import PAYLOADS


class ConvLoopEnds(wiring.Component):
    """The loop counters and their loop-end flags: a group's reduction (input channel groups,
    kernel rows, phase, `kw = q * stride + phase`) and the groups (output rows, ow groups, oc
    groups). Each flag is a register set from compares of registers, so no compare lies between
    a counter and the pointer muxes (timing). `kw` and the phase are 0 while the engine is idle
    (its last step ends every loop), their flags those of the CONVCFG held then: no compare
    waits for the command's accept.

    - `start`: a command is accepted, `new` its CONV payload; `conv`: the running command's;
    - `convcfg`: the CONVCFG payload; `idle`: the engine is idle; `issue`: a step enters the array;
    - `wraps`: the loop-end flags; `last_step`: the group's last step; `done`: the command's last
      group;
    - `kw`: the kernel column of the step; `ocg`: the group's oc group;
    - `top` (with fused pools): the group is the first row of its row block; with a CONV's
      `pool` k > 1 the groups run as (row block of k rows, ow group, oc group, row of the block).
    """

    def __init__(self, params: ConvParams):
        self.params = params
        super().__init__({
            "start": In(1),
            "new": In(PAYLOADS[Opcode.CONV]),
            "conv": In(PAYLOADS[Opcode.CONV]),
            "convcfg": In(PAYLOADS[Opcode.CONVCFG]),
            "idle": In(1),
            "issue": In(1),
            "wraps": Out(WRAPS),
            "last_step": Out(1),
            "done": Out(1),
            "kw": Out(KERNEL_BITS),
            "ocg": Out(params.group_bits),
            **({"top": Out(1)} if params.pools else {}),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        accept, idle, issue, cfg, conv, new = self.start, self.idle, self.issue, self.convcfg, self.conv, self.new
        rows_left, owg_left, icg_left, kh_left, phase = Signal(10), Signal(8), Signal(8), Signal(KERNEL_BITS), Signal(3)
        kw, ocg = self.kw, self.ocg
        q_wrap, phase_wrap, kh_wrap, icg_wrap = Signal(), Signal(), Signal(), Signal()
        ocg_wrap, owg_wrap, last_row, sub_wrap = Signal(), Signal(), Signal(), Signal(init=1)
        m.d.comb += [self.wraps.eq(Cat(q_wrap, phase_wrap, kh_wrap, icg_wrap, ocg_wrap, owg_wrap, last_row, sub_wrap)),
                     self.last_step.eq(q_wrap & phase_wrap & kh_wrap & icg_wrap),
                     self.done.eq(ocg_wrap & owg_wrap & last_row & sub_wrap)]
        phase_step = issue & q_wrap       # the loops each step ends: q, then phase, kh, ...
        kh_step = phase_step & phase_wrap
        icg_step = kh_step & kh_wrap
        group_step = icg_step & icg_wrap
        rows = new.out_rows
        if self.params.pools:  # a fused pool's row blocks: the rows of a block innermost among the groups
            group_step = self._block_rows(m, sub_wrap, group_step)
            rows = new.out_rows >> self.params.pool_log(new.pool)
        owg_step = group_step & ocg_wrap
        next_kw, next_phase = Signal.like(kw), Signal.like(phase)
        m.d.comb += [next_kw.eq(kw), next_phase.eq(phase)]
        with m.If(idle | kh_step):
            m.d.comb += [next_kw.eq(0), next_phase.eq(0)]
        with m.Elif(phase_step):
            m.d.comb += [next_kw.eq(phase + 1), next_phase.eq(phase + 1)]
        with m.Elif(issue):
            m.d.comb += next_kw.eq(kw + cfg.stride)
        kernel_h, kernel_w = cfg.kernel_h[:KERNEL_BITS], cfg.kernel_w[:KERNEL_BITS]
        m.d.sync += [kw.eq(next_kw), phase.eq(next_phase), q_wrap.eq(next_kw + cfg.stride >= kernel_w),
                     phase_wrap.eq((next_phase + 1 >= cfg.stride) | (next_phase + 1 >= kernel_w))]
        _count_down(m, kh_left, kh_wrap, accept, kernel_h, kh_step)
        _count_down(m, icg_left, icg_wrap, accept, Mux(accept, new.ic_groups, conv.ic_groups), icg_step)
        _count_down(m, owg_left, owg_wrap, accept, Mux(accept, new.ow_groups, conv.ow_groups), owg_step)
        _count_down(m, rows_left, last_row, accept, rows, owg_step & owg_wrap, restarts=False)
        with m.If(accept | group_step & ocg_wrap):
            m.d.sync += [ocg.eq(0), ocg_wrap.eq(Mux(accept, new.oc_groups, conv.oc_groups) == 1)]
        with m.Elif(group_step):
            m.d.sync += [ocg.eq(ocg + 1), ocg_wrap.eq(ocg + 2 == conv.oc_groups)]
        return m

    def _block_rows(self, m: Module, sub_wrap: Signal, group_step: Value) -> Value:
        """The row within a fused pool's block (`top`: its first, `sub_wrap`: its last), counted
        by the groups; returns the step of the oc groups (a block's last row)."""
        p, accept, conv, new = self.params, self.start, self.conv, self.new
        sub = Signal(range(p.max_pool))
        pool = Mux(accept, new.pool, conv.pool)
        single = pool <= 1
        m.d.comb += self.top.eq(sub == 0)
        with m.If(accept | group_step & sub_wrap):
            m.d.sync += [sub.eq(0), sub_wrap.eq(single)]
        with m.Elif(group_step):
            m.d.sync += [sub.eq(sub + 1), sub_wrap.eq(sub + 2 == conv.pool)]
        return group_step & sub_wrap


def _count_down(m: Module, left: Signal, last: Signal, load: Value, count: Value, step: Value,
                restarts: bool = True) -> None:
    """A loop counter: `left` iterations to go, `last` registered as `left == 1`; `load` starts
    it at `count`, `step` counts down or, after the last iteration of a loop that `restarts`,
    starts it again at `count` as loaded (which then must hold still)."""
    single = count == 1
    with m.If(load):
        m.d.sync += [left.eq(count), last.eq(single)]
    with m.Elif(step):
        with m.If(~last):
            m.d.sync += [left.eq(left - 1), last.eq(left == 2)]
        if restarts:
            with m.Else():
                m.d.sync += [left.eq(count), last.eq(single)]
