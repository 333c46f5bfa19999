"""The generated accelerator runs whole networks in the Amaranth simulator, bit-exact to the
golden model and to the ISA simulator's DRAM traffic."""
from __future__ import annotations

import numpy as np
import pytest

from compile_helpers import run_isa
from hwgen.config import config_from_dict
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_quantized
from sim.rtl_sim import PROGRESS_EVERY, run_rtl
from hw_configs import data_config


@pytest.mark.parametrize("spram", [(), ("input", "weight")], ids=["block-ram", "single-port-spram"])
def test_digits_cnn_runs_bit_exact_on_the_rtl(spram):
    """Also with the input and weight banks single-ported (SPRAM-style): the engines and DMAs
    never read and write one bank in the same cycle."""
    data = data_config("ecp5-85f").to_dict()
    data["buffers"]["spram"] = list(spram)
    config = config_from_dict(data)
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    flow = plan_and_compile(net, config)
    x = net.input_quant.quantize(load_digits_split()[2][3])
    reported = []
    run = run_rtl(flow.compiled, x, stall=0.1, seed=1, progress=reported.append)
    golden = run_quantized(net, x)
    # progress every PROGRESS_EVERY cycles of the testbench's count, which ends at `done`
    assert reported == list(range(PROGRESS_EVERY, len(reported) * PROGRESS_EVERY + 1, PROGRESS_EVERY))
    assert 0 <= run.cycles - reported[-1] < 2 * PROGRESS_EVERY
    for name in net.outputs:
        assert np.array_equal(run.outputs[name], golden[name])
    _, isa = run_isa(flow.compiled, x)
    assert run.traffic.bytes_written == isa.stats.traffic.bytes_written
    assert run.traffic.bytes_read == isa.stats.traffic.bytes_read
    assert run.cycles > 0 and run.counters["compute"]["active"] > 0
