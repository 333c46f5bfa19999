"""Accelerator instances pipelined over a stream of images (`hwgen.pipeline`) in the Amaranth
simulator: a three-convolution network (4 -> 4 -> 4 -> 4 channels, 3x3 kernels, 6x6 pixels) on the
tiny configuration of the tests, cut into stages at `--starts`; prints per stage the program
model's cycles, the cycles measured per image, bit-exactness against the golden model and the
measured vs predicted period (`planner.compile.stages.predicted_period`).

    python bench/pipeline_period.py --images 6 --starts 0 2
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests")]

from onnx_factory import GraphBuilder  # noqa: E402
from soc_helpers import TINY  # noqa: E402

from planner.compile.stages import pipeline_layout, predicted_period  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from sim.golden import run_quantized  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402
from sim.pipeline_sim import run_pipeline  # noqa: E402

SHAPE = (4, 6, 6)


def network():
    g = GraphBuilder((1, *SHAPE), seed=3)
    x = g.node("Relu", [g.conv(g.input_name, 4, 4)])
    x = g.node("Relu", [g.conv(x, 4, 4)])
    calibration = np.random.default_rng(0).standard_normal((4, *SHAPE)).astype(np.float32)
    return quantize_network(load_network(g.model(g.conv(x, 4, 4))), calibration)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=6)
    parser.add_argument("--starts", type=int, nargs="+", default=[0, 2], help="first layer of each stage")
    args = parser.parse_args()
    net = network()
    layout = pipeline_layout(net, args.starts, TINY, args.images)
    rng = np.random.default_rng(1)
    inputs = [net.input_quant.quantize(rng.standard_normal(SHAPE)) for _ in range(args.images)]
    wall = time.monotonic()
    run = run_pipeline(layout, inputs)
    wall = time.monotonic() - wall
    exact = sum(np.array_equal(y, run_quantized(net, x)[net.outputs[0]]) for x, y in zip(inputs, run.outputs))
    print(f"{len(layout.stages)} instances of {TINY.name}, {args.images} images, stages start at layers {args.starts}; "
          f"{run.cycles:,} cycles simulated in {wall:.0f} s")
    for index, stage in enumerate(layout.stages):
        durations = [end - start for start, end in zip(run.starts[index], run.ends[index])]
        print(f"  stage {index}: program model {stage.compilation.prediction.cycles:,} cycles, "
              f"{stage.compilation.prediction.dram_bytes:,} DRAM bytes; measured per image {durations}")
    predicted = predicted_period(layout)
    print(f"  bit-exact vs golden: {exact} of {args.images}")
    print(f"  period: measured {run.period():,.1f} cycles, predicted {predicted:,.1f} "
          f"({(run.period() - predicted) / predicted:+.1%}); slowest stage alone "
          f"{max(s.compilation.prediction.cycles for s in layout.stages):,}")


if __name__ == "__main__":
    main()
