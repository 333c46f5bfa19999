"""What `boards.sdram.soc_transport` (the host, in the `hwgen` process) and its cocotb testbench
(`boards.sdram.soc_testbench`, inside the simulator) exchange: the job, saved in the job folder
before the simulator starts, then requests and replies over a Unix socket. The simulation stands
still between a reply and the next request, so simulated time advances only when the host asks.

Cycles count the rising clock edges since power-on (the testbench clocks at `CLOCK_PERIOD_NS`)."""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim.sdram.chips import SdramChip

JOB_FILE, SOCKET_FILE, DONE_FILE = "soc_job.pickle", "link.sock", "soc_done"
HOST_CHUNK = 32
"""Bytes the testbench hands the top level's host line driver (`soc_top.HostLine`) at once."""


@dataclass
class SocJob:
    """The chip (checked by its model at `clock_mhz`), the UART's clock cycles per bit, and the
    bytes placed in the chip from address 0 before power-on (the memory image, or noise for
    the host to overwrite)."""

    chip: SdramChip
    clock_mhz: float
    divisor: int
    contents: np.ndarray

    def save(self, folder: Path) -> None:
        (folder / JOB_FILE).write_bytes(pickle.dumps(self))

    @staticmethod
    def load(folder: Path) -> SocJob:
        return pickle.loads((folder / JOB_FILE).read_bytes())


@dataclass(frozen=True)
class Advance:
    """Queue `data` on the SoC's UART receive line, then simulate until cycle `until`, or until
    `want` bytes have come from the SoC's UART since the last reply, or for `wall_seconds` of
    wall time, whichever comes first."""

    data: bytes
    until: int
    want: int
    wall_seconds: float


@dataclass(frozen=True)
class Finish:
    """Clock the chip model up to now, check its refresh debt and end the simulation."""


@dataclass(frozen=True)
class Reply:
    """Where the simulation stands: cycles since power-on, the bytes the SoC's UART sent since
    the last reply, its LEDs, and the chip model's `SdramViolation` message if it raised one
    (the simulation then ends)."""

    cycles: int
    data: bytes
    leds: int
    violation: str | None = None
