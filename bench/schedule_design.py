"""The design question of issue #24 (prints figures, writes a plot): for ResNet-18, MobileNetV2
and the digits CNN on each board's configuration, one big PE array against k pipelined
instances sharing the same DSP and block-RAM budget (the big array's, by the sweep's resource
estimate `explore.sweep.resources.estimate`). Each instance is the largest PE array (then the
largest buffers) of which k fit the budget. Schedules are the ILP's (contiguous stages) judged
by the simulator; the host runs nothing (CPU cap 0) but sends the image and receives the
result over the serial link. Periods are given with the link and without it (the image already
in main memory). Clocks are each configuration's (no place-and-route is run here).

With `--budget device` the budget is the device's DSPs, block RAMs and SPRAMs instead (the
rest of the SoC left out), and k = 1 is still the shipped array: how many instances the device
holds, and whether they beat the one array.

Then the schedulers on small cases: exhaustive search, the ILP and the GA (contiguous and
free) on random problems and on the digits CNN with the host and two instances.

    python bench/schedule_design.py                 # the whole table, plot in rtl_out/schedule_design/
    python bench/schedule_design.py --small         # the digits CNN only, and the solver comparison
    python bench/schedule_design.py --budget device # k instances within the device's DSPs and BRAMs
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


from boards.devices import device  # noqa: E402
from common.errors import HwgenError  # noqa: E402
from explore.sweep.driver import resolve_device  # noqa: E402
from explore.sweep.resources import estimate  # noqa: E402
from hwgen.config import config_from_dict, config_path, read_yaml  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.zoo import resolve_model  # noqa: E402
from schedule_helpers import random_problem  # noqa: E402
from scheduler import exhaustive, ga, ilp  # noqa: E402
from scheduler.costs import build_problem  # noqa: E402
from scheduler.instances import images_for  # noqa: E402
from scheduler.simulator import evaluate, judged_period  # noqa: E402
from scheduler.units import accelerator_unit, host_unit  # noqa: E402

BOARDS = ("icebreaker", "ulx3s-85f", "orangecrab")
NETWORKS = ("digits", "mobilenetv2", "resnet18")
INSTANCES = (1, 2, 3, 4)


def candidates(base: dict):
    """Configurations with a PE array and buffers no larger than `base`'s, largest first."""
    pe, buffers = base["pe"], base["buffers"]
    sides = [[v for v in (1, 2, 4, 8, 16, 32) if v <= pe[k]] for k in ("rows", "cols", "simd")]
    found = []
    for (rows, cols, simd), shrink in itertools.product(itertools.product(*sides), (1, 2, 4)):
        data = {**base, "name": f"{base['name']}-{rows}x{cols}x{simd}/{shrink}", "pe": {"rows": rows, "cols": cols,
                                                                                        "simd": simd},
                "buffers": {k: (v // shrink if k.endswith("_bytes") else v) for k, v in buffers.items()}}
        found.append((rows * cols * simd, -shrink, data))
    for _, _, data in sorted(found, key=lambda f: (f[0], f[1]), reverse=True):
        try:
            yield config_from_dict(data)
        except HwgenError:
            continue


def instance_config(board: str, k: int, whole_device: bool):
    """The big array for k = 1, else the largest configuration of which k fit its DSPs and BRAMs
    (or the device's, `whole_device`)."""
    base = read_yaml(config_path(board))
    part = device(resolve_device(None, base["device"]))
    family = part.family
    big = config_from_dict(dict(base))
    own = estimate(big, family)
    if k == 1:
        return big, own
    budget = part.totals if whole_device else own
    for config in candidates(base):
        r = estimate(config, family)
        if k * r.dsp <= budget.dsp and k * r.bram <= budget.bram and k * r.spram <= budget.spram:
            return config, r
    return None, None


def design_rows(networks: tuple[str, ...], whole_device: bool) -> list[dict]:
    rows = []
    for board in BOARDS:
        for k in INSTANCES:
            config, resources = instance_config(board, k, whole_device)
            for name in networks:
                row = {"board": board, "network": name, "k": k}
                if config is None:
                    rows.append({**row, "note": "no array: k instances exceed the DSP/BRAM/SPRAM budget"})
                    print(_design_line(rows[-1]), flush=True)
                    continue
                p = config.pe
                row.update(array=f"{k} x {p.rows}x{p.cols}x{p.simd}", dsp=k * resources.dsp, bram=k * resources.bram,
                           lut=k * resources.lut, clock=config.clock_mhz)
                net = load_network(resolve_model(name))
                units = [host_unit(1)] + [accelerator_unit(config, f"acc{i}") for i in range(k)]
                try:
                    for label, link in (("link", True), ("alone", False)):
                        variant = build_problem(net, units, cpu_cap=0.0, link=link)
                        solved = ilp.solve(variant)
                        verdict = evaluate(variant, solved.mapping, images_for(variant.m))
                        row[f"ilp_{label}"] = solved.period
                        row[f"period_{label}"] = verdict.period
                        row[f"latency_{label}"] = verdict.latency
                        row[f"stages_{label}"] = len(set(solved.mapping))
                except HwgenError as error:
                    row["note"] = str(error).split(";")[0][:70]
                rows.append(row)
                print(_design_line(row), flush=True)
    return rows


def _design_line(row: dict) -> str:
    head = f"{row['board']:<11} {row['network']:<12} k={row['k']}"
    if "array" in row:
        head += f" {row['array']:<13} DSP {row['dsp']:>3} BRAM {row['bram']:>3} LUT {row['lut']:>6} @{row['clock']:g}"
    if "period_alone" not in row:
        return f"{head}  {row.get('note', '')}"
    return (f"{head}  alone: period {row['period_alone'] * 1e3:9.3f} ms (ILP {row['ilp_alone'] * 1e3:9.3f}) latency "
            f"{row['latency_alone'] * 1e3:9.3f} ms, {row['stages_alone']} stages | with link: period "
            f"{row['period_link'] * 1e3:9.3f} ms latency {row['latency_link'] * 1e3:9.3f} ms")


def plot(rows: list[dict], path: Path) -> None:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 3.6), layout="constrained")
    axes = figure.subplots(1, len(BOARDS))
    for ax, board in zip(axes, BOARDS):
        for name in sorted({r["network"] for r in rows}):
            points = [(r["k"], r["period_alone"] * 1e3) for r in rows
                      if r["board"] == board and r["network"] == name and "period_alone" in r]
            if points:
                ax.plot(*zip(*points), marker="o", label=name)
        ax.set_title(board)
        ax.set_xlabel("instances sharing the budget")
        ax.set_yscale("log")
        ax.set_xticks(INSTANCES)
    axes[0].set_ylabel("period, ms (image in main memory)")
    axes[-1].legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    figure.savefig(path.with_suffix(".svg"))


def solver_rows() -> None:
    print("\nsolvers on small cases: period (solve seconds); GA seed 0; 'any' = best over all mappings, simulated")
    print(f"{'case':<22} {'exhaustive':>18} {'ILP':>18} {'GA contiguous':>18} {'GA any':>18} {'exhaustive any':>18}")
    cases = [(f"random n={n} m={m} #{seed}", random_problem(seed, n, m)) for n, m, seed in
             ((6, 2, 1), (6, 3, 2), (8, 3, 3), (8, 3, 4))]
    net = load_network(resolve_model("digits"))
    from hwgen.config import load_config

    units = [host_unit(1)] + [accelerator_unit(load_config("default"), f"acc{i}") for i in range(2)]
    cases.append(("digits host+2 (cap 10%)", build_problem(net, units, cpu_cap=0.1)))
    for label, problem in cases:
        k = images_for(problem.m)
        t = time.perf_counter()
        _, brute = exhaustive.best_contiguous(problem)
        brute_s = time.perf_counter() - t
        solved = ilp.solve(problem)
        contiguous_ga = ga.solve(problem, k, seed=0, only_contiguous=True)
        free_ga = ga.solve(problem, k, seed=0)
        t = time.perf_counter()
        any_best = (min(judged_period(problem, m, k) for m in exhaustive.mappings(problem, False))
                    if problem.m ** problem.n <= 1000 else math.nan)
        any_s = time.perf_counter() - t
        scale = 1e3 if problem.units[0] == "host" and label.startswith("digits") else 1.0
        cells = [(brute, brute_s), (solved.period, solved.seconds), (contiguous_ga.period, contiguous_ga.seconds),
                 (free_ga.period, free_ga.seconds), (any_best, any_s)]
        print(f"{label:<22} " + " ".join(f"{v * scale:>9.4g} ({s:6.2f})" for v, s in cells))
    print("(random cases in their own time unit; the digits case in ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the digits CNN only")
    parser.add_argument("--budget", choices=("array", "device"), default="array",
                        help="the big array's estimated resources (default) or the device's")
    parser.add_argument("-o", "--output", default="rtl_out/schedule_design", help="folder of the plot")
    args = parser.parse_args()
    rows = design_rows(("digits",) if args.small else NETWORKS, args.budget == "device")
    plot(rows, Path(args.output) / f"design-{args.budget}.png")
    print(f"plot: {Path(args.output) / f'design-{args.budget}.png'} (and .svg)")
    solver_rows()


if __name__ == "__main__":
    main()
