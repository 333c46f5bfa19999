"""Lowering of pooling, residual add and concat layers to VEC instructions.

Tiles cover all output columns, as many output rows as the buffers allow, and channel groups
(all of them when they fit). Each tile: parameters (per-channel multiplier and shift) into the
parameter bank, the input window(s) into the input bank, one VEC, one STORE of the int8 tile.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hwgen.config import AcceleratorConfig
from hwgen.dma import Descriptor, Dim
from hwgen.isa import Buffer, Opcode, VecOp, field_limit
from hwgen.layout import PARAM_BYTES, bank_bytes, param_bank_channels, phase_row_pitch
from hwgen.conv_step_fields import compiler_fields
from hwgen.vector_ops import vector_ops
from planner.compile.conv import InputWindow
from planner.compile.queue_sync import Emitter
from planner.compile.memory_map import align
from planner.compile.packing import padded_channels, param_block
from common.errors import PlanningError
from planner.ir import Layer, Op, ceil_div

INT8_MIN = -128
LAYER_OPS = {Op.MAXPOOL: VecOp.MAX, Op.AVGPOOL: VecOp.SUM, Op.ADD: VecOp.ADD, Op.CONCAT: VecOp.COPY}
"""The VEC operation each vector layer lowers to."""


@dataclass(frozen=True)
class VecSource:
    """One input tensor of a vector layer: DRAM address, shape, zero point, padding fill."""

    address: int
    shape: tuple[int, int, int]
    zero_point: int
    fill: int


def vector_constants(layer: Layer, rows: int) -> np.ndarray:
    """Per-channel requantization records (bias 0)."""
    q = layer.quant
    return param_block(np.zeros(len(q.multiplier), np.int64), q.multiplier, q.shift, rows)


def check_vector_op(layer: Layer, config: AcceleratorConfig) -> None:
    """Reject a vector layer whose VEC operation the configuration's vector unit leaves out, or
    that has no vector unit."""
    op = LAYER_OPS[layer.op]
    if not config.template.vector_unit:
        raise PlanningError(f"layer {layer.name!r} ({layer.op}) needs the vector operation {op.name.lower()}, and "
                            f"configuration {config.name!r} has no vector unit (template.vector_ops lists none); "
                            f"list {op.name.lower()} in template.vector_ops")
    if op not in vector_ops(config):
        raise PlanningError(f"layer {layer.name!r} ({layer.op}) needs the vector operation {op.name.lower()}, which "
                            f"configuration {config.name!r} leaves out (template.vector_ops: "
                            f"[{', '.join(config.template.vector_ops)}]); add {op.name.lower()} to template.vector_ops")


def vector_window(layer: Layer, config: AcceleratorConfig, out_rows: int) -> InputWindow:
    """The input window of a tile of `out_rows` output rows (all columns). Its phase rows are laid
    out as the conv engine's, whole PE-column words and a spare word (`phase_row_pitch`), unless
    then not even one output row of one channel group fits the input bank: the vector unit reads
    a pixel at a time and needs no spare word, so such a pool's rows end with their last word."""
    if layer.stride[0] != layer.stride[1]:
        raise PlanningError(f"layer {layer.name!r}: strides {layer.stride} differ; the hardware needs equal strides")
    s, simd = layer.stride[0], config.pe.simd
    kernel = layer.kernel if layer.op in (Op.MAXPOOL, Op.AVGPOOL) else (1, 1)
    cols = (layer.out_shape[2] - 1) * s + kernel[1]
    pitch = phase_row_pitch(cols, s, config.pe.cols)
    if len(layer.inputs) * align(kernel[0] * s * pitch * simd) > bank_bytes(config, "input"):
        pitch -= config.pe.cols
    return InputWindow(kernel, s, (layer.pads[0], layer.pads[1]), (out_rows - 1) * s + kernel[0], pitch)


def vector_tile(layer: Layer, config: AcceleratorConfig, operands: int) -> tuple[int, int]:
    """(channel groups, output rows) per tile: the largest that fit the banks."""
    simd = config.pe.simd
    groups_total = ceil_div(layer.out_shape[0], simd)
    out_h, out_w = layer.out_shape[1:]
    if out_w > field_limit(Opcode.VEC, "out_cols"):
        raise PlanningError(f"layer {layer.name!r} ({layer.op}): output width {out_w} exceeds the limit "
                            f"{field_limit(Opcode.VEC, 'out_cols')} (VEC.out_cols)")
    max_groups, max_rows = field_limit(Opcode.VEC, "channel_groups"), field_limit(Opcode.VEC, "out_rows")
    max_in_rows, max_pitch = field_limit(Opcode.CONVCFG, "in_rows"), field_limit(Opcode.CONVCFG, "in_row_pitch")
    input_bank, acc_bank = bank_bytes(config, "input"), bank_bytes(config, "acc")

    def fits(groups: int, rows: int) -> bool:  # monotone: a tile that fits still fits with fewer rows
        window = vector_window(layer, config, rows)
        if window.in_rows > max_in_rows or window.row_pitch > max_pitch:
            return False
        plane = groups * window.in_rows * window.stride * window.row_pitch * simd
        return operands * align(plane) <= input_bank and rows * out_w * groups * simd <= acc_bank

    for groups in sorted({min(groups_total, g) for g in (groups_total, *(2**k for k in range(12)))}, reverse=True):
        if groups * simd > param_bank_channels(config) or groups > max_groups:
            continue
        low, high = 0, min(out_h, max_rows)  # the most rows that fit, by bisection
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if fits(groups, mid) else (low, mid - 1)
        if low:
            return groups, low
    raise PlanningError(f"layer {layer.name!r} ({layer.op}, {layer.in_shape} -> {layer.out_shape}): even one output "
                        f"row of one channel group does not fit the input ({bank_bytes(config, 'input')} B) and "
                        f"accumulator ({bank_bytes(config, 'acc')} B) banks")


def lower_vector(em: Emitter, layer: Layer, config: AcceleratorConfig, sources: list[VecSource], target: int,
                 constants: int, channel_offsets: list[int] | None = None, reads_stored_data: bool = True) -> None:
    """Emit a pooling / add layer (one VEC per tile), or a concat (one COPY pass per input)."""
    q = layer.quant
    if layer.op == Op.CONCAT:
        offsets = channel_offsets or []
        for index, (source, offset) in enumerate(zip(sources, offsets)):
            part = concat_part(layer, source.shape)
            _emit_tiles(em, part, config, [source], target, constants + offset * PARAM_BYTES, VecOp.COPY,
                        (q.input_multipliers[index], 0), layer.out_shape[0], offset, reads_stored_data and index == 0)
        return
    op = LAYER_OPS[layer.op]
    multipliers = (q.input_multipliers + (0,))[:2] if op == VecOp.ADD else (0, 0)
    _emit_tiles(em, layer, config, sources, target, constants, op, multipliers, layer.out_shape[0], 0, reads_stored_data)


def concat_part(layer: Layer, shape: tuple[int, int, int]) -> Layer:
    """The copy of one concat input (of `shape`) as a layer of its own shape (same quantization)."""
    return replace(layer, inputs=layer.inputs[:1], in_shapes=(shape,), out_shape=shape)


def _emit_tiles(em: Emitter, layer: Layer, config: AcceleratorConfig, sources: list[VecSource], target: int,
                params: int, op: VecOp, multipliers: tuple[int, int], out_channels_total: int, channel_offset: int,
                reads_stored_data: bool) -> None:
    pe = config.pe
    channels, out_h, out_w = layer.out_shape
    groups_per_tile, rows_per_tile = vector_tile(layer, config, len(sources))
    window = vector_window(layer, config, rows_per_tile)
    q = layer.quant
    out_cp = padded_channels(out_channels_total, pe.simd)
    em.emit(Opcode.CONVCFG, in_zero_point=sources[0].zero_point, out_zero_point=q.output.zero_point,
            act_min=q.act_min, act_max=q.act_max, kernel_h=window.kernel[0], kernel_w=window.kernel[1],
            stride=window.stride, in_rows=window.in_rows, in_row_pitch=window.row_pitch,
            **compiler_fields(config.template, window.stride, window.in_rows, window.row_pitch))
    plane = align(groups_per_tile * window.in_rows * window.stride * window.row_pitch * pe.simd)
    waited = not reads_stored_data
    for c0 in range(0, channels, groups_per_tile * pe.simd):
        cn = min(groups_per_tile * pe.simd, channels - c0)
        groups = ceil_div(cn, pe.simd)
        records = groups * pe.simd * PARAM_BYTES
        desc = Descriptor(load=True, dram_addr=0, buf_addr=0, run_bytes=records)
        em.load("weight", [dict(buffer=Buffer.PARAM, desc=em.descriptor(desc), dram_offset=params + c0 * PARAM_BYTES)])
        em.use("weight")
        for h0 in range(0, out_h, rows_per_tile):
            hn = min(rows_per_tile, out_h - h0)
            loads = []
            for index, source in enumerate(sources):
                loads += window.loads(em, config, source.shape, source.address, c0, groups, (h0, hn), (0, out_w),
                                      source.fill, buf_addr=index * plane)
            if not waited:
                em.await_stores()
                waited = True
            em.load("input", loads)
            bank = em.open_output()
            em.use("input")
            second = sources[1].zero_point if len(sources) > 1 else 0
            em.emit(Opcode.VEC, op=op, in_bank=em.next_bank["input"] ^ 1, out_bank=bank, in2_addr=plane if len(sources) > 1 else 0,
                    in2_zero_point=second, channel_groups=groups, out_rows=hn, out_cols=out_w,
                    multiplier_a=multipliers[0], multiplier_b=multipliers[1], param_bank=em.next_bank["weight"] ^ 1)
            store = Descriptor(load=False, dram_addr=0, buf_addr=0, run_bytes=cn,
                               dims=(Dim(out_w, out_cp, groups * pe.simd), Dim(hn, out_w * out_cp, out_w * groups * pe.simd)))
            em.close_output(bank, [dict(desc=em.descriptor(store),
                                        dram_offset=target + h0 * out_w * out_cp + channel_offset + c0)])
    em.release_all()


def source_fill(layer: Layer, zero_point: int) -> int:
    """Padding value: never wins a max, contributes 0 to a sum."""
    return INT8_MIN if layer.op == Op.MAXPOOL else zero_point
