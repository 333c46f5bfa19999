"""A model of LiteDRAM's native user port (`LiteDRAMNativePort`), written from its protocol:
commands (`cmd`: `we`, word `addr`) taken at random with probability `ready` per cycle and
executed in order; a write's data and byte enables (`wdata`) taken `write_latency` cycles after
its command, when they must be offered; a read's word delivered on `rdata` `read_latency` cycles
after its command, without back-pressure. Words are `word_bytes` bytes of `memory` (a
bytearray), little-endian. It checks that no command comes before `init_done` and that no read
is commanded while a write's data is pending, and logs every command in `commands`: (cycle,
write, word address, data, byte enables) with the data written, or read and delivered.

Register it with `sim.add_testbench(model.testbench, background=True)` on a design with the
`dram` port of `boards.ddr3.native.LiteDramPort` and an `init_done` output.
"""
from __future__ import annotations

import random
from collections import deque


class NativePortModel:
    """The native port of `dut` (its `dram` and `init_done`) over `memory`."""

    def __init__(self, dut, memory: bytearray, *, word_bytes: int = 16, ready: float = 1.0, read_latency: int = 9,
                 write_latency: int = 4, seed: int = 0):
        self.dut, self.memory, self.word_bytes, self.ready = dut, memory, word_bytes, ready
        self.read_latency, self.write_latency = read_latency, write_latency
        self.rng = random.Random(seed)
        self.commands: list[tuple[int, bool, int, int, int]] = []

    def _word(self, addr: int) -> int:
        return int.from_bytes(self.memory[addr * self.word_bytes:(addr + 1) * self.word_bytes], "little")

    async def testbench(self, ctx) -> None:
        dram, cycle = self.dut.dram, 0
        writes: deque[tuple[int, int]] = deque()  # (cycle its data is due, index in `commands`)
        reads: deque[tuple[int, int]] = deque()  # (cycle its data is delivered, word)
        full = (1 << self.word_bytes) - 1
        while True:
            taking = self.rng.random() < self.ready
            ctx.set(dram.cmd.ready, taking)
            due = bool(writes) and writes[0][0] <= cycle
            ctx.set(dram.wdata.ready, due)
            delivering = bool(reads) and reads[0][0] <= cycle
            ctx.set(dram.rdata.valid, delivering)
            ctx.set(dram.rdata.payload, reads[0][1] if delivering else 0)
            sampled = await ctx.tick().sample(dram.cmd.valid, dram.cmd.payload.we, dram.cmd.payload.addr,
                                              dram.wdata.valid, dram.wdata.payload.data, dram.wdata.payload.we,
                                              self.dut.init_done)
            valid, we, addr, wvalid, wdata, wmask, done = sampled[2:]
            if delivering:
                reads.popleft()
            if due:
                assert wvalid, f"cycle {cycle}: the core takes write data that is not offered"
                _, index = writes.popleft()
                when, _, word, _, _ = self.commands[index]
                for byte in range(self.word_bytes):
                    if wmask >> byte & 1:
                        self.memory[word * self.word_bytes + byte] = wdata >> (8 * byte) & 0xFF
                self.commands[index] = (when, True, word, wdata, wmask)
            if valid and taking:
                assert done, f"cycle {cycle}: a native command before init_done"
                if we:
                    writes.append((cycle + 1 + self.write_latency, len(self.commands)))
                    self.commands.append((cycle, True, addr, 0, 0))  # its data: when taken
                else:
                    assert not writes, f"cycle {cycle}: a read taken while a write's data is pending"
                    reads.append((cycle + 1 + self.read_latency, self._word(addr)))
                    self.commands.append((cycle, False, addr, self._word(addr), full))
            cycle += 1
