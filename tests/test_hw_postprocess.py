"""Post-processing against `sim.golden.kernels.requantize` and an exact rational reference: the
parallel lanes (`hwgen.postprocess`) and the serial lane (`hwgen.serial_post`, whose consumer
never stalls), also with normalized multipliers (0 or `[2**15, 2**16)`)."""
from __future__ import annotations

from fractions import Fraction
from functools import partial

import numpy as np
import pytest
from amaranth.hdl import signed
from amaranth.sim import Simulator
from hypothesis import given, settings
from hypothesis import strategies as st

from hwgen.postprocess import NARROW_BITS, PostProcess
from hwgen.serial_post import NORMALIZED_SUM_BITS, SerialPostProcess
from hwgen.serial_shifts import NORMALIZED_MULTIPLIERS, SHIFTS
from hwgen.timing import serial_interval, serial_latency
from planner.quant import MAX_SHIFT
from sim.golden.kernels import requantize

ACC = signed(33)
ACC_MAX = 2**32 - 1
UNITS = {"lanes": PostProcess, "serial": SerialPostProcess, "normalized": partial(SerialPostProcess, normalized=True)}
HELD_INT8 = partial(SerialPostProcess, raw_shape=signed(8), normalized=True, held_layer=True)
"""The engines' shared lane (`SerialPostProcess.shared`): int8 results, the layer read as held."""
SHIFT_RANGES = {"lanes": range(MAX_SHIFT + 1), "serial": SHIFTS, "normalized": SHIFTS}
"""The requantization shifts each unit implements."""
SMALLEST_MULTIPLIER = {"lanes": 1, "serial": 1, "normalized": NORMALIZED_MULTIPLIERS.start}
"""The smallest nonzero multiplier each unit implements."""


async def send(ctx, stream, payloads: list, rng: np.random.Generator, gap_rate: float) -> None:
    """Offer `payloads` in order, idling a random number of cycles before each."""
    for payload in payloads:
        while rng.random() < gap_rate:
            await ctx.tick()
        ctx.set(stream.payload, payload)
        ctx.set(stream.valid, 1)
        await ctx.tick().until(stream.ready)
        ctx.set(stream.valid, 0)


async def receive(ctx, stream, count: int, rng: np.random.Generator, stall_rate: float,
                  received: list | None = None) -> list[tuple[int, object]]:
    """Accept `count` payloads into `received` (as they arrive), holding `ready` low on a random
    fraction of cycles; each with the number of the clock edge that moved it (the first is 1)."""
    received, edge = [] if received is None else received, 0
    while len(received) < count:
        ctx.set(stream.ready, int(rng.random() >= stall_rate))
        _, _, ready, valid, payload = await ctx.tick().sample(stream.ready, stream.valid, stream.payload)
        edge += 1
        if ready and valid:
            received.append((edge, payload))
    ctx.set(stream.ready, 0)
    return received


def run_postprocess(lanes: int, beats: list[dict], seed: int = 0, gap_rate: float = 0.3, stall_rate: float = 0.3,
                    unit: str = "lanes", make=None):
    """Stream `beats` through a requantizer (`make`, by default `UNITS[unit]`) with random gaps
    and stalls (none for the serial lanes, whose consumer never stalls); the output rows."""
    dut = (make or UNITS[unit])(lanes, ACC)
    stall_rate = stall_rate if unit == "lanes" else 0.0
    rng = np.random.default_rng(seed)
    out: list = []

    async def producer(ctx):
        await send(ctx, dut.i, beats, rng, gap_rate)

    async def consumer(ctx):
        received = await receive(ctx, dut.o, len(beats), rng, stall_rate)
        out.extend([payload[lane] for lane in range(lanes)] for _, payload in received)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()
    return out


def exact(total: int, m: int, s: int, zy: int, lo: int, hi: int) -> int:
    """`clamp(round(total * m / 2**s) + zy, lo, hi)` on rationals (Python rounds ties to even)."""
    return min(max(round(Fraction(total * m, 2**s)) + zy, lo), hi)


def per_lane(value, lanes: int) -> list[int]:
    return [int(v) for v in value] if isinstance(value, (list, tuple, np.ndarray)) else [int(value)] * lanes


def fit(m: int, s: int, unit: str) -> tuple[int, int]:
    """The multiplier `m * 2**-s` with its shift raised into `unit`'s range and `m` to its
    smallest multiplier (`m` doubled, still 16 bits)."""
    while s < SHIFT_RANGES[unit].start or m < SMALLEST_MULTIPLIER[unit]:
        m, s = 2 * m, s + 1
    assert m < 2**16, (m, s)
    return m, s


def beat(acc: list[int], bias, m, s, zy: int = 0, lo: int = -128, hi: int = 127, raw: int = 0) -> dict:
    """One input beat; `bias`, `m` and `s` are per lane (a scalar is used for every lane)."""
    n = len(acc)
    return {"acc": acc, "bias": per_lane(bias, n), "multiplier": per_lane(m, n), "shift": per_lane(s, n),
            "layer": {"zero_point": zy, "low": lo, "high": hi, "raw": raw}}


def random_beat(rng: np.random.Generator, lanes: int, unit: str) -> tuple[dict, list[int]]:
    """A beat whose products fit int64 (the golden model's range), shifts in `unit`'s range, and
    its golden result."""
    smallest = 0 if unit == "normalized" else 1
    m = np.array([int(rng.choice([smallest, 2**15, 2**16 - 1, int(rng.integers(2**15, 2**16))])) for _ in range(lanes)])
    bias = np.array([int(rng.choice([0, -(2**31), 2**31 - 1, int(rng.integers(-(2**31), 2**31))])) for _ in range(lanes)])
    total_bound = min((2**63 - 1) // max(int(m.max()), 1), ACC_MAX)
    magnitude = int(rng.choice([16, 2**12, 2**20, total_bound]))
    totals = rng.integers(-magnitude, magnitude + 1, lanes)
    acc = np.clip(totals - bias, -ACC_MAX - 1, ACC_MAX)
    zy = int(rng.integers(-128, 128))
    lo, hi = rng.choice([(-128, 127), (zy, 127), tuple(sorted(int(v) for v in rng.integers(-128, 128, 2)))])
    if rng.random() < 0.2:
        acc = np.clip(acc, -(2**31) - bias, 2**31 - 1 - bias)  # a spill fits int32
        return beat(acc.tolist(), bias, m, 0, zy, int(lo), int(hi), raw=1), (acc + bias).tolist()
    size = int(np.abs((acc + bias) * m).max()).bit_length()
    near = max(0, size - int(rng.integers(0, 9)))  # results mostly inside the clamp range
    low, high = SHIFT_RANGES[unit][0], SHIFT_RANGES[unit][-1]
    near = min(max(near, low), high)
    s = np.array([int(rng.choice([low, low + 1, high, int(rng.integers(low, high + 1)), near, near, near]))
                  for _ in range(lanes)])
    expected = [int(requantize(np.array([a + b]), [mm], [ss], zy, int(lo), int(hi))[0])
                for a, b, mm, ss in zip(acc, bias, m, s)]
    return beat(acc.tolist(), bias, m, s, zy, int(lo), int(hi)), expected


@pytest.mark.parametrize("unit", UNITS)
@settings(max_examples=8, deadline=None)
@given(lanes=st.integers(1, 3), count=st.integers(1, 40), seed=st.integers(0, 2**32 - 1),
       gap_rate=st.sampled_from([0.0, 0.4]), stall_rate=st.sampled_from([0.0, 0.4]))
def test_matches_golden_requantize(unit: str, lanes: int, count: int, seed: int, gap_rate: float,
                                   stall_rate: float) -> None:
    """Random parameters, ReLU-style bounds, raw spills mixed in, input gaps and output stalls."""
    rng = np.random.default_rng(seed)
    beats, expected = zip(*(random_beat(rng, lanes, unit) for _ in range(count)))
    assert run_postprocess(lanes, list(beats), seed, gap_rate, stall_rate, unit) == list(expected)


@pytest.mark.parametrize("unit", UNITS)
def test_corners_match_exact_rationals(unit: str) -> None:
    """Ties both ways and both signs, the unit's smallest and largest shifts (0 and 62 for the
    lanes), the widest operands (products beyond int64, where the golden model's int64 product
    would wrap), saturation at both bounds."""
    low, high = SHIFT_RANGES[unit][0], SHIFT_RANGES[unit][-1]
    cases = [
        beat([5, 7, -5], 0, *fit(1, 1, unit)), beat([-7, 6, 2], 0, *fit(1, 2, unit)), beat([3, -3, 1], 0, *fit(3, 1, unit)),
        beat([ACC_MAX, -ACC_MAX - 1, 0], 2**31 - 1, 2**16 - 1, high),
        beat([ACC_MAX, -ACC_MAX - 1, -1], -(2**31), 2**16 - 1, high, zy=-128, lo=-128, hi=127),
        beat([ACC_MAX, -ACC_MAX - 1, 1], 0, 2**16 - 1, low, zy=5, lo=-3, hi=9),
        beat([2**min(40, high) // (2**16 - 1), -1, 1], 0, 2**16 - 1, min(40, high), zy=127),
        beat([-(2**min(46, high + 3)) // (2**16 - 1) // 4, 100, -100], 7, 2**15, min(43, high), zy=-128, lo=-100,
             hi=100),
        beat([3 * 2**30, -(3 * 2**30), 2**30], 2**30, 2**16 - 1, high),
    ]
    expected = [[exact(a + b, m, s, c["layer"]["zero_point"], c["layer"]["low"], c["layer"]["high"])
                 for a, b, m, s in zip(c["acc"], c["bias"], c["multiplier"], c["shift"])] for c in cases]
    assert run_postprocess(3, cases, unit=unit) == expected


def test_rational_reference_agrees_with_golden() -> None:
    """The two references agree wherever the golden model's int64 product is exact."""
    rng = np.random.default_rng(1)
    totals = rng.integers(-(2**31), 2**31, 2000)
    m, s = rng.integers(2**15, 2**16, 2000), rng.integers(0, 63, 2000)
    golden = requantize(totals, m, s, 3, -100, 120)
    assert golden.tolist() == [exact(int(t), int(a), int(b), 3, -100, 120) for t, a, b in zip(totals, m, s)]


@pytest.mark.parametrize("unit", UNITS)
def test_pass_through_and_back_to_back(unit: str) -> None:
    """Raw spills (`acc + bias` as int32, its extremes included; `m` and `s` ignored) between
    requantized beats, with no gaps or stalls."""
    cases = [
        beat([2**31 - 11, -(2**31) - 5, 0], 10, 2**16 - 1, 62, raw=1),
        beat([100, -100, 0], 0, 2**15, 16),
        beat([-1, 1, 0], -(2**31) + 1, 5, 3, raw=1),
    ]
    expected = [[2**31 - 1, -(2**31) + 5, 10], [50, -50, 0], [-(2**31), -(2**31) + 2, -(2**31) + 1]]
    assert run_postprocess(3, cases, gap_rate=0.0, stall_rate=0.0, unit=unit) == expected


@pytest.mark.parametrize("unit", UNITS)
def test_clamp_around_the_narrow_width(unit: str) -> None:
    """Quotients on both sides of the clamp's narrow width (`NARROW_BITS`) and of the 8-bit
    range, with the zero points and rounding that push them across a bound."""
    edge = 2 ** (NARROW_BITS - 1)
    quotients = [edge - 1, edge, edge + 1, -edge, -edge - 1, 127, 128, -128, -129, 2**11, -(2**11), 2**20, -(2**20)]
    cases = [beat([2 * q + up, 0, 0], 0, *fit(1, 1, unit), zy=zy, lo=lo, hi=hi)
             for q in quotients for up in (0, 1) for zy, lo, hi in ((-128, -128, 127), (127, -5, 127), (0, 0, 0))]
    expected = [[exact(a + b, m, s, c["layer"]["zero_point"], c["layer"]["low"], c["layer"]["high"])
                 for a, b, m, s in zip(c["acc"], c["bias"], c["multiplier"], c["shift"])] for c in cases]
    assert run_postprocess(3, cases, unit=unit) == expected


@pytest.mark.parametrize("unit", ["serial", "normalized"])
def test_serial_corners_match_golden(unit: str) -> None:
    """Shifts 15 and 30, the smallest and largest multipliers and 0, sums at both sides of the
    normalized lane's multiplied bits (`NORMALIZED_SUM_BITS`) and at the extremes, ties both ways
    and both signs, against the golden requantization."""
    edge = 2 ** (NORMALIZED_SUM_BITS - 1)
    sums = [edge - 1, edge, edge + 1, -edge, -edge - 1, 2**32 - 1, -(2**32), 2**31 - 1, -(2**31), 0, 1, -1]
    ties = [3 * 2**14, -3 * 2**14, 5 * 2**14, -5 * 2**14, 2**14, -(2**14)]  # x.5 at shift 15 with m = 2**15
    cases = []
    for m in (2**15, 2**16 - 1, 0):
        for s in (SHIFTS[0], SHIFTS[-1]):
            for zy, lo, hi in ((0, -128, 127), (-128, -128, 127), (127, 0, 127)):
                cases += [beat(sums[k:k + 3], 0, m, s, zy, lo, hi) for k in range(0, len(sums), 3)]
    cases += [beat(ties[k:k + 3], 0, 2**15, SHIFTS[0], zy) for k in (0, 3) for zy in (0, 5)]
    cases += [beat([2**32 - 1, -(2**32), edge], -(2**31), 2**16 - 1, 22, 3, -100, 100)]  # acc + bias beyond int32
    expected = [[int(requantize(np.array([a + b]), [m], [s], c["layer"]["zero_point"], c["layer"]["low"],
                                c["layer"]["high"])[0])
                 for a, b, m, s in zip(c["acc"], c["bias"], c["multiplier"], c["shift"])] for c in cases]
    assert run_postprocess(3, cases, unit=unit) == expected


@pytest.mark.parametrize("lanes", [1, 2, 3])
def test_held_layer_int8_lane_matches_golden(lanes: int) -> None:
    """The engines' shared lane (`HELD_INT8`), whose layer input holds still as a command's
    CONVCFG does: random beats of one layer, back to back and with gaps, against the golden
    requantization."""
    rng = np.random.default_rng(lanes)
    beats = [b for b, _ in (random_beat(rng, lanes, "normalized") for _ in range(60)) if not b["layer"]["raw"]]
    layer = beats[0]["layer"]
    beats = [{**b, "layer": layer} for b in beats]
    expected = [[int(requantize(np.array([a + b]), [m], [s], layer["zero_point"], layer["low"], layer["high"])[0])
                 for a, b, m, s in zip(c["acc"], c["bias"], c["multiplier"], c["shift"])] for c in beats]
    for gap_rate in (0.0, 0.4):
        assert run_postprocess(lanes, beats, lanes, gap_rate, unit="normalized", make=HELD_INT8) == expected


@pytest.mark.parametrize("lanes", [1, 2, 4])
def test_serial_lane_timing(lanes: int) -> None:
    """Offered back to back, beats are accepted every `lanes` x (1 + 16 / 4) cycles (the sum,
    then one cycle per 4-bit multiplier digit) and each leaves 3 cycles after its last lane's
    product (rounding, clamp, output register)."""
    dut = SerialPostProcess(lanes, ACC)
    rng = np.random.default_rng(lanes)
    beats = [random_beat(rng, lanes, "serial")[0] for _ in range(5)]
    accepted, produced = [], []

    async def testbench(ctx):
        ctx.set(dut.o.ready, 1)
        ctx.set(dut.i.valid, 1)
        sent = 0
        for edge in range(1, 5 * lanes * 5 + 20):
            if sent < len(beats):
                ctx.set(dut.i.payload, beats[sent])
            ctx.set(dut.i.valid, int(sent < len(beats)))
            _, _, ready, valid, out_valid = await ctx.tick().sample(dut.i.ready, dut.i.valid, dut.o.valid)
            if ready and valid:
                accepted.append(edge)
                sent += 1
            if out_valid:
                produced.append(edge)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    interval = lanes * 5
    assert serial_interval(lanes) == interval and serial_latency(lanes) == interval + 3
    assert accepted == [1 + k * interval for k in range(len(beats))]
    assert produced == [edge + interval + 3 for edge in accepted]
