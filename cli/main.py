"""The `hwgen` command line: one subcommand per user task.

Each subcommand lives in `cli/commands/<name>.py` and provides `register(subparsers)`,
which adds its parser (the summary comes from `cli.commands.COMMANDS`) and sets `func` to a
callable taking the parsed arguments and returning an exit code. Only the module of the
command being run is imported.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from common.errors import HwgenError

from cli.commands import COMMANDS

ALL = "*"
"""`build_parser(ALL)`: every subcommand with its options (for tests and documentation)."""


class _Subcommands:
    """The subparsers action, giving each `add_parser` its summary from `COMMANDS`."""

    def __init__(self, action: argparse._SubParsersAction):
        self.action = action

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        return self.action.add_parser(name, help=COMMANDS[name], **kwargs)


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # read for --version alone

    try:
        return version("hwgen")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """`--version`: prints `hwgen VERSION` and exits, the version read only then."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"hwgen {package_version()}")
        parser.exit()


def build_parser(command: str | None = ALL) -> argparse.ArgumentParser:
    """The parser with the full options of `command` (or of every command: ALL); the others are listed only."""
    parser = argparse.ArgumentParser(
        prog="hwgen",
        description="CNN accelerator generator: plan, generate, simulate and build "
        "an FPGA accelerator for an ONNX CNN.",
    )
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, summary in COMMANDS.items():
        if command in (ALL, name):
            importlib.import_module(f"cli.commands.{name}").register(_Subcommands(subparsers))
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    return parser


def _command(argv: list[str]) -> str | None:
    """The subcommand named on the command line (the first argument that is not an option)."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code (errors print one line to stderr)."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(_command(argv)).parse_args(argv)
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
