"""Planner benchmark (prints figures).

    python bench/bench_plan.py                 # ResNet-50 timing + gain over e-PlaNNer per network
    python bench/bench_plan.py --brute CFG...  # also search == brute force on every reference layer
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hwgen.config import load_config  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.ir import COMPUTE_OPS  # noqa: E402
from planner.plan import Strategy, plan_network  # noqa: E402
from planner.schedule import ConvShape  # noqa: E402
from planner.search import brute_force, search  # noqa: E402
from planner.zoo import REFERENCE_MODELS  # noqa: E402
from planner.zoo.reference import build_reference  # noqa: E402


def resnet50_timing(config_name: str) -> None:
    net = load_network(build_reference("resnet50"))
    config = load_config(config_name)
    start = time.perf_counter()
    plan = plan_network(net, config)
    seconds = time.perf_counter() - start
    print(f"ResNet-50 on {config_name}: planned in {seconds:.3f} s ({plan.planned} planned, {plan.reused} reused, "
          f"{sum(l.candidates for l in plan.layers):,} candidates)")
    for layer in plan.layers:
        if not layer.reused:
            print(f"  {layer.name:28s} {layer.search_seconds * 1e3:8.2f} ms {layer.candidates:8,d} candidates")


def eplanner_gain(config_name: str, networks) -> None:
    config = load_config(config_name)
    print(f"gain of search (latency) over e-PlaNNer on {config_name}:")
    for name, net in networks.items():
        ours, base = plan_network(net, config), plan_network(net, config, strategy=Strategy.EPLANNER)
        print(f"  {name:12s} cycles {base.cycles / ours.cycles:6.3f}x  traffic {base.dram_bytes / ours.dram_bytes:6.3f}x"
              f"  (ours {ours.cycles:,} cyc {ours.dram_bytes:,} B; e-PlaNNer {base.cycles:,} cyc {base.dram_bytes:,} B)")


def brute_agreement(config_name: str, networks) -> None:
    config = load_config(config_name)
    agree = total = 0
    for name, net in networks.items():
        seen = set()
        for layer in net.layers:
            if layer.op not in COMPUTE_OPS or ConvShape.of(layer) in seen:
                continue
            shape = ConvShape.of(layer)
            seen.add(shape)
            a, b = search(shape, config, layer.macs), brute_force(shape, config, layer.macs)
            total += 1
            agree += (a.schedule, a.cost) == (b.schedule, b.cost)
            if (a.schedule, a.cost) != (b.schedule, b.cost):
                print(f"  MISMATCH {name}/{layer.name}: {a.schedule} vs {b.schedule}")
        print(f"  brute force on {config_name}: {name} done, {agree}/{total} unique layers agree so far", flush=True)
    print(f"brute force on {config_name}: {agree}/{total} unique layers agree")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brute", nargs="*", default=[], metavar="CFG", help="configs for the brute-force check")
    parser.add_argument("--hw", default="ecp5-85f", help="config for timing and e-PlaNNer gains")
    args = parser.parse_args()
    resnet50_timing(args.hw)
    networks = {name: load_network(build_reference(name)) for name in REFERENCE_MODELS}
    eplanner_gain(args.hw, networks)
    for config_name in args.brute:
        brute_agreement(config_name, networks)


if __name__ == "__main__":
    main()
