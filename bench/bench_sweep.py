"""Analytic sweep benchmark (prints figures): 1000 distinct configurations planned for ResNet-18
(with the resource estimate for the base config's ECP5-85F), points/s with 1 and 2 local jobs,
the speed-up, and the reuse of layer plans across points. The machine's load average is
printed too: the figures are wall-clock time on a shared machine.

    python bench/bench_sweep.py                   # 1000 points, 1 and 2 jobs
    python bench/bench_sweep.py --small           # a 100-point space
    python bench/bench_sweep.py --profile 40      # where the time of 40 points goes (cProfile, one process)
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.objective import Objective  # noqa: E402
from explore.sweep import evaluate as point_evaluation  # noqa: E402
from explore.sweep.driver import run_sweep  # noqa: E402
from explore.sweep.evaluate import ModelSpec, Task, evaluate_point, network  # noqa: E402
from explore.sweep.space import Space, parse_space, read_base  # noqa: E402

K = 1024
SPACE = {  # 5 x 5 x 2 x 5 x 2 x 2 = 1000 distinct, generatable configurations
    "pe": {"rows": [4, 8, 16, 32, 64], "cols": [1, 2, 4, 8, 16], "simd": [2, 4]},
    "buffers": {"input_bytes": [64 * K, 128 * K, 256 * K, 512 * K, 1024 * K], "weight_bytes": [128 * K, 256 * K],
                "output_bytes": [128 * K, 256 * K]},
}
SMALL = {"pe": SPACE["pe"], "buffers": {"input_bytes": [64 * K, 256 * K]}}  # 100 points


def space(small: bool) -> Space:
    return parse_space(SMALL if small else SPACE, read_base("default"), "bench space")


def timed_sweep(model: ModelSpec, points: Space, jobs: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as out:
        start = time.perf_counter()
        result = run_sweep(model, points, Path(out), jobs=jobs)
        seconds = time.perf_counter() - start
    return seconds, sum(row["status"] == "ok" for row in result.rows)


def profile(model: ModelSpec, points: Space, count: int) -> None:
    """cProfile of `count` points evaluated in this process: time per source file and the top functions."""
    network(model)
    tasks = [Task(f"p{p.index}", p.index, p.label, p.values, p.config, model, str(Objective.LATENCY), "ecp5-85f")
             for p in list(points.points())[:count]]
    profiler = cProfile.Profile()
    start = time.process_time()
    profiler.enable()
    for task in tasks:
        evaluate_point(task)
    profiler.disable()
    cpu = time.process_time() - start
    stats = pstats.Stats(profiler)
    per_file: dict[str, float] = defaultdict(float)
    for (file, _, _), (_, _, own, _, _) in stats.stats.items():
        per_file[file.split("/work/main/")[-1] if "/work/main/" in file else "numpy and other libraries"] += own
    total = sum(per_file.values())
    print(f"profile of {count} points: {cpu / count * 1e3:.0f} ms CPU per point (profiled), "
          f"{point_evaluation.LAYER_MEMO.hits} layer plans reused")
    for file, own in sorted(per_file.items(), key=lambda item: -item[1])[:8]:
        print(f"  {100 * own / total:5.1f} %  {file}")
    stats.sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="resnet18", help="model to plan (default: resnet18)")
    parser.add_argument("--small", action="store_true", help="a 100-point space instead of 1000 points")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="job counts to time (default: 1 2)")
    parser.add_argument("--profile", type=int, metavar="N", help="profile N points in one process instead")
    args = parser.parse_args()
    model, points = ModelSpec(args.model), space(args.small)
    if args.profile:
        profile(model, points, args.profile)
        return
    print(f"{points.size} points of {args.model}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rates = {}
    for jobs in args.jobs:
        seconds, ok = timed_sweep(model, points, jobs)
        rates[jobs] = points.size / seconds
        print(f"  {jobs} job{'s' if jobs > 1 else ''}: {seconds:7.1f} s  {rates[jobs]:6.2f} points/s  "
              f"({ok} within the device)", flush=True)
    if 1 in rates and len(rates) > 1:
        for jobs, rate in rates.items():
            if jobs != 1:
                print(f"  speed-up with {jobs} jobs: {rate / rates[1]:.2f}x")
    print(f"  load average afterwards {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
