"""Units that run layers: the host CPU (onnxruntime) and accelerator instances, and which of
them can run each task of a workload.

A workload is a network's tasks: its layers (`planner.ir.Network.layers`, in topological order)
and its host tails (a trailing Softmax, LogSoftmax or ArgMax, `Network.host_tails`); for a model
with host operators inside (`planner.frontend.partition`), every accelerator segment's layers
and tails, and each host part as one task. The host runs any task; an accelerator instance runs
the layers its configuration compiles (`planner.envelope.network_problems`), never a host tail
or a host part.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from hwgen.config import AcceleratorConfig
from planner.envelope import network_problems
from planner.frontend.partition import ModelPart
from planner.ir import HostTail, Layer, Network, Shape

class UnitKind(str, Enum):
    HOST = "host"
    ACCELERATOR = "accelerator"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Unit:
    """The host (`threads` onnxruntime threads) or an accelerator instance (its `config` at
    `clock_mhz`: the configuration's clock, or the post-place-and-route Fmax of a build),
    linked to the host at `baud` (0 for the host itself)."""

    name: str
    kind: UnitKind
    config: AcceleratorConfig | None = None
    clock_mhz: float = 0.0
    threads: int = 1
    baud: int = 0


def host_unit(threads: int) -> Unit:
    return Unit("host", UnitKind.HOST, threads=threads)


def accelerator_unit(config: AcceleratorConfig, name: str, fmax_mhz: float | None = None) -> Unit:
    """An instance of `config`; linked at its board's rate when the configuration names a board."""
    from boards.platforms import BOARDS, DEFAULT_BAUD

    board = BOARDS.get(config.board)
    return Unit(name, UnitKind.ACCELERATOR, config, fmax_mhz or config.clock_mhz,
                baud=board.baud if board else DEFAULT_BAUD)


@dataclass(frozen=True)
class Task:
    """A layer, a host tail or a host part: what it reads, the tensor it writes and that
    tensor's shape."""

    name: str
    op: str
    inputs: tuple[str, ...]
    output: str
    shape: Shape
    layer: Layer | None = None
    tail: HostTail | None = None
    part: ModelPart | None = None

    @property
    def host_only(self) -> bool:
        return self.layer is None


def tasks(net: Network) -> tuple[Task, ...]:
    """The network's layers, then its host tails (each computes on a layer's output)."""
    shapes = net.tensor_shapes()
    found = [Task(layer.name, str(layer.op), layer.inputs, layer.output, layer.out_shape, layer=layer)
             for layer in net.layers]
    for tail in net.host_tails:
        steps = "+".join(str(step.op) for step in tail.steps)
        found.append(Task(f"{tail.output} ({steps})", steps, (tail.source,), tail.output,
                          shapes[tail.source], tail=tail))
    return tuple(found)


@dataclass(frozen=True)
class Workload:
    """What a schedule runs: its tasks in topological order, the networks whose layers they are
    (the accelerator segments), every tensor's shape, the input, and the final outputs."""

    name: str
    tasks: tuple[Task, ...]
    networks: tuple[Network, ...]
    shapes: dict[str, Shape]
    input_name: str
    input_shape: Shape
    finals: frozenset[str]


def network_workload(net: Network) -> Workload:
    """A network that runs whole: its layers and host tails."""
    finals = frozenset(net.outputs) | {tail.output for tail in net.host_tails}
    return Workload(net.name, tasks(net), (net,), net.tensor_shapes(), net.input_name, net.input_shape, finals)


def as_workload(source: Network | Workload) -> Workload:
    return source if isinstance(source, Workload) else network_workload(source)


def _map_shape(dims: tuple[int, ...]) -> Shape:
    """A host part's tensor as the accelerator holds it: (C, H, W), a vector as (N, 1, 1)."""
    return dims if len(dims) == 3 else (math.prod(dims), 1, 1)


def partitioned_workload(name: str, parts: tuple[ModelPart, ...], segments: tuple[Network, ...]) -> Workload:
    """A model with host operators inside: each segment's tasks and each host part as one task
    (`segments`: the accelerator parts' networks, in order)."""
    from sim.partitioned import value_dims

    found: list[Task] = []
    shapes: dict[str, Shape] = {}
    networks = iter(segments)
    for part in parts:
        if part.on_host:
            shape = _map_shape(value_dims(part.model, part.outputs[0]))
            ops = "+".join(dict.fromkeys(node.op_type for node in part.model.graph.node))
            found.append(Task(f"{part.outputs[0]} ({ops})", ops, (part.input,), part.outputs[0], shape, part=part))
            shapes[part.outputs[0]] = shape
        else:
            net = next(networks)
            found += tasks(net)
            shapes.update(net.tensor_shapes())
    input_shape = _map_shape(value_dims(parts[0].model, parts[0].input))
    shapes.setdefault(parts[0].input, input_shape)
    consumed = {name for task in found for name in task.inputs}
    finals = frozenset(task.output for task in found if task.output not in consumed)
    return Workload(name, tuple(found), tuple(segments), shapes, parts[0].input, input_shape, finals)


def refusals(work: Workload, unit: Unit) -> dict[str, str]:
    """Per task the unit cannot run, why (an empty dict for the host)."""
    if unit.kind is UnitKind.HOST:
        return {}
    reasons = {}
    for net in work.networks:
        reasons.update({name: f"{unit.name}: {problem}" for name, problem in network_problems(net, unit.config).items()})
    for task in work.tasks:
        if task.host_only:
            reasons[task.name] = f"{unit.name}: {task.op} runs on the host only"
    return reasons


def runnable(work: Workload, units: list[Unit]) -> dict[str, tuple[str, ...]]:
    """Per task, the names of the units that can run it."""
    refused = [refusals(work, unit) for unit in units]
    return {task.name: tuple(u.name for u, r in zip(units, refused) if task.name not in r) for task in work.tasks}
