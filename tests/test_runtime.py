"""The host runtime over the simulated SoC: full image load and readback, inference equal to
the golden model, counters equal to those of the bare accelerator and memory; every protocol
fault (corrupted, dropped, truncated bytes either way) detected and named; a run on the default
configuration refusing requests while busy; `hwgen run` (the digits CNN end to end)."""
from __future__ import annotations

import json
import re

import numpy as np
import onnx
import pytest
import yaml
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from boards.main_memory import MainMemory
from boards.uart import FRAME_BITS, MIN_DIVISOR
from onnx_factory import GraphBuilder
from boards.protocol import (CHECKSUM_REPLY, CHECKSUM_REQUEST, Command, DeviceError, DeviceMismatch,
                             ReplyChecksumError, ReplyFramingError, ReplyTimeout, Status, build_id)
from boards.runtime import Runtime, RunTimeout
from hwgen.accelerator import Accelerator
from cli.main import main
from hwgen.config import load_config
from hwgen.program import Program
from planner.compile.network import CompiledNetwork
from planner.frontend import load_network
from common.errors import InputError
from planner.pipeline import plan_and_compile
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network
from sim.rtl_sim import write_program
from soc_helpers import (TINY, TINY_COMPACT, TINY_INPUT, TINY_MEMORY, simulated, tiny_calibration, tiny_compiled,
                         tiny_input, tiny_model, tiny_network)
from hw_configs import data_config, data_config_path

COUNTERS = ("cycles", "load.active", "load.waiting", "compute.active", "compute.waiting", "store.active",
            "store.waiting")


def bare_counters(compiled: CompiledNetwork, x: np.ndarray, memory_bytes: int) -> dict[str, int]:
    """The counters of the accelerator and main memory alone (no UART, no bridge), the input
    placed in the memory's initial contents."""
    m = Module()
    m.submodules.accelerator = accelerator = Accelerator(compiled.config, compiled.program)
    m.submodules.memory = memory = MainMemory(accelerator.port.signature, memory_bytes,
                                              compiled.dram_with_input(x).tobytes())
    wiring.connect(m, accelerator.port, memory.port)
    counters = {}

    async def bench(ctx):
        await write_program(ctx, accelerator, compiled)
        ctx.set(accelerator.start, 1)
        await ctx.tick()
        ctx.set(accelerator.start, 0)
        while not ctx.get(accelerator.done):
            await ctx.tick()
        value = ctx.get(accelerator.counters.as_value())
        counters.update({name: value >> (32 * k) & 0xFFFFFFFF for k, name in enumerate(COUNTERS)})

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return counters


@pytest.mark.slow
def assert_inference_is_golden(runtime: Runtime, compiled: CompiledNetwork, net, x: np.ndarray) -> None:
    """An inference over the link: outputs equal the golden model's, counters the bare accelerator's."""
    result = runtime.infer(compiled, x)
    golden = run_quantized(net, x)
    for name in net.outputs:
        assert np.array_equal(result.outputs[name], golden[name])
    assert result.counters == bare_counters(compiled, x, TINY_MEMORY)


def test_tiny_network_full_load_readback_and_inference():
    compiled, net = tiny_compiled(), tiny_network()
    link = simulated(compiled)
    runtime = Runtime(link)
    assert runtime.load(compiled) is False  # block RAM starts with the image
    runtime.write(5, bytes([compiled.image[5] ^ 0x01]))  # spoil one bit of the constants
    assert not runtime.image_loaded(compiled)
    assert runtime.load(compiled) is True
    assert runtime.read(0, compiled.memory.size) == compiled.image.tobytes()
    assert_inference_is_golden(runtime, compiled, net, tiny_input(3))
    assert runtime.status() == (False, True) and link.leds & 0b11 == 0b10  # done, not busy


@pytest.mark.slow
def test_tiny_network_with_a_host_loaded_program_memory():
    """The compact template: `load` writes the instructions and the descriptor table into the
    SPRAM program memory over PROGRAM requests; inference equals the golden model and the
    counters those of the bare accelerator (the cycle counter alone, the others read 0); malformed PROGRAM requests are refused, and a SoC
    without a writable program memory does not know the command."""
    compiled, net = tiny_compiled(TINY_COMPACT), tiny_network()
    link = simulated(compiled)
    runtime = Runtime(link)
    assert runtime.load(compiled) is False  # the image is in the memory's initial contents
    assert_inference_is_golden(runtime, compiled, net, tiny_input(4))
    counters = runtime.counters()
    assert counters["cycles"] > 0 and not any(value for name, value in counters.items() if name != "cycles")
    for payload, status in ((b"\x00\x00\x00\x00\x01", "BAD_LENGTH"), (b"\x01\x00\x00\x00\x01\x02", "UNALIGNED"),
                            (b"\xfe\x7f\x00\x00\x01\x02\x03\x04", "OUT_OF_RANGE")):  # 32766 + 4 > 32 KiB
        with pytest.raises(DeviceError, match=f"device refused PROGRAM: {status}"):
            runtime.exchange(Command.PROGRAM, payload)
    with pytest.raises(DeviceError, match="device refused PROGRAM: BAD_COMMAND"):
        Runtime(simulated(tiny_compiled())).exchange(Command.PROGRAM, b"\x00\x00\x00\x00\x01\x02")
    # the bitstream holds no program: any program compiled for the configuration is this build
    assert build_id(Program(), TINY_COMPACT) == runtime.info.build_id != build_id(Program(), TINY)


class Faulty:
    """A transport that spoils the next request or its reply once: `flip` XORs the byte at a
    position with 0xFF, `cut` drops every byte from a position on. Then it passes bytes through."""

    def __init__(self, inner, *, request: tuple[str, int] | None = None, reply: tuple[str, int] | None = None):
        self.inner, self.request, self.reply = inner, request, reply
        self.byte_time, self.latency = inner.byte_time, inner.latency
        self.position = 0

    @staticmethod
    def spoil(data: bytes, fault: tuple[str, int], start: int) -> bytes:
        kind, at = fault
        at -= start
        if not 0 <= at < len(data) and not (kind == "cut" and at < 0):
            return data
        if kind == "cut":
            return data[:max(at, 0)]
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]

    def write(self, data: bytes) -> None:
        if self.request:
            data, self.request = self.spoil(data, self.request, 0), None
        self.inner.write(data)

    def read(self, count: int, timeout: float) -> bytes:
        data = self.inner.read(count, timeout)
        if self.reply:
            spoiled = self.spoil(data, self.reply, self.position)
            self.position += len(data)
            if not data:
                self.reply, self.position = None, 0
            data = spoiled
        return data

    def clock(self) -> float:
        return self.inner.clock()

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="module")
def link():
    return simulated(tiny_compiled())


@pytest.mark.parametrize("fault, error, message", [
    ({"reply": ("flip", 8)}, ReplyChecksumError, "IDENTIFY: reply CRC"),
    ({"reply": ("flip", 2)}, ReplyFramingError, "IDENTIFY: wrong reply length"),
    ({"reply": ("flip", 0)}, ReplyFramingError, "not the sync byte"),
    ({"reply": ("cut", 20)}, ReplyTimeout, "IDENTIFY: truncated reply: got 16 of 21 bytes"),
    ({"reply": ("cut", 2)}, ReplyTimeout, "IDENTIFY: no reply header: got 2 of 4 bytes"),
    ({"request": ("cut", 0)}, ReplyTimeout, "IDENTIFY: no reply header: got 0 of 4 bytes"),
    ({"request": ("flip", 5)}, DeviceError, "device refused IDENTIFY: BAD_CRC"),
    ({"request": ("flip", 3)}, DeviceError, "device refused IDENTIFY: BAD_CRC"),  # the header CRC, before the length is used
], ids=["reply-crc", "reply-length", "reply-sync", "reply-cut", "reply-header-cut", "request-dropped",
        "request-crc", "request-length"])
def test_protocol_faults_are_detected_and_the_link_recovers(link, fault, error, message):
    with pytest.raises(error, match=message):
        Runtime(Faulty(link, **fault)).identify()
    assert Runtime(link).identify().memory_bytes == TINY_MEMORY  # the next request goes through


def test_a_request_cut_short_times_out_or_is_refused_truncated(link):
    with pytest.raises((ReplyTimeout, DeviceError)) as caught:
        Runtime(Faulty(link, request=("cut", 5))).read(0, 8)
    assert isinstance(caught.value, ReplyTimeout) or caught.value.status == Status.TRUNCATED
    assert Runtime(link).read(0, 8) == tiny_compiled().image[:8].tobytes()


def test_resync_recovers_a_link_left_mid_request(link):
    link.write(bytes([0xA5, 0x06, 0x10, 0x00, 0x01]))  # half a WRITE, as an interrupted session leaves it
    runtime = Runtime(link)
    runtime.resync()
    assert runtime.identify().memory_bytes == TINY_MEMORY


def test_an_interrupted_load_is_found_and_written_again_before_a_run(link):
    """A session dies halfway through loading an image (a memory holding other bytes, half the
    constants written, half a WRITE request on the line): the next session's `load` finds the
    constants by checksum not in place, writes them again, and the run equals the golden model."""
    compiled, net = tiny_compiled(), tiny_network()
    image, half = compiled.image.tobytes(), compiled.memory.constant_bytes // 2
    first = Runtime(link)
    first.write(0, bytes(len(image)))  # what the memory held before
    first.write(0, image[:half])
    link.write(bytes([0xA5, 0x06, 0x10, 0x00, 0x01]) + image[half:half + 8])  # cut off mid-request
    runtime = Runtime(link)
    runtime.resync()
    assert not runtime.image_loaded(compiled)
    assert runtime.load(compiled) is True
    assert runtime.read(0, len(image)) == image
    x = tiny_input(4)
    assert all(np.array_equal(runtime.infer(compiled, x).outputs[n], run_quantized(net, x)[n]) for n in net.outputs)


def test_device_refusals_and_mismatches_are_errors(link):
    runtime = Runtime(link)
    with pytest.raises(DeviceError, match="device refused READ: OUT_OF_RANGE"):
        runtime.read(TINY_MEMORY - 4, 8)
    other = plan_and_compile(tiny_network(), data_config("ice40up5k")).compiled
    with pytest.raises(DeviceMismatch, match=r"the device runs build 0x[0-9a-f]{8}, not .* compiled for 'ice40up5k'"):
        runtime.load(other)
    with pytest.raises(InputError, match="expected int8 of shape"):
        runtime.infer(tiny_compiled(), np.zeros(TINY_INPUT, dtype=np.float32))


def busy_network():
    """Conv 3x3 (16 -> 16 channels, 8x8 pixels) + ReLU: about 3,600 cycles on the default
    configuration, long enough for two refused requests and a 1 ms timeout (some 2,000 cycles of
    the simulated clock) while it runs, a quarter of the digits CNN's image and run."""
    g = GraphBuilder((1, 16, 8, 8), seed=5)
    model = g.model(g.node("Relu", [g.conv(g.input_name, 16, 16, k=3, pad=1)]))
    calibration = np.random.default_rng(5).standard_normal((4, 16, 8, 8)).astype(np.float32)
    return quantize_network(load_network(model), calibration)


@pytest.mark.slow
def test_a_run_on_the_default_configuration_through_the_serial_protocol():
    """The default configuration with the memory image baked into block RAM: the runtime finds
    it in place by CRC-32, runs one input (refusing a second START and a WRITE while it runs)
    and reads outputs equal to the golden model's, and the counters. (The digits CNN end to end:
    `test_hwgen_run_digits_on_the_simulated_icebreaker` here, tests/test_soc_verilator.py.)"""
    net = busy_network()
    compiled = plan_and_compile(net, load_config("default")).compiled
    link = simulated(compiled, 8192)
    runtime = Runtime(link)
    assert runtime.load(compiled) is False  # verified by checksum, not reloaded
    x = net.input_quant.quantize(np.random.default_rng(6).standard_normal(net.input_shape).astype(np.float32))
    runtime.write_input(compiled, x)
    started = link.cycles
    runtime.start()
    with pytest.raises(DeviceError, match="START: BUSY"):
        runtime.start()
    with pytest.raises(DeviceError, match="WRITE: BUSY"):
        runtime.write(0, b"\x00")
    with pytest.raises(RunTimeout, match="did not finish within 0.001 s"):
        Runtime(link, run_timeout=1e-3).wait()
    runtime.wait()
    elapsed = link.cycles - started
    outputs = runtime.read_outputs(compiled)
    counters = runtime.counters()
    golden = run_quantized(net, x)
    assert all(np.array_equal(outputs[name], golden[name]) for name in net.outputs)
    assert 0 < counters["cycles"] < elapsed
    assert all(0 < counters[f"{q}.active"] <= counters["cycles"] for q in ("load", "compute", "store"))


def test_hwgen_run_on_the_simulated_soc(tmp_path, capsys):
    """A tiny ONNX model on the simulated SoC through the command line; the outputs file holds
    the golden model's int8 outputs."""
    onnx.save(tiny_model(), tmp_path / "tiny.onnx")
    np.save(tmp_path / "calibration.npy", tiny_calibration())
    x = np.random.default_rng(1).standard_normal((1, *TINY_INPUT)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY.to_dict()))
    code = main(["run", "--board", "icebreaker", "--port", "sim", str(tmp_path / "tiny.onnx"), "--input",
                 str(tmp_path / "x.npy"), "--hw", str(tmp_path / "tiny.yaml"), "--calibration",
                 str(tmp_path / "calibration.npy"), "--output", str(tmp_path / "y.npy"), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["bit_exact"] and record["image_loaded"] is False
    net = tiny_network()
    golden = run_quantized(net, net.input_quant.quantize(x[0]))[net.outputs[0]]
    assert np.array_equal(np.load(tmp_path / "y.npy")[0], golden)
    sample = record["samples"][0]
    assert sample["counters"]["cycles"] > 0
    # times on the simulated clock: the accelerator's run is the cycle counter at the SoC's clock;
    # the host sees more (the input and output crossing the serial line); checking the image in
    # place takes at least its CHECKSUM request and reply on the line
    soc_hz = MIN_DIVISOR * record["baud"]
    assert sample["accelerator_seconds"] == pytest.approx(sample["counters"]["cycles"] / soc_hz)
    line_byte = FRAME_BITS / record["baud"]
    assert sample["run_seconds"] > sample["accelerator_seconds"] + TINY_INPUT[0] * TINY_INPUT[1] * TINY_INPUT[2] * line_byte
    assert record["load"]["seconds"] > (CHECKSUM_REQUEST.size + CHECKSUM_REPLY.size) * line_byte


def test_hwgen_run_refuses_a_model_larger_than_the_boards_memory(tmp_path, capsys):
    """One error naming the model's size and the board's capacity, before any simulation, and
    no output file. On the iCEBreaker the constants go to the flash: the activations must fit
    its SPRAM."""
    shape = (1, 64, 48, 48)  # an input of 147,456 bytes
    g = GraphBuilder(shape, seed=3)
    onnx.save(g.model(g.conv(g.input_name, 64, 2, k=1)), tmp_path / "big.onnx")
    rng = np.random.default_rng(1)
    np.save(tmp_path / "calibration.npy", rng.standard_normal((2, *shape[1:])).astype(np.float32))
    np.save(tmp_path / "x.npy", rng.standard_normal(shape).astype(np.float32))
    code = main(["run", "--board", "icebreaker", "--port", "sim", str(tmp_path / "big.onnx"), "--input",
                 str(tmp_path / "x.npy"), "--hw", str(data_config_path("ice40up5k")), "--calibration",
                 str(tmp_path / "calibration.npy"), "--output", str(tmp_path / "y.npy")])
    error = capsys.readouterr().err
    assert code != 0 and "Traceback" not in error
    needed = int(re.search(r"needs ([\d,]+) bytes", error).group(1).replace(",", ""))
    assert needed > 64 * 48 * 48  # the input tensor alone
    assert "(activations and scratch; its constants go to the flash)" in error
    assert "icebreaker has at most 131,072 bytes" in error  # four 32 KiB SPRAMs
    assert not (tmp_path / "y.npy").exists()


def test_hwgen_run_with_a_missing_port_is_one_clear_error(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((1, 8, 8), dtype=np.float32))
    code = main(["run", "--board", "icebreaker", "--port", str(tmp_path / "ttyNONE"),
                 "--input", str(tmp_path / "x.npy"), "--hw", str(data_config_path("ice40up5k"))])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "cannot open serial port" in err[0] and "ttyNONE" in err[0]
