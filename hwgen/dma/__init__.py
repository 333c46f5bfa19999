"""The DMA: moves the bytes of a descriptor's nested loops between the external memory port and
a buffer bank, and the units that run LOAD and STORE instructions on it.

The descriptor and its encoding are in `hwgen.dma.descriptor`, the controller (`Dma`) in
`hwgen.dma.controller`, the walkers that turn a descriptor into segments in `hwgen.dma.walker`,
the load / store units and the descriptor table in `hwgen.dma.units`.
"""
from hwgen.dma.controller import Dma
from hwgen.dma.descriptor import OUTER_DIMS, Descriptor, DescriptorError, Dim, DmaParams

__all__ = ["OUTER_DIMS", "Descriptor", "DescriptorError", "Dim", "Dma", "DmaParams"]
