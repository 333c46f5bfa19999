"""Upper bounds on the sequencer's semaphores over every order in which the three queues can run.

The hardware keeps each semaphore in `template.semaphore_bits` bits, so a program must never
raise one above `2**semaphore_bits - 1` in any interleaving of its queues, not only in program
order. `semaphore_bounds` proves a bound per semaphore from two sound relaxations:

- Progress: with one queue held at a position, each other queue can at most pass the WAITs whose
  tokens the others could have signalled by then (a WAIT needs a SIGNAL; other queues' WAITs
  that might also take those tokens are ignored, which only lets a queue run further).
- Families: a set of semaphores counts tokens together; its total is at most the sum over the
  queues of the largest running total (SIGNALs minus WAITs of the set) within the positions the
  queue can reach. A semaphore is at most the total of any set that holds it (e.g. a bank's FREE
  and FULL semaphores together hold two tokens, so each of them holds at most two).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable

import numpy as np

from hwgen.isa import SEMAPHORES, Instruction, Opcode, Queue

Events = dict[Queue, list[tuple[int, int]]]  # per queue its WAITs (-1) and SIGNALs (+1): (semaphore, change)


def queue_events(dispatched: Iterable[Instruction]) -> Events:
    """Every queue's WAITs and SIGNALs in the order it executes them, from the instructions in
    the order the fetch stage dispatches them (`hwgen.program_walk.dispatched`)."""
    events: Events = {q: [] for q in Queue}
    for ins in dispatched:
        if ins.opcode in (Opcode.WAIT, Opcode.SIGNAL):
            events[Queue(ins["queue"])].append((ins["sem"], 1 if ins.opcode == Opcode.SIGNAL else -1))
    return events


def _running_totals(events: list[tuple[int, int]]) -> np.ndarray:
    """[position, semaphore]: the net change of each semaphore after the first `position` events."""
    changes = np.zeros((len(events) + 1, SEMAPHORES), np.int64)
    for index, (sem, change) in enumerate(events):
        changes[index + 1, sem] = change
    return np.cumsum(changes, axis=0)


def _reach(events: Events, held: Queue) -> dict[Queue, np.ndarray]:
    """For every position `p` of queue `held`: the furthest position each other queue can reach
    while `held` has executed exactly its first `p` events (the progress relaxation; monotone in
    `p`, so one sweep)."""
    others = [q for q in Queue if q != held]
    position = {q: 0 for q in others}
    waited = {q: [0] * SEMAPHORES for q in others}
    signalled = [0] * SEMAPHORES
    reach = {q: np.zeros(len(events[held]) + 1, np.int64) for q in others}
    for p in range(len(events[held]) + 1):
        if p and events[held][p - 1][1] > 0:
            signalled[events[held][p - 1][0]] += 1
        moved = True
        while moved:
            moved = False
            for q in others:
                while position[q] < len(events[q]):
                    sem, change = events[q][position[q]]
                    if change > 0:
                        signalled[sem] += 1
                    elif waited[q][sem] < signalled[sem]:
                        waited[q][sem] += 1
                    else:
                        break
                    position[q] += 1
                    moved = True
        for q in others:
            reach[q][p] = position[q]
    return reach


def semaphore_bounds(events: Events, semaphores: Iterable[int] = range(SEMAPHORES)) -> dict[int, int]:
    """For each of `semaphores`, a count it never exceeds however the queues interleave."""
    totals = {q: _running_totals(events[q]) for q in Queue}
    reaches = {held: _reach(events, held) for held in Queue}
    family_bounds = {}
    for size in range(1, SEMAPHORES + 1):
        for family in itertools.combinations(range(SEMAPHORES), size):
            members = list(family)
            running = {q: totals[q][:, members].sum(axis=1) for q in Queue}
            best = {q: np.maximum.accumulate(running[q]) for q in Queue}
            bound = sum(int(best[q][-1]) for q in Queue)  # no queue held
            for held, reach in reaches.items():
                bound = min(bound, int((running[held] + sum(best[q][reach[q]] for q in reach)).max()))
            family_bounds[family] = bound
    return {sem: max(0, min(bound for family, bound in family_bounds.items() if sem in family)) for sem in semaphores}


def semaphore_overflows(events: Events, limit: int) -> dict[int, int]:
    """The semaphores whose proven bound exceeds `limit`, with that bound (a semaphore signalled
    at most `limit` times in all is fine without further proof)."""
    signals = [sum(change > 0 for q in Queue for sem, change in events[q] if sem == s) for s in range(SEMAPHORES)]
    doubtful = [s for s in range(SEMAPHORES) if signals[s] > limit]
    if not doubtful:
        return {}
    return {sem: bound for sem, bound in semaphore_bounds(events, doubtful).items() if bound > limit}
