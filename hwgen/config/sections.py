"""The sections of a configuration, one frozen dataclass each: every field declared once with
its kind, one-line doc and default (`hwgen.config.spec.setting`)."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

from hwgen.config.energy import ACCUMULATOR_RF_BYTES, DRAM_PJ_PER_16BIT, MAC_PJ, SRAM_PJ_PER_16BIT_AT_32KB
from hwgen.config.kinds import Choice, Names, Number, OneOf
from hwgen.config.options import (MERGEABLE_BUFFERS, SPRAM_BUFFERS, VECTOR_OPS, AddressSteps, BankBuffer, Command,
                                  Counters, DmaDescriptor, DmaSharing, PartialSums, Postprocess, ProgramMemory,
                                  QueueFields, QueueKinds, SegmentFifos, VectorOp, VectorProducts)
from hwgen.config.spec import Section, setting
from hwgen.layout import ACC_BYTES

ON_OFF = OneOf((True, False))
BANK_BYTES = Number(64, 1 << 30)
PJ = Number(0, 1e6, integer=False)
MULTIPLIER_BITS = 16
"""Width of the unsigned requantization multiplier the post-processing takes (`planner.quant`)."""


@dataclass(frozen=True)
class PEArray(Section, key="pe"):
    """rows x cols PEs, each a `simd`-lane dot-product unit (rows <- OC, cols <- OW, lanes <- IC)."""

    rows: int = setting(Number(1, 256), "PEs (output channels in parallel)")
    cols: int = setting(Number(1, 256), "PEs (output pixels of a row in parallel)")
    simd: int = setting(Number(1, 256, power_of_two=True), "lanes per PE (input channels in parallel)")

    @property
    def macs_per_cycle(self) -> int:
        return self.rows * self.cols * self.simd


@dataclass(frozen=True)
class Widths(Section, key="widths"):
    """Bit widths of activations, weights and accumulators (partial sums): the engines' int8
    operands and int32 sums."""

    activation: int = setting(OneOf((8,)), "bits of an activation")
    weight: int = setting(OneOf((8,)), "bits of a weight")
    accumulator: int = setting(OneOf((8 * ACC_BYTES,)), "bits of an accumulator (partial sums, output buffer)")

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
class Buffers(Section, key="buffers"):
    """Total bytes of each on-chip buffer; each is two banks of half the size (double
    buffering), so a tile must fit in half of its buffer."""

    input_bytes: int = setting(BANK_BYTES, "bytes of the input buffer, both banks")
    weight_bytes: int = setting(BANK_BYTES, "bytes of the weight buffer, both banks")
    output_bytes: int = setting(BANK_BYTES, "bytes of the accumulator (output) buffer, both banks")
    spram: tuple[BankBuffer, ...] = setting(Names(SPRAM_BUFFERS), "buffers whose banks are single-ported SPRAM "
                                     "(SB_SPRAM256KA on iCE40UP5K; a `lib.memory` model elsewhere)", ())

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
class Dram(Section, key="dram"):
    """The external memory port: loads and stores share it."""

    bus_width_bits: int = setting(Number(8, 1024, power_of_two=True), "bits per beat")
    bandwidth_bytes_per_cycle: float = setting(Number(1 / 64, 1024, integer=False), "bytes per cycle (sustained)")
    latency_cycles: int = setting(Number(0, 100000), "cycles per burst request")
    burst_beats: int = setting(Number(1, 256, power_of_two=True), "beats per burst")
    constants_bandwidth_bytes_per_cycle: float = setting(
        Number(0, 1024, integer=False), "bytes per cycle (sustained) of reads of the model's constants (weights, "
        "parameters) where another memory holds them (the iCEBreaker's SPI flash); 0: the same memory", default=0,
        quiet_default=True)
    constants_latency_cycles: int = setting(
        Number(0, 100000), "cycles per burst request of reads of the constants (with "
        "constants_bandwidth_bytes_per_cycle)", default=0, quiet_default=True)

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

    def read_figures(self, constants: bool) -> tuple[float, int]:
        """(beats per cycle, latency in cycles) of reads of the constants (`constants`) or of
        the rest of the image."""
        if constants and self.constants_bandwidth_bytes_per_cycle:
            beats = float(Fraction(str(self.constants_bandwidth_bytes_per_cycle))) / (self.bus_width_bits // 8)
            return beats, self.constants_latency_cycles
        return self.beats_per_cycle, self.latency_cycles


SRAM_DEFAULT = (f"`{SRAM_PJ_PER_16BIT_AT_32KB:g} * (bank / 32 KB)^log2(1.5) / 2`")


@dataclass(frozen=True)
class Energy(Section, key="energy"):
    """Per-access energies in pJ (per byte for memories, per MAC, per accumulator update);
    defaults from the Interstellar table (`hwgen.config.energy`)."""

    dram_pj_per_byte: float = setting(PJ, "pJ / DRAM byte", default_doc=(
        f"{DRAM_PJ_PER_16BIT / 2:g} ({DRAM_PJ_PER_16BIT:g} pJ per 16-bit access)"))
    input_buffer_pj_per_byte: float = setting(PJ, "pJ / input-buffer byte", default_doc=SRAM_DEFAULT)
    weight_buffer_pj_per_byte: float = setting(PJ, "pJ / weight-buffer byte", default_doc="same formula, weight bank")
    output_buffer_pj_per_byte: float = setting(PJ, "pJ / output-buffer byte", default_doc="same formula, output bank")
    register_pj_per_access: float = setting(PJ, "pJ / accumulator update", default_doc=(
        f"0.03 pJ ({ACCUMULATOR_RF_BYTES} B RF) x accumulator / 16"))
    mac_pj: float = setting(PJ, "pJ / MAC", default_doc=f"{MAC_PJ:g}")


@dataclass(frozen=True)
class Template(Section, key="template"):
    """Generation-time options of the hardware template; the defaults are the full template
    (what each option changes: `docs/config.md`)."""

    loops_and_registers: bool = setting(ON_OFF, "the sequencer's register file and loop stack (LOOP, SETR, ADDR)",
                                        True)
    queue_fields: QueueFields = setting(Choice(QueueFields), "instruction bits the sequencer's queues hold: `all` "
                                        "128, or those the queue's unit reads (`used`)", QueueFields.ALL)
    program_memory: ProgramMemory = setting(Choice(ProgramMemory), "where the program (instructions, DMA "
                                            "descriptors) lives: a `rom` fixed at generation, or one `spram` the "
                                            "host writes (16 bits fetched per cycle)", ProgramMemory.ROM)
    segment_fifos: SegmentFifos = setting(Choice(SegmentFifos), "the DMA segment queues (4, 8 deep; 1 with `dma: "
                                          "shared`) in block RAM (`memory`) or flip-flops (`registers`)",
                                          SegmentFifos.MEMORY)
    param_bank_channels: int = setting(Number(16, 1024, power_of_two=True), "output channels one parameter-buffer "
                                       "bank holds (8 bytes each; the most a tile has)", 1024)
    merged_banks: tuple[BankBuffer, ...] = setting(Names(MERGEABLE_BUFFERS), "buffers whose two banks share one memory "
                                            "(the bank number its top address bit)", ())
    queue_depth: int = setting(Number(1, 64), "instructions each sequencer dispatch queue holds", 4)
    counters: Counters = setting(Choice(Counters), "the sequencer's performance counters: `all` (cycles, per-queue "
                                 "active and waiting), or the `cycles` counter alone (the others read 0)",
                                 Counters.ALL)
    dma: DmaSharing = setting(Choice(DmaSharing), "a `separate` load DMA and store DMA, or one `shared` DMA (loads "
                              "and stores take turns; a pointer walker)", DmaSharing.SEPARATE)
    dram_address_bits: int = setting(Number(12, 32), "bits of the DMA's (and the memory port's) DRAM byte "
                                     "addresses (the main memory must fit)", 32)
    postprocess: Postprocess = setting(Choice(Postprocess), "requantization: per engine, `lanes` on DSP "
                                       "multipliers, or one DSP-free `serial` lane both engines share",
                                       Postprocess.LANES)
    address_steps: AddressSteps = setting(Choice(AddressSteps), "the CONVCFG pointer-step products: `hardware` "
                                          "multipliers, or precomputed by the `compiler` (shift-add by the stride)",
                                          AddressSteps.HARDWARE)
    vector_products: VectorProducts = setting(Choice(VectorProducts), "the vector unit's coefficient products: "
                                              "`dsp` multipliers, or `serial` shift-add (4 coefficient bits per "
                                              "cycle)", VectorProducts.DSP)
    timing_registers: bool = setting(ON_OFF, "flip-flops that shorten paths on a large FPGA (1 cycle more per VEC)",
                                     True)
    vector_ops: tuple[VectorOp, ...] = setting(Names(VECTOR_OPS), "the VEC operations the vector unit "
                                          "implements (a network needing another one does not compile); none: no "
                                          "vector unit, and VEC is a no-op", VECTOR_OPS)
    dma_descriptor: DmaDescriptor = setting(Choice(DmaDescriptor), "the shared DMA keeps a `copy` of the "
                                            "descriptor it runs, or reads the descriptor `reader`'s entry, held "
                                            "until the DMA is done", DmaDescriptor.COPY)
    dma_loops: int = setting(Number(1, 4), "outer loops (descriptor dimensions) the DMA walks (a program needing "
                             "more is refused)", 4)
    load_command: Command = setting(Choice(Command), "the load unit keeps a `copy` of the LOAD it runs, or runs it "
                                    "from the load `queue`'s head, popping it when done", Command.COPY)
    compute_queue_depth: int = setting(Number(0, 64), "instructions the compute queue holds (0: `queue_depth`)", 0)
    store_command: Command = setting(Choice(Command), "the store unit keeps a `copy` of the STORE it runs, or runs "
                                     "it from the store `queue`'s head, popping it when done", Command.COPY)
    store_queue_depth: int = setting(Number(0, 64), "instructions the store queue holds (0: `queue_depth`)", 0)
    semaphore_bits: int = setting(Number(1, 8), "bits of each sequencer semaphore (a program that could raise one "
                                  "above `2**semaphore_bits - 1` is refused)", 8)
    partial_sums: PartialSums = setting(Choice(PartialSums), "a CONV may cover part of a layer's reduction, its "
                                        "int32 sums `kept` in the accumulator buffer, or `none`: every CONV covers "
                                        "all input channels", PartialSums.KEPT)
    queue_kinds: QueueKinds = setting(Choice(QueueKinds), "a queue head's kind (WAIT, SIGNAL, command) `decoded` "
                                      "from its opcode, or a one-hot kind `registered` beside each entry",
                                      QueueKinds.DECODED)
    max_fused_pool: int = setting(Number(1, 4, power_of_two=True), "the largest k of a k x k / k max pool the "
                                  "convolution engine computes in its output path (1: none; at most `pe.cols`)", 1)

    @property
    def vector_unit(self) -> bool:
        """Whether the template has a vector unit: `vector_ops` lists any operation."""
        return bool(self.vector_ops)
