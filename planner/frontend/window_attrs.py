"""Kernel, stride and padding attributes of Conv and pooling nodes."""
from __future__ import annotations

from dataclasses import dataclass

import onnx

from common.errors import UnsupportedModelError
from planner.ir import ceil_div, conv_output_size


def node_label(node: onnx.NodeProto) -> str:
    return f"{node.op_type} node {node.name!r}"


def attributes(node: onnx.NodeProto) -> dict[str, object]:
    return {attr.name: onnx.helper.get_attribute_value(attr) for attr in node.attribute}


@dataclass(frozen=True)
class Window:
    kernel: tuple[int, int]
    stride: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        top, left, bottom, right = self.pads
        return (
            conv_output_size(height, self.kernel[0], self.stride[0], top, bottom),
            conv_output_size(width, self.kernel[1], self.stride[1], left, right),
        )


def _pair(node: onnx.NodeProto, attrs: dict, name: str, default: int) -> tuple[int, int]:
    value = attrs.get(name, [default, default])
    if len(value) != 2:
        raise UnsupportedModelError(f"{node_label(node)}: attribute {name}={list(value)} must have 2 entries (only 2-D windows are supported)")
    return int(value[0]), int(value[1])


def _same_pads(size: int, kernel: int, stride: int, upper: bool) -> tuple[int, int]:
    total = max((ceil_div(size, stride) - 1) * stride + kernel - size, 0)
    small, large = total // 2, total - total // 2
    return (small, large) if upper else (large, small)


def parse_window(node: onnx.NodeProto, kernel: tuple[int, int], height: int, width: int, ceil_mode_ok: bool = False) -> Window:
    """Kernel/stride/pads of a 2-D window op; rejects what the accelerator cannot do."""
    attrs = attributes(node)
    dilations = _pair(node, attrs, "dilations", 1)
    if dilations != (1, 1):
        raise UnsupportedModelError(f"{node_label(node)}: dilations={list(dilations)} is not supported (only 1)")
    stride = _pair(node, attrs, "strides", 1)
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        upper = auto_pad == "SAME_UPPER"
        top, bottom = _same_pads(height, kernel[0], stride[0], upper)
        left, right = _same_pads(width, kernel[1], stride[1], upper)
        pads = (top, left, bottom, right)
    elif auto_pad == "VALID":
        pads = (0, 0, 0, 0)
    elif auto_pad == "NOTSET":
        raw = attrs.get("pads", [0, 0, 0, 0])
        if len(raw) != 4:
            raise UnsupportedModelError(f"{node_label(node)}: pads={list(raw)} must have 4 entries")
        pads = (int(raw[0]), int(raw[1]), int(raw[2]), int(raw[3]))
    else:
        raise UnsupportedModelError(f"{node_label(node)}: auto_pad={auto_pad!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    if any(p < 0 for p in pads):
        raise UnsupportedModelError(f"{node_label(node)}: negative pads {list(pads)} are not supported")
    if attrs.get("ceil_mode", 0):
        if not ceil_mode_ok:
            raise UnsupportedModelError(f"{node_label(node)}: ceil_mode=1 is supported for MaxPool only")
        pads = _ceil_mode_pads(kernel, stride, pads, height, width)
    window = Window(kernel, stride, pads)
    out_h, out_w = window.output_size(height, width)
    if out_h < 1 or out_w < 1:
        raise UnsupportedModelError(f"{node_label(node)}: kernel {list(kernel)} does not fit the {height}x{width} input with pads {list(pads)}")
    return window


def _ceil_mode_pads(kernel, stride, pads, height, width) -> tuple[int, int, int, int]:
    """Extra bottom/right padding that makes floor-mode output equal ceil-mode output."""
    top, left, bottom, right = pads
    extra = []
    for size, k, s, begin, end in ((height, kernel[0], stride[0], top, bottom), (width, kernel[1], stride[1], left, right)):
        out = ceil_div(size + begin + end - k, s) + 1
        if (out - 1) * s >= size + begin:  # the last window must start inside the input
            out -= 1
        extra.append(max((out - 1) * s + k - (size + begin + end), 0))
    return top, left, bottom + extra[0], right + extra[1]
