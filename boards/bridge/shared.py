"""What the bridge's parts share: its states, the commands it serves and the registers more than
one part writes.

The parts (`receiver`, `checker`, `executor`, `reply`, `memory_access`) each handle some of the
states. Each reads the shared registers (`current`) and passes on their next values
(`pending` in, `updated` out) with its own states' changes; the bridge registers the last
part's `updated`. A part writes a shared register with `m.d.comb += updated.x.eq(...)` where a
single state machine would have written `m.d.sync += x.eq(...)`, and changes state with
`updated.state`."""
from __future__ import annotations

from enum import IntEnum

from amaranth.hdl import Cat, Module, Value
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from boards.protocol import MAX_REQUEST_PAYLOAD, Command, Status

STATES = ("SYNC", "HEADER", "REPLY", "PAYLOAD", "DISCARD", "CRC", "CHECK", "VALIDATE", "EXECUTE", "COPY_READ",
          "SUM", "PROGRAM_LOW", "COPY_WRITE", "PROGRAM_HIGH", "PROGRAM_WRITE", "SUM_WAIT", "SUM_BITS",
          "REPLY_HEADER", "FETCH", "REPLY_CRC", "FETCH_WAIT", "FETCH_LOCAL", "NEXT_CRC_BYTE", "SEND")
"""The states in the order they are numbered: the order in which the bridge's single state
machine first named them, which keeps the state register's encoding."""
PROGRAM_STATES = ("PROGRAM_LOW", "PROGRAM_HIGH", "PROGRAM_WRITE")


class BridgeFormat:
    """The states (`State`, from `SYNC` = 0; the `PROGRAM_STATES` only with `program`), the
    commands served (PROGRAM only with `program`; a request's command is one-hot over them)
    and the layout of the shared registers (`shared`; memory addresses of `address_bits`)."""

    def __init__(self, program: bool, address_bits: int):
        self.program = program
        self.State = IntEnum("State", [name for name in STATES if program or name not in PROGRAM_STATES], start=0)
        self.commands = [code for code in Command if code != Command.PROGRAM or program]
        payload_range = range(MAX_REQUEST_PAYLOAD + 1)
        self.shared = data.StructLayout({
            "state": range(len(self.State)),
            "status": 8,                # the reply's status
            "refused": 1,               # VALIDATE has refused the request (`status` says why)
            "from_memory": 1,           # READ: the reply payload comes from memory
            "length": payload_range,    # the request's payload bytes; from EXECUTE on, the reply's
            "count": payload_range,     # payload bytes received / copied; reply bytes sent
            "step": 2,                  # the byte of a frame's header or CRC being received or sent
            "receiving": 1,             # bytes are taken (`rx.ready`), from SYNC to the request's end
            "pointer": address_bits,    # the address argument, then the next memory access
            "requesting": 1,            # a memory request (`boards.bridge.memory_access`)
            "out_byte": 8,              # the next reply byte; CHECKSUM: the byte read last; PROGRAM: the low byte
            "bit_index": 3,             # CHECKSUM: the bit of `out_byte` going into the region CRC; reply: its shifts
        })

    def decode(self, byte: Value) -> Value:
        """The one-hot command of a request's command byte (0: not served)."""
        return Cat(byte == code for code in self.commands)

    def is_command(self, command: Value, *codes: Command) -> Value:
        """Whether the one-hot `command` is one of `codes`."""
        return Cat(command[self.commands.index(code)] for code in codes).any()

    def refuse(self, m: Module, updated: data.View, code: Status) -> None:
        """Answer the request at once with `code` and no payload, taking no more bytes."""
        m.d.comb += [updated.status.eq(code), updated.length.eq(0), updated.receiving.eq(0),
                     updated.state.eq(self.State.REPLY)]


def shared_ports(layout: data.StructLayout) -> dict:
    """A part's ports for the shared registers (see above)."""
    return {"current": In(layout), "pending": In(layout), "updated": Out(layout)}
