"""`hwgen demo`: the main job on the built-in digits CNN, stage by stage."""
from __future__ import annotations

import argparse
import time

import numpy as np

from cli.commands.common import one_instance
from cli.commands.inspect import render_table
from planner.envelope import network_problems
from hwgen.config import load_config
from common.console import make_console
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.report import plan_table
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_float, run_quantized
from sim.isa_sim import IsaSimulator
from sim.rtl_sim import run_rtl


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", description="Load the built-in digits CNN, quantize it to int8, compare float and int8 (golden model) "
        "accuracy on the held-out digits, plan it for a hardware configuration, compile it, run the held-out "
        "digits on the instruction-level simulator and one image on the generated RTL (Amaranth simulator).",
    )
    parser.add_argument("--hw", metavar="CFG", help="hardware configuration YAML or shipped name (default: default, the ulx3s-85f board's)")
    parser.add_argument("--samples", type=int, default=None, help="evaluate on the first N held-out images (default: all)")
    parser.add_argument("--no-rtl", action="store_true", help="skip the RTL simulation (about 30 s)")
    parser.set_defaults(func=run)


def accuracy(predictions: list[int], labels: np.ndarray) -> float:
    return float(np.mean(np.array(predictions) == labels))


def run(args: argparse.Namespace) -> int:
    console = make_console()
    net = load_network(DIGITS_MODEL_PATH)
    config = one_instance(load_config(args.hw), "demo")
    console.print(render_table(net, network_problems(net, config), config))
    qnet = quantize_network(net, calibration_inputs())
    _, _, x_test, y_test = load_digits_split()
    if args.samples is not None:
        x_test, y_test = x_test[: args.samples], y_test[: args.samples]
    output = net.outputs[0]
    float_pred = [int(run_float(net, x)[output].argmax()) for x in x_test]
    int8_pred = [int(run_quantized(qnet, qnet.input_quant.quantize(x))[output].argmax()) for x in x_test]
    console.print(f"[1/4] held-out digits ({len(y_test)} images): float accuracy {accuracy(float_pred, y_test):.2%}, "
                  f"int8 golden accuracy {accuracy(int8_pred, y_test):.2%}")

    flow = plan_and_compile(qnet, config)
    console.print(plan_table(flow.plan))
    report = flow.compiled.report()
    console.print(f"[2/4] planned for {config.name} and compiled: {report['instructions']} instructions, "
                  f"{report['descriptors']} DMA descriptors, {report['dram_bytes']:,} B of DRAM")

    start, agree, isa_pred = time.perf_counter(), 0, []
    for x in x_test:
        xq = qnet.input_quant.quantize(x)
        dram = flow.compiled.dram_with_input(xq)
        IsaSimulator(config, flow.compiled.program, dram).run()
        result = flow.compiled.read_output(dram, output)
        agree += np.array_equal(result, run_quantized(qnet, xq)[output])
        isa_pred.append(int(result.argmax()))
    console.print(f"[3/4] instruction-level simulator: {agree}/{len(x_test)} images bit-exact to the golden model, "
                  f"accuracy {accuracy(isa_pred, y_test):.2%} ({time.perf_counter() - start:.1f} s)")

    if args.no_rtl:
        console.print("[4/4] RTL simulation skipped (--no-rtl)")
        return 0
    xq = qnet.input_quant.quantize(x_test[0])
    start = time.perf_counter()
    rtl = run_rtl(flow.compiled, xq)
    exact = np.array_equal(rtl.outputs[output], run_quantized(qnet, xq)[output])
    console.print(f"[4/4] generated RTL (Amaranth simulator), image 0: {'bit-exact' if exact else 'MISMATCH'}, "
                  f"{rtl.cycles:,} cycles (predicted {flow.prediction.cycles:,}), "
                  f"{rtl.traffic.bytes_read + rtl.traffic.bytes_written:,} DRAM bytes "
                  f"(predicted {flow.prediction.dram_bytes:,}) ({time.perf_counter() - start:.0f} s)")
    return 0 if exact and agree == len(x_test) else 1
