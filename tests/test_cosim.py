"""Co-simulation of the emitted Verilog (cocotb): the digits CNN gives the golden outputs and
exactly the Amaranth simulation's cycles, traffic and counters, with the same seeded stalls."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from hwgen.config import config_from_dict, load_config
from planner.calibrate import quantize_network
from planner.frontend import load_network
from planner.pipeline import run_flow
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.cosim import run_cosim
from sim.golden import run_quantized
from sim.rtl_sim import run_rtl

STALL, SEED = 0.1, 1


@pytest.fixture(scope="module")
def digits() -> SimpleNamespace:
    """The digits CNN compiled for a small array (4x2 PEs, 2 lanes, 4 KB buffers) and one input."""
    data = load_config("ecp5-85f").to_dict()
    data["pe"] = {"rows": 4, "cols": 2, "simd": 2}
    data["buffers"].update(input_bytes=4096, weight_bytes=4096, output_bytes=4096)
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    compiled = run_flow(net, config_from_dict(data)).compiled
    x = net.input_quant.quantize(load_digits_split()[2][3])
    golden = run_quantized(net, x)
    return SimpleNamespace(compiled=compiled, x=x, golden={name: golden[name] for name in net.outputs})


@pytest.fixture(scope="module")
def amaranth_run(digits):
    return run_rtl(digits.compiled, digits.x, stall=STALL, seed=SEED)


@pytest.mark.slow
def test_icarus_matches_golden_and_amaranth_cycle_for_cycle(digits, amaranth_run):
    """Verilator is not tested: cocotb 2 needs Verilator >= 5.036 and Debian ships 5.006
    (`sim.cosim.runner.unsupported` says so when asked to use it)."""
    run = run_cosim(digits.compiled, digits.x, "icarus", stall=STALL, seed=SEED)
    for name, expected in digits.golden.items():
        assert np.array_equal(run.outputs[name], expected)
        assert np.array_equal(run.outputs[name], amaranth_run.outputs[name])
    assert run.cycles == run.testbench_cycles == amaranth_run.cycles
    assert run.traffic == amaranth_run.traffic
    assert run.counters == amaranth_run.counters
    assert run.waves is None


@pytest.mark.slow
def test_cosim_writes_a_vcd_on_request(digits, tmp_path):
    waves = tmp_path / "digits.vcd"
    run = run_cosim(digits.compiled, digits.x, "icarus", waves=str(waves))
    assert run.waves == waves
    with waves.open() as vcd:
        header = vcd.read(1 << 20)
    assert "$enddefinitions" in header and "port__rd_req__valid" in header
    for name, expected in digits.golden.items():
        assert np.array_equal(run.outputs[name], expected)
