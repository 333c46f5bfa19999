"""Host link rate into the ULX3S's SDRAM, simulated: the SoC at 75 MHz with the chip model on its
pins and its UART at 3 Mbaud (the board's FT231X's highest rate), the host runtime writing
`--kib` KiB of random bytes (WRITE requests of the bridge's largest payload, each answered) and
checking them (CHECKSUM). Prints bytes/s of payload against the line's 300,000 bytes/s (8N1)
and the CHECKSUM's cycles per byte. A small accelerator (the tests' tiny configuration with a
16-bit port) keeps the simulation short; the link does not depend on it.

Usage: python bench/link_load_rate.py [--kib 1] [--baud 3000000]   (about 3 minutes per KiB)
"""
from __future__ import annotations

import argparse
import sys
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from boards.build import memory_bytes  # noqa: E402
from boards.platforms import board  # noqa: E402
from boards.runtime import Runtime  # noqa: E402
from boards.sdram.controller import initialization_cycles  # noqa: E402
from boards.soc import SocCore  # noqa: E402
from boards.transport import SimulatedTransport  # noqa: E402
from boards.uart import FRAME_BITS  # noqa: E402
from hwgen.config import config_from_dict  # noqa: E402
from sim.sdram.adapter import sdram_process  # noqa: E402
from sim.sdram.device import SdramDevice  # noqa: E402
from soc_helpers import TINY, tiny_compiled  # noqa: E402

CLK_HZ = 75_000_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kib", type=float, default=1)
    parser.add_argument("--baud", type=int, default=board("ulx3s-85f").baud)
    args = parser.parse_args()
    chosen = board("ulx3s-85f")
    config = config_from_dict({**TINY.to_dict(), "name": "tiny-16",
                               "dram": {**TINY.to_dict()["dram"], "bus_width_bits": 16, "bandwidth_bytes_per_cycle": 2}})
    compiled = tiny_compiled(config)
    soc = SocCore(config, compiled, memory_bytes(chosen, compiled.memory.size, config), CLK_HZ, args.baud, chosen.sdram)
    device = SdramDevice(chosen.sdram, CLK_HZ / 1e6)
    transport = SimulatedTransport(soc, [sdram_process(device, soc.sdram)])
    transport.read(1, initialization_cycles(chosen.sdram, CLK_HZ / 1e6) / CLK_HZ)  # the chip's initialization
    runtime = Runtime(transport)
    runtime.identify()
    data = np.random.default_rng(0).integers(0, 256, int(args.kib * 1024), dtype=np.uint8).tobytes()
    wall = time.monotonic()
    start = transport.clock()
    runtime.write(0, data)
    load_seconds = transport.clock() - start
    start = transport.cycles
    assert runtime.checksum(0, len(data)) == zlib.crc32(data), "the bytes written do not read back"
    checksum_cycles = transport.cycles - start
    line = args.baud / FRAME_BITS
    print(f"{len(data):,} bytes written at {args.baud:,} baud into the SDRAM in {load_seconds * 1e3:.2f} ms "
          f"(simulated): {len(data) / load_seconds:,.0f} bytes/s, {len(data) / load_seconds / line:.1%} of the "
          f"line's {line:,.0f} bytes/s (frames of up to {runtime.info.max_data} bytes, each answered)")
    print(f"CHECKSUM: {checksum_cycles / len(data):.1f} cycles per byte, request and reply included")
    device.finish()
    print(f"({transport.cycles:,} cycles simulated in {time.monotonic() - wall:.0f} s)")


if __name__ == "__main__":
    main()
