"""The work one DMA descriptor makes the hardware do, counted from the descriptor alone.

`hwgen/dma/` walks a descriptor's runs, splits each run into segments (fill prefix, data,
fill suffix; stores keep only data), reads or writes whole bus beats, and realigns bytes
between DRAM and buffer words one bus word per cycle. `transfer_work` counts those segments,
realigner steps, bus beats and DRAM bytes with numpy over all runs at once; the program timing
model (`planner.program_model`) and the planner's cost model (`planner.cost`) turn them into
cycles with `transfer_cycles`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwgen.config import AcceleratorConfig, DmaDescriptor, DmaSharing, ProgramMemory
from hwgen.dma import Descriptor
from hwgen.timing import LOAD_START_CYCLES, LOOKUP_CYCLES, OFFER_CYCLES, SHARED_START_SAVING, STORE_START_CYCLES


def offer_cycles(config: AcceleratorConfig) -> int:
    """Cycles of a transfer's fixed part before it waits for the DMA (the command taken, the
    descriptor looked up): with `template.dma: shared` the unit waits there while the DMA runs
    the other unit's transfer. With `template.dma_descriptor: reader` the descriptor reader is
    held until the DMA is done, so the lookup waits too: it is part of the DMA's time."""
    if config.template.dma_descriptor == DmaDescriptor.READER:
        return OFFER_CYCLES
    return OFFER_CYCLES + lookup_cycles(config)


def lookup_cycles(config: AcceleratorConfig) -> int:
    """Cycles a LOAD or STORE spends reading its descriptor: 0 from the descriptor ROM; from
    the SPRAM program memory, a cycle per halfword of the entry plus `LOOKUP_CYCLES`."""
    if config.template.program_memory != ProgramMemory.SPRAM:
        return 0
    return lookup_halfwords(config) + LOOKUP_CYCLES


def lookup_halfwords(config: AcceleratorConfig) -> int:
    """Halfwords a LOAD or STORE reads from the SPRAM program memory for its descriptor (0 from
    the descriptor ROM): the fetch stage loses as many cycles to each lookup that overlaps it."""
    if config.template.program_memory != ProgramMemory.SPRAM:
        return 0
    # the entry's width is its generated layout's (HDL): imported for SPRAM program memories only
    from hwgen.dma.table import entry_halfwords
    from hwgen.dma.units import descriptor_table_params

    return entry_halfwords(descriptor_table_params(config))


@dataclass(frozen=True)
class TransferWork:
    """What one descriptor costs: `walker` cycles (one per segment, one per run without any),
    `steps` realigner cycles (words emitted plus one per segment whose first source word
    completes no destination word) of which `fill_steps` emit fill words, `beats` bus beats on
    the memory port, DRAM bytes read (whole beats) and written (enabled bytes)."""

    walker: int
    steps: int
    fill_steps: int
    beats: int
    bytes_read: int
    bytes_written: int


def _runs(desc: Descriptor) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """DRAM address, buffer address, y and x at the start of every run (loop order irrelevant)."""
    dims = desc.outer()
    grids = np.meshgrid(*[np.arange(d.count, dtype=np.int64) for d in dims], indexing="ij")
    index = [g.ravel() for g in grids]

    def coordinate(base: int, field: str) -> np.ndarray:
        return base + sum(i * getattr(d, field) for i, d in zip(index, dims))

    return (coordinate(desc.dram_addr, "dram_stride"), coordinate(desc.buf_addr, "buf_stride"),
            coordinate(desc.y0, "dy"), coordinate(desc.x0, "dx"))


def _words(address: np.ndarray, length: np.ndarray, bus: int) -> np.ndarray:
    """Bus words spanned by `length` bytes from `address` (0 for empty ranges)."""
    return np.where(length > 0, (address % bus + length + bus - 1) // bus, 0)


def transfer_work(desc: Descriptor, bus_bytes: int) -> TransferWork:
    """Count the work of `desc` on a `bus_bytes`-wide port."""
    dram, buf, y, x = _runs(desc)
    n = desc.run_bytes
    rows_in = (y >= 0) & (y < desc.height)
    cols_in = (x >= 0) & (x < desc.width)
    empty = ~rows_in | ((desc.run_dx == 0) & ~cols_in)
    if desc.run_dx:
        lo, hi = np.clip(-x, 0, n), np.clip(desc.width - x, 0, n)
    else:
        lo, hi = np.zeros_like(x), np.full_like(x, n)
    lo, hi = np.where(empty, n, lo), np.where(empty, n, hi)
    data = hi - lo
    src, dst = (dram + lo, buf + lo) if desc.load else (buf + lo, dram + lo)
    skips = (data > 0) & (src % bus_bytes > dst % bus_bytes)
    data_words = _words(dst, data, bus_bytes)
    steps = data_words + skips
    walker = (data > 0).astype(np.int64)
    if desc.load:
        fill = _words(buf, lo, bus_bytes) + _words(buf + hi, n - hi, bus_bytes)
        walker = walker + (lo > 0) + (hi < n)
        beats = int(_words(dram + lo, data, bus_bytes).sum())
        return TransferWork(int(walker.sum()), int((steps + fill).sum()), int(fill.sum()), beats, beats * bus_bytes, 0)
    walker = np.maximum(walker, 1)
    return TransferWork(int(walker.sum()), int(steps.sum()), 0, int(data_words.sum()), 0, int(data.sum()))


def transfer_cycles(load: bool, steps, fill_steps, beats, config: AcceleratorConfig, transfers=1,
                    constants: bool = False):
    """`(fixed, port, port_use)` cycles of `transfers` LOADs (or STORESs) moving these totals
    (ints or numpy arrays). `fixed`: start-up and descriptor lookup, plus the memory latency of
    reads, less `SHARED_START_SAVING` for transfers that move data on a shared DMA (counted
    as if their first run did); `port`: the
    realigner's steps or the beats at the configured bandwidth, whichever is longer (fill words
    keep the realigner from taking beats, and a slow memory banks little bandwidth meanwhile);
    `port_use`: the cycles of port bandwidth the beats occupy. Alone, a transfer takes
    `fixed + port` cycles. Loads of the model's `constants` take the memory figures of the
    constants (`Dram.read_figures`)."""
    dram = config.dram
    beats_per_cycle, latency_cycles = dram.read_figures(constants and load)
    port_use = np.asarray(beats) / beats_per_cycle
    start_saving = SHARED_START_SAVING if config.template.dma == DmaSharing.SHARED else 0
    saving = np.where(np.asarray(beats) > 0, start_saving, 0) * transfers
    if load:
        latency = np.where(np.asarray(beats) > 0, latency_cycles, 0) * transfers
        fixed = (LOAD_START_CYCLES + lookup_cycles(config)) * transfers + latency - saving
        port = np.maximum(np.asarray(steps) - latency, port_use + np.asarray(fill_steps) * (1 - beats_per_cycle))
    else:
        fixed = (STORE_START_CYCLES + lookup_cycles(config)) * np.asarray(transfers) - saving
        port = np.maximum(np.asarray(steps), port_use)
    return fixed, port, port_use
