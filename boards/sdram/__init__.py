"""Main memory in the ULX3S board's SDR SDRAM: `controller` drives the chip (one 16-bit word
per command), `memory` serves the accelerator's memory port and the host bridge through it.
See docs/sdram.md."""
