"""Bandwidth and latency of the flash reader (`boards.spiflash.reader.SpiFlashReader`) on the
iCEBreaker's W25Q128JV at 27 MHz (SPI clock 13.5 MHz), simulated against the flash model
(`sim.spiflash`), which checks every transaction against the datasheet.

Sequential 8-beat bursts (the accelerator's pattern) with `rd_data.ready` always high: bytes per
cycle from the first request taken to the last beat, against the peak of one nibble (quad) or
one bit (Read Data) per SPI clock. Latency: cycles from `rd_req` taken to the first beat taken,
for the first read after initialization (quad: with the EBh instruction), a read at another
address (quad: continuous read mode, no instruction) and a read at the next address (the open
read continued). The chip keeps every datasheet figure but tW (2 us instead of 15 ms).

Usage: python bench/spiflash_bandwidth.py [--mhz 27] [--kib 4]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from spiflash_helpers import CHIP, measure  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mhz", type=float, default=27)
    parser.add_argument("--kib", type=int, default=4, help="KiB streamed in sequential bursts")
    args = parser.parse_args()
    print(f"{CHIP.name} at {args.mhz:g} MHz (SPI clock {args.mhz / 2:g} MHz), sequential 8-beat bursts, "
          f"{args.kib} KiB")
    print(f"{'mode':<22}{'bytes/cycle':>12}{'of peak':>9}{'MB/s':>7}{'first':>7}{'new addr':>10}{'next addr':>11}")
    for quad, name in ((True, "quad I/O (EBh)"), (False, "Read Data (03h)")):
        peak = 0.25 if quad else 1 / 16
        for bus_bytes in (1, 2):
            figures = measure(bus_bytes, quad, args.kib, mhz=args.mhz)
            print(f"{name + f', {8 * bus_bytes}-bit':<22}{figures.bytes_per_cycle:>12.4f}"
                  f"{figures.bytes_per_cycle / peak:>9.1%}{figures.bytes_per_cycle * args.mhz:>7.2f}"
                  f"{figures.latency_first:>7}{figures.latency_new:>10}{figures.latency_next:>11}")
    print("latency: cycles from rd_req taken to the first beat taken")


if __name__ == "__main__":
    main()
