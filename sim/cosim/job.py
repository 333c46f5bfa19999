"""What the runner hands to the cocotb testbench (which runs inside the simulator process) and
what it hands back: files in one job folder, named by the `HWGEN_COSIM_JOB` variable."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hwgen.config import AcceleratorConfig, config_from_dict
from hwgen.program import Program
from sim.memory_model import MemoryStats

JOB_ENV = "HWGEN_COSIM_JOB"
CLOCK_PERIOD_NS = 10


@dataclass
class Job:
    """One run: the design, the DRAM image before it and the memory model's settings."""

    config: AcceleratorConfig
    program: Program
    dram: np.ndarray
    stall: float
    seed: int
    max_cycles: int

    def save(self, folder: Path) -> None:
        settings = {"config": self.config.to_dict(), "program": self.program.to_dict(), "stall": self.stall,
                    "seed": self.seed, "max_cycles": self.max_cycles}
        (folder / "job.json").write_text(json.dumps(settings))
        np.save(folder / "dram.npy", self.dram)

    @classmethod
    def load(cls, folder: Path) -> Job:
        settings = json.loads((folder / "job.json").read_text())
        return cls(config_from_dict(settings["config"]), Program.from_dict(settings["program"]),
                   np.load(folder / "dram.npy"), settings["stall"], settings["seed"], settings["max_cycles"])

    @staticmethod
    def folder() -> Path:
        """The job folder of this simulation (inside the simulator process)."""
        return Path(os.environ[JOB_ENV])


@dataclass
class Outcome:
    """What the testbench measured: `cycles` from the accelerator's counter, `testbench_cycles`
    counted from the edge sampling `start` to the edge raising `done` (as `sim.rtl_sim` counts)."""

    dram: np.ndarray
    cycles: int
    testbench_cycles: int
    traffic: MemoryStats
    counters: dict

    def save(self, folder: Path) -> None:
        values = {"cycles": self.cycles, "testbench_cycles": self.testbench_cycles,
                  "traffic": asdict(self.traffic), "counters": self.counters}
        (folder / "outcome.json").write_text(json.dumps(values))
        np.save(folder / "dram_out.npy", self.dram)

    @classmethod
    def load(cls, folder: Path) -> Outcome:
        values = json.loads((folder / "outcome.json").read_text())
        return cls(np.load(folder / "dram_out.npy"), values["cycles"], values["testbench_cycles"],
                   MemoryStats(**values["traffic"]), values["counters"])
