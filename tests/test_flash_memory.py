"""Main memory split between the SPI flash and SPRAM (`boards.spiflash.memory.FlashMainMemory`)
against the flash model and a byte array: reads below the constants' end come from the flash at
the offset, the rest from SPRAM at address - constant_bytes, in request order under random
back-pressure; a write into the constants is dropped and flagged. And the flash image layout."""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from amaranth.sim import Simulator
from spiflash_helpers import CHIP, MHZ, Run, random_bursts

from boards.spiflash.image import ERASED, flash_image
from boards.spiflash.memory import FLASH_OFFSET, FlashMainMemory, check_flash_memory
from common.errors import ConfigError
from hwgen.memory_port import MemoryPort
from sim.spiflash.adapter import spiflash_testbench
from sim.spiflash.device import SpiFlashDevice

PORT = MemoryPort(1, 16, 17)  # the icebreaker configuration's bus
CONSTANTS = 512
SPRAM = 512


def simulate(memory: FlashMainMemory, device: SpiFlashDevice, run: Run, writes: list[tuple[int, int]]) -> Run:
    """`writes` (address, byte) first, then `run`'s read bursts on `memory.port`."""
    sim = Simulator(memory)
    sim.add_clock(1e-6 / MHZ)
    sim.add_testbench(spiflash_testbench(device, memory.flash), background=True)

    async def write(ctx) -> None:
        for address, value in writes:
            ctx.set(memory.port.wr.valid, 1)
            ctx.set(memory.port.wr.payload, {"addr": address, "data": value, "mask": 1, "last": 1})
            await ctx.tick()
        ctx.set(memory.port.wr.valid, 0)

    sim.add_testbench(write)
    for testbench in run.testbenches(SimpleNamespace(rd_req=memory.port.rd_req, rd_data=memory.port.rd_data)):
        sim.add_testbench(testbench)
    sim.run()
    return run


def test_reads_come_from_flash_or_spram_by_address_in_order():
    rng = random.Random(5)
    constants = rng.randbytes(CONSTANTS)
    device = SpiFlashDevice(CHIP, MHZ)
    device.preload(FLASH_OFFSET, constants)
    spram = bytearray(SPRAM)
    writes = []
    for address in rng.sample(range(SPRAM), 160):
        value = rng.randrange(256)
        writes.append((CONSTANTS + address, value))
        spram[address] = value
    requests = random_bursts(90, CONSTANTS + SPRAM, 1, 16, seed=7, sequential=0.4)
    requests[0] = (requests[0][0], requests[0][1], len(writes) + 2)  # reads after the writes
    memory = FlashMainMemory(PORT, SPRAM, CONSTANTS, CHIP, MHZ)
    run = simulate(memory, device, Run(requests, ready_probability=0.6, seed=2), writes)
    image = constants + bytes(spram)
    expected = b"".join(image[address:address + beats] for address, beats, _ in requests)
    assert run.data(1) == expected
    # the test reaches both memories, and switches between them
    sides = [address < CONSTANTS for address, _, _ in requests]
    assert any(sides) and not all(sides) and sum(a != b for a, b in zip(sides, sides[1:])) > 10


def test_a_write_into_the_constants_is_dropped_and_flagged():
    device = SpiFlashDevice(CHIP, MHZ)
    device.preload(FLASH_OFFSET, bytes(CONSTANTS))
    memory = FlashMainMemory(PORT, SPRAM, CONSTANTS, CHIP, MHZ)
    flagged = {}

    async def watch(ctx) -> None:
        assert not ctx.get(memory.write_fault)
        ctx.set(memory.port.wr.valid, 1)
        ctx.set(memory.port.wr.payload, {"addr": 16, "data": 0xAB, "mask": 1, "last": 1})
        await ctx.tick()
        ctx.set(memory.port.wr.valid, 0)
        await ctx.tick()
        flagged["fault"] = ctx.get(memory.write_fault)
        flagged["spram"] = ctx.get(memory.spram.port.wr.valid)

    sim = Simulator(memory)
    sim.add_clock(1e-6 / MHZ)
    sim.add_testbench(spiflash_testbench(device, memory.flash), background=True)
    sim.add_testbench(watch)
    sim.run()
    assert flagged == {"fault": 1, "spram": 0}


@pytest.mark.parametrize("constants, offset, message", [
    (520, FLASH_OFFSET, "must end on a 16-byte burst block"),
    (512, FLASH_OFFSET + 4096, "must be a multiple of 0x10000"),
    (16 << 20, FLASH_OFFSET, r"do not fit the W25Q128JV-IM after offset 0x100000: at most 15,728,640 bytes"),
])
def test_a_layout_the_flash_cannot_serve_is_refused(constants, offset, message):
    with pytest.raises(ConfigError, match=message):
        check_flash_memory(PORT, constants, CHIP, offset)


def test_the_flash_image_is_the_bitstream_then_erased_bytes_then_the_constants():
    bitstream, constants = bytes([1, 2, 3]) * 100, bytes(range(200))
    image = flash_image(bitstream, constants)
    assert len(image) == FLASH_OFFSET + len(constants)
    assert image[:300] == bitstream and image[FLASH_OFFSET:] == constants
    assert set(image[300:FLASH_OFFSET]) == {ERASED}
    with pytest.raises(ConfigError, match="runs past the constants' flash offset 0x100000"):
        flash_image(bytes(FLASH_OFFSET + 1), constants)
