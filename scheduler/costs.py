"""A network's scheduling problem on a set of units: per (task, unit) seconds and bytes.

* accelerator: the program model (`planner.program_model.predict`) of each single-input layer
  compiled alone for the instance, with stand-in weights (`planner.pipeline.stand_in`); the
  planner's cost model (`planner.plan.plan_layer`, every step of the split) for an Add or
  Concat; cycles at the unit's clock, and main-memory bytes;
  the main memory's bandwidth, shared by all instances, is the first instance's
  `dram.bandwidth_bytes_per_cycle` at its clock;
* host: onnxruntime's profiler (`scheduler.host_profile`) at the unit's thread count;
* moves: over the serial link between the host and an instance, as the host runtime
  (`boards.runtime`) moves a tensor: the int8 tensor in the instance's layout (channels padded
  to its SIMD lanes) in WRITE or READ exchanges of at most `boards.protocol.MAX_DATA` bytes,
  each a request and a reply frame (`boards.protocol`), `boards.uart.FRAME_BITS` bits a byte
  at the instance's baud (the USB-serial chip's latency is not counted); free between
  instances (the consumer reads the tensor from the shared main memory, which its layer's
  bytes already count);
* memory: each layer's constants (`planner.envelope.constant_bytes`) within the instance's
  DRAM address space (`template.dram_address_bits`).
"""
from __future__ import annotations

import math

import numpy as np

from boards.protocol import CRC_BYTES, HEADER_BYTES, MAX_DATA, READ_REQUEST, WRITE_ADDRESS
from boards.uart import FRAME_BITS
from common.errors import HwgenError, InputError
from hwgen.config import AcceleratorConfig
from planner.compile.memory_map import tensor_bytes
from planner.compile.network import compile_network
from planner.envelope import constant_bytes
from planner.ir import Layer, Network, TensorQuant
from planner.pipeline import stand_in
from planner.plan import plan_layer, plan_network
from planner.program_model import Prediction, predict
from planner.split import shape_only, split_layer
from scheduler.host_profile import host_seconds
from scheduler.problem import Problem
from scheduler.units import Unit, UnitKind, Workload, as_workload, runnable

def link_seconds(data_bytes: int, baud: int, to_board: bool) -> float:
    """Seconds to WRITE (`to_board`) or READ `data_bytes` over the serial link: per exchange of
    at most `MAX_DATA` bytes, a request frame and a reply frame around the data."""
    exchanges = -(-data_bytes // MAX_DATA)
    request = HEADER_BYTES + (WRITE_ADDRESS.size if to_board else READ_REQUEST.size) + CRC_BYTES
    reply = HEADER_BYTES + CRC_BYTES
    return (data_bytes + exchanges * (request + reply)) * FRAME_BITS / baud


def _accelerator_costs(layer: Layer, unit: Unit, cache: dict) -> tuple[float, float, float]:
    """Seconds, main-memory bytes and constant bytes of a layer on an instance: the program
    model's (a single-input layer alone, compiled with stand-in weights), or the planner's
    cost model's (a layer with several inputs, which no one-input network holds); infinite
    seconds when the layer does not compile alone."""
    key = (unit.config.name, layer.op, layer.in_shapes, layer.out_shape, layer.kernel, layer.stride, layer.pads,
           layer.groups)
    if key not in cache:
        steps = split_layer(shape_only(layer), unit.config)
        constants = float(sum(constant_bytes(step) for step in steps))
        if len(layer.inputs) == 1:
            try:
                prediction = _program_prediction(layer, unit.config)
                cache[key] = (prediction.cycles, float(prediction.dram_bytes), constants)
            except HwgenError:  # it does not compile alone (e.g. the instance's DRAM is too small)
                cache[key] = (math.inf, 0.0, constants)
        else:
            costs = [plan_layer(step, unit.config).cost for step in steps]
            cache[key] = (sum(c.cycles for c in costs), float(sum(c.dram_bytes for c in costs)), constants)
    cycles, dram, constants = cache[key]
    return cycles / (unit.clock_mhz * 1e6), dram, constants


def _program_prediction(layer: Layer, config: AcceleratorConfig) -> Prediction:
    """`planner.program_model.predict` of the layer alone, planned and compiled for `config`."""
    alone = Network(layer.name, layer.inputs[0], layer.in_shape, (stand_in(layer),), (layer.output,),
                    TensorQuant(1.0, 0))
    plan = plan_network(alone, config)
    schedules = {step.name: step.schedule for step in plan.layers if step.schedule is not None}
    return predict(compile_network(alone, schedules, config).program, config)


def build_problem(source: Network | Workload, units: list[Unit], cpu_cap: float | None = None, *,
                  host_times: dict[str, float] | None = None, link: bool = True) -> Problem:
    """The problem of scheduling a network's or a workload's tasks on `units` (exactly one of
    them the host): the
    host's seconds per task measured, or `host_times`; without `link` the serial link is free
    (the input already in main memory, the outputs read from it)."""
    hosts = [p for p, u in enumerate(units) if u.kind is UnitKind.HOST]
    if len(hosts) != 1:
        raise InputError(f"units {', '.join(u.name for u in units)}: {len(hosts)} hosts; allowed: exactly one")
    host = hosts[0]
    work = as_workload(source)
    task_list = list(work.tasks)
    n, m = len(task_list), len(units)
    can = runnable(work, units)
    shapes = work.shapes
    time = np.full((n, m), math.inf)
    dram = np.zeros((n, m))
    memory = np.zeros((n, m))
    budget = np.array([math.inf if u.kind is UnitKind.HOST else float(1 << u.config.template.dram_address_bits)
                       for u in units])
    measured = host_times if host_times is not None else host_seconds(task_list, shapes, units[host].threads)
    cache: dict = {}
    for i, task in enumerate(task_list):
        time[i, host] = measured[task.name]
        for p, unit in enumerate(units):
            if p != host and unit.name in can[task.name]:
                time[i, p], dram[i, p], memory[i, p] = _accelerator_costs(task.layer, unit, cache)
    producer = {task.output: i for i, task in enumerate(task_list)}
    edges = sorted({(producer[t], i) for i, task in enumerate(task_list) for t in task.inputs if t in producer})
    inputs = tuple(i for i, task in enumerate(task_list) if work.input_name in task.inputs)
    consumed = {t for task in task_list for t in task.inputs}
    outputs = tuple(i for i, task in enumerate(task_list) if task.output in work.finals or task.output not in consumed)
    send = np.zeros((n, m, m))
    for j, task in enumerate(task_list):
        for q in range(m):
            for p in range(m):
                if link and q != p and host in (q, p):
                    board = units[q if p == host else p]
                    send[j, q, p] = link_seconds(tensor_bytes(task.shape, board.config.pe.simd), board.baud, p != host)
    input_send = np.array([link_seconds(tensor_bytes(work.input_shape, u.config.pe.simd), u.baud, True)
                           if link and p != host else 0.0 for p, u in enumerate(units)])
    bandwidth = next((u.config.dram.bandwidth_bytes_per_cycle * u.clock_mhz * 1e6 for u in units
                      if u.kind is UnitKind.ACCELERATOR), math.inf)
    return Problem(tuple(t.name for t in task_list), tuple(u.name for u in units), host, time, tuple(edges), inputs,
                   outputs, send, input_send, dram, bandwidth, memory, budget, cpu_cap)
