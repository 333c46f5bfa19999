"""Clocking of a board build: the `sync` domain at the configured frequency, from the board's
clock through a PLL when they differ (SB_PLL40_PAD on iCE40, EHXPLLL on ECP5), held in reset
until the PLL locks.

PLL settings are searched over the dividers within the datasheet ranges (iCE40 sysCLOCK PLL
technical note: PFD 10-133 MHz, VCO 533-1066 MHz, output 16-275 MHz; ECP5 sysCLOCK technical
note: PFD 3.125-400 MHz, VCO 400-800 MHz), picking the output closest to the request.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Instance, Module, Signal
from amaranth.lib import io
from amaranth.lib.cdc import ResetSynchronizer

from common.errors import HwgenError

TOLERANCE = 0.02
"""How far (relative) a PLL output may be from the requested clock."""
ICE40_FILTER_RANGES = ((17, 1), (26, 2), (44, 3), (66, 4), (101, 5))  # PFD below MHz -> FILTER_RANGE; else 6


class ClockingError(HwgenError):
    """No PLL setting reaches the requested frequency."""


@dataclass(frozen=True)
class Ice40Pll:
    """SB_PLL40 settings (simple feedback): `f_out = f_in * (divf + 1) / ((divr + 1) * 2**divq)`."""

    divr: int
    divf: int
    divq: int
    filter_range: int
    f_out_mhz: float


@dataclass(frozen=True)
class Ecp5Pll:
    """EHXPLLL settings (feedback from CLKOP): `f_out = f_in * clkfb_div / clki_div`, VCO
    `f_out * clkop_div`."""

    clki_div: int
    clkfb_div: int
    clkop_div: int
    f_out_mhz: float


def ice40_pll(f_in_mhz: float, f_out_mhz: float) -> Ice40Pll:
    """The SB_PLL40 setting whose output is closest to `f_out_mhz`."""
    best = None
    for divr in range(16):
        pfd = f_in_mhz / (divr + 1)
        if not 10 <= pfd <= 133:
            continue
        for divf in range(128):
            vco = pfd * (divf + 1)
            if not 533 <= vco <= 1066:
                continue
            for divq in range(1, 7):
                out = vco / 2**divq
                if 16 <= out <= 275 and (best is None or abs(out - f_out_mhz) < abs(best.f_out_mhz - f_out_mhz)):
                    filter_range = next((r for limit, r in ICE40_FILTER_RANGES if pfd < limit), 6)
                    best = Ice40Pll(divr, divf, divq, filter_range, out)
    return _checked(best, "iCE40", f_in_mhz, f_out_mhz)


def ecp5_pll(f_in_mhz: float, f_out_mhz: float) -> Ecp5Pll:
    """The EHXPLLL setting whose output is closest to `f_out_mhz` (ties: VCO nearest 600 MHz)."""
    best, best_key = None, None
    for clki_div in range(1, 129):
        pfd = f_in_mhz / clki_div
        if not 3.125 <= pfd <= 400:
            continue
        for clkfb_div in range(1, 81):
            out = pfd * clkfb_div
            if not 3.125 <= out <= 400:
                continue
            for clkop_div in range(1, 129):
                vco = out * clkop_div
                if 400 <= vco <= 800:
                    key = (abs(out - f_out_mhz), abs(vco - 600))
                    if best_key is None or key < best_key:
                        best, best_key = Ecp5Pll(clki_div, clkfb_div, clkop_div, out), key
    return _checked(best, "ECP5", f_in_mhz, f_out_mhz)


def _checked(pll, family: str, f_in_mhz: float, f_out_mhz: float):
    """`pll` unless there is none or its output is off by more than `TOLERANCE`."""
    if pll is None or abs(pll.f_out_mhz - f_out_mhz) > TOLERANCE * f_out_mhz:
        nearest = "" if pll is None else f" (nearest: {pll.f_out_mhz:.3f} MHz)"
        raise ClockingError(f"clock_mhz: no {family} PLL setting turns the board's {f_in_mhz:g} MHz into "
                            f"{f_out_mhz:g} MHz within {TOLERANCE:.0%}{nearest}")
    return pll


def pll_output_mhz(family: str, f_in_mhz: float, f_out_mhz: float) -> float:
    """The frequency the `sync` domain will run at: the board clock itself when it is the
    request, else the nearest PLL output."""
    if abs(f_in_mhz - f_out_mhz) < 1e-6:
        return f_in_mhz
    return (ice40_pll if family == "ice40" else ecp5_pll)(f_in_mhz, f_out_mhz).f_out_mhz


def ecp5_pll_instance(pll: Ecp5Pll, clock_in, clock_out, locked) -> Instance:
    """An EHXPLLL with `pll`'s dividers: `clock_in` to `clock_out` (its feedback), `locked`."""
    return Instance(
        "EHXPLLL", p_CLKI_DIV=pll.clki_div, p_CLKFB_DIV=pll.clkfb_div, p_CLKOP_DIV=pll.clkop_div,
        p_CLKOP_CPHASE=pll.clkop_div - 1, p_CLKOP_FPHASE=0, p_CLKOP_ENABLE="ENABLED", p_FEEDBK_PATH="CLKOP",
        p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
        p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA",
        i_CLKI=clock_in, i_CLKFB=clock_out, i_RST=0, i_STDBY=0, i_PHASESEL0=0, i_PHASESEL1=0,
        i_PHASEDIR=1, i_PHASESTEP=1, i_PHASELOADREG=1, i_PLLWAKESYNC=0, i_ENCLKOP=0,
        o_CLKOP=clock_out, o_LOCK=locked)


class PllClock(Elaboratable):
    """The `sync` domain from the platform's default clock through a PLL to `f_out_mhz`."""

    def __init__(self, family: str, f_in_mhz: float, f_out_mhz: float):
        self.family, self.f_in_mhz, self.f_out_mhz = family, f_in_mhz, f_out_mhz

    def elaborate(self, platform) -> Module:
        m = Module()
        m.domains.sync = ClockDomain("sync")
        locked, clock = Signal(), Signal()
        m.d.comb += ClockSignal("sync").eq(clock)
        pin = platform.request(platform.default_clk, dir="-")
        if self.family == "ice40":
            pll = ice40_pll(self.f_in_mhz, self.f_out_mhz)
            m.submodules.pll = Instance(
                "SB_PLL40_PAD", p_FEEDBACK_PATH="SIMPLE", p_DIVR=pll.divr, p_DIVF=pll.divf, p_DIVQ=pll.divq,
                p_FILTER_RANGE=pll.filter_range, i_PACKAGEPIN=pin.io, i_RESETB=1, i_BYPASS=0,
                o_PLLOUTGLOBAL=clock, o_LOCK=locked)
        else:
            pll = ecp5_pll(self.f_in_mhz, self.f_out_mhz)
            m.submodules.clk_buffer = buffer = io.Buffer("i", pin)
            m.submodules.pll = ecp5_pll_instance(pll, buffer.i, clock, locked)
        platform.add_clock_constraint(clock, pll.f_out_mhz * 1e6)
        m.submodules.reset = ResetSynchronizer(~locked, domain="sync")
        return m
