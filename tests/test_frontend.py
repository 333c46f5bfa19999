"""ONNX front end: shapes, fusions, float semantics against onnxruntime, and clear errors."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from onnx_factory import GraphBuilder, pattern_models
from common.errors import HwgenError, ModelLoadError, QuantizationError, ShapeError, UnsupportedModelError
from planner.frontend import SUPPORTED_OPS, load_network
from planner.ir import Activation, Op
from planner.zoo.digits import DIGITS_MODEL_PATH
from sim.golden import run_float

PATTERNS = pattern_models()


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_float_network_matches_onnxruntime(name):
    model = PATTERNS[name]
    net = load_network(model)
    session = ort.InferenceSession(model.SerializeToString())
    x = np.random.default_rng(0).standard_normal((3, *net.input_shape)).astype(np.float32)
    for sample in x:
        expected = session.run(None, {"input": sample[None]})[0].reshape(-1)
        got = run_float(net, sample)[net.outputs[0]].reshape(-1)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_digits_structure_folds_batchnorm_and_fuses_relu():
    net = load_network(DIGITS_MODEL_PATH)
    assert [layer.op for layer in net.layers] == [Op.CONV, Op.CONV, Op.CONV, Op.MAXPOOL, Op.FC]
    assert [layer.activation for layer in net.layers[:3]] == [Activation.RELU] * 3
    assert net.layers[0].bias is not None  # BatchNorm folded into conv1's (absent) bias
    fc = net.layers[-1]
    assert fc.in_shape == (32, 2, 2) and fc.kernel == (2, 2) and fc.out_shape == (10, 1, 1)
    assert net.total_macs == 16 * 64 * 9 + 32 * 16 * 16 * 9 + 32 * 16 * 32 * 9 + 10 * 128


def test_mobilenet_like_shapes_and_macs():
    net = load_network(PATTERNS["depthwise_relu6"])
    depthwise, pointwise = net.layers
    assert depthwise.is_depthwise and depthwise.activation == Activation.RELU6
    assert depthwise.macs == 8 * 11 * 11 * 9 and pointwise.macs == 12 * 8 * 11 * 11


def test_ceil_mode_maxpool_matches_onnxruntime():
    g = GraphBuilder((1, 2, 8, 8), seed=9)
    y = g.node("MaxPool", [g.node("Relu", [g.conv(g.input_name, 2, 3)])], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    model = g.model(y)
    net = load_network(model)
    x = np.random.default_rng(1).standard_normal((1, 2, 8, 8)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"input": x})[0][0]
    got = run_float(net, x[0])[net.outputs[0]]
    assert got.shape == expected.shape == (3, 4, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_symbolic_input_needs_a_shape():
    conv = GraphBuilder((1, 3, 8, 8))
    y = conv.conv(conv.input_name, 3, 4)
    model = conv.model(y, symbolic_batch=True)
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "H"
    with pytest.raises(ShapeError, match="--input-shape"):
        load_network(model)
    net = load_network(model, input_shape=(1, 3, 10, 12))
    assert net.input_shape == (3, 10, 12) and net.layers[0].out_shape == (4, 10, 12)


def test_symbolic_batch_becomes_one():
    g = GraphBuilder((1, 3, 6, 6))
    net = load_network(g.model(g.conv(g.input_name, 3, 4), symbolic_batch=True))
    assert net.input_shape == (3, 6, 6)


def _single_op_model(op: str, **attrs) -> onnx.ModelProto:
    g = GraphBuilder((1, 3, 8, 8))
    return g.model(g.node(op, [g.conv(g.input_name, 3, 4)], **attrs))


def test_unsupported_operator_names_node_op_and_list():
    with pytest.raises(UnsupportedModelError) as error:
        load_network(_single_op_model("LeakyRelu", alpha=0.1))
    message = str(error.value)
    assert "leakyrelu" in message.lower() and "'LeakyRelu'" in message
    assert all(op in message for op in SUPPORTED_OPS)


def test_dilation_is_refused_with_attribute_named():
    g = GraphBuilder((1, 3, 9, 9))
    model = g.model(g.conv(g.input_name, 3, 4, dilations=[2, 2]))
    with pytest.raises(UnsupportedModelError, match=r"dilations=\[2, 2\].*only 1"):
        load_network(model)


def test_unsupported_clip_range():
    g = GraphBuilder((1, 3, 8, 8))
    y = g.node("Clip", [g.conv(g.input_name, 3, 4), g.const(np.float32(-1)), g.const(np.float32(1))])
    with pytest.raises(UnsupportedModelError, match=r"Clip\(-1, 1\)"):
        load_network(g.model(y))


def test_broadcast_add_is_refused():
    g = GraphBuilder((1, 3, 8, 8))
    a = g.conv(g.input_name, 3, 4)
    b = g.node("GlobalAveragePool", [g.conv(g.input_name, 3, 4)])
    with pytest.raises(UnsupportedModelError, match="broadcast"):
        load_network(g.model(g.node("Add", [a, b])))


def test_missing_and_truncated_files(tmp_path):
    with pytest.raises(ModelLoadError, match="no such file"):
        load_network(tmp_path / "absent.onnx")
    data = DIGITS_MODEL_PATH.read_bytes()
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelLoadError, match="truncated.onnx"):
        load_network(truncated)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x00\xffnot a model" * 10)
    with pytest.raises(ModelLoadError):
        load_network(garbage)


def test_all_errors_share_one_base():
    for error in (ModelLoadError, QuantizationError, ShapeError, UnsupportedModelError):
        assert issubclass(error, HwgenError)


def test_shape_inference_without_weight_data_equals_onnx_with_it():
    """`infer_shapes` leaves the weights' data out of ONNX's inference: the shapes are ONNX's own
    on the whole model, the weights come back in the result and the model passed in is unchanged."""
    from planner.frontend.model_file import WEIGHT_ELEMENTS, infer_shapes

    g = GraphBuilder((1, 8, 12, 12))
    x = g.node("Relu", [g.conv("input", 8, 64, k=3)])
    x = g.node("Resize", [x, "", g.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest")
    model = g.model(g.gemm(g.node("Flatten", [g.node("GlobalAveragePool", [x])]), 64, 96))
    assert sum(int(np.prod(i.dims)) >= WEIGHT_ELEMENTS for i in model.graph.initializer) == 2  # conv, fc weights
    before = model.SerializeToString()
    inferred = infer_shapes(model)
    assert model.SerializeToString() == before
    reference = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    assert inferred.SerializeToString() == reference.SerializeToString()
