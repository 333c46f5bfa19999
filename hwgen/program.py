"""A compiled program: instruction words for the ROM plus the DMA descriptor table."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from hwgen.dma import Descriptor, Dim
from hwgen.isa import Instruction, disassemble
from common.errors import InputError
from common.files import atomic_write_text

PROGRAM_FORMAT = 1


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

    def to_dict(self) -> dict:
        return {
            "format": PROGRAM_FORMAT,
            "instructions": [f"{word:032x}" for word in self.instructions],
            "descriptors": [dataclasses.asdict(d) for d in self.descriptors],
        }

    @classmethod
    def from_dict(cls, data: dict, source: str = "<program>") -> "Program":
        if not isinstance(data, dict) or data.get("format") != PROGRAM_FORMAT:
            raise InputError(f"{source}: not a program file of format {PROGRAM_FORMAT}")
        try:
            program = cls([int(word, 16) for word in data["instructions"]])
            for entry in data["descriptors"]:
                fields = {k: v for k, v in entry.items() if k != "dims"}
                program.descriptor(Descriptor(dims=tuple(Dim(**dim) for dim in entry["dims"]), **fields))
        except (KeyError, TypeError, ValueError) as error:
            raise InputError(f"{source}: malformed program file ({error})") from None
        for word in program.instructions:
            Instruction.decode(word)  # every word must be a valid instruction
        return program

    def save(self, path: str | Path) -> Path:
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> "Program":
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as error:
            raise InputError(f"{path}: cannot read the program ({error})") from None
        return cls.from_dict(data, str(path))
