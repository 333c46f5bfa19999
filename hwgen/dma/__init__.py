"""The DMA: moves the bytes of a descriptor's nested loops between the external memory port and
a buffer bank, and the units that run LOAD and STORE instructions on it.

- `transfer`: the descriptor (`Descriptor`, `Dim`), without HDL imports (the package exports it);
- `descriptor`: a DMA's widths (`DmaParams`) and the descriptor's encoding;
- `controller`: the DMA (`Dma`), which wires the stages below;
- `walker`, `pointer_walker`: the two walkers, which turn a descriptor into segments;
- `segments` (with `queue`): the segment queues to the source side and the realigner;
- `source`: DRAM read requests or buffer reads; `realign`: source words to destination words;
  `destination`: buffer writes or DRAM write beats;
- `table`: the descriptor table (ROM or SPRAM program memory, `DescriptorReader`);
- `units`: the load and store units (`TransferUnit`) and the DMA parameters of a configuration;
  `shared`: the arbiter of the shared DMA (`template.dma: shared`).
"""
from hwgen.dma.transfer import OUTER_DIMS, Descriptor, DescriptorError, Dim

__all__ = ["OUTER_DIMS", "Descriptor", "DescriptorError", "Dim"]
