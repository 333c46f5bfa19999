"""A cycle model of an SDR SDRAM chip that checks every command against the datasheet.

`SdramDevice.clock(...)` takes the pins sampled at one rising clock edge and returns what the
chip drives on DQ from just after that edge, i.e. what a controller's input register
captures at the next edge. Edges are numbered from 0 (power-on). For a READ registered at
edge R with CAS latency CL, beat i is the data the datasheet calls valid at edge R + CL + i:
`clock` returns it from the call for edge R + CL + i - 1. Write data is taken at the WRITE's
edge and the following edges. DQM masks write data on its own edge and read data two edges
later (its datasheet read latency). While the chip does not drive DQ, `clock` returns 0.

Any departure from the datasheet raises `SdramViolation`; its message names the rule, the
command, the bank/row/column, the edge ("cycle") and, for a timing rule, the cycles required
and elapsed. Rules checked:

- initialization: only NOP/DESELECT during the power-up wait, CKE high on the first command
  and the edge before; then PRECHARGE (all banks), `init_refreshes` AUTO REFRESH and LOAD
  MODE REGISTER, in that order; ACTIVE/READ/WRITE/BURST TERMINATE need the mode register set;
- the mode register's reserved codes and a CAS latency too short for the clock;
- bank states: ACTIVE on an open bank, READ/WRITE on a closed bank, AUTO REFRESH and LOAD MODE
  REGISTER with a bank open, any command to a bank while its auto precharge is pending;
- tRCD, tRP, tRAS (min, and max while a row stays open), tRC, tRRD, tWR (last written data to
  PRECHARGE; auto precharge starts tWR after the last beat), tRFC and tMRD (only NOP/DESELECT
  inside them); an auto precharge must itself respect tRAS like a PRECHARGE would;
- refresh: one AUTO REFRESH is due every tREFI from the end of initialization; at most
  `max_postponed_refreshes` may be owed (and as many pulled in ahead);
- data: a read of a byte never written (unless DQM masks it), the controller driving DQ while
  the chip drives it, write data on an unmasked lane that the controller does not drive,
  a READ burst cut by a WRITE without DQM high on the edge before the WRITE.

Bursts follow the datasheet: a READ or WRITE to any bank cuts the running burst (a READ's
data continues until the new data is due; write data on a READ's edge is ignored);
PRECHARGE and BURST TERMINATE cut a read CL - 1 edges after them and end a write (data on a
BURST TERMINATE edge is ignored; data on a PRECHARGE edge counts for tWR, so DQM must mask
it). An access to another bank cuts an auto-precharge burst and starts its precharge then (a
read's) or tWR later (a write's): concurrent auto precharge. Not modelled, refused with a
violation: CKE low after the first command (power-down, self refresh, clock suspend), auto
precharge with a full-page burst, BURST TERMINATE or PRECHARGE cutting an auto-precharge burst.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

from common.errors import HwgenError
from sim.sdram.chips import SdramChip, Timing
from sim.sdram.mode import ModeRegister
from sim.sdram.storage import SdramStorage

NEVER = -(1 << 40)  # the edge of an event that never happened: every delay since it is met
LANES = (0, 1)  # byte lanes: 0 = DQ7..0 (LDQM), 1 = DQ15..8 (UDQM)


class SdramViolation(HwgenError):
    """A command sequence breaks a rule of the SDRAM datasheet (or uses an unmodelled feature)."""


class Command(Enum):
    DESELECT = "DESELECT"
    NOP = "NOP"
    ACTIVE = "ACTIVE"
    READ = "READ"
    WRITE = "WRITE"
    BURST_TERMINATE = "BURST TERMINATE"
    PRECHARGE = "PRECHARGE"
    AUTO_REFRESH = "AUTO REFRESH"
    LOAD_MODE_REGISTER = "LOAD MODE REGISTER"


COMMANDS = {  # (RAS#, CAS#, WE#) while CS# is low
    (0, 1, 1): Command.ACTIVE, (1, 0, 1): Command.READ, (1, 0, 0): Command.WRITE,
    (1, 1, 0): Command.BURST_TERMINATE, (0, 1, 0): Command.PRECHARGE,
    (0, 0, 1): Command.AUTO_REFRESH, (0, 0, 0): Command.LOAD_MODE_REGISTER, (1, 1, 1): Command.NOP,
}
IDLE = (Command.NOP, Command.DESELECT)


@dataclass
class Bank:
    """One bank's open row and the edges its timing rules count from."""

    row: int | None = None
    known: bool = False  # precharged since power-up
    activated_at: int = NEVER
    precharged_at: int = NEVER
    precharged_by: str = "PRECHARGE"
    last_write_at: int = NEVER  # edge of the last byte written to the open row
    closing_at: int | None = None  # edge at which a pending auto precharge begins
    closing_by: str = ""


@dataclass
class Burst:
    """A READ or WRITE burst: beat i is on edge `first + i` until `length` or a cut."""

    bank: int
    row: int
    column: int
    length: int | None  # None: full page, runs until cut
    first: int
    auto_precharge: bool
    cause: str  # e.g. "READ at cycle 12"
    stop: int | None = None

    @property
    def end(self) -> int | None:
        """The first edge after the burst, None while a full page runs on."""
        ends = [edge for edge in (self.stop, None if self.length is None else self.first + self.length)
                if edge is not None]
        return min(ends, default=None)

    def has_beat_from(self, edge: int) -> bool:
        return self.end is None or edge < self.end

    def beat_at(self, edge: int) -> int | None:
        return edge - self.first if edge >= self.first and self.has_beat_from(edge) else None

    def cut(self, edge: int) -> None:
        self.stop = edge if self.stop is None else min(self.stop, edge)


class SdramDevice:
    """An SDRAM `chip` clocked at `clock_mhz`; `memory` holds its contents (preload, read back)."""

    def __init__(self, chip: SdramChip, clock_mhz: float):
        if not chip.cas_latencies(clock_mhz):
            raise ValueError(f"the {chip.name} supports no CAS latency at {clock_mhz:g} MHz")
        self.chip = chip
        self.clock_mhz = clock_mhz
        self.memory = SdramStorage(chip)
        self.cycle = 0  # the edge of the next `clock` call
        self.mode: ModeRegister | None = None
        self.refresh_debt = 0
        self._banks = [Bank() for _ in range(chip.banks)]
        self._power_up = Timing(chip.power_up_ns)
        self._ras_max_cycles = math.floor(round(chip.t_ras_max_ns * clock_mhz / 1000, 9))
        self._refresh_interval = Fraction(chip.refresh_interval_ns) * Fraction(clock_mhz) / 1000
        self._next_refresh_due: Fraction | None = None
        self._reads: list[Burst] = []
        self._write: Burst | None = None
        self._started = False
        self._cke_before = False
        self._dqm_before = 0b11
        self._driving: Burst | None = None  # the read burst whose beat the chip drives now
        self._init_refreshes = 0
        self._refreshed_at = NEVER
        self._mode_set_at = NEVER

    def clock(self, cke: int, cs_n: int, ras_n: int, cas_n: int, we_n: int, ba: int, a: int, dqm: int,
              dq_in: int, dq_in_driven: int) -> tuple[int, bool]:
        """Apply one rising edge; return (DQ value, driven) for the cycle after it."""
        if dq_in_driven and self._driving:
            raise self._violation(f"bus contention: the controller drives DQ while the chip drives read data "
                                  f"of the {self._driving.cause}")
        command = Command.DESELECT if cs_n else COMMANDS[bool(ras_n), bool(cas_n), bool(we_n)]
        self._check_clock_enable(bool(cke), command)
        self._advance()
        if self._write and command not in (Command.READ, Command.WRITE, Command.BURST_TERMINATE):
            self._take_write_beat(dqm, dq_in, dq_in_driven)
        if command not in IDLE:
            self._execute(command, ba, a, dqm, dq_in, dq_in_driven)
        value = self._read_beat(self.cycle + 1)
        self._dqm_before, self._cke_before = dqm, bool(cke)
        self.cycle += 1
        return value, self._driving is not None

    @property
    def quiet(self) -> bool:
        """No burst runs or is due: until the next command the chip drives no data and takes
        none; NOP edges change nothing but the edge count, pending auto precharges, the
        refresh debt and the tRAS max checks."""
        return self._write is None and not any(burst.has_beat_from(self.cycle) for burst in self._reads)

    def nop_edges(self, edges: int, dqm: int) -> None:
        """Apply `edges` edges of NOP with CKE high, DQ not driven and `dqm`, exactly as as many
        `clock` calls would (the chip drives nothing on them): one by one while a burst runs
        or an auto precharge is pending, then at once, visiting only the edges where a refresh
        falls due or an open row passes tRAS max."""
        end = self.cycle + edges
        while self.cycle < end and not (self.quiet and all(bank.closing_at is None for bank in self._banks)):
            self.clock(1, 0, 1, 1, 1, 0, 0, dqm, 0, 0)
        if self.cycle >= end:
            return
        while True:
            due = [bank.activated_at + self._ras_max_cycles + 1 for bank in self._banks if bank.row is not None]
            if self._next_refresh_due is not None:
                due.append(math.ceil(self._next_refresh_due))
            edge = max(min(due, default=end), self.cycle)
            if edge >= end:
                break
            self.cycle = edge
            self._advance()
            self.cycle += 1
        self.cycle = end
        self._reads, self._driving = [], None
        self._cke_before, self._dqm_before = True, dqm

    def finish(self) -> None:
        """End-of-simulation check: raise if more refreshes are owed than may be postponed."""
        self._check_refresh_debt()

    # ---- commands ----------------------------------------------------------------------------

    def _execute(self, command: Command, ba: int, a: int, dqm: int, dq_in: int, dq_in_driven: int) -> None:
        what = self._describe(command, ba, a)
        self._require("tRFC", self.chip.t_rfc, self._refreshed_at, "AUTO REFRESH", what)
        self._require("tMRD", self.chip.t_mrd, self._mode_set_at, "LOAD MODE REGISTER", what)
        if command is Command.PRECHARGE:
            self._precharge_command(ba, a, what)
        elif command is Command.AUTO_REFRESH:
            self._auto_refresh(what)
        elif command is Command.LOAD_MODE_REGISTER:
            self._load_mode_register(ba, a, what)
        elif self.mode is None:
            raise self._violation(f"command before initialization: {what} before the mode register is set "
                                  f"(initialization: PRECHARGE ALL, {self.chip.init_refreshes} AUTO REFRESH, "
                                  f"LOAD MODE REGISTER)")
        elif command is Command.ACTIVE:
            self._activate(ba, a, what)
        elif command is Command.BURST_TERMINATE:
            self._burst_terminate(what)
        else:
            self._access(command, ba, a, what, dqm, dq_in, dq_in_driven)

    def _activate(self, ba: int, a: int, what: str) -> None:
        bank = self._banks[ba]
        if bank.row is not None:
            pending = f", its auto precharge pending ({bank.closing_by})" if bank.closing_at is not None else ""
            raise self._violation(f"ACTIVE on an open bank: {what} while row {bank.row} is open{pending}")
        self._require("tRP", self.chip.t_rp, bank.precharged_at, bank.precharged_by, what)
        self._require("tRC", self.chip.t_rc, bank.activated_at, "ACTIVE", what)
        for index, other in enumerate(self._banks):
            if index != ba:
                self._require("tRRD", self.chip.t_rrd, other.activated_at, f"ACTIVE bank {index}", what)
        bank.row, bank.activated_at = a % self.chip.rows, self.cycle

    def _access(self, command: Command, ba: int, a: int, what: str, dqm: int, dq_in: int,
                dq_in_driven: int) -> None:
        bank, mode = self._banks[ba], self.mode
        if bank.row is None:
            raise self._violation(f"{command.value} on a closed bank: {what}; ACTIVE a row first")
        if bank.closing_at is not None:
            raise self._violation(f"{what} while the bank's auto precharge is pending ({bank.closing_by})")
        self._require("tRCD", self.chip.t_rcd, bank.activated_at, "ACTIVE", what)
        auto = bool(a >> 10 & 1)
        length = 1 if command is Command.WRITE and mode.single_write else mode.burst_length
        if auto and length is None:
            raise self._violation(f"not modelled: {what}: auto precharge with a full-page burst")
        self._cut_bursts_for_access(command)
        cause = f"{command.value} at cycle {self.cycle}"
        first = self.cycle + (mode.cas_latency if command is Command.READ else 0)
        burst = Burst(ba, bank.row, a % self.chip.columns, length, first, auto, cause)
        if command is Command.READ:
            self._reads.append(burst)
            if auto:
                self._schedule_precharge(ba, self.cycle + length, f"auto precharge of the {cause}")
        else:
            self._write = burst
            self._take_write_beat(dqm, dq_in, dq_in_driven)
            if auto:
                last_beat = self.cycle + length - 1
                self._schedule_precharge(ba, last_beat + self.chip.t_wr.cycles(self.clock_mhz),
                                         f"auto precharge of the {cause}")

    def _cut_bursts_for_access(self, command: Command) -> None:
        """A READ or WRITE cuts the running bursts (and starts a cut auto-precharge burst's precharge)."""
        cut_at = self.cycle + self.mode.cas_latency if command is Command.READ else self.cycle + 1
        for burst in self._reads:
            if not burst.has_beat_from(cut_at):
                continue
            if command is Command.WRITE and self._dqm_before != 0b11:
                raise self._violation(f"READ to WRITE: the WRITE cuts the {burst.cause} whose data is still due; "
                                      f"the datasheet needs DQM high on the edge before the WRITE")
            burst.cut(cut_at)
            if burst.auto_precharge and self._banks[burst.bank].closing_at is not None:
                self._schedule_precharge(burst.bank, self.cycle, self._banks[burst.bank].closing_by)
        if self._write:
            if self._write.auto_precharge:
                self._schedule_precharge(self._write.bank, self.cycle + self.chip.t_wr.cycles(self.clock_mhz),
                                         self._banks[self._write.bank].closing_by)
            self._write = None

    def _burst_terminate(self, what: str) -> None:
        cut_at = self.cycle + self.mode.cas_latency
        running = [burst for burst in self._reads if burst.has_beat_from(cut_at)]
        running += [self._write] if self._write else []
        for burst in running:
            if burst.auto_precharge:
                raise self._violation(f"not modelled: {what} cuts the {burst.cause} with auto precharge")
            burst.cut(cut_at)
        self._write = None

    def _precharge_command(self, ba: int, a: int, what: str) -> None:
        targets = range(self.chip.banks) if a >> 10 & 1 else (ba,)
        for index in targets:
            bank = self._banks[index]
            if bank.closing_at is not None:
                raise self._violation(f"not modelled: {what} while bank {index}'s auto precharge is pending "
                                      f"({bank.closing_by})")
            if not bank.known:
                bank.known, bank.precharged_at, bank.precharged_by = True, self.cycle, "PRECHARGE"
            elif bank.row is not None:
                self._precharge(index, what, "PRECHARGE")
        if self._write and self._write.bank in targets:
            self._write = None

    def _precharge(self, index: int, what: str, by: str) -> None:
        """Close bank `index` now, checking tRAS and tWR; its read data stops CL - 1 edges on."""
        bank = self._banks[index]
        self._require("tRAS", self.chip.t_ras, bank.activated_at, f"ACTIVE bank {index} row {bank.row}", what)
        if bank.last_write_at >= bank.activated_at:
            self._require("tWR", self.chip.t_wr, bank.last_write_at, f"the last write data to bank {index}", what)
        bank.row, bank.closing_at = None, None
        bank.precharged_at, bank.precharged_by = self.cycle, by
        for burst in self._reads:
            if burst.bank == index:
                burst.cut(self.cycle + self.mode.cas_latency)

    def _schedule_precharge(self, index: int, edge: int, by: str) -> None:
        bank = self._banks[index]
        bank.closing_by = by
        if edge <= self.cycle:
            self._precharge(index, by, "auto precharge")
        else:
            bank.closing_at = edge

    def _auto_refresh(self, what: str) -> None:
        self._require_all_banks_idle(what)
        self._refreshed_at = self.cycle
        if self.mode is None:
            self._init_refreshes += 1
        else:
            self.refresh_debt = max(self.refresh_debt - 1, -self.chip.max_postponed_refreshes)

    def _load_mode_register(self, ba: int, a: int, what: str) -> None:
        self._require_all_banks_idle(what)
        if self.mode is None and self._init_refreshes < self.chip.init_refreshes:
            raise self._violation(f"command before initialization: {what} after {self._init_refreshes} AUTO REFRESH; "
                                  f"the datasheet's initialization is PRECHARGE ALL, {self.chip.init_refreshes} "
                                  f"AUTO REFRESH, then LOAD MODE REGISTER")
        if self._write or any(burst.has_beat_from(self.cycle + 1) for burst in self._reads):
            raise self._violation(f"{what} while a data burst is running")
        try:
            mode = ModeRegister.decode(ba, a, self.chip.cas_latencies(self.clock_mhz))
        except ValueError as error:
            raise self._violation(f"bad mode register: {what}: {error}") from None
        if self.mode is None:
            self._next_refresh_due = self.cycle + self._refresh_interval
        self.mode, self._mode_set_at = mode, self.cycle

    def _require_all_banks_idle(self, what: str) -> None:
        for index, bank in enumerate(self._banks):
            if not bank.known:
                raise self._violation(f"command before initialization: {what} before bank {index} was precharged "
                                      f"after power-up (PRECHARGE ALL first)")
            if bank.row is not None:
                raise self._violation(f"{what} with bank {index} open (row {bank.row}); precharge every bank first")
            self._require("tRP", self.chip.t_rp, bank.precharged_at, f"{bank.precharged_by} of bank {index}", what)

    # ---- per-edge bookkeeping ----------------------------------------------------------------

    def _check_clock_enable(self, cke: bool, command: Command) -> None:
        if self._started:
            if not cke:
                raise self._violation("not modelled: CKE low (power-down, self refresh, clock suspend)")
            return
        if command in IDLE:
            return
        need = self._power_up.cycles(self.clock_mhz)
        if self.cycle < need:
            raise self._violation(f"command before initialization: {command.value} during the power-up wait "
                                  f"({need} cycles: {self._power_up.describe(self.clock_mhz)})")
        if not (cke and self._cke_before):
            raise self._violation(f"command before initialization: {command.value} needs CKE high on its edge "
                                  f"and the one before (NOP with CKE high ends the power-up wait)")
        self._started = True

    def _advance(self) -> None:
        """Auto precharges due on this edge, tRAS max of open rows, refresh debt."""
        for index, bank in enumerate(self._banks):
            if bank.closing_at == self.cycle:
                self._precharge(index, bank.closing_by, "auto precharge")
            if bank.row is not None and self.cycle - bank.activated_at > self._ras_max_cycles:
                raise self._violation(f"tRAS max: bank {index} row {bank.row} open for "
                                      f"{self.cycle - bank.activated_at} cycles since its ACTIVE at cycle "
                                      f"{bank.activated_at}; at most {self._ras_max_cycles} "
                                      f"({self.chip.t_ras_max_ns:g} ns at {self.clock_mhz:g} MHz)")
        while self._next_refresh_due is not None and self.cycle >= self._next_refresh_due:
            self.refresh_debt += 1
            self._next_refresh_due += self._refresh_interval
            self._check_refresh_debt()

    def _check_refresh_debt(self) -> None:
        if self.refresh_debt > self.chip.max_postponed_refreshes:
            raise self._violation(f"missed refresh: {self.refresh_debt} AUTO REFRESH owed, at most "
                                  f"{self.chip.max_postponed_refreshes} may be postponed (tREFI "
                                  f"{self.chip.refresh_interval_ns:g} ns = {float(self._refresh_interval):.1f} cycles "
                                  f"at {self.clock_mhz:g} MHz); last AUTO REFRESH at cycle {self._refreshed_at}")

    def _take_write_beat(self, dqm: int, dq_in: int, dq_in_driven: int) -> None:
        burst = self._write
        beat = self.cycle - burst.first
        lanes = tuple(lane for lane in LANES if not dqm >> lane & 1)
        if lanes:
            if not dq_in_driven:
                raise self._violation(f"write data not driven: beat {beat} of the {burst.cause} has DQM = {dqm:#04b} "
                                      f"but the controller does not drive DQ")
            column = self.mode.column(burst.column, beat, self.chip.columns)
            self.memory.write_lanes(burst.bank, burst.row, column, dq_in, lanes)
            self._banks[burst.bank].last_write_at = self.cycle
        if burst.length is not None and beat == burst.length - 1:
            self._write = None

    def _read_beat(self, edge: int) -> int:
        """The read data due at `edge` (masked by DQM two edges before it); sets `_driving`."""
        self._reads = [burst for burst in self._reads if burst.has_beat_from(edge)]
        self._driving = None
        for burst in self._reads:
            beat = burst.beat_at(edge)
            lanes = tuple(lane for lane in LANES if not self._dqm_before >> lane & 1)
            if beat is None or not lanes:
                continue
            column = self.mode.column(burst.column, beat, self.chip.columns)
            row = self.memory.row(burst.bank, burst.row)
            value = 0
            for lane in lanes:
                if row is None or not row.written[column * 2 + lane]:
                    raise self._violation(f"read of never-written memory at bank {burst.bank} row {burst.row} "
                                          f"col {column} ({('low', 'high')[lane]} byte), beat {beat} of the "
                                          f"{burst.cause}, due at cycle {edge}")
                value |= int(row.data[column * 2 + lane]) << (8 * lane)
            self._driving = burst
            return value
        return 0

    # ---- messages ----------------------------------------------------------------------------

    def _require(self, rule: str, timing: Timing, since: int, since_what: str, what: str) -> None:
        """Raise unless `timing` has passed since edge `since` (the event `since_what`)."""
        need, gap = timing.cycles(self.clock_mhz), self.cycle - since
        if gap < need:
            raise self._violation(f"{what} only {gap} cycles after {since_what} at cycle {since}; "
                                  f"{rule} needs {need} ({timing.describe(self.clock_mhz)})")

    def _describe(self, command: Command, ba: int, a: int) -> str:
        if command is Command.ACTIVE:
            return f"ACTIVE bank {ba} row {a % self.chip.rows}"
        if command in (Command.READ, Command.WRITE):
            row = self._banks[ba].row
            auto = " with auto precharge" if a >> 10 & 1 else ""
            return (f"{command.value}{auto} bank {ba} {'(no open row)' if row is None else f'row {row}'} "
                    f"col {a % self.chip.columns}")
        if command is Command.PRECHARGE:
            return "PRECHARGE ALL" if a >> 10 & 1 else f"PRECHARGE bank {ba}"
        if command is Command.LOAD_MODE_REGISTER:
            return f"LOAD MODE REGISTER (BA = {ba}, A = {a:#06x})"
        return command.value

    def _violation(self, text: str) -> SdramViolation:
        return SdramViolation(f"cycle {self.cycle}: {text}")
