"""Cost model of one conv / FC schedule on the hardware template: DRAM bytes per tensor (exact),
cycles, utilization, energy. The contract is in `docs/cost_model.md`. In brief, per schedule
the compiler (`planner/compile/conv.py`) emits, tile by tile:

* weights, whenever the (OC, IC) tile changes: one LOAD of the tile's parameter records
  (`PARAM_BYTES` per padded output channel) and one of its weight block (oc groups x R x ic
  groups x S x kh x kw bytes), both bus-aligned;
* inputs, whenever the (channel, OH, OW) tile changes: one LOAD per stride phase of the window
  (halo included) in runs of S bytes (one pixel's channel group), reading whole bus beats of
  the pixels inside the map and filling padding on chip;
* outputs, when the loop order leaves an output tile: a STORE of its int8 results, or of its
  int32 partial sums while input-channel tiles remain (reloaded at its next visit);
* one CONV per step, taking `hwgen.timing.conv_cycles` cycles;
* around them the WAITs and SIGNALs of the queues' protocol (`planner.compile.queue_sync`,
  counted per event by `event_instructions`): every instruction passes the fetch stage, which
  dispatches one per `fetch_cycles`.

Transfer times come from `planner.transfer_work.transfer_cycles`. The step model overlaps the
loads of step i+1 and the store of step i-1 with the compute of step i (double buffering); the
store's bandwidth delays the loads but for what fits beside a LOAD's start-up and latency (with
`template.dma: shared`, the time it holds the DMA); no
step is shorter than the fetch stage takes to dispatch its instructions. Closed forms (`layer_totals`) give traffic, energy and a cycle
lower bound for many schedules at once (numpy arrays); `evaluate` adds the step-model cycles.
`planner.program_model` times the compiled program itself; tests hold the two together.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import numpy as np

from hwgen.config import AcceleratorConfig, DmaSharing, Energy
from hwgen.layout import ACC_BYTES, PARAM_BYTES
from hwgen.queue_options import queue_depth
from hwgen.timing import (DONE_CYCLES, conv_busy_cycles, drain_cycles, fetch_cycles, fetch_state_cycles, group_interval,
                          head_delay)
from planner.compile.conv import WEIGHT_TILE_LOADS, stride_phases
from planner.compile.queue_sync import event_instructions
from planner.layer_cost import LayerCost, utilization
from planner.schedule import DIMS, ConvShape, Schedule, axis_tiles, input_extents
from planner.transfer_work import lookup_halfwords, offer_cycles, transfer_cycles

SYNC_CYCLES = 2    # the WAIT / SIGNAL pair around each group of loads, a compute step or a store
START_CYCLES = 15  # `start_cycles` from the descriptor ROM: `step_cycles`' default


def start_cycles(config: AcceleratorConfig) -> int:
    """From `start` until CONVCFG issues and the first LOAD may: the fetch stage dispatches the
    initial SIGNALs and CONVCFG, which reaches its queue's head `head_delay` later."""
    return (fetch_state_cycles(config) + EVENTS.initial * fetch_cycles(config)
            + head_delay(queue_depth(config.template, "compute")))


# ---------------------------------------------------------------- per-axis tables

@dataclass(frozen=True)
class Axis:
    """Per-tile quantities along one dim for one tile size (arrays of length `trips`).

    `groups`: oc groups (OC), ic groups (IC), rows (OH), column groups (OW); `window` and
    `inside`: input rows (OH) or columns (OW) of the tile's window, in all and inside the map
    (else the sizes); `phases`: LOADs per input tile (OW: stride phases, else 1)."""

    sizes: np.ndarray
    groups: np.ndarray
    window: np.ndarray
    inside: np.ndarray
    phases: np.ndarray

    @property
    def trips(self) -> int:
        return len(self.sizes)


@functools.lru_cache(maxsize=65536)
def axis(shape: ConvShape, config: AcceleratorConfig, dim: str, tile: int) -> Axis:
    pe = config.pe
    sizes = np.array([n for _, n in axis_tiles(shape.bound(dim), tile)], dtype=np.int64)
    window = inside = sizes
    phases = np.ones_like(sizes)
    if dim == "OC":
        groups = -(-sizes // pe.rows)
    elif dim == "IC":
        groups = np.full_like(sizes, max(1, -(-pe.rows // pe.simd))) if shape.depthwise else -(-sizes // pe.simd)
    elif dim == "OH":
        groups = sizes
        window, inside = (sizes - 1) * shape.sh + shape.kh, np.array(input_extents(shape, dim, tile), dtype=np.int64)
    else:
        groups = -(-sizes // pe.cols)
        window, inside = (sizes - 1) * shape.sw + shape.kw, np.array(input_extents(shape, dim, tile), dtype=np.int64)
        phases = stride_phases(shape.sw, window)
    return Axis(sizes, groups, window, inside, phases)


@dataclass(frozen=True)
class Axes:
    """The axes of one dim for several tile sizes, end to end: `axis` holds each size's arrays
    one after the other; those of size i start at `start[i]` and are `trips[i]` long."""

    axis: Axis
    start: np.ndarray
    trips: np.ndarray

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Per size, the sum of `values` (one per tile of `axis`) over its tiles."""
        return np.add.reduceat(values, self.start) if len(self.start) else np.zeros(0, np.int64)


def axes(shape: ConvShape, config: AcceleratorConfig, dim: str, sizes) -> Axes:
    """`axis` of each tile size in `sizes`, end to end."""
    parts = [axis(shape, config, dim, int(t)) for t in sizes]
    trips = np.array([a.trips for a in parts], dtype=np.int64)
    return Axes(Axis(*(np.concatenate([getattr(a, f.name) for a in parts] or [np.zeros(0, np.int64)])
                       for f in fields(Axis))), np.cumsum(trips) - trips, trips)


def input_groups(shape: ConvShape, config: AcceleratorConfig, oc_groups, ic_groups):
    """Channel groups of an input tile: its ic groups, or for depthwise layers the groups the
    tile's output channels read (oc group g reads input groups g*R/S onwards)."""
    pe = config.pe
    if shape.depthwise:
        return (oc_groups - 1) * pe.rows // pe.simd + ic_groups
    return ic_groups


# ---------------------------------------------------------------- per-tile transfers

def _bus(config: AcceleratorConfig) -> int:
    return config.dram.bus_width_bits // 8


def _words_per_run(config: AcceleratorConfig) -> int:
    """Bus words (and beats) per input run of S bytes at an S-aligned address."""
    return -(-config.pe.simd // _bus(config))


def weight_tile(config: AcceleratorConfig, shape: ConvShape, oc_groups, ic_groups):
    """`(bytes, fixed, port, port_use)` of loading a weight tile: parameter records and block."""
    pe = config.pe
    params = oc_groups * pe.rows * PARAM_BYTES
    block = oc_groups * pe.rows * ic_groups * pe.simd * shape.kh * shape.kw
    beats = -(-params // _bus(config)) + -(-block // _bus(config))
    fixed, port, use = transfer_cycles(True, beats, 0, beats, config, WEIGHT_LOADS, constants=True)
    return beats * _bus(config), fixed, port, use


def input_tile(config: AcceleratorConfig, groups, window_rows, window_cols, inside_rows, inside_cols, phases):
    """`(bytes, fixed, port, port_use)` of loading an input tile (all its stride phases)."""
    words = _words_per_run(config)
    steps = groups * window_rows * window_cols * words
    beats = groups * inside_rows * inside_cols * words
    fixed, port, use = transfer_cycles(True, steps, steps - beats, beats, config, phases)
    return beats * _bus(config), fixed, port, use


def partial_sums(config: AcceleratorConfig, oc_groups, pixels, load: bool):
    """`(bytes, fixed, port, port_use)` of spilling (or reloading) an output tile's int32 sums."""
    nbytes = pixels * oc_groups * config.pe.rows * ACC_BYTES
    beats = nbytes // _bus(config)
    fixed, port, use = transfer_cycles(load, beats, 0, beats, config)
    return nbytes, fixed, port, use


def results(config: AcceleratorConfig, channels, pixels):
    """`(bytes, fixed, port, port_use)` of storing an output tile's int8 results: one run of
    `channels` bytes per pixel (bus alignment of the runs ignored for time)."""
    beats = pixels * -(-channels // _bus(config))
    fixed, port, use = transfer_cycles(False, beats, 0, beats, config)
    return channels * pixels, fixed, port, use


def conv_cycles(config: AcceleratorConfig, shape: ConvShape, oc_groups, ic_groups, rows, col_groups):
    """`hwgen.timing.conv_cycles` of CONVs of these sizes (arrays broadcast; the same with
    or without `init_from_acc`)."""
    return conv_busy_cycles(config, ic_groups * shape.kh * shape.kw, rows * col_groups * oc_groups)


# ---------------------------------------------------------------- instruction issue

# Instructions the compiler emits per event (`planner.compile.queue_sync.event_instructions`),
# each dispatched by the fetch stage.
EVENTS = event_instructions()
WEIGHT_LOADS = len(WEIGHT_TILE_LOADS)  # a weight tile's LOADs: parameter records and weight block
WEIGHT_INSTRUCTIONS = EVENTS.bank_fill + WEIGHT_LOADS + EVENTS.bank_switch
INPUT_INSTRUCTIONS = EVENTS.bank_fill + EVENTS.bank_switch  # around one LOAD per stride phase
STORE_INSTRUCTIONS = EVENTS.result_ready + EVENTS.store  # compute's SIGNAL ACC_READY, then the store queue's


def issue_cycles(config: AcceleratorConfig, convs, weight_tiles, input_tiles, input_loads, output_tiles, reloads,
                 stores):
    """Cycles the fetch stage takes to dispatch `convs` CONVs and the instructions of loading
    these weight and input tiles (`input_loads` LOADs), entering these output tiles, reloading
    and storing (ints or arrays): `fetch_cycles` per instruction, plus the halfwords of every
    transfer's descriptor lookup from the SPRAM program memory (which hold the fetch up)."""
    instructions = (convs + WEIGHT_INSTRUCTIONS * weight_tiles + INPUT_INSTRUCTIONS * input_tiles + input_loads
                    + EVENTS.output_entry * output_tiles + EVENTS.reload * reloads + STORE_INSTRUCTIONS * stores)
    cycles = fetch_cycles(config) * instructions
    halfwords = lookup_halfwords(config)
    if halfwords:
        cycles = cycles + halfwords * (WEIGHT_LOADS * weight_tiles + input_loads + reloads + stores)
    return cycles


def handover_cycles(config: AcceleratorConfig, leaving, new_weight, new_input, new_output):
    """Fewest cycles from a CONV's end to the next CONV's issue, given what happens between them
    (arrays broadcast): the compute queue executes its SIGNALs and WAITs a cycle each; and the
    fetch stage, which stalls during the CONV on the first instruction that finds its queue full
    (`hwgen.queue_options.queue_depth`: the compute queue, or the store queue held by the WAIT ACC_READY
    that passes a cycle after the CONV), dispatches the rest up to the next CONV only then, losing
    a STORE's descriptor lookup on the way, and the CONV reaches its queue's head `head_delay` later."""
    depth, store_depth = queue_depth(config.template, "compute"), queue_depth(config.template, "store")
    ready = EVENTS.result_ready * leaving
    between = ready + EVENTS.output_entry * new_output + EVENTS.bank_switch * (new_weight + new_input)
    store_full = leaving & (EVENTS.store > store_depth)
    stalled = np.where(store_full, EVENTS.store - store_depth + between - ready + 1,
                       np.maximum(between + 1 - depth, 0))  # instructions dispatched after the CONV
    late = store_full + (stalled - 1) * fetch_cycles(config) + leaving * (stalled > 1) * lookup_halfwords(config)
    return np.maximum(between, np.where(stalled > 0, late + head_delay(depth), 0))


# ---------------------------------------------------------------- reloads

def reload_factor(order: tuple[str, ...], trip: dict, relevant: frozenset[str]):
    """How many times each tile of a tensor is brought on chip: the product of the trip counts of
    the irrelevant loops outside its innermost relevant loop that has more than one trip.
    `trip` maps dims to ints or int arrays (many schedules at once)."""
    return reload_factors([order], trip, relevant)[0]


def reload_factors(orders: list[tuple[str, ...]], trip: dict, relevant: frozenset[str]) -> np.ndarray:
    """`reload_factor` under each of `orders`, along a new first axis."""
    extra = (1,) * max(np.ndim(trip[d]) for d in DIMS)
    place = {d: np.array([order.index(d) for order in orders]).reshape(-1, *extra) for d in DIMS}
    factor = np.ones((len(orders), *extra), dtype=np.int64)
    for dim in DIMS:
        if dim not in relevant:
            inner = np.any([(place[d] > place[dim]) & (np.asarray(trip[d]) > 1) for d in relevant], axis=0)
            factor = factor * np.where(inner, trip[dim], 1)
    return factor


# ---------------------------------------------------------------- closed forms

@dataclass(frozen=True)
class Accesses:
    """Accesses of schedules per level of the hierarchy (scalars or arrays): bytes of DRAM and
    of each buffer, PE register accesses and MACs. Energy is their sum weighted by the
    configuration's per-access energies."""

    dram: object
    input_buffer: object
    weight_buffer: object
    output_buffer: object
    register: object
    mac: object

    def energy_pj(self, e: Energy):
        return (e.dram_pj_per_byte * self.dram + e.input_buffer_pj_per_byte * self.input_buffer
                + e.weight_buffer_pj_per_byte * self.weight_buffer + e.output_buffer_pj_per_byte * self.output_buffer
                + e.register_pj_per_access * self.register + e.mac_pj * self.mac)


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
    accesses: Accesses
    steps: object

    @property
    def dram_bytes(self):
        return self.input_bytes + self.weight_bytes + self.output_bytes

    def where(self, mask: np.ndarray) -> Totals:
        """The schedules where `mask` holds (every field broadcast to its shape), as 1-d arrays."""
        return self._map(lambda x: np.broadcast_to(x, mask.shape)[mask])

    def take(self, index) -> Totals:
        """Schedules `index` of 1-d totals (`where`'s)."""
        return self._map(lambda x: x[index])

    def _map(self, fn) -> Totals:
        def each(value):
            return Accesses(*(fn(getattr(value, f.name)) for f in fields(Accesses))) if isinstance(value, Accesses) else fn(value)
        return Totals(*(each(getattr(self, f.name)) for f in fields(self)))


@dataclass(frozen=True)
class SumTables:
    """Order-independent sums over the tile grid of many tilings at once (arrays indexed like the
    tilings): per sweep of each tensor's tiles, bytes and DMA cycles (a lower bound: fixed parts
    plus port use), per sweep of the input tiles their number and LOADs, and the compute totals."""

    trip: dict
    input_bytes: np.ndarray
    input_dma: np.ndarray
    weight_bytes: np.ndarray
    weight_dma: np.ndarray
    partial_bytes: np.ndarray
    partial_dma: np.ndarray
    result_dma: np.ndarray
    input_tiles: np.ndarray
    input_loads: np.ndarray
    compute_cycles: np.ndarray
    array_cycles: np.ndarray
    first_load: np.ndarray
    first_input_loads: np.ndarray
    last_store: np.ndarray


def _lower(fixed, port, use):
    """A lower bound of transfer time that is additive over tiles: fixed parts plus port use."""
    return fixed + use


def sum_tables(shape: ConvShape, config: AcceleratorConfig, tiles: dict) -> SumTables:
    """`tiles[dim]` are equally long int arrays of tile sizes (one entry per tiling)."""
    pe = config.pe
    uniq = {d: np.array(sorted(set(tiles[d].tolist())), dtype=np.int64) for d in DIMS}  # (np.unique imports numpy.ma)
    pos = {d: np.searchsorted(uniq[d], tiles[d]) for d in DIMS}

    ax = {d: axes(shape, config, d, uniq[d]) for d in DIMS}

    def total(dim, fn):  # per tiling, the sum of fn over its tiles along dim
        return ax[dim].sums(fn(ax[dim].axis))[pos[dim]]

    def first(dim, field):
        return getattr(ax[dim].axis, field)[ax[dim].start][pos[dim]]

    def last(dim, field):
        return getattr(ax[dim].axis, field)[ax[dim].start + ax[dim].trips - 1][pos[dim]]

    trip = {d: total(d, lambda a: np.ones(a.trips, np.int64)) for d in DIMS}
    og, ig = total("OC", lambda a: a.groups), total("IC", lambda a: a.groups)
    rows_in, cols_in = total("OH", lambda a: a.inside), total("OW", lambda a: a.inside)
    rows_win, cols_win = total("OH", lambda a: a.window), total("OW", lambda a: a.window)
    col_groups, phases = total("OW", lambda a: a.groups), total("OW", lambda a: a.phases)
    tiles_out = trip["OC"] * trip["OH"] * trip["OW"]
    k, words, bus = shape.kh * shape.kw, _words_per_run(config), _bus(config)

    # inputs: sum over (channel, OH, OW) tiles of groups x rows x cols x words
    chan_groups = (total("OC", lambda a: input_groups(shape, config, a.groups, max(1, -(-pe.rows // pe.simd))))
                   if shape.depthwise else ig)
    beats = chan_groups * rows_in * cols_in * words
    steps = chan_groups * rows_win * cols_win * words
    chan_trips = trip["OC"] if shape.depthwise else trip["IC"]
    input_loads = chan_trips * trip["OH"] * phases
    fixed, port, use = transfer_cycles(True, steps, steps - beats, beats, config, input_loads)
    input_bytes, input_dma = beats * bus, _lower(fixed, port, use)
    # weights: every (OC, IC) tile: parameter records and block
    w_beats = -(-trip["IC"] * og * pe.rows * PARAM_BYTES // bus) + -(-og * pe.rows * ig * pe.simd * k // bus)
    fixed, port, use = transfer_cycles(True, w_beats, 0, w_beats, config, 2 * trip["OC"] * trip["IC"], constants=True)
    weight_bytes, weight_dma = w_beats * bus, _lower(fixed, port, use)
    # partial sums of every output tile (one spill; a reload costs the same plus latency)
    p_beats = og * pe.rows * ACC_BYTES * shape.oh * shape.ow // bus
    fixed, port, use = transfer_cycles(False, p_beats, 0, p_beats, config, tiles_out)
    partial_bytes, partial_dma = p_beats * bus, _lower(fixed, port, use)
    r_beats = shape.pooled(shape.oh * shape.ow) * total("OC", lambda a: -(-a.sizes // bus))
    fixed, port, use = transfer_cycles(False, r_beats, 0, r_beats, config, tiles_out)
    result_dma = _lower(fixed, port, use)

    # compute: one CONV per step; conv_cycles summed over the grid in closed form
    t_sum = total("IC", lambda a: a.groups * k)
    gap_sum = total("IC", lambda a: np.maximum(a.groups * k, group_interval(config)))
    n_sum = og * shape.oh * col_groups  # sum over (OC, OH, OW) tiles of the CONV's groups
    compute = (gap_sum * (n_sum - tiles_out) + t_sum * tiles_out
               + tiles_out * trip["IC"] * (1 + drain_cycles(config) + SYNC_CYCLES))
    array_cycles = og * ig * k * shape.oh * col_groups

    f_in = input_tile(config, input_groups(shape, config, first("OC", "groups"), first("IC", "groups")),
                      first("OH", "window"), first("OW", "window"), first("OH", "inside"), first("OW", "inside"),
                      first("OW", "phases"))
    f_w = weight_tile(config, shape, first("OC", "groups"), first("IC", "groups"))
    first_load = f_in[1] + f_in[2] + f_w[1] + f_w[2]
    l_res = results(config, last("OC", "sizes"), shape.pooled(last("OH", "sizes") * last("OW", "sizes")))
    last_store = l_res[1] + l_res[2]
    return SumTables(trip, input_bytes, input_dma, weight_bytes, weight_dma, partial_bytes, partial_dma, result_dma,
                     chan_trips * trip["OH"] * trip["OW"], input_loads, compute, array_cycles, first_load,
                     first("OW", "phases"), last_store)


def layer_totals(shape: ConvShape, config: AcceleratorConfig, tables: SumTables, orders: list[tuple[str, ...]],
                 macs: int) -> Totals:
    """Traffic, compute, DMA, accesses and the cycle lower bound of the tilings in `tables` under
    each of `orders` (a first axis over the orders where a total depends on them; independent
    of the buffer sizes and of the per-access energies)."""
    w, pe = config.widths, config.pe
    trip = tables.trip
    r_in = reload_factors(orders, trip, shape.input_dims)
    r_w = reload_factors(orders, trip, shape.relevant("weight"))
    visits = reload_factors(orders, trip, shape.relevant("output"))
    outputs = shape.oc * shape.pooled(shape.oh * shape.ow)
    input_bytes = tables.input_bytes * r_in
    weight_bytes = tables.weight_bytes * r_w
    output_bytes = outputs * w.activation_bytes + 2 * (visits - 1) * tables.partial_bytes
    steps = trip["OC"] * trip["IC"] * trip["OH"] * trip["OW"]
    tiles_out = trip["OC"] * trip["OH"] * trip["OW"]
    # what the fetch stage dispatches after the first step's loads (those are in `first_load`)
    issue = issue_cycles(config, steps, trip["OC"] * trip["IC"] * r_w - 1, tables.input_tiles * r_in - 1,
                         tables.input_loads * r_in - tables.first_input_loads, tiles_out * visits - 1,
                         tiles_out * (visits - 1), tiles_out * visits)
    loads = tables.input_dma * r_in + tables.weight_dma * r_w + (visits - 1) * tables.partial_dma
    stores = tables.result_dma + (visits - 1) * tables.partial_dma
    if config.template.dma == DmaSharing.SHARED:  # one DMA: loads and stores in turn (a store holds it from its offer)
        transfers = loads + stores - tables.first_load - tables.last_store - (tiles_out * visits - 1) * offer_cycles(config)
    else:
        transfers = np.maximum(loads - tables.first_load, stores - tables.last_store)
    lower = start_cycles(config) + tables.first_load + tables.last_store + np.maximum(
        np.maximum(tables.compute_cycles, transfers), issue)
    accesses = Accesses(input_bytes + weight_bytes + output_bytes,
                        input_bytes + tables.array_cycles * pe.cols * pe.simd * w.activation_bytes,
                        weight_bytes + tables.array_cycles * pe.rows * pe.simd * w.weight_bytes,
                        output_bytes + outputs * (2 * trip["IC"] - 1) * w.accumulator_bytes,
                        tables.array_cycles * pe.rows * pe.cols, macs)
    return Totals(input_bytes, weight_bytes, output_bytes, tables.compute_cycles, tables.array_cycles,
                  loads + stores, lower, accesses, steps)


# ---------------------------------------------------------------- the step model

@dataclass(frozen=True)
class Steps:
    """Per-step cycles of a schedule in execution order: `load` (the tiles step i needs that are
    not on chip yet), `compute`, `store` (the output written back after step i), the port use
    of the loads and stores (cycles of bandwidth their beats take; for stores on a shared DMA,
    the cycles they hold it), `issue`, the fetch stage's time for the instructions between
    step i's CONV and step i+1's (`issue_cycles`: the CONV, step i+1's loads and bank switches,
    step i's store) and `handover`, the earliest issue of step i+1's CONV after step i's
    (`handover_cycles`; 0 for the last step). The vector layers of `planner.vector_cost` leave both 0,
    and `overlap` (`load_overlap`)."""

    compute: np.ndarray
    load: np.ndarray
    store: np.ndarray
    load_use: np.ndarray
    store_use: np.ndarray
    issue: np.ndarray | float = 0.0
    handover: np.ndarray | float = 0.0
    overlap: float = 0.0


def step_cycles(steps: Steps, start: int = START_CYCLES) -> int:
    """The double-buffered step model: the loads of step i+1 and the store of step i-1 run while
    step i computes, each on its own unit; the store's port use (or DMA time) delays the loads
    but for `overlap` cycles of it (`loads_beside_store`);
    the fetch stage dispatches step i's instructions meanwhile, and step i+1's CONV issues no
    earlier than the queues let it::

        cycles = START + load[0] + sum_i max(compute[i], load[i+1] + max(0, store_use[i-1] - overlap),
                                             store[i-1], issue[i], handover[i]) + store[n-1] + DONE
    """
    ahead = np.zeros_like(steps.compute, dtype=np.float64)
    ahead[:-1] = steps.load[1:]
    behind, behind_use = np.zeros_like(ahead), np.zeros_like(ahead)
    behind[1:], behind_use[1:] = steps.store[:-1], steps.store_use[:-1]
    middle = np.maximum(np.maximum.reduce([steps.compute, loads_beside_store(ahead, behind_use, steps.overlap), behind]),
                        np.maximum(steps.issue, steps.handover))
    return round(start + steps.load[0] + middle.sum() + steps.store[-1] + DONE_CYCLES)


@functools.lru_cache(maxsize=256)
def load_overlap(config: AcceleratorConfig) -> int:
    """Cycles of a store's port use that run beside the next loads without delaying them: one
    LOAD's fixed part (start-up, descriptor lookup, memory latency), off the port while the
    store's beats pass (the loads are serial, so no more than one). None with `template.dma:
    shared`, where the loads wait while a store holds the DMA."""
    if config.template.dma == DmaSharing.SHARED:
        return 0
    fixed, _, _ = transfer_cycles(True, 1, 0, 1, config)
    return int(fixed)


def loads_beside_store(load, store_use, overlap):
    """Cycles of a step's loads (arrays broadcast) delayed by a store's port use beyond `overlap`."""
    return load + np.maximum(store_use - overlap, 0)


def _compute(shape: ConvShape, config: AcceleratorConfig, ax: dict, cur: dict):
    """Per-step compute cycles for tile indices `cur` (arrays)."""
    return conv_cycles(config, shape, ax["OC"].groups[cur["OC"]], ax["IC"].groups[cur["IC"]], ax["OH"].sizes[cur["OH"]],
                       ax["OW"].groups[cur["OW"]]) + SYNC_CYCLES


def _loads(shape: ConvShape, config: AcceleratorConfig, ax: dict, cur: dict, new_weight, new_input, reload):
    """Per-step load cycles and port use of the tiles `cur` that are not on chip yet."""
    og, ig = ax["OC"].groups[cur["OC"]], ax["IC"].groups[cur["IC"]]
    _, wf, wp, wu = weight_tile(config, shape, og, ig)
    _, inf, inp, inu = input_tile(config, input_groups(shape, config, og, ig), ax["OH"].window[cur["OH"]],
                                  ax["OW"].window[cur["OW"]], ax["OH"].inside[cur["OH"]], ax["OW"].inside[cur["OW"]],
                                  ax["OW"].phases[cur["OW"]])
    load = new_weight * (wf + wp + SYNC_CYCLES) + new_input * (inf + inp + SYNC_CYCLES)
    use = new_weight * wu + new_input * inu
    if np.any(reload):
        _, pf, pp, pu = partial_sums(config, og, ax["OH"].sizes[cur["OH"]] * ax["OW"].sizes[cur["OW"]], True)
        load, use = load + reload * (pf + pp + SYNC_CYCLES), use + reload * pu
    return load, use


def _stores(shape: ConvShape, config: AcceleratorConfig, ax: dict, cur: dict, final):
    """Per-step store cycles and the cycles by which they delay the loads of writing back output
    tiles `cur` (int8 results where `final`, pooled with a fused pool, else partial sums): their
    port use, or with `template.dma: shared` the time they hold the DMA (all but the offer)."""
    pixels = ax["OH"].sizes[cur["OH"]] * ax["OW"].sizes[cur["OW"]]
    _, rf, rp, ru = results(config, ax["OC"].sizes[cur["OC"]], shape.pooled(pixels))
    _, sf, sp, su = partial_sums(config, ax["OC"].groups[cur["OC"]], pixels, False)
    store = np.where(final, rf + rp, sf + sp)
    return store + SYNC_CYCLES, store_delay(config, store, np.where(final, ru, su))


def store_delay(config: AcceleratorConfig, store, port_use):
    """Cycles by which a store of `store` cycles (fixed part and port) delays the next loads: its
    `port_use`, or with `template.dma: shared` the time it holds the DMA (all but the offer)."""
    return store - offer_cycles(config) if config.template.dma == DmaSharing.SHARED else port_use


def step_arrays(shape: ConvShape, schedule: Schedule, config: AcceleratorConfig) -> Steps:
    """Enumerate the steps of a schedule (vectorised over the tile grid in loop order)."""
    order = schedule.order
    ax = {d: axis(shape, config, d, schedule.tile(d)) for d in DIMS}
    grid = np.indices([ax[d].trips for d in order]).reshape(len(order), -1)
    cur = {d: grid[p] for p, d in enumerate(order)}

    def changed(dims, shift):
        ident = np.zeros_like(grid[0])
        for d in dims:
            ident = ident * ax[d].trips + cur[d]
        out = np.ones(ident.shape, dtype=bool)
        if shift > 0:  # differs from the previous step
            out[1:] = ident[1:] != ident[:-1]
        else:  # differs from the next step
            out[:-1] = ident[:-1] != ident[1:]
        return out

    chan = "OC" if shape.depthwise else "IC"
    out_dims = ("OC", "OH", "OW")
    compute = _compute(shape, config, ax, cur)
    new_weight, new_input, new_output = changed(("OC", "IC"), 1), changed((chan, "OH", "OW"), 1), changed(out_dims, 1)
    reload = new_output & (cur["IC"] > 0)
    load, load_use = _loads(shape, config, ax, cur, new_weight, new_input, reload)
    store, store_use = _stores(shape, config, ax, cur, cur["IC"] == ax["IC"].trips - 1)
    leaving = changed(out_dims, -1)

    def ahead(flags):  # the next step's events (none after the last step)
        return np.append(flags[1:], False)

    issue = issue_cycles(config, 1, ahead(new_weight), ahead(new_input),
                         ahead(new_input) * np.append(ax["OW"].phases[cur["OW"]][1:], 0), ahead(new_output),
                         ahead(reload), leaving)
    handover = ahead(np.ones_like(leaving)) * (compute - SYNC_CYCLES + handover_cycles(
        config, leaving, ahead(new_weight), ahead(new_input), ahead(new_output)))
    return Steps(compute, load, leaving * store, load_use, leaving * store_use, issue, handover, load_overlap(config))


def _groups(ax: Axis) -> tuple[np.ndarray, np.ndarray]:
    """Tile indices of one axis grouped by everything a step depends on (own, next and previous
    tile); returns a representative index and the size of each group."""
    n = ax.trips
    vals = list(zip(ax.sizes.tolist(), ax.window.tolist(), ax.inside.tolist(), ax.phases.tolist()))
    groups: dict[tuple, list[int]] = {}
    for j in range(n):
        key = (vals[j], vals[j + 1] if j + 1 < n else None, vals[j - 1] if j else None)
        groups.setdefault(key, [j, 0])[1] += 1
    rep, count = zip(*groups.values())
    return np.array(rep, dtype=np.int64), np.array(count, dtype=np.int64)


@functools.lru_cache(maxsize=4096)
def _step_groups(shape: ConvShape, config: AcceleratorConfig, dim: str, tile: int) -> tuple[np.ndarray, np.ndarray]:
    """`_groups` of an axis (shared by every loop order of a tiling)."""
    return _groups(axis(shape, config, dim, tile))


@dataclass(frozen=True)
class _Stacked:
    """The axes of one dim for several schedules (`Axes` of its distinct tile sizes): per
    schedule `base` is where its axis starts, `trips` its length, and its step groups are
    `reps[first:first + groups]` (tile indices of its axis) with multiplicities `counts[...]`."""

    axis: Axis
    base: np.ndarray
    trips: np.ndarray
    reps: np.ndarray
    counts: np.ndarray
    first: np.ndarray
    groups: np.ndarray


def _stack(shape: ConvShape, config: AcceleratorConfig, dim: str, tiles: list[int]) -> _Stacked:
    sizes = sorted(set(tiles))
    which = np.searchsorted(sizes, tiles)
    ax = axes(shape, config, dim, sizes)
    parts = [_step_groups(shape, config, dim, int(t)) for t in sizes]
    groups = np.array([len(rep) for rep, _ in parts], dtype=np.int64)
    return _Stacked(ax.axis, ax.start[which], ax.trips[which], np.concatenate([r for r, _ in parts]),
                    np.concatenate([c for _, c in parts]), (np.cumsum(groups) - groups)[which], groups[which])


def grouped_step_cycles(shape: ConvShape, schedules: list[Schedule], config: AcceleratorConfig) -> list[int]:
    """`step_cycles` of each schedule without enumerating its steps: steps whose own, next and
    previous tiles agree are counted once with their multiplicity (equal to `step_arrays`).
    The schedules are evaluated together: their step groups are rows of one set of arrays, in
    each schedule's loop order (a mixed-radix count over its dims' groups, the last loop fastest)."""
    if not schedules:
        return []
    stacked = {d: _stack(shape, config, d, [s.tile(d) for s in schedules]) for d in DIMS}
    place = np.array([[s.order.index(d) for d in DIMS] for s in schedules], dtype=np.int64).T  # dim x schedule
    radix = np.stack([stacked[d].groups for d in DIMS])
    inner = np.ones_like(radix)  # per dim and schedule: the product of the groups of the loops inside it
    for i in range(len(DIMS)):
        for j in range(len(DIMS)):
            inner[i] *= np.where(place[j] > place[i], radix[j], 1)
    rows = np.prod(radix, axis=0)
    offsets = np.concatenate(([0], np.cumsum(rows)))
    owner = np.repeat(np.arange(len(schedules)), rows)
    row = np.arange(offsets[-1]) - offsets[owner]
    ax = {d: stacked[d].axis for d in DIMS}
    pos, n, base, cur = {}, {}, {}, {}
    count = np.ones_like(row)
    for i, d in enumerate(DIMS):
        st = stacked[d]
        group = st.first[owner] + row // inner[i][owner] % radix[i][owner]
        pos[d], n[d], base[d], cur[d] = place[i][owner], st.trips[owner], st.base[owner], st.reps[group]
        count = count * st.counts[group]
    carry_next = np.max([np.where(cur[d] < n[d] - 1, pos[d], -1) for d in DIMS], axis=0)  # loop that advances next
    carry_prev = np.max([np.where(cur[d] > 0, pos[d], -1) for d in DIMS], axis=0)  # loop that advanced into this step
    nxt = {d: np.where(pos[d] < carry_next, cur[d], np.where(pos[d] == carry_next, cur[d] + 1, 0)) for d in DIMS}
    prv = {d: np.where(pos[d] < carry_prev, cur[d], np.where(pos[d] == carry_prev, cur[d] - 1, n[d] - 1)) for d in DIMS}

    def at(index):  # indices into the stacked axes
        return {d: base[d] + index[d] for d in DIMS}

    chan = "OC" if shape.depthwise else "IC"
    out_dims = ("OC", "OH", "OW")

    def differs(x, y, dims):
        return np.any([x[d] != y[d] for d in dims], axis=0)

    compute = _compute(shape, config, ax, at(cur))
    has_next, has_prev = carry_next >= 0, carry_prev >= 0
    # the next step's loads: what changes between this step and the next
    new_weight = differs(nxt, cur, ("OC", "IC")) & has_next
    new_input = differs(nxt, cur, (chan, "OH", "OW")) & has_next
    new_output = differs(nxt, cur, out_dims) & has_next
    reload = new_output & (nxt["IC"] > 0)
    load_next, _ = _loads(shape, config, ax, at(nxt), new_weight, new_input, reload)
    leaving = new_output | ~has_next
    issue = issue_cycles(config, 1, new_weight, new_input, new_input * ax["OW"].phases[at(nxt)["OW"]], new_output,
                         reload, leaving)
    handover = has_next * (compute - SYNC_CYCLES + handover_cycles(config, leaving, new_weight, new_input, new_output))
    # the previous step's store: when the output tile changed between it and this step
    store_prev, use_prev = _stores(shape, config, ax, at(prv), prv["IC"] == n["IC"] - 1)
    leaving_prev = differs(prv, cur, out_dims) & has_prev
    loads = loads_beside_store(np.where(has_next, load_next, 0), np.where(leaving_prev, use_prev, 0), load_overlap(config))
    middle = np.maximum.reduce([compute, loads, np.where(leaving_prev, store_prev, 0), issue, handover]) * count
    load_first, _ = _loads(shape, config, ax, {d: stacked[d].base for d in DIMS}, True, True, False)
    store_last, _ = _stores(shape, config, ax, {d: stacked[d].base + stacked[d].trips - 1 for d in DIMS}, True)
    start = start_cycles(config)
    # each schedule's steps summed on their own (the same float sum as one schedule alone)
    return [round(start + load_first[k] + middle[offsets[k]:offsets[k + 1]].sum() + store_last[k] + DONE_CYCLES)
            for k in range(len(schedules))]


def costs_of(shape: ConvShape, schedules: list[Schedule], config: AcceleratorConfig, macs: int,
             totals: Totals) -> list[LayerCost]:
    """The cost of each schedule: its closed-form `totals` (1-d, one entry per schedule) and its
    step-model cycles (`grouped_step_cycles` of them all at once)."""
    cycles = grouped_step_cycles(shape, schedules, config)
    columns = (totals.input_bytes, totals.weight_bytes, totals.output_bytes, totals.compute_cycles, totals.dma_cycles,
               totals.accesses.energy_pj(config.energy))
    return [LayerCost(i, w, o, c, round(compute), round(dma), utilization(macs, c, config.pe.macs_per_cycle),
                      float(energy), macs)
            for (i, w, o, compute, dma, energy), c in zip(zip(*(np.asarray(x).tolist() for x in columns)), cycles)]


def evaluate_orders(shape: ConvShape, tiling: Schedule, orders, config: AcceleratorConfig,
                    macs: int) -> list[LayerCost]:
    """Exact costs of one tiling under several loop orders (closed-form traffic and energy,
    step-model cycles)."""
    tables = sum_tables(shape, config, {d: np.array([tiling.tile(d)]) for d in DIMS})
    totals = layer_totals(shape, config, tables, orders, macs).where(np.ones((len(orders), 1), dtype=bool))
    return costs_of(shape, [Schedule(tiling.oc, tiling.ic, tiling.oh, tiling.ow, tuple(order)) for order in orders],
                    config, macs, totals)


def evaluate(shape: ConvShape, schedule: Schedule, config: AcceleratorConfig, macs: int) -> LayerCost:
    """Exact cost of one schedule."""
    return evaluate_orders(shape, schedule, [schedule.order], config, macs)[0]
