"""Resource estimate of the accelerator on an FPGA family, before any synthesis.

- DSPs are counted exactly from the template: every multiplier of the design (PE lanes, the
  post-processing lanes of the convolution engine and of the vector unit, the vector unit's
  products and the address products of both engines, as Yosys merges them), each split into
  DSP cells by the rules of Yosys' `mul2dsp` techmap with the family's DSP size (`DSP_RULES`).
- Block RAMs and SPRAMs are counted from the buffer banks (`hwgen.buffers.bank_shape`), each
  bank in the cheapest RAM aspect ratio that keeps byte write enables, and the DMAs' segment
  queues.
- LUTs and flip-flops come from a linear model over structural counts (`features`), fitted by
  least squares to real Yosys synthesis of small configurations (`calibration.json`, written
  by `bench/calibrate_resources.py`).

Totals cover the accelerator with an empty program ROM; a network's program adds its ROMs
(instructions and DMA descriptors).
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from amaranth.utils import ceil_log2

from boards.devices import Resources, logic_cells
from hwgen.accumulator import accumulator_shape
from hwgen.accelerator import dma_units
from hwgen.buffers import bank_shape
from hwgen.config import (AcceleratorConfig, AddressSteps, Postprocess, ProgramMemory, SegmentFifos, Template,
                          VectorProducts, config_fields)
from hwgen.dma.segments import segment_queue_memories as dma_queue_memories
from hwgen.isa import Opcode, VecOp, payload_field
from hwgen.layout import ACC_BYTES, bank_bytes
from hwgen.postprocess import LOW_BITS
from hwgen.vector_unit import acc_shape
from hwgen.vector_ops import vector_ops
from common.errors import HwgenError
from hwgen.config import MULTIPLIER_BITS

CALIBRATION = Path(__file__).with_name("calibration.json")
FAMILIES = ("ecp5", "ice40")
LOGIC_ERROR = 0.25
"""The LUT and flip-flop model's stated error: every stored synthesis within this fraction of its
leave-one-out estimate (`tests/test_sweep_resources.py`). DSPs and RAM blocks are exact."""


@dataclass(frozen=True)
class DspRule:
    """Yosys' DSP mapping parameters of a family (`mul2dsp.v` defines): operand widths one DSP
    takes, and the smallest operands / product it is used for."""

    a_max: int
    b_max: int
    a_min: int
    b_min: int
    y_min: int = 0


DSP_RULES = {"ecp5": DspRule(18, 18, 2, 2), "ice40": DspRule(16, 16, 2, 2, 11)}
BRAM_SHAPES = {
    # (data bits, depth) of one block RAM in each aspect ratio that keeps 8-bit write enables
    "ecp5": ((32, 512), (16, 1024), (8, 2048), (4, 4096), (2, 8192), (1, 16384)),  # DP16KD, 9-bit bytes
    "ice40": ((16, 256), (8, 512), (4, 1024), (2, 2048)),  # SB_RAM40_4K
}
WHOLE_WORD_SHAPES = {
    # the same for memories written a whole word at a time (the segment queues): ECP5's ninth bits hold data
    "ecp5": ((36, 512), (18, 1024), (9, 2048), (4, 4096), (2, 8192), (1, 16384)),
    "ice40": BRAM_SHAPES["ice40"],
}
SPRAM_BITS, SPRAM_WORDS = 16, 16384  # SB_SPRAM256KA
DISTRIBUTED_RAM_FAMILIES = ("ecp5",)  # Yosys puts shallow memories (the segment queues) in LUT RAM there
SPRAM_FAMILY = "ice40"


@dataclass(frozen=True)
class Multiplier:
    """`count` multipliers `a_width x b_width -> y_width` bits; `primitive`: instantiated as one
    DSP cell by the template (`hwgen.dsp`) rather than inferred."""

    where: str
    a_width: int
    b_width: int
    y_width: int
    signed: bool
    count: int = 1
    primitive: bool = False


def mul2dsp_cells(a: int, b: int, y: int, a_signed: bool, b_signed: bool, rule: DspRule, inferred: bool = True) -> int:
    """DSP cells Yosys' `mul2dsp` makes of one `a x b -> y` multiplier (the rest goes to LUTs):
    the wider operand first, operands split into DSP-sized slices, slices below the minimum
    widths left to logic. `inferred` is False for the slices it creates (no reordering)."""
    if inferred and a < b:
        a, b, a_signed, b_signed = b, a, b_signed, a_signed
    if a < rule.a_min or b < rule.b_min or y < rule.y_min:
        return 0
    if a > rule.a_max:
        n = (a - 1) // rule.a_max
        last = a - n * rule.a_max
        return (n * mul2dsp_cells(rule.a_max, b, min(y, b + rule.a_max), False, b_signed, rule, False)
                + mul2dsp_cells(last, b, b + last, a_signed, b_signed, rule, False))
    if b > rule.b_max:
        n = (b - 1) // rule.b_max
        last = b - n * rule.b_max
        return (n * mul2dsp_cells(a, rule.b_max, min(y, a + rule.b_max), a_signed, False, rule, False)
                + mul2dsp_cells(a, last, a + last, a_signed, b_signed, rule, False))
    return 1


def _field_bits(opcode: Opcode, name: str) -> int:
    return payload_field(opcode, name).width


def multipliers(config: AcceleratorConfig) -> tuple[Multiplier, ...]:
    """Every multiplier of the accelerator with the operand widths synthesis sees (after
    Yosys' width reduction), following `hwgen.pe`, `hwgen.postprocess`, `hwgen.conv_engine`,
    `hwgen.conv_steps` and `hwgen.vector_unit`, without those the template's options make shift-add."""
    pe, widths = config.pe, config.widths
    R, C, S = pe.rows, pe.cols, pe.simd
    coefficient = MULTIPLIER_BITS + 1  # the unsigned requantisation multiplier as a signed operand
    stride = _field_bits(Opcode.CONVCFG, "stride")
    pitch = _field_bits(Opcode.CONVCFG, "in_row_pitch")
    in_rows = _field_bits(Opcode.CONVCFG, "in_rows")
    bits = ceil_log2(bank_bytes(config, "input") // S)  # ConvEngine.pixel_bits: the widths of the steps' registers
    records = ceil_log2(bank_bytes(config, "acc") // (ACC_BYTES * R))  # ConvEngine.acc_bits
    conv_sum = max(accumulator_shape(config).width, 32) + 1  # accumulator + int32 bias
    groups = _field_bits(Opcode.CONV, "last_group_cols"), _field_bits(Opcode.CONV, "oc_groups")
    low = (LOW_BITS, MULTIPLIER_BITS, LOW_BITS + MULTIPLIER_BITS, False)  # hwgen.postprocess low partial
    conv_high = conv_sum - LOW_BITS
    ops = vector_ops(config)
    template = config.template
    found = [Multiplier("PE lane (x - zx) * w", widths.activation + 1, widths.weight,
                        widths.activation + widths.weight + 1, True, R * C * S, primitive=True)]
    if template.postprocess == Postprocess.LANES:  # the serial lane (hwgen.serial_post) is shift-add
        found += [
            Multiplier("convolution requantisation, low partial", *low, R),
            Multiplier("convolution requantisation, high partial", conv_high, coefficient,
                       conv_high + coefficient - 1, True, R),
        ]
        if template.vector_unit:
            vec_high = acc_shape(ops).width - LOW_BITS  # the vector unit's bias is zero: its sums keep their width
            found += [
                Multiplier("vector unit requantisation, low partial", *low, S),
                Multiplier("vector unit requantisation, high partial", vec_high, coefficient,
                           vec_high + coefficient, True, S),
            ]
    if template.vector_products == VectorProducts.DSP and ops & {VecOp.ADD, VecOp.COPY}:  # serial: shift-add
        found.append(Multiplier("vector unit (x - zx) * multiplier", widths.activation + 1, coefficient,
                                widths.activation + coefficient, True, S))
    if template.address_steps == AddressSteps.HARDWARE:  # compiler steps: fields and shift-adds
        found += [
            Multiplier("conv last-set records", *groups, min(sum(groups), records), False),
            # hwgen.conv_steps: the CONVCFG pointer steps, each product into a `bits`-wide register
            Multiplier("steps: stride * pitch", stride, pitch, min(stride + pitch, bits), False),
            Multiplier("steps: stride * stride", stride, stride, min(2 * stride, bits), False),
            Multiplier("steps: in_rows * stride", in_rows, stride, min(in_rows + stride, bits), False),
            Multiplier("steps: in_rows * pitch", in_rows, pitch, min(in_rows + pitch, bits), False),
            Multiplier("steps: stride^2 * pitch register", min(2 * stride, bits), bits, bits, False),
            Multiplier("steps: in_rows * stride * pitch register", min(in_rows + stride, bits), bits, bits, False),
        ]
    return tuple(found)


def dsp_count(config: AcceleratorConfig, family: str) -> int:
    """DSP cells (MULT18X18D on ECP5, SB_MAC16 on iCE40) of the accelerator."""
    rule = DSP_RULES[family]
    total = 0
    for m in multipliers(config):
        fits_one = max(m.a_width, m.b_width) <= max(rule.a_max, rule.b_max)
        inferred = mul2dsp_cells(m.a_width, m.b_width, m.y_width, m.signed, m.signed, rule)
        per = 1 if m.primitive and fits_one else inferred
        total += m.count * per
    return total


def _rams(word_bits: int, depth: int, shapes: tuple[tuple[int, int], ...]) -> int:
    return min(math.ceil(word_bits / bits) * math.ceil(depth / words) for bits, words in shapes)


def segment_queue_memories(config: AcceleratorConfig, family: str) -> list[tuple[int, int]]:
    """(bits, words) of each block RAM memory behind the DMAs' segment queues
    (`hwgen.dma.segments.segment_queue_memories`) on `family`. The pointer walker's `BlockRamQueue` asks
    for block RAM everywhere; other queues are in LUT RAM on families with distributed RAM. With
    `template.segment_fifos: registers` there is none."""
    if config.template.segment_fifos == SegmentFifos.REGISTERS:
        return []
    return [memory for params in dma_units(config) for memory in dma_queue_memories(params)
            if params.walker == "pointer" or family not in DISTRIBUTED_RAM_FAMILIES]


def memory_counts(config: AcceleratorConfig, family: str) -> tuple[int, int]:
    """(block RAMs, SPRAMs) of the buffer banks, the DMAs' block-RAM segment queues and an SPRAM
    program memory: two banks per buffer, the input buffer as even and odd word halves, both
    banks of a merged buffer in one memory of twice the (power-of-two) depth; SPRAMs
    (`buffers.spram`, `template.program_memory`) only on iCE40, elsewhere block RAM. The
    program's own ROMs (instructions, DMA descriptors) depend on the network and are not
    counted."""
    bram = spram = 0
    shapes = BRAM_SHAPES[family]
    for kind, halves in (("input", 2), ("weight", 1), ("param", 1), ("acc", 1)):
        word, depth = bank_shape(config, kind)
        banks = 2 * halves
        if kind in config.buffers.spram and family == SPRAM_FAMILY:
            spram += banks * 8 * word // SPRAM_BITS * math.ceil(depth // halves / SPRAM_WORDS)
        elif kind in config.template.merged_banks:
            bram += halves * _rams(8 * word, 2 << ceil_log2(depth // halves), shapes)
        else:
            bram += banks * _rams(8 * word, depth // halves, shapes)
    queues = segment_queue_memories(config, family)
    bram += sum(_rams(bits, words, WHOLE_WORD_SHAPES[family]) for bits, words in queues)
    if config.template.program_memory == ProgramMemory.SPRAM:
        if family == SPRAM_FAMILY:
            spram += 1
        else:
            bram += _rams(SPRAM_BITS, SPRAM_WORDS, shapes)
    return bram, spram


STRUCTURE = ("constant", "rows", "PE lanes", "PE pipeline bits")


@dataclass(frozen=True)
class TemplateTerm:
    """A feature of a template option: 1 when the option has `value`, or `measure(option value)`."""

    name: str
    option: str
    value: object = None
    measure: Callable[[object], float] | None = None

    def of(self, template: Template) -> float:
        value = getattr(template, self.option)
        return float(self.measure(value)) if self.measure else float(value == self.value)


def _template_terms() -> tuple[TemplateTerm, ...]:
    """One term per value of a choice option other than its default, per list option the
    number of names added to or left out of its default (merged buffers, vector operations
    left out) and, where the default lists any, whether it lists none (no vector unit), and log2(value / default) of each numeric option (whether it is set, for one
    whose default 0 stands for another option's value)."""
    terms: list[TemplateTerm] = []
    for spec in config_fields():
        if spec.section != "template":
            continue
        name, option = spec.path, spec.name
        if spec.choices is not None:
            terms += [TemplateTerm(f"{name}={str(v).lower() if isinstance(v, bool) else v}", option, v)
                      for v in spec.choices if v != spec.default]
        elif spec.is_list:
            terms.append(TemplateTerm(f"{name} (names added to or left out of the default)", option,
                                      measure=lambda v, d=spec.default: len(set(v) ^ set(d))))
            if spec.default:  # none at all (no vector unit) is more than its names
                terms.append(TemplateTerm(f"{name}=[]", option, measure=lambda v: not v))
        elif spec.default == 0:  # 0 takes another option's value: whether it is set
            terms.append(TemplateTerm(f"{name} (set)", option, measure=lambda v: v != 0))
        else:
            terms.append(TemplateTerm(f"{name} (log2 of value / {spec.default})", option,
                                      measure=lambda v, d=spec.default: math.log2(v / d)))
    return tuple(terms)


TEMPLATE_TERMS = _template_terms()
FEATURES = STRUCTURE + tuple(term.name for term in TEMPLATE_TERMS)


def features(config: AcceleratorConfig) -> np.ndarray:
    """Structural counts the LUT and flip-flop models are linear in: a constant (sequencer,
    DMA, the engines' control), the rows (a post-processing lane each), the PE lanes (`rows *
    cols * simd`: multiplier operands and adder trees), the PEs' accumulator-wide pipeline
    bits (`rows * cols * accumulator bits * (2 + log2 simd)`: accumulator, drain words and, in
    the stored syntheses, which predate its removal, the initial-value pipeline: the model
    overestimates today's PEs until `bench/calibrate_resources.py` is rerun), and the template
    options (`TEMPLATE_TERMS`: 0 for the full template)."""
    pe = config.pe
    pes = pe.rows * pe.cols
    return np.array([1.0, pe.rows, pes * pe.simd, pes * accumulator_shape(config).width * (2 + math.log2(pe.simd)),
                     *(term.of(config.template) for term in TEMPLATE_TERMS)])


def calibration_points(family: str) -> list[tuple[dict, dict[str, int]]]:
    """Stored Yosys results of `family`: (config mapping, cells by type)."""
    if not CALIBRATION.exists():
        return []
    return [(entry["config"], entry["cells"]) for entry in json.loads(CALIBRATION.read_text())["results"]
            if entry["family"] == family]


@dataclass(frozen=True)
class LogicModel:
    """Least-squares coefficients (2 x features) of LUTs and flip-flops, and which features the
    measured configurations vary (a template option no measurement uses cannot be estimated)."""

    coefficients: np.ndarray
    varied: np.ndarray

    def predict(self, feature_values: np.ndarray) -> np.ndarray:
        return self.coefficients @ feature_values


def fit(points: list[tuple[AcceleratorConfig, tuple[int, int]]]) -> LogicModel:
    """The LUT and flip-flop model fitted to measured configurations."""
    x = np.array([features(config) for config, _ in points])
    y = np.array([measured for _, measured in points], dtype=float)
    coefficients, *_ = np.linalg.lstsq(x, y, rcond=None)
    return LogicModel(coefficients.T, (x != 0).any(axis=0))


@lru_cache(maxsize=None)
def _model(family: str) -> LogicModel:
    from hwgen.config import config_from_dict

    points = [(config_from_dict(config), logic_cells(family, cells)) for config, cells in calibration_points(family)]
    if len(points) < len(STRUCTURE):
        raise HwgenError(f"{CALIBRATION}: {len(points)} {family} synthesis results; the LUT/FF model needs at least "
                         f"{len(STRUCTURE)} (run bench/calibrate_resources.py)")
    return fit(points)


def estimate(config: AcceleratorConfig, family: str) -> Resources:
    """Estimated resources of the accelerator for `config` on a `family` device."""
    if family not in FAMILIES:
        raise HwgenError(f"no resource model for FPGA family {family!r}; known: {', '.join(FAMILIES)}")
    model, values = _model(family), features(config)
    missing = [name for name, value, varied in zip(FEATURES, values, model.varied) if value and not varied]
    if missing:
        raise HwgenError(f"no {family} synthesis result with {missing[0]} in {CALIBRATION.name}: the LUT/FF estimate "
                         f"does not cover it (run bench/calibrate_resources.py with such configurations)")
    lut, ff = (max(0, round(v)) for v in model.predict(values))
    bram, spram = memory_counts(config, family)
    return Resources(lut=lut, ff=ff, dsp=dsp_count(config, family), bram=bram, spram=spram)
