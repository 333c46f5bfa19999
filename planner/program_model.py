"""Timing and traffic model of a compiled program: the cycles and DRAM bytes the RTL will take.

The model replays the sequencer (`hwgen/sequencer.py`) at the level of instructions:

* the fetch stage dispatches one instruction every `hwgen.timing.fetch_cycles(config)` into the
  load, compute or store queue (`hwgen.queue_options.queue_depth` deep; an instruction is at the head
  of an empty queue `hwgen.timing.head_delay` cycles later) and stalls while the target queue is
  full;
* a queue's head WAIT passes once its semaphore is positive, a SIGNAL executes once the unit is
  idle (both take a cycle; a semaphore change is visible the next cycle);
* CONV and VEC take exactly their engines' cycle counts (`hwgen.timing.conv_cycles`,
  `hwgen.timing.vec_cycles`), a CONVCFG `hwgen.timing.CONVCFG_CYCLES`;
* a LOAD or STORE is a fixed part (unit and DMA start-up, the descriptor lookup, plus the
  memory latency for reads) and a port part: the realigner's words, or the bus beats at the
  configured bandwidth, whichever
  is longer (`planner.transfer_work`). A load and a store that use the port at the same time
  share its bandwidth fairly (max-min): the memory alternates read and write turns, and which
  of the two wins a slow memory's next beat depends on cycle parity, so fairness is the expected
  behaviour. With `template.dma: shared` they never overlap: after the first
  `offer_cycles` of its fixed part a transfer waits until the DMA is free (a store first when
  both wait) and then has it to itself until it ends;
* with `template.load_command: queue` (`store_command: queue`) a LOAD (STORE) stays at its
  queue's head while it runs and leaves it a cycle before its unit is free (it holds a queue
  entry until then, `hwgen.queue_options.runs_in_place`);
* with the SPRAM program memory, a descriptor lookup reads its entry through the fetch's port
  (first), so an instruction being fetched meanwhile arrives an entry's halfwords later. With
  `template.dma_descriptor: reader` the lookup waits for the DMA too (the reader holds the
  entry until the DMA is done), so it happens when the transfer gets the DMA.

DRAM bytes are counted exactly from the descriptors (whole beats read, enabled bytes written).
`tests/test_program_model.py` holds the model against the Amaranth simulation of the RTL.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache

from hwgen.config import AcceleratorConfig, DmaDescriptor, DmaSharing
from hwgen.dma import Descriptor
from hwgen.program_walk import Dispatched, ProgramError, check_program, dispatched
from hwgen.isa import SEMAPHORES, Opcode, Queue
from hwgen.program import Program
from hwgen.queue_options import queue_depth, runs_in_place
from hwgen.timing import (CONVCFG_CYCLES, DONE_CYCLES, conv_cycles, fetch_cycles, fetch_state_cycles, head_delay,
                          vec_cycles)
from planner.transfer_work import TransferWork, lookup_halfwords, offer_cycles, transfer_cycles, transfer_work

EPSILON = 1e-6            # cycles of a transfer left that count as none (float rounding)


@dataclass
class Prediction:
    """Predicted cycles and DRAM traffic of a program, with per-queue busy cycles."""

    cycles: int
    bytes_read: int
    bytes_written: int
    busy: dict[str, float] = field(default_factory=dict)
    timeline: list[tuple[str, str, float, float]] = field(default_factory=list)
    """(queue, opcode, issue cycle, end cycle) of every LOAD, STORE, CONVCFG, CONV and VEC."""

    @property
    def dram_bytes(self) -> int:
        return self.bytes_read + self.bytes_written


@dataclass
class _Flow:
    """A transfer in flight: `offer` cycles before it needs the DMA, `fixed` cycles off the port
    once it `holds` the DMA, then `port` cycles of transfer at full speed that use a fraction
    `demand` of the port's bandwidth; `entry` is its timeline entry."""

    entry: int
    queue: Queue
    fixed: float
    port: float
    demand: float
    offer: float = 0.0
    holds: bool = True
    queued: bool = False
    """It still holds its queue's head (`hwgen.queue_options.runs_in_place`)."""

    def left(self, rate: float) -> float:
        """Cycles until it ends once it holds the DMA, at `rate` of full speed."""
        return max(self.fixed, 0.0) + (self.port / rate if self.port > EPSILON else 0.0)


@lru_cache(maxsize=65536)
def _work(desc: Descriptor, bus_bytes: int) -> TransferWork:
    return transfer_work(desc, bus_bytes)


def _flow(step: Dispatched, config: AcceleratorConfig, constant_bytes: int) -> tuple[_Flow, TransferWork]:
    """The transfer of `step`: a load from below `constant_bytes` reads the model's constants."""
    work = _work(step.desc, config.dram.bus_width_bits // 8)
    constants = step.desc.load and step.desc.dram_addr < constant_bytes
    fixed, port, port_use = (float(v) for v in transfer_cycles(step.desc.load, work.steps, work.fill_steps,
                                                                 work.beats, config, constants=constants))
    queue = Queue.LOAD if step.desc.load else Queue.STORE
    demand = port_use / port if port else 0.0
    if config.template.dma == DmaSharing.SHARED:  # it waits for the DMA after the offer
        offer = float(offer_cycles(config))
        return _Flow(-1, queue, fixed - offer, port, demand, offer, holds=False), work
    return _Flow(-1, queue, fixed, port, demand), work


def _before(t: float, moment: float) -> bool:
    """Whether `t` is before `moment` by more than rounding: moments within `EPSILON` of `t`
    are now (`_Replay._next_time` never moves to them), else sums of the same times in another
    order could leave a queue waiting for a moment already passed."""
    return t + EPSILON < moment


def _rates(flows: list[_Flow]) -> list[float]:
    """Speed (fraction of full speed) of each flow: the flows in their port part share the port
    max-min fairly (the memory alternates read and write turns)."""
    active = sorted((f for f in flows if f.holds and f.fixed <= 0 and f.port > 0), key=lambda f: f.demand)
    rates = {id(f): 1.0 for f in flows}
    capacity = 1.0
    for index, f in enumerate(active):
        use = min(f.demand, capacity / (len(active) - index))
        rates[id(f)] = use / f.demand if f.demand else 1.0
        capacity -= use
    return [rates[id(f)] for f in flows]


class _Replay:
    """The event loop: time advances to the next moment anything can happen."""

    def __init__(self, program: Program, config: AcceleratorConfig, constant_bytes: int):
        self.config, self.constant_bytes = config, constant_bytes
        self.stream = dispatched(program)
        self.pending: Dispatched | None = next(self.stream, None)
        self.next_fetch = float(fetch_state_cycles(config))
        self.fetch_cycles = fetch_cycles(config)
        self.stolen = lookup_halfwords(config)  # fetch cycles per lookup
        self.lookup_on_grant = config.template.dma_descriptor == DmaDescriptor.READER  # else on issue
        self.fifos: dict[Queue, deque[tuple[float, Dispatched]]] = {q: deque() for q in Queue}
        self.depth = {q: queue_depth(config.template, q.name.lower()) for q in Queue}
        self.head_delay = {q: head_delay(self.depth[q]) for q in Queue}
        self.head_ready = {q: 0.0 for q in Queue}
        self.unit_free = {q: 0.0 for q in Queue}
        self.flows: dict[Queue, _Flow] = {}
        self.sems = [0] * SEMAPHORES
        self.sem_updates: list[tuple[float, int]] = []  # (visible from, semaphore) of SIGNALs
        self.convcfg = None
        self.busy = {q.name.lower(): 0.0 for q in Queue}
        self.bytes_read = self.bytes_written = 0
        self.last_action = 0.0
        self.timeline: list[tuple[str, str, float, float]] = []

    def run(self) -> Prediction:
        t = 0.0
        while self.pending is not None or any(self.fifos.values()) or self.flows:
            while self._fetch(t) | self._serve_queues(t) | self._grant_dma(t) | self._pop_finishing(t):
                pass
            t_next = self._next_time(t)
            if t_next is None:
                heads = {q.name: str(fifo[0][1].instruction) for q, fifo in self.fifos.items() if fifo}
                raise ProgramError(f"the program blocks forever (queue heads: {heads})")
            self._advance(t, t_next)
            t = t_next
        cycles = round(max(self.last_action, *self.unit_free.values())) + DONE_CYCLES
        return Prediction(cycles, self.bytes_read, self.bytes_written, self.busy, self.timeline)

    # ---------------------------------------------------------------- fetch
    def _fetch(self, t: float) -> bool:
        if self.pending is None or _before(t, self.next_fetch):
            return False
        queue = self.pending.instruction.queue
        if len(self.fifos[queue]) >= self.depth[queue]:
            return False
        self.fifos[queue].append((t + self.head_delay[queue], self.pending))
        self.next_fetch = t + self.fetch_cycles
        self.pending = next(self.stream, None)
        return True

    # ---------------------------------------------------------------- queues
    def _serve_queues(self, t: float) -> bool:
        progress = False
        for queue, fifo in self.fifos.items():
            if not fifo or _before(t, max(fifo[0][0], self.head_ready[queue])):
                continue
            step = fifo[0][1]
            ins = step.instruction
            unit_idle = queue not in self.flows and not _before(t, self.unit_free[queue])
            if ins.opcode == Opcode.WAIT:
                if self.sems[ins["sem"]] <= 0:
                    continue
                self.sems[ins["sem"]] -= 1
            elif ins.opcode == Opcode.SIGNAL:
                if not unit_idle:
                    continue
                self.sem_updates.append((t + 1, ins["sem"]))
            else:
                if not unit_idle:
                    continue
                self._issue(t, queue, step)
                if queue in self.flows and self.flows[queue].queued:
                    self.last_action = max(self.last_action, t)
                    progress = True
                    continue
            fifo.popleft()
            self.head_ready[queue] = t + 1
            self.last_action = max(self.last_action, t)
            progress = True
        return progress

    def _issue(self, t: float, queue: Queue, step: Dispatched) -> None:
        ins = step.instruction
        if ins.opcode == Opcode.CONVCFG:
            self.convcfg, cycles = ins, CONVCFG_CYCLES
        elif ins.opcode == Opcode.CONV:
            cycles = conv_cycles(self.config, ins, self._require_convcfg(ins))
        elif ins.opcode == Opcode.VEC:
            cycles = vec_cycles(self.config, ins, self._require_convcfg(ins))
        else:
            flow, work = _flow(step, self.config, self.constant_bytes)
            self.bytes_read += work.bytes_read
            self.bytes_written += work.bytes_written
            if not self.lookup_on_grant:
                self._steal_fetch(t)
            flow.entry, flow.queued = len(self.timeline), runs_in_place(self.config.template, queue.name.lower())
            self.timeline.append((queue.name.lower(), ins.opcode.name, t, t))
            self.flows[queue] = flow
            self.busy[queue.name.lower()] += flow.offer + flow.fixed + flow.port
            return
        self.timeline.append((queue.name.lower(), ins.opcode.name, t, t + cycles))
        self.unit_free[queue] = t + cycles
        self.busy[queue.name.lower()] += cycles

    def _pop_finishing(self, t: float) -> bool:
        """Pop the queue head of a LOAD run in place that ends within a cycle."""
        progress = False
        flows = list(self.flows.values())
        for flow, rate in zip(flows, _rates(flows)):
            if flow.queued and flow.holds and flow.offer <= EPSILON and flow.left(rate) <= 1 + EPSILON:
                flow.queued = False
                self.fifos[flow.queue].popleft()
                self.head_ready[flow.queue] = t + 1
                self.last_action = max(self.last_action, t)
                progress = True
        return progress

    def _steal_fetch(self, t: float) -> None:
        """A descriptor lookup at `t` delays the instruction being fetched by an entry's halfwords."""
        if self.pending is not None and self.next_fetch > t:
            self.next_fetch += self.stolen

    def _grant_dma(self, t: float) -> bool:
        """Give the free DMA to a transfer waiting for it, a store first (`template.dma: shared`)."""
        flows = self.flows.values()
        if any(f.holds for f in flows):
            return False
        waiting = [f for f in flows if f.offer <= EPSILON]
        if not waiting:
            return False
        min(waiting, key=lambda f: f.queue != Queue.STORE).holds = True
        if self.lookup_on_grant:
            self._steal_fetch(t)
        return True

    def _require_convcfg(self, ins):
        if self.convcfg is None:
            raise ProgramError(f"{ins.opcode.name} before any CONVCFG")
        return self.convcfg

    # ---------------------------------------------------------------- time
    def _next_time(self, t: float) -> float | None:
        candidates = [self.next_fetch] if self.pending is not None else []
        for queue, fifo in self.fifos.items():
            if fifo:
                waits_for_unit = fifo[0][1].instruction.opcode != Opcode.WAIT
                candidates.append(max(fifo[0][0], self.head_ready[queue],
                                      self.unit_free[queue] if waits_for_unit else 0.0))
        candidates += [when for when, _ in self.sem_updates]
        flows = list(self.flows.values())
        for flow, rate in zip(flows, _rates(flows)):
            if flow.offer > EPSILON or flow.holds:
                left = flow.offer if flow.offer > EPSILON else flow.fixed if flow.fixed > 0 else flow.port / rate
                candidates.append(t + max(left, 2 * EPSILON))
                if flow.queued and flow.holds and flow.offer <= EPSILON:
                    candidates.append(t + flow.left(rate) - 1)
        future = [c for c in candidates if c > t + EPSILON]
        return min(future) if future else None

    def _advance(self, t: float, t_next: float) -> None:
        dt = t_next - t
        flows = list(self.flows.items())
        for (queue, flow), rate in zip(flows, _rates([f for _, f in flows])):
            if flow.offer > EPSILON:
                flow.offer -= dt
                continue
            if not flow.holds:
                continue
            if flow.fixed > 0:
                flow.fixed -= dt
            else:
                flow.port -= dt * rate
            if flow.fixed <= EPSILON and flow.port <= EPSILON:
                del self.flows[queue]
                self.unit_free[queue] = t_next
                q, op, start, _ = self.timeline[flow.entry]
                self.timeline[flow.entry] = (q, op, start, t_next)
        for when, sem in [u for u in self.sem_updates if u[0] <= t_next]:
            self.sems[sem] += 1
        self.sem_updates = [u for u in self.sem_updates if u[0] > t_next]


def predict(program: Program, config: AcceleratorConfig, constant_bytes: int = 0) -> Prediction:
    """Cycles from `start` to `done` and the DRAM bytes of running `program` on `config`'s RTL,
    the model's constants at DRAM addresses below `constant_bytes` (`Dram.read_figures`)."""
    check_program(program, config)
    return _Replay(program, config, constant_bytes).run()
