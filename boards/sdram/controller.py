"""A controller for an x16 SDR SDRAM (the ULX3S board's IS42S16160G-7): one 16-bit word per
command, a row kept open in every bank.

Interface (`SdramController`):

- `cmd` (stream in): `addr`, a word address in row-bank-column order (the column lowest, then
  the bank, then the row: `sim.sdram.storage`'s mapping, byte address = 2 x word address);
  `write`; `data`; `mask`, the byte enables of a write (bit 0 the low byte, DQ7..0). A command
  is accepted (`ready`) on the cycle its READ or WRITE is issued; commands run in order.
- `rd` (out, `valid` only): the read data, in command order, `read_latency` cycles after the
  cycle its command was accepted. The requester must take every word (no back-pressure).
- `sdram`: the chip's pins (`sim.sdram.adapter.SDRAM_PINS`).

Policy: the mode register sets burst length 1, so a READ or WRITE can issue every cycle to an
open row. A command to an open row issues at once; to another row of its bank, the bank is
precharged and the row activated first. A row stays open until another row of its bank is
needed or a refresh: every tREFI (rounded down to whole cycles, counted from the end of
initialization) the controller stops taking commands, precharges every bank (PRECHARGE ALL,
once tRAS and tWR allow) and issues an AUTO REFRESH, a few cycles after it fell due: at most
one refresh is ever owed (the JEDEC limit is 8). Every delay is the chip's figure in ns turned
into cycles at `clock_mhz` (`SdramCycles`): tRP, tRCD, tRAS, tRC, tRRD, tWR, tRFC, tMRD. A
WRITE after a READ waits until the read data has left DQ and one more cycle
(`BUS_TURNAROUND`); DQM is low on reads and idle cycles and is the inverted byte mask on a
write's edge.

Registers: every pin output comes from a register (`PIN_LATENCY`: a command reaches the chip
the cycle after it is decided) and the read data is captured by a register from DQ
(`INPUT_LATENCY`). So `read_latency` = 1 + CAS latency + 1 cycles (4 at CL 2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from amaranth.hdl import Array, Cat, Module, Mux, Signal, Value
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from common.errors import ConfigError
from sim.sdram.adapter import SDRAM_PINS
from sim.sdram.chips import SdramChip, Timing

PIN_LATENCY = 1  # the output registers: a command is on the pins the cycle after it is decided
INPUT_LATENCY = 1  # the register capturing DQ
BUS_TURNAROUND = 1  # idle cycles on DQ between the chip's last read data and a write's data
ALL_BANKS = 1 << 10  # A10: PRECHARGE of every bank (never set on READ/WRITE: no auto precharge)
DATA_BITS = 16


class Command(enum.Enum, shape=4):
    """An SDRAM command as its pins (CS#, RAS#, CAS#, WE#), CS# the most significant bit."""

    DESELECT = 0b1111
    ACTIVE = 0b0011
    READ = 0b0101
    WRITE = 0b0100
    PRECHARGE = 0b0010
    AUTO_REFRESH = 0b0001
    LOAD_MODE_REGISTER = 0b0000


@dataclass(frozen=True)
class SdramCycles:
    """A chip's delays at a clock, in cycles from one command to the next it constrains."""

    rp: int
    rcd: int
    ras: int
    rc: int
    rrd: int
    wr: int
    rfc: int
    mrd: int
    refresh_interval: int  # tREFI rounded down: refreshes come at least as often as they fall due
    power_up: int

    @classmethod
    def at(cls, chip: SdramChip, clock_mhz: float) -> SdramCycles:
        def cycles(timing: Timing) -> int:
            return timing.cycles(clock_mhz)

        return cls(rp=cycles(chip.t_rp), rcd=cycles(chip.t_rcd), ras=cycles(chip.t_ras), rc=cycles(chip.t_rc),
                   rrd=cycles(chip.t_rrd), wr=cycles(chip.t_wr), rfc=cycles(chip.t_rfc), mrd=cycles(chip.t_mrd),
                   refresh_interval=math.floor(round(chip.refresh_interval_ns * clock_mhz / 1000, 9)),
                   power_up=cycles(Timing(chip.power_up_ns)))


class Countdown:
    """Cycles until a command may issue: `start` (a command now) sets it, never lowering it, and
    it counts down to 0 (`ready`)."""

    def __init__(self, m: Module, longest: int, name: str, init: int = 0):
        self.count = Signal(range(max(longest, init) + 1), name=name, init=init)
        self.floor = Signal.like(self.count, name=f"{name}_start", init=0)  # set by `start`, for a cycle
        self.ready = self.count == 0
        less = Mux(self.ready, 0, self.count - 1)
        m.d.sync += self.count.eq(Mux(less > self.floor, less, self.floor))

    def start(self, m: Module, cycles: int) -> None:
        """A command issues now: the next one this gates may issue `cycles` cycles after it."""
        if cycles > 1:
            m.d.comb += self.floor.eq(cycles - 1)


class _Bank:
    """A bank's open row and the delays counted from its last commands."""

    def __init__(self, m: Module, index: int, cycles: SdramCycles, row_bits: int):
        self.open = Signal(name=f"bank{index}_open")
        self.row = Signal(row_bits, name=f"bank{index}_row")
        self.activate = Countdown(m, max(cycles.rc, cycles.rp), f"bank{index}_activate")  # tRC, tRP
        self.access = Countdown(m, cycles.rcd, f"bank{index}_access")  # tRCD
        self.precharge = Countdown(m, max(cycles.ras, cycles.wr), f"bank{index}_precharge")  # tRAS, tWR


class _Issue:
    """The command decided this cycle (combinational; the pin registers take it)."""

    def __init__(self):
        self.command = Signal(Command, init=Command.DESELECT)
        self.ba = Signal(2)
        self.a = Signal(13)
        self.dqm = Signal(2, init=0b11)
        self.dq = Signal(DATA_BITS)

    def set(self, m: Module, command: Command, ba=0, a=0) -> None:
        m.d.comb += [self.command.eq(command), self.ba.eq(ba), self.a.eq(a)]


class SdramController(wiring.Component):
    """Drives `chip` at `clock_mhz` with CAS latency `cas_latency` (by default the shortest the
    chip supports at the clock: 2 up to 100 MHz for the -7 grade, else 3). Ports and policy:
    the module's docstring."""

    def __init__(self, chip: SdramChip, clock_mhz: float, cas_latency: int | None = None):
        try:
            cas_latency = cas_latency_at(chip, clock_mhz, cas_latency)
            _check_geometry(chip)
        except ConfigError:
            self._MustUse__silence = True  # not built, so not "created but never used"
            raise
        self.chip, self.clock_mhz, self.cas_latency = chip, clock_mhz, cas_latency
        self.cycles = SdramCycles.at(chip, clock_mhz)
        self.column_bits, self.bank_bits = exact_log2(chip.columns), exact_log2(chip.banks)
        self.row_bits = exact_log2(chip.rows)
        command = data.StructLayout({"addr": self.column_bits + self.bank_bits + self.row_bits, "write": 1,
                                     "data": DATA_BITS, "mask": DATA_BITS // 8})
        super().__init__({"cmd": In(stream.Signature(command)),
                          "rd": Out(stream.Signature(DATA_BITS, always_ready=True)),
                          "sdram": Out(SDRAM_PINS)})

    @property
    def read_latency(self) -> int:
        """Cycles from a READ's command accepted to its data on `rd`."""
        return read_latency(self.cas_latency)

    @property
    def mode_register(self) -> int:
        """Burst length 1, sequential, the CAS latency, standard operation, programmed write bursts."""
        return self.cas_latency << 4

    def elaborate(self, platform) -> Module:
        m = Module()
        cycles = self.cycles
        issue = _Issue()
        banks = [_Bank(m, index, cycles, self.row_bits) for index in range(self.chip.banks)]
        wait = Countdown(m, max(cycles.power_up, cycles.rfc, cycles.mrd, cycles.rp), "wait", init=cycles.power_up)
        rrd = Countdown(m, cycles.rrd, "rrd")  # binds only if tRRD > tRCD + 1: a READ/WRITE comes between
        turnaround = Countdown(m, self.cas_latency + BUS_TURNAROUND, "turnaround")
        refresh_due = self._refresh_timer(m, issue)
        with m.FSM():
            self._initialize(m, issue, wait)
            with m.State("RUN"):
                m.d.comb += issue.dqm.eq(0)
                with m.If(wait.ready & refresh_due):
                    self._refresh(m, issue, banks)
                with m.Elif(wait.ready & self.cmd.valid):
                    self._access(m, issue, banks, rrd.ready, turnaround.ready)
        with m.Switch(issue.command):
            with m.Case(Command.ACTIVE):
                rrd.start(m, cycles.rrd)
            with m.Case(Command.READ):  # a WRITE's data on DQ after the read data and the idle cycles
                turnaround.start(m, self.cas_latency + 1 + BUS_TURNAROUND)
            with m.Case(Command.AUTO_REFRESH):
                wait.start(m, cycles.rfc)
            with m.Case(Command.LOAD_MODE_REGISTER):
                wait.start(m, cycles.mrd)
            with m.Case(Command.PRECHARGE):
                with m.If((issue.a & ALL_BANKS).any()):
                    wait.start(m, cycles.rp)
        self._track_banks(m, issue, banks)
        self._pins(m, issue)
        self._read_data(m, issue)
        return m

    def _initialize(self, m: Module, issue: _Issue, wait: Countdown) -> None:
        """The datasheet's initialization (FSM states up to RUN): the power-up wait (`wait`
        starts with it), PRECHARGE ALL, the chip's AUTO REFRESH count, LOAD MODE REGISTER."""
        refreshes = Signal(range(self.chip.init_refreshes + 1), init=self.chip.init_refreshes)
        with m.State("POWER_UP"):
            with m.If(wait.ready):
                issue.set(m, Command.PRECHARGE, a=ALL_BANKS)
                m.next = "INIT_REFRESH"
        with m.State("INIT_REFRESH"):
            with m.If(wait.ready):
                issue.set(m, Command.AUTO_REFRESH)
                m.d.sync += refreshes.eq(refreshes - 1)
                with m.If(refreshes == 1):
                    m.next = "INIT_MODE"
        with m.State("INIT_MODE"):
            with m.If(wait.ready):
                issue.set(m, Command.LOAD_MODE_REGISTER, a=self.mode_register)
                m.next = "RUN"

    def _refresh_timer(self, m: Module, issue: _Issue) -> Signal:
        """High from the end of each tREFI, counted from LOAD MODE REGISTER, to its AUTO REFRESH."""
        interval = self.cycles.refresh_interval
        timer = Signal(range(interval), init=interval - 1)
        started, due = Signal(), Signal()
        with m.If(issue.command == Command.AUTO_REFRESH):
            m.d.sync += due.eq(0)
        with m.If(issue.command == Command.LOAD_MODE_REGISTER):
            m.d.sync += started.eq(1)
        with m.Elif(started & (timer == 0)):
            m.d.sync += [timer.eq(interval - 1), due.eq(1)]
        with m.Elif(started):
            m.d.sync += timer.eq(timer - 1)
        return due

    def _refresh(self, m: Module, issue: _Issue, banks: list[_Bank]) -> None:
        """Close every open bank (PRECHARGE ALL once tRAS and tWR allow), then AUTO REFRESH."""
        any_open = Cat(bank.open for bank in banks).any()
        closable = Cat(~bank.open | bank.precharge.ready for bank in banks).all()
        # `wait` holds tRP after PRECHARGE ALL; tRC from the last ACTIVE too, as for an ACTIVE
        # (tRAS + tRP can fall a cycle short of it, e.g. at 133 MHz)
        settled = Cat(bank.activate.ready for bank in banks).all()
        with m.If(any_open):
            with m.If(closable):
                issue.set(m, Command.PRECHARGE, a=ALL_BANKS)
        with m.Elif(settled):
            issue.set(m, Command.AUTO_REFRESH)

    def _access(self, m: Module, issue: _Issue, banks: list[_Bank], rrd_ready: Value, turnaround_ready: Value) -> None:
        """The next step of the command: its READ or WRITE on a row hit (accepting it), else a
        PRECHARGE of the bank (another row open) or the ACTIVE of its row."""
        cmd = self.cmd.payload
        column = cmd.addr[:self.column_bits]
        bank = cmd.addr[self.column_bits:self.column_bits + self.bank_bits]
        row = cmd.addr[self.column_bits + self.bank_bits:]
        is_open = Array(state.open for state in banks)[bank]
        open_row = Array(state.row for state in banks)[bank]
        with m.If(is_open & (open_row == row)):
            with m.If(Array(state.access.ready for state in banks)[bank] & (~cmd.write | turnaround_ready)):
                m.d.comb += [issue.dq.eq(cmd.data), self.cmd.ready.eq(1)]
                with m.If(cmd.write):
                    issue.set(m, Command.WRITE, bank, column)
                    m.d.comb += issue.dqm.eq(~cmd.mask)
                with m.Else():
                    issue.set(m, Command.READ, bank, column)
        with m.Elif(is_open):
            with m.If(Array(state.precharge.ready for state in banks)[bank]):
                issue.set(m, Command.PRECHARGE, bank)
        with m.Elif(Array(state.activate.ready for state in banks)[bank] & rrd_ready):
            issue.set(m, Command.ACTIVE, bank, row)

    def _track_banks(self, m: Module, issue: _Issue, banks: list[_Bank]) -> None:
        """Each bank's open row and delays after the command issued this cycle."""
        cycles = self.cycles
        for index, bank in enumerate(banks):
            chosen = issue.ba == index
            with m.If((issue.command == Command.ACTIVE) & chosen):
                m.d.sync += [bank.open.eq(1), bank.row.eq(issue.a)]
                bank.activate.start(m, cycles.rc)
                bank.access.start(m, cycles.rcd)
                bank.precharge.start(m, cycles.ras)
            with m.If((issue.command == Command.PRECHARGE) & (chosen | (issue.a & ALL_BANKS).any())):
                m.d.sync += bank.open.eq(0)
                bank.activate.start(m, cycles.rp)
            with m.If((issue.command == Command.WRITE) & chosen):
                bank.precharge.start(m, cycles.wr)

    def _pins(self, m: Module, issue: _Issue) -> None:
        """Every pin output from a register (FPGA I/O registers)."""
        pins = self.sdram
        m.d.sync += [pins.cke.eq(1), Cat(pins.we_n, pins.cas_n, pins.ras_n, pins.cs_n).eq(issue.command.as_value()),
                     pins.ba.eq(issue.ba), pins.a.eq(issue.a), pins.dqm.eq(issue.dqm), pins.dq_o.eq(issue.dq),
                     pins.dq_oe.eq(issue.command == Command.WRITE)]

    def _read_data(self, m: Module, issue: _Issue) -> None:
        """DQ through the input register to `rd`, valid `read_latency` cycles after the READ."""
        captured = Signal(DATA_BITS)
        m.d.sync += captured.eq(self.sdram.dq_i)
        valid = issue.command == Command.READ
        for stage in range(self.read_latency):
            delayed = Signal(name=f"read_{stage}")
            m.d.sync += delayed.eq(valid)
            valid = delayed
        m.d.comb += [self.rd.valid.eq(valid), self.rd.payload.eq(captured)]


def cas_latency_at(chip: SdramChip, clock_mhz: float, cas_latency: int | None = None) -> int:
    """`cas_latency` if the chip supports it at the clock, by default the shortest it supports."""
    supported = chip.cas_latencies(clock_mhz)
    if cas_latency is None and supported:
        cas_latency = min(supported)
    if cas_latency not in supported:
        raise ConfigError(f"the {chip.name} supports CAS latency {', '.join(map(str, supported)) or 'none'} "
                          f"at {clock_mhz:g} MHz, not {cas_latency}")
    return cas_latency


def initialization_cycles(chip: SdramChip, clock_mhz: float) -> int:
    """A cycle after reset by which the controller has initialized the chip and takes commands:
    the power-up wait, PRECHARGE ALL, the AUTO REFRESHes and LOAD MODE REGISTER, with their
    delays (a few cycles to spare for the commands themselves)."""
    cycles = SdramCycles.at(chip, clock_mhz)
    return cycles.power_up + cycles.rp + chip.init_refreshes * cycles.rfc + cycles.mrd + 4


def read_latency(cas_latency: int) -> int:
    """Cycles from a READ's command accepted to its data on `rd`: the output registers, the CAS
    latency, the input register."""
    return PIN_LATENCY + cas_latency + INPUT_LATENCY


def _check_geometry(chip: SdramChip) -> None:
    """The pins `SDRAM_PINS` has: x16 data, BA1..0, A12..0 (a column on A9..0, A10 apart)."""
    for name, count, most in (("banks", chip.banks, 4), ("rows", chip.rows, 1 << 13), ("columns", chip.columns, 1024)):
        if count & (count - 1) or not 1 <= count <= most:
            raise ConfigError(f"the {chip.name}'s {count} {name} do not fit the controller: a power of two, "
                              f"at most {most}")
    if chip.refresh_interval_ns >= chip.t_ras_max_ns:
        raise ConfigError(f"the {chip.name}'s tREFI ({chip.refresh_interval_ns:g} ns) must be shorter than tRAS max "
                          f"({chip.t_ras_max_ns:g} ns): a refresh is what closes an open row")
