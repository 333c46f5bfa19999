"""`boards.ddr3.init.init_program` for the OrangeCrab's DDR3 at 48 MHz, decoded back: the DFI
injector writes reproduce litedram.init's sequence (recorded below from litedram 2024.12's
`get_sdram_phy_init_sequence` for the MT41K64M16 with the OrangeCrab's ECP5 PHY settings: CL 6,
CWL 5, RTT_NOM off), and the waits meet JEDEC DDR3's minimums (RESET# low 200 us, RESET# high to
CKE 500 us, tZQinit 512 tCK after ZQCL, the DDR3 clock twice the 48 MHz `sync`). On the DFI of
LiteDRAM's own core the same writes are checked by `bench/ddr3_litedram_sim.py`."""
from __future__ import annotations

from dataclasses import replace

from boards.ddr3.init import COMMAND, CONTROL, READ_BITSLIP, READ_DELAY, init_program
from ddr3_helpers import STAND_IN

CLOCK_HZ = 48e6
MRS = "DFII_COMMAND_RAS|DFII_COMMAND_CAS|DFII_COMMAND_WE|DFII_COMMAND_CS"
LITEDRAM_SEQUENCE = (
    ("Release reset", 0, 0, "DFII_CONTROL_ODT|DFII_CONTROL_RESET_N", 50000),
    ("Bring CKE high", 0, 0, "DFII_CONTROL_CKE|DFII_CONTROL_ODT|DFII_CONTROL_RESET_N", 10000),
    ("Load Mode Register 2, CWL=5", 512, 2, MRS, 0),
    ("Load Mode Register 3", 0, 3, MRS, 0),
    ("Load Mode Register 1", 2, 1, MRS, 0),
    ("Load Mode Register 0, CL=6, BL=8", 800, 0, MRS, 200),
    ("ZQ Calibration", 1024, 0, "DFII_COMMAND_WE|DFII_COMMAND_CS", 200),
)
CORE = replace(STAND_IN, init_sequence=LITEDRAM_SEQUENCE)


def decoded() -> tuple[list[tuple], list[tuple[str, int]]]:
    """The program as DFI events: ("control", bits, wait) and ("command", bits, address, bank,
    wait), and the read-leveling writes (CSR name, value) in order."""
    names = {address: name for name, address in CORE.csrs.items()}
    events, leveling, address, bank = [], [], 0, 0
    command = 0
    for step in init_program(CORE, CLOCK_HZ):
        name = names[step.address]
        assert name == step.name
        if name == "dfii_pi0_address0":
            address = step.value
        elif name == "dfii_pi0_baddress0":
            bank = step.value
        elif name == "dfii_pi0_command0":
            command = step.value
        elif name == "dfii_pi0_command_issue":
            events.append(("command", command, address, bank, step.wait))
        elif name == "dfii_control0":
            events.append(("control", step.value, step.wait))
        else:
            leveling.append((name, step.value))
    return events, leveling


def flags(names: str, table: dict[str, int]) -> int:
    return sum(table[name] for name in names.split("|"))


def test_the_injector_writes_are_litedram_init_sequence():
    events, _ = decoded()
    expected = [("control", 0)]  # software control, RESET# and CKE low
    for _, address, bank, command, _ in LITEDRAM_SEQUENCE:
        if command.startswith("DFII_CONTROL"):
            expected.append(("control", flags(command, CONTROL)))
        else:
            expected.append(("command", flags(command, COMMAND), address, bank))
    expected.append(("control", CONTROL["DFII_CONTROL_SEL"]))  # the controller takes over
    assert [event[:-1] for event in events] == expected


def test_the_waits_meet_jedec_ddr3():
    events, _ = decoded()
    cycles_per_us = CLOCK_HZ / 1e6
    assert events[0][-1] >= 200 * cycles_per_us  # RESET# low
    assert events[1][-1] >= 500 * cycles_per_us  # RESET# released, CKE low
    zqcl = next(event for event in events if event[0] == "command" and event[2] == 1024)
    assert 2 * zqcl[-1] >= 512  # two DDR3 clocks per `sync` cycle
    assert all(event[-1] >= delay for event, (*_, delay) in zip(events[1:], LITEDRAM_SEQUENCE))


def test_read_leveling_is_fixed_on_both_lanes_then_released():
    _, leveling = decoded()
    assert leveling == [("dly_sel0", 0b11), ("rdly_dq_rst", 1), *[("rdly_dq_inc", 1)] * READ_DELAY,
                        ("rdly_dq_bitslip_rst", 1), *[("rdly_dq_bitslip", 1)] * READ_BITSLIP, ("dly_sel0", 0)]
