"""Lowering of a conv / fc layer with its Schedule to LOAD / CONV / STORE instructions.

The DRAM-level tile loops run in the schedule's order. A tensor's tile is loaded when the tile
needed differs from the one resident (the planner's reuse model). An output tile accumulates
over input-channel tiles in the accumulator bank; when the loop order leaves it before all
input-channel tiles are done, its int32 partial sums are spilled to scratch DRAM and reloaded
at the next visit.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from hwgen.config import AcceleratorConfig
from hwgen.dma import Descriptor, Dim
from hwgen.isa import Buffer, Opcode
from hwgen.layout import ACC_BYTES, PARAM_BYTES, bank_bytes, partial_sums_offset, phase_row_pitch
from hwgen.conv_step_fields import compiler_fields
from planner.compile.queue_sync import Emitter
from planner.compile.packing import expand_depthwise, padded_channels, param_block, weight_block
from common.errors import PlanningError
from planner.ir import Layer, ceil_div
from planner.schedule import DIMS, ConvShape, Schedule, axis_tiles, fits_instructions, footprint, whole_reduction

MAX_RUN = 1 << 15
WEIGHT_TILE_LOADS = (Buffer.PARAM, Buffer.WEIGHT)
"""The LOADs of a weight tile, in order: its parameter records, then its weight block."""


@dataclass(frozen=True)
class ConvTiling:
    """Tile boundaries per dim and the buffer geometry shared by all tiles of a layer."""

    layer: Layer
    shape: ConvShape
    schedule: Schedule
    config: AcceleratorConfig

    @property
    def stride(self) -> int:
        return self.shape.sh

    def tiles(self, dim: str) -> list[tuple[int, int]]:
        if dim == "IC" and self.shape.depthwise:
            return [(0, 1)]
        return axis_tiles(self.shape.bound(dim), self.schedule.tile(dim))

    @property
    def in_rows(self) -> int:
        return (min(self.schedule.oh, self.shape.oh) - 1) * self.stride + self.shape.kh

    @property
    def in_cols(self) -> int:
        return (min(self.schedule.ow, self.shape.ow) - 1) * self.shape.sw + self.shape.kw

    @property
    def row_pitch(self) -> int:
        return phase_row_pitch(self.in_cols, self.stride, self.config.pe.cols)

    @property
    def window(self) -> InputWindow:
        return InputWindow((self.shape.kh, self.shape.kw), self.stride, (self.shape.pad_top, self.shape.pad_left),
                           self.in_rows, self.row_pitch)

    def ic_groups(self, ic_size: int) -> int:
        pe = self.config.pe
        return max(1, ceil_div(pe.rows, pe.simd)) if self.shape.depthwise else ceil_div(ic_size, pe.simd)

    def input_channel_groups(self, oc_size: int, ic_size: int) -> int:
        """Channel groups of an input tile (depthwise tiles follow the output channels)."""
        pe = self.config.pe
        if self.shape.depthwise:  # oc group g reads input groups g*R//S .. g*R//S + ic_groups - 1
            return (ceil_div(oc_size, pe.rows) - 1) * pe.rows // pe.simd + self.ic_groups(ic_size)
        return ceil_div(ic_size, pe.simd)

    def check_fits(self) -> None:
        """Every tile fits its bank in the hardware layouts (else the plan is not executable)."""
        if self.shape.sh != self.shape.sw:
            raise PlanningError(f"layer {self.layer.name!r}: strides {self.shape.sh}x{self.shape.sw} differ; the hardware needs equal strides")
        fp, cfg, s = footprint(self.shape, self.schedule, self.config), self.config, self.schedule
        if not whole_reduction(self.shape, s.ic, cfg):
            raise PlanningError(f"layer {self.layer.name!r}: tiles {s.tiles} split the {self.shape.ic} input channels; "
                                f"configuration {cfg.name!r} has no partial sums (template.partial_sums: none), "
                                f"allowed: IC {self.shape.ic}")
        k = self.shape.pool
        if s.oh % k or s.ow % k:
            raise PlanningError(f"layer {self.layer.name!r}: tiles {s.tiles} cut the fused {k}x{k} max pool's windows; "
                                f"allowed: OH and OW tiles multiples of {k}")
        if not fits_instructions(self.shape, s.oc, s.ic, s.oh, s.ow, cfg):
            raise PlanningError(f"layer {self.layer.name!r}: tiles {s.tiles} exceed the CONV/CONVCFG field ranges (docs/isa.md)")
        for buffer, need, have in (("input", fp.input, bank_bytes(cfg, "input")), ("weight", fp.weight, bank_bytes(cfg, "weight")),
                                   ("acc", fp.output, bank_bytes(cfg, "acc")),
                                   ("param", fp.channels * PARAM_BYTES, bank_bytes(cfg, "param"))):
            if need > have:
                raise PlanningError(f"layer {self.layer.name!r}: tiles {self.schedule.tiles} need a {need}-byte {buffer} "
                                    f"bank in the hardware layout, the configuration has {have}")


def weight_constants(tiling: ConvTiling) -> tuple[np.ndarray, dict[tuple[int, int], int]]:
    """The layer's constant bytes: parameters for all output channels, then one weight block
    per (oc tile, ic tile); returns the bytes and each block's offset."""
    layer, pe = tiling.layer, tiling.config.pe
    q = layer.quant
    parts = [param_block(q.bias, q.multiplier, q.shift, pe.rows)]
    offsets, cursor = {}, len(parts[0])
    for (o, (o0, on)), (i, (i0, inn)) in itertools.product(enumerate(tiling.tiles("OC")), enumerate(tiling.tiles("IC"))):
        if tiling.shape.depthwise:  # tile-local: the input tile starts at channel o0
            tile = expand_depthwise(q.weights[o0:o0 + on], pe.rows, pe.simd)
        else:
            tile = q.weights[o0:o0 + on, i0:i0 + inn]
        block = weight_block(tile, pe.rows, pe.simd)
        offsets[(o, i)] = cursor
        parts.append(block)
        cursor += len(block)
    return np.concatenate(parts), offsets


def _linear(load: bool, nbytes: int, quantum: int) -> tuple[Descriptor, int]:
    """A contiguous transfer of `nbytes` (a multiple of `quantum`) as rows of at most MAX_RUN."""
    run = nbytes
    while run > MAX_RUN:
        run = next(r for r in range(MAX_RUN // quantum * quantum, 0, -quantum) if nbytes % r == 0)
    return Descriptor(load=load, dram_addr=0, buf_addr=0, run_bytes=run,
                      dims=(Dim(nbytes // run, run, run),) if nbytes > run else ()), run


def lower_conv(em: Emitter, tiling: ConvTiling, constants: int, block_offsets: dict, source: int, target: int,
               scratch: int | None, reads_stored_data: bool) -> None:
    """Emit the whole layer; `constants`, `source`, `target`, `scratch` are DRAM addresses."""
    _ConvLowering(em, tiling, constants, block_offsets, source, target, scratch, reads_stored_data).emit()


class _ConvLowering:
    """One convolution's instructions, step by step of its schedule's tile loops: per step the
    load queue's tiles (`fetch`, one step ahead), the compute queue's CONV (`run`) and the store
    queue's results (`finish`)."""

    def __init__(self, em: Emitter, tiling: ConvTiling, constants: int, block_offsets: dict, source: int,
                 target: int, scratch: int | None, reads_stored_data: bool) -> None:
        self.em, self.tiling = em, tiling
        self.constants, self.block_offsets = constants, block_offsets
        self.source, self.target, self.scratch = source, target, scratch
        self.reads_stored_data = reads_stored_data
        self.layer, self.shape, self.cfg = tiling.layer, tiling.shape, tiling.config
        self.pe = self.cfg.pe
        self.tiles = {dim: tiling.tiles(dim) for dim in DIMS}
        order = tiling.schedule.order
        self.steps = [dict(zip(order, index)) for index in itertools.product(*[range(len(self.tiles[d])) for d in order])]
        self.n_ic = len(self.tiles["IC"])
        self.done_ic: dict[tuple, int] = {}
        self.resident = {"weight": None, "input": None}
        self.scratch_tile = tile_acc_bytes(tiling)

    def emit(self) -> None:
        """CONVCFG, then every step's work, the loads one step ahead of the CONVs."""
        em, tiling, q = self.em, self.tiling, self.layer.quant
        s = tiling.stride
        em.emit(Opcode.CONVCFG, in_zero_point=q.inputs[0].zero_point, out_zero_point=q.output.zero_point,
                act_min=q.act_min, act_max=q.act_max, kernel_h=self.shape.kh, kernel_w=self.shape.kw, stride=s,
                in_rows=tiling.in_rows, in_row_pitch=tiling.row_pitch,
                **compiler_fields(self.cfg.template, s, tiling.in_rows, tiling.row_pitch))
        upcoming = self.fetch(0)
        bank = None
        for n in range(len(self.steps)):
            current = upcoming
            if "output" in current:
                bank = current["output"][0]
            self.run(n, current, bank)
            if n + 1 < len(self.steps):
                upcoming = self.fetch(n + 1)
            self.finish(n, bank)
        em.release_all()

    def keys(self, step: dict) -> tuple[tuple, tuple, tuple]:
        """The weight, input and output tile a step works on."""
        return ((step["OC"], step["IC"]), (step["OC"] if self.shape.depthwise else step["IC"], step["OH"], step["OW"]),
                (step["OC"], step["OH"], step["OW"]))

    def geometry(self, step: dict):
        tiles = self.tiles
        (o0, on), (i0, inn) = tiles["OC"][step["OC"]], tiles["IC"][step["IC"]]
        (h0, hn), (w0, wn) = tiles["OH"][step["OH"]], tiles["OW"][step["OW"]]
        out_index = (step["OC"] * len(tiles["OH"]) + step["OH"]) * len(tiles["OW"]) + step["OW"]
        return o0, on, i0, inn, h0, hn, w0, wn, ceil_div(on, self.pe.rows), out_index

    def fetch(self, n: int) -> dict:
        """Load-queue work of step n: new weight and input tiles, the output bank (reloaded with
        partial sums on a later visit). Emitted one step ahead so the load queue runs ahead."""
        em, pe, shape, resident = self.em, self.pe, self.shape, self.resident
        step = self.steps[n]
        weight_key, input_key, out_key = self.keys(step)
        o0, on, i0, inn, h0, hn, w0, wn, oc_groups, out_index = self.geometry(step)
        fetched = {"weight": resident["weight"] != weight_key, "input": resident["input"] != input_key}
        if fetched["weight"]:
            params, _ = _linear(True, oc_groups * pe.rows * PARAM_BYTES, PARAM_BYTES)
            block = oc_groups * pe.rows * self.tiling.ic_groups(inn) * pe.simd * shape.kh * shape.kw
            weights, _ = _linear(True, block, pe.rows * pe.simd)
            loads = {Buffer.PARAM: dict(desc=em.descriptor(params), dram_offset=self.constants + o0 * PARAM_BYTES),
                     Buffer.WEIGHT: dict(desc=em.descriptor(weights),
                                         dram_offset=self.constants + self.block_offsets[weight_key])}
            em.load("weight", [dict(buffer=buffer, **loads[buffer]) for buffer in WEIGHT_TILE_LOADS])
            resident["weight"] = weight_key
        if fetched["input"]:
            if n == 0 and self.reads_stored_data:
                em.await_stores()
            em.load("input", self.tiling.window.loads(
                em, self.cfg, self.layer.in_shape, self.source, o0 if shape.depthwise else i0,
                self.tiling.input_channel_groups(on, inn), (h0, hn), (w0, wn), self.layer.quant.inputs[0].zero_point))
            resident["input"] = input_key
        if n == 0 or self.keys(self.steps[n - 1])[2] != out_key:
            reload = None
            if self.done_ic.get(out_key, 0):
                desc, _ = _linear(True, hn * wn * oc_groups * pe.rows * ACC_BYTES, ACC_BYTES)
                reload = [dict(desc=em.descriptor(desc), dram_offset=self.scratch + out_index * self.scratch_tile,
                               buf_addr=partial_sums_offset(pe.cols, oc_groups, pe.rows))]
            fetched["output"] = em.reserve_output(reload)
        return fetched

    def run(self, n: int, fetched: dict, bank: int) -> None:
        """Compute-queue work of step n: switch to the new banks, then the CONV."""
        em, pe, done_ic = self.em, self.pe, self.done_ic
        step = self.steps[n]
        _, _, out_key = self.keys(step)
        o0, on, i0, inn, h0, hn, w0, wn, oc_groups, _ = self.geometry(step)
        if "output" in fetched:
            em.enter_output(fetched["output"][1])
        for kind in ("weight", "input"):
            if fetched[kind]:
                em.use(kind)
        em.emit(Opcode.CONV, in_bank=em.next_bank["input"] ^ 1, weight_bank=em.next_bank["weight"] ^ 1,
                out_bank=bank, oc_groups=oc_groups, out_rows=hn, ow_groups=ceil_div(wn, pe.cols),
                last_group_cols=wn - (ceil_div(wn, pe.cols) - 1) * pe.cols, ic_groups=self.tiling.ic_groups(inn),
                depthwise=int(self.shape.depthwise), init_from_acc=int(done_ic.get(out_key, 0) > 0),
                requantize=int(done_ic.get(out_key, 0) + 1 == self.n_ic),
                pool=self.shape.pool if self.shape.pool > 1 else 0)
        done_ic[out_key] = done_ic.get(out_key, 0) + 1

    def finish(self, n: int, bank: int) -> None:
        """Store-queue work when step n leaves its output tile: int8 results or partial sums."""
        em, pe = self.em, self.pe
        step = self.steps[n]
        _, _, out_key = self.keys(step)
        if n + 1 < len(self.steps) and self.keys(self.steps[n + 1])[2] == out_key:
            return
        o0, on, i0, inn, h0, hn, w0, wn, oc_groups, out_index = self.geometry(step)
        if self.done_ic[out_key] == self.n_ic:  # the int8 results, pooled with a fused pool
            out_c, _, out_w = self.layer.out_shape
            out_cp = padded_channels(out_c, pe.simd)
            k = self.shape.pool
            h0, hn, w0, wn = h0 // k, hn // k, w0 // k, wn // k
            store = Descriptor(load=False, dram_addr=0, buf_addr=0, run_bytes=on,
                               dims=(Dim(wn, out_cp, oc_groups * pe.rows), Dim(hn, out_w * out_cp, wn * oc_groups * pe.rows)))
            stores = [dict(desc=em.descriptor(store), dram_offset=self.target + (h0 * out_w + w0) * out_cp + o0)]
        else:
            if self.scratch is None:
                raise PlanningError(f"layer {self.layer.name!r}: schedule spills partial sums but no scratch was reserved")
            desc, _ = _linear(False, hn * wn * oc_groups * pe.rows * ACC_BYTES, ACC_BYTES)
            stores = [dict(desc=em.descriptor(desc), dram_offset=self.scratch + out_index * self.scratch_tile,
                           buf_addr=partial_sums_offset(pe.cols, oc_groups, pe.rows))]
        em.close_output(bank, stores)


def stride_phases(stride, cols):
    """LOADs of an input window `cols` columns wide: one per stride phase it holds (numpy arrays
    broadcast)."""
    return np.minimum(stride, cols)


def spills(tiling: ConvTiling) -> bool:
    """Whether the loop order leaves an output tile before all its input-channel tiles are done."""
    order = [d for d in tiling.schedule.order if len(tiling.tiles(d)) > 1]
    return "IC" in order and any(d in ("OC", "OH", "OW") for d in order[order.index("IC") + 1:])


def tile_acc_bytes(tiling: ConvTiling) -> int:
    """Bytes of the largest output tile's int32 partial sums."""
    pe, shape, sched = tiling.config.pe, tiling.shape, tiling.schedule
    return min(sched.oh, shape.oh) * min(sched.ow, shape.ow) * ceil_div(min(sched.oc, shape.oc), pe.rows) * pe.rows * ACC_BYTES


def scratch_bytes(tiling: ConvTiling) -> int:
    tiles = len(tiling.tiles("OC")) * len(tiling.tiles("OH")) * len(tiling.tiles("OW"))
    return tiles * tile_acc_bytes(tiling)


@dataclass(frozen=True)
class InputWindow:
    """How an input tile is laid out in the input buffer (shared by conv and vector layers)."""

    kernel: tuple[int, int]
    stride: int
    pads: tuple[int, int]  # top, left
    in_rows: int
    row_pitch: int

    def loads(self, em: Emitter, config: AcceleratorConfig, in_shape: tuple[int, int, int], source: int,
              channel0: int, groups: int, rows: tuple[int, int], cols: tuple[int, int], fill: int,
              buf_addr: int = 0) -> list[dict]:
        """One LOAD per stride phase for output rows/cols `(start, count)`: the input window
        (halo included); positions outside the map are written as `fill`."""
        pe, s = config.pe, self.stride
        channels, height, width = in_shape
        in_cp = padded_channels(channels, pe.simd)
        (h0, hn), (w0, wn) = rows, cols
        n_rows, n_cols = (hn - 1) * s + self.kernel[0], (wn - 1) * s + self.kernel[1]
        r0, c0 = h0 * s - self.pads[0], w0 * s - self.pads[1]
        plane = self.in_rows * s * self.row_pitch * pe.simd
        loads = []
        for phase in range(stride_phases(s, n_cols)):
            desc = Descriptor(
                load=True, dram_addr=0, buf_addr=0, run_bytes=pe.simd,
                dims=(Dim(ceil_div(n_cols - phase, s), s * in_cp, pe.simd, 0, s),
                      Dim(n_rows, width * in_cp, s * self.row_pitch * pe.simd, 1, 0),
                      Dim(groups, pe.simd, plane, 0, 0)),
                height=height, width=width, fill=fill & 0xFF,
            )
            loads.append(dict(buffer=Buffer.INPUT, desc=em.descriptor(desc),
                              buf_addr=buf_addr + phase * self.row_pitch * pe.simd,
                              dram_offset=source + (r0 * width + c0 + phase) * in_cp + channel0,
                              y_offset=r0, x_offset=c0 + phase))
        return loads
