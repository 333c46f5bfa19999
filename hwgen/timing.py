"""The hardware's timing contract: how many cycles each unit of the template takes.

The RTL modules take their latencies from here, and the planner's models (`planner.cost`,
`planner.vector_cost`, `planner.transfer_work`, `planner.program_model`) count cycles with the
same functions, so the hardware and its models share one source; the RTL tests hold the
hardware to it. No hardware description: it reads the configuration, the ISA's instruction
fields and the program memory's width. Functions of counts take ints or, where they say so,
numpy arrays (broadcast).
"""
from __future__ import annotations

import numpy as np

from hwgen.config import MULTIPLIER_BITS, AcceleratorConfig, Postprocess, ProgramMemory, VectorOp, VectorProducts
from hwgen.isa import INSTRUCTION_BITS, Instruction, VecOp
from hwgen.spram_size import SPRAM_BITS

# ---------------------------------------------------------------- PE array and requantization

PE_LATENCY = 4
"""PE latency without the adder tree: input, multiplier input, product and accumulator registers
(`hwgen.pe`)."""
POSTPROCESS_LATENCY = 6
"""Pipeline stages of the parallel requantizer, from an accepted beat to its results
(`hwgen.postprocess`)."""
DIGIT_BITS = 4
"""Bits of the multiplier a serial product takes per cycle (`hwgen.serial_post`, and the vector
unit's serial products)."""
DIGITS = MULTIPLIER_BITS // DIGIT_BITS
"""Cycles of one serial product: one per multiplier digit."""
LANE_CYCLES = 1 + DIGITS
"""Cycles per lane of the serial requantizer between accepted beats: one per multiplier digit,
and one for the tail (`hwgen.serial_post`)."""


def array_latency(simd: int) -> int:
    """Cycles from a group's `last` input to its first drain beat in the PE array with `simd`
    lanes (`hwgen.pe_array`): the PE's latency (`PE_LATENCY + log2 simd`) plus the drain bank."""
    return PE_LATENCY + (simd.bit_length() - 1) + 1


def serial_interval(lanes: int) -> int:
    """Cycles between the beats the serial requantizer of `lanes` lanes accepts at full rate
    (`hwgen.serial_post`)."""
    return lanes * LANE_CYCLES


def serial_latency(lanes: int) -> int:
    """Cycles from a beat the serial requantizer accepts to its output beat: the lanes,
    rounding, clamp (`hwgen.serial_post`)."""
    return lanes * LANE_CYCLES + 3


def beat_interval(config: AcceleratorConfig) -> int:
    """Cycles an engine leaves between the beats it sends to its requantizer (1: every cycle;
    the shared serial lane's `serial_interval` with `template.postprocess: serial`)."""
    return serial_interval(config.pe.rows) if config.template.postprocess == Postprocess.SERIAL else 1


def beat_latency(config: AcceleratorConfig) -> int:
    """Cycles from a beat entering an engine's requantizer to its results."""
    return serial_latency(config.pe.rows) if config.template.postprocess == Postprocess.SERIAL else POSTPROCESS_LATENCY


# ---------------------------------------------------------------- compute unit: CONVCFG and CONV

STEPS_LATENCY = 2
"""Register stages of the CONVCFG pointer steps (`hwgen.conv_steps`): the steps are ready this
many cycles after the CONVCFG word."""
CONVCFG_CYCLES = 1 + STEPS_LATENCY
"""Cycles of a CONVCFG in the compute unit (`hwgen.compute_unit`), from accepting it to the
first cycle the unit is idle again."""


def group_interval(config: AcceleratorConfig) -> int:
    """Fewest cycles between the starts of a CONV's groups in the conv engine
    (`hwgen.conv_engine`): the drain of `pe.cols` beats, `beat_interval` apart."""
    return config.pe.cols * beat_interval(config)


def drain_cycles(config: AcceleratorConfig) -> int:
    """Cycles of a CONV after its last group's reduction: array latency, drain, requantization."""
    pe = config.pe
    return array_latency(pe.simd) + (pe.cols - 1) * beat_interval(config) + 1 + beat_latency(config)


def conv_busy_cycles(config: AcceleratorConfig, steps, groups):
    """Cycles of a CONV of `groups` groups of `steps` reduction steps each in the conv engine
    (`hwgen.conv_engine`), from the accepting cycle to the first cycle `idle` is high again:
    group 0 starts the cycle after the accept, the others `max(steps, group_interval)` apart
    (numpy arrays broadcast)."""
    return 1 + (groups - 1) * np.maximum(steps, group_interval(config)) + steps + drain_cycles(config)


def conv_cycles(config: AcceleratorConfig, conv: Instruction, convcfg: Instruction) -> int:
    """`conv_busy_cycles` of one CONV instruction under its CONVCFG: `ic_groups * kernel_h *
    kernel_w` steps per group, `out_rows * ow_groups * oc_groups` groups."""
    steps = conv["ic_groups"] * convcfg["kernel_h"] * convcfg["kernel_w"]
    groups = conv["out_rows"] * conv["ow_groups"] * conv["oc_groups"]
    return int(conv_busy_cycles(config, steps, groups))


# ---------------------------------------------------------------- compute unit: VEC

def address_latency(config: AcceleratorConfig) -> int:
    """Cycles from a vector unit read's loop counters to its buffer read (`hwgen.vector_unit`): 1
    with `template.timing_registers` (the whole read-address sum in a register before the
    input banks' ports), else 0."""
    return int(config.template.timing_registers)


def accumulate_latency(config: AcceleratorConfig) -> int:
    """Cycles from a window's last read to its post-processing input in the vector unit: read,
    select, subtract, product, accumulate; read, select, accumulate when `template.vector_ops`
    is MAX alone."""
    return 3 if set(config.template.vector_ops) == {VectorOp.MAX} else 5


def read_spacing(config: AcceleratorConfig, window: bool) -> int:
    """Cycles between the vector unit's reads of a window (MAX, SUM) or of a COPY / ADD output:
    `DIGITS` for the latter with `template.vector_products: serial`, else 1."""
    return DIGITS if config.template.vector_products == VectorProducts.SERIAL and not window else 1


def vec_busy_cycles(config: AcceleratorConfig, outputs: int, slots: int) -> int:
    """Cycles the vector unit's `idle` is low for `outputs` outputs of `slots` read cycles each
    (reads times `read_spacing`, from the cycle after the accept on; outputs starting at least
    `beat_interval` cycles apart), then the read-address register, the product's last digits,
    the accumulation and the post-processing; 0 without outputs."""
    if not outputs:
        return 0
    return ((outputs - 1) * max(slots, beat_interval(config)) + slots + address_latency(config)
            + accumulate_latency(config) + beat_latency(config))


def reads_per_output(vec: Instruction, convcfg: Instruction) -> int:
    """Input reads of a VEC per output pixel-group: the kernel area, 2 for ADD, 1 for COPY."""
    op = VecOp(vec["op"])
    if op in (VecOp.MAX, VecOp.SUM):
        return convcfg["kernel_h"] * convcfg["kernel_w"]
    return 2 if op == VecOp.ADD else 1


def vec_cycles(config: AcceleratorConfig, vec: Instruction, convcfg: Instruction) -> int:
    """Cycles the vector unit's `idle` is low for one VEC: `vec_busy_cycles` of its `out_rows *
    out_cols * channel_groups` outputs of `reads_per_output` reads, `read_spacing` apart."""
    outputs = vec["out_rows"] * vec["out_cols"] * vec["channel_groups"]
    spacing = read_spacing(config, VecOp(vec["op"]) in (VecOp.MAX, VecOp.SUM))
    return vec_busy_cycles(config, outputs, reads_per_output(vec, convcfg) * spacing)


# ---------------------------------------------------------------- sequencer

HALFWORDS = INSTRUCTION_BITS // SPRAM_BITS
"""Halfwords per instruction in an SPRAM program memory (instruction `i` at halfwords `8i..8i+7`,
least significant first): the sequencer fetches one a cycle."""
DONE_CYCLES = 2
"""Cycles from the last queue action to the sequencer's `done`."""


def fetch_state_cycles(config: AcceleratorConfig) -> int:
    """Cycles of the sequencer's FETCH state: 1 from a ROM, one per halfword from an SPRAM
    program memory. It is also the cycle (after start) of the first instruction's EXECUTE state."""
    return HALFWORDS if config.template.program_memory == ProgramMemory.SPRAM else 1


def fetch_cycles(config: AcceleratorConfig) -> int:
    """Cycles per instruction the fetch stage dispatches while no queue is full: FETCH plus one
    EXECUTE."""
    return fetch_state_cycles(config) + 1


def head_delay(depth: int) -> int:
    """Cycles from writing an instruction into an empty dispatch queue of `depth` entries to its
    being the head (`hwgen.dispatch_queue`): 2 through the queue's memory and head register, 1 in
    a one-entry queue (a single register)."""
    return 1 if depth == 1 else 2


# ---------------------------------------------------------------- transfer units and DMA

LOAD_START_CYCLES = 8
"""Cycles of a LOAD's transfer unit and DMA start-up and drain, beyond memory latency and transfer."""
STORE_START_CYCLES = 11
"""The same for a STORE."""
SHARED_START_SAVING = 2
"""Cycles fewer with `template.dma: shared` for a transfer whose first run moves data: its walker
hands runs to the source side directly, not through a two-cycle source queue (`hwgen.dma`)."""
LOOKUP_CYCLES = 3
"""Cycles of a descriptor read from the SPRAM program memory beyond one per halfword
(`hwgen.dma_units.DescriptorReader`)."""
OFFER_CYCLES = 1
"""Cycles from a LOAD's or STORE's issue until its unit offers the descriptor to the DMA."""
