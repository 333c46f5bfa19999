"""The cocotb test that `sim.cosim.runner` runs inside the simulator on `hwgen_cosim`
(`sim.cosim.harness`). For each DRAM image of the job it restarts the DRAM model and resets the
accelerator, then mirrors the bench of `sim.rtl_sim.run_rtl`: `start` high for the first edge,
wait for `done`. Python only acts at these events: the clock runs in the simulator (cocotb's GPI
clock) and the DRAM is Verilog, so no Python runs in the cycles between, but every
`Job.progress_every` cycles, when asked, to report the cycles so far (`write_progress`)."""
from __future__ import annotations

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, Timer, with_timeout
from cocotb.utils import get_sim_time

from sim.cosim.job import (CLOCK_PERIOD_NS, DUMP_FILE, IMAGE_FILE, STATS, Job, Outcome, hex_words, words_hex,
                           write_progress)
from sim.memory_model import MemoryStats


async def report_progress(folder, every: int) -> None:
    """Write the cycles since this coroutine started every `every` cycles, until cancelled."""
    cycles = 0
    while True:
        await Timer(every * CLOCK_PERIOD_NS, "ns")
        cycles += every
        write_progress(folder, cycles)


@cocotb.test()
async def run_images(dut) -> None:
    """Run every DRAM image of the job through the accelerator and save the outcomes."""
    folder = Job.folder()
    job = Job.load(folder)
    dut.start.value = 0
    dut.dump.value = 0
    Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns", impl="gpi").start(start_high=False)
    outcomes = []
    for dram in job.drams:
        (folder / IMAGE_FILE).write_bytes(words_hex(dram, job.bus_bytes))
        dut.rst.value = 1
        dut.restart.value = 1
        await RisingEdge(dut.clk)
        dut.rst.value = 0
        dut.restart.value = 0
        dut.start.value = 1
        await RisingEdge(dut.clk)
        dut.start.value = 0
        started = get_sim_time("ns")
        reporter = cocotb.start_soon(report_progress(folder, job.progress_every)) if job.progress_every else None
        try:
            await with_timeout(RisingEdge(dut.done), job.max_cycles * CLOCK_PERIOD_NS, "ns")
        except TimeoutError:
            raise TimeoutError(f"no `done` after {job.max_cycles} cycles") from None
        if reporter is not None:
            reporter.cancel()
        await ReadOnly()
        elapsed = round((get_sim_time("ns") - started) / CLOCK_PERIOD_NS)
        counters = int(dut.counters.value)
        traffic = MemoryStats(**{name: int(getattr(dut, name).value) for name in STATS})
        await FallingEdge(dut.clk)
        dut.dump.value = 1
        await RisingEdge(dut.clk)
        dut.dump.value = 0
        await ReadOnly()
        dram_out = hex_words((folder / DUMP_FILE).read_text(), job.bus_bytes, len(dram))
        outcomes.append(Outcome(dram_out, counters, elapsed, traffic))
        await FallingEdge(dut.clk)
    Outcome.save_all(folder, outcomes)
