"""Several memory ports (`hwgen.memory_port.MemoryPort`) sharing one.

Read requests are granted round-robin, one per cycle; a FIFO remembers whose request each is,
and the read data are routed back to that client, beat by beat, in request order. Write bursts
are granted round-robin too, a whole burst at a time (the beats of a burst stay together, as the
port requires). A granted request or beat waiting for the shared port keeps its grant, so every
stream's payload stays stable until it is taken.
"""
from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from hwgen.memory_port import MemoryPort

READ_TAGS = 16
"""Read requests in flight the arbiter can route back (the FIFO of client numbers)."""


def _round_robin(m: Module, valid: list[Signal], last: Signal, grant: Signal) -> None:
    """`grant` := the first client with `valid` after `last`, in circular order (`last` if none)."""
    count = len(valid)
    with m.Switch(last):
        for previous in range(count):
            with m.Case(previous):
                m.d.comb += grant.eq(previous)
                for offset in range(count, 0, -1):
                    client = (previous + offset) % count
                    with m.If(valid[client]):
                        m.d.comb += grant.eq(client)


def _arbitrate(m: Module, streams: list, down, prefix: str, gate: Value = Const(1)) -> tuple[Signal, Signal]:
    """Connect the granted one of `streams` to `down` (valid and ready gated by `gate`); returns the
    grant and `keep`, which the caller sets to hold the grant over the next cycle."""
    count = len(streams)
    fresh, kept, last = (Signal(range(count), name=f"{prefix}_{n}") for n in ("fresh", "kept", "last"))
    keep = Signal(name=f"{prefix}_keep")
    _round_robin(m, [stream.valid for stream in streams], last, fresh)
    grant = Signal(range(count), name=f"{prefix}_grant")
    m.d.comb += grant.eq(Mux(keep, kept, fresh))
    for index, stream in enumerate(streams):
        with m.If(grant == index):
            m.d.comb += [down.payload.eq(stream.payload), down.valid.eq(stream.valid & gate),
                         stream.ready.eq(down.ready & gate)]
    with m.If(down.valid):
        m.d.sync += kept.eq(grant)
    with m.If(down.valid & down.ready):
        m.d.sync += last.eq(grant)
    return grant, keep


class MemoryArbiter(wiring.Component):
    """`clients` memory ports (each an accelerator's) served by the one `port`."""

    def __init__(self, port: MemoryPort, clients: int):
        assert clients >= 1
        self.count = clients
        super().__init__({"clients": In(port).array(clients), "port": Out(port)})

    def elaborate(self, platform) -> Module:
        m = Module()
        self._reads(m)
        self._writes(m)
        return m

    def _reads(self, m: Module) -> None:
        port, clients = self.port, self.clients
        beats_width = len(port.rd_req.payload.beats)
        tag = data.StructLayout({"client": range(self.count), "beats": beats_width})
        m.submodules.tags = tags = SyncFIFO(width=tag.size, depth=READ_TAGS)
        grant, keep = _arbitrate(m, [client.rd_req for client in clients], port.rd_req, "rd", tags.w_rdy)
        request = data.View(tag, tags.w_data)
        m.d.comb += [request.client.eq(grant), request.beats.eq(port.rd_req.payload.beats),
                     tags.w_en.eq(port.rd_req.valid & port.rd_req.ready)]
        with m.If(port.rd_req.valid):
            m.d.sync += keep.eq(~port.rd_req.ready)

        head = data.View(tag, tags.r_data)
        beat = Signal(beats_width)
        for index, client in enumerate(clients):
            m.d.comb += client.rd_data.payload.eq(port.rd_data.payload)
            with m.If(tags.r_rdy & (head.client == index)):
                m.d.comb += [client.rd_data.valid.eq(port.rd_data.valid), port.rd_data.ready.eq(client.rd_data.ready)]
        with m.If(port.rd_data.valid & port.rd_data.ready):
            m.d.sync += beat.eq(beat + 1)
            with m.If(beat + 1 == head.beats):
                m.d.sync += beat.eq(0)
                m.d.comb += tags.r_en.eq(1)

    def _writes(self, m: Module) -> None:
        port = self.port
        _, keep = _arbitrate(m, [client.wr for client in self.clients], port.wr, "wr")
        with m.If(port.wr.valid):  # a burst keeps its grant up to its last beat
            m.d.sync += keep.eq(~(port.wr.ready & port.wr.payload.last))
