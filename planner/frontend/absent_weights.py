"""Shape-only models: initializers whose external data file is absent get seeded stand-ins.

Design-space workloads often ship the graph without its weights (external data not shipped).
Planning needs only shapes, so each absent tensor is filled with seeded random values of its
shape and type: float weights ~ N(0, 1/fan_in), BatchNormalization scales and variances in
[0.5, 1.5), int8 weights and int32 biases as small integers. Integer tensors of other types
define shapes or indices and cannot be made up: their absence is an error.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, external_data_helper, helper, numpy_helper

from common.errors import ModelLoadError

SEED = 0
POSITIVE_INPUTS = {("BatchNormalization", 1), ("BatchNormalization", 4)}
"""(operator, input position) of parameters that must be positive: BatchNormalization scale and variance."""


def _location(tensor: onnx.TensorProto) -> str:
    return next(entry.value for entry in tensor.external_data if entry.key == "location")


def _stand_in(tensor: onnx.TensorProto, positive: bool, rng: np.random.Generator, where: str) -> np.ndarray:
    shape = tuple(tensor.dims)
    if tensor.data_type in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16):
        dtype = helper.tensor_dtype_to_np_dtype(tensor.data_type)
        if positive:
            return rng.uniform(0.5, 1.5, shape).astype(dtype)
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(dtype)
    if tensor.data_type == TensorProto.INT8:
        return rng.integers(-64, 65, shape).astype(np.int8)
    if tensor.data_type == TensorProto.UINT8:
        return rng.integers(64, 193, shape).astype(np.uint8)
    if tensor.data_type == TensorProto.INT32:
        return rng.integers(-256, 257, shape).astype(np.int32)
    type_name = TensorProto.DataType.Name(tensor.data_type)
    raise ModelLoadError(
        f"{where}: the external data of {type_name} initializer {tensor.name!r} is absent; only float, int8, "
        f"uint8 and int32 weights can be replaced by stand-ins (integer tensors of other types define shapes)"
    )


def resolve_external_data(proto: onnx.ModelProto, base: Path, where: str) -> tuple[str, ...]:
    """Load each external tensor whose file exists, give the others stand-ins (in place).

    Returns the names of the tensors given stand-ins, in graph order.
    """
    positive = {name for node in proto.graph.node for i, name in enumerate(node.input) if (node.op_type, i) in POSITIVE_INPUTS}
    rng = np.random.default_rng(SEED)
    absent = []
    for tensor in proto.graph.initializer:
        if not external_data_helper.uses_external_data(tensor):
            continue
        if (base / _location(tensor)).is_file():
            try:
                external_data_helper.load_external_data_for_tensor(tensor, str(base))
            except (OSError, ValueError) as error:
                raise ModelLoadError(f"{where}: cannot read the external data of {tensor.name!r} ({error})") from None
            tensor.data_location = TensorProto.DEFAULT
            del tensor.external_data[:]
        else:
            tensor.CopyFrom(numpy_helper.from_array(_stand_in(tensor, tensor.name in positive, rng, where), tensor.name))
            absent.append(tensor.name)
    return tuple(absent)
