"""DDR3 initialization without a CPU: `init_program` turns litedram.init's sequence for the
module into CSR writes, each followed by a wait; `InitSequencer` performs them on the core's CSR
bus, then sets `done`.

The program, as LiteX's BIOS does it (`sdram_init`), with the waits in `sync` cycles:
1. software control of the DFI with RESET# low and CKE low (`dfii_control` = 0) for
   `RESET_LOW_US` (JEDEC: at least 200 us; the BIOS relies on the time the CPU took to boot);
2. each entry of litedram.init's sequence: the address and bank into `dfii_pi0_address` and
   `dfii_pi0_baddress`, then the control bits into `dfii_control` (RESET# release, CKE high) or
   the command into `dfii_pi0_command` and a write to `dfii_pi0_command_issue` (MRS, ZQCL), then
   its delay; a delay is at least what the datasheet asks after that step (`minimum_waits`:
   500 us after RESET#, tZQinit = 512 tCK after ZQCL), since litedram's figures are loop counts
   of a CPU that takes several cycles per count;
3. read leveling with fixed values (no board here to scan them): both byte lanes selected
   (`dly_sel`), the read delay and the bit slip reset and stepped to `READ_DELAY` and
   `READ_BITSLIP`, then `dly_sel` cleared (which also releases the DQSBUFMs' PAUSE);
4. hardware control (`dfii_control` = SEL): the controller takes the DFI.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from boards.ddr3.litedram import LiteDramDdr3
from boards.ddr3.native import CSR_BUS

CONTROL = {"DFII_CONTROL_SEL": 0x01, "DFII_CONTROL_CKE": 0x02, "DFII_CONTROL_ODT": 0x04,
           "DFII_CONTROL_RESET_N": 0x08}
COMMAND = {"DFII_COMMAND_CS": 0x01, "DFII_COMMAND_WE": 0x02, "DFII_COMMAND_CAS": 0x04, "DFII_COMMAND_RAS": 0x08,
           "DFII_COMMAND_WRDATA": 0x10, "DFII_COMMAND_RDDATA": 0x20}
"""litedram.init's flag names and the DFI injector's bits (`litedram.dfii`)."""
RESET_LOW_US = 200
RESET_RELEASE_US = 500  # RESET# high to CKE high (JEDEC DDR3)
ZQINIT_CK = 512  # ZQCL at initialization, in DDR3 clocks
NPHASES = 2  # DDR3 clocks per `sync` cycle (the ECP5 PHY's DFI phases)
READ_DELAY = 1
READ_BITSLIP = 0
"""Read leveling, fixed (not verified on a board): on the OrangeCrab at a 48 MHz system clock
its maker reported reads passing at delays 0 to 2 with no bit slip on both byte lanes (LiteDRAM
issue 103: the pattern |11100000| for either lane), so the middle of that window."""


@dataclass(frozen=True)
class CsrWrite:
    """One step: `value` to CSR word `address` (`name` for reading), then `wait` idle cycles."""

    name: str
    address: int
    value: int
    wait: int = 0


def flags(names: str, table: dict[str, int]) -> int:
    """The bits of `names` ("A|B") in `table`."""
    return sum(table[name] for name in names.split("|"))


def minimum_waits(clock_hz: float) -> dict[str, int]:
    """Cycles the datasheet asks after a step of litedram.init's DDR3 sequence, by its comment's
    first words."""
    return {"Release reset": round(RESET_RELEASE_US * 1e-6 * clock_hz) + 1, "ZQ Calibration": ZQINIT_CK // NPHASES}


def init_program(core: LiteDramDdr3, clock_hz: float) -> tuple[CsrWrite, ...]:
    """The CSR writes that initialize `core`'s DDR3 at `clock_hz` (the module docstring)."""
    csr = core.csrs
    steps = [CsrWrite("dfii_control0", csr["dfii_control0"], 0, round(RESET_LOW_US * 1e-6 * clock_hz) + 1)]
    minimum = minimum_waits(clock_hz)
    for comment, address, bank, command, delay in core.init_sequence:
        wait = max(delay, *(cycles for step, cycles in minimum.items() if comment.startswith(step)), 0)
        steps += [CsrWrite("dfii_pi0_address0", csr["dfii_pi0_address0"], address),
                  CsrWrite("dfii_pi0_baddress0", csr["dfii_pi0_baddress0"], bank)]
        if command.startswith("DFII_CONTROL"):
            steps.append(CsrWrite("dfii_control0", csr["dfii_control0"], flags(command, CONTROL), wait))
        else:
            steps += [CsrWrite("dfii_pi0_command0", csr["dfii_pi0_command0"], flags(command, COMMAND)),
                      CsrWrite("dfii_pi0_command_issue", csr["dfii_pi0_command_issue"], 1, wait)]
    lanes = (1 << 2) - 1
    steps += [CsrWrite("dly_sel0", csr["dly_sel0"], lanes), CsrWrite("rdly_dq_rst", csr["rdly_dq_rst"], 1)]
    steps += [CsrWrite("rdly_dq_inc", csr["rdly_dq_inc"], 1)] * READ_DELAY
    steps += [CsrWrite("rdly_dq_bitslip_rst", csr["rdly_dq_bitslip_rst"], 1)]
    steps += [CsrWrite("rdly_dq_bitslip", csr["rdly_dq_bitslip"], 1)] * READ_BITSLIP
    steps += [CsrWrite("dly_sel0", csr["dly_sel0"], 0),
              CsrWrite("dfii_control0", csr["dfii_control0"], CONTROL["DFII_CONTROL_SEL"])]
    return tuple(steps)


class InitSequencer(wiring.Component):
    """Performs `program` on `csr`, one write per step then its wait; `done` after the last."""

    def __init__(self, program: tuple[CsrWrite, ...]):
        self.program = program
        super().__init__({"csr": Out(CSR_BUS), "done": Out(1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        step = Signal(range(len(self.program) + 1))
        wait = Signal(range(max(step.wait for step in self.program) + 2))
        with m.If(wait != 0):
            m.d.sync += wait.eq(wait - 1)
        with m.Elif(~self.done):
            m.d.comb += self.csr.we.eq(1)
            with m.Switch(step):
                for index, write in enumerate(self.program):
                    with m.Case(index):
                        m.d.comb += [self.csr.adr.eq(write.address), self.csr.dat_w.eq(write.value)]
                        m.d.sync += wait.eq(write.wait)
            m.d.sync += step.eq(step + 1)
            with m.If(step == len(self.program) - 1):
                m.d.sync += self.done.eq(1)
        return m
