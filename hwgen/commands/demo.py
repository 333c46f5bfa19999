"""`hwgen demo`: the main job on the built-in default model, stage by stage."""
from __future__ import annotations

import argparse
import time

import numpy as np
from hwgen.console import make_console

from hwgen.commands.inspect import render_table
from planner.calibrate import quantize_network
from planner.frontend import load_network
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_float, run_quantized


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="run the whole flow on the built-in digits CNN",
        description="Load the built-in digits CNN, show its layers, quantize it to int8 from its "
        "calibration images and compare float and int8 (golden model) accuracy on the held-out digits.",
    )
    parser.add_argument("--samples", type=int, default=None, help="evaluate on the first N held-out images (default: all)")
    parser.set_defaults(func=run)


def accuracy(predictions: list[int], labels: np.ndarray) -> float:
    return float(np.mean(np.array(predictions) == labels))


def run(args: argparse.Namespace) -> int:
    console = make_console()
    net = load_network(DIGITS_MODEL_PATH)
    console.print(render_table(net))
    start = time.perf_counter()
    qnet = quantize_network(net, calibration_inputs())
    console.print(f"quantized to int8 from {len(calibration_inputs())} calibration images in {time.perf_counter() - start:.2f} s")
    _, _, x_test, y_test = load_digits_split()
    if args.samples is not None:
        x_test, y_test = x_test[: args.samples], y_test[: args.samples]
    output = net.outputs[0]
    float_pred = [int(run_float(net, x)[output].argmax()) for x in x_test]
    int8_pred = [int(run_quantized(qnet, qnet.input_quant.quantize(x))[output].argmax()) for x in x_test]
    console.print(
        f"held-out digits ({len(y_test)} images): float accuracy {accuracy(float_pred, y_test):.2%}, "
        f"int8 golden accuracy {accuracy(int8_pred, y_test):.2%}, "
        f"int8 agrees with float on {accuracy(int8_pred, np.array(float_pred)):.2%}"
    )
    return 0
