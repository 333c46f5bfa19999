"""The cocotb test that `boards.sdram.cosim` runs inside the simulator on `hwgen_sdram_cosim`:
the accelerator and `SdramMainMemory` in Verilog, the chip the Python `SdramDevice`, clocked
once per edge exactly as `sim.sdram.adapter.sdram_process` clocks it in the Amaranth simulator.

The controller drives every pin from a register, so the pins an edge samples are stable from
the falling edge before it: at each falling edge the testbench drives DQ with what the model
returned for the previous edge (the controller's input register captures it at the next
edge), reads the pins (`status`), and clocks the model for the next edge. Edge 0's pins are
the registers' initial values. The bench mirrors `boards.sdram.simulation.run_on_sdram`:
`start` is sampled by edge `start_edge`, the cycles are the accelerator's counter when `done`
is seen, then `drain_cycles` more edges let the queued writes reach the chip.
"""
from __future__ import annotations

import time
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, Timer

from boards.sdram.cosim_job import PIN_NAMES, PROGRESS_FILE, STATUS_LAYOUT, SdramJob, SdramOutcome
from sim.cosim.job import CLOCK_PERIOD_NS, STATS, Job
from sim.memory_model import MemoryStats
from sim.sdram.device import SdramDevice, SdramViolation

PIN_FIELDS = tuple((STATUS_LAYOUT[name].offset, (1 << STATUS_LAYOUT[name].width) - 1) for name in PIN_NAMES)
DONE_BIT = 1 << STATUS_LAYOUT["done"].offset


class _Progress:
    """Appends `cycles seconds` lines to the job's progress file every `every` cycles."""

    def __init__(self, folder: Path, every: int):
        self.path, self.every, self.next = folder / PROGRESS_FILE, every, every
        self.started = time.monotonic()

    def report(self, cycles: int) -> None:
        with self.path.open("a") as file:
            file.write(f"{cycles} {time.monotonic() - self.started:.3f}\n")
        self.next += self.every


async def _run(dut, job: SdramJob, device: SdramDevice, outcome: SdramOutcome, progress: _Progress) -> None:
    """Clock the model edge by edge until `drain_cycles` after `done` (or the cycle budget)."""
    status, dq_i, start = dut.status, dut.dq_i, dut.start
    start.value = 0
    dq_i.value = driven = 0
    Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns", impl="gpi").start(start_high=False)
    await Timer(1, "ns")  # the initial values have settled; edge 0 comes at half a period
    value = int(status.value)
    dq, _ = device.clock(*((value >> offset) & mask for offset, mask in PIN_FIELDS))
    falling = FallingEdge(dut.clk)
    done_edge, last_edge, edge = None, job.start_edge + job.max_cycles, 0
    while done_edge is None or edge < done_edge + job.drain_cycles:
        await falling
        edge += 1  # between edge `edge - 1` and edge `edge`
        if dq != driven:
            dq_i.value = driven = dq
        if edge == job.start_edge:
            start.value = 1
        elif edge == job.start_edge + 1:
            start.value = 0
        value = int(status.value)
        if done_edge is None and edge > job.start_edge:
            if value & DONE_BIT:
                done_edge = edge - 1
                outcome.counters = int(dut.counters.value)
            elif edge > last_edge:
                outcome.timed_out = True
                return
            elif edge - job.start_edge >= progress.next:
                progress.report(edge - job.start_edge)
        dq, _ = device.clock(*((value >> offset) & mask for offset, mask in PIN_FIELDS))
    outcome.edges = edge + 1
    outcome.traffic = MemoryStats(**{name: int(getattr(dut, name).value) for name in STATS})


@cocotb.test()
async def run_on_sdram(dut) -> None:
    """Run the job's image through the accelerator on the chip model and save the outcome."""
    folder = Job.folder()
    job = SdramJob.load(folder)
    device = SdramDevice(job.chip, job.clock_mhz)
    device.memory.preload(0, job.image)
    outcome = SdramOutcome()
    try:
        await _run(dut, job, device, outcome, _Progress(folder, job.progress_every))
        if not outcome.timed_out:
            device.finish()
            outcome.dram = device.memory.read_back(0, len(job.image))
    except SdramViolation as error:
        outcome.violation = str(error)
    outcome.save(folder)
