"""Reuse of layer plans across the points of a sweep.

A layer's plan depends only on the configuration values the planner reads while planning it
(a pooling layer, for instance, does not read `pe.rows`). `LayerMemo` plans a layer on a
read-recording view of the configuration, keeps the plan under the values it read, and hands
it to any later configuration with the same values for those reads (the planner is
deterministic, so equal reads mean equal control flow and an equal plan). Nothing
is assumed about which fields matter: the planner may change freely. Layers whose plan never
repeats (convolutions read every swept field) stop being recorded after a few misses.

`network_totals` sums a network's plan like `planner.plan.plan_network` (identical layers are
planned once), through the memo.
"""
from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from functools import reduce
from typing import Any

from hwgen.config import AcceleratorConfig
from planner.ir import Network
from planner.objective import Objective
from planner.plan import LayerPlan, _cache_key, plan_layer

GIVE_UP_AFTER = 3  # misses without a single hit after which a layer is planned without recording


class RecordingView:
    """A read-only view of a frozen dataclass that records each attribute read (dotted path ->
    value) in `reads`. A view hashes by identity, so memoised planner functions
    (`functools.lru_cache`) always run their body on it and its reads are seen."""

    __slots__ = ("_target", "_path", "_reads", "_children")

    def __init__(self, target: Any, path: str, reads: dict[str, Any]):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_reads", reads)
        object.__setattr__(self, "_children", {})

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("__"):  # class metadata such as __dataclass_fields__
            return value
        path = f"{self._path}{name}"
        if inspect.ismethod(value) and value.__self__ is self._target:  # its reads go through the view too
            return value.__func__.__get__(self)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            if name not in self._children:
                self._children[name] = RecordingView(value, f"{path}.", self._reads)
            return self._children[name]
        self._reads[path] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    @property
    def __class__(self) -> type:  # isinstance() sees the viewed class
        return type(self._target)

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        """Compares like the viewed object (reading every field); hashes stay per view."""
        self._read_all()
        if isinstance(other, RecordingView):
            other._read_all()
            other = other._target
        return self._target == other

    def _read_all(self) -> None:
        for f in dataclasses.fields(self._target):
            value = getattr(self, f.name)
            if isinstance(value, RecordingView):
                value._read_all()


def read_path(config: AcceleratorConfig, path: str) -> Any:
    return reduce(getattr, path.split("."), config)


@dataclass
class _LayerEntry:
    path_sets: list[tuple[str, ...]] = dataclasses.field(default_factory=list)
    plans: dict[tuple, LayerPlan] = dataclasses.field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    @property
    def recording(self) -> bool:
        return self.hits > 0 or self.misses < GIVE_UP_AFTER


class LayerMemo:
    """Layer plans of one process, kept under the configuration values their planning read."""

    def __init__(self) -> None:
        self._layers: dict[tuple, _LayerEntry] = {}

    def plan(self, layer, config: AcceleratorConfig, objective: Objective) -> LayerPlan:
        """`plan_layer(layer, config, objective)`, reused when a recorded plan applies."""
        entry = self._layers.setdefault((_cache_key(layer), objective), _LayerEntry())
        for paths in entry.path_sets:
            found = entry.plans.get((paths, tuple(read_path(config, p) for p in paths)))
            if found is not None:
                entry.hits += 1
                return found
        entry.misses += 1
        if not entry.recording:
            return plan_layer(layer, config, objective)
        reads: dict[str, Any] = {}
        plan = plan_layer(layer, RecordingView(config, "", reads), objective)
        paths = tuple(sorted(reads))
        try:
            entry.plans[(paths, tuple(reads[p] for p in paths))] = plan
        except TypeError:  # an unhashable value was read: this layer cannot be memoised
            entry.hits, entry.misses = 0, GIVE_UP_AFTER
            return plan
        if paths not in entry.path_sets:
            entry.path_sets.append(paths)
        return plan

    @property
    def hits(self) -> int:
        return sum(entry.hits for entry in self._layers.values())


@dataclass(frozen=True)
class NetworkTotals:
    """What a sweep needs of a network plan."""

    cycles: int
    dram_bytes: int
    energy_pj: float
    macs: int


def network_totals(network: Network, config: AcceleratorConfig, objective: Objective, memo: LayerMemo) -> NetworkTotals:
    """Totals of `plan_network(network, config, objective)`, layer plans through `memo`."""
    unique: dict = {}
    for layer in network.layers:
        key = _cache_key(layer)
        if key not in unique:
            unique[key] = memo.plan(layer, config, objective)
    plans = [unique[_cache_key(layer)] for layer in network.layers]
    costs = [p.cost for p in plans]
    return NetworkTotals(sum(c.cycles for c in costs), sum(c.dram_bytes for c in costs),
                         sum(c.energy_pj for c in costs), sum(c.macs for c in costs))
