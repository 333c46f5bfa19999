"""The widths of a DMA (`DmaParams`) and the descriptor's (`hwgen.dma.transfer.Descriptor`)
encoding in a DMA's generated `descriptor_layout`.

The `levels` walker reads the loops' strides; the `pointer` walker reads per loop the *step* its
address pointers take when that loop advances (its stride minus the inner loops' full extents),
which `pointer_dims` precomputes, and per coordinate the one loop that moves it, its stride and
its rewind (`pointer_coordinates`), so the walker adds one value per pointer and never multiplies.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import signed, unsigned
from amaranth.lib import data
from amaranth.utils import ceil_log2, exact_log2

from hwgen.dma.transfer import FILLED_FIELDS, OUTER_DIMS, Descriptor, DescriptorError, Dim


@dataclass(frozen=True)
class DmaParams:
    """Widths of a DMA: bus and buffer words in bytes (powers of two, `bus_bytes <= buf_word_bytes`).

    `walker`: `levels` keeps a pointer per loop level and adds the strides of the descriptor;
    `pointer` keeps one pointer per quantity and adds the step of the level that advances, which
    `encode` precomputes (`hwgen.dma.pointer_walker`). `narrow_queues`: each segment queue holds only
    what its side reads (`hwgen.dma.segments`). `entry_held`: the DMA registers only `load` and
    reads the other fields from its `desc` input while busy, whose source holds them until `done`,
    and a descriptor-table entry leaves out the `FILLED_FIELDS` (`template.dma_descriptor:
    reader`). `outer_dims`: the outer loops the DMA walks (at most `OUTER_DIMS`; the `pointer`
    walker refuses descriptors with more). `timing_registers` (`template.timing_registers`): a
    load's buffer writes leave through a register, a cycle after the realigner forms them (no
    cycle more per descriptor), and the realigner keeps its counts' tests in flip-flops."""

    bus_bytes: int
    burst_beats: int
    buf_word_bytes: int
    buf_depth: int
    addr_width: int = 32
    count_width: int = 16
    coord_width: int = 20
    queue_depth: int = 8
    segment_fifos: str = "memory"  # `memory`: block RAM; `registers`: flip-flops (asynchronous read)
    walker: str = "levels"
    narrow_queues: bool = False
    entry_held: bool = False
    outer_dims: int = OUTER_DIMS
    timing_registers: bool = True

    def __post_init__(self) -> None:
        exact_log2(self.buf_word_bytes), exact_log2(self.burst_beats)  # raise unless powers of two
        assert self.bus_bytes <= self.buf_word_bytes and self.walker in ("levels", "pointer")
        assert 1 <= self.outer_dims <= OUTER_DIMS and (self.walker == "pointer" or self.outer_dims == OUTER_DIMS)

    @property
    def lb(self) -> int:
        """log2 of the bus width in bytes."""
        return exact_log2(self.bus_bytes)

    @property
    def buf_addr_width(self) -> int:
        """Bits of a buffer byte address."""
        return ceil_log2(self.buf_depth * self.buf_word_bytes)

    @property
    def dst_width(self) -> int:
        """Bits of a realigner destination address (DRAM or buffer)."""
        return max(self.addr_width, self.buf_addr_width)

    def descriptor_layout(self) -> data.StructLayout:
        """The descriptor: field widths from these parameters; per outer dimension the count and
        strides (`levels`) or the count - 1 and the address steps (`pointer`, see
        `hwgen.dma.pointer_walker`, without `run_dx`, which is 0, and per coordinate the one loop that
        moves it, its stride and its rewind, `pointer_coordinates`)."""
        coord = signed(self.coord_width)
        if self.walker == "pointer":
            dim = data.StructLayout({"repeats": self.count_width, "dram_step": self.addr_width,
                                     "buf_step": self.buf_addr_width})
            coordinates = {f"{name}_{part}": shape for name, _ in COORDINATES
                           for part, shape in (("level", range(self.outer_dims)), ("step", coord), ("rewind", coord))}
            run_dx = {}
        else:
            dim = data.StructLayout({"count": self.count_width, "dram_stride": self.addr_width,
                                     "buf_stride": self.buf_addr_width, "dy": coord, "dx": coord})
            coordinates, run_dx = {}, {"run_dx": 1}
        return data.StructLayout({
            "load": 1, "dram_addr": self.addr_width, "buf_addr": self.buf_addr_width,
            "run_bytes": self.count_width, **run_dx, "dims": data.ArrayLayout(dim, self.outer_dims),
            **coordinates, "y0": coord, "x0": coord, "height": unsigned(self.coord_width - 1),
            "width": unsigned(self.coord_width - 1), "fill": 8,
        })

    def entry_layout(self) -> data.StructLayout:
        """A descriptor-table entry: the descriptor, without the `FILLED_FIELDS` if `entry_held`."""
        return data.StructLayout({name: field.shape for name, field in self.descriptor_layout()
                                  if not (self.entry_held and name in FILLED_FIELDS)})

    def encode_entry(self, desc: Descriptor) -> int:
        """The bits of `desc`'s descriptor-table entry (`entry_layout`); `DescriptorError` as
        `encode`, or when an entry without the origin would lose `desc`'s (a STORE's origin is
        the table's; with `entry_held` it is 0)."""
        layout, value = self.entry_layout(), self.encode(desc)
        if self.entry_held and (desc.y0, desc.x0) != (0, 0):
            raise DescriptorError(f"descriptor {desc}: origin ({desc.y0}, {desc.x0}); the descriptor-table entries "
                                  f"of a DMA that reads them through (template.dma_descriptor: reader) hold none, "
                                  f"allowed: (0, 0)")
        return layout.const({name: value[name] for name, _ in layout}).as_bits()

    def encode(self, desc: Descriptor) -> dict:
        """The value of a `descriptor_layout` signal (for `ctx.set`); addresses wrap to their
        widths. With the `pointer` walker a descriptor whose counts, run or coordinates do not
        fit raises `DescriptorError` (bounds beyond the coordinates mean no padding)."""
        dram, buf = (1 << self.addr_width) - 1, (1 << self.buf_addr_width) - 1
        bounds = {"height": desc.height, "width": desc.width}
        if self.walker == "pointer":
            dims, extra = pointer_dims(self, desc), pointer_coordinates(desc)
            bounds = {name: min(value, (1 << (self.coord_width - 1)) - 1) for name, value in bounds.items()}
        else:
            dims = [{"count": d.count, "dram_stride": d.dram_stride & dram, "buf_stride": d.buf_stride & buf,
                     "dy": d.dy, "dx": d.dx} for d in desc.outer()]
            extra = {"run_dx": desc.run_dx}
        return {"load": int(desc.load), "dram_addr": desc.dram_addr & dram, "buf_addr": desc.buf_addr & buf,
                "run_bytes": desc.run_bytes, "dims": dims, **extra, "y0": desc.y0, "x0": desc.x0,
                **bounds, "fill": desc.fill & 0xFF}

    def segment_layout(self) -> data.StructLayout:
        """A piece of a run: `n` bytes at `dram`/`buf`, data or fill."""
        return data.StructLayout({"fill": 1, "dram": self.addr_width, "buf": self.buf_addr_width, "n": self.count_width})


STEPPED = (("dram_stride", "dram_step"), ("buf_stride", "buf_step"))
"""Per outer dimension: an address stride of `Dim` and the step the `pointer` layout holds for it."""

COORDINATES = (("y", "dy"), ("x", "dx"))
"""The image coordinates and their strides in `Dim`: the `pointer` layout moves each with one
loop (`pointer_coordinates`)."""


def loop_steps(dims: tuple[Dim, ...], stride: str) -> list[int]:
    """The step of each loop level: its stride minus what the inner levels advanced in total,
    `stride_j - sum_{k<j} (count_k - 1) * stride_k` (the inner loops restart as level j advances)."""
    return [getattr(d, stride) - sum((inner.count - 1) * getattr(inner, stride) for inner in dims[:j])
            for j, d in enumerate(dims)]


def _extent(dims: tuple[Dim, ...], field: str) -> tuple[int, int]:
    """Lowest and highest displacement of a coordinate over the loops."""
    low = sum(min(0, (d.count - 1) * getattr(d, field)) for d in dims)
    high = sum(max(0, (d.count - 1) * getattr(d, field)) for d in dims)
    return low, high


def pointer_dims(params: DmaParams, desc: Descriptor) -> list[dict]:
    """The `pointer` layout's `params.outer_dims` outer dimensions of `desc`: count - 1 and the
    steps (addresses wrap to their widths). Raises `DescriptorError` when the run, a count, a
    loop beyond `outer_dims` (count above 1), a coordinate step or the coordinates' extent (at
    most a quarter of the coordinate range, leaving the rest to the origin an instruction adds)
    does not fit `params`, when `run_dx` is 1 (the `pointer` walker never splits a run) or a
    coordinate moves with more than one loop."""
    dims = desc.outer()
    count_limit, coord_limit = 1 << params.count_width, 1 << (params.coord_width - 2)
    problems = [f"run_bytes {desc.run_bytes} >= {count_limit}"] if desc.run_bytes >= count_limit else []
    problems += [f"run_dx {desc.run_dx} (its runs are all padding or all data: run_dx 0)"] if desc.run_dx else []
    problems += [f"dims[{j}].count {d.count} > {count_limit}" for j, d in enumerate(dims) if d.count > count_limit]
    problems += [f"dims[{j}].count {d.count} > 1 beyond the DMA's {params.outer_dims} loops"
                 for j, d in enumerate(dims) if j >= params.outer_dims and d.count > 1]
    for _, field in COORDINATES:
        low, high = _extent(dims, field)
        if low < -coord_limit or high >= coord_limit:
            problems.append(f"{field} spans [{low}, {high}], beyond [{-coord_limit}, {coord_limit - 1}]")
        if len(moving := _moving(dims, field)) > 1:
            problems.append(f"{field} moves with loops {moving} (the DMA moves each coordinate with one loop)")
    if problems:
        raise DescriptorError(f"descriptor {desc}: {'; '.join(problems)}; the DMA's {params.count_width}-bit counts "
                              f"and {params.coord_width}-bit coordinates allow no more")
    masks = {"dram_step": (1 << params.addr_width) - 1, "buf_step": (1 << params.buf_addr_width) - 1}
    steps = {step: loop_steps(dims, stride) for stride, step in STEPPED}
    return [{"repeats": d.count - 1,  # a level that never advances keeps steps 0
             **{step: (values[j] if d.count > 1 else 0) & masks.get(step, -1) for step, values in steps.items()}}
            for j, d in enumerate(dims[:params.outer_dims])]


def _moving(dims: tuple[Dim, ...], field: str) -> list[int]:
    """The loops that move a coordinate (count above 1, stride not 0)."""
    return [j for j, d in enumerate(dims) if d.count > 1 and getattr(d, field)]


def pointer_coordinates(desc: Descriptor) -> dict:
    """The `pointer` layout's coordinate fields of `desc` (checked by `pointer_dims`): per
    coordinate the loop that moves it (0 if none), its stride, added as that loop advances, and
    its rewind `-(count - 1) * stride`, added as an outer loop advances (that loop restarts)."""
    fields = {}
    for name, field in COORDINATES:
        level = next(iter(_moving(desc.outer(), field)), 0)
        dim = desc.outer()[level]
        stride = getattr(dim, field)
        fields |= {f"{name}_level": level, f"{name}_step": stride, f"{name}_rewind": -(dim.count - 1) * stride}
    return fields
