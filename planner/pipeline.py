"""The flow from a quantized network to a compiled program: plan, compile, predict its cycles and traffic."""
from __future__ import annotations

from dataclasses import dataclass

from hwgen.config import AcceleratorConfig
from planner.compile.network import CompiledNetwork, compile_network
from planner.ir import Network
from planner.objective import Objective
from planner.plan import NetworkPlan, Strategy, plan_network
from planner.program_model import Prediction, predict


@dataclass
class Flow:
    """Every product of the flow for one model and configuration."""

    network: Network  # quantized
    plan: NetworkPlan
    compiled: CompiledNetwork
    prediction: Prediction  # cycles and DRAM bytes of the compiled program (planner.program_model)


def run_flow(network: Network, config: AcceleratorConfig, objective: Objective = Objective.LATENCY,
             strategy: Strategy = Strategy.SEARCH) -> Flow:
    """Plan and compile a quantized network."""
    plan = plan_network(network, config, objective, strategy)
    schedules = {layer.name: layer.schedule for layer in plan.layers if layer.schedule is not None}
    compiled = compile_network(network, schedules, config)
    return Flow(network, plan, compiled, predict(compiled.program, config))
