"""Pooling, add and concat layers on the vector unit: the tiling the compiler uses and its cost.

The compiler (`planner/compile/vector.py`) tiles a vector layer by channel groups and output
rows, as large as the banks allow (`vector_tile`; all output columns). Per channel tile it loads
the per-channel parameter records; per (channel, row) tile it loads the input window of every
operand (one LOAD per stride phase, runs of S bytes), runs one VEC
(`hwgen.timing.vec_cycles`) and stores the int8 tile. Concat copies each input in turn
into its channel range of the output. The cost uses the transfer times and the step model of
`planner.cost`, so the prediction is the compiled program's.
"""
from __future__ import annotations

import numpy as np

from hwgen.config import AcceleratorConfig
from hwgen.layout import PARAM_BYTES
from hwgen.timing import read_spacing, vec_busy_cycles
from planner.compile.conv import stride_phases
from planner.compile.vector import concat_part, vector_tile, vector_window
from planner.cost import SYNC_CYCLES, Steps, input_tile, results, start_cycles, step_cycles, store_delay
from planner.ir import POOL_OPS, Layer, Op, ceil_div
from planner.layer_cost import LayerCost
from planner.schedule import window_span
from planner.transfer_work import transfer_cycles


def _reads(layer: Layer) -> int:
    """Input reads (VEC cycles) per output pixel-group: window taps (pool), 2 (add), 1 (copy)."""
    if layer.op in POOL_OPS:
        return layer.kernel[0] * layer.kernel[1]
    return 2 if layer.op == Op.ADD else 1


def _operands(layer: Layer) -> int:
    """Input tensors of each VEC: 2 for ADD, else 1."""
    return 2 if layer.op == Op.ADD else 1


def _parts(layer: Layer) -> list[Layer]:
    """The layers the compiler emits tiles for: one copy per input of a concat, else the layer."""
    return [concat_part(layer, shape) for shape in layer.in_shapes] if layer.op == Op.CONCAT else [layer]


def _part_steps(part: Layer, config: AcceleratorConfig, operands: int) -> tuple[list[tuple], int, int, int]:
    """Per tile `(compute, load, load use, store, store use)` and the part's input, parameter and
    output bytes."""
    pe, bus = config.pe, config.dram.bus_width_bits // 8
    channels, out_h, out_w = part.out_shape
    _, in_h, in_w = part.in_shapes[0]
    groups_per_tile, rows_per_tile = vector_tile(part, config, operands)
    window = vector_window(part, config, rows_per_tile)
    (kh, kw), s = window.kernel, window.stride
    cols = (out_w - 1) * s + kw
    inside_cols = window_span(0, out_w, s, window.pads[1], kw, in_w)[1]
    steps, in_bytes, param_bytes, out_bytes = [], 0, 0, 0
    for c0 in range(0, channels, groups_per_tile * pe.simd):
        cn = min(groups_per_tile * pe.simd, channels - c0)
        groups = ceil_div(cn, pe.simd)
        beats = groups * pe.simd * PARAM_BYTES // bus
        fixed, port, use = transfer_cycles(True, beats, 0, beats, config, constants=True)
        param_load, param_use = fixed + port + SYNC_CYCLES, use
        param_bytes += beats * bus
        for h0 in range(0, out_h, rows_per_tile):
            hn = min(rows_per_tile, out_h - h0)
            rows = (hn - 1) * s + kh
            inside_rows = window_span(h0, hn, s, window.pads[0], kh, in_h)[1]
            nbytes, fixed, port, use = input_tile(config, groups, rows, cols, inside_rows, inside_cols,
                                                  stride_phases(s, cols))
            in_bytes += operands * int(nbytes)
            load = param_load + operands * (fixed + port) + SYNC_CYCLES
            load_use = param_use + operands * use
            param_load = param_use = 0
            slots = _reads(part) * read_spacing(config, part.op in POOL_OPS)
            compute = vec_busy_cycles(config, hn * out_w * groups, slots) + SYNC_CYCLES
            nbytes, fixed, port, use = results(config, cn, hn * out_w)
            out_bytes += int(nbytes)
            steps.append((compute, load, load_use, fixed + port + SYNC_CYCLES, store_delay(config, fixed + port, use)))
    return steps, in_bytes, param_bytes, out_bytes


def stream_channels(layer: Layer, config: AcceleratorConfig) -> int:
    """Channels per tile of the compiler's tiling of a vector layer."""
    groups, _ = vector_tile(_parts(layer)[0], config, _operands(layer))
    return min(groups * config.pe.simd, layer.out_shape[0])


def stream_cost(layer: Layer, config: AcceleratorConfig) -> LayerCost:
    """Cost of the compiled vector layer (no MACs on the PE array)."""
    e, a = config.energy, config.widths.activation_bytes
    operands = _operands(layer)
    rows, in_bytes, param_bytes, out_bytes = [], 0, 0, 0
    for part in _parts(layer):
        part_rows, i, p, o = _part_steps(part, config, operands)
        rows += part_rows
        in_bytes, param_bytes, out_bytes = in_bytes + i, param_bytes + p, out_bytes + o
    compute, load, load_use, store, store_use = (np.array(column, dtype=np.float64) for column in zip(*rows))
    outputs = out_bytes // a
    energy = (e.dram_pj_per_byte * (in_bytes + param_bytes + out_bytes) + 2 * e.input_buffer_pj_per_byte * in_bytes
              + e.output_buffer_pj_per_byte * (out_bytes + outputs * config.widths.accumulator_bytes)
              + e.mac_pj * outputs * _reads(layer))
    return LayerCost(in_bytes, param_bytes, out_bytes,
                     step_cycles(Steps(compute, load, store, load_use, store_use), start_cycles(config)),
                     round(compute.sum()), round(load.sum() + store.sum()), 0.0, energy, 0)


