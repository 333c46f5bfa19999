"""The dispatch queue against Amaranth's `SyncFIFOBuffered` (the timing it must keep, cycle for
cycle) and a list of the kinds written (its head's kind, 0 while empty)."""
from __future__ import annotations

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.sim import Simulator

from hwgen.dispatch_queue import DispatchQueue

KINDS = 3


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
@pytest.mark.parametrize("write_rate, read_rate", [(0.7, 0.3), (0.3, 0.8), (0.6, 0.6)])
def test_queue_is_timed_like_a_buffered_fifo_and_reads_its_head_kind(depth: int, write_rate: float,
                                                                     read_rate: float) -> None:
    m = Module()
    m.submodules.queue = queue = DispatchQueue(width=8, depth=depth, kinds=KINDS)
    m.submodules.reference = reference = SyncFIFOBuffered(width=8, depth=depth)
    rng = random.Random(depth * 1000 + int(write_rate * 100) + int(read_rate * 10))
    queued: list[int] = []  # the kinds of the entries in the queue, oldest first
    checked = {"pops": 0}

    async def testbench(ctx):
        for _ in range(600):
            data, kind = rng.randrange(256), 1 << rng.randrange(KINDS)
            w_en, r_en = rng.random() < write_rate, rng.random() < read_rate
            for port, value in ((queue.w_data, data), (reference.w_data, data), (queue.w_kind, kind),
                                (queue.w_en, w_en), (reference.w_en, w_en), (queue.r_en, r_en),
                                (reference.r_en, r_en)):
                ctx.set(port, value)
            ready = ctx.get(reference.r_rdy)
            assert (ctx.get(queue.w_rdy), ctx.get(queue.r_rdy)) == (ctx.get(reference.w_rdy), ready)
            if ready:
                assert ctx.get(queue.r_data) == ctx.get(reference.r_data)
            assert ctx.get(queue.r_kind) == (queued[0] if ready else 0)
            popped, pushed = r_en and ready, w_en and ctx.get(reference.w_rdy)
            if popped:
                queued.pop(0)
                checked["pops"] += 1
            if pushed:
                queued.append(kind)
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert checked["pops"] > 100
