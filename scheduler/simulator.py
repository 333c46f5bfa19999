"""The discrete-event simulator that judges every schedule: a stream of images through a mapping.

Per image, each layer is a task on its unit and each transfer (`scheduler.problem.received`) a
task on the receiving unit; a task is ready once its inputs are on its unit. A unit runs one task
at a time, never pre-empted, the oldest image first, then the earliest layer. Buffers between
units hold at most `window` images in flight (image k enters once image k - window is done;
default: two per unit, double buffering). Accelerator tasks share the main memory's one port:
a running task that alone keeps the port busy a fraction `u_i` of its time (bytes per second
over `Problem.bandwidth`) meets the others' requests in `u_i * sum(u_j)` of its cycles and loses
each such cycle, so it runs at `1 / (1 + u_i * sum(u_j))` of its speed (the pairwise collisions
of `planner.compile.stages.predicted_period`); and while the running tasks together would move
more bytes per second than the bandwidth, none runs faster than the bandwidth allows (a fluid
model of the saturated port).
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from scheduler.problem import Mapping, Problem, cap_period, received, transfer_time

EPSILON = 1e-12  # seconds of a task left that count as none


@dataclass(frozen=True)
class Interval:
    """One task's execution: `label` is a layer name or `"<tensor> ->"` for a transfer."""

    unit: int
    label: str
    image: int
    start: float
    end: float


@dataclass(frozen=True)
class Run:
    """Completion and release time of every image and every unit's busy intervals; `window` the
    images in flight."""

    completions: tuple[float, ...]
    releases: tuple[float, ...]
    intervals: tuple[Interval, ...]
    window: int

    def steady(self) -> range:
        """The images of the steady state: after the first quarter (filling the pipeline), before
        the last `window` (draining it: no new image competes for the units)."""
        k = len(self.completions)
        last = k - 1 - self.window
        if last - k // 4 < 2:
            raise ValueError(f"{k} images cannot show a steady state with {self.window} in flight; "
                             f"simulate at least {4 * (self.window + 3)}")
        return range(k // 4, last + 1)

    @property
    def period(self) -> float:
        """Mean spacing of completions in the steady state."""
        images = self.steady()
        return (self.completions[images[-1]] - self.completions[images[0]]) / (len(images) - 1)

    @property
    def latency(self) -> float:
        """The longest release-to-completion time in the steady state."""
        return max(self.completions[k] - self.releases[k] for k in self.steady())


@dataclass(frozen=True)
class _Task:
    unit: int
    label: str
    duration: float
    demand: float        # bytes per second at full speed (accelerator layers)
    priority: float
    needs: tuple[int, ...]  # tasks of the same image it waits for


def _move(problem: Problem, tensor: int, source: int, target: int, priority: float, needs: tuple[int, ...]) -> _Task:
    label = f"{problem.layers[tensor] if tensor >= 0 else 'input'} ->"
    return _Task(problem.payer(source, target), label, transfer_time(problem, tensor, source, target), 0.0, priority,
                 needs)


def _template(problem: Problem, mapping: Mapping) -> tuple[list[_Task], list[int]]:
    """One image's tasks and the tasks whose end completes the image."""
    tasks: list[_Task] = []
    where: dict[tuple[int, int], int] = {}  # (tensor, unit) -> task making it available there
    moves = received(problem, mapping)
    for tensor, source, target in moves:
        if tensor < 0:
            where[(tensor, target)] = len(tasks)
            tasks.append(_move(problem, tensor, source, target, -0.5, ()))
    preds = problem.predecessors()
    for i, p in enumerate(mapping):
        needs = tuple(where[(j, p)] for j in preds[i])
        if i in problem.inputs and p != problem.host:
            needs += (where[(-1, p)],)
        duration = float(problem.time[i, p])
        demand = problem.dram[i, p] / duration if duration > 0 and p != problem.host else 0.0
        where[(i, p)] = len(tasks)
        tasks.append(_Task(p, problem.layers[i], duration, demand, float(i), needs))
        for tensor, source, target in moves:
            if tensor == i:
                where[(i, target)] = len(tasks)
                tasks.append(_move(problem, i, source, target, i + 0.5, (where[(i, p)],)))
    return tasks, [where[(j, problem.host)] for j in problem.outputs]


def _speeds(problem: Problem, demands: list[float]) -> list[float]:
    """The speed of each running task given its memory demand (bytes/s at full speed): port
    collisions and the saturated port (module docstring)."""
    use = [demand / problem.bandwidth for demand in demands]
    total = sum(demands)
    saturated = min(1.0, problem.bandwidth / total) if total > 0 else 1.0
    return [min(saturated, 1 / (1 + u * (sum(use) - u))) if u > 0 else 1.0 for u in use]


def simulate(problem: Problem, mapping: Mapping, images: int, release: float = 0.0, window: int | None = None) -> Run:
    """Run `images` images (image k available at `k * release` seconds, once image k - `window`
    is done)."""
    window = window or 2 * problem.m
    template, finals = _template(problem, mapping)
    size = len(template)
    waiting = [len(t.needs) for t in template] * images
    users: list[list[int]] = [[] for _ in range(size)]
    for index, task in enumerate(template):
        for need in task.needs:
            users[need].append(index)
    ready: list[list[tuple[int, float, int]]] = [[] for _ in range(problem.m)]
    running: dict[int, list] = {}  # unit -> [task id, work left in full-speed seconds]
    releases = [k * release for k in range(images)]
    unreleased = 0
    left = [len(finals)] * images
    completions = [math.nan] * images
    intervals: list[Interval] = []
    started: dict[int, float] = {}
    now = 0.0

    def make_ready(task_id: int) -> None:
        task = template[task_id % size]
        heapq.heappush(ready[task.unit], (task_id // size, task.priority, task_id))

    while True:
        while (unreleased < images and releases[unreleased] <= now + EPSILON
               and (unreleased < window or not math.isnan(completions[unreleased - window]))):
            releases[unreleased] = max(releases[unreleased], now)
            for index, task in enumerate(template):
                if not task.needs:
                    make_ready(unreleased * size + index)
            unreleased += 1
        for unit in range(problem.m):
            if unit not in running and ready[unit]:
                task_id = heapq.heappop(ready[unit])[2]
                running[unit] = [task_id, template[task_id % size].duration]
                started[task_id] = now
        if not running:
            if unreleased == images:
                break
            now = releases[unreleased]  # the window never blocks an idle system
            continue
        speeds = _speeds(problem, [template[t % size].demand for t, _ in running.values()])
        speeds = dict(zip(running, speeds))
        step = min(work / speeds[u] for u, (_, work) in running.items())
        if unreleased < images and releases[unreleased] > now:
            step = min(step, releases[unreleased] - now)
        now += step
        for unit in list(running):
            entry = running[unit]
            entry[1] -= step * speeds[unit]
            if entry[1] > EPSILON * max(1.0, template[entry[0] % size].duration):
                continue
            task_id = entry[0]
            del running[unit]
            image, index = divmod(task_id, size)
            intervals.append(Interval(unit, template[index].label, image, started.pop(task_id), now))
            for user in users[index]:
                other = image * size + user
                waiting[other] -= 1
                if waiting[other] == 0:
                    make_ready(other)
            if index in finals:
                left[image] -= 1
                if left[image] == 0:
                    completions[image] = now
    return Run(tuple(completions), tuple(releases), tuple(intervals), window)


@dataclass(frozen=True)
class Evaluation:
    """The simulator's verdict on a mapping: steady-state period, latency at that rate, and the
    run paced at the period (for the Gantt chart)."""

    period: float
    latency: float
    run: Run


def judged_period(problem: Problem, mapping: Mapping, images: int) -> float:
    """The period of a saturated stream, no shorter than the CPU cap allows."""
    return max(simulate(problem, mapping, images).period, cap_period(problem, mapping))


def evaluate(problem: Problem, mapping: Mapping, images: int) -> Evaluation:
    """Period of a saturated stream (no shorter than the CPU cap allows), then the latency of a
    stream released at that period."""
    period = judged_period(problem, mapping, images)
    paced = simulate(problem, mapping, images, release=period)
    return Evaluation(period, paced.latency, paced)
