"""The SPI NOR flash of the iCEBreaker as a read-only memory port (`reader`)."""
