"""Agreement of the golden int8 model with onnxruntime on models quantized by onnxruntime's
static quantizer (QDQ and QOperator): per model, over its layers (each on onnxruntime's int8
inputs) the largest |difference| in LSB and the lowest exactly-equal fraction, and the same
for the network output end to end.

Usage: python bench/bench_ort_agreement.py [--samples 20]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnxruntime.quantization import QuantFormat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from onnx_factory import pattern_models  # noqa: E402
from ort_quant import ort_quantize  # noqa: E402
from test_golden_vs_onnxruntime import compare  # noqa: E402

from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    print(f"{'model':<26}{'format':<11}{'layers: max LSB':>16}{'min exact':>11}{'output: max LSB':>17}{'exact':>9}")
    for fmt in (QuantFormat.QDQ, QuantFormat.QOperator):
        for name, model in sorted(pattern_models().items()):
            shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)[1:]
            quantized = ort_quantize(model, rng.standard_normal((16, *shape)).astype(np.float32), fmt)
            report(name, fmt, compare(quantized, rng.standard_normal((args.samples, *shape)).astype(np.float32)))
        quantized = ort_quantize(onnx.load(str(DIGITS_MODEL_PATH)), calibration_inputs(64), fmt)
        report("digits CNN", fmt, compare(quantized, load_digits_split()[2][: 10 * args.samples]))


def report(name: str, fmt: QuantFormat, comparison) -> None:
    per_layer, output = comparison
    worst = max(int(d.max()) for d in per_layer.values())
    exact = min(float(np.mean(d == 0)) for d in per_layer.values())
    print(f"{name:<26}{fmt.name:<11}{worst:>16}{exact:>11.2%}{int(output.max()):>17}{np.mean(output == 0):>9.2%}")


if __name__ == "__main__":
    main()
