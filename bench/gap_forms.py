"""Global average pools: the form each configuration compiles them in (`planner.split`), its
constant bytes and cycles, planned and compiled, and with `--before DIR` the same from another
checkout (the figures before a change).

Per case `CxHxW` on each configuration: the layers the pool becomes (`avgpool`: the vector
unit's SUM over the whole map; `conv g=C`: a depthwise convolution with weights 1; `fc`: a
fully connected layer over the flattened map, C x H*W*Cp weights), the compiled constant bytes
(weights and parameters), the plan's cycles and DRAM bytes against the program model's, or the
planning-time refusal (`plan_checked`, as `hwgen plan`). `--before DIR` runs this script on
DIR's code (`--tree DIR --json`, a subprocess) and prints its form, constant bytes and program
cycles beside.

Usage: python bench/gap_forms.py [--hw CFG ...] [--cases CxHxW ...] [--before DIR]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def _tree(argv: list[str]) -> Path:
    """The checkout whose code runs: `--tree DIR`, else this script's."""
    return Path(argv[argv.index("--tree") + 1]).resolve() if "--tree" in argv else Path(__file__).resolve().parents[1]


sys.path[:0] = [str(_tree(sys.argv)), str(_tree(sys.argv) / "tests")]

CASES = ("16x7x7", "1024x7x7", "1280x7x7", "64x16x16", "1024x16x16", "1280x16x16", "16x64x64", "64x64x64")


def measure(config_name: str, case: str) -> dict:
    """Form, constant bytes, plan and program cycles and DRAM bytes of one pool (or the refusal)."""
    import numpy as np

    from common.errors import PlanningError
    from field_cases import Case
    from hwgen.config import load_config
    from hwgen.program_walk import ProgramDoesNotFit
    from planner.frontend import load_network
    from planner.pipeline import plan_and_compile, plan_checked
    from planner.split import split_network
    from sim.golden.calibration import quantize_network

    config = load_config(config_name)
    channels, size, _ = (int(v) for v in case.split("x"))
    net = load_network(Case("global_avg", channels, channels, size, size, 1, 0, 0).model())
    qnet = quantize_network(net, np.random.default_rng(0).uniform(-1, 1, (2, *net.input_shape)))
    form = " + ".join(layer.op.value + (f" g={layer.groups}" if layer.groups > 1 else "")
                      for layer in split_network(qnet, config).layers)
    start = time.perf_counter()
    try:
        plan_checked(qnet, config)  # as `hwgen plan`: what it accepts compiles
    except (PlanningError, ProgramDoesNotFit) as error:
        return {"form": form, "refused": str(error)}
    flow = plan_and_compile(qnet, config)
    return {"form": form, "constant_bytes": flow.compiled.memory.constant_bytes, "plan_cycles": flow.plan.cycles,
            "program_cycles": flow.prediction.cycles, "plan_dram": flow.plan.dram_bytes,
            "program_dram": flow.prediction.dram_bytes, "seconds": time.perf_counter() - start}


def before(tree: str, configs: list[str], cases: list[str]) -> dict:
    """Per (config, case) the measurement on `tree`'s code."""
    out = subprocess.run([sys.executable, __file__, "--tree", tree, "--json", "--hw", *configs, "--cases", *cases],
                         check=True, capture_output=True, text=True).stdout
    return {(row["config"], row["case"]): row for row in json.loads(out)}


def row_text(config: str, case: str, now: dict, was: dict | None) -> str:
    if "refused" in now:
        return f"{config:<11} {case:<11} {now['form']:<10} refused: {now['refused']}"
    ratio = now["plan_cycles"] / now["program_cycles"]
    dram = "=" if now["plan_dram"] == now["program_dram"] else "!="
    text = (f"{config:<11} {case:<11} {now['form']:<10} {now['constant_bytes']:>13,} {now['plan_cycles']:>13,} "
            f"{now['program_cycles']:>13,} {ratio:>6.3f} {dram:>4} {now['seconds']:>6.1f}")
    if was is not None:
        text += (f"   | {was['form']:<10} refused" if "refused" in was else
                 f"   | {was['form']:<10} {was['constant_bytes']:>13,} {was['program_cycles']:>13,}")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hw", nargs="+", default=["default", "icebreaker"], help="configurations")
    parser.add_argument("--cases", nargs="+", default=list(CASES), help="pools as CxHxW (square maps)")
    parser.add_argument("--before", metavar="DIR", help="another checkout whose figures to print beside")
    parser.add_argument("--tree", metavar="DIR", help="run DIR's code (default: this checkout's)")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args()
    if args.json:
        print(json.dumps([{"config": name, "case": case, **measure(name, case)} for name in args.hw for case in args.cases]))
        return
    was = before(args.before, args.hw, args.cases) if args.before else {}
    print(f"{'config':<11} {'case':<11} {'form':<10} {'constant B':>13} {'plan cycles':>13} {'program':>13} "
          f"{'ratio':>6} {'DRAM':>4} {'s':>6}" + (f"   | before: {'form':<10} {'constant B':>13} {'program':>13}"
                                                  if args.before else ""))
    for name in args.hw:
        for case in args.cases:
            print(row_text(name, case, measure(name, case), was.get((name, case))), flush=True)


if __name__ == "__main__":
    main()
