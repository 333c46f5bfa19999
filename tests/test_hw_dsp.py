"""The registered multiplier: behaviour in the Amaranth simulator, and the ECP5 primitive's
register settings after synthesis."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from amaranth.back.verilog import convert
from amaranth.sim import Simulator

from boards.yosys import run, synth_script
from hwgen.dsp import LATENCY, RegisteredMultiplier

A_BITS, B_BITS = 9, 8


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


def test_ecp5_registers_are_inside_the_dsp_after_synthesis():
    cell, registers = "MULT18X18D", {"REG_INPUTA_CLK": "CLK0", "REG_INPUTB_CLK": "CLK0", "REG_OUTPUT_CLK": "CLK0"}
    family = "ecp5"
    verilog = convert(RegisteredMultiplier(A_BITS, B_BITS), name="top", platform=Device("LFE5U-85F"))
    with tempfile.TemporaryDirectory() as workdir:
        run(f"{synth_script(family, 'top', ['top.v'])}; write_json netlist.json", {"top.v": verilog}, Path(workdir))
        netlist = json.loads((Path(workdir) / "netlist.json").read_text())
    cells = [c for c in netlist["modules"]["top"]["cells"].values()]
    dsps = [c for c in cells if c["type"] == cell]
    assert len(dsps) == 1
    assert not [c for c in cells if "FF" in c["type"] or c["type"].startswith("SB_DFF")]  # no fabric registers
    params = dsps[0]["parameters"]
    for name, value in registers.items():
        raw = params[name]
        assert raw.strip() == value, (name, raw)
