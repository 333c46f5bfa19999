"""Amaranth-simulator harness of `hwgen.pipeline.Pipeline`: a stream of images through the
pipelined accelerator instances, main memory served by `sim.memory_model.MemoryModel` (one
memory shared by all, the configuration's latency and bandwidth), every instance's start and end
cycle recorded."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from amaranth.sim import Simulator

from hwgen.pipeline import Pipeline
from planner.compile.memory_map import tensor_bytes
from planner.compile.packing import activation_from_image, activation_image
from planner.compile.stages import PipelineLayout
from sim.memory_model import MemoryModel, MemoryStats
from sim.rtl_sim import SimulationTimeout


@dataclass
class PipelineRun:
    """Outputs per image, and per instance the cycles at which it started and ended each image."""

    outputs: list[np.ndarray]
    starts: list[list[int]]
    ends: list[list[int]]
    cycles: int
    traffic: MemoryStats

    def period(self) -> float:
        """Cycles between images: the mean interval between the last stage's starts (once the
        pipeline is full it starts an image each period; its ends would count the last image,
        which runs alone, uncontended)."""
        starts = self.starts[-1]
        return (starts[-1] - starts[0]) / (len(starts) - 1)


def pipeline_memory(layout: PipelineLayout, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Main memory before the run: every instance's image at its base, input `k` in slot `k`."""
    memory = layout.image()
    simd = layout.config.pe.simd
    for k, x in enumerate(inputs):
        data = activation_image(x, simd)
        memory[layout.input_address(k):layout.input_address(k) + len(data)] = data
    return memory


PROGRESS_EVERY = 1_000
"""Simulated cycles between two calls of `run_pipeline`'s `progress`."""


def run_pipeline(layout: PipelineLayout, inputs: Sequence[np.ndarray], max_cycles: int = 2_000_000,
                 stall: float = 0.0, seed: int = 0, progress: Callable[[int], None] | None = None) -> PipelineRun:
    """Run the int8 `(C, H, W)` inputs (as many as the layout has slots) through the instances;
    `stall`: the memory model's probability of withholding a handshake each cycle (seeded);
    `progress` is called with the cycles so far every `PROGRESS_EVERY` cycles."""
    assert len(inputs) == layout.images
    config = layout.stages[0].compilation.compiled.config
    memory = pipeline_memory(layout, inputs)
    dut = Pipeline(config, layout.hardware_stages())
    model = MemoryModel.from_config(dut.port, memory, config.dram, stall=stall, seed=seed)
    count = len(layout.stages)
    starts: list[list[int]] = [[] for _ in range(count)]
    ends: list[list[int]] = [[] for _ in range(count)]
    result = {}

    async def bench(ctx):
        ctx.set(dut.images, len(inputs))
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        previous = 0
        for cycle in range(1, max_cycles + 1):
            running = ctx.get(dut.running)
            for index in range(count):
                now, before = (running >> index) & 1, (previous >> index) & 1
                if now and not before:
                    starts[index].append(cycle)
                if before and not now:
                    ends[index].append(cycle)
            previous = running
            if ctx.get(dut.done):
                result["cycles"] = cycle
                return
            if progress is not None and cycle % PROGRESS_EVERY == 0:
                progress(cycle)
            await ctx.tick()
        raise SimulationTimeout(f"the pipeline did not finish {len(inputs)} images in {max_cycles} cycles")

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_process(model.process)
    sim.add_testbench(bench)
    sim.run()
    last = layout.stages[-1]
    net = last.compilation.network
    shape = net.tensor_shapes()[net.outputs[0]]
    size = tensor_bytes(shape, config.pe.simd)
    outputs = [activation_from_image(memory[layout.output_address(k):][:size], shape, config.pe.simd)
               for k in range(len(inputs))]
    return PipelineRun(outputs, starts, ends, result["cycles"], model.stats)
