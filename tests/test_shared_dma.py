"""`template.dma: shared` around the DMA: the arbiter between the load and store units, and the
limits the compact DMA puts on programs and memory images (one clear error each)."""
from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from hwgen.config import config_from_dict, load_config
from hwgen.dma import Descriptor, Dim
from hwgen.dma.shared import DmaArbiter
from hwgen.dma.units import descriptor_table_params
from hwgen.program_walk import ProgramError, check_program
from hwgen.program import Program
from planner.compile.network import compile_network
from common.errors import PlanningError
from planner.plan import plan_network
from test_rtl_property import conv_network


@pytest.mark.parametrize("common_entry", [False, True])
def test_arbiter_gives_the_idle_dma_to_one_unit_at_a_time_stores_first(common_entry):
    """Script: both units offer; the store (client 0) goes first, its `done` reaches only it;
    then the load; a unit offering while the DMA is busy waits for it to be idle. The DMA gets
    the chosen unit's addresses (with `common_entry` too, where only the filled-in fields are
    selected)."""
    params = descriptor_table_params(load_config("icebreaker"))
    dut = DmaArbiter(params, 2, common_entry)
    log = []

    async def bench(ctx):
        descs = [params.encode(Descriptor(load=False, dram_addr=5, buf_addr=1, run_bytes=3)),
                 params.encode(Descriptor(load=True, dram_addr=9, buf_addr=2, run_bytes=3))]
        for client in range(2):
            ctx.set(dut.desc[client], descs[client])
            ctx.set(dut.desc_valid[client], 1)
        ctx.set(dut.dma_desc.ready, 1)
        for cycle in range(8):
            await ctx.delay(1e-7)  # combinational settling before sampling
            offered = ctx.get(dut.dma_desc.valid) and ctx.get(dut.dma_desc.ready)
            taken = [client for client in range(2) if ctx.get(dut.desc_ready[client])]
            done = [client for client in range(2) if ctx.get(dut.done[client])]
            payload = dut.dma_desc.payload
            log.append((cycle, offered and (ctx.get(payload.dram_addr), ctx.get(payload.buf_addr), ctx.get(payload.load)),
                        taken, done))
            await ctx.tick()
            if taken:  # the unit stops offering; the DMA is busy until cycle 3 (store) or 6 (load)
                ctx.set(dut.desc_valid[taken[0]], 0)
                ctx.set(dut.dma_desc.ready, 0)
            ctx.set(dut.dma_done, cycle in (2, 5))
            if cycle in (2, 5):
                ctx.set(dut.dma_desc.ready, 1)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert log[:7] == [(0, (5, 1, 0), [0], []), (1, 0, [], []), (2, 0, [], []), (3, (9, 2, 1), [1], [0]),
                       (4, 0, [], []), (5, 0, [], []), (6, 0, [], [1])]


@pytest.mark.parametrize("desc, culprit", [
    (Descriptor(load=True, dram_addr=0, buf_addr=0, run_bytes=2, dims=(Dim(4000, dx=2),)), "dx spans"),
    (Descriptor(load=True, dram_addr=0, buf_addr=0, run_bytes=4, run_dx=1, width=2), r"run_dx 1 \(its runs are all"),
])
def test_descriptor_beyond_the_compact_dma_is_refused(desc, culprit):
    """Coordinates beyond its 14 bits, or a run split at the image bounds (`run_dx` 1)."""
    config = load_config("icebreaker")
    program = Program()
    program.descriptor(desc)
    with pytest.raises(ProgramError, match=r"descriptor 0 does not fit the DMA of configuration 'icebreaker': .*"
                                           + culprit):
        check_program(program, config)
    check_program(program, load_config("default"))  # the full template's DMA takes it


def test_memory_image_beyond_the_dram_addresses_is_refused():
    net, _ = conv_network(dict(in_c=8, out_c=16, kernel=3, stride=1, pad=1, size=12, groups=1, relu=True, seed=1))
    data = load_config("icebreaker").to_dict()
    data["template"]["dram_address_bits"] = 12
    config = config_from_dict(data)
    schedules = {layer.name: layer.schedule for layer in plan_network(net, config).layers if layer.schedule}
    with pytest.raises(PlanningError, match=r"needs \d+ bytes of DRAM; configuration 'icebreaker' addresses 4096"):
        compile_network(net, schedules, config)
