"""The SDRAM chip model (`sim.sdram`): legal sequences return the data at the datasheet's edges,
and each datasheet rule broken raises `SdramViolation` naming the rule."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from amaranth import ClockDomain, Module
from amaranth.sim import Simulator

from sim.sdram.adapter import SDRAM_PINS, sdram_process
from sim.sdram.chips import IS42S16160G_7, Timing
from sim.sdram.device import SdramDevice, SdramViolation
from sim.sdram.mode import ModeRegister

CHIP = replace(IS42S16160G_7, power_up_ns=200)  # the datasheet's 100 us would cost 10,000 edges
MHZ = 100  # 10 ns: tRCD = tRP = tRRD = tWR = tMRD = 2, tRAS = 4, tRC = tRFC = 6 cycles
AP = 1 << 10  # A10: auto precharge (READ/WRITE), all banks (PRECHARGE)
PINS = {  # (CS#, RAS#, CAS#, WE#), written from the datasheet's truth table
    "NOP": (0, 1, 1, 1), "DESELECT": (1, 1, 1, 1), "ACTIVE": (0, 0, 1, 1), "READ": (0, 1, 0, 1),
    "WRITE": (0, 1, 0, 0), "BST": (0, 1, 1, 0), "PRECHARGE": (0, 0, 1, 0), "REFRESH": (0, 0, 0, 1),
    "MRS": (0, 0, 0, 0),
}
BL_CODES = {1: 0b000, 2: 0b001, 4: 0b010, 8: 0b011, None: 0b111}


def mode_bits(cl: int = 2, bl: int | None = 4, interleaved: bool = False, single_write: bool = False) -> int:
    return BL_CODES[bl] | interleaved << 3 | cl << 4 | single_write << 9


class Bus:
    """Drives a device one edge per call and records the data it drives, by the edge it is due."""

    def __init__(self, device: SdramDevice):
        self.device = device
        self.data: dict[int, int] = {}

    @property
    def edge(self) -> int:
        return self.device.cycle

    def cmd(self, name: str = "NOP", ba: int = 0, a: int = 0, dqm: int = 0, dq: int | None = None,
            cke: int = 1) -> None:
        value, driven = self.device.clock(cke, *PINS[name], ba, a, dqm, dq or 0, dq is not None)
        if driven:
            self.data[self.device.cycle] = value

    def nop(self, edges: int, dqm: int = 0) -> None:
        for _ in range(edges):
            self.cmd(dqm=dqm)

    def init(self, mode: int) -> None:
        """The datasheet's initialization, each wait exactly the minimum."""
        chip, mhz = self.device.chip, self.device.clock_mhz
        self.nop(Timing(chip.power_up_ns).cycles(mhz) - self.edge)
        self.cmd("PRECHARGE", a=AP)
        self.nop(chip.t_rp.cycles(mhz) - 1)
        for _ in range(chip.init_refreshes):
            self.cmd("REFRESH")
            self.nop(chip.t_rfc.cycles(mhz) - 1)
        self.cmd("MRS", a=mode)
        self.nop(chip.t_mrd.cycles(mhz) - 1)


def device(chip=CHIP, mhz=MHZ) -> SdramDevice:
    return SdramDevice(chip, mhz)


def ready(mode: int = mode_bits(), chip=CHIP, mhz=MHZ) -> Bus:
    bus = Bus(device(chip, mhz))
    bus.init(mode)
    return bus


def byte_address(bank: int, row: int, col: int) -> int:
    return ((row * 4 + bank) * 512 + col) * 2


# ---- legal sequences ---------------------------------------------------------------------------

@pytest.mark.parametrize("cl", [2, 3])
@pytest.mark.parametrize("bl", [1, 2, 4, 8])
def test_write_then_read_returns_the_data_cas_latency_edges_after_the_read(cl, bl):
    bus = ready(mode_bits(cl, bl))
    words = [0x1111 * (i + 1) ^ 0x0F0F for i in range(bl)]
    bus.cmd("ACTIVE", ba=1, a=17)
    bus.nop(1)
    bus.cmd("WRITE", ba=1, a=42, dq=words[0])
    for word in words[1:]:
        bus.cmd(dq=word)
    read_at = bus.edge
    bus.cmd("READ", ba=1, a=42)
    bus.nop(cl + bl)
    assert bus.data == {read_at + cl + i: word for i, word in enumerate(words)}
    block = 42 & ~(bl - 1)  # the burst wraps within its aligned block of bl columns
    columns = [block + (42 - block + i) % bl for i in range(bl)]
    stored = bus.device.memory.read_back(byte_address(1, 17, min(columns)), 2 * bl)
    assert list(stored.view("<u2")) == [words[columns.index(c)] for c in sorted(columns)]


def test_interleaved_burst_order():
    mode = ModeRegister.decode(0, mode_bits(bl=8, interleaved=True), (2, 3))
    assert [mode.column(5, beat, 512) for beat in range(8)] == [5, 4, 7, 6, 1, 0, 3, 2]
    full_page = ModeRegister.decode(0, mode_bits(bl=None), (2,))
    assert [full_page.column(510, beat, 512) for beat in range(3)] == [510, 511, 0]


def test_dqm_masks_write_lanes_at_once_and_read_lanes_two_edges_later():
    bus = ready(mode_bits(cl=2, bl=2))
    bus.device.memory.preload(byte_address(0, 3, 8), bytes([0x11, 0x22, 0x33, 0x44]))
    bus.cmd("ACTIVE", a=3)
    bus.nop(1)
    bus.cmd("WRITE", a=8, dq=0xAABB, dqm=0b10)  # high byte masked: 0x22 stays
    bus.cmd(dq=0xCCDD, dqm=0b01)  # low byte masked: 0x33 stays
    read_at = bus.edge
    bus.cmd("READ", a=8)
    bus.cmd(dqm=0b10)  # masks the high byte of the data due two edges later (read_at + 3)
    bus.nop(3)
    assert bus.data == {read_at + 2: 0x22BB, read_at + 3: 0x0033}
    assert bytes(bus.device.memory.read_back(byte_address(0, 3, 8), 4)) == bytes([0xBB, 0x22, 0x33, 0xCC])


def test_a_read_cut_by_a_read_precharge_or_burst_terminate_stops_cas_latency_edges_after_it():
    bus = ready(mode_bits(cl=3, bl=8))
    bus.device.memory.preload(byte_address(2, 5, 0), bytes(range(32)))
    bus.cmd("ACTIVE", ba=2, a=5)
    bus.nop(1)
    first = bus.edge
    bus.cmd("READ", ba=2, a=0)
    bus.cmd("READ", ba=2, a=8)  # cuts the first burst after one beat
    bus.nop(3)
    bus.cmd("PRECHARGE", ba=2)  # the second burst keeps CL - 1 = 2 beats after it
    bus.nop(8)
    word = lambda col: (2 * col + 1) << 8 | 2 * col
    assert bus.data == {first + 3: word(0), first + 4: word(8), first + 5: word(9), first + 6: word(10),
                        first + 7: word(11)}


def test_full_page_read_runs_around_the_row_until_burst_terminate():
    bus = ready(mode_bits(cl=2, bl=None))
    bus.device.memory.preload(byte_address(0, 0, 0), bytes(1024))
    bus.cmd("ACTIVE")
    bus.nop(1)
    read_at = bus.edge
    bus.cmd("READ", a=510)
    bus.nop(599)
    bus.cmd("BST")
    bus.nop(4)
    assert sorted(bus.data) == list(range(read_at + 2, read_at + 600 + 2))


def test_auto_precharge_closes_the_bank_and_a_write_cut_by_dqm_and_precharge_is_legal():
    bus = ready(mode_bits(cl=2, bl=4))
    bus.cmd("ACTIVE", ba=3, a=9)
    bus.nop(1)
    bus.cmd("WRITE", ba=3, a=0 | AP, dq=1)
    for word in (2, 3, 4):
        bus.cmd(dq=word)
    bus.nop(3)  # the precharge begins tWR = 2 edges after the last beat; tRP = 2 later the bank is idle
    bus.cmd("ACTIVE", ba=3, a=9)
    bus.nop(1)
    bus.cmd("WRITE", ba=3, a=4, dq=5)
    bus.cmd(dq=6)
    bus.cmd(dqm=0b11)  # the rest of the burst masked: tWR counts from the beat before
    bus.cmd("PRECHARGE", ba=3, dqm=0b11)
    bus.nop(2)
    assert list(bus.device.memory.read_back(byte_address(3, 9, 0), 12).view("<u2")) == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="never written"):
        bus.device.memory.read_back(byte_address(3, 9, 6), 2)


def test_a_refresh_every_interval_keeps_the_device_happy():
    bus = ready()
    for _ in range(20):
        bus.nop(779)
        bus.cmd("REFRESH")
    bus.device.finish()
    assert bus.device.refresh_debt <= 0


def test_at_most_8_refreshes_may_be_pulled_in():
    bus = ready()
    for _ in range(12):
        bus.cmd("REFRESH")
        bus.nop(5)
    assert bus.device.refresh_debt == -8


def test_an_access_to_another_bank_starts_a_cut_auto_precharge_burst_precharge():
    bus = ready(mode_bits(cl=2, bl=8))
    for bank in (0, 1):
        bus.device.memory.preload(byte_address(bank, 0, 0), bytes([bank + 1]) * 16)
    bus.cmd("ACTIVE", ba=0)
    bus.nop(1)
    bus.cmd("ACTIVE", ba=1)
    bus.nop(1)
    read_at = bus.edge
    bus.cmd("READ", ba=0, a=AP)  # alone, bank 0 would precharge 8 edges later
    bus.nop(1)
    bus.cmd("READ", ba=1)  # cuts it: bank 0's precharge begins here (tRAS is met)
    bus.nop(1)
    bus.cmd("ACTIVE", ba=0)  # tRP after that precharge
    bus.nop(8)
    assert [bus.data[read_at + 2 + i] for i in range(10)] == [0x0101] * 2 + [0x0202] * 8


def test_preload_and_read_back_use_row_bank_column_order():
    memory = device().memory
    assert memory.address(0x0) == (0, 0, 0)
    assert memory.address(0x3FF) == (0, 0, 511)
    assert memory.address(0x400) == (1, 0, 0)
    assert memory.address(0x1000) == (0, 1, 0)
    memory.preload(0x3FE, b"\x01\x02\x03\x04")
    assert bytes(memory.read_back(0x3FE, 4)) == b"\x01\x02\x03\x04"
    with pytest.raises(ValueError, match="never written"):
        memory.read_back(0x3FE, 5)
    with pytest.raises(ValueError, match="outside"):
        memory.address(32 << 20)
    with pytest.raises(ValueError, match="uint8"):
        memory.preload(0, np.arange(4))


# ---- one violation per rule ---------------------------------------------------------------------

def test_trcd():
    bus = ready()
    bus.cmd("ACTIVE", ba=2, a=17)
    with pytest.raises(SdramViolation, match=r"READ bank 2 row 17 col 40 only 1 cycles after ACTIVE .*tRCD needs 2 "
                                             r"\(15 ns at 100 MHz\)"):
        bus.cmd("READ", ba=2, a=40)


def test_trp():
    bus = ready()
    bus.cmd("ACTIVE")
    bus.nop(3)
    bus.cmd("PRECHARGE")
    with pytest.raises(SdramViolation, match="tRP needs 2"):
        bus.cmd("ACTIVE")


def test_trp_after_auto_precharge():
    bus = ready(mode_bits(bl=1))
    bus.cmd("ACTIVE")
    bus.nop(3)
    bus.cmd("WRITE", a=AP, dq=5)
    bus.nop(2)  # the auto precharge begins tWR = 2 edges after the data
    with pytest.raises(SdramViolation, match="after auto precharge .*tRP needs 2"):
        bus.cmd("ACTIVE")


def test_tras_min():
    bus = ready()
    bus.cmd("ACTIVE")
    bus.nop(2)
    with pytest.raises(SdramViolation, match=r"PRECHARGE bank 0 only 3 cycles after ACTIVE .*tRAS needs 4"):
        bus.cmd("PRECHARGE")


def test_tras_max():
    bus = ready(chip=replace(CHIP, t_ras_max_ns=1000))
    bus.cmd("ACTIVE")
    bus.nop(99)
    with pytest.raises(SdramViolation, match="tRAS max: bank 0 row 0 open for 101 cycles"):
        bus.nop(2)


def test_trc():
    bus = ready(mode_bits(cl=3), mhz=133)  # 7.5 ns: tRAS 5 + tRP 2 < tRC 8
    bus.cmd("ACTIVE")
    bus.nop(4)
    bus.cmd("PRECHARGE")
    bus.nop(1)
    with pytest.raises(SdramViolation, match="only 7 cycles after ACTIVE .*tRC needs 8"):
        bus.cmd("ACTIVE")


def test_trrd():
    bus = ready()
    bus.cmd("ACTIVE", ba=0)
    with pytest.raises(SdramViolation, match="ACTIVE bank 1 row 0 only 1 cycles after ACTIVE bank 0 .*tRRD"):
        bus.cmd("ACTIVE", ba=1)


def test_twr():
    bus = ready(mode_bits(bl=1))
    bus.cmd("ACTIVE")
    bus.nop(3)
    bus.cmd("WRITE", dq=7)
    with pytest.raises(SdramViolation, match="only 1 cycles after the last write data .*tWR needs 2"):
        bus.cmd("PRECHARGE")


def test_trfc():
    bus = ready()
    bus.cmd("REFRESH")
    bus.nop(4)
    with pytest.raises(SdramViolation, match="ACTIVE bank 0 row 0 only 5 cycles after AUTO REFRESH .*tRFC needs 6"):
        bus.cmd("ACTIVE")


def test_tmrd():
    bus = ready()
    bus.cmd("MRS", a=mode_bits(cl=3))
    with pytest.raises(SdramViolation, match="tMRD needs 2"):
        bus.cmd("ACTIVE")


def test_missed_refresh():
    bus = ready()
    bus.nop(8 * 782)  # tREFI = 781.25 cycles: 8 owed, the most that may be postponed
    assert bus.device.refresh_debt == 8
    bus.device.finish()
    with pytest.raises(SdramViolation, match="missed refresh: 9 AUTO REFRESH owed, at most 8"):
        bus.nop(782)


def test_finish_reports_a_refresh_debt_over_the_limit():
    bus = ready()
    bus.device.refresh_debt = 9
    with pytest.raises(SdramViolation, match="missed refresh"):
        bus.device.finish()


def test_read_of_never_written_memory():
    bus = ready(mode_bits(bl=2))
    bus.device.memory.preload(byte_address(0, 0, 0), b"\x01\x02\x03")
    bus.cmd("ACTIVE")
    bus.nop(1)
    bus.cmd("READ", a=0)
    bus.nop(1)
    with pytest.raises(SdramViolation, match=r"read of never-written memory at bank 0 row 0 col 1 \(high byte\)"):
        bus.nop(1)


def test_a_masked_lane_of_never_written_memory_is_not_read():
    bus = ready(mode_bits(bl=2))
    bus.device.memory.preload(byte_address(0, 0, 0), b"\x01\x02\x03")
    bus.cmd("ACTIVE")
    bus.nop(1)
    bus.cmd("READ", a=0)
    bus.cmd(dqm=0b10)
    bus.nop(3)
    assert list(bus.data.values()) == [0x0201, 0x0003]


def test_read_on_a_closed_bank():
    bus = ready()
    with pytest.raises(SdramViolation, match=r"READ on a closed bank: READ bank 1 \(no open row\) col 3"):
        bus.cmd("READ", ba=1, a=3)


def test_active_on_an_open_bank():
    bus = ready()
    bus.cmd("ACTIVE", a=1)
    bus.nop(6)
    with pytest.raises(SdramViolation, match="ACTIVE on an open bank: ACTIVE bank 0 row 2 while row 1 is open"):
        bus.cmd("ACTIVE", a=2)


def test_command_before_initialization():
    bus = Bus(device())
    bus.nop(5)
    with pytest.raises(SdramViolation, match="cycle 5: command before initialization: PRECHARGE during the power-up "
                                             r"wait \(20 cycles"):
        bus.cmd("PRECHARGE", a=AP)


def test_active_before_the_mode_register_is_set():
    bus = Bus(device())
    bus.nop(20)
    bus.cmd("PRECHARGE", a=AP)
    bus.nop(1)
    with pytest.raises(SdramViolation, match="command before initialization: ACTIVE bank 0 row 0 before the mode "
                                             "register is set"):
        bus.cmd("ACTIVE")


def test_load_mode_register_before_two_refreshes():
    bus = Bus(device())
    bus.nop(20)
    bus.cmd("PRECHARGE", a=AP)
    bus.nop(1)
    bus.cmd("REFRESH")
    bus.nop(5)
    with pytest.raises(SdramViolation, match="command before initialization: .* after 1 AUTO REFRESH"):
        bus.cmd("MRS", a=mode_bits())


def test_refresh_before_the_banks_are_precharged():
    bus = Bus(device())
    bus.nop(20)
    with pytest.raises(SdramViolation, match="initialization: AUTO REFRESH before bank 0 was precharged"):
        bus.cmd("REFRESH")


@pytest.mark.parametrize("mode, reason", [
    (0b100 | 2 << 4, "burst length code"),
    (0b111 | 1 << 3 | 2 << 4, "full-page burst must be sequential"),
    (0b010 | 1 << 4, "CAS latency code"),
    (0b010 | 2 << 4 | 1 << 7, "operating mode"),
    (0b010 | 2 << 4 | 1 << 11, "reserved bits"),
])
def test_bad_mode_register(mode, reason):
    bus = Bus(device())
    with pytest.raises(SdramViolation, match=f"bad mode register: .*{reason}"):
        bus.init(mode)


def test_cas_latency_2_is_refused_above_100_mhz():
    bus = Bus(device(mhz=133))
    with pytest.raises(SdramViolation, match="bad mode register: .*CAS latency 2 is not supported at this clock"):
        bus.init(mode_bits(cl=2))
    with pytest.raises(ValueError, match="no CAS latency at 150 MHz"):
        device(mhz=150)


def test_bus_contention():
    bus = ready(mode_bits(cl=2, bl=4))
    bus.device.memory.preload(byte_address(0, 0, 0), bytes(8))
    bus.cmd("ACTIVE")
    bus.nop(1)
    bus.cmd("READ", a=0)
    bus.nop(2)
    with pytest.raises(SdramViolation, match="bus contention: the controller drives DQ while the chip drives read "
                                             "data of the READ at cycle"):
        bus.cmd("WRITE", a=4, dq=1)  # the read's second beat is due on this edge


def test_read_to_write_needs_dqm_high_before_the_write():
    bus = ready(mode_bits(cl=2, bl=8))
    bus.device.memory.preload(byte_address(0, 0, 0), bytes(16))
    bus.cmd("ACTIVE")
    bus.nop(1)
    bus.cmd("READ", a=0)
    bus.nop(1)
    bus.nop(1, dqm=0b11)  # masks the beat due on the WRITE's edge, but not the one after
    bus.cmd(dqm=0)
    with pytest.raises(SdramViolation, match="READ to WRITE: .*DQM high on the edge before the WRITE"):
        bus.cmd("WRITE", a=8, dq=1)


def test_write_data_must_be_driven():
    bus = ready(mode_bits(bl=2))
    bus.cmd("ACTIVE")
    bus.nop(1)
    bus.cmd("WRITE", dq=1)
    with pytest.raises(SdramViolation, match="write data not driven: beat 1"):
        bus.cmd()


def test_cke_low_after_initialization_is_not_modelled():
    bus = ready()
    with pytest.raises(SdramViolation, match="not modelled: CKE low"):
        bus.cmd(cke=0)


def test_the_shipped_chip_keeps_the_datasheet_power_up_wait():
    assert IS42S16160G_7.power_up_ns == 100_000
    assert Timing(IS42S16160G_7.power_up_ns).cycles(75) == 7500


# ---- the Amaranth adapter -----------------------------------------------------------------------

def test_amaranth_testbench_through_the_adapter_reads_back_what_it_wrote():
    mhz, cl = 75, 2  # 13.3 ns: every delay but tRAS (3), tRC and tRFC (5) is 2 cycles
    model = SdramDevice(CHIP, mhz)
    pins = SDRAM_PINS.create()
    m = Module()
    m.domains.sync = ClockDomain()
    read_data = []  # what the chip drove into each edge, by edge

    async def testbench(ctx):
        async def edge(command="NOP", ba=0, a=0, dqm=0, dq=None):
            cs_n, ras_n, cas_n, we_n = PINS[command]
            for signal, value in ((pins.cke, 1), (pins.cs_n, cs_n), (pins.ras_n, ras_n), (pins.cas_n, cas_n),
                                  (pins.we_n, we_n), (pins.ba, ba), (pins.a, a), (pins.dqm, dqm),
                                  (pins.dq_o, dq or 0), (pins.dq_oe, dq is not None)):
                ctx.set(signal, value)
            *_, dq_i = await ctx.tick().sample(pins.dq_i)
            read_data.append(dq_i)

        for _ in range(CHIP.power_up_ns * mhz // 1000 + 1):
            await edge()
        await edge("PRECHARGE", a=AP)
        await edge()
        for _ in range(2):
            await edge("REFRESH")
            for _ in range(4):
                await edge()
        await edge("MRS", a=mode_bits(cl, bl=4))
        await edge()
        await edge("ACTIVE", ba=1, a=300)
        await edge()
        words = [0xBEEF, 0xCAFE, 0x1234, 0x5678]
        await edge("WRITE", ba=1, a=64, dq=words[0])
        for word in words[1:]:
            await edge(dq=word)
        read_at = len(read_data)
        await edge("READ", ba=1, a=64)
        for _ in range(cl + 4):
            await edge()
        assert [read_data[read_at + cl + i] for i in range(4)] == words
        assert read_data[read_at + cl + 4] == 0  # the chip no longer drives DQ

    sim = Simulator(m)
    sim.add_clock(1e-6 / mhz)
    sim.add_process(sdram_process(model, pins))
    sim.add_testbench(testbench)
    sim.run()
    model.finish()


# ---- NOP edges at once -------------------------------------------------------------------------

def _idle_run(at_once: bool, tail: str) -> tuple:
    """Writes with auto precharge and refreshes between random NOP gaps (`nop_edges` or one
    `clock` per edge), then `tail`: a row left open past tRAS max, or refreshes stopped."""
    bus = ready(mode_bits(bl=1), chip=replace(CHIP, t_ras_max_ns=5000))
    rng = np.random.default_rng(3)

    def idle(edges: int) -> None:
        bus.device.nop_edges(edges, 0) if at_once else bus.nop(edges)

    message = None
    try:
        for i in range(40):
            bus.cmd("ACTIVE", ba=i % 4, a=i)
            bus.nop(1)
            bus.cmd("WRITE", ba=i % 4, a=AP | i, dq=0x1234 + i)
            idle(int(rng.integers(0, 300)))  # the auto precharge pending at first: edge by edge
            if i % 2:
                bus.nop(10)
                bus.cmd("REFRESH")
                idle(6 + int(rng.integers(0, 300)))
        if tail == "open row":
            bus.cmd("ACTIVE", ba=2, a=99)
        idle(20_000)
    except SdramViolation as error:
        message = str(error)
    written = [bus.device.memory.read_back(byte_address(i % 4, i, i), 2).tobytes() for i in range(40)]
    return bus.device.cycle, bus.device.refresh_debt, written, message


@pytest.mark.parametrize("tail", ["open row", "no refresh"])
def test_nop_edges_at_once_equal_one_clock_per_edge(tail):
    """`nop_edges` (what the Verilator SoC testbench uses while the controller idles) leaves the
    model as clocking it edge by edge does, and raises the same violation at the same edge."""
    at_once, per_edge = _idle_run(True, tail), _idle_run(False, tail)
    assert at_once == per_edge
    assert per_edge[3] is not None and ("tRAS max" if tail == "open row" else "missed refresh") in per_edge[3]
