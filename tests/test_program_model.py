"""The program timing model (`planner.program_model`) against the RTL in the Amaranth simulator:
DRAM bytes equal, cycles within 5%, on the digits CNN's layers and on random conv layers, with
separate load and store DMAs and with a shared one (`icebreaker`, and the default with
`template.dma: shared`)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hwgen.config import config_from_dict, load_config
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.ir import single_layer_network
from planner.pipeline import plan_and_compile
from planner.program_model import predict
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_quantized
from sim.rtl_sim import run_rtl
from test_rtl_property import SMALL, conv_network
from hw_configs import any_config, data_config, one_memory

TOLERANCE = 0.05


@pytest.fixture(scope="module")
def digits():
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    return net, net.input_quant.quantize(load_digits_split()[2][5])


def check_against_rtl(net, config, x) -> None:
    flow = plan_and_compile(net, config)
    run = run_rtl(flow.compiled, x)
    for name in net.outputs:
        assert np.array_equal(run.outputs[name], run_quantized(net, x)[name])
    assert flow.prediction.dram_bytes == run.traffic.bytes_read + run.traffic.bytes_written
    assert flow.prediction.bytes_written == run.traffic.bytes_written
    assert abs(flow.prediction.cycles / run.cycles - 1) <= TOLERANCE, (flow.prediction.cycles, run.cycles)


@pytest.mark.slow
@pytest.mark.parametrize("config_name, layer", [
    ("default", "conv1"), ("default", "conv2"), ("default", "conv3"), ("default", "pool"), ("default", "fc"),
    ("ice40up5k", "conv1"), ("ice40up5k", "fc"),
])
def test_prediction_matches_rtl_on_digits_layers(digits, config_name, layer):
    net, x = digits
    layer_net = single_layer_network(net, layer)
    check_against_rtl(layer_net, any_config(config_name), run_quantized(net, x)[layer_net.input_name])


@pytest.mark.slow
def test_prediction_matches_rtl_on_the_compact_icebreaker(digits):
    """The whole digits CNN on the `icebreaker` configuration (the compact template: program
    and descriptors in an SPRAM read 16 bits per cycle, no registers, narrowed queues, segment
    queues in flip-flops, merged banks, one shared serial post-processing lane, compiler pointer
    steps, no vector unit, the max pool fused): bit-exact, DRAM bytes equal, cycles within 5%. The
    simulation's memory is one memory of the configuration's `dram` figures, so the prediction
    leaves out the flash's (`tests/test_icebreaker_flash.py` runs the two memories)."""
    net, x = digits
    check_against_rtl(net, one_memory(load_config("icebreaker")), x)


@pytest.mark.slow
@pytest.mark.parametrize("layer", ["conv2", "pool"])
def test_prediction_matches_rtl_with_a_shared_dma_and_a_program_rom(digits, layer):
    """`template.dma: shared` on the test-only 8x4x4 configuration (16-bit bus, 32-byte
    accumulator words, descriptors in ROMs, one per unit): bit-exact, DRAM bytes equal, cycles
    within 5%."""
    net, x = digits
    data = data_config("ecp5-85f").to_dict()
    data["template"] = {"dma": "shared", "dram_address_bits": 16}
    layer_net = single_layer_network(net, layer)
    check_against_rtl(layer_net, config_from_dict(data), run_quantized(net, x)[layer_net.input_name])


@pytest.mark.slow
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_prediction_matches_rtl_on_random_conv_layers(data):
    from test_rtl_property import conv_layers

    net, x = conv_network(data.draw(conv_layers()))
    check_against_rtl(net, SMALL, x)


def test_prediction_counts_the_isa_simulators_traffic(digits):
    """The whole network: bytes equal the byte-level reference (the ISA simulator's DMA model)."""
    from compile_helpers import run_isa

    net, x = digits
    config = load_config("setup_a")
    flow = plan_and_compile(net, config)
    _, isa = run_isa(flow.compiled, x)
    prediction = predict(flow.compiled.program, config)
    assert (prediction.bytes_read, prediction.bytes_written) == (isa.stats.traffic.bytes_read,
                                                                  isa.stats.traffic.bytes_written)
    busy = prediction.busy
    assert prediction.cycles >= max(busy.values())
    assert prediction.timeline and all(end >= start for _, _, start, end in prediction.timeline)


def test_a_slower_memory_never_predicts_fewer_cycles(digits):
    """The same program at decreasing bandwidths predicts non-decreasing cycles; in particular
    no bandwidth leaves the replay waiting for a moment that rounding put a hair in the past
    (0.2462 byte/cycle did: 'the program blocks forever')."""
    net, _ = digits
    base = load_config("icebreaker").to_dict()
    compiled = plan_and_compile(net, load_config("icebreaker")).compiled
    cycles = []
    for bandwidth in (0.25, 0.2463, 0.2462, 0.2421):
        config = config_from_dict({**base, "dram": {**base["dram"], "bandwidth_bytes_per_cycle": bandwidth}})
        cycles.append(predict(compiled.program, config, compiled.memory.constant_bytes).cycles)
    assert cycles == sorted(cycles), cycles
