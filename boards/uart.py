"""A UART (8N1: one start bit, 8 data bits LSB first, one stop bit, no parity) at a fixed baud
rate given as a divisor: clock cycles per bit, `round(clk_hz / baud)`."""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from common.errors import ConfigError

MIN_DIVISOR = 4
FRAME_BITS = 10  # start + 8 data + stop


def baud_divisor(clk_hz: int, baud: int) -> int:
    """Clock cycles per bit; an error if the clock is too slow for the baud rate or the rounding
    puts the rate off by more than 2 % (a receiver samples mid-bit, so 10 bits tolerate ~5 %)."""
    if baud <= 0 or clk_hz <= 0:
        raise ConfigError(f"baud {baud} and clock {clk_hz} Hz must be positive")
    divisor = round(clk_hz / baud)
    if divisor < MIN_DIVISOR:
        raise ConfigError(f"baud {baud} is too fast for a {clk_hz} Hz clock: the UART needs at least "
                          f"{MIN_DIVISOR} clock cycles per bit (baud <= {clk_hz // MIN_DIVISOR})")
    if abs(clk_hz / divisor - baud) > 0.02 * baud:
        raise ConfigError(f"baud {baud} cannot be made from a {clk_hz} Hz clock within 2 % "
                          f"(nearest: {clk_hz / divisor:.0f} baud with divisor {divisor})")
    return divisor


class UartTx(wiring.Component):
    """Sends each byte accepted from the `data` stream on the `tx` pin (idle high)."""

    def __init__(self, divisor: int):
        assert divisor >= MIN_DIVISOR
        self.divisor = divisor
        super().__init__({"data": In(stream.Signature(8)), "tx": Out(1, init=1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        shift = Signal(FRAME_BITS)            # bits still to send, LSB next
        bits_left = Signal(range(FRAME_BITS + 1))
        timer = Signal(range(self.divisor))
        m.d.comb += self.data.ready.eq((bits_left == 0) & (timer == 0))
        with m.If(self.data.valid & self.data.ready):
            frame = Cat(Const(0, 1), self.data.payload, Const(1, 1))
            m.d.sync += [self.tx.eq(0), shift.eq(frame >> 1), bits_left.eq(FRAME_BITS - 1), timer.eq(self.divisor - 1)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Elif(bits_left != 0):
            m.d.sync += [self.tx.eq(shift[0]), shift.eq(shift >> 1), bits_left.eq(bits_left - 1),
                         timer.eq(self.divisor - 1)]
        return m


class UartRx(wiring.Component):
    """Receives bytes from the `rx` pin into the `data` stream.

    Bits shift straight into the stream's payload: the first data bit of a byte arriving while
    the previous one is still unaccepted drops that one and pulses `error` (overrun), as does a
    missing stop bit (framing error, the byte is dropped).
    """

    def __init__(self, divisor: int):
        assert divisor >= MIN_DIVISOR
        self.divisor = divisor
        super().__init__({"rx": In(1, init=1), "data": Out(stream.Signature(8)), "error": Out(1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        line = Signal(init=1)
        m.submodules.sync = FFSynchronizer(self.rx, line, init=1)
        timer = Signal(range(self.divisor))
        shift = self.data.payload
        bit = Signal(range(FRAME_BITS))  # 0: start bit, 1..8 data, 9 stop
        with m.If(self.data.valid & self.data.ready):
            m.d.sync += self.data.valid.eq(0)
        m.d.sync += self.error.eq(0)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    m.d.sync += [timer.eq(self.divisor // 2 - 1), bit.eq(0)]
                    m.next = "FRAME"
            with m.State("FRAME"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():  # mid-bit
                    m.d.sync += [timer.eq(self.divisor - 1), bit.eq(bit + 1)]
                    with m.If(bit == 0):
                        with m.If(line):
                            m.next = "IDLE"  # a glitch, not a start bit
                    with m.Elif(bit < FRAME_BITS - 1):
                        m.d.sync += [shift.eq(Cat(shift[1:], line)), self.data.valid.eq(0),
                                     self.error.eq(self.data.valid & ~self.data.ready)]
                    with m.Else():
                        with m.If(line):
                            m.d.sync += self.data.valid.eq(1)
                        with m.Else():
                            m.d.sync += self.error.eq(1)
                        m.next = "STOP"
            with m.State("STOP"):  # wait for the line to return high before the next start bit
                with m.If(line):
                    m.next = "IDLE"
        return m
