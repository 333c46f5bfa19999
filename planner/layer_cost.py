"""The predicted cost of one layer: the record the cost models return and a layer plan keeps."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LayerCost:
    """DRAM bytes per tensor (weights: weights and parameter records), cycles (in all, of the
    compute unit and of the transfers), MAC utilization, energy and useful MACs of a layer's
    schedule."""

    input_bytes: int
    weight_bytes: int
    output_bytes: int
    cycles: int
    compute_cycles: int
    dma_cycles: int
    utilization: float
    energy_pj: float
    macs: int

    @property
    def dram_bytes(self) -> int:
        return self.input_bytes + self.weight_bytes + self.output_bytes

    @property
    def bound(self) -> str:
        return "compute" if self.compute_cycles >= self.dma_cycles else "memory"


def utilization(macs: int, cycles: int, peak_macs_per_cycle: int) -> float:
    """Useful MACs over the MAC slots of the whole layer time (0 without either)."""
    return macs / (cycles * peak_macs_per_cycle) if cycles and macs else 0.0
