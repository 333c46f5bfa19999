"""Command-line start-up and planning times, this tree against a baseline commit, in one run.

    python bench/bench_cli.py                      # baseline: the commit before the lazy command line
    python bench/bench_cli.py --baseline REV --repeat 5

The baseline is exported with `git archive` into a temporary folder; both trees' modules are
compiled to bytecode first (`compiled`: as an installed package has them; this machine sets
PYTHONDONTWRITEBYTECODE, so without it every run would compile the project's sources again).
Every command runs in a fresh interpreter with PYTHONPATH set to its tree. CPU is user + system
of the child, the best of `--repeat` runs (the least disturbed by other work on the machine);
wall likewise.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "91bb51a"
"""main before issue #22's command-line work."""

COMMANDS = (("hwgen --help", ["-m", "cli", "--help"]), ("hwgen --version", ["-m", "cli", "--version"]),
            ("hwgen inspect digits", ["-m", "cli", "inspect", "digits"]),
            ("hwgen plan resnet18", ["-m", "cli", "plan", "resnet18"]))
PLAN_RESNET50 = """
import time
from hwgen.config import load_config
from planner.frontend import load_network
from planner.plan import plan_network
from planner.zoo.reference import build_reference
net, config = load_network(build_reference("resnet50")), load_config("default")
start = time.process_time()
plan_network(net, config)
print(time.process_time() - start)
"""


def timed(tree: Path, argv: list[str]) -> tuple[float, float, str]:
    """(CPU s, wall s, stdout) of `python argv` in `tree`; CPU is nan if it failed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, *argv], cwd=tree, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (cpu if result.returncode == 0 else float("nan")), wall, result.stdout


def best(tree: Path, argv: list[str], repeat: int) -> tuple[float, float, str]:
    runs = [timed(tree, argv) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs), runs[-1][2]


def export(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True).stdout
    with tempfile.NamedTemporaryFile(suffix=".tar") as file:
        file.write(archive)
        file.flush()
        with tarfile.open(file.name) as tar:
            tar.extractall(into, filter="data")
    return into


def compiled(tree: Path) -> Path:
    """`tree` with its modules' bytecode written beside them (`__pycache__`, ignored by git)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-x", r"[/\\](tests|rtl_out)[/\\]", str(tree)],
                   env=env, check=True, capture_output=True)
    return tree


def figure(cpu: float, wall: float) -> str:
    return "  failed / absent" if cpu != cpu else f"{cpu:6.2f} s CPU {wall:6.2f} s wall"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"git revision to compare with (default {BASELINE})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure, the best is kept (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {f"baseline {args.baseline}": compiled(export(args.baseline, Path(tmp))), "this tree": compiled(ROOT)}
        print(f"{'':24s}" + "".join(f"{label:>32s}" for label in trees))
        for label, argv in COMMANDS:
            row = [figure(*best(tree, argv, args.repeat)[:2]) for tree in trees.values()]
            print(f"{label:24s}" + "".join(f"{cell:>32s}" for cell in row))
        row = []
        for tree in trees.values():
            cpu, _, out = best(tree, ["-c", PLAN_RESNET50], args.repeat)
            row.append("  failed" if cpu != cpu else f"{float(out.strip().splitlines()[-1]):6.3f} s CPU")
        print(f"{'ResNet-50 plan_network':24s}" + "".join(f"{cell:>32s}" for cell in row))


if __name__ == "__main__":
    main()
