"""A genetic algorithm over any mapping (contiguous or not), judged by the simulator.

A genome gives each layer's unit. The first population holds, as in the source document,
each unit's "everything here" mapping (layers it cannot run on the host) and clustered
genomes: runs of about n / units layers, each on one unit. Each generation keeps the best
`ELITE`, adds `IMMIGRANTS` new clustered genomes, and fills the rest by tournament selection,
uniform crossover and one mutation: a gene set to another allowed unit, copied from a
neighbour (which grows or shrinks a run), a whole run moved to another unit, or two units
trading all their layers. Fitness is `scheduler.simulator.judged_period` (cached per genome).
With `only_contiguous`, non-contiguous genomes are infeasible, which makes the ILP's optimum
the best the GA can reach. Runs are deterministic for a seed.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from scheduler.problem import Mapping, Problem, contiguous, feasible
from scheduler.simulator import judged_period

ELITE = 2
IMMIGRANTS = 4
TOURNAMENT = 3
CROSSOVER = 0.7


@dataclass(frozen=True)
class GaResult:
    mapping: Mapping
    period: float  # seconds, as the simulator judges it
    seconds: float
    generations: int
    evaluations: int


def solve(problem: Problem, images: int, *, seed: int = 0, population: int = 32, generations: int = 80,
          stagnation: int = 30, only_contiguous: bool = False) -> GaResult:
    """The best mapping found; stops after `generations` or `stagnation` generations without gain."""
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    allowed = [problem.allowed(i) for i in range(problem.n)]
    cache: dict[Mapping, float] = {}

    def fitness(genome: Mapping) -> float:
        if genome not in cache:
            ok = feasible(problem, genome) and (not only_contiguous or contiguous(genome))
            cache[genome] = judged_period(problem, genome, images) if ok else math.inf
        return cache[genome]

    pool = [tuple(p if p in allowed[i] else problem.host for i in range(problem.n)) for p in range(problem.m)]
    pool += [_clustered(problem, allowed, rng) for _ in range(population - len(pool))]
    best = min(pool, key=fitness)
    still, generation = 0, 0
    for generation in range(1, generations + 1):
        ranked = sorted(pool, key=fitness)
        children = ranked[:ELITE] + [_clustered(problem, allowed, rng) for _ in range(IMMIGRANTS)]
        while len(children) < population:
            a, b = _pick(ranked, fitness, rng), _pick(ranked, fitness, rng)
            child = _cross(a, b, rng) if rng.random() < CROSSOVER else a
            children.append(_mutate(child, allowed, rng))
        pool = children
        leader = min(pool, key=fitness)
        if fitness(leader) < fitness(best):
            best, still = leader, 0
        else:
            still += 1
            if still >= stagnation:
                break
    return GaResult(best, fitness(best), time.perf_counter() - started, generation, len(cache))


def _clustered(problem: Problem, allowed: list[tuple[int, ...]], rng: np.random.Generator) -> Mapping:
    """Runs of about n / units layers (x U(3/4, 5/4)), each run on a unit other than the last one's."""
    genes: list[int] = []
    unit = int(rng.integers(problem.m))
    while len(genes) < problem.n:
        length = max(1, round(problem.n / problem.m * rng.uniform(0.75, 1.25)))
        genes += [unit] * length
        if problem.m > 1:
            unit = int((unit + rng.integers(1, problem.m)) % problem.m)
    return tuple(g if g in allowed[i] else int(rng.choice(allowed[i])) for i, g in enumerate(genes[:problem.n]))


def _pick(ranked: list[Mapping], fitness, rng: np.random.Generator) -> Mapping:
    contenders = rng.choice(len(ranked), size=min(TOURNAMENT, len(ranked)), replace=False)
    return min((ranked[int(c)] for c in contenders), key=fitness)


def _cross(a: Mapping, b: Mapping, rng: np.random.Generator) -> Mapping:
    take = rng.random(len(a)) < 0.5
    return tuple(x if t else y for x, y, t in zip(a, b, take))


def _mutate(genome: Mapping, allowed: list[tuple[int, ...]], rng: np.random.Generator) -> Mapping:
    genes = list(genome)
    i = int(rng.integers(len(genes)))
    kind = int(rng.integers(4))
    if kind == 0:
        genes[i] = int(rng.choice(allowed[i]))
    elif kind == 1 and len(genes) > 1:
        neighbour = i - 1 if i == len(genes) - 1 or (i > 0 and rng.random() < 0.5) else i + 1
        if genes[neighbour] in allowed[i]:
            genes[i] = genes[neighbour]
    elif kind == 2:
        first, last = i, i
        while first > 0 and genes[first - 1] == genes[i]:
            first -= 1
        while last < len(genes) - 1 and genes[last + 1] == genes[i]:
            last += 1
        choices = sorted(set.intersection(*(set(allowed[k]) for k in range(first, last + 1))))
        genes[first:last + 1] = [int(rng.choice(choices))] * (last + 1 - first)
    else:
        a, b = genes[i], int(rng.choice(sorted({u for units in allowed for u in units})))
        swapped = [b if g == a else a if g == b else g for g in genes]
        if all(g in allowed[k] for k, g in enumerate(swapped)):
            genes = swapped
    return tuple(genes)
