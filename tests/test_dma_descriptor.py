"""The `pointer` descriptor encoding (`hwgen.dma.descriptor.pointer_dims`,
`pointer_coordinates`): starting from the base and adding the step of the level that advances
(a coordinate: its stride if its loop advances, its rewind if an outer one does) visits every
run at the address the strides give (enumerated independently), and descriptors that do not
fit are refused."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwgen.dma import Descriptor, DescriptorError, Dim
from hwgen.dma.descriptor import DmaParams

PARAMS = DmaParams(bus_bytes=1, burst_beats=4, buf_word_bytes=1, buf_depth=4096, addr_width=12, count_width=13,
                   coord_width=12, walker="pointer")


@st.composite
def descriptors(draw):
    loops = draw(st.integers(0, 4))
    y_loop, x_loop = draw(st.integers(0, 3)), draw(st.integers(0, 3))  # the loop moving each coordinate
    dims = tuple(Dim(draw(st.integers(1, 4)), draw(st.integers(-300, 300)), draw(st.integers(-50, 50)),
                     draw(st.integers(-3, 3)) * (j == y_loop), draw(st.integers(-5, 5)) * (j == x_loop))
                 for j in range(loops))
    return Descriptor(load=draw(st.booleans()), dram_addr=draw(st.integers(0, 4095)), buf_addr=draw(st.integers(0, 4095)),
                      run_bytes=draw(st.integers(1, 20)), dims=dims, y0=draw(st.integers(-9, 9)), x0=draw(st.integers(-9, 9)))


def walk(encoded: dict) -> list[tuple[int, int, int, int]]:
    """The runs a pointer walker visits: counters per level, one step added per advance."""
    dims = encoded["dims"]
    point = [encoded["dram_addr"], encoded["buf_addr"], encoded["y0"], encoded["x0"]]
    left = [d["repeats"] for d in dims]
    runs = [tuple(point)]
    while any(left):
        level = next(j for j, n in enumerate(left) if n)
        left[level] -= 1
        left[:level] = [d["repeats"] for d in dims[:level]]
        moves = [encoded[f"{c}_step"] if level == encoded[f"{c}_level"] else
                 encoded[f"{c}_rewind"] if level > encoded[f"{c}_level"] else 0 for c in "yx"]
        point = [point[0] + dims[level]["dram_step"] & 0xFFF, point[1] + dims[level]["buf_step"] & 0xFFF,
                 point[2] + moves[0], point[3] + moves[1]]
        runs.append(tuple(point))
    return runs


@settings(max_examples=300, deadline=None)
@given(descriptors())
def test_steps_visit_the_runs_the_strides_give(desc):
    dims = desc.outer()
    expected = []
    for index in itertools.product(*[range(d.count) for d in reversed(dims)]):
        pairs = list(zip(reversed(index), dims))
        expected.append(((desc.dram_addr + sum(i * d.dram_stride for i, d in pairs)) & 0xFFF,
                         (desc.buf_addr + sum(i * d.buf_stride for i, d in pairs)) & 0xFFF,
                         desc.y0 + sum(i * d.dy for i, d in pairs), desc.x0 + sum(i * d.dx for i, d in pairs)))
    assert walk(PARAMS.encode(desc)) == expected


@pytest.mark.parametrize("desc, culprit", [
    (Descriptor(load=True, dram_addr=0, buf_addr=0, run_bytes=8192), "run_bytes 8192"),
    (Descriptor(load=True, dram_addr=0, buf_addr=0, run_bytes=1, dims=(Dim(8193),)), r"dims\[0\].count 8193"),
    (Descriptor(load=True, dram_addr=0, buf_addr=0, run_bytes=4, dims=(Dim(600, dy=2),)), r"dy spans \[0, 1198\]"),
    (Descriptor(load=True, dram_addr=0, buf_addr=0, run_bytes=3, run_dx=1), r"run_dx 1 \(its runs are all padding"),
    (Descriptor(load=True, dram_addr=0, buf_addr=0, run_bytes=2, dims=(Dim(3, dx=2), Dim(2), Dim(2, dx=1))),
     r"dx moves with loops \[0, 2\] \(the DMA moves each coordinate with one loop\)"),
])
def test_descriptors_that_do_not_fit_are_refused(desc, culprit):
    with pytest.raises(DescriptorError, match=culprit):
        PARAMS.encode(desc)
