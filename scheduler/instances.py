"""A configuration's instances (`instances` in the hardware YAML) running a network as a
pipeline: the stages, period and latency the ILP and the simulator give them with the input
already in main memory and the outputs read from it (the serial link left out), the host
running nothing but the network's host tails, which cost nothing here.

This is what `hwgen sweep` compares when it explores `instances`: one instance's time per
image is then its latency and its period."""
from __future__ import annotations

import math
from dataclasses import dataclass

from hwgen.config import AcceleratorConfig
from planner.compile.stages import PipelineLayout, pipeline_layout
from planner.ir import Network
from scheduler import ilp
from scheduler.costs import build_problem
from scheduler.problem import Problem
from scheduler.simulator import evaluate
from scheduler.units import accelerator_unit, host_unit, tasks


@dataclass(frozen=True)
class PipelineFigures:
    """Seconds between images in a saturated stream, seconds of one image through the pipeline,
    the layers of each stage in the network's order (an instance each), and the main-memory
    bytes per image."""

    period_s: float
    latency_s: float
    stages: tuple[tuple[str, ...], ...]
    dram_bytes: float


def images_for(units: int) -> int:
    """Images the simulator streams for `units` units: the steady state between filling and
    draining the pipeline (`hwgen schedule`'s minimum)."""
    return 4 * (2 * units + 3)


def instances_problem(net: Network, config: AcceleratorConfig, clock_mhz: float | None = None) -> Problem:
    """`net` on `config.instances` instances of `config` at `clock_mhz` (default: the
    configuration's clock), the input in main memory: the host computes only the free tails."""
    instances = [accelerator_unit(config, f"acc{index}", clock_mhz) for index in range(config.instances)]
    free_tails = {task.name: (0.0 if task.tail else math.inf) for task in tasks(net)}
    return build_problem(net, [host_unit(1), *instances], host_times=free_tails, link=False)


def pipeline_figures(net: Network, config: AcceleratorConfig, clock_mhz: float | None = None) -> PipelineFigures:
    """The best contiguous stages of `instances_problem`, judged by the simulator."""
    problem = instances_problem(net, config, clock_mhz)
    mapping = ilp.solve(problem).mapping
    verdict = evaluate(problem, mapping, images_for(problem.m))
    stages = [tuple(layer for layer, unit in zip(problem.layers, mapping) if unit == p) for p in range(1, problem.m)]
    in_order = sorted((stage for stage in stages if stage), key=lambda stage: problem.layers.index(stage[0]))
    dram = float(sum(problem.dram[i, p] for i, p in enumerate(mapping)))
    return PipelineFigures(verdict.period, verdict.latency, tuple(in_order), dram)


def scheduled_layout(net: Network, config: AcceleratorConfig, images: int) -> tuple[PipelineFigures, PipelineLayout]:
    """`pipeline_figures`' stages compiled one program per instance, main memory laid out for a
    stream of `images` images."""
    figures = pipeline_figures(net, config)
    index = {layer.name: i for i, layer in enumerate(net.layers)}
    return figures, pipeline_layout(net, [index[stage[0]] for stage in figures.stages], config, images)
