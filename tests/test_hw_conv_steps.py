"""`hwgen.conv_steps.ConvSteps` against the products of the CONVCFG fields, computed here directly."""
from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from hwgen.config import Template
from hwgen.isa import Instruction, Opcode
from hwgen.conv_steps import ConvSteps, convcfg_steps
from hwgen.conv_step_fields import compiler_fields
from hwgen.timing import STEPS_LATENCY


@pytest.mark.parametrize("address_steps", ["hardware", "compiler"])
def test_steps_are_the_field_products_modulo_the_pixel_width(address_steps: str) -> None:
    """From the DSP multipliers, or from the compiler's step fields and shift-adds by the stride."""
    rng = np.random.default_rng(3)
    bits = 13
    configs = [dict(stride=int(rng.integers(1, 8)), in_rows=int(rng.integers(1, 1024)),
                    in_row_pitch=int(rng.integers(1, 4096))) for _ in range(20)]
    configs += [dict(stride=7, in_rows=1023, in_row_pitch=4095), dict(stride=1, in_rows=1, in_row_pitch=1)]
    template = Template(address_steps=address_steps)
    dut = ConvSteps(bits, from_fields=address_steps == "compiler")
    seen = []

    async def testbench(ctx):
        for fields in configs:
            ins = Instruction.make(Opcode.CONVCFG, in_zero_point=0, out_zero_point=0, act_min=-128, act_max=127,
                                   kernel_h=1, kernel_w=1, **fields, **compiler_fields(template, **fields))
            ctx.set(dut.convcfg.as_value(), ins.encode())
            for _ in range(STEPS_LATENCY):
                await ctx.tick()
            seen.append({name: ctx.get(getattr(dut.steps, name)) for name in ("row", "oh", "plane", "flat_plane")})

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    mod = 1 << bits
    for fields, steps in zip(configs, seen):
        s, rows, pitch = fields["stride"], fields["in_rows"], fields["in_row_pitch"]
        expected = {"row": s * pitch % mod, "oh": s * s * pitch % mod, "plane": rows * s * pitch % mod,
                    "flat_plane": rows * pitch % mod}
        assert steps == expected, fields
        assert convcfg_steps(fields, bits) == expected, fields
