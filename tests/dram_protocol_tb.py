"""cocotb test (run by tests/test_cosim.py inside Icarus) driving `hwgen_dram` alone, with its
default parameters (2-byte bus, 8-beat bursts, 2 bytes of memory), into the protocol violation
named by `HWGEN_DRAM_CASE`; the model must stop the simulation before the test ends."""
from __future__ import annotations

import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

READS = {"unaligned": (1, 1), "no_beats": (0, 0), "crossing": (14, 2), "beyond": (2, 1)}


@cocotb.test()
async def violation(dut) -> None:
    for name in ("restart", "dump", "rd_req_valid", "rd_req_addr", "rd_req_beats", "rd_data_ready",
                 "wr_valid", "wr_addr", "wr_data", "wr_mask", "wr_last"):
        getattr(dut, name).value = 0
    dut.restart.value = 1
    Clock(dut.clk, 10, unit="ns").start(start_high=False)
    await RisingEdge(dut.clk)
    dut.restart.value = 0
    case = os.environ["HWGEN_DRAM_CASE"]
    if case in READS:
        dut.rd_req_addr.value, dut.rd_req_beats.value = READS[case]
        dut.rd_req_valid.value = 1
    else:  # a write burst that repeats its first beat's address instead of moving on
        dut.wr_valid.value, dut.wr_mask.value = 1, 3
    await ClockCycles(dut.clk, 8)
    raise AssertionError("hwgen_dram accepted the violation")
