"""Random scheduling problems for the scheduler tests (`scheduler.problem.Problem`)."""
from __future__ import annotations

import math

import numpy as np

from scheduler.problem import Problem


def random_problem(seed: int, layers: int, units: int, *, bandwidth: float = math.inf, cpu_cap: float | None = None,
                   budget: float | None = None, branches: bool = True) -> Problem:
    """A DAG of `layers` layers in topological order (a chain plus, with `branches`, skip edges),
    unit 0 the host (runs everything), the others accelerators that cannot run about one layer in
    six; times, transfers, bytes and memory drawn from `seed`."""
    rng = np.random.default_rng(seed)
    n, m = layers, units
    time = rng.uniform(1.0, 10.0, (n, m))
    time[:, 0] *= 3.0  # the host is slower
    for i in range(n):
        if m > 1 and rng.random() < 1 / 6:
            time[i, 1:] = math.inf
    edges = {(i - 1, i) for i in range(1, n)}
    if branches:
        for i in range(2, n):
            if rng.random() < 0.3:
                edges.add((int(rng.integers(0, i - 1)), i))
    consumed = {j for j, _ in edges}
    send = rng.uniform(0.1, 2.0, (n, m, m))
    send[:, 1:, 1:] = 0.0  # accelerators hand over through the shared memory
    input_send = np.concatenate([[0.0], rng.uniform(0.1, 2.0, m - 1)])
    dram = rng.uniform(0.0, 5.0, (n, m))
    dram[:, 0] = 0.0
    memory = rng.uniform(0.0, 3.0, (n, m)) if budget is not None else None
    budgets = np.full(m, budget) if budget is not None else None
    return Problem(tuple(f"L{i}" for i in range(n)), tuple(["host"] + [f"acc{p}" for p in range(1, m)]), 0, time,
                   tuple(sorted(edges)), (0,), tuple(i for i in range(n) if i not in consumed), send, input_send, dram,
                   bandwidth, memory, budgets, cpu_cap)
