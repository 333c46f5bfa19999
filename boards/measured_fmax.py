"""nextpnr's Fmax of each shipped board configuration's SoC in its latest build that met its
clock (`hwgen build --board B --hw CFG --json`; the builds' table in docs/boards.md, which also
lists a later build that did not). A configuration without an entry has no build that met its
clock."""
from __future__ import annotations

BOARD_FMAX_MHZ: dict[str, float] = {"icebreaker": 26.46, "ulx3s-85f": 74.45, "orangecrab": 97.70, "ulx3s-85f-128": 72.16}
