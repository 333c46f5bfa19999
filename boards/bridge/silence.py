"""The bridge's silence timer: how long the host link has been quiet."""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


class SilenceTimer(wiring.Component):
    """Times out `gap_cycles` clock cycles (give or take the square root of it) after the last
    `activity`; timed out from reset.

    - `activity`: a byte received or sent.
    - `timed_out`: the link has been silent that long.
    """

    def __init__(self, gap_cycles: int):
        self.gap_cycles = gap_cycles
        super().__init__({"activity": In(1), "timed_out": Out(1)})

    def elaborate(self, platform) -> Module:
        """Counts the ticks of a free-running prescaler up from `gap_start` to its top bit,
        `gap_cycles` cycles after a byte received or sent (within a tick; a reply's bytes
        restart it too: no request is received meanwhile). Two short carry chains: one over
        all the bits does not reach 33 MHz on the UP5K."""
        m = Module()
        tick_bits = self.gap_cycles.bit_length() // 2
        prescaler = Signal(tick_bits)
        m.d.sync += prescaler.eq(prescaler + 1)
        ticks = -(-self.gap_cycles >> tick_bits)
        gap_bits = ticks.bit_length()
        gap_start = (1 << gap_bits) - ticks
        gap = Signal(gap_bits + 1, init=1 << gap_bits)
        timed_out = gap[-1]
        m.d.comb += self.timed_out.eq(timed_out)
        with m.If(self.activity):
            m.d.sync += gap.eq(gap_start)
        with m.Elif(prescaler.all() & ~timed_out):
            m.d.sync += gap.eq(gap + 1)
        return m
