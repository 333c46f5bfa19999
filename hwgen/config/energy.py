"""Default energies: the Interstellar cost table (Table 5.2, 28 nm, pJ per 16-bit access),
halved to get pJ per byte, with the SRAM cost scaled x1.5 per doubling of a bank's size."""
from __future__ import annotations

import math

DRAM_PJ_PER_16BIT = 200.0
MAC_PJ = 0.075
RF_PJ_PER_16BIT_PER_BYTE_OF_RF = 0.03 / 16  # 16 B register file costs 0.03 pJ, linear in size
SRAM_PJ_PER_16BIT_AT_32KB = 6.0
SRAM_SCALE_PER_DOUBLING = 1.5
ACCUMULATOR_RF_BYTES = 16


def sram_pj_per_byte(size_bytes: int) -> float:
    """Interstellar SRAM energy (x1.5 per doubling from 6 pJ at 32 KB), per byte accessed."""
    return SRAM_PJ_PER_16BIT_AT_32KB * (size_bytes / 32768) ** math.log2(SRAM_SCALE_PER_DOUBLING) / 2


def default_energy(input_bank: int, weight_bank: int, output_bank: int, accumulator_bits: int) -> dict[str, float]:
    """The `energy` fields' defaults for banks of these sizes (bytes) and accumulators."""
    return {
        "dram_pj_per_byte": DRAM_PJ_PER_16BIT / 2,
        "input_buffer_pj_per_byte": sram_pj_per_byte(input_bank),
        "weight_buffer_pj_per_byte": sram_pj_per_byte(weight_bank),
        "output_buffer_pj_per_byte": sram_pj_per_byte(output_bank),
        "register_pj_per_access": RF_PJ_PER_16BIT_PER_BYTE_OF_RF * ACCUMULATOR_RF_BYTES * accumulator_bits / 16,
        "mac_pj": MAC_PJ,
    }
