"""Post-training quantization of a float Network from calibration inputs.

Scheme (see `planner.quant`): each activation tensor gets asymmetric int8 parameters from the
min/max it reaches over the calibration inputs (range widened to contain 0); max-pool
outputs reuse their input's parameters (so pooling is exact); weights are symmetric int8 per
output channel; biases int32 at ``input_scale * weight_scale``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from common.errors import InputError
from planner.ir import Network, Op, TensorQuant
from planner.quant import layer_quant, tensor_quant_from_range

FloatExecutor = Callable[[Network, np.ndarray], dict[str, np.ndarray]]
"""Runs a float network on one `(C, H, W)` input and returns every tensor by name
(`sim.golden.run_float`, passed in from above: the planner does not execute networks)."""


def tensor_ranges(net: Network, calibration: np.ndarray, run_float: FloatExecutor) -> dict[str, tuple[float, float]]:
    """Min and max of every tensor over the calibration inputs `(N, C, H, W)`."""
    samples = np.asarray(calibration, dtype=np.float64)
    if samples.ndim == 3:
        samples = samples[None]
    if samples.ndim != 4 or samples.shape[0] == 0 or tuple(samples.shape[1:]) != net.input_shape:
        raise InputError(f"calibration data has shape {tuple(samples.shape)}, expected (N, {', '.join(map(str, net.input_shape))}) with N >= 1")
    ranges: dict[str, tuple[float, float]] = {}
    for sample in samples:
        for name, value in run_float(net, sample).items():
            low, high = float(value.min()), float(value.max())
            old = ranges.get(name, (low, high))
            ranges[name] = (min(old[0], low), max(old[1], high))
    return ranges


def quantize_from_samples(net: Network, calibration: np.ndarray, run_float: FloatExecutor) -> Network:
    """The quantized network (LayerQuant on every layer, input quantization set)."""
    ranges = tensor_ranges(net, calibration, run_float)
    quants: dict[str, TensorQuant] = {name: tensor_quant_from_range(*r) for name, r in ranges.items()}
    layers = []
    for layer in net.layers:
        inputs = tuple(quants[name] for name in layer.inputs)
        if layer.op == Op.MAXPOOL:
            quants[layer.output] = inputs[0]
        layers.append(dataclasses.replace(layer, quant=layer_quant(layer, inputs, quants[layer.output])))
    return dataclasses.replace(net, layers=tuple(layers), input_quant=quants[net.input_name])
