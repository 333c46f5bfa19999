"""The golden integer model against onnxruntime on int8 models made by its static quantizer.

Criterion, per model and per layer: every element within 1 LSB of onnxruntime and at least 99%
exactly equal. Each layer is compared on onnxruntime's own int8 inputs to that layer: near
rounding ties onnxruntime's float32 arithmetic and the exact integer arithmetic may differ by
1 LSB, and end to end such differences propagate through the following layers (the network
outputs are also checked: at least 99% exactly equal).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnxruntime.quantization import QuantFormat

from onnx_factory import GraphBuilder, pattern_models
from ort_quant import ort_quantize, ort_reference_session
from planner.frontend import load_network
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_quantized
from sim.golden.executor import run_layer_quantized

PATTERNS = pattern_models()
SAMPLES = 6


def quantized_tensor_names(model: onnx.ModelProto, names: list[str]) -> dict[str, str]:
    """Where onnxruntime's int8 version of each IR tensor lives: the QuantizeLinear output of a
    float tensor (QDQ form), or the tensor itself (QOperator form)."""
    quantize_of = {node.input[0]: node.output[0] for node in model.graph.node if node.op_type == "QuantizeLinear"}
    return {name: quantize_of.get(name, name) for name in names}


def with_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    present = {output.name for output in exposed.graph.output}
    for name in names:
        if name not in present:
            exposed.graph.output.append(helper.make_tensor_value_info(name, TensorProto.INT8, None))
    return exposed


def compare(quantized_model: onnx.ModelProto, inputs: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per layer, |golden - onnxruntime| of its output given onnxruntime's int8 inputs; and the
    network output's |golden - onnxruntime| end to end (in int8 steps, over all inputs)."""
    net = load_network(quantized_model)
    tensors = [net.input_name] + [layer.output for layer in net.layers]
    where = quantized_tensor_names(quantized_model, tensors)
    session = ort_reference_session(with_outputs(quantized_model, list(where.values())))
    output_names = [output.name for output in session.get_outputs()]
    input_name = quantized_model.graph.input[0].name
    per_layer: dict[str, list[np.ndarray]] = {layer.name: [] for layer in net.layers}
    end_to_end = []
    for x in inputs:
        values = dict(zip(output_names, session.run(None, {input_name: x[None]})))
        ort = {name: values[where[name]][0].reshape(net.tensor_shapes()[name]).astype(np.int8) for name in tensors}
        for layer in net.layers:
            got = run_layer_quantized(layer, [ort[name] for name in layer.inputs])
            per_layer[layer.name].append(np.abs(got.astype(np.int64) - ort[layer.output]).reshape(-1))
        golden = run_quantized(net, net.input_quant.quantize(x))
        end_to_end.append(np.abs(golden[net.outputs[0]].astype(np.int64) - ort[net.outputs[0]]).reshape(-1))
    return {name: np.concatenate(d) for name, d in per_layer.items()}, np.concatenate(end_to_end)


def assert_agrees(comparison: tuple[dict[str, np.ndarray], np.ndarray]) -> None:
    per_layer, end_to_end = comparison
    for name, diffs in per_layer.items():
        assert diffs.max() <= 1, f"layer {name}: max difference {diffs.max()} LSB"
        assert np.mean(diffs == 0) >= 0.99, f"layer {name}: only {np.mean(diffs == 0):.2%} exactly equal"
    assert np.mean(end_to_end == 0) >= 0.99, f"network output: only {np.mean(end_to_end == 0):.2%} exactly equal"


@pytest.mark.parametrize("quant_format", [QuantFormat.QDQ, QuantFormat.QOperator], ids=["qdq", "qoperator"])
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_models_agree(name, quant_format):
    model = PATTERNS[name]
    shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)[1:]
    rng = np.random.default_rng(1)
    quantized = ort_quantize(model, rng.standard_normal((16, *shape)).astype(np.float32), quant_format)
    assert_agrees(compare(quantized, rng.standard_normal((SAMPLES, *shape)).astype(np.float32)))


def test_digits_cnn_agrees():
    quantized = ort_quantize(onnx.load(str(DIGITS_MODEL_PATH)), calibration_inputs(64))
    _, _, x_test, _ = load_digits_split()
    assert_agrees(compare(quantized, x_test[:40]))


def test_average_pool_ties_are_the_only_differences():
    """2x2 average pooling with equal scales hits exact .5 ties, which onnxruntime's float32
    path rounds either way. Golden must be within 1 LSB and exact where the rational value is
    not a tie, and round ties half to even."""
    g = GraphBuilder((1, 4, 8, 8), seed=11)
    y = g.node("AveragePool", [g.node("Relu", [g.conv(g.input_name, 4, 6)])], kernel_shape=[2, 2], strides=[2, 2])
    rng = np.random.default_rng(2)
    quantized = ort_quantize(g.model(y), rng.standard_normal((16, 4, 8, 8)).astype(np.float32))
    net = load_network(quantized)
    conv, pool = net.layers
    assert pool.quant.inputs[0] == pool.quant.output  # onnxruntime keeps the scale: divisor 4 exactly
    session = ort_reference_session(quantized)
    for x in rng.standard_normal((4, 4, 8, 8)).astype(np.float32):
        values = run_quantized(net, net.input_quant.quantize(x))
        reference = session.run(None, {"input": x[None]})[0][0]
        reference_q = np.rint(reference / pool.quant.output.scale) + pool.quant.output.zero_point
        pooled_in = values[conv.output].astype(np.int64) - pool.quant.inputs[0].zero_point
        golden = values[pool.output].astype(np.int64)
        for index in np.ndindex(golden.shape):
            c, i, j = index
            exact = Fraction(int(pooled_in[c, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2].sum()), 4)
            tie = exact.denominator == 2
            assert abs(golden[index] - reference_q[index]) <= 1
            if not tie:
                assert golden[index] == reference_q[index]
            else:
                assert (golden[index] - pool.quant.output.zero_point) % 2 == 0  # half to even
