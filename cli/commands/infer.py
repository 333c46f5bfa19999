"""`hwgen infer`: run a model on an input array with one of the engines."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from cli.commands.common import add_calibration_argument, add_model_argument, as_batch, load_array, load_model, quantized
from cli.cycle_progress import CycleProgress
from common.errors import InputError
from common.files import atomic_save_npy, atomic_write_bytes, check_output_file
from planner.ir import Network, Op
from sim.engines import ENGINES
from hwgen.config import load_config
from planner.pipeline import plan_and_compile


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "infer", description="Quantize the model if it is float, run the input through an engine and save the "
        "outputs. Float inputs are quantized with the model's input parameters; int8 inputs are "
        "taken as already quantized. Outputs are dequantized to float32 unless --raw; a trailing "
        "Softmax, LogSoftmax or ArgMax is then computed on the host (--raw: the accelerator's outputs).",
    )
    add_model_argument(parser)
    parser.add_argument("--input", required=True, type=Path, metavar="X.npy", help="input array (N, C, H, W) or (C, H, W)")
    parser.add_argument("--output", required=True, type=Path, metavar="Y.npy", help="where to write the outputs (.npz when the model has several)")
    parser.add_argument("--engine", choices=sorted(ENGINES), default="golden",
                        help="execution engine: " + "; ".join(f"{n}: {e.description}" for n, e in ENGINES.items())
                        + " (default: golden)")
    parser.add_argument("--hw", metavar="CFG", help="hardware configuration for engines that run the compiled program (default: default, the ulx3s-85f board's)")
    parser.add_argument("--raw", action="store_true", help="write int8 outputs instead of dequantized float32")
    add_calibration_argument(parser)
    parser.set_defaults(func=run)


def read_input(path: Path, net: Network) -> np.ndarray:
    """The input batch `(N, C, H, W)` as int8, quantizing float data."""
    x = as_batch(load_array(path, f"--input {path}"), net.input_shape, f"--input {path}")
    if x.dtype == np.int8:
        return x
    if not np.issubdtype(x.dtype, np.floating):
        raise InputError(f"--input {path}: dtype {x.dtype} must be float (real values) or int8 (quantized)")
    return net.input_quant.quantize(x)


def output_array(net: Network, name: str, batch: list[np.ndarray], raw: bool) -> np.ndarray:
    """Stack per-sample outputs; fully connected outputs become (N, features) as in ONNX."""
    stacked = np.stack(batch)
    if not raw:
        stacked = net.output_quant(name).dequantize(stacked)
    producer = next(layer for layer in net.layers if layer.output == name)
    return stacked.reshape(len(batch), -1) if producer.op == Op.FC else stacked


def with_host_tails(net: Network, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The graph's outputs: trailing host operators (Softmax, ArgMax) applied to the accelerator's."""
    result = {}
    for name, array in arrays.items():
        tails = [tail for tail in net.host_tails if tail.source == name]
        result.update({tail.output: tail.apply(array) for tail in tails} if tails else {name: array})
    return result


def run(args: argparse.Namespace) -> int:
    check_output_file(args.output, "--output")
    net = quantized(load_model(args), args)
    inputs = read_input(args.input, net)
    engine = ENGINES[args.engine]
    flow = plan_and_compile(net, load_config(args.hw)) if engine.needs_program else None
    compiled = None if flow is None else flow.compiled
    per_output: dict[str, list[np.ndarray]] = {name: [] for name in net.outputs}
    for k, sample in enumerate(inputs):
        what = f"{args.engine}: input {k + 1} of {len(inputs)}"
        with CycleProgress(what, flow.prediction.cycles if flow else 0, engine.shows_progress) as progress:
            outputs = engine.run(net, compiled, sample, progress=progress).outputs
        for name, value in outputs.items():
            per_output[name].append(value)
    arrays = {name: output_array(net, name, values, args.raw) for name, values in per_output.items()}
    if not args.raw:
        arrays = with_host_tails(net, arrays)
    if len(arrays) == 1:
        atomic_save_npy(args.output, next(iter(arrays.values())))
    else:
        import io

        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        atomic_write_bytes(args.output, buffer.getvalue())
    shapes = ", ".join(f"{name} {tuple(a.shape)}" for name, a in arrays.items())
    print(f"{args.engine}: {len(inputs)} input(s) -> {args.output} ({shapes})")
    return 0
