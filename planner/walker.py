"""Independent loop-nest walker: runs the tiled DRAM loops of a schedule literally and counts
every transfer, to check `planner.cost` (it shares only `cost.step_cycles`, the cycle contract).

Input boxes are found by visiting every output pixel and kernel tap of the tile; transfer
cycles come from scanning the box's element addresses for contiguous runs and cutting them
into bursts. Slow on purpose: use it on small layers.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from hwgen.config import AcceleratorConfig
from planner.cost import step_cycles
from planner.schedule import ConvShape, Schedule


@dataclass
class WalkResult:
    """Bytes per tensor, the step arrays and the resulting cycles."""

    input_bytes: int = 0
    weight_bytes: int = 0
    output_bytes: int = 0
    compute: list[int] = field(default_factory=list)
    load: list[int] = field(default_factory=list)
    store: list[int] = field(default_factory=list)

    @property
    def cycles(self) -> int:
        return step_cycles(self.compute, self.load, self.store)


def _ranges(bound: int, tile: int) -> list[range]:
    out, start = [], 0
    while start < bound:
        out.append(range(start, min(bound, start + tile)))
        start += tile
    return out


def _burst_cycles(addresses: np.ndarray, elem: int, config: AcceleratorConfig) -> int:
    """Cycles to move the given element addresses: contiguous runs, each cut into bursts."""
    dram = config.dram
    bw = Fraction(str(dram.bandwidth_bytes_per_cycle))
    addresses = np.sort(addresses)
    breaks = np.flatnonzero(np.diff(addresses) != 1)
    run_lengths = np.diff(np.concatenate(([0], breaks + 1, [len(addresses)])))
    cycles = 0
    for run in run_lengths:
        remaining = int(run) * elem
        while remaining > 0:
            chunk = min(remaining, dram.burst_bytes)
            cycles += dram.latency_cycles + math.ceil(chunk / bw)
            remaining -= chunk
    return cycles


def _touched(outputs: range, stride: int, pad: int, kernel: int, size: int) -> range:
    hits = [o * stride - pad + k for o in outputs for k in range(kernel) if 0 <= o * stride - pad + k < size]
    return range(min(hits), max(hits) + 1) if hits else range(0)


def _box(dims: tuple[int, ...], ranges: tuple[range, ...]) -> np.ndarray:
    """Row-major element addresses of a box of a tensor with extents `dims`."""
    grids = np.meshgrid(*[np.array(r, dtype=np.int64) for r in ranges], indexing="ij")
    address = np.zeros_like(grids[0])
    for extent, g in zip(dims, grids):
        address = address * extent + g
    return address.ravel()


def walk(shape: ConvShape, schedule: Schedule, config: AcceleratorConfig) -> WalkResult:
    """Run the schedule's loop nest and record every DRAM transfer and compute step."""
    widths, pe = config.widths, config.pe
    a, wb, acc = widths.activation_bytes, widths.weight_bytes, widths.accumulator_bytes
    loops = {"OC": _ranges(shape.oc, schedule.oc), "IC": _ranges(shape.ic, schedule.ic),
             "OH": _ranges(shape.oh, schedule.oh), "OW": _ranges(shape.ow, schedule.ow)}
    in_c = shape.oc if shape.depthwise else shape.ic
    result = WalkResult()
    held = {"input": None, "weight": None, "output": None}
    reductions_done: dict[tuple, int] = {}
    n_reduction = len(loops["IC"])

    def leave_output(key):
        o, h, w = (loops[d][i] for d, i in zip(("OC", "OH", "OW"), key))
        complete = reductions_done[key] == n_reduction
        elem = a if complete else acc
        result.output_bytes += len(o) * len(h) * len(w) * elem
        result.store[-1] += _burst_cycles(_box((shape.oc, shape.oh, shape.ow), (o, h, w)), elem, config)

    for index in itertools.product(*(range(len(loops[d])) for d in schedule.order)):
        at = dict(zip(schedule.order, index))
        oc, ic, oh, ow = (loops[d][at[d]] for d in ("OC", "IC", "OH", "OW"))
        load = 0
        channels = oc if shape.depthwise else ic
        in_key = (at["OC"] if shape.depthwise else at["IC"], at["OH"], at["OW"])
        if in_key != held["input"]:
            rows = _touched(oh, shape.sh, shape.pad_top, shape.kh, shape.ih)
            cols = _touched(ow, shape.sw, shape.pad_left, shape.kw, shape.iw)
            result.input_bytes += len(channels) * len(rows) * len(cols) * a
            load += _burst_cycles(_box((in_c, shape.ih, shape.iw), (channels, rows, cols)), a, config)
            held["input"] = in_key
        w_key = (at["OC"], at["IC"])
        if w_key != held["weight"]:
            kh, kw = range(shape.kh), range(shape.kw)
            result.weight_bytes += len(oc) * len(ic) * shape.kh * shape.kw * wb
            load += _burst_cycles(_box((shape.oc, shape.ic, shape.kh, shape.kw), (oc, ic, kh, kw)), wb, config)
            held["weight"] = w_key
        out_key = (at["OC"], at["OH"], at["OW"])
        if out_key != held["output"]:
            if held["output"] is not None:
                leave_output(held["output"])
            if reductions_done.get(out_key, 0):
                result.output_bytes += len(oc) * len(oh) * len(ow) * acc
                load += _burst_cycles(_box((shape.oc, shape.oh, shape.ow), (oc, oh, ow)), acc, config)
            held["output"] = out_key
        reductions_done[out_key] = reductions_done.get(out_key, 0) + 1
        passes = (len(range(0, len(oc), pe.rows)) * len(range(0, len(ic), pe.simd)) * len(oh)
                  * len(range(0, len(ow), pe.cols)) * shape.kh * shape.kw)
        result.compute.append(passes + config.pipeline_depth)
        result.load.append(load)
        result.store.append(0)
    leave_output(held["output"])
    return result
