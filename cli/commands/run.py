"""`hwgen run`: run a model on a board over its serial link (or on the simulated SoC), compare
the outputs with the golden model and show the performance counters."""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.table import Table

from boards.build import board_soc, check_image_fits, on_chip_memory_bytes
from boards.platforms import BOARDS, Board, board
from boards.runtime import Inference, Runtime
from boards.sdram.soc_transport import VerilatedSoc, power_up_noise
from boards.transport import SerialTransport, SimulatedTransport, Transport
from cli.commands.common import add_calibration_argument, add_model_argument, load_model, load_partitioned, quantized
from cli.commands.infer import output_array, read_float_input, read_input, save_outputs
from cli.simulation_progress import SimulationProgress, preparing
from hwgen.config import CONFIG_DIR, AcceleratorConfig, load_config
from common.console import make_console
from common.errors import ConfigError, InputError
from common.files import check_output_file
from planner.compile.network import CompiledNetwork
from planner.ir import Network
from planner.pipeline import Compilation, plan_and_compile
from sim.golden import run_quantized
from sim.partitioned import PartitionedNetwork

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
        "on stderr shows the simulation's progress. On the iCEBreaker the constants are in the datasheet model of its SPI "
        "flash, preloaded as `hwgen build` writes flash.bin; that model answers every clock edge in Python, so the "
        "digits CNN takes more than 50 minutes there (a two-layer model about a minute).",
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
                        help="write the int8 outputs (.npz when the model has several); a model with host operators "
                        "inside: the graph's float outputs")
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
    parser.add_argument("--images", type=int, metavar="K",
                        help="with a configuration of several instances: stream the first K samples of --input "
                        "through the pipelined instances (default: all; at least 2)")
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
    the image on a board without SDRAM (with a flash, the constants in its datasheet model)."""
    if chosen.sdram is None:
        size = on_chip_memory_bytes(chosen, compiled.memory.size, compiled.config)
        return SimulatedTransport.for_network(compiled, size, baud, chosen.flash)
    soc = board_soc(chosen, compiled.config, compiled, baud)
    contents = compiled.image if load == "preload" else power_up_noise(compiled.memory.size)
    return VerilatedSoc(soc, contents)


@dataclass
class BoardSession:
    """One compiled network's memory image loaded on the board and its samples run."""

    loaded: bool
    load_seconds: float
    results: list[tuple[Inference, float]]
    clk_hz: int
    simulation: dict | None


def on_board(args: argparse.Namespace, chosen: Board, baud: int, compilation: Compilation,
             inputs: np.ndarray) -> BoardSession:
    """Load the compiled network's image on the board (or the simulated SoC) and run every int8 input."""
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
            runtime = Runtime(transport, run_timeout=timeout, flash_constants=chosen.flash is not None)
            if args.port != SIMULATED_PORT:
                runtime.resync()  # the board may hold half a request from an interrupted session
            progress.stage("loading the memory image")
            start = transport.clock()
            loaded = runtime.load(compiled, force=args.reload)
            load_seconds = transport.clock() - start
            results: list[tuple[Inference, float]] = []
            for index, x in enumerate(inputs):
                progress.stage(f"running sample {index + 1} of {len(inputs)}")
                start = transport.clock()
                results.append((runtime.infer(compiled, x), transport.clock() - start))
    finally:
        transport.close()
    simulation = {"cycles": transport.cycles, "wall_seconds": time.monotonic() - wall} if args.port == SIMULATED_PORT else None
    return BoardSession(loaded, load_seconds, results, runtime.info.clk_hz, simulation)


def sample_records(net: Network, inputs: np.ndarray, session: BoardSession, classifier: bool) -> list[dict]:
    """Per sample: bit-exactness against the golden model, the counters and the times."""
    samples = []
    for x, (result, seconds) in zip(inputs, session.results, strict=True):
        golden = run_quantized(net, x)
        record = {"bit_exact": all(np.array_equal(result.outputs[n], golden[n]) for n in net.outputs),
                  "counters": result.counters, "run_seconds": seconds,
                  "accelerator_seconds": result.counters["cycles"] / session.clk_hz}
        if classifier:
            record["class"] = int(np.argmax(result.outputs[net.outputs[0]].reshape(-1)))
            record["golden_class"] = int(np.argmax(golden[net.outputs[0]].reshape(-1)))
        samples.append(record)
    return samples


def run_partitioned(args: argparse.Namespace, chosen: Board, baud: int, config: AcceleratorConfig,
                    partitioned: PartitionedNetwork) -> int:
    """Each accelerator segment's image loaded and its samples run in turn, host parts in onnxruntime;
    --output holds the graph's (float) outputs."""
    inputs = read_float_input(args.input, partitioned)
    segments = []

    def run_segment(net: Network, batch: np.ndarray) -> dict[str, np.ndarray]:
        compilation = plan_and_compile(net, config)
        session = on_board(args, chosen, baud, compilation, batch)
        samples = sample_records(net, batch, session, classifier=False)
        segments.append({"network": net.name, "samples": samples, "simulation": session.simulation,
                         "bit_exact": all(sample["bit_exact"] for sample in samples),
                         "load": load_record(chosen, compilation.compiled, session)})
        return {name: np.stack([result.outputs[name] for result, _ in session.results]) for name in net.outputs}

    outputs, _ = partitioned.run(inputs, run_segment)
    if args.output is not None:
        save_outputs(args.output, outputs)
    reference = partitioned.reference(inputs)
    error = max(float(np.abs(outputs[name] - reference[name]).max()) for name in outputs)
    exact = all(segment["bit_exact"] for segment in segments)
    if args.json:
        print(json.dumps({"board": chosen.name, "port": args.port, "baud": baud, "network": partitioned.name,
                          "config": config.name, "bit_exact": exact, "segments": segments,
                          "host_parts": len(partitioned.parts) - len(segments),
                          "float_reference_max_abs_error": error}, indent=2))
    else:
        for segment in segments:
            make_console().print(f"segment {segment['network']}", style="bold")
            show(chosen, args.port, segment["load"], segment["samples"], classifier=False)
        make_console().print(f"{partitioned.name}: {len(segments)} accelerator segment(s), {len(partitioned.parts) - len(segments)} "
                             f"host part(s) in onnxruntime; outputs vs the float model: largest difference {error:.3g}")
    return 0 if exact else 1


def load_record(chosen: Board, compiled: CompiledNetwork, session: BoardSession) -> dict:
    """What loading the memory image took: its bytes over the link, those in the board's flash."""
    in_flash = compiled.memory.constant_bytes if chosen.flash is not None else 0
    return {"image_bytes": compiled.memory.size - in_flash, "flash_bytes": in_flash, "loaded": session.loaded,
            "seconds": session.load_seconds}


def run(args: argparse.Namespace) -> int:
    if args.output is not None:
        check_output_file(args.output, "--output")
    chosen = board(args.board)
    baud = args.baud or chosen.baud
    config = board_config(chosen, args.hw)
    if config.instances > 1:
        from cli.commands.run_instances import run_instances  # (it reads this module's timeouts)

        return run_instances(args, chosen, baud, config, args.port == SIMULATED_PORT)
    if args.images is not None:
        raise InputError(f"--images {args.images}: configuration {config.name!r} has one instance, which runs every "
                         "--input sample in turn; allowed: --images with a configuration of several instances")
    partitioned = load_partitioned(args)
    if partitioned is not None:
        return run_partitioned(args, chosen, baud, config, partitioned)
    net = quantized(load_model(args), args)
    inputs = read_input(args.input, net)
    compilation = plan_and_compile(net, config)
    session = on_board(args, chosen, baud, compilation, inputs)
    classifier = len(net.outputs) == 1 and net.tensor_shapes()[net.outputs[0]][1:] == (1, 1)
    samples = sample_records(net, inputs, session, classifier)
    if args.output is not None:
        save_outputs(args.output, {name: output_array(net, name, [r.outputs[name] for r, _ in session.results], raw=True)
                                   for name in net.outputs})
    exact = all(sample["bit_exact"] for sample in samples)
    load = load_record(chosen, compilation.compiled, session)
    if args.json:
        print(json.dumps({"board": chosen.name, "port": args.port, "baud": baud, "network": net.name,
                          "config": config.name, "image_loaded": session.loaded, "load": load, "bit_exact": exact,
                          "samples": samples, "simulation": session.simulation}, indent=2))
    else:
        show(chosen, args.port, load, samples, classifier)
    return 0 if exact else 1


def show(chosen: Board, port: str, load: dict, samples: list[dict], classifier: bool) -> None:
    console = make_console()
    clock = "simulated seconds" if port == SIMULATED_PORT else "seconds"
    if load["flash_bytes"]:
        state = f"(constants, {load['flash_bytes']:,} bytes, in the flash: build id checked)"
    else:
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
