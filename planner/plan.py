"""Whole-network plans: per-layer schedules and predicted costs, schedule caching, save / load.

Identical layers (same loop bounds and window, or same streamed shape) are planned once and the
schedule is reused. Plans are written atomically as YAML or JSON (by file suffix) with a
schema version, and load back to an equal `NetworkPlan`.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from enum import Enum
from pathlib import Path

import yaml

from hwgen.config import AcceleratorConfig, VectorOp
from planner import eplanner, search
from common.errors import PlanningError
from common.files import atomic_write_text
from planner.ir import COMPUTE_OPS, Layer, Network, Op
from planner.envelope import check_network
from planner.layer_cost import LayerCost
from planner.fusion import fusable_pools, fuse_pools, fused_layer, pool_after
from planner.split import split_shapes
from planner.objective import Objective, rank
from planner.schedule import ConvShape, Schedule
from planner.vector_cost import stream_channels, stream_cost

SCHEMA_VERSION = 1


class Strategy(str, Enum):
    """How conv / FC layers are scheduled."""

    SEARCH = "search"
    EPLANNER = "eplanner"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class LayerPlan:
    """The schedule of one layer (`tiles`, loop `order`), its predicted cost and how planning
    went (`candidates` scored in `search_seconds`; `reused`: another layer's schedule); `pool`:
    the max pool fused into it (`planner.fusion`; its own plan is then left out)."""

    name: str
    op: str
    tiles: dict[str, int]
    order: tuple[str, ...]
    cost: LayerCost
    candidates: int
    search_seconds: float
    reused: bool = False
    pool: int = 1

    @property
    def schedule(self) -> Schedule | None:
        """The conv / fc schedule the compiler follows (None for pooling, add and concat)."""
        if self.op not in (Op.CONV.value, Op.FC.value):
            return None
        return Schedule(self.tiles["OC"], self.tiles["IC"], self.tiles["OH"], self.tiles["OW"], tuple(self.order),
                        self.pool)

    def to_dict(self) -> dict:
        """The plan file's record of the layer: the cost's fields between the schedule's and the
        planning's."""
        return {"name": self.name, "op": self.op, "tiles": dict(self.tiles), "order": list(self.order),
                **asdict(self.cost), "candidates": self.candidates, "search_seconds": self.search_seconds,
                "reused": self.reused, "pool": self.pool}

    @classmethod
    def from_dict(cls, data: dict) -> LayerPlan:
        """Read a `to_dict` record (KeyError or TypeError when malformed)."""
        record = dict(data)
        cost = LayerCost(**{f.name: record.pop(f.name) for f in fields(LayerCost)})
        return cls(**dict(record, order=tuple(record["order"]), cost=cost))


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
        return sum(layer.cost.dram_bytes for layer in self.layers)

    @property
    def cycles(self) -> int:
        return sum(layer.cost.cycles for layer in self.layers)

    @property
    def energy_pj(self) -> float:
        return sum(layer.cost.energy_pj for layer in self.layers)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["layers"] = [layer.to_dict() for layer in self.layers]
        return out

    @classmethod
    def from_dict(cls, data: dict, source: str = "<plan>") -> NetworkPlan:
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version != SCHEMA_VERSION:
            raise PlanningError(f"{source}: schema_version {version!r} is not supported; expected {SCHEMA_VERSION}")
        try:
            layers = tuple(LayerPlan.from_dict(layer) for layer in data["layers"])
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
        # the compiler's tiling: nothing to choose
        return LayerPlan(layer.name, str(layer.op), {"C": stream_channels(layer, config)}, ("C",),
                         stream_cost(layer, config), 1, 0.0)
    shape = ConvShape.of(layer)
    if strategy is Strategy.EPLANNER:
        result = eplanner.plan_layer(shape, config, layer.macs, layer.name)
    else:
        result = search.search(shape, config, layer.macs, objective, layer.name)
    s = result.schedule
    return LayerPlan(layer.name, str(layer.op), s.tiles, s.order, result.cost, result.candidates, result.seconds,
                     pool=layer.pool)


def plan_network(network: Network, config: AcceleratorConfig, objective: Objective = Objective.LATENCY,
                 strategy: Strategy = Strategy.SEARCH) -> NetworkPlan:
    """Plan every layer of the network as the compiler sees it (`planner.split`), max pools fused
    into their convolutions where that is legal and ranks better (`choose_fusions`), after
    checking that each can be compiled (`planner.envelope`); identical layers reuse the first
    one's schedule."""
    cache: dict = {}
    network = fuse_pools(network, choose_fusions(network, config, objective, strategy, cache), config)
    check_network(network, config)
    return NetworkPlan(network.name, config.name, str(objective), str(strategy),
                       tuple(_cached_plan(layer, config, objective, strategy, cache)
                             for layer in split_shapes(network, config).layers))


def _cached_plan(layer: Layer, config: AcceleratorConfig, objective: Objective, strategy: Strategy,
                 cache: dict) -> LayerPlan:
    """The layer's plan, or a copy of an identical layer's from `cache` (its own if it was
    planned before: `choose_fusions` plans layers apart and fused)."""
    key = _cache_key(layer)
    if key not in cache:
        cache[key] = plan_layer(layer, config, objective, strategy)
    first = cache[key]
    if first.name == layer.name:
        return first
    return replace(first, name=layer.name, op=str(layer.op), tiles=dict(first.tiles), candidates=0,
                   search_seconds=0.0, reused=True)


def choose_fusions(network: Network, config: AcceleratorConfig, objective: Objective, strategy: Strategy,
                   cache: dict) -> dict[str, int]:
    """The fusable pools (`planner.fusion.fusable_pools`) to fuse: each whose fused layer ranks
    no worse under `objective` than the convolution and the pool planned apart, and every one
    when the vector unit has no MAX."""
    chosen = {}
    vector_max = VectorOp.MAX in config.template.vector_ops
    for name, k in fusable_pools(network, config).items():
        if not vector_max:
            chosen[name] = k
            continue
        conv = network.layer(name)
        pool = pool_after(network, conv)
        try:
            fused = _cached_plan(fused_layer(conv, pool), config, objective, strategy, cache)
        except PlanningError:
            continue
        apart = [_cached_plan(layer, config, objective, strategy, cache).cost for layer in (conv, pool)]
        cost = fused.cost
        if rank(objective, cost.cycles, cost.dram_bytes, cost.energy_pj) <= rank(
                objective, sum(c.cycles for c in apart), sum(c.dram_bytes for c in apart),
                sum(c.energy_pj for c in apart)):
            chosen[name] = k
    return chosen


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
