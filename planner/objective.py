"""Search objectives and the deterministic ranking of schedules."""
from __future__ import annotations

from enum import Enum


class Objective(str, Enum):
    """What the planner minimises per layer."""

    LATENCY = "latency"
    TRAFFIC = "traffic"
    ENERGY = "energy"
    EDP = "edp"

    def __str__(self) -> str:
        return self.value


def rank(objective: Objective, cycles, dram_bytes, energy_pj) -> tuple:
    """The ranking key (smaller wins): the objective, then the other metrics as tie-breakers.
    Callers append the schedule's own key so that every tie is broken deterministically."""
    if objective is Objective.LATENCY:
        return (cycles, dram_bytes, energy_pj)
    if objective is Objective.TRAFFIC:
        return (dram_bytes, energy_pj, cycles)
    if objective is Objective.ENERGY:
        return (energy_pj, dram_bytes, cycles)
    return (cycles * energy_pj, cycles, dram_bytes)
