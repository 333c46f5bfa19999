"""The e-PlaNNer heuristic (Kim 2020, Alg. 1-4) as a baseline strategy.

1. Initialise the tiling lower bound: kernel whole, OW whole, OC / IC at least one PE-array pass
   (rows / SIMD lanes, clamped to the layer).
2. Loop elimination: for every subset of {OC, IC, OH} (cumulatively from the running best, as the
   pseudo-code says) set those dims whole; keep the legal subset with the least DRAM traffic.
3. Loop interchange: the loop with the most trips goes innermost (stable sort from the thesis'
   initial sequence ow, oh, ic, oc, innermost first).
4. Pruned search: every legal tiling of the planner's grid at or above the lower bound (with the
   eliminated dims whole), ordered by step 3, scored by perf / off-chip bytes (Eq. 6.13 with the
   utilisation-aware compute roof); the first strictly better one wins.

Scores use the planner's own traffic model (halo and partial tiles included).
"""
from __future__ import annotations

import itertools
import time

import numpy as np

from hwgen.config import AcceleratorConfig
from planner import cost
from planner.schedule import DIMS, ConvShape, Schedule, is_legal, trips, unplannable
from planner.search import SearchResult, candidates

INITIAL_SEQUENCE = ("OW", "OH", "IC", "OC")  # innermost first (Alg. 3)


def interchange(shape: ConvShape, tiling: Schedule) -> tuple[str, ...]:
    """Alg. 3: the order (outermost first) with the most-tripped loop innermost."""
    trip = trips(shape, tiling)
    innermost_first = sorted(INITIAL_SEQUENCE, key=lambda d: -trip[d])
    return tuple(reversed(innermost_first))


def _traffic(shape: ConvShape, tiling: Schedule, config: AcceleratorConfig) -> int:
    order = interchange(shape, tiling)
    tables = cost.sum_tables(shape, config, {d: np.array([tiling.tile(d)]) for d in DIMS})
    return int(np.ravel(cost.layer_totals(shape, config, tables, [order], 0).dram_bytes)[0])


def _with(tiling: Schedule, **tiles: int) -> Schedule:
    values = tiling.tiles | {k.upper(): v for k, v in tiles.items()}
    return Schedule(values["OC"], values["IC"], values["OH"], values["OW"], tiling.order)


def lower_bound(shape: ConvShape, config: AcceleratorConfig) -> tuple[Schedule, frozenset[str]]:
    """Alg. 1 and 2: the tiling lower bound and the eliminated (whole) dims."""
    init = Schedule(min(shape.oc, config.pe.rows), min(shape.ic, config.pe.simd), 1, shape.ow)
    best, best_set, least = init, frozenset(), None
    for size in range(4):
        for subset in itertools.combinations(("OC", "IC", "OH"), size):
            tiling = _with(best, **{d.lower(): shape.bound(d) for d in subset})
            if not is_legal(shape, tiling, config):
                continue
            traffic = _traffic(shape, tiling, config)
            if least is None or traffic < least:
                best, best_set, least = tiling, frozenset(subset) | best_set, traffic
    return best, best_set


def plan_layer(shape: ConvShape, config: AcceleratorConfig, macs: int, name: str = "layer") -> SearchResult:
    """Alg. 1-4; the chosen schedule with its exact cost."""
    start = time.perf_counter()
    floor, eliminated = lower_bound(shape, config)
    if not is_legal(shape, floor, config):
        raise unplannable(name, shape, config)
    grid = {d: [shape.bound(d)] if d in eliminated else [t for t in cand if t >= floor.tile(d)]
            for d, cand in candidates(shape, config).items()}
    grid["OW"] = [shape.ow]
    peak = config.pe.macs_per_cycle
    bw = float(config.dram.bandwidth)
    best, best_metric, count = floor, 0.0, 0
    for oc, ic, oh, ow in itertools.product(*(grid[d] for d in DIMS)):
        tiling = Schedule(oc, ic, oh, ow)
        if not is_legal(shape, tiling, config):
            continue
        count += 1
        util = (oc / (-(-oc // config.pe.rows) * config.pe.rows)) * (ic / (-(-ic // config.pe.simd) * config.pe.simd))
        traffic = _traffic(shape, tiling, config)
        perf = min(peak * util, bw * macs / traffic)
        metric = perf / traffic
        if metric > best_metric:
            best, best_metric = tiling, metric
    chosen = Schedule(best.oc, best.ic, best.oh, best.ow, interchange(shape, best))
    return SearchResult(chosen, cost.evaluate(shape, chosen, config, macs), count, 1, time.perf_counter() - start)
