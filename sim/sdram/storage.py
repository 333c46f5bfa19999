"""Sparse SDRAM contents: one byte array per (bank, row), made on first write.

A linear byte address maps to the chip in row-bank-column order, the mapping a controller
will use: the 16-bit column word is the lowest part, then the bank, then the row,

    byte_address = ((row * banks + bank) * columns + column) * 2 + lane

where lane 0 is the low byte (DQ7..0, LDQM) and lane 1 the high byte (DQ15..8, UDQM), so
the 16-bit words are little-endian. Consecutive addresses fill a row of one bank, then the
same row of the next bank, so a stream crosses banks before it needs a new row.
"""
from __future__ import annotations

import numpy as np

from sim.sdram.chips import SdramChip


class Row:
    """The bytes of one row and which of them were ever written."""

    def __init__(self, columns: int):
        self.data = np.zeros(columns * 2, dtype=np.uint8)
        self.written = np.zeros(columns * 2, dtype=bool)


class SdramStorage:
    """The contents of a chip, by (bank, row), column and byte lane."""

    def __init__(self, chip: SdramChip):
        self.chip = chip
        self._rows: dict[tuple[int, int], Row] = {}

    def address(self, byte_address: int) -> tuple[int, int, int]:
        """(bank, row, column) of a linear byte address."""
        if not 0 <= byte_address < self.chip.bytes:
            raise ValueError(f"byte address {byte_address:#x} is outside the {self.chip.bytes:#x} bytes "
                             f"of the {self.chip.name}")
        word = byte_address >> 1
        column = word % self.chip.columns
        bank = word // self.chip.columns % self.chip.banks
        return bank, word // (self.chip.columns * self.chip.banks), column

    def row(self, bank: int, row: int) -> Row | None:
        """The row's contents, None if nothing in it was ever written."""
        return self._rows.get((bank, row))

    def write_lanes(self, bank: int, row: int, column: int, value: int, lanes: tuple[int, ...]) -> None:
        """Write the byte lanes `lanes` (0 low, 1 high) of the 16-bit `value` at a column."""
        stored = self._rows.get((bank, row))
        if stored is None:
            stored = self._rows[bank, row] = Row(self.chip.columns)
        for lane in lanes:
            stored.data[column * 2 + lane] = (value >> (8 * lane)) & 0xFF
            stored.written[column * 2 + lane] = True

    def preload(self, byte_address: int, data: bytes | np.ndarray) -> None:
        """Place `data` at consecutive byte addresses, as if written (for large images)."""
        if isinstance(data, np.ndarray) and data.dtype != np.uint8:
            raise ValueError(f"preload takes bytes or a uint8 array, not {data.dtype}")
        data = np.frombuffer(bytes(data), dtype=np.uint8)
        for start, chunk in self._row_chunks(byte_address, len(data)):
            bank, row, column = self.address(start)
            stored = self._rows.get((bank, row))
            if stored is None:
                stored = self._rows[bank, row] = Row(self.chip.columns)
            offset = column * 2 + (start & 1)
            stored.data[offset:offset + chunk] = data[start - byte_address:start - byte_address + chunk]
            stored.written[offset:offset + chunk] = True

    def read_back(self, byte_address: int, length: int) -> np.ndarray:
        """`length` bytes from a byte address; ValueError if one of them was never written."""
        out = np.zeros(length, dtype=np.uint8)
        for start, chunk in self._row_chunks(byte_address, length):
            bank, row, column = self.address(start)
            stored = self._rows.get((bank, row))
            offset = column * 2 + (start & 1)
            written = stored.written[offset:offset + chunk] if stored else np.zeros(chunk, dtype=bool)
            if not written.all():
                missing = start + int(np.argmin(written))
                raise ValueError(f"byte {missing:#x} (bank {bank}, row {row}) was never written")
            out[start - byte_address:start - byte_address + chunk] = stored.data[offset:offset + chunk]
        return out

    def _row_chunks(self, byte_address: int, length: int):
        """(start, length) pieces of a byte range, each within one row of one bank."""
        row_bytes = self.chip.columns * 2
        end = byte_address + length
        if length:
            self.address(end - 1)
        start = byte_address
        while start < end:
            chunk = min(end, (start // row_bytes + 1) * row_bytes) - start
            yield start, chunk
            start += chunk
