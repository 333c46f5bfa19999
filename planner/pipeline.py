"""From a quantized network to a compiled program: plan, compile, predict its cycles and traffic."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from hwgen.config import AcceleratorConfig, DmaSharing, ProgramMemory
from planner.ir import COMPUTE_OPS, Layer, LayerQuant, Network, TensorQuant
from planner.objective import Objective
from planner.plan import NetworkPlan, Strategy, plan_network

if TYPE_CHECKING:  # the compiler and the program model are imported where used: `hwgen plan` needs neither
    from planner.compile.network import CompiledNetwork
    from planner.program_model import Prediction


@dataclass
class Compilation:
    """Every product of planning and compiling one model for one configuration."""

    network: Network  # quantized
    plan: NetworkPlan
    compiled: CompiledNetwork
    prediction: Prediction  # cycles and DRAM bytes of the compiled program (planner.program_model)


def plan_and_compile(network: Network, config: AcceleratorConfig, objective: Objective = Objective.LATENCY,
             strategy: Strategy = Strategy.SEARCH, keep_input: bool = False) -> Compilation:
    """Plan and compile a quantized network (`keep_input`: see `planner.compile.memory_map.plan_memory`)."""
    from planner.compile.network import compile_network
    from planner.program_model import predict

    plan = plan_network(network, config, objective, strategy)
    schedules = {layer.name: layer.schedule for layer in plan.layers if layer.schedule is not None}
    compiled = compile_network(network, schedules, config, keep_input)
    return Compilation(network, plan, compiled, predict(compiled.program, config))


def plan_checked(network: Network, config: AcceleratorConfig, objective: Objective = Objective.LATENCY,
                 strategy: Strategy = Strategy.SEARCH) -> NetworkPlan:
    """`plan_network`, and where the configuration bounds the program (an SPRAM program memory,
    the shared DMA's compact descriptors) the plan compiled for a stand-in (`check_compiles`):
    a plan it returns compiles."""
    plan = plan_network(network, config, objective, strategy)
    if config.template.program_memory == ProgramMemory.SPRAM or config.template.dma == DmaSharing.SHARED:
        check_compiles(network, plan, config)
    return plan


def check_compiles(network: Network, plan: NetworkPlan, config: AcceleratorConfig) -> None:
    """Compile `plan` for a stand-in of `network` (its shapes, zero weights, identity
    requantization): what depends on shapes alone but is only known once the program exists
    (its instructions and descriptors against the program memory, its DRAM) is refused now,
    as a PlanningError or a ProgramDoesNotFit, rather than after the plan is used."""
    from planner.compile.network import compile_network

    schedules = {layer.name: layer.schedule for layer in plan.layers if layer.schedule is not None}
    unit = TensorQuant(1.0, 0)
    stand_ins = replace(network, input_quant=unit, layers=tuple(map(stand_in, network.layers)))
    compile_network(stand_ins, schedules, config)


def stand_in(layer: Layer) -> Layer:
    """`layer` with zero weights and identity requantization (shapes as they are)."""
    unit, channels = TensorQuant(1.0, 0), layer.out_shape[0]
    weights = bias = None
    if layer.op in COMPUTE_OPS:
        weights = np.zeros((channels, layer.in_shape[0] // layer.groups, *layer.kernel), np.int8)
        bias = np.zeros(channels, np.int32)
    quant = LayerQuant(inputs=(unit,) * len(layer.inputs), output=unit, multiplier=np.full(channels, 1 << 15, np.int64),
                       shift=np.full(channels, 15, np.int64), weights=weights, bias=bias,
                       input_multipliers=(1,) * len(layer.inputs))
    return replace(layer, quant=quant)
