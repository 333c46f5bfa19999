"""Pooling, add and concat layers: streamed through DRAM in tiles of whole channel planes.

Each step loads `Ct` channels of every input (one contiguous run per input), runs the pooling /
element-wise unit (`pool_lanes` output elements per cycle, one window tap or input per cycle),
and stores `Ct` output channels at activation width. Traffic is exactly inputs + outputs.
Concat copies each input in turn into its channel range of the output.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwgen.config import AcceleratorConfig
from planner.cost import run_cycles, step_cycles
from planner.errors import PlanningError
from planner.ir import POOL_OPS, Layer, Op, ceil_div
from planner.objective import Objective, rank
from planner.schedule import axis_tiles, tile_candidates


@dataclass(frozen=True)
class StreamCost:
    """Predicted cost of a streamed layer with channel tile `channels`."""

    channels: int
    input_bytes: int
    output_bytes: int
    cycles: int
    compute_cycles: int
    dma_cycles: int
    energy_pj: float
    steps: int


def _taps(layer: Layer) -> int:
    """Unit cycles per output element per lane: window taps (pool), inputs (add), 1 (concat)."""
    if layer.op in POOL_OPS:
        return layer.kernel[0] * layer.kernel[1]
    return len(layer.in_shapes) if layer.op == Op.ADD else 1


def _passes(layer: Layer) -> list[list[int]]:
    """Per pass (one per input for concat, a single one otherwise): the input indices it reads."""
    return [[i] for i in range(len(layer.in_shapes))] if layer.op == Op.CONCAT else [list(range(len(layer.in_shapes)))]


def stream_footprint(layer: Layer, ct: int, config: AcceleratorConfig) -> tuple[int, int]:
    """Input and output bank bytes needed with channel tile `ct`."""
    _, oh, ow = layer.out_shape
    reads = max(sum(layer.in_shapes[i][1] * layer.in_shapes[i][2] for i in p) for p in _passes(layer))
    return ct * reads * config.widths.activation_bytes, ct * oh * ow * config.widths.accumulator_bytes


def stream_cost(layer: Layer, ct: int, config: AcceleratorConfig) -> StreamCost:
    """Exact cost of streaming `layer` with channel tile `ct`."""
    a, e, dram = config.widths.activation_bytes, config.energy, config.dram
    _, oh, ow = layer.out_shape
    compute, load, store, in_bytes, out_bytes = [], [], [], 0, 0
    for p in _passes(layer):
        for _, n in axis_tiles(layer.in_shapes[p[0]][0], ct):
            sizes = [n * layer.in_shapes[i][1] * layer.in_shapes[i][2] * a for i in p]
            in_bytes += sum(sizes)
            load.append(int(run_cycles(np.array(sizes), dram).sum()))
            h, w = (layer.in_shapes[p[0]][1:] if layer.op == Op.CONCAT else (oh, ow))
            out = n * h * w * a
            out_bytes += out
            store.append(int(run_cycles(out, dram)))
            compute.append(n * h * ceil_div(w, config.pool_lanes) * _taps(layer) + config.pipeline_depth)
    outputs = out_bytes // a
    energy = (e.dram_pj_per_byte * (in_bytes + out_bytes) + 2 * e.input_buffer_pj_per_byte * in_bytes
              + e.output_buffer_pj_per_byte * (out_bytes + outputs * config.widths.accumulator_bytes)
              + e.mac_pj * outputs * _taps(layer))
    return StreamCost(ct, in_bytes, out_bytes, step_cycles(compute, load, store), sum(compute),
                      sum(load) + sum(store), energy, len(compute))


def plan_stream(layer: Layer, config: AcceleratorConfig, objective: Objective) -> tuple[StreamCost, int]:
    """The best legal channel tile and how many were evaluated."""
    channels = max(s[0] for s in layer.in_shapes)
    legal = [ct for ct in tile_candidates(channels, 1)
             if (lambda fp: fp[0] <= config.buffers.input_bank and fp[1] <= config.buffers.output_bank)(
                 stream_footprint(layer, ct, config))]
    if not legal:
        need_in, need_out = stream_footprint(layer, 1, config)
        raise PlanningError(
            f"layer {layer.name!r} ({layer.op} {layer.in_shapes} -> {layer.out_shape}): no legal tile; one channel "
            f"plane needs input buffer >= {2 * need_in} B (has {config.buffers.input_bytes}) and output buffer "
            f">= {2 * need_out} B (has {config.buffers.output_bytes})")
    costs = [stream_cost(layer, ct, config) for ct in legal]
    best = min(costs, key=lambda c: (*rank(objective, c.cycles, c.input_bytes + c.output_bytes, c.energy_pj), -c.channels))
    return best, len(costs)
