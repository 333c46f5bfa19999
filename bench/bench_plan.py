"""Planner benchmark (prints figures).

    python bench/bench_plan.py                 # ResNet-50 timing + gain over e-PlaNNer per network
    python bench/bench_plan.py --brute CFG...  # also search == brute force on every reference layer
"""
from __future__ import annotations

import argparse
import multiprocessing
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


def _compare(task: tuple[str, str, ConvShape, int]) -> tuple[str, str, bool, float, float, int]:
    """Search and brute force on one unique layer (run in a worker process)."""
    config_name, layer_name, shape, macs = task
    config = load_config(config_name)
    a, b = search(shape, config, macs), brute_force(shape, config, macs)
    return config_name, layer_name, (a.schedule, a.cost) == (b.schedule, b.cost), a.seconds, b.seconds, b.candidates


def brute_agreement(config_names: list[str], networks, jobs: int) -> None:
    """search == brute force (same schedule, same cost) on every unique compute layer."""
    tasks = []
    for config_name in config_names:
        seen = set()
        for name, net in networks.items():
            for layer in net.layers:
                if layer.op in COMPUTE_OPS and ConvShape.of(layer) not in seen:
                    seen.add(ConvShape.of(layer))
                    tasks.append((config_name, f"{name}/{layer.name}", ConvShape.of(layer), layer.macs))
    results = {name: [0, 0, 0.0, 0.0] for name in config_names}
    with multiprocessing.Pool(jobs) as pool:
        for config_name, layer_name, agree, t_search, t_brute, count in pool.imap_unordered(_compare, tasks):
            tally = results[config_name]
            tally[0] += agree
            tally[1] += 1
            tally[2] += t_search
            tally[3] += t_brute
            status = "agree" if agree else "MISMATCH"
            print(f"  {config_name:10s} {layer_name:34s} {status:8s} search {t_search * 1e3:7.1f} ms  "
                  f"brute force {t_brute:6.1f} s over {count:,} schedules", flush=True)
    for config_name, (agree, total, t_search, t_brute) in results.items():
        print(f"brute force on {config_name}: {agree}/{total} unique layers agree "
              f"(search {t_search:.2f} s in all, brute force {t_brute:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brute", nargs="*", default=[], metavar="CFG", help="configs for the brute-force check")
    parser.add_argument("--hw", default="default", help="config for timing and e-PlaNNer gains (default: default)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for the brute-force check")
    args = parser.parse_args()
    resnet50_timing(args.hw)
    networks = {name: load_network(build_reference(name)) for name in REFERENCE_MODELS}
    eplanner_gain(args.hw, networks)
    if args.brute:
        brute_agreement(args.brute, networks, args.jobs)


if __name__ == "__main__":
    main()
