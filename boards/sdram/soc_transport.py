"""A `boards.transport.Transport` to an SDRAM board's SoC simulated in Verilator: the SoC exactly
as `hwgen build` makes it (`boards.build.board_soc`), its chip the Python datasheet model, its
UART bit by bit at the board's baud (`boards.sdram.soc_testbench`), much faster than the
Amaranth simulator of `boards.transport.SimulatedTransport` for the same SoC.

The simulator runs in a thread of this process (cocotb's runner starts it as a child process)
and serves requests over a Unix socket (`boards.sdram.soc_link`): the host's `read` advances
simulated time until the bytes came or the timeout (simulated) passed, as `SimulatedTransport`
does. A datasheet violation raises `SdramViolation` here; a simulator that dies, `CosimError`
naming its log.

    link = VerilatedSoc(soc, contents=compiled.image)   # the chip holds the image from power-on
    runtime = Runtime(link)
"""
from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

from boards.sdram.controller import initialization_cycles
from boards.sdram.soc_link import DONE_FILE, SOCKET_FILE, Advance, Finish, Reply, SocJob
from boards.sdram.soc_top import build_soc_design
from boards.soc import SocCore
from boards.uart import FRAME_BITS
from sim.cosim.runner import CosimError, run_test
from sim.sdram.chips import SdramChip
from sim.sdram.device import SdramViolation

TESTBENCH = "boards.sdram.soc_testbench"
POLL_SECONDS = 0.5


def power_up_noise(size: int, seed: int = 0) -> np.ndarray:
    """`size` random bytes: what a chip holds before anything was written (the model refuses to
    read a byte never written, so a chip the host loads starts with these)."""
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)


class VerilatedSoc:
    """`soc` (with SDRAM main memory) in `simulator`, its chip holding `contents` from address 0
    at power-on; `model_chip` is the chip the model checks the controller against (the SoC's
    by default). Time is simulated (cycles / `soc.clk_hz`); the chip's initialization has
    passed when the constructor returns. `progress` is called with the cycles simulated so far
    at least every `wall_seconds` of wall time while the simulation runs."""

    LATENCY_BYTES = 32  # as SimulatedTransport: covers the bridge copying a whole WRITE into memory

    def __init__(self, soc: SocCore, contents: np.ndarray, *, simulator: str = "verilator",
                 model_chip: SdramChip | None = None, wall_seconds: float = 0.5):
        if soc.sdram_chip is None:
            raise CosimError("VerilatedSoc simulates a SoC whose main memory is an SDRAM chip")
        self.soc, self.wall_seconds = soc, wall_seconds
        self.cycles = 0
        self.leds = 0
        self.byte_time = FRAME_BITS * soc.divisor / soc.clk_hz
        self.latency = self.LATENCY_BYTES * self.byte_time
        self.progress: Callable[[int], None] | None = None
        self._pending = bytearray()
        self._received = bytearray()
        self._ended = False
        self._failure: CosimError | None = None
        build = build_soc_design(soc, simulator)
        self._folder = Path(tempfile.mkdtemp(prefix="hwgen-soc-"))
        SocJob(model_chip or soc.sdram_chip, soc.clk_hz / 1e6, soc.divisor, contents).save(self._folder)
        self._thread = threading.Thread(target=self._simulate, args=(build,), daemon=True)
        self._link = self._connect()
        initialized = initialization_cycles(soc.sdram_chip, soc.clk_hz / 1e6)
        while self.cycles < initialized:
            self._exchange(Advance(b"", initialized, 1, wall_seconds))

    def _simulate(self, build) -> None:
        try:
            run_test(build, TESTBENCH, self._folder, DONE_FILE)
        except CosimError as error:
            self._failure = error

    def _died(self) -> CosimError:
        self._ended = True
        return self._failure or CosimError(f"the simulation ended unexpectedly; see {self._folder / 'sim.log'}")

    def _connect(self) -> Connection:
        """Start the simulator and take its connection."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(str(self._folder / SOCKET_FILE))
            server.listen(1)
            server.settimeout(POLL_SECONDS)
            self._thread.start()
            while True:
                try:
                    client, _ = server.accept()
                    break
                except TimeoutError:
                    if not self._thread.is_alive():
                        raise self._died() from None
        client.settimeout(None)
        return Connection(client.detach())

    def _exchange(self, request: Advance | Finish) -> Reply:
        if self._ended:
            raise CosimError("the simulation has ended")
        self._link.send(request)
        while not self._link.poll(POLL_SECONDS):
            if not self._thread.is_alive():
                raise self._died()
        try:
            reply: Reply = self._link.recv()
        except (EOFError, OSError):
            self._thread.join()
            raise self._died() from None
        self.cycles, self.leds = reply.cycles, reply.leds
        self._received += reply.data
        if reply.violation is not None:
            self._end()
            raise SdramViolation(reply.violation)
        if self.progress is not None:
            self.progress(self.cycles)
        return reply

    def write(self, data: bytes) -> None:
        self._pending += data

    def read(self, count: int, timeout: float) -> bytes:
        deadline = self.cycles + int(timeout * self.soc.clk_hz)
        while self._pending or len(self._received) < count and self.cycles < deadline:
            self._exchange(Advance(bytes(self._pending), deadline, count - len(self._received), self.wall_seconds))
            self._pending.clear()
        data = bytes(self._received[:count])
        del self._received[:count]
        return data

    def clock(self) -> float:
        return self.cycles / self.soc.clk_hz

    def _end(self) -> None:
        """Wait for the simulator to exit; its files go unless it failed."""
        self._ended = True
        self._link.close()
        self._thread.join()
        if self._failure is None:
            shutil.rmtree(self._folder, ignore_errors=True)

    def close(self) -> None:
        """End the simulation; `SdramViolation` if the chip model finds refreshes owed."""
        if self._ended:
            return
        self._pending.clear()
        self._exchange(Finish())
        self._end()
