"""ONNX graph to Network IR: layers, shapes, fusions and quantization parameters."""
from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import onnx

from common.errors import QuantizationError, ShapeError, UnsupportedModelError
from planner.frontend.tensors import TensorTable, int8_weights, is_shape_only, quantized_constant
from planner.frontend.window_attrs import attributes, node_label, parse_window
from planner.ir import Activation, HostOp, HostStep, HostTail, Layer, Network, Op, Shape, TensorQuant

PASS_THROUGH_OPS = ("QuantizeLinear", "DequantizeLinear", "Identity", "Dropout", "Flatten", "Reshape", "Constant")
LAYER_OPS = (
    "Conv", "QLinearConv", "Gemm", "MatMul", "QLinearMatMul", "MaxPool", "AveragePool",
    "GlobalAveragePool", "GlobalMaxPool", "Add", "Concat", "Relu", "Clip", "BatchNormalization",
)
QLINEAR_CONTRIB_OPS = {
    # com.microsoft op: (float op, (data, scale, zero point) input positions, output scale/zero point positions)
    "QLinearAdd": ("Add", ((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearAveragePool": ("AveragePool", ((0, 1, 2),), (3, 4)),
    "QLinearGlobalAveragePool": ("GlobalAveragePool", ((0, 1, 2),), (3, 4)),
    "QLinearConcat": ("Concat", None, (0, 1)),  # inputs after the output's: (data, scale, zero point) triples
}
CONTRIB_LAYER_OPS = (*QLINEAR_CONTRIB_OPS, "QGemm")
HOST_TAIL_OPS = tuple(op.value for op in HostOp)
"""Trailing operators computed on the host after the accelerator (`planner.ir.HostTail`)."""
SUPPORTED_OPS = tuple(sorted(set(PASS_THROUGH_OPS + LAYER_OPS + CONTRIB_LAYER_OPS + HOST_TAIL_OPS) - {"Constant"}))
LUT_ACTIVATIONS = ("Sigmoid", "HardSwish", "HardSigmoid")
"""Activations the post-processing cannot compute: it applies clamps (ReLU, ReLU6) only."""
HOST_NODE_OPS = ("Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LRN", "Resize", "Transpose")
"""Operators computed on the host wherever they are in the graph (`planner.frontend.partition`)."""
ON_THE_HOST = ("; hwgen inspect, plan, schedule, infer, simulate and run take it: the host computes it between "
               "accelerator segments (docs/units.md)")


def _is_silu(sigmoid: onnx.NodeProto, graph: onnx.GraphProto) -> bool:
    """Whether `x * Sigmoid(x)` follows: SiLU (Swish) as exporters write it."""
    return any(node.op_type == "Mul" and set(node.input) == {sigmoid.input[0], sigmoid.output[0]} for node in graph.node)


def _unsupported_op(node: onnx.NodeProto, graph: onnx.GraphProto) -> UnsupportedModelError:
    if node.op_type in LUT_ACTIVATIONS:
        what = "SiLU (Sigmoid · Mul)" if node.op_type == "Sigmoid" and _is_silu(node, graph) else node.op_type
        return UnsupportedModelError(
            f"{node_label(node)}: {what} is not supported: the accelerator's post-processing "
            "computes clamp activations only (ReLU, ReLU6); replace the activation by ReLU or ReLU6"
            + (ON_THE_HOST if node.op_type in HOST_NODE_OPS else "")
        )
    return UnsupportedModelError(
        f"{node_label(node)}: operator {node.op_type!r} is not supported; supported operators: {', '.join(SUPPORTED_OPS)}"
        + (ON_THE_HOST if node.op_type in HOST_NODE_OPS else "")
    )


class NetworkBuilder:
    """Walks a shape-inferred ONNX graph once and builds the Network IR."""

    def __init__(self, proto: onnx.ModelProto, input_name: str, input_shape: tuple[int, ...], name: str):
        self.graph = proto.graph
        self.name = name
        self.tensors = TensorTable.from_graph(self.graph)
        self.value_shapes = {v.name: tuple(d.dim_value for d in v.type.tensor_type.shape.dim) for v in list(self.graph.value_info) + list(self.graph.output) + list(self.graph.input)}
        self.input_name = input_name
        self.input_shape = _feature_shape(input_shape, f"input {input_name!r}")
        self.shapes: dict[str, Shape] = {input_name: self.input_shape}
        self.layers: list[Layer] = []
        self.producer: dict[str, int] = {}
        self.quant_weights: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.quant_bias: dict[str, np.ndarray] = {}
        self.consumers: Counter[str] = Counter()
        self.graph_outputs: set[str] = set()
        self.opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0)
        self.host_tails: dict[str, HostTail] = {}
        self.node_names = Counter(node.name for node in self.graph.node if node.name)
        self.layer_names: set[str] = set()
        self.name_uses: Counter[str] = Counter()

    def _layer_name(self, node: onnx.NodeProto) -> str:
        """A layer name unique in the network: the node's name, `NAME#k` for the k-th of several
        nodes named NAME (`Network.layer` refuses a bare NAME then), `op_index` for an unnamed node."""
        base = node.name or f"{node.op_type.lower()}_{len(self.layers)}"
        name = base
        if node.name and self.node_names[node.name] > 1:
            self.name_uses[base] += 1
            name = f"{base}#{self.name_uses[base]}"
        while name in self.layer_names:
            name += "'"
        self.layer_names.add(name)
        return name

    # ----------------------------------------------------------------- walk
    def build(self) -> Network:
        for node in self.graph.node:
            standard = node.op_type in PASS_THROUGH_OPS + LAYER_OPS + HOST_TAIL_OPS and node.domain in ("", "ai.onnx")
            if not standard and not (node.op_type in CONTRIB_LAYER_OPS and node.domain == "com.microsoft"):
                raise _unsupported_op(node, self.graph)
        for node in self.graph.node:
            if node.op_type in PASS_THROUGH_OPS:
                self._pass_through(node)
        self._count_consumers()
        for node in self.graph.node:
            if node.op_type in QLINEAR_CONTRIB_OPS:
                self._qlinear_contrib(node)
            elif node.op_type in LAYER_OPS + CONTRIB_LAYER_OPS:
                getattr(self, f"_op_{node.op_type}")(node)
            elif node.op_type in HOST_TAIL_OPS:
                self._host_step(node)
        # a graph output may be an alias of a host operator's output (a Q/DQ pair after a Softmax)
        tails = tuple(dataclasses.replace(self.host_tails[canonical], output=o.name) for o in self.graph.output
                      if (canonical := self.tensors.canonical(o.name)) in self.host_tails)
        outputs = tuple(dict.fromkeys(
            tail.source if (tail := self.host_tails.get(self.tensors.canonical(o.name)))
            else self._activation(o.name, f"graph output {o.name!r}", allow_flattened=self._one_pixel(o.name))
            for o in self.graph.output
        ))
        for out in outputs:
            if out not in self.producer:
                raise UnsupportedModelError(f"graph output {out!r} is not computed by any layer")
        for layer in self.layers:
            _check_finite(layer)
        network = Network(self.name, self.input_name, self.input_shape, tuple(self.layers), outputs, host_tails=tails)
        return self._with_quantization(network)

    def _host_step(self, node: onnx.NodeProto) -> None:
        """A trailing Softmax/LogSoftmax/ArgMax: recorded for the host, after the accelerator."""
        attrs = attributes(node)
        op = HostOp(node.op_type)
        if op == HostOp.ARGMAX:
            step = HostStep(op, int(attrs.get("axis", 0)), bool(attrs.get("keepdims", 1)), bool(attrs.get("select_last_index", 0)))
        else:
            legacy = self.opset < 13
            step = HostStep(op, int(attrs.get("axis", 1 if legacy else -1)), coerce_2d=legacy)
        source = node.input[0]
        before = self.host_tails.get(source)
        if before is None:
            tail = HostTail(self._activation(source, node_label(node), allow_flattened=True), node.output[0], (step,))
        else:
            tail = HostTail(before.source, node.output[0], (*before.steps, step))
        self.host_tails[node.output[0]] = tail

    def _one_pixel(self, name: str) -> bool:
        """A tensor of 1x1 maps: flattened, its bytes are the same (a classifier's pooled output)."""
        shape = self.shapes.get(self.tensors.canonical(name))
        return shape is not None and shape[1:] == (1, 1)

    def _count_consumers(self) -> None:
        for node in self.graph.node:
            if node.op_type in LAYER_OPS + CONTRIB_LAYER_OPS + HOST_TAIL_OPS:
                for name in node.input:
                    if name and not self.tensors.is_constant(name):
                        self.consumers[self.tensors.canonical(name)] += 1
        for output in self.graph.output:
            self.graph_outputs.add(self.tensors.canonical(output.name))

    def _activation(self, name: str, where: str, allow_flattened: bool = False) -> str:
        canonical = self.tensors.canonical(name)
        if canonical in self.host_tails:
            raise UnsupportedModelError(
                f"{where}: {name!r} is computed on the host after the accelerator ({', '.join(HOST_TAIL_OPS)} are "
                "supported only at the end of the graph, feeding graph outputs)"
            )
        if canonical not in self.shapes:
            raise UnsupportedModelError(f"{where}: input {name!r} is not an activation computed earlier (graph not topologically sorted, or a constant where data is expected)")
        if not allow_flattened and self.tensors.is_flattened(name):
            raise UnsupportedModelError(f"{where}: a flattened tensor may only feed a fully connected layer (Gemm/MatMul)")
        return canonical

    def _const(self, node: onnx.NodeProto, index: int, what: str) -> np.ndarray:
        if index >= len(node.input) or not node.input[index]:
            raise UnsupportedModelError(f"{node_label(node)}: missing {what}")
        name = node.input[index]
        if not self.tensors.is_constant(name):
            raise UnsupportedModelError(f"{node_label(node)}: {what} {name!r} must be a constant initializer")
        return self.tensors.constant_real(name)

    def _optional_const(self, node: onnx.NodeProto, index: int) -> np.ndarray | None:
        if index >= len(node.input) or not node.input[index]:
            return None
        return self._const(node, index, f"input {index}")

    def _raw(self, node: onnx.NodeProto, index: int) -> np.ndarray | None:
        """An initializer exactly as stored (for quantization parameters)."""
        if index >= len(node.input) or not node.input[index]:
            return None
        name = self.tensors.canonical(node.input[index])
        if name not in self.tensors.constants:
            raise UnsupportedModelError(f"{node_label(node)}: input {node.input[index]!r} must be a constant initializer")
        return self.tensors.constants[name]

    # ---------------------------------------------------------- pass-through
    def _pass_through(self, node: onnx.NodeProto) -> None:
        tensors = self.tensors
        if node.op_type == "Constant":
            return
        out, src = node.output[0], node.input[0]
        if node.op_type in ("Identity", "Dropout"):
            tensors.aliases[out] = src
        elif node.op_type in ("Flatten", "Reshape"):
            self._flatten(node)
        elif node.op_type == "QuantizeLinear":
            scale, zero_point = self._raw(node, 1), self._raw(node, 2)
            if tensors.is_constant(src):
                real = tensors.constant_real(src)
                axis = attributes(node).get("axis", 1)
                tensors.quantized_constants[out] = _quantize_constant(real, scale, zero_point, axis)
            else:
                tensors.aliases[out] = src
                tensors.set_quant(src, scale, zero_point if zero_point is not None else np.int8(0), node_label(node))
        else:  # DequantizeLinear
            scale, zero_point = self._raw(node, 1), self._raw(node, 2)
            canonical = tensors.canonical(src)
            if canonical in tensors.constants:
                axis = int(attributes(node).get("axis", 1))
                tensors.quantized_constants[out] = quantized_constant(tensors.constants[canonical], scale, zero_point, axis)
            elif canonical in tensors.quantized_constants:
                tensors.quantized_constants[out] = tensors.quantized_constants[canonical]
            else:
                tensors.aliases[out] = src
                tensors.set_quant(src, scale, zero_point if zero_point is not None else np.int8(0), node_label(node))

    def _flatten(self, node: onnx.NodeProto) -> None:
        out = node.output[0]
        out_shape = self.value_shapes.get(out, ())
        if node.op_type == "Flatten" and attributes(node).get("axis", 1) != 1:
            raise UnsupportedModelError(f"{node_label(node)}: only axis=1 is supported (flatten before a fully connected layer)")
        if node.op_type == "Reshape" and len(out_shape) != 2:
            raise UnsupportedModelError(f"{node_label(node)}: only a reshape to (batch, features) before a fully connected layer is supported, got shape {list(out_shape)}")
        self.tensors.aliases[out] = node.input[0]
        self.tensors.flattened.add(out)

    # ---------------------------------------------------------------- layers
    def _add_layer(self, layer: Layer) -> None:
        self.producer[layer.output] = len(self.layers)
        self.shapes[layer.output] = layer.out_shape
        self.layers.append(layer)

    def _conv_like(self, node: onnx.NodeProto, x_name: str, weights, bias, quantized_weights=None, quantized_bias=None) -> None:
        x = self._activation(x_name, node_label(node))
        in_c, in_h, in_w = self.shapes[x]
        if weights.ndim != 4:
            raise UnsupportedModelError(f"{node_label(node)}: only 2-D convolutions are supported (weights have rank {weights.ndim})")
        if 0 in weights.shape:
            raise ShapeError(f"{node_label(node)}: weights {list(weights.shape)} have an empty dimension; every "
                             f"channel count and kernel size must be at least 1")
        groups = int(attributes(node).get("group", 1))
        out_c, group_c, kh, kw = weights.shape
        if group_c * groups != in_c or out_c % groups:
            raise ShapeError(f"{node_label(node)}: weights {list(weights.shape)} with group={groups} do not match {in_c} input channels")
        window = parse_window(node, (kh, kw), in_h, in_w)
        out_h, out_w = window.output_size(in_h, in_w)
        layer = Layer(
            name=self._layer_name(node), op=Op.CONV, inputs=(x,), output=node.output[0],
            in_shapes=((in_c, in_h, in_w),), out_shape=(out_c, out_h, out_w), kernel=(kh, kw),
            stride=window.stride, pads=window.pads, groups=groups, weights=_weights(weights), bias=_bias(bias),
        )
        self._remember_quantized(layer.name, quantized_weights, quantized_bias)
        self._add_layer(layer)

    def _remember_quantized(self, layer_name: str, weights, bias) -> None:
        if weights is not None:
            self.quant_weights[layer_name] = weights
        if bias is not None:
            self.quant_bias[layer_name] = bias

    def _quantized_operand(self, node: onnx.NodeProto, index: int, what: str, transpose: bool = False):
        """(float array, int8 weights + scales or None) of a weight input, or (float, int32) of a bias.

        `transpose` turns a (K, N) matrix into (N, K) weights, per-column scales becoming per-row.
        """
        if index >= len(node.input) or not node.input[index]:
            return None, None
        name = self.tensors.canonical(node.input[index])
        constant = self.tensors.quantized_constants.get(name)
        if constant is None:
            real = self._const(node, index, what)
            return (real.T if transpose else real), None
        if what == "bias":
            if constant.values.dtype != np.int32:
                raise QuantizationError(f"{node_label(node)}: quantized bias must be int32, got {constant.values.dtype}")
            return constant.real(), constant.values.astype(np.int32)
        if transpose:
            if constant.values.ndim != 2:
                raise UnsupportedModelError(f"{node_label(node)}: {what} must be a 2-D matrix")
            constant = dataclasses.replace(constant, values=constant.values.T, axis=1 - constant.axis)
        return constant.real(), int8_weights(constant, f"{node_label(node)} {what}")

    def _op_Conv(self, node: onnx.NodeProto) -> None:
        weights, quantized_weights = self._quantized_operand(node, 1, "weights")
        if weights is None:
            raise UnsupportedModelError(f"{node_label(node)}: missing weights")
        bias, quantized_bias = self._quantized_operand(node, 2, "bias")
        self._conv_like(node, node.input[0], weights, bias, quantized_weights, quantized_bias)

    def _op_QLinearConv(self, node: onnx.NodeProto) -> None:
        x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp = (list(node.input) + [""] * 9)[:8]
        self.tensors.set_quant(x, self._raw(node, 1), self._raw(node, 2), node_label(node))
        constant = quantized_constant(self._raw(node, 3), self._raw(node, 4), self._raw(node, 5), axis=0)
        quantized_weights = int8_weights(constant, f"{node_label(node)} weights")
        bias = self._raw(node, 8) if len(node.input) > 8 and node.input[8] else None
        real_bias = None if bias is None else bias.astype(np.float64) * float(self.tensors.quant[self.tensors.canonical(x)].scale) * quantized_weights[1]
        self._conv_like(node, x, constant.real(), real_bias, quantized_weights, None if bias is None else bias.astype(np.int32))
        self.tensors.set_quant(node.output[0], self._raw(node, 6), self._raw(node, 7), node_label(node))

    def _fully_connected(self, node: onnx.NodeProto, x_name: str, weights_ko: np.ndarray, bias, quantized_weights=None, quantized_bias=None) -> None:
        """A fully connected layer with weights (out, in) as a conv covering the whole input map."""
        x = self._activation(x_name, node_label(node), allow_flattened=True)
        in_shape = self.shapes[x]
        if not self.tensors.is_flattened(x_name) and in_shape[1:] != (1, 1):
            raise UnsupportedModelError(f"{node_label(node)}: a fully connected layer on a {in_shape} map needs a Flatten before it")
        out_features, in_features = weights_ko.shape
        if in_features != in_shape[0] * in_shape[1] * in_shape[2]:
            raise ShapeError(f"{node_label(node)}: weights expect {in_features} inputs, the input map {in_shape} has {in_shape[0] * in_shape[1] * in_shape[2]}")
        weights = weights_ko.reshape(out_features, *in_shape)
        if quantized_weights is not None:
            quantized_weights = (quantized_weights[0].reshape(out_features, *in_shape), quantized_weights[1])
        layer = Layer(
            name=self._layer_name(node), op=Op.FC, inputs=(x,), output=node.output[0],
            in_shapes=(in_shape,), out_shape=(out_features, 1, 1), kernel=(in_shape[1], in_shape[2]),
            weights=_weights(weights), bias=_bias(bias),
        )
        self._remember_quantized(layer.name, quantized_weights, quantized_bias)
        self._add_layer(layer)

    def _op_Gemm(self, node: onnx.NodeProto) -> None:
        attrs = attributes(node)
        if attrs.get("transA", 0):
            raise UnsupportedModelError(f"{node_label(node)}: transA=1 is not supported")
        weights, quantized_weights = self._quantized_operand(node, 1, "weights", transpose=not attrs.get("transB", 0))
        alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
        if quantized_weights is not None and alpha != 1.0:
            raise UnsupportedModelError(f"{node_label(node)}: alpha={alpha} with quantized weights is not supported")
        bias, quantized_bias = self._quantized_operand(node, 2, "bias")
        if bias is not None and (bias.ndim > 1 and bias.shape[0] != 1 or bias.size != weights.shape[0]):
            raise UnsupportedModelError(f"{node_label(node)}: bias of shape {list(bias.shape)} must have one value per output ({weights.shape[0]})")
        if quantized_bias is not None and beta != 1.0:
            raise UnsupportedModelError(f"{node_label(node)}: beta={beta} with a quantized bias is not supported")
        self._fully_connected(node, node.input[0], _scaled(weights, alpha), None if bias is None else _scaled(bias, beta),
                              quantized_weights, quantized_bias)

    def _op_MatMul(self, node: onnx.NodeProto) -> None:
        weights, quantized_weights = self._quantized_operand(node, 1, "weights", transpose=True)
        if weights is None or weights.ndim != 2:
            raise UnsupportedModelError(f"{node_label(node)}: the second operand must be a 2-D constant (K, N)")
        self._fully_connected(node, node.input[0], weights, None, quantized_weights)

    def _op_QLinearMatMul(self, node: onnx.NodeProto) -> None:
        self._quantized_fully_connected(node, b_is_out_by_in=False, bias_index=None, output_index=6)

    def _op_QGemm(self, node: onnx.NodeProto) -> None:
        attrs = attributes(node)
        if attrs.get("transA", 0) or float(attrs.get("alpha", 1.0)) != 1.0:
            raise UnsupportedModelError(f"{node_label(node)}: only transA=0 and alpha=1 are supported")
        if len(node.input) < 8 or not node.input[7]:
            raise UnsupportedModelError(f"{node_label(node)}: a QGemm with a float output (no y_scale) is not supported")
        self._quantized_fully_connected(node, b_is_out_by_in=bool(attrs.get("transB", 0)), bias_index=6, output_index=7)

    def _quantized_fully_connected(self, node: onnx.NodeProto, b_is_out_by_in: bool, bias_index: int | None, output_index: int) -> None:
        """QLinearMatMul / QGemm: inputs (a, a_scale, a_zp, b, b_scale, b_zp, ...), output quantization at `output_index`."""
        a = node.input[0]
        self.tensors.set_quant(a, self._raw(node, 1), self._raw(node, 2), node_label(node))
        b = self._raw(node, 3)
        if b.ndim != 2:
            raise UnsupportedModelError(f"{node_label(node)}: the second operand must be a 2-D constant matrix")
        constant = quantized_constant(b if b_is_out_by_in else b.T.copy(), self._raw(node, 4), self._raw(node, 5), axis=0)
        weights = int8_weights(constant, f"{node_label(node)} weights")
        bias = None if bias_index is None else self._raw(node, bias_index)
        real_bias = None
        if bias is not None:
            real_bias = bias.astype(np.float64) * self.tensors.quant[self.tensors.canonical(a)].scale * weights[1]
            bias = bias.astype(np.int32)
        self._fully_connected(node, a, constant.real(), real_bias, weights, bias)
        self.tensors.set_quant(node.output[0], self._raw(node, output_index), self._raw(node, output_index + 1), node_label(node))

    def _qlinear_contrib(self, node: onnx.NodeProto) -> None:
        """onnxruntime's QLinear* contrib ops: record the quantizations, then build the float op."""
        float_op, data_positions, (out_scale, out_zp) = QLINEAR_CONTRIB_OPS[node.op_type]
        if data_positions is None:
            data_positions = tuple((i, i + 1, i + 2) for i in range(2, len(node.input), 3))
        for data, scale, zero_point in data_positions:
            self.tensors.set_quant(node.input[data], self._raw(node, scale), self._raw(node, zero_point), node_label(node))
        if attributes(node).get("channels_last", 0):
            raise UnsupportedModelError(f"{node_label(node)}: channels_last=1 is not supported")
        plain = onnx.helper.make_node(float_op, [node.input[d] for d, _, _ in data_positions], list(node.output), name=node.name)
        plain.attribute.extend(a for a in node.attribute if a.name != "channels_last")
        getattr(self, f"_op_{float_op}")(plain)
        self.tensors.set_quant(node.output[0], self._raw(node, out_scale), self._raw(node, out_zp), node_label(node))

    def _pool(self, node: onnx.NodeProto, op: Op, kernel: tuple[int, int] | None = None) -> None:
        x = self._activation(node.input[0], node_label(node))
        channels, height, width = self.shapes[x]
        attrs = attributes(node)
        if len(node.output) > 1 and node.output[1]:
            raise UnsupportedModelError(f"{node_label(node)}: the Indices output of MaxPool is not supported")
        if kernel is None:
            kernel_attr = attrs.get("kernel_shape")
            if kernel_attr is None or len(kernel_attr) != 2:
                raise UnsupportedModelError(f"{node_label(node)}: kernel_shape must have 2 entries")
            kernel = (int(kernel_attr[0]), int(kernel_attr[1]))
        window = parse_window(node, kernel, height, width, ceil_mode_ok=op == Op.MAXPOOL)
        if op == Op.AVGPOOL and any(window.pads) and not attrs.get("count_include_pad", 0):
            raise UnsupportedModelError(f"{node_label(node)}: padded AveragePool needs count_include_pad=1 (the divisor must be the constant window size)")
        out_h, out_w = window.output_size(height, width)
        self._add_layer(Layer(
            name=self._layer_name(node), op=op, inputs=(x,), output=node.output[0],
            in_shapes=((channels, height, width),), out_shape=(channels, out_h, out_w),
            kernel=kernel, stride=window.stride, pads=window.pads,
        ))

    def _op_MaxPool(self, node: onnx.NodeProto) -> None:
        self._pool(node, Op.MAXPOOL)

    def _op_AveragePool(self, node: onnx.NodeProto) -> None:
        self._pool(node, Op.AVGPOOL)

    def _op_GlobalAveragePool(self, node: onnx.NodeProto) -> None:
        _, height, width = self.shapes[self._activation(node.input[0], node_label(node))]
        self._pool(node, Op.AVGPOOL, kernel=(height, width))

    def _op_GlobalMaxPool(self, node: onnx.NodeProto) -> None:
        _, height, width = self.shapes[self._activation(node.input[0], node_label(node))]
        self._pool(node, Op.MAXPOOL, kernel=(height, width))

    def _op_Add(self, node: onnx.NodeProto) -> None:
        constant_inputs = [name for name in node.input if self.tensors.is_constant(name)]
        if constant_inputs:
            self._fold_bias_add(node, constant_inputs[0])
            return
        inputs = tuple(self._activation(name, node_label(node)) for name in node.input)
        shapes = {self.shapes[name] for name in inputs}
        if len(shapes) != 1:
            raise UnsupportedModelError(f"{node_label(node)}: inputs have shapes {sorted(shapes)}; only equal shapes are supported (no broadcasting)")
        shape = shapes.pop()
        self._add_layer(Layer(
            name=self._layer_name(node), op=Op.ADD, inputs=inputs, output=node.output[0],
            in_shapes=(shape,) * len(inputs), out_shape=shape,
        ))

    def _op_Concat(self, node: onnx.NodeProto) -> None:
        inputs = tuple(self._activation(name, node_label(node)) for name in node.input)
        rank = len(self.value_shapes.get(node.output[0], ())) or 4
        if int(attributes(node).get("axis", 1)) % rank != 1:
            raise UnsupportedModelError(f"{node_label(node)}: only concatenation along channels (axis 1) is supported")
        shapes = [self.shapes[name] for name in inputs]
        if len({shape[1:] for shape in shapes}) != 1:
            raise ShapeError(f"{node_label(node)}: inputs {shapes} differ in height/width")
        out_shape = (sum(shape[0] for shape in shapes), *shapes[0][1:])
        self._add_layer(Layer(
            name=self._layer_name(node), op=Op.CONCAT, inputs=inputs, output=node.output[0],
            in_shapes=tuple(shapes), out_shape=out_shape,
        ))

    # --------------------------------------------------------------- fusions
    def _fusable_producer(self, node: onnx.NodeProto, what: str, ops: tuple[Op, ...]) -> Layer:
        x = self._activation(node.input[0], node_label(node))
        index = self.producer.get(x)
        layer = None if index is None else self.layers[index]
        if layer is None or layer.op not in ops or self.consumers[x] != 1 or x in self.graph_outputs:
            allowed = "/".join(op.value for op in ops)
            raise UnsupportedModelError(f"{node_label(node)}: {what} must directly follow a {allowed} layer whose output it alone consumes")
        return layer

    def _replace(self, old: Layer, **changes) -> None:
        new = dataclasses.replace(old, **changes)
        index = self.producer.pop(old.output)
        self.layers[index] = new
        self.producer[new.output] = index
        self.shapes[new.output] = new.out_shape

    def _fuse_activation(self, node: onnx.NodeProto, activation: Activation) -> None:
        layer = self._fusable_producer(node, f"{node.op_type}", tuple(Op))
        if layer.activation != Activation.NONE:
            raise UnsupportedModelError(f"{node_label(node)}: layer {layer.name!r} already has activation {layer.activation}")
        self._replace(layer, activation=activation, output=node.output[0])

    def _op_Relu(self, node: onnx.NodeProto) -> None:
        self._fuse_activation(node, Activation.RELU)

    def _op_Clip(self, node: onnx.NodeProto) -> None:
        attrs = attributes(node)
        low = self._optional_const(node, 1)
        high = self._optional_const(node, 2)
        low = float(low) if low is not None else float(attrs.get("min", -np.inf))
        high = float(high) if high is not None else float(attrs.get("max", np.inf))
        if low == 0.0 and high == 6.0:
            self._fuse_activation(node, Activation.RELU6)
        elif low == 0.0 and np.isinf(high):
            self._fuse_activation(node, Activation.RELU)
        else:
            raise UnsupportedModelError(f"{node_label(node)}: Clip({low:g}, {high:g}) is not supported; only Clip(0, 6) (ReLU6) and Clip(0, inf) (ReLU)")

    def _op_BatchNormalization(self, node: onnx.NodeProto) -> None:
        layer = self._fusable_producer(node, "BatchNormalization", (Op.CONV, Op.FC))
        if layer.name in self.quant_weights or layer.activation != Activation.NONE:
            raise UnsupportedModelError(
                f"{node_label(node)}: BatchNormalization can only be folded into a float Conv/Gemm without activation "
                "(for a quantized model, fold it before quantizing, e.g. with onnxruntime.quantization.quant_pre_process)"
            )
        if attributes(node).get("training_mode", 0):
            raise UnsupportedModelError(f"{node_label(node)}: training_mode=1 is not supported")
        gamma, beta, mean, var = (self._const(node, i, what).astype(np.float64) for i, what in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "var")))
        if layer.weights is None:  # a shape-only model: nothing to fold
            self._replace(layer, output=node.output[0])
            return
        eps = float(attributes(node).get("epsilon", 1e-5))
        factor = gamma / np.sqrt(var + eps)
        bias = np.zeros_like(mean) if layer.bias is None else layer.bias.astype(np.float64)
        weights = np.empty(layer.weights.shape, np.float32)  # the float64 products rounded once, without float64 copies
        np.multiply(layer.weights, factor.reshape(-1, 1, 1, 1), out=weights, dtype=np.float64, casting="same_kind")
        self._replace(layer, weights=weights, bias=((bias - mean) * factor + beta).astype(np.float32), output=node.output[0])

    def _fold_bias_add(self, node: onnx.NodeProto, constant_name: str) -> None:
        data = next(name for name in node.input if name != constant_name)
        fake = onnx.helper.make_node("Add", [data], node.output, name=node.name)
        layer = self._fusable_producer(fake, "an Add of a constant", (Op.CONV, Op.FC))
        if layer.name in self.quant_weights:
            raise UnsupportedModelError(f"{node_label(node)}: a constant Add after a quantized layer is not supported")
        value = self.tensors.constant_real(constant_name).astype(np.float64)
        channels = layer.out_shape[0]
        if value.size == 1:
            value = np.full(channels, float(value.reshape(-1)[0]))
        elif value.size == channels:
            value = value.reshape(-1)
        else:
            raise UnsupportedModelError(f"{node_label(node)}: constant of shape {list(value.shape)} is not a per-channel bias for {channels} channels")
        bias = value if layer.bias is None else layer.bias.astype(np.float64) + value
        self._replace(layer, bias=bias.astype(np.float32), output=node.output[0])

    # ---------------------------------------------------------- quantization
    def _with_quantization(self, network: Network) -> Network:
        """Attach LayerQuant to every layer when the model carries quantization."""
        known = self.tensors.quant
        if not known:
            return network
        from planner.quant import layer_quant  # the hardware's number formats, needed by quantized models only

        def quant_of(tensor: str, where: str) -> TensorQuant:
            if tensor not in known:
                raise QuantizationError(f"{where}: tensor {tensor!r} has no quantization parameters; the model mixes float and quantized parts")
            return known[tensor]
        layers = []
        for layer in network.layers:
            where = f"layer {layer.name!r}"
            inputs = tuple(quant_of(name, where) for name in layer.inputs)
            output = quant_of(layer.output, where)
            weights, scales = self.quant_weights.get(layer.name, (None, None))
            if layer.op in (Op.CONV, Op.FC) and weights is None:
                raise QuantizationError(f"{where}: activations are quantized but the weights are float; quantize the whole model")
            bias = self.quant_bias.get(layer.name)
            if bias is not None and not np.allclose(bias.astype(np.float64) * inputs[0].scale * scales, layer.bias, rtol=1e-4, atol=1e-6 * inputs[0].scale * scales.max()):
                raise QuantizationError(f"{where}: int32 bias scale is not input_scale x weight_scale")
            quant = layer_quant(layer, inputs, output, weights, scales, bias)
            layers.append(dataclasses.replace(layer, quant=quant))
        input_quant = quant_of(network.input_name, "network input")
        return dataclasses.replace(network, layers=tuple(layers), input_quant=input_quant)


def _weights(array: np.ndarray) -> np.ndarray | None:
    """A conv / fc layer's float32 weights (a copy): None for a shape-only stand-in
    (`planner.frontend.tensors.shape_only`)."""
    return None if is_shape_only(array) else array.astype(np.float32)


def _bias(array: np.ndarray | None) -> np.ndarray | None:
    """A conv / fc layer's float32 bias, flat (a copy): None for none and for a shape-only stand-in."""
    return None if array is None or is_shape_only(array) else np.asarray(array).astype(np.float32).reshape(-1)


def _scaled(array: np.ndarray, factor: float) -> np.ndarray:
    """`array * factor`: a shape-only stand-in stays one."""
    return array if is_shape_only(array) else array * factor


def _check_finite(layer: Layer) -> None:
    """Refuse a layer whose weights or bias (BatchNorm folded in) hold NaN or infinity."""
    for what, verb, values in (("weights", "hold", layer.weights), ("bias", "holds", layer.bias)):
        if values is not None and np.issubdtype(values.dtype, np.inexact) and not np.isfinite(values).all():
            index = tuple(int(i) for i in np.argwhere(~np.isfinite(values))[0])
            raise UnsupportedModelError(f"layer {layer.name!r}: {what} {verb} a non-finite value ({values[index]} at "
                                        f"index {index}); every weight and bias must be finite")


def _quantize_constant(real: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, axis: int):
    scale = np.asarray(scale, dtype=np.float64)
    shape = [1] * real.ndim
    if scale.size > 1:
        shape[axis % real.ndim] = scale.size
    dtype = np.int8 if zero_point is None else np.asarray(zero_point).dtype
    info = np.iinfo(dtype)
    zp = np.zeros_like(scale) if zero_point is None else np.asarray(zero_point, dtype=np.float64)
    q = np.clip(np.rint(real / scale.reshape(shape)) + zp.reshape(shape), info.min, info.max).astype(dtype)
    return quantized_constant(q, scale, zero_point, axis)


def _feature_shape(shape: tuple[int, ...], where: str) -> Shape:
    """(N, C, H, W) or (N, K) to a batch-1 feature map (C, H, W)."""
    if len(shape) == 4:
        return (shape[1], shape[2], shape[3])
    if len(shape) == 2:
        return (shape[1], 1, 1)
    raise ShapeError(f"{where}: shape {list(shape)} must be (N, C, H, W) or (N, features)")
