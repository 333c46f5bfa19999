"""RTL emission: RTLIL and Verilog of a design, the Verilog starting in the state the Amaranth
simulator starts in.

Two changes over `amaranth.back.verilog.convert` (same RTLIL, same Yosys script):

- synchronous memory read ports start at 0 (Amaranth RFC 54; `amaranth.back.verilog` leaves
  them undefined, and the design reads some of them before their first read enable);
- Yosys wakes every `always @*` block at time 0 with a `reg wake = 0` initializer, which
  generates no event under SystemVerilog semantics (Icarus with `-g2012`): it becomes an
  `initial` assignment, which does.

Without them, a Verilog simulator propagates `x` through the control logic and diverges.
"""
from __future__ import annotations

import re

from amaranth.back import rtlil, verilog

TOP = "accelerator"
_UNDEFINED_READ_INIT = re.compile(r"(parameter \\INIT_VALUE \d+')(x+)$", re.MULTILINE)
_COMB_WAKE_UP = re.compile(r"^( *)reg (\\\$auto\$verilog_backend\S+) +(= 0);$", re.MULTILINE)


def emit(design, name: str = TOP) -> tuple[str, str]:
    """`(verilog, rtlil)` text of an elaboratable."""
    text = rtlil.convert(design, name=name)
    text = _UNDEFINED_READ_INIT.sub(lambda match: match[1] + "0" * len(match[2]), text)
    verilog_text = verilog._convert_rtlil_text(text)  # the Yosys script of `verilog.convert`
    return _COMB_WAKE_UP.sub(r"\1reg \2 ;\n\1initial \2 \3;", verilog_text), text
