"""The shared DMA (`template.dma: shared`): the transfer units take turns on it."""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from hwgen.dma.descriptor import DmaParams
from hwgen.dma.transfer import FILLED_FIELDS


class DmaArbiter(wiring.Component):
    """Lets `clients` transfer units take turns on one DMA (`template.dma: shared`): a client's
    offered descriptor (`desc`, `desc_valid`) goes to the DMA when it is idle, client 0 first;
    `done` goes back to the client whose descriptor the DMA ran (`owner`). With `common_entry`
    the clients' table entries come from one `DescriptorReader`, which holds only the offering
    client's, so only the `FILLED_FIELDS` are selected."""

    def __init__(self, params: DmaParams, clients: int, common_entry: bool = False):
        self.clients, self.common_entry = clients, common_entry
        layout = params.descriptor_layout()
        super().__init__({
            "desc": In(layout).array(clients),
            "desc_valid": In(1).array(clients),
            "desc_ready": Out(1).array(clients),
            "done": Out(1).array(clients),
            "dma_desc": Out(stream.Signature(layout)),
            "dma_done": In(1),
            "owner": Out(range(max(clients, 2))),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        chosen = Signal.like(self.owner)
        payload = self.dma_desc.payload
        if self.common_entry:
            m.d.comb += payload.eq(self.desc[0])
        for client in reversed(range(self.clients)):  # the last assignment wins: client 0 first
            with m.If(self.desc_valid[client]):
                m.d.comb += [chosen.eq(client), self.dma_desc.valid.eq(1)]
                if self.common_entry:
                    m.d.comb += [getattr(payload, name).eq(getattr(self.desc[client], name)) for name in FILLED_FIELDS]
                else:
                    m.d.comb += payload.eq(self.desc[client])
        for client in range(self.clients):
            m.d.comb += [self.desc_ready[client].eq(self.dma_desc.ready & self.desc_valid[client] & (chosen == client)),
                         self.done[client].eq(self.dma_done & (self.owner == client))]
        with m.If(self.dma_desc.valid & self.dma_desc.ready):
            m.d.sync += self.owner.eq(chosen)
        return m
