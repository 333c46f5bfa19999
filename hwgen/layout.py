"""Where every element lives in the on-chip buffers (the contract of the compiler, the ISA
simulator and the RTL address generators). See docs/hardware.md, "Data layouts".

- input buffer bank: bytes ``[group][row][phase][index][lane]``: input channel ``group * S +
  lane``, tile row ``row``, tile column ``index * stride + phase``; one phase row holds
  ``row_pitch`` pixels (a multiple of the PE columns).
- weight buffer bank: words of ``R * S`` bytes ``[oc group][ic group][kh][kw]``, byte
  ``row * S + lane`` for output channel ``oc_group * R + row`` and input channel
  ``ic_group * S + lane``.
- parameter buffer bank: 8 bytes per output channel: int32 bias, uint16 multiplier, uint8
  shift, one spare byte.
- accumulator/output buffer bank: the tile in HWC order with ``channels`` (padded) per pixel:
  int8 results at byte ``pixel * channels + c``, int32 partial sums at byte
  ``partial_sums_offset + 4 * (pixel * channels + c)``; ``pixel = row * width + column``. The
  offset leaves room for one PE-column set of int8 results, so rewriting the partial sums as
  int8 results in place never overwrites sums that are still to be read.
"""
from __future__ import annotations

PARAM_BYTES = 8
ACC_BYTES = 4


def input_offset(group: int, row: int, phase: int, index: int, lane: int, *, rows: int, stride: int,
                 row_pitch: int, simd: int) -> int:
    """Byte offset of one input element in an input-buffer bank."""
    return (((group * rows + row) * stride + phase) * row_pitch + index) * simd + lane


def weight_word(oc_group: int, ic_group: int, kh: int, kw: int, *, ic_groups: int, kernel: tuple[int, int]) -> int:
    """Word index (of `R * S` bytes) of one (oc group, ic group, kh, kw) weight word."""
    return ((oc_group * ic_groups + ic_group) * kernel[0] + kh) * kernel[1] + kw


def acc_element(row: int, column: int, channel: int, *, width: int, channels: int) -> int:
    """Element index of an output/accumulator value (times 4 for int32 bytes, 1 for int8)."""
    return (row * width + column) * channels + channel


def partial_sums_offset(cols: int, oc_groups: int, rows: int) -> int:
    """Byte offset of the int32 partial sums in an accumulator bank (whole `R * 4`-byte words,
    at least `cols * oc_groups * rows` bytes: the int8 results of one set of `cols` pixels)."""
    return -(-cols * oc_groups // ACC_BYTES) * ACC_BYTES * rows


def phase_row_pitch(tile_columns: int, stride: int, cols: int) -> int:
    """Pixels per phase row of an input tile of `tile_columns` columns: enough for every phase,
    rounded up to whole PE-column words plus one spare word (the array reads two words)."""
    per_phase = -(-tile_columns // stride)
    return (-(-per_phase // cols) + 1) * cols

def word_bytes(pe, buffer: str) -> int:
    """Bytes of one word of `input` (C*S: one PE-column window), `weight` (R*S: one weight word
    per row), `param` (R channel records) or `acc` (R accumulators: one pixel's output channels)
    for the PE array `pe`."""
    return {
        "input": pe.cols * pe.simd,
        "weight": pe.rows * pe.simd,
        "param": pe.rows * PARAM_BYTES,
        "acc": pe.rows * ACC_BYTES,
    }[buffer]


def param_bank_channels(config) -> int:
    """Output channels one parameter-buffer bank holds (so at most this many per tile)."""
    return config.template.param_bank_channels


def bank_bytes(config, buffer: str) -> int:
    """Bytes of one bank of `input`, `weight`, `param` or `acc`."""
    return {
        "input": config.buffers.input_bank,
        "weight": config.buffers.weight_bank,
        "param": PARAM_BYTES * param_bank_channels(config),
        "acc": config.buffers.output_bank,
    }[buffer]
