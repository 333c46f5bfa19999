"""A whole sweep: points of a space -> cached or evaluated records -> output files.

Records live in `DIR/points/` (`explore.sweep.cache`); a rerun evaluates only the points
without a record (and, on request, the failed ones again), then rewrites every output from
all records, so an interrupted sweep resumes where it stopped.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from boards.devices import DEVICES, device as find_device
from common.errors import HwgenError
from planner.objective import Objective
from planner.search import COST_SECTIONS
from explore.sweep.cache import PointCache, network_fingerprint, point_key, tool_versions
from explore.sweep.evaluate import FAILED, ModelSpec, Task, evaluate_point, network
from explore.sweep.outputs import write_outputs
from explore.sweep.runner import run_points
from explore.sweep.space import Space


@dataclass(frozen=True)
class SweepResult:
    """The rows of every point (space order), how many were evaluated now, the files written, and
    the cache records found invalid (evaluated again)."""

    rows: list[dict]
    evaluated: int
    reused: int
    paths: list[Path]
    rejected: tuple[str, ...] = ()


def resolve_device(name: str | None, config_device: str) -> str | None:
    """The device to check resources against: `name` (e.g. --device), else the base config's
    `device` if it names a known device or part, else None (no resource estimate)."""
    if name is not None:
        return find_device(name).name
    for known in DEVICES.values():
        if config_device.lower() in (known.name, known.part.lower()):
            return known.name
    return None


def batches(tasks: list[Task], jobs: int, synth: bool) -> list[list[Task]]:
    """The tasks in batches for the local pool: points whose configurations agree in the
    sections a layer's schedule ranking depends on (`planner.search.COST_SECTIONS`; e.g. they
    differ only in buffer sizes) go to one worker, which then ranks each layer once for all of
    them. A batch holds at most a quarter of a worker's share (load balance); synthesized
    points go one by one (each takes minutes)."""
    if synth:
        return [[task] for task in tasks]
    cap = max(1, math.ceil(len(tasks) / (4 * jobs)))
    groups: dict[str, list[Task]] = {}
    for task in tasks:
        key = json.dumps([task.config.get(section) for section in COST_SECTIONS], sort_keys=True)
        groups.setdefault(key, []).append(task)
    return [group[i:i + cap] for group in groups.values() for i in range(0, len(group), cap)]


def _check_synthesis(device: str | None) -> None:
    if device is None:
        raise HwgenError(f"--synth needs a device: give --device (known: {', '.join(DEVICES)})")
    try:
        import boards.synth  # noqa: F401 - the synthesis flow of the boards package
    except ImportError as error:
        raise HwgenError(f"--synth needs boards.synth (the synthesis flow), which cannot be imported: {error}") \
            from None


def run_sweep(model: ModelSpec, space: Space, out: Path, *, objective: Objective = Objective.LATENCY,
              device: str | None = None, synth: bool = False, jobs: int = 1, scheduler: str | None = None,
              timeout: float | None = None, retry_failed: bool = False,
              evaluate: Callable[[Task], dict] = evaluate_point) -> SweepResult:
    """Evaluate every point of `space` not already recorded in `out`, then write the outputs."""
    device = resolve_device(device, str(space.base.get("device", "generic")))
    if synth:
        _check_synthesis(device)
    net = network(model)
    context = {"model": network_fingerprint(net), "objective": str(objective), "device": device, "synth": synth,
               "versions": tool_versions(synth)}
    cache = PointCache(out / "points")
    points = list(space.points())
    keys = [point_key(point.config, context) for point in points]
    tasks, records = [], {}
    for key, point in zip(keys, points):
        cached = cache.get(key)
        if cached is not None and not (retry_failed and cached["status"] == FAILED):
            records[key] = cached
            continue
        cache.remove(key)  # a failed record to retry: the workers' new record replaces it
        tasks.append(Task(key, point.index, point.label, point.values, point.config, model, str(objective), device,
                          synth, str(out / "synth" / key) if synth else None, timeout))
    reused = len(records)

    def keep(record: dict) -> None:
        records[record["key"]] = record

    run_points(batches(tasks, jobs, synth), cache, keep, jobs=jobs, scheduler=scheduler, evaluate=evaluate,
               title=f"sweep {net.name}")
    rows = [dict(records[key], index=point.index, label=point.label, **point.values)
            for key, point in zip(keys, points)]
    title = f"Design-space sweep of {net.name}" + (f" on {device}" if device else "")
    described = [("model", f"{model.source} ({net.name}, {len(net.layers)} layers)"), ("space", space.source),
                 ("objective of the planner", str(objective)), ("device", device or "none (no resource estimate)"),
                 ("synthesis", "yes" if synth else "no (estimated resources)")]
    swept = [axis.field for axis in space.axes]
    paths = write_outputs(out, rows, [point.config for point in points], swept, title, described,
                          find_device(device) if device else None)
    return SweepResult(rows, len(tasks), reused, paths, tuple(cache.rejected))
