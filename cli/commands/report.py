"""`hwgen report DIR`: reprint the report `hwgen synth` or `hwgen build` saved in DIR."""
from __future__ import annotations

import argparse
from pathlib import Path

from boards.report import load_report
from common.console import make_console


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", description="Print the report.json that `hwgen synth` or `hwgen build` wrote into DIR, as a table or JSON.",
    )
    parser.add_argument("directory", type=Path, metavar="DIR", help="output folder of a synth or build run")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = load_report(args.directory)
    if args.json:
        print(report.to_json())
    else:
        make_console().print(report.table())
    return 0
