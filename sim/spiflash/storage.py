"""Sparse flash contents: the bytes placed by `preload`, by 4 KiB sector; the rest was never
programmed, and reading it is what the model flags."""
from __future__ import annotations

import numpy as np

SECTOR = 4096


class FlashStorage:
    """`size_bytes` of flash, none of it programmed until `preload`."""

    def __init__(self, size_bytes: int):
        self.size_bytes = size_bytes
        self._data: dict[int, np.ndarray] = {}
        self._programmed: dict[int, np.ndarray] = {}

    def preload(self, offset: int, data: bytes | np.ndarray) -> None:
        """Place `data` at `offset` as if programmed (the image after the bitstream)."""
        if isinstance(data, np.ndarray) and data.dtype != np.uint8:
            raise ValueError(f"preload takes bytes or a uint8 array, not {data.dtype}")
        data = np.frombuffer(bytes(data), dtype=np.uint8)
        if offset < 0 or offset + len(data) > self.size_bytes:
            raise ValueError(f"{len(data)} bytes at {offset:#x} do not fit the {self.size_bytes:#x} bytes of flash")
        done = 0
        while done < len(data):
            address = offset + done
            sector, start = divmod(address, SECTOR)
            chunk = min(SECTOR - start, len(data) - done)
            if sector not in self._data:
                self._data[sector] = np.full(SECTOR, 0xFF, dtype=np.uint8)
                self._programmed[sector] = np.zeros(SECTOR, dtype=bool)
            self._data[sector][start:start + chunk] = data[done:done + chunk]
            self._programmed[sector][start:start + chunk] = True
            done += chunk

    def byte(self, address: int) -> int | None:
        """The byte at `address` (taken modulo the size, as the chip's address counter wraps),
        None if it was never programmed."""
        sector, start = divmod(address % self.size_bytes, SECTOR)
        programmed = self._programmed.get(sector)
        if programmed is None or not programmed[start]:
            return None
        return int(self._data[sector][start])
