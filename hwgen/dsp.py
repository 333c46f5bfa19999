"""A signed multiplier with registered inputs and a registered product (latency 2).

On an ECP5 platform it is one MULT18X18D with both register stages inside it (input registers
and output register on CLK0), since Yosys does not pack registers into ECP5 DSPs itself.
Elsewhere it is register-multiply-register logic: on iCE40, `synth_ice40 -dsp` maps the
multiply to an SB_MAC16. An instantiated SB_MAC16 is not an option there: Yosys 0.70's
`ice40_dsp` rewrites the register settings of SB_MAC16 cells it finds (clearing A_REG, B_REG
and the pipeline registers), which would silently change the latency.
"""
from __future__ import annotations

from amaranth.hdl import Cat, ClockSignal, Instance, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

LATENCY = 2
WIDTHS = {"ecp5": 18}


def dsp_family(platform) -> str | None:
    """`ecp5` or None, from the platform's device name."""
    return "ecp5" if str(getattr(platform, "device", "")).upper().startswith("LFE5") else None


class RegisteredMultiplier(wiring.Component):
    """`p = a * b` (signed) `LATENCY` cycles after `a` and `b` are presented."""

    def __init__(self, a_width: int, b_width: int):
        self.a_width, self.b_width = a_width, b_width
        super().__init__({"a": In(signed(a_width)), "b": In(signed(b_width)), "p": Out(signed(a_width + b_width))})

    def elaborate(self, platform) -> Module:
        m = Module()
        family = dsp_family(platform)
        if family is not None and max(self.a_width, self.b_width) > WIDTHS[family]:
            family = None  # wider than one DSP: leave the mapping to synthesis
        if family == "ecp5":
            product = Signal(36)
            a, b = _extend(self.a, 18), _extend(self.b, 18)
            ports = {f"i_A{k}": a[k] for k in range(18)} | {f"i_B{k}": b[k] for k in range(18)}
            ports |= {f"i_C{k}": 0 for k in range(18)} | {f"o_P{k}": product[k] for k in range(36)}
            m.submodules.dsp = Instance(
                "MULT18X18D",
                p_REG_INPUTA_CLK="CLK0", p_REG_INPUTB_CLK="CLK0", p_REG_OUTPUT_CLK="CLK0",
                p_REG_PIPELINE_CLK="NONE", p_REG_INPUTC_CLK="NONE", p_GSR="DISABLED",
                i_SIGNEDA=1, i_SIGNEDB=1, i_SOURCEA=0, i_SOURCEB=0,
                i_CLK0=ClockSignal("sync"), i_CLK1=0, i_CLK2=0, i_CLK3=0,
                i_CE0=1, i_CE1=0, i_CE2=0, i_CE3=0, i_RST0=0, i_RST1=0, i_RST2=0, i_RST3=0,
                **ports,
            )
            m.d.comb += self.p.eq(product[:self.a_width + self.b_width])
        else:
            a, b = Signal.like(self.a, reset_less=True), Signal.like(self.b, reset_less=True)
            # The product register keeps a reset: without one, Yosys' ice40_dsp (0.70) takes a
            # neighbouring lane's product register as a DSP's C/D input register and drops that lane.
            p = Signal.like(self.p)
            m.d.sync += [a.eq(self.a), b.eq(self.b), p.eq(a * b)]
            m.d.comb += self.p.eq(p)
        return m


def _extend(value, width: int):
    """Sign-extend a signed value to `width` bits."""
    return Cat(value, value[-1].replicate(width - len(value)))
