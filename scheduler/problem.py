"""The numbers every scheduler reads: per (layer, unit) times, transfers, memory traffic, limits.

A `Problem` is independent of ONNX and hardware: `scheduler.costs` builds one from a network and
its units, the tests build random ones. A mapping is a tuple giving each layer's unit index.

Conventions (docs/schedule.md): a tensor moved between units is moved once per (tensor,
receiving unit) and occupies the accelerator end of the move (`payer`: the receiver, or the
sender when the host receives), so the host's time is its compute alone; the network input
starts on the host and every network output ends on the host; the host's CPU cap bounds its
compute time per period. An accelerator's stage takes one tensor: it may begin only at a
`Problem.cuts` position, where one layer's output alone crosses (the host runtime reads any
number of tensors from a board, but an accelerator program reads one input).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

Mapping = tuple[int, ...]
"""The unit index of each layer, in the problem's layer order."""


@dataclass(frozen=True, eq=False)
class Problem:
    """`time[i, p]`: seconds of layer i on unit p (inf: p cannot run it); `send[j, q, p]`: seconds
    unit p spends receiving layer j's output from unit q; `input_send[p]`: receiving the network
    input from the host; `dram[i, p]`: main-memory bytes of layer i on an accelerator p (shared
    `bandwidth` in bytes/s among all accelerators); `memory[i, p]` bytes layer i keeps in unit p's
    `budget[p]`; `cpu_cap`: the fraction of the period the host may compute (None: no cap).
    `send[j, q, p]` are the seconds the move occupies its `payer`."""

    layers: tuple[str, ...]
    units: tuple[str, ...]
    host: int
    time: np.ndarray
    edges: tuple[tuple[int, int], ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    send: np.ndarray
    input_send: np.ndarray
    dram: np.ndarray
    bandwidth: float = math.inf
    memory: np.ndarray | None = None
    budget: np.ndarray | None = None
    cpu_cap: float | None = None

    @property
    def n(self) -> int:
        return len(self.layers)

    @property
    def m(self) -> int:
        return len(self.units)

    def allowed(self, layer: int) -> tuple[int, ...]:
        """The units that can run `layer` (finite time, and its memory fits the unit's budget)."""
        return tuple(p for p in range(self.m) if math.isfinite(self.time[layer, p])
                     and (self.memory is None or self.memory[layer, p] <= self.budget[p]))

    def payer(self, source: int, target: int) -> int:
        """The unit a move from `source` to `target` occupies: the accelerator end."""
        return source if target == self.host else target

    @cached_property
    def cuts(self) -> frozenset[int]:
        """The positions `c` (0 < c < n) where exactly one tensor crosses from the layers before
        `c` to those from `c` on (a network output counts as read after the last layer), and it
        is a layer's output, not the network input: where an accelerator's stage may begin."""
        found = set()
        for c in range(1, self.n):
            crossing = {j for j, i in self.edges if j < c <= i} | {j for j in self.outputs if j < c}
            if len(crossing) == 1 and not any(i >= c for i in self.inputs):
                found.add(c)
        return frozenset(found)

    def predecessors(self) -> list[list[int]]:
        preds: list[list[int]] = [[] for _ in range(self.n)]
        for j, i in self.edges:
            preds[i].append(j)
        return preds


def received(problem: Problem, mapping: Mapping) -> list[tuple[int, int, int]]:
    """The transfers a mapping needs, as (tensor, from unit, to unit); tensor -1 is the input."""
    moves = {(-1, problem.host, mapping[i]) for i in problem.inputs if mapping[i] != problem.host}
    moves |= {(j, mapping[j], mapping[i]) for j, i in problem.edges if mapping[j] != mapping[i]}
    moves |= {(j, mapping[j], problem.host) for j in problem.outputs if mapping[j] != problem.host}
    return sorted(moves)


def transfer_time(problem: Problem, tensor: int, source: int, target: int) -> float:
    return float(problem.input_send[target] if tensor < 0 else problem.send[tensor, source, target])


def loads(problem: Problem, mapping: Mapping) -> np.ndarray:
    """Seconds each unit is busy per image: its layers plus the moves it pays for."""
    busy = np.zeros(problem.m)
    for i, p in enumerate(mapping):
        busy[p] += problem.time[i, p]
    for tensor, source, target in received(problem, mapping):
        busy[problem.payer(source, target)] += transfer_time(problem, tensor, source, target)
    return busy


def single_handovers(problem: Problem, mapping: Mapping) -> bool:
    """Every run of layers on an accelerator begins at 0 or at one of `Problem.cuts`."""
    return all(c in problem.cuts for c in range(1, problem.n)
               if mapping[c] != mapping[c - 1] and mapping[c] != problem.host)


def feasible(problem: Problem, mapping: Mapping) -> bool:
    """Every layer on a unit that can run it, each accelerator's run beginning where one tensor
    crosses, and each unit's memory within its budget."""
    if any(p not in problem.allowed(i) for i, p in enumerate(mapping)) or not single_handovers(problem, mapping):
        return False
    if problem.memory is None:
        return True
    used = np.zeros(problem.m)
    for i, p in enumerate(mapping):
        used[p] += problem.memory[i, p]
    return bool(np.all(used <= problem.budget))


def host_compute(problem: Problem, mapping: Mapping) -> float:
    return float(sum(problem.time[i, p] for i, p in enumerate(mapping) if p == problem.host))


def cap_period(problem: Problem, mapping: Mapping) -> float:
    """The shortest period the host's CPU cap allows (0 without a cap or host work)."""
    work = host_compute(problem, mapping)
    if problem.cpu_cap is None or work == 0:
        return 0.0
    return work / problem.cpu_cap if problem.cpu_cap > 0 else math.inf


def memory_seconds(problem: Problem, mapping: Mapping) -> float:
    """Seconds of the shared main memory per image at its full bandwidth."""
    return float(sum(problem.dram[i, p] for i, p in enumerate(mapping))) / problem.bandwidth


def stage_period(problem: Problem, mapping: Mapping) -> float:
    """The period the ILP models: the busiest unit, the shared memory's time per image and the
    host's compute over its cap (inf for an infeasible mapping)."""
    if not feasible(problem, mapping):
        return math.inf
    return max(float(loads(problem, mapping).max()), memory_seconds(problem, mapping), cap_period(problem, mapping))


def contiguous(mapping: Mapping) -> bool:
    """Each unit runs one contiguous run of layers in the problem's (topological) order."""
    seen: set[int] = set()
    for index, unit in enumerate(mapping):
        if unit in seen and mapping[index - 1] != unit:
            return False
        seen.add(unit)
    return True
