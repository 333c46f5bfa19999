"""Subcommands of the `hwgen` command line, in the order `hwgen --help` lists them."""
from cli.commands import build, demo, generate, infer, inspect, plan, report, run, simulate, sweep, synth

COMMANDS = (demo, inspect, infer, plan, generate, simulate, sweep, synth, build, report, run)
