"""Shared helpers for compiler tests: schedules that fit the hardware layouts, and running a
compiled network through the ISA simulator."""
from __future__ import annotations

import numpy as np

from hwgen.config import AcceleratorConfig
from planner.compile.conv import ConvTiling
from planner.compile.network import CompiledNetwork, compile_network
from common.errors import PlanningError
from planner.ir import COMPUTE_OPS, Network
from planner.schedule import ORDERS, ConvShape, Schedule
from sim.isa_sim import IsaSimulator


def fits(layer, schedule: Schedule, config: AcceleratorConfig) -> bool:
    try:
        ConvTiling(layer, ConvShape.of(layer), schedule, config).check_fits()
    except PlanningError:
        return False
    return True


def random_schedules(net: Network, config: AcceleratorConfig, rng: np.random.Generator) -> dict[str, Schedule]:
    """A random legal schedule per compute layer: random tile sizes and loop order."""
    schedules = {}
    for layer in net.layers:
        if layer.op not in COMPUTE_OPS:
            continue
        shape = ConvShape.of(layer)
        for _ in range(200):
            tiles = {dim: int(rng.integers(1, shape.bound(dim.upper()) + 1)) for dim in ("oc", "ic", "oh", "ow")}
            schedule = Schedule(**tiles, order=ORDERS[rng.integers(len(ORDERS))])
            if fits(layer, schedule, config):
                schedules[layer.name] = schedule
                break
        else:
            schedules[layer.name] = Schedule(1, 1, 1, 1)
    return schedules


def run_isa(compiled: CompiledNetwork, x: np.ndarray) -> tuple[dict[str, np.ndarray], IsaSimulator]:
    """Execute the program on `x` (int8 `(C, H, W)`); the network outputs and the simulator."""
    dram = compiled.dram_with_input(x)
    sim = IsaSimulator(compiled.config, compiled.program, dram)
    sim.run()
    return {name: compiled.read_output(dram, name) for name in compiled.network.outputs}, sim


def compile_and_run(net: Network, schedules: dict[str, Schedule], config: AcceleratorConfig, x: np.ndarray):
    return run_isa(compile_network(net, schedules, config), x)
