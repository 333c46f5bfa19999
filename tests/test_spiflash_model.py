"""The SPI flash model (`sim.spiflash`): legal sequences read the preloaded bytes, and each
datasheet rule broken raises `SpiFlashViolation` naming it."""
from __future__ import annotations

from dataclasses import replace

import pytest

from sim.spiflash.adapter import resolve
from sim.spiflash.chips import W25Q128JV_IM, W25Q128JV_IQ
from sim.spiflash.device import SpiFlashDevice, SpiFlashViolation

MHZ = 50  # system clock: 20 ns cycles, SPI clock 25 MHz (two cycles a clock)
FAST_CHIP = replace(W25Q128JV_IM, t_w_ns=2_000)  # tW's 15 ms would be 750,000 cycles
PINS = 0b1100  # /WP and /HOLD high
IMAGE = bytes((7 * i + 3) % 256 for i in range(256))


class Master:
    """Drives a device one system cycle per call, SPI mode 0, and keeps what the lines carried."""

    def __init__(self, device: SpiFlashDevice):
        self.device = device

    def cycle(self, cs_n: int = 0, clk: int = 0, io: int = PINS, oe: int = 0b1101) -> int:
        chip_io, chip_oe = self.device.clock(cs_n, clk, io, oe)
        return resolve(chip_io, chip_oe, io, oe)

    def idle(self, cycles: int = 1) -> None:
        for _ in range(cycles):
            self.cycle(cs_n=1)

    def transaction(self, clocks: list[tuple[int, int]], half: int = 1, gap: int = 3) -> list[int]:
        """/CS low, one SPI clock per (io, oe) (low `half` cycles, then high), /CS high for `gap`
        cycles; the lines at the end of each low half, where a controller captures."""
        self.cycle(io=clocks[0][0], oe=clocks[0][1])
        seen = []
        for io, oe in clocks:
            for _ in range(half):
                value = self.cycle(io=io, oe=oe)
            seen.append(value)
            for _ in range(half):
                self.cycle(clk=1, io=io, oe=oe)
        self.cycle(cs_n=1)
        self.idle(gap - 1)
        return seen


def single(value: int, bits: int = 8) -> list[tuple[int, int]]:
    return [(PINS | (value >> (bits - 1 - i) & 1), 0b1101) for i in range(bits)]


def quad(value: int, nibbles: int) -> list[tuple[int, int]]:
    return [(value >> 4 * (nibbles - 1 - i) & 0xF, 0b1111) for i in range(nibbles)]


def listen(clocks: int, lines: int = 1) -> list[tuple[int, int]]:
    return [(PINS, 0b1101) if lines == 1 else (0, 0)] * clocks


def bytes_from(seen: list[int], lines: int) -> bytes:
    """The data bytes in the lines captured: IO1 alone, or IO3..0 high nibble first."""
    bits = [value >> 1 & 1 for value in seen] if lines == 1 else seen
    per_byte = 8 // lines
    return bytes(sum(unit << (lines * (per_byte - 1 - i)) for i, unit in enumerate(bits[k:k + per_byte]))
                 for k in range(0, len(bits), per_byte))


def awake(chip=FAST_CHIP, mhz=MHZ, **options) -> Master:
    """A chip out of power-down (RELEASE POWER-DOWN, tRES1) with `IMAGE` at 0x1000."""
    master = Master(SpiFlashDevice(chip, mhz, **options))
    master.device.preload(0x1000, IMAGE)
    master.idle(2)
    master.transaction(single(0xAB), gap=chip.cycles(chip.t_res1_ns, mhz) + 1)
    return master


def set_qe(master: Master) -> None:
    master.transaction(single(0x06))
    master.transaction(single(0x31) + single(0x02))
    while bytes_from(master.transaction(single(0x05) + listen(8))[8:], 1)[0] & 1:
        pass


# ---- legal sequences ---------------------------------------------------------------------------

@pytest.mark.parametrize("opcode, dummy", [(0x03, 0), (0x0B, 8)])
def test_single_line_reads_return_the_preloaded_bytes(opcode, dummy):
    master = awake()
    seen = master.transaction(single(opcode) + single(0x1010, 24) + listen(dummy) + listen(8 * 5))
    assert bytes_from(seen[32 + dummy:], 1) == IMAGE[0x10:0x15]


def test_quad_output_read_after_setting_qe():
    master = awake()
    set_qe(master)
    assert master.device.quad_enabled and not master.device.write_enabled
    seen = master.transaction(single(0x6B) + single(0x1020, 24) + listen(8) + listen(2 * 6, lines=4))
    assert bytes_from(seen[40:], 4) == IMAGE[0x20:0x26]


def test_quad_io_read_continuous_mode_skips_the_instruction_until_m4_is_set():
    master = awake(W25Q128JV_IQ)
    header = quad(0x1030, 6) + quad(0x20, 2) + listen(4, lines=4)  # M5-4 = 10: continuous
    seen = master.transaction(single(0xEB) + header + listen(8, lines=4))
    assert bytes_from(seen[20:], 4) == IMAGE[0x30:0x34] and master.device.continuous
    seen = master.transaction(quad(0x10F0, 6) + quad(0x20, 2) + listen(4, lines=4) + listen(4, lines=4))
    assert bytes_from(seen[12:], 4) == IMAGE[0xF0:0xF2]
    master.transaction([(0b0001, 0b0001)] * 8)  # FFh on IO0: the datasheet's exit, IO3..1 undriven
    assert not master.device.continuous
    seen = master.transaction(single(0xEB) + quad(0x1000, 6) + quad(0x00, 2) + listen(4, lines=4) + listen(2, 4))
    assert bytes_from(seen[20:], 4) == IMAGE[:1] and not master.device.continuous
    assert [name for _, name, _ in master.device.history][-4:] == [
        "FAST READ QUAD I/O", "FAST READ QUAD I/O (continuous)", "FAST READ QUAD I/O (continuous)",
        "FAST READ QUAD I/O"]


def test_status_registers_ids_and_reset():
    master = awake()
    status = lambda opcode: bytes_from(master.transaction(single(opcode) + listen(8))[8:], 1)[0]
    assert status(0x05) == 0 and status(0x35) == 0
    master.transaction(single(0x06))
    assert status(0x05) == 0b10  # WEL
    master.transaction(single(0x31) + single(0x02))
    assert status(0x05) == 0b11 and status(0x35) == 0  # BUSY while tW runs
    master.idle(FAST_CHIP.cycles(FAST_CHIP.t_w_ns, MHZ))
    assert status(0x05) == 0 and status(0x35) == 0x02
    assert bytes_from(master.transaction(single(0x9F) + listen(24))[8:], 1) == bytes([0xEF, 0x70, 0x18])  # -IM
    assert Master(SpiFlashDevice(W25Q128JV_IQ, MHZ, powered_down=False)).device.status2 == 0x02  # QE fixed
    assert bytes_from(master.transaction(single(0xAB) + listen(24) + listen(8))[32:], 1) == bytes([0x17])
    master.transaction(single(0x06))
    master.transaction(single(0x66))
    master.transaction(single(0x99), gap=FAST_CHIP.cycles(FAST_CHIP.t_rst_ns, MHZ) + 1)
    assert status(0x05) == 0 and status(0x35) == 0x02  # WEL volatile, QE not


def test_reads_wrap_at_the_end_of_the_array():
    master = awake()
    master.device.preload(W25Q128JV_IQ.size_bytes - 2, b"\x11\x22")
    master.device.preload(0, b"\x33")
    seen = master.transaction(single(0x03) + single(W25Q128JV_IQ.size_bytes - 2, 24) + listen(24))
    assert bytes_from(seen[32:], 1) == b"\x11\x22\x33"


def test_slower_clock_and_mode_3():
    master = awake()
    seen = master.transaction(single(0x03) + single(0x1001, 24) + listen(16), half=3)
    assert bytes_from(seen[32:], 1) == IMAGE[1:3]
    master.cycle(cs_n=1, clk=1)  # mode 3: CLK idles high, /CS falls and rises with it high
    master.cycle(clk=1)
    seen = []
    for io, oe in single(0x03) + single(0x1002, 24) + listen(8):
        seen.append(master.cycle(io=io, oe=oe))
        master.cycle(clk=1, io=io, oe=oe)
    master.cycle(cs_n=1, clk=1)
    assert bytes_from(seen[32:], 1) == IMAGE[2:3]


# ---- violations --------------------------------------------------------------------------------

def raises(match: str):
    return pytest.raises(SpiFlashViolation, match=match)


def test_power_down_and_its_release():
    master = Master(SpiFlashDevice(FAST_CHIP, MHZ))
    master.idle()
    with raises("while powered down"):
        master.transaction(single(0x05) + listen(8))
    master = Master(SpiFlashDevice(FAST_CHIP, MHZ))
    master.transaction(single(0xAB), gap=10)  # tRES1 is 150 cycles
    with raises("during tRES1"):
        master.transaction(single(0x05) + listen(8))
    master = Master(SpiFlashDevice(FAST_CHIP, MHZ))
    seen = master.transaction(single(0xAB) + single(0, 24) + listen(8), gap=91)  # tRES2 (1.8 us) is 90 cycles
    assert bytes_from(seen[32:], 1) == b"\x17"
    master.transaction(single(0x05) + listen(8))


@pytest.mark.parametrize("opcode, match", [(0x12, "unknown opcode 0x12"), (0x02, "not modelled: PAGE PROGRAM")])
def test_unknown_and_unmodelled_instructions(opcode, match):
    with raises(match):
        awake().transaction(single(opcode) + single(0, 24))


def test_clock_limits():
    master = awake(mhz=120)  # two cycles a clock: 60 MHz, above fR
    master.transaction(single(0x0B) + single(0x1000, 24) + listen(8) + listen(8))
    with raises("CLK period of 16.6667 ns in READ DATA: at least 20 ns"):
        master.transaction(single(0x03) + single(0x1000, 24) + listen(8))
    with raises("CLK period of 7.40741 ns in an instruction: at least 7.5188 ns"):
        Master(SpiFlashDevice(FAST_CHIP, 270, powered_down=False)).transaction(single(0x05) + listen(8))
    master = Master(SpiFlashDevice(FAST_CHIP, 300, powered_down=False))
    with raises("CLK high of 3.33333 ns .* at least 3.38346 ns"):  # 1 cycle high, 3 low: 75 MHz
        master.cycle()
        for io, oe in single(0x05):
            master.cycle(io=io, oe=oe), master.cycle(io=io, oe=oe), master.cycle(io=io, oe=oe)
            master.cycle(clk=1, io=io, oe=oe)


def test_chip_select_timing():
    master = awake()
    master.transaction(single(0x05) + listen(8), gap=1)  # tSHSL1: 10 ns, one cycle
    master.transaction(single(0x06), gap=2)
    with raises("/CS high only 40 ns after WRITE ENABLE; tSHSL needs 50 ns"):
        master.transaction(single(0x04))
    master = awake()
    with raises("tSLCH"):
        master.cycle(clk=1)
    master = awake()
    master.cycle()
    master.cycle()
    with raises("tCHSH"):
        master.cycle(cs_n=1, clk=1)


def test_quad_reads_need_qe():
    with raises("FAST READ QUAD I/O with QE = 0"):
        awake().transaction(single(0xEB) + quad(0x1000, 8))
    with raises("FAST READ QUAD OUTPUT with QE = 0"):
        awake().transaction(single(0x6B) + single(0x1000, 24))
    awake(quad_enabled=True).transaction(single(0x6B) + single(0x1000, 24) + listen(8) + listen(2, 4))


def test_status_register_writes():
    with raises("without WRITE ENABLE"):
        awake().transaction(single(0x31) + single(0x02))
    master = awake(W25Q128JV_IQ)
    master.transaction(single(0x06))
    with raises("clears QE, fixed at 1 on the W25Q128JV-IQ"):
        master.transaction(single(0x31) + single(0x00))
    master = awake()
    master.transaction(single(0x06))
    with raises("changes bits other than QE"):
        master.transaction(single(0x31) + single(0x42))
    master = awake()
    master.transaction(single(0x06))
    master.transaction(single(0x31) + single(0x02))
    with raises("READ DATA during tW"):
        master.transaction(single(0x03) + single(0x1000, 24) + listen(8))


def test_reset_needs_enable_reset_first():
    master = awake()
    master.transaction(single(0x66))
    master.transaction(single(0x05) + listen(8))
    with raises("RESET DEVICE not right after ENABLE RESET"):
        master.transaction(single(0x99))


def test_cut_short_instructions():
    with raises("WRITE ENABLE not executed: /CS high after 9 clocks"):
        awake().transaction(single(0x06) + single(0, 1))
    with raises("READ DATA cut short"):
        awake().transaction(single(0x03) + single(0x1000, 16))
    with raises("incomplete instruction"):
        awake().transaction(single(0x03, 4))


def test_never_programmed_bytes_and_the_wrap_into_them():
    master = awake()
    master.transaction(single(0x03) + single(0x10FF, 24) + listen(8))  # the chip shifts 0x1100 out unread
    with raises("never-programmed flash at 0x001100"):
        master.transaction(single(0x03) + single(0x10FF, 24) + listen(9))
    master = awake()
    master.device.preload(W25Q128JV_IQ.size_bytes - 1, b"\x01")
    with raises("never-programmed flash at 0x000000"):
        master.transaction(single(0x0B) + single(W25Q128JV_IQ.size_bytes - 1, 24) + listen(8) + listen(16))


def test_line_rules():
    with raises("contention: the controller drives IO lines 0b0010"):
        awake().transaction(single(0x03) + single(0x1000, 24) + [(PINS, 0b1111)])
    with raises("instruction bits not driven"):
        awake().transaction([(PINS, 0b1100)] * 8)
    master = awake(W25Q128JV_IQ)
    with raises("address bits not driven"):
        master.transaction(single(0xEB) + [(0, 0b0001)] * 6 + quad(0x00, 2) + listen(5, lines=4))
    with raises(r"/HOLD \(IO3\) not driven high"):
        awake().transaction([(0b0101, 0b0101)] * 8)
    awake(W25Q128JV_IQ).transaction([(0x05 >> (7 - i) & 1, 0b0001) for i in range(8)] + listen(8, lines=4))
