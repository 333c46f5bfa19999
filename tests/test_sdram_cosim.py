"""The accelerator with SDRAM main memory in Verilator (`boards.sdram.cosim`), the chip the Python
datasheet model: the digits CNN gives the golden outputs, the instruction-level simulator's DRAM
bytes and the program model's cycles within 2% (that they equal the Amaranth simulation's
cycles exactly is checked by `bench/sdram_cosim.py --compare-amaranth`, a minute more); a
controller breaking the model's timing raises `SdramViolation` from inside the testbench, and a
run past its cycle budget `SimulationTimeout`."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from boards.sdram.cosim import run_cosim_on_sdram
from compile_helpers import run_isa
from hwgen.config import load_config
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.cosim.simulators import unsupported
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network
from sim.rtl_sim import SimulationTimeout
from sim.sdram.chips import IS42S16160G_7, Timing
from sim.sdram.device import SdramViolation

pytestmark = pytest.mark.skipif(bool(unsupported("verilator")), reason=str(unsupported("verilator")))


@pytest.fixture(scope="module")
def digits() -> SimpleNamespace:
    """The digits CNN planned for the ULX3S-85F and a held-out digit."""
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    compilation = plan_and_compile(net, load_config("ulx3s-85f"))
    return SimpleNamespace(net=net, compilation=compilation, x=net.input_quant.quantize(load_digits_split()[2][3]))


def test_digits_cnn_runs_bit_exact_in_verilator_on_the_sdram_model(digits):
    compiled = digits.compilation.compiled
    progress = []
    run = run_cosim_on_sdram(compiled, digits.x, progress=lambda cycles, rate: progress.append((cycles, rate)),
                             progress_every=5000)
    golden = run_quantized(digits.net, digits.x)
    for name in digits.net.outputs:
        assert np.array_equal(run.outputs[name], golden[name])
    _, isa = run_isa(compiled, digits.x)
    assert (run.traffic.bytes_read, run.traffic.bytes_written) == (isa.stats.traffic.bytes_read,
                                                                   isa.stats.traffic.bytes_written)
    assert abs(digits.compilation.prediction.cycles - run.cycles) <= 0.02 * run.cycles
    assert [cycles for cycles, _ in progress] == list(range(5000, run.cycles, 5000))
    assert all(rate > 0 for _, rate in progress)


def test_a_controller_breaking_the_chip_timing_raises_sdram_violation(digits):
    """The controller is built for the board's chip; the model checks a chip with a longer tRCD."""
    slower = dataclasses.replace(IS42S16160G_7, t_rcd=Timing(30))
    with pytest.raises(SdramViolation, match="tRCD needs 3"):
        run_cosim_on_sdram(digits.compilation.compiled, digits.x, model_chip=slower, progress=None)


def test_a_run_without_done_in_the_cycle_budget_times_out(digits):
    with pytest.raises(SimulationTimeout, match="no `done` after 1000 cycles"):
        run_cosim_on_sdram(digits.compilation.compiled, digits.x, max_cycles=1000, progress=None)
