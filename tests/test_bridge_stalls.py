"""The bridge against a host memory port that stalls at random (as SDRAM main memory does while
it refreshes or opens a row): a WRITE's bytes reach memory unchanged and a READ returns them. A
bridge built without CHECKSUM refuses it as an unknown command and serves the rest."""
from __future__ import annotations

import random

from amaranth.sim import Simulator

from boards.bridge import Bridge
from boards.protocol import CHECKSUM_REQUEST, READ_REQUEST, WRITE_ADDRESS, Command, DeviceInfo, Status
from soc_helpers import reply, request

MEMORY_BYTES = 4096


def run_bridge(request_bytes: bytes, memory: dict[int, int], seed: int, reply_bytes: int, checksum: bool = True) -> bytes:
    """Feed `request_bytes` to a bridge whose 2-byte-word memory (`memory`, byte address ->
    value) accepts a request in one cycle of four on average and answers reads 3 cycles late;
    return the first `reply_bytes` bytes it sends."""
    bridge = Bridge(DeviceInfo(memory_bytes=MEMORY_BYTES, clk_hz=1_000_000, build_id=1), gap_cycles=10_000,
                    word_bytes=2, checksum=checksum)
    rng = random.Random(seed)
    reply = bytearray()

    async def host(ctx) -> None:
        for byte in request_bytes:
            ctx.set(bridge.rx.payload, byte)
            ctx.set(bridge.rx.valid, 1)
            await ctx.tick().until(bridge.rx.ready)
            ctx.set(bridge.rx.valid, 0)
            await ctx.tick().repeat(3)
        ctx.set(bridge.tx.ready, 1)
        while len(reply) < reply_bytes:
            _, _, valid, byte = await ctx.tick().sample(bridge.tx.valid, bridge.tx.payload)
            if valid:
                reply.append(byte)

    async def main_memory(ctx) -> None:
        answers: list[tuple[int, int]] = []  # (cycles left, word address) of reads under way
        ready = False  # `req.ready` during the cycle before this edge
        request = bridge.memory.req
        sampled = (request.valid, request.payload.addr, request.payload.write, request.payload.data)
        async for _, _, valid, address, write, value in ctx.tick().sample(*sampled):
            if ready and valid:
                if write:
                    memory[address] = value
                else:
                    answers.append((3, address // 2))
            answers = [(left - 1, word) for left, word in answers]
            due = [word for left, word in answers if left == 0]
            answers = [(left, word) for left, word in answers if left > 0]
            ctx.set(bridge.memory.rd_valid, bool(due))
            if due:
                ctx.set(bridge.memory.rd_data, memory.get(2 * due[0], 0) | memory.get(2 * due[0] + 1, 0) << 8)
            ready = rng.random() < 0.25
            ctx.set(request.ready, ready)

    sim = Simulator(bridge)
    sim.add_clock(1e-6)
    sim.add_testbench(host)
    sim.add_process(main_memory)
    sim.run_until(0.05)
    return bytes(reply)


def test_a_write_stalled_by_memory_writes_its_own_bytes():
    data = bytes(range(101, 121))
    memory: dict[int, int] = {}
    answer = run_bridge(request(Command.WRITE, WRITE_ADDRESS.pack(64) + data), memory, seed=1, reply_bytes=6)
    assert answer == reply(Status.OK)
    assert bytes(memory.get(64 + i, 0) for i in range(len(data))) == data


def test_a_read_stalled_by_memory_returns_the_bytes():
    memory = {100 + i: (7 * i + 3) % 256 for i in range(16)}
    answer = run_bridge(request(Command.READ, READ_REQUEST.pack(100, 16)), memory, seed=2, reply_bytes=6 + 16)
    assert answer == reply(Status.OK, bytes(memory[100 + i] for i in range(16)))


def test_a_bridge_without_checksum_refuses_it_and_still_reads():
    memory = {100 + i: i for i in range(4)}
    refused = run_bridge(request(Command.CHECKSUM, CHECKSUM_REQUEST.pack(0, 64)), memory, seed=3, reply_bytes=6,
                         checksum=False)
    assert refused == reply(Status.BAD_COMMAND)
    answer = run_bridge(request(Command.READ, READ_REQUEST.pack(100, 4)), memory, seed=4, reply_bytes=6 + 4,
                        checksum=False)
    assert answer == reply(Status.OK, bytes(range(4)))
