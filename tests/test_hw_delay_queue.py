"""The delay queue against a list of (due cycle, value) pairs."""
from __future__ import annotations

import random

import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from hwgen.delay_queue import delay_queue, entries


@pytest.mark.parametrize("given_valid", [False, True], ids=["own-valid", "caller-valid"])
@pytest.mark.parametrize("latency, spacing", [(1, 1), (6, 1), (6, 2), (6, 4), (13, 10), (6, 20), (6, 6), (7, 3)])
def test_values_come_out_latency_cycles_later(latency: int, spacing: int, given_valid: bool) -> None:
    m = Module()
    value, put = Signal(signed(9)), Signal()
    line = [Signal(name=f"line_{k}") for k in range(latency)]  # the caller's delayed `put`
    m.d.sync += [line[0].eq(put), *(line[k + 1].eq(line[k]) for k in range(latency - 1))]
    valid, out = delay_queue(m, value, put, latency, spacing, "q", valid=line[-1] if given_valid else None)
    rng = random.Random(latency * 100 + spacing)
    cycles = 400
    puts, gap = {}, spacing
    for cycle in range(cycles):
        if gap >= spacing and rng.random() < 0.6:
            puts[cycle], gap = rng.randrange(-256, 256), 0
        gap += 1
    due = {cycle + latency: v for cycle, v in puts.items()}
    seen = []

    async def testbench(ctx):
        for cycle in range(cycles + latency + 1):
            ctx.set(put, cycle in puts)
            ctx.set(value, puts.get(cycle, rng.randrange(-256, 256)))
            if ctx.get(valid):
                seen.append((cycle, ctx.get(out)))
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert seen == sorted(due.items())


def test_entries_are_the_values_in_flight() -> None:
    assert [entries(13, 10), entries(6, 20), entries(6, 2), entries(6, 1), entries(7, 3)] == [2, 1, 3, 6, 3]
