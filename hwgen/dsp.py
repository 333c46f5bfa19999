"""A signed multiplier with registered inputs and a registered product (latency 2).

On an iCE40 or ECP5 platform it is one DSP primitive with both register stages inside it:
SB_MAC16 with A_REG, B_REG and PIPELINE_16x16_MULT_REG2; MULT18X18D with input and output
registers on CLK0 (Yosys packs no registers into ECP5 DSPs itself, and its iCE40 packing is
unreliable). On iCE40 the cell is emitted as HWGEN_SB_MAC16: Yosys' `ice40_dsp` re-derives the
register settings of every SB_MAC16 it meets (clearing ours), so the synthesis script
(`boards.yosys.synth_script`) keeps it a blackbox and renames it to SB_MAC16 afterwards.
Elsewhere (simulation, generic Verilog) it is register-multiply-register logic.
"""
from __future__ import annotations

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

LATENCY = 2
WIDTHS = {"ice40": 16, "ecp5": 18}
PRESERVED_SB_MAC16 = "HWGEN_SB_MAC16"


def dsp_family(platform) -> str | None:
    """`ice40` (UltraPlus parts: the iCE40s with SB_MAC16), `ecp5` or None, from the
    platform's device name."""
    device = str(getattr(platform, "device", "")).upper()
    if device.startswith("ICE40UP"):
        return "ice40"
    return "ecp5" if device.startswith("LFE5") else None


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
        if family == "ice40":
            product = Signal(32)
            m.submodules.dsp = sb_mac16(self.a, self.b, product)
            m.d.comb += self.p.eq(product[:self.a_width + self.b_width])
        elif family == "ecp5":
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


class RegisteredDotPair(wiring.Component):
    """`p = a0 * b0 + a1 * b1` (signed) `LATENCY + 1` cycles after the operands are presented:
    two `RegisteredMultiplier`s and a register of their sum. On iCE40 the sum is the output
    register of the first lane's SB_MAC16, whose adder takes the second lane's product on its
    C/D inputs (32-bit accumulator mode with C and D as the adder's upper inputs), so no
    logic-cell adder and register."""

    def __init__(self, a_width: int, b_width: int):
        self.a_width, self.b_width = a_width, b_width
        super().__init__({"a0": In(signed(a_width)), "b0": In(signed(b_width)), "a1": In(signed(a_width)),
                          "b1": In(signed(b_width)), "p": Out(signed(a_width + b_width + 1))})

    def elaborate(self, platform) -> Module:
        m = Module()
        if dsp_family(platform) == "ice40" and max(self.a_width, self.b_width) <= WIDTHS["ice40"]:
            second, total = Signal(32), Signal(32)
            m.submodules.dsp1 = sb_mac16(self.a1, self.b1, second)
            m.submodules.dsp0 = sb_mac16(
                self.a0, self.b0, total, C=second[16:], D=second[:16], TOPOUTPUT_SELECT=1, BOTOUTPUT_SELECT=1,
                TOPADDSUB_LOWERINPUT=2, BOTADDSUB_LOWERINPUT=2, TOPADDSUB_UPPERINPUT=1, BOTADDSUB_UPPERINPUT=1,
                TOPADDSUB_CARRYSELECT=2)
            m.d.comb += self.p.eq(total[:len(self.p)])
            return m
        lanes = [RegisteredMultiplier(self.a_width, self.b_width) for _ in range(2)]
        m.submodules.multiplier_0, m.submodules.multiplier_1 = lanes
        m.d.comb += [lanes[0].a.eq(self.a0), lanes[0].b.eq(self.b0), lanes[1].a.eq(self.a1), lanes[1].b.eq(self.b1)]
        total = Signal.like(self.p, reset_less=True)
        m.d.sync += total.eq(lanes[0].p + lanes[1].p)
        m.d.comb += self.p.eq(total)
        return m


def sb_mac16(a, b, out: Signal, C=0, D=0, **settings: int) -> Instance:
    """An iCE40 SB_MAC16 (as `PRESERVED_SB_MAC16`) with registered signed 16-bit inputs `a`, `b`
    and a registered 32-bit product (`O`, into `out`); `settings` change its parameters (each
    at most 2 bits), `C`/`D` feed its adders' C and D inputs (not registered)."""
    parameters = {"A_REG": 1, "B_REG": 1, "PIPELINE_16x16_MULT_REG2": 1, "TOPOUTPUT_SELECT": 3,
                  "BOTOUTPUT_SELECT": 3, "A_SIGNED": 1, "B_SIGNED": 1} | settings
    return Instance(
        PRESERVED_SB_MAC16, **{f"p_{name}": Const(value, 2 if name.endswith(("SELECT", "LOWERINPUT")) else 1)
                               for name, value in parameters.items()},
        i_CLK=ClockSignal("sync"), i_CE=1, i_A=_extend(a, 16), i_B=_extend(b, 16), i_C=C, i_D=D,
        i_AHOLD=0, i_BHOLD=0, i_CHOLD=0, i_DHOLD=0, i_IRSTTOP=0, i_IRSTBOT=0, i_ORSTTOP=0, i_ORSTBOT=0,
        i_OLOADTOP=0, i_OLOADBOT=0, i_ADDSUBTOP=0, i_ADDSUBBOT=0, i_OHOLDTOP=0, i_OHOLDBOT=0,
        i_CI=0, i_ACCUMCI=0, i_SIGNEXTIN=0, o_O=out,
    )


def _extend(value, width: int):
    """Sign-extend a signed value to `width` bits."""
    return Cat(value, value[-1].replicate(width - len(value)))
