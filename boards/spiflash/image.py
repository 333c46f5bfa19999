"""The iCEBreaker's flash image: the bitstream at 0 (where the iCE40 configures itself from)
and the model's constants at `FLASH_OFFSET`, where the SoC's flash reader finds them; the gap
between is 0xFF (erased flash)."""
from __future__ import annotations

from boards.spiflash.memory import FLASH_OFFSET
from common.errors import ConfigError

ERASED = 0xFF


def flash_image(bitstream: bytes, constants: bytes, offset: int = FLASH_OFFSET) -> bytes:
    """One file for `iceprog`: `bitstream`, erased bytes up to `offset`, `constants`."""
    if len(bitstream) > offset:
        raise ConfigError(f"the bitstream ({len(bitstream):,} bytes) runs past the constants' flash offset "
                          f"{offset:#x}")
    return bitstream + bytes([ERASED]) * (offset - len(bitstream)) + constants
