"""Hardware configuration: one frozen, validated `AcceleratorConfig` loaded from YAML.

Every consumer (cost model, compiler, RTL, simulators) reads the same object. Units are
in the field names; `docs/config.md` lists every YAML field with its unit, range and default.
Each buffer is given as its total size in bytes and is split into two equal banks
(double buffering), so a tile must fit in *half* of its buffer.
"""
from __future__ import annotations

import math
from functools import cached_property
from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from common.errors import ConfigError

CONFIG_DIR = Path(__file__).parent / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "default.yaml"

# Interstellar Table 5.2 (28 nm, pJ per 16-bit access); halved to get pJ per byte.
DRAM_PJ_PER_16BIT = 200.0
MAC_PJ = 0.075
RF_PJ_PER_16BIT_PER_BYTE_OF_RF = 0.03 / 16  # 16 B register file costs 0.03 pJ, linear in size
SRAM_PJ_PER_16BIT_AT_32KB = 6.0
SRAM_SCALE_PER_DOUBLING = 1.5
ACCUMULATOR_RF_BYTES = 16

MULTIPLIER_BITS = 16
"""Width of the unsigned requantization multiplier the post-processing takes (`planner.quant`)."""


def sram_pj_per_byte(size_bytes: int) -> float:
    """Interstellar SRAM energy (x1.5 per doubling from 6 pJ at 32 KB), per byte accessed."""
    return SRAM_PJ_PER_16BIT_AT_32KB * (size_bytes / 32768) ** math.log2(SRAM_SCALE_PER_DOUBLING) / 2


@dataclass(frozen=True)
class _Range:
    low: float
    high: float
    integer: bool = True
    power_of_two: bool = False

    def describe(self) -> str:
        kind = "a power of two" if self.power_of_two else ("an integer" if self.integer else "a number")
        return f"{kind} in [{self.low:g}, {self.high:g}]"

    def check(self, path: str, value: Any) -> Any:
        ok_type = isinstance(value, int) if self.integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok_type or not self.low <= value <= self.high or (
            self.power_of_two and value & (value - 1)
        ):
            raise ConfigError(f"{path}: {value!r} is not allowed; expected {self.describe()}")
        return value


@dataclass(frozen=True)
class _Choices:
    """A list of distinct names from `allowed`."""

    allowed: tuple[str, ...]

    def describe(self) -> str:
        return f"a list of distinct names from: {', '.join(self.allowed)}"

    def check(self, path: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, (list, tuple)) or len(set(value)) != len(value) or any(v not in self.allowed for v in value):
            raise ConfigError(f"{path}: {value!r} is not allowed; expected {self.describe()}")
        return tuple(value)


@dataclass(frozen=True)
class _Choice:
    """One name from `allowed` (YAML booleans are the names `true` and `false`)."""

    allowed: tuple

    def describe(self) -> str:
        return f"one of: {', '.join(str(v).lower() if isinstance(v, bool) else str(v) for v in self.allowed)}"

    def check(self, path: str, value: Any) -> Any:
        if not any(type(value) is type(v) and value == v for v in self.allowed):
            raise ConfigError(f"{path}: {value!r} is not allowed; expected {self.describe()}")
        return value


SPRAM_BUFFERS = ("input", "weight")
"""Buffers whose banks may live in iCE40UP5K SPRAM (single-ported: one side at a time)."""
VECTOR_OPS = ("max", "sum", "add", "copy")
"""The VEC operations (`hwgen.isa.VecOp`, lower case) `template.vector_ops` may list."""
FILLED_BUFFERS = ("input", "weight", "param")
"""Buffers the DMA only writes and the compute side only reads."""
MERGEABLE_BUFFERS = (*FILLED_BUFFERS, "acc")
"""Buffers whose two banks can share one simple dual-port memory when one side only writes and
the other only reads: the `FILLED_BUFFERS`, and the accumulator buffer without partial sums
(`template.partial_sums: none`: the compute side writes it, the DMA reads it)."""


def _field(low: float, high: float, integer: bool = True, power_of_two: bool = False) -> dict:
    return {"range": _Range(low, high, integer, power_of_two)}


@dataclass(frozen=True)
class PEArray:
    """rows x cols PEs, each a `simd`-lane dot-product unit (rows <- OC, cols <- OW, lanes <- IC)."""

    rows: int
    cols: int
    simd: int

    @property
    def macs_per_cycle(self) -> int:
        return self.rows * self.cols * self.simd


@dataclass(frozen=True)
class Widths:
    """Bit widths of activations, weights and accumulators (partial sums)."""

    activation: int
    weight: int
    accumulator: int

    @property
    def activation_bytes(self) -> int:
        return self.activation // 8

    @property
    def weight_bytes(self) -> int:
        return self.weight // 8

    @property
    def accumulator_bytes(self) -> int:
        return self.accumulator // 8


@dataclass(frozen=True)
class Buffers:
    """Total bytes of each on-chip buffer; each is two banks of half the size."""

    input_bytes: int
    weight_bytes: int
    output_bytes: int
    spram: tuple[str, ...] = ()  # buffers mapped to SPRAM on iCE40UP5K (SPRAM_BUFFERS)

    @property
    def input_bank(self) -> int:
        return self.input_bytes // 2

    @property
    def weight_bank(self) -> int:
        return self.weight_bytes // 2

    @property
    def output_bank(self) -> int:
        return self.output_bytes // 2


@dataclass(frozen=True)
class Dram:
    """The external memory port: loads and stores share it."""

    bus_width_bits: int
    bandwidth_bytes_per_cycle: float
    latency_cycles: int
    burst_beats: int

    @property
    def burst_bytes(self) -> int:
        return self.burst_beats * self.bus_width_bits // 8

    @cached_property
    def bandwidth(self) -> Fraction:
        """Bandwidth as an exact fraction (bytes per cycle) for exact ceilings."""
        return Fraction(str(self.bandwidth_bytes_per_cycle))

    @cached_property
    def beats_per_cycle(self) -> float:
        """Bus beats the memory delivers per cycle in the long run (bandwidth over bus width)."""
        return float(self.bandwidth) / (self.bus_width_bits // 8)


@dataclass(frozen=True)
class Energy:
    """Per-access energies in pJ (per byte for memories, per MAC, per accumulator update)."""

    dram_pj_per_byte: float
    input_buffer_pj_per_byte: float
    weight_buffer_pj_per_byte: float
    output_buffer_pj_per_byte: float
    register_pj_per_access: float
    mac_pj: float


@dataclass(frozen=True)
class Template:
    """Generation-time options of the hardware template; the defaults are the full template.

    `loops_and_registers`: the sequencer's register file and loop stack (LOOP, SETR, ADDR);
    `queue_fields`: `all` instruction bits in the sequencer's queues, or only those `used` by the
    queue's unit; `program_memory`: the program in a `rom` (block RAM, fixed at generation) or in
    one single-ported `spram` the host writes (16 bits fetched per cycle, DMA descriptors
    included); `segment_fifos`: the DMA segment queues in `memory` (block RAM) or `registers`
    (flip-flops); `param_bank_channels`: output channels one parameter-buffer bank holds;
    `merged_banks`: buffers whose two banks share one memory (the bank number its top address
    bit), which halves the block RAMs of banks shallower than a block RAM (`acc` only with
    `partial_sums: none`); `queue_depth`: entries
    each of the sequencer's three dispatch queues holds; `counters`: `all` performance counters, or
    only the `cycles` counter (the per-queue counters then read 0); `dma`: a `separate`
    load DMA and store DMA, or one `shared` DMA (loads and stores take turns) whose walker keeps
    one pointer per quantity and adds compiler-precomputed steps (`hwgen.dma.pointer_walker`);
    `dram_address_bits`: the width of the DMA's DRAM addresses (the main memory must fit);
    `postprocess`: a
    requantizer per engine with `lanes` in parallel on DSP multipliers, or one DSP-free `serial`
    lane both engines share (`hwgen.serial_post`); `address_steps`: the CONVCFG pointer-step
    products computed by `hardware` multipliers or precomputed by the `compiler` (CONVCFG
    `plane_step`, `flat_plane_step`); `vector_products`: the vector unit's coefficient products
    on `dsp` multipliers or `serial` (shift-add, 4 coefficient bits per cycle); `timing_registers`:
    flip-flops that shorten paths a large FPGA spreads out (the load DMA's buffer writes and the
    realigner's count tests, `hwgen.dma.descriptor.DmaParams`, at no cycle; the vector unit's read
    address, 1 cycle per VEC, `hwgen.vector_unit.address_latency`); `vector_ops`: the
    VEC operations the vector unit implements (at least one; a network needing another one does
    not compile); `dma_descriptor`: the shared DMA keeps a `copy` of the descriptor it runs (the
    descriptor reader fetches the next one meanwhile), or reads the constant fields from the
    `reader`'s entry, which stays held until the DMA is done (needs `dma: shared` and
    `program_memory: spram`); `dma_loops`: the outer loops (descriptor dimensions) the shared
    DMA walks, at most 4 (fewer only with `dma: shared`; a program needing more is refused);
    `load_command`: the load unit keeps a `copy` of the LOAD it runs, or runs it from the load
    `queue`'s head, popping it when done (one entry of the queue holds it meanwhile);
    `compute_queue_depth`: entries of the compute queue (0: `queue_depth`); `store_command`: the
    store unit keeps a `copy` of the STORE it runs, or runs it from the store `queue`'s head, popping
    it when done (like `load_command`); `store_queue_depth`: entries of the store queue (0:
    `queue_depth`); `semaphore_bits`: the width of each of the sequencer's
    semaphores (a program that could raise one above `2**semaphore_bits - 1` is refused,
    `hwgen.semaphores`); `partial_sums`: a CONV may cover part of a layer's reduction,
    its int32 partial sums `kept` in the accumulator buffer (continued by the next CONV, spilled to
    DRAM and reloaded), or `none`: every CONV covers the whole reduction (the planner tiles no
    input channels), so the accumulator buffer is written by the compute side and read by the DMA
    only, with no partial-sum read, raw result or accumulator load path; `queue_kinds`: the
    sequencer decides on each queue's head from its opcode, `decoded` as the head arrives, or
    `registered` beside each entry as it is queued (a one-hot kind in flip-flops, 3 bits per
    entry: shorter pop paths; the queues then hold only the opcode bits that tell their command
    opcodes apart).
    """

    loops_and_registers: bool = True
    queue_fields: str = "all"
    program_memory: str = "rom"
    segment_fifos: str = "memory"
    param_bank_channels: int = 1024
    merged_banks: tuple[str, ...] = ()
    queue_depth: int = 4
    counters: str = "all"
    dma: str = "separate"
    dram_address_bits: int = 32
    postprocess: str = "lanes"
    address_steps: str = "hardware"
    vector_products: str = "dsp"
    timing_registers: bool = True
    vector_ops: tuple[str, ...] = VECTOR_OPS
    dma_descriptor: str = "copy"
    dma_loops: int = 4
    load_command: str = "copy"
    compute_queue_depth: int = 0
    store_command: str = "copy"
    store_queue_depth: int = 0
    semaphore_bits: int = 8
    partial_sums: str = "kept"
    queue_kinds: str = "decoded"


@dataclass(frozen=True)
class AcceleratorConfig:
    """The whole hardware configuration (frozen; build with `load_config` / `config_from_dict`)."""

    name: str
    device: str
    board: str
    clock_mhz: float
    pe: PEArray
    widths: Widths
    buffers: Buffers
    dram: Dram
    energy: Energy
    template: Template = Template()

    def to_dict(self) -> dict:
        """The YAML-shaped dictionary (round-trips through `config_from_dict`)."""
        out: dict[str, Any] = {"name": self.name, "device": self.device, "board": self.board, "clock_mhz": self.clock_mhz}
        for section in ("pe", "widths", "buffers", "dram", "energy"):
            obj = getattr(self, section)
            out[section] = {f.name: list(v) if isinstance(v := getattr(obj, f.name), tuple) else v for f in fields(obj)}
        if self.template != Template():  # the full template's configs keep their historical shape
            out["template"] = {f.name: list(v) if isinstance(v := getattr(self.template, f.name), tuple) else v
                               for f in fields(Template)}
        return out


_SCHEMA: dict[str, dict[str, dict]] = {
    "pe": {"rows": _field(1, 256), "cols": _field(1, 256), "simd": _field(1, 256, power_of_two=True)},
    "widths": {
        "activation": _field(8, 32, power_of_two=True),
        "weight": _field(8, 32, power_of_two=True),
        "accumulator": _field(16, 64, power_of_two=True),
    },
    "buffers": {
        "input_bytes": _field(64, 1 << 30),
        "weight_bytes": _field(64, 1 << 30),
        "output_bytes": _field(64, 1 << 30),
        "spram": {"range": _Choices(SPRAM_BUFFERS)},
    },
    "dram": {
        "bus_width_bits": _field(8, 1024, power_of_two=True),
        "bandwidth_bytes_per_cycle": _field(1 / 64, 1024, integer=False),
        "latency_cycles": _field(0, 100000),
        "burst_beats": _field(1, 256, power_of_two=True),
    },
    "energy": {
        "dram_pj_per_byte": _field(0, 1e6, integer=False),
        "input_buffer_pj_per_byte": _field(0, 1e6, integer=False),
        "weight_buffer_pj_per_byte": _field(0, 1e6, integer=False),
        "output_buffer_pj_per_byte": _field(0, 1e6, integer=False),
        "register_pj_per_access": _field(0, 1e6, integer=False),
        "mac_pj": _field(0, 1e6, integer=False),
    },
    "template": {
        "loops_and_registers": {"range": _Choice((True, False))},
        "queue_fields": {"range": _Choice(("all", "used"))},
        "program_memory": {"range": _Choice(("rom", "spram"))},
        "segment_fifos": {"range": _Choice(("memory", "registers"))},
        "param_bank_channels": _field(16, 1024, power_of_two=True),
        "merged_banks": {"range": _Choices(MERGEABLE_BUFFERS)},
        "queue_depth": _field(1, 64),
        "counters": {"range": _Choice(("all", "cycles"))},
        "dma": {"range": _Choice(("separate", "shared"))},
        "dram_address_bits": _field(12, 32),
        "postprocess": {"range": _Choice(("lanes", "serial"))},
        "address_steps": {"range": _Choice(("hardware", "compiler"))},
        "vector_products": {"range": _Choice(("dsp", "serial"))},
        "timing_registers": {"range": _Choice((True, False))},
        "vector_ops": {"range": _Choices(VECTOR_OPS)},
        "dma_descriptor": {"range": _Choice(("copy", "reader"))},
        "dma_loops": _field(1, 4),
        "load_command": {"range": _Choice(("copy", "queue"))},
        "compute_queue_depth": _field(0, 64),
        "store_command": {"range": _Choice(("copy", "queue"))},
        "store_queue_depth": _field(0, 64),
        "semaphore_bits": _field(1, 8),
        "partial_sums": {"range": _Choice(("kept", "none"))},
        "queue_kinds": {"range": _Choice(("decoded", "registered"))},
    },
}
_TOP = {"clock_mhz": _field(1, 2000, integer=False)}
_STRINGS = ("name", "device", "board")


def _default_energy(buffers: Buffers, accumulator_bits: int) -> dict[str, float]:
    """Defaults from the Interstellar cost table, scaled to each bank's size."""
    return {
        "dram_pj_per_byte": DRAM_PJ_PER_16BIT / 2,
        "input_buffer_pj_per_byte": sram_pj_per_byte(buffers.input_bank),
        "weight_buffer_pj_per_byte": sram_pj_per_byte(buffers.weight_bank),
        "output_buffer_pj_per_byte": sram_pj_per_byte(buffers.output_bank),
        "register_pj_per_access": RF_PJ_PER_16BIT_PER_BYTE_OF_RF * ACCUMULATOR_RF_BYTES * accumulator_bits / 16,
        "mac_pj": MAC_PJ,
    }


def _section(data: dict, name: str, defaults: dict | None = None) -> dict:
    raw = data.get(name, {} if defaults is not None else None)
    if not isinstance(raw, dict):
        raise ConfigError(f"{name}: missing or not a mapping; expected keys {', '.join(_SCHEMA[name])}")
    unknown = set(raw) - set(_SCHEMA[name])
    if unknown:
        raise ConfigError(f"{name}.{sorted(unknown)[0]}: unknown field; allowed: {', '.join(_SCHEMA[name])}")
    values = {}
    for key, spec in _SCHEMA[name].items():
        if key not in raw:
            if defaults is None or key not in defaults:
                raise ConfigError(f"{name}.{key}: missing; expected {spec['range'].describe()}")
            values[key] = defaults[key]
            continue
        values[key] = spec["range"].check(f"{name}.{key}", raw[key])
    return values


def config_from_dict(data: dict, source: str = "<dict>") -> AcceleratorConfig:
    """Validate a YAML-shaped mapping into an `AcceleratorConfig` (ConfigError names the field)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping")
    unknown = set(data) - set(_SCHEMA) - set(_TOP) - set(_STRINGS)
    if unknown:
        raise ConfigError(f"{sorted(unknown)[0]}: unknown field; allowed: {', '.join([*_STRINGS, *_TOP, *_SCHEMA])}")
    for key in _STRINGS:
        if not isinstance(data.get(key, ""), str):
            raise ConfigError(f"{key}: {data[key]!r} is not allowed; expected a string")
    if "clock_mhz" not in data:
        raise ConfigError(f"clock_mhz: missing; expected {_TOP['clock_mhz']['range'].describe()}")
    clock = _TOP["clock_mhz"]["range"].check("clock_mhz", data["clock_mhz"])
    pe = PEArray(**_section(data, "pe"))
    widths = Widths(**_section(data, "widths"))
    buffers = Buffers(**_section(data, "buffers", {"spram": ()}))
    dram = Dram(**_section(data, "dram"))
    if dram.bandwidth_bytes_per_cycle > dram.bus_width_bits / 8:
        raise ConfigError(
            f"dram.bandwidth_bytes_per_cycle: {dram.bandwidth_bytes_per_cycle} exceeds the bus "
            f"(dram.bus_width_bits / 8 = {dram.bus_width_bits // 8}); expected a number in [1/64, {dram.bus_width_bits // 8}]"
        )
    energy = Energy(**_section(data, "energy", _default_energy(buffers, widths.accumulator)))
    template = Template(**_section(data, "template", {f.name: f.default for f in fields(Template)}))
    both = sorted(set(template.merged_banks) & set(buffers.spram))
    if both:
        raise ConfigError(f"template.merged_banks: {both[0]!r} is also in buffers.spram; a single-ported SPRAM bank "
                          f"cannot be merged; allowed: buffers not in buffers.spram")
    if "acc" in template.merged_banks and template.partial_sums != "none":
        raise ConfigError(f"template.merged_banks: 'acc' needs template.partial_sums: none (with partial sums both "
                          f"sides read and write the accumulator buffer); this config has partial_sums: "
                          f"{template.partial_sums}; allowed here: {', '.join(FILLED_BUFFERS)}")
    if not template.vector_ops:
        raise ConfigError(f"template.vector_ops: [] is not allowed; expected at least one of: {', '.join(VECTOR_OPS)}")
    if template.dma_descriptor == "reader" and (template.dma, template.program_memory) != ("shared", "spram"):
        raise ConfigError(f"template.dma_descriptor: 'reader' needs template.dma: shared and template.program_memory: "
                          f"spram (the DMA reads the descriptor reader's entry); this config has dma: {template.dma}, "
                          f"program_memory: {template.program_memory}; allowed here: copy")
    if template.dma_loops < 4 and template.dma != "shared":
        raise ConfigError(f"template.dma_loops: {template.dma_loops} needs template.dma: shared (the pointer walker); "
                          f"this config has dma: {template.dma}; allowed here: 4")
    name = data.get("name") or Path(source).stem
    return AcceleratorConfig(name, data.get("device", "generic"), data.get("board", "none"), clock, pe, widths, buffers,
                             dram, energy, template)


def read_yaml(path: Path, error: type[ConfigError] = ConfigError) -> Any:
    """The parsed YAML file at `path`; `error` names the file when it is unreadable or not YAML."""
    try:
        return yaml.safe_load(path.read_text())
    except OSError as problem:
        raise error(f"{path}: cannot read ({problem.strerror})") from problem
    except yaml.YAMLError as problem:
        raise error(f"{path}: not valid YAML ({problem})") from problem


def config_path(spec: str | Path | None) -> Path:
    """The file of a config: a path, a bare shipped name (e.g. `ice40up5k`), or the default."""
    path = DEFAULT_CONFIG if spec is None else Path(spec)
    if not path.exists() and (CONFIG_DIR / f"{path}.yaml").exists():
        path = CONFIG_DIR / f"{path}.yaml"
    return path


def validated(data: Any, path: Path) -> AcceleratorConfig:
    """`config_from_dict` of a file's contents, errors prefixed with the file."""
    try:
        return config_from_dict(data, str(path))
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from error


def load_config(path: str | Path | None = None) -> AcceleratorConfig:
    """Load and validate a YAML config; a bare name (e.g. `ice40up5k`) means a shipped config."""
    path = config_path(path)
    return validated(read_yaml(path), path)
