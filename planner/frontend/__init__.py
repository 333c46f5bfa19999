"""ONNX front end: model file to Network IR (shapes, fusions, quantization parameters)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import onnx

from planner.frontend.builder import SUPPORTED_OPS, NetworkBuilder
from planner.frontend.model_file import data_input, fix_input_shape, infer_shapes, read_model
from planner.frontend.partition import HOST_NODE_OPS, ModelPart, split_model
from planner.frontend.shape_folding import fold_shape_subgraphs
from planner.ir import Network

__all__ = ["HOST_NODE_OPS", "SUPPORTED_OPS", "ModelPart", "load_network", "load_parts"]


def _prepared(model: str | Path | onnx.ModelProto, input_shape: tuple[int, ...] | None, check: bool):
    """The model read (`read_model`'s `check`), its input shape fixed, shapes inferred and constant
    shape sub-graphs folded: (model, input shape, name, names of absent weights)."""
    proto, absent = read_model(model, check)
    proto_copy = onnx.ModelProto()
    proto_copy.CopyFrom(proto)
    shape = fix_input_shape(proto_copy, input_shape)
    inferred = infer_shapes(proto_copy)
    folded = fold_shape_subgraphs(inferred)
    if folded is not inferred:
        inferred = infer_shapes(folded)
    name = proto.graph.name if isinstance(model, onnx.ModelProto) else Path(model).stem
    return inferred, shape, name or "network", absent


def load_parts(model: str | Path | onnx.ModelProto, input_shape: tuple[int, ...] | None = None,
               check: bool = True) -> tuple[ModelPart, ...]:
    """The model cut into its chain of accelerator segments and host parts (`planner.frontend.partition`);
    one part when every node runs on the accelerator. `check`: see `read_model`."""
    inferred, _, name, _ = _prepared(model, input_shape, check)
    inferred.graph.name = name
    return split_model(inferred)


def load_network(model: str | Path | onnx.ModelProto, input_shape: tuple[int, ...] | None = None,
                 check: bool = True) -> Network:
    """Load an ONNX model (float, QDQ or QLinear form) into the Network IR.

    `input_shape` (e.g. ``(1, 3, 224, 224)``) replaces the model's input shape; a symbolic
    batch dimension is taken as 1. Quantized models carry their LayerQuant; float models
    are quantized later by `sim.golden.calibration.quantize_network` (`planner.calibrate` with the golden float executor).
    Constant shape sub-graphs are folded first; weights whose external data is absent get
    seeded stand-ins, and the network says so (`Network.absent_weights`). `check=False` skips the
    ONNX checker (`read_model`): for models this tool generates itself.
    """
    inferred, shape, name, absent = _prepared(model, input_shape, check)
    network = NetworkBuilder(inferred, data_input(inferred).name, shape, name).build()
    return dataclasses.replace(network, absent_weights=absent) if absent else network
