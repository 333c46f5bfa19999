"""`hwgen simulate`: run a network or one layer on an engine, check it against the golden model
and compare measured with predicted cycles and DRAM bytes."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from rich.table import Table

from cli.commands.common import add_calibration_argument, add_model_argument, load_model, load_partitioned, quantized
from cli.commands.infer import read_float_input, read_input
from cli.cycle_progress import CycleProgress
from common.console import make_console
from common.errors import InputError
from common.files import check_output_file
from hwgen.config import AcceleratorConfig, load_config
from planner.ir import Network, single_layer_network
from planner.pipeline import plan_and_compile
from planner.zoo import DEFAULT_MODEL
from sim.engines import ENGINES
from sim.golden import run_quantized
from sim.partitioned import PartitionedNetwork

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
    parser.add_argument("--images", type=int, metavar="K",
                        help="a configuration with several instances: images streamed through their pipeline "
                        "(default: 4; --engine amaranth)")
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


def measured(engine_name: str, net: Network, x: np.ndarray, config: AcceleratorConfig, vcd: str | None = None) -> tuple[dict, dict]:
    """Run `net` on the engine for one int8 input: its outputs and the record of bit-exactness
    against the golden model and measured vs predicted cycles, DRAM bytes and PE utilization."""
    flow = plan_and_compile(net, config)
    engine = ENGINES[engine_name]
    with CycleProgress(f"{engine_name}: {net.name}", flow.prediction.cycles, engine.shows_progress) as progress:
        result = engine.run(net, flow.compiled, x, vcd=vcd, progress=progress)
    golden = run_quantized(net, x)
    exact = all(np.array_equal(result.outputs[name], golden[name]) for name in net.outputs)
    macs = sum(layer.macs for layer in net.layers)
    record = {
        "engine": engine_name, "network": net.name, "bit_exact": bool(exact),
        "cycles": result.cycles, "predicted_cycles": flow.prediction.cycles,
        "dram_bytes": result.dram_bytes, "predicted_dram_bytes": flow.prediction.dram_bytes,
        "utilization": None if not result.cycles else macs / (result.cycles * config.pe.macs_per_cycle),
        "predicted_utilization": macs / (flow.prediction.cycles * config.pe.macs_per_cycle),
        "plan_cycles": flow.plan.cycles,
    }
    return result.outputs, record


def show(record: dict, config: AcceleratorConfig) -> None:
    table = Table(title=f"{record['network']} on {config.name} ({ENGINES[record['engine']].description})")
    for column in ("", "measured", "predicted"):
        table.add_column(column, justify="right")
    table.add_row("bit-exact vs golden", "yes" if record["bit_exact"] else "NO", "")
    for label, key in (("cycles", "cycles"), ("DRAM bytes", "dram_bytes"), ("PE utilization", "utilization")):
        measured, predicted = record[key], record[f"predicted_{key}"]
        fmt = (lambda v: "n/a" if v is None else f"{v:.1%}") if key == "utilization" else (lambda v: "n/a" if v is None else f"{v:,}")
        table.add_row(label, fmt(measured), fmt(predicted))
    console = make_console()
    console.print(table)
    difference = record["predicted_cycles"] - record["plan_cycles"]
    console.print("predicted: the compiled program, its layers back to back;", style="dim")
    console.print(f"`hwgen plan` sums the layers planned alone: {record['plan_cycles']:,} cycles ({-difference:+,})", style="dim")


def run_partitioned(args: argparse.Namespace, partitioned: PartitionedNetwork, config: AcceleratorConfig) -> int:
    """Every accelerator segment on the engine (each checked against the golden model on the int8
    input the chain gives it), host parts in onnxruntime, the outputs against the float model's."""
    if args.layer is not None or args.vcd is not None:
        raise InputError(f"{args.model} has host operators inside: --layer and --vcd are for models that run on "
                         "the accelerator alone")
    if args.input is not None:
        x = read_float_input(args.input, partitioned)[:1]
    else:
        x = np.random.default_rng(0).standard_normal((1, *partitioned.input_dims)).astype(np.float32)
    records = []

    def run_segment(net: Network, batch: np.ndarray) -> dict[str, np.ndarray]:
        outputs, record = measured(args.engine, net, batch[0], config)
        records.append(record)
        return {name: value[None] for name, value in outputs.items()}

    outputs, _ = partitioned.run(x, run_segment)
    reference = partitioned.reference(x)
    error = max(float(np.abs(outputs[name] - reference[name]).max()) for name in outputs)
    exact = all(record["bit_exact"] for record in records)
    if args.json:
        print(json.dumps({"network": partitioned.name, "bit_exact": exact, "segments": records,
                          "host_parts": len(partitioned.parts) - len(records),
                          "float_reference_max_abs_error": error}, indent=2))
    else:
        for record in records:
            show(record, config)
        make_console().print(f"{partitioned.name}: {len(records)} accelerator segment(s), "
                             f"{len(partitioned.parts) - len(records)} host part(s) in onnxruntime; outputs vs the "
                             f"float model in onnxruntime: largest difference {error:.3g}")
    return 0 if exact else 1


def check_vcd(args: argparse.Namespace) -> None:
    """`--vcd` only with an engine that writes waves, into a file that can be written."""
    if args.vcd is None:
        return
    if not ENGINES[args.engine].writes_waves:
        raise InputError(f"--vcd {args.vcd}: the {args.engine} engine has no waveform; use an RTL engine: "
                         + ", ".join(name for name in PROGRAM_ENGINES if ENGINES[name].writes_waves))
    check_output_file(args.vcd, "--vcd")


def run(args: argparse.Namespace) -> int:
    check_vcd(args)
    config = load_config(args.hw)
    if config.instances == 1 and args.images is not None:
        raise InputError(f"--images {args.images}: configuration {config.name!r} has one instance; allowed: --images "
                         "only with several (`instances` in the configuration)")
    partitioned = load_partitioned(args, synthetic=True)
    if partitioned is not None:
        if config.instances > 1:
            raise InputError(f"{args.model} has host operators inside; configuration {config.name!r} has "
                             f"{config.instances} instances; allowed: one instance for such a model")
        return run_partitioned(args, partitioned, config)
    net = quantized(load_model(args), args, synthetic=True)
    if config.instances > 1:
        from cli.commands.simulate_instances import run_instances  # the scheduler: only for several instances

        return run_instances(args, net, config)
    x = default_input(args, net)
    if args.layer is not None:
        layer_net = single_layer_network(net, args.layer)
        x, net = run_quantized(net, x)[layer_net.input_name], layer_net
    _, record = measured(args.engine, net, x, config, args.vcd)
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        show(record, config)
    return 0 if record["bit_exact"] else 1
