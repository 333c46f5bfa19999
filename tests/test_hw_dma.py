"""The DMA RTL against the byte-level reference (`sim.dma_model`) on the simulated DRAM, with
either walker (`levels`, and `pointer` at compact widths: the template's `dma: shared`), and
the `pointer` DMA that reads its descriptor through and walks three loops (`held`: the
iCEBreaker's `template.dma_descriptor: reader`, `dma_loops: 3`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from hwgen.dma import Descriptor, DescriptorError, Dim
from hwgen.dma.descriptor import DmaParams
from hwgen.dma.controller import Dma
from hwgen.dma.queue import BlockRamQueue
from hwgen.timing import SHARED_START_SAVING
from sim.dma_model import DmaTraffic, run_descriptor
from sim.memory_model import MemoryModel

DRAM_BYTES = 1024
PARAMS = {
    "bus2": DmaParams(bus_bytes=2, burst_beats=4, buf_word_bytes=8, buf_depth=64),
    "bus4": DmaParams(bus_bytes=4, burst_beats=2, buf_word_bytes=4, buf_depth=128),
    "bus1": DmaParams(bus_bytes=1, burst_beats=8, buf_word_bytes=4, buf_depth=128),
}
WALKERS = ("levels", "pointer", "held")


def variant(params: DmaParams, walker: str) -> DmaParams:
    """`params` with `walker`; the `pointer` walker as `template.dma: shared` has it: narrow
    segment queues, the narrowest widths these tests need (DRAM addresses of the 1 KiB memory,
    counts one bit over the buffer address, small coordinates, buffer writes straight from the
    realigner); `held`: that DMA with `entry_held` (it keeps only `load`) and three outer loops."""
    if walker == "levels":
        return params
    held = walker == "held"
    return replace(params, walker="pointer", addr_width=11, count_width=params.buf_addr_width + 1, coord_width=10,
                   narrow_queues=True, entry_held=held, outer_dims=3 if held else 4, timing_registers=False)


JUNK = Descriptor(load=True, dram_addr=0x155, buf_addr=0x2A, run_bytes=5, dims=(Dim(3, 7, 9, 1, -2),), run_dx=1,
                  y0=-3, x0=4, height=2, width=3, fill=0xA5)
"""What the driver offers once the DMA has taken a descriptor: a DMA must not read beyond what
its source holds (nothing, or with `entry_held` all but `load`)."""


@dataclass
class Outcome:
    dram: np.ndarray
    buffer: np.ndarray
    model: MemoryModel
    busy_cycles: list[int]
    stall_cycles: list[int]


def simulate(params: DmaParams, dram: np.ndarray, buffer: np.ndarray, descs: list[Descriptor], *, latency: int = 1,
             stall: float = 0.0, bandwidth: Fraction = Fraction(1), seed: int = 0) -> Outcome:
    """Run `descs` one after another on a DMA wired to a plain buffer memory and the DRAM model."""
    m = Module()
    m.submodules.dma = dma = Dma(params)
    words = buffer.reshape(-1, params.buf_word_bytes)
    init = [int.from_bytes(w.tobytes(), "little") for w in words]
    m.submodules.bank = bank = Memory(shape=8 * params.buf_word_bytes, depth=params.buf_depth, init=init)
    wiring.connect(m, dma.buf_wr, bank.write_port(granularity=8))
    wiring.connect(m, dma.buf_rd, bank.read_port())
    model = MemoryModel(dma.port, dram.copy(), bus_bytes=params.bus_bytes, burst_beats=params.burst_beats,
                        latency=latency, beats_per_cycle=bandwidth, stall=stall, seed=seed)
    out = Outcome(model.storage, buffer.copy(), model, [], [])

    async def wait_for(ctx, signal, limit: int = 20000) -> None:
        for _ in range(limit):
            if (await ctx.tick().sample(signal))[2]:
                return
        raise AssertionError(f"timeout waiting for {signal.name}")

    async def driver(ctx):
        for desc in descs:
            ctx.set(dma.desc.payload, params.encode(desc))
            ctx.set(dma.desc.valid, 1)
            await wait_for(ctx, dma.desc.ready)
            ctx.set(dma.desc.valid, 0)
            if params.entry_held:
                ctx.set(dma.desc.payload.load, not desc.load)
            else:  # the `pointer` walker's descriptors have run_dx 0
                ctx.set(dma.desc.payload, params.encode(replace(JUNK, run_dx=int(params.walker == "levels"))))
            await wait_for(ctx, dma.done)
            out.busy_cycles.append(ctx.get(dma.busy_cycles))
            out.stall_cycles.append(ctx.get(dma.stall_cycles))
        for i in range(params.buf_depth):
            value = ctx.get(bank.data[i])
            out.buffer[i * params.buf_word_bytes:(i + 1) * params.buf_word_bytes] = list(
                value.to_bytes(params.buf_word_bytes, "little"))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_process(model.process)
    sim.add_testbench(driver)
    sim.run()
    return out


def reference(params: DmaParams, dram: np.ndarray, buffer: np.ndarray, descs: list[Descriptor]):
    dram, buffer, traffic = dram.copy(), buffer.copy(), DmaTraffic()
    for desc in descs:
        run_descriptor(desc, dram, buffer, params.bus_bytes, traffic)
    return dram, buffer, traffic


def check(params: DmaParams, dram: np.ndarray, buffer: np.ndarray, descs: list[Descriptor], **kwargs) -> Outcome:
    """Simulate and compare memories and DRAM traffic with the reference."""
    out = simulate(params, dram, buffer, descs, **kwargs)
    want_dram, want_buffer, traffic = reference(params, dram, buffer, descs)
    np.testing.assert_array_equal(out.buffer, want_buffer)
    np.testing.assert_array_equal(out.dram, want_dram)
    assert out.model.stats.bytes_read == traffic.bytes_read
    assert out.model.stats.bytes_written == traffic.bytes_written
    return out


def random_descriptor(rng: np.random.Generator, params: DmaParams, load: bool, padded: bool) -> Descriptor:
    """Random loops (at most 12 runs of at most 24 bytes) that stay inside both memories."""
    buf_bytes = params.buf_depth * params.buf_word_bytes
    run = int(rng.integers(1, 25))
    while True:
        counts = [int(c) for c in rng.integers(1, 4, int(rng.integers(0, params.outer_dims + 1)))]
        if np.prod(counts) <= 12:
            break
    dims = tuple(Dim(c, int(rng.integers(0, 48)), int(rng.integers(0, 48)), int(rng.integers(-1, 3)),
                     int(rng.integers(-3, 8))) for c in counts)
    if params.walker == "pointer":  # it moves each coordinate with one loop: y with the first, x with the last
        dims = tuple(replace(d, dy=d.dy * (j == 0), dx=d.dx * (j == len(dims) - 1)) for j, d in enumerate(dims))
    dram_extent = run + sum((d.count - 1) * d.dram_stride for d in dims)
    buf_extent = run + sum((d.count - 1) * d.buf_stride for d in dims)
    bounds = {}
    if padded:  # a window [0, H) x [0, W) that cuts through the coordinates the loops visit
        run_dx = int(rng.integers(0, 2)) * (params.walker == "levels")  # the `pointer` walker's runs: run_dx 0
        ys = [sum(i * d.dy for i, d in zip(index, dims)) for index in np.ndindex(*counts)]
        xs = [sum(i * d.dx for i, d in zip(index, dims)) for index in np.ndindex(*counts)]
        x_lo, x_hi = min(xs), max(xs) + run_dx * (run - 1)
        y_start, x_start = int(rng.integers(min(ys) - 1, max(ys) + 1)), int(rng.integers(x_lo - 2, x_hi + 1))
        bounds = dict(run_dx=run_dx, y0=-y_start, x0=-x_start, height=int(rng.integers(1, max(ys) - min(ys) + 3)),
                      width=int(rng.integers(1, x_hi - x_lo + 4)))
    return Descriptor(load=load, dram_addr=int(rng.integers(0, DRAM_BYTES - dram_extent + 1)),
                      buf_addr=int(rng.integers(0, buf_bytes - buf_extent + 1)), run_bytes=run, dims=dims,
                      fill=int(rng.integers(0, 256)), **bounds)


@pytest.mark.parametrize("walker", WALKERS)
@pytest.mark.parametrize("name", list(PARAMS))
@pytest.mark.parametrize("seed", range(8))
def test_random_descriptors_under_stalls(name: str, seed: int, walker: str) -> None:
    params = variant(PARAMS[name], walker)
    rng = np.random.default_rng(seed * 101 + len(name))
    dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    buffer = rng.integers(0, 256, params.buf_depth * params.buf_word_bytes, dtype=np.uint8)
    descs = [random_descriptor(rng, params, load=bool(rng.integers(0, 2)), padded=bool(rng.integers(0, 2)))
             for _ in range(6)]
    check(params, dram, buffer, descs, latency=int(rng.integers(1, 12)), stall=[0.0, 0.3, 0.6][seed % 3],
          bandwidth=Fraction(1, 1 + seed % 2), seed=seed)


@pytest.mark.parametrize("walker", WALKERS)
def test_phase_decomposed_input_tile_with_padding(walker: str) -> None:
    """An input tile in the buffer layout [group][h][phase][index][lane] with padding on every side:
    four loops, x moving with two; the `pointer` DMA (which moves each coordinate with one loop,
    and with `entry_held` has three) refuses that and takes one descriptor per phase, as the
    compiler emits them."""
    params = variant(PARAMS["bus2"], walker)
    height, width, channels, lanes, stride, fill = 5, 7, 4, 2, 2, 0x80
    groups, rows, indices, base, buf_addr = channels // lanes, 6, 5, 64, 8
    rng = np.random.default_rng(11)
    image = rng.integers(0, 256, (height, width, channels), dtype=np.uint8)
    dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    dram[base:base + image.size] = image.ravel()
    y0 = x0 = -1
    index, row, group = (Dim(indices, stride * channels, lanes, dx=stride),
                         Dim(rows, width * channels, stride * indices * lanes, dy=1),
                         Dim(groups, lanes, rows * stride * indices * lanes))
    desc = Descriptor(load=True, dram_addr=base + (y0 * width + x0) * channels, buf_addr=buf_addr, run_bytes=lanes,
                      dims=(index, Dim(stride, channels, indices * lanes, dx=1), row, group),
                      y0=y0, x0=x0, height=height, width=width, fill=fill)
    descs = [desc]
    if params.walker == "pointer":
        with pytest.raises(DescriptorError, match=r"dx moves with loops \[0, 1\]"):
            params.encode(desc)
        if params.outer_dims < 4:
            with pytest.raises(DescriptorError, match=r"dims\[3\]\.count 2 > 1 beyond the DMA's 3 loops"):
                params.encode(desc)
        descs = [replace(desc, dram_addr=desc.dram_addr + phase * channels, buf_addr=buf_addr + phase * indices * lanes,
                         dims=(index, row, group), x0=x0 + phase) for phase in range(stride)]
    buffer = np.zeros(params.buf_depth * params.buf_word_bytes, dtype=np.uint8)
    expected = buffer.copy()
    tile = np.full((groups, rows, stride, indices, lanes), fill, dtype=np.uint8)
    for g, h, p, i, lane in np.ndindex(*tile.shape):
        y, x = y0 + h, x0 + i * stride + p
        if 0 <= y < height and 0 <= x < width:
            tile[g, h, p, i, lane] = image[y, x, g * lanes + lane]
    expected[buf_addr:buf_addr + tile.size] = tile.ravel()
    np.testing.assert_array_equal(reference(params, dram, buffer, descs)[1], expected)
    check(params, dram, buffer, descs, latency=6, stall=0.3, seed=4)


@pytest.mark.parametrize("walker", WALKERS)
def test_clipped_output_tile_store(walker: str) -> None:
    """A (rows, pixels, channels) tile stored row by row with x in bytes (`run_dx` 1), or by
    the `pointer` walker, which refuses that, pixel by pixel; the part beyond W is skipped."""
    params = variant(PARAMS["bus4"], walker)
    height, width, channels, rows, pixels, base = 4, 7, 4, 3, 4, 100
    rng = np.random.default_rng(12)
    dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    buffer = rng.integers(0, 256, params.buf_depth * params.buf_word_bytes, dtype=np.uint8)
    y0, w0 = 2, 5
    row = Dim(rows, width * channels, pixels * channels, dy=1)
    desc = Descriptor(load=False, dram_addr=base + (y0 * width + w0) * channels, buf_addr=3,
                      run_bytes=pixels * channels, dims=(row,), run_dx=1, y0=y0, x0=w0 * channels,
                      height=height, width=width * channels)
    if params.walker == "pointer":
        with pytest.raises(DescriptorError, match=r"run_dx 1 \(its runs are all padding or all data: run_dx 0\)"):
            params.encode(desc)
        desc = replace(desc, run_bytes=channels, dims=(Dim(pixels, channels, channels, dx=1), row), run_dx=0,
                       x0=w0, width=width)
    expected = dram.copy()
    image = expected[base:base + height * width * channels].reshape(height, width, channels)
    tile = buffer[3:3 + rows * pixels * channels].reshape(rows, pixels, channels)
    image[y0:, w0:] = tile[:height - y0, :width - w0]
    np.testing.assert_array_equal(reference(params, dram, buffer, [desc])[0], expected)
    check(params, dram, buffer, [desc], latency=3, stall=0.5, seed=5)


@pytest.mark.parametrize("walker", WALKERS)
@pytest.mark.parametrize("load", [True, False])
def test_contiguous_throughput(load: bool, walker: str) -> None:
    """Without stalls a long contiguous transfer moves close to one bus beat per cycle."""
    params = variant(DmaParams(bus_bytes=4, burst_beats=8, buf_word_bytes=16, buf_depth=64), walker)
    size = params.buf_depth * params.buf_word_bytes
    rng = np.random.default_rng(13)
    dram = rng.integers(0, 256, DRAM_BYTES + size, dtype=np.uint8)
    buffer = rng.integers(0, 256, size, dtype=np.uint8)
    desc = Descriptor(load=load, dram_addr=DRAM_BYTES, buf_addr=0, run_bytes=size)
    out = simulate(params, dram, buffer, [desc], latency=8)
    np.testing.assert_array_equal(out.buffer if load else out.dram[DRAM_BYTES:], (dram[DRAM_BYTES:] if load else buffer))
    beats_per_cycle = size // params.bus_bytes / out.busy_cycles[0]
    print(f"{'load' if load else 'store'}: {size // params.bus_bytes} beats in {out.busy_cycles[0]} cycles "
          f"= {beats_per_cycle:.3f} beats/cycle ({out.stall_cycles[0]} stalled)")
    assert beats_per_cycle >= 0.8
    assert out.busy_cycles[0] - out.stall_cycles[0] >= size // params.bus_bytes


@pytest.mark.parametrize("seed", range(3))
def test_pointer_dma_takes_the_cycles_of_the_levels_dma_less_its_source_queue(seed: int) -> None:
    """The `pointer` DMA, with or without `entry_held`, takes the cycles of the `levels` DMA on
    the same descriptors, but `SHARED_START_SAVING` fewer when the first run moves data: its
    walker hands runs to the source side directly, not through a two-cycle source queue (the
    program and cost models count that saving, `planner.transfer_work.transfer_cycles`)."""
    rng = np.random.default_rng(seed + 40)
    params = PARAMS["bus2"]
    dram = rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    buffer = rng.integers(0, 256, params.buf_depth * params.buf_word_bytes, dtype=np.uint8)
    descs = [random_descriptor(rng, variant(params, "held"), load=bool(rng.integers(0, 2)),
                               padded=bool(rng.integers(0, 2))) for _ in range(6)]  # at most three loops
    levels, pointer, held = (check(variant(params, walker), dram, buffer, descs, latency=5).busy_cycles
                             for walker in WALKERS)
    first_moves_data = [0 <= d.y0 < d.height and 0 <= d.x0 < d.width for d in descs]
    assert pointer == held == [cycles - SHARED_START_SAVING * moves for cycles, moves in zip(levels, first_moves_data)]


@pytest.mark.parametrize("depth", [2, 3, 5])
def test_block_ram_queue_with_staged_entries_runs_like_amaranths_buffered_fifo(depth: int) -> None:
    """`BlockRamQueue` with entries stored before they become due (`w_en` then `w_commit`, up to
    four cycles later, other words on `w_data` meanwhile) against `SyncFIFOBuffered` written
    in the commit cycles: the same `w_rdy`, `r_rdy`, `level` and read data in every cycle."""
    m = Module()
    m.submodules.queue = queue = BlockRamQueue(8, depth)
    m.submodules.reference = reference = SyncFIFOBuffered(width=8, depth=depth)
    rng = np.random.default_rng(depth)

    async def bench(ctx):
        staged, wait = None, 0  # the stored entry's data and the cycles until its commit
        for _ in range(600):
            write = staged is None and ctx.get(queue.w_rdy) and rng.random() < 0.6
            if write:
                staged, wait = int(rng.integers(0, 256)), int(rng.integers(0, 5))
            due = staged is not None and wait == 0
            ctx.set(queue.w_data, staged if write else int(rng.integers(0, 256)))
            ctx.set(queue.w_en, write)
            ctx.set(queue.w_commit, due)
            ctx.set(reference.w_data, staged if due else 0)
            ctx.set(reference.w_en, due)
            read = bool(rng.random() < 0.5)
            ctx.set(queue.r_en, read)
            ctx.set(reference.r_en, read)
            pairs = [(queue.w_rdy, reference.w_rdy), (queue.r_rdy, reference.r_rdy), (queue.level, reference.level)]
            assert [ctx.get(a) for a, _ in pairs] == [ctx.get(b) for _, b in pairs]
            if ctx.get(queue.r_rdy):
                assert ctx.get(queue.r_data) == ctx.get(reference.r_data)
            staged, wait = (None, 0) if due else (staged, wait - 1)
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
