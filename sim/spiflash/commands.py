"""The instructions the flash model runs, as the datasheet lays out their clocks.

An instruction is 8 clocks on IO0 (none in continuous read mode), then an address of 24 bits on
`address_lines` lines, a mode byte on the same lines, `dummy` clocks, then either data the chip
drives on `data_lines` lines (IO1 alone for one line, IO3..0 for four, high nibble first) or
`input_bits` the controller sends on IO0. Bits go most significant first.
"""
from __future__ import annotations

from dataclasses import dataclass

ADDRESS_BITS = 24


@dataclass(frozen=True)
class Command:
    """One instruction's layout and rules."""

    opcode: int
    name: str
    address_lines: int = 0  # 0: no address
    mode_byte: bool = False
    dummy: int = 0
    data_lines: int = 0  # lines the chip drives its data on; 0: none
    input_bits: int = 0  # bits the controller sends after the instruction, on IO0
    quad: bool = False  # needs QE = 1
    read_data: bool = False  # limited to fR
    writes: bool = False  # changes the chip's state: tSHSL2 before the next instruction
    while_busy: bool = False  # accepted during a status register write

    def address_clocks(self) -> int:
        return ADDRESS_BITS // self.address_lines if self.address_lines else 0

    def mode_clocks(self) -> int:
        return 8 // self.address_lines if self.mode_byte else 0

    def data_start(self, continuous: bool) -> int:
        """The clock (counted from /CS low) of the first data or input bit."""
        return (0 if continuous else 8) + self.address_clocks() + self.mode_clocks() + self.dummy

    @property
    def reads_array(self) -> bool:
        return bool(self.address_lines and self.data_lines)


READ_DATA = Command(0x03, "READ DATA", address_lines=1, data_lines=1, read_data=True)
FAST_READ = Command(0x0B, "FAST READ", address_lines=1, dummy=8, data_lines=1)
FAST_READ_QUAD_OUTPUT = Command(0x6B, "FAST READ QUAD OUTPUT", address_lines=1, dummy=8, data_lines=4, quad=True)
FAST_READ_QUAD_IO = Command(0xEB, "FAST READ QUAD I/O", address_lines=4, mode_byte=True, dummy=4, data_lines=4,
                            quad=True)
READ_STATUS_1 = Command(0x05, "READ STATUS REGISTER-1", data_lines=1, while_busy=True)
READ_STATUS_2 = Command(0x35, "READ STATUS REGISTER-2", data_lines=1, while_busy=True)
WRITE_ENABLE = Command(0x06, "WRITE ENABLE", writes=True)
WRITE_DISABLE = Command(0x04, "WRITE DISABLE", writes=True)
WRITE_STATUS_2 = Command(0x31, "WRITE STATUS REGISTER-2", input_bits=8, writes=True)
ENABLE_RESET = Command(0x66, "ENABLE RESET", writes=True)
RESET_DEVICE = Command(0x99, "RESET DEVICE", writes=True)
RELEASE_POWER_DOWN = Command(0xAB, "RELEASE POWER-DOWN / DEVICE ID", dummy=24, data_lines=1)
POWER_DOWN = Command(0xB9, "POWER-DOWN", writes=True)
JEDEC_ID = Command(0x9F, "READ JEDEC ID", data_lines=1)
MODE_BIT_RESET = Command(0xFF, "CONTINUOUS READ MODE RESET")  # ignored unless in continuous read mode

COMMANDS = {command.opcode: command for command in (
    READ_DATA, FAST_READ, FAST_READ_QUAD_OUTPUT, FAST_READ_QUAD_IO, READ_STATUS_1, READ_STATUS_2, WRITE_ENABLE,
    WRITE_DISABLE, WRITE_STATUS_2, ENABLE_RESET, RESET_DEVICE, RELEASE_POWER_DOWN, POWER_DOWN, JEDEC_ID,
    MODE_BIT_RESET)}

NOT_MODELLED = {  # instructions of the W25Q128JV the model refuses by name
    0x01: "WRITE STATUS REGISTER-1", 0x02: "PAGE PROGRAM", 0x11: "WRITE STATUS REGISTER-3",
    0x15: "READ STATUS REGISTER-3", 0x20: "SECTOR ERASE", 0x32: "QUAD INPUT PAGE PROGRAM",
    0x36: "INDIVIDUAL BLOCK LOCK", 0x39: "INDIVIDUAL BLOCK UNLOCK", 0x3B: "FAST READ DUAL OUTPUT",
    0x3D: "READ BLOCK LOCK", 0x42: "PROGRAM SECURITY REGISTERS", 0x44: "ERASE SECURITY REGISTERS",
    0x48: "READ SECURITY REGISTERS", 0x4B: "READ UNIQUE ID", 0x50: "VOLATILE SR WRITE ENABLE",
    0x52: "32KB BLOCK ERASE", 0x5A: "READ SFDP REGISTER", 0x60: "CHIP ERASE", 0x75: "ERASE/PROGRAM SUSPEND",
    0x7A: "ERASE/PROGRAM RESUME", 0x7E: "GLOBAL BLOCK LOCK", 0x90: "MANUFACTURER/DEVICE ID",
    0x92: "DUAL I/O DEVICE ID", 0x94: "QUAD I/O DEVICE ID", 0x98: "GLOBAL BLOCK UNLOCK",
    0xBB: "FAST READ DUAL I/O", 0xC7: "CHIP ERASE", 0xD8: "64KB BLOCK ERASE",
}
