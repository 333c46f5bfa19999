"""A per-edge model of a SPI NOR flash (the W25Q128JV) that checks a controller.

`SpiFlashDevice.clock(cs_n, clk, io_o, io_oe)` takes the pins as the controller drives them
during one system clock cycle and returns `(io, oe)`, the IO lines the chip drives during that
cycle and which of them it drives. Edges of CLK and /CS are found by comparing consecutive
calls, so the SPI clock runs at most at half the system clock. The chip samples its inputs on
the rising CLK edges and changes its outputs on the falling ones; it answers within the cycle of
the falling edge (the datasheet's tCLQV, 6 ns, is well inside a system cycle at the clocks we
use), so a controller captures the data at the end of that cycle, the rising edge's cycle.

Every departure from the datasheet raises `SpiFlashViolation` ("cycle N: ..."). Checked:

- the clock: each period at least 1/FR (1/fR for Read Data), high and low at least 45 % of
  that; /CS low at least tSLCH before the first rising edge and held tCHSH after the last
  (so /CS and CLK never change together on a rising edge); /CS high at least tSHSL1 (10 ns)
  between instructions, tSHSL2 (50 ns) after one that writes;
- instructions: unknown opcodes, known ones the model does not run ("not modelled"), any
  instruction but RELEASE POWER-DOWN while powered down, /CS low during tRES1 (tRES2 after
  an ID read), tDP or tRST, anything but a status register read during a status register
  write (tW), quad reads with QE = 0, RESET DEVICE not right after ENABLE RESET, WRITE STATUS REGISTER-2 without WRITE
  ENABLE, an instruction cut short (/CS high before its last bit, or a read before its data:
  except the datasheet's way out of continuous read mode, M4 = 1);
- the lines: the controller driving a line the chip drives (contention), not driving a line
  the chip samples, /HOLD (IO3) not driven high while QE = 0;
- data: a rising edge while the chip drives a bit of a byte never programmed (`preload`).

Reads wrap from the last byte to the first, as the datasheet's address counter does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from common.errors import HwgenError
from sim.spiflash.chips import SpiFlashChip
from sim.spiflash.commands import (
    COMMANDS,
    ENABLE_RESET,
    FAST_READ_QUAD_IO,
    JEDEC_ID,
    NOT_MODELLED,
    POWER_DOWN,
    READ_STATUS_1,
    READ_STATUS_2,
    RELEASE_POWER_DOWN,
    RESET_DEVICE,
    WRITE_DISABLE,
    WRITE_ENABLE,
    WRITE_STATUS_2,
    Command,
)
from sim.spiflash.storage import FlashStorage

QE = 1 << 1  # Status Register-2 bit 1 (S9)
HOLD = 1 << 3  # IO3 is /HOLD while QE = 0
CONTINUOUS = 0b10  # mode bits M5-4 that keep continuous read mode


class SpiFlashViolation(HwgenError):
    """A controller broke a rule of the SPI flash's datasheet (or used what the model lacks)."""


@dataclass
class Transaction:
    """What one /CS low period has shifted in and out so far."""

    start: int
    continuous: bool
    command: Command | None = None
    clocks: int = 0  # rising edges so far
    opcode: int = 0
    address: int = 0
    mode: int = 0
    mode_bits: int = 0
    data_in: int = 0
    out: tuple[int, int] = (0, 0)  # (io, oe) the chip drives
    out_address: int | None = None  # the array byte whose bits are on the lines
    floating: str = ""  # quad address or mode bits the controller left undriven
    last_rise: int | None = None
    last_fall: int | None = None
    shortest: dict[str, int] = field(default_factory=dict)  # "period", "high", "low" in cycles


class SpiFlashDevice:
    """The chip at system clock `clock_mhz`. `quad_enabled` is QE's state at power-on (non-volatile;
    by default as the part ships); `powered_down` starts the chip in power-down, where the
    iCE40 leaves it after configuring itself."""

    def __init__(self, chip: SpiFlashChip, clock_mhz: float, *, quad_enabled: bool | None = None,
                 powered_down: bool = True):
        if chip.qe_fixed and quad_enabled is False:
            raise ValueError(f"QE is fixed at 1 on the {chip.name}")
        self.chip, self.clock_mhz = chip, clock_mhz
        self.memory = FlashStorage(chip.size_bytes)
        self.status2 = QE if (chip.qe_fixed if quad_enabled is None else quad_enabled) else 0
        self.powered_down = powered_down
        self.write_enabled = False
        self.continuous = False  # continuous read mode: the next /CS low starts at the address
        self.cycle = -1
        self.history: list[tuple[int, str, int | None]] = []  # (cycle, command, address) as /CS rises
        self._reset_enabled = False
        self._busy_until, self._busy_what, self._busy_status_ok = -1, "", False
        self._pending_status2: int | None = None
        self._cs_n, self._clk = 1, 0
        self._deselected_at: int | None = None
        self._deselect_ns = 0.0
        self._previous = ""
        self._t: Transaction | None = None

    @property
    def quad_enabled(self) -> bool:
        return bool(self.status2 & QE)

    @property
    def busy(self) -> bool:
        """Status Register-1 BUSY: a status register write is running."""
        return self._busy_status_ok and self.cycle < self._busy_until

    @property
    def status1(self) -> int:
        return int(self.busy) | int(self.write_enabled) << 1

    def preload(self, offset: int, data) -> None:
        """Place `data` at `offset` as if programmed."""
        self.memory.preload(offset, data)

    def clock(self, cs_n: int, clk: int, io_o: int, io_oe: int) -> tuple[int, int]:
        """One system cycle with the controller's pins; the chip's `(io, oe)` for it."""
        self.cycle += 1
        self._settle()
        rose, fell = clk and not self._clk, self._clk and not clk
        if self._cs_n and not cs_n:
            self._select(bool(rose))
        elif not cs_n and rose:
            self._rise(io_o, io_oe)
        elif not cs_n and fell:
            self._fall()
        elif cs_n and not self._cs_n:
            self._deselect(bool(rose))
        self._cs_n, self._clk = cs_n, clk
        io, oe = self._t.out if self._t else (0, 0)
        if oe & io_oe:
            raise self._violation(f"contention: the controller drives IO lines {oe & io_oe:#06b} while the chip "
                                  f"drives them ({self._what()})")
        if not cs_n and not self.quad_enabled and not (io_oe & io_o & HOLD):
            raise self._violation(f"/HOLD (IO3) not driven high while /CS is low and QE = 0 ({self._what()}): "
                                  f"the chip would pause; hold is not modelled")
        return io, oe

    # ---- /CS -------------------------------------------------------------------------------------

    def _select(self, rose: bool) -> None:
        if rose:
            raise self._violation(f"tSLCH: /CS fell with a rising CLK edge; /CS must be low "
                                  f"{self.chip.t_slch_ns:g} ns before it")
        if self._deselected_at is not None:
            high = self._ns(self.cycle - self._deselected_at)
            if high < self._deselect_ns - 1e-9:
                raise self._violation(f"/CS high only {high:g} ns after {self._previous}; tSHSL needs "
                                      f"{self._deselect_ns:g} ns")
        if self.cycle < self._busy_until and not self._busy_status_ok:
            raise self._violation(f"/CS low during {self._busy_what} (until cycle {self._busy_until})")
        self._t = Transaction(self.cycle, self.continuous)
        if self.continuous:
            self._t.command = FAST_READ_QUAD_IO

    def _deselect(self, rose: bool) -> None:
        t, self._t = self._t, None
        if rose:
            raise self._violation(f"tCHSH: /CS rose with a rising CLK edge; it must stay low "
                                  f"{self.chip.t_chsh_ns:g} ns after it")
        self._deselected_at, self._deselect_ns = self.cycle, self.chip.t_shsl_read_ns
        command = t.command
        if command is None:
            if t.clocks:
                raise self._violation(f"/CS high after {t.clocks} clocks: an incomplete instruction "
                                      f"({t.opcode:#x} so far)")
            return
        name = command.name + (" (continuous)" if t.continuous else "")
        self._previous = name
        if command.writes:
            self._deselect_ns = self.chip.t_shsl_write_ns
        start = command.data_start(t.continuous)
        if command.data_lines and command is not RELEASE_POWER_DOWN:
            if t.clocks <= start and not self._mode_reset(t):
                raise self._violation(t.floating or f"{name} cut short: /CS high after {t.clocks} clocks, before "
                                      f"its data (from clock {start})")
        elif command is RELEASE_POWER_DOWN:
            if t.clocks != 8 and t.clocks <= start:
                raise self._violation(f"{name} cut short: /CS high after {t.clocks} clocks (8, or an ID read)")
        elif t.clocks != start + command.input_bits:
            raise self._violation(f"{name} not executed: /CS high after {t.clocks} clocks, not "
                                  f"{start + command.input_bits}")
        self.history.append((t.start, name, t.address if command.address_lines else None))
        self._execute(command, t)

    def _mode_reset(self, t: Transaction) -> bool:
        """A quad I/O read cut once M4 is in with M4 = 1: the datasheet's exit from continuous read
        mode (FFh on IO0); it leaves the mode."""
        if t.command is not FAST_READ_QUAD_IO or t.mode_bits < 4 or not t.mode >> (t.mode_bits - 4) & 1:
            return False
        self.continuous = False
        return True

    def _execute(self, command: Command, t: Transaction) -> None:
        if command is not RESET_DEVICE:
            self._reset_enabled = command is ENABLE_RESET
        if command is WRITE_ENABLE:
            self.write_enabled = True
        elif command is WRITE_DISABLE:
            self.write_enabled = False
        elif command is WRITE_STATUS_2:
            self._write_status2(t.data_in)
        elif command is RESET_DEVICE:
            self.write_enabled = self.continuous = self._reset_enabled = False
            self._busy(self.chip.t_rst_ns, "tRST after RESET DEVICE")
        elif command is POWER_DOWN:
            self.powered_down = True
            self._busy(self.chip.t_dp_ns, "tDP after POWER-DOWN")
        elif command is RELEASE_POWER_DOWN and self.powered_down:
            self.powered_down = False
            if t.clocks > 8:  # the device ID was read
                self._busy(self.chip.t_res2_ns, "tRES2 after RELEASE POWER-DOWN / DEVICE ID")
            else:
                self._busy(self.chip.t_res1_ns, "tRES1 after RELEASE POWER-DOWN")

    def _write_status2(self, value: int) -> None:
        if not self.write_enabled:
            raise self._violation(f"WRITE STATUS REGISTER-2 ({value:#04x}) without WRITE ENABLE: the chip "
                                  f"ignores it")
        if value & ~QE != self.status2 & ~QE:
            raise self._violation(f"not modelled: WRITE STATUS REGISTER-2 {value:#04x} changes bits other than QE "
                                  f"(now {self.status2:#04x})")
        if self.chip.qe_fixed and not value & QE:
            raise self._violation(f"WRITE STATUS REGISTER-2 {value:#04x} clears QE, fixed at 1 on the "
                                  f"{self.chip.name}")
        self._pending_status2 = value
        self._busy(self.chip.t_w_ns, "tW (status register write)", status_ok=True)

    def _busy(self, ns: float, what: str, status_ok: bool = False) -> None:
        self._busy_until = self.cycle + self.chip.cycles(ns, self.clock_mhz)
        self._busy_what, self._busy_status_ok = what, status_ok

    def _settle(self) -> None:
        """The end of a status register write."""
        if self._pending_status2 is not None and self.cycle >= self._busy_until:
            self.status2, self._pending_status2 = self._pending_status2, None
            self.write_enabled = False

    # ---- CLK -------------------------------------------------------------------------------------

    def _rise(self, io_o: int, io_oe: int) -> None:
        t = self._t
        self._timing(t, "period", t.last_rise)
        self._timing(t, "low", t.last_fall if t.last_fall is not None and t.last_fall > (t.last_rise or -1) else None)
        t.last_rise = self.cycle
        n, t.clocks = t.clocks, t.clocks + 1
        if t.command is None:
            t.opcode = t.opcode << 1 | self._input(io_o, io_oe, 1, "instruction")
            if n == 7:
                t.command = self._decode(t.opcode)
                self._check_clock(t)
            return
        command = t.command
        first = 0 if t.continuous else 8
        address_end = first + command.address_clocks()
        mode_end = address_end + command.mode_clocks()
        lines = command.address_lines
        if n < address_end:
            t.address = t.address << lines | self._input(io_o, io_oe, lines, "address")
        elif n < mode_end:
            t.mode = t.mode << lines | self._input(io_o, io_oe, lines, "mode byte")
            t.mode_bits += lines
            if t.mode_bits == 8 and command is FAST_READ_QUAD_IO:
                self.continuous = (t.mode >> 4) & 0b11 == CONTINUOUS
        elif command.input_bits and n < first + command.input_bits:
            t.data_in = t.data_in << 1 | self._input(io_o, io_oe, 1, "data")
        elif t.floating:
            raise self._violation(t.floating)
        elif t.out_address is not None and self.memory.byte(t.out_address) is None:
            raise self._violation(f"read of never-programmed flash at {t.out_address % self.chip.size_bytes:#08x} "
                                  f"({command.name} from {t.address:#08x})")

    def _fall(self) -> None:
        t = self._t
        if t.last_rise is not None:
            self._timing(t, "high", t.last_rise)
        t.last_fall = self.cycle
        command = t.command
        if command is None or not command.data_lines or t.clocks < command.data_start(t.continuous):
            return
        index = t.clocks - command.data_start(t.continuous)  # the data clock the next rising edge samples
        lines = command.data_lines
        byte_index, bit = divmod(index * lines, 8)
        value, t.out_address = self._output_byte(command, t, byte_index)
        bits = value >> (8 - lines - bit) & ((1 << lines) - 1)
        t.out = (bits, 0b1111) if lines == 4 else (bits << 1, 0b0010)

    def _output_byte(self, command: Command, t: Transaction, index: int) -> tuple[int, int | None]:
        """The `index`th byte of the command's data, and its array address if it is array data."""
        if command.reads_array:
            address = t.address + index
            value = self.memory.byte(address)
            return (0xFF if value is None else value), address
        if command is READ_STATUS_1:
            return self.status1, None
        if command is READ_STATUS_2:
            return self.status2, None
        if command is JEDEC_ID:
            return self.chip.jedec_id[index % 3], None
        return self.chip.device_id, None  # RELEASE POWER-DOWN / DEVICE ID

    def _input(self, io_o: int, io_oe: int, lines: int, what: str) -> int:
        """The bits the chip samples on `lines` lines. Undriven quad address or mode bits are an
        error only if the read goes on to its data (the exit from continuous read mode may drive
        IO0 alone)."""
        mask = (1 << lines) - 1
        if io_oe & mask != mask:
            text = (f"{what} bits not driven: the chip samples IO lines {mask:#06b}, the controller drives "
                    f"{io_oe:#06b} ({self._what()})")
            if lines == 1:
                raise self._violation(text)
            self._t.floating = self._t.floating or f"{text}, at cycle {self.cycle}"
        return io_o & mask

    # ---- checks ----------------------------------------------------------------------------------

    def _decode(self, opcode: int) -> Command:
        command = COMMANDS.get(opcode)
        if command is None:
            name = NOT_MODELLED.get(opcode)
            raise self._violation(f"not modelled: {name} ({opcode:#04x})" if name else f"unknown opcode {opcode:#04x}")
        if self.powered_down and command not in (RELEASE_POWER_DOWN, COMMANDS[0xFF]):
            raise self._violation(f"{command.name} while powered down: the chip ignores all but RELEASE POWER-DOWN")
        if self.cycle < self._busy_until and not command.while_busy:
            raise self._violation(f"{command.name} during {self._busy_what}: only status register reads")
        if command is RESET_DEVICE and not self._reset_enabled:
            raise self._violation("RESET DEVICE not right after ENABLE RESET: the chip ignores it")
        if command.quad and not self.quad_enabled:
            raise self._violation(f"{command.name} with QE = 0 (Status Register-2 bit 1): set QE first "
                                  f"(WRITE ENABLE, WRITE STATUS REGISTER-2)")
        return command

    def _timing(self, t: Transaction, what: str, since: int | None) -> None:
        if since is not None:
            t.shortest[what] = min(t.shortest.get(what, 1 << 60), self.cycle - since)
            self._check_clock(t)

    def _check_clock(self, t: Transaction) -> None:
        read_data = t.command is not None and t.command.read_data
        mhz = self.chip.read_data_max_mhz if read_data else self.chip.max_mhz
        period = 1000 / mhz
        for what, least in (("period", period), ("high", period * self.chip.clock_high_low),
                            ("low", period * self.chip.clock_high_low)):
            if what in t.shortest and self._ns(t.shortest[what]) < least - 1e-9:
                name = t.command.name if t.command else "an instruction"
                raise self._violation(f"CLK {what} of {self._ns(t.shortest[what]):g} ns in {name}: at least "
                                      f"{least:g} ns ({mhz:g} MHz{' fR' if read_data else ''})")

    def _ns(self, cycles: int) -> float:
        return cycles * 1000 / self.clock_mhz

    def _what(self) -> str:
        t = self._t
        if t is None:
            return "/CS high"
        name = t.command.name if t.command else "instruction"
        return f"{name}, clock {t.clocks}"

    def _violation(self, text: str) -> SpiFlashViolation:
        return SpiFlashViolation(f"cycle {self.cycle}: {text}")
