"""One exception hierarchy for the whole tool.

Every error names the culprit (file, node, layer, field or value) and says what is allowed.
The command line prints the message and exits non-zero; nothing is written on error.
"""
from __future__ import annotations


class HwgenError(Exception):
    """Base class of every error the tool reports to a user."""


class ModelLoadError(HwgenError):
    """The ONNX file cannot be read or is malformed."""


class UnsupportedModelError(HwgenError):
    """The model uses an operator, attribute or structure the tool does not support."""


class ShapeError(HwgenError):
    """A tensor shape is unknown or inconsistent."""


class QuantizationError(HwgenError):
    """Quantization parameters are missing, inconsistent or out of range."""


class ConfigError(HwgenError):
    """A hardware configuration value is invalid."""


class PlanningError(HwgenError):
    """A layer cannot be planned under the given configuration."""


class InputError(HwgenError):
    """A user-supplied input array or file is unusable."""


class OutputError(HwgenError):
    """An output path cannot be written (a folder, under a file, no permission)."""
