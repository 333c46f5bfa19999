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
from dataclasses import dataclass

import numpy as np

from hwgen.config import AcceleratorConfig
from planner import cost
from planner.objective import Objective, rank
from planner.schedule import (DIMS, ORDERS, ConvShape, Schedule, canonical_order, granule, is_legal, legal_tiles,
                              tile_candidates, trips, unplannable)


@dataclass(frozen=True)
class SearchResult:
    """The chosen schedule, its cost and how much work finding it took."""

    schedule: Schedule
    cost: cost.Cost
    candidates: int  # (tiling, order) schedules scored
    exact_evaluations: int  # schedules whose step-model cycles were computed
    seconds: float


def schedule_key(schedule: Schedule) -> tuple:
    """Final tie-breaker: larger tiles first, then the order's position in `ORDERS`."""
    return (-schedule.oc, -schedule.ic, -schedule.oh, -schedule.ow, ORDERS.index(schedule.order))


def full_key(objective: Objective, schedule: Schedule, c: cost.Cost) -> tuple:
    return (*rank(objective, c.cycles, c.dram_bytes, c.energy_pj), *schedule_key(schedule))


def candidates(shape: ConvShape, config: AcceleratorConfig) -> dict[str, tuple[int, ...]]:
    return {d: tile_candidates(shape.bound(d), granule(d, shape, config)) for d in DIMS}


def _legal_tilings(shape: ConvShape, config: AcceleratorConfig, name: str) -> dict[str, np.ndarray]:
    """All legal tilings as equally long arrays of tile sizes per dim (vectorised legality)."""
    cand = {d: np.array(v, dtype=np.int64) for d, v in candidates(shape, config).items()}
    oc = cand["OC"][:, None, None, None]
    ic = cand["IC"][None, :, None, None]
    oh = cand["OH"][None, None, :, None]
    ow = cand["OW"][None, None, None, :]
    legal = np.broadcast_to(legal_tiles(shape, oc, ic, oh, ow, config),
                            (len(cand["OC"]), len(cand["IC"]), len(cand["OH"]), len(cand["OW"])))
    idx = np.nonzero(legal)
    if not len(idx[0]):
        raise unplannable(name, shape, config)
    return {d: cand[d][i] for d, i in zip(DIMS, idx)}


def _canonical_mask(order: tuple[str, ...], trip: dict[str, np.ndarray]) -> np.ndarray:
    """Schedules for which `order` is already canonical (single-trip loops first, in DIMS order)."""
    ok = np.ones_like(trip["OC"], dtype=bool)
    for p, outer in enumerate(order):
        for inner in order[p + 1:]:
            ok &= ~((trip[outer] > 1) & (trip[inner] == 1))
            if DIMS.index(outer) > DIMS.index(inner):
                ok &= ~((trip[outer] == 1) & (trip[inner] == 1))
    return ok


def search(shape: ConvShape, config: AcceleratorConfig, macs: int, objective: Objective = Objective.LATENCY,
           name: str = "layer") -> SearchResult:
    """The best schedule for `objective` (ties broken by `rank` then `schedule_key`)."""
    start = time.perf_counter()
    tiles = _legal_tilings(shape, config, name)
    tables = cost.sum_tables(shape, config, tiles)
    rows = []  # per order: (tiling index, order index, lower bound, bytes, energy)
    totals = {}
    for oi, order in enumerate(ORDERS):
        mask = _canonical_mask(order, tables.trip)
        if not mask.any():
            continue
        t = totals[oi] = cost.layer_totals(shape, config, tables, order, macs)
        sel = np.flatnonzero(mask)
        rows.append((sel, np.full(len(sel), oi), *(np.broadcast_to(x, mask.shape)[sel] for x in
                                                   (t.cycles_lower_bound, t.dram_bytes, t.energy_pj))))
    ti, oi, lower, nbytes, energy = (np.concatenate(c) for c in zip(*rows))
    if objective in (Objective.TRAFFIC, Objective.ENERGY):
        bound = nbytes if objective is Objective.TRAFFIC else energy
    else:
        bound = lower if objective is Objective.LATENCY else lower * energy
    best, best_key, exact = None, None, 0
    for k in np.argsort(bound, kind="stable"):
        if best_key is not None and bound[k] > best_key[0]:
            break
        sched = Schedule(*(int(tiles[d][ti[k]]) for d in DIMS), ORDERS[oi[k]])
        c = cost.cost_of(shape, sched, config, macs, totals[oi[k]], ti[k])
        exact += 1
        key = full_key(objective, sched, c)
        if best_key is None or key < best_key:
            best, best_key = (sched, c), key
    return SearchResult(best[0], best[1], len(ti), exact, time.perf_counter() - start)


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
