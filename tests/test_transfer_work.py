"""`planner.transfer_work` against byte-by-byte references: DRAM bytes from the DMA reference
model (`sim.dma_model`), segments and realigner words from enumerating every byte of every run."""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hwgen.dma import Descriptor, Dim
from planner.transfer_work import transfer_work
from sim.dma_model import DmaTraffic, run_descriptor


@st.composite
def descriptors(draw):
    load = draw(st.booleans())
    dims = tuple(Dim(draw(st.integers(1, 4)), draw(st.integers(0, 40)), draw(st.integers(0, 40)),
                     draw(st.integers(-1, 1)), draw(st.integers(-2, 2))) for _ in range(draw(st.integers(0, 3))))
    return Descriptor(load=load, dram_addr=draw(st.integers(0, 64)), buf_addr=draw(st.integers(0, 64)),
                      run_bytes=draw(st.integers(1, 12)), dims=dims, run_dx=draw(st.integers(0, 1)),
                      y0=draw(st.integers(-2, 3)), x0=draw(st.integers(-4, 6)),
                      height=draw(st.integers(1, 4)), width=draw(st.integers(1, 8)))


def brute_force(desc: Descriptor, bus: int) -> tuple[int, int]:
    """(walker cycles, realigner steps) by classifying every byte of every run."""
    walker = steps = 0
    for index in itertools.product(*[range(d.count) for d in desc.outer()]):
        a = desc.dram_addr + sum(i * d.dram_stride for i, d in zip(index, desc.outer()))
        b = desc.buf_addr + sum(i * d.buf_stride for i, d in zip(index, desc.outer()))
        y = desc.y0 + sum(i * d.dy for i, d in zip(index, desc.outer()))
        x = desc.x0 + sum(i * d.dx for i, d in zip(index, desc.outer()))
        inside = [0 <= y < desc.height and 0 <= x + k * desc.run_dx < desc.width for k in range(desc.run_bytes)]
        # maximal stretches of equal kind, in order: fill / data / fill
        segments = [(kind, [k for k, _ in group]) for kind, group in
                    itertools.groupby(enumerate(inside), key=lambda item: item[1])]
        if not desc.load:
            segments = [s for s in segments if s[0]]
        walker += max(len(segments), 1)
        for data, ks in segments:
            first, n = ks[0], len(ks)
            src, dst = (a + first, b + first) if desc.load else (b + first, a + first)
            words = (dst % bus + n + bus - 1) // bus
            steps += words + (1 if data and src % bus > dst % bus else 0)
    return walker, steps


@settings(max_examples=300, deadline=None)
@given(descriptors(), st.sampled_from([1, 2, 4, 8]))
def test_transfer_work_counts_equal_byte_level_references(desc, bus):
    work = transfer_work(desc, bus)
    dram = np.arange(4096, dtype=np.int64).astype(np.uint8)
    buffer = np.zeros(4096, np.uint8)
    traffic = DmaTraffic()
    run_descriptor(desc, dram, buffer, bus, traffic)
    assert (work.bytes_read, work.bytes_written) == (traffic.bytes_read, traffic.bytes_written)
    assert (work.walker, work.steps) == brute_force(desc, bus)
    if desc.load:
        assert work.beats * bus == work.bytes_read
