"""What `boards.sdram.cosim` hands to its cocotb testbench (`boards.sdram.cosim_testbench`, inside
the simulator) and what it hands back, as files in the job folder of `sim.cosim.job`, plus the
top level's `status` port: the chip's pins the testbench samples each cycle, and `done`."""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from amaranth.lib import data

from sim.memory_model import MemoryStats
from sim.sdram.adapter import SDRAM_PINS
from sim.sdram.chips import SdramChip

PIN_NAMES = ("cke", "cs_n", "ras_n", "cas_n", "we_n", "ba", "a", "dqm", "dq_o", "dq_oe")
"""The controller's pins in the order `SdramDevice.clock` takes them."""
STATUS_LAYOUT = data.StructLayout({**{name: SDRAM_PINS.members[name].shape for name in PIN_NAMES}, "done": 1})
"""The top level's `status` port: every pin the chip samples and the accelerator's `done`, so
that the testbench reads one signal per cycle."""
JOB_FILE, OUTCOME_FILE, PROGRESS_FILE = "sdram_job.pickle", "sdram_outcome.pickle", "progress.txt"


@dataclass
class SdramJob:
    """One run: the memory image preloaded into a model of `chip` at `clock_mhz`, `start`
    sampled by edge `start_edge` (edges counted from 0, the first), at most `max_cycles` cycles
    to `done`, then `drain_cycles` more; a progress line every `progress_every` cycles."""

    image: np.ndarray
    chip: SdramChip
    clock_mhz: float
    start_edge: int
    drain_cycles: int
    max_cycles: int
    progress_every: int

    def save(self, folder: Path) -> None:
        (folder / JOB_FILE).write_bytes(pickle.dumps(self))

    @staticmethod
    def load(folder: Path) -> SdramJob:
        return pickle.loads((folder / JOB_FILE).read_bytes())


@dataclass
class SdramOutcome:
    """What the testbench measured: the memory read back from the model (None if the run did
    not end), the accelerator's raw counter vector at `done`, the port's traffic, the edges the
    model was clocked, and why the run failed: the model's `SdramViolation` message or a
    timeout."""

    dram: np.ndarray | None = None
    counters: int = 0
    traffic: MemoryStats | None = None
    edges: int = 0
    violation: str | None = None
    timed_out: bool = False

    def save(self, folder: Path) -> None:
        (folder / OUTCOME_FILE).write_bytes(pickle.dumps(self))

    @staticmethod
    def load(folder: Path) -> SdramOutcome:
        return pickle.loads((folder / OUTCOME_FILE).read_bytes())
