"""Reference CNNs built as ONNX graphs: the ImageNet networks AlexNet, VGG-16, ResNet-18/50,
MobileNetV1 (a chain), MobileNetV2, SqueezeNet 1.1 (parallel branches) and DenseNet-121
(concatenation-heavy) with 1000 classes, and the CIFAR-10 ResNets ResNet-8 (MLPerf Tiny's image
classification model) and ResNet-20 (He et al., 2016) at 32x32 with 10 classes.

The graphs have the published layer shapes (float32, opset 17, batch 1, input ``"input"``
of shape ``(1, 3, H, W)``, output ``"output"`` of shape ``(1, classes)``) and random weights:
He-scaled convolution / FC weights and sane batch-norm statistics, so activations stay finite.
Built without weights (`weights=False`, for planning), each such parameter is its shape alone:
external data that is not loaded, which the front end reads as shape-only.
Node names follow the usual layer names (``conv1``, ``layer1.0.conv1``, ``features.3.conv.1.0``).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import onnx
from onnx import TensorProto, helper

from common.errors import UnsupportedModelError
from planner.ir import Shape, conv_output_size

OPSET = 17
NUM_CLASSES = 1000
CIFAR_CLASSES = 10
NOT_DRAWN = "weights-not-drawn"
"""The external-data location of a parameter built without its values (`weights=False`)."""


def _window_shape(shape: Shape, out_c: int, kernel: int, stride: int, pad: int) -> Shape:
    """Output shape of a square conv / pooling window with symmetric padding."""
    _, h, w = shape
    return out_c, conv_output_size(h, kernel, stride, pad, pad), conv_output_size(w, kernel, stride, pad, pad)


class _GraphBuilder:
    """Accumulates nodes and initializers while tracking every tensor's `(C, H, W)` shape."""

    def __init__(self, seed: int, input_hw: int, weights: bool = True) -> None:
        self.rng = np.random.default_rng(seed) if weights else None
        self.proto = onnx.ModelProto()  # filled in place: no copies of the (large) weights
        self.nodes = self.proto.graph.node
        self.shapes: dict[str, Shape] = {"input": (3, input_hw, input_hw)}
        self.input_hw = input_hw
        self.relu6_bounds: list[str] = []

    def _param(self, name: str, array: np.ndarray) -> str:
        """Add a float32 (little-endian raw data) initializer."""
        raw = array.astype("<f4", copy=False).tobytes()
        self.proto.graph.initializer.add(name=name, dims=array.shape, data_type=TensorProto.FLOAT, raw_data=raw)
        return name

    def _drawn(self, name: str, shape: tuple[int, ...], draw: Callable[[], np.ndarray]) -> str:
        """A parameter of random values (`draw()`), or built without weights (no generator) its
        shape alone (external data at `NOT_DRAWN`, not loaded: nothing is drawn)."""
        if self.rng is not None:
            return self._param(name, draw())
        tensor = self.proto.graph.initializer.add(name=name, dims=shape, data_type=TensorProto.FLOAT,
                                                  data_location=TensorProto.EXTERNAL)
        tensor.external_data.add(key="location", value=NOT_DRAWN)
        return name

    def _node(self, op: str, name: str, inputs: list[str], shape: Shape, **attrs: object) -> str:
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        self.shapes[name] = shape
        return name

    def _normal(self, shape: tuple[int, ...], std: float) -> np.ndarray:
        values = self.rng.standard_normal(shape, dtype=np.float32)
        values *= np.float32(std)
        return values

    def _uniform(self, size: int, low: float, high: float) -> np.ndarray:
        return self.rng.uniform(low, high, size).astype(np.float32)

    def act(self, x: str, name: str, kind: str) -> str:
        """ReLU (``"relu"``) or ReLU6 (``"relu6"``, a Clip with min/max inputs)."""
        if kind == "relu":
            return self._node("Relu", name, [x], self.shapes[x])
        if not self.relu6_bounds:
            self.relu6_bounds = [
                self._param(f"relu6.{bound}", np.array(value, dtype=np.float32))
                for bound, value in (("min", 0.0), ("max", 6.0))
            ]
        return self._node("Clip", name, [x, *self.relu6_bounds], self.shapes[x])

    def conv(
        self,
        x: str,
        name: str,
        out_c: int,
        kernel: int,
        stride: int = 1,
        pad: int = 0,
        groups: int = 1,
        bias: bool = False,
        bn: str | None = None,
        act: tuple[str, str] | None = None,
    ) -> str:
        """Conv, optionally followed by BatchNormalization named `bn` and activation `(name, kind)`."""
        in_c = self.shapes[x][0]
        fan_in = in_c // groups * kernel * kernel
        shape = (out_c, in_c // groups, kernel, kernel)
        inputs = [x, self._drawn(f"{name}.weight", shape, partial(self._normal, shape, (2.0 / fan_in) ** 0.5))]
        if bias:
            inputs.append(self._drawn(f"{name}.bias", (out_c,), partial(self._uniform, out_c, -0.05, 0.05)))
        out_shape = _window_shape(self.shapes[x], out_c, kernel, stride, pad)
        y = self._node(
            "Conv", name, inputs, out_shape,
            kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4, group=groups,
        )
        if bn is not None:
            stats = {
                "weight": (0.5, 1.0),  # scale (gamma)
                "bias": (-0.1, 0.1),  # beta
                "running_mean": (-0.1, 0.1),
                "running_var": (0.5, 1.5),  # > 0
            }
            params = [self._drawn(f"{bn}.{field}", (out_c,), partial(self._uniform, out_c, *bounds))
                      for field, bounds in stats.items()]
            y = self._node("BatchNormalization", bn, [y, *params], out_shape, epsilon=1e-5)
        return y if act is None else self.act(y, *act)

    def maxpool(self, x: str, name: str, kernel: int, stride: int, pad: int = 0) -> str:
        out_shape = _window_shape(self.shapes[x], self.shapes[x][0], kernel, stride, pad)
        window = {"kernel_shape": [kernel, kernel], "strides": [stride, stride], "pads": [pad] * 4}
        return self._node("MaxPool", name, [x], out_shape, **window)

    def add(self, a: str, b: str, name: str) -> str:
        return self._node("Add", name, [a, b], self.shapes[a])

    def avgpool(self, x: str, name: str, kernel: int, stride: int) -> str:
        out_shape = _window_shape(self.shapes[x], self.shapes[x][0], kernel, stride, 0)
        return self._node("AveragePool", name, [x], out_shape, kernel_shape=[kernel, kernel], strides=[stride, stride])

    def concat(self, inputs: list[str], name: str) -> str:
        """Concatenation on channels."""
        _, h, w = self.shapes[inputs[0]]
        return self._node("Concat", name, inputs, (sum(self.shapes[x][0] for x in inputs), h, w), axis=1)

    def global_avgpool(self, x: str, name: str) -> str:
        return self._node("GlobalAveragePool", name, [x], (self.shapes[x][0], 1, 1))

    def flatten(self, x: str, name: str) -> str:
        c, h, w = self.shapes[x]
        return self._node("Flatten", name, [x], (c * h * w, 1, 1), axis=1)

    def dropout(self, x: str, name: str) -> str:
        return self._node("Dropout", name, [x], self.shapes[x])

    def fc(self, x: str, name: str, out_features: int) -> str:
        """Gemm with torch-layout weights `(out, in)` (``transB=1``) and a bias."""
        in_features = self.shapes[x][0]
        shape = (out_features, in_features)
        weight = self._drawn(f"{name}.weight", shape, partial(self._normal, shape, (2.0 / in_features) ** 0.5))
        bias = self._drawn(f"{name}.bias", (out_features,), partial(self._uniform, out_features, -0.05, 0.05))
        return self._node("Gemm", name, [x, weight, bias], (out_features, 1, 1), transB=1)

    def model(self, graph_name: str, output: str) -> onnx.ModelProto:
        """Finish the model: rename the last node's output `output` to ``"output"``."""
        assert self.nodes[-1].output[0] == output
        self.nodes[-1].output[0] = "output"
        graph = self.proto.graph
        graph.name = graph_name
        input_shape = [1, 3, self.input_hw, self.input_hw]
        graph.input.append(helper.make_tensor_value_info("input", TensorProto.FLOAT, input_shape))
        graph.output.append(helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, self.shapes[output][0]]))
        self.proto.ir_version = 8
        self.proto.producer_name = "planner.zoo.reference"
        self.proto.opset_import.append(helper.make_opsetid("", OPSET))
        return self.proto


def _classifier(b: _GraphBuilder, x: str, widths: tuple[int, ...]) -> str:
    """Flatten, then FC layers ``fc6, fc7, ...`` with ReLU + Dropout between them."""
    x = b.flatten(x, "flatten")
    for i, width in enumerate(widths):
        name = f"fc{6 + i}"
        x = b.fc(x, name, width)
        if i < len(widths) - 1:
            x = b.dropout(b.act(x, f"{name}.relu", "relu"), f"{name}.dropout")
    return x


def _alexnet(b: _GraphBuilder) -> str:
    x = "input"
    layers = [  # out channels, kernel, stride, pad, followed by a 3x3/2 maxpool
        (96, 11, 4, 0, True), (256, 5, 1, 2, True), (384, 3, 1, 1, False), (384, 3, 1, 1, False), (256, 3, 1, 1, True),
    ]
    for i, (out_c, kernel, stride, pad, pool) in enumerate(layers, 1):
        x = b.conv(x, f"conv{i}", out_c, kernel, stride, pad, bias=True, act=(f"conv{i}.relu", "relu"))
        if pool:
            x = b.maxpool(x, f"pool{i}", 3, 2)
    return _classifier(b, x, (4096, 4096, NUM_CLASSES))


def _vgg16(b: _GraphBuilder) -> str:
    x = "input"
    for stage, (out_c, depth) in enumerate([(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)], 1):
        for i in range(1, depth + 1):
            name = f"conv{stage}_{i}"
            x = b.conv(x, name, out_c, 3, 1, 1, bias=True, act=(f"{name}.relu", "relu"))
        x = b.maxpool(x, f"pool{stage}", 2, 2)
    return _classifier(b, x, (4096, 4096, NUM_CLASSES))


def _resnet_block(b: _GraphBuilder, x: str, name: str, width: int, stride: int, bottleneck: bool) -> str:
    """A torchvision BasicBlock / Bottleneck (v1.5: stride on the 3x3) with optional projection."""
    out_c = width * 4 if bottleneck else width
    if bottleneck:
        y = b.conv(x, f"{name}.conv1", width, 1, bn=f"{name}.bn1", act=(f"{name}.relu1", "relu"))
        y = b.conv(y, f"{name}.conv2", width, 3, stride, 1, bn=f"{name}.bn2", act=(f"{name}.relu2", "relu"))
        y = b.conv(y, f"{name}.conv3", out_c, 1, bn=f"{name}.bn3")
    else:
        y = b.conv(x, f"{name}.conv1", width, 3, stride, 1, bn=f"{name}.bn1", act=(f"{name}.relu1", "relu"))
        y = b.conv(y, f"{name}.conv2", width, 3, 1, 1, bn=f"{name}.bn2")
    shortcut = x
    if stride != 1 or b.shapes[x][0] != out_c:
        shortcut = b.conv(x, f"{name}.downsample.0", out_c, 1, stride, bn=f"{name}.downsample.1")
    return b.act(b.add(y, shortcut, f"{name}.add"), f"{name}.relu", "relu")


def _resnet(b: _GraphBuilder, depths: tuple[int, ...], bottleneck: bool) -> str:
    x = b.conv("input", "conv1", 64, 7, 2, 3, bn="bn1", act=("relu", "relu"))
    x = b.maxpool(x, "maxpool", 3, 2, 1)
    for stage, depth in enumerate(depths):
        for i in range(depth):
            stride = 2 if stage > 0 and i == 0 else 1
            x = _resnet_block(b, x, f"layer{stage + 1}.{i}", 64 << stage, stride, bottleneck)
    return b.fc(b.flatten(b.global_avgpool(x, "avgpool"), "flatten"), "fc", NUM_CLASSES)


def _cifar_resnet(b: _GraphBuilder, blocks: int) -> str:
    """Three stages of `blocks` basic blocks, 16, 32 and 64 channels, 1x1 projection shortcuts."""
    x = b.conv("input", "conv1", 16, 3, 1, 1, bn="bn1", act=("relu", "relu"))
    for stage in range(3):
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            x = _resnet_block(b, x, f"layer{stage + 1}.{i}", 16 << stage, stride, bottleneck=False)
    return b.fc(b.flatten(b.global_avgpool(x, "avgpool"), "flatten"), "fc", CIFAR_CLASSES)


MOBILENETV2_SETTINGS: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1),
)
"""MobileNetV2 inverted-residual stages `(expand ratio t, channels c, repeats n, stride s)`."""


def _conv_bn_relu6(
    b: _GraphBuilder, x: str, name: str, out_c: int, kernel: int, stride: int = 1, groups: int = 1
) -> str:
    """torchvision ``Conv2dNormActivation``: ``name.0`` conv, ``name.1`` BN, ``name.2`` ReLU6."""
    pad = kernel // 2
    return b.conv(x, f"{name}.0", out_c, kernel, stride, pad, groups, bn=f"{name}.1", act=(f"{name}.2", "relu6"))


def _mobilenetv2(b: _GraphBuilder) -> str:
    x = _conv_bn_relu6(b, "input", "features.0", 32, 3, 2)
    index = 1
    for t, out_c, repeats, first_stride in MOBILENETV2_SETTINGS:
        for i in range(repeats):
            name, in_c, stride = f"features.{index}", b.shapes[x][0], first_stride if i == 0 else 1
            y, layer = x, 0
            if t != 1:
                y = _conv_bn_relu6(b, y, f"{name}.conv.0", in_c * t, 1)
                layer = 1
            y = _conv_bn_relu6(b, y, f"{name}.conv.{layer}", in_c * t, 3, stride, groups=in_c * t)
            y = b.conv(y, f"{name}.conv.{layer + 1}", out_c, 1, bn=f"{name}.conv.{layer + 2}")
            x = b.add(x, y, f"{name}.add") if stride == 1 and in_c == out_c else y
            index += 1
    x = _conv_bn_relu6(b, x, f"features.{index}", 1280, 1)
    return b.fc(b.flatten(b.global_avgpool(x, "avgpool"), "flatten"), "classifier.1", NUM_CLASSES)


MOBILENETV1_LAYERS: tuple[tuple[int, int], ...] = (
    (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1), (512, 1), (512, 1),
    (1024, 2), (1024, 1),
)
"""MobileNetV1 (width 1.0) depthwise-separable layers `(pointwise channels, depthwise stride)`
(Howard et al., 2017, Table 1; the last depthwise stride is 1, as in the reference code)."""


def _mobilenetv1(b: _GraphBuilder) -> str:
    x = b.conv("input", "conv1", 32, 3, 2, 1, bn="conv1.bn", act=("conv1.relu", "relu"))
    for i, (out_c, stride) in enumerate(MOBILENETV1_LAYERS, 1):
        c = b.shapes[x][0]
        x = b.conv(x, f"conv_dw_{i}", c, 3, stride, 1, groups=c, bn=f"conv_dw_{i}.bn", act=(f"conv_dw_{i}.relu", "relu"))
        x = b.conv(x, f"conv_pw_{i}", out_c, 1, bn=f"conv_pw_{i}.bn", act=(f"conv_pw_{i}.relu", "relu"))
    return b.fc(b.flatten(b.global_avgpool(x, "avgpool"), "flatten"), "fc", NUM_CLASSES)


SQUEEZENET11_FIRES: tuple[tuple[int, int, bool], ...] = (
    (16, 64, False), (16, 64, True), (32, 128, False), (32, 128, True), (48, 192, False), (48, 192, False),
    (64, 256, False), (64, 256, False),
)
"""SqueezeNet 1.1's fire modules `(squeeze, expand 1x1 = expand 3x3, max-pool after)` (torchvision)."""


def _squeezenet11(b: _GraphBuilder) -> str:
    x = b.conv("input", "features.0", 64, 3, 2, bias=True, act=("features.1", "relu"))
    x = b.maxpool(x, "features.2", 3, 2)
    for i, (squeeze, expand, pool) in enumerate(SQUEEZENET11_FIRES, 3):
        s = b.conv(x, f"fire{i}.squeeze", squeeze, 1, bias=True, act=(f"fire{i}.squeeze_activation", "relu"))
        e1 = b.conv(s, f"fire{i}.expand1x1", expand, 1, bias=True, act=(f"fire{i}.expand1x1_activation", "relu"))
        e3 = b.conv(s, f"fire{i}.expand3x3", expand, 3, 1, 1, bias=True, act=(f"fire{i}.expand3x3_activation", "relu"))
        x = b.concat([e1, e3], f"fire{i}.cat")
        if pool:
            x = b.maxpool(x, f"pool{i}", 3, 2)
    x = b.conv(x, "classifier.1", NUM_CLASSES, 1, bias=True, act=("classifier.2", "relu"))
    return b.flatten(b.global_avgpool(x, "classifier.3"), "flatten")


DENSENET121_BLOCKS = (6, 12, 24, 16)
DENSENET_GROWTH = 32
DENSENET_BOTTLENECK = 4  # the 1x1 convolution's width in growth rates


def _densenet121(b: _GraphBuilder) -> str:
    """DenseNet-121 (Huang et al., 2017; torchvision's layer shapes) with each convolution followed
    by its BatchNorm and ReLU, which the front end folds and fuses (the published network puts
    them before the convolution, on the concatenated input)."""
    x = b.conv("input", "features.conv0", 64, 7, 2, 3, bn="features.norm0", act=("features.relu0", "relu"))
    x = b.maxpool(x, "features.pool0", 3, 2, 1)
    for block, layers in enumerate(DENSENET121_BLOCKS, 1):
        for layer in range(1, layers + 1):
            name = f"features.denseblock{block}.denselayer{layer}"
            y = b.conv(x, f"{name}.conv1", DENSENET_BOTTLENECK * DENSENET_GROWTH, 1, bn=f"{name}.norm1",
                       act=(f"{name}.relu1", "relu"))
            y = b.conv(y, f"{name}.conv2", DENSENET_GROWTH, 3, 1, 1, bn=f"{name}.norm2", act=(f"{name}.relu2", "relu"))
            x = b.concat([x, y], f"{name}.cat")
        if block < len(DENSENET121_BLOCKS):
            name = f"features.transition{block}"
            x = b.conv(x, f"{name}.conv", b.shapes[x][0] // 2, 1, bn=f"{name}.norm", act=(f"{name}.relu", "relu"))
            x = b.avgpool(x, f"{name}.pool", 2, 2)
    return b.fc(b.flatten(b.global_avgpool(x, "avgpool"), "flatten"), "classifier", NUM_CLASSES)


_BUILDERS: dict[str, tuple[int, Callable[[_GraphBuilder], str]]] = {
    "alexnet": (227, _alexnet),
    "vgg16": (224, _vgg16),
    "resnet18": (224, lambda b: _resnet(b, (2, 2, 2, 2), bottleneck=False)),
    "resnet50": (224, lambda b: _resnet(b, (3, 4, 6, 3), bottleneck=True)),
    "mobilenetv1": (224, _mobilenetv1),
    "mobilenetv2": (224, _mobilenetv2),
    "squeezenet1.1": (224, _squeezenet11),
    "densenet121": (224, _densenet121),
    "resnet8-cifar": (32, lambda b: _cifar_resnet(b, 1)),
    "resnet20-cifar": (32, lambda b: _cifar_resnet(b, 3)),
}

REFERENCE_NETWORKS: tuple[str, ...] = tuple(_BUILDERS)
"""Names accepted by `build_reference`."""


IMAGENET_NETWORKS: tuple[str, ...] = tuple(name for name in _BUILDERS if not name.endswith("-cifar"))
"""The reference networks with 1000 classes."""


def build_reference(name: str, seed: int = 0, input_hw: int | None = None, weights: bool = True) -> onnx.ModelProto:
    """Build reference network `name` (one of `REFERENCE_NETWORKS`) with random weights from
    `seed` (or, without `weights`, the parameters' shapes alone), for its published input size
    or a square `input_hw`."""
    if name not in _BUILDERS:
        allowed = ", ".join(REFERENCE_NETWORKS)
        raise UnsupportedModelError(f"unknown reference network {name!r}; allowed: {allowed}")
    published_hw, build = _BUILDERS[name]
    builder = _GraphBuilder(seed, input_hw or published_hw, weights)
    return builder.model(name, build(builder))
