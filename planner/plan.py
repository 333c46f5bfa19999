"""Whole-network plans: per-layer schedules and predicted costs, schedule caching, save / load.

Identical layers (same loop bounds and window, or same streamed shape) are planned once and the
schedule is reused. Plans are written atomically as YAML or JSON (by file suffix) with a
schema version, and load back to an equal `NetworkPlan`.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path

import yaml

from hwgen.config import AcceleratorConfig
from planner import eplanner, search
from common.errors import PlanningError
from common.files import atomic_write_text
from planner.ir import COMPUTE_OPS, Layer, Network, Op
from planner.objective import Objective
from planner.schedule import ConvShape, Schedule
from planner.vector_cost import stream_cost

SCHEMA_VERSION = 1


class Strategy(str, Enum):
    """How conv / FC layers are scheduled."""

    SEARCH = "search"
    EPLANNER = "eplanner"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class LayerPlan:
    """The schedule of one layer and its predicted cost."""

    name: str
    op: str
    tiles: dict[str, int]
    order: tuple[str, ...]
    input_bytes: int
    weight_bytes: int
    output_bytes: int
    cycles: int
    compute_cycles: int
    dma_cycles: int
    utilization: float
    energy_pj: float
    macs: int
    candidates: int
    search_seconds: float
    reused: bool = False

    @property
    def dram_bytes(self) -> int:
        return self.input_bytes + self.weight_bytes + self.output_bytes

    @property
    def schedule(self) -> Schedule | None:
        """The conv / fc schedule the compiler follows (None for pooling, add and concat)."""
        if self.op not in (Op.CONV.value, Op.FC.value):
            return None
        return Schedule(self.tiles["OC"], self.tiles["IC"], self.tiles["OH"], self.tiles["OW"], tuple(self.order))

    @property
    def bound(self) -> str:
        return "compute" if self.compute_cycles >= self.dma_cycles else "memory"


@dataclass(frozen=True)
class NetworkPlan:
    """Plans of every layer of a network, in network order."""

    network: str
    config: str
    objective: str
    strategy: str
    layers: tuple[LayerPlan, ...]
    schema_version: int = field(default=SCHEMA_VERSION)

    @property
    def planned(self) -> int:
        return sum(not layer.reused for layer in self.layers)

    @property
    def reused(self) -> int:
        return sum(layer.reused for layer in self.layers)

    @property
    def dram_bytes(self) -> int:
        return sum(layer.dram_bytes for layer in self.layers)

    @property
    def cycles(self) -> int:
        return sum(layer.cycles for layer in self.layers)

    @property
    def energy_pj(self) -> float:
        return sum(layer.energy_pj for layer in self.layers)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["layers"] = [dict(asdict(layer), order=list(layer.order)) for layer in self.layers]
        return out

    @classmethod
    def from_dict(cls, data: dict, source: str = "<plan>") -> NetworkPlan:
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version != SCHEMA_VERSION:
            raise PlanningError(f"{source}: schema_version {version!r} is not supported; expected {SCHEMA_VERSION}")
        try:
            layers = tuple(LayerPlan(**dict(layer, order=tuple(layer["order"]))) for layer in data["layers"])
            return cls(data["network"], data["config"], data["objective"], data["strategy"], layers, version)
        except (KeyError, TypeError) as error:
            raise PlanningError(f"{source}: malformed plan ({error})") from error


def _cache_key(layer: Layer):
    if layer.op in COMPUTE_OPS:
        return ConvShape.of(layer)
    return (layer.op, layer.in_shapes, layer.out_shape, layer.kernel, layer.stride, layer.pads)


def plan_layer(layer: Layer, config: AcceleratorConfig, objective: Objective = Objective.LATENCY,
               strategy: Strategy = Strategy.SEARCH) -> LayerPlan:
    """Schedule one layer (PlanningError names the layer when nothing fits)."""
    if layer.op not in COMPUTE_OPS:
        c = stream_cost(layer, config)  # the compiler's tiling: nothing to choose
        return LayerPlan(layer.name, str(layer.op), {"C": c.channels}, ("C",), c.input_bytes, c.weight_bytes,
                         c.output_bytes, c.cycles, c.compute_cycles, c.dma_cycles, 0.0, c.energy_pj, 0, 1, 0.0)
    shape = ConvShape.of(layer)
    if strategy is Strategy.EPLANNER:
        result = eplanner.plan_layer(shape, config, layer.macs, layer.name)
    else:
        result = search.search(shape, config, layer.macs, objective, layer.name)
    s, c = result.schedule, result.cost
    return LayerPlan(layer.name, str(layer.op), s.tiles, s.order, c.input_bytes, c.weight_bytes, c.output_bytes,
                     c.cycles, c.compute_cycles, c.dma_cycles, c.utilization, c.energy_pj, c.macs,
                     result.candidates, result.seconds)


def plan_network(network: Network, config: AcceleratorConfig, objective: Objective = Objective.LATENCY,
                 strategy: Strategy = Strategy.SEARCH) -> NetworkPlan:
    """Plan every layer; identical layers reuse the first one's schedule."""
    cache: dict = {}
    layers = []
    for layer in network.layers:
        key = _cache_key(layer)
        if key in cache:
            first = cache[key]
            layers.append(LayerPlan(**dict(asdict(first), name=layer.name, op=str(layer.op), order=first.order,
                                           candidates=0, search_seconds=0.0, reused=True)))
        else:
            cache[key] = plan_layer(layer, config, objective, strategy)
            layers.append(cache[key])
    return NetworkPlan(network.name, config.name, str(objective), str(strategy), tuple(layers))


def save_plan(plan: NetworkPlan, path: str | Path) -> Path:
    """Write the plan as JSON (`.json`) or YAML (anything else), atomically."""
    path = Path(path)
    data = plan.to_dict()
    text = json.dumps(data, indent=2) if path.suffix == ".json" else yaml.safe_dump(data, sort_keys=False)
    return atomic_write_text(path, text)


def load_plan(path: str | Path) -> NetworkPlan:
    """Read a plan written by `save_plan`."""
    path = Path(path)
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except OSError as error:
        raise PlanningError(f"{path}: cannot read ({error.strerror})") from error
    except (ValueError, yaml.YAMLError) as error:
        raise PlanningError(f"{path}: not a valid plan file ({error})") from error
    return NetworkPlan.from_dict(data, str(path))
