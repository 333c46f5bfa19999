"""The generated LiteDRAM core of the OrangeCrab (`boards.ddr3.litedram`: ECP5DDRPHY +
LiteDRAMCore with one native port and the CSR bank) synthesized alone for the ECP5 with the
project's Yosys script: its cells by type, out of context (its ports are the module's ports,
not pins; a LUT count after packing is in the board build's report).

Needs the optional dependencies (`pip install -e .[litedram]`). Not a test: nothing imports it.

Usage: python bench/ddr3_core_resources.py [--mhz 48]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from boards.ddr3.litedram import MODULE_NAME, generate  # noqa: E402
from boards.yosys import synthesize  # noqa: E402

SUMMARY = {"LUT4": "LUT4", "CCU2C": "carry (2 LUTs each)", "TRELLIS_FF": "flip-flops", "TRELLIS_DPR16X4": "LUT RAM",
           "DP16KD": "block RAM", "MULT18X18D": "DSP"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mhz", type=float, default=48)
    args = parser.parse_args()
    start = time.monotonic()
    cells = synthesize("ecp5", generate(args.mhz * 1e6).verilog, MODULE_NAME)
    print(f"LiteDRAM core for the OrangeCrab's MT41K64M16 at {args.mhz:g} MHz, out of context:")
    for cell, meaning in SUMMARY.items():
        print(f"  {cells.get(cell, 0):6,}  {cell} ({meaning})")
    others = {cell: count for cell, count in sorted(cells.items()) if cell not in SUMMARY}
    print("  other cells: " + ", ".join(f"{cell} {count}" for cell, count in others.items()))
    print(f"({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
