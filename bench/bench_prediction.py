"""Predicted vs measured: every layer of the digits CNN (and the whole network) run on the RTL in
the Amaranth simulator, against the program timing model and the planner's cost model.

    python bench/bench_prediction.py [--configs default icebreaker] [--no-network]

Prints per layer the measured cycles and DRAM bytes, both predictions and their errors, and
the worst cycle error of each model.
"""
from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from hwgen.config import load_config
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.ir import single_layer_network
from planner.pipeline import plan_and_compile
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.golden import run_quantized
from sim.rtl_sim import run_rtl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=["default", "icebreaker"], help="hardware configurations")
    parser.add_argument("--no-network", action="store_true", help="skip the whole-network runs")
    args = parser.parse_args()
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    x = net.input_quant.quantize(load_digits_split()[2][0])
    values = run_quantized(net, x)
    console = Console(width=160)
    for config_name in args.configs:
        config = load_config(config_name)
        table = Table(title=f"digits on {config_name}: RTL (Amaranth) vs predictions")
        for column in ("layer", "cycles", "program model", "error", "cost model", "error", "DRAM bytes",
                       "program model", "cost model", "sim s"):
            table.add_column(column, justify="right")
        worst = {"program": 0.0, "cost": 0.0}
        cases = [(layer.name, single_layer_network(net, layer.name)) for layer in net.layers]
        if not args.no_network:
            cases.append(("(network)", net))
        for name, case in cases:
            flow = plan_and_compile(case, config)
            start = time.perf_counter()
            run = run_rtl(flow.compiled, values[case.input_name] if case is not net else x)
            seconds = time.perf_counter() - start
            measured_bytes = run.traffic.bytes_read + run.traffic.bytes_written
            errors = {"program": flow.prediction.cycles / run.cycles - 1, "cost": flow.plan.cycles / run.cycles - 1}
            for model, error in errors.items():
                worst[model] = max(worst[model], abs(error))
            table.add_row(name, f"{run.cycles:,}", f"{flow.prediction.cycles:,}", f"{errors['program']:+.1%}",
                          f"{flow.plan.cycles:,}", f"{errors['cost']:+.1%}", f"{measured_bytes:,}",
                          "=" if flow.prediction.dram_bytes == measured_bytes else f"{flow.prediction.dram_bytes:,}",
                          "=" if flow.plan.dram_bytes == measured_bytes else f"{flow.plan.dram_bytes:,}",
                          f"{seconds:.0f}")
        console.print(table)
        console.print(f"{config_name}: worst cycle error: program model {worst['program']:.1%}, "
                      f"cost model {worst['cost']:.1%}")


if __name__ == "__main__":
    main()
