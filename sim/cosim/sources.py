"""Emitted Verilog kept on disk (`rtl_out/cosim/sources/`), so a design a process has not emitted
yet (seconds to half a minute for a SoC) is read back when an earlier process emitted it. An
entry's name hashes the design's description and the code that generates Verilog (every Python
file of `hwgen/` and `boards/`, and Amaranth's version): a change to either makes a new entry."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import amaranth

from common.files import atomic_write_text
from sim.cosim.builds import CACHE_ROOT

ROOT = Path(__file__).resolve().parents[2]
GENERATORS = ("hwgen", "boards")


@cache
def generator_fingerprint() -> str:
    """A hash of the code that turns a design into Verilog."""
    digest = hashlib.sha256(amaranth.__version__.encode())
    for package in GENERATORS:
        for path in sorted((ROOT / package).rglob("*.py")):
            digest.update(path.relative_to(ROOT).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def emitted_sources(description: str, emit: Callable[[], dict[str, str]], root: Path = CACHE_ROOT) -> dict[str, str]:
    """The Verilog files (name to text) `emit` makes for the design `description` names, from
    the disk when an earlier process made them with the same code."""
    name = hashlib.sha256(f"{generator_fingerprint()}\n{description}".encode()).hexdigest()[:20]
    path = root / "sources" / f"{name}.json"
    if path.is_file():
        return json.loads(path.read_text())
    sources = emit()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(sources))
    return sources
