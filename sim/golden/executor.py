"""Golden executors of the Network IR: exact integer semantics, and the float original.

`run_quantized` is the reference every other engine (ISA simulator, RTL) must match
bit for bit. `run_float` executes the float network (used for calibration and to measure
quantization error).
"""
from __future__ import annotations

import numpy as np

from common.errors import InputError
from planner.ir import Activation, Layer, Network, Op
from sim.golden import kernels


def _check_input(net: Network, x: np.ndarray) -> None:
    if tuple(x.shape) != net.input_shape:
        raise InputError(f"input has shape {tuple(x.shape)}, network {net.name!r} expects {net.input_shape} (C, H, W)")


def accumulate(layer: Layer, inputs: list[np.ndarray]) -> np.ndarray:
    """The int64 accumulator of a quantized layer before its output stage."""
    q = layer.quant
    centred = [x.astype(np.int64) - t.zero_point for x, t in zip(inputs, q.inputs)]
    if layer.op in (Op.CONV, Op.FC):
        acc = kernels.conv2d(centred[0], q.weights.astype(np.int64), layer.stride, layer.pads, layer.groups)
        return acc + q.bias.astype(np.int64)[:, None, None]
    if layer.op == Op.MAXPOOL:
        return kernels.max_pool(centred[0], layer.kernel, layer.stride, layer.pads)
    if layer.op == Op.AVGPOOL:
        return kernels.sum_pool(centred[0], layer.kernel, layer.stride, layer.pads)
    scaled = [x * m for x, m in zip(centred, q.input_multipliers)]
    if layer.op == Op.ADD:
        return sum(scaled[1:], scaled[0])
    if layer.op == Op.CONCAT:
        return np.concatenate(scaled, axis=0)
    raise NotImplementedError(layer.op)


def run_layer_quantized(layer: Layer, inputs: list[np.ndarray]) -> np.ndarray:
    """One quantized layer: int8 inputs to its int8 output map."""
    q = layer.quant
    acc = accumulate(layer, inputs)
    return kernels.requantize(acc, q.multiplier, q.shift, q.output.zero_point, q.act_min, q.act_max)


def run_quantized(net: Network, x: np.ndarray) -> dict[str, np.ndarray]:
    """Run an int8 `(C, H, W)` input through a quantized network; returns every tensor (int8)."""
    if not net.quantized:
        raise InputError(f"network {net.name!r} is not quantized; quantize it first (planner.calibrate)")
    _check_input(net, x)
    if x.dtype != np.int8:
        raise InputError(f"quantized input must be int8, got {x.dtype}")
    values = {net.input_name: x}
    for layer in net.layers:
        values[layer.output] = run_layer_quantized(layer, [values[name] for name in layer.inputs])
    return values


def _activate(y: np.ndarray, activation: Activation) -> np.ndarray:
    if activation == Activation.RELU:
        return np.maximum(y, 0.0)
    if activation == Activation.RELU6:
        return np.clip(y, 0.0, 6.0)
    return y


def run_layer_float(layer: Layer, inputs: list[np.ndarray]) -> np.ndarray:
    """One layer in float64 (the model's original arithmetic)."""
    x = inputs[0]
    if layer.op in (Op.CONV, Op.FC):
        y = kernels.conv2d(x, layer.weights, layer.stride, layer.pads, layer.groups)
        if layer.bias is not None:
            y = y + layer.bias.astype(np.float64)[:, None, None]
    elif layer.op == Op.MAXPOOL:
        y = kernels.max_pool(x, layer.kernel, layer.stride, layer.pads)
    elif layer.op == Op.AVGPOOL:
        y = kernels.sum_pool(x, layer.kernel, layer.stride, layer.pads) / (layer.kernel[0] * layer.kernel[1])
    elif layer.op == Op.ADD:
        y = sum(inputs[1:], inputs[0])
    elif layer.op == Op.CONCAT:
        y = np.concatenate(inputs, axis=0)
    else:
        raise NotImplementedError(layer.op)
    return _activate(y, layer.activation)


def run_float(net: Network, x: np.ndarray) -> dict[str, np.ndarray]:
    """Run a float `(C, H, W)` input through the float network; returns every tensor (float64)."""
    _check_input(net, x)
    values = {net.input_name: np.asarray(x, dtype=np.float64)}
    for layer in net.layers:
        values[layer.output] = run_layer_float(layer, [values[name] for name in layer.inputs])
    return values
