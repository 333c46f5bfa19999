"""Subcommands of the `hwgen` command line, in the order `hwgen --help` lists them."""
from hwgen.commands import demo, generate, infer, inspect, plan, simulate

COMMANDS = (demo, inspect, infer, plan, generate, simulate)
