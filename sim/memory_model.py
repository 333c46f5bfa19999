"""A simulated DRAM serving a `hwgen.memory_port.MemoryPort` in the Amaranth simulator.

Register it with `sim.add_process(model.process)`. Every output it drives (`rd_req.ready`,
`rd_data.valid`/`payload`, `wr.ready`) changes only after a clock edge, like a registered
device. The model checks the port protocol (alignment, burst lengths and blocks, consecutive
write beats, stable read data) and raises `AssertionError` on a violation.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from hwgen.config import Dram


@dataclass
class MemoryStats:
    """Traffic counters: `bytes_read` counts whole bus beats delivered, `bytes_written` enabled bytes."""

    read_requests: int = 0
    read_beats: int = 0
    bytes_read: int = 0
    write_beats: int = 0
    bytes_written: int = 0


class MemoryModel:
    """Byte-array memory with latency, a bandwidth limit and seeded random stalls.

    `latency` (>= 1) is the number of cycles from the edge accepting a request to the first edge
    at which its first beat can be accepted. `beats_per_cycle` (<= 1) is a long-run rate shared by
    reads and writes (a token bucket holding at most `1 + beats_per_cycle` beats), granted
    round-robin when both wait (a write waiting after a read beat goes first). `stall` is the probability, per cycle and per driven handshake signal, of withholding
    it. `max_queued_beats` bounds the requested-but-undelivered beats (then `rd_req` back-pressures).
    """

    def __init__(self, port, storage: np.ndarray, *, bus_bytes: int, burst_beats: int, latency: int = 1,
                 beats_per_cycle: Fraction = Fraction(1), stall: float = 0.0, seed: int = 0,
                 max_queued_beats: int = 64):
        assert storage.dtype == np.uint8 and 0 < beats_per_cycle <= 1 and latency >= 1
        self.port = port
        self.storage = storage
        self.bus_bytes = bus_bytes
        self.burst_bytes = bus_bytes * burst_beats
        self.burst_beats = burst_beats
        self.latency = latency
        self.beats_per_cycle = Fraction(beats_per_cycle)
        self.stall = stall
        self.max_queued_beats = max_queued_beats
        self.stats = MemoryStats()
        self.cycles = 0
        self._rng = np.random.default_rng(seed)

    @classmethod
    def from_config(cls, port, storage: np.ndarray, dram: Dram, *, stall: float = 0.0, seed: int = 0) -> MemoryModel:
        """A model with the latency and bandwidth of a configuration's DRAM section."""
        bus_bytes = dram.bus_width_bits // 8
        return cls(port, storage, bus_bytes=bus_bytes, burst_beats=dram.burst_beats, latency=max(1, dram.latency_cycles),
                   beats_per_cycle=dram.bandwidth / bus_bytes, stall=stall, seed=seed)

    def _stalled(self) -> bool:
        return self.stall > 0 and self._rng.random() < self.stall

    def _check_burst(self, addr: int, beats: int) -> None:
        assert addr % self.bus_bytes == 0, f"unaligned address {addr:#x}"
        assert 1 <= beats <= self.burst_beats, f"burst of {beats} beats"
        assert addr // self.burst_bytes == (addr + beats * self.bus_bytes - 1) // self.burst_bytes, (
            f"burst at {addr:#x} of {beats} beats crosses a burst block")
        assert addr + beats * self.bus_bytes <= len(self.storage), f"access at {addr:#x} beyond the memory"

    def _read_beat(self, addr: int) -> int:
        return int.from_bytes(self.storage[addr:addr + self.bus_bytes].tobytes(), "little")

    def _write_beat(self, addr: int, value: int, mask: int) -> None:
        enabled = np.array([(mask >> i) & 1 for i in range(self.bus_bytes)], dtype=bool)
        beat = np.frombuffer(value.to_bytes(self.bus_bytes, "little"), dtype=np.uint8)
        self.storage[addr:addr + self.bus_bytes][enabled] = beat[enabled]
        self.stats.write_beats += 1
        self.stats.bytes_written += int(enabled.sum())

    async def process(self, ctx) -> None:
        """The simulator process: one iteration per clock edge."""
        rd_req, rd_data, wr = self.port.rd_req, self.port.rd_data, self.port.wr
        queue: deque[list[int]] = deque()  # [first edge allowed, address, beats left]
        queued_beats = 0
        burst: tuple[int, int] | None = None  # (next address, beats so far) of an open write burst
        credit = Fraction(0)
        req_ready = rd_valid = wr_ready = False
        read_last = False  # the last beat granted was a read: a waiting write goes next
        sampled = (rd_req.valid, rd_req.payload.addr, rd_req.payload.beats, rd_data.ready,
                   wr.valid, wr.payload.addr, wr.payload.data, wr.payload.mask, wr.payload.last)
        async for _, reset, *values in ctx.tick().sample(*sampled):
            if reset:
                continue
            self.cycles += 1
            req_valid, req_addr, req_beats, data_ready, wr_valid, wr_addr, wr_data, wr_mask, wr_last = values
            if req_ready and req_valid:
                self._check_burst(req_addr, req_beats)
                queue.append([self.cycles + self.latency, req_addr, req_beats])
                queued_beats += req_beats
                self.stats.read_requests += 1
            if rd_valid and data_ready:
                rd_valid = False
                head = queue[0]
                head[1] += self.bus_bytes
                head[2] -= 1
                queued_beats -= 1
                if head[2] == 0:
                    queue.popleft()
                self.stats.read_beats += 1
                self.stats.bytes_read += self.bus_bytes
            wrote = wr_ready and wr_valid
            if wrote:
                if burst is None:
                    burst = (wr_addr, 0)
                assert wr_addr == burst[0], f"write beat at {wr_addr:#x}, expected {burst[0]:#x}"
                self._check_burst(wr_addr - burst[1] * self.bus_bytes, burst[1] + 1)
                self._write_beat(wr_addr, wr_data, wr_mask)
                burst = None if wr_last else (wr_addr + self.bus_bytes, burst[1] + 1)
                credit -= 1
                read_last = False
            credit = min(credit + self.beats_per_cycle, 1 + self.beats_per_cycle)
            if not rd_valid:
                write_first = wr_valid and not wrote and read_last
                if queue and queue[0][0] <= self.cycles + 1 and credit >= 1 and not write_first and not self._stalled():
                    rd_valid = True
                    read_last = True
                    credit -= 1
                    ctx.set(rd_data.payload.data, self._read_beat(queue[0][1]))
            wr_ready = credit >= 1 and not self._stalled()
            req_ready = queued_beats < self.max_queued_beats and not self._stalled()
            ctx.set(rd_data.valid, rd_valid)
            ctx.set(wr.ready, wr_ready)
            ctx.set(rd_req.ready, req_ready)
