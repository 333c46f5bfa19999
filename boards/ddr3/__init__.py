"""DDR3 main memory: LiteDRAM generated at build time (`litedram`), its clocks (`clocking`), a
sequencer that initializes the chip through LiteDRAM's CSRs (`init`) and the adapter from the
accelerator's memory port and the host port to LiteDRAM's native port (`memory`)."""
