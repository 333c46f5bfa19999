"""Units that run layers: the host CPU (onnxruntime) and accelerator instances, and which of
them can run each task of a network.

The tasks are the network's layers (`planner.ir.Network.layers`, in topological order) and its
host tails (a trailing Softmax, LogSoftmax or ArgMax, `Network.host_tails`). The host runs any
task; an accelerator instance runs the layers its configuration compiles
(`planner.envelope.network_problems`), never a host tail.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from hwgen.config import AcceleratorConfig
from planner.envelope import network_problems
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
    """A layer or a host tail: what it reads, the tensor it writes and that tensor's shape."""

    name: str
    op: str
    inputs: tuple[str, ...]
    output: str
    shape: Shape
    layer: Layer | None = None
    tail: HostTail | None = None


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


def refusals(net: Network, unit: Unit) -> dict[str, str]:
    """Per task the unit cannot run, why (an empty dict for the host)."""
    if unit.kind is UnitKind.HOST:
        return {}
    problems = network_problems(net, unit.config)
    reasons = {name: f"{unit.name}: {problem}" for name, problem in problems.items()}
    for task in tasks(net):
        if task.tail is not None:
            reasons[task.name] = f"{unit.name}: {task.op} runs on the host only"
    return reasons


def runnable(net: Network, units: list[Unit]) -> dict[str, tuple[str, ...]]:
    """Per task, the names of the units that can run it."""
    refused = [refusals(net, unit) for unit in units]
    return {task.name: tuple(u.name for u, r in zip(units, refused) if task.name not in r) for task in tasks(net)}
