"""The DMA descriptor's fields (`Descriptor`, `Dim`), without HDL imports: the compiler, the
planner and the simulators build descriptors; `hwgen.dma.descriptor` encodes them for a DMA.

A descriptor describes up to `OUTER_DIMS` nested loops (innermost first) around a *run* of
`run_bytes` bytes contiguous in DRAM and in the buffer (`hwgen.dma.controller` has the semantics).
"""
from __future__ import annotations

from dataclasses import dataclass

from common.errors import HwgenError

OUTER_DIMS = 4

FILLED_FIELDS = ("load", "dram_addr", "buf_addr", "y0", "x0")
"""The descriptor fields a LOAD or STORE fills in from its instruction; the rest comes from the
descriptor table (`hwgen.dma.table`)."""


@dataclass(frozen=True)
class Dim:
    """One outer loop of a descriptor."""

    count: int
    dram_stride: int = 0
    buf_stride: int = 0
    dy: int = 0
    dx: int = 0


@dataclass(frozen=True)
class Descriptor:
    """A DMA transfer (see the module docstring); `dims` innermost first, at most `OUTER_DIMS`
    (missing ones have count 1). Counts are >= 1. The default bounds make nothing padding.
    """

    load: bool
    dram_addr: int
    buf_addr: int
    run_bytes: int
    dims: tuple[Dim, ...] = ()
    run_dx: int = 0
    y0: int = 0
    x0: int = 0
    height: int = 1 << 16
    width: int = 1 << 16
    fill: int = 0

    def outer(self) -> tuple[Dim, ...]:
        """The outer dimensions padded to `OUTER_DIMS` with count-1 loops."""
        assert len(self.dims) <= OUTER_DIMS and self.run_dx in (0, 1) and self.run_bytes >= 1
        return (*self.dims, *[Dim(1)] * (OUTER_DIMS - len(self.dims)))


class DescriptorError(HwgenError):
    """A descriptor does not fit the descriptor layout of a DMA."""
