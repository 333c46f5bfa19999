"""Property test: random convolution layers (channels, size, kernel, stride, padding, groups)
planned, compiled and run on the RTL in the Amaranth simulator equal the golden model."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hwgen.config import config_from_dict
from onnx_factory import GraphBuilder
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from sim.golden import run_quantized
from sim.rtl_sim import run_rtl

SMALL = config_from_dict({
    "name": "small", "clock_mhz": 50, "pe": {"rows": 4, "cols": 2, "simd": 2},
    "widths": {"activation": 8, "weight": 8, "accumulator": 32},
    "buffers": {"input_bytes": 2048, "weight_bytes": 2048, "output_bytes": 2048},
    "dram": {"bus_width_bits": 16, "bandwidth_bytes_per_cycle": 2, "latency_cycles": 3, "burst_beats": 4},
})


@st.composite
def conv_layers(draw):
    depthwise = draw(st.booleans())
    in_c = draw(st.integers(1, 6))
    out_c = in_c if depthwise else draw(st.integers(1, 9))
    kernel = draw(st.integers(1, 3))
    stride = draw(st.integers(1, 2))
    pad = draw(st.integers(0, kernel - 1))
    size = draw(st.integers(max(kernel, 2), 7))
    return dict(in_c=in_c, out_c=out_c, kernel=kernel, stride=stride, pad=pad, size=size,
                groups=in_c if depthwise else 1, relu=draw(st.booleans()), seed=draw(st.integers(0, 2**16)))


def conv_network(spec: dict):
    """The quantized one-layer network of `spec` and an int8 input for it."""
    g = GraphBuilder((1, spec["in_c"], spec["size"], spec["size"]), seed=spec["seed"])
    y = g.conv(g.input_name, spec["in_c"], spec["out_c"], k=spec["kernel"], stride=spec["stride"],
               pad=spec["pad"], groups=spec["groups"])
    if spec["relu"]:
        y = g.node("Relu", [y])
    float_net = load_network(g.model(y))
    rng = np.random.default_rng(spec["seed"])
    net = quantize_network(float_net, rng.standard_normal((4, *float_net.input_shape)).astype(np.float32))
    return net, net.input_quant.quantize(rng.standard_normal(float_net.input_shape).astype(np.float32))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_layers())
def test_random_conv_layer_rtl_equals_golden(spec):
    """Under random memory stalls; the DRAM bytes still equal the program model's count."""
    net, x = conv_network(spec)
    flow = plan_and_compile(net, SMALL)
    run = run_rtl(flow.compiled, x, stall=0.2, seed=spec["seed"])
    golden = run_quantized(net, x)
    for name in net.outputs:
        assert np.array_equal(run.outputs[name], golden[name]), spec
    assert run.traffic.bytes_read + run.traffic.bytes_written == flow.prediction.dram_bytes, spec
