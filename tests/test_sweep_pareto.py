"""Pareto fronts against a brute-force O(n^2) dominance check."""
from __future__ import annotations

import random

import pytest

from explore.sweep.pareto import FRONTS, applicable, pareto_front


def dominated(p, points) -> bool:
    return any(q[0] <= p[0] and q[1] <= p[1] and (q[0] < p[0] or q[1] < p[1]) for q in points)


@pytest.mark.parametrize("seed", range(40))
def test_front_is_exactly_the_non_dominated_points(seed):
    rng = random.Random(seed)
    n = rng.randint(0, 60)
    grid = rng.choice([5, 20, 1000])  # small grids give many ties and duplicates
    points = [(rng.randint(0, grid), rng.randint(0, grid), i) for i in range(n)]
    front = pareto_front(points, lambda p: p[0], lambda p: p[1])
    non_dominated = [p for p in points if not dominated(p, points)]
    first_of_equals = [p for p in non_dominated if not any(q[:2] == p[:2] and q[2] < p[2] for q in points)]
    assert sorted(front, key=lambda p: p[2]) == first_of_equals
    assert [p[:2] for p in front] == sorted(p[:2] for p in front)  # ordered by x, then y


def test_float_costs_and_named_fronts_use_synthesis_when_measured():
    rows = [
        {"status": "ok", "label": "a", "latency_s": 2e-3, "est_dsp": 10, "est_lut": 900, "area_pct": 5.0,
         "energy_pj": 3e9},
        {"status": "ok", "label": "b", "latency_s": 1e-3, "est_dsp": 20, "synth_dsp": 12, "est_lut": 1000,
         "area_pct": 9.0, "energy_pj": 2e9},
        {"status": "ok", "label": "c", "latency_s": 3e-3, "est_dsp": 30, "est_lut": 800, "area_pct": 4.0,
         "energy_pj": 1e9},
        {"status": "infeasible", "label": "d", "latency_s": 1e-4, "est_dsp": 1, "est_lut": 1, "area_pct": 400.0,
         "energy_pj": 1e6},
        {"status": "ok", "label": "f", "latency_s": 1.5e-3, "est_dsp": 15, "est_lut": 1100, "area_pct": 9.5,
         "energy_pj": 2.5e9},
        {"status": "ok", "label": "e", "latency_s": 5e-3, "est_dsp": 40, "est_lut": 5000, "area_pct": 50.0,
         "energy_pj": 5e9},
    ]
    fronts = {front.name: [row["label"] for row in front.front(rows)] for front in applicable(rows)}
    # b's measured 12 DSPs (not its estimate of 20) dominate f's 15
    assert fronts == {"latency_vs_dsp": ["a", "b"], "latency_vs_lut": ["c", "a", "b"], "energy_vs_area": ["c"]}
    rows[0]["period_s"], rows[2]["period_s"] = 1e-3, 5e-4  # pipelined instances: the period's front appears
    period = next(front for front in applicable(rows) if front.name == "period_vs_dsp")
    assert [row["label"] for row in period.front(rows)] == ["a", "c"]


def test_of_equal_points_the_front_keeps_the_one_using_least_of_the_device():
    rows = [{"status": "ok", "label": label, "latency_s": 1e-3, "est_dsp": 10, "est_lut": 900, "area_pct": area,
             "energy_pj": 1e9} for label, area in (("big buffers", 30.0), ("small buffers", 20.0), ("same", 20.0))]
    assert [row["label"] for row in FRONTS[0].front(rows)] == ["small buffers"]
