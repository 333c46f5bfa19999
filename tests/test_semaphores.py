"""Semaphore bounds (`hwgen.semaphores`) against a brute-force search of every order the queues
can run in; programs that could overflow `template.semaphore_bits` are refused, and the ISA
simulator counts in the same width."""
from __future__ import annotations

import random

import numpy as np
import pytest

from hwgen.accelerator import Accelerator
from hwgen.config import load_config
from hwgen.program_walk import Dispatched, ProgramDoesNotFit, ProgramError, check_program, dispatched
from hwgen.isa import SEMAPHORES, Instruction, Opcode, Queue, assemble
from hwgen.program import Program
from hwgen.semaphores import Events, queue_events, semaphore_bounds
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.program_model import predict
from planner.zoo import builtin_calibration, resolve_model
from sim.isa_sim import IsaSimulator
from hw_configs import data_config

ICEBREAKER = load_config("icebreaker")


def reachable_maxima(events: Events) -> list[int]:
    """The largest count of each semaphore over every state reachable by running the queues'
    heads one at a time in any order (a WAIT only on a positive count)."""
    start = ((0,) * len(Queue), (0,) * SEMAPHORES)
    seen, todo, best = {start}, [start], [0] * SEMAPHORES
    while todo:
        positions, counts = todo.pop()
        best = [max(b, c) for b, c in zip(best, counts)]
        for index, queue in enumerate(Queue):
            if positions[index] == len(events[queue]):
                continue
            sem, change = events[queue][positions[index]]
            if counts[sem] + change < 0:
                continue
            state = (positions[:index] + (positions[index] + 1,) + positions[index + 1:],
                     counts[:sem] + (counts[sem] + change,) + counts[sem + 1:])
            if state not in seen:
                seen.add(state)
                todo.append(state)
    return best


def events_of(lines: list[str]) -> Events:
    return queue_events(step.instruction for step in dispatched(Program(assemble(lines))))


DOUBLE_BUFFERING = [
    "SIGNAL queue=load sem=1", "SIGNAL queue=load sem=1",
    *["WAIT queue=load sem=1", "SIGNAL queue=load sem=0"] * 4,
    "WAIT queue=compute sem=0", *["SIGNAL queue=compute sem=1", "WAIT queue=compute sem=0"] * 3,
    "SIGNAL queue=compute sem=1", "END",
]


def test_double_buffering_holds_two_tokens_per_semaphore():
    events = events_of(DOUBLE_BUFFERING)
    assert reachable_maxima(events)[:2] == [2, 2]
    assert semaphore_bounds(events, [0, 1]) == {0: 2, 1: 2}


@pytest.mark.parametrize("seed", range(40))
def test_bounds_hold_in_every_order_of_random_programs(seed):
    rng = random.Random(seed)
    events: Events = {q: [(rng.randrange(3), rng.choice((-1, 1, 1))) for _ in range(rng.randrange(7))] for q in Queue}
    bounds = semaphore_bounds(events)
    truth = reachable_maxima(events)
    assert all(bounds[sem] >= truth[sem] for sem in range(SEMAPHORES)), (events, bounds, truth)


def test_the_compilers_digits_program_holds_at_most_two_tokens():
    model = "digits"
    float_net = load_network(resolve_model(model))
    net = quantize_network(float_net, builtin_calibration(model, float_net.input_shape)[:1])
    events = queue_events(step.instruction for step in dispatched(plan_and_compile(net, ICEBREAKER).compiled.program))
    assert max(semaphore_bounds(events).values()) <= 2


def test_a_program_that_could_overflow_is_refused():
    program = Program(assemble(["SIGNAL queue=load sem=7"] * 4 + ["WAIT queue=compute sem=7"] * 4 + ["END"]))
    message = (r"semaphore 7 may hold 4 tokens in some order of the queues; the 2-bit semaphores of configuration "
               r"'icebreaker' hold at most 3 \(template.semaphore_bits\)")
    for run in (lambda: IsaSimulator(ICEBREAKER, program, np.zeros(64, np.uint8)).run(),
                lambda: predict(program, ICEBREAKER), lambda: Accelerator(ICEBREAKER, program)):
        with pytest.raises(ProgramDoesNotFit, match=message):
            run()
    check_program(program, data_config("ice40up5k"))  # 8-bit semaphores


def test_the_isa_simulator_counts_in_the_semaphore_width():
    sim = IsaSimulator(ICEBREAKER, Program(assemble(["END"])), np.zeros(64, np.uint8))
    signal = Dispatched(5, Instruction.make(Opcode.SIGNAL, queue=Queue.STORE, sem=4))
    for _ in range(3):
        sim._execute(signal)
    with pytest.raises(ProgramError, match=r"instruction 5: SIGNAL queue=store sem=4 overflows the 2-bit semaphore 4"):
        sim._execute(signal)
