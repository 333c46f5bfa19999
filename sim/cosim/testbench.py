"""The cocotb test that `sim.cosim.runner` runs inside the simulator on `hwgen_cosim`
(`sim.cosim.harness`). For each DRAM image of the job it restarts the DRAM model and resets the
accelerator, then mirrors the bench of `sim.rtl_sim.run_rtl`: `start` high for the first edge,
wait for `done`. Python only acts at these events: the clock runs in the simulator (cocotb's GPI
clock) and the DRAM is Verilog, so no Python runs in the cycles between."""
from __future__ import annotations

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, with_timeout
from cocotb.utils import get_sim_time

from sim.cosim.job import CLOCK_PERIOD_NS, DUMP_FILE, IMAGE_FILE, STATS, Job, Outcome, hex_words, words_hex
from sim.memory_model import MemoryStats


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
        try:
            await with_timeout(RisingEdge(dut.done), job.max_cycles * CLOCK_PERIOD_NS, "ns")
        except TimeoutError:
            raise TimeoutError(f"no `done` after {job.max_cycles} cycles") from None
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
