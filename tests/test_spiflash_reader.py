"""The flash reader (`boards.spiflash.reader`) against the flash model (`sim.spiflash`): random
bursts with random back-pressure return the preloaded bytes, the model finding nothing wrong."""
from __future__ import annotations

import random

import pytest
from spiflash_helpers import CHIP, MHZ, Run, measure, random_bursts, simulate

from boards.spiflash.reader import SpiFlashReader
from common.errors import ConfigError
from sim.spiflash.chips import W25Q128JV_IQ
from sim.spiflash.device import SpiFlashDevice

BASE = 0x10_0000  # the image after the bitstream
SIZE = 4096


@pytest.mark.parametrize("bus_bytes, quad, count, divisor", [(1, True, 120, 2), (2, True, 120, 2), (1, False, 40, 2),
                                                             (2, False, 30, 2), (2, True, 40, 4)])
def test_random_bursts_with_back_pressure_read_the_preloaded_bytes(bus_bytes, quad, count, divisor):
    image = random.Random(bus_bytes).randbytes(SIZE)
    device = SpiFlashDevice(CHIP, MHZ)
    device.preload(BASE, image)
    requests = random_bursts(count, SIZE, bus_bytes, 8, seed=bus_bytes + 2 * quad)
    dut = SpiFlashReader(bus_bytes, 8, chip=CHIP, clock_mhz=MHZ, quad=quad, base=BASE, divisor=divisor)
    run = simulate(dut, device, Run(requests, ready_probability=0.6, seed=3))
    expected = b"".join(image[addr:addr + beats * bus_bytes] for addr, beats, _ in requests)
    assert run.data(bus_bytes) == expected
    reads = [name for _, name, _ in device.history if name.startswith(("FAST READ", "READ DATA"))]
    restarts = sum(1 for (addr, _, _), previous in zip(requests[1:], requests) if addr != previous[0] + previous[1]
                   * bus_bytes) + 1
    assert len(reads) == restarts - 1  # a sequential burst continues the open read (the last is still open)
    if quad:
        assert reads[0] == "FAST READ QUAD I/O" and set(reads[1:]) <= {"FAST READ QUAD I/O (continuous)"}
        assert device.quad_enabled
    else:
        assert set(reads) == {"READ DATA"} and not device.quad_enabled


def test_a_qe_fixed_part_is_not_written():
    device = SpiFlashDevice(W25Q128JV_IQ, MHZ)
    device.preload(0, bytes(range(64)))
    dut = SpiFlashReader(2, 8, chip=W25Q128JV_IQ, clock_mhz=MHZ)
    run = simulate(dut, device, Run([(0, 8, 0), (32, 8, 3)]))
    assert run.data(2) == bytes(range(16)) + bytes(range(32, 48))
    assert [name for _, name, _ in device.history][:4] == [
        "CONTINUOUS READ MODE RESET", "RELEASE POWER-DOWN / DEVICE ID", "READ STATUS REGISTER-2", "FAST READ QUAD I/O"]


def test_without_set_qe_the_model_refuses_the_quad_read():
    device = SpiFlashDevice(CHIP, MHZ)
    dut = SpiFlashReader(1, 8, chip=CHIP, clock_mhz=MHZ, set_qe=False)
    with pytest.raises(Exception, match="FAST READ QUAD I/O with QE = 0"):
        simulate(dut, device, Run([(0, 1, 0)]))


def test_sequential_bursts_stream_and_a_new_address_costs_the_header():
    figures = measure(1, quad=True, kib=1)
    assert figures.bytes_per_cycle > 0.23  # the peak is a nibble per SPI clock: 0.25 byte a cycle
    assert figures.latency_next < 8 < figures.latency_new < figures.latency_first


def test_configuration_errors():
    with pytest.raises(ConfigError, match="1 or 2 bytes"):
        SpiFlashReader(4)
    with pytest.raises(ConfigError, match="above the W25Q128JV-IM's 50 MHz for Read Data"):
        SpiFlashReader(clock_mhz=108, quad=False)
    with pytest.raises(ConfigError, match="even"):
        SpiFlashReader(divisor=3)
