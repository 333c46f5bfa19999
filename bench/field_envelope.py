"""The envelope of layer shapes each configuration compiles (docs/envelope.md), and the
property check of tests/test_field_limits.py at a larger scale.

`--table`: per configuration, the largest accepted value of each layer parameter (the others
fixed as the row says), found by planning single-layer models (`plan_network`: the
planning-time checks of `planner.envelope`, then the search).
`--examples N`: N drawn layers across and beyond the envelope (channels to 4096, maps to 512,
windows to 64, strides to 10), each planned, compiled and run on the ISA simulator bit-exact to
the golden model with the plan's DRAM bytes equal to the program's (and a split network's cycles
within 0.8x-1.25x of the program model's unless --no-cycles), or refused at planning time with a
clear error; prints the outcomes and time.

`--rows TEXT ...` keeps the table's rows containing one of the texts; rows "as one vector sum"
also need the layer to stay an average pool (`planner.split`: the vector unit's sum).

Usage: python bench/field_envelope.py [--table [--rows TEXT ...]] [--examples N] [--max-work W] [--no-cycles] [--hw CFG ...]
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests")]

from hypothesis import HealthCheck, given, settings  # noqa: E402

from common.errors import PlanningError  # noqa: E402
from field_cases import CYCLE_RANGE, Case, cases, check  # noqa: E402
from hwgen.config import AcceleratorConfig, load_config  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.ir import Op  # noqa: E402
from planner.plan import plan_network  # noqa: E402
from planner.split import split_network, split_shapes  # noqa: E402

ROWS = {  # quantity: (how the case grows with the value, the values tried in order)
    "conv kernel (3->4 channels, map = kernel)": (lambda v: Case("conv", 3, 4, v, v, 1, 0, 0), range(1, 41)),
    "conv kernel, not covering the map (map = kernel + 4)": (lambda v: Case("conv", 3, 4, v + 4, v, 1, 0, 0), range(1, 41)),
    "max pool window, stride 1 (16 ch, 64x64 map)": (lambda v: Case("maxpool", 16, 16, 64, v, 1, 0, 0), range(1, 65)),
    "average pool window, stride 1 (16 ch, 64x64 map)": (lambda v: Case("avgpool", 16, 16, 64, v, 1, 0, 0), range(1, 65)),
    "global average pool map side (16 ch)": (lambda v: Case("global_avg", 16, 16, v, v, 1, 0, 0), (8, 15, 16, 32, 64, 128, 256, 512)),
    "global average pool map side (256 ch)": (lambda v: Case("global_avg", 256, 256, v, v, 1, 0, 0), (8, 15, 16, 32, 64, 128)),
    "global average pool map side as one vector sum (16 ch)": (lambda v: Case("global_avg", 16, 16, v, v, 1, 0, 0),
                                                               range(1, 129)),
    "global average pool map side as one vector sum (256 ch)": (lambda v: Case("global_avg", 256, 256, v, v, 1, 0, 0),
                                                                range(1, 129)),
    "global max pool map side (64 ch)": (lambda v: Case("global_max", 64, 64, v, v, 1, 0, 0), (8, 16, 32, 64, 128, 256, 512)),
    "fully connected input map side (16 ch -> 10)": (lambda v: Case("fc", 16, 10, v, v, 1, 0, 0), (4, 8, 16, 32, 64, 128)),
    "3x3 conv map side (4 -> 4 ch)": (lambda v: Case("conv", 4, 4, v, 3, 1, 1, 0), (64, 256, 512, 1024, 2047, 2048)),
    "3x3 max pool map side, stride 2 (64 ch)": (lambda v: Case("maxpool", 64, 64, v, 3, 2, 1, 0), (64, 256, 512, 1024, 2047, 2048)),
    "1x1 conv channels in = out (8x8 map)": (lambda v: Case("conv", v, v, 8, 1, 1, 0, 0), (64, 512, 1024, 2048, 4096)),
    "3x3 depthwise conv channels (8x8 map)": (lambda v: Case("depthwise", v, v, 8, 3, 1, 1, 0), (64, 512, 1024, 2048, 4096)),
}
STRIDES = range(1, 17)


SUM_ROW = "as one vector sum"
"""Rows whose layer must also stay an average pool (the vector unit's sum, not a split form)."""


def accepted(case: Case, config: AcceleratorConfig) -> str | None:
    """None when planning accepts the case, else the planning error."""
    try:
        plan_network(load_network(case.model()), config)
    except PlanningError as error:
        return str(error)
    return None


def split_form(case: Case, config: AcceleratorConfig) -> str | None:
    """None when the case's layer stays an average pool (`planner.split`), else what it becomes."""
    ops = [layer.op for layer in split_network(split_shapes(load_network(case.model()), config), config).layers]
    return None if ops == [Op.AVGPOOL] else f"becomes {' + '.join(op.value for op in ops)}"


def largest(row: str, config: AcceleratorConfig) -> tuple[str, str | None]:
    """The largest value of the row's parameter that plans (values tried in order; the first
    refusal ends the row), and that refusal."""
    make, values = ROWS[row]
    best = "none"
    for value in values:
        error = (SUM_ROW in row and split_form(make(value), config)) or accepted(make(value), config)
        if error:
            return best, error
        best = str(value)
    return f">= {best}", None


def table(configs: list[AcceleratorConfig], rows: list[str] | None = None) -> None:
    """The envelope table's rows (those containing one of `rows`, or all) and the strides."""
    for config in configs:
        print(f"## {config.name}")
        for row in (r for r in ROWS if rows is None or any(part in r for part in rows)):
            best, error = largest(row, config)
            print(f"| {row} | {best} |" + (f" first refusal: {error}" if error else ""))
        strides = [s for s in STRIDES if not accepted(Case("maxpool", 4, 4, 64, 1, s, 0, 0), config)]
        print(f"| strides accepted (1x1 max pool, 64x64 map) | {', '.join(map(str, strides))} |")


def examples(config: AcceleratorConfig, count: int, max_work: int, cycle_range: tuple[float, float] | None) -> None:
    outcomes: collections.Counter = collections.Counter()

    @settings(max_examples=count, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(cases(max_work=max_work))
    def run(case: Case) -> None:
        start = time.perf_counter()
        outcome = check(case, config, cycle_range=cycle_range)
        outcomes[(case.kind, outcome)] += 1
        print(f"  {case} {outcome} {time.perf_counter() - start:.1f} s", flush=True)

    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    print(f"{config.name}: {sum(outcomes.values())} examples in {seconds:.0f} s (max work {max_work})")
    for (kind, outcome), n in sorted(outcomes.items()):
        print(f"  {kind:11s} {outcome:8s} {n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", action="store_true", help="print the envelope table")
    parser.add_argument("--examples", type=int, default=0, help="drawn layers to check (default: none)")
    parser.add_argument("--max-work", type=int, default=2 * 10**6, help="ISA simulator work bound per example")
    parser.add_argument("--no-cycles", action="store_true",
                        help="do not hold split networks' plan cycles to the program model's (0.8x-1.25x)")
    parser.add_argument("--hw", nargs="+", default=["default", "icebreaker"], help="configurations")
    parser.add_argument("--rows", nargs="+", metavar="TEXT", help="with --table, only the rows containing a TEXT")
    args = parser.parse_args()
    configs = [load_config(name) for name in args.hw]
    if args.table:
        table(configs, args.rows)
    for config in configs if args.examples else ():
        examples(config, args.examples, args.max_work, None if args.no_cycles else CYCLE_RANGE)


if __name__ == "__main__":
    main()
