"""Place-and-route smoke tests per family. ECP5: `hwgen synth` of a small accelerator on a bare
device, its report, and the proof that the shell keeps the whole accelerator (the placed design
has every cell a Yosys-only synthesis of the bare accelerator has). iCE40: the same flow on the
UP5K with its eight DSPs filled by registered multipliers (`hwgen.dsp`), to a bitstream, and a
ninth multiplier refused as not fitting. (No accelerator configuration fits the UP5K's 5280
logic cells yet: see docs/boards.md.)"""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import yaml
from amaranth.back.verilog import convert
from amaranth.hdl import Cat, Elaboratable, Module, Signal

from boards.devices import device
from boards.implement import FitError, implement
from boards.platforms import bare_platform
from boards.report import BuildReport, load_report, parse_reports
from boards.shell import LFSR_BITS
from boards.synth import default_program
from boards.yosys import cell_counts, family_sources, synth_script
from hwgen.accelerator import Accelerator
from cli.main import main
from hwgen.config import config_from_dict
from hwgen.dsp import RegisteredMultiplier

SMALL = {
    "name": "smoke", "device": "LFE5U-25F", "clock_mhz": 25, "pe": {"rows": 2, "cols": 2, "simd": 2},
    "widths": {"activation": 8, "weight": 8, "accumulator": 32},
    "buffers": {"input_bytes": 1024, "weight_bytes": 1024, "output_bytes": 1024},
    "dram": {"bus_width_bits": 16, "bandwidth_bytes_per_cycle": 2, "latency_cycles": 4, "burst_beats": 4},
}


class Part:
    """What the RTL reads of a platform: the part name."""

    def __init__(self, part: str):
        self.device = part


@pytest.fixture(scope="module")
def synth_run(tmp_path_factory) -> tuple[Path, BuildReport, str]:
    folder = tmp_path_factory.mktemp("synth")
    (folder / "smoke.yaml").write_text(yaml.safe_dump(SMALL))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["synth", "--device", "ecp5-25f", "--hw", str(folder / "smoke.yaml"), "--json",
                       "-o", str(folder / "out")])
    assert status == 0
    return folder / "out", BuildReport.from_json(out.getvalue()), out.getvalue()


@pytest.mark.slow
def test_ecp5_synth_reports_dsps_within_the_device_and_timing(synth_run):
    out, report, text = synth_run
    data = json.loads(text)
    assert {"device", "fmax_mhz", "target_mhz", "timing_met", "resources"} <= set(data)
    pe = SMALL["pe"]
    assert report.device == "ecp5-25f" and report.target_mhz == 25
    assert report.resources.dsp >= pe["rows"] * pe["cols"] * pe["simd"]  # one MULT18X18D per PE lane at least
    for name in ("lut", "ff", "dsp", "bram"):
        assert 0 < getattr(report.resources, name) <= getattr(device("ecp5-25f").totals, name)
    assert report.timing_met and min(report.fmax_mhz.values()) >= 25
    assert report.worst_path is not None and report.worst_path.delay_ns <= 1000 / 25
    assert load_report(out) == report
    assert (out / "build" / "top.report.json").is_file() and (out / "report.txt").is_file()


@pytest.mark.slow
def test_the_shell_keeps_every_cell_of_the_accelerator(synth_run, tmp_path):
    out, _, _ = synth_run
    config = config_from_dict(SMALL)
    verilog = convert(Accelerator(config, default_program(config)), name="top", platform=Part(SMALL["device"]))
    alone = cell_counts(synth_script("ecp5", "top", ["top.v"]), {"top.v": verilog, **family_sources("ecp5")}, "top")
    shell = json.loads((out / "build" / "top.stat.json").read_text())["design"]["num_cells_by_type"]
    for cell in ("MULT18X18D", "DP16KD", "TRELLIS_DPR16X4"):
        assert shell.get(cell, 0) == alone.get(cell, 0), cell
    # every flip-flop of the accelerator is kept, beside the shell's own (the LFSR among them)
    assert shell["TRELLIS_FF"] >= alone["TRELLIS_FF"] + LFSR_BITS
    # ABC maps the logic differently when inputs come from flip-flops instead of ports, so LUT4
    # counts agree only roughly: the flip-flops and hard blocks above are the proof
    assert shell["LUT4"] >= 0.9 * alone["LUT4"]


class Multipliers(Elaboratable):
    """`count` registered 8x8 multipliers fed from a shift register on the `din` pins, the XOR
    of their products on `dout`."""

    def __init__(self, count: int):
        self.count = count

    def elaborate(self, platform) -> Module:
        m = Module()
        din, dout = platform.request("din"), platform.request("dout")
        state = Signal(16)
        m.d.sync += state.eq(Cat(din.i, state[:-len(din.i)]))
        products = []
        for k in range(self.count):
            multiplier = m.submodules[f"multiplier{k}"] = RegisteredMultiplier(8, 8)
            m.d.comb += [multiplier.a.eq(state[k % 8:][:8]), multiplier.b.eq(state[(k + 3) % 8:][:8])]
            products.append(multiplier.p)
        m.d.sync += dout.o.eq(Cat(*products).xor())
        return m


@pytest.mark.slow
def test_ice40_flow_fills_the_up5k_dsps_and_writes_a_bitstream(tmp_path):
    up5k = device("ice40-up5k")
    products = implement(bare_platform(up5k, 20.0), Multipliers(up5k.totals.dsp), up5k, tmp_path)
    report = parse_reports(products.report, products.stat, up5k, 20.0, products.seconds)
    assert report.resources.dsp == 8 and report.timing_met
    assert 0 < report.resources.lut <= up5k.totals.lut
    bitstream = products.bitstream.read_bytes()
    assert bitstream[4:8] == bytes([0x7E, 0xAA, 0x99, 0x7E])  # the iCE40 synchronization word


@pytest.mark.slow
def test_a_design_larger_than_the_device_is_refused_naming_the_resource(tmp_path):
    up5k = device("ice40-up5k")
    with pytest.raises(FitError, match="does not fit ice40-up5k: needs 9/8 ICESTORM_DSP"):
        implement(bare_platform(up5k, 20.0), Multipliers(up5k.totals.dsp + 1), up5k, tmp_path)
