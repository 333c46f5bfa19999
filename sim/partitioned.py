"""A network cut into accelerator segments and host parts, run as a chain.

Each accelerator segment is a quantized `Network` of its own, calibrated on the float values
that reach its input (the float model run by onnxruntime up to there). Across a boundary the
tensor is int8 on the accelerator side: a segment's float input is quantized with its input
parameters and its int8 outputs are dequantized with its output parameters; host parts run the
float operators with onnxruntime. Who executes a segment (golden model, ISA simulator, RTL, the
simulated SoC) is the caller's `SegmentRunner`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from common.errors import QuantizationError
from planner.frontend import ModelPart, load_network
from planner.ir import Network
from sim.golden.calibration import quantize_network

SegmentRunner = Callable[[Network, np.ndarray], dict[str, np.ndarray]]
"""Runs a segment on an int8 batch `(N, C, H, W)`; returns its int8 outputs by name, `(N, C, H, W)` each."""


@dataclass(frozen=True)
class SegmentRun:
    """One segment's int8 input batch and outputs in a chained run."""

    network: Network
    inputs: np.ndarray
    outputs: dict[str, np.ndarray]


def value_dims(model: onnx.ModelProto, name: str) -> tuple[int, ...]:
    """The per-sample dimensions (batch dropped) of a tensor of a part's model ((-1,): unknown)."""
    graph = model.graph
    value = next((v for v in (*graph.input, *graph.value_info, *graph.output) if v.name == name), None)
    return (-1,) if value is None else tuple(d.dim_value for d in value.type.tensor_type.shape.dim)[1:]


def apply_host_tails(net: Network, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The graph's outputs: trailing host operators (Softmax, ArgMax) applied to the accelerator's."""
    result = {}
    for name, array in arrays.items():
        tails = [tail for tail in net.host_tails if tail.source == name]
        result.update({tail.output: tail.apply(array) for tail in tails} if tails else {name: array})
    return result


def run_host_part(part: ModelPart, batch: np.ndarray) -> dict[str, np.ndarray]:
    """A part's float model in onnxruntime, sample by sample (the parts have batch 1)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(part.model.SerializeToString(), providers=["CPUExecutionProvider"])
    dims = value_dims(part.model, part.input)
    per_sample = [session.run(list(part.outputs), {part.input: sample.reshape(1, *dims).astype(np.float32)})
                  for sample in batch]
    return {name: np.concatenate([outputs[k] for outputs in per_sample]) for k, name in enumerate(part.outputs)}


@dataclass(frozen=True)
class PartitionedNetwork:
    """The chain of parts; `networks[i]` is part i's quantized segment (None for a host part)."""

    name: str
    parts: tuple[ModelPart, ...]
    networks: tuple[Network | None, ...]

    @property
    def segments(self) -> tuple[Network, ...]:
        return tuple(net for net in self.networks if net is not None)

    @property
    def input_dims(self) -> tuple[int, ...]:
        return value_dims(self.parts[0].model, self.parts[0].input)

    def run(self, x: np.ndarray, run_segment: SegmentRunner) -> tuple[dict[str, np.ndarray], list[SegmentRun]]:
        """The graph outputs (float, `(N, ...)` as in ONNX) for a float input batch, and each segment's run."""
        values = {self.parts[0].input: np.asarray(x, dtype=np.float32)}
        runs = []
        for part, net in zip(self.parts, self.networks, strict=True):
            batch = values[part.input]
            if net is None:
                values.update(run_host_part(part, batch))
                continue
            quantized = net.input_quant.quantize(batch.reshape(len(batch), *net.input_shape))
            outputs = run_segment(net, quantized)
            runs.append(SegmentRun(net, quantized, outputs))
            dequantized = {name: net.output_quant(name).dequantize(array).reshape(len(batch), *value_dims(part.model, name))
                           for name, array in outputs.items()}
            named = apply_host_tails(net, dequantized)
            if len(named) == len(part.outputs) == 1:  # the part's name for it (a QDQ model's DequantizeLinear)
                named = {part.outputs[0]: next(iter(named.values()))}
            values.update(named)
        return {name: values[name] for name in self.parts[-1].outputs}, runs

    def reference(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The float model's outputs (every part in onnxruntime, no quantization)."""
        values = {self.parts[0].input: np.asarray(x, dtype=np.float32)}
        for part in self.parts:
            values.update(run_host_part(part, values[part.input]))
        return {name: values[name] for name in self.parts[-1].outputs}


def partitioned_network(name: str, parts: Sequence[ModelPart], calibration: np.ndarray | None) -> PartitionedNetwork:
    """Load every segment; float segments are calibrated on the float values reaching them from
    `calibration` (float inputs `(N, ...)`; None when the model is quantized)."""
    networks = []
    samples = calibration
    for part in parts:
        net = None
        if not part.on_host:
            net = load_network(part.model)
            if not net.quantized:
                if samples is None:
                    raise QuantizationError(f"{name}: segment {part.model.graph.name!r} is float; calibration inputs "
                                            "(float model inputs) are needed to quantize it")
                net = quantize_network(net, samples.reshape(len(samples), *net.input_shape))
        networks.append(net)
        if samples is not None:
            samples = run_host_part(part, samples)[part.outputs[0]] if part is not parts[-1] else None
    return PartitionedNetwork(name, tuple(parts), tuple(networks))
