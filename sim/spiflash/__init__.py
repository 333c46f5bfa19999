"""A datasheet model of the iCEBreaker board's SPI NOR flash (W25Q128JV) that checks a controller.

`chips` has the figures, `commands` the instructions' layouts, `device` the per-edge model,
`adapter` runs it in an Amaranth simulation. See docs/spiflash.md.
"""
