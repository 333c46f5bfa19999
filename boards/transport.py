"""Byte transports for the host runtime: a serial port (pyserial) and the SoC running in the
Amaranth simulator with its UART modelled at the pin level."""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Protocol

import serial
from amaranth.sim import Simulator

from boards.soc import SocCore
from boards.spiflash.memory import FLASH_OFFSET
from boards.uart import FRAME_BITS, MIN_DIVISOR
from planner.compile.network import CompiledNetwork
from common.errors import HwgenError
from sim.spiflash.adapter import spiflash_testbench
from sim.spiflash.chips import SpiFlashChip
from sim.spiflash.device import SpiFlashDevice


class TransportError(HwgenError):
    """The link cannot be opened or used."""


class Transport(Protocol):
    """What the runtime needs from a link. Times are seconds of the transport's own clock:
    wall-clock time for a serial port, simulated time for the simulator."""

    byte_time: float
    """Seconds one byte takes on the line."""
    latency: float
    """Seconds the link and device may add to a reply beyond its transfer time."""

    def write(self, data: bytes) -> None:
        """Send `data`."""

    def read(self, count: int, timeout: float) -> bytes:
        """Up to `count` bytes; fewer if `timeout` seconds pass first."""

    def clock(self) -> float:
        """Seconds since an arbitrary origin."""

    def close(self) -> None:
        """Release the link."""


class SerialTransport:
    """A serial port (`/dev/ttyUSB1`, `COM3`, ...) at `baud`, 8N1."""

    latency = 0.1  # USB serial adapters hold received bytes for up to 16 ms

    def __init__(self, port: str, baud: int = 115200):
        try:
            self._serial = serial.Serial(port, baud, bytesize=8, parity="N", stopbits=1, timeout=0)
        except (serial.SerialException, ValueError, OSError) as error:
            raise TransportError(f"cannot open serial port {port!r}: {error}") from None
        self._serial.reset_input_buffer()
        self.byte_time = FRAME_BITS / baud

    def write(self, data: bytes) -> None:
        self._serial.write(data)
        self._serial.flush()

    def read(self, count: int, timeout: float) -> bytes:
        self._serial.timeout = max(timeout, 0.0)
        return self._serial.read(count)

    def clock(self) -> float:
        return time.monotonic()

    def close(self) -> None:
        self._serial.close()


class SimulatedTransport:
    """`soc` in the Amaranth simulator: the host side drives `rx` and samples `tx` bit by bit at
    the SoC's baud divisor. Time is simulated (cycles / `soc.clk_hz`), so a small `clk_hz` (a
    divisor of 4, say) keeps simulations short. `leds` holds the SoC's LED outputs. `processes`
    run beside it (e.g. `sim.sdram.adapter.sdram_process`, the chip on an SDRAM SoC's `sdram`),
    and background `testbenches` (e.g. `sim.spiflash.adapter.spiflash_testbench`)."""

    LATENCY_BYTES = 32  # covers the bridge copying a whole WRITE into memory

    def __init__(self, soc: SocCore, processes: Iterable[Callable] = (), testbenches: Iterable[Callable] = ()):
        self.soc = soc
        self.cycles = 0
        self._period = 1 / soc.clk_hz
        self.byte_time = FRAME_BITS * soc.divisor * self._period
        self.latency = self.LATENCY_BYTES * self.byte_time
        self.leds = 0
        self.flash_device: SpiFlashDevice | None = None
        """The flash model on the SoC's `flash` pins (`for_network` with a flash)."""
        self.progress: Callable[[int], None] | None = None
        """Called with the cycles simulated so far as the simulation advances."""
        self._to_device: deque[int] = deque()
        self._from_device = bytearray()
        self._sim = Simulator(soc)
        self._sim.add_clock(self._period)
        self._sim.add_testbench(self._drive_rx, background=True)
        self._sim.add_testbench(self._sample_tx, background=True)
        self._sim.add_testbench(self._watch_leds, background=True)
        for process in processes:
            self._sim.add_process(process)
        for testbench in testbenches:
            self._sim.add_testbench(testbench, background=True)

    @classmethod
    def for_network(cls, compiled: CompiledNetwork, memory_bytes: int, baud: int = 115200,
                    flash: SpiFlashChip | None = None) -> SimulatedTransport:
        """The SoC for `compiled` at the fastest clock its UART allows at `baud`; with `flash`,
        the constants in that chip's datasheet model (`sim.spiflash`), preloaded at
        `FLASH_OFFSET` as `hwgen build` writes them and as the iCE40 leaves it: powered down,
        QE as the part ships."""
        clk_hz = MIN_DIVISOR * baud
        soc = SocCore(compiled.config, compiled, memory_bytes, clk_hz, baud, flash=flash)
        if flash is None:
            return cls(soc)
        device = SpiFlashDevice(flash, clock_mhz=clk_hz / 1e6)
        device.preload(FLASH_OFFSET, compiled.image[:compiled.memory.constant_bytes].tobytes())
        transport = cls(soc, testbenches=[spiflash_testbench(device, soc.flash)])
        transport.flash_device = device
        return transport

    @staticmethod
    async def _wait(ctx, cycles: int) -> None:
        for _ in range(cycles):  # (not `tick().repeat()`: it cannot be closed mid-wait at exit)
            await ctx.tick()

    async def _drive_rx(self, ctx) -> None:
        bit_time = self.soc.divisor
        while True:
            if not self._to_device:
                await self._wait(ctx, bit_time)
                continue
            byte = self._to_device.popleft()
            for bit in (0, *((byte >> i) & 1 for i in range(8)), 1):
                ctx.set(self.soc.rx, bit)
                await self._wait(ctx, bit_time)

    async def _sample_tx(self, ctx) -> None:
        bit_time = self.soc.divisor
        while True:
            await ctx.negedge(self.soc.tx)
            await self._wait(ctx, bit_time // 2)  # the middle of the start bit
            byte = 0
            for i in range(8):
                await self._wait(ctx, bit_time)
                byte |= ctx.get(self.soc.tx) << i
            await self._wait(ctx, bit_time)  # the middle of the stop bit
            if ctx.get(self.soc.tx):
                self._from_device.append(byte)  # (a framing error loses the byte, as a host UART would)

    async def _watch_leds(self, ctx) -> None:
        while True:
            await ctx.changed(self.soc.leds)
            self.leds = ctx.get(self.soc.leds)  # settled: the trigger's own value may be a transient

    def _run(self, cycles: int) -> None:
        # Deadlines a quarter period after a falling edge lie between simulator events, so the
        # simulator (which stops at the first event past a deadline) never runs past the next one.
        self.cycles += cycles
        self._sim.run_until((self.cycles + 0.25) * self._period)
        if self.progress is not None:
            self.progress(self.cycles)

    def write(self, data: bytes) -> None:
        self._to_device.extend(data)

    def read(self, count: int, timeout: float) -> bytes:
        byte_cycles = FRAME_BITS * self.soc.divisor
        deadline = self.cycles + int(timeout * self.soc.clk_hz)
        while len(self._from_device) < count and self.cycles < deadline:
            self._run(min(byte_cycles, deadline - self.cycles))
        data = bytes(self._from_device[:count])
        del self._from_device[:count]
        return data

    def clock(self) -> float:
        return self.cycles * self._period

    def close(self) -> None:
        self._to_device.clear()
