"""A read-only memory port on a SPI NOR flash (the iCEBreaker's W25Q128JV): the accelerator's read
bursts served from the flash, in Fast Read Quad I/O (EBh) or, as a fallback, Read Data (03h).

Interface (`SpiFlashReader`): `rd_req` and `rd_data` as in `hwgen.memory_port.MemoryPort` (a
request: `addr`, a byte address aligned to the bus word, and `beats`; the beats come in order,
with back-pressure), and `flash`, the chip's pins (`sim.spiflash.adapter.SPI_FLASH_PINS`). Flash
address = (`base` + `addr`) mod 2^24. A beat's bytes are little-endian: the byte at the lower
address in the low bits.

Policy: the SPI clock is the system clock divided by `divisor` (2: 13.5 MHz at 27 MHz), SPI mode
0. A read keeps /CS low after its last beat with the clock stopped, so a request at the next
address continues it without a new command; any other address raises /CS and starts a new read.
In quad mode the first read sends the instruction EBh, then every read its address and the mode
byte 20h (M5-4 = 10: continuous read mode), so later reads skip the instruction: 12 clocks
(address 6, mode 2, dummy 4) from /CS low to the data. Under back-pressure the clock stops before
the last bit of a beat that the output register cannot take yet.

Initialization: 8 clocks of 1 on every line (the datasheet's exit from continuous read mode, in
case a reset of the FPGA left the chip in it; otherwise the chip ignores FFh), RELEASE POWER-DOWN
(ABh; the iCE40 leaves the flash powered down after configuring itself) and tRES1; in quad mode
with `set_qe`, READ STATUS REGISTER-2 (35h) and, if QE is 0, WRITE ENABLE (06h), WRITE STATUS
REGISTER-2 (31h) with QE set, and READ STATUS REGISTER-1 (05h) until BUSY clears. `rd_req` is
taken from then on. In one-line phases IO2 (/WP) and IO3 (/HOLD) are driven high.

Registers: every pin and `rd_data` come from registers; `io_i` is captured at the end of each
low half of the SPI clock, the edge at which the clock rises.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from common.errors import ConfigError
from hwgen.memory_port import MemoryPort
from sim.spiflash.adapter import SPI_FLASH_PINS
from sim.spiflash.chips import W25Q128JV_IM, SpiFlashChip
from sim.spiflash.commands import (
    FAST_READ_QUAD_IO,
    READ_DATA,
    READ_STATUS_1,
    READ_STATUS_2,
    RELEASE_POWER_DOWN,
    WRITE_ENABLE,
    WRITE_STATUS_2,
)

CONTINUOUS_MODE = 0x20  # M5-4 = 10
QE = 0x02
ONE_LINE_OE = 0b1101  # IO0 out, IO1 the chip's, IO2 (/WP) and IO3 (/HOLD) high
QUAD_OE = 0b1111
TX_BITS = 32


class _Engine:
    """The SPI clock and the shift registers: a segment of `count` clocks sends `tx` (most
    significant bits first, one or four lines) and shifts `io_i` into `rx` at each rising edge."""

    def __init__(self, m: Module, pins, divisor: int, rx_bits: int, max_clocks: int):
        self.pins, self.half_cycles = pins, divisor // 2
        self.count = Signal(range(max_clocks + 1))
        self.half = Signal(range(self.half_cycles))
        self.tx = Signal(TX_BITS)
        self.quad = Signal()
        self.rx = Signal(rx_bits)
        self.stall = Signal()  # hold the clock low before the next rising edge
        running, edge = self.count != 0, self.half == 0
        self.rise = running & ~pins.clk & edge & ~self.stall
        self.fall = running & pins.clk & edge
        self.last = self.count == 1
        self.rx_next = Mux(self.quad, Cat(self.rx[4:], pins.io_i[:4]), Cat(self.rx[1:], pins.io_i[1]))
        with m.If(running & ~edge):
            m.d.sync += self.half.eq(self.half - 1)
        with m.If(self.rise):
            m.d.sync += [pins.clk.eq(1), self.rx.eq(self.rx_next), self.half.eq(self.half_cycles - 1)]
        with m.If(self.fall):
            shifted = Mux(self.quad, self.tx << 4, self.tx << 1)[:TX_BITS]
            m.d.sync += [pins.clk.eq(0), self.count.eq(self.count - 1), self.tx.eq(shifted),
                         pins.io_o.eq(self._present(shifted, self.quad)), self.half.eq(self.half_cycles - 1)]

    @staticmethod
    def _present(tx: Value, quad) -> Value:
        """The IO lines for the clock whose bits are at the top of `tx`."""
        return Mux(quad, tx[TX_BITS - 4:], Cat(tx[TX_BITS - 1], Const(0b110, 3)))

    def load(self, m: Module, value, bits: int, clocks, *, quad: bool = False, oe: int = ONE_LINE_OE) -> None:
        """Start a segment now (at the end of a clock or with /CS falling): `bits` bits of `value`."""
        value = Const(value, bits) if isinstance(value, int) else Value.cast(value)
        assert len(value) == bits
        tx = Cat(Const(0, TX_BITS - bits), value) if bits else Const(0, TX_BITS)
        m.d.sync += [self.tx.eq(tx), self.quad.eq(quad), self.count.eq(clocks), self.half.eq(self.half_cycles - 1),
                     self.pins.io_o.eq(self._present(tx, quad)), self.pins.io_oe.eq(oe)]


class SpiFlashReader(wiring.Component):
    """Serves `rd_req` bursts of `bus_bytes`-byte beats (1 or 2) from the flash `chip` at system
    clock `clock_mhz`: quad I/O (EBh) if `quad`, else Read Data (03h). Ports and policy: the
    module's docstring."""

    def __init__(self, bus_bytes: int = 1, burst_beats: int = 8, *, chip: SpiFlashChip = W25Q128JV_IM,
                 clock_mhz: float = 27.0, quad: bool = True, set_qe: bool = True, divisor: int = 2, base: int = 0,
                 addr_width: int = 32):
        try:
            _check(bus_bytes, chip, clock_mhz, quad, divisor)
        except ConfigError:
            self._MustUse__silence = True
            raise
        self.bus_bytes, self.burst_beats, self.chip, self.clock_mhz = bus_bytes, burst_beats, chip, clock_mhz
        self.quad, self.set_qe, self.divisor, self.base, self.addr_width = quad, set_qe, divisor, base, addr_width
        self.lines = 4 if quad else 1
        self.clocks_per_beat = 8 * bus_bytes // self.lines
        port = MemoryPort(bus_bytes, burst_beats, addr_width)
        super().__init__({"rd_req": In(port.members["rd_req"].signature),
                          "rd_data": Out(port.members["rd_data"].signature.flip()),
                          "flash": Out(SPI_FLASH_PINS)})

    def gap(self, ns: float) -> int:
        """The `gap` count that keeps /CS high at least `ns` (it stays high one cycle more)."""
        return max(self.chip.cycles(ns, self.clock_mhz) - 1, 0)

    def elaborate(self, platform) -> Module:
        m = Module()
        rx_bits = max(8, 8 * self.bus_bytes)
        engine = _Engine(m, self.flash, self.divisor, rx_bits, max(TX_BITS, self.burst_beats * self.clocks_per_beat))
        self._gap = Signal(range(self.gap(self.chip.t_res1_ns) + 1), init=self.gap(self.chip.t_res1_ns))
        self._beat_left = Signal(range(self.clocks_per_beat + 1))
        with m.If(self._gap != 0):
            m.d.sync += self._gap.eq(self._gap - 1)
        with m.If(self.rd_data.ready):  # a beat taken; `_beats` may put the next in this cycle
            m.d.sync += self.rd_data.valid.eq(0)
        with m.FSM():
            self._initialize(m, engine)
            self._set_quad_enable(m, engine)
            self._serve(m, engine)
        return m

    # ---- transactions ----------------------------------------------------------------------------

    def _begin(self, m: Module, engine: _Engine, state: str, value, bits: int, clocks, **segment) -> None:
        """/CS low with the first segment, once /CS has been high long enough."""
        with m.If(self._gap == 0):
            m.d.sync += self.flash.cs_n.eq(0)
            engine.load(m, value, bits, clocks, **segment)
            m.next = state

    def _then(self, m: Module, engine: _Engine, state: str, value, bits: int, clocks, **segment) -> None:
        """At the end of this segment's last clock, the next segment."""
        with m.If(engine.fall & engine.last):
            engine.load(m, value, bits, clocks, **segment)
            m.next = state

    def _end(self, m: Module, engine: _Engine, state: str, deselect_ns: float) -> Value:
        """At the end of this segment's last clock, /CS high for `deselect_ns`; the condition."""
        done = engine.fall & engine.last
        with m.If(done):
            m.d.sync += [self.flash.cs_n.eq(1), self.flash.io_oe.eq(0), self._gap.eq(self.gap(deselect_ns))]
            m.next = state
        return done

    def _command(self, m: Module, engine: _Engine, name: str, value, bits: int, after: str, deselect_ns: float):
        """States `name` (waiting for /CS) and `name`_SEND: a one-line instruction without data."""
        with m.State(name):
            self._begin(m, engine, f"{name}_SEND", value, bits, bits)
        with m.State(f"{name}_SEND"):
            self._end(m, engine, after, deselect_ns)

    def _status(self, m: Module, engine: _Engine, name: str, opcode: int) -> Value:
        """States `name`, `name`_SEND and `name`_DATA reading one status byte; the condition (in
        `name`_DATA) that it is in `engine.rx`'s top byte, bit order reversed."""
        with m.State(name):
            self._begin(m, engine, f"{name}_SEND", opcode, 8, 8)
        with m.State(f"{name}_SEND"):
            self._then(m, engine, f"{name}_DATA", 0, 0, 8)
        return engine.fall & engine.last

    # ---- phases ----------------------------------------------------------------------------------

    def _initialize(self, m: Module, engine: _Engine) -> None:
        """Mode-bit reset, RELEASE POWER-DOWN, tRES1."""
        chip = self.chip
        with m.State("MODE_RESET"):
            self._begin(m, engine, "MODE_RESET_SEND", 0xFFFF_FFFF, 32, 8, quad=True, oe=QUAD_OE)
        with m.State("MODE_RESET_SEND"):
            self._end(m, engine, "WAKE", chip.t_shsl_read_ns)
        self._command(m, engine, "WAKE", RELEASE_POWER_DOWN.opcode, 8, "QE_READ" if self.quad and self.set_qe
                      else "READY", chip.t_res1_ns)

    def _set_quad_enable(self, m: Module, engine: _Engine) -> None:
        """Read Status Register-2; if QE is 0, set it and poll BUSY."""
        chip, status = self.chip, Signal(8)
        rx_top = engine.rx[-8:]
        received = Cat(rx_top[7 - i] for i in range(8))
        done = self._status(m, engine, "QE_READ", READ_STATUS_2.opcode)
        with m.State("QE_READ_DATA"):
            self._end(m, engine, "QE_CHECK", chip.t_shsl_read_ns)
            with m.If(done):
                m.d.sync += status.eq(received)
        with m.State("QE_CHECK"):
            with m.If(status & QE):
                m.next = "READY"
            with m.Else():
                m.next = "WRITE_ENABLE"
        self._command(m, engine, "WRITE_ENABLE", WRITE_ENABLE.opcode, 8, "WRITE_QE", chip.t_shsl_write_ns)
        self._command(m, engine, "WRITE_QE", Cat(status | QE, Const(WRITE_STATUS_2.opcode, 8)), 16, "POLL",
                      chip.t_shsl_write_ns)
        done = self._status(m, engine, "POLL", READ_STATUS_1.opcode)
        with m.State("POLL_DATA"):
            self._end(m, engine, "POLL", chip.t_shsl_read_ns)
            with m.If(done & ~received[0]):
                m.next = "READY"

    def _serve(self, m: Module, engine: _Engine) -> None:
        """Take requests; continue the open read or start a new one; the data beats."""
        chip, request = self.chip, self.rd_req.payload
        address = Signal(24)
        beats = Signal.like(request.beats)
        offset = self._offset(request.addr)
        next_address = Signal(len(offset) + 1)  # where the open read goes on, as an `offset` (no wrap to 0)
        is_open, continuous, accepting = Signal(), Signal(), Signal()
        wanted = self._flash_address(offset)
        m.d.comb += self.rd_req.ready.eq(accepting)
        with m.State("READY"):  # after tRES1 (or the last status read's tSHSL)
            with m.If(self._gap == 0):
                m.d.sync += accepting.eq(1)
                m.next = "IDLE"
        with m.State("IDLE"):
            with m.If(self.rd_req.valid & accepting):
                m.d.sync += [accepting.eq(0), address.eq(wanted), beats.eq(request.beats),
                             next_address.eq(offset + request.beats * self.bus_bytes)]
                with m.If(is_open & (offset == next_address)):
                    self._data(m, engine, request.beats)
                with m.Else():
                    with m.If(is_open):  # else /CS is high already, `_gap` counting its delay
                        m.d.sync += [is_open.eq(0), self.flash.cs_n.eq(1), self.flash.io_oe.eq(0),
                                     self._gap.eq(self.gap(chip.t_shsl_read_ns))]
                    m.next = "ADDRESS"
        with m.State("ADDRESS"):
            if self.quad:
                with m.If(continuous):
                    self._begin(m, engine, "QUAD_ADDRESS", Cat(Const(CONTINUOUS_MODE, 8), address), 32, 8, quad=True,
                                oe=QUAD_OE)
                with m.Else():
                    self._begin(m, engine, "INSTRUCTION", FAST_READ_QUAD_IO.opcode, 8, 8)
            else:
                self._begin(m, engine, "SINGLE_ADDRESS", Cat(address, Const(READ_DATA.opcode, 8)), 32, 32)
        with m.State("INSTRUCTION"):
            self._then(m, engine, "QUAD_ADDRESS", Cat(Const(CONTINUOUS_MODE, 8), address), 32, 8, quad=True,
                       oe=QUAD_OE)
        with m.State("QUAD_ADDRESS"):
            self._then(m, engine, "DUMMY", 0, 0, FAST_READ_QUAD_IO.dummy, quad=True, oe=0)
            m.d.sync += continuous.eq(1)
        with m.State("DUMMY"), m.If(engine.fall & engine.last):
            self._data(m, engine, beats)
        with m.State("SINGLE_ADDRESS"), m.If(engine.fall & engine.last):
            self._data(m, engine, beats)
        with m.State("DATA"):
            self._beats(m, engine)
            with m.If(engine.fall & engine.last):
                m.d.sync += [is_open.eq(1), accepting.eq(1)]
                m.next = "IDLE"

    def _offset(self, addr: Value) -> Value:
        """What of `addr` the reader keeps: `addr` itself when `base` is a multiple of
        2^`addr_width` below 2^24, else its 24-bit flash address."""
        return addr if self._base_above_addresses() else (addr + self.base)[:24]

    def _flash_address(self, offset: Value) -> Value:
        """The 24-bit flash address of `offset` (`_offset`): the base's bits above the address
        go in by concatenation, no adder."""
        if self._base_above_addresses():
            return Cat(offset, Const(self.base >> self.addr_width, 24 - self.addr_width))
        return offset

    def _base_above_addresses(self) -> bool:
        return self.addr_width < 24 and self.base % (1 << self.addr_width) == 0

    def _data(self, m: Module, engine: _Engine, beats: Value) -> None:
        """Start the data segment of `beats` beats (now: at the end of a clock, or the clock stopped)."""
        oe = 0 if self.quad else ONE_LINE_OE
        engine.load(m, 0, 0, beats * self.clocks_per_beat, quad=self.quad, oe=oe)
        m.d.sync += self._beat_left.eq(self.clocks_per_beat)
        m.next = "DATA"

    def _beats(self, m: Module, engine: _Engine) -> None:
        """In DATA: a beat to `rd_data` at the rising edge of its last clock, if the output
        register is free by then (else the clock waits)."""
        out_valid, out_data = self.rd_data.valid, self.rd_data.payload.data
        completing = self._beat_left == 1
        m.d.comb += engine.stall.eq(completing & out_valid & ~self.rd_data.ready)
        with m.If(engine.rise):
            m.d.sync += self._beat_left.eq(Mux(completing, self.clocks_per_beat, self._beat_left - 1))
            with m.If(completing):
                m.d.sync += [out_valid.eq(1), out_data.eq(self._ordered(engine.rx_next))]

    def _ordered(self, rx: Value) -> Value:
        """The beat in `rx` as shifted in (first bits lowest), each byte's units put back in order."""
        units = 8 // self.lines
        return Cat(*(Cat(*(rx[byte * 8 + unit * self.lines:byte * 8 + (unit + 1) * self.lines]
                           for unit in reversed(range(units))))
                     for byte in range(self.bus_bytes)))


def _check(bus_bytes: int, chip: SpiFlashChip, clock_mhz: float, quad: bool, divisor: int) -> None:
    if bus_bytes not in (1, 2):
        raise ConfigError(f"the flash reader's bus is 1 or 2 bytes, not {bus_bytes}")
    if divisor < 2 or divisor % 2:
        raise ConfigError(f"the SPI clock divisor must be even and at least 2, not {divisor}")
    limit = chip.max_mhz if quad else chip.read_data_max_mhz
    if clock_mhz / divisor > limit:
        raise ConfigError(f"SPI clock {clock_mhz / divisor:g} MHz (system {clock_mhz:g} MHz / {divisor}) is above the "
                          f"{chip.name}'s {limit:g} MHz for {'quad I/O reads' if quad else 'Read Data (03h)'}")
