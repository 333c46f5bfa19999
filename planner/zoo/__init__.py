"""Built-in models: the digits CNN (the default) and reference networks with published shapes.

A model argument on the command line is either a path to an ONNX file or one of
`BUILTIN_MODELS`.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

from planner.zoo.reference import REFERENCE_NETWORKS as REFERENCE_MODELS, build_reference

DEFAULT_MODEL = "digits"
BUILTIN_MODELS = (DEFAULT_MODEL, *REFERENCE_MODELS)
SYNTHETIC_CALIBRATION_SAMPLES = 4


def is_builtin(spec: str) -> bool:
    return spec in BUILTIN_MODELS and not Path(spec).exists()


def resolve_model(spec: str | Path | None, weights: bool = True) -> str | Path | onnx.ModelProto:
    """A path, or the ModelProto of a built-in model name (None means the default model); without
    `weights` a reference network's parameters are shapes alone (`build_reference`)."""
    spec = DEFAULT_MODEL if spec is None else spec
    if isinstance(spec, str) and is_builtin(spec):
        if spec == DEFAULT_MODEL:
            from planner.zoo.digits import DIGITS_MODEL_PATH

            return DIGITS_MODEL_PATH
        return build_reference(spec, weights=weights)
    return Path(spec)


def builtin_calibration(spec: str, input_shape: tuple[int, int, int]) -> np.ndarray | None:
    """Calibration inputs of a built-in model: real digits, or seeded N(0, 1) for reference nets."""
    if not (isinstance(spec, str) and is_builtin(spec)):
        return None
    if spec == DEFAULT_MODEL:
        from planner.zoo.digits import calibration_inputs

        return calibration_inputs()
    return synthetic_calibration(input_shape)


def synthetic_calibration(input_shape: tuple[int, int, int]) -> np.ndarray:
    """`SYNTHETIC_CALIBRATION_SAMPLES` seeded N(0, 1) inputs: ranges for figures, not for accuracy."""
    rng = np.random.default_rng(0)
    return rng.standard_normal((SYNTHETIC_CALIBRATION_SAMPLES, *input_shape)).astype(np.float32)
