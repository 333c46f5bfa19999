"""Reference networks (`planner.zoo.reference`): published shapes, MACs and parameter counts.

Counts are read from the built ONNX graph (Conv / Gemm nodes, shapes from ONNX shape inference)
and compared with published figures and with analytic counts derived here from each
architecture's table, independently of the builder.
"""
from __future__ import annotations

from collections import Counter
from functools import cache
from math import prod
from typing import NamedTuple

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from common.errors import UnsupportedModelError
from planner.frontend import load_network
from planner.zoo.reference import IMAGENET_NETWORKS, REFERENCE_NETWORKS, build_reference


class Counts(NamedTuple):
    macs: int
    weights: int  # conv / fc weights, biases excluded
    biases: int  # conv / fc biases
    bn_channels: int  # BatchNormalization channels (each has a trainable gamma and beta)

    @property
    def torch_params(self) -> int:
        """Trainable parameters as torchvision counts them."""
        return self.weights + self.biases + 2 * self.bn_channels


@cache
def built(name: str) -> tuple[onnx.ModelProto, Counts, Counter[str]]:
    """The model (checked, strict shape inference), its graph counts and its op histogram."""
    model = build_reference(name)
    onnx.checker.check_model(model)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    shapes = {
        info.name: [d.dim_value for d in info.type.tensor_type.shape.dim]
        for info in (*inferred.graph.value_info, *inferred.graph.output)
    }
    del inferred
    dims = {t.name: list(t.dims) for t in model.graph.initializer}
    macs = weights = biases = bn_channels = 0
    for node in model.graph.node:
        if node.op_type in ("Conv", "Gemm"):
            w = dims[node.input[1]]  # Conv (O, C/g, KH, KW); Gemm (out, in) with transB=1
            assert node.op_type == "Conv" or onnx.helper.get_node_attr_value(node, "transB") == 1
            weights += prod(w)
            macs += prod(shapes[node.output[0]][1:]) * prod(w[1:])
            biases += prod(dims[node.input[2]]) if len(node.input) > 2 else 0
        elif node.op_type == "BatchNormalization":
            bn_channels += dims[node.input[1]][0]
    ops = Counter(node.op_type for node in model.graph.node)
    return model, Counts(macs, weights, biases, bn_channels), ops


# --- analytic counts from the architecture tables -------------------------------------------

ConvSpec = tuple[int, int, int, int, int]  # in channels, out channels, kernel, output size, groups


def analytic_counts(convs: list[ConvSpec], fc: tuple[int, int], batch_norm: bool) -> Counts:
    """Counts of a network of square convs (no conv bias) and one biased FC layer."""
    weights = [cout * (cin // g) * k * k for cin, cout, k, _, g in convs]
    macs = sum(w * hw * hw for w, (_, _, _, hw, _) in zip(weights, convs))
    bn = sum(cout for _, cout, _, _, _ in convs) if batch_norm else 0
    return Counts(macs + fc[0] * fc[1], sum(weights) + fc[0] * fc[1], fc[1], bn)


def resnet_table(depths: tuple[int, ...], bottleneck: bool) -> Counts:
    """torchvision ResNet at 224: stem, stages of 64/128/256/512 wide blocks, projections."""
    convs: list[ConvSpec] = [(3, 64, 7, 112, 1)]
    cin, hw = 64, 56
    for stage, depth in enumerate(depths):
        width = 64 * 2**stage
        cout = 4 * width if bottleneck else width
        for block in range(depth):
            stride = 2 if stage > 0 and block == 0 else 1
            out = hw // stride
            if bottleneck:
                convs += [(cin, width, 1, hw, 1), (width, width, 3, out, 1), (width, cout, 1, out, 1)]
            else:
                convs += [(cin, width, 3, out, 1), (width, width, 3, out, 1)]
            if stride != 1 or cin != cout:
                convs.append((cin, cout, 1, out, 1))
            cin, hw = cout, out
    return analytic_counts(convs, (cin, 1000), batch_norm=True)


def cifar_resnet_table(blocks: int) -> Counts:
    """He et al.'s CIFAR-10 ResNet-(6 blocks + 2) at 32x32: 16/32/64 channels, 1x1 projections."""
    convs: list[ConvSpec] = [(3, 16, 3, 32, 1)]
    cin, hw = 16, 32
    for stage in range(3):
        cout = 16 << stage
        for block in range(blocks):
            out = hw // 2 if stage > 0 and block == 0 else hw
            convs += [(cin, cout, 3, out, 1), (cout, cout, 3, out, 1)]
            if cin != cout:
                convs.append((cin, cout, 1, out, 1))
            cin, hw = cout, out
    return analytic_counts(convs, (64, 10), batch_norm=True)


def mobilenetv2_table() -> Counts:
    """torchvision MobileNetV2 (width 1.0) at 224 from its (t, c, n, s) table."""
    convs: list[ConvSpec] = [(3, 32, 3, 112, 1)]
    cin, hw = 32, 112
    table = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    for t, c, n, s in table:
        for i in range(n):
            hidden, out = cin * t, hw // (s if i == 0 else 1)
            if t != 1:
                convs.append((cin, hidden, 1, hw, 1))
            convs += [(hidden, hidden, 3, out, hidden), (hidden, c, 1, out, 1)]
            cin, hw = c, out
    convs.append((cin, 1280, 1, hw, 1))
    return analytic_counts(convs, (1280, 1000), batch_norm=True)


def mobilenetv1_table() -> Counts:
    """MobileNetV1 (width 1.0) at 224 from Howard et al.'s Table 1 (last depthwise stride 1)."""
    convs: list[ConvSpec] = [(3, 32, 3, 112, 1)]
    cin, hw = 32, 112
    for cout, stride in [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), *[(512, 1)] * 5, (1024, 2),
                         (1024, 1)]:
        hw //= stride
        convs += [(cin, cin, 3, hw, cin), (cin, cout, 1, hw, 1)]
        cin = cout
    return analytic_counts(convs, (1024, 1000), batch_norm=True)


def squeezenet11_table() -> Counts:
    """SqueezeNet 1.1 at 224 (torchvision): every convolution has a bias, no BatchNorm, no FC."""
    convs: list[ConvSpec] = [(3, 64, 3, 111, 1)]
    cin, hw = 64, 55
    for squeeze, expand, pool in [(16, 64, 0), (16, 64, 1), (32, 128, 0), (32, 128, 1), (48, 192, 0), (48, 192, 0),
                                  (64, 256, 0), (64, 256, 0)]:
        convs += [(cin, squeeze, 1, hw, 1), (squeeze, expand, 1, hw, 1), (squeeze, expand, 3, hw, 1)]
        cin, hw = 2 * expand, (hw - 3) // 2 + 1 if pool else hw
    convs.append((cin, 1000, 1, hw, 1))
    plain = analytic_counts(convs, (0, 0), batch_norm=False)
    return Counts(plain.macs, plain.weights, sum(cout for _, cout, _, _, _ in convs), 0)


def densenet121_tables() -> tuple[Counts, int]:
    """DenseNet-121 at 224 (growth 32, 1x1 width 128, blocks 6/12/24/16): the counts of the
    conv-BN-ReLU build, and the BatchNorm channels of the published pre-activation network
    (a BN on every convolution's input, plus the final norm5)."""
    convs: list[ConvSpec] = [(3, 64, 7, 112, 1)]
    pre_bn = 64  # norm0 after the stem
    cin, hw = 64, 56
    for block, layers in enumerate((6, 12, 24, 16)):
        for _ in range(layers):
            convs += [(cin, 128, 1, hw, 1), (128, 32, 3, hw, 1)]
            pre_bn += cin + 128
            cin += 32
        if block < 3:
            convs.append((cin, cin // 2, 1, hw, 1))
            pre_bn += cin
            cin, hw = cin // 2, hw // 2
    return analytic_counts(convs, (cin, 1000), batch_norm=True), pre_bn + cin


# --- published figures ----------------------------------------------------------------------

PUBLISHED_EXACT = {  # e-PlaNNer thesis, section 5.1: (MACs, weights without biases)
    "alexnet": (1_135_256_096, 62_367_776),
    "vgg16": (15_470_264_320, 138_344_128),
}
TORCHVISION = {  # name: (table counts, published total params, published GMACs)
    "resnet18": (lambda: resnet_table((2, 2, 2, 2), bottleneck=False), 11_689_512, 1.82),
    "resnet50": (lambda: resnet_table((3, 4, 6, 3), bottleneck=True), 25_557_032, 4.09),
    "mobilenetv2": (mobilenetv2_table, 3_504_872, 0.30),
}
CIFAR = {  # name: (table counts, weights with He et al.'s identity shortcuts (0.27M for ResNet-20) + the 1x1 projections, MMACs)
    "resnet8-cifar": (lambda: cifar_resnet_table(1), 74_800 + 16 * 32 + 32 * 64, 12.5),
    "resnet20-cifar": (lambda: cifar_resnet_table(3), 268_336 + 16 * 32 + 32 * 64, 40.8),
}
TOPOLOGIES = {  # name: (table counts, published params, published MACs, tolerance on the MACs)
    # Howard et al., "MobileNets", arXiv:1704.04861, Table 8: 1.0 MobileNet-224, 569 M mult-adds, 4.2 M parameters
    "mobilenetv1": (mobilenetv1_table, 4.2e6, 569e6, 0.002),
    # torchvision.models.squeezenet1_1 (docs table): 1,235,496 parameters, 0.35 GFLOPS (multiply-adds)
    "squeezenet1.1": (squeezenet11_table, 1_235_496, 0.35e9, 0.01),
    # torchvision.models.densenet121 (docs table): 7,978,856 parameters, 2.83 GFLOPS (multiply-adds)
    "densenet121": (lambda: densenet121_tables()[0], 7_978_856, 2.83e9, 0.005),
}
SMALL = ("alexnet", "resnet18", "mobilenetv2")


def test_names() -> None:
    assert set(IMAGENET_NETWORKS) == {"alexnet", "vgg16", "resnet18", "resnet50", "mobilenetv1", "mobilenetv2",
                                      "squeezenet1.1", "densenet121"}
    assert set(REFERENCE_NETWORKS) == {*IMAGENET_NETWORKS, "resnet8-cifar", "resnet20-cifar"}


def test_unknown_name_lists_allowed_names() -> None:
    with pytest.raises(UnsupportedModelError, match="resnet18") as info:
        build_reference("resnet101")
    assert "resnet101" in str(info.value) and all(name in str(info.value) for name in REFERENCE_NETWORKS)


@pytest.mark.parametrize("name", REFERENCE_NETWORKS)
def test_model_interface(name: str) -> None:
    model, _, _ = built(name)
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    hw = {"alexnet": 227, "resnet8-cifar": 32, "resnet20-cifar": 32}.get(name, 224)
    classes = 10 if name.endswith("-cifar") else 1000
    (inp,) = model.graph.input
    assert inp.name == "input"
    assert inp.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert [d.dim_value for d in inp.type.tensor_type.shape.dim] == [1, 3, hw, hw]
    (out,) = model.graph.output
    assert [d.dim_value for d in out.type.tensor_type.shape.dim] == [1, classes]
    assert all(t.data_type == onnx.TensorProto.FLOAT for t in model.graph.initializer)
    names = [node.name for node in model.graph.node]
    assert all(names) and len(set(names)) == len(names)


@pytest.mark.parametrize("name", sorted(PUBLISHED_EXACT))
def test_published_exact_counts(name: str) -> None:
    _, counts, ops = built(name)
    assert (counts.macs, counts.weights) == PUBLISHED_EXACT[name]
    assert counts.bn_channels == 0 and ops["Flatten"] == 1 and ops["Gemm"] == 3
    assert ops["Conv"] == (5 if name == "alexnet" else 13)
    assert ops["MaxPool"] == (3 if name == "alexnet" else 5)


@pytest.mark.parametrize("name", sorted(TORCHVISION))
def test_torchvision_counts(name: str) -> None:
    table, params, gmacs = TORCHVISION[name]
    _, counts, _ = built(name)
    assert counts == table()
    assert counts.torch_params == params
    assert counts.macs == pytest.approx(gmacs * 1e9, rel=0.015)


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_scheduling_topologies_match_published_counts(name: str) -> None:
    """MobileNetV1 (a chain), SqueezeNet 1.1 (parallel branches), DenseNet-121 (concatenations)."""
    table, params, macs, tolerance = TOPOLOGIES[name]
    _, counts, ops = built(name)
    assert counts == table()
    assert counts.macs == pytest.approx(macs, rel=tolerance)
    if name == "densenet121":  # the published count has the pre-activation BatchNorms
        assert counts.weights + counts.biases + 2 * densenet121_tables()[1] == params
        assert ops["Concat"] == 58 and ops["AveragePool"] == 3
    elif name == "squeezenet1.1":
        assert counts.torch_params == params and ops["Concat"] == 8
    else:
        assert counts.torch_params == pytest.approx(params, rel=0.01) and ops["Add"] == ops["Concat"] == 0


@pytest.mark.parametrize("name", sorted(CIFAR))
def test_cifar_resnet_counts(name: str) -> None:
    table, weights, mmacs = CIFAR[name]
    _, counts, ops = built(name)
    assert counts == table()
    assert counts.weights == weights
    assert counts.macs == pytest.approx(mmacs * 1e6, rel=0.02)
    assert ops["Add"] == ops["Conv"] // 2 - 1 and ops["Gemm"] == 1


def test_input_size_override() -> None:
    model = build_reference("resnet8-cifar", input_hw=16)
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [1, 3, 16, 16]


@pytest.mark.parametrize(
    ("name", "adds", "projections", "node"),
    [
        ("resnet18", 8, 3, "layer2.0.downsample.0"),
        ("resnet50", 16, 4, "layer1.0.downsample.0"),
        ("mobilenetv2", 10, 0, "features.3.conv.1.0"),
    ],
)
def test_block_structure(name: str, adds: int, projections: int, node: str) -> None:
    model, _, ops = built(name)
    nodes = {n.name: n for n in model.graph.node}
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer if not t.dims}
    assert ops["Add"] == adds
    assert sum(".downsample.0" in n for n in nodes) == projections
    assert nodes[node].op_type == "Conv"
    assert ops["Dropout"] == 0
    assert ops["MaxPool"] == (0 if name == "mobilenetv2" else 1)
    assert ops["Clip"] == (35 if name == "mobilenetv2" else 0)  # 17 blocks (16 expand) + stem + last conv
    assert ops["GlobalAveragePool"] == ops["Flatten"] == ops["Gemm"] == 1
    assert ops["BatchNormalization"] == ops["Conv"]
    for n in nodes.values():
        if n.op_type == "Conv":
            assert len(n.input) == 2  # BN follows; no conv bias
        if n.op_type == "Clip":
            assert (inits[n.input[1]], inits[n.input[2]]) == (0.0, 6.0)


def test_mobilenetv2_depthwise_and_resnet50_stride_placement() -> None:
    mobilenet, _, _ = built("mobilenetv2")
    dw = next(n for n in mobilenet.graph.node if n.name == "features.2.conv.1.0")
    assert onnx.helper.get_node_attr_value(dw, "group") == 96  # 16 * 6 expanded channels
    resnet, _, _ = built("resnet50")
    strides = {
        n.name: list(onnx.helper.get_node_attr_value(n, "strides")) for n in resnet.graph.node if n.op_type == "Conv"
    }
    assert strides["layer2.0.conv1"] == [1, 1] and strides["layer2.0.conv2"] == [2, 2]  # v1.5


@pytest.mark.parametrize("weights", [True, False], ids=["weights", "shapes"])
@pytest.mark.parametrize("name", REFERENCE_NETWORKS)
def test_front_end_counts(name: str, weights: bool) -> None:
    """The front end folds BN into conv biases: its weight count is the conv / fc weights only;
    built without weights (shapes alone) the network has the same counts and no weight values."""
    tables = {n: v[0] for group in (TORCHVISION, CIFAR, TOPOLOGIES) for n, v in group.items()}
    expected = PUBLISHED_EXACT[name] if name in PUBLISHED_EXACT else tables[name]()[:2]
    net = load_network(built(name)[0] if weights else build_reference(name, weights=False), check=weights)
    assert (net.total_macs, net.total_weights) == expected
    if not weights:
        assert all(layer.weights is None and layer.bias is None for layer in net.layers)


@pytest.mark.parametrize("name", SMALL)
def test_shape_only_network_has_the_layers_of_the_weighted_one(name: str) -> None:
    """Built without weights, nothing is drawn (only ReLU6's bounds carry values) and the front
    end gives the same layers, shapes and fusions as for the network with its weights."""
    shapes = build_reference(name, weights=False)
    valued = [t.name for t in shapes.graph.initializer if t.raw_data or t.float_data]
    assert valued == (["relu6.min", "relu6.max"] if name == "mobilenetv2" else [])
    dims = {t.name: list(t.dims) for t in built(name)[0].graph.initializer}
    assert {t.name: list(t.dims) for t in shapes.graph.initializer} == dims

    def structure(net):
        return [(l.name, l.op, l.inputs, l.output, l.in_shapes, l.out_shape, l.kernel, l.stride, l.pads, l.groups,
                 l.activation, l.pool) for l in net.layers]
    assert structure(load_network(shapes, check=False)) == structure(load_network(built(name)[0]))


@pytest.mark.parametrize("name", SMALL)
def test_runs_in_onnxruntime(name: str) -> None:
    model, _, _ = built(name)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    hw = 227 if name == "alexnet" else 224
    x = np.random.default_rng(1).standard_normal((1, 3, hw, hw), dtype=np.float32)
    (y,) = session.run(None, {"input": x})
    assert y.shape == (1, 1000) and y.dtype == np.float32
    assert np.isfinite(y).all() and 0 < np.abs(y).max() < 1e4


def test_seeded_weights() -> None:
    first = {t.name: t.raw_data for t in build_reference("resnet18", seed=3).graph.initializer}
    again = {t.name: t.raw_data for t in build_reference("resnet18", seed=3).graph.initializer}
    other = {t.name: t.raw_data for t in build_reference("resnet18", seed=4).graph.initializer}
    assert first == again
    assert first["conv1.weight"] != other["conv1.weight"]
    var = np.frombuffer(first["layer1.0.bn1.running_var"], dtype="<f4")
    assert (var > 0).all()
