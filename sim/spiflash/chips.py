"""Figures of a SPI NOR flash, and the Winbond W25Q128JV (16 MiB) in its two orderings.

From the W25Q128JV datasheet (checked against Revision M, 2024, whose revision history lists no
change to these figures since Revision F, 2018): section 9.6 (AC electrical characteristics),
section 8.1 (device ID and instruction tables), section 7.1.4 (Quad Enable) and section 11
(ordering information):

| figure | value | datasheet |
|---|---|---|
| fR | 50 MHz | clock frequency for Read Data (03h) |
| FR | 133 MHz | clock frequency for every other instruction, VCC 3.0-3.6 V (104 MHz below 3.0 V) |
| tCLH, tCLL (tCRLH, tCRLL) | 45 % of the clock period | clock high and low time (note 1: of 1/fc max) |
| tSLCH, tCHSH | 3 ns | /CS active setup and active hold relative to CLK |
| tSHSL1 | 10 ns | /CS deselect time for read |
| tSHSL2 | 50 ns | /CS deselect time for erase, program or write |
| tCLQV | 6 ns | clock low to output valid (the model answers within the system cycle) |
| tRES1 | 3 us | /CS high to standby without ID read (release from power-down) |
| tRES2 | 1.8 us | /CS high to standby with ID read |
| tDP | 3 us | /CS high to power-down |
| tRST | 30 us | /CS high after RESET to the next instruction |
| tW | 15 ms max (10 typical) | write status register time |
| IDs | EFh, device 17h, JEDEC EFh 40h 18h (IQ/IN/JQ) / EFh 70h 18h (IM/JM) | ABh, 9Fh |

Quad Enable (Status Register-2 bit 1, S9): the -IQ/-IN/-JQ parts ship with QE = 1, fixed (IO3 is
never /HOLD); the -IM/-JM parts ship with QE = 0, writable (IO2, IO3 are /WP and /HOLD until it
is set). The -IM/-JM are described in full by the separate W25Q128JV-DTR datasheet (QPI and DTR
besides); the iCEBreaker carries a W25Q128JVSIM.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class SpiFlashChip:
    """A 3-byte-address SPI NOR flash: size, clock limits, delays (ns), IDs, the QE option."""

    name: str
    size_bytes: int
    max_mhz: float  # FR: every instruction but Read Data
    read_data_max_mhz: float  # fR: Read Data (03h)
    clock_high_low: float  # tCLH/tCLL as a fraction of the shortest clock period
    t_slch_ns: float
    t_chsh_ns: float
    t_shsl_read_ns: float  # tSHSL1
    t_shsl_write_ns: float  # tSHSL2
    t_clqv_ns: float
    t_res1_ns: float  # release from power-down without reading the ID
    t_res2_ns: float  # with the ID read
    t_dp_ns: float
    t_rst_ns: float
    t_w_ns: float  # write status register, the maximum
    manufacturer_id: int
    device_id: int
    jedec_id: tuple[int, int, int]
    qe_fixed: bool  # QE is 1 and cannot be cleared (-IQ/-IN/-JQ); else it ships 0 (-IM/-JM)

    def cycles(self, ns: float, clock_mhz: float) -> int:
        """Fewest whole cycles of `clock_mhz` lasting at least `ns`."""
        return math.ceil(round(ns * clock_mhz / 1000, 9))


W25Q128JV_IQ = SpiFlashChip(
    name="W25Q128JV-IQ",
    size_bytes=16 << 20,
    max_mhz=133,
    read_data_max_mhz=50,
    clock_high_low=0.45,
    t_slch_ns=3,
    t_chsh_ns=3,
    t_shsl_read_ns=10,
    t_shsl_write_ns=50,
    t_clqv_ns=6,
    t_res1_ns=3_000,
    t_res2_ns=1_800,
    t_dp_ns=3_000,
    t_rst_ns=30_000,
    t_w_ns=15_000_000,
    manufacturer_id=0xEF,
    device_id=0x17,
    jedec_id=(0xEF, 0x40, 0x18),
    qe_fixed=True,
)

W25Q128JV_IM = replace(W25Q128JV_IQ, name="W25Q128JV-IM", jedec_id=(0xEF, 0x70, 0x18), qe_fixed=False)
"""The iCEBreaker's part (W25Q128JVSIM): ships with QE = 0."""
