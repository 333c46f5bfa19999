"""The host link's cases, called in-process by the runner: `Runtime` misuse and corrupted frames.

`Device` is a reference model of the wire format written from `docs/host_protocol.md` (not from
`boards.bridge`): it answers well-formed requests over a memory of `MEMORY` bytes.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

MEMORY = 1 << 16
CRC_POLY, CRC_INIT = 0x1021, 0xFFFF


def crc16(data: bytes) -> int:
    """CRC-16/IBM-3740 (CCITT-FALSE), bit by bit."""
    crc = CRC_INIT
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ CRC_POLY) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def frame(sync: int, code: int, payload: bytes) -> bytes:
    body = bytes([code]) + struct.pack("<H", len(payload)) + payload
    return bytes([sync]) + body + crc16(body).to_bytes(2, "big")


class Device:
    """Answers each request frame written to it; `tamper` may change a reply before it is read."""

    latency = 0.0
    byte_time = 1e-6

    def __init__(self, tamper=None):
        self.memory = bytearray(MEMORY)
        self.pending = b""
        self.tamper = tamper or (lambda reply: reply)

    def clock(self) -> float:
        return 0.0

    def close(self) -> None:
        pass

    def read(self, count: int, timeout: float) -> bytes:
        data, self.pending = self.pending[:count], self.pending[count:]
        return data

    def write(self, data: bytes) -> None:
        assert data[0] == 0xA5 and crc16(data[1:6]) == 0 and crc16(data[1:]) == 0, "the host sent a bad frame"
        command, payload = data[1], data[6:-2]
        if command in (0x05, 0x06, 0x07):  # READ, WRITE, CHECKSUM: OUT_OF_RANGE beyond the memory
            address, length = struct.unpack("<I", payload[:4])[0], len(payload) - 4
            if command != 0x06:
                length = int.from_bytes(payload[4:], "little")
            if address + length > MEMORY:
                self.pending += self.tamper(frame(0x5A, 0x04, b""))
                return
        self.pending += self.tamper(frame(0x5A, 0, self.answer(command, payload)))

    def answer(self, command: int, payload: bytes) -> bytes:
        if command == 0x01:
            return struct.pack("<4sBIHII", b"HWGN", 1, MEMORY, 256, 50_000_000, 0)
        if command == 0x02:
            return bytes([2])
        if command == 0x05:
            address, length = struct.unpack("<IH", payload)
            return bytes(self.memory[address:address + length])
        if command == 0x06:
            address = struct.unpack("<I", payload[:4])[0]
            self.memory[address:address + len(payload) - 4] = payload[4:]
            return b""
        if command == 0x07:
            address, length = struct.unpack("<II", payload)
            return struct.pack("<I", zlib.crc32(self.memory[address:address + length]))
        if command == 0x04:
            from boards.protocol import COUNTERS_REPLY

            return bytes(COUNTERS_REPLY.size)
        return b""


def _runtime(device: Device):
    from boards.runtime import Runtime

    return Runtime(device, run_timeout=0.01)


def runtime_call(method: str, *args) -> None:
    """Call `Runtime.<method>(*args)` on a healthy device; strings stand for bytes ("str:" a str)."""
    values = [a[4:] if isinstance(a, str) and a.startswith("str:") else a.encode() if isinstance(a, str) else a for a in args]
    getattr(_runtime(Device()), method)(*values)


COMMANDS = {"IDENTIFY": ("identify", ()), "STATUS": ("status", ()), "READ": ("read", (64, 16)),
            "CHECKSUM": ("checksum", (0, 64)), "COUNTERS": ("counters", ())}


def _corruptions(reply: bytes, rng: np.random.Generator) -> list[bytes]:
    """Every single-bit error, bursts of up to 16 bits, length changes, truncations and a bad sync."""
    out = []
    for bit in range(8 * len(reply)):
        corrupt = bytearray(reply)
        corrupt[bit // 8] ^= 1 << (bit % 8)
        out.append(bytes(corrupt))
    for _ in range(64):
        start, width = int(rng.integers(0, 8 * len(reply) - 1)), int(rng.integers(2, 17))
        value = int.from_bytes(reply, "big") ^ ((int(rng.integers(1, 1 << width)) | 1 | 1 << (width - 1)) << max(0, 8 * len(reply) - start - width))
        out.append(value.to_bytes(len(reply), "big"))
    for length in (0, 1, len(reply) - 7, len(reply) - 5, len(reply) + 1, 0xFFFF):
        out.append(reply[:2] + struct.pack("<H", max(0, length)) + reply[4:])
    out += [reply[:cut] for cut in range(len(reply))]
    return [c for c in out if c != reply]


def corrupt_reply(command: str, seed: int) -> None:
    """Every corruption of `command`'s reply (the share `seed` of 8) raises a ProtocolError; the
    last one's is raised again (the case expects an error naming the command)."""
    from boards.protocol import ProtocolError

    method, args = COMMANDS[command]
    last = None
    for corrupt in _corruptions(_last_reply(method, args), np.random.default_rng(seed))[seed::8]:
        device = Device()
        runtime = _runtime(device)
        runtime.info  # the device is identified before the corrupted reply
        device.tamper = lambda _reply, corrupt=corrupt: corrupt
        try:
            getattr(runtime, method)(*args)
        except ProtocolError as error:
            last = error
            continue
        raise AssertionError(f"{command}: a corrupted reply {corrupt.hex()} passed")
    raise last


def _last_reply(method: str, args: tuple) -> bytes:
    """The clean reply a healthy device gives to the last request of `method(*args)`."""
    device = Device()
    replies = []
    original = device.tamper
    device.tamper = lambda reply: replies.append(reply) or original(reply)
    getattr(_runtime(device), method)(*args)
    return replies[-1]


def request_frames(command: str) -> None:
    """The host's requests decode in the reference model: command, length and payload under the CRC."""
    method, args = COMMANDS[command]
    sent = []
    device = Device()
    original = device.write
    device.write = lambda data: sent.append(data) or original(data)
    getattr(_runtime(device), method)(*args)
    for data in sent:
        length = struct.unpack("<H", data[2:4])[0]
        assert len(data) == 6 + length + 2 and crc16(data[1:4]) == int.from_bytes(data[4:6], "big")
        assert crc16(data[1:-2]) == int.from_bytes(data[-2:], "big")
        for bit in range(8, 8 * 6):  # every single-bit error in the header fails the header CRC
            corrupt = bytearray(data)
            corrupt[bit // 8] ^= 1 << (bit % 8)
            assert crc16(bytes(corrupt[1:6])) != 0
