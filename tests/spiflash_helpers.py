"""Amaranth testbenches for the flash reader (`boards.spiflash.reader`) against the flash model
(`sim.spiflash`): a request driver, a beat collector with random back-pressure, and the
bandwidth and latency measurements that `bench/spiflash_bandwidth.py` prints.

Both testbenches count the clock edges from the start of the simulation, so their cycles compare:
a request taken at edge t and a beat taken at edge u are u - t cycles apart."""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from amaranth.sim import Simulator

from boards.spiflash.reader import SpiFlashReader
from sim.spiflash.adapter import spiflash_testbench
from sim.spiflash.chips import W25Q128JV_IM, SpiFlashChip
from sim.spiflash.device import SpiFlashDevice

MHZ = 27  # the iCEBreaker's clock
CHIP = replace(W25Q128JV_IM, t_w_ns=2_000)  # tW's 15 ms would be 405,000 cycles
STALL_CYCLES = 2_000  # no progress for this long: lost data or a deadlock


@dataclass
class Run:
    """Requests (byte address, beats, idle cycles before it) and what came back."""

    requests: list[tuple[int, int, int]]
    ready_probability: float = 1.0
    seed: int = 0
    taken: list[int] = field(default_factory=list)  # the edge each request was taken at
    beats: list[int] = field(default_factory=list)
    arrived: list[int] = field(default_factory=list)  # the edge each beat was taken at

    def testbenches(self, dut: SpiFlashReader):
        total = sum(beats for _, beats, _ in self.requests)
        clock = {"request": 0, "beat": 0}

        async def drive(ctx) -> None:
            for addr, beats, idle in self.requests:
                for _ in range(idle):
                    await ctx.tick()
                    clock["request"] += 1
                ctx.set(dut.rd_req.valid, 1)
                ctx.set(dut.rd_req.payload, {"addr": addr, "beats": beats})
                for _ in range(STALL_CYCLES * 4):  # the first waits for initialization too
                    *_, ready = await ctx.tick().sample(dut.rd_req.ready)
                    clock["request"] += 1
                    if ready:
                        break
                else:
                    raise AssertionError(f"edge {clock['request']}: request {addr:#x} not taken")
                self.taken.append(clock["request"])
                ctx.set(dut.rd_req.valid, 0)

        async def collect(ctx) -> None:
            rng, waited = random.Random(self.seed), 0
            while len(self.beats) < total:
                ready = rng.random() < self.ready_probability
                ctx.set(dut.rd_data.ready, ready)
                *_, valid, data = await ctx.tick().sample(dut.rd_data.valid, dut.rd_data.payload.data)
                clock["beat"] += 1
                waited += 1
                if valid and ready:
                    self.beats.append(data)
                    self.arrived.append(clock["beat"])
                    waited = 0
                if waited > STALL_CYCLES * 4:
                    raise AssertionError(f"edge {clock['beat']}: no beat for {waited} cycles")

        return drive, collect

    def data(self, bus_bytes: int) -> bytes:
        return b"".join(beat.to_bytes(bus_bytes, "little") for beat in self.beats)


def simulate(dut: SpiFlashReader, device: SpiFlashDevice, run: Run) -> Run:
    """`run` on `dut` with the model on its pins; a model violation propagates."""
    sim = Simulator(dut)
    sim.add_clock(1e-6 / dut.clock_mhz)
    sim.add_testbench(spiflash_testbench(device, dut.flash), background=True)
    for testbench in run.testbenches(dut):
        sim.add_testbench(testbench)
    sim.run()
    return run


def random_bursts(count: int, size: int, bus_bytes: int, burst_beats: int, seed: int,
                  sequential: float = 0.5) -> list[tuple[int, int, int]]:
    """`count` requests inside `size` bytes, each within one aligned block of `burst_beats` beats
    (as `MemoryPort` promises); with probability `sequential` one continues where the last ended."""
    rng, requests, end = random.Random(seed), [], None
    block = bus_bytes * burst_beats
    for _ in range(count):
        if end is not None and end < size and rng.random() < sequential:
            start = end
        else:
            start = rng.randrange(size // bus_bytes) * bus_bytes
        room = burst_beats - start % block // bus_bytes
        beats = rng.randint(1, room)
        requests.append((start, beats, rng.choice((0, 0, 0, 1, 5))))
        end = start + beats * bus_bytes
    return requests


@dataclass
class Figures:
    bytes_per_cycle: float  # sequential bursts, first request taken to last beat
    latency_first: int  # the first read after initialization (with the instruction in quad mode)
    latency_new: int  # a read at another address (continuous read mode in quad)
    latency_next: int  # a read at the next address (the open read continued)


def measure(bus_bytes: int, quad: bool, kib: int = 1, chip: SpiFlashChip = CHIP, mhz: float = MHZ,
            burst_beats: int = 8) -> Figures:
    """The reader's figures with `rd_data.ready` always high."""
    size, burst = kib * 1024, burst_beats * bus_bytes
    image = random.Random(1).randbytes(3 * size)
    device = SpiFlashDevice(chip, mhz)
    device.preload(0, image)
    dut = SpiFlashReader(bus_bytes, burst_beats, chip=chip, clock_mhz=mhz, quad=quad)
    latency = [(0, burst_beats, 0), (2 * size, burst_beats, 20), (2 * size + burst, burst_beats, 20),
               (size + 2 * burst, burst_beats, 20)]
    stream = [(address, burst_beats, 0) for address in range(0, size, burst)]
    run = simulate(dut, device, Run(latency + stream[1:]))
    assert run.data(bus_bytes) == image[:burst] + image[2 * size:2 * size + 2 * burst] + \
        image[size + 2 * burst:size + 3 * burst] + image[burst:size]
    first_beat = [sum(beats for _, beats, _ in run.requests[:index]) for index in range(len(run.requests))]
    latencies = [run.arrived[first_beat[index]] - run.taken[index] for index in range(4)]
    streamed = size - burst
    start = run.taken[4]
    return Figures(streamed / (run.arrived[-1] - start), latencies[0], latencies[3], latencies[2])
