"""The SDRAM mode register (LOAD MODE REGISTER on BA1..0 and A12..0) and the burst column order.

| bits | field | values |
|---|---|---|
| A2..A0 | burst length | 000 = 1, 001 = 2, 010 = 4, 011 = 8, 111 = full page (sequential only) |
| A3 | burst type | 0 = sequential, 1 = interleaved |
| A6..A4 | CAS latency | 010 = 2, 011 = 3 |
| A8..A7 | operating mode | 00 = standard |
| A9 | write burst mode | 0 = programmed burst length, 1 = single location |
| A12..A10, BA1..BA0 | reserved | 0 |

Every other value is reserved and refused.
"""
from __future__ import annotations

from dataclasses import dataclass

BURST_LENGTHS = {0b000: 1, 0b001: 2, 0b010: 4, 0b011: 8}
FULL_PAGE_CODE = 0b111


@dataclass(frozen=True)
class ModeRegister:
    """A decoded mode register; `burst_length` is None for a full-page burst."""

    burst_length: int | None
    interleaved: bool
    cas_latency: int
    single_write: bool

    @classmethod
    def decode(cls, ba: int, a: int, cas_latencies: tuple[int, ...]) -> ModeRegister:
        """The mode programmed by BA and A, or ValueError naming the offending field.

        `cas_latencies` are the latencies the chip supports at the simulated clock."""
        if ba or a >> 10:
            raise ValueError(f"reserved bits set (BA = {ba:#x}, A12..A10 = {a >> 10:#05b}; must be 0)")
        if (a >> 7) & 0b11:
            raise ValueError(f"operating mode A8..A7 = {(a >> 7) & 0b11:#04b} is reserved (only 00, standard)")
        length_code, interleaved = a & 0b111, bool(a >> 3 & 1)
        if length_code == FULL_PAGE_CODE and interleaved:
            raise ValueError("a full-page burst must be sequential (A3 = 0)")
        if length_code not in BURST_LENGTHS and length_code != FULL_PAGE_CODE:
            raise ValueError(f"burst length code A2..A0 = {length_code:#05b} is reserved")
        cas_latency = (a >> 4) & 0b111
        if cas_latency not in (2, 3):
            raise ValueError(f"CAS latency code A6..A4 = {cas_latency:#05b} is reserved (2 or 3)")
        if cas_latency not in cas_latencies:
            raise ValueError(f"CAS latency {cas_latency} is not supported at this clock "
                             f"(supported: {', '.join(map(str, cas_latencies))})")
        return cls(BURST_LENGTHS.get(length_code), interleaved, cas_latency, bool(a >> 9 & 1))

    def column(self, start: int, beat: int, columns: int) -> int:
        """The column of beat `beat` of a burst starting at column `start`.

        Fixed-length bursts wrap within their aligned block of `burst_length` columns,
        sequentially (start + beat) or interleaved (start XOR beat); a full page wraps
        around the row."""
        if self.burst_length is None:
            return (start + beat) % columns
        mask = self.burst_length - 1
        offset = (start ^ beat) if self.interleaved else (start + beat)
        return (start & ~mask) | (offset & mask)
