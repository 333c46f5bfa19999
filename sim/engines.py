"""Execution engines for whole networks, by name (the `--engine` choices)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from planner.ir import Network
from sim.golden import run_quantized

Engine = Callable[[Network, np.ndarray], dict[str, np.ndarray]]
"""Runs an int8 `(C, H, W)` input through a quantized network; returns every output tensor."""


def _golden(net: Network, x: np.ndarray) -> dict[str, np.ndarray]:
    values = run_quantized(net, x)
    return {name: values[name] for name in net.outputs}


ENGINES: dict[str, Engine] = {"golden": _golden}
