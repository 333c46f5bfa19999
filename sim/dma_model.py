"""Reference semantics of a DMA descriptor, byte by byte (independent of the RTL's segmenting)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from hwgen.dma import Descriptor
from hwgen.program_walk import wrap


@dataclass
class DmaTraffic:
    """DRAM traffic of descriptors: whole bus beats read, bytes written."""

    bytes_read: int = 0
    bytes_written: int = 0


def run_descriptor(desc: Descriptor, dram: np.ndarray, buffer: np.ndarray, bus_bytes: int,
                   traffic: DmaTraffic) -> None:
    """Apply `desc` to the byte arrays in place, adding its DRAM traffic to `traffic`.

    Runs go in loop order (first outer dimension fastest); reads fetch every bus beat that holds
    an in-bounds byte of a run, once per run. DRAM addresses wrap at 32 bits as the DMA's adders
    do: a padded window's origin may lie before address 0 while its in-bounds bytes do not.
    """
    dims = desc.outer()
    for index in itertools.product(*[range(d.count) for d in reversed(dims)]):
        steps = list(zip(reversed(index), dims))
        a = wrap(desc.dram_addr + sum(i * d.dram_stride for i, d in steps), 32)
        b = desc.buf_addr + sum(i * d.buf_stride for i, d in steps)
        y = desc.y0 + sum(i * d.dy for i, d in steps)
        x = desc.x0 + sum(i * d.dx for i, d in steps)
        inside = [k for k in range(desc.run_bytes) if 0 <= y < desc.height and 0 <= x + k * desc.run_dx < desc.width]
        if desc.load:
            buffer[b:b + desc.run_bytes] = desc.fill & 0xFF
            for k in inside:
                buffer[b + k] = dram[a + k]
            traffic.bytes_read += len({(a + k) // bus_bytes for k in inside}) * bus_bytes
        else:
            for k in inside:
                dram[a + k] = buffer[b + k]
            traffic.bytes_written += len(inside)
