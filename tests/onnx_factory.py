"""Small ONNX models for tests, built with onnx.helper, one operator pattern each."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class GraphBuilder:
    """Accumulates nodes and random initializers; `model()` returns a checked ModelProto."""

    def __init__(self, input_shape: tuple[int, ...], seed: int = 0, input_name: str = "input"):
        self.rng = np.random.default_rng(seed)
        self.input_shape = input_shape
        self.input_name = input_name
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, array: np.ndarray, prefix: str = "c") -> str:
        name = self.fresh(prefix)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], outputs: int = 1, **attrs) -> str:
        name = self.fresh(op.lower())
        outs = [f"{name}_out{i}" if i else f"{name}_out" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0]

    def conv(self, x: str, in_c: int, out_c: int, k: int = 3, stride: int = 1, pad: int | list[int] = 1,
             groups: int = 1, bias: bool = True, **attrs) -> str:
        fan_in = (in_c // groups) * k * k
        w = self.const((self.rng.standard_normal((out_c, in_c // groups, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32), "w")
        inputs = [x, w]
        if bias:
            inputs.append(self.const((self.rng.standard_normal(out_c) * 0.1).astype(np.float32), "b"))
        pads = pad if isinstance(pad, list) else [pad] * 4
        if "auto_pad" in attrs:
            return self.node("Conv", inputs, strides=[stride, stride], group=groups, **attrs)
        return self.node("Conv", inputs, strides=[stride, stride], pads=pads, group=groups, **attrs)

    def batchnorm(self, x: str, channels: int) -> str:
        r = self.rng
        params = [
            (r.uniform(0.5, 1.5, channels)), (r.standard_normal(channels) * 0.1),
            (r.standard_normal(channels) * 0.1), (r.uniform(0.5, 1.5, channels)),
        ]
        return self.node("BatchNormalization", [x] + [self.const(p.astype(np.float32), "bn") for p in params], epsilon=1e-5)

    def gemm(self, x: str, in_f: int, out_f: int) -> str:
        w = self.const((self.rng.standard_normal((out_f, in_f)) * np.sqrt(1.0 / in_f)).astype(np.float32), "fw")
        b = self.const((self.rng.standard_normal(out_f) * 0.1).astype(np.float32), "fb")
        return self.node("Gemm", [x, w, b], transB=1)

    def model(self, output: str, symbolic_batch: bool = False) -> onnx.ModelProto:
        """The checked model; the output's shape comes from ONNX shape inference."""
        in_dims = list(self.input_shape)
        if symbolic_batch:
            in_dims[0] = "N"
        inputs = [helper.make_tensor_value_info(self.input_name, TensorProto.FLOAT, in_dims)]
        draft = helper.make_graph(self.nodes, "draft", inputs, [helper.make_empty_tensor_value_info(output)], self.initializers)
        inferred = onnx.shape_inference.infer_shapes(helper.make_model(draft, opset_imports=[helper.make_opsetid("", OPSET)]))
        out_info = next(v for v in inferred.graph.value_info if v.name == output)
        graph = helper.make_graph(self.nodes, "test_graph", inputs, [out_info], self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def pattern_models() -> dict[str, onnx.ModelProto]:
    """One small float model per supported pattern (all ops of the front end are covered)."""
    models = {}

    g = GraphBuilder((1, 3, 12, 12), seed=1)
    y = g.node("Relu", [g.batchnorm(g.conv(g.input_name, 3, 8, bias=False), 8)])
    y = g.node("Relu", [g.conv(y, 8, 16, k=3, stride=2, pad=[1, 0, 1, 1])])
    models["conv_bn_strided_asympad"] = g.model(y)

    g = GraphBuilder((1, 8, 11, 11), seed=2)
    y = g.node("Clip", [g.conv(g.input_name, 8, 8, k=3, groups=8), g.const(np.float32(0)), g.const(np.float32(6))])
    y = g.node("Clip", [g.conv(y, 8, 12, k=1, pad=0), g.const(np.float32(0)), g.const(np.float32(6))])
    models["depthwise_relu6"] = g.model(y)

    g = GraphBuilder((1, 4, 9, 9), seed=3)
    a = g.node("Relu", [g.conv(g.input_name, 4, 8, k=3, auto_pad="SAME_UPPER")])
    b = g.conv(a, 8, 8, k=3, stride=1, auto_pad="SAME_LOWER")
    models["residual_add"] = g.model(g.node("Relu", [g.node("Add", [a, b])]))

    g = GraphBuilder((1, 6, 10, 10), seed=4)
    a = g.node("Relu", [g.conv(g.input_name, 6, 4, k=1, pad=0)])
    b = g.node("Relu", [g.conv(g.input_name, 6, 5, k=3)])
    models["concat"] = g.model(g.node("Concat", [a, b], axis=1))

    g = GraphBuilder((1, 4, 13, 13), seed=5)
    y = g.node("Relu", [g.conv(g.input_name, 4, 8, k=5, stride=2, pad=2)])
    y = g.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = g.node("AveragePool", [y], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1)
    models["pools"] = g.model(y)

    g = GraphBuilder((1, 3, 8, 8), seed=6)
    y = g.node("Relu", [g.conv(g.input_name, 3, 16, k=3)])
    y = g.node("GlobalAveragePool", [y])
    y = g.node("Flatten", [y], axis=1)
    models["gap_fc"] = g.model(g.gemm(y, 16, 10))

    g = GraphBuilder((1, 2, 6, 6), seed=7)
    y = g.node("Relu", [g.conv(g.input_name, 2, 4, k=3, pad=0)])
    y = g.node("Dropout", [g.node("Identity", [y])])
    y = g.node("Reshape", [y, g.const(np.array([1, -1], dtype=np.int64))])
    w = g.const((g.rng.standard_normal((64, 7)) * 0.2).astype(np.float32))
    y = g.node("MatMul", [y, w])
    models["reshape_matmul_bias"] = g.model(g.node("Add", [y, g.const((g.rng.standard_normal(7) * 0.1).astype(np.float32))]))
    return models
