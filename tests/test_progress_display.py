"""What long commands show while they run: the build flow's stage (`hwgen synth`/`build`) and
an RTL simulation's cycles against the prediction (`hwgen simulate`/`infer`)."""
from __future__ import annotations

import io

from rich.console import Console

from cli.cycle_progress import CycleProgress
from cli.flow_progress import FlowProgress


def test_flow_progress_prints_each_stage_once_when_not_a_terminal():
    console = Console(file=io.StringIO(), force_terminal=False, width=100)
    with FlowProgress("building the icebreaker SoC", console) as progress:
        for stage, seconds in (("synthesis", 1), ("synthesis", 2), ("placement", 75.4), ("routing", 3725)):
            progress(stage, seconds)
    assert console.file.getvalue().splitlines() == [
        "building the icebreaker SoC: synthesis (0:01 elapsed)",
        "building the icebreaker SoC: placement (1:15 elapsed)",
        "building the icebreaker SoC: routing (1:02:05 elapsed)"]


def test_cycle_progress_shows_cycles_against_the_prediction_on_a_terminal():
    for cycles, shown in ((6_000, "6,000 / ~12,000 cycles"), (15_000, "15,000 / ~15,150 cycles")):  # past the
        console = Console(file=io.StringIO(), force_terminal=True, width=120)       # prediction, the total follows
        with CycleProgress("amaranth: digits", 12_000, console=console) as progress:
            progress(cycles)
        text = console.file.getvalue()
        assert "amaranth: digits" in text and shown in text


def test_cycle_progress_shows_nothing_in_a_log_or_for_an_engine_without_progress():
    for terminal, enabled in ((False, True), (True, False)):
        console = Console(file=io.StringIO(), force_terminal=terminal, width=120)
        with CycleProgress("isa: digits", 12_000, enabled, console=console) as progress:
            progress(6_000)
        assert console.file.getvalue() == ""
