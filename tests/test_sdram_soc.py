"""The ULX3S SoC with its main memory in the board's SDRAM: main memory sizes, the SoC's `sdram`
port and its errors, the PHY on the ULX3S platform (prepared, no tools run), and the SoC in the
Amaranth simulator at 75 MHz with the chip model on its pins, served over the UART (which
waits for the SDRAM: the bridge holds a write's byte until memory takes it)."""
from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

from boards.build import BoardTop, memory_bytes, on_chip_memory_bytes
from boards.platforms import board
from boards.protocol import CHECKSUM_CYCLES_PER_BYTE
from boards.runtime import Runtime
from boards.sdram.phy import CLOCK_PHASES
from boards.sdram.controller import initialization_cycles
from boards.soc import SocCore
from boards.transport import SimulatedTransport
from boards.uart import MIN_DIVISOR
from common.errors import ConfigError
from hwgen.config import config_from_dict, load_config
from sim.golden import run_quantized
from sim.sdram.adapter import SDRAM_PINS, sdram_process
from sim.sdram.chips import IS42S16160G_7
from sim.sdram.device import SdramDevice
from soc_helpers import TINY, TINY_16, tiny_compiled, tiny_input, tiny_network

ULX3S = ("ulx3s-12f", "ulx3s-25f", "ulx3s-45f", "ulx3s-85f")
CLK_HZ = 75_000_000
PLACED_AT = 1 << 20  # where the READ and CHECKSUM test places its bytes in the chip


def ulx3s_soc(config=TINY_16, clk_hz: int = CLK_HZ, baud: int = 115200) -> SocCore:
    """The ULX3S 85F's SoC running the tiny network compiled for `config`."""
    compiled = tiny_compiled(config)
    chosen = board("ulx3s-85f")
    return SocCore(config, compiled, memory_bytes(chosen, compiled.memory.size, config), clk_hz, baud, chosen.sdram)


def test_ulx3s_main_memory_is_its_sdram_within_the_dram_addresses():
    for name in ULX3S:
        assert board(name).sdram == IS42S16160G_7
        assert memory_bytes(board(name), 1000) == IS42S16160G_7.bytes == 32 * 1024 * 1024
        assert memory_bytes(board(name), 1000, load_config("ulx3s-85f")) == IS42S16160G_7.bytes  # 32 address bits
    narrow = config_from_dict({**TINY_16.to_dict(), "template": {"dram_address_bits": 20}})
    assert memory_bytes(board("ulx3s-85f"), 1000, narrow) == 1 << 20
    assert on_chip_memory_bytes(board("ulx3s-12f"), 1000) == 16384  # the block RAM `--port sim` simulates
    assert board("icebreaker").sdram is None and board("orangecrab").sdram is None


def test_sdram_soc_exposes_the_chip_pins_and_the_sdram_size():
    soc = ulx3s_soc(load_config("ulx3s-85f"))
    assert soc.signature.members["sdram"].signature == SDRAM_PINS
    assert soc.info.memory_bytes == IS42S16160G_7.bytes
    assert "sdram" not in SocCore(TINY, tiny_compiled(), 1024, 4 * 115200).signature.members


def test_sdram_soc_refuses_what_the_sdram_cannot_hold_or_serve():
    chip = IS42S16160G_7
    compiled = tiny_compiled(TINY_16)
    small = compiled.memory.size - 64
    with pytest.raises(ConfigError, match=rf"the memory image of '.*' needs {compiled.memory.size} bytes; main memory "
                                          rf"has {small} bytes \(the IS42S16160G-7 holds 33554432; 32-bit DRAM "
                                          rf"addresses reach 4294967296\)"):
        SocCore(TINY_16, compiled, small, CLK_HZ, sdram=chip)
    with pytest.raises(ConfigError, match="needs a 16-bit memory port"):
        SocCore(TINY, tiny_compiled(), chip.bytes, CLK_HZ, sdram=chip)
    with pytest.raises(ConfigError, match="supports CAS latency none at 150 MHz"):
        SocCore(TINY_16, compiled, chip.bytes, 150_000_000, sdram=chip)


def test_sdram_phy_prepares_on_the_ulx3s_platform():
    """`BoardTop` with the `ulx3s-85f` SDRAM SoC through Amaranth's build plan (elaborated, no
    tools run): the clock from an ODDRX1F sending `sync` inverted, DQ through 16 bidirectional
    buffers, the pins on amaranth-boards' sites."""
    chosen = board("ulx3s-85f")
    plan = chosen.create_platform().prepare(BoardTop(chosen, ulx3s_soc(load_config("ulx3s-85f")), 25, 75))
    rtlil, lpf = plan.files["top.il"], plan.files["top.lpf"]
    assert CLOCK_PHASES == (0, 1)
    assert len(re.findall(r"cell \\ODDRX1F ", rtlil)) == 1 and len(re.findall(r"cell \\BB ", rtlil)) == 16
    for port, site in (("clk", "F19"), ("ras", "R20"), ("a[0]", "M20"), ("dq[0]", "J16"), ("dq[15]", "J17")):
        name, _, index = port.partition("[")
        assert f'LOCATE COMP "sdram_0__{name}__io{"[" + index if index else ""}" SITE "{site}";' in lpf


def sdram_link(placed: bytes = b"") -> tuple[SocCore, SimulatedTransport, SdramDevice]:
    """The tiny network's SoC at 75 MHz (the chip's ns timings) with the chip model, `placed` in
    the chip at `PLACED_AT`, the UART at 18.75 Mbaud (4 cycles per bit), past the chip's
    initialization (its 100 us power-up wait is longer than the host's reply timeouts here)."""
    soc = ulx3s_soc(baud=CLK_HZ // MIN_DIVISOR)
    device = SdramDevice(IS42S16160G_7, CLK_HZ / 1e6)
    device.memory.preload(PLACED_AT, placed)
    transport = SimulatedTransport(soc, [sdram_process(device, soc.sdram)])
    assert transport.read(1, initialization_cycles(IS42S16160G_7, CLK_HZ / 1e6) / CLK_HZ) == b""
    return soc, transport, device


@pytest.mark.slow
def test_sdram_soc_reads_and_sums_the_chip_over_the_uart():
    """READ and CHECKSUM of bytes placed in the chip; a CHECKSUM 1024 bytes longer takes at most
    `CHECKSUM_CYCLES_PER_BYTE` cycles per byte more (refreshes and row changes included)."""
    placed = np.random.default_rng(3).integers(0, 256, 1088, dtype=np.uint8).tobytes()
    _, transport, device = sdram_link(placed)
    runtime = Runtime(transport)
    assert runtime.read(PLACED_AT + 3, 61) == placed[3:64]
    cycles = []
    for size in (64, 1088):
        start = transport.cycles
        assert runtime.checksum(PLACED_AT, size) == zlib.crc32(placed[:size])
        cycles.append(transport.cycles - start)
    byte_cycles = transport.byte_time * CLK_HZ
    assert 1024 < cycles[1] - cycles[0] <= 1024 * CHECKSUM_CYCLES_PER_BYTE + byte_cycles
    device.finish()


@pytest.mark.slow
def test_sdram_soc_runs_the_network_loaded_over_the_uart():
    """The host loads the image into the chip (forced: the model refuses reads of bytes never
    written, which the checksum of a fresh chip would make) and runs an inference equal to the
    golden model, with the chip model checking every command."""
    soc, transport, device = sdram_link()
    runtime = Runtime(transport)
    assert runtime.load(soc.compiled, force=True)
    x = tiny_input(5)
    outputs, golden = runtime.infer(soc.compiled, x).outputs, run_quantized(tiny_network(), x)
    for name in tiny_network().outputs:
        assert np.array_equal(outputs[name], golden[name])
    device.finish()
