"""Shared pieces of the SoC and runtime tests: a tiny network on a tiny configuration (an 8-bit
bus, so memory words hold two beats), simulated SoCs, and frames built with the standard
library's CRC routines (an independent check of `boards.protocol`)."""
from __future__ import annotations

import binascii
import struct
from functools import cache

import numpy as np
import onnx

from boards.transport import SimulatedTransport
from hwgen.config import config_from_dict
from onnx_factory import GraphBuilder
from sim.golden.calibration import quantize_network
from planner.compile.network import CompiledNetwork
from planner.frontend import load_network
from planner.ir import Network
from planner.pipeline import plan_and_compile

SIM_BAUD = 115200
SIM_CLK_HZ = 4 * SIM_BAUD  # four clock cycles per bit: the fastest the UART allows
TINY_MEMORY = 1024
TINY = config_from_dict({
    "name": "tiny", "clock_mhz": 50, "pe": {"rows": 2, "cols": 2, "simd": 2},
    "widths": {"activation": 8, "weight": 8, "accumulator": 32},
    "buffers": {"input_bytes": 512, "weight_bytes": 512, "output_bytes": 1024},
    "dram": {"bus_width_bits": 8, "bandwidth_bytes_per_cycle": 1, "latency_cycles": 2, "burst_beats": 4},
})
TINY_16 = config_from_dict({**TINY.to_dict(), "name": "tiny-16",
                            "dram": {**TINY.to_dict()["dram"], "bus_width_bits": 16, "bandwidth_bytes_per_cycle": 2}})
"""TINY with the 16-bit memory port the SDRAM and DDR3 main memories need."""


COMPACT = {"loops_and_registers": False, "queue_fields": "used", "program_memory": "spram",
           "segment_fifos": "registers", "param_bank_channels": 16, "merged_banks": ["input", "param"],
           "counters": "cycles"}
TINY_COMPACT = config_from_dict({**TINY.to_dict(), "name": "tiny-compact", "template": COMPACT})
"""TINY with the compact template of the iCEBreaker configuration (host-loaded SPRAM program, the
cycle counter alone)."""

TINY_INPUT = (2, 3, 3)


def tiny_model() -> onnx.ModelProto:
    """Conv 3x3 (2 -> 3 channels, 3x3 pixels, so the 2-column array has an edge tile) + ReLU."""
    g = GraphBuilder((1, *TINY_INPUT), seed=1)
    return g.model(g.node("Relu", [g.conv(g.input_name, 2, 3, k=3, pad=1)]))


def tiny_calibration() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((4, *TINY_INPUT)).astype(np.float32)


@cache
def tiny_network() -> Network:
    """The tiny model quantized from `tiny_calibration()`."""
    return quantize_network(load_network(tiny_model()), tiny_calibration())


@cache
def tiny_compiled(config=TINY) -> CompiledNetwork:
    return plan_and_compile(tiny_network(), config).compiled


def tiny_input(seed: int) -> np.ndarray:
    net = tiny_network()
    return net.input_quant.quantize(np.random.default_rng(seed).standard_normal(net.input_shape).astype(np.float32))


def simulated(compiled: CompiledNetwork, memory_bytes: int = TINY_MEMORY) -> SimulatedTransport:
    transport = SimulatedTransport.for_network(compiled, memory_bytes, SIM_BAUD)
    assert transport.soc.clk_hz == SIM_CLK_HZ
    return transport


def crc16(data: bytes) -> int:
    """CRC-16/IBM-3740 (CCITT, init 0xFFFF) by the standard library."""
    return binascii.crc_hqx(data, 0xFFFF)


def frame(sync: int, code: int, payload: bytes = b"") -> bytes:
    body = bytes([code]) + struct.pack("<H", len(payload)) + payload
    return bytes([sync]) + body + struct.pack(">H", crc16(body))


def request(command: int, payload: bytes = b"") -> bytes:
    """A request: its header (command, length) carries its own CRC before the payload."""
    header = bytes([command]) + struct.pack("<H", len(payload))
    body = header + struct.pack(">H", crc16(header)) + payload
    return bytes([0xA5]) + body + struct.pack(">H", crc16(body))


def reply(status: int, payload: bytes = b"") -> bytes:
    return frame(0x5A, status, payload)
