"""The bundled default model (`planner/zoo/digits.onnx`) and its dataset helpers (no torch)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split

MIN_TEST_ACCURACY = 0.95


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    """The loaded default model."""
    return onnx.load(DIGITS_MODEL_PATH)


def test_model_file_is_valid(model: onnx.ModelProto) -> None:
    onnx.checker.check_model(model, full_check=True)
    assert [graph_input.name for graph_input in model.graph.input] == ["input"]
    assert [output.name for output in model.graph.output] == ["logits"]
    ops = [node.op_type for node in model.graph.node]
    assert ops == ["Conv", "BatchNormalization", "Relu", "Conv", "Relu", "Conv", "Relu",
                   "MaxPool", "Flatten", "Gemm"]


def test_onnxruntime_test_accuracy() -> None:
    _, _, x_test, y_test = load_digits_split()
    session = ort.InferenceSession(str(DIGITS_MODEL_PATH), providers=["CPUExecutionProvider"])
    logits = session.run(["logits"], {"input": x_test})[0]
    assert logits.shape == (len(x_test), 10)
    accuracy = float((logits.argmax(axis=1) == y_test).mean())
    assert accuracy >= MIN_TEST_ACCURACY


def test_split_shapes_dtypes_and_determinism() -> None:
    first = load_digits_split()
    x_train, y_train, x_test, y_test = first
    assert x_train.shape == (len(y_train), 1, 8, 8) and x_test.shape == (len(y_test), 1, 8, 8)
    assert len(y_train) + len(y_test) == 1797 and len(y_test) == 450
    assert x_train.dtype == x_test.dtype == np.float32
    assert y_train.dtype == y_test.dtype == np.int64
    assert 0.0 <= x_train.min() and x_train.max() <= 1.0
    assert set(np.unique(y_test)) == set(range(10))
    for a, b in zip(first, load_digits_split()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("count", [1, 16, 64])
def test_calibration_inputs(count: int) -> None:
    calib = calibration_inputs(count)
    assert calib.shape == (count, 1, 8, 8) and calib.dtype == np.float32
    np.testing.assert_array_equal(calib, load_digits_split()[0][:count])


def test_calibration_inputs_default_and_bounds() -> None:
    assert calibration_inputs().shape == (64, 1, 8, 8)
    with pytest.raises(ValueError):
        calibration_inputs(0)
