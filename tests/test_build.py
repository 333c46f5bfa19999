"""`hwgen build`: the SoC for a board through Yosys, nextpnr and ecppack: bitstream and report,
the PLL making the configured clock from the board's, on-chip main memory sized to the device."""
from __future__ import annotations

import json

import pytest
import yaml
from amaranth.back.verilog import convert

from boards.build import SPRAM_BYTES, memory_bytes, on_chip_memory_bytes
from boards.devices import cell_resources
from boards.platforms import board
from boards.sdram.memory import SdramMainMemory
from boards.yosys import synthesize
from cli.main import main
from hwgen.config import load_config
from hwgen.memory_port import MemoryPort
from test_pnr_smoke import SMALL
from hw_configs import data_config

ECP5_BITSTREAM_PREAMBLE = bytes([0xFF, 0x00])  # a comment block, then the 0xBD B3 sync word
ECP5_SYNC_WORD = bytes([0xBD, 0xB3])


def test_main_memory_is_the_spram_on_the_up5k_and_sized_to_the_ecp5_device():
    assert memory_bytes(board("icebreaker"), 1000) == SPRAM_BYTES == 4 * 256 * 1024 // 8  # 4 x 256 Kbit
    # the icebreaker configuration's program memory takes one of the four SPRAMs
    assert memory_bytes(board("icebreaker"), 1000, load_config("icebreaker")) == 3 * 256 * 1024 // 8
    assert memory_bytes(board("icebreaker"), 1000, data_config("ice40up5k")) == SPRAM_BYTES
    # a quarter of the block RAM (56 / 32 DP16KD x 18 Kbit), rounded down to a power of two (on
    # the ULX3S and the OrangeCrab, main memory is the SDRAM or the DDR3: tests/test_sdram_soc.py,
    # tests/test_ddr3_memory.py; `--port sim` simulates this)
    assert on_chip_memory_bytes(board("orangecrab"), 1000) == 16384  # 56 * 2304 / 4 = 32256
    assert memory_bytes(board("orangecrab"), 1000) == 128 << 20  # the MT41K64M16
    assert memory_bytes(board("orangecrab"), 1000, load_config("icebreaker")) == 1 << 18  # 18-bit DRAM addresses
    assert on_chip_memory_bytes(board("ulx3s-25f"), 1000) == 16384
    assert on_chip_memory_bytes(board("ulx3s-12f"), 1000) == 16384  # 32 * 2304 / 4 = 18432
    assert on_chip_memory_bytes(board("ulx3s-12f"), 20000) == 32768  # the image needs more


@pytest.mark.slow
def test_ulx3s_build_writes_a_bitstream_and_a_report(tmp_path, capsys):
    config = {**SMALL, "name": "smoke-board", "clock_mhz": 30}  # the board clock is 25 MHz: a PLL
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "out"
    status = main(["build", "--board", "ulx3s-25f", "--hw", str(tmp_path / "smoke.yaml"), "--json", "-o", str(out)])
    printed = capsys.readouterr()
    report = json.loads(printed.out)
    assert status == 0
    stages = [line.split(": ", 1)[1].split(" (")[0] for line in printed.err.splitlines()
              if line.startswith("building the ulx3s-25f SoC: ")]
    assert stages[0] == "synthesis" and {"placement", "routing"} <= set(stages)  # the stages as they ran
    bitstream = (out / "ulx3s-25f.bit").read_bytes()
    assert bitstream.startswith(ECP5_BITSTREAM_PREAMBLE) and ECP5_SYNC_WORD in bitstream[:4096]
    assert b"LFE5U-25F" in bitstream[:64]  # ecppack names the part in the header comment
    assert report["board"] == "ulx3s-25f" and report["device"] == "ecp5-25f"
    assert report["target_mhz"] == pytest.approx(30.0)  # 25 MHz x 6 / 5
    assert report["utilization"]["EHXPLLL"][0] == 1
    assert report["timing_met"] and min(report["fmax_mhz"].values()) >= 30
    pe = SMALL["pe"]
    assert report["resources"]["dsp"] >= pe["rows"] * pe["cols"] * pe["simd"]
    for name, used in report["resources"].items():
        assert used <= report["totals"][name]
    # main memory is itemized: its cells as synthesized alone, less what the SoC's wiring lets
    # Yosys remove, within the whole design
    memory = report["blocks"]["main memory (IS42S16160G-7 controller)"]
    alone = cell_resources("ecp5", synthesize("ecp5", convert(SdramMainMemory(
        MemoryPort.from_config(load_config(str(tmp_path / "smoke.yaml")).dram), board("ulx3s-25f").sdram.bytes,
        board("ulx3s-25f").sdram, 30.0))))
    assert 0.9 * alone.ff <= memory["ff"] <= alone.ff and 0.8 * alone.lut <= memory["lut"] <= 1.1 * alone.lut
    assert memory["lut"] < report["resources"]["lut"] and memory["ff"] < report["resources"]["ff"]
