"""Subcommands of the `hwgen` command line, in the order `hwgen --help` lists them."""
from hwgen.commands import build, demo, generate, infer, inspect, plan, report, run, simulate, synth

COMMANDS = (demo, inspect, infer, plan, generate, simulate, synth, build, report, run)
