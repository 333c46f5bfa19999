"""Golden-model speed: int8 inference time per network, against the float run of the same net.

The ratio int8/float shows the cost of exact integer semantics over plain float64 BLAS.
Usage: python bench/bench_golden.py [--networks digits resnet18 mobilenetv2] [--repeat 3]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.zoo import builtin_calibration, resolve_model
from sim.golden import run_float, run_quantized


def best_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--networks", nargs="+", default=["digits", "resnet18", "mobilenetv2"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'network':<14}{'GMACs':>8}{'float s':>10}{'int8 s':>10}{'int8/float':>12}{'GMAC/s int8':>13}")
    for name in args.networks:
        net = load_network(resolve_model(name))
        calibration = builtin_calibration(name, net.input_shape)[:2]
        qnet = quantize_network(net, calibration)
        x = calibration[0]
        xq = qnet.input_quant.quantize(x)
        t_float = best_time(lambda: run_float(net, x), args.repeat)
        t_int = best_time(lambda: run_quantized(qnet, xq), args.repeat)
        gmacs = net.total_macs / 1e9
        print(f"{name:<14}{gmacs:>8.3f}{t_float:>10.3f}{t_int:>10.3f}{t_int / t_float:>12.2f}{gmacs / t_int:>13.2f}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
