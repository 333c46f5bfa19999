"""The Amaranth side of the generated LiteDRAM core (`boards.ddr3.litedram`): its native user
port and its CSR bus, as one signature.

Native port (LiteDRAM's `LiteDRAMNativePort`): a command (`we`, `addr` of a native word: one
BL8 burst, 16 bytes on the 16-bit DDR3) on `cmd`; a write's data and byte enables on `wdata`,
taken by the core when it issues the write (the port must offer them from the command on); a
read's data on `rdata`, in command order, whether or not `rdata.ready` (the reader must have
room for every read it commands). CSR bus (LiteX `csr_bus`): a write of `dat_w` to word `adr`
when `we`; `dat_r` the word read a cycle after `adr`.
"""
from __future__ import annotations

from amaranth.hdl import unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from boards.ddr3.litedram import CSR_ADDRESS_BITS, CSR_DATA_BITS

CSR_BUS = wiring.Signature({"adr": Out(CSR_ADDRESS_BITS), "we": Out(1), "dat_w": Out(CSR_DATA_BITS),
                            "dat_r": In(CSR_DATA_BITS)})


class LiteDramPort(wiring.Signature):
    """The core's native port (`address_bits`-bit word addresses, `data_bits`-bit words) and
    its CSR bus, from the user's side."""

    def __init__(self, address_bits: int, data_bits: int):
        self.address_bits, self.data_bits = address_bits, data_bits
        command = data.StructLayout({"we": 1, "addr": address_bits})
        write = data.StructLayout({"data": data_bits, "we": data_bits // 8})
        super().__init__({"cmd": Out(stream.Signature(command)), "wdata": Out(stream.Signature(write)),
                          "rdata": In(stream.Signature(unsigned(data_bits))), "csr": Out(CSR_BUS)})
