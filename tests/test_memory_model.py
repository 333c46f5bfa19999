"""The simulated DRAM against hand-driven port traffic: data, latency, bandwidth, stalls, counters."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from hwgen.memory_port import MemoryPort
from sim.memory_model import MemoryModel

BUS, BURST = 4, 4


def _run(model: MemoryModel, *testbenches) -> None:
    m = Module()
    m.domains.sync = ClockDomain()
    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_process(model.process)
    for testbench in testbenches:
        sim.add_testbench(testbench)
    sim.run()


def _random_bursts(rng: np.random.Generator, count: int, size: int) -> list[tuple[int, int]]:
    """Bus-aligned bursts that stay inside one burst block."""
    bursts = []
    for _ in range(count):
        beat = int(rng.integers(0, size // BUS))
        beats = int(rng.integers(1, BURST - beat % BURST + 1))
        bursts.append((beat * BUS, beats))
    return bursts


async def _send(ctx, stream, fields: dict[str, int], rng: np.random.Generator | None, cycle: list[int]) -> None:
    """Offer one transfer after a random gap; return once accepted (counting edges in `cycle`)."""
    while rng is not None and rng.random() < 0.3:
        await ctx.tick()
        cycle[0] += 1
    for name, value in fields.items():
        ctx.set(getattr(stream.payload, name), value)
    ctx.set(stream.valid, 1)
    while True:
        _, _, ready = await ctx.tick().sample(stream.ready)
        cycle[0] += 1
        if ready:
            break
    ctx.set(stream.valid, 0)


def _read_traffic(model: MemoryModel, bursts, rng: np.random.Generator | None):
    """Issue `bursts` as read requests; return (edges accepting each request, (edge, data) per beat)."""
    port = model.port
    accepted: list[int] = []
    beats: list[tuple[int, int]] = []
    total = sum(n for _, n in bursts)

    async def requester(ctx):
        cycle = [0]
        for addr, n in bursts:
            await _send(ctx, port.rd_req, {"addr": addr, "beats": n}, rng, cycle)
            accepted.append(cycle[0])

    async def receiver(ctx):
        cycle = 0
        while len(beats) < total:
            ready = rng is None or rng.random() > 0.3
            ctx.set(port.rd_data.ready, ready)
            _, _, valid, value = await ctx.tick().sample(port.rd_data.valid, port.rd_data.payload.data)
            cycle += 1
            if valid and ready:
                beats.append((cycle, value))

    _run(model, requester, receiver)
    return accepted, beats


@pytest.mark.parametrize("seed", [0, 1])
def test_reads_return_storage_after_latency(seed: int) -> None:
    rng = np.random.default_rng(seed)
    storage = rng.integers(0, 256, 512, dtype=np.uint8)
    model = MemoryModel(MemoryPort(BUS, BURST).create(), storage.copy(), bus_bytes=BUS, burst_beats=BURST,
                        latency=5, stall=0.3, seed=seed)
    bursts = _random_bursts(rng, 30, len(storage))
    accepted, beats = _read_traffic(model, bursts, rng)
    expected = [int.from_bytes(storage[a + i * BUS:a + (i + 1) * BUS].tobytes(), "little") for a, n in bursts for i in range(n)]
    assert [value for _, value in beats] == expected
    first_beat = np.cumsum([0] + [n for _, n in bursts])[:-1]
    for when, index in zip(accepted, first_beat):
        assert beats[index][0] >= when + 5
    total = sum(n for _, n in bursts)
    assert (model.stats.read_requests, model.stats.read_beats, model.stats.bytes_read) == (len(bursts), total, total * BUS)


@pytest.mark.parametrize("bandwidth", [Fraction(1), Fraction(1, 3), Fraction(3, 4)])
def test_read_bandwidth(bandwidth: Fraction) -> None:
    storage = np.zeros(1024, dtype=np.uint8)
    model = MemoryModel(MemoryPort(BUS, BURST).create(), storage, bus_bytes=BUS, burst_beats=BURST,
                        latency=3, beats_per_cycle=bandwidth)
    _, beats = _read_traffic(model, [(i * BURST * BUS, BURST) for i in range(40)], None)
    rate = (len(beats) - 1) / (beats[-1][0] - beats[0][0])
    assert abs(rate - bandwidth) < 0.02


def test_writes_apply_masks_under_stalls() -> None:
    rng = np.random.default_rng(7)
    storage = rng.integers(0, 256, 512, dtype=np.uint8)
    expected = storage.copy()
    model = MemoryModel(MemoryPort(BUS, BURST).create(), storage, bus_bytes=BUS, burst_beats=BURST, stall=0.4, seed=3)
    beats = []
    for addr, n in _random_bursts(rng, 40, len(storage)):
        for i in range(n):
            value, mask = int(rng.integers(0, 1 << 32)), int(rng.integers(0, 1 << BUS))
            beats.append({"addr": addr + i * BUS, "data": value, "mask": mask, "last": int(i == n - 1)})
            for lane in range(BUS):
                if mask >> lane & 1:
                    expected[addr + i * BUS + lane] = value >> 8 * lane & 0xFF

    async def writer(ctx):
        cycle = [0]
        for beat in beats:
            await _send(ctx, model.port.wr, beat, rng, cycle)
        await ctx.tick().repeat(3)

    _run(model, writer)
    np.testing.assert_array_equal(storage, expected)
    assert model.stats.write_beats == len(beats)
    assert model.stats.bytes_written == sum(bin(b["mask"]).count("1") for b in beats)


@pytest.mark.parametrize("beats", [
    [{"addr": 2, "data": 0, "mask": 1, "last": 1}],  # unaligned
    [{"addr": 8, "data": 0, "mask": 1, "last": 0}, {"addr": 16, "data": 0, "mask": 1, "last": 1}],  # gap
    [{"addr": 12, "data": 0, "mask": 1, "last": 0}, {"addr": 16, "data": 0, "mask": 1, "last": 1}],  # crosses a block
])
def test_write_protocol_violations_are_caught(beats: list[dict]) -> None:
    model = MemoryModel(MemoryPort(BUS, BURST).create(), np.zeros(64, np.uint8), bus_bytes=BUS, burst_beats=BURST)

    async def writer(ctx):
        cycle = [0]
        for beat in beats:
            await _send(ctx, model.port.wr, beat, None, cycle)
        await ctx.tick().repeat(2)

    with pytest.raises(AssertionError):
        _run(model, writer)
