"""ONNX front end: model file to Network IR (shapes, fusions, quantization parameters)."""
from __future__ import annotations

from pathlib import Path

import onnx

from planner.frontend.builder import SUPPORTED_OPS, NetworkBuilder
from planner.frontend.model_file import data_input, fix_input_shape, infer_shapes, read_model
from planner.ir import Network

__all__ = ["SUPPORTED_OPS", "load_network"]


def load_network(model: str | Path | onnx.ModelProto, input_shape: tuple[int, ...] | None = None) -> Network:
    """Load an ONNX model (float, QDQ or QLinear form) into the Network IR.

    `input_shape` (e.g. ``(1, 3, 224, 224)``) replaces the model's input shape; a symbolic
    batch dimension is taken as 1. Quantized models carry their LayerQuant; float models
    are quantized later by `sim.golden.calibration.quantize_network` (`planner.calibrate` with the golden float executor).
    """
    proto = read_model(model)
    proto_copy = onnx.ModelProto()
    proto_copy.CopyFrom(proto)
    shape = fix_input_shape(proto_copy, input_shape)
    inferred = infer_shapes(proto_copy)
    name = proto.graph.name if isinstance(model, onnx.ModelProto) else Path(model).stem
    return NetworkBuilder(inferred, data_input(proto_copy).name, shape, name or "network").build()
