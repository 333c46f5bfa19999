"""The double buffer against a two-bank Python model, and a DMA load through it."""
from __future__ import annotations

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from hwgen.buffers import DoubleBuffer, bank_shape
from hwgen.dma import Descriptor, Dim
from hwgen.dma.descriptor import DmaParams
from hwgen.dma.controller import Dma
from sim.memory_model import MemoryModel
from hw_configs import data_config

WORD, DEPTH = 4, 16


def _run(m: Module, *processes, testbench) -> None:
    sim = Simulator(m)
    sim.add_clock(1e-6)
    for process in processes:
        sim.add_process(process)
    sim.add_testbench(testbench)
    sim.run()


SIDES = {"both": (("write", "read"), ("write", "read")), "load": (("write",), ("read",)),
         "store": (("read",), ("write",))}
"""What the DMA side and the compute side of a buffer of each flow do."""


@pytest.mark.parametrize("spram, merged, flow", [(False, False, "both"), (True, False, "both"), (False, False, "load"),
                                                 (True, False, "load"), (False, True, "load"), (False, False, "store"),
                                                 (True, False, "store"), (False, True, "store")],
                         ids=["block-ram", "spram", "one-way", "one-way-spram", "merged-banks", "store",
                              "store-spram", "store-merged-banks"])
def test_random_accesses_with_bank_selects(spram: bool, merged: bool, flow: str) -> None:
    """Both sides access random banks (never the same one while the DMA is active); SPRAM
    banks are single-ported, so there a side either reads or writes in a cycle; `load` buffers
    (and merged ones) have only the DMA side's write port and the compute side's read port,
    `store` buffers only the compute side's write port and the DMA side's read port."""
    rng = np.random.default_rng(0)
    dut = DoubleBuffer(WORD, DEPTH, spram=spram, merged=merged, flow=flow)
    dma_does, compute_does = SIDES[flow]
    banks = np.zeros((2, DEPTH, WORD), dtype=np.uint8)
    checked = [0]

    def port(side: str, direction: str, does: tuple[str, ...]):
        return getattr(dut, f"{side}_{'wr' if direction == 'write' else 'rd'}") if direction in does else None

    async def testbench(ctx):
        pending: list[tuple[int, int, np.ndarray, np.ndarray]] = []
        for _ in range(400):
            dma_active = bool(rng.random() < 0.6)
            dma_bank = int(rng.integers(2))
            compute_bank = 1 - dma_bank if dma_active else int(rng.integers(2))
            for direction in dma_does:
                if f"dma_{direction}_active" in dut.signature.members:
                    ctx.set(getattr(dut, f"dma_{direction}_active"), dma_active)
                ctx.set(getattr(dut, f"dma_{direction}_bank"), dma_bank)
            ctx.set(dut.compute_bank, compute_bank)
            reads = []
            dma_write = port("dma", "write", dma_does)
            sides = ((dma_write, port("dma", "read", dma_does), dma_bank, dma_active),
                     (port("compute", "write", compute_does), port("compute", "read", compute_does), compute_bank,
                      True))
            for write, read, bank, active in sides:
                addr, value, mask = int(rng.integers(DEPTH)), rng.integers(0, 256, WORD, dtype=np.uint8), int(rng.integers(1 << WORD))
                mask = mask if active and write is not None else 0
                read_addr, read_en = int(rng.integers(DEPTH)), bool(rng.integers(2)) and active and read is not None
                if spram:  # one access per cycle: a read, or a write at the same address
                    mask, read_addr = (0, read_addr) if read_en else (mask, addr)
                if write is not None:
                    ctx.set(write.addr, addr)
                    ctx.set(write.data, int.from_bytes(value.tobytes(), "little"))
                    ctx.set(write.en, int(rng.integers(1 << WORD)) if not dma_active and write is dma_write else mask)
                if read is not None:
                    ctx.set(read.addr, read_addr)
                    ctx.set(read.en, read_en)
                if read_en:  # reads see the contents before this cycle's writes
                    reads.append((read.data, banks[bank, read_addr].tobytes()))
                enabled = np.array([mask >> i & 1 for i in range(WORD)], dtype=bool)
                pending.append((bank, addr, value, enabled))
            await ctx.tick()
            for bank, addr, value, enabled in pending:
                banks[bank, addr][enabled] = value[enabled]
            pending.clear()
            for data, expected in reads:
                assert ctx.get(data).to_bytes(WORD, "little") == expected
                checked[0] += 1

    m = Module()
    m.submodules.dut = dut
    _run(m, testbench=testbench)
    assert checked[0] > 100  # the DMA side reads in 30% of the cycles, the compute side in 50%


def test_dma_loads_the_dma_bank_then_compute_reads_it() -> None:
    params = DmaParams(bus_bytes=2, burst_beats=4, buf_word_bytes=WORD, buf_depth=DEPTH)
    rng = np.random.default_rng(1)
    dram = rng.integers(0, 256, 256, dtype=np.uint8)
    m = Module()
    m.submodules.dma = dma = Dma(params)
    m.submodules.buffer = buffer = DoubleBuffer(WORD, DEPTH)  # the acc buffer's kind: both sides read and write
    wiring.connect(m, dma.buf_wr, buffer.dma_wr)
    wiring.connect(m, dma.buf_rd, buffer.dma_rd)
    model = MemoryModel(dma.port, dram, bus_bytes=2, burst_beats=4, latency=4, stall=0.2, seed=2)
    # Two loads: a contiguous block, then rows 5 bytes apart (unaligned) packed into the buffer.
    descs = [Descriptor(load=True, dram_addr=3, buf_addr=0, run_bytes=32),
             Descriptor(load=True, dram_addr=101, buf_addr=32, run_bytes=8, dims=(Dim(4, 13, 8),))]
    expected = np.concatenate([dram[3:35], *[dram[101 + 13 * i:109 + 13 * i] for i in range(4)]])
    got = []

    async def testbench(ctx):
        ctx.set(buffer.dma_write_bank, 1)
        ctx.set(buffer.dma_read_bank, 1)
        ctx.set(buffer.compute_bank, 0)
        for desc in descs:
            ctx.set(dma.desc.payload, params.encode(desc))
            ctx.set(dma.desc.valid, 1)
            ctx.set(buffer.dma_write_active, 1)
            ctx.set(buffer.dma_read_active, 1)
            await ctx.tick().until(dma.desc.ready)
            ctx.set(dma.desc.valid, 0)
            await ctx.tick().until(dma.done)
        ctx.set(buffer.dma_write_active, 0)
        ctx.set(buffer.dma_read_active, 0)
        ctx.set(buffer.compute_bank, 1)
        for addr in range(DEPTH):
            ctx.set(buffer.compute_rd.addr, addr)
            await ctx.tick()
            got.append(ctx.get(buffer.compute_rd.data).to_bytes(WORD, "little"))

    _run(m, model.process, testbench=testbench)
    assert b"".join(got) == expected.tobytes()


def test_sizes_from_config() -> None:
    config = data_config("ice40up5k")  # pe 2x2x2, buffers 32/32/64 KB
    sizes = {kind: bank_shape(config, kind) for kind in ("input", "weight", "param", "acc")}
    assert sizes == {"input": (4, 4096), "weight": (4, 4096), "param": (16, 512), "acc": (8, 4096)}


def test_spram_banks_map_to_sb_spram256ka() -> None:
    """On an iCE40UP platform each 32-bit SPRAM bank is two SB_SPRAM256KA side by side."""
    from amaranth.back.verilog import convert

    from boards.yosys import synthesize

    class UP5K:
        device = "iCE40UP5K"

    verilog = convert(DoubleBuffer(4, 4096, spram=True), name="top", platform=UP5K())
    cells = synthesize("ice40", verilog)
    assert cells.get("SB_SPRAM256KA") == 4


@pytest.mark.parametrize("merged, flow", [(False, "both"), (False, "load"), (True, "load"), (False, "store"),
                                          (True, "store")],
                         ids=["two-memories", "one-way", "merged-banks", "store", "store-merged-banks"])
def test_block_ram_read_data_is_not_re_registered(merged: bool, flow: str) -> None:
    """An SB_RAM40_4K registers its read data itself: a bank of 64-bit words needs no flip-flop
    for read data or delayed writes (Yosys' read-first emulation), only its read-bank selects."""
    from amaranth.back.verilog import convert

    from boards.yosys import synthesize

    class UP5K:
        device = "iCE40UP5K"

    cells = synthesize("ice40", convert(DoubleBuffer(8, 256, merged=merged, flow=flow), name="top", platform=UP5K()))
    assert cells.get("SB_RAM40_4K") == 8
    assert sum(count for cell, count in cells.items() if cell.startswith("SB_DFF")) <= 4
    # one-way (either flow): no selection logic but the read data's bank select and one
    # write-enable gate per byte and bank (a few more for Yosys' decomposition), and no gate per
    # read-data bit (with which Yosys would emulate an initial value of the read register); the
    # merged bank has no bank select
    if flow != "both":
        assert cells.get("SB_LUT4", 0) <= (0 if merged else 64 + 2) + 8 * (1 if merged else 2) + 16
