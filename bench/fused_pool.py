"""Max pools fused into the convolution's output path (`template.max_fused_pool: 2`) against
the same configuration without them: cycles and DRAM bytes per network, and the RTL's cycles
against the prediction for the digits CNN on `icebreaker`.

    python bench/fused_pool.py [--configs icebreaker default] [--zoo vgg16] [--no-rtl]

The digits CNN is compiled and run on the ISA simulator (bit-exact check against the golden
model), its cycles and DRAM bytes from the program model; the zoo networks (float, planned on
shapes) are compared with the planner's cost model. The RTL run is the Amaranth simulation of
the whole digits CNN (a few minutes).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from common.errors import HwgenError  # noqa: E402
from hwgen.config import AcceleratorConfig, load_config  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.pipeline import plan_and_compile  # noqa: E402
from planner.plan import plan_network  # noqa: E402
from planner.zoo import resolve_model  # noqa: E402
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split  # noqa: E402
from sim.engines import ENGINES  # noqa: E402
from sim.golden import run_quantized  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402
from sim.rtl_sim import run_rtl  # noqa: E402


def with_pool(config: AcceleratorConfig, k: int) -> AcceleratorConfig:
    return replace(config, template=replace(config.template, max_fused_pool=k))


def fused(plan) -> str:
    return ", ".join(f"{layer.name} ({layer.pool}x{layer.pool})" for layer in plan.layers if layer.pool > 1) or "none"


def change(before: int, after: int) -> str:
    return f"{after / before - 1:+.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=["icebreaker", "default"], help="hardware configurations")
    parser.add_argument("--zoo", nargs="*", default=["vgg16"], help="built-in networks planned on shapes")
    parser.add_argument("--no-rtl", action="store_true", help="skip the Amaranth simulation")
    args = parser.parse_args()
    console = Console(width=170)
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    x = net.input_quant.quantize(load_digits_split()[2][0])
    golden = run_quantized(net, x)
    table = Table(title="fused max pools: unfused -> fused (max_fused_pool 1 -> 2)")
    for column in ("network", "config", "model", "fused", "cycles", "fused cycles", "change", "DRAM bytes",
                   "fused bytes", "change", "VEC", "bit-exact"):
        table.add_column(column, justify="right")
    flows = {}
    for name in args.configs:
        base = load_config(name)
        plain, pooled = plan_and_compile(net, with_pool(base, 1)), plan_and_compile(net, with_pool(base, 2))
        flows[name] = pooled
        exact = all(np.array_equal(ENGINES["isa"].run(net, flow.compiled, x).outputs[out], golden[out])
                    for flow in (plain, pooled) for out in net.outputs)
        vecs = [sum(entry[1] == "VEC" for entry in flow.prediction.timeline) for flow in (plain, pooled)]
        a, b = plain.prediction, pooled.prediction
        table.add_row("digits", name, "program", fused(pooled.plan), f"{a.cycles:,}", f"{b.cycles:,}",
                      change(a.cycles, b.cycles), f"{a.dram_bytes:,}", f"{b.dram_bytes:,}",
                      change(a.dram_bytes, b.dram_bytes), f"{vecs[0]} -> {vecs[1]}", str(exact))
    for model in args.zoo:
        network = load_network(resolve_model(model))
        for name in args.configs:
            base = load_config(name)
            try:
                a, b = plan_network(network, with_pool(base, 1)), plan_network(network, with_pool(base, 2))
            except HwgenError as error:  # a network the configuration cannot plan: say so, go on
                console.print(f"{model} on {name}: not planned ({error})")
                continue
            table.add_row(model, name, "cost", fused(b), f"{a.cycles:,}", f"{b.cycles:,}", change(a.cycles, b.cycles),
                          f"{a.dram_bytes:,}", f"{b.dram_bytes:,}", change(a.dram_bytes, b.dram_bytes), "", "")
    console.print(table)
    if args.no_rtl:
        return
    layer_table = Table(title="conv3 + its 2x2 max pool alone, fused: RTL (Amaranth) vs the models")
    for column in ("config", "RTL cycles", "program model", "error", "cost model", "error", "DRAM bytes", "models"):
        layer_table.add_column(column, justify="right")
    conv3, pool = net.layer("conv3"), net.layer("pool")
    pair = replace(net, name="digits:conv3+pool", input_name=conv3.inputs[0], input_shape=conv3.in_shape,
                   layers=(conv3, pool), outputs=(pool.output,), input_quant=net.output_quant(conv3.inputs[0]),
                   host_tails=())
    for name in args.configs:
        flow = plan_and_compile(pair, with_pool(load_config(name), 2))
        run = run_rtl(flow.compiled, golden[pair.input_name])
        assert np.array_equal(run.outputs[pool.output], golden[pool.output])
        measured = run.traffic.bytes_read + run.traffic.bytes_written
        layer_table.add_row(name, f"{run.cycles:,}", f"{flow.prediction.cycles:,}",
                            f"{flow.prediction.cycles / run.cycles - 1:+.2%}", f"{flow.plan.cycles:,}",
                            f"{flow.plan.cycles / run.cycles - 1:+.2%}", f"{measured:,}",
                            "=" if flow.prediction.dram_bytes == flow.plan.dram_bytes == measured else
                            f"{flow.prediction.dram_bytes:,} / {flow.plan.dram_bytes:,}")
    console.print(layer_table)
    if "icebreaker" not in flows:
        return
    flow = flows["icebreaker"]
    start = time.perf_counter()
    run = run_rtl(flow.compiled, x)
    seconds = time.perf_counter() - start
    exact = all(np.array_equal(run.outputs[out], golden[out]) for out in net.outputs)
    measured = run.traffic.bytes_read + run.traffic.bytes_written
    console.print(f"digits on icebreaker + max_fused_pool 2, RTL (Amaranth, {seconds:.0f} s): {run.cycles:,} cycles, "
                  f"program model {flow.prediction.cycles:,} ({flow.prediction.cycles / run.cycles - 1:+.2%}), "
                  f"cost model {flow.plan.cycles:,} ({flow.plan.cycles / run.cycles - 1:+.2%}); DRAM bytes "
                  f"{measured:,} (program model {flow.prediction.dram_bytes:,}); bit-exact: {exact}")


if __name__ == "__main__":
    main()
