"""`hwgen infer`: run a model on an input array with one of the engines."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from cli.commands.common import (add_calibration_argument, add_model_argument, as_batch, load_array, load_model,
                                 load_partitioned, quantized)
from cli.cycle_progress import CycleProgress
from common.errors import InputError
from common.files import atomic_save_npy, atomic_write_bytes, check_output_file
from hwgen.config import AcceleratorConfig, load_config
from planner.ir import Network, Op
from planner.pipeline import plan_and_compile
from sim.engines import ENGINES
from sim.partitioned import PartitionedNetwork, SegmentRunner, apply_host_tails


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "infer", description="Quantize the model if it is float, run the input through an engine and save the "
        "outputs. Float inputs are quantized with the model's input parameters; int8 inputs are "
        "taken as already quantized. Outputs are dequantized to float32 unless --raw; a trailing "
        "Softmax, LogSoftmax or ArgMax is then computed on the host (--raw: the accelerator's outputs). A model "
        "with host operators inside (Sigmoid, LRN, Resize, Transpose, ...) runs as a chain: accelerator segments on "
        "the engine, int8 at their boundaries, host parts in onnxruntime (--raw: the last segment's outputs).",
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


def read_float_input(path: Path, partitioned: PartitionedNetwork) -> np.ndarray:
    """The input batch of a partitioned model as float: int8 data is taken as quantized for its
    first segment (the first part must then be one)."""
    x = load_array(path, f"--input {path}")
    dims = partitioned.input_dims
    x = as_batch(x, dims if len(dims) == 3 else (int(np.prod(dims)), 1, 1), f"--input {path}").reshape(-1, *dims)
    first = partitioned.networks[0]
    if x.dtype == np.int8 and first is not None:
        return first.input_quant.dequantize(x)
    if not np.issubdtype(x.dtype, np.floating):
        raise InputError(f"--input {path}: dtype {x.dtype} must be float (real values)"
                         + (" or int8 (quantized)" if first is not None else " (the model starts with a host operator)"))
    return x.astype(np.float32)


def engine_runner(engine_name: str, config: AcceleratorConfig) -> SegmentRunner:
    """Runs a segment sample by sample on an engine, its program compiled for `config`."""
    engine = ENGINES[engine_name]

    def run_segment(net: Network, batch: np.ndarray) -> dict[str, np.ndarray]:
        flow = plan_and_compile(net, config) if engine.needs_program else None
        per_output: dict[str, list[np.ndarray]] = {name: [] for name in net.outputs}
        for k, sample in enumerate(batch):
            what = f"{engine_name}: {net.name}, input {k + 1} of {len(batch)}"
            with CycleProgress(what, flow.prediction.cycles if flow else 0, engine.shows_progress) as progress:
                outputs = engine.run(net, flow and flow.compiled, sample, progress=progress).outputs
            for name, value in outputs.items():
                per_output[name].append(value)
        return {name: np.stack(values) for name, values in per_output.items()}

    return run_segment


def save_outputs(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """One array as .npy, several as .npz, written atomically."""
    if len(arrays) == 1:
        atomic_save_npy(path, next(iter(arrays.values())))
        return
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


def run_partitioned(args: argparse.Namespace, partitioned: PartitionedNetwork) -> int:
    inputs = read_float_input(args.input, partitioned)
    arrays, runs = partitioned.run(inputs, engine_runner(args.engine, load_config(args.hw)))
    if args.raw:
        arrays = runs[-1].outputs
    save_outputs(args.output, arrays)
    shapes = ", ".join(f"{name} {tuple(a.shape)}" for name, a in arrays.items())
    print(f"{args.engine}: {len(inputs)} input(s) through {len(runs)} accelerator segment(s) and "
          f"{len(partitioned.parts) - len(runs)} host part(s) -> {args.output} ({shapes})")
    return 0


def run(args: argparse.Namespace) -> int:
    check_output_file(args.output, "--output")
    partitioned = load_partitioned(args)
    if partitioned is not None:
        return run_partitioned(args, partitioned)
    net = quantized(load_model(args), args)
    inputs = read_input(args.input, net)
    outputs = engine_runner(args.engine, load_config(args.hw))(net, inputs)
    arrays = {name: output_array(net, name, list(values), args.raw) for name, values in outputs.items()}
    if not args.raw:
        arrays = apply_host_tails(net, arrays)
    save_outputs(args.output, arrays)
    shapes = ", ".join(f"{name} {tuple(a.shape)}" for name, a in arrays.items())
    print(f"{args.engine}: {len(inputs)} input(s) -> {args.output} ({shapes})")
    return 0
