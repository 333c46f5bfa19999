"""Byte images of tensors and layer parameters in the layouts the accelerator reads
(docs/hardware.md, `hwgen.layout`)."""
from __future__ import annotations

import numpy as np

from hwgen.layout import PARAM_BYTES
from planner.ir import ceil_div


def padded_channels(channels: int, simd: int) -> int:
    """Channels per pixel of an activation tensor in DRAM (a multiple of the SIMD lanes)."""
    return ceil_div(channels, simd) * simd


def activation_image(x: np.ndarray, simd: int) -> np.ndarray:
    """int8 `(C, H, W)` to the DRAM bytes: HWC with channels padded to `padded_channels` (zeros)."""
    channels, height, width = x.shape
    hwc = np.zeros((height, width, padded_channels(channels, simd)), dtype=np.int8)
    hwc[:, :, :channels] = x.transpose(1, 2, 0)
    return hwc.reshape(-1).view(np.uint8)


def activation_from_image(image: np.ndarray, shape: tuple[int, int, int], simd: int) -> np.ndarray:
    """Inverse of `activation_image`: DRAM bytes to int8 `(C, H, W)`."""
    channels, height, width = shape
    hwc = image.view(np.int8).reshape(height, width, padded_channels(channels, simd))
    return np.ascontiguousarray(hwc[:, :, :channels].transpose(2, 0, 1))


def expand_depthwise(weights: np.ndarray, rows: int, simd: int) -> np.ndarray:
    """Depthwise int8 weights `(C, 1, KH, KW)` as dense per-oc-group weights: output channel
    `o` reads input channel `o` among the input groups of its oc group (the others are zero).
    Returns `(C, groups_per_oc_group * simd, KH, KW)` indexed by the channel within those groups."""
    channels, _, kh, kw = weights.shape
    span = max(1, ceil_div(rows, simd)) * simd
    dense = np.zeros((channels, span, kh, kw), dtype=np.int8)
    for o in range(channels):
        base = (o // rows) * rows // simd * simd
        dense[o, o - base] = weights[o, 0]
    return dense


def weight_block(weights: np.ndarray, rows: int, simd: int) -> np.ndarray:
    """The bytes of one weight tile `(OCt, ICt, KH, KW)` in array order:
    `[oc group][ic group][kh][kw][row][lane]`, zero-padded to whole groups."""
    oc, ic, kh, kw = weights.shape
    ocg, icg = ceil_div(oc, rows), ceil_div(ic, simd)
    padded = np.zeros((ocg * rows, icg * simd, kh, kw), dtype=np.int8)
    padded[:oc, :ic] = weights
    blocks = padded.reshape(ocg, rows, icg, simd, kh, kw).transpose(0, 2, 4, 5, 1, 3)
    return np.ascontiguousarray(blocks).reshape(-1).view(np.uint8)


def param_block(bias: np.ndarray, multiplier: np.ndarray, shift: np.ndarray, rows: int) -> np.ndarray:
    """Per output channel: int32 bias, uint16 multiplier, uint8 shift, one spare byte; padded
    to whole groups of `rows` channels."""
    channels = len(multiplier)
    padded = ceil_div(channels, rows) * rows
    record = np.zeros((padded, PARAM_BYTES), dtype=np.uint8)
    record[:channels, 0:4] = np.asarray(bias, dtype=np.int32).reshape(-1, 1).view(np.uint8)
    record[:channels, 4:6] = np.asarray(multiplier, dtype=np.uint16).reshape(-1, 1).view(np.uint8)
    record[:channels, 6] = np.asarray(shift, dtype=np.uint8)
    return record.reshape(-1)
