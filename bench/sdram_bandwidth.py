"""Bandwidth and latency of the SDRAM main memory (`boards.sdram.memory.SdramMainMemory`) on the
ULX3S board's IS42S16160G-7, simulated against the chip model (`sim.sdram`), which checks every
command against the datasheet.

Sequential 8-beat bursts (the accelerator's pattern) with `rd_data.ready` always high: read-only,
write-only, and mixed (a read stream and a write stream at once, in different banks or in other
rows of the same bank). Bytes per cycle are counted from the first request taken to the last
beat, refreshes included, against the 16-bit bus's peak of 2 bytes per cycle; the read latency
is from `rd_req` taken to the first `rd_data.valid`; the cycles lost per refresh compare the
same run with a tREFI too long to fall within it. The chip keeps every datasheet figure but the
100 us power-up wait (300 ns here, to save simulation time).

Usage: python bench/sdram_bandwidth.py [--mhz 75] [--kib 16]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from sim.sdram.chips import IS42S16160G_7  # noqa: E402
from sdram_helpers import (BURST_BEATS, measure_mixed, measure_reads, measure_writes, read_latency,  # noqa: E402
                           without_refresh)

PEAK = 2  # bytes per cycle: one 16-bit word

# a row of one bank is 1 KiB; the next KiB is the same row of the next bank
OTHER_BANK, SAME_BANK = 1 << 10, 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mhz", type=float, default=75)
    parser.add_argument("--kib", type=int, default=16, help="KiB moved per run (mixed: half read, half written)")
    args = parser.parse_args()
    chip, mhz, size = replace(IS42S16160G_7, power_up_ns=300), args.mhz, args.kib * 1024
    runs = {
        "read only": (measure_reads(chip, mhz, size), measure_reads(without_refresh(chip), mhz, size)),
        "write only": (measure_writes(chip, mhz, size), measure_writes(without_refresh(chip), mhz, size)),
        "mixed, other bank": (measure_mixed(chip, mhz, size // 2, 0, OTHER_BANK), None),
        "mixed, same bank": (measure_mixed(chip, mhz, size // 2, 0, SAME_BANK), None),
    }
    print(f"{chip.name} at {mhz:g} MHz, sequential {BURST_BEATS}-beat bursts, {args.kib} KiB per run")
    print(f"{'traffic':<20}{'bytes/cycle':>12}{'of peak':>9}{'MB/s':>8}{'refreshes':>11}{'cycles/refresh':>16}")
    for name, (run, quiet) in runs.items():
        lost = f"{(run.cycles - quiet.cycles) / run.refreshes:.1f}" if quiet and run.refreshes else "-"
        print(f"{name:<20}{run.bytes_per_cycle:>12.3f}{run.bytes_per_cycle / PEAK:>9.1%}"
              f"{run.bytes_per_cycle * mhz:>8.1f}{run.refreshes:>11}{lost:>16}")
    miss, hit = read_latency(chip, mhz)
    print(f"read latency (rd_req taken to first rd_data.valid): {hit} cycles to an open row, {miss} to a closed one")


if __name__ == "__main__":
    main()
