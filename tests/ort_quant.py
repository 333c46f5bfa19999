"""int8 models made by onnxruntime's static quantizer, for checking the golden model against ORT."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quant_pre_process, quantize_static


class _Reader(CalibrationDataReader):
    def __init__(self, input_name: str, samples: np.ndarray):
        self._items = iter([{input_name: s[None]} for s in samples])

    def get_next(self):
        return next(self._items, None)


def ort_quantize(model: onnx.ModelProto, samples: np.ndarray, quant_format: QuantFormat = QuantFormat.QDQ, reduce_range: bool = False) -> onnx.ModelProto:
    """int8 activations and per-channel int8 weights, as `quantize_static` writes them.

    `quant_pre_process` runs first, as onnxruntime recommends (it folds BatchNormalization).
    """
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, src)
        quant_pre_process(str(src), str(src), skip_symbolic_shape=True)
        quantize_static(
            str(src), str(dst), _Reader(model.graph.input[0].name, samples),
            quant_format=quant_format, per_channel=True,
            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, reduce_range=reduce_range,
        )
        return onnx.load(str(dst))


def ort_reference_session(model: onnx.ModelProto):
    """An onnxruntime session that executes the quantized graph as written (ONNX semantics).

    Graph optimizations are off: with them, onnxruntime fuses QDQ groups into x64 int8
    kernels whose u8s8 instructions can saturate intermediate sums (it warns about this),
    which would make the reference itself inexact.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options)
