"""Synthesis of one design point in its own process group (`boards.synth.synth_report`).

The sweep runs each synthesis as `python -m explore.sweep.synth_job WORKDIR`: the job reads
`WORKDIR/job.json` (device and configuration), writes `WORKDIR/report.json` and exits. A tool
crash therefore cannot take a sweep worker down, and at the timeout the whole process group
(Yosys and nextpnr included) is killed.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from hwgen.config import AcceleratorConfig, config_from_dict
from common.errors import HwgenError
from common.files import atomic_write_text

JOB, REPORT, LOG = "job.json", "report.json", "synth.log"


class SynthesisError(HwgenError):
    """Synthesis of a point failed or timed out."""


def accelerator_fmax(fmax_mhz: dict[str, float]) -> float:
    """The accelerator clock's Fmax: the `sync` domain if reported, else the slowest clock."""
    for name, mhz in fmax_mhz.items():
        if "sync" in name:
            return mhz
    return min(fmax_mhz.values())


def synthesize(device: str, config: AcceleratorConfig, workdir: str | Path, timeout: float | None) -> dict:
    """The build report of `config` on `device` as a dict (`resources`, `fmax_mhz` of the
    accelerator clock, `timing_met`, `build_seconds`); SynthesisError on a crash or timeout."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / REPORT).unlink(missing_ok=True)
    atomic_write_text(workdir / JOB, json.dumps({"device": device, "config": config.to_dict()}))
    with open(workdir / LOG, "w") as log:
        process = subprocess.Popen([sys.executable, "-m", __name__, str(workdir)], stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise SynthesisError(f"synthesis timed out after {timeout:g} s (log: {workdir / LOG})") from None
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    if code != 0 or not (workdir / REPORT).exists():
        tail = (workdir / LOG).read_text()[-2000:]
        raise SynthesisError(f"synthesis failed (exit {code}, log: {workdir / LOG}):\n{tail}")
    report = json.loads((workdir / REPORT).read_text())
    report["fmax_mhz"] = accelerator_fmax(report["fmax_mhz"])
    return report


def main(workdir: str) -> None:
    from boards.synth import synth_report

    job = json.loads((Path(workdir) / JOB).read_text())
    report = synth_report(job["device"], config_from_dict(job["config"]), Path(workdir))
    atomic_write_text(Path(workdir) / REPORT, report.to_json())


if __name__ == "__main__":
    main(sys.argv[1])
