"""`hwgen run`: run a model on a board over its serial link (or on the simulated SoC), compare
the outputs with the golden model and show the performance counters."""
from __future__ import annotations

import argparse
import io
import json
import time
from pathlib import Path

import numpy as np
from rich.table import Table

from boards.build import board_soc, check_image_fits, on_chip_memory_bytes
from boards.platforms import BOARDS, Board, board
from boards.runtime import Inference, Runtime
from boards.sdram.soc_transport import VerilatedSoc, power_up_noise
from boards.transport import SerialTransport, SimulatedTransport, Transport
from cli.commands.common import add_calibration_argument, add_model_argument, load_model, quantized
from cli.commands.infer import output_array, read_input
from cli.simulation_progress import SimulationProgress, preparing
from hwgen.config import CONFIG_DIR, load_config
from common.console import make_console
from common.errors import ConfigError
from common.files import atomic_save_npy, atomic_write_bytes, check_output_file
from planner.compile.network import CompiledNetwork
from planner.pipeline import plan_and_compile
from sim.golden import run_quantized

SIMULATED_PORT = "sim"
SIM_LOADS = ("preload", "link")
SERIAL_TIMEOUT = 10.0
SIM_TIMEOUT_FACTOR = 4
SIM_MIN_TIMEOUT = 0.01


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", description="Compile the model for the board's configuration, check that the board runs that program, "
        "load the memory image unless the board already holds it (CRC-32 check), run every input sample and "
        "compare the int8 outputs with the golden model. `--port sim` simulates the board's SoC instead, its UART "
        "bit by bit at the board's baud: on a board with SDRAM (the ULX3S) the SoC `hwgen build` makes, in "
        "Verilator, its chip the datasheet model (the first run of a model builds the simulator: minutes; then "
        "the digits CNN takes seconds preloaded, and 5.3 million cycles, a few minutes, with --sim-load link); on "
        "the others the SoC in the Amaranth simulator with on-chip main memory holding the image. A status line "
        "on stderr shows the simulation's progress.",
    )
    parser.add_argument("--board", required=True, metavar="BOARD", help=f"the board: {', '.join(BOARDS)}")
    parser.add_argument("--port", required=True, metavar="PORT",
                        help=f"serial port of the board (/dev/ttyUSB1, COM3, ...), or `{SIMULATED_PORT}` for the "
                        "simulated SoC")
    add_model_argument(parser)
    parser.add_argument("--input", required=True, type=Path, metavar="X.npy",
                        help="input array (N, C, H, W) or (C, H, W); float is quantized, int8 taken as is")
    parser.add_argument("--hw", metavar="CFG",
                        help="the configuration the bitstream was built with (default: the shipped one named "
                        "after the board)")
    parser.add_argument("--output", type=Path, metavar="Y.npy",
                        help="write the int8 outputs (.npz when the model has several)")
    parser.add_argument("--baud", type=int, metavar="N",
                        help="serial baud rate (default: the board's, 3,000,000 for the ULX3S, 115,200 otherwise)")
    parser.add_argument("--timeout", type=float, metavar="S",
                        help=f"seconds a run may take (default: {SERIAL_TIMEOUT:g}; with --port sim simulated seconds, by default "
                        f"{SIM_TIMEOUT_FACTOR} times the program model's prediction, at least {SIM_MIN_TIMEOUT} s)")
    parser.add_argument("--sim-load", choices=SIM_LOADS, default=SIM_LOADS[0],
                        help="with --port sim on a board with SDRAM: `preload` places the memory image in the chip "
                        "model at power-on (the CRC-32 check finds it and the load is skipped); `link` starts the "
                        "chip with random contents, so the image crosses the simulated serial link (default: "
                        "preload)")
    parser.add_argument("--reload", action="store_true",
                        help="write the memory image even if the board already holds it")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    add_calibration_argument(parser)
    parser.set_defaults(func=run)


def board_config(chosen: Board, hw: str | None):
    """The configuration named by --hw, else the shipped one named after the board."""
    if hw is None:
        if not (CONFIG_DIR / f"{chosen.name}.yaml").exists():
            raise ConfigError(f"no shipped configuration for board {chosen.name!r}; give --hw CFG (the one its "
                              f"bitstream was built with)")
        hw = chosen.name
    return load_config(hw)


def simulated_board(chosen: Board, compiled: CompiledNetwork, baud: int, load: str) -> SimulatedTransport | VerilatedSoc:
    """The board's SoC simulated: in Verilator on its SDRAM chip model holding the image (`load`
    "preload") or power-up noise ("link"); in the Amaranth simulator with on-chip memory holding
    the image on a board without SDRAM."""
    if chosen.sdram is None:
        size = on_chip_memory_bytes(chosen, compiled.memory.size, compiled.config)
        return SimulatedTransport.for_network(compiled, size, baud)
    soc = board_soc(chosen, compiled.config, compiled, baud)
    contents = compiled.image if load == "preload" else power_up_noise(compiled.memory.size)
    return VerilatedSoc(soc, contents)


def save_outputs(path: Path, arrays: dict[str, np.ndarray]) -> None:
    if len(arrays) == 1:
        atomic_save_npy(path, next(iter(arrays.values())))
        return
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


def run(args: argparse.Namespace) -> int:
    if args.output is not None:
        check_output_file(args.output, "--output")
    chosen = board(args.board)
    baud = args.baud or chosen.baud
    config = board_config(chosen, args.hw)
    net = quantized(load_model(args), args)
    inputs = read_input(args.input, net)
    compilation = plan_and_compile(net, config)
    compiled = compilation.compiled
    check_image_fits(chosen, compiled)
    wall = time.monotonic()
    timeout = args.timeout
    if args.port == SIMULATED_PORT:
        with preparing():
            transport: Transport = simulated_board(chosen, compiled, baud, args.sim_load)
        if timeout is None:  # simulated seconds: a stalled run ends soon in wall time too
            timeout = max(SIM_TIMEOUT_FACTOR * compilation.prediction.cycles / transport.soc.clk_hz, SIM_MIN_TIMEOUT)
    else:
        transport = SerialTransport(args.port, baud)
        timeout = SERIAL_TIMEOUT if timeout is None else timeout
    try:
        with SimulationProgress(transport) as progress:
            runtime = Runtime(transport, run_timeout=timeout)
            if args.port != SIMULATED_PORT:
                runtime.resync()  # the board may hold half a request from an interrupted session
            progress.stage("loading the memory image")
            start = transport.clock()
            loaded = runtime.load(compiled, force=args.reload)
            load_seconds = transport.clock() - start
            clk_hz = runtime.info.clk_hz
            results: list[tuple[Inference, float]] = []
            for index, x in enumerate(inputs):
                progress.stage(f"running sample {index + 1} of {len(inputs)}")
                start = transport.clock()
                results.append((runtime.infer(compiled, x), transport.clock() - start))
    finally:
        transport.close()
    simulation = {"cycles": transport.cycles, "wall_seconds": time.monotonic() - wall} if args.port == SIMULATED_PORT else None

    classifier = len(net.outputs) == 1 and net.tensor_shapes()[net.outputs[0]][1:] == (1, 1)
    samples = []
    for x, (result, seconds) in zip(inputs, results, strict=True):
        golden = run_quantized(net, x)
        record = {"bit_exact": all(np.array_equal(result.outputs[n], golden[n]) for n in net.outputs),
                  "counters": result.counters, "run_seconds": seconds,
                  "accelerator_seconds": result.counters["cycles"] / clk_hz}
        if classifier:
            record["class"] = int(np.argmax(result.outputs[net.outputs[0]].reshape(-1)))
            record["golden_class"] = int(np.argmax(golden[net.outputs[0]].reshape(-1)))
        samples.append(record)
    if args.output is not None:
        save_outputs(args.output, {name: output_array(net, name, [r.outputs[name] for r, _ in results], raw=True)
                                   for name in net.outputs})
    exact = all(sample["bit_exact"] for sample in samples)
    load = {"image_bytes": compiled.memory.size, "loaded": loaded, "seconds": load_seconds}
    if args.json:
        print(json.dumps({"board": chosen.name, "port": args.port, "baud": baud, "network": net.name,
                          "config": config.name, "image_loaded": loaded, "load": load, "bit_exact": exact,
                          "samples": samples, "simulation": simulation}, indent=2))
    else:
        show(chosen, args.port, load, samples, classifier)
    return 0 if exact else 1


def show(chosen: Board, port: str, load: dict, samples: list[dict], classifier: bool) -> None:
    console = make_console()
    clock = "simulated seconds" if port == SIMULATED_PORT else "seconds"
    state = "loaded and checked" if load["loaded"] else "already in place (CRC-32 match), checked"
    console.print(f"{chosen.name} on {port}: memory image of {load['image_bytes']:,} bytes {state} in "
                  f"{load['seconds']:.3f} {clock}")
    table = Table(title=f"runs ({clock})")
    columns = ["sample", *(["class", "golden class"] if classifier else []), "bit-exact vs golden", "cycles",
               "accelerator s", "run s (input, run, outputs)"]
    for column in columns:
        table.add_column(column, justify="right")
    for index, sample in enumerate(samples):
        cells = [str(index), *([str(sample["class"]), str(sample["golden_class"])] if classifier else []),
                 "yes" if sample["bit_exact"] else "NO", f"{sample['counters']['cycles']:,}",
                 f"{sample['accelerator_seconds']:.6f}", f"{sample['run_seconds']:.4f}"]
        table.add_row(*cells)
    console.print(table)
    counters = Table(title="performance counters (last run)")
    counters.add_column("counter")
    counters.add_column("cycles", justify="right")
    for name, value in samples[-1]["counters"].items():
        counters.add_row(name, f"{value:,}")
    console.print(counters)
