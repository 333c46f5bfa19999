"""`hwgen simulate`: run a network or one layer on an engine, check it against the golden model
and compare measured with predicted cycles and DRAM bytes."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from rich.table import Table

from cli.commands.common import add_calibration_argument, add_model_argument, load_model, quantized
from cli.commands.infer import read_input
from cli.cycle_progress import CycleProgress
from hwgen.config import load_config
from common.console import make_console
from common.errors import InputError
from common.files import check_output_file
from planner.ir import Network, single_layer_network
from planner.pipeline import plan_and_compile
from planner.zoo import DEFAULT_MODEL
from sim.engines import ENGINES
from sim.golden import run_quantized

PROGRAM_ENGINES = sorted(name for name, engine in ENGINES.items() if engine.needs_program)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate", description="Plan and compile the model for a hardware configuration, run one input through an engine, "
        "check the outputs against the golden model and print measured vs predicted cycles, DRAM bytes and PE "
        "utilization. The input is --input (its first sample), else the first held-out digit for the built-in "
        "model, else a seeded random input.",
    )
    add_model_argument(parser)
    parser.add_argument("--hw", metavar="CFG", help="hardware configuration YAML or shipped name (default: default, the ulx3s-85f board's)")
    parser.add_argument("--layer", metavar="NAME", help="run only this layer (its input computed by the golden model)")
    parser.add_argument("--engine", choices=PROGRAM_ENGINES, default="isa",
                        help="; ".join(f"{n}: {ENGINES[n].description}" for n in PROGRAM_ENGINES) + " (default: isa)")
    parser.add_argument("--input", type=Path, metavar="X.npy", help="input array (its first sample is used)")
    parser.add_argument("--vcd", metavar="FILE", help="write a waveform (RTL engines)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_calibration_argument(parser)
    parser.set_defaults(func=run)


def default_input(args: argparse.Namespace, net: Network) -> np.ndarray:
    if args.input is not None:
        return read_input(args.input, net)[0]
    if args.model == DEFAULT_MODEL:
        from planner.zoo.digits import load_digits_split

        return net.input_quant.quantize(load_digits_split()[2][0])
    return np.random.default_rng(0).integers(-128, 128, net.input_shape).astype(np.int8)


def run(args: argparse.Namespace) -> int:
    if args.vcd is not None:
        if not ENGINES[args.engine].writes_waves:
            raise InputError(f"--vcd {args.vcd}: the {args.engine} engine has no waveform; use an RTL engine: "
                             + ", ".join(name for name in PROGRAM_ENGINES if ENGINES[name].writes_waves))
        check_output_file(args.vcd, "--vcd")
    net = quantized(load_model(args), args, synthetic=True)
    x = default_input(args, net)
    if args.layer is not None:
        layer_net = single_layer_network(net, args.layer)
        x, net = run_quantized(net, x)[layer_net.input_name], layer_net
    config = load_config(args.hw)
    flow = plan_and_compile(net, config)
    engine = ENGINES[args.engine]
    with CycleProgress(f"{args.engine}: {net.name}", flow.prediction.cycles, engine.shows_progress) as progress:
        result = engine.run(net, flow.compiled, x, vcd=args.vcd, progress=progress)
    golden = run_quantized(net, x)
    exact = all(np.array_equal(result.outputs[name], golden[name]) for name in net.outputs)
    macs = sum(layer.macs for layer in net.layers)
    record = {
        "engine": args.engine, "network": net.name, "bit_exact": bool(exact),
        "cycles": result.cycles, "predicted_cycles": flow.prediction.cycles,
        "dram_bytes": result.dram_bytes, "predicted_dram_bytes": flow.prediction.dram_bytes,
        "utilization": None if not result.cycles else macs / (result.cycles * config.pe.macs_per_cycle),
        "predicted_utilization": macs / (flow.prediction.cycles * config.pe.macs_per_cycle),
        "plan_cycles": flow.plan.cycles,
    }
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        table = Table(title=f"{net.name} on {config.name} ({ENGINES[args.engine].description})")
        for column in ("", "measured", "predicted"):
            table.add_column(column, justify="right")
        table.add_row("bit-exact vs golden", "yes" if exact else "NO", "")
        for label, key in (("cycles", "cycles"), ("DRAM bytes", "dram_bytes"), ("PE utilization", "utilization")):
            measured, predicted = record[key], record[f"predicted_{key}"]
            fmt = (lambda v: "n/a" if v is None else f"{v:.1%}") if key == "utilization" else (lambda v: "n/a" if v is None else f"{v:,}")
            table.add_row(label, fmt(measured), fmt(predicted))
        console = make_console()
        console.print(table)
        difference = flow.prediction.cycles - flow.plan.cycles
        console.print("predicted: the compiled program, its layers back to back;", style="dim")
        console.print(f"`hwgen plan` sums the layers planned alone: {flow.plan.cycles:,} cycles ({-difference:+,})", style="dim")
    return 0 if exact else 1
