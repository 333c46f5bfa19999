"""Compiler + instruction-level simulator against the golden model: bit-exact on every layer
type, for random legal schedules (tile sizes, loop orders, spills) and several configurations."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from compile_helpers import compile_and_run, random_schedules, run_isa
from hwgen.config import config_from_dict
from onnx_factory import pattern_models
from sim.golden.calibration import quantize_network
from planner.compile.network import compile_network
from common.errors import PlanningError
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_quantized
from hw_configs import data_config

SMALL = config_from_dict({
    "name": "small", "clock_mhz": 50, "pe": {"rows": 2, "cols": 2, "simd": 2},
    "widths": {"activation": 8, "weight": 8, "accumulator": 32},
    "buffers": {"input_bytes": 4096, "weight_bytes": 4096, "output_bytes": 4096},
    "dram": {"bus_width_bits": 16, "bandwidth_bytes_per_cycle": 2, "latency_cycles": 4, "burst_beats": 4},
})
CONFIGS = {"ecp5-85f": data_config("ecp5-85f"), "small": SMALL}
PATTERNS = pattern_models()


def check(net, config, x, seed):
    schedules = random_schedules(net, config, np.random.default_rng(seed))
    outputs, _ = compile_and_run(net, schedules, config, net.input_quant.quantize(x))
    golden = run_quantized(net, net.input_quant.quantize(x))
    for name in net.outputs:
        assert np.array_equal(outputs[name], golden[name]), (name, schedules)


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
@pytest.mark.parametrize("seed", range(3))
def test_digits_cnn_bit_exact(config_name, seed):
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    check(net, CONFIGS[config_name], load_digits_split()[2][seed], seed)


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_layer_type_bit_exact(name, config_name):
    float_net = load_network(PATTERNS[name])
    rng = np.random.default_rng(7)
    net = quantize_network(float_net, rng.standard_normal((8, *float_net.input_shape)).astype(np.float32))
    for seed in range(2):
        check(net, CONFIGS[config_name], rng.standard_normal(float_net.input_shape).astype(np.float32), seed)


@pytest.mark.parametrize("name, layer, op", [("residual_add", "add8", "add"), ("concat", "concat9", "copy")])
def test_left_out_vector_op_is_one_clear_error(name, layer, op):
    """A vector unit with MAX alone cannot run ADD or CONCAT (COPY): the compiler names the
    layer, the operation and the option (an average pool runs as a depthwise convolution,
    planner.split)."""
    float_net = load_network(PATTERNS[name])
    net = quantize_network(float_net, np.random.default_rng(7).standard_normal((8, *float_net.input_shape)).astype(np.float32))
    config = replace(SMALL, template=replace(SMALL.template, vector_ops=("max",)))
    with pytest.raises(PlanningError, match=rf"layer '{layer}' \(\w+\) needs the vector operation {op}, which "
                                            rf"configuration 'small' leaves out \(template\.vector_ops: \[max\]\); "
                                            rf"add {op} to template\.vector_ops"):
        compile_network(net, random_schedules(net, config, np.random.default_rng(0)), config)


def test_global_average_pool_without_sum_runs_on_the_conv_engine():
    """Without SUM a global average pool is a fully connected layer over the flattened map
    (planner.split): planned, compiled and bit-exact."""
    float_net = load_network(PATTERNS["gap_fc"])
    rng = np.random.default_rng(7)
    net = quantize_network(float_net, rng.standard_normal((8, *float_net.input_shape)).astype(np.float32))
    config = replace(SMALL, template=replace(SMALL.template, vector_ops=("max",)))
    x = net.input_quant.quantize(rng.standard_normal(float_net.input_shape).astype(np.float32))
    outputs, _ = run_isa(plan_and_compile(net, config).compiled, x)
    assert np.array_equal(outputs[net.outputs[0]], run_quantized(net, x)[net.outputs[0]])


def test_pools_with_the_ops_they_need_stay_bit_exact():
    """MAX and SUM alone are enough for the pools pattern."""
    float_net = load_network(PATTERNS["pools"])
    rng = np.random.default_rng(7)
    net = quantize_network(float_net, rng.standard_normal((8, *float_net.input_shape)).astype(np.float32))
    config = replace(SMALL, template=replace(SMALL.template, vector_ops=("max", "sum")))
    check(net, config, rng.standard_normal(float_net.input_shape).astype(np.float32), 0)


@pytest.mark.parametrize("shift", [14, 31])
def test_shift_beyond_the_serial_lane_is_one_clear_error(shift):
    """The serial requantizer implements shifts 15..30: a layer with a nonzero multiplier
    shifted further is refused by name; a zero multiplier's shift, and the parallel lanes, are
    not restricted."""
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    layer = net.layers[1]
    multiplier, shifts = layer.quant.multiplier.copy(), layer.quant.shift.copy()
    shifts[0], multiplier[1], shifts[1] = shift, 0, 0
    layers = list(net.layers)
    layers[1] = replace(layer, quant=replace(layer.quant, multiplier=multiplier, shift=shifts))
    net = replace(net, layers=tuple(layers))
    serial = replace(SMALL, template=replace(SMALL.template, postprocess="serial"))
    with pytest.raises(PlanningError, match=rf"layer '{layer.name}': requantization shifts \[{shift}\] .* configuration "
                                            r"'small' \(template\.postprocess: serial\) implements shifts 15\.\.30"):
        compile_network(net, random_schedules(net, serial, np.random.default_rng(0)), serial)
    compile_network(net, random_schedules(net, SMALL, np.random.default_rng(0)), SMALL)


def test_unnormalized_multiplier_on_a_normalized_lane_is_one_clear_error():
    """A serial requantizer whose vector unit has neither ADD nor COPY multiplies only
    normalized multipliers (0 or 2**15..2**16 - 1): a layer with a smaller nonzero one is
    refused by name; with ADD and COPY (multiplier 1) the lane takes it."""
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    layer = net.layers[1]
    multiplier, shifts = layer.quant.multiplier.copy(), layer.quant.shift.copy()
    multiplier[0], shifts[0], multiplier[1] = 2**14, 20, 0
    layers = list(net.layers)
    layers[1] = replace(layer, quant=replace(layer.quant, multiplier=multiplier, shift=shifts))
    net = replace(net, layers=tuple(layers))
    serial = replace(SMALL, template=replace(SMALL.template, postprocess="serial"))
    normalized = replace(serial, template=replace(serial.template, vector_ops=("max",)))
    with pytest.raises(PlanningError, match=rf"layer '{layer.name}': requantization multipliers \[16384\]; .* "
                                            r"configuration 'small' \(template\.postprocess: serial\) takes 0 or "
                                            r"32768\.\.65535 \(its vector unit has none of add, copy"):
        compile_network(net, random_schedules(net, normalized, np.random.default_rng(0)), normalized)
    compile_network(net, random_schedules(net, serial, np.random.default_rng(0)), serial)
