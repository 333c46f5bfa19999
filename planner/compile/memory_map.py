"""DRAM layout of a compiled network: constants first (per layer: parameters, weight blocks),
then activation tensors placed by liveness (a tensor's space is reused once its last reader
has run), then partial-sum scratch space."""
from __future__ import annotations

from dataclasses import dataclass, field

from planner.compile.packing import padded_channels
from planner.ir import Network

ALIGNMENT = 64


def align(value: int) -> int:
    return -(-value // ALIGNMENT) * ALIGNMENT


@dataclass
class MemoryMap:
    """Byte addresses of every region; `size` is the DRAM footprint."""

    constants: dict[str, int] = field(default_factory=dict)  # layer name -> start of its constants
    tensors: dict[str, int] = field(default_factory=dict)  # tensor name -> start (HWC, padded channels)
    scratch: dict[str, int] = field(default_factory=dict)  # layer name -> partial-sum scratch
    constant_bytes: int = 0
    activation_bytes: int = 0
    scratch_bytes: int = 0

    @property
    def size(self) -> int:
        return self.constant_bytes + self.activation_bytes + self.scratch_bytes


def tensor_bytes(shape: tuple[int, int, int], simd: int) -> int:
    channels, height, width = shape
    return height * width * padded_channels(channels, simd)


def plan_memory(net: Network, simd: int, constant_sizes: dict[str, int], scratch_sizes: dict[str, int],
                keep_input: bool = False) -> MemoryMap:
    """Place constants, activations (first fit over freed intervals, by liveness) and scratch;
    `keep_input`: the input's space is never reused (a pipeline stage's input is a slot of its own,
    `planner.compile.stages`)."""
    layout = MemoryMap()
    cursor = 0
    for name, size in constant_sizes.items():
        layout.constants[name] = cursor
        cursor += align(size)
    layout.constant_bytes = cursor

    shapes = net.tensor_shapes()
    last_use = {net.input_name: -1}
    for index, layer in enumerate(net.layers):
        for name in layer.inputs:
            last_use[name] = index
    for name in net.outputs:
        last_use[name] = len(net.layers)
    if keep_input:
        last_use[net.input_name] = len(net.layers)
    live: list[tuple[int, int, str]] = []  # (start, end, tensor), relative to the activation area
    high = 0

    def place(name: str) -> None:
        nonlocal high
        # slack: a channel-group read starting at an unaligned channel runs past the last pixel
        size = align(tensor_bytes(shapes[name], simd) + simd)
        start = 0
        for lo, hi, _ in sorted(live):
            if start + size <= lo:
                break
            start = max(start, hi)
        live.append((start, start + size, name))
        layout.tensors[name] = layout.constant_bytes + start
        high = max(high, start + size)

    place(net.input_name)
    for index, layer in enumerate(net.layers):
        place(layer.output)
        live[:] = [entry for entry in live if last_use.get(entry[2], -1) > index or entry[2] == layer.output]
    layout.activation_bytes = high

    cursor = layout.constant_bytes + layout.activation_bytes
    for name, size in scratch_sizes.items():
        layout.scratch[name] = cursor
        cursor += align(size)
    layout.scratch_bytes = cursor - layout.constant_bytes - layout.activation_bytes
    return layout
