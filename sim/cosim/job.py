"""What the runner hands to the cocotb testbench (which runs inside the simulator) and what it
hands back: files in one job folder, named by the `HWGEN_COSIM_JOB` variable, and the hex files
the DRAM model of `dram_model.sv` reads and writes."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from sim.memory_model import MemoryStats

JOB_ENV = "HWGEN_COSIM_JOB"
CLOCK_PERIOD_NS = 10
IMAGE_FILE, DUMP_FILE, STALLS_FILE = "dram.hex", "dram_out.hex", "stalls.hex"
OUTCOMES_FILE = "outcomes.json"
PROGRESS_FILE = "progress.txt"
"""The cycles the running image has simulated so far, rewritten every `Job.progress_every`
cycles (written whole, then renamed into place)."""
STATS = tuple(field.name for field in fields(MemoryStats))
"""The DRAM model's traffic counters, top-level ports of the harness named like `MemoryStats` fields."""


def words_hex(image: np.ndarray, word_bytes: int) -> bytes:
    """`image` (uint8) as little-endian words in `$readmemh` form, one per line, zero-padded."""
    words = -(-len(image) // word_bytes)
    padded = np.zeros(words * word_bytes, np.uint8)
    padded[:len(image)] = image
    digits = np.frombuffer(padded.reshape(words, word_bytes)[:, ::-1].tobytes().hex().encode(), np.uint8)
    lines = np.hstack([digits.reshape(words, 2 * word_bytes), np.full((words, 1), ord("\n"), np.uint8)])
    return lines.tobytes()


def hex_words(text: str, word_bytes: int, size: int) -> np.ndarray:
    """The first `size` bytes of a `$writememh` file of little-endian words (comments skipped)."""
    digits = "".join(line for line in map(str.strip, text.splitlines()) if not line.startswith(("//", "@")))
    words = np.frombuffer(bytes.fromhex(digits), np.uint8).reshape(-1, word_bytes)
    return np.ascontiguousarray(words[:, ::-1]).reshape(-1)[:size]


def stalls_hex(stalled: np.ndarray) -> bytes:
    """A stream of stall decisions (bool) as 64-bit words, decision `i` in bit `i % 64` of word `i // 64`."""
    return words_hex(np.packbits(stalled, bitorder="little"), 8)


@dataclass
class Job:
    """DRAM images run back to back, each from the state a fresh simulation starts in."""

    drams: np.ndarray  # (runs, bytes) uint8
    bus_bytes: int
    max_cycles: int
    progress_every: int = 0
    """Cycles between reports of progress into `PROGRESS_FILE` (0: none)."""

    def save(self, folder: Path) -> None:
        (folder / "job.json").write_text(json.dumps({"bus_bytes": self.bus_bytes, "max_cycles": self.max_cycles,
                                                     "progress_every": self.progress_every}))
        np.save(folder / "drams.npy", self.drams)

    @classmethod
    def load(cls, folder: Path) -> Job:
        settings = json.loads((folder / "job.json").read_text())
        return cls(np.load(folder / "drams.npy"), settings["bus_bytes"], settings["max_cycles"],
                   settings["progress_every"])

    @staticmethod
    def folder() -> Path:
        """The job folder of this simulation (inside the simulator process)."""
        return Path(os.environ[JOB_ENV])


def write_progress(folder: Path, cycles: int) -> None:
    """`cycles` into the job's `PROGRESS_FILE`, whole: a reader never sees half a number."""
    staged = folder / f".{PROGRESS_FILE}"
    staged.write_text(str(cycles))
    os.replace(staged, folder / PROGRESS_FILE)


def read_progress(folder: Path) -> int | None:
    """The cycles in the job's `PROGRESS_FILE`, or None before the first report."""
    try:
        return int((folder / PROGRESS_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None


@dataclass
class Outcome:
    """What the testbench measured in one run: `counters` is the accelerator's raw counter vector;
    `testbench_cycles` counts from the edge sampling `start` to the edge raising `done` (as
    `sim.rtl_sim` counts)."""

    dram: np.ndarray
    counters: int
    testbench_cycles: int
    traffic: MemoryStats

    @staticmethod
    def save_all(folder: Path, outcomes: list[Outcome]) -> None:
        values = [{"counters": o.counters, "testbench_cycles": o.testbench_cycles, "traffic": asdict(o.traffic)}
                  for o in outcomes]
        np.save(folder / "drams_out.npy", np.stack([o.dram for o in outcomes]))
        (folder / OUTCOMES_FILE).write_text(json.dumps(values))

    @classmethod
    def load_all(cls, folder: Path) -> list[Outcome]:
        values = json.loads((folder / OUTCOMES_FILE).read_text())
        drams = np.load(folder / "drams_out.npy")
        return [cls(dram, v["counters"], v["testbench_cycles"], MemoryStats(**v["traffic"])) for dram, v in zip(drams, values)]
