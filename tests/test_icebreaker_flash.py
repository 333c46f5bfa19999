"""The iCEBreaker SoC with the constants in its SPI flash: a network through the serial protocol
with the flash's datasheet model preloaded as `hwgen build` writes flash.bin, outputs equal to
the golden model; the accelerator on the split memory alone (`run_on_flash`); the flash pins on
the board; and the errors for what cannot be built."""
from __future__ import annotations

import re
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from soc_helpers import SIM_BAUD, TINY, TINY_COMPACT, TINY_MEMORY, tiny_compiled, tiny_input, tiny_network

from boards.build import BoardTop, check_image_fits
from boards.platforms import board
from boards.protocol import DeviceMismatch
from boards.runtime import Runtime
from boards.soc import SocCore, check_flash_image
from boards.spiflash.memory import FLASH_OFFSET
from boards.spiflash.simulation import run_on_flash
from boards.transport import SimulatedTransport
from common.errors import ConfigError
from hwgen.config import config_from_dict, load_config
from planner.compile.memory_map import MemoryMap
from planner.pipeline import plan_and_compile
from sim.golden import run_quantized

FLASH = board("icebreaker").flash


def quad_reads(history) -> list[int]:
    return [address for _, name, address in history if name.startswith("FAST READ QUAD I/O")]


def test_a_network_runs_bit_exact_through_the_serial_link_with_its_constants_in_the_flash():
    """The host writes only the input (the program is in ROM here); the constants come from the
    flash model (as the part ships: the reader sets QE first), every read at 1 MiB on."""
    compiled = tiny_compiled(TINY)
    link = SimulatedTransport.for_network(compiled, TINY_MEMORY, SIM_BAUD, FLASH)
    runtime = Runtime(link, flash_constants=True)
    assert runtime.load(compiled) is False  # nothing of the image goes over the link
    net = tiny_network()
    x = tiny_input(1)
    result = runtime.infer(compiled, x)
    golden = run_quantized(net, x)
    assert all(np.array_equal(result.outputs[name], golden[name]) for name in net.outputs)
    device = link.flash_device
    assert device.quad_enabled
    reads = quad_reads(device.history)
    constants = compiled.memory.constant_bytes
    # (the host wrote no constants, so the outputs prove they came from the flash)
    assert all(FLASH_OFFSET <= address < FLASH_OFFSET + constants for address in reads)
    # the SoC's build id covers the constants: a host with other weights is refused
    image = compiled.image.copy()
    image[0] ^= 1
    other = replace(compiled, image=image)
    with pytest.raises(DeviceMismatch, match="build the bitstream and constants"):
        Runtime(link, flash_constants=True).check_build(other)
    link.close()


def test_the_accelerator_on_flash_and_spram_matches_the_golden_model_and_the_prediction():
    """Bit-exact; the program model with the flash's read figures for the constants (those of
    the `icebreaker` configuration) predicts the cycles within 2 %."""
    dram = load_config("icebreaker").dram
    data = TINY_COMPACT.to_dict()
    data["dram"].update(constants_bandwidth_bytes_per_cycle=dram.constants_bandwidth_bytes_per_cycle,
                        constants_latency_cycles=dram.constants_latency_cycles)
    compilation = plan_and_compile(tiny_network(), config_from_dict(data))
    x = tiny_input(3)
    run, device = run_on_flash(compilation.compiled, x, clock_mhz=27)
    assert all(np.array_equal(run.outputs[name], run_quantized(tiny_network(), x)[name]) for name in run.outputs)
    assert run.cycles > 0 and run.traffic.bytes_written > 0
    assert abs(compilation.prediction.cycles / run.cycles - 1) <= 0.02, (compilation.prediction.cycles, run.cycles)
    assert device.quad_enabled  # the model found nothing against the datasheet on the way


def test_the_flash_pins_are_the_boards_spi_flash_4x():
    """`BoardTop` with the flash SoC through Amaranth's build plan (elaborated, no tools run): /CS
    and CLK outputs, the four IO lines bidirectional SB_IO, on the iCEBreaker's flash pins."""
    chosen = board("icebreaker")
    compiled = tiny_compiled(TINY_COMPACT)
    soc = SocCore(TINY_COMPACT, compiled, 3 * 32768, 27_000_000, flash=chosen.flash)  # three SPRAMs
    plan = chosen.create_platform().prepare(BoardTop(chosen, soc, 12, 27))
    pcf = plan.files["top.pcf"]
    for port, pin in (("cs", 16), ("clk", 15), ("dq[0]", 14), ("dq[1]", 17), ("dq[2]", 12), ("dq[3]", 13)):
        name, _, index = port.partition("[")
        assert re.search(rf"set_io spi_flash_4x_0__{name}__io{re.escape('[' + index) if index else ''}\S* {pin}\n", pcf), port


def fake_compiled(config, constant_bytes: int, activation_bytes: int):
    return SimpleNamespace(config=config, network=SimpleNamespace(name="big"),
                           memory=MemoryMap(constant_bytes=constant_bytes, activation_bytes=activation_bytes))


def test_what_the_flash_soc_cannot_hold_is_refused_naming_sizes():
    icebreaker, config = board("icebreaker"), load_config("icebreaker")
    check_image_fits(icebreaker, fake_compiled(config, 500_000, 90_000))  # large weights fit: they go to the flash
    with pytest.raises(ConfigError, match=r"needs 100,000 bytes \(98 KiB\) of main memory \(activations and scratch; "
                                          r"its constants go to the flash\); board icebreaker has at most 98,304"):
        check_image_fits(icebreaker, fake_compiled(config, 4096, 100_000))
    with pytest.raises(ConfigError, match=r"has 16,000,000 bytes of constants; board icebreaker's W25Q128JV-IM holds "
                                          r"15,728,640 after offset 0x100000"):
        check_image_fits(icebreaker, fake_compiled(config, 16_000_000, 1000))
    with pytest.raises(ConfigError, match=r"ends at byte 300,000, beyond the 18-bit DRAM addresses of configuration "
                                          r"'icebreaker' \(at most 262,144 bytes"):
        check_flash_image(config, fake_compiled(config, 250_000, 50_000), 98_304)
