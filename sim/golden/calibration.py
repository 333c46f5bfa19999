"""Post-training quantization with the golden float executor measuring the calibration ranges."""
from __future__ import annotations

import numpy as np

from planner.calibrate import quantize_from_samples
from planner.ir import Network
from sim.golden.executor import run_float


def quantize_network(net: Network, calibration: np.ndarray) -> Network:
    """The quantized network from calibration inputs `(N, C, H, W)` (`planner.calibrate`)."""
    return quantize_from_samples(net, calibration, run_float)
