"""An ONNX backend (`onnx.backend.base.Backend`) over the golden integer kernels.

It executes the integer / quantization operators of a graph with exactly the accelerator's
arithmetic: convolutions and matrix products are `sim.golden.kernels.conv2d` (a matrix
product is a 1x1 convolution, as the IR represents fully connected layers), max pooling is
`kernels.max_pool`, and the output stage of QLinearConv / QLinearMatMul is
`planner.quant.fixed_point` + `kernels.requantize` (round half to even), not a float multiply.

uint8 tensors: the accelerator is int8, so every uint8 tensor is converted exactly to int8
as ``q - 128`` together with its zero point (``zero_point - 128``); ``q - zero_point`` and
hence every real value ``scale * (q - zero_point)`` is unchanged. uint8 outputs are converted
back with ``+ 128`` (the int8 clamp ``[-128, 127]`` is the uint8 clamp ``[0, 255]``).

The kernels take batch-1 `(C, H, W)` maps: batched inputs are executed image by image.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import NodeProto, TensorProto, helper, numpy_helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from common.errors import UnsupportedModelError
from planner.quant import fixed_point
from sim.golden import kernels

Handler = Callable[[NodeProto, list[Any]], list[np.ndarray]]

_INT8_TYPES = (TensorProto.INT8, TensorProto.UINT8)
_CONV_ATTRIBUTES = frozenset({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


# --- uint8 <-> int8 and zero points -------------------------------------------------------


def to_int8(q: np.ndarray) -> np.ndarray:
    """An int8 or uint8 tensor in the accelerator's int8 domain (uint8: ``q - 128``)."""
    q = np.asarray(q)
    if q.dtype == np.int8:
        return q
    if q.dtype == np.uint8:
        return (q.astype(np.int16) - 128).astype(np.int8)
    raise UnsupportedModelError(f"unsupported tensor type {q.dtype} (int8 or uint8 only)")


def from_int8(q: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Inverse of `to_int8`: an int8 result back in `dtype` (int8 or uint8)."""
    if np.dtype(dtype) == np.uint8:
        return (np.asarray(q, dtype=np.int16) + 128).astype(np.uint8)
    return np.asarray(q, dtype=np.int8)


def _zero_point(zero_point: np.ndarray | None, dtype: np.dtype) -> np.ndarray:
    """The zero point tensor, 0 of `dtype` when the optional input is absent."""
    return np.zeros((), dtype=dtype) if zero_point is None else np.asarray(zero_point)


def _offset(q: np.ndarray, zero_point: np.ndarray | None, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """``q - zero_point`` (int64) on the int8 forms; the zero point is reshaped to `shape` if given."""
    z = to_int8(_zero_point(zero_point, q.dtype)).astype(np.int64)
    return to_int8(q).astype(np.int64) - (z if shape is None else z.reshape(shape))


def _requantize(node: NodeProto, acc: np.ndarray, real: np.ndarray, y_zero_point: np.ndarray) -> np.ndarray:
    """The accelerator's output stage ``clamp(round_shift(acc * m, s) + zy)`` per element.

    `real` (the real multipliers) and `y_zero_point` broadcast against `acc`; each distinct
    multiplier is encoded with `fixed_point`. The result has `y_zero_point`'s dtype.
    """
    values, index = np.unique(np.broadcast_to(real, acc.shape).ravel(), return_inverse=True)
    pairs = np.array([fixed_point(float(v), _node_label(node)) for v in values], dtype=np.int64).reshape(-1, 2)
    zy = np.broadcast_to(to_int8(y_zero_point).astype(np.int64), acc.shape).ravel()
    y = kernels.requantize(acc.ravel(), pairs[index.ravel(), 0], pairs[index.ravel(), 1], zy)
    return from_int8(y.reshape(acc.shape), y_zero_point.dtype)


def _f64(x: np.ndarray) -> np.ndarray:
    """A scale tensor as float64 (multipliers are formed in double precision)."""
    return np.asarray(x, dtype=np.float64)


# --- attributes and window geometry -------------------------------------------------------


def _attributes(node: NodeProto) -> dict[str, Any]:
    """Attribute values by name (strings decoded)."""
    values = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {k: v.decode() if isinstance(v, bytes) else v for k, v in values.items()}


def _check_window_attributes(node: NodeProto) -> None:
    """Only 2-D, undilated, floor-mode windows are supported."""
    attrs = _attributes(node)
    lengths = {"kernel_shape": 2, "strides": 2, "pads": 4, "dilations": 2}
    for name, length in lengths.items():
        if name in attrs and len(attrs[name]) != length:
            raise _unsupported(node, f"attribute {name}={attrs[name]} (only 2-D windows are supported)")
    for name, default in (("dilations", [1, 1]), ("ceil_mode", 0), ("storage_order", 0)):
        if name in attrs and attrs[name] != default:
            raise _unsupported(node, f"attribute {name}={attrs[name]} (only {default} is supported)")
    if attrs.get("auto_pad", "NOTSET") not in _AUTO_PADS:
        raise _unsupported(node, f"attribute auto_pad={attrs['auto_pad']!r}")


def _window_geometry(node: NodeProto, kernel: Sequence[int], size: Sequence[int]) -> tuple[tuple[int, int], tuple[int, int, int, int]]:
    """`(stride, pads)` of a 2-D window; pads are `(top, left, bottom, right)` as in ONNX."""
    attrs = _attributes(node)
    stride = tuple(attrs.get("strides", (1, 1)))
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad == "VALID":
        return stride, (0, 0, 0, 0)
    if auto_pad == "NOTSET":
        return stride, tuple(attrs.get("pads", (0, 0, 0, 0)))
    begin, end = [], []
    for n, k, s in zip(size, kernel, stride):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return stride, (*begin, *end)


def _require_4d(x: np.ndarray) -> None:
    if x.ndim != 4:
        raise UnsupportedModelError(f"unsupported input of rank {x.ndim} (only 2-D NCHW maps)")


# --- handlers -----------------------------------------------------------------------------


def _conv_acc(node: NodeProto, x: np.ndarray, x_zp: np.ndarray | None, w: np.ndarray, w_zp: np.ndarray | None) -> np.ndarray:
    """``conv(x - zx, w - zw)`` (int64 NCHW), zw per tensor or per output channel."""
    _require_4d(x)
    xc, wc = _offset(x, x_zp), _offset(w, w_zp, (-1, 1, 1, 1))
    stride, pads = _window_geometry(node, wc.shape[2:], xc.shape[2:])
    groups = _attributes(node).get("group", 1)
    return np.stack([kernels.conv2d(image, wc, stride, pads, groups) for image in xc])


def _conv_integer(node: NodeProto, inputs: list[Any]) -> list[np.ndarray]:
    x, w, x_zp, w_zp = _pad_inputs(inputs, 4)
    return [_conv_acc(node, x, x_zp, w, w_zp).astype(np.int32)]


def _qlinear_conv(node: NodeProto, inputs: list[Any]) -> list[np.ndarray]:
    x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias = _pad_inputs(inputs, 9)
    acc = _conv_acc(node, x, x_zp, w, w_zp)
    if bias is not None:
        acc += bias.astype(np.int64).reshape(-1, 1, 1)
    real = _f64(x_scale) * _f64(w_scale).reshape(-1, 1, 1) / _f64(y_scale)
    return [_requantize(node, acc, real, np.asarray(y_zp))]


def _matmul_2d(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a (M, K) @ b (K, N)` as a 1x1 convolution of the `(K, M, 1)` map by `(N, K, 1, 1)`."""
    return kernels.conv2d(a.T[:, :, None], b.T[:, :, None, None], (1, 1), (0, 0, 0, 0))[:, :, 0].T


def _int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`numpy.matmul` semantics (1-D promotion, batch broadcasting) over `_matmul_2d`."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = np.broadcast_to(a2, batch + a2.shape[-2:])
    b2 = np.broadcast_to(b2, batch + b2.shape[-2:])
    out = np.empty(batch + (a2.shape[-2], b2.shape[-1]), dtype=np.int64)
    for index in np.ndindex(*batch):
        out[index] = _matmul_2d(a2[index], b2[index])
    if b.ndim == 1:
        out = out[..., 0]
    return out[..., 0, :] if a.ndim == 1 else out


def _row_shape(a: np.ndarray) -> tuple[int, ...]:
    """Shape of a per-row (per-tensor when 1-D) parameter of matrix `a` for broadcasting."""
    return (-1, 1) if a.ndim > 1 else (-1,)


def _matmul_acc(a: np.ndarray, a_zp: np.ndarray | None, b: np.ndarray, b_zp: np.ndarray | None) -> np.ndarray:
    """``(a - za) @ (b - zb)`` (int64), za per row of a, zb per column of b."""
    return _int_matmul(_offset(a, a_zp, _row_shape(a)), _offset(b, b_zp))


def _matmul_integer(node: NodeProto, inputs: list[Any]) -> list[np.ndarray]:
    a, b, a_zp, b_zp = _pad_inputs(inputs, 4)
    return [_matmul_acc(a, a_zp, b, b_zp).astype(np.int32)]


def _qlinear_matmul(node: NodeProto, inputs: list[Any]) -> list[np.ndarray]:
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = _pad_inputs(inputs, 8)
    rows = _row_shape(a)
    acc = _matmul_acc(a, a_zp, b, b_zp)
    real = _f64(a_scale).reshape(rows) * _f64(b_scale).reshape(-1) / _f64(y_scale).reshape(rows)
    return [_requantize(node, acc, real, np.asarray(y_zp).reshape(rows))]


def _max_pool(node: NodeProto, inputs: list[Any]) -> list[np.ndarray]:
    (x,) = inputs
    _require_4d(x)
    kernel = tuple(_attributes(node)["kernel_shape"])
    stride, pads = _window_geometry(node, kernel, x.shape[2:])
    y = np.stack([kernels.max_pool(image, kernel, stride, pads) for image in to_int8(x)])
    return [from_int8(y, x.dtype)]


def _per_axis(param: np.ndarray, shape: tuple[int, ...], node: NodeProto) -> np.ndarray:
    """A scale / zero point broadcastable to `shape`: per tensor, per axis or blocked."""
    param = np.asarray(param)
    attrs = _attributes(node)
    axis, block = attrs.get("axis", 1) % max(len(shape), 1), attrs.get("block_size", 0)
    if block:
        return np.repeat(param, block, axis=axis)[(slice(None),) * axis + (slice(0, shape[axis]),)]
    if param.size == 1:
        return param.reshape(())
    return param.reshape([-1 if d == axis else 1 for d in range(len(shape))])


def _quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """``saturate(round_half_even(x / scale) + zero_point)`` in the zero point's dtype."""
    q = np.rint(x / scale).astype(np.float64) + to_int8(zero_point)
    return from_int8(np.clip(q, -128, 127).astype(np.int8), zero_point.dtype)


def _quantize_linear(node: NodeProto, inputs: list[Any]) -> list[np.ndarray]:
    x, scale, zp = _pad_inputs(inputs, 3)
    dtype = helper.tensor_dtype_to_np_dtype(_attributes(node).get("output_dtype") or TensorProto.UINT8)
    zp = _zero_point(zp, dtype)
    return [_quantize(x, _per_axis(scale, x.shape, node), _per_axis(zp, x.shape, node))]


def _dequantize_linear(node: NodeProto, inputs: list[Any]) -> list[np.ndarray]:
    x, scale, zp = _pad_inputs(inputs, 3)
    centered = _offset(x, _per_axis(_zero_point(zp, x.dtype), x.shape, node))
    return [(centered * _per_axis(scale, x.shape, node)).astype(scale.dtype)]


def _dynamic_quantize_linear(node: NodeProto, inputs: list[Any]) -> list[np.ndarray]:
    """uint8 quantization over the range of `x` (always containing 0), as the ONNX spec."""
    (x,) = inputs
    low, high = np.float32(min(x.min(), 0)), np.float32(max(x.max(), 0))
    scale = np.float32(1.0 if high == low else high - low) / np.float32(255)
    zp = np.asarray(np.rint(np.clip(-low / scale, 0, 255)), dtype=np.uint8)
    return [_quantize(x, scale, zp), np.asarray(scale, dtype=x.dtype), zp]


def _pad_inputs(inputs: list[Any], count: int) -> list[Any]:
    """The node inputs with absent optional ones as None, `count` long."""
    return list(inputs) + [None] * (count - len(inputs))


# --- op table and validation --------------------------------------------------------------


@dataclass(frozen=True)
class _OpSpec:
    """How an op runs and what of it is supported."""

    handler: Handler
    attributes: frozenset[str] = frozenset()
    int8_inputs: tuple[int, ...] = ()  # input positions that must be int8 / uint8 tensors
    int8_outputs: tuple[int, ...] = ()
    outputs: int = 1
    check: Callable[[NodeProto], None] | None = None


_OPS: dict[str, _OpSpec] = {
    "QLinearConv": _OpSpec(_qlinear_conv, _CONV_ATTRIBUTES, (0, 2, 3, 5, 7), check=_check_window_attributes),
    "ConvInteger": _OpSpec(_conv_integer, _CONV_ATTRIBUTES, (0, 1, 2, 3), check=_check_window_attributes),
    "QLinearMatMul": _OpSpec(_qlinear_matmul, int8_inputs=(0, 2, 3, 5, 7)),
    "MatMulInteger": _OpSpec(_matmul_integer, int8_inputs=(0, 1, 2, 3)),
    "MaxPool": _OpSpec(
        _max_pool, _CONV_ATTRIBUTES - {"group"} | {"ceil_mode", "storage_order"}, (0,), check=_check_window_attributes
    ),
    "QuantizeLinear": _OpSpec(_quantize_linear, frozenset({"axis", "block_size", "output_dtype", "saturate"}), (2,), (0,)),
    "DequantizeLinear": _OpSpec(_dequantize_linear, frozenset({"axis", "block_size"}), (0, 2)),
    "DynamicQuantizeLinear": _OpSpec(_dynamic_quantize_linear, outputs=3),
}
SUPPORTED_OPS = tuple(_OPS)


def _node_label(node: NodeProto) -> str:
    return f"node {node.name or (node.output[0] if node.output else '?')!r} ({node.op_type})"


def _unsupported(node: NodeProto, what: str) -> UnsupportedModelError:
    return UnsupportedModelError(f"{_node_label(node)}: unsupported {what}; supported ops: {', '.join(SUPPORTED_OPS)}")


def _check_node(node: NodeProto, types: dict[str, int]) -> _OpSpec:
    """The spec of a supported node; raise `UnsupportedModelError` otherwise.

    `types` maps tensor names to their (inferred) ONNX element types, where known.
    """
    spec = _OPS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    if spec is None:
        raise _unsupported(node, f"op {node.domain + '.' if node.domain else ''}{node.op_type}")
    for attribute in node.attribute:
        if attribute.name not in spec.attributes:
            raise _unsupported(node, f"attribute {attribute.name}")
    outputs = sum(1 for name in node.output if name)
    if outputs > spec.outputs:
        raise _unsupported(node, f"{outputs} outputs (at most {spec.outputs})")
    for names, positions in ((node.input, spec.int8_inputs), (node.output, spec.int8_outputs)):
        for i in positions:
            if i < len(names) and names[i] and types.get(names[i], TensorProto.UNDEFINED) not in (TensorProto.UNDEFINED, *_INT8_TYPES):
                dtype = TensorProto.DataType.Name(types[names[i]])
                raise _unsupported(node, f"tensor {names[i]!r} of type {dtype} (int8 or uint8 only)")
    if spec.check is not None:
        spec.check(node)
    return spec


def _execute(node: NodeProto, spec: _OpSpec, inputs: list[Any]) -> list[np.ndarray]:
    """Run one node, naming it in any error about its data."""
    try:
        return spec.handler(node, inputs)
    except UnsupportedModelError as error:
        raise UnsupportedModelError(f"{_node_label(node)}: {error}") from error


def _tensor_types(model: onnx.ModelProto) -> dict[str, int]:
    """Element types of every tensor whose type is declared or inferable."""
    graph = onnx.shape_inference.infer_shapes(model).graph
    types = {t.name: t.data_type for t in graph.initializer}
    for info in (*graph.input, *graph.value_info, *graph.output):
        if info.type.HasField("tensor_type"):
            types[info.name] = info.type.tensor_type.elem_type
    return types


def _check_device(device: str) -> None:
    if not GoldenBackend.supports_device(device):
        raise UnsupportedModelError(f"device {device!r} is not supported (CPU only)")


class GoldenBackendRep(BackendRep):
    """A validated graph, executed node by node on numpy arrays."""

    def __init__(self, model: onnx.ModelProto) -> None:
        types = _tensor_types(model)
        graph = model.graph
        self._nodes = [(node, _check_node(node, types)) for node in graph.node]
        self._initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self._input_names = [i.name for i in graph.input if i.name not in self._initializers]
        self._output_names = [o.name for o in graph.output]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Outputs of the graph for `inputs` (a sequence in graph input order, or a dict)."""
        if not isinstance(inputs, dict):
            inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            if len(inputs) != len(self._input_names):
                raise ValueError(f"expected {len(self._input_names)} inputs, got {len(inputs)}")
            inputs = dict(zip(self._input_names, inputs))
        values: dict[str, Any] = {**self._initializers, **{k: np.asarray(v) for k, v in inputs.items()}}
        for node, spec in self._nodes:
            outputs = _execute(node, spec, [values[name] if name else None for name in node.input])
            values.update((name, value) for name, value in zip(node.output, outputs) if name)
        return tuple(values[name] for name in self._output_names)


class GoldenBackend(Backend):
    """ONNX backend running the integer operators on the golden (accelerator) kernels."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> GoldenBackendRep:
        """Check the model and that every node is supported; raise `UnsupportedModelError` if not."""
        _check_device(device)
        super().prepare(model, device, **kwargs)
        return GoldenBackendRep(model)

    @classmethod
    def run_node(
        cls,
        node: NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[np.ndarray, ...]:
        """Run a single node on `inputs` (in node input order)."""
        _check_device(device)
        arrays = [np.asarray(x) for x in inputs]
        types = {name: helper.np_dtype_to_tensor_dtype(x.dtype) for name, x in zip(node.input, arrays)}
        return tuple(_execute(node, _check_node(node, types), arrays))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """Only the CPU (numpy) device."""
        return Device(device).type == DeviceType.CPU
