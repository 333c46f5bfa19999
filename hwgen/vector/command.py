"""The vector unit's command: the VEC it runs, its loop bounds and pointer steps."""
from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hwgen.conv_steps import steps_layout
from hwgen.isa import Opcode, VecOp
from hwgen.isa_layout import PAYLOADS
from hwgen.vector.params import VectorParams


class VecCommand(wiring.Component):
    """The command, latched on accept: loop bounds (count of the last iteration) and pointer
    steps in pixels (modulo the bank: only in-bank reads are meaningful). The steps from CONVCFG
    alone (`hwgen.conv_steps`, registers) are chosen by the command: a window op (MAX, SUM)
    strides by the CONVCFG stride, others by 1. With one kind of op the steps from CONVCFG alone
    (held stable while the command runs) are used as is: no copy; `ow` steps by 1. The kernel
    bounds are copied all the same: the loop-end compares then start at registers (timing).

    - `start`: a command is accepted, `new` its VEC payload;
    - `convcfg`, `steps`: the CONVCFG payload and its pointer steps;
    - `vec`: the command's VEC payload; `window`: it is a window op;
    - `nonempty`: `new` has outputs; `row_count`: `new`'s output rows - 1 (`oh` counts down);
    - `last`, `step`: per read loop, the count of its last iteration and its pointer step;
    - `stride`: the kernel window's stride (1 for COPY and ADD).
    """

    def __init__(self, params: VectorParams):
        self.params = params
        super().__init__({
            "start": In(1),
            "new": In(PAYLOADS[Opcode.VEC]),
            "convcfg": In(PAYLOADS[Opcode.CONVCFG]),
            "steps": In(steps_layout(params.pixel_bits)),
            "vec": Out(PAYLOADS[Opcode.VEC]),
            "window": Out(1),
            "nonempty": Out(1),
            "row_count": Out(params.bounds["oh"]),
            "last": Out(params.last_layout()),
            "step": Out(params.step_layout()),
            "stride": Out(3),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        cfg, steps, new, vec = self.convcfg, self.steps, self.new, self.vec
        windows, loops, copies = p.windows, p.loops, p.copies_steps
        window, new_window = (~vec.op[1], ~new.op[1]) if copies else (Const(windows), Const(windows))
        last = {name: Signal(p.bounds[name], name=f"{name}_last") for name in loops[1:]}
        step = {name: Signal(p.pixel_bits, name=f"{name}_step") for name in loops}
        row_step = Mux(new_window, steps.row, cfg.in_row_pitch)
        oh_step = Mux(new_window, steps.oh, cfg.in_row_pitch)
        group_step = Mux(new_window, steps.plane, steps.flat_plane)
        latched = {"oh": (new.out_rows - 1, oh_step), "ow": (new.out_cols - 1, Const(1)),
                   "group": (new.channel_groups - 1, group_step),
                   "kh": (Mux(new_window, cfg.kernel_h - 1, 0), row_step),
                   "kw": (Mux(new_window, cfg.kernel_w - 1, 0), cfg.in_row_pitch),
                   "operand": (new.op == VecOp.ADD, new.in2_addr >> p.log_simd)}
        copied = {"oh": (True, copies), "ow": (True, False), "group": (True, copies),
                  "kh": (True, copies), "kw": (True, copies), "operand": (True, True)}
        kept = [(name, index, signals) for name in loops for index, signals in enumerate((last, step))
                if name in signals]
        for name, index, signals in kept:
            if not copied[name][index]:
                signals[name] = latched[name][index][:len(signals[name])]
        with m.If(self.start):
            m.d.sync += vec.eq(new)
            m.d.sync += [signals[name].eq(latched[name][index]) for name, index, signals in kept if copied[name][index]]
            if copies:
                m.d.sync += self.stride.eq(Mux(new_window, cfg.stride, 1))
        if windows and not copies:
            m.d.comb += self.stride.eq(cfg.stride)
        m.d.comb += [self.window.eq(window), self.row_count.eq(latched["oh"][0]),
                     self.nonempty.eq((new.out_rows != 0) & (new.out_cols != 0) & (new.channel_groups != 0)),
                     *(self.last[name].eq(value) for name, value in last.items()),
                     *(self.step[name].eq(value) for name, value in step.items())]
        return m
