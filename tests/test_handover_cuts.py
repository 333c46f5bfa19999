"""Stages on accelerators begin only where one tensor crosses (`scheduler.problem.Problem.cuts`):
on a ResNet-like network the cut points equal those the stage compiler
(`planner.compile.stages.stage_networks`) accepts, and every boundary the ILP picks compiles while
the ILP still equals brute force."""
from __future__ import annotations

from dataclasses import replace
from functools import cache

import numpy as np
import pytest
from onnx_factory import GraphBuilder
from soc_helpers import TINY

from common.errors import PlanningError
from hwgen.config import config_from_dict
from planner.compile.stages import stage_networks
from planner.frontend import load_network
from planner.ir import Network
from scheduler import exhaustive, ilp
from scheduler.instances import instances_problem
from scheduler.problem import Mapping, Problem
from sim.golden.calibration import quantize_network

INPUT = (2, 4, 4)


@cache
def resnet_like() -> Network:
    """A stem convolution and two residual blocks (two convolutions and an Add each), a head convolution."""
    g = GraphBuilder((1, *INPUT), seed=3)
    x = g.node("Relu", [g.conv(g.input_name, 2, 4)])
    for _ in range(2):
        branch = g.conv(g.node("Relu", [g.conv(x, 4, 4)]), 4, 4)
        x = g.node("Relu", [g.node("Add", [branch, x])])
    model = g.model(g.conv(x, 4, 2))
    calibration = np.random.default_rng(0).standard_normal((4, *INPUT)).astype(np.float32)
    return quantize_network(load_network(model), calibration)


@cache
def problem() -> Problem:
    config = config_from_dict(dict(TINY.to_dict(), name="tiny-x3", instances=3))
    return instances_problem(resnet_like(), config)


def compiles(starts: list[int]) -> bool:
    try:
        stage_networks(resnet_like(), starts)
    except PlanningError:
        return False
    return True


def stage_starts(mapping: Mapping) -> list[int]:
    return [i for i, unit in enumerate(mapping) if i == 0 or unit != mapping[i - 1]]


def test_cut_points_are_those_the_stage_compiler_accepts():
    net, cuts = resnet_like(), problem().cuts
    assert len(net.layers) == problem().n == 8
    assert cuts == {c for c in range(1, len(net.layers)) if compiles([0, c])}
    assert 0 < len(cuts) < len(net.layers) - 1  # the residual blocks bar some cuts


def test_ilp_stages_compile_and_equal_brute_force():
    """Random layer times on the real graph: the ILP's optimum is brute force's, and its stage
    boundaries compile. Without the rule (edges of a chain: every cut allowed) some optima would
    not compile, so the rule binds."""
    base, binding = problem(), 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        time = base.time.copy()
        accelerators = np.isfinite(time[:, 1:])
        time[:, 1:][accelerators] = rng.uniform(1.0, 10.0, accelerators.sum()) * 1e-6
        timed = replace(base, time=time)
        result = ilp.solve(timed)
        _, period = exhaustive.best_contiguous(timed)
        assert result.period == pytest.approx(period, rel=1e-6)
        assert compiles(stage_starts(result.mapping))
        chain = replace(timed, edges=tuple((i - 1, i) for i in range(1, timed.n)))
        free, free_period = exhaustive.best_contiguous(chain)
        assert free_period <= period * (1 + 1e-9)
        binding += not compiles(stage_starts(free))
    assert binding > 0
