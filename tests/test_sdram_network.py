"""The accelerator runs the digits CNN with SDRAM main memory (`boards.sdram.simulation`):
every command the controller sends is checked by the chip's datasheet model, the outputs equal
the golden model's, the DRAM bytes the instruction-level simulator's, and the cycles the
program model's prediction within 2% when the configuration's `dram` figures are the
controller's (`SDRAM_DRAM`)."""
from __future__ import annotations

import numpy as np

from boards.sdram.simulation import run_on_sdram
from compile_helpers import run_isa
from hwgen.config import config_from_dict, load_config
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network

# the controller at 75 MHz as measured against the chip model (`python bench/sdram_bandwidth.py`):
# 1.655 bytes per cycle with reads and writes streaming at once, 7 cycles from a read request to
# its first beat on an open row, the accelerator's 8-beat bursts
SDRAM_DRAM = {"bus_width_bits": 16, "bandwidth_bytes_per_cycle": 1.655, "latency_cycles": 7, "burst_beats": 8}


def test_digits_cnn_runs_bit_exact_on_sdram_main_memory():
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    config = config_from_dict({**load_config("ulx3s-85f").to_dict(), "name": "ulx3s-85f-sdram", "dram": SDRAM_DRAM})
    compilation = plan_and_compile(net, config)
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
