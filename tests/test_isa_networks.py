"""The instruction-level simulator on whole reference networks (random weights) is bit-exact
to the golden model, with the planner's schedules."""
from __future__ import annotations

import numpy as np
import pytest

from hwgen.config import load_config
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo import builtin_calibration, resolve_model
from sim.engines import ENGINES
from sim.golden import run_quantized


@pytest.mark.slow
@pytest.mark.parametrize("model", ["resnet18", "mobilenetv2"])
def test_reference_network_bit_exact_on_the_isa_simulator(model):
    float_net = load_network(resolve_model(model))
    net = quantize_network(float_net, builtin_calibration(model, float_net.input_shape)[:1])
    flow = plan_and_compile(net, load_config("default"))
    x = net.input_quant.quantize(np.random.default_rng(3).standard_normal(net.input_shape).astype(np.float32))
    run = ENGINES["isa"].run(net, flow.compiled, x)
    golden = run_quantized(net, x)
    for name in net.outputs:
        assert np.array_equal(run.outputs[name], golden[name])
