"""Host times measured with onnxruntime's profiler: each task alone as a float ONNX graph.

A layer becomes its ONNX operator (Conv with the layer's kernel, stride, padding and groups;
a fully connected layer is the Conv whose kernel covers its map, as in the IR; MaxPool,
AveragePool, Add, Concat) followed by its activation (Relu, Clip); a host tail becomes its
Softmax / LogSoftmax / ArgMax; a host part is its own model. The time is the median over `RUNS` runs of the kernels' total
time that onnxruntime's profiler records, after `WARMUP` runs. Measurements are cached in a
JSON file keyed by the graph's shapes, the thread count and the onnxruntime version.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
from pathlib import Path

import numpy as np

from common.files import atomic_write_text
from planner.ir import Activation, Layer, Op
from scheduler.units import Task
from sim.partitioned import value_dims

RUNS = 10
WARMUP = 3
CACHE_ENV = "HWGEN_HOST_TIMES"
"""Environment variable naming the cache file (default: ~/.cache/hwgen/host-times.json)."""

_ONNX_OPS = {Op.CONV: "Conv", Op.FC: "Conv", Op.MAXPOOL: "MaxPool", Op.AVGPOOL: "AveragePool", Op.ADD: "Add",
             Op.CONCAT: "Concat"}


def cache_path() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "hwgen" / "host-times.json")


def task_key(task: Task, threads: int) -> str:
    """What the measurement depends on: the operator, its shapes and attributes, the threads."""
    import onnxruntime

    if task.layer is not None:
        l = task.layer
        what = (l.op, l.in_shapes, l.out_shape, l.kernel, l.stride, l.pads, l.groups, l.activation)
    elif task.part is not None:
        what = ("part", hashlib.sha256(task.part.model.SerializeToString()).hexdigest()[:24])
    else:
        what = (task.op, task.tail.steps[0].axis, task.inputs)
    return f"ort{onnxruntime.__version__}/t{threads}/{what}"


def _layer_graph(layer: Layer):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inputs = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [1, *shape])
              for k, shape in enumerate(layer.in_shapes)]
    names = [f"x{k}" for k in range(len(layer.in_shapes))]
    inits, attrs = [], {}
    if layer.op in (Op.CONV, Op.FC):
        c = layer.in_shape[0] // layer.groups
        inits = [numpy_helper.from_array(rng.standard_normal((layer.out_shape[0], c, *layer.kernel), np.float32), "w"),
                 numpy_helper.from_array(rng.standard_normal(layer.out_shape[0]).astype(np.float32), "b")]
        names += ["w", "b"]
        attrs = {"kernel_shape": list(layer.kernel), "strides": list(layer.stride), "pads": list(layer.pads),
                 "group": layer.groups}
    elif layer.op in (Op.MAXPOOL, Op.AVGPOOL):
        attrs = {"kernel_shape": list(layer.kernel), "strides": list(layer.stride), "pads": list(layer.pads)}
    elif layer.op == Op.CONCAT:
        attrs = {"axis": 1}
    nodes = [helper.make_node(_ONNX_OPS[layer.op], names, ["y0"], **attrs)]
    if layer.activation == Activation.RELU:
        nodes.append(helper.make_node("Relu", ["y0"], ["y"]))
    elif layer.activation == Activation.RELU6:
        nodes.append(helper.make_node("Clip", ["y0", "lo", "hi"], ["y"]))
        inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
                  numpy_helper.from_array(np.array(6, np.float32), "hi")]
    else:
        nodes[-1].output[0] = "y"
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, *layer.out_shape])
    return helper.make_graph(nodes, layer.name, inputs, [output], inits), [(1, *s) for s in layer.in_shapes]


def _tail_graph(task: Task, shape: tuple[int, ...]):
    from onnx import TensorProto, helper

    nodes, current = [], "x0"
    for k, step in enumerate(task.tail.steps):
        attrs = {"axis": step.axis}
        if str(step.op) == "ArgMax":
            attrs["keepdims"] = int(step.keepdims)
        nodes.append(helper.make_node(str(step.op), [current], [f"t{k}"], **attrs))
        current = f"t{k}"
    nodes[-1].output[0] = "y"
    kind = TensorProto.INT64 if str(task.tail.steps[-1].op) == "ArgMax" else TensorProto.FLOAT
    graph = helper.make_graph(nodes, "tail", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", kind, None)])
    return graph, [shape]


def profile_seconds(graph, shapes: list[tuple[int, ...]], threads: int) -> float:
    """Median kernel seconds per run of `graph` under onnxruntime's profiler."""
    import onnxruntime
    from onnx import helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as folder:
        options.profile_file_prefix = str(Path(folder) / "profile")
        session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(1)
        feeds = {i.name: rng.standard_normal(s).astype(np.float32) for i, s in zip(session.get_inputs(), shapes)}
        for _ in range(WARMUP + RUNS):
            session.run(None, feeds)
        events = json.loads(Path(session.end_profiling()).read_text())
    runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    kernels = [e for e in events if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time")]
    per_run = [sum(k["dur"] for k in kernels if r["ts"] <= k["ts"] <= r["ts"] + r["dur"]) for r in runs[WARMUP:]]
    return statistics.median(per_run) * 1e-6


def host_seconds(task_list: list[Task], shapes: dict[str, tuple[int, ...]], threads: int) -> dict[str, float]:
    """Measured host seconds of each task (from the cache where it holds them)."""
    path = cache_path()
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        cache = {}
    times, fresh = {}, False
    for task in task_list:
        key = task_key(task, threads)
        if key not in cache:
            if task.layer is not None:
                graph, feeds = _layer_graph(task.layer)
            elif task.part is not None:
                graph, feeds = task.part.model.graph, [(1, *value_dims(task.part.model, task.part.input))]
            else:
                graph, feeds = _tail_graph(task, (1, int(np.prod(shapes[task.inputs[0]]))))
            cache[key], fresh = profile_seconds(graph, feeds, threads), True
        times[task.name] = cache[key]
    if fresh:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(cache, indent=0, sort_keys=True))
    return times
