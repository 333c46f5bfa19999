"""Cost model of one conv / FC schedule: DRAM bytes per tensor, cycles, utilization, energy.

The hardware contract is in `docs/cost_model.md`. In brief:

* DRAM transfers move boxes of a row-major tensor as contiguous *runs*; a run of L bytes is
  split into bursts of `burst_bytes`; each burst costs `latency + ceil(bytes / bandwidth)`
  cycles (`run_cycles`).
* A tile is reloaded whenever the tile index of its tensor changes between consecutive steps
  of the tiled loop nest; output tiles revisited across input-channel tiles spill and reload
  partial sums at accumulator width; final outputs are stored at activation width.
* A compute tile takes ``ceil(OCt/rows) * ceil(ICt/simd) * OHt * ceil(OWt/cols) * KH * KW``
  array cycles plus `pipeline_depth` (fill + drain).
* `step_cycles` is THE cycle model: fill, then per step max(compute, DMA of the neighbours), then drain.

Closed forms (`layer_totals`) give traffic, energy and a tight cycle lower bound for many
schedules at once (numpy arrays); `evaluate` adds the exact step-model cycles.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hwgen.config import AcceleratorConfig, Dram
from planner.schedule import DIMS, ConvShape, Schedule, axis_tiles, input_extents


def run_cycles(nbytes, dram: Dram):
    """Cycles to move contiguous runs of `nbytes` (int or int array): per burst, the latency plus
    the burst's bytes at the configured bandwidth."""
    nbytes = np.asarray(nbytes, dtype=np.int64)
    burst, per_full, numerator, denominator = _burst_terms(dram)
    full, rest = nbytes // burst, nbytes % burst
    per_rest = dram.latency_cycles + -(-rest * denominator // numerator)
    return full * per_full + np.where(rest > 0, per_rest, 0)


@functools.lru_cache(maxsize=None)
def _burst_terms(dram: Dram) -> tuple[int, int, int, int]:
    """(burst bytes, cycles of a full burst, bandwidth numerator, denominator) of a DRAM section."""
    bw = dram.bandwidth
    return dram.burst_bytes, dram.latency_cycles + -(-dram.burst_bytes * bw.denominator // bw.numerator), bw.numerator, bw.denominator


def step_cycles(compute, load, store) -> int:
    """The double-buffered step model, the one cycle formula the RTL is checked against.

    `compute[i]` is the compute time of step i (pipeline fill/drain included), `load[i]` the DMA
    cycles of the tiles step i needs that are not on chip yet, `store[i]` the DMA cycles of the
    output written back after step i. Loads of step i+1 and stores of step i-1 share the port
    while step i computes::

        cycles = load[0] + sum_i max(compute[i], load[i+1] + store[i-1]) + store[n-1]
    """
    compute, load, store = (np.asarray(a, dtype=np.int64) for a in (compute, load, store))
    dma = np.zeros_like(compute)
    dma[:-1] += load[1:]
    dma[1:] += store[:-1]
    return int(load[0] + np.maximum(compute, dma).sum() + store[-1])


# ---------------------------------------------------------------- tile transfer cycles

def input_tile_cycles(shape: ConvShape, config: AcceleratorConfig, c, r, w):
    """DMA cycles of input boxes of c channels x r rows x w columns (arrays broadcast)."""
    a, dram = config.widths.activation_bytes, config.dram
    c, r, w = np.broadcast_arrays(*(np.asarray(x, dtype=np.int64) for x in (c, r, w)))
    full_w, full_r = w == shape.iw, r == shape.ih
    return np.where(full_w & full_r, run_cycles(c * r * w * a, dram),
                    np.where(full_w, c * run_cycles(r * w * a, dram), c * r * run_cycles(w * a, dram)))


def weight_tile_cycles(shape: ConvShape, config: AcceleratorConfig, o, i):
    """DMA cycles of weight tiles of o output x i input channels (whole kernel windows)."""
    k = shape.kh * shape.kw * config.widths.weight_bytes
    o, i = np.broadcast_arrays(np.asarray(o, dtype=np.int64), np.asarray(i, dtype=np.int64))
    return np.where(i == shape.ic, run_cycles(o * i * k, config.dram), o * run_cycles(i * k, config.dram))


def output_tile_cycles(shape: ConvShape, config: AcceleratorConfig, o, h, w, elem: int):
    """DMA cycles of output boxes (o channels x h rows x w columns) at `elem` bytes per element."""
    dram = config.dram
    o, h, w = np.broadcast_arrays(*(np.asarray(x, dtype=np.int64) for x in (o, h, w)))
    full_w, full_h = w == shape.ow, h == shape.oh
    return np.where(full_w & full_h, run_cycles(o * h * w * elem, dram),
                    np.where(full_w, o * run_cycles(h * w * elem, dram), o * h * run_cycles(w * elem, dram)))


# ---------------------------------------------------------------- per-axis tables

@dataclass(frozen=True)
class Axis:
    """Per-tile quantities along one dim for one tile size (arrays of length `trips`)."""

    sizes: np.ndarray
    passes: np.ndarray  # spatial passes per tile: ceil(size / granule) (OH: size)
    extents: np.ndarray  # input rows / columns per tile (OH / OW), else sizes

    @property
    def trips(self) -> int:
        return len(self.sizes)


@lru_cache(maxsize=65536)
def axis(shape: ConvShape, config: AcceleratorConfig, dim: str, tile: int) -> Axis:
    sizes = np.array([n for _, n in axis_tiles(shape.bound(dim), tile)], dtype=np.int64)
    pe = config.pe
    granule = {"OC": pe.rows, "IC": pe.simd, "OH": 1, "OW": pe.cols}[dim]
    extents = np.array(input_extents(shape, dim, tile), dtype=np.int64) if dim in ("OH", "OW") else sizes
    return Axis(sizes, -(-sizes // granule), extents)


@dataclass(frozen=True)
class AxisSums:
    """Closed-form sums along one dim used by `layer_totals` (arrays over many tile sizes)."""

    trips: np.ndarray
    passes: np.ndarray
    extents: np.ndarray
    first: np.ndarray
    last: np.ndarray
    first_extent: np.ndarray
    last_extent: np.ndarray


def axis_sums(shape: ConvShape, config: AcceleratorConfig, dim: str, tiles) -> AxisSums:
    """Vector of per-tile-size sums along a dim."""
    axes = [axis(shape, config, dim, int(t)) for t in tiles]

    def vec(f):
        return np.array([f(a) for a in axes], dtype=np.int64)

    return AxisSums(vec(lambda a: a.trips), vec(lambda a: a.passes.sum()), vec(lambda a: a.extents.sum()),
                    vec(lambda a: a.sizes[0]), vec(lambda a: a.sizes[-1]),
                    vec(lambda a: a.extents[0]), vec(lambda a: a.extents[-1]))


def _run_sum(shape, config, dim, tiles, fn, select=lambda a: np.ones(a.trips, bool)):
    """Sum over the tiles of each tile size of `fn(axis)` restricted to `select(axis)`."""
    out = []
    for t in tiles:
        a = axis(shape, config, dim, int(t))
        out.append(int(fn(a)[select(a)].sum()))
    return np.array(out, dtype=np.int64)


# ---------------------------------------------------------------- reloads

def reload_factor(order: tuple[str, ...], trip: dict, relevant: frozenset[str]):
    """How many times each tile of a tensor is brought on chip: the product of the trip counts of
    the irrelevant loops outside its innermost relevant loop that has more than one trip.
    `trip` maps dims to ints or int arrays (many schedules at once)."""
    factor = 1
    for pos, dim in enumerate(order):
        if dim in relevant:
            continue
        inner_relevant = [trip[d] > 1 for d in order[pos + 1:] if d in relevant]
        if inner_relevant:
            factor = factor * np.where(np.any(inner_relevant, axis=0), trip[dim], 1)
    return factor


@dataclass(frozen=True)
class Totals:
    """Closed-form totals of schedules (scalars or arrays)."""

    input_bytes: object
    weight_bytes: object
    output_bytes: object
    compute_cycles: object
    array_cycles: object
    dma_cycles: object
    cycles_lower_bound: object
    energy_pj: object
    steps: object

    @property
    def dram_bytes(self):
        return self.input_bytes + self.weight_bytes + self.output_bytes


@dataclass(frozen=True)
class SumTables:
    """Order-independent sums of many tilings at once (arrays indexed like the tilings)."""

    trip: dict
    input_sweep_bytes: np.ndarray
    input_sweep_cycles: np.ndarray
    weight_sweep_cycles: np.ndarray
    output_final_cycles: np.ndarray
    output_partial_cycles: np.ndarray
    array_cycles: np.ndarray
    first_load: np.ndarray
    last_store: np.ndarray


def sum_tables(shape: ConvShape, config: AcceleratorConfig, tiles: dict) -> SumTables:
    """`tiles[dim]` are equally long int arrays of tile sizes (one entry per tiling)."""
    w = config.widths
    a, wb, acc, dram = w.activation_bytes, w.weight_bytes, w.accumulator_bytes, config.dram
    uniq = {d: np.unique(tiles[d]) for d in DIMS}
    pos = {d: np.searchsorted(uniq[d], tiles[d]) for d in DIMS}
    sums = {d: axis_sums(shape, config, d, uniq[d]) for d in DIMS}

    def per(dim, arr):
        return arr[pos[dim]]

    def s(dim, field):
        return per(dim, getattr(sums[dim], field))

    trip = {d: s(d, "trips") for d in DIMS}
    chan = "OC" if shape.depthwise else "IC"
    C, k = shape.in_channels, shape.kh * shape.kw
    # input sweep: boxes split by whether rows / columns span the whole map
    g_w_partial = per("OW", _run_sum(shape, config, "OW", uniq["OW"], lambda x: run_cycles(x.extents * a, dram),
                                     lambda x: x.extents != shape.iw))
    n_w_full = per("OW", _run_sum(shape, config, "OW", uniq["OW"], lambda x: np.ones(x.trips, np.int64),
                                  lambda x: x.extents == shape.iw))
    g_r_partial = per("OH", _run_sum(shape, config, "OH", uniq["OH"], lambda x: run_cycles(x.extents * shape.iw * a, dram),
                                     lambda x: x.extents != shape.ih))
    n_r_full = per("OH", _run_sum(shape, config, "OH", uniq["OH"], lambda x: np.ones(x.trips, np.int64),
                                  lambda x: x.extents == shape.ih))
    g_c_full = per(chan, _run_sum(shape, config, chan, uniq[chan], lambda x: run_cycles(x.sizes * shape.ih * shape.iw * a, dram)))
    rows, cols = s("OH", "extents"), s("OW", "extents")
    input_sweep_cycles = C * rows * g_w_partial + n_w_full * (C * g_r_partial + n_r_full * g_c_full)
    # weights: one run per tile when the whole reduction is in the tile, else one per output channel
    g_o_w = per("OC", _run_sum(shape, config, "OC", uniq["OC"], lambda x: run_cycles(x.sizes * shape.ic * k * wb, dram)))
    g_i_w = per("IC", _run_sum(shape, config, "IC", uniq["IC"], lambda x: run_cycles(x.sizes * k * wb, dram)))
    weight_sweep_cycles = np.where(trip["IC"] == 1, g_o_w, shape.oc * g_i_w)

    def output_sweep(elem):
        g_o = per("OC", _run_sum(shape, config, "OC", uniq["OC"], lambda x: run_cycles(x.sizes * shape.oh * shape.ow * elem, dram)))
        g_h = per("OH", _run_sum(shape, config, "OH", uniq["OH"], lambda x: run_cycles(x.sizes * shape.ow * elem, dram)))
        g_w = per("OW", _run_sum(shape, config, "OW", uniq["OW"], lambda x: run_cycles(x.sizes * elem, dram)))
        return np.where(trip["OW"] == 1, np.where(trip["OH"] == 1, g_o, shape.oc * g_h), shape.oc * shape.oh * g_w)

    array_cycles = k * s("OC", "passes") * s("IC", "passes") * shape.oh * s("OW", "passes")
    first_load = (input_tile_cycles(shape, config, s(chan, "first"), s("OH", "first_extent"), s("OW", "first_extent"))
                  + weight_tile_cycles(shape, config, s("OC", "first"), s("IC", "first")))
    last_store = output_tile_cycles(shape, config, s("OC", "last"), s("OH", "last"), s("OW", "last"), a)
    return SumTables(trip, C * rows * cols * a, input_sweep_cycles, weight_sweep_cycles, output_sweep(a),
                     output_sweep(acc), array_cycles, first_load, last_store)


def layer_totals(shape: ConvShape, config: AcceleratorConfig, tables: SumTables, order: tuple[str, ...], macs: int) -> Totals:
    """Traffic, compute, DMA, energy and the cycle lower bound of the tilings in `tables` under one order."""
    w, e, pe = config.widths, config.energy, config.pe
    trip = tables.trip
    r_in = reload_factor(order, trip, shape.input_dims)
    r_w = reload_factor(order, trip, shape.relevant("weight"))
    visits = reload_factor(order, trip, shape.relevant("output"))
    outputs = shape.oc * shape.oh * shape.ow
    input_bytes = tables.input_sweep_bytes * r_in
    weight_bytes = shape.oc * shape.ic * shape.kh * shape.kw * w.weight_bytes * r_w
    output_bytes = outputs * (w.activation_bytes + 2 * (visits - 1) * w.accumulator_bytes)
    steps = trip["OC"] * trip["IC"] * trip["OH"] * trip["OW"]
    compute = tables.array_cycles + steps * config.pipeline_depth
    dma = (tables.input_sweep_cycles * r_in + tables.weight_sweep_cycles * r_w + tables.output_final_cycles
           + 2 * (visits - 1) * tables.output_partial_cycles)
    ends = tables.first_load + tables.last_store
    lower = ends + np.maximum(compute, dma - ends)
    energy = (e.dram_pj_per_byte * (input_bytes + weight_bytes + output_bytes)
              + e.input_buffer_pj_per_byte * (input_bytes + tables.array_cycles * pe.cols * pe.simd * w.activation_bytes)
              + e.weight_buffer_pj_per_byte * (weight_bytes + tables.array_cycles * pe.rows * pe.simd * w.weight_bytes)
              + e.output_buffer_pj_per_byte * (output_bytes + outputs * (2 * trip["IC"] - 1) * w.accumulator_bytes)
              + e.register_pj_per_access * tables.array_cycles * pe.rows * pe.cols
              + e.mac_pj * macs)
    return Totals(input_bytes, weight_bytes, output_bytes, compute, tables.array_cycles, dma, lower, energy, steps)


# ---------------------------------------------------------------- exact step arrays

@dataclass(frozen=True)
class Steps:
    """Per-step compute, load and store cycles of a schedule, in execution order."""

    compute: np.ndarray
    load: np.ndarray
    store: np.ndarray


def step_arrays(shape: ConvShape, schedule: Schedule, config: AcceleratorConfig) -> Steps:
    """Enumerate the steps of a schedule (vectorised over the tile grid in loop order)."""
    order = schedule.order
    ax = {d: axis(shape, config, d, schedule.tile(d)) for d in DIMS}
    n = [ax[d].trips for d in order]
    grid = np.indices(n).reshape(len(order), -1)
    j = {d: grid[p] for p, d in enumerate(order)}
    chan = "OC" if shape.depthwise else "IC"
    k = shape.kh * shape.kw
    compute = ax["OC"].passes[j["OC"]] * ax["IC"].passes[j["IC"]] * ax["OH"].sizes[j["OH"]] * ax["OW"].passes[j["OW"]] * k
    compute = compute + config.pipeline_depth

    def changed(dims):
        ident = np.zeros_like(grid[0])
        for d in dims:
            ident = ident * ax[d].trips + j[d]
        out = np.ones(ident.shape, dtype=bool)
        out[1:] = ident[1:] != ident[:-1]
        return out

    ch_in, ch_w = changed((chan, "OH", "OW")), changed(("OC", "IC"))
    ch_out = changed(("OC", "OH", "OW"))
    in_c = input_tile_cycles(shape, config, ax[chan].sizes[j[chan]], ax["OH"].extents[j["OH"]], ax["OW"].extents[j["OW"]])
    w_c = weight_tile_cycles(shape, config, ax["OC"].sizes[j["OC"]], ax["IC"].sizes[j["IC"]])
    o, h, w = ax["OC"].sizes[j["OC"]], ax["OH"].sizes[j["OH"]], ax["OW"].sizes[j["OW"]]
    acc = config.widths.accumulator_bytes
    partial = output_tile_cycles(shape, config, o, h, w, acc)
    final = output_tile_cycles(shape, config, o, h, w, config.widths.activation_bytes)
    load = ch_in * in_c + ch_w * w_c + (ch_out & (j["IC"] > 0)) * partial
    leaving = np.ones_like(ch_out)
    leaving[:-1] = ch_out[1:]
    store = leaving * np.where(j["IC"] == ax["IC"].trips - 1, final, partial)
    return Steps(compute, load, store)


@dataclass(frozen=True)
class Cost:
    """Predicted cost of one schedule."""

    input_bytes: int
    weight_bytes: int
    output_bytes: int
    cycles: int
    compute_cycles: int
    dma_cycles: int
    macs: int
    peak_macs_per_cycle: int
    energy_pj: float
    steps: int

    @property
    def dram_bytes(self) -> int:
        return self.input_bytes + self.weight_bytes + self.output_bytes

    @property
    def utilization(self) -> float:
        """Useful MACs over the MAC slots of the whole layer time."""
        return self.macs / (self.cycles * self.peak_macs_per_cycle) if self.cycles and self.macs else 0.0

    @property
    def bound(self) -> str:
        return "compute" if self.compute_cycles >= self.dma_cycles else "memory"


def _groups(ax: Axis) -> tuple[np.ndarray, np.ndarray]:
    """Tile indices of one axis grouped by everything a step depends on (own, next and previous
    tile); returns a representative index and the size of each group."""
    n = ax.trips
    vals = list(zip(ax.sizes.tolist(), ax.extents.tolist()))
    groups: dict[tuple, list[int]] = {}
    for j in range(n):
        key = (vals[j], vals[j + 1] if j + 1 < n else None, vals[j - 1] if j else None)
        groups.setdefault(key, [j, 0])[1] += 1
    rep, count = zip(*groups.values())
    return np.array(rep, dtype=np.int64), np.array(count, dtype=np.int64)


@functools.lru_cache(maxsize=4096)
def _axis_groups(shape: ConvShape, config: AcceleratorConfig, dim: str, tile: int) -> tuple[Axis, tuple[np.ndarray, np.ndarray]]:
    """An axis and its step groups (shared by every loop order of a tiling)."""
    ax = axis(shape, config, dim, tile)
    return ax, _groups(ax)


def grouped_step_cycles(shape: ConvShape, schedule: Schedule, config: AcceleratorConfig) -> int:
    """`step_cycles` of a schedule without enumerating its steps: steps whose own, next and
    previous tiles agree are counted once with their multiplicity (equal to `step_arrays`)."""
    order = schedule.order
    cached = {d: _axis_groups(shape, config, d, schedule.tile(d)) for d in DIMS}
    ax = {d: cached[d][0] for d in DIMS}
    reps = [cached[d][1] for d in order]
    mesh = np.meshgrid(*[r for r, _ in reps], indexing="ij")
    count = np.prod(np.meshgrid(*[c for _, c in reps], indexing="ij"), axis=0).ravel()
    cur = {d: m.ravel() for d, m in zip(order, mesh)}
    n = {d: ax[d].trips for d in DIMS}
    not_last = np.stack([cur[d] < n[d] - 1 for d in order])
    not_first = np.stack([cur[d] > 0 for d in order])
    positions = np.arange(len(order))[:, None]
    carry_next = np.where(not_last, positions, -1).max(axis=0)  # loop that advances after this step
    carry_prev = np.where(not_first, positions, -1).max(axis=0)  # loop that advanced into this step
    nxt, prv = {}, {}
    for p, d in enumerate(order):
        nxt[d] = np.where(p < carry_next, cur[d], np.where(p == carry_next, cur[d] + 1, 0))
        prv[d] = np.where(p < carry_prev, cur[d], np.where(p == carry_prev, cur[d] - 1, n[d] - 1))
    chan = "OC" if shape.depthwise else "IC"
    a, acc = config.widths.activation_bytes, config.widths.accumulator_bytes

    def differs(x, dims):
        return np.any([x[d] != cur[d] for d in dims], axis=0)

    def out_cycles(idx, elem):
        return output_tile_cycles(shape, config, ax["OC"].sizes[idx["OC"]], ax["OH"].sizes[idx["OH"]],
                                  ax["OW"].sizes[idx["OW"]], elem)

    load_next = (differs(nxt, (chan, "OH", "OW")) * input_tile_cycles(
                     shape, config, ax[chan].sizes[nxt[chan]], ax["OH"].extents[nxt["OH"]], ax["OW"].extents[nxt["OW"]])
                 + differs(nxt, ("OC", "IC")) * weight_tile_cycles(shape, config, ax["OC"].sizes[nxt["OC"]],
                                                                    ax["IC"].sizes[nxt["IC"]])
                 + (differs(nxt, ("OC", "OH", "OW")) & (nxt["IC"] > 0)) * out_cycles(nxt, acc))
    load_next = np.where(carry_next >= 0, load_next, 0)
    store_prev = differs(prv, ("OC", "OH", "OW")) * np.where(prv["IC"] == n["IC"] - 1, out_cycles(prv, a),
                                                             out_cycles(prv, acc))
    store_prev = np.where(carry_prev >= 0, store_prev, 0)
    compute = (ax["OC"].passes[cur["OC"]] * ax["IC"].passes[cur["IC"]] * ax["OH"].sizes[cur["OH"]]
               * ax["OW"].passes[cur["OW"]] * shape.kh * shape.kw + config.pipeline_depth)
    last = {d: np.full(1, n[d] - 1) for d in DIMS}
    first_load = (input_tile_cycles(shape, config, ax[chan].sizes[:1], ax["OH"].extents[:1], ax["OW"].extents[:1])
                  + weight_tile_cycles(shape, config, ax["OC"].sizes[:1], ax["IC"].sizes[:1]))
    return int(first_load[0] + (np.maximum(compute, load_next + store_prev) * count).sum() + out_cycles(last, a)[0])


def evaluate_orders(shape: ConvShape, tiling: Schedule, orders, config: AcceleratorConfig, macs: int) -> list[Cost]:
    """Exact costs of one tiling under several loop orders (closed-form traffic and energy,
    step-model cycles)."""
    tiles = {d: np.array([tiling.tile(d)]) for d in DIMS}
    tables = sum_tables(shape, config, tiles)
    first = lambda x: np.ravel(x)[0].item()  # noqa: E731
    out = []
    for order in orders:
        t = layer_totals(shape, config, tables, order, macs)
        sched = Schedule(tiling.oc, tiling.ic, tiling.oh, tiling.ow, tuple(order))
        out.append(Cost(first(t.input_bytes), first(t.weight_bytes), first(t.output_bytes),
                        grouped_step_cycles(shape, sched, config), first(t.compute_cycles), first(t.dma_cycles),
                        macs, config.pe.macs_per_cycle, float(first(t.energy_pj)), first(t.steps)))
    return out


def evaluate(shape: ConvShape, schedule: Schedule, config: AcceleratorConfig, macs: int) -> Cost:
    """Exact cost of one schedule."""
    return evaluate_orders(shape, schedule, [schedule.order], config, macs)[0]
