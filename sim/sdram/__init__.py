"""A datasheet model of the ULX3S board's SDR SDRAM (IS42S16160G-7) that checks a controller.

`chips` describes the chip, `device` is the cycle model (plain Python, one call per clock
edge), `adapter` runs it in an Amaranth simulation. See docs/sdram.md.
"""
