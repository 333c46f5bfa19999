"""The DMA descriptor table checked at planning time (docs/envelope.md): per network, the
table's size counted on the plan (`planner.compile.descriptor_table`), the time the count takes
beside the time of planning, and whether `plan_checked` accepts the plan.

`chain140` is a chain of 140 convolutions on a 5x23x23 input (kernels cycling 1, 3, 5, 7, 2, 4,
channels 5 + 37 i mod 123): its program needs 1113 descriptors, past the 1024 of LOAD / STORE
`desc`; before the check `hwgen plan` printed its plan and `hwgen simulate` stopped at compile
("layer 'conv384' (conv): STORE.desc: 1024 is out of range [0, 1023]").

Usage: python bench/descriptor_table.py [--hw CFG] [MODEL ...]   (default: chain140 and four reference networks)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests")]

from common.errors import PlanningError  # noqa: E402
from hwgen.config import load_config  # noqa: E402
from onnx_factory import GraphBuilder  # noqa: E402
from planner.compile.descriptor_table import descriptor_counts  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.pipeline import plan_checked, stand_ins  # noqa: E402
from planner.plan import plan_network  # noqa: E402
from planner.split import split_network  # noqa: E402
from planner.zoo import resolve_model  # noqa: E402


def chain(layers: int = 140, size: int = 23):
    """The chain of convolutions the module docstring describes."""
    g = GraphBuilder((1, 5, size, size), seed=0)
    x, channels = g.input_name, 5
    for i in range(layers):
        k = (1, 3, 5, 7, 2, 4)[i % 6]
        out = 5 + (i * 37) % 123
        x = g.conv(x, channels, out, k=k, pad=[k // 2, k // 2, (k - 1) // 2, (k - 1) // 2])
        channels = out
    return g.model(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hw", default="default", help="configuration (default: default)")
    parser.add_argument("models", nargs="*", default=["chain140", "resnet18", "mobilenetv2", "resnet50", "densenet121"])
    args = parser.parse_args()
    config = load_config(args.hw)
    print(f"{'model':<14} {'layers':>6} {'descriptors':>11} {'count s':>8} {'plan s':>8}  plan_checked")
    for name in args.models:
        net = load_network(chain() if name == "chain140" else resolve_model(name))
        start = time.perf_counter()
        plan = plan_network(net, config)
        planned = time.perf_counter() - start
        schedules = {layer.name: layer.schedule for layer in plan.layers if layer.schedule is not None}
        start = time.perf_counter()
        counts = descriptor_counts(split_network(stand_ins(net), config), schedules, config)
        counted = time.perf_counter() - start
        try:
            plan_checked(net, config)
            verdict = "accepted"
        except PlanningError as error:
            verdict = f"refused: {error}"
        print(f"{name:<14} {len(net.layers):>6} {list(counts.values())[-1]:>11} {counted:>8.2f} {planned:>8.1f}  {verdict}")


if __name__ == "__main__":
    main()
