"""What the front end knows about each tensor name while it walks the graph.

Quantize/Dequantize pairs, Identity, Dropout and flattening do not become layers: their
outputs are aliases of their inputs, and the quantization they express is attached to the
canonical tensor. Constants (initializers, Constant nodes) and dequantized constants
(quantized weights and biases) are kept apart from activations.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import external_data_helper, helper, numpy_helper

from common.errors import QuantizationError
from planner.ir import TensorQuant

UINT8_OFFSET = 128
"""uint8 tensors are handled as int8: ``q_int8 = q_uint8 - 128`` with the zero point shifted alike."""


def shape_only(tensor: onnx.TensorProto) -> np.ndarray:
    """An initializer whose external data is not loaded, as its shape alone: zeros with zero
    strides (no memory, nothing drawn), which `is_shape_only` tells apart from values."""
    return np.broadcast_to(np.zeros((), helper.tensor_dtype_to_np_dtype(tensor.data_type)), tuple(tensor.dims))


def is_shape_only(array: np.ndarray) -> bool:
    """Whether `array` is a `shape_only` stand-in (more than one element, all strides zero)."""
    return array.size > 1 and not any(array.strides)


@dataclass(frozen=True, eq=False)
class QuantizedConstant:
    """An integer initializer with its (per-tensor or per-axis) scale and zero point."""

    values: np.ndarray  # integer values as stored (int8 / uint8 / int32)
    scale: np.ndarray  # float64, scalar or (len of axis,)
    zero_point: np.ndarray  # int64, same shape as scale
    axis: int

    def real(self) -> np.ndarray:
        """The dequantized float32 array."""
        return self._broadcast(lambda s, z: (self.values.astype(np.float64) - z) * s).astype(np.float32)

    def _broadcast(self, fn):
        shape = [1] * self.values.ndim
        if self.scale.size > 1:
            shape[self.axis] = self.scale.size
        return fn(self.scale.reshape(shape), self.zero_point.reshape(shape))


@dataclass
class TensorTable:
    """Aliases, constants, quantized constants and activation quantizations by tensor name."""

    constants: dict[str, np.ndarray] = field(default_factory=dict)
    quantized_constants: dict[str, QuantizedConstant] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    flattened: set[str] = field(default_factory=set)
    quant: dict[str, TensorQuant] = field(default_factory=dict)

    @classmethod
    def from_graph(cls, graph: onnx.GraphProto) -> "TensorTable":
        table = cls()
        for init in graph.initializer:
            unloaded = external_data_helper.uses_external_data(init)
            table.constants[init.name] = shape_only(init) if unloaded else numpy_helper.to_array(init)
        for node in graph.node:
            if node.op_type == "Constant":
                attr = next((a for a in node.attribute if a.name == "value"), None)
                if attr is not None:
                    table.constants[node.output[0]] = numpy_helper.to_array(attr.t)
        return table

    def canonical(self, name: str) -> str:
        while name in self.aliases:
            name = self.aliases[name]
        return name

    def is_flattened(self, name: str) -> bool:
        """Whether a Flatten/Reshape lies on the alias chain from `name` to its canonical tensor."""
        while True:
            if name in self.flattened:
                return True
            if name not in self.aliases:
                return False
            name = self.aliases[name]

    def is_constant(self, name: str) -> bool:
        name = self.canonical(name)
        return name in self.constants or name in self.quantized_constants

    def constant_real(self, name: str) -> np.ndarray:
        """A float constant, dequantizing a quantized one."""
        name = self.canonical(name)
        if name in self.quantized_constants:
            return self.quantized_constants[name].real()
        return self.constants[name]

    def set_quant(self, name: str, scale: np.ndarray, zero_point: np.ndarray, where: str) -> None:
        """Attach activation quantization to a tensor; conflicting parameters are an error."""
        if np.size(scale) != 1 or np.size(zero_point) != 1:
            raise QuantizationError(f"{where}: activations must be quantized per tensor (got {np.size(scale)} scales)")
        zp = int(np.asarray(zero_point).reshape(-1)[0])
        if np.asarray(zero_point).dtype == np.uint8:
            zp -= UINT8_OFFSET
        new = TensorQuant(scale=float(np.asarray(scale).reshape(-1)[0]), zero_point=zp)
        if new.scale <= 0:
            raise QuantizationError(f"{where}: scale {new.scale} must be positive")
        name = self.canonical(name)
        old = self.quant.get(name)
        if old is not None and (old.zero_point != new.zero_point or not np.isclose(old.scale, new.scale, rtol=1e-6)):
            raise QuantizationError(f"{where}: tensor {name!r} is quantized twice with different parameters ({old} vs {new})")
        self.quant[name] = new


def quantized_constant(values: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, axis: int) -> QuantizedConstant:
    """Build a QuantizedConstant, normalising a negative axis and a missing zero point."""
    scale = np.asarray(scale, dtype=np.float64)
    zp = np.zeros(scale.shape, dtype=np.int64) if zero_point is None else np.asarray(zero_point).astype(np.int64)
    return QuantizedConstant(values=values, scale=scale, zero_point=zp, axis=axis % max(values.ndim, 1))


def int8_weights(constant: QuantizedConstant, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights and per-output-channel scales (axis 0) from a quantized constant."""
    values = constant.values.astype(np.int64) - constant.zero_point.reshape([-1 if constant.scale.size > 1 and i == constant.axis else 1 for i in range(constant.values.ndim)])
    if constant.scale.size > 1 and constant.axis != 0:
        raise QuantizationError(f"{where}: weights must be quantized per output channel (axis 0), got axis {constant.axis}")
    if values.min(initial=0) < -128 or values.max(initial=0) > 127:
        raise QuantizationError(f"{where}: weights are not symmetric int8 (zero point must be 0)")
    channels = values.shape[0]
    scales = np.broadcast_to(constant.scale.reshape(-1), (channels,)) if constant.scale.size == 1 else constant.scale
    return values.astype(np.int8), np.asarray(scales, dtype=np.float64).copy()
