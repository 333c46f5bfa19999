"""The DMA descriptor table a plan's program will hold, found without compiling the program.

A descriptor holds a transfer's shape, never its addresses, so a conv layer's descriptors
depend on its tile sizes alone: its lowering over at most two tiles per loop dim (the first and
the last, `_Sampled`; one dim keeps several tiles iff it had several, so partial sums spill and
reload as in the whole layer) adds exactly the whole layer's descriptors in a few steps.
Vector layers are lowered whole (a step per channel group and row tile). No instruction is
kept (`_TableOnly`). `descriptor_problem` names the layer at which the table passes the
LOAD / STORE `desc` field.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from hwgen.config import AcceleratorConfig
from hwgen.isa import Opcode, field_limit
from planner.compile.conv import ConvTiling, lower_conv, spills
from planner.compile.queue_sync import Emitter
from planner.compile.vector import VecSource, lower_vector, source_fill
from planner.ir import COMPUTE_OPS, Network, Op
from planner.schedule import ConvShape, Schedule


@dataclass(frozen=True)
class _Sampled(ConvTiling):
    """A tiling with the first and last tile of each dim (the tile sizes of the whole layer)."""

    def tiles(self, dim: str) -> list[tuple[int, int]]:
        tiles = super().tiles(dim)
        return tiles if len(tiles) <= 2 else [tiles[0], tiles[-1]]


class _TableOnly(Emitter):
    """An emitter that keeps the descriptor table and drops the instructions."""

    def emit(self, opcode: Opcode, **fields: int) -> None:
        pass


def descriptor_limit() -> int:
    """Descriptors a LOAD / STORE can name (`desc` field)."""
    return field_limit(Opcode.LOAD, "desc") + 1


def descriptor_counts(net: Network, schedules: dict[str, Schedule], config: AcceleratorConfig) -> dict[str, int]:
    """Per layer of the split, quantized `net` (in order): the size of the program's descriptor
    table once that layer is lowered (`schedules`: conv / fc layers by name)."""
    em, counts = _TableOnly(), {}
    for layer in net.layers:
        if layer.op in COMPUTE_OPS:
            tiling = _Sampled(layer, ConvShape.of(layer), schedules[layer.name], config)
            lower_conv(em, tiling, 0, defaultdict(int), 0, 0, 0 if spills(tiling) else None, True)
        else:
            sources = [VecSource(0, shape, q.zero_point, source_fill(layer, q.zero_point))
                       for shape, q in zip(layer.in_shapes, layer.quant.inputs)]
            offsets = [0] * len(sources) if layer.op == Op.CONCAT else None
            lower_vector(em, layer, config, sources, 0, 0, offsets, True)
        counts[layer.name] = len(em.program.descriptors)
    return counts


def descriptor_problem(net: Network, schedules: dict[str, Schedule], config: AcceleratorConfig) -> tuple[str, str] | None:
    """Why the program of the split, quantized `net` cannot name its descriptors: the layer at
    which the table passes `descriptor_limit`, and the words naming it, the table's size and the
    limit; or None."""
    counts = descriptor_counts(net, schedules, config)
    limit = descriptor_limit()
    first = next((name for name, count in counts.items() if count > limit), None)
    if first is None:
        return None
    total = list(counts.values())[-1]
    return first, (f"layer {first!r}: the program's DMA descriptors (distinct transfer shapes) reach {counts[first]} "
                   f"at this layer and {total} in all, which exceeds the limit {limit} (LOAD.desc, STORE.desc)")
