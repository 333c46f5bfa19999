"""The stages the scheduler gives a configuration's instances (`scheduler.instances`: the ILP,
the input in main memory, as `hwgen sweep` and `hwgen simulate` use them) and whether the stage
compiler (`planner.compile.stages.stage_networks`) accepts them; prints JSON.

    python bench/pipeline_stages.py resnet18 CFG.yaml
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.errors import PlanningError  # noqa: E402
from hwgen.config import load_config  # noqa: E402
from planner.compile.stages import stage_networks  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.zoo import resolve_model, synthetic_calibration  # noqa: E402
from scheduler.instances import pipeline_figures  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("hw")
    args = parser.parse_args()
    net = load_network(resolve_model(args.model), None)
    if not net.quantized:
        net = quantize_network(net, synthetic_calibration(net.input_shape))
    started = time.perf_counter()
    figures = pipeline_figures(net, load_config(args.hw))
    index = {layer.name: i for i, layer in enumerate(net.layers)}
    try:
        stage_networks(net, [index[stage[0]] for stage in figures.stages])
        verdict = "compile"
    except PlanningError as error:
        verdict = f"refused: {error}"
    print(json.dumps({"period_ms": figures.period_s * 1e3, "latency_ms": figures.latency_s * 1e3,
                      "stages": [f"{stage[0]}..{stage[-1]}" for stage in figures.stages], "compiler": verdict,
                      "seconds": time.perf_counter() - started}, indent=1))


if __name__ == "__main__":
    main()
