"""Geometry and timing of an SDR SDRAM chip, and the ULX3S v3 board's chip.

The ULX3S v3 carries an ISSI IS42S16160G-7 (256 Mbit: 4 banks x 8192 rows x 512 columns x
16 bits = 32 MiB). Its figures, -7 speed grade, commercial/industrial temperature:

| figure | value | source |
|---|---|---|
| tCK, CL 3 | >= 7 ns (143 MHz) | IS42S16160G datasheet (Rev. F), features: "clock frequency 200, 166, 143 MHz" |
| tCK, CL 2 | >= 10 ns (100 MHz) | ISSI 256 Mbit D- and B-die tables, -7: CL 2 at 10 ns (assumed for the G die) |
| tRC | 60 ns | IS42S16160G datasheet, "Command Period (REF to REF / ACT to ACT)" |
| tRAS | 37 ns min, 100 us max | IS42S16160G datasheet |
| tRP | 15 ns | IS42S16160G datasheet |
| tRCD | 15 ns | IS42S16160G datasheet |
| tRRD | 14 ns | ISSI SDRAM -7 tables ("ACT [0] to ACT [1]"); Micron MT48LC16M16A2-7E and AS4C32M16SB-7 agree |
| tWR (tDPL) | 2 clocks, at least 14 ns | ISSI -7 tables: "Input Data To Precharge" 2 CLK; Micron -7E: 1 CLK + 7 ns |
| tRFC | 60 ns | = tRC (the ISSI table gives one period for REF to REF and ACT to ACT) |
| tMRD | 14 ns, at least 2 clocks | IS42S16160G datasheet |
| tREFI | 64 ms / 8192 = 7812.5 ns | datasheet: 8K refresh cycles every 64 ms; JEDEC: up to 8 may be postponed |
| power-up wait | 100 us | datasheet initialization: 100 us of NOP/COMMAND INHIBIT before the first command |

The IS42S16160G -7 figures were read through `parameters_IS42S16160G_ic.py` of the public
Amaranth controller dicethrow/amaram, which quotes them from the datasheet, and cross-checked
with the ISSI IS42S16800A and Micron MT48LC16M16A2-7E tables. LiteDRAM's `IS42S16160` module
uses rounder, more conservative figures (tRP = tRCD = tWR = 20 ns, tRFC = 70 ns); a
controller that meets those meets these. The AS4C32M16SB-7 fitted on some ULX3S v3.0.7
boards is slower (tRCD = tRP = 21 ns, tRC = tRFC = 63 ns, tRAS = 42 ns, 200 us power-up): a
`dataclasses.replace` of this instance describes it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """A minimum delay of `ns` nanoseconds and at least `clocks` clock cycles."""

    ns: float
    clocks: int = 0

    def cycles(self, clock_mhz: float) -> int:
        """Fewest clock cycles between two commands that meet this delay at `clock_mhz`."""
        return max(self.clocks, math.ceil(round(self.ns * clock_mhz / 1000, 9)))

    def describe(self, clock_mhz: float) -> str:
        """The delay as the datasheet states it, e.g. '15 ns at 100 MHz'."""
        text = f"{self.ns:g} ns at {clock_mhz:g} MHz"
        return f"{text}, at least {self.clocks} clocks" if self.clocks else text


@dataclass(frozen=True)
class SdramChip:
    """An x16 SDR SDRAM: its geometry, command timing and initialization rules."""

    name: str
    banks: int
    rows: int
    columns: int
    t_rc: Timing
    t_ras: Timing
    t_ras_max_ns: float
    t_rp: Timing
    t_rcd: Timing
    t_rrd: Timing
    t_wr: Timing
    t_rfc: Timing
    t_mrd: Timing
    refresh_interval_ns: float  # tREFI: one AUTO REFRESH due per interval on average
    max_postponed_refreshes: int
    power_up_ns: float
    init_refreshes: int  # AUTO REFRESH commands required before the first LOAD MODE REGISTER
    min_period_ns: tuple[tuple[int, float], ...]  # (CAS latency, shortest clock period)

    @property
    def data_bits(self) -> int:
        return 16

    @property
    def bytes(self) -> int:
        return self.banks * self.rows * self.columns * 2

    def cas_latencies(self, clock_mhz: float) -> tuple[int, ...]:
        """The CAS latencies the chip supports at `clock_mhz`."""
        period = 1000 / clock_mhz
        return tuple(cl for cl, shortest in self.min_period_ns if period >= shortest - 1e-9)


IS42S16160G_7 = SdramChip(
    name="IS42S16160G-7",
    banks=4,
    rows=8192,
    columns=512,
    t_rc=Timing(60),
    t_ras=Timing(37),
    t_ras_max_ns=100_000,
    t_rp=Timing(15),
    t_rcd=Timing(15),
    t_rrd=Timing(14),
    t_wr=Timing(14, clocks=2),
    t_rfc=Timing(60),
    t_mrd=Timing(14, clocks=2),
    refresh_interval_ns=64e6 / 8192,
    max_postponed_refreshes=8,
    power_up_ns=100_000,
    init_refreshes=2,
    min_period_ns=((2, 10.0), (3, 7.0)),
)
