"""The cocotb test that `sim.cosim.runner` runs inside the simulator: it mirrors the bench of
`sim.rtl_sim.run_rtl` (no reset, `start` high for the first edge, wait for `done`) with the
DRAM served by `sim.memory_model.MemoryModel` through `sim.cosim.memory.CocotbContext`."""
from __future__ import annotations

import cocotb
from amaranth.lib.wiring import In
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, with_timeout
from cocotb.utils import get_sim_time

from hwgen.accelerator import Accelerator
from sim.cosim.job import CLOCK_PERIOD_NS, Job, Outcome
from sim.cosim.memory import CocotbContext, interface_view, read
from sim.memory_model import MemoryModel
from sim.rtl_sim import SimulationTimeout


@cocotb.test()
async def run_program(dut) -> None:
    """Run the job's DRAM image through the accelerator and save the outcome."""
    folder = Job.folder()
    job = Job.load(folder)
    signature = Accelerator(job.config, job.program).signature
    for path, member in signature.members.flatten():
        if not member.is_signature and member.flow == In:  # Amaranth's initial value of every input
            getattr(dut, "__".join(path)).value = 0
    dut.rst.value = 0
    design = interface_view(dut, signature)
    memory = MemoryModel.from_config(design.port, job.dram, job.config.dram, stall=job.stall, seed=job.seed)

    Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns").start(start_high=False)
    cocotb.start_soon(memory.process(CocotbContext(dut.clk)))
    dut.start.value = 1
    await RisingEdge(dut.clk)
    dut.start.value = 0
    started = get_sim_time("ns")
    try:
        await with_timeout(RisingEdge(dut.done), job.max_cycles * CLOCK_PERIOD_NS, "ns")
    except TimeoutError:
        raise SimulationTimeout(f"no `done` after {job.max_cycles} cycles") from None
    await ReadOnly()
    counters = read(design.counters)
    cycles = counters.pop("cycles")
    elapsed = round((get_sim_time("ns") - started) / CLOCK_PERIOD_NS)
    Outcome(job.dram, cycles, elapsed, memory.stats, counters).save(folder)
