"""The golden integer model against onnxruntime on int8 models made by its static quantizer.

Criterion (per model): every output element within 1 LSB and at least 99% exactly equal.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from onnxruntime.quantization import QuantFormat

from onnx_factory import GraphBuilder, pattern_models
from ort_quant import ort_quantize, ort_reference_session
from planner.frontend import load_network
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_quantized

PATTERNS = pattern_models()
SAMPLES = 6


def compare(quantized_model, inputs: np.ndarray) -> np.ndarray:
    """|golden - onnxruntime| per output element (in int8 steps) over all inputs."""
    net = load_network(quantized_model)
    session = ort_reference_session(quantized_model)
    output_quant = net.output_quant(net.outputs[0])
    input_name = quantized_model.graph.input[0].name
    diffs = []
    for x in inputs:
        reference = session.run(None, {input_name: x[None]})[0].reshape(-1)
        reference_q = np.rint(reference / output_quant.scale) + output_quant.zero_point
        golden = run_quantized(net, net.input_quant.quantize(x))[net.outputs[0]].reshape(-1)
        diffs.append(np.abs(reference_q - golden.astype(np.int64)))
    return np.concatenate(diffs)


def assert_agrees(diffs: np.ndarray) -> None:
    assert diffs.max() <= 1, f"max difference {diffs.max()} LSB"
    assert np.mean(diffs == 0) >= 0.99, f"only {np.mean(diffs == 0):.2%} exactly equal"


@pytest.mark.parametrize("quant_format", [QuantFormat.QDQ, QuantFormat.QOperator], ids=["qdq", "qoperator"])
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_models_agree(name, quant_format):
    model = PATTERNS[name]
    shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)[1:]
    rng = np.random.default_rng(1)
    quantized = ort_quantize(model, rng.standard_normal((16, *shape)).astype(np.float32), quant_format)
    assert_agrees(compare(quantized, rng.standard_normal((SAMPLES, *shape)).astype(np.float32)))


def test_digits_cnn_agrees():
    import onnx

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
