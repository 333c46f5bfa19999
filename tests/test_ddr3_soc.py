"""The OrangeCrab SoC with DDR3 main memory through Amaranth's build plan (elaborated, no tools
run, no LiteDRAM needed: a stand-in for the generated core, with the real core's register map):
the core instantiated on the board's `ddram` pins at the board maker's sites, the DDR clocking
network, the pseudo power pins driven. The generated core itself is `boards.ddr3.litedram`
(`bench/ddr3_core_resources.py`, `bench/ddr3_litedram_sim.py`)."""
from __future__ import annotations

import re

from boards.build import BoardTop, memory_bytes
from boards.ddr3.litedram import MODULE_NAME
from boards.platforms import board
from boards.soc import SocCore
from ddr3_helpers import STAND_IN
from soc_helpers import TINY_16, tiny_compiled



def test_orangecrab_soc_prepares_with_litedram_on_the_ddram_pins():
    chosen = board("orangecrab")
    compiled = tiny_compiled(TINY_16)
    soc = SocCore(TINY_16, compiled, memory_bytes(chosen, compiled.memory.size, TINY_16), 48_000_000, chosen.baud,
                  ddr3=STAND_IN)
    assert soc.info.memory_bytes == 128 << 20
    plan = chosen.create_platform().prepare(BoardTop(chosen, soc, 48, 48))
    rtlil, lpf = plan.files["top.il"], plan.files["top.lpf"]
    assert plan.files[f"{MODULE_NAME}.v"] == STAND_IN.verilog
    for cell in (MODULE_NAME, "EHXPLLL", "ECLKBRIDGECS", "ECLKSYNCB", "CLKDIVF"):
        assert len(re.findall(rf"cell \\{cell} ", rtlil)) == 1, cell
    for port, site in (("ba", "D6"), ("clk_p", "J18"), ("dqs_p", "B15"), ("dq", "C17"), ("reset_n", "L18")):
        indexed = "" if port in ("clk_p", "reset_n") else "[0]"
        assert f'LOCATE COMP "ddram_0__{port}__io{indexed}" SITE "{site}";' in lpf
    assert re.search(r'IOBUF PORT "ddram_0__clk_p__io" .*IO_TYPE=SSTL135D_I', lpf)
    assert 'LOCATE COMP "ddr3_pseudo_power_0__vcc_virtual__io[0]" SITE "K16";' in lpf
