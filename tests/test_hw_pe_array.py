"""The PE array and its drain bank against numpy (einsum) references."""
from __future__ import annotations

import numpy as np
from amaranth.sim import Simulator
from hypothesis import given, settings
from hypothesis import strategies as st

from hwgen.config import config_from_dict
from hwgen.pe_array import PEArray
from test_hw_pe import TINY, int8
from test_hw_postprocess import receive

CONFIG = config_from_dict({**TINY, "buffers": {"input_bytes": 4096, "weight_bytes": 4096, "output_bytes": 4096},
                           "widths": {"activation": 8, "weight": 8, "accumulator": 32}})
R, C, S = CONFIG.pe.rows, CONFIG.pe.cols, CONFIG.pe.simd
LATENCY = 4 + 2 + 1  # PE: input, multiplier input, product, 2 tree levels (S = 4), accumulate; then the drain bank


def make_groups(rng: np.random.Generator, lengths: list[int]) -> tuple[list[dict], list[np.ndarray]]:
    """Cycle inputs of groups of the given lengths (random bubbles inside) and their sums `(R, C)`."""
    cycles, sums = [], []
    for terms in lengths:
        zx = int(int8(rng, 1)[0])
        x, w = int8(rng, (terms, C, S)), int8(rng, (terms, R, S))
        for k in range(terms):
            if k and rng.random() < 0.3:
                cycles.append({"valid": 0, "first": 1, "last": 1, "pixels": int8(rng, (C, S)).tolist(),
                               "weights": int8(rng, (R, S)).tolist()})
            cycles.append({"valid": 1, "first": int(k == 0), "last": int(k == terms - 1), "zx": zx,
                           "pixels": x[k].tolist(), "weights": w[k].tolist()})
        sums.append(np.einsum("kcs,krs->rc", x - zx, w))
    return cycles, sums


def run_array(cycles: list[dict], groups: int, rng: np.random.Generator, stall_rate: float,
              hold_last: bool = False) -> list[tuple[int, list[int], int]]:
    """Drive `cycles` and collect `groups * C` drain beats as `(edge, acc column, last)`. With
    `hold_last`, each `last` waits (bubbles) until all earlier groups have drained."""
    dut = PEArray(CONFIG)
    received: list = []

    async def producer(ctx):
        """A step's weights one cycle after its pixels and controls (random ones in between)."""
        issued, weights = 0, None
        for step in cycles:
            while hold_last and step["valid"] and step["last"] and len(received) < issued * C:
                ctx.set(dut.valid, 0)
                ctx.set(dut.weights, weights or int8(rng, (R, S)).tolist())
                weights = None
                await ctx.tick()
            for name, value in step.items():
                if name != "weights":
                    ctx.set(getattr(dut, name), value)
            ctx.set(dut.weights, weights or int8(rng, (R, S)).tolist())
            weights = step["weights"]
            issued += step["valid"] and step["last"]
            await ctx.tick()
        ctx.set(dut.valid, 0)
        ctx.set(dut.weights, weights)

    async def consumer(ctx):
        await receive(ctx, dut.drain, groups * C, rng, stall_rate, received)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()
    return [(edge, [payload.acc[r] for r in range(R)], payload.last) for edge, payload in received]


def columns_of(sums: list[np.ndarray]) -> list[tuple[list[int], int]]:
    """The expected drain beats: each group's pixels in order, a pixel's `R` channels per beat."""
    return [(group[:, c].tolist(), int(c == C - 1)) for group in sums for c in range(C)]


@settings(max_examples=6, deadline=None)
@given(lengths=st.lists(st.integers(C, 6), min_size=1, max_size=5), seed=st.integers(0, 2**32 - 1))
def test_back_to_back_groups_drain_while_computing(lengths: list[int], seed: int) -> None:
    """Groups of at least `C` terms issued back to back, an always-ready consumer: every pixel of
    every group arrives, in order, and the first beat `latency` cycles after the `last` input."""
    rng = np.random.default_rng(seed)
    cycles, sums = make_groups(rng, lengths)
    beats = run_array(cycles, len(sums), rng, stall_rate=0.0)
    assert [(acc, last) for _, acc, last in beats] == columns_of(sums)
    last_inputs = [t for t, step in enumerate(cycles) if step["valid"] and step["last"]]
    first_beats = [edge for edge, *_ in beats[::C]]  # valid after edge t + latency, moved on the next
    assert first_beats == [t + LATENCY + 1 for t in last_inputs]


@settings(max_examples=4, deadline=None)
@given(lengths=st.lists(st.integers(1, 4), min_size=1, max_size=5), seed=st.integers(0, 2**32 - 1))
def test_stalled_drain_with_held_last(lengths: list[int], seed: int) -> None:
    """A stalling consumer and groups as short as one cycle (`first` and `last` together): the
    issuer holds each `last` until the earlier groups have drained (legal, if cautious)."""
    rng = np.random.default_rng(seed)
    cycles, sums = make_groups(rng, lengths)
    beats = run_array(cycles, len(sums), rng, stall_rate=0.5, hold_last=True)
    assert [(acc, last) for _, acc, last in beats] == columns_of(sums)

