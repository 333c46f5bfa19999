"""The accelerator runs the digits CNN with SDRAM main memory (`boards.sdram.simulation`):
every command the controller sends is checked by the chip's datasheet model, the outputs equal
the golden model's, the DRAM bytes the instruction-level simulator's, and the cycles the
program model's prediction within 2% with the shipped `ulx3s-85f` configuration, whose `dram`
figures are measured on the SDRAM (`bench/sdram_dram_figures.py`)."""
from __future__ import annotations

import numpy as np

from boards.sdram.simulation import run_on_sdram
from compile_helpers import run_isa
from hwgen.config import load_config
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network

def test_digits_cnn_runs_bit_exact_on_sdram_main_memory():
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    compilation = plan_and_compile(net, load_config("ulx3s-85f"))
    compiled = compilation.compiled
    x = net.input_quant.quantize(load_digits_split()[2][3])
    run = run_on_sdram(compiled, x)
    golden = run_quantized(net, x)
    for name in net.outputs:
        assert np.array_equal(run.outputs[name], golden[name])
    _, isa = run_isa(compiled, x)
    assert (run.traffic.bytes_read, run.traffic.bytes_written) == (isa.stats.traffic.bytes_read,
                                                                   isa.stats.traffic.bytes_written)
    assert abs(compilation.prediction.cycles - run.cycles) <= 0.02 * run.cycles
