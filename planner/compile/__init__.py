"""The compiler: lowers a planned, quantized network to a Program and a DRAM image."""
