"""The golden integer model as an ONNX backend: the ONNX node tests of its integer operators.

`SELECTED_NODE_TESTS` are the node tests shipped with the `onnx` package (generated from
`onnx.backend.test.case.node`) whose operators and data types `sim.onnx_backend` supports; each
runs on the CPU device (`<name>_cpu`). The other ONNX tests are not collected.

Node tests of the same operators left out, and why:

- test_quantizelinear_{e4m3fn,e5m2,float4e2m1}, test_dequantizelinear_{e4m3fn,e4m3fn_float16,
  e4m3fn_zero_point,e5m2,float4e2m1}: float8 / float4 quantized types, not integer.
- test_quantizelinear_{int16,uint16,int4,uint4,int2,uint2}, test_dequantizelinear_{int16,
  uint16,int4,uint4,int2,uint2}, test_quantizelinear_blocked_symmetric (output_dtype int16):
  the accelerator's quantized type is 8-bit only.
- test_dynamicquantizelinear*_expanded: the float function body (Constant, ReduceMin, Div,
  Round, Cast, ...) is not integer arithmetic.
- test_maxpool_* except test_maxpool_2d_uint8, test_globalmaxpool*: float inputs (and 1-D/3-D,
  dilations, ceil_mode or the Indices output, which `prepare` rejects as well).
- integer elementwise tests (test_add_int8, test_mul_uint8, test_bitshift_*, test_clip_*_int8,
  ...): wrapping / comparison ops that are not part of the accelerator's arithmetic.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnx.backend.test
import onnxruntime
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from common.errors import UnsupportedModelError
from sim.onnx_backend import GoldenBackend, from_int8, to_int8

SELECTED_NODE_TESTS = [
    "test_convinteger_with_padding",
    "test_convinteger_without_padding",
    "test_dequantizelinear",
    "test_dequantizelinear_axis",
    "test_dequantizelinear_blocked",
    "test_dynamicquantizelinear",
    "test_dynamicquantizelinear_max_adjusted",
    "test_dynamicquantizelinear_min_adjusted",
    "test_matmulinteger",
    "test_maxpool_2d_uint8",
    "test_qlinearconv",
    "test_qlinearmatmul_2D_int8_float16",
    "test_qlinearmatmul_2D_int8_float32",
    "test_qlinearmatmul_2D_uint8_float16",
    "test_qlinearmatmul_2D_uint8_float32",
    "test_qlinearmatmul_3D_int8_float16",
    "test_qlinearmatmul_3D_int8_float32",
    "test_qlinearmatmul_3D_uint8_float16",
    "test_qlinearmatmul_3D_uint8_float32",
    "test_quantizelinear",
    "test_quantizelinear_axis",
    "test_quantizelinear_blocked_asymmetric",
]
CORE_NODE_TESTS = {
    "test_qlinearconv",
    "test_convinteger_with_padding",
    "test_convinteger_without_padding",
    "test_qlinearmatmul_2D_uint8_float32",
    "test_qlinearmatmul_3D_uint8_float32",
    "test_matmulinteger",
    "test_maxpool_2d_uint8",
}

backend_test = onnx.backend.test.BackendTest(GoldenBackend, __name__)
for _name in SELECTED_NODE_TESTS:
    backend_test.include(f"^{_name}_cpu$")


def _selected_only(case: type) -> type:
    """The generated TestCase without the ONNX tests the include patterns did not select."""
    for name, func in list(vars(case).items()):
        if name.startswith("test_") and getattr(func, "__unittest_skip__", False):
            delattr(case, name)
    return case


OnnxBackendNodeModelTest = _selected_only(backend_test.test_cases["OnnxBackendNodeModelTest"])


def test_selected_node_tests_are_collected() -> None:
    """Exactly the selected node tests run (a misspelt name would silently select nothing)."""
    node_tests = vars(backend_test.test_cases["OnnxBackendNodeModelTest"])
    running = sorted(
        name for name, func in node_tests.items() if name.startswith("test_") and not getattr(func, "__unittest_skip__", False)
    )
    print("ONNX node tests run on the golden backend:", *running, sep="\n  ")
    assert running == sorted(f"{name}_cpu" for name in SELECTED_NODE_TESTS)
    assert CORE_NODE_TESTS <= set(SELECTED_NODE_TESTS)


def _single_node_model(
    node: onnx.NodeProto, inputs: list[tuple[str, int]], outputs: list[tuple[str, int]], shape: tuple[int, ...] = (1, 1, 5, 5)
) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(name, dtype, shape) for name, dtype in inputs],
        [helper.make_tensor_value_info(name, dtype, ["n", "c", "h", "w"]) for name, dtype in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _uniform(rng: np.random.Generator, dtype: type, shape: tuple[int, ...]) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def test_prepare_rejects_unsupported_op() -> None:
    node = helper.make_node("Add", ["a", "b"], ["y"], name="adder")
    model = _single_node_model(node, [("a", TensorProto.INT8), ("b", TensorProto.INT8)], [("y", TensorProto.INT8)])
    with pytest.raises(UnsupportedModelError, match=r"'adder' \(Add\).*op Add.*supported ops: QLinearConv"):
        GoldenBackend.prepare(model)


@pytest.mark.parametrize(
    ("dtype", "attributes", "message"),
    [
        (TensorProto.FLOAT, {}, "type FLOAT"),
        (TensorProto.UINT8, {"dilations": [2, 2]}, "dilations"),
        (TensorProto.UINT8, {"ceil_mode": 1}, "ceil_mode"),
        (TensorProto.INT8, {"kernel_shape": [3]}, "only 2-D"),
    ],
)
def test_prepare_rejects_unsupported_maxpool(dtype: int, attributes: dict, message: str) -> None:
    node = helper.make_node("MaxPool", ["x"], ["y"], **{"kernel_shape": [3, 3], **attributes})
    with pytest.raises(UnsupportedModelError, match=message):
        GoldenBackend.prepare(_single_node_model(node, [("x", dtype)], [("y", dtype)]))


def test_uint8_int8_conversion_round_trips_and_keeps_real_values() -> None:
    q = np.arange(256, dtype=np.uint8)
    assert np.array_equal(from_int8(to_int8(q), np.uint8), q)
    assert np.array_equal(to_int8(q), np.arange(-128, 128))
    s = np.arange(-128, 128, dtype=np.int8)
    assert to_int8(s) is s and np.array_equal(from_int8(s, np.int8), s)
    zero_point = np.uint8(37)
    assert np.array_equal(to_int8(q).astype(int) - int(to_int8(zero_point)), q.astype(int) - 37)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize(
    "attributes", [{"auto_pad": "SAME_LOWER"}, {"auto_pad": "SAME_UPPER"}, {"auto_pad": "VALID"}, {"pads": [1, 0, 2, 1]}]
)
def test_batched_integer_maxpool_matches_onnxruntime(dtype: type, attributes: dict) -> None:
    """Against onnxruntime (onnx's ReferenceEvaluator gets SAME_LOWER with stride 2 wrong)."""
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2], **attributes)
    tensor_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = _single_node_model(node, [("x", tensor_type)], [("y", tensor_type)], shape=(2, 3, 7, 8))
    x = _uniform(np.random.default_rng(1), dtype, (2, 3, 7, 8))
    (got,) = GoldenBackend.prepare(model).run([x])
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x})
    assert got.dtype == dtype and np.array_equal(got, expected)


def test_batched_grouped_qlinearconv_matches_reference() -> None:
    """Batch 2, per-channel weight scales and zero points, bias, groups, stride, SAME_UPPER."""
    rng = np.random.default_rng(7)
    node = helper.make_node(
        "QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], group=2, strides=[2, 1], auto_pad="SAME_UPPER"
    )
    inputs = [
        _uniform(rng, np.uint8, (2, 4, 7, 6)),
        np.float32(0.02),
        np.uint8(120),
        _uniform(rng, np.int8, (6, 2, 3, 3)),
        rng.uniform(0.001, 0.01, 6).astype(np.float32),
        np.zeros(6, dtype=np.int8),
        np.float32(0.05),
        np.uint8(130),
        rng.integers(-500, 500, 6).astype(np.int32),
    ]
    (got,) = GoldenBackend.run_node(node, inputs)
    (expected,) = ReferenceEvaluator(node).run(None, dict(zip(node.input, inputs)))
    assert got.dtype == np.uint8 and got.shape == (2, 6, 4, 6)
    assert np.array_equal(got, expected)


def test_batched_qlinearmatmul_per_row_and_column_scales() -> None:
    """int8 (2, 3, M, K) @ (3, K, N) with per-row a/y and per-column b parameters."""
    rng = np.random.default_rng(3)
    m, k, n = 4, 5, 3
    a, b = _uniform(rng, np.int8, (2, 3, m, k)), _uniform(rng, np.int8, (3, k, n))
    a_scale, b_scale, y_scale = (rng.uniform(0.01, 0.05, size).astype(np.float32) for size in (m, n, m))
    a_zp, b_zp, y_zp = (rng.integers(-20, 20, size).astype(np.int8) for size in (m, n, m))
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    (got,) = GoldenBackend.run_node(node, [a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp])
    acc = np.matmul(a.astype(np.int64) - a_zp[:, None], b.astype(np.int64) - b_zp)
    real = acc * (a_scale.astype(np.float64)[:, None] * b_scale / y_scale[:, None]) + y_zp[:, None]
    assert np.abs(np.abs(real - np.floor(real)) - 0.5).min() > 1e-6  # no rounding tie in this data
    assert np.array_equal(got, np.clip(np.rint(real), -128, 127).astype(np.int8))
