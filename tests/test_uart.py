"""The UART against the 8N1 line format written out bit by bit in the tests: the transmitter's
exact waveform, the receiver under clock mismatch, glitches, framing errors and overruns, and
the baud divisor rules."""
from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from boards.uart import UartRx, UartTx, baud_divisor
from common.errors import ConfigError


def line_bits(byte: int) -> list[int]:
    """8N1: a low start bit, the data bits least significant first, a high stop bit."""
    return [0] + [(byte >> i) & 1 for i in range(8)] + [1]


def run(dut, bench) -> None:
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("divisor", [4, 7])
def test_transmitter_waveform_is_exact_8n1_back_to_back(divisor):
    message = [0x00, 0xFF, 0xA5, 0x3C, 0x81]
    dut = UartTx(divisor)
    trace: list[int] = []

    async def bench(ctx):
        assert ctx.get(dut.tx) == 1  # idle high
        for byte in message:
            ctx.set(dut.data.valid, 1)
            ctx.set(dut.data.payload, byte)
            while True:
                ready = ctx.get(dut.data.ready)
                await ctx.tick()
                trace.append(ctx.get(dut.tx))
                if ready:
                    break
        ctx.set(dut.data.valid, 0)
        for _ in range(divisor * 12):
            await ctx.tick()
            trace.append(ctx.get(dut.tx))

    run(dut, bench)
    start = trace.index(0)
    expected = [bit for byte in message for bit in line_bits(byte) for _ in range(divisor)]
    assert trace[start:start + len(expected)] == expected
    assert all(trace[start + len(expected):])  # idle afterwards
    assert all(trace[:start])


def receive(divisor: int, waveform: list[int], ready: bool = True) -> tuple[list[int], int]:
    """Drive `waveform` (one level per clock cycle) into a receiver; the bytes it delivers and
    the number of `error` pulses."""
    dut = UartRx(divisor)
    got: list[int] = []
    errors = 0

    async def bench(ctx):
        nonlocal errors
        ctx.set(dut.data.ready, ready)
        for level in waveform + [1] * (4 * divisor):
            ctx.set(dut.rx, level)
            await ctx.tick()
            if ctx.get(dut.data.valid) and ready:
                got.append(ctx.get(dut.data.payload))
            errors += ctx.get(dut.error)
        if not ready and ctx.get(dut.data.valid):
            got.append(ctx.get(dut.data.payload))

    run(dut, bench)
    return got, errors


def waveform(message: list[int], bit_cycles: float, gap_bits: int = 0) -> list[int]:
    """The line levels per clock cycle when bits last `bit_cycles` (not an integer when the
    sender's clock differs from the receiver's)."""
    bits = [1] * 3
    for byte in message:
        bits += line_bits(byte) + [1] * gap_bits
    return [bits[int(cycle / bit_cycles)] for cycle in range(int(len(bits) * bit_cycles))]


@pytest.mark.parametrize("divisor, mismatch", [(4, 1.0), (8, 1.0), (16, 1.03), (16, 0.97), (10, 1.02)])
def test_receiver_decodes_bytes_under_clock_mismatch(divisor, mismatch):
    message = [int(v) for v in np.random.default_rng(divisor).integers(0, 256, 24)] + [0x00, 0xFF, 0x55]
    got, errors = receive(divisor, waveform(message, divisor * mismatch))
    assert got == message and errors == 0


def test_receiver_ignores_a_glitch_shorter_than_half_a_bit():
    divisor = 8
    glitch = [1] * 5 + [0] * 2 + [1] * 20
    got, errors = receive(divisor, glitch + waveform([0x42], divisor))
    assert got == [0x42] and errors == 0


def test_receiver_drops_a_byte_without_stop_bit_and_flags_it():
    divisor = 6
    broken = [level for bit in line_bits(0x5A)[:-1] + [0, 0, 1, 1] for level in [bit] * divisor]
    got, errors = receive(divisor, [1] * 10 + broken + waveform([0x33], divisor))
    assert got == [0x33] and errors == 1


def test_receiver_flags_an_overrun():
    got, errors = receive(5, waveform([0x11, 0x22], 5), ready=False)
    assert got == [0x22] and errors == 1


def test_baud_divisor_rounds_and_rejects_what_cannot_work():
    assert baud_divisor(12_000_000, 115200) == 104     # iCEBreaker: 12 MHz / 115200 = 104.2
    assert baud_divisor(25_000_000, 115200) == 217     # ULX3S: 25 MHz
    with pytest.raises(ConfigError, match="too fast"):
        baud_divisor(400_000, 115200)
    with pytest.raises(ConfigError, match="within 2 %"):
        baud_divisor(1_000_000, 230400)                # 4.34 -> 4 is 8.5 % off
    with pytest.raises(ConfigError, match="positive"):
        baud_divisor(12_000_000, 0)
