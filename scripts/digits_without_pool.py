"""Write the built-in digits CNN without its max pool, for configurations without a vector unit
(`template.vector_ops: []`): conv3 takes stride 2 instead of the 2x2/2 max pool after it, so
the FC layer sees the same 32x2x2 map and every weight stays (the same 16 KB of constants; the
accuracy is not the digits CNN's).

Usage: python scripts/digits_without_pool.py OUT.onnx
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.zoo.digits import DIGITS_MODEL_PATH  # noqa: E402


def without_pool(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` (the digits CNN) with the MaxPool after conv3 removed and conv3's stride 2."""
    graph = model.graph
    pool = next(node for node in graph.node if node.op_type == "MaxPool")
    conv = next(node for node in graph.node if node.name == "conv3")
    next(attribute for attribute in conv.attribute if attribute.name == "strides").ints[:] = [2, 2]
    graph.node.remove(pool)
    for node in graph.node:
        node.input[:] = [pool.input[0] if name == pool.output[0] else name for name in node.input]
    del graph.value_info[:]
    onnx.checker.check_model(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help="ONNX file to write")
    args = parser.parse_args()
    onnx.save(without_pool(onnx.load(DIGITS_MODEL_PATH)), args.output)


if __name__ == "__main__":
    main()
