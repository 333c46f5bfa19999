"""Reading an ONNX model and fixing its input shape, with clear errors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from common.errors import ModelLoadError, ShapeError, UnsupportedModelError
from planner.frontend.absent_weights import resolve_external_data

REAL_INPUT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE)
"""Element types of a data input the tool quantizes: real values."""


def read_model(model: str | Path | onnx.ModelProto,
               check: bool = True) -> tuple[onnx.ModelProto, tuple[str, ...]]:
    """Load an ONNX model from a path (or pass a ModelProto through) and check it (`check`: with
    the ONNX checker too, which serializes the whole model; off for the built-in networks, valid
    by construction and checked by their tests).

    Returns the model and the names of initializers whose external data was absent and
    which were given seeded stand-ins (`planner.frontend.absent_weights`).
    """
    absent: tuple[str, ...] = ()
    if isinstance(model, onnx.ModelProto):
        proto = model
        where = proto.graph.name or "<model>"
    else:
        path = Path(model)
        where = str(path)
        if not path.is_file():
            raise ModelLoadError(f"{path}: no such file")
        try:
            proto = onnx.load(str(path), load_external_data=False)
        except Exception as error:  # protobuf raises several types for corrupt files
            raise ModelLoadError(f"{path}: not a readable ONNX model ({type(error).__name__}: {error})") from None
        absent = resolve_external_data(proto, path.parent, where)
    if not proto.graph.node:
        raise ModelLoadError(f"{where}: the ONNX graph has no nodes (truncated or empty file?)")
    newest = onnx.defs.onnx_opset_version()
    for opset in proto.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version > newest:
            raise ModelLoadError(f"{where}: opset {opset.version} is newer than the installed ONNX knows; allowed: up to {newest}")
    if not check:
        return proto, absent
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as error:
        message = " ".join(str(error).split())
        raise ModelLoadError(f"{where}: invalid ONNX model: {message}") from None
    return proto, absent


def data_input(proto: onnx.ModelProto) -> onnx.ValueInfoProto:
    """The single graph input that is not an initializer."""
    initializers = {init.name for init in proto.graph.initializer}
    inputs = [value for value in proto.graph.input if value.name not in initializers]
    if len(inputs) != 1:
        names = ", ".join(value.name for value in inputs) or "none"
        raise ShapeError(f"the model must have exactly one data input, it has {len(inputs)} ({names})")
    return inputs[0]


def _format_dims(value: onnx.ValueInfoProto) -> str:
    dims = value.type.tensor_type.shape.dim
    return "[" + ", ".join(d.dim_param or str(d.dim_value) if (d.dim_param or d.dim_value) else "?" for d in dims) + "]"


def fix_input_shape(proto: onnx.ModelProto, input_shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """Make the data input's shape concrete (in place); returns it.

    A symbolic batch dimension becomes 1. Any other unknown dimension needs `input_shape`.
    """
    value = data_input(proto)
    elem_type = value.type.tensor_type.elem_type
    if elem_type not in REAL_INPUT_TYPES:
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else str(elem_type)
        raise UnsupportedModelError(f"input {value.name!r} has element type {name}; allowed: "
                                    f"{', '.join(onnx.TensorProto.DataType.Name(t) for t in REAL_INPUT_TYPES)} "
                                    f"(real values; a quantized model quantizes them with its QuantizeLinear)")
    dims = value.type.tensor_type.shape.dim
    if input_shape is not None:
        if len(input_shape) != len(dims) and len(dims) != 0:
            raise ShapeError(f"--input-shape {'x'.join(map(str, input_shape))} has rank {len(input_shape)}, input {value.name!r} has rank {len(dims)} {_format_dims(value)}")
        shape = tuple(int(d) for d in input_shape)
    else:
        if len(dims) == 0:
            raise ShapeError(f"input {value.name!r} has no shape; give one with --input-shape, e.g. --input-shape 1x3x224x224")
        shape = tuple(d.dim_value if d.dim_value > 0 else (1 if i == 0 else 0) for i, d in enumerate(dims))
        if any(extent <= 0 for extent in shape):
            raise ShapeError(
                f"input {value.name!r} has unknown dimensions {_format_dims(value)}; "
                f"give the shape with --input-shape, e.g. --input-shape 1x3x224x224"
            )
    if any(extent <= 0 for extent in shape):
        raise ShapeError(f"input shape {shape} must have positive extents")
    value.type.tensor_type.shape.ClearField("dim")
    for extent in shape:
        value.type.tensor_type.shape.dim.add().dim_value = extent
    # Shapes recorded for the old input size are stale: let shape inference recompute them.
    proto.graph.ClearField("value_info")
    for output in proto.graph.output:
        output.type.tensor_type.ClearField("shape")
    return shape


WEIGHT_ELEMENTS = 4096
"""Real-valued initializers of at least this many elements are weights: their values never decide
a shape (scales, bounds and other values that do are small)."""


def infer_shapes(proto: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX shape inference in strict mode; inconsistencies become ShapeError. Weights (`WEIGHT_ELEMENTS`)
    are inferred without their data, which they get back after: inference serializes the model
    and parses its result, and the megabytes of a network's weights took most of that time."""
    weights = [(init, init.raw_data) for init in proto.graph.initializer
               if init.data_type in REAL_INPUT_TYPES and init.raw_data and np.prod(init.dims) >= WEIGHT_ELEMENTS]
    for init, _ in weights:
        init.ClearField("raw_data")
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=True, data_prop=True)
    except Exception as error:
        first_line = str(error).strip().splitlines()[0]
        raise ShapeError(f"shape inference failed: {first_line}") from None
    finally:
        for init, data in weights:
            init.raw_data = data
    returned = {init.name: init for init in inferred.graph.initializer}
    for init, data in weights:
        returned[init.name].raw_data = data
    return inferred
