"""An ONNX graph cut into a chain of parts: accelerator segments and host parts.

Operators the accelerator lacks (`HOST_NODE_OPS`: Sigmoid, LRN, Resize, Transpose, ...) run on
the host, and so does SiLU's Mul (`x * Sigmoid(x)`) with its Sigmoid; so does a Softmax, LogSoftmax or ArgMax that an accelerator layer follows (a trailing
one stays with the last segment, a `planner.ir.HostTail`). Consecutive nodes of one kind form a
part; each part is a model of its own whose single data input is the previous part's output, so
the network is a chain of parts. A tensor that skips over a cut is refused with the node it
reaches.
"""
from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import helper

from common.errors import UnsupportedModelError
from planner.frontend.builder import HOST_NODE_OPS, HOST_TAIL_OPS, LAYER_OPS
from planner.frontend.window_attrs import node_label


@dataclass(frozen=True)
class ModelPart:
    """One part of the chain: a model of its own with one data input (`on_host`: run by onnxruntime)."""

    on_host: bool
    model: onnx.ModelProto
    input: str
    outputs: tuple[str, ...]


def _downstream_layer(graph: onnx.GraphProto, start: int) -> bool:
    """Whether an accelerator layer consumes, directly or not, the outputs of node `start`."""
    reached = set(graph.node[start].output)
    for node in graph.node[start + 1:]:
        if reached.intersection(node.input):
            if node.op_type in LAYER_OPS:
                return True
            reached.update(node.output)
    return False


def _silu_products(graph: onnx.GraphProto) -> set[str]:
    """The outputs of the Mul nodes of SiLU, `x * Sigmoid(x)`: on the host with their Sigmoid."""
    sigmoid_of = {node.output[0]: node.input[0] for node in graph.node if node.op_type == "Sigmoid"}
    return {node.output[0] for node in graph.node if node.op_type == "Mul" and len(node.input) == 2
            and any(sigmoid_of.get(a) == b for a, b in (node.input, node.input[::-1]))}


def _on_host(graph: onnx.GraphProto) -> list[bool]:
    silu = _silu_products(graph)
    return [node.op_type in HOST_NODE_OPS or node.output[0] in silu
            or (node.op_type in HOST_TAIL_OPS and _downstream_layer(graph, index))
            for index, node in enumerate(graph.node)]


def _constant_producers(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    """The nodes computing from constants alone (Constant, a weight's DequantizeLinear), by output."""
    constant = {init.name for init in graph.initializer}
    producers = {}
    for node in graph.node:
        if all(not name or name in constant for name in node.input):
            constant.update(node.output)
            producers.update((name, node) for name in node.output)
    return producers


def _constant_closure(names: set[str], producers: dict[str, onnx.NodeProto], graph: onnx.GraphProto):
    """The constant nodes (in graph order) and initializers computing the constant tensors `names`."""
    wanted, stack = set(), [name for name in names if name in producers]
    while stack:
        node = producers[stack.pop()]
        if id(node) not in wanted:
            wanted.add(id(node))
            stack.extend(name for name in node.input if name in producers)
    nodes = [node for node in graph.node if id(node) in wanted]
    used = names | {name for node in nodes for name in node.input}
    return nodes, [init for init in graph.initializer if init.name in used]


def split_model(model: onnx.ModelProto) -> tuple[ModelPart, ...]:
    """The shape-inferred `model` with a fixed input shape cut into its chain of parts."""
    graph = model.graph
    host = _on_host(graph)
    initializers = {init.name for init in graph.initializer}
    producers = _constant_producers(graph)
    groups: list[tuple[bool, list[onnx.NodeProto]]] = []
    for node, on_host in zip(graph.node, host, strict=True):
        if node.output[0] in producers:
            continue
        if not groups or groups[-1][0] != on_host:
            groups.append((on_host, []))
        groups[-1][1].append(node)
    values = {v.name: v for v in (*graph.input, *graph.value_info, *graph.output)}
    graph_outputs = tuple(o.name for o in graph.output)
    parts = []
    current = next(i.name for i in graph.input if i.name not in initializers)
    for index, (on_host, nodes) in enumerate(groups):
        produced = {out for node in nodes for out in node.output}
        needed = {name for node in nodes for name in node.input if name and name not in produced}
        constant_nodes, constants = _constant_closure(needed - {current}, producers, graph)
        crossing = needed - initializers - set(producers) - {current}
        if crossing:
            culprit = next(node for node in nodes if crossing.intersection(node.input))
            raise UnsupportedModelError(
                f"{node_label(culprit)}: tensor {sorted(crossing)[0]!r} skips over a host operator; a network with host "
                f"operators inside ({', '.join(HOST_NODE_OPS)}) must be a chain of parts, each fed by the one before")
        later = {name for _, rest in groups[index + 1:] for node in rest for name in node.input}
        outputs = tuple(name for name in dict.fromkeys(o for node in nodes for o in node.output)
                        if name in later or name in graph_outputs)
        last = index == len(groups) - 1
        if not last and (len(outputs) != 1 or outputs[0] in graph_outputs):
            raise UnsupportedModelError(
                f"{node_label(nodes[-1])}: the part ending here must hand exactly one tensor to the next part and none "
                f"to the graph outputs, it has {', '.join(outputs) or 'none'}")
        part_graph = helper.make_graph(
            [*constant_nodes, *nodes], f"{graph.name or 'network'}_part{index}", [values[current]],
            [values[name] for name in outputs], constants,
            value_info=[v for v in graph.value_info if v.name in produced and v.name not in outputs])
        part = helper.make_model(part_graph, opset_imports=model.opset_import, ir_version=model.ir_version)
        parts.append(ModelPart(on_host, part, current, outputs))
        current = outputs[0] if outputs else current
    return tuple(parts)
