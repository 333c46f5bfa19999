"""From a quantized network to a compiled program: plan, compile, predict its cycles and traffic."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from hwgen.config import AcceleratorConfig, DmaSharing, ProgramMemory
from common.errors import HwgenError, PlanningError
from planner.ir import COMPUTE_OPS, Activation, Layer, LayerQuant, Network, Op, TensorQuant
from planner.fusion import fuse_planned
from planner.quant import INT8_MIN
from planner.split import split_network
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
    return Compilation(network, plan, compiled, predict(compiled.program, config, compiled.memory.constant_bytes))


def plan_checked(network: Network, config: AcceleratorConfig, objective: Objective = Objective.LATENCY,
                 strategy: Strategy = Strategy.SEARCH) -> NetworkPlan:
    """`plan_network`, then what only the program shows (`program_problem`), raised: a plan it
    returns compiles."""
    plan = plan_network(network, config, objective, strategy)
    problem = program_problem(network, plan, config)
    if problem:
        raise problem[1]
    return plan


def program_problem(network: Network, plan: NetworkPlan, config: AcceleratorConfig) -> tuple[str | None, HwgenError] | None:
    """What only the program of `plan` shows, for `stand_ins(network)`: where the configuration
    bounds the program (an SPRAM program memory, the shared DMA's compact descriptors) the plan
    compiled, elsewhere its descriptor table against the LOAD / STORE `desc` field
    (`planner.compile.descriptor_table`, without compiling). The layer at fault (None: the whole
    program) and the error `hwgen plan` stops with; None when the program fits."""
    from planner.compile.descriptor_table import descriptor_problem

    schedules = {layer.name: layer.schedule for layer in plan.layers if layer.schedule is not None}
    if config.template.program_memory == ProgramMemory.SPRAM or config.template.dma == DmaSharing.SHARED:
        # the compiler checks the program against the HDL's tables: imported for these configurations alone
        from hwgen.program_walk import ProgramDoesNotFit
        from planner.compile.network import compile_network

        try:
            compile_network(stand_ins(network), schedules, config)
        except ProgramDoesNotFit as error:
            return None, error
        return None
    found = descriptor_problem(split_network(fuse_planned(stand_ins(network), schedules, config), config), schedules,
                               config)
    if found is None:
        return None
    layer, words = found
    return layer, PlanningError(f"{words} (configuration {config.name!r}; docs/envelope.md)")


def stand_ins(network: Network) -> Network:
    """`network` as planning checks its program: a quantized network itself; a float one with
    zero weights, identity requantization and the zero points calibration gives where they are
    known before it (-128 after a ReLU, a max pool's input's), distinct ones elsewhere (each a
    padding fill of its own, so the descriptor table is not underestimated)."""
    if network.quantized:
        return network
    tensors = {network.input_name: TensorQuant(1.0, 0)}
    for index, layer in enumerate(network.layers, 1):
        if layer.op == Op.MAXPOOL:
            tensors[layer.output] = tensors[layer.inputs[0]]
        else:
            relu = layer.activation != Activation.NONE
            tensors[layer.output] = TensorQuant(1.0, INT8_MIN if relu else index % 255 - 127)
    return replace(network, input_quant=tensors[network.input_name],
                   layers=tuple(stand_in(layer, tensors) for layer in network.layers))


def stand_in(layer: Layer, tensors: dict[str, TensorQuant] | None = None) -> Layer:
    """`layer` with zero weights and identity requantization (shapes as they are), its tensors
    quantized as `tensors` says (else scale 1, zero point 0)."""
    unit, channels = TensorQuant(1.0, 0), layer.out_shape[0]
    tensors = tensors or {}
    weights = bias = None
    if layer.op in COMPUTE_OPS:
        weights = np.zeros((channels, layer.in_shape[0] // layer.groups, *layer.kernel), np.int8)
        bias = np.zeros(channels, np.int32)
    quant = LayerQuant(inputs=tuple(tensors.get(name, unit) for name in layer.inputs), output=tensors.get(layer.output, unit),
                       act_min=INT8_MIN if layer.activation == Activation.NONE else tensors.get(layer.output, unit).zero_point,
                       multiplier=np.full(channels, 1 << 15, np.int64),
                       shift=np.full(channels, 15, np.int64), weights=weights, bias=bias,
                       input_multipliers=(1,) * len(layer.inputs))
    return replace(layer, quant=quant)
