"""`hwgen inspect`: the layer table of a model (shapes, MACs, parameters) and totals."""
from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from cli.commands.common import add_calibration_argument, add_model_argument, checkable, shape_segments
from common.console import make_console
from planner.ir import Layer, Network

if TYPE_CHECKING:
    from hwgen.config import AcceleratorConfig


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect", description="Load an ONNX model into the Network IR (BatchNorm folded, activations fused, "
        "quantization read) and print its layer table and totals; with --hw, each layer marked by whether "
        "that hardware configuration can compile it (docs/envelope.md); operators after the accelerator "
        "(a trailing Softmax, LogSoftmax, ArgMax) are listed as the host's (docs/schedule.md).",
    )
    add_model_argument(parser)
    parser.add_argument("--hw", default=None, metavar="CFG",
                        help="mark the layers this hardware configuration (YAML or shipped name) cannot compile; "
                        "when it can compile each, the model is planned (seconds for large networks) and its "
                        "program checked as `hwgen plan` checks it (DMA descriptors, program memory)")
    add_calibration_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)


def layer_record(layer: Layer, problem: str | None = None, config: AcceleratorConfig | None = None) -> dict:
    """The JSON record of one layer (`problem`: why the configuration cannot compile it; `units`:
    the host, and the configuration where it compiles the layer)."""
    return {
        "name": layer.name,
        "op": layer.op.value,
        "input_shapes": [list(shape) for shape in layer.in_shapes],
        "output_shape": list(layer.out_shape),
        "kernel": list(layer.kernel),
        "stride": list(layer.stride),
        "pads": list(layer.pads),
        "groups": layer.groups,
        "activation": layer.activation.value,
        "macs": layer.macs,
        "params": layer.params,
        "problem": problem,
        "units": ["host"] + ([config.name] if config is not None and problem is None else []),
    }


def network_record(net: Network, config: AcceleratorConfig | None, problems: dict[str | None, str]) -> dict:
    """The JSON record of `net`; with `config`, each layer's `problem` on it (`problems`: layer
    name -> why not; else null) and the `program_problem` of the whole network (key None)."""
    return {
        "name": net.name,
        "config": None if config is None else config.name,
        "input_shape": list(net.input_shape),
        "quantized": net.quantized,
        "layers": [layer_record(layer, problems.get(layer.name), config) for layer in net.layers],
        "program_problem": problems.get(None),
        "host_tails": [{"output": tail.output, "source": tail.source, "ops": [str(s.op) for s in tail.steps],
                        "units": ["host"]} for tail in net.host_tails],
        "total_macs": net.total_macs,
        "total_params": net.total_params,
    }


def _problems(net: Network, config: AcceleratorConfig) -> dict[str | None, str]:
    """Per layer `config` cannot compile, why (`planner.envelope`); when it can compile each,
    what planning and the plan's program show (the network planned: the DRAM it needs, the DMA
    descriptor table, the program memory; `planner.pipeline.program_problem`) in the words
    `hwgen plan` stops with, under the layer at fault (None: the whole network)."""
    from common.errors import PlanningError
    from planner.envelope import network_problems
    from planner.pipeline import program_problem
    from planner.plan import plan_network

    problems: dict[str | None, str] = dict(network_problems(net, config))
    if problems:
        return problems
    try:
        found = program_problem(net, plan_network(net, config), config)
    except PlanningError as error:
        return {None: str(error)}
    if found is None:
        return {}
    layer, error = found
    # a split names its steps `NAME.split0`, `NAME.stride2` (names may hold dots: the longest prefix)
    names = [o.name for o in net.layers if layer is not None and (layer == o.name or layer.startswith(f"{o.name}."))]
    return {max(names, key=len, default=None): str(error)}


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def render_table(net: Network, problems: dict[str | None, str] | None = None, config: AcceleratorConfig | None = None) -> Table:
    """The layer table, 80 columns wide at most (the activation follows the op); with `config`, a
    last column marks whether it compiles each layer (`problems`: layer name -> why not)."""
    table = Table(title=f"{net.name}: input {_shape(net.input_shape)}, {'int8' if net.quantized else 'float'}",
                  caption=None if config is None else f"ok: compiles for {config.name}; host: the host runs it",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("layer", min_width=9, overflow="fold")
    table.add_column("op")
    for column in ("input", "output"):
        table.add_column(column, min_width=10, overflow="fold")
    table.add_column("k/s", no_wrap=True)
    for column in ("MACs", "params"):
        table.add_column(column, justify="right", no_wrap=True)
    marked = config is not None
    if marked:
        table.add_column("ok", no_wrap=True)
    for layer in net.layers:
        op = layer.op.value + (f" g{layer.groups}" if layer.groups > 1 else "")
        act = "" if layer.activation.value == "none" else f" {layer.activation.value}"
        table.add_row(
            layer.name, op + act, " + ".join(_shape(s) for s in layer.in_shapes), _shape(layer.out_shape),
            f"{_shape(layer.kernel)}/{layer.stride[0]}", f"{layer.macs:,}", f"{layer.params:,}",
            *(["no" if layer.name in problems else "yes"] if marked else []),
        )
    shapes = net.tensor_shapes()
    for tail in net.host_tails:
        table.add_row(tail.output, "+".join(str(step.op) for step in tail.steps), _shape(shapes[tail.source]), "", "",
                      "0", "0", *(["host"] if marked else []))
    table.add_section()
    table.add_row("total", "", "", "", "", f"{net.total_macs:,}", f"{net.total_params:,}",
                  *([f"{sum(layer.name not in problems for layer in net.layers)}/{len(net.layers)}"] if marked else []))
    return table


def run(args: argparse.Namespace) -> int:
    config = None
    if args.hw is not None:  # (the configuration's checks import the hardware library: only when asked)
        from hwgen.config import load_config

        config = load_config(args.hw)
    segments, host_parts = shape_segments(args)
    checked = segments if host_parts or config is None else [checkable(segments[0], config, args)]  # whole: calibrated
    problems = [{} if config is None else _problems(net, config) for net in checked]
    if args.json:
        records = [network_record(net, config, found) for net, found in zip(segments, problems)]
        print(json.dumps({"segments": records, "host_parts": host_parts} if host_parts else records[0], indent=2))
        return 0
    console = make_console()
    for index, (net, found) in enumerate(zip(segments, problems)):
        if host_parts:
            console.print(f"accelerator segment {index}:")
        console.print(render_table(net, found, config))
        for problem in found.values():
            console.print(f"not compilable: {problem}", markup=False, highlight=False)
        for host in (h for h in host_parts if h["after_segment"] == index):
            console.print(f"host part after segment {index}: {', '.join(host['ops'])} (units: host, onnxruntime)")
    return 0
