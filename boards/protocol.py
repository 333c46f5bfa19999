"""The host protocol over the serial link: one definition of the wire format, used by the
gateware bridge (`boards.bridge`), the host runtime (`boards.runtime`) and the tests.
`docs/host_protocol.md` describes it for people.

Every request is `A5 | command | length (u16 LE) | header CRC-16 | payload | CRC-16` and is
answered by one reply `5A | status | length (u16 LE) | payload | CRC-16`. Each CRC is
CRC-16/IBM-3740 (poly 0x1021, init 0xFFFF), big-endian, over everything after the sync byte
before it (the header CRC: command and length); sent most significant byte first, the CRC over
a whole frame after its sync byte is zero. The device checks the header CRC before it acts on
the length; the host knows every reply's length and refuses any other.
"""
from __future__ import annotations

import json
import struct
from dataclasses import astuple, dataclass
from enum import IntEnum

from amaranth.lib import data
from amaranth.lib.crc import catalog

from hwgen.config import AcceleratorConfig, ProgramMemory
from hwgen.program import Program
from hwgen.sequencer_layouts import COUNTERS_LAYOUT
from common.errors import HwgenError
from planner.compile.stages import PipelineLayout

VERSION = 1
MAGIC = b"HWGN"
REQUEST_SYNC = 0xA5
REPLY_SYNC = 0x5A
HEADER_BYTES = 4  # sync, command/status, length
CRC_BYTES = 2
MAX_DATA = 256
"""Most data bytes one READ returns or one WRITE carries."""
MAX_REQUEST_PAYLOAD = 4 + MAX_DATA
CHECKSUM_ALIGNMENT = 64
"""CHECKSUM regions start and end on this many bytes, so the device sums whole memory words."""
CHECKSUM_CYCLES_PER_BYTE = 16
"""Clock cycles a CHECKSUM takes per byte at most while the accelerator leaves main memory to the
host (the device reads a byte per memory access and sums it a bit per cycle: ten cycles, twelve
with block-RAM main memory, whose host reads take two cycles more: `boards.main_memory.host_latency`;
14.1 on average with SDRAM main memory at 75 MHz, refreshes included, in simulation:
`tests/test_sdram_soc.py`)."""
FRAME_GAP_BYTE_TIMES = 64
"""A request whose next byte is this many byte times late is abandoned (reply TRUNCATED)."""

FRAME_CRC = catalog.CRC16_IBM_3740(data_width=8)
REGION_CRC = catalog.CRC32_ISO_HDLC(data_width=8)
"""CHECKSUM replies the CRC-32 (as zlib.crc32) of a memory region."""


class Command(IntEnum):
    IDENTIFY = 0x01  # -> DeviceInfo
    STATUS = 0x02    # -> u8 flags (STATUS_BUSY, STATUS_DONE)
    START = 0x03     # -> empty; BUSY while running
    COUNTERS = 0x04  # -> u32 LE per COUNTER_NAMES
    READ = 0x05      # u32 address, u16 length (1..MAX_DATA) -> data
    WRITE = 0x06     # u32 address, data (1..MAX_DATA bytes) -> empty; BUSY while running
    CHECKSUM = 0x07  # u32 address, u32 length (>= 1), both multiples of CHECKSUM_ALIGNMENT -> u32 CRC-32
    PROGRAM = 0x08   # u32 even address, data (2..MAX_DATA bytes, even) into the program memory -> empty


class Status(IntEnum):
    OK = 0x00
    BAD_CRC = 0x01        # the request's CRC did not match
    BAD_COMMAND = 0x02    # unknown command byte, or PROGRAM without a writable program memory
    BAD_LENGTH = 0x03     # payload length wrong for the command (PROGRAM: an odd number of data bytes), or over MAX_REQUEST_PAYLOAD
    OUT_OF_RANGE = 0x04   # address range outside memory (PROGRAM: the program memory), or a READ/CHECKSUM of 0 bytes
    BUSY = 0x05           # START, WRITE or PROGRAM while the accelerator runs
    TRUNCATED = 0x06      # the request stopped before its end (FRAME_GAP_BYTE_TIMES of silence)
    UNALIGNED = 0x07      # a CHECKSUM address or length not a multiple of CHECKSUM_ALIGNMENT, a PROGRAM address odd


STATUS_BUSY = 0x01
STATUS_DONE = 0x02
READ_REQUEST = struct.Struct("<IH")
WRITE_ADDRESS = struct.Struct("<I")
CHECKSUM_REQUEST = struct.Struct("<II")
CHECKSUM_REPLY = struct.Struct("<I")
STATUS_REPLY = struct.Struct("<B")


def _counter_names(layout: data.StructLayout, prefix: str = "") -> tuple[str, ...]:
    """Leaf field names of `layout` in bit order (struct fields are laid out in order)."""
    names: list[str] = []
    for name, field in layout:
        if isinstance(field.shape, data.Layout):
            names += _counter_names(field.shape, f"{prefix}{name}.")
        else:
            names.append(f"{prefix}{name}")
    return tuple(names)


COUNTER_NAMES = _counter_names(COUNTERS_LAYOUT)
"""The sequencer's counters in COUNTERS reply order: the reply is `COUNTERS_LAYOUT`'s bits,
least significant byte first, one u32 per counter."""
COUNTERS_REPLY = struct.Struct("<" + "I" * len(COUNTER_NAMES))
assert 8 * COUNTERS_REPLY.size == COUNTERS_LAYOUT.size, "every counter must be 32 bits wide"


@dataclass(frozen=True)
class DeviceInfo:
    """The IDENTIFY reply: what the gateware is and which program (`build_id`) its ROM holds."""

    memory_bytes: int
    clk_hz: int
    build_id: int
    version: int = VERSION
    max_data: int = MAX_DATA
    magic: bytes = MAGIC

    LAYOUT = struct.Struct("<4sBIHII")

    def pack(self) -> bytes:
        return self.LAYOUT.pack(self.magic, self.version, self.memory_bytes, self.max_data, self.clk_hz, self.build_id)

    @classmethod
    def unpack(cls, payload: bytes) -> DeviceInfo:
        magic, version, memory_bytes, max_data, clk_hz, build_id = cls.LAYOUT.unpack(payload)
        return cls(memory_bytes, clk_hz, build_id, version, max_data, magic)


REPLY_BYTES = {Command.IDENTIFY: DeviceInfo.LAYOUT.size, Command.STATUS: STATUS_REPLY.size, Command.START: 0,
               Command.COUNTERS: COUNTERS_REPLY.size, Command.WRITE: 0, Command.CHECKSUM: CHECKSUM_REPLY.size,
               Command.PROGRAM: 0}
"""Reply payload bytes of every command but READ (whose reply has the requested length)."""


def build_id(program: Program, config: AcceleratorConfig, flash_constants: bytes | None = None) -> int:
    """CRC-32 of the program (instructions, descriptors) and the configuration it runs on: tells
    the host which program a bitstream's ROM holds, on which hardware. With a writable (SPRAM)
    program memory the bitstream holds no program, so the id covers the configuration alone
    (the host loads the program). With the constants in the SPI flash (`flash_constants`,
    written beside the bitstream), the id covers their CRC-32 too: the host cannot read them
    back, so the id tells which weights the bitstream was built with."""
    spram = config.template.program_memory == ProgramMemory.SPRAM
    fields = {"config": config.to_dict()} if spram else {"program": program.to_dict(), "config": config.to_dict()}
    if flash_constants is not None:
        fields["flash_constants"] = REGION_CRC.compute(flash_constants)
    return _fields_id(fields)


def pipeline_build_id(layout: PipelineLayout) -> int:
    """`build_id` of a SoC running `layout`'s instances: every stage's program, its place in main
    memory and its slot windows, the image count and the configuration."""
    stages = [{"program": stage.compilation.compiled.program.to_dict(), "base": stage.base,
               "windows": [astuple(stage.input_window), astuple(stage.output_window)]} for stage in layout.stages]
    return _fields_id({"stages": stages, "images": layout.images, "config": layout.config.to_dict()})


def _fields_id(fields: dict) -> int:
    return REGION_CRC.compute(json.dumps(fields, sort_keys=True).encode())


def frame(sync: int, code: int, payload: bytes = b"", header_crc: bool = False) -> bytes:
    """One frame: sync, command or status, length, (with `header_crc` the CRC of those three
    bytes,) payload and the CRC of everything after the sync byte."""
    if len(payload) > 0xFFFF:
        raise ValueError(f"payload of {len(payload)} bytes exceeds the u16 length field")
    body = bytes([code]) + struct.pack("<H", len(payload))
    if header_crc:
        body += FRAME_CRC.compute(body).to_bytes(CRC_BYTES, "big")
    body += payload
    return bytes([sync]) + body + FRAME_CRC.compute(body).to_bytes(CRC_BYTES, "big")


def request(command: Command, payload: bytes = b"") -> bytes:
    """A request frame: its header has its own CRC, checked before the device uses the length."""
    return frame(REQUEST_SYNC, command, payload, header_crc=True)


def reply(status: Status, payload: bytes = b"") -> bytes:
    return frame(REPLY_SYNC, status, payload)


class ProtocolError(HwgenError):
    """The serial link misbehaved or the device refused a request."""


class ReplyTimeout(ProtocolError):
    """No complete reply within the timeout."""


class ReplyChecksumError(ProtocolError):
    """A reply's CRC does not match its bytes."""


class ReplyFramingError(ProtocolError):
    """A reply with a wrong sync byte or a length other than the command's."""


class DeviceError(ProtocolError):
    """The device answered with an error status."""

    def __init__(self, command: Command, status: int):
        self.command, self.status = command, status
        name = Status(status).name if status in Status._value2member_map_ else f"unknown status {status:#04x}"
        super().__init__(f"device refused {command.name}: {name}")


class DeviceMismatch(ProtocolError):
    """The device is not a hwgen SoC of this protocol, or it holds another build or less memory."""
