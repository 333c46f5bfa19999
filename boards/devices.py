"""FPGA devices the builds and reports know: family, nextpnr arguments and resource totals.

Totals are the datasheet figures (Lattice iCE40 UltraPlus / iCE40 LP/HX and ECP5 family data
sheets); the sweep checks resource estimates against them before any synthesis, and reports
show use against them.
"""
from __future__ import annotations

from dataclasses import dataclass

from common.errors import HwgenError


@dataclass(frozen=True)
class Resources:
    """Counts of the resources a report shows: LUTs, flip-flops, DSP multipliers, block RAMs
    (SB_RAM40_4K or DP16KD) and SPRAM blocks (SB_SPRAM256KA)."""
    lut: int
    ff: int
    dsp: int
    bram: int
    spram: int = 0


@dataclass(frozen=True)
class Device:
    """One FPGA part: `family` is "ice40" or "ecp5"; `nextpnr_args` select it in nextpnr."""
    name: str
    family: str
    part: str
    package: str
    nextpnr_args: tuple[str, ...]
    totals: Resources
    bram_bits: int          # bits per block RAM

    @property
    def bram_bytes(self) -> int:
        return self.totals.bram * self.bram_bits // 8


def _ice40(name: str, part: str, flag: str, package: str, totals: Resources) -> Device:
    return Device(name, "ice40", part, package, (f"--{flag}", "--package", package), totals, 4096)


def _ecp5(name: str, part: str, flag: str, package: str, totals: Resources) -> Device:
    return Device(name, "ecp5", part, package, (f"--{flag}", "--package", package), totals, 18432)


DEVICES: dict[str, Device] = {device.name: device for device in (
    _ice40("ice40-up5k", "iCE40UP5K", "up5k", "sg48", Resources(lut=5280, ff=5280, dsp=8, bram=30, spram=4)),
    _ice40("ice40-hx8k", "iCE40HX8K", "hx8k", "ct256", Resources(lut=7680, ff=7680, dsp=0, bram=32)),
    _ecp5("ecp5-12f", "LFE5U-12F", "12k", "CABGA381", Resources(lut=12288, ff=12288, dsp=28, bram=32)),
    _ecp5("ecp5-25f", "LFE5U-25F", "25k", "CABGA381", Resources(lut=24288, ff=24288, dsp=28, bram=56)),
    _ecp5("ecp5-45f", "LFE5U-45F", "45k", "CABGA381", Resources(lut=43848, ff=43848, dsp=72, bram=108)),
    _ecp5("ecp5-85f", "LFE5U-85F", "85k", "CABGA381", Resources(lut=83640, ff=83640, dsp=156, bram=208)),
)}


def logic_cells(family: str, cells: dict[str, int]) -> tuple[int, int]:
    """(LUTs, flip-flops) of a Yosys cell count as the place-and-route report counts them:
    ECP5 TRELLIS_COMB (LUT4, two per CCU2C carry, two per TRELLIS_DPR16X4 RAM) and TRELLIS_FF;
    iCE40 logic cells' LUTs (SB_LUT4) and flip-flops (SB_DFF*)."""
    if family == "ecp5":
        luts = cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0) + 2 * cells.get("TRELLIS_DPR16X4", 0)
        return luts, cells.get("TRELLIS_FF", 0)
    return cells.get("SB_LUT4", 0), sum(n for cell, n in cells.items() if cell.startswith("SB_DFF"))


DSP_CELLS = {"ice40": "SB_MAC16", "ecp5": "MULT18X18D"}
BRAM_CELLS = {"ice40": "SB_RAM40_4K", "ecp5": "DP16KD"}


def cell_resources(family: str, cells: dict[str, int]) -> Resources:
    """The resources of a Yosys cell count (`num_cells_by_type`) of a `family` netlist, LUTs and
    flip-flops as `logic_cells` counts them."""
    lut, ff = logic_cells(family, cells)
    return Resources(lut=lut, ff=ff, dsp=cells.get(DSP_CELLS[family], 0), bram=cells.get(BRAM_CELLS[family], 0),
                     spram=cells.get("SB_SPRAM256KA", 0))


def device(name: str) -> Device:
    """The device called `name` (case-insensitive); an unknown name is an error listing the known ones."""
    key = name.lower()
    if key not in DEVICES:
        raise HwgenError(f"unknown device {name!r}; known devices: {', '.join(DEVICES)}")
    return DEVICES[key]
