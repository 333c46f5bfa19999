"""Layers rewritten to fit the instruction fields, exactly as the golden model computes them.

A window (kernel or pooling) wider than the conv engine's kernels (`kernel_limit`) is split:

- a conv / fc layer or an average pool with one output pixel whose window covers the whole map
  (such an average pool when it is not one vector `sum`, below) becomes a fully connected layer
  over the map read as one pixel of `H * W * Cp` channels (the same DRAM bytes: pixels in order,
  `Cp` channels each, padded to the SIMD lanes), its weights placed at those channels (an
  average pool's: 1 on the channel itself, 0 elsewhere). The reduction then runs over
  input-channel tiles whose int32 partial sums add up exactly;
- a max pool becomes a cascade of max pools with identity requantization between them (the
  maximum of maxima is the maximum; padding, -128, never exceeds a value of the map): a window
  covering the map with one output in non-overlapping steps of the largest stride, any other
  window `K` with stride `s` as a stride-1 pool of the largest window `K2` followed by a pool of
  `K - K2 + 1` with stride `s`.

An average pool runs on the vector unit's `sum` as it is while its window is within CONVCFG's
kernel fields (wider than the conv engine's kernels: `window_limit`) and its tile fits the banks
(`vector_fits`); only beyond that is a window covering the map flattened. Without `sum`, an
average pool within the conv engine's kernels becomes a depthwise convolution with weights 1
(`window_sum`).

A stride beyond CONVCFG's `stride` field that factors as `a * b` within it becomes the layer with
stride `a` followed by 1x1 max pools of stride `b` (every `b`-th result, unchanged).

The planner plans the rewritten network (so its costs follow the split), the compiler compiles
it; tensor names of the original network keep their meaning. What stays out of reach is
refused by `planner.envelope`.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from common.errors import PlanningError
from hwgen.config import AcceleratorConfig
from hwgen.conv.kernel_size import KERNEL_LIMIT
from hwgen.isa import Opcode, VecOp, field_limit
from hwgen.vector_ops import vector_ops
from planner.compile.packing import padded_channels
from planner.compile.vector import vector_tile
from planner.ir import COMPUTE_OPS, Activation, Layer, LayerQuant, Network, Op, TensorQuant, ceil_div, conv_output_size

IDENTITY = (1 << 15, 15)
"""Multiplier and shift of an exact identity requantization (every configuration's shifts)."""


def kernel_limit() -> int:
    """Largest kernel side the conv engine runs (and window side of a max pool before it is split)."""
    return KERNEL_LIMIT


def window_limit() -> int:
    """Largest window side one CONVCFG holds: the vector unit's `sum` windows."""
    return field_limit(Opcode.CONVCFG, "kernel_h")


def stride_limit() -> int:
    """Largest stride one CONVCFG holds."""
    return field_limit(Opcode.CONVCFG, "stride")


def split_network(net: Network, config: AcceleratorConfig) -> Network:
    """`net` with every layer whose window exceeds the kernel fields split (module docstring);
    a network that needs no split is returned as it is."""
    layers: list[Layer] = []
    for layer in net.layers:
        layers += split_layer(layer, config)
    if len(layers) == len(net.layers) and all(a is b for a, b in zip(layers, net.layers)):
        return net
    return replace(net, layers=tuple(layers))


def split_shapes(net: Network, config: AcceleratorConfig) -> Network:
    """The split of `net`'s shapes alone (no weights built): what the planner plans."""
    return split_network(replace(net, layers=tuple(map(shape_only, net.layers)), input_quant=None), config)


def shape_only(layer: Layer) -> Layer:
    """`layer` without weights and quantization (its split builds no weights)."""
    return replace(layer, weights=None, quant=None)


def split_layer(layer: Layer, config: AcceleratorConfig) -> list[Layer]:
    """The layers computing `layer` within the kernel fields (just `[layer]` when it fits or
    cannot be split: then `planner.envelope` names the limit)."""
    if layer.op not in (*COMPUTE_OPS, Op.AVGPOOL, Op.MAXPOOL):
        return [layer]
    if covers_map(layer) and layer.stride != (1, 1):  # one output: the stride moves no window
        return split_layer(replace(layer, stride=(1, 1)), config)
    stride = layer.stride[0]
    if stride == layer.stride[1] and stride > stride_limit():
        return stride_steps(layer, config)
    no_sum = layer.op == Op.AVGPOOL and VecOp.SUM not in vector_ops(config)
    if max(layer.kernel) <= kernel_limit():
        return [window_sum(layer)] if no_sum else [layer]
    if layer.op == Op.AVGPOOL and not no_sum and vector_fits(layer, config):
        return [layer]
    if covers_map(layer) and (layer.op in COMPUTE_OPS and layer.groups == 1 or layer.op == Op.AVGPOOL):
        return [flattened(layer, config)]
    if layer.op == Op.MAXPOOL and layer.stride[0] == layer.stride[1]:
        return max_cascade(layer)
    return [layer]


def vector_fits(layer: Layer, config: AcceleratorConfig) -> bool:
    """A pool's window is within CONVCFG's kernel fields and a tile of it fits the banks."""
    if max(layer.kernel) > window_limit() or layer.stride[0] != layer.stride[1]:
        return False
    try:
        vector_tile(layer, config, 1)
    except PlanningError:
        return False
    return True


def covers_map(layer: Layer) -> bool:
    """One output pixel whose window holds every pixel of the input map."""
    _, height, width = layer.in_shape
    top, left = layer.pads[:2]
    return layer.out_shape[1:] == (1, 1) and layer.kernel[0] - top >= height and layer.kernel[1] - left >= width


def flattened(layer: Layer, config: AcceleratorConfig) -> Layer:
    """A window-covers-map layer as a fully connected layer over the map read as one pixel
    (integer weights only: a split network is planned and compiled, never run in float)."""
    channels, height, width = layer.in_shape
    cp = padded_channels(channels, config.pe.simd)
    out_c = layer.out_shape[0]
    top, left = layer.pads[:2]
    quant = layer.quant
    if quant is not None:
        spread = np.zeros((out_c, height, width, cp), np.int8)  # pixel-major, zero padding channels
        if layer.op == Op.AVGPOOL:  # 1 on the channel itself
            spread[np.arange(out_c), :, :, np.arange(channels)] = 1
            quant = replace(quant, weight_scales=np.ones(out_c), bias=np.zeros(out_c, np.int32))
        else:  # the window's part on the map
            spread[..., :channels] = quant.weights[:, :, top:top + height, left:left + width].transpose(0, 2, 3, 1)
        quant = replace(quant, weights=spread.reshape(out_c, height * width * cp, 1, 1))
    return replace(layer, op=Op.FC, in_shapes=((height * width * cp, 1, 1),), kernel=(1, 1), stride=(1, 1),
                   pads=(0, 0, 0, 0), groups=1, weights=None, quant=quant)


def window_sum(layer: Layer) -> Layer:
    """An average pool as a depthwise convolution with weights 1 (each window's sum, padding
    contributing 0 as the input zero point it is filled with), requantized with the pool's
    multiplier and shift: for a vector unit without `sum`, C * KH * KW weights."""
    channels = layer.in_shape[0]
    quant = layer.quant
    if quant is not None:
        quant = replace(quant, weights=np.ones((channels, 1, *layer.kernel), np.int8), weight_scales=np.ones(channels),
                        bias=np.zeros(channels, np.int32))
    return replace(layer, op=Op.CONV, groups=channels, weights=None, quant=quant)


def stride_steps(layer: Layer, config: AcceleratorConfig) -> list[Layer]:
    """A stride `s = a * b` beyond the stride field as the layer with stride `a` (the largest
    divisor within the field) followed by 1x1 max pools of stride `b` picking every `b`-th
    result, with identity requantization: (X // a) // b == X // s for the output extents."""
    stride = layer.stride[0]
    first_stride = next((d for d in range(stride_limit(), 1, -1) if stride % d == 0), None)
    if first_stride is None:  # a prime beyond the field: refused by planner.envelope
        return [layer]
    out = tuple(conv_output_size(size, k, first_stride, begin, end)
                for size, k, begin, end in zip(layer.in_shape[1:], layer.kernel, layer.pads[:2], layer.pads[2:]))
    first = replace(layer, name=f"{layer.name}.stride{first_stride}", output=f"{layer.output}.stride{first_stride}",
                    stride=(first_stride, first_stride), out_shape=(layer.out_shape[0], *out))
    quant = None if layer.quant is None else _identity(layer.quant.output, layer.out_shape[0])
    pick = Layer(name=layer.name, op=Op.MAXPOOL, inputs=(first.output,), output=layer.output,
                 in_shapes=(first.out_shape,), out_shape=layer.out_shape, stride=(stride // first_stride,) * 2,
                 quant=quant)
    return [*split_layer(first, config), *split_layer(pick, config)]


def _identity(tensor: TensorQuant, channels: int) -> LayerQuant:
    """Quantization of a max pool that passes values on unchanged."""
    return LayerQuant(inputs=(tensor,), output=tensor, multiplier=np.full(channels, IDENTITY[0], np.int64),
                      shift=np.full(channels, IDENTITY[1], np.int64))


def max_cascade(layer: Layer, depth: int = 0) -> list[Layer]:
    """A max pool as max pools within the kernel and stride fields (module docstring); `depth`
    numbers the intermediate stages."""
    channels, height, width = layer.in_shape
    if covers_map(layer):
        step = min(stride_limit(), kernel_limit())
        kernel = (min(step, height), min(step, width))
        out_h, out_w = ceil_div(height, step), ceil_div(width, step)
        pads = (0, 0, out_h * step - height if height > step else 0, out_w * step - width if width > step else 0)
        first = _stage(layer, str(depth), kernel, (step, step), pads, (channels, out_h, out_w))
        rest = replace(layer, inputs=(first.output,), in_shapes=(first.out_shape,), kernel=first.out_shape[1:],
                       stride=(1, 1), pads=(0, 0, 0, 0))
    else:
        k2 = tuple(min(kernel_limit(), k) for k in layer.kernel)
        k1 = tuple(k - k2_ + 1 for k, k2_ in zip(layer.kernel, k2))
        s = layer.stride[0]
        top, left, bottom, right = layer.pads
        needed = [(o - 1) * s + k for o, k in zip(layer.out_shape[1:], k1)]  # stage-1 outputs the second reads
        ends = [max(0, n + k - 1 - size - begin) for n, k, size, begin in zip(needed, k2, (height, width), (top, left))]
        out = tuple(conv_output_size(size, k, 1, begin, end)
                    for size, k, begin, end in zip((height, width), k2, (top, left), ends))
        first = _stage(layer, str(depth), k2, (1, 1), (top, left, ends[0], ends[1]), (channels, *out))
        rest = replace(layer, inputs=(first.output,), in_shapes=(first.out_shape,), kernel=k1, pads=(0, 0, 0, 0))
    assert rest.out_shape[1:] == tuple(conv_output_size(size, k, rest.stride[0], 0, 0)
                                       for size, k in zip(rest.in_shape[1:], rest.kernel)), "cascade changed the output"
    return [first, *(max_cascade(rest, depth + 1) if max(rest.kernel) > kernel_limit() else [rest])]


def _stage(layer: Layer, tag: str, kernel: tuple[int, int], stride: tuple[int, int],
           pads: tuple[int, int, int, int], out_shape: tuple[int, int, int]) -> Layer:
    """An intermediate max pool of the cascade: same quantization in and out, identity requantization."""
    name = f"{layer.name}.split{tag}"
    quant = None if layer.quant is None else _identity(layer.quant.inputs[0], out_shape[0])
    return Layer(name=name, op=Op.MAXPOOL, inputs=layer.inputs, output=f"{layer.output}.split{tag}",
                 in_shapes=layer.in_shapes, out_shape=out_shape, kernel=kernel, stride=stride, pads=pads,
                 activation=Activation.NONE, quant=quant)
