"""Conditions on a whole configuration that no single field's kind expresses, each one a
condition the generated hardware needs (so what loads also generates). `AcceleratorConfig`
checks them all when it is built; `docs/config.md` lists each with the field it names."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.errors import ConfigError
from hwgen.config.options import (FILLED_BUFFERS, SPRAM_BUFFERS, AddressSteps, BankBuffer, DmaDescriptor, DmaSharing,
                                  PartialSums, ProgramMemory)
from hwgen.isa import Opcode, field_limit
from hwgen.layout import bank_bytes, word_bytes
from hwgen.spram_size import SPRAM_BITS, SPRAM_WORDS

if TYPE_CHECKING:
    from hwgen.config.model import AcceleratorConfig

Problem = Callable[["AcceleratorConfig"], "str | None"]


@dataclass(frozen=True)
class Rule:
    """A condition on `field` (the one its error names) that `doc` states for the docs;
    `problem` says what is wrong with a configuration (after `field: `), or None."""

    field: str
    doc: str
    problem: Problem

    def check(self, config: AcceleratorConfig) -> None:
        message = self.problem(config)
        if message:
            raise ConfigError(f"{self.field}: {message}")


RULES: list[Rule] = []
"""Every rule, checked in this order."""


def rule(field: str, doc: str) -> Callable[[Problem], Problem]:
    """Register the decorated problem function as a rule on `field`."""
    def register(problem: Problem) -> Problem:
        RULES.append(Rule(field, doc, problem))
        return problem
    return register


def _power_of_two(name: str) -> Problem:
    def problem(config: AcceleratorConfig) -> str | None:
        value = getattr(config.pe, name)
        if value & (value - 1):
            return f"{value} must be a power of two (the generated array's addressing); allowed: a power of two"
        return None
    return problem


RULES.extend(Rule(f"pe.{name}", "a power of two", _power_of_two(name)) for name in ("rows", "cols"))


@rule("pe.simd", "at most `pe.rows`")
def _simd_within_rows(config: AcceleratorConfig) -> str | None:
    pe = config.pe
    if pe.simd > pe.rows:
        return (f"{pe.simd} must not exceed pe.rows ({pe.rows}): a pixel's S results fill one accumulator word; "
                f"allowed here: a power of two in [1, {pe.rows}]")
    return None


WHOLE_WORDS = {
    "input_bytes": ("input", 2, "4 * pe.cols * pe.simd"),
    "weight_bytes": ("weight", 1, "2 * pe.rows * pe.simd"),
    "output_bytes": ("acc", 1, "8 * pe.rows"),
}
"""Per `buffers` size: the buffer whose words (`hwgen.layout.word_bytes`) a bank holds, how many
of them make the granule of a bank (the input bank's even and odd words) and what the size is
a multiple of."""


def _whole_words(size: str) -> Problem:
    buffer, words, formula = WHOLE_WORDS[size]

    def problem(config: AcceleratorConfig) -> str | None:
        value = getattr(config.buffers, size)
        multiple = 2 * words * word_bytes(config.pe, buffer)
        if value % multiple:
            return f"{value} is not allowed; expected a multiple of {multiple} ({formula}: two banks of whole words)"
        return None
    return problem


RULES.extend(Rule(f"buffers.{size}", f"a multiple of `{formula}` (two banks of whole words)", _whole_words(size))
             for size, (_, _, formula) in WHOLE_WORDS.items())


def _spram_bank(config: AcceleratorConfig, buffer: BankBuffer) -> tuple[int, int]:
    """(words, bits) of one SPRAM bank of `buffer` (the input buffer's as even and odd halves)."""
    word = word_bytes(config.pe, buffer)
    halves = 2 if buffer == BankBuffer.INPUT else 1
    return bank_bytes(config, buffer) // word // halves, 8 * word


def _fits_spram(config: AcceleratorConfig, buffer: BankBuffer) -> bool:
    words, bits = _spram_bank(config, buffer)
    return words <= SPRAM_WORDS and bits % SPRAM_BITS == 0


@rule("buffers.spram", f"each bank at most {SPRAM_WORDS} words of a multiple of {SPRAM_BITS} bits")
def _spram_banks_fit(config: AcceleratorConfig) -> str | None:
    for buffer in config.buffers.spram:
        if not _fits_spram(config, buffer):
            words, bits = _spram_bank(config, buffer)
            fitting = [str(other) for other in SPRAM_BUFFERS if _fits_spram(config, other)]
            return (f"{str(buffer)!r} is not allowed here: an SPRAM bank holds at most {SPRAM_WORDS} words of a multiple "
                    f"of {SPRAM_BITS} bits, and this config's {buffer} banks are {words} words of {bits} bits; allowed "
                    f"here: {', '.join(fitting) or 'none'}")
    return None


@rule("instances", "above 1 only with `template.program_memory` other than `spram`")
def _instances_run_programs_from_rom(config: AcceleratorConfig) -> str | None:
    if config.instances > 1 and config.template.program_memory == ProgramMemory.SPRAM:
        return (f"{config.instances} instances need their programs in ROM (hwgen.pipeline); this config has "
                "template.program_memory: spram; allowed here: 1")
    return None


@rule("dram.bandwidth_bytes_per_cycle", "at most `dram.bus_width_bits / 8`")
def _bandwidth_within_bus(config: AcceleratorConfig) -> str | None:
    dram = config.dram
    bus = dram.bus_width_bits // 8
    if dram.bandwidth_bytes_per_cycle > bus:
        return (f"{dram.bandwidth_bytes_per_cycle} exceeds the bus (dram.bus_width_bits / 8 = {bus}); "
                f"expected a number in [1/64, {bus}]")
    return None


@rule("dram.bus_width_bits", "at most every buffer word (`pe.cols * pe.simd`, `pe.rows * pe.simd`, `4 * pe.rows` bytes)")
def _bus_within_buffer_words(config: AcceleratorConfig) -> str | None:
    words = {buffer: word_bytes(config.pe, buffer) for buffer in BankBuffer}
    narrowest = min(words, key=words.get)
    bits = config.dram.bus_width_bits
    if bits > 8 * words[narrowest]:
        return (f"{bits} is wider than the {narrowest} buffer word ({8 * words[narrowest]} bits); allowed here: "
                f"a power of two in [8, {8 * words[narrowest]}] (or larger pe dimensions)")
    return None


@rule("template.param_bank_channels", "at least `pe.rows`")
def _param_bank_holds_the_rows(config: AcceleratorConfig) -> str | None:
    channels, rows = config.template.param_bank_channels, config.pe.rows
    if channels < rows:
        return (f"{channels} must be at least pe.rows ({rows}); allowed here: a power of two in "
                f"[{max(rows, 16)}, 1024]")
    return None


@rule("template.max_fused_pool", "at most `pe.cols`")
def _fused_pool_within_a_group(config: AcceleratorConfig) -> str | None:
    pool, cols = config.template.max_fused_pool, config.pe.cols
    if pool > cols:
        return (f"{pool} exceeds pe.cols ({cols}): a pool window must lie within a group's {cols} output columns; "
                f"allowed here: a power of two in [1, {1 << (cols.bit_length() - 1)}]")
    return None


@rule("template.merged_banks", "not in `buffers.spram`")
def _merged_banks_not_spram(config: AcceleratorConfig) -> str | None:
    both = sorted(set(config.template.merged_banks) & set(config.buffers.spram))
    if both:
        return (f"{str(both[0])!r} is also in buffers.spram; a single-ported SPRAM bank cannot be merged; allowed: "
                f"buffers not in buffers.spram")
    return None


@rule("template.merged_banks", "`acc` only with `partial_sums: none`")
def _merged_acc_without_partial_sums(config: AcceleratorConfig) -> str | None:
    template = config.template
    if BankBuffer.ACC in template.merged_banks and template.partial_sums != PartialSums.NONE:
        return (f"'acc' needs template.partial_sums: none (with partial sums both sides read and write the "
                f"accumulator buffer); this config has partial_sums: {template.partial_sums}; allowed here: "
                f"{', '.join(FILLED_BUFFERS)}")
    return None


STEP_PIXELS = field_limit(Opcode.CONVCFG, "plane_step") + 1
"""Input-bank pixels the CONVCFG step fields address (`hwgen.conv_step_fields.FIELD_BITS`)."""


@rule("template.address_steps", f"`compiler` only with input banks of at most {STEP_PIXELS} pixels "
                                "(`buffers.input_bytes / 2 / pe.simd`)")
def _compiler_steps_address_the_input_bank(config: AcceleratorConfig) -> str | None:
    pixels = config.buffers.input_bank // config.pe.simd
    if config.template.address_steps == AddressSteps.COMPILER and pixels > STEP_PIXELS:
        return (f"'compiler' needs input banks of at most {STEP_PIXELS} pixels (the CONVCFG step fields); this "
                f"config has {pixels} (buffers.input_bytes / 2 / pe.simd); allowed here: hardware")
    return None


@rule("template.dma_descriptor", "`reader` only with `dma: shared` and `program_memory: spram`")
def _reader_needs_the_shared_dma_and_spram(config: AcceleratorConfig) -> str | None:
    template = config.template
    if template.dma_descriptor == DmaDescriptor.READER and (template.dma, template.program_memory) != (
            DmaSharing.SHARED, ProgramMemory.SPRAM):
        return (f"'reader' needs template.dma: shared and template.program_memory: spram (the DMA reads the "
                f"descriptor reader's entry); this config has dma: {template.dma}, program_memory: "
                f"{template.program_memory}; allowed here: copy")
    return None


@rule("template.dma_loops", "below 4 only with `dma: shared`")
def _fewer_loops_need_the_shared_dma(config: AcceleratorConfig) -> str | None:
    template = config.template
    if template.dma_loops < 4 and template.dma != DmaSharing.SHARED:
        return (f"{template.dma_loops} needs template.dma: shared (the pointer walker); this config has dma: "
                f"{template.dma}; allowed here: 4")
    return None
