"""A small network on the accelerator with DDR3 main memory (`boards.ddr3.simulation`): the
tiny network of `tests/soc_helpers.py` (16-bit memory port) through `Ddr3MainMemory` on the
native-port model (`sim.litedram_native`, LiteDRAM's shortest native latencies as
`bench/ddr3_litedram_sim.py` measures them: read data 16 cycles, write data 6 cycles after the
command); outputs equal the golden model's and the DRAM bytes the instruction-level
simulator's. The whole digits CNN, and on LiteDRAM itself, is `bench/ddr3_litedram_sim.py`."""
from __future__ import annotations

import numpy as np

from boards.ddr3.simulation import run_on_native_port
from compile_helpers import run_isa
from ddr3_helpers import STAND_IN
from sim.golden import run_quantized
from soc_helpers import TINY_16, tiny_compiled, tiny_input, tiny_network



def test_tiny_network_runs_bit_exact_on_ddr3_main_memory():
    compiled, x = tiny_compiled(TINY_16), tiny_input(0)
    native = run_on_native_port(compiled, x, STAND_IN, ready=0.8, read_latency=15, write_latency=5,
                                max_cycles=50_000)
    golden = run_quantized(tiny_network(), x)
    for name in compiled.network.outputs:
        assert np.array_equal(native.run.outputs[name], golden[name])
    _, isa = run_isa(compiled, x)
    traffic = native.run.traffic
    assert (traffic.bytes_read, traffic.bytes_written) == (isa.stats.traffic.bytes_read, isa.stats.traffic.bytes_written)
    assert any(write for _, write, *_ in native.commands) and any(not write for _, write, *_ in native.commands)
