"""When the convolution engine's steps enter the PE array."""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hwgen.conv.params import ConvParams


class ConvSchedule(wiring.Component):
    """One step a cycle from the cycle after the accept; a group's first step waits until the
    previous group started `C * interval` cycles before (the drain bank sends its `C` beats one
    every `interval` cycles); after the last step the engine stays busy until the last group's
    results are written (array latency, drain, post-processing). `issue` and `idle` are
    registers, computed from the next running state (timing).

    - `start`: a command is accepted;
    - `last_step`: the step is its group's last; `done`: the group is the command's last;
    - `issue`: a step enters the array; `at_first`: the next step is a group's first;
    - `idle`: no command runs (all its results written).
    """

    def __init__(self, params: ConvParams):
        self.params = params
        super().__init__({
            "start": In(1),
            "last_step": In(1),
            "done": In(1),
            "issue": Out(1),
            "at_first": Out(1),
            "idle": Out(1, init=1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        accept, issue, at_first, last_step = self.start, self.issue, self.at_first, self.last_step
        C, interval = p.cols, p.interval
        running = Signal()
        gap = Signal(range(C * interval))  # cycles until the next group may start
        drain = (C - 1) * interval + 1 + p.post_latency  # from a group's first drain beat to its last write
        flush = Signal(range(p.latency + drain + 1))
        ends = issue & last_step & self.done
        next_running, next_at_first, next_gap, next_flush = Signal(), Signal(), Signal.like(gap), Signal.like(flush)
        m.d.comb += [next_running.eq(Mux(accept, 1, running & ~ends)),
                     next_at_first.eq(Mux(accept, 1, Mux(issue, last_step, at_first))),
                     next_gap.eq(Mux(issue & at_first, C * interval - 1, Mux(gap != 0, gap - 1, 0))),
                     next_flush.eq(Mux(ends, p.latency + drain, Mux(flush != 0, flush - 1, 0)))]
        m.d.sync += [running.eq(next_running), at_first.eq(next_at_first), gap.eq(next_gap), flush.eq(next_flush),
                     issue.eq(next_running & (~next_at_first | (next_gap == 0))),
                     self.idle.eq(~next_running & (next_flush == 0))]
        return m
