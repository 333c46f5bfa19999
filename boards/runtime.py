"""The host runtime: runs a compiled network on a hwgen SoC over any `boards.transport`
Transport (a serial port, or the SoC in simulation), speaking `boards.protocol`.

Every reply is checked (sync byte, status, length, CRC); anything unexpected raises a
`ProtocolError` subclass naming the command and what went wrong, after draining the link so
the next request starts clean.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from boards import protocol as wire
from boards.protocol import (COUNTER_NAMES, CRC_BYTES, HEADER_BYTES, MAGIC, REPLY_SYNC, VERSION, Command,
                             DeviceInfo, DeviceMismatch, ProtocolError, ReplyChecksumError, ReplyFramingError,
                             ReplyTimeout, Status)
from boards.soc import SocLoad
from boards.transport import Transport
from hwgen.accelerator import program_regions
from hwgen.config import ProgramMemory
from planner.compile.memory_map import ALIGNMENT, tensor_bytes
from planner.compile.network import CompiledNetwork
from planner.compile.stages import PipelineLayout
from planner.compile.packing import activation_from_image, activation_image
from common.errors import HwgenError, InputError


TRANSFER_MARGIN = 1.5  # a reply may take this many times its bytes' transfer time (plus latency)
assert ALIGNMENT % wire.CHECKSUM_ALIGNMENT == 0, "the constants region must be a whole number of checksum blocks"


class RunTimeout(HwgenError):
    """The accelerator did not report `done` within the run timeout."""


@dataclass
class Inference:
    """Outputs of one run (int8 `(C, H, W)` per output tensor) and the performance counters
    (`COUNTER_NAMES` -> value; `cycles` is the run's length in clock cycles)."""

    outputs: dict[str, np.ndarray]
    counters: dict[str, int]


ADDRESS_SPAN = 1 << 32
"""Addresses the wire format carries (u32)."""


class Runtime:
    """Talks to one device over `transport`; a run may take `run_timeout` seconds (of the
    transport's clock). A reply may take its transfer time (`transport.byte_time` per byte),
    the device's processing and `transport.latency`.

    With `flash_constants` (the iCEBreaker) the device keeps a network's constants in its SPI
    flash, written with the bitstream (`boards.spiflash`): main memory holds the rest of the
    image from its address 0 (image address `constant_bytes`), the host loads no constants and
    cannot read them back; the device's build id covers their CRC-32 instead."""

    def __init__(self, transport: Transport, *, run_timeout: float = 10.0, flash_constants: bool = False):
        self.transport = transport
        self.run_timeout = run_timeout
        self.flash_constants = flash_constants
        self._info: DeviceInfo | None = None

    # ---- one request, one checked reply
    def _reply_timeout(self, request_bytes: int, reply_bytes: int, processing: float = 0.0) -> float:
        frames = request_bytes + reply_bytes + 2 * (HEADER_BYTES + CRC_BYTES) + CRC_BYTES  # + the request's header CRC
        return self.transport.latency + TRANSFER_MARGIN * frames * self.transport.byte_time + processing

    def _drain(self, quiet: float | None = None) -> None:
        """Discard bytes until the link has been quiet for `quiet` seconds (default: its latency)."""
        while self.transport.read(4096, self.transport.latency if quiet is None else quiet):
            pass

    def resync(self) -> None:
        """Start clean on a link a previous session may have left mid-request: stay silent until
        the device has abandoned any partial request (and its reply is discarded)."""
        self._drain(self.transport.latency + 2 * wire.FRAME_GAP_BYTE_TIMES * self.transport.byte_time)

    def _fail(self, error: ProtocolError) -> None:
        self._drain()
        raise error

    def _receive(self, command: Command, count: int, timeout: float, what: str) -> bytes:
        data = self.transport.read(count, timeout)
        if len(data) < count:
            self._fail(ReplyTimeout(f"{command.name}: {what}: got {len(data)} of {count} bytes within {timeout:.3g} s"))
        return data

    def exchange(self, command: Command, payload: bytes = b"", reply_bytes: int | None = None,
                 processing: float = 0.0) -> bytes:
        """Send one request and return its reply's payload (of `reply_bytes`, by default the
        command's fixed reply length)."""
        expected = wire.REPLY_BYTES[command] if reply_bytes is None else reply_bytes
        self.transport.write(wire.request(command, payload))
        timeout = self._reply_timeout(len(payload), expected, processing)
        header = self._receive(command, HEADER_BYTES, timeout, "no reply header")
        status, length = header[1], int.from_bytes(header[2:4], "little")
        if header[0] != REPLY_SYNC:
            self._fail(ReplyFramingError(f"{command.name}: reply starts with {header[0]:#04x}, not the sync byte "
                                         f"{REPLY_SYNC:#04x}"))
        if length != (expected if status == Status.OK else 0):
            self._fail(ReplyFramingError(f"{command.name}: wrong reply length {length} for status {status:#04x}; "
                                         f"expected {expected if status == Status.OK else 0}"))
        rest = self._receive(command, length + CRC_BYTES, timeout, "truncated reply")
        body, crc = header[1:] + rest[:length], int.from_bytes(rest[length:], "big")
        if wire.FRAME_CRC.compute(body) != crc:
            self._fail(ReplyChecksumError(f"{command.name}: reply CRC {crc:#06x} does not match its bytes "
                                          f"({wire.FRAME_CRC.compute(body):#06x})"))
        if status != Status.OK:
            raise wire.DeviceError(command, status)
        return rest[:length]

    # ---- commands
    def identify(self) -> DeviceInfo:
        """The device's description; an error unless it speaks this protocol version."""
        info = DeviceInfo.unpack(self.exchange(Command.IDENTIFY))
        if info.magic != MAGIC or info.version != VERSION:
            raise DeviceMismatch(f"not a hwgen SoC of protocol version {VERSION}: magic {info.magic!r}, "
                                 f"version {info.version}")
        self._info = info
        return info

    @property
    def info(self) -> DeviceInfo:
        return self._info or self.identify()

    def _check_span(self, command: Command, address: object, count: object, minimum: int = 1) -> None:
        """Refuse arguments the wire format cannot carry (u32 addresses and ends), naming them; the
        device refuses what its memory does not hold (OUT_OF_RANGE)."""
        if not all(isinstance(v, Integral) and not isinstance(v, bool) for v in (address, count)):
            raise InputError(f"{command.name}: address {address!r} and length {count!r} must be integers")
        if address < 0 or count < minimum or address + count > ADDRESS_SPAN:
            raise InputError(f"{command.name}: {count} byte(s) at address {address}: allowed: at least {minimum} "
                             f"byte(s) at addresses 0..{ADDRESS_SPAN - 1}")

    @staticmethod
    def _data(command: Command, data: object) -> bytes:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InputError(f"{command.name}: data of type {type(data).__name__}; expected bytes")
        return bytes(data)

    def read(self, address: int, count: int) -> bytes:
        """`count` bytes of main memory from `address`."""
        self._check_span(Command.READ, address, count)
        data = bytearray()
        for offset in range(0, count, self.info.max_data):
            size = min(self.info.max_data, count - offset)
            data += self.exchange(Command.READ, wire.READ_REQUEST.pack(address + offset, size), size)
        return bytes(data)

    def write(self, address: int, data: bytes) -> None:
        """Write `data` into main memory at `address`."""
        data = self._data(Command.WRITE, data)
        self._check_span(Command.WRITE, address, len(data), minimum=0)
        for offset in range(0, len(data), self.info.max_data):
            chunk = data[offset:offset + self.info.max_data]
            self.exchange(Command.WRITE, wire.WRITE_ADDRESS.pack(address + offset) + chunk)

    def write_program(self, address: int, data: bytes) -> None:
        """Write `data` (an even number of bytes) into the program memory at (even) `address`."""
        data = self._data(Command.PROGRAM, data)
        if not isinstance(address, Integral) or address < 0 or address % 2 or len(data) % 2 or address + len(data) > ADDRESS_SPAN:
            raise InputError(f"PROGRAM: {len(data)} byte(s) at address {address!r}: allowed: an even number of bytes "
                             f"at an even address from 0")
        for offset in range(0, len(data), self.info.max_data):
            chunk = data[offset:offset + self.info.max_data]
            self.exchange(Command.PROGRAM, wire.WRITE_ADDRESS.pack(address + offset) + chunk)

    def checksum(self, address: int, count: int) -> int:
        """CRC-32 (as `zlib.crc32`) of `count` bytes of main memory from `address` (both multiples
        of `CHECKSUM_ALIGNMENT`)."""
        self._check_span(Command.CHECKSUM, address, count)
        if address % wire.CHECKSUM_ALIGNMENT or count % wire.CHECKSUM_ALIGNMENT:
            raise InputError(f"CHECKSUM: {count} byte(s) at address {address}: both must be multiples of "
                             f"{wire.CHECKSUM_ALIGNMENT}")
        payload = wire.CHECKSUM_REQUEST.pack(address, count)
        reply = self.exchange(Command.CHECKSUM, payload, processing=count * wire.CHECKSUM_CYCLES_PER_BYTE / self.info.clk_hz)
        return wire.CHECKSUM_REPLY.unpack(reply)[0]

    def status(self) -> tuple[bool, bool]:
        """(busy, done) of the accelerator."""
        flags = wire.STATUS_REPLY.unpack(self.exchange(Command.STATUS))[0]
        return bool(flags & wire.STATUS_BUSY), bool(flags & wire.STATUS_DONE)

    def start(self) -> None:
        self.exchange(Command.START)

    def counters(self) -> dict[str, int]:
        return dict(zip(COUNTER_NAMES, wire.COUNTERS_REPLY.unpack(self.exchange(Command.COUNTERS)), strict=True))

    def wait(self) -> None:
        """Poll until the accelerator is done; `RunTimeout` after `run_timeout` seconds."""
        deadline = self.transport.clock() + self.run_timeout
        while True:
            busy, done = self.status()
            if done and not busy:
                return
            if self.transport.clock() > deadline:
                raise RunTimeout(f"the accelerator did not finish within {self.run_timeout} s")

    # ---- networks
    def _memory_base(self, compiled: CompiledNetwork) -> int:
        """The image address at the device memory's address 0: past the constants if they are in flash."""
        return compiled.memory.constant_bytes if self.flash_constants else 0

    def check_build(self, compiled: SocLoad) -> None:
        """An error unless the device runs `compiled`'s program (a pipeline's programs) on its
        configuration (and, from flash, with its constants) and has the memory for its image."""
        info = self.info
        if isinstance(compiled, PipelineLayout):
            name, expected = compiled.network_name, wire.pipeline_build_id(compiled)
            what = f"as {len(compiled.stages)} instances over {compiled.images} images "
            needed = compiled.size
        else:
            constants = compiled.image[:compiled.memory.constant_bytes].tobytes() if self.flash_constants else None
            name, expected = compiled.network.name, wire.build_id(compiled.program, compiled.config, constants)
            what = "and constants " if self.flash_constants else ""
            needed = compiled.memory.size - self._memory_base(compiled)
        if info.build_id != expected:
            raise DeviceMismatch(f"the device runs build {info.build_id:#010x}, not {name!r} "
                                 f"compiled for {compiled.config.name!r} ({expected:#010x}); build the bitstream "
                                 f"{what}for this model and configuration")
        if info.memory_bytes < needed:
            raise DeviceMismatch(f"the device has {info.memory_bytes} bytes of memory; {name!r} needs {needed}")

    def _constant_regions(self, compiled: SocLoad) -> list[tuple[int, np.ndarray]]:
        """(address, bytes) of each network's constants in main memory: none from flash."""
        if isinstance(compiled, PipelineLayout):
            return [(stage.base, stage.compilation.compiled.image[:stage.compilation.compiled.memory.constant_bytes])
                    for stage in compiled.stages]
        return [] if self.flash_constants else [(0, compiled.image[:compiled.memory.constant_bytes])]

    def image_loaded(self, compiled: SocLoad) -> bool:
        """Whether the device memory already holds the constants (by CRC-32); constants in flash
        are the build's (`check_build`)."""
        for address, constants in self._constant_regions(compiled):
            if len(constants) and (address % wire.CHECKSUM_ALIGNMENT or
                                   self.checksum(address, len(constants)) != wire.REGION_CRC.compute(constants.tobytes())):
                return False
        return True

    def load(self, compiled: SocLoad, *, force: bool = False) -> bool:
        """Make the device ready for `compiled`: check its program, write the instructions into
        a writable (SPRAM) program memory with its descriptor table (always: it cannot be read
        back), and write the memory
        image unless the constants are already there (a bitstream carries them in block RAM, the
        flash in `flash_constants`: then nothing is written). Returns whether the image was
        written; an error if it does not read back."""
        self.check_build(compiled)
        if compiled.config.template.program_memory == ProgramMemory.SPRAM:
            for start, halfwords in program_regions(compiled.program, compiled.config):
                self.write_program(2 * start, np.array(halfwords, dtype="<u2").tobytes())
        if self.flash_constants or (not force and self.image_loaded(compiled)):
            return False
        if isinstance(compiled, PipelineLayout):  # the instances' images; the slots need nothing
            last = compiled.stages[-1]
            self.write(0, compiled.image()[:last.base + len(last.compilation.compiled.image)].tobytes())
        else:
            self.write(0, compiled.image.tobytes())
        if not self.image_loaded(compiled):
            raise ProtocolError("the memory image does not read back after loading (CRC-32 mismatch)")
        return True

    def write_input(self, compiled: CompiledNetwork, x: np.ndarray) -> None:
        """Place the int8 `(C, H, W)` input `x` where `compiled` reads it."""
        net = compiled.network
        if not isinstance(x, np.ndarray) or x.dtype != np.int8 or tuple(x.shape) != tuple(net.input_shape):
            raise InputError(f"input {getattr(x, 'dtype', type(x).__name__)} {getattr(x, 'shape', '')}: expected int8 of shape {net.input_shape}")
        address = compiled.memory.tensors[net.input_name] - self._memory_base(compiled)
        self.write(address, activation_image(x, compiled.config.pe.simd).tobytes())

    def read_outputs(self, compiled: CompiledNetwork) -> dict[str, np.ndarray]:
        """The network's int8 `(C, H, W)` outputs after a run."""
        shapes, simd = compiled.network.tensor_shapes(), compiled.config.pe.simd
        outputs = {}
        for name in compiled.network.outputs:
            address = compiled.memory.tensors[name] - self._memory_base(compiled)
            data = self.read(address, tensor_bytes(shapes[name], simd))
            outputs[name] = activation_from_image(np.frombuffer(data, dtype=np.uint8), shapes[name], simd)
        return outputs

    def stream(self, layout: PipelineLayout, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], dict[str, int]]:
        """Run the int8 `(C, H, W)` inputs (the layout's image count) through a device's pipelined
        instances: each into its input slot, one START, then each output from its slot. Returns
        the outputs and the counters (`cycles`: the whole stream)."""
        first, last = layout.stages[0].compilation.network, layout.stages[-1].compilation.network
        simd = layout.config.pe.simd
        if len(inputs) != layout.images:
            raise InputError(f"{len(inputs)} inputs for a device built for a stream of {layout.images} images; "
                             f"allowed: exactly {layout.images}")
        for k, x in enumerate(inputs):
            if not isinstance(x, np.ndarray) or x.dtype != np.int8 or tuple(x.shape) != tuple(first.input_shape):
                raise InputError(f"input {k}: {getattr(x, 'dtype', type(x).__name__)} {getattr(x, 'shape', '')}: "
                                 f"expected int8 of shape {first.input_shape}")
            self.write(layout.input_address(k), activation_image(x, simd).tobytes())
        self.start()
        self.wait()
        shape = last.tensor_shapes()[last.outputs[0]]
        outputs = [activation_from_image(np.frombuffer(self.read(layout.output_address(k), tensor_bytes(shape, simd)),
                                                       dtype=np.uint8), shape, simd) for k in range(layout.images)]
        return outputs, self.counters()

    def infer(self, compiled: CompiledNetwork, x: np.ndarray) -> Inference:
        """Run the int8 `(C, H, W)` input `x` on a device loaded with `compiled`."""
        self.write_input(compiled, x)
        self.start()
        self.wait()
        return Inference(self.read_outputs(compiled), self.counters())
