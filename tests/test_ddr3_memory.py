"""`boards.ddr3.memory.Ddr3MainMemory` against a model of LiteDRAM's native port written from its
protocol (`sim.litedram_native.NativePortModel`): commands taken at random, executed in order, a
write's data taken some cycles after its command (the data must be offered by then), a read's
word delivered some cycles after its command without back-pressure. Random accelerator
bursts (byte masks, partial bursts), reads with random `rd_data.ready` and host byte accesses,
all against a byte-array golden memory; and the init sequencer's CSR writes and waits, with no
native command before `init_done`. (LiteDRAM itself, in migen, is `bench/ddr3_litedram_sim.py`.)
"""
from __future__ import annotations

from amaranth.sim import Simulator

from boards.ddr3.init import CsrWrite, InitSequencer
from boards.ddr3.memory import Ddr3MainMemory, check_ddr3_memory
from hwgen.memory_port import MemoryPort
from common.errors import ConfigError
from ddr3_helpers import WORD_BYTES, RandomTraffic
from sdram_helpers import Clock
from sim.litedram_native import NativePortModel

import pytest

ADDRESS_BITS = 12  # native words: 64 KiB
SIZE = WORD_BYTES << ADDRESS_BITS
PROGRAM = (CsrWrite("a", 3, 0x11, 5), CsrWrite("b", 7, 0x2222), CsrWrite("c", 1, 1, 2))


def dut(burst_beats: int = 8) -> Ddr3MainMemory:
    return Ddr3MainMemory(MemoryPort(2, burst_beats), SIZE, ADDRESS_BITS, 8 * WORD_BYTES, PROGRAM)


def test_random_traffic_is_exact_against_the_native_port_model():
    """Random write bursts, read bursts and host accesses in program order: every read beat and
    host read equals the golden memory as of its request (no read passes an accepted write)."""
    memory_dut = dut()
    memory = bytearray(SIZE)
    model = NativePortModel(memory_dut, memory, ready=0.6, seed=1)
    traffic = RandomTraffic(memory_dut, SIZE, ops=120, seed=7)

    async def drive(ctx) -> None:
        await traffic.drive(ctx)
        for _ in range(40):  # the last writes reach the model
            await ctx.tick()

    sim = Simulator(memory_dut)
    sim.add_clock(1e-8)
    sim.add_testbench(model.testbench, background=True)
    sim.add_testbench(traffic.consume, background=True)
    sim.add_testbench(drive)
    sim.run()
    assert traffic.exact and len(traffic.expected) > 100 and traffic.host_got
    assert memory == traffic.golden
    writes = [command for command in model.commands if command[1]]
    assert len(writes) < len(model.commands) and writes


def test_a_full_burst_is_one_native_write():
    """Eight beats back to back in one native word: one write command with all 16 byte enables."""
    memory_dut = dut()
    memory = bytearray(SIZE)
    model = NativePortModel(memory_dut, memory)
    values = [0x1100 + 0x0101 * index for index in range(8)]

    async def drive(ctx) -> None:
        clock = Clock()
        await clock.until(ctx, memory_dut.init_done, what="init_done")
        ctx.set(memory_dut.port.wr.valid, 1)
        for index, value in enumerate(values):
            ctx.set(memory_dut.port.wr.payload,
                    {"addr": 0x40 + 2 * index, "data": value, "mask": 3, "last": index == 7})
            await clock.until(ctx, memory_dut.port.wr.ready, what="wr.ready")
        ctx.set(memory_dut.port.wr.valid, 0)
        for _ in range(30):
            await clock.tick(ctx)

    sim = Simulator(memory_dut)
    sim.add_clock(1e-8)
    sim.add_testbench(model.testbench, background=True)
    sim.add_testbench(drive)
    sim.run()
    written = b"".join(value.to_bytes(2, "little") for value in values)
    assert [command[1:] for command in model.commands] == [(True, 4, int.from_bytes(written, "little"), 0xFFFF)]
    assert memory[0x40:0x50] == written


def test_the_init_sequencer_writes_its_program_with_its_waits():
    sequencer = InitSequencer(PROGRAM)
    seen: list[tuple[int, int, int]] = []

    async def watch(ctx) -> None:
        clock = Clock()
        for _ in range(40):
            we, adr, value, done = await clock.tick(ctx, sequencer.csr.we, sequencer.csr.adr, sequencer.csr.dat_w,
                                                   sequencer.done)
            if we:
                assert not done
                seen.append((clock.cycle - 1, adr, value))
        assert done

    sim = Simulator(sequencer)
    sim.add_clock(1e-8)
    sim.add_testbench(watch)
    sim.run()
    # each write is one cycle; the next comes `wait` cycles after the cycle following it
    assert seen == [(0, 3, 0x11), (6, 7, 0x2222), (7, 1, 1)]


@pytest.mark.parametrize("bus_bytes, beats", [(2, 16), (4, 8)])
def test_a_burst_beyond_one_native_word_is_refused(bus_bytes, beats):
    with pytest.raises(ConfigError, match="at most 16 bytes"):
        check_ddr3_memory(MemoryPort(bus_bytes, beats), SIZE, WORD_BYTES, SIZE)


def test_a_size_beyond_the_chip_is_refused():
    with pytest.raises(ConfigError, match="at most the DDR3's 65536"):
        check_ddr3_memory(MemoryPort(2, 8), 2 * SIZE, WORD_BYTES, SIZE)
