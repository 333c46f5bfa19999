"""Arguments and loading steps shared by several subcommands."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from common.errors import ConfigError, HwgenError, InputError, UnsupportedModelError
from planner.zoo import (BUILTIN_MODELS, DEFAULT_MODEL, builtin_calibration, is_builtin, resolve_model,
                         synthetic_calibration)

if TYPE_CHECKING:
    from hwgen.config import AcceleratorConfig
    from planner.compile.network import CompiledNetwork
    from planner.compile.stages import PipelineLayout
    from planner.frontend.partition import ModelPart
    from planner.ir import Network
    from sim.partitioned import PartitionedNetwork


def add_model_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "model", nargs="?", default=DEFAULT_MODEL, metavar="MODEL",
        help=f"ONNX file, or a built-in model: {', '.join(BUILTIN_MODELS)} (default: {DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--input-shape", type=parse_shape, metavar="NxCxHxW",
        help="input shape for models whose input dimensions are symbolic, e.g. 1x3x224x224",
    )


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a shape like 1x3x224x224") from None
    if not shape or any(extent <= 0 for extent in shape):
        raise argparse.ArgumentTypeError(f"{text!r}: extents must be positive integers")
    return shape


def load_model(args: argparse.Namespace, weights: bool = True) -> Network:
    """The (float or quantized) Network IR of the MODEL argument; absent weights are noted on stderr.
    Without `weights` a built-in reference network is loaded from its shapes alone (no values)."""
    from planner.frontend import load_network

    model = resolve_model(args.model, weights)
    net = load_network(model, args.input_shape, check=not is_builtin(args.model))
    if net.absent_weights:
        warn(args, f"{args.model} has no weight data for {len(net.absent_weights)} tensor(s) "
             f"({net.absent_weights[0]}, ...): seeded random weights stand in")
    return net


def warn(args: argparse.Namespace, message: str) -> None:
    """One warning line on stderr, prefixed like the command's errors."""
    print(f"hwgen {args.command}: warning: {message}", file=sys.stderr)


def add_calibration_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--calibration", metavar="DIR_OR_NPY",
        help="calibration inputs for float models: an .npy of shape (N, C, H, W) or a folder of .npy files "
        "(default for built-in models: digits training images, or seeded random inputs for reference networks; "
        "for other float models infer and run need it, the other commands use seeded random inputs and warn)",
    )


def as_batch(array: np.ndarray, input_shape: tuple[int, int, int], label: str) -> np.ndarray:
    """`array` as a batch `(N, C, H, W)` of model inputs: given as `(N, C, H, W)`, one input
    `(C, H, W)` or flattened inputs `(N, C*H*W)`; any other shape is refused (never reshaped)."""
    size = int(np.prod(input_shape))
    if tuple(array.shape) == input_shape:
        return array[None]
    if array.ndim == 4 and tuple(array.shape[1:]) == input_shape and array.shape[0] > 0:
        return array
    if array.ndim == 2 and array.shape[0] > 0 and array.shape[1] == size:
        return array.reshape(-1, *input_shape)
    c, h, w = input_shape
    raise InputError(f"{label}: shape {tuple(array.shape)} does not match the model input {c}x{h}x{w}; allowed: "
                     f"(N, {c}, {h}, {w}), ({c}, {h}, {w}) or (N, {size}) with N >= 1")


def load_array(path: Path, label: str) -> np.ndarray:
    """The array of one `.npy` file, refused unless it holds finite real numbers (its shape is
    checked by `as_batch`)."""
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise InputError(f"{label}: cannot read as .npy ({reason})") from None
    if not isinstance(array, np.ndarray):
        array.close()
        raise InputError(f"{label}: an .npz archive; give one array as .npy (np.save)")
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise InputError(f"{label}: dtype {array.dtype}; allowed: real numbers (float or integer)")
    if np.issubdtype(array.dtype, np.inexact) and not np.isfinite(array).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise InputError(f"{label}: non-finite value {array[bad]} at index {bad}; every value must be finite")
    return array


def read_calibration(source: str, input_shape: tuple[int, int, int]) -> np.ndarray:
    """Calibration samples `(N, C, H, W)` from an .npy file or a folder of them."""
    path = Path(source)
    files = sorted(path.glob("*.npy")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise InputError(f"--calibration {source}: no .npy file found")
    arrays = [as_batch(load_array(file, f"--calibration {file}"), input_shape, f"--calibration {file}") for file in files]
    return np.concatenate(arrays).astype(np.float32)


def quantized(net: Network, args: argparse.Namespace, synthetic: bool = False) -> Network:
    """The network itself if the model is quantized, else calibrated from --calibration.

    Without --calibration a float model that is not built in is an error, or, for commands
    that report no accuracy (`synthetic`), calibrated on seeded synthetic inputs with a warning.
    """
    if net.quantized:
        return net
    if args.calibration is not None:
        samples = read_calibration(args.calibration, net.input_shape)
    else:
        samples = builtin_calibration(args.model, net.input_shape)
        if samples is None and not synthetic:
            raise InputError(f"{args.model} is a float model: give calibration inputs with --calibration DIR_OR_NPY")
        if samples is None:
            samples = synthetic_calibration(net.input_shape)
            warn(args, f"{args.model} is a float model without --calibration: quantized with ranges of "
                 f"{len(samples)} seeded N(0, 1) inputs (cycles and traffic hold, accuracy does not)")
    from sim.golden.calibration import quantize_network

    return quantize_network(net, samples)


def checkable(net: Network, config: AcceleratorConfig, args: argparse.Namespace) -> Network:
    """`net` as the envelope checks it for `config`: where the configuration bounds the
    requantization (`planner.envelope.bounds_quantization`) a float model is calibrated first
    (`quantized`, seeded inputs with a warning when there is no --calibration), so that a shift
    it cannot apply is refused before a plan is printed."""
    from planner.envelope import bounds_quantization

    if net.quantized or not bounds_quantization(config):
        return net
    return quantized(net, args, synthetic=True)


def load_partitioned(args: argparse.Namespace, synthetic: bool = False) -> PartitionedNetwork | None:
    """The MODEL cut into accelerator segments and host parts when it has host operators inside
    (`planner.frontend.partition`), its float segments calibrated from --calibration (or the
    built-in or, for `synthetic`, seeded inputs) pushed through the float model; None when the
    whole model runs on the accelerator."""
    from planner.frontend import load_parts
    from sim.partitioned import partitioned_network, value_dims

    parts = load_parts(resolve_model(args.model), args.input_shape, check=not is_builtin(args.model))
    if len(parts) == 1:
        return None
    dims = value_dims(parts[0].model, parts[0].input)
    shape = dims if len(dims) == 3 else (int(np.prod(dims)), 1, 1)
    if args.calibration is not None:
        samples = read_calibration(args.calibration, shape)
    else:
        samples = builtin_calibration(args.model, shape)
        if samples is None and synthetic:
            samples = synthetic_calibration(shape)
            warn(args, f"{args.model} without --calibration: its float segments are quantized with ranges of "
                 f"{len(samples)} seeded N(0, 1) inputs (cycles and traffic hold, accuracy does not)")
    name = Path(args.model).stem if str(args.model).endswith(".onnx") else str(args.model)
    return partitioned_network(name, parts, None if samples is None else samples.reshape(len(samples), *dims))


def one_instance(config: AcceleratorConfig, command: str) -> AcceleratorConfig:
    """`config` if it describes one accelerator instance; `hwgen COMMAND` makes no more."""
    if config.instances > 1:
        raise ConfigError(f"configuration {config.name!r}: instances: {config.instances}; `hwgen {command}` makes one "
                          "instance (the demo's board session runs one network on one accelerator); allowed: "
                          "instances: 1 (`hwgen run --images K` streams images through several, docs/units.md)")
    return config


DEFAULT_STREAM_IMAGES = 4
"""Images a SoC of several instances streams per START unless --images says otherwise."""


def add_images_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--images", type=int, metavar="K",
                        help="with a configuration of several instances: the images the SoC streams per run (its "
                        f"slots in main memory; default {DEFAULT_STREAM_IMAGES})")


def compiled_for_soc(net: Network, config: AcceleratorConfig, images: int | None) -> CompiledNetwork | PipelineLayout:
    """`net` compiled for one instance of `config`, or, for several, the scheduler's stages laid
    out for a stream of `images` images (`scheduler.instances.scheduled_layout`)."""
    from planner.pipeline import plan_and_compile
    from scheduler.instances import scheduled_layout

    if config.instances == 1:
        if images is not None:
            raise InputError(f"--images {images}: configuration {config.name!r} has one instance; allowed: --images "
                             "with a configuration of several instances")
        return plan_and_compile(net, config).compiled
    count = DEFAULT_STREAM_IMAGES if images is None else images
    if count < 2:
        raise InputError(f"--images {count}: allowed: at least 2 (a stream through the pipelined instances)")
    return scheduled_layout(net, config, count)[1]


def model_segments(args: argparse.Namespace, weights: bool = True) -> tuple[list[Network], tuple[ModelPart, ...]]:
    """The MODEL's accelerator segments (float or quantized as stored, for commands that need
    shapes only; without `weights` a built-in network's shapes alone, `load_model`) and, for a
    model with host operators inside, its chain of parts (none when the whole model runs on the
    accelerator: it is split only if it does not load whole)."""
    from planner.frontend import load_network, load_parts

    try:
        return [load_model(args, weights)], ()
    except UnsupportedModelError as error:
        try:
            parts = load_parts(resolve_model(args.model), args.input_shape, check=not is_builtin(args.model))
        except HwgenError:  # it does not split either: the error of the model as a whole names the operator
            raise error from None
        if len(parts) == 1:
            raise error
    return [load_network(part.model) for part in parts if not part.on_host], parts


def shape_segments(args: argparse.Namespace, weights: bool = True) -> tuple[list[Network], list[dict]]:
    """`model_segments` with its host parts described: `after_segment` (the index of the segment
    before it, -1 for none) and `ops` (its operators)."""
    segments, parts = model_segments(args, weights)
    host_parts, before = [], -1
    for part in parts:
        if part.on_host:
            host_parts.append({"after_segment": before, "ops": [node.op_type for node in part.model.graph.node]})
        else:
            before += 1
    return segments, host_parts
