"""The built-in digits CNN quantized by the project keeps its accuracy (golden int8 model)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort

from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from hwgen.config import MULTIPLIER_BITS
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_quantized


def test_int8_accuracy_within_one_point_of_float():
    net = load_network(DIGITS_MODEL_PATH)
    qnet = quantize_network(net, calibration_inputs())
    _, _, x_test, y_test = load_digits_split()
    float_logits = ort.InferenceSession(str(DIGITS_MODEL_PATH)).run(None, {"input": x_test})[0]
    float_accuracy = np.mean(float_logits.argmax(axis=1) == y_test)
    output = qnet.outputs[0]
    int8_pred = [run_quantized(qnet, qnet.input_quant.quantize(x))[output].argmax() for x in x_test]
    int8_accuracy = np.mean(np.array(int8_pred) == y_test)
    assert float_accuracy >= 0.95
    assert int8_accuracy >= float_accuracy - 0.01, (int8_accuracy, float_accuracy)


def test_quantized_parameters_are_in_hardware_ranges():
    qnet = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    for layer in qnet.layers:
        q = layer.quant
        assert ((q.multiplier >= 0) & (q.multiplier < 2**MULTIPLIER_BITS)).all()
        assert ((q.shift >= 0) & (q.shift <= 62)).all()
        assert -128 <= q.act_min <= q.act_max <= 127
        if q.weights is not None:
            assert q.weights.dtype == np.int8 and q.weights.min() >= -127
            assert q.bias.dtype == np.int32
