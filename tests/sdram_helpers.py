"""Amaranth testbenches for the SDRAM controller (`boards.sdram`) against the chip model
(`sim.sdram`): drivers for the controller's native port and for `SdramMainMemory`'s accelerator
and host ports, a monitor counting AUTO REFRESH commands and the model's refresh debt, and the
bandwidth and latency measurements that `bench/sdram_bandwidth.py` prints.

Every driver counts its own cycles from the start of the simulation (all start together and
advance one clock per `tick`), so the cycles they record compare."""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from amaranth.sim import Simulator

from boards.sdram.controller import Command, SdramController, initialization_cycles
from boards.sdram.memory import SdramMainMemory
from hwgen.memory_port import MemoryPort
from sim.sdram.adapter import sdram_process
from sim.sdram.chips import SdramChip
from sim.sdram.device import SdramDevice

BURST_BEATS = 8  # the ULX3S configuration's dram.burst_beats
STALL_CYCLES = 10_000  # longer than the datasheet's power-up wait at 75 MHz (7,500 cycles)


@dataclass
class Monitor:
    """What the pins and the model showed: AUTO REFRESH commands after initialization (their
    edges) and the largest refresh debt."""

    device: SdramDevice
    init_refreshes: int
    refreshes: list[int] = field(default_factory=list)
    max_debt: int = 0

    def process(self, pins):
        command = (pins.cs_n, pins.ras_n, pins.cas_n, pins.we_n)

        async def monitor(ctx) -> None:
            cycle = 0
            async for _, _, *bits in ctx.tick().sample(*command):
                if sum(bit << (3 - index) for index, bit in enumerate(bits)) == Command.AUTO_REFRESH.value:
                    self.refreshes.append(cycle)
                self.max_debt = max(self.max_debt, self.device.refresh_debt)
                cycle += 1
        return monitor

    @property
    def running_refreshes(self) -> list[int]:
        """The refreshes after the initialization's."""
        return self.refreshes[self.init_refreshes:]


def simulate(dut, chip: SdramChip, mhz: float, testbenches, device: SdramDevice | None = None,
             processes=()) -> Monitor:
    """Run `testbenches` (async functions; with background `processes`) on `dut` with the model
    on its `sdram` pins; raise `SdramViolation` on a datasheet violation and check the refresh
    debt at the end."""
    device = device or SdramDevice(chip, mhz)
    monitor = Monitor(device, chip.init_refreshes)
    sim = Simulator(dut)
    sim.add_clock(1e-6 / mhz)
    sim.add_process(sdram_process(device, dut.sdram))
    sim.add_process(monitor.process(dut.sdram))
    for process in processes:
        sim.add_process(process)
    for testbench in testbenches:
        sim.add_testbench(testbench)
    sim.run()
    device.finish()
    return monitor


class Clock:
    """A driver's own cycle count."""

    def __init__(self):
        self.cycle = 0

    async def tick(self, ctx, *signals):
        """One clock edge; the values of `signals` sampled at it."""
        sampled = await ctx.tick().sample(*signals)
        self.cycle += 1
        return sampled[2:]  # after the clock and reset

    async def until(self, ctx, *signals, what: str):
        """Tick until the first of `signals` is sampled high at an edge; the values sampled then.
        Fails after `STALL_CYCLES` (lost data or a deadlock would hang the run)."""
        for _ in range(STALL_CYCLES):
            values = await self.tick(ctx, *signals)
            if values[0]:
                return values
        raise AssertionError(f"cycle {self.cycle}: no {what} for {STALL_CYCLES} cycles")

    async def send(self, ctx, stream, payload) -> int:
        """Offer `payload` on `stream` until taken; the cycle it was taken."""
        ctx.set(stream.valid, 1)
        ctx.set(stream.payload, payload)
        await self.until(ctx, stream.ready, what="ready")
        ctx.set(stream.valid, 0)
        return self.cycle - 1


# ---- the controller's native port -----------------------------------------------------------

@dataclass
class NativeRun:
    """Commands for `SdramController.cmd`: (word address, write, data, mask, idle cycles before)."""

    commands: list[tuple[int, int, int, int, int]]
    expected: list[int] = field(default_factory=list)  # the data each read must return, in order
    read: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)  # the cycle each command was taken

    def testbenches(self, dut: SdramController, words: dict[int, int]):
        """A command driver (keeping `expected` from `words`, a word address -> value reference
        it updates) and a collector of `rd`."""
        async def drive(ctx) -> None:
            clock = Clock()
            for addr, write, data, mask, gap in self.commands:
                for _ in range(gap):
                    await clock.tick(ctx)
                if write:
                    old = words.get(addr, 0)
                    lanes = (0xFF if mask & 1 else 0) | (0xFF00 if mask & 2 else 0)
                    words[addr] = old & ~lanes | data & lanes
                else:
                    self.expected.append(words[addr])
                payload = {"addr": addr, "write": write, "data": data, "mask": mask}
                self.accepted.append(await clock.send(ctx, dut.cmd, payload))
            for _ in range(dut.read_latency + 2):
                await clock.tick(ctx)

        async def collect(ctx) -> None:
            async for _, _, valid, value in ctx.tick().sample(dut.rd.valid, dut.rd.payload):
                if valid:
                    self.read.append(value)
        return drive, collect


def run_native(chip: SdramChip, mhz: float, run: NativeRun, words: dict[int, int], cas_latency: int | None = None,
               device: SdramDevice | None = None) -> Monitor:
    """`run` on an `SdramController`; `words` the reference contents (word address -> value)."""
    dut = SdramController(chip, mhz, cas_latency)
    drive, collect = run.testbenches(dut, words)
    return simulate(dut, chip, mhz, [drive], device, processes=[collect])


# ---- SdramMainMemory ------------------------------------------------------------------------

def memory(chip: SdramChip, mhz: float, size_bytes: int | None = None) -> SdramMainMemory:
    return SdramMainMemory(MemoryPort(2, BURST_BEATS), size_bytes or chip.bytes, chip, mhz)


@dataclass
class Log:
    """What the drivers saw: cycles of accepted requests and beats, and the data read."""

    read_requests: list[int] = field(default_factory=list)  # cycle each rd_req was taken
    read_beats: list[tuple[int, int]] = field(default_factory=list)  # (cycle, data) of each rd_data beat taken
    write_beats: list[int] = field(default_factory=list)  # cycle each write beat was taken
    host_reads: list[int] = field(default_factory=list)  # the words of the host reads


def read_requester(dut: SdramMainMemory, bursts: list[tuple[int, int]], log: Log, start: int = 0):
    """Request the read bursts (byte address, beats) back to back from cycle `start`."""
    async def testbench(ctx) -> None:
        clock = Clock()
        for _ in range(start):
            await clock.tick(ctx)
        for addr, beats in bursts:
            log.read_requests.append(await clock.send(ctx, dut.port.rd_req, {"addr": addr, "beats": beats}))
    return testbench


def read_consumer(dut: SdramMainMemory, beats: int, log: Log, ready: float = 1.0, seed: int = 0):
    """Take `beats` read beats, `rd_data.ready` high with probability `ready` each cycle."""
    rng = random.Random(seed)

    async def testbench(ctx) -> None:
        clock = Clock()
        rd = dut.port.rd_data
        while len(log.read_beats) < beats:
            taking = rng.random() < ready
            ctx.set(rd.ready, taking)
            valid, value = await clock.tick(ctx, rd.valid, rd.payload.data)
            if taking and valid:
                log.read_beats.append((clock.cycle - 1, value))
            elif clock.cycle - (log.read_beats[-1][0] if log.read_beats else 0) > STALL_CYCLES:
                raise AssertionError(f"cycle {clock.cycle}: {beats - len(log.read_beats)} read beats never came")
        ctx.set(rd.ready, 0)
    return testbench


def writer(dut: SdramMainMemory, bursts: list[tuple[int, list[tuple[int, int]]]], log: Log, gaps: float = 0.0,
           seed: int = 0, start: int = 0):
    """Write the bursts (byte address, [(data, mask)] per beat); between beats an idle cycle
    with probability `gaps`."""
    rng = random.Random(seed)

    async def testbench(ctx) -> None:
        clock = Clock()
        for _ in range(start):
            await clock.tick(ctx)
        for addr, beats in bursts:
            for index, (value, mask) in enumerate(beats):
                while rng.random() < gaps:
                    await clock.tick(ctx)
                payload = {"addr": addr + 2 * index, "data": value, "mask": mask, "last": index == len(beats) - 1}
                log.write_beats.append(await clock.send(ctx, dut.port.wr, payload))
    return testbench


def host(dut: SdramMainMemory, operations: list[tuple[int, int | None]], log: Log, gaps: int = 0):
    """Host byte accesses in order: (address, byte) writes, (address, None) reads (waiting for
    `rd_valid` as the bridge does); `gaps` idle cycles after each."""
    async def testbench(ctx) -> None:
        clock = Clock()
        for addr, value in operations:
            payload = {"addr": addr, "data": value or 0, "write": value is not None}
            await clock.send(ctx, dut.host.req, payload)
            if value is None:
                _, word = await clock.until(ctx, dut.host.rd_valid, dut.host.rd_data, what="rd_valid")
                log.host_reads.append(word)
            for _ in range(gaps):
                await clock.tick(ctx)
    return testbench


def sequential_bursts(start: int, size: int) -> list[tuple[int, int]]:
    """`size` bytes from `start` as full bursts (byte address, beats)."""
    block = 2 * BURST_BEATS
    return [(addr, BURST_BEATS) for addr in range(start, start + size, block)]


@dataclass
class Throughput:
    """A measured run: bytes moved, cycles from its first request taken to its last beat."""

    bytes: int
    cycles: int
    refreshes: int

    @property
    def bytes_per_cycle(self) -> float:
        return self.bytes / self.cycles


def measure_reads(chip: SdramChip, mhz: float, size: int, start: int = 0) -> Throughput:
    """Sequential read bursts over `size` preloaded bytes, `rd_data.ready` always high."""
    dut, log = memory(chip, mhz), Log()
    device = SdramDevice(chip, mhz)
    device.memory.preload(start, bytes(size))
    requester = read_requester(dut, sequential_bursts(start, size), log, initialization_cycles(chip, mhz))
    monitor = simulate(dut, chip, mhz, [requester, read_consumer(dut, size // 2, log)], device)
    first, last = log.read_requests[0], log.read_beats[-1][0]
    return Throughput(size, last + 1 - first, _refreshes_between(monitor, first, last))


def measure_writes(chip: SdramChip, mhz: float, size: int, start: int = 0) -> Throughput:
    """Sequential write bursts over `size` bytes, offered back to back."""
    dut, log = memory(chip, mhz), Log()
    bursts = [(addr, [(addr & 0xFFFF, 0b11)] * beats) for addr, beats in sequential_bursts(start, size)]
    monitor = simulate(dut, chip, mhz, [writer(dut, bursts, log, start=initialization_cycles(chip, mhz))])
    first, last = log.write_beats[0], log.write_beats[-1]
    return Throughput(size, last + 1 - first, _refreshes_between(monitor, first, last))


def measure_mixed(chip: SdramChip, mhz: float, size: int, read_start: int, write_start: int) -> Throughput:
    """Sequential read bursts over `size` bytes from `read_start` and, at the same time,
    sequential write bursts over `size` bytes from `write_start`."""
    dut, log = memory(chip, mhz), Log()
    device = SdramDevice(chip, mhz)
    device.memory.preload(read_start, bytes(size))
    writes = [(addr, [(0, 0b11)] * beats) for addr, beats in sequential_bursts(write_start, size)]
    begin = initialization_cycles(chip, mhz)
    monitor = simulate(dut, chip, mhz, [read_requester(dut, sequential_bursts(read_start, size), log, begin),
                                        read_consumer(dut, size // 2, log), writer(dut, writes, log, start=begin)],
                       device)
    first = min(log.read_requests[0], log.write_beats[0])
    last = max(log.read_beats[-1][0], log.write_beats[-1])
    return Throughput(2 * size, last + 1 - first, _refreshes_between(monitor, first, last))


def read_latency(chip: SdramChip, mhz: float) -> tuple[int, int]:
    """Cycles from `rd_req` taken to the first `rd_data.valid` for a burst to a closed row (the
    first access) and for the next burst in the open row, requested 20 cycles after the first
    burst's last beat (the memory idle)."""
    dut, log = memory(chip, mhz), Log()
    device = SdramDevice(chip, mhz)
    device.memory.preload(0, bytes(4 * BURST_BEATS))
    consumer = read_consumer(dut, 2 * BURST_BEATS, log)

    async def requester(ctx) -> None:
        clock = Clock()
        for _ in range(initialization_cycles(chip, mhz)):
            await clock.tick(ctx)
        log.read_requests.append(await clock.send(ctx, dut.port.rd_req, {"addr": 0, "beats": BURST_BEATS}))
        while len(log.read_beats) < BURST_BEATS:
            await clock.tick(ctx)
        for _ in range(20):
            await clock.tick(ctx)
        log.read_requests.append(await clock.send(ctx, dut.port.rd_req, {"addr": 2 * BURST_BEATS,
                                                                          "beats": BURST_BEATS}))

    simulate(dut, chip, mhz, [requester, consumer], device)
    return (log.read_beats[0][0] - log.read_requests[0],
            log.read_beats[BURST_BEATS][0] - log.read_requests[1])


def without_refresh(chip: SdramChip) -> SdramChip:
    """The chip with tREFI long enough (90 us, below tRAS max) that a short run has no refresh."""
    return replace(chip, refresh_interval_ns=90_000)


def _refreshes_between(monitor: Monitor, first: int, last: int) -> int:
    return sum(first <= edge <= last for edge in monitor.running_refreshes)
