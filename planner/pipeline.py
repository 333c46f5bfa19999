"""From a quantized network to a compiled program: plan, compile, predict its cycles and traffic."""
from __future__ import annotations

from dataclasses import dataclass

from hwgen.config import AcceleratorConfig
from planner.compile.network import CompiledNetwork, compile_network
from planner.ir import Network
from planner.objective import Objective
from planner.plan import NetworkPlan, Strategy, plan_network
from planner.program_model import Prediction, predict


@dataclass
class Compilation:
    """Every product of planning and compiling one model for one configuration."""

    network: Network  # quantized
    plan: NetworkPlan
    compiled: CompiledNetwork
    prediction: Prediction  # cycles and DRAM bytes of the compiled program (planner.program_model)


def plan_and_compile(network: Network, config: AcceleratorConfig, objective: Objective = Objective.LATENCY,
             strategy: Strategy = Strategy.SEARCH) -> Compilation:
    """Plan and compile a quantized network."""
    plan = plan_network(network, config, objective, strategy)
    schedules = {layer.name: layer.schedule for layer in plan.layers if layer.schedule is not None}
    compiled = compile_network(network, schedules, config)
    return Compilation(network, plan, compiled, predict(compiled.program, config))
