"""The names a configuration may give its string-valued options: one `StrEnum` per option.

Members compare equal to their names (`ProgramMemory.SPRAM == "spram"`) and print as them, so
YAML, tables and file names see plain strings; code compares with the members, where a
misspelt name is an `AttributeError` (`tests/test_option_literals.py` refuses a string).
"""
from __future__ import annotations

from enum import StrEnum


class QueueFields(StrEnum):
    """Instruction bits the sequencer's queues hold."""

    ALL = "all"
    USED = "used"


class ProgramMemory(StrEnum):
    """Where the program (instructions and DMA descriptors) lives."""

    ROM = "rom"
    SPRAM = "spram"


class SegmentFifos(StrEnum):
    """What the DMA segment queues are made of."""

    MEMORY = "memory"
    REGISTERS = "registers"


class Counters(StrEnum):
    """The sequencer's performance counters."""

    ALL = "all"
    CYCLES = "cycles"


class DmaSharing(StrEnum):
    """A load DMA and a store DMA, or one DMA both take turns on."""

    SEPARATE = "separate"
    SHARED = "shared"


class Postprocess(StrEnum):
    """Where requantization happens."""

    LANES = "lanes"
    SERIAL = "serial"


class AddressSteps(StrEnum):
    """Who computes the CONVCFG pointer-step products."""

    HARDWARE = "hardware"
    COMPILER = "compiler"


class VectorProducts(StrEnum):
    """How the vector unit multiplies by its coefficients."""

    DSP = "dsp"
    SERIAL = "serial"


class DmaDescriptor(StrEnum):
    """Where the shared DMA reads the descriptor it runs."""

    COPY = "copy"
    READER = "reader"


class Command(StrEnum):
    """Where a transfer unit holds the LOAD or STORE it runs."""

    COPY = "copy"
    QUEUE = "queue"


class PartialSums(StrEnum):
    """Whether a CONV may cover part of a layer's reduction."""

    KEPT = "kept"
    NONE = "none"


class QueueKinds(StrEnum):
    """How the sequencer tells a queue head's kind (WAIT, SIGNAL, command)."""

    DECODED = "decoded"
    REGISTERED = "registered"


class BankBuffer(StrEnum):
    """An on-chip buffer of two banks (`buffers.spram`, `template.merged_banks`)."""

    INPUT = "input"
    WEIGHT = "weight"
    PARAM = "param"
    ACC = "acc"


class VectorOp(StrEnum):
    """A VEC operation (`hwgen.isa.VecOp`) the vector unit may implement (`template.vector_ops`)."""

    MAX = "max"
    SUM = "sum"
    ADD = "add"
    COPY = "copy"


SPRAM_BUFFERS = (BankBuffer.INPUT, BankBuffer.WEIGHT)
"""Buffers whose banks may live in iCE40UP5K SPRAM (single-ported: one side at a time)."""
FILLED_BUFFERS = (BankBuffer.INPUT, BankBuffer.WEIGHT, BankBuffer.PARAM)
"""Buffers the DMA only writes and the compute side only reads."""
MERGEABLE_BUFFERS = tuple(BankBuffer)
"""Buffers whose two banks can share one simple dual-port memory when one side only writes and
the other only reads: the `FILLED_BUFFERS`, and the accumulator buffer without partial sums
(`template.partial_sums: none`: the compute side writes it, the DMA reads it)."""
VECTOR_OPS = tuple(VectorOp)
"""Every VEC operation, the default of `template.vector_ops`."""
