"""The iCE40UP5K SPRAM's geometry (SB_SPRAM256KA: 16 K words of 16 bits), without HDL imports:
the configuration's rules and the planner read it, `hwgen.spram` builds banks of it."""
from __future__ import annotations

SPRAM_WORDS = 16384
SPRAM_BITS = 16
