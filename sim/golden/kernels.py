"""Integer kernels with exactly the semantics of the accelerator.

Arrays are batch-1 feature maps `(C, H, W)`. Integer convolutions are evaluated with float64
BLAS products: every operand is below 2**9 in magnitude and sums stay far below 2**53, so the
float64 result is the exact integer, which is asserted.
"""
from __future__ import annotations

import numpy as np

_EXACT_FLOAT_LIMIT = 2.0**52


def pad_feature_map(x: np.ndarray, pads: tuple[int, int, int, int], value: float | int) -> np.ndarray:
    """Pad a `(C, H, W)` map by `(top, left, bottom, right)` with a constant."""
    top, left, bottom, right = pads
    if not any(pads):
        return x
    return np.pad(x, ((0, 0), (top, bottom), (left, right)), mode="constant", constant_values=value)


def windows(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int]) -> np.ndarray:
    """Sliding windows of a padded `(C, H, W)` map: `(C, OH, OW, KH, KW)` (a view)."""
    view = np.lib.stride_tricks.sliding_window_view(x, kernel, axis=(1, 2))
    return view[:, :: stride[0], :: stride[1]]


def conv2d(
    x: np.ndarray,
    weights: np.ndarray,
    stride: tuple[int, int],
    pads: tuple[int, int, int, int],
    groups: int = 1,
    pad_value: float | int = 0,
) -> np.ndarray:
    """Grouped 2-D convolution of `x (C, H, W)` with `weights (O, C/groups, KH, KW)`.

    Integer inputs give an exact int64 result; float inputs give float64.
    """
    integer = np.issubdtype(x.dtype, np.integer)
    xp = pad_feature_map(x.astype(np.float64), pads, pad_value)
    out_channels, group_channels, kh, kw = weights.shape
    win = windows(xp, (kh, kw), stride)  # (C, OH, OW, KH, KW)
    _, oh, ow = win.shape[:3]
    per_group_out = out_channels // groups
    out = np.empty((out_channels, oh, ow), dtype=np.float64)
    w64 = weights.astype(np.float64)
    for g in range(groups):
        patch = win[g * group_channels : (g + 1) * group_channels]  # (Cg, OH, OW, KH, KW)
        cols = patch.transpose(1, 2, 0, 3, 4).reshape(oh * ow, group_channels * kh * kw)
        wg = w64[g * per_group_out : (g + 1) * per_group_out].reshape(per_group_out, -1)
        out[g * per_group_out : (g + 1) * per_group_out] = (cols @ wg.T).T.reshape(per_group_out, oh, ow)
    if not integer:
        return out
    if np.abs(out).max(initial=0) >= _EXACT_FLOAT_LIMIT:
        raise OverflowError("integer convolution exceeds the exact float64 range")
    return np.rint(out).astype(np.int64)


def max_pool(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int], pads: tuple[int, int, int, int]) -> np.ndarray:
    """Max over each window; padded positions never win."""
    lowest = np.iinfo(x.dtype).min if np.issubdtype(x.dtype, np.integer) else -np.inf
    xp = pad_feature_map(x, pads, lowest)
    return windows(xp, kernel, stride).max(axis=(3, 4))


def sum_pool(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int], pads: tuple[int, int, int, int]) -> np.ndarray:
    """Sum over each window; padded positions contribute 0."""
    xp = pad_feature_map(x, pads, 0)
    return windows(xp, kernel, stride).sum(axis=(3, 4), dtype=np.int64 if np.issubdtype(x.dtype, np.integer) else np.float64)


def round_shift(value: np.ndarray, shift: np.ndarray | int) -> np.ndarray:
    """Arithmetic right shift by `shift` bits, rounding half to even (as ONNX QuantizeLinear).

    ``q = v >> s``; the dropped bits ``r`` round up when ``r > 2**(s-1)``, or when
    ``r == 2**(s-1)`` and ``q`` is odd. ``s = 0`` is exact.
    """
    value = np.asarray(value, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    floor = np.right_shift(value, shift)
    remainder = value - np.left_shift(floor, shift)
    half = np.where(shift > 0, np.left_shift(np.int64(1), np.maximum(shift - 1, 0)), 1)
    round_up = (remainder > half) | ((remainder == half) & (shift > 0) & (floor % 2 == 1))
    return floor + round_up


def requantize(
    acc: np.ndarray,
    multiplier: np.ndarray,
    shift: np.ndarray,
    zero_point: int | np.ndarray,
    act_min: int = -128,
    act_max: int = 127,
) -> np.ndarray:
    """Fixed-point output stage: ``clamp(round_shift(acc * m, s) + zp, act_min, act_max)``.

    `acc` is `(C, H, W)` (or `(C,)`); `multiplier` and `shift` are per channel (length C)
    or scalars. The product ``acc * m`` must fit in int64, which the quantizer guarantees.
    """
    acc = np.asarray(acc, dtype=np.int64)
    extra_dims = (1,) * (acc.ndim - 1)
    m = np.asarray(multiplier, dtype=np.int64).reshape(-1, *extra_dims)
    s = np.asarray(shift, dtype=np.int64).reshape(-1, *extra_dims)
    scaled = round_shift(acc * m, s) + zero_point
    return np.clip(scaled, act_min, act_max).astype(np.int8)
