"""A status line on stderr while `hwgen run --port sim` simulates the SoC (in Amaranth or
Verilator): the stage (loading, running a sample), the cycles simulated so far and the
simulator's speed."""
from __future__ import annotations

import time

from rich.console import Console
from rich.status import Status

from boards.sdram.soc_transport import VerilatedSoc
from boards.transport import SimulatedTransport, Transport

UPDATE_SECONDS = 0.5


def preparing() -> Status:
    """A status line on stderr while the simulated SoC is made (its Verilog emitted and, the first
    time for a model, its simulator built)."""
    return Console(stderr=True).status("preparing the simulated SoC (the first run of a model builds its "
                                       "simulator: minutes)")


class SimulationProgress:
    """Context manager; does nothing unless `transport` is a simulated SoC."""

    def __init__(self, transport: Transport):
        self.transport = transport if isinstance(transport, SimulatedTransport | VerilatedSoc) else None
        self._status: Status | None = None
        self._stage = ""
        self._shown = 0.0
        self._start = (0.0, 0)

    def __enter__(self) -> SimulationProgress:
        if self.transport is not None:
            self._status = Console(stderr=True).status("simulating the SoC")
            self._status.start()
            self._start = (time.monotonic(), self.transport.cycles)
            self.transport.progress = self._update
        return self

    def __exit__(self, *exc) -> None:
        if self._status is not None:
            self.transport.progress = None
            self._status.stop()

    def stage(self, text: str) -> None:
        """Name what the simulation is doing now."""
        self._stage = text
        self._shown = 0.0

    def _update(self, cycles: int) -> None:
        now = time.monotonic()
        if now - self._shown < UPDATE_SECONDS:
            return
        self._shown = now
        began, first = self._start
        rate = (cycles - first) / max(now - began, 1e-9)
        self._status.update(f"simulating the SoC: {self._stage}: {cycles:,} cycles, {rate:,.0f} cycles/s")
