"""Optimal per-layer search over the legal schedule space, and a brute-force enumerator of the
same space that the search is checked against.

The space: for each dim the tile sizes of `schedule.tile_candidates`, every legal combination
(every tile, halo included, fits one bank of its buffer), and every loop order, where orders
that differ only in the position of single-trip loops are one schedule (`canonical_order`).
Traffic and energy have closed forms; the exact step-model cycles are computed only for
schedules whose closed-form lower bound can still win (branch and bound).
"""
from __future__ import annotations

import itertools
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from hwgen.config import AcceleratorConfig, Energy
from planner import cost
from planner.layer_cost import LayerCost
from planner.objective import Objective, rank
from planner.schedule import (DIMS, ORDERS, ConvShape, Schedule, canonical_order, fits_banks, fits_instructions,
                              granule, is_legal, tile_bytes, tile_candidates, trips, unplannable)


@dataclass(frozen=True)
class SearchResult:
    """The chosen schedule, its cost and how much work finding it took."""

    schedule: Schedule
    cost: LayerCost
    candidates: int  # (tiling, order) schedules scored
    exact_evaluations: int  # schedules whose step-model cycles were computed
    seconds: float


def schedule_key(schedule: Schedule) -> tuple:
    """Final tie-breaker: larger tiles first, then the order's position in `ORDERS`."""
    return (-schedule.oc, -schedule.ic, -schedule.oh, -schedule.ow, ORDERS.index(schedule.order))


def full_key(objective: Objective, schedule: Schedule, c: LayerCost) -> tuple:
    return (*rank(objective, c.cycles, c.dram_bytes, c.energy_pj), *schedule_key(schedule))


def candidates(shape: ConvShape, config: AcceleratorConfig) -> dict[str, tuple[int, ...]]:
    return {d: tile_candidates(shape.bound(d), granule(d, shape, config)) for d in DIMS}


def _instruction_legal_tilings(shape: ConvShape, config: AcceleratorConfig) -> dict[str, np.ndarray]:
    """Every tiling of the candidate tile sizes that the instruction fields can express, as
    equally long arrays of tile sizes per dim (the buffers are checked per search)."""
    cand = {d: np.array(v, dtype=np.int64) for d, v in candidates(shape, config).items()}
    grid = np.meshgrid(*(cand[d] for d in DIMS), indexing="ij")
    legal = np.broadcast_to(fits_instructions(shape, *grid, config), grid[0].shape)
    return {d: g[legal] for d, g in zip(DIMS, grid)}


def _canonical_table() -> np.ndarray:
    """`[p, o]`: whether `ORDERS[o]` is canonical (`canonical_order`) for the tilings whose dims
    with more than one trip are the bits of `p` (bit i: `DIMS[i]`)."""
    return np.array([[canonical_order(order, {d: 1 + (p >> i & 1) for i, d in enumerate(DIMS)}) == order
                      for order in ORDERS] for p in range(1 << len(DIMS))])


CANONICAL = _canonical_table()


def _canonical_mask(trip: dict[str, np.ndarray]) -> np.ndarray:
    """`[o, t]`: whether `ORDERS[o]` is canonical for tiling `t` (single-trip loops first, in DIMS order)."""
    pattern = sum((trip[d] > 1).astype(np.int64) << i for i, d in enumerate(DIMS))
    return CANONICAL[pattern].T


@dataclass
class Ranking:
    """What a layer's search computes before it looks at the buffer sizes and the per-access
    energies: every instruction-legal (tiling, canonical order) schedule with its closed-form
    totals, each tiling's bank footprint, and the exact costs evaluated so far. The cost
    model reads neither (buffer sizes only decide which tilings are legal; energies weight the
    accesses), so one ranking serves every configuration that differs from `config` in them."""

    config: AcceleratorConfig
    macs: int
    tiles: dict[str, np.ndarray]
    footprint: tuple[np.ndarray, ...]  # `tile_bytes` of each tiling
    tiling: np.ndarray  # per schedule: its tiling index
    order: np.ndarray  # ... its order index
    totals: cost.Totals  # ... its closed forms
    sorted_bounds: dict[tuple, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    exact: dict[int, tuple[Schedule, LayerCost]] = field(default_factory=dict)

    def bounds(self, objective: Objective, energy: Energy) -> tuple[np.ndarray, np.ndarray]:
        """Each schedule's closed-form bound of the objective (comparable with the first entry of
        `full_key`), and the schedule indices sorted by it (stable)."""
        key = (objective, energy if objective in (Objective.ENERGY, Objective.EDP) else None)
        if key not in self.sorted_bounds:
            lower = self.totals.cycles_lower_bound
            if objective is Objective.LATENCY:
                bound = lower
            elif objective is Objective.TRAFFIC:
                bound = self.totals.dram_bytes
            else:
                joules = self.totals.accesses.energy_pj(energy)
                bound = joules if objective is Objective.ENERGY else lower * joules
            self.sorted_bounds[key] = bound, np.argsort(bound, kind="stable")
        return self.sorted_bounds[key]

    def evaluated(self, shape: ConvShape, config: AcceleratorConfig, ks: np.ndarray) -> list[tuple[Schedule, LayerCost]]:
        """Schedules `ks` and their exact costs on `config` (each computed once, those not yet
        known together; the energy per config)."""
        todo = [int(k) for k in ks if int(k) not in self.exact]
        if todo:
            schedules = [Schedule(*(int(self.tiles[d][t]) for d in DIMS), ORDERS[o])
                         for t, o in zip(self.tiling[todo].tolist(), self.order[todo].tolist())]
            costs = cost.costs_of(shape, schedules, self.config, self.macs, self.totals.take(todo))
            self.exact.update(zip(todo, zip(schedules, costs)))
        out = [self.exact[int(k)] for k in ks]
        if config.energy != self.config.energy:
            energy = self.totals.take(ks).accesses.energy_pj(config.energy).tolist()
            out = [(schedule, replace(c, energy_pj=e)) for e, (schedule, c) in zip(energy, out)]
        return out


def rank_schedules(shape: ConvShape, config: AcceleratorConfig, macs: int) -> Ranking:
    """The ranking of a layer's schedules on `config` (see `Ranking`)."""
    tiles = _instruction_legal_tilings(shape, config)
    tables = cost.sum_tables(shape, config, tiles)
    mask = _canonical_mask(tables.trip)
    oi, ti = np.nonzero(mask)
    totals = cost.layer_totals(shape, config, tables, ORDERS, macs).where(mask)
    return Ranking(config, macs, tiles, tile_bytes(shape, *(tiles[d] for d in DIMS), config), ti, oi, totals)


COST_SECTIONS = ("pe", "widths", "dram", "template")
"""The configuration sections the cost model reads, besides the buffers (legality) and the
energies (weights of the accesses): a ranking is shared by configurations equal in these."""
RANKINGS_KEPT = 64
_rankings: OrderedDict[tuple, Ranking] = OrderedDict()


def ranking(shape: ConvShape, config: AcceleratorConfig, macs: int) -> Ranking:
    """`rank_schedules`, shared by configurations equal in their `COST_SECTIONS` (the
    `RANKINGS_KEPT` most recently used are kept: a sweep reuses them)."""
    key = (shape, macs, *(getattr(config, section) for section in COST_SECTIONS))
    found = _rankings.get(key)
    if found is None:
        found = _rankings[key] = rank_schedules(shape, config, macs)
        if len(_rankings) > RANKINGS_KEPT:
            _rankings.popitem(last=False)
    _rankings.move_to_end(key)
    return found


FIRST_BATCH = 16
"""Schedules whose exact costs the search computes together first."""


def search(shape: ConvShape, config: AcceleratorConfig, macs: int, objective: Objective = Objective.LATENCY,
           name: str = "layer") -> SearchResult:
    """The best schedule for `objective` (ties broken by `rank` then `schedule_key`): the
    ranked schedules whose tiles fit the buffers, exact costs computed in bound order until
    the bound exceeds the best exact value (branch and bound), in batches that double from
    `FIRST_BATCH` (a batch costs little more than one schedule; it may evaluate a few
    schedules the one-by-one search would have pruned, never skip one it would evaluate)."""
    start = time.perf_counter()
    ranked = ranking(shape, config, macs)
    fits = np.broadcast_to(fits_banks(ranked.footprint, config), ranked.tiles["OC"].shape)
    bound, order = ranked.bounds(objective, config.energy)
    legal = order[fits[ranked.tiling[order]]]
    if not legal.size:
        raise unplannable(name, shape, config)
    best, best_key, exact, batch = None, None, 0, FIRST_BATCH
    while exact < len(legal) and (best_key is None or bound[legal[exact]] <= best_key[0]):
        ks = legal[exact:exact + batch]
        if best_key is not None:
            ks = ks[:np.searchsorted(bound[ks], best_key[0], side="right")]
        for schedule, c in ranked.evaluated(shape, config, ks):
            key = full_key(objective, schedule, c)
            if best_key is None or key < best_key:
                best, best_key = (schedule, c), key
        exact, batch = exact + len(ks), 2 * batch
    return SearchResult(best[0], best[1], len(legal), exact, time.perf_counter() - start)


def brute_force(shape: ConvShape, config: AcceleratorConfig, macs: int, objective: Objective = Objective.LATENCY,
                name: str = "layer") -> SearchResult:
    """Evaluate every legal schedule of the space exactly (slow; the oracle for `search`)."""
    start = time.perf_counter()
    cand = candidates(shape, config)
    best, best_key, count = None, None, 0
    for oc, ic, oh, ow in itertools.product(*(cand[d] for d in DIMS)):
        plain = Schedule(oc, ic, oh, ow)
        if not is_legal(shape, plain, config):
            continue
        orders = sorted({canonical_order(o, trips(shape, plain)) for o in ORDERS})
        for order, c in zip(orders, cost.evaluate_orders(shape, plain, orders, config, macs)):
            sched = Schedule(oc, ic, oh, ow, order)
            count += 1
            key = full_key(objective, sched, c)
            if best_key is None or key < best_key:
                best, best_key = (sched, c), key
    if best is None:
        raise unplannable(name, shape, config)
    return SearchResult(best[0], best[1], count, count, time.perf_counter() - start)
