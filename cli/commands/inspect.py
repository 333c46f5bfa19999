"""`hwgen inspect`: the layer table of a model (shapes, MACs, parameters) and totals."""
from __future__ import annotations

import argparse
import json

from common.console import make_console
from rich import box
from rich.table import Table

from cli.commands.common import add_model_argument, load_model
from planner.ir import Layer, Network


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect", description="Load an ONNX model into the Network IR (BatchNorm folded, activations fused, "
        "quantization read) and print its layer table and totals.",
    )
    add_model_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)


def layer_record(layer: Layer) -> dict:
    """The JSON record of one layer."""
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
    }


def network_record(net: Network) -> dict:
    return {
        "name": net.name,
        "input_shape": list(net.input_shape),
        "quantized": net.quantized,
        "layers": [layer_record(layer) for layer in net.layers],
        "total_macs": net.total_macs,
        "total_params": net.total_params,
    }


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def render_table(net: Network) -> Table:
    """The layer table, 80 columns wide at most (the activation follows the op)."""
    table = Table(title=f"{net.name}: input {_shape(net.input_shape)}, {'int8' if net.quantized else 'float'}",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("layer", min_width=9, overflow="fold")
    table.add_column("op")
    for column in ("input", "output"):
        table.add_column(column, min_width=10, overflow="fold")
    table.add_column("k/s", no_wrap=True)
    for column in ("MACs", "params"):
        table.add_column(column, justify="right", no_wrap=True)
    for layer in net.layers:
        op = layer.op.value + (f" g{layer.groups}" if layer.groups > 1 else "")
        act = "" if layer.activation.value == "none" else f" {layer.activation.value}"
        table.add_row(
            layer.name, op + act, " + ".join(_shape(s) for s in layer.in_shapes), _shape(layer.out_shape),
            f"{_shape(layer.kernel)}/{layer.stride[0]}", f"{layer.macs:,}", f"{layer.params:,}",
        )
    table.add_section()
    table.add_row("total", "", "", "", "", f"{net.total_macs:,}", f"{net.total_params:,}")
    return table


def run(args: argparse.Namespace) -> int:
    net = load_model(args)
    if args.json:
        print(json.dumps(network_record(net), indent=2))
    else:
        make_console().print(render_table(net))
    return 0
