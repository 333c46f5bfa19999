"""Tiny models and arrays the adversarial cases start from (built once per run)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from onnx_factory import GraphBuilder

SHAPE = (1, 2, 6, 6)


def tiny(seed: int = 0) -> onnx.ModelProto:
    """Conv 2->4 (ReLU), Conv 4->4 on a 2x6x6 input."""
    b = GraphBuilder(SHAPE, seed)
    x = b.node("Relu", [b.conv("input", 2, 4, k=3)])
    return b.model(b.conv(x, 4, 4, k=3))


def tiny_bn_fc(seed: int = 0) -> onnx.ModelProto:
    """Conv 2->4, BatchNorm, ReLU, GlobalAveragePool, Flatten, Gemm 4->3."""
    b = GraphBuilder(SHAPE, seed)
    x = b.node("Relu", [b.batchnorm(b.conv("input", 2, 4, k=3), 4)])
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])])
    return b.model(b.gemm(x, 4, 3))


def renamed(model: onnx.ModelProto, names: dict[int, str]) -> onnx.ModelProto:
    """A copy of `model` with node `index` named `names[index]`."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for index, name in names.items():
        copy.graph.node[index].name = name
    return copy


def with_value(model: onnx.ModelProto, prefix: str, value: float, index: int = 0) -> onnx.ModelProto:
    """A copy of `model` whose first initializer named `prefix...` holds `value` at flat `index`."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    init = next(i for i in copy.graph.initializer if i.name.startswith(prefix))
    array = numpy_helper.to_array(init).copy()
    array.flat[index] = value
    init.CopyFrom(numpy_helper.from_array(array, init.name))
    return copy


def retyped_input(model: onnx.ModelProto, elem_type: int) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.graph.input[0].type.tensor_type.elem_type = elem_type
    return copy


def conv_nodes(model: onnx.ModelProto) -> list[int]:
    return [k for k, node in enumerate(model.graph.node) if node.op_type == "Conv"]


def samples(count: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((count, *SHAPE[1:])).astype(np.float32)


def model_bytes(model: onnx.ModelProto) -> bytes:
    return model.SerializeToString()


def npy_bytes(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def write_common(folder: Path) -> None:
    """The shared files every case may name by absolute path: a model, inputs, calibration."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.onnx").write_bytes(model_bytes(tiny()))
    (folder / "x.npy").write_bytes(npy_bytes(samples(2, 1)))
    (folder / "calib.npy").write_bytes(npy_bytes(samples(4, 2)))


INT_TYPES = (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32, TensorProto.INT64)
