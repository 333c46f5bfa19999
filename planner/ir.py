"""Network IR: the quantized, batch-1 layer graph every later stage reads.

Feature maps are `(C, H, W)` (batch 1). Layers are in topological order. Fully connected
layers are represented as convolutions whose kernel covers their whole input feature map
(`FC` after a flatten of `(C, H, W)` is a `C x H x W` convolution with one output pixel), so
every compute layer shares one loop nest.

Integer semantics (implemented by `sim.golden`, documented in `docs/quantization.md`):

- conv / fc: ``acc[o] = sum((x - zx) * w[o]) + bias[o]``
- maxpool:   ``acc = max(window(x)) - zx`` (padding never wins)
- avgpool:   ``acc = sum(window(x - zx))`` (padding contributes 0; divisor folded into M)
- add:       ``acc = sum_i (x_i - z_i) * input_multipliers[i]``
- concat:    input i is copied to its channel range with ``acc = (x_i - z_i) * input_multipliers[i]``

then for every op: ``y = clamp(round_shift(acc * multiplier[c], shift[c]) + zy, act_min, act_max)``
where ``round_shift(v, s)`` is ``v / 2**s`` rounded half to even (``s = 0`` is exact).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from common.errors import InputError

Shape = tuple[int, int, int]
"""A feature map shape `(channels, height, width)`."""


class Op(str, Enum):
    """Layer kinds the accelerator executes."""

    CONV = "conv"
    FC = "fc"
    MAXPOOL = "maxpool"
    AVGPOOL = "avgpool"
    ADD = "add"
    CONCAT = "concat"

    def __str__(self) -> str:
        return self.value


COMPUTE_OPS = (Op.CONV, Op.FC)
POOL_OPS = (Op.MAXPOOL, Op.AVGPOOL)


class Activation(str, Enum):
    """Activation fused into a layer's output stage (a clamp in the integer domain)."""

    NONE = "none"
    RELU = "relu"
    RELU6 = "relu6"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class TensorQuant:
    """Affine int8 quantization of an activation tensor: ``real = scale * (q - zero_point)``."""

    scale: float
    zero_point: int

    def quantize(self, real: np.ndarray) -> np.ndarray:
        """Float array to int8 (round half to even, saturating), as ONNX QuantizeLinear."""
        q = np.rint(np.asarray(real, dtype=np.float64) / self.scale) + self.zero_point
        return np.clip(q, -128, 127).astype(np.int8)

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """int8 array to float32."""
        return ((np.asarray(q, dtype=np.int64) - self.zero_point) * self.scale).astype(np.float32)


@dataclass(frozen=True, eq=False)
class LayerQuant:
    """The exact integer parameters the hardware uses for one layer.

    Arrays are per output channel (length `out_shape[0]`).
    """

    inputs: tuple[TensorQuant, ...]
    output: TensorQuant
    multiplier: np.ndarray = field(repr=False)  # int64, in [0, 2**MULTIPLIER_BITS)
    shift: np.ndarray = field(repr=False)  # int64, in [0, 63)
    act_min: int = -128
    act_max: int = 127
    weights: np.ndarray | None = field(default=None, repr=False)  # int8, like Layer.weights
    weight_scales: np.ndarray | None = field(default=None, repr=False)  # float64 (O,)
    bias: np.ndarray | None = field(default=None, repr=False)  # int32 (O,)
    input_multipliers: tuple[int, ...] = (1,)


@dataclass(frozen=True, eq=False)
class Layer:
    """One accelerator layer. `weights` are float32 `(O, C/groups, KH, KW)` for conv/fc; in a
    network loaded from shapes alone (`planner.frontend.tensors.shape_only`) `weights` and `bias`
    are None."""

    name: str
    op: Op
    inputs: tuple[str, ...]
    output: str
    in_shapes: tuple[Shape, ...]
    out_shape: Shape
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, left, bottom, right
    groups: int = 1
    activation: Activation = Activation.NONE
    weights: np.ndarray | None = field(default=None, repr=False)
    bias: np.ndarray | None = field(default=None, repr=False)
    quant: LayerQuant | None = field(default=None, repr=False)
    pool: int = 1
    """A conv's fused max pool, k x k with stride k (1: none): `out_shape` is the pooled map
    (`planner.fusion`)."""

    @property
    def conv_size(self) -> tuple[int, int]:
        """Rows and columns of the conv output a conv / fc layer computes: its output map, or the
        fused pool's whole windows."""
        return self.out_shape[1] * self.pool, self.out_shape[2] * self.pool

    @property
    def in_shape(self) -> Shape:
        """Shape of the first (for conv/fc/pool: the only) input."""
        return self.in_shapes[0]

    @property
    def is_depthwise(self) -> bool:
        return self.op == Op.CONV and self.groups > 1 and self.groups == self.in_shape[0] == self.out_shape[0]

    @property
    def macs(self) -> int:
        """Multiply-accumulates of a conv/fc layer (0 for pooling, add, concat)."""
        if self.op not in COMPUTE_OPS:
            return 0
        out_c, (out_h, out_w) = self.out_shape[0], self.conv_size
        in_c = self.in_shape[0]
        return out_c * out_h * out_w * (in_c // self.groups) * self.kernel[0] * self.kernel[1]

    @property
    def weight_count(self) -> int:
        """Number of weights, biases excluded."""
        if self.op not in COMPUTE_OPS:
            return 0
        return self.out_shape[0] * (self.in_shape[0] // self.groups) * self.kernel[0] * self.kernel[1]

    @property
    def bias_count(self) -> int:
        return 0 if self.bias is None else int(self.bias.size)

    @property
    def params(self) -> int:
        """Weights plus biases."""
        return self.weight_count + self.bias_count


class HostOp(str, Enum):
    """Operators computed on the host after the accelerator, on its dequantized outputs."""

    SOFTMAX = "Softmax"
    LOG_SOFTMAX = "LogSoftmax"
    ARGMAX = "ArgMax"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class HostStep:
    """One host operator with its ONNX attributes.

    `coerce_2d` is the Softmax of opsets before 13: the input flattened to 2-D at `axis`.
    """

    op: HostOp
    axis: int
    keepdims: bool = True
    select_last_index: bool = False
    coerce_2d: bool = False

    def apply(self, x: np.ndarray) -> np.ndarray:
        if self.op == HostOp.ARGMAX:
            if self.select_last_index:
                flipped = np.flip(x, axis=self.axis)
                index = x.shape[self.axis] - 1 - np.argmax(flipped, axis=self.axis, keepdims=self.keepdims)
            else:
                index = np.argmax(x, axis=self.axis, keepdims=self.keepdims)
            return index.astype(np.int64)
        data = x.reshape(int(np.prod(x.shape[:self.axis % x.ndim])), -1) if self.coerce_2d else x
        axis = -1 if self.coerce_2d else self.axis
        shifted = data.astype(np.float64) - data.max(axis=axis, keepdims=True)
        log_sum = np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        result = shifted - log_sum if self.op == HostOp.LOG_SOFTMAX else np.exp(shifted - log_sum)
        return result.reshape(x.shape).astype(np.float32)


@dataclass(frozen=True)
class HostTail:
    """Host operators turning the accelerator output `source` into the graph output `output`."""

    source: str
    output: str
    steps: tuple[HostStep, ...]

    def apply(self, x: np.ndarray) -> np.ndarray:
        for step in self.steps:
            x = step.apply(x)
        return x


@dataclass(frozen=True, eq=False)
class Network:
    """A whole network: one input feature map, layers in topological order, named outputs.

    `host_tails` are trailing operators the host computes on the outputs (Softmax, ArgMax);
    `absent_weights` names the weights that were absent from the model file and replaced by
    seeded stand-ins (a shape-only model).
    """

    name: str
    input_name: str
    input_shape: Shape
    layers: tuple[Layer, ...]
    outputs: tuple[str, ...]
    input_quant: TensorQuant | None = None
    host_tails: tuple[HostTail, ...] = ()
    absent_weights: tuple[str, ...] = ()

    @property
    def quantized(self) -> bool:
        return self.input_quant is not None and all(layer.quant is not None for layer in self.layers)

    @property
    def total_macs(self) -> int:
        return sum(layer.macs for layer in self.layers)

    @property
    def total_weights(self) -> int:
        return sum(layer.weight_count for layer in self.layers)

    @property
    def total_params(self) -> int:
        return sum(layer.params for layer in self.layers)

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        namesakes = [l.name for l in self.layers if l.name.startswith(f"{name}#") and l.name[len(name) + 1:].isdigit()]
        if namesakes:
            raise KeyError(f"layer name {name!r} is ambiguous ({len(namesakes)} ONNX nodes share it); "
                           f"give one of {', '.join(namesakes)}")
        raise KeyError(f"no layer named {name!r}; layers: {', '.join(l.name for l in self.layers)}")

    def tensor_shapes(self) -> dict[str, Shape]:
        """Shape of every tensor: the network input and each layer's output."""
        shapes = {self.input_name: self.input_shape}
        for layer in self.layers:
            shapes[layer.output] = layer.out_shape
        return shapes

    def output_quant(self, tensor: str) -> TensorQuant:
        """Quantization of a tensor produced by a layer or of the network input."""
        if tensor == self.input_name and self.input_quant is not None:
            return self.input_quant
        for layer in self.layers:
            if layer.output == tensor and layer.quant is not None:
                return layer.quant.output
        raise KeyError(f"tensor {tensor!r} has no quantization")


def conv_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int) -> int:
    """Output extent of a convolution or pooling window along one axis (floor mode)."""
    return (size + pad_begin + pad_end - kernel) // stride + 1


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def single_layer_network(net: Network, name: str) -> Network:
    """A network of one layer of `net` (its input becomes the network input)."""
    try:
        layer = net.layer(name)
    except KeyError as error:
        raise InputError(str(error.args[0])) from None
    if len(layer.inputs) != 1:
        raise InputError(f"layer {name!r} has {len(layer.inputs)} inputs; only single-input layers can run alone")
    return Network(f"{net.name}:{name}", layer.inputs[0], layer.in_shape, (layer,), (layer.output,),
                   net.output_quant(layer.inputs[0]) if net.quantized else None)
