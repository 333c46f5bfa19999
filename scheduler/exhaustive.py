"""Exhaustive search: the reference the ILP and the GA are tested and benchmarked against."""
from __future__ import annotations

import itertools
import math

from scheduler.problem import Mapping, Problem, contiguous, feasible, stage_period


def mappings(problem: Problem, only_contiguous: bool) -> list[Mapping]:
    """Every feasible mapping (contiguous ones only if asked)."""
    found = []
    for mapping in itertools.product(*(problem.allowed(i) for i in range(problem.n))):
        if (not only_contiguous or contiguous(mapping)) and feasible(problem, mapping):
            found.append(mapping)
    return found


def best_contiguous(problem: Problem) -> tuple[Mapping | None, float]:
    """The contiguous mapping of least modelled period (None, inf when none is feasible)."""
    best, period = None, math.inf
    for mapping in mappings(problem, True):
        value = stage_period(problem, mapping)
        if value < period:
            best, period = mapping, value
    return best, period
