"""`hwgen run --board ulx3s-85f --port sim`: the board's SoC (70 MHz, 3 Mbaud, SDRAM main memory)
in Verilator, its chip the datasheet model, its UART driven and sampled bit by bit by the
testbench, the host runtime in this process (`boards.sdram.soc_transport`). The digits CNN with
its image loaded over the simulated serial link and with the image preloaded into the chip
model; outputs against the golden model (an independent numpy model); the CHECKSUM reading
the chip's own bytes; a datasheet violation and a run that does not finish as one error each."""
from __future__ import annotations

import dataclasses
import json
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

from boards.build import board_soc
from boards.platforms import board
from boards.protocol import CHECKSUM_ALIGNMENT
from boards.runtime import Runtime, RunTimeout
from boards.sdram.soc_transport import VerilatedSoc
from boards.uart import FRAME_BITS
from cli.main import main
from hwgen.config import load_config
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.cosim.simulators import unsupported
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network
from sim.sdram.chips import Timing
from sim.sdram.device import SdramViolation

pytestmark = pytest.mark.skipif(bool(unsupported("verilator")), reason=str(unsupported("verilator")))
BOARD = "ulx3s-85f"


@pytest.fixture(scope="module")
def digits() -> SimpleNamespace:
    """The digits CNN compiled for the board's configuration, its SoC and a held-out digit."""
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    compiled = plan_and_compile(net, load_config(BOARD)).compiled
    image = load_digits_split()[2][3]
    return SimpleNamespace(net=net, compiled=compiled, soc=board_soc(board(BOARD), load_config(BOARD), compiled),
                           image=image, golden=run_quantized(net, net.input_quant.quantize(image)))


def hwgen_run(tmp_path, capsys, digits, *options: str) -> dict:
    np.save(tmp_path / "x.npy", digits.image[None])
    code = main(["run", "--board", BOARD, "--port", "sim", "digits", "--input", str(tmp_path / "x.npy"),
                 "--output", str(tmp_path / "y.npy"), "--json", *options])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["bit_exact"] and record["config"] == BOARD
    output = digits.net.outputs[0]
    assert np.array_equal(np.load(tmp_path / "y.npy")[0].reshape(-1), digits.golden[output].reshape(-1))
    return record


def test_hwgen_run_digits_with_its_image_over_the_simulated_serial_link(tmp_path, capsys, digits):
    """The chip starts with random bytes; the runtime's CRC-32 check sees them, the image crosses
    the 3 Mbaud line (at least its bytes' frame time, and no more than the measured link rate
    and the two checks explain), and the run gives the golden model's outputs."""
    record = hwgen_run(tmp_path, capsys, digits, "--sim-load", "link")
    load = record["load"]
    line_seconds = load["image_bytes"] * FRAME_BITS / board(BOARD).baud
    assert load["loaded"] and line_seconds < load["seconds"] < 1.3 * line_seconds
    assert record["simulation"]["cycles"] > load["seconds"] * digits.soc.clk_hz


def test_hwgen_run_digits_preloaded_finds_the_image_in_the_chip(tmp_path, capsys, digits):
    record = hwgen_run(tmp_path, capsys, digits)
    assert record["load"]["loaded"] is False
    # the check alone: its request, the CHECKSUM over the constants and its reply
    assert record["load"]["seconds"] < 0.1 * record["load"]["image_bytes"] * FRAME_BITS / board(BOARD).baud


def test_the_checksum_reads_the_chips_bytes_and_a_stalled_run_is_one_error(digits):
    """One byte of the weights flipped in the chip: the CHECKSUM of its block differs from the
    image's until the host writes that byte over the link. A run given too little time is a
    `RunTimeout`; progress is reported as the simulation advances."""
    compiled, corrupt = digits.compiled, digits.compiled.image.copy()
    address = compiled.memory.constant_bytes // 2
    corrupt[address] ^= 0x5A
    block = address - address % CHECKSUM_ALIGNMENT
    expected = zlib.crc32(compiled.image[block:block + CHECKSUM_ALIGNMENT].tobytes())
    link = VerilatedSoc(digits.soc, corrupt)
    progress: list[int] = []
    link.progress = progress.append
    try:
        runtime = Runtime(link, run_timeout=1e-5)
        assert runtime.checksum(block, CHECKSUM_ALIGNMENT) == zlib.crc32(corrupt[block:block + CHECKSUM_ALIGNMENT].tobytes())
        assert runtime.checksum(block, CHECKSUM_ALIGNMENT) != expected
        runtime.write(address, compiled.image[address:address + 1].tobytes())
        assert runtime.checksum(block, CHECKSUM_ALIGNMENT) == expected
        runtime.write_input(compiled, digits.net.input_quant.quantize(digits.image))
        runtime.start()
        with pytest.raises(RunTimeout, match="did not finish within 1e-05 s"):
            runtime.wait()
    finally:
        link.close()
    assert progress == sorted(progress) and progress[-1] == link.cycles


def test_a_controller_breaking_the_chip_timing_is_one_error(digits):
    """The model checks a chip with a longer tRCD than the controller was built for: the first
    read raises `SdramViolation` in this process, one line, and the simulation has ended."""
    slower = dataclasses.replace(digits.soc.sdram_chip, t_rcd=Timing(30))
    link = VerilatedSoc(digits.soc, digits.compiled.image, model_chip=slower)
    with pytest.raises(SdramViolation, match="tRCD needs 3") as error:
        Runtime(link).image_loaded(digits.compiled)
    assert "\n" not in str(error.value)
    link.close()
