"""The SDRAM controller (`boards.sdram`) against the chip model (`sim.sdram`): every command it
issues is checked by the model (`SdramViolation` on any datasheet violation), the data read
back is checked against a Python reference of what was written (or preloaded into the model),
and the model's contents against the same reference.

For speed most runs shorten the chip's 100 us power-up wait (`FAST`: 300 ns) and its tREFI
(`BUSY`: 1.5 us instead of 7.8 us, so that many refreshes fall in a short run);
`test_datasheet_chip_refreshes_during_traffic` keeps every datasheet figure."""
from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from boards.sdram.controller import (BUS_TURNAROUND, SdramController, SdramCycles, cas_latency_at, initialization_cycles,
                                    read_latency)
from boards.sdram.memory import SdramMainMemory
from common.errors import ConfigError
from hwgen.memory_port import MemoryPort
from sim.sdram.chips import IS42S16160G_7, Timing
from sim.sdram.device import SdramDevice
import sdram_helpers
from sdram_helpers import (BURST_BEATS, Log, NativeRun, host, measure_reads, measure_writes, memory,
                           read_consumer, read_requester, run_native, simulate, writer)

FAST = replace(IS42S16160G_7, power_up_ns=300)
BUSY = replace(FAST, refresh_interval_ns=1500)
AS4C32M16SB_7 = replace(BUSY, name="AS4C32M16SB-7", t_rcd=Timing(21), t_rp=Timing(21), t_rc=Timing(63),
                        t_rfc=Timing(63), t_ras=Timing(42))  # the slower chip of some ULX3S v3.0.7 boards
# a made-up chip whose tRRD, tWR and tMRD outlast tRCD, so that every delay counter binds
STRETCHED = replace(BUSY, name="stretched", t_rrd=Timing(50), t_wr=Timing(40, clocks=2), t_mrd=Timing(40, clocks=2))
ROW_WORDS = IS42S16160G_7.columns * IS42S16160G_7.banks  # words from one row of a bank to the next row


def word_address(bank: int, row: int, column: int) -> int:
    """`sim.sdram.storage`'s mapping, in words."""
    return (row * IS42S16160G_7.banks + bank) * IS42S16160G_7.columns + column


# ---- the controller's native port -----------------------------------------------------------

def random_commands(rng: random.Random, count: int) -> list[tuple[int, int, int, int, int]]:
    """Reads and writes at addresses across every bank and a few rows of each (row hits and
    misses), masked writes to words already written, reads of written words only, random gaps."""
    rows = [0, 1, 2, 4095, 8191]
    written: list[int] = []
    commands = []
    for _ in range(count):
        gap = rng.choice([0] * 6 + [1, 2, 3, 7, 40])
        if written and rng.random() < 0.45:
            commands.append((rng.choice(written), 0, 0, 0, gap))
            continue
        if written and rng.random() < 0.3:
            addr, mask = rng.choice(written), rng.randrange(4)
        else:
            addr = word_address(rng.randrange(4), rng.choice(rows), rng.choice([0, 1, 2, 255, 511, rng.randrange(512)]))
            mask = 0b11  # a word's first write sets both bytes: a read of it is then defined
            written.append(addr)
        commands.append((addr, 1, rng.randrange(1 << 16), mask, gap))
    return commands


@pytest.mark.parametrize("chip, mhz, cas_latency", [
    (BUSY, 75, None), (BUSY, 75, 3), (BUSY, 100, None), (BUSY, 133, None), (AS4C32M16SB_7, 75, None),
    (STRETCHED, 75, None),
], ids=["75MHz-CL2", "75MHz-CL3", "100MHz-CL2", "133MHz-CL3", "AS4C32M16SB-75MHz", "stretched-75MHz"])
def test_random_traffic_reads_back_what_was_written(chip, mhz, cas_latency):
    rng = random.Random(mhz * 10 + (cas_latency or 0))
    run = NativeRun(random_commands(rng, 2500))
    words: dict[int, int] = {}
    device = SdramDevice(chip, mhz)
    monitor = run_native(chip, mhz, run, words, cas_latency=cas_latency, device=device)
    assert len(run.expected) > 800
    assert run.read == run.expected
    for addr, value in words.items():
        assert int.from_bytes(device.memory.read_back(2 * addr, 2).tobytes(), "little") == value
    assert len(monitor.running_refreshes) >= 20  # refreshes in the middle of the traffic
    assert monitor.max_debt <= 1  # never postponed by more than the one falling due


def test_sequential_hits_issue_a_word_per_cycle():
    """Writes, reads, writes and reads of one row: a command per cycle, but for the bus
    turnaround from the reads to the writes (the write's data after the read data and an idle
    cycle: CL + `BUS_TURNAROUND` idle cycles)."""
    addresses = [word_address(1, 7, column) for column in range(256)]
    first, second = ([(addr, 1, rng.randrange(1 << 16), 0b11, 0) for addr in addresses]
                     for rng in (random.Random(1), random.Random(2)))
    reads = [(addr, 0, 0, 0, 0) for addr in addresses]
    run = NativeRun(first + reads + second + reads)
    monitor = run_native(sdram_helpers.without_refresh(FAST), 75, run, {})
    assert run.read == [data for _, _, data, _, _ in first + second]
    assert not monitor.running_refreshes
    assert run.accepted[-1] - run.accepted[0] + 1 == len(run.commands) + cas_latency_at(FAST, 75) + BUS_TURNAROUND


def test_datasheet_chip_refreshes_during_traffic():
    """Every datasheet figure (100 us power-up, tREFI 7.8 us = 586 cycles at 75 MHz): the
    traffic, about 4,700 cycles after the 7,500 of the power-up wait, has refreshes within it."""
    rng = random.Random(7)
    run = NativeRun(random_commands(rng, 500))
    monitor = run_native(IS42S16160G_7, 75, run, {})
    assert run.read == run.expected
    assert len(monitor.running_refreshes) >= 5
    assert all(run.accepted[0] < edge < run.accepted[-1] for edge in monitor.running_refreshes)
    assert monitor.max_debt <= 1


def test_cas_latency_and_timing_come_from_the_chip_at_the_clock():
    assert [cas_latency_at(IS42S16160G_7, mhz) for mhz in (75, 100, 133)] == [2, 2, 3]
    assert read_latency(2) == 4
    with pytest.raises(ConfigError, match="CAS latency"):
        SdramController(IS42S16160G_7, 133, cas_latency=2)
    with pytest.raises(ConfigError, match="CAS latency"):
        SdramController(IS42S16160G_7, 150)
    cycles = SdramCycles.at(IS42S16160G_7, 75)
    assert (cycles.rp, cycles.rcd, cycles.ras, cycles.rc, cycles.rrd, cycles.wr, cycles.rfc, cycles.mrd) == \
        (2, 2, 3, 5, 2, 2, 5, 2)
    assert cycles.refresh_interval == 585 and cycles.power_up == 7500


# ---- SdramMainMemory ----------------------------------------------------------------------------

def test_memory_accepts_only_a_16_bit_port_and_a_size_the_chip_holds():
    with pytest.raises(ConfigError, match="16-bit"):
        SdramMainMemory(MemoryPort(4, 8), 1 << 20, IS42S16160G_7, 75)
    with pytest.raises(ConfigError, match="at most"):
        SdramMainMemory(MemoryPort(2, 8), 2 * IS42S16160G_7.bytes, IS42S16160G_7, 75)


def block_address(rng: random.Random) -> int:
    """The byte address of a random burst block in a random bank and one of a few rows."""
    column = rng.randrange(IS42S16160G_7.columns // BURST_BEATS) * BURST_BEATS
    return 2 * word_address(rng.randrange(4), rng.choice([0, 3, 4000, 8191]), column)


def within(rng: random.Random, block: int) -> tuple[int, int]:
    """A random request inside a block: (byte address, beats)."""
    first = rng.randrange(BURST_BEATS)
    return block + 2 * first, rng.randint(1, BURST_BEATS - first)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_memory_under_accelerator_and_host_traffic(seed):
    """Read bursts of preloaded blocks under random back-pressure while write bursts (random
    masks, gaps) go to other blocks and the host reads and writes bytes elsewhere; then read
    bursts of everything written. Data checked against a reference, and the model's contents."""
    rng = random.Random(seed)
    chip, mhz = BUSY, 75
    blocks = list(dict.fromkeys(block_address(rng) for _ in range(120)))
    preloaded, written_blocks, host_block = blocks[:40], blocks[40:-1], blocks[-1]
    device = SdramDevice(chip, mhz)
    reference: dict[int, int] = {}  # byte address -> byte
    for block in [*preloaded, host_block]:
        image = rng.randbytes(2 * BURST_BEATS)
        device.memory.preload(block, image)
        reference.update({block + offset: value for offset, value in enumerate(image)})

    reads = [within(rng, rng.choice(preloaded)) for _ in range(150)]
    expected = [reference[addr + offset] for addr, beats in reads for offset in range(2 * beats)]
    writes, final = [], dict(reference)
    for _ in range(150):
        addr, beats = within(rng, rng.choice(written_blocks))
        burst = []
        for index in range(beats):
            word = addr + 2 * index
            mask = rng.randrange(4) if word in final else 0b11  # a word's first write sets both bytes
            value = rng.randrange(1 << 16)
            burst.append((value, mask))
            final.update({word + lane: value >> 8 * lane & 0xFF for lane in range(2) if mask >> lane & 1})
        writes.append((addr, burst))
    check_back = sorted({addr & ~1 for addr in final if addr not in reference})
    reads_after = [(addr, 1) for addr in check_back]
    expected += [final[addr + lane] for addr in check_back for lane in range(2)]

    host_ops, host_expected, host_bytes = [], [], {addr: reference[addr] for addr in range(host_block, host_block + 16)}
    for _ in range(150):
        addr = host_block + rng.randrange(16)
        if rng.random() < 0.5:
            host_ops.append((addr, value := rng.randrange(256)))
            host_bytes[addr] = value
        else:
            host_ops.append((addr, None))
            host_expected.append(host_bytes[addr & ~1] | host_bytes[addr | 1] << 8)

    dut, log = memory(chip, mhz), Log()
    total_writes = sum(len(burst) for _, burst in writes)

    async def reader(ctx) -> None:
        await read_requester(dut, reads, log, initialization_cycles(chip, mhz))(ctx)
        while len(log.write_beats) < total_writes:
            await ctx.tick()
        await read_requester(dut, reads_after, log)(ctx)

    monitor = simulate(dut, chip, mhz, [reader, read_consumer(dut, len(expected) // 2, log, ready=0.6, seed=1),
                                        writer(dut, writes, log, gaps=0.3, seed=2), host(dut, host_ops, log, gaps=3)],
                       device)
    data = [byte for _, word in log.read_beats for byte in (word & 0xFF, word >> 8)]
    assert data == expected
    assert log.host_reads == host_expected
    for addr, value in {**final, **host_bytes}.items():
        assert device.memory.read_back(addr, 1)[0] == value
    assert len(monitor.running_refreshes) >= 5 and monitor.max_debt <= 1


def test_preloaded_image_reads_back_through_the_accelerator_port_and_the_host_port():
    """The controller's address mapping agrees with the model's (`preload`): an image across
    row and bank boundaries reads back byte for byte."""
    chip, mhz = FAST, 75
    start = 2 * (IS42S16160G_7.columns - 4 * BURST_BEATS) + 2 * ROW_WORDS * 5  # 64 words before a bank's end
    image = np.random.default_rng(5).integers(0, 256, size=3 * 2 * IS42S16160G_7.columns, dtype=np.uint8)
    device = SdramDevice(chip, mhz)
    device.memory.preload(start, image)
    bursts = [(addr, BURST_BEATS) for addr in range(start, start + len(image), 2 * BURST_BEATS)]
    probes = [start + offset for offset in (0, 1, 127, 128, 1023, 1024, len(image) - 1)]
    dut, log = memory(chip, mhz), Log()
    simulate(dut, chip, mhz, [read_requester(dut, bursts, log, initialization_cycles(chip, mhz)),
                              read_consumer(dut, len(image) // 2, log, ready=0.8),
                              host(dut, [(addr, None) for addr in probes], log)], device)
    data = np.array([byte for _, word in log.read_beats for byte in (word & 0xFF, word >> 8)], dtype=np.uint8)
    assert np.array_equal(data, image)
    assert log.host_reads == [int(image[(addr & ~1) - start]) | int(image[(addr | 1) - start]) << 8 for addr in probes]


def test_sequential_burst_bandwidth_and_read_latency():
    """Long sequential 8-beat bursts at 75 MHz with the datasheet's tREFI. Bounds from the
    timing: per tREFI (585 cycles) a refresh costs at most tRAS + tRP + tRFC + tRCD + the read
    pipeline's refill (~16 cycles), per 512 words a new row costs at most tRP + tRCD + 2, so
    reads and writes sustain more than 0.9 words (1.8 bytes) per cycle including refreshes."""
    chip, mhz, size = FAST, 75, 6144
    reads, writes = measure_reads(chip, mhz, size), measure_writes(chip, mhz, size)
    miss, hit = sdram_helpers.read_latency(chip, mhz)
    print(f"\nsequential 8-beat bursts at {mhz} MHz: reads {reads.bytes_per_cycle:.3f} B/cycle, "
          f"writes {writes.bytes_per_cycle:.3f} B/cycle (peak 2); {reads.refreshes} and {writes.refreshes} "
          f"refreshes; read latency {hit} cycles (open row), {miss} (closed row)")
    assert reads.refreshes >= 4 and writes.refreshes >= 4
    assert reads.bytes_per_cycle >= 1.8 and writes.bytes_per_cycle >= 1.8
    assert hit == 3 + read_latency(cas_latency_at(chip, mhz))  # request register, issue, controller, FIFO
    assert miss == hit + SdramCycles.at(chip, mhz).rcd  # the bank was closed: ACTIVE, then tRCD
