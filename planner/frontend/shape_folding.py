"""Constant shape sub-graphs of exported models folded into initializers before import.

PyTorch writes `x.view(x.size(0), -1)` as Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
Once the input shape is concrete, every Shape of a statically shaped tensor is a constant, and
so is the integer arithmetic computed from it. These nodes are evaluated with ONNX's own
reference evaluator (`onnx.reference`) and replaced by the initializers they compute; only
integer-valued nodes are folded, so quantized weights (DequantizeLinear of constants) keep
their form.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INTEGER_TYPES = (TensorProto.INT64, TensorProto.INT32)
NONDETERMINISTIC_OPS = ("RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli")


def _static_shapes(graph: onnx.GraphProto) -> dict[str, list[int]]:
    shapes = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensor_type = value.type.tensor_type
        if tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in tensor_type.shape.dim):
            shapes[value.name] = [d.dim_value for d in tensor_type.shape.dim]
    return shapes


def _elem_types(graph: onnx.GraphProto) -> dict[str, int]:
    types = {value.name: value.type.tensor_type.elem_type for value in (*graph.input, *graph.value_info, *graph.output)}
    types.update({init.name: init.data_type for init in graph.initializer})
    return types


def _shape_value(node: onnx.NodeProto, dims: list[int]) -> onnx.NodeProto:
    """The Constant node standing for `Shape(x)` (with its start/end attributes) of a static `x`."""
    attrs = {a.name: a.i for a in node.attribute}
    value = np.array(dims[attrs.get("start", 0):attrs.get("end", len(dims))], dtype=np.int64)
    return helper.make_node("Constant", [], [node.output[0]], value=numpy_helper.from_array(value))


def _foldable(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The nodes computing constant integers, Shape nodes already turned into Constants."""
    shapes, types = _static_shapes(graph), _elem_types(graph)
    known = {init.name for init in graph.initializer if init.data_type in INTEGER_TYPES}
    folded = []
    for node in graph.node:
        if node.domain not in ("", "ai.onnx") or node.op_type in NONDETERMINISTIC_OPS:
            continue
        integer_outputs = all(types.get(out) in INTEGER_TYPES for out in node.output if out)
        if node.op_type == "Shape" and node.input[0] in shapes:
            folded.append(_shape_value(node, shapes[node.input[0]]))
        elif integer_outputs and all(name in known for name in node.input if name):
            folded.append(node)
        else:
            continue
        known.update(out for out in node.output if out)
    return folded


def fold_shape_subgraphs(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`proto` (shape-inferred, input shape concrete) with its shape sub-graphs folded; unchanged if it has none."""
    graph = proto.graph
    folded = _foldable(graph)
    if not any(node.op_type != "Constant" for node in folded):
        return proto
    from onnx.reference import ReferenceEvaluator

    folded_outputs = {out for node in folded for out in node.output}
    kept = [node for node in graph.node if not set(node.output) & folded_outputs]
    used = {name for node in kept for name in node.input} | {out.name for out in graph.output}
    needed = sorted(folded_outputs & used)
    inputs = {name for node in folded for name in node.input}
    subgraph = helper.make_graph(
        folded, "shape_subgraph", [], [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in needed],
        [init for init in graph.initializer if init.name in inputs],
    )
    values = ReferenceEvaluator(helper.make_model(subgraph, opset_imports=proto.opset_import)).run(None, {})
    result = onnx.ModelProto()
    result.CopyFrom(proto)
    del result.graph.node[:]
    result.graph.node.extend(kept)
    result.graph.initializer.extend(numpy_helper.from_array(np.asarray(value), name) for name, value in zip(needed, values))
    return result
