"""A compiled program: instruction words for the ROM plus the DMA descriptor table."""
from __future__ import annotations

from dataclasses import dataclass, field

from hwgen.dma import Descriptor
from hwgen.isa import Instruction, disassemble


@dataclass
class Program:
    """Instructions (encoded words) and descriptors (shapes only: addresses, origins come from
    the LOAD/STORE instruction that uses them)."""

    instructions: list[int] = field(default_factory=list)
    descriptors: list[Descriptor] = field(default_factory=list)
    _index: dict[Descriptor, int] = field(default_factory=dict, repr=False, compare=False)

    def emit(self, instruction: Instruction) -> None:
        self.instructions.append(instruction.encode())

    def descriptor(self, descriptor: Descriptor) -> int:
        """Index of `descriptor` in the table, adding it if new."""
        if descriptor not in self._index:
            self._index[descriptor] = len(self.descriptors)
            self.descriptors.append(descriptor)
        return self._index[descriptor]

    def listing(self) -> str:
        return "\n".join(disassemble(self.instructions))
