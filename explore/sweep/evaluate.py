"""Evaluation of one design point: validate, plan the network (`planner.plan.plan_layer` per
layer, reused across points by `explore.sweep.reuse`), estimate resources, check them against
the device and, with synthesis, measure area and Fmax.

A point of a space that sweeps `instances` (or whose configuration has several) is also
scheduled as a pipeline on its instances (`scheduler.instances`): its latency, period and images/s
are the pipeline's, its resources `instances` times one instance's (the memory arbiter's few
cells left out; a synthesis measures one instance).

A point ends in one of three states: `ok`; `infeasible` (the configuration is invalid or not
generatable, the network has no legal plan on it, or the estimate exceeds the device — such a
point is never synthesized), with the reason; `failed` (an unexpected error, a tool crash or a
timeout, recorded by `explore.sweep.runner`), with the error.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import lru_cache

from boards.devices import Device, Resources, device as find_device
from hwgen.config import AcceleratorConfig, config_from_dict
from common.errors import ConfigError, PlanningError
from planner.frontend import load_network
from planner.ir import Network
from planner.objective import Objective
from explore.sweep.resources import estimate
from explore.sweep.reuse import LayerMemo, NetworkTotals, network_totals
from explore.sweep.synth_job import synthesize
from planner.zoo import resolve_model
from scheduler.instances import pipeline_figures

OK, INFEASIBLE, FAILED = "ok", "infeasible", "failed"
RESOURCES = ("lut", "ff", "dsp", "bram", "spram")
LAYER_MEMO = LayerMemo()
"""Layer plans of this process, reused across the points it evaluates."""


@dataclass(frozen=True)
class ModelSpec:
    """How a worker loads the network: a built-in name or an ONNX path, and an input shape."""

    source: str
    input_shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Task:
    """Everything a worker needs to evaluate one point (picklable)."""

    key: str
    index: int
    label: str
    values: dict
    config: dict
    model: ModelSpec
    objective: str = Objective.LATENCY.value
    device: str | None = None
    synth: bool = False
    workdir: str | None = None
    timeout: float | None = None


@lru_cache(maxsize=4)
def network(model: ModelSpec) -> Network:
    """The network of `model`, loaded once per process."""
    return load_network(resolve_model(model.source), model.input_shape)


def record(task: Task, status: str, reason: str = "", **fields) -> dict:
    """A result row: the point's identity and swept values, its status and measured fields."""
    return {"index": task.index, "label": task.label, "key": task.key, "status": status, "reason": reason,
            **task.values, **fields}


def plan_metrics(plan: NetworkTotals, config: AcceleratorConfig) -> dict:
    """Cycles, DRAM bytes, energy and MAC utilization of a network plan."""
    return {"cycles": plan.cycles, "dram_bytes": plan.dram_bytes, "energy_pj": plan.energy_pj,
            "utilization": plan.macs / (plan.cycles * config.pe.macs_per_cycle) if plan.cycles else 0.0,
            "macs_per_cycle": config.pe.macs_per_cycle, "clock_mhz": config.clock_mhz}


def timing(cycles: int, mhz: float) -> dict:
    """Latency of one inference in seconds and inferences per second at `mhz`."""
    seconds = cycles / (mhz * 1e6)
    return {"latency_s": seconds, "throughput_ips": 1 / seconds if seconds else 0.0}


def pipelined(task: Task, config: AcceleratorConfig) -> bool:
    """Whether the point is judged as a pipeline on its instances (module docstring)."""
    return config.instances > 1 or "instances" in task.values


def pipeline_timing(net: Network, config: AcceleratorConfig, mhz: float) -> dict:
    """Latency, period and images/s of `config`'s instances pipelining `net` at `mhz`."""
    figures = pipeline_figures(net, config, mhz)
    return {"latency_s": figures.latency_s, "period_s": figures.period_s, "throughput_ips": 1 / figures.period_s,
            "instances": config.instances, "stages": len(figures.stages)}


def times(resources: Resources, count: int) -> Resources:
    return Resources(**{name: count * getattr(resources, name) for name in RESOURCES})


def over_device(used: Resources, device: Device) -> list[str]:
    """The resources `used` needs beyond the device's totals, e.g. `dsp 160 > 156`."""
    return [f"{name} {getattr(used, name)} > {getattr(device.totals, name)}" for name in RESOURCES
            if getattr(used, name) > getattr(device.totals, name)]


def area_pct(used: Resources, device: Device) -> float:
    """The largest fraction of any device resource in use, in percent."""
    return max(100.0 * getattr(used, name) / total for name in RESOURCES if (total := getattr(device.totals, name)))


def prefixed(prefix: str, resources: Resources) -> dict:
    return {f"{prefix}_{name}": getattr(resources, name) for name in RESOURCES}


def evaluate_point(task: Task) -> dict:
    """Evaluate one point (see the module docstring); unexpected errors propagate to the runner."""
    start = time.perf_counter()
    try:
        config = config_from_dict(task.config, f"point {task.index}")
    except ConfigError as error:
        return record(task, INFEASIBLE, f"config: {error}")
    try:
        plan = network_totals(network(task.model), config, Objective(task.objective), LAYER_MEMO)
    except PlanningError as error:
        return record(task, INFEASIBLE, f"plan: {error}")
    pipeline = pipelined(task, config)
    try:
        clocked = (pipeline_timing(network(task.model), config, config.clock_mhz) if pipeline
                   else timing(plan.cycles, config.clock_mhz))
    except PlanningError as error:
        return record(task, INFEASIBLE, f"schedule: {error}")
    fields = plan_metrics(plan, config) | clocked
    if task.device is None:
        return record(task, OK, **fields, seconds=time.perf_counter() - start)
    device = find_device(task.device)
    one = replace(config, instances=1)
    used = times(estimate(one, device.family), config.instances)
    fields |= prefixed("est", used) | {"area_pct": area_pct(used, device)}
    excess = over_device(used, device)
    if excess:
        return record(task, INFEASIBLE, f"exceeds {device.name}: {', '.join(excess)}", **fields,
                      seconds=time.perf_counter() - start)
    if task.synth:
        report = synthesize(task.device, one, task.workdir, task.timeout)
        used = times(Resources(**{name: report["resources"][name] for name in RESOURCES}), config.instances)
        fields |= prefixed("synth", used) | {"fmax_mhz": report["fmax_mhz"], "timing_met": report["timing_met"],
                                             "build_seconds": report["build_seconds"]}
        fields |= (pipeline_timing(network(task.model), config, report["fmax_mhz"]) if pipeline
                   else timing(plan.cycles, report["fmax_mhz"])) | {"area_pct": area_pct(used, device)}
    return record(task, OK, **fields, seconds=time.perf_counter() - start)
