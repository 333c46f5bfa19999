"""Schedules of one compute layer: tile sizes, the DRAM-level loop order, tile geometry, legality.

A conv / FC layer is the loop nest ``for OC, IC, OH, OW`` tiled at the DRAM level; the kernel
window is always whole. A `Schedule` gives the tile size of each of the four dims and their
order (outermost first). Edge tiles are the remainders (`axis_tiles`). Depthwise layers
(groups == channels) have one reduction channel per output channel: their IC dim has size 1
and their input tile follows the OC tile. Other grouped convolutions are not supported.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from hwgen.config import AcceleratorConfig, PartialSums
from hwgen.isa import Opcode, field_limit
from hwgen.layout import param_bank_channels, partial_sums_offset, phase_row_pitch
from common.errors import PlanningError
from planner.ir import COMPUTE_OPS, Layer, ceil_div

DIMS = ("OC", "IC", "OH", "OW")
ORDERS = tuple(itertools.permutations(DIMS))
TENSORS = ("input", "weight", "output")


@dataclass(frozen=True)
class ConvShape:
    """The loop bounds and window geometry of a conv / FC layer (`ic` counts channels per group)."""

    oc: int
    ic: int
    ih: int
    iw: int
    oh: int
    ow: int
    kh: int
    kw: int
    sh: int
    sw: int
    pad_top: int
    pad_left: int
    depthwise: bool
    pool: int = 1  # a fused k x k / k max pool: (oh, ow) are the conv rows and columns it pools

    @classmethod
    def of(cls, layer: Layer) -> ConvShape:
        if layer.op not in COMPUTE_OPS:
            raise PlanningError(f"layer {layer.name!r}: {layer.op} is not a conv / fc layer")
        in_c, ih, iw = layer.in_shape
        oc, (oh, ow) = layer.out_shape[0], layer.conv_size
        if layer.groups != 1 and not layer.is_depthwise:
            raise PlanningError(
                f"layer {layer.name!r}: groups={layer.groups} with {in_c} input / {oc} output channels is "
                "not supported; allowed: groups == 1 or depthwise (groups == channels)"
            )
        return cls(oc, in_c // layer.groups, ih, iw, oh, ow, *layer.kernel, *layer.stride,
                   layer.pads[0], layer.pads[1], layer.is_depthwise, layer.pool)

    def pooled(self, pixels):
        """Output pixels of `pixels` conv pixels in whole pool windows (element-wise)."""
        return pixels // (self.pool * self.pool)

    def bound(self, dim: str) -> int:
        return {"OC": self.oc, "IC": self.ic, "OH": self.oh, "OW": self.ow}[dim]

    @property
    def in_channels(self) -> int:
        return self.oc if self.depthwise else self.ic

    @property
    def input_dims(self) -> frozenset[str]:
        """Loop dims that index the input tensor."""
        return frozenset(("OC" if self.depthwise else "IC", "OH", "OW"))

    def relevant(self, tensor: str) -> frozenset[str]:
        return {"input": self.input_dims, "weight": frozenset(("OC", "IC")),
                "output": frozenset(("OC", "OH", "OW"))}[tensor]

    def describe(self) -> str:
        kind = "depthwise " if self.depthwise else ""
        pool = f", max pool {self.pool}x{self.pool}/{self.pool} fused" if self.pool > 1 else ""
        return (f"{kind}{self.in_channels}x{self.ih}x{self.iw} -> {self.oc}x{self.oh}x{self.ow}, "
                f"kernel {self.kh}x{self.kw}, stride {self.sh}x{self.sw}{pool}")


@dataclass(frozen=True)
class Schedule:
    """Tile size per dim (`tiles[dim]`) and the DRAM loop order, outermost first; `pool`: the
    max pool fused into the layer (`planner.fusion`; 1: none)."""

    oc: int
    ic: int
    oh: int
    ow: int
    order: tuple[str, ...] = DIMS
    pool: int = 1

    def tile(self, dim: str) -> int:
        return {"OC": self.oc, "IC": self.ic, "OH": self.oh, "OW": self.ow}[dim]

    @property
    def tiles(self) -> dict[str, int]:
        return {dim: self.tile(dim) for dim in DIMS}


def axis_tiles(bound: int, tile: int) -> list[tuple[int, int]]:
    """`(start, size)` of each tile along one axis; the last one may be partial."""
    return [(start, min(tile, bound - start)) for start in range(0, bound, tile)]


def window_span(start: int, count: int, stride: int, pad: int, kernel: int, size: int) -> tuple[int, int]:
    """First input index and extent (halo included, clipped to the unpadded map) read by
    `count` outputs from output index `start` along one axis."""
    lo = start * stride - pad
    hi = (start + count - 1) * stride - pad + kernel - 1
    lo, hi = max(lo, 0), min(hi, size - 1)
    return lo, max(0, hi - lo + 1)


def input_extents(shape: ConvShape, dim: str, tile: int) -> list[int]:
    """Input rows (dim OH) or columns (dim OW) read by each output tile along that axis."""
    if dim == "OH":
        return [window_span(s, n, shape.sh, shape.pad_top, shape.kh, shape.ih)[1] for s, n in axis_tiles(shape.oh, tile)]
    return [window_span(s, n, shape.sw, shape.pad_left, shape.kw, shape.iw)[1] for s, n in axis_tiles(shape.ow, tile)]


@dataclass(frozen=True)
class Footprint:
    """Bytes of the largest tile of each tensor in its buffer bank, in the hardware layouts
    (`hwgen.layout`: channel groups, phase rows, padding to whole PE rows, the partial-sum
    offset and int32 sums, or int8 results only with `template.partial_sums: none`), and the
    output channels per tile the parameter bank must hold."""

    input: int
    weight: int
    output: int
    channels: int = 0


def tile_bytes(shape: ConvShape, oc, ic, oh, ow, config: AcceleratorConfig):
    """`(input, weight, output, channels)` of tiles of these sizes; element-wise on numpy arrays."""
    pe, w = config.pe, config.widths
    oh_t, ow_t = np.minimum(oh, shape.oh), np.minimum(ow, shape.ow)
    oc_pad = ceil_div(np.minimum(oc, shape.oc), pe.rows) * pe.rows
    rows = (oh_t - 1) * shape.sh + shape.kh
    pitch = phase_row_pitch((ow_t - 1) * shape.sw + shape.kw, shape.sh, pe.cols)
    if shape.depthwise:  # oc group g reads input groups g*R//S .. g*R//S + ic_groups - 1
        ic_groups = max(1, ceil_div(pe.rows, pe.simd))
        in_groups = (oc_pad // pe.rows - 1) * pe.rows // pe.simd + ic_groups
    else:
        ic_groups = in_groups = ceil_div(np.minimum(ic, shape.ic), pe.simd)
    if shape.pool > 1:  # the pooled int8 results only (the whole reduction in each CONV)
        output = shape.pooled(oh_t * ow_t) * oc_pad * w.activation_bytes
    elif config.template.partial_sums == PartialSums.KEPT:  # int32 sums after room for one pixel set's int8 results
        output = oh_t * ow_t * oc_pad * w.accumulator_bytes + partial_sums_offset(pe.cols, oc_pad // pe.rows, pe.rows)
    else:  # int8 results only
        output = oh_t * ow_t * oc_pad * w.activation_bytes
    return (in_groups * rows * shape.sh * pitch * pe.simd * w.activation_bytes,
            oc_pad * ic_groups * pe.simd * shape.kh * shape.kw * w.weight_bytes, output, oc_pad)


def fits_banks(sizes, config: AcceleratorConfig):
    """Whether `tile_bytes` results fit one bank of each buffer (element-wise)."""
    inp, weight, out, channels = sizes
    b = config.buffers
    return (inp <= b.input_bank) & (weight <= b.weight_bank) & (out <= b.output_bank) & (channels <= param_bank_channels(config))


def fits_instructions(shape: ConvShape, oc, ic, oh, ow, config: AcceleratorConfig):
    """Whether tiles of these sizes are expressible in CONVCFG / CONV fields (element-wise);
    without partial sums (`template.partial_sums: none`, no CONV with `init_from_acc` or
    without `requantize`) only IC tiles of the whole reduction are."""
    pe = config.pe
    oh_t, ow_t = np.minimum(oh, shape.oh), np.minimum(ow, shape.ow)
    rows = (oh_t - 1) * shape.sh + shape.kh
    pitch = phase_row_pitch((ow_t - 1) * shape.sw + shape.kw, shape.sh, pe.cols)
    ic_groups = 1 if shape.depthwise else ceil_div(np.minimum(ic, shape.ic), pe.simd)
    limits = ((ceil_div(np.minimum(oc, shape.oc), pe.rows), Opcode.CONV, "oc_groups"),
              (ic_groups, Opcode.CONV, "ic_groups"), (oh_t, Opcode.CONV, "out_rows"),
              (ceil_div(ow_t, pe.cols), Opcode.CONV, "ow_groups"), (rows, Opcode.CONVCFG, "in_rows"),
              (pitch, Opcode.CONVCFG, "in_row_pitch"))
    ok = whole_reduction(shape, ic, config)
    for value, opcode, name in limits:
        ok = ok & (value <= field_limit(opcode, name))
    return ok


def whole_reduction(shape: ConvShape, ic, config: AcceleratorConfig):
    """Whether IC tiles of this size suit the configuration's CONVs: any with partial sums
    (`template.partial_sums: kept`) unless a pool is fused, else only the whole reduction
    (element-wise)."""
    if config.template.partial_sums == PartialSums.KEPT and shape.pool == 1:
        return True
    return np.minimum(ic, shape.ic) >= shape.ic


def legal_tiles(shape: ConvShape, oc, ic, oh, ow, config: AcceleratorConfig):
    """Tiles that fit the buffers and the instruction fields (element-wise on arrays)."""
    return fits_banks(tile_bytes(shape, oc, ic, oh, ow, config), config) & fits_instructions(shape, oc, ic, oh, ow, config)


def footprint(shape: ConvShape, schedule: Schedule, config: AcceleratorConfig) -> Footprint:
    return Footprint(*(int(v) for v in tile_bytes(shape, schedule.oc, schedule.ic, schedule.oh, schedule.ow, config)))


def is_legal(shape: ConvShape, schedule: Schedule, config: AcceleratorConfig) -> bool:
    """Every tile (halo and layout padding included) fits one bank of its buffer (double
    buffering) and the instruction fields."""
    return bool(legal_tiles(shape, schedule.oc, schedule.ic, schedule.oh, schedule.ow, config))


def tile_candidates(bound: int, granule: int) -> tuple[int, ...]:
    """The tile sizes searched along one dim: for each trip count k in 1, 2, 4, 8, ... (up to
    `bound`), the smallest multiple of `granule` (or the whole bound) that needs at most k trips.
    Multiples of the granule keep every tile's first channel aligned to a channel group (so
    transfers start on bus beats the cost model counts exactly) and waste no PE rows or lanes."""
    sizes, k = set(), 1
    while k <= bound:
        sizes.add(min(bound, ceil_div(ceil_div(bound, k), granule) * granule))
        k *= 2
    return tuple(sorted(sizes))


def granule(dim: str, shape: ConvShape, config: AcceleratorConfig) -> int:
    """Spatial granularity of the PE mapping along a dim (rows <- OC, lanes <- IC, cols <- OW;
    a fused pool's windows are whole: its k divides `pe.cols`)."""
    pe = config.pe
    return {"OC": pe.rows, "IC": 1 if shape.depthwise else pe.simd, "OH": shape.pool, "OW": pe.cols}[dim]


def canonical_order(order: tuple[str, ...], trips: dict[str, int]) -> tuple[str, ...]:
    """Loops with one trip do nothing wherever they sit: put them outermost, in `DIMS` order."""
    single = [d for d in DIMS if trips[d] == 1]
    return (*single, *(d for d in order if trips[d] > 1))


def trips(shape: ConvShape, schedule: Schedule) -> dict[str, int]:
    return {dim: ceil_div(shape.bound(dim), schedule.tile(dim)) for dim in DIMS}


def minimal_buffers(shape: ConvShape, config: AcceleratorConfig) -> Footprint:
    """Smallest buffer sizes (both banks) that admit the smallest schedule (all tiles 1, or
    without partial sums the whole IC)."""
    fp = footprint(shape, smallest_schedule(shape, config), config)
    return Footprint(2 * fp.input, 2 * fp.weight, 2 * fp.output)


def smallest_schedule(shape: ConvShape, config: AcceleratorConfig) -> Schedule:
    """The smallest tile the search tries: the first candidate of every dim (without partial
    sums the whole IC)."""
    oc, ic, oh, ow = (tile_candidates(shape.bound(dim), granule(dim, shape, config))[0] for dim in DIMS)
    return Schedule(oc, ic if whole_reduction(shape, ic, config) else shape.ic, oh, ow)


def unplannable(name: str, shape: ConvShape, config: AcceleratorConfig) -> PlanningError:
    """The error for a layer whose smallest tile does not fit."""
    need, b = minimal_buffers(shape, config), config.buffers
    parts = [f"{tensor} buffer needs >= {getattr(need, tensor)} B (has {getattr(b, tensor + '_bytes')})"
             for tensor in TENSORS if getattr(need, tensor) > getattr(b, tensor + "_bytes")]
    if config.template.partial_sums == PartialSums.NONE:
        parts = [f"with template.partial_sums: none all {shape.ic} input channels are one tile (the whole "
                 f"reduction in one CONV)", *(parts or ["the CONV fields cannot express it (docs/isa.md)"]),
                 "allowed: template.partial_sums: kept, or larger buffers"]
    elif not parts:
        tile = smallest_schedule(shape, config)
        parts = [f"the smallest tile (OC {tile.oc}, IC {tile.ic}, OH {tile.oh}, OW {tile.ow}) fits the buffers but not "
                 f"the instruction fields or the buffer layout (docs/isa.md, docs/envelope.md)"]
    return PlanningError(f"layer {name!r} ({shape.describe()}): no legal tile; {'; '.join(parts)}")


@dataclass(frozen=True)
class Tile:
    """One DRAM tile of a tensor: element offset in its row-major tensor and its shape."""

    offset: int
    shape: tuple[int, ...]


def tensor_tiles(shape: ConvShape, schedule: Schedule, tensor: str) -> list[Tile]:
    """Every distinct tile of a tensor, nested in `DIMS` order (input: ic, oh, ow; weight: oc, ic;
    output: oc, oh, ow). Input tiles are (C, rows, cols) with halo, clipped to the unpadded map."""
    s = schedule
    if tensor == "weight":
        k = shape.kh * shape.kw
        return [Tile(o0 * shape.ic * k + i0 * k, (on, inn, shape.kh, shape.kw))
                for o0, on in axis_tiles(shape.oc, s.oc) for i0, inn in axis_tiles(shape.ic, s.ic)]
    if tensor == "output":  # with a fused pool, tiles of the pooled map
        k = shape.pool
        return [Tile(o0 * shape.pooled(shape.oh * shape.ow) + h0 // k * (shape.ow // k) + w0 // k, (on, hn // k, wn // k))
                for o0, on in axis_tiles(shape.oc, s.oc) for h0, hn in axis_tiles(shape.oh, s.oh)
                for w0, wn in axis_tiles(shape.ow, s.ow)]
    channel_tile = s.oc if shape.depthwise else s.ic
    tiles = []
    for c0, cn in axis_tiles(shape.in_channels, channel_tile):
        for h0, hn in axis_tiles(shape.oh, s.oh):
            r0, rn = window_span(h0, hn, shape.sh, shape.pad_top, shape.kh, shape.ih)
            for w0, wn in axis_tiles(shape.ow, s.ow):
                q0, qn = window_span(w0, wn, shape.sw, shape.pad_left, shape.kw, shape.iw)
                tiles.append(Tile(c0 * shape.ih * shape.iw + r0 * shape.iw + q0, (cn, rn, qn)))
    return tiles
