"""The `hwgen` command line: one subcommand per user task.

Each subcommand lives in `cli/commands/<name>.py` and provides `register(subparsers)`,
which adds its parser and sets `func` to a callable taking the parsed arguments and
returning an exit code.
"""
from __future__ import annotations

import argparse
import sys

from common.errors import HwgenError

from cli.commands import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hwgen",
        description="CNN accelerator generator: plan, generate, simulate and build "
        "an FPGA accelerator for an ONNX CNN.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code (errors print one line to stderr)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except HwgenError as error:
        print(f"hwgen {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hwgen {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
