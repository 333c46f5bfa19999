"""`hwgen run --board ulx3s-85f --port sim` in Verilator: the board's SoC (70 MHz, UART at
3 Mbaud, SDRAM main memory with the IS42S16160G-7 datasheet model) driven by the host runtime.

Runs the ResNet-8 CIFAR reference network (random weights, the built-in calibration) on one
random 32x32 input with the memory image preloaded into the chip model (the runtime's CRC-32
check finds it and skips the load), and the digits CNN with its image loaded over the simulated
serial link; per run it prints the image size, the load and run times (simulated), the
simulated cycles, the wall time (the Verilator build included when it is not cached) and the
simulated cycles per second, and whether the outputs equal the golden model's.
`--compare-amaranth` also runs the digits CNN, preloaded, on the same SoC in the Amaranth
simulator (`boards.transport.SimulatedTransport` with the chip model as a process) and in
Verilator, and prints both wall times.

Usage: python bench/verilator_soc.py [--networks resnet8-cifar digits] [--compare-amaranth]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from boards.build import board_soc  # noqa: E402
from boards.platforms import board  # noqa: E402
from boards.runtime import Runtime  # noqa: E402
from boards.sdram.controller import initialization_cycles  # noqa: E402
from boards.sdram.soc_transport import VerilatedSoc  # noqa: E402
from boards.transport import SimulatedTransport  # noqa: E402
from cli.main import main as hwgen  # noqa: E402
from hwgen.config import load_config  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.pipeline import plan_and_compile  # noqa: E402
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split  # noqa: E402
from sim.golden import run_quantized  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402
from sim.sdram.adapter import sdram_process  # noqa: E402
from sim.sdram.device import SdramDevice  # noqa: E402

BOARD = "ulx3s-85f"
RUNS = {"resnet8-cifar": "preload", "digits": "link"}


def sample(name: str) -> np.ndarray:
    if name == "digits":
        return load_digits_split()[2][3][None]
    return np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)


def bench_run(name: str, load: str) -> bool:
    """`hwgen run` on one sample; print its figures; whether it was bit-exact."""
    folder = Path(tempfile.mkdtemp())
    np.save(folder / "x.npy", sample(name))
    out = io.StringIO()
    wall = time.monotonic()
    with contextlib.redirect_stdout(out):
        code = hwgen(["run", "--board", BOARD, "--port", "sim", name, "--input", str(folder / "x.npy"),
                      "--sim-load", load, "--json"])
    wall = time.monotonic() - wall
    if code not in (0, 1):
        print(f"{name}: hwgen run failed (exit {code})")
        return False
    record = json.loads(out.getvalue())
    run, simulation = record["samples"][0], record["simulation"]
    print(f"{name} on {BOARD}, image of {record['load']['image_bytes']:,} B "
          f"{'loaded over the link' if record['load']['loaded'] else 'found in place (CRC-32)'}: "
          f"load {record['load']['seconds'] * 1e3:.1f} ms, run {run['run_seconds'] * 1e3:.2f} ms "
          f"(accelerator {run['counters']['cycles']:,} cycles), simulated; {simulation['cycles']:,} cycles in "
          f"{wall:.0f} s wall ({simulation['wall_seconds']:.0f} s in the simulation, its build included), "
          f"{simulation['cycles'] / simulation['wall_seconds']:,.0f} cycles/s; bit-exact: {record['bit_exact']}",
          flush=True)
    return record["bit_exact"]


def compare_amaranth() -> None:
    """The preloaded digits CNN on the board's SoC: Verilator against the Amaranth simulator."""
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    config = load_config(BOARD)
    compiled = plan_and_compile(net, config).compiled
    x = net.input_quant.quantize(load_digits_split()[2][3])
    golden = run_quantized(net, x)
    soc = board_soc(board(BOARD), config, compiled)
    for simulator in ("verilator", "amaranth"):
        wall = time.monotonic()
        if simulator == "verilator":
            link = VerilatedSoc(soc, compiled.image)
        else:
            soc = board_soc(board(BOARD), config, compiled)
            device = SdramDevice(soc.sdram_chip, soc.clk_hz / 1e6)
            device.memory.preload(0, compiled.image)
            link = SimulatedTransport(soc, [sdram_process(device, soc.sdram)])
            link.read(1, initialization_cycles(soc.sdram_chip, soc.clk_hz / 1e6) / soc.clk_hz)
        runtime = Runtime(link)
        loaded = runtime.load(compiled)
        outputs = runtime.infer(compiled, x).outputs
        cycles = link.cycles
        link.close()
        wall = time.monotonic() - wall
        exact = all(np.array_equal(outputs[name], golden[name]) for name in net.outputs)
        print(f"digits, preloaded (loaded: {loaded}), CRC check and one run on the {BOARD} SoC in {simulator}: "
              f"{cycles:,} cycles in {wall:.0f} s wall, {cycles / wall:,.0f} cycles/s; bit-exact: {exact}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", choices=RUNS, default=list(RUNS))
    parser.add_argument("--compare-amaranth", action="store_true")
    args = parser.parse_args()
    exact = [bench_run(name, RUNS[name]) for name in args.networks]
    if args.compare_amaranth:
        compare_amaranth()
    sys.exit(0 if all(exact) else 1)


if __name__ == "__main__":
    main()
