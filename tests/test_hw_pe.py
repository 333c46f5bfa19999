"""SIMD dot-product PE and the accumulator width, against numpy dot products."""
from __future__ import annotations

import numpy as np
import pytest
from amaranth.hdl import signed
from amaranth.sim import Simulator
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hwgen.accumulator import accumulator_shape, max_magnitude, max_terms
from hwgen.config import config_from_dict
from hwgen.pe import PE
from planner.schedule import ConvShape, Schedule, footprint, is_legal
from hw_configs import any_config, data_config

INT8_CORNERS = np.array([-128, -127, -1, 0, 1, 126, 127])


def int8(rng: np.random.Generator, size, corner_rate: float = 0.3) -> np.ndarray:
    """Random int8 values, a fraction of them replaced by corner values."""
    values = rng.integers(-128, 128, size)
    corners = rng.choice(INT8_CORNERS, size)
    return np.where(rng.random(size) < corner_rate, corners, values)


def run_pe(dut: PE, cycles: list[dict]) -> list[tuple[int, int]]:
    """Drive one input dict per cycle (then idle until drained); return `(cycle, out)` for every
    `out_valid`, `cycle` being the input cycle plus the latency."""
    results = []

    async def testbench(ctx):
        for t in range(len(cycles) + dut.latency + 2):
            step = cycles[t] if t < len(cycles) else {"valid": 0, "first": 0, "last": 0}
            for name, value in step.items():
                ctx.set(getattr(dut, name), value)
            await ctx.tick()
            if ctx.get(dut.out_valid):
                results.append((t + 1, ctx.get(dut.out)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return results


def group_stimulus(rng: np.random.Generator, simd: int, groups: list[tuple[int, list[int]]]):
    """Cycles for `groups` (terms, bubbles before each term) and their numpy reference sums."""
    cycles, expected = [], []
    for terms, bubbles in groups:
        zx = int(int8(rng, 1)[0])
        x, w = int8(rng, (terms, simd)), int8(rng, (terms, simd))
        for k in range(terms):
            cycles += [{"valid": 0, "first": int(rng.integers(2)), "last": int(rng.integers(2)),
                        "x": int8(rng, simd).tolist(), "w": int8(rng, simd).tolist()}] * bubbles[k]
            cycles.append({"valid": 1, "first": int(k == 0), "last": int(k == terms - 1), "zx": zx,
                           "x": x[k].tolist(), "w": w[k].tolist()})
        expected.append((len(cycles), int(np.sum((x - zx) * w))))
    return cycles, expected


@settings(max_examples=12, deadline=None)
@given(
    simd=st.sampled_from([1, 2, 4, 8]),
    groups=st.lists(
        st.integers(1, 5).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.integers(0, 2), min_size=n, max_size=n))),
        min_size=1, max_size=6,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_pe_matches_numpy_dot_products(simd: int, groups, seed: int) -> None:
    """Groups of 1..5 terms (a 1-term group has first and last on one cycle), random bubbles
    (whose control bits must be ignored), back-to-back groups (each starting from 0, not from the
    previous sum), per-group zero points."""
    rng = np.random.default_rng(seed)
    dut = PE(simd, signed(24))
    cycles, expected = group_stimulus(rng, simd, groups)
    assert run_pe(dut, cycles) == [(cycle - 1 + dut.latency, value) for cycle, value in expected]


@pytest.mark.parametrize("input_registers", [True, False])
@pytest.mark.parametrize("simd, latency", [(1, 4), (2, 5), (32, 9)])
def test_latency_is_four_plus_tree_depth(simd: int, latency: int, input_registers: bool) -> None:
    """A one-term group (first and last together) presented on cycle 0 leaves on cycle `latency`
    (one earlier without the input registers, which the PE array keeps outside its PEs)."""
    latency -= 0 if input_registers else 1
    dut = PE(simd, signed(32), input_registers=input_registers)
    cycles = [{"valid": 1, "first": 1, "last": 1, "x": [5] * simd, "zx": 2, "w": [-3] * simd}]
    assert dut.latency == latency
    assert run_pe(dut, cycles) == [(latency, -9 * simd)]


TINY = {"clock_mhz": 10, "pe": {"rows": 4, "cols": 2, "simd": 4},
        "widths": {"activation": 8, "weight": 8, "accumulator": 32},
        "buffers": {"input_bytes": 64, "weight_bytes": 64, "output_bytes": 64},
        "dram": {"bus_width_bits": 8, "bandwidth_bytes_per_cycle": 1, "latency_cycles": 1, "burst_beats": 1}}


def worst_sums(config) -> tuple[int, int]:
    """The extreme sums: every product at +-255 * 128 (= (-128 - 127) * -128)."""
    terms = max_terms(config)
    return -terms * 255 * 128, terms * 255 * 128


@pytest.mark.parametrize("name", ["default", "ice40up5k", "setup_a", "setup_b"])
def test_accumulator_holds_worst_case(name: str) -> None:
    config = any_config(name)
    shape = accumulator_shape(config)
    low, high = worst_sums(config)
    assert -(2 ** (shape.width - 1)) <= low and high < 2 ** (shape.width - 1)
    assert not (-(2 ** (shape.width - 2)) <= low and high < 2 ** (shape.width - 2)), "not minimal"


@settings(max_examples=150, deadline=None)
@given(
    ic=st.integers(1, 4096), kernel=st.integers(1, 7), size=st.integers(1, 64), pad=st.integers(0, 3),
    stride=st.integers(1, 2), tile=st.tuples(st.integers(1, 4096), st.integers(1, 16), st.integers(1, 16)),
)
def test_legal_tiles_stay_within_max_terms(ic: int, kernel: int, size: int, pad: int, stride: int, tile) -> None:
    """Every tile the planner accepts (`planner.schedule.is_legal`) has at most `max_terms`
    non-zero products per output: its `ic * kh * kw` weights of one output channel and the
    distinct input elements it reads each fit a bank (padded positions contribute 0)."""
    config = data_config("ice40up5k")
    out = (size + 2 * pad - kernel) // stride + 1
    assume(out >= 1)
    shape = ConvShape(oc=1, ic=ic, ih=size, iw=size, oh=out, ow=out, kh=kernel, kw=kernel, sh=stride, sw=stride,
                      pad_top=pad, pad_left=pad, depthwise=False)
    schedule = Schedule(oc=1, ic=min(tile[0], ic), oh=min(tile[1], out), ow=min(tile[2], out))
    assume(is_legal(shape, schedule, config))
    weights_per_output = schedule.ic * kernel * kernel
    inputs_read = footprint(shape, schedule, config).input // config.widths.activation_bytes
    assert min(weights_per_output, inputs_read) <= max_terms(config)


def test_worst_case_stimulus_in_simulation() -> None:
    """A tiny config (32 terms): both extreme sums come out exactly."""
    config = config_from_dict(TINY)
    simd = config.pe.simd
    dut = PE(simd, accumulator_shape(config))
    assert max_magnitude(config) == 32 * 255 * 128
    cycles = []
    for sign in (1, -1):
        for k in range(max_terms(config) // simd):
            cycles.append({"valid": 1, "first": int(k == 0), "last": int(k == max_terms(config) // simd - 1),
                           "x": [-128 if sign > 0 else 127] * simd, "zx": 127 if sign > 0 else -128,
                           "w": [-128] * simd})
    assert [value for _, value in run_pe(dut, cycles)] == [worst_sums(config)[1], worst_sums(config)[0]]
