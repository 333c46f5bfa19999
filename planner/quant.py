"""The int8 quantization scheme and the fixed-point parameters the hardware uses.

- Activations: asymmetric int8, ``real = scale * (q - zero_point)``, range always contains 0.
- Weights: symmetric int8 per output channel (zero point 0, range [-127, 127]).
- Bias: int32 with scale ``input_scale * weight_scale[o]``.
- Requantization: a real multiplier M is stored as ``(m, s)`` with ``M ~= m * 2**-s``,
  ``m`` in ``[2**15, 2**16)`` (`MULTIPLIER_BITS` = 16, unsigned: one SB_MAC16 operand, two
  MULT18X18D per 32-bit accumulator) and ``0 <= s <= 62``; applied as
  ``round_shift(acc * m, s)`` (round half to even), see `sim.golden.kernels.requantize`.
"""
from __future__ import annotations

import math

import numpy as np

from common.errors import QuantizationError
from hwgen.config import MULTIPLIER_BITS
from planner.ir import Activation, Layer, LayerQuant, Op, TensorQuant

MAX_SHIFT = 62
INT8_MIN, INT8_MAX = -128, 127


def fixed_point(real: float, what: str = "multiplier") -> tuple[int, int]:
    """Encode a non-negative real multiplier as ``(m, s)`` with ``real ~= m * 2**-s``."""
    if not math.isfinite(real) or real < 0:
        raise QuantizationError(f"{what}: requantization multiplier {real!r} must be finite and >= 0")
    if real == 0:
        return 0, 0
    mantissa, exponent = math.frexp(real)  # real = mantissa * 2**exponent, mantissa in [0.5, 1)
    m = round(mantissa * (1 << MULTIPLIER_BITS))
    s = MULTIPLIER_BITS - exponent
    if m == 1 << MULTIPLIER_BITS:
        m, s = m >> 1, s - 1
    if s < 0:
        raise QuantizationError(f"{what}: requantization multiplier {real:g} is too large (at most {2.0**(MULTIPLIER_BITS - 1):g})")
    if s > MAX_SHIFT:
        m, s = round(m / (1 << (s - MAX_SHIFT))), MAX_SHIFT
    return m, s


def shared_shift_multipliers(reals: list[float], what: str) -> tuple[list[int], int]:
    """Encode several multipliers with one common shift (for add and concat inputs)."""
    largest = max(reals)
    _, shift = fixed_point(largest, what)
    if largest == 0:
        return [0] * len(reals), 0
    return [round(r * (1 << shift)) for r in reals], shift


def tensor_quant_from_range(low: float, high: float) -> TensorQuant:
    """Asymmetric int8 parameters covering ``[min(low, 0), max(high, 0)]``."""
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    if high - low < 1e-12:
        return TensorQuant(scale=1.0, zero_point=0)
    scale = (high - low) / (INT8_MAX - INT8_MIN)
    zero_point = int(np.clip(round(INT8_MIN - low / scale), INT8_MIN, INT8_MAX))
    return TensorQuant(scale=scale, zero_point=zero_point)


def quantize_weights(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-output-channel int8: returns ``(q int8, scales float64 (O,))``."""
    flat = np.abs(weights.reshape(weights.shape[0], -1)).max(axis=1).astype(np.float64)
    scales = np.where(flat > 0, flat / 127.0, 1.0)
    q = np.rint(weights / scales.reshape(-1, *(1,) * (weights.ndim - 1)))
    return np.clip(q, -127, 127).astype(np.int8), scales


def quantize_bias(bias: np.ndarray | None, input_scale: float, weight_scales: np.ndarray) -> np.ndarray:
    """int32 bias with scale ``input_scale * weight_scales``."""
    if bias is None:
        return np.zeros(weight_scales.shape, dtype=np.int32)
    q = np.rint(bias.astype(np.float64) / (input_scale * weight_scales))
    return np.clip(q, -(2**31), 2**31 - 1).astype(np.int32)


def activation_bounds(activation: Activation, output: TensorQuant) -> tuple[int, int]:
    """Clamp bounds in the int8 domain implementing a fused activation."""
    low, high = INT8_MIN, INT8_MAX
    if activation in (Activation.RELU, Activation.RELU6):
        low = max(low, output.zero_point)
    if activation == Activation.RELU6:
        high = min(high, output.zero_point + round(6.0 / output.scale))
    return low, high


def layer_quant(
    layer: Layer,
    inputs: tuple[TensorQuant, ...],
    output: TensorQuant,
    weights: np.ndarray | None = None,
    weight_scales: np.ndarray | None = None,
    bias: np.ndarray | None = None,
) -> LayerQuant:
    """The integer parameters of one layer from its tensor quantizations.

    conv/fc take int8 `weights`, their per-channel `weight_scales` and an int32 `bias`
    (quantized from the float layer when not given).
    """
    channels = layer.out_shape[0]
    act_min, act_max = activation_bounds(layer.activation, output)
    input_multipliers: tuple[int, ...] = (1,)
    if layer.op in (Op.CONV, Op.FC):
        if weights is None:
            weights, weight_scales = quantize_weights(layer.weights)
        if bias is None:
            bias = quantize_bias(layer.bias, inputs[0].scale, weight_scales)
        reals = inputs[0].scale * np.asarray(weight_scales, dtype=np.float64) / output.scale
        pairs = [fixed_point(float(r), f"layer {layer.name!r} channel {c}") for c, r in enumerate(reals)]
    elif layer.op == Op.MAXPOOL:
        pairs = [fixed_point(inputs[0].scale / output.scale, f"layer {layer.name!r}")] * channels
    elif layer.op == Op.AVGPOOL:
        window = layer.kernel[0] * layer.kernel[1]
        pairs = [fixed_point(inputs[0].scale / (output.scale * window), f"layer {layer.name!r}")] * channels
    else:  # ADD, CONCAT: per-input multipliers with one shared shift, output multiplier 1
        multipliers, shift = shared_shift_multipliers([q.scale / output.scale for q in inputs], f"layer {layer.name!r}")
        input_multipliers = tuple(multipliers)
        pairs = [(1, shift)] * channels
    multiplier = np.array([m for m, _ in pairs], dtype=np.int64)
    shift = np.array([s for _, s in pairs], dtype=np.int64)
    return LayerQuant(
        inputs=inputs,
        output=output,
        multiplier=multiplier,
        shift=shift,
        act_min=act_min,
        act_max=act_max,
        weights=weights,
        weight_scales=None if weight_scales is None else np.asarray(weight_scales, dtype=np.float64),
        bias=None if bias is None else np.asarray(bias, dtype=np.int32),
        input_multipliers=input_multipliers,
    )
