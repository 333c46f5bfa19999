"""The external memory port, seen from the accelerator (it drives requests and write data).

Three `lib.stream` streams, so any latency and any back-pressure are possible:

- `rd_req` (out): `addr` (byte address, aligned to the bus word), `beats` (1..`burst_beats`).
  A request never crosses a `burst_beats`-beat aligned block.
- `rd_data` (in): `data`, one bus word per beat, in request order.
- `wr` (out): `addr` (bus-aligned byte address of this beat), `data`, byte `mask` and `last`
  (the final beat of a burst). The beats of a burst have consecutive addresses, number at most
  `burst_beats` and stay inside one `burst_beats`-beat aligned block. Writes are posted: there is
  no write response, and a write is complete once the port has accepted its beat.
"""
from __future__ import annotations

from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hwgen.config import Dram


class MemoryPort(wiring.Signature):
    """Port signature for a `bus_bytes`-byte bus with bursts of up to `burst_beats` beats."""

    def __init__(self, bus_bytes: int, burst_beats: int, addr_width: int = 32):
        assert bus_bytes & (bus_bytes - 1) == 0 and burst_beats & (burst_beats - 1) == 0
        self.bus_bytes = bus_bytes
        self.burst_beats = burst_beats
        self.addr_width = addr_width
        request = data.StructLayout({"addr": addr_width, "beats": burst_beats.bit_length()})
        write = data.StructLayout({"addr": addr_width, "data": 8 * bus_bytes, "mask": bus_bytes, "last": 1})
        super().__init__({
            "rd_req": Out(stream.Signature(request)),
            "rd_data": In(stream.Signature(data.StructLayout({"data": 8 * bus_bytes}))),
            "wr": Out(stream.Signature(write)),
        })

    @classmethod
    def from_config(cls, dram: Dram, addr_width: int = 32) -> MemoryPort:
        """The port of a configuration's DRAM section."""
        return cls(dram.bus_width_bits // 8, dram.burst_beats, addr_width)

    def __repr__(self) -> str:
        return f"MemoryPort(bus_bytes={self.bus_bytes}, burst_beats={self.burst_beats}, addr_width={self.addr_width})"
