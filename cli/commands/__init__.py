"""Subcommands of the `hwgen` command line, in the order `hwgen --help` lists them, with the
one-line summary it shows. Each is a module `cli.commands.<name>` imported only when it runs
(or when the whole parser is built), so that `hwgen --help` answers without loading the
hardware, simulation and plotting libraries.
"""
COMMANDS = {
    "demo": "run the whole flow on the built-in digits CNN",
    "inspect": "show a model's layers, shapes, MACs and parameters",
    "infer": "run a model on an input array",
    "plan": "plan tiling and loop order of every layer",
    "generate": "write the accelerator's Verilog and RTLIL",
    "simulate": "run a network or a layer on a simulator and check it",
    "sweep": "explore PE-array, buffer and bus sizes for a network (Pareto fronts)",
    "synth": "synthesize and place the accelerator alone on a bare device; print its report",
    "build": "build a board's bitstream (SoC with accelerator, memory and UART link) and its report",
    "report": "reprint a saved synthesis / build report",
    "run": "run a model on a board over its serial link",
    "schedule": "map layers onto the host and accelerator instances as a pipeline over images (ILP or GA)",
}
