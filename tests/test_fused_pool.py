"""Max pools fused into the convolution's output path (`template.max_fused_pool`): the ISA
simulator and the RTL against the golden model of the unfused network, the planner's choice and
its exact DRAM bytes, and the refusals."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from common.errors import ConfigError, PlanningError
from compile_helpers import run_isa
from hwgen.config import AcceleratorConfig, VectorOp, config_from_dict, load_config
from hwgen.isa import Instruction, Opcode
from hwgen.program import Program
from hwgen.program_walk import ProgramError, check_program
from onnx_factory import GraphBuilder
from planner.compile.network import compile_network
from planner.frontend import load_network
from planner.fusion import fusable_pools
from planner.pipeline import plan_and_compile
from planner.plan import plan_network
from planner.schedule import Schedule
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network
from sim.rtl_sim import run_rtl
from hw_configs import one_memory

SMALL = config_from_dict({
    "name": "small-pool", "clock_mhz": 50, "pe": {"rows": 2, "cols": 4, "simd": 2},
    "widths": {"activation": 8, "weight": 8, "accumulator": 32},
    "buffers": {"input_bytes": 2048, "weight_bytes": 2048, "output_bytes": 2048},
    "dram": {"bus_width_bits": 16, "bandwidth_bytes_per_cycle": 2, "latency_cycles": 3, "burst_beats": 4},
    "template": {"max_fused_pool": 4},
})


def fusing(config: AcceleratorConfig, k: int = 2) -> AcceleratorConfig:
    return replace(config, template=replace(config.template, max_fused_pool=k))


def pooled_network(in_c: int, out_c: int, size: int, kernel: int, stride: int, pool: int, relu: bool, seed: int,
                   depthwise: bool = False):
    """A quantized conv (+ ReLU) + MaxPool pool x pool / pool network and an int8 input."""
    g = GraphBuilder((1, in_c, size, size), seed=seed)
    y = g.conv(g.input_name, in_c, out_c, k=kernel, stride=stride, pad=kernel // 2, groups=in_c if depthwise else 1)
    if relu:
        y = g.node("Relu", [y])
    y = g.node("MaxPool", [y], kernel_shape=[pool, pool], strides=[pool, pool])
    float_net = load_network(g.model(y))
    rng = np.random.default_rng(seed)
    net = quantize_network(float_net, rng.standard_normal((4, *float_net.input_shape)).astype(np.float32))
    return net, net.input_quant.quantize(rng.standard_normal(float_net.input_shape).astype(np.float32))


def fused_layers(flow) -> dict[str, int]:
    return {layer.name: layer.pool for layer in flow.plan.layers if layer.pool > 1}


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 5), st.integers(1, 7), st.integers(4, 11), st.integers(1, 3), st.integers(1, 2),
       st.sampled_from([2, 4]), st.booleans(), st.booleans(), st.integers(0, 2**16))
def test_isa_fused_equals_golden(in_c, out_c, size, kernel, stride, pool, relu, depthwise, seed):
    """Random conv (+ ReLU) + k x k / k max pools (odd maps: floor mode drops the last row and
    column) fused, on the ISA simulator: the golden model's output of the unfused network,
    and the planner's DRAM bytes those of the program."""
    assume((size + 2 * (kernel // 2) - kernel) // stride + 1 >= pool)
    net, x = pooled_network(in_c, in_c if depthwise else out_c, size, kernel, stride, pool, relu, seed, depthwise)
    flow = plan_and_compile(net, SMALL)
    assert fused_layers(flow) == {net.layers[0].name: pool}
    outputs, sim = run_isa(flow.compiled, x)
    golden = run_quantized(net, x)
    for name in net.outputs:
        assert np.array_equal(outputs[name], golden[name])
    assert flow.plan.dram_bytes == flow.prediction.dram_bytes == sim.stats.traffic.bytes_read + sim.stats.traffic.bytes_written


def test_digits_cnn_fused_on_icebreaker_isa():
    """The digits CNN on `icebreaker` with fused pools: conv3 takes its 2x2 max pool, bit-exact
    on the ISA simulator, fewer DRAM bytes (the pool's round trip) and fewer cycles than unfused."""
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    x = net.input_quant.quantize(load_digits_split()[2][3])
    shipped = load_config("icebreaker")  # no vector unit, pools fused: the unfused reference has MAX
    base = replace(shipped, template=replace(shipped.template, vector_ops=(VectorOp.MAX,), max_fused_pool=1))
    plain, fused = plan_and_compile(net, base), plan_and_compile(net, fusing(base))
    assert fused_layers(plain) == {} and fused_layers(fused) == {"conv3": 2}
    outputs, _ = run_isa(fused.compiled, x)
    assert all(np.array_equal(outputs[name], run_quantized(net, x)[name]) for name in net.outputs)
    # conv3 writes the 32x2x2 pooled map, not its 32x4x4 map; the pool's VEC reads neither that
    # map nor its 32 parameter records of 8 bytes, and writes no 32x2x2 map
    saved = (32 * 4 * 4 - 32 * 2 * 2) + (32 * 4 * 4 + 32 * 8) + 32 * 2 * 2
    assert plain.prediction.dram_bytes - fused.prediction.dram_bytes == saved
    assert fused.prediction.cycles < plain.prediction.cycles


def test_fusion_replaces_a_vector_unit_without_max():
    """With a vector unit that has no MAX (`template.vector_ops`), the digits CNN plans only with
    its pool fused: refused without `max_fused_pool`, fused (and then needing no VEC) with it."""
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    base = load_config("icebreaker")
    no_max = replace(base, template=replace(base.template, vector_ops=(VectorOp.SUM,), max_fused_pool=1))
    with pytest.raises(PlanningError, match="max"):
        plan_network(net, no_max)
    plan = plan_network(net, fusing(no_max))
    assert [(layer.name, layer.pool) for layer in plan.layers] == [("conv1", 1), ("conv2", 1), ("conv3", 2), ("fc", 1)]


@pytest.mark.parametrize("name", ["icebreaker", "default"])
def test_fused_pool_on_the_rtl(name):
    """conv + ReLU + 2x2 max pool on the generated accelerator (Amaranth simulation) with the
    pool fused: bit-exact to the golden model of the unfused network, DRAM bytes and cycles as
    the program model predicts them."""
    net, x = pooled_network(3, 4, 6, 3, 1, 2, True, seed=5)
    config = fusing(one_memory(load_config(name)))
    flow = plan_and_compile(net, config)
    assert fused_layers(flow) == {net.layers[0].name: 2}
    run = run_rtl(flow.compiled, x)
    golden = run_quantized(net, x)
    for output in net.outputs:
        assert np.array_equal(run.outputs[output], golden[output])
    assert run.traffic.bytes_read + run.traffic.bytes_written == flow.prediction.dram_bytes
    assert abs(run.cycles / flow.prediction.cycles - 1) <= 0.02, (run.cycles, flow.prediction.cycles)


def test_fusion_legality():
    """Fused only where the hardware computes the same: window == stride <= template.max_fused_pool,
    no other reader of the conv's output; a plan asking for another fusion is refused."""
    net, _ = pooled_network(2, 2, 8, 3, 1, 4, False, seed=1)
    conv = net.layers[0].name
    assert fusable_pools(net, SMALL) == {conv: 4}
    assert fusable_pools(net, fusing(SMALL, 2)) == {}
    assert fusable_pools(net, fusing(SMALL, 1)) == {}
    thirds, _ = pooled_network(2, 2, 9, 3, 1, 3, False, seed=1)  # 3 is no power of two
    assert fusable_pools(thirds, SMALL) == {}
    overlapping, _ = pooled_network(2, 2, 8, 3, 1, 2, False, seed=1)
    pool = overlapping.layers[1]
    assert fusable_pools(replace(overlapping, layers=(overlapping.layers[0], replace(pool, stride=(1, 1)))), SMALL) == {}
    read_twice = replace(net, outputs=(*net.outputs, net.layers[0].output))
    assert fusable_pools(read_twice, SMALL) == {}
    with pytest.raises(PlanningError, match=f"layer '{conv}': the plan fuses a 2x2 max pool"):
        compile_network(net, {conv: Schedule(2, 2, 8, 8, pool=2)}, SMALL)
    with pytest.raises(PlanningError, match="cut the fused 4x4 max pool's windows"):
        compile_network(net, {conv: Schedule(2, 2, 2, 8, pool=4)}, SMALL)


def test_refusals_in_configuration_and_program():
    """`template.max_fused_pool` beyond `pe.cols`, and a CONV pooling beyond the configuration or
    over partial windows or partial sums, are refused with the culprit named."""
    with pytest.raises(ConfigError, match="max_fused_pool"):
        config_from_dict({**SMALL.to_dict(), "template": {"max_fused_pool": 8}})
    conv = dict(oc_groups=1, out_rows=2, ow_groups=1, last_group_cols=4, ic_groups=1, requantize=1)
    cases = [(fusing(SMALL, 1), dict(pool=2), "template.max_fused_pool"), (SMALL, dict(pool=3), "a power of two"),
             (SMALL, dict(pool=4), "multiples of 4"), (SMALL, dict(pool=2, requantize=0), "whole reduction")]
    for config, fields, message in cases:
        program = Program([Instruction.make(Opcode.CONV, **{**conv, **fields}).encode(),
                           Instruction.make(Opcode.END).encode()], [])
        with pytest.raises(ProgramError, match=message):
            check_program(program, config)
