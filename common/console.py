"""The rich console every command prints through (wide enough for tables when piped)."""
from __future__ import annotations

from rich.console import Console

PIPED_WIDTH = 160


def make_console() -> Console:
    """A console on stdout; when output is not a terminal, tables get `PIPED_WIDTH` columns."""
    console = Console()
    return console if console.is_terminal else Console(width=PIPED_WIDTH)
