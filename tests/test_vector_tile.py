"""The vector layers' tiling: the largest tile that fits, against a scan of every candidate."""
import numpy as np
import pytest

from common.errors import PlanningError
from hwgen.isa import Opcode, field_limit
from hwgen.layout import bank_bytes, param_bank_channels
from planner.compile.memory_map import align
from planner.compile.vector import vector_tile, vector_window
from planner.ir import Layer, Op, conv_output_size
from hw_configs import any_config


def scanned(layer: Layer, config, operands: int) -> tuple[int, int] | None:
    """The first (channel groups, output rows) that fits, groups then rows from the largest down."""
    simd, (channels, out_h, out_w) = config.pe.simd, layer.out_shape
    total = -(-channels // simd)
    for groups in sorted({min(total, g) for g in (total, *(2**k for k in range(12)))}, reverse=True):
        if groups * simd > param_bank_channels(config) or groups > field_limit(Opcode.VEC, "channel_groups"):
            continue
        for rows in range(min(out_h, field_limit(Opcode.VEC, "out_rows")), 0, -1):
            window = vector_window(layer, config, rows)
            plane = groups * window.in_rows * window.stride * window.row_pitch * simd
            if (window.in_rows <= field_limit(Opcode.CONVCFG, "in_rows")
                    and window.row_pitch <= field_limit(Opcode.CONVCFG, "in_row_pitch")
                    and operands * align(plane) <= bank_bytes(config, "input")
                    and rows * out_w * groups * simd <= bank_bytes(config, "acc")):
                return groups, rows
    return None


@pytest.mark.parametrize("config_name", ["ice40up5k", "setup_a", "icebreaker"])
def test_vector_tile_is_the_first_candidate_that_fits(config_name):
    """Random pools and adds, and a pool whose three input rows are too wide for the input bank (refused)."""
    config = any_config(config_name)
    rng = np.random.default_rng(3)
    layers = []
    for _ in range(60):
        op = Op.MAXPOOL if rng.integers(2) else Op.ADD
        channels, size = int(rng.integers(1, 600)), int(rng.integers(1, 120))
        kernel, stride = (int(rng.integers(1, 4)), int(rng.integers(1, 3))) if op == Op.MAXPOOL else (1, 1)
        out = conv_output_size(size, kernel, stride, 0, 0)
        if out >= 1:
            layers.append((op, channels, size, out, kernel, stride))
    layers.append((Op.MAXPOOL, 8, 4000, 3998, 3, 1))
    refused = 0
    for op, channels, size, out, kernel, stride in layers:
        operands = 2 if op == Op.ADD else 1
        layer = Layer("v", op, ("x",) * operands, "y", ((channels, size, size),) * operands, (channels, out, out),
                      (kernel, kernel), (stride, stride))
        expected = scanned(layer, config, operands)
        refused += expected is None
        if expected is None:
            with pytest.raises(PlanningError, match="does not fit"):
                vector_tile(layer, config, operands)
        else:
            assert vector_tile(layer, config, operands) == expected
    assert refused == 1
