"""`hwgen run --hw CFG` for a configuration with several `instances`: the scheduler's stages
(`scheduler.instances.scheduled_layout`) on the board SoC's pipelined instances, the stream's
inputs written into the first stage's slots, one START, the outputs read from the last stage's
slots (docs/host_protocol.md); each image checked against the golden model. With `--port sim`
(a board whose main memory the simulation keeps on chip) the period between the last stage's
starts is measured and set against the program model's and the scheduler's."""
from __future__ import annotations

import argparse
import json

import numpy as np

from boards.build import on_chip_memory_bytes
from boards.platforms import Board
from boards.runtime import Runtime
from boards.soc import SocCore
from boards.transport import SerialTransport, SimulatedTransport
from boards.uart import MIN_DIVISOR
from cli.commands.common import load_model, quantized
from cli.commands.infer import output_array, read_input, save_outputs
from cli.commands.run import SERIAL_TIMEOUT, SIM_TIMEOUT_FACTOR
from cli.commands.simulate_instances import show
from cli.simulation_progress import SimulationProgress, preparing
from common.errors import InputError
from hwgen.config import AcceleratorConfig
from planner.compile.stages import PipelineLayout, predicted_period, predicted_stream_cycles
from sim.golden import run_quantized


def stream_inputs(args: argparse.Namespace, inputs: np.ndarray) -> np.ndarray:
    """The first `--images` samples of --input (all by default); at least two."""
    images = args.images or len(inputs)
    if images < 2 or images > len(inputs):
        raise InputError(f"--images {images} with {len(inputs)} samples in --input {args.input}: allowed: 2 to "
                         f"{max(len(inputs), 2)} (a stream of at least two images, each from --input)")
    return inputs[:images]


def simulated_soc(chosen: Board, layout: PipelineLayout, baud: int, starts: list[int]) -> SimulatedTransport:
    """The SoC in the Amaranth simulator with on-chip main memory holding the instances' images;
    `starts` collects the cycles at which the last instance starts an image."""
    if chosen.sdram is not None or chosen.flash is not None:
        raise InputError(f"--board {chosen.name} --port sim with several instances: the simulation of its "
                         "SDRAM or flash SoC takes one instance; allowed: a board simulated with on-chip main "
                         "memory (orangecrab)")
    size = on_chip_memory_bytes(chosen, layout.size, layout.config)
    soc = SocCore(layout.config, layout, size, MIN_DIVISOR * baud, baud)
    last = 1 << (len(layout.stages) - 1)

    async def probe(ctx) -> None:
        cycle, before = 0, 0
        async for _, _, running in ctx.tick().sample(soc.running):
            cycle += 1
            if running & last and not before & last:
                starts.append(cycle)
            before = running

    return SimulatedTransport(soc, testbenches=[probe])


def run_instances(args: argparse.Namespace, chosen: Board, baud: int, config: AcceleratorConfig, simulated: bool) -> int:
    net = quantized(load_model(args), args)
    inputs = stream_inputs(args, read_input(args.input, net))
    from scheduler.instances import scheduled_layout

    figures, layout = scheduled_layout(net, config, len(inputs))
    predicted = predicted_period(layout)
    starts: list[int] = []
    if simulated:
        with preparing():
            transport = simulated_soc(chosen, layout, baud, starts)
        expected = predicted_stream_cycles(layout, len(inputs))
        timeout = args.timeout or SIM_TIMEOUT_FACTOR * expected / transport.soc.clk_hz
    else:
        transport = SerialTransport(args.port, baud)
        timeout = args.timeout or SERIAL_TIMEOUT
    try:
        with SimulationProgress(transport) as progress:
            runtime = Runtime(transport, run_timeout=timeout)
            if not simulated:
                runtime.resync()
            progress.stage("loading the instances' memory images")
            loaded = runtime.load(layout, force=args.reload)
            progress.stage(f"streaming {len(inputs)} images")
            outputs, counters = runtime.stream(layout, list(inputs))
    finally:
        transport.close()
    name = net.outputs[0]
    if args.output is not None:
        save_outputs(args.output, {name: output_array(net, name, outputs, raw=True)})
    exact = [bool(np.array_equal(y, run_quantized(net, x)[name])) for x, y in zip(inputs, outputs)]
    clock = config.clock_mhz * 1e6
    record = {
        "board": chosen.name, "port": args.port, "network": net.name, "config": config.name,
        "instances": config.instances, "images": len(inputs), "image_loaded": loaded,
        "bit_exact_images": sum(exact), "bit_exact": all(exact),
        "stages": [{"layers": list(stage), "predicted_cycles": s.compilation.prediction.cycles}
                   for stage, s in zip(figures.stages, layout.stages)],
        "cycles": counters["cycles"],
        "period_cycles": (starts[-1] - starts[0]) / (len(starts) - 1) if len(starts) > 1 else None,
        "predicted_period_cycles": predicted, "scheduler_period_cycles": figures.period_s * clock,
    }
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        show(record, f"{net.name} on {chosen.name} ({args.port}): {config.instances} instances of {config.name}, "
             f"{len(inputs)} images")
    return 0 if record["bit_exact"] else 1
