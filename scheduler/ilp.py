"""The stage-per-unit ILP: each unit runs one contiguous run of layers in the problem's
topological order; minimise the period (scipy.optimize.milp, HiGHS).

Variables: the period T; x[p, i] = layer i on unit p; s[p, i] = unit p's run starts at i (at
most one start per unit; an accelerator's only at 0 or at one of `Problem.cuts`, where one
tensor crosses); y[j, q, p] >= 1 when unit p receives layer j's output from q (y_in[p] for
the network input). Constraints: one unit per layer; per unit, its layers' time
plus the moves it pays for (`Problem.payer`) <= T; all accelerators' main-memory bytes / bandwidth <= T; the host's
compute <= cap * T; per unit, its layers' memory <= its budget. Times are scaled to the
largest finite time so that HiGHS works near 1.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix

from common.errors import PlanningError
from scheduler.problem import Mapping, Problem, stage_period

GAP = 1e-9  # relative MIP gap: the optimum, not a near one


@dataclass(frozen=True)
class IlpResult:
    mapping: Mapping
    period: float  # seconds, the model's (`scheduler.problem.stage_period`)
    seconds: float  # solve time


class _Model:
    """Variables by name, constraint rows as (coefficients, lower, upper)."""

    def __init__(self) -> None:
        self.index: dict[tuple, int] = {}
        self.integral: list[int] = []
        self.upper: list[float] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []

    def var(self, key: tuple, integral: bool, upper: float = 1.0) -> int:
        self.index[key] = len(self.index)
        self.integral.append(int(integral))
        self.upper.append(upper)
        return self.index[key]

    def row(self, coefficients: dict[int, float], lower: float, upper: float) -> None:
        self.rows.append((coefficients, lower, upper))


def solve(problem: Problem, time_limit: float = 60.0) -> IlpResult:
    """The optimal contiguous mapping (PlanningError when none is feasible or HiGHS stops early)."""
    started = time.perf_counter()
    n, m, host = problem.n, problem.m, problem.host
    finite = problem.time[np.isfinite(problem.time)]
    scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    model = _Model()
    period = model.var(("T",), False, math.inf)
    x = {(p, i): model.var(("x", p, i), True, 1.0 if p in problem.allowed(i) else 0.0)
         for p in range(m) for i in range(n)}
    load: list[dict[int, float]] = [{period: 1.0} for _ in range(m)]
    for (p, i), v in x.items():
        if p in problem.allowed(i):
            load[p][v] = -problem.time[i, p] / scale
    for i in range(n):
        model.row({x[p, i]: 1.0 for p in range(m)}, 1, 1)
    for p in range(m):
        starts = []
        for i in range(n):
            barred = p != host and 0 < i and i not in problem.cuts
            s = model.var(("s", p, i), False, 0.0 if barred else 1.0)
            starts.append(s)
            model.row({s: 1.0, x[p, i]: -1.0, **({x[p, i - 1]: 1.0} if i else {})}, 0, math.inf)
        model.row({s: 1.0 for s in starts}, -math.inf, 1)
    _receptions(problem, model, x, load, scale)
    for p in range(m):
        model.row(load[p], 0, math.inf)
    if math.isfinite(problem.bandwidth):
        model.row({period: 1.0, **{x[p, i]: -problem.dram[i, p] / problem.bandwidth / scale
                                   for p in range(m) for i in range(n) if problem.dram[i, p]}}, 0, math.inf)
    if problem.cpu_cap is not None:
        model.row({period: problem.cpu_cap, **{x[host, i]: -problem.time[i, host] / scale
                                               for i in range(n) if host in problem.allowed(i)}}, 0, math.inf)
    if problem.memory is not None:
        for p in range(m):
            model.row({x[p, i]: float(problem.memory[i, p]) for i in range(n)}, -math.inf, float(problem.budget[p]))
    mapping = _solve(problem, model, x, time_limit)
    return IlpResult(mapping, stage_period(problem, mapping), time.perf_counter() - started)


def _receptions(problem: Problem, model: _Model, x: dict, load: list[dict[int, float]], scale: float) -> None:
    """y variables and their rows: each tensor moves once to each unit that reads it."""
    host, m = problem.host, problem.m
    for p in range(m):
        if p != host and problem.inputs:
            y = model.var(("in", p), False)
            load[p][y] = -problem.input_send[p] / scale
            for i in problem.inputs:
                model.row({y: 1.0, x[p, i]: -1.0}, 0, math.inf)
    consumers: dict[int, list[int]] = {}
    for j, i in problem.edges:
        consumers.setdefault(j, []).append(i)
    for j in range(problem.n):
        for q in range(m):
            for p in range(m):
                reads = consumers.get(j, [])
                if q == p or not (reads or (j in problem.outputs and p == host)):
                    continue
                y = model.var(("y", j, q, p), False)
                load[problem.payer(q, p)][y] = -problem.send[j, q, p] / scale
                for i in reads:
                    model.row({y: 1.0, x[q, j]: -1.0, x[p, i]: -1.0}, -1, math.inf)
                if j in problem.outputs and p == host:
                    model.row({y: 1.0, x[q, j]: -1.0}, 0, math.inf)


def _solve(problem: Problem, model: _Model, x: dict, time_limit: float) -> Mapping:
    matrix = lil_matrix((len(model.rows), len(model.index)))
    lower, upper = [], []
    for r, (coefficients, lo, hi) in enumerate(model.rows):
        for column, value in coefficients.items():
            matrix[r, column] += value
        lower.append(lo)
        upper.append(hi)
    cost = np.zeros(len(model.index))
    cost[model.index[("T",)]] = 1.0
    result = milp(cost, constraints=LinearConstraint(matrix.tocsr(), lower, upper),
                  integrality=np.array(model.integral), bounds=Bounds(0, np.array(model.upper)),
                  options={"time_limit": time_limit, "mip_rel_gap": GAP})
    if result.status == 2:
        raise PlanningError(f"no contiguous schedule of {problem.n} layers on units {', '.join(problem.units)} "
                            f"meets the constraints: {_culprit(problem)}")
    if result.status != 0:
        raise PlanningError(f"the ILP solver stopped without a proven optimum ({result.message}); "
                            f"allowed: a longer time limit or fewer layers/units")
    return tuple(int(np.argmax([result.x[x[p, i]] for p in range(problem.m)])) for i in range(problem.n))


def _culprit(problem: Problem) -> str:
    """The first layer that no allowed unit can take, or the constraints in general."""
    for i in range(problem.n):
        units = problem.allowed(i)
        if not units:
            return f"layer {problem.layers[i]!r} fits no unit's memory budget"
        if problem.cpu_cap == 0 and units == (problem.host,):
            return (f"layer {problem.layers[i]!r} runs only on the host, whose CPU cap is 0 "
                    "(allowed: a cap above 0, or an accelerator that compiles it)")
    return ("the memory budgets, the CPU cap and the cut points where one tensor crosses leave no contiguous "
            "order of stages")
